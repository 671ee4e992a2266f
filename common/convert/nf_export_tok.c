/* nf_export_tok.c — the key/values of a generated GGUF: the architecture's
 * from the component config (GGUF.md 4.1; llama.cpp's converter's names)
 * and the tokenizer's from tokenizer.json (byte-level BPE). */
#include "nf_export_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_gguf.h"
#include "nf_import.h"
#include "nf_strmap.h"

/* ---- the config -------------------------------------------------------------- */

typedef struct {
    ex_ctx *x;
    nf_jdoc *doc;
    nf_jval *root;
    const char *comp;   /* component ID for pointers */
    bool failed;
} cfg;

static nf_jval *cfg_get(const cfg *c, const char *name)
{
    return nf_jobj_get(c->root, name);
}

/* A config member as a non-negative integer. */
static bool cfg_u64(cfg *c, const char *name, bool required, uint64_t *out)
{
    nf_jval *v = cfg_get(c, name);
    char ptr[160];
    snprintf(ptr, sizeof ptr, "/components/%s/config/%s", c->comp, name);
    if (!v) {
        if (required && !c->failed) {
            nf_diag_addf(c->x->d, NF_C_SCHEMA, c->x->file, ptr, "%s is needed to write the GGUF "
                         "(llama.cpp requires its key)", name);
            c->failed = true;
        }
        return false;
    }
    if (nf_jval_u64(c->doc, v, ptr, out) != NF_JU64_OK || *out > UINT32_MAX) {
        if (!c->failed)
            nf_diag_addf(c->x->d, NF_C_SCHEMA, c->x->file, ptr, "%s must be an integer that a "
                         "u32 holds", name);
        c->failed = true;
        return false;
    }
    return true;
}

/* A config member as a finite number. */
static bool cfg_num(cfg *c, nf_jval *v, const char *name, bool required, double *out)
{
    char ptr[160];
    snprintf(ptr, sizeof ptr, "/components/%s/config/%s", c->comp, name);
    nf_jtype t = nf_jtype_of(v);
    if (!v) {
        if (required && !c->failed) {
            nf_diag_addf(c->x->d, NF_C_SCHEMA, c->x->file, ptr, "%s is needed to write the GGUF "
                         "(llama.cpp requires its key)", name);
            c->failed = true;
        }
        return false;
    }
    if ((t != NF_J_INT && t != NF_J_DOUBLE) || !isfinite(nf_jdouble(v))) {
        if (!c->failed)
            nf_diag_addf(c->x->d, NF_C_SCHEMA, c->x->file, ptr, "%s must be a number", name);
        c->failed = true;
        return false;
    }
    *out = nf_jdouble(v);
    return true;
}

typedef struct {
    ex_buf *b;
    uint64_t *n;
    const char *arch;
} kvw;

static void put_u32(kvw *w, const char *suffix, uint64_t v)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", w->arch, suffix);
    eb_kv_u32(w->b, k, (uint32_t)v);
    (*w->n)++;
}

static void put_f32(kvw *w, const char *suffix, double v)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", w->arch, suffix);
    eb_kv_f32(w->b, k, (float)v);
    (*w->n)++;
}

/* u32 config member -> key (required or when present). */
static bool map_u32(cfg *c, kvw *w, const char *suffix, const char *name, bool required)
{
    uint64_t v;
    if (cfg_u64(c, name, required, &v)) {
        put_u32(w, suffix, v);
        return true;
    }
    return false;
}

/* rope_theta at the top, or in rope_parameters / rope_scaling (newer configs). */
static nf_jval *rope_member(const cfg *c, const char *name)
{
    nf_jval *v = cfg_get(c, name);
    if (v)
        return v;
    static const char *const holders[] = {"rope_parameters", "rope_scaling", NULL};
    for (const char *const *h = holders; *h; h++) {
        nf_jval *o = cfg_get(c, *h);
        if (nf_jtype_of(o) == NF_J_OBJECT && (v = nf_jobj_get(o, name)))
            return v;
    }
    return NULL;
}

/* rope_scaling (linear or yarn, as llama.cpp's converter writes them). */
static bool rope_scaling(cfg *c, kvw *w)
{
    nf_jval *rs = cfg_get(c, "rope_scaling");
    if (nf_jtype_of(rs) != NF_J_OBJECT)
        return true;
    const char *type = nf_jstr(nf_jobj_get(rs, "rope_type"), NULL);
    if (!type)
        type = nf_jstr(nf_jobj_get(rs, "type"), NULL);
    if (!type || !strcmp(type, "default") || !strcmp(type, "mrope"))
        return true;
    double f = 1;
    if (strcmp(type, "linear") && strcmp(type, "yarn")) {
        char ptr[160];
        snprintf(ptr, sizeof ptr, "/components/%s/config/rope_scaling", c->comp);
        nf_diag_addf(c->x->d, NF_C_UNSUPPORTED, c->x->file, ptr, "rope_scaling type \"%s\" is "
                     "not exported to GGUF by this build (linear and yarn are)", type);
        return false;
    }
    char k[160];
    snprintf(k, sizeof k, "%s.rope.scaling.type", w->arch);
    eb_kv_str(w->b, k, type, strlen(type));
    (*w->n)++;
    if (cfg_num(c, nf_jobj_get(rs, "factor"), "rope_scaling/factor", true, &f))
        put_f32(w, "rope.scaling.factor", f);
    double oc;
    if (!strcmp(type, "yarn") &&
        cfg_num(c, nf_jobj_get(rs, "original_max_position_embeddings"),
                "rope_scaling/original_max_position_embeddings", false, &oc))
        put_u32(w, "rope.scaling.original_context_length", (uint64_t)oc);
    return !c->failed;
}

/* The hybrids' layer pattern: full_attention_interval, or one derived from
 * layer_types when they follow one (llama.cpp reads only the interval). */
static bool hybrid_interval(cfg *c, uint64_t L, uint64_t *every)
{
    if (cfg_u64(c, "full_attention_interval", false, every))
        return *every > 0;
    nf_jval *lt = cfg_get(c, "layer_types");
    *every = 4;
    if (nf_jtype_of(lt) != NF_J_ARRAY)
        return !c->failed;
    uint64_t first = 0;
    for (uint64_t i = 0; i < L && !first; i++) {
        const char *s = nf_jstr(nf_jarr_get(lt, i), NULL);
        if (s && !strcmp(s, "full_attention"))
            first = i + 1;
    }
    for (uint64_t i = 0; first && i < L; i++) {
        const char *s = nf_jstr(nf_jarr_get(lt, i), NULL);
        bool full = s && !strcmp(s, "full_attention");
        if (full != ((i + 1) % first == 0)) {
            char ptr[160];
            snprintf(ptr, sizeof ptr, "/components/%s/config/layer_types", c->comp);
            nf_diag_addf(c->x->d, NF_C_UNSUPPORTED, c->x->file, ptr, "layer_types is not a "
                         "full_attention_interval pattern, which is all llama.cpp reads");
            return false;
        }
    }
    if (first)
        *every = first;
    return true;
}

bool ex_arch_kvs(ex_ctx *x, const nf_arch_plan *text, bool mtp, ex_buf *b, uint64_t *n_kv)
{
    size_t ti = nf_catalog_component(x->c, NF_TEXT_COMPONENT);
    const nf_component *k = &x->c->components[ti];
    cfg c = {.x = x, .comp = NF_TEXT_COMPONENT};
    nf_diags local = NF_DIAGS_INIT;
    local.file = x->file;
    c.doc = nf_jdoc_parse(k->config_text, k->config_len, 0, &local);
    nf_diags_move(x->d, &local);
    nf_diags_free(&local);
    if (!c.doc)
        return false;
    c.root = nf_jdoc_root(c.doc);
    const char *arch = text->gguf_arch;
    kvw w = {b, n_kv, arch};
    eb_kv_str(b, "general.architecture", arch, strlen(arch));
    (*n_kv)++;
    /* metadata.name, when the artifact has one */
    if (x->c->metadata_text) {
        nf_diags q = NF_DIAGS_INIT;
        nf_jdoc *md = nf_jdoc_parse(x->c->metadata_text, x->c->metadata_len, 0, &q);
        size_t nl = 0;
        const char *name = md ? nf_jstr(nf_jobj_get(nf_jdoc_root(md), "name"), &nl) : NULL;
        if (name && nl && memchr(name, 0, nl) == NULL) {
            eb_kv_str(b, "general.name", name, nl);
            (*n_kv)++;
        }
        nf_jdoc_free(md);
        nf_diags_free(&q);
    }
    bool hybrid = !strcmp(arch, "qwen3next") || !strcmp(arch, "qwen35") || !strcmp(arch, "qwen35moe");
    bool moe = !strcmp(arch, "qwen3moe") || !strcmp(arch, "qwen3next") || !strcmp(arch, "qwen35moe");
    uint64_t L = 0, H = 0, Nq = 0, D = 0, v, nextn = 0;
    cfg_u64(&c, "num_hidden_layers", true, &L);
    if (mtp && hybrid)
        cfg_u64(&c, "mtp_num_hidden_layers", false, &nextn) || (nextn = 1);
    put_u32(&w, "block_count", L + nextn);
    /* keys transformers gives a default when config.json lacks them: the
     * same default (LlamaConfig's 2048, the Qwen configs' 32768; 1e-6) */
    uint64_t ctx;
    if (!cfg_u64(&c, "max_position_embeddings", false, &ctx) && !c.failed) {
        ctx = !strcmp(arch, "llama") ? 2048 : 32768;
        ex_warn(x, "warning: %s: the config has no max_position_embeddings; %s's default %llu "
                "written", x->file, text->architecture, (unsigned long long)ctx);
    }
    put_u32(&w, "context_length", ctx);
    if (cfg_u64(&c, "hidden_size", true, &H))
        put_u32(&w, "embedding_length", H);
    map_u32(&c, &w, "feed_forward_length", "intermediate_size", !moe && !hybrid);
    if (cfg_u64(&c, "num_attention_heads", true, &Nq))
        put_u32(&w, "attention.head_count", Nq);
    if (!map_u32(&c, &w, "attention.head_count_kv", "num_key_value_heads", false) && !c.failed)
        put_u32(&w, "attention.head_count_kv", Nq);
    double eps, theta;
    if (!cfg_num(&c, cfg_get(&c, "rms_norm_eps"), "rms_norm_eps", false, &eps) && !c.failed) {
        eps = 1e-6;
        ex_warn(x, "warning: %s: the config has no rms_norm_eps; %s's default 1e-06 written",
                x->file, text->architecture);
    }
    put_f32(&w, "attention.layer_norm_rms_epsilon", eps);
    if (cfg_num(&c, rope_member(&c, "rope_theta"), "rope_theta", false, &theta))
        put_f32(&w, "rope.freq_base", theta);
    bool has_d = cfg_u64(&c, "head_dim", false, &D);
    if (has_d) {
        put_u32(&w, "attention.key_length", D);
        put_u32(&w, "attention.value_length", D);
    } else if (Nq) {
        D = H / Nq;
    }
    if (cfg_u64(&c, "vocab_size", true, &v))
        put_u32(&w, "vocab_size", v);
    if (!hybrid) {
        put_u32(&w, "rope.dimension_count", D);
    } else {
        double prf = 0.25;
        cfg_num(&c, rope_member(&c, "partial_rotary_factor"), "partial_rotary_factor", false, &prf);
        put_u32(&w, "rope.dimension_count", (uint64_t)((double)D * prf));
    }
    if (moe) {
        uint64_t sparse = 1;
        nf_jval *mol = cfg_get(&c, "mlp_only_layers");
        cfg_u64(&c, "decoder_sparse_step", false, &sparse);
        if (sparse != 1 || (nf_jtype_of(mol) == NF_J_ARRAY && nf_jarr_len(mol))) {
            nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "/components/text/config/mlp_only_layers",
                         "dense layers among the MoE ones (mlp_only_layers, decoder_sparse_step) "
                         "have no GGUF key llama.cpp reads");
            c.failed = true;
        }
        if (!map_u32(&c, &w, "expert_count", "num_experts", false))
            map_u32(&c, &w, "expert_count", "num_local_experts", true);
        map_u32(&c, &w, "expert_used_count", "num_experts_per_tok", true);
        map_u32(&c, &w, "expert_feed_forward_length", "moe_intermediate_size", true);
    }
    if (hybrid) {
        uint64_t every, dv = 0, hv = 0;
        if (hybrid_interval(&c, L, &every))
            put_u32(&w, "full_attention_interval", every);
        else
            c.failed = true;
        map_u32(&c, &w, "ssm.conv_kernel", "linear_conv_kernel_dim", true);
        map_u32(&c, &w, "ssm.state_size", "linear_key_head_dim", true);
        map_u32(&c, &w, "ssm.group_count", "linear_num_key_heads", true);
        if (cfg_u64(&c, "linear_num_value_heads", true, &hv))
            put_u32(&w, "ssm.time_step_rank", hv);
        uint64_t dk = 0;
        if (cfg_u64(&c, "linear_value_head_dim", true, &dv))
            put_u32(&w, "ssm.inner_size", dv * hv);
        if (cfg_u64(&c, "linear_key_head_dim", false, &dk) && dk != dv)
            ex_warn(x, "warning: %s: linear_value_head_dim %llu is not linear_key_head_dim %llu: "
                    "the file is what llama.cpp's converter writes, but its loader sizes the "
                    "value heads by the key heads and will not load it", x->file,
                    (unsigned long long)dv, (unsigned long long)dk);
        if (moe)
            map_u32(&c, &w, "expert_shared_feed_forward_length", "shared_expert_intermediate_size",
                    false);
        if (strcmp(arch, "qwen3next")) {
            /* rope.dimension_sections: the mrope section padded to 4 */
            uint32_t sec[4] = {11, 11, 10, 0};
            nf_jval *ms = rope_member(&c, "mrope_section");
            for (size_t i = 0; nf_jtype_of(ms) == NF_J_ARRAY && i < 4; i++)
                sec[i] = i < nf_jarr_len(ms) ? (uint32_t)nf_jdouble(nf_jarr_get(ms, i)) : 0;
            char key[160];
            snprintf(key, sizeof key, "%s.rope.dimension_sections", arch);
            eb_kv_arr(b, key, NF_GGUF_U32, 4);
            for (int i = 0; i < 4; i++)
                eb_u32(b, sec[i]);
            (*n_kv)++;
        }
        if (nextn)
            put_u32(&w, "nextn_predict_layers", nextn);
    }
    bool ok = !c.failed && rope_scaling(&c, &w);
    nf_jdoc_free(c.doc);
    return ok && !nf_diags_exit(x->d);
}

/* ---- the tokenizer ------------------------------------------------------------ */

/* Hugging Face pre-tokenizers as llama.cpp names them (tokenizer.ggml.pre):
 * keyed on the pre_tokenizer's structure (pre_sig below), with the split
 * patterns llama.cpp's vocabulary code quotes from each tokenizer.json. */
static const struct {
    const char *sig, *pre;
} pre_table[] = {
    {"ByteLevel(prefix=0,regex=1)", "gpt-2"},
    {"Digits(individual=1)+ByteLevel(prefix=0,regex=1)", "smollm"},
    {"Split((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+,Isolated,invert=0)"
     "+ByteLevel(prefix=0,regex=0)", "llama-bpe"},
    {"Split((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+,Isolated,invert=0)"
     "+ByteLevel(prefix=0,regex=0)", "qwen2"},
    {"Split((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| "
     "?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+,Isolated,invert=0)"
     "+ByteLevel(prefix=0,regex=0)", "qwen35"},
};

/* The structure of a pre_tokenizer as one string; byte_level tells whether
 * a ByteLevel step is in it. */
static void pre_sig(nf_jval *pt, ex_buf *s, bool *byte_level, unsigned depth)
{
    const char *type = nf_jstr(nf_jobj_get(pt, "type"), NULL);
    char buf[96];
    if (!type || depth > 4) {
        eb_put(s, "?", 1);
        return;
    }
    if (!strcmp(type, "Sequence")) {
        nf_jval *v = nf_jobj_get(pt, "pretokenizers");
        for (size_t i = 0; i < nf_jarr_len(v); i++) {
            if (i)
                eb_put(s, "+", 1);
            pre_sig(nf_jarr_get(v, i), s, byte_level, depth + 1);
        }
    } else if (!strcmp(type, "ByteLevel")) {
        nf_jval *ap = nf_jobj_get(pt, "add_prefix_space"), *ur = nf_jobj_get(pt, "use_regex");
        snprintf(buf, sizeof buf, "ByteLevel(prefix=%d,regex=%d)", ap ? nf_jbool(ap) : 1,
                 ur ? nf_jbool(ur) : 1);
        eb_put(s, buf, strlen(buf));
        *byte_level = true;
    } else if (!strcmp(type, "Digits")) {
        snprintf(buf, sizeof buf, "Digits(individual=%d)",
                 nf_jbool(nf_jobj_get(pt, "individual_digits")));
        eb_put(s, buf, strlen(buf));
    } else if (!strcmp(type, "Split")) {
        nf_jval *pat = nf_jobj_get(pt, "pattern");
        size_t n = 0;
        const char *re = nf_jstr(nf_jobj_get(pat, "Regex"), &n);
        eb_put(s, "Split(", 6);
        if (re) {
            eb_put(s, re, n);
        } else {
            const char *str = nf_jstr(nf_jobj_get(pat, "String"), &n);
            eb_put(s, "String:", 7);
            if (str)
                eb_put(s, str, n);
        }
        const char *beh = nf_jstr(nf_jobj_get(pt, "behavior"), NULL);
        snprintf(buf, sizeof buf, ",%s,invert=%d)", beh ? beh : "?",
                 nf_jbool(nf_jobj_get(pt, "invert")));
        eb_put(s, buf, strlen(buf));
    } else {
        eb_put(s, type, strlen(type));
    }
}

/* A special token's content in tokenizer_config.json (a string, or an
 * AddedToken object with "content"). */
static const char *special_content(nf_jval *tc, const char *name)
{
    nf_jval *v = nf_jobj_get(tc, name);
    if (nf_jtype_of(v) == NF_J_OBJECT)
        v = nf_jobj_get(v, "content");
    return nf_jstr(v, NULL);
}

/* The tokenizer keys of a gguf.prefix resource, as they are. */
static bool prefix_tokenizer(ex_ctx *x, size_t obj, ex_buf *b, uint64_t *n_kv, bool *found)
{
    size_t n;
    char *p = ex_read_resource(x, obj, &n);
    if (!p)
        return false;
    nf_diags local = NF_DIAGS_INIT;
    nf_gguf *g = nf_gguf_open_prefix(p, n, x->file, &local);
    nf_diags_move(x->d, &local);
    nf_diags_free(&local);
    if (!g) {
        free(p);
        return false;
    }
    for (size_t i = 0; i < g->n_kv; i++) {
        const nf_gguf_kv *kv = &g->kv[i];
        if (strncmp(kv->key, "tokenizer.", 10) || !strcmp(kv->key, "tokenizer.chat_template"))
            continue;
        const char *raw;
        size_t rn;
        ex_kv_raw(p, kv, &raw, &rn);
        eb_put(b, raw, rn);
        (*n_kv)++;
        *found = true;
    }
    nf_gguf_free(g);
    free(p);
    return true;
}

/* A text resource of the text component (NULL: none). */
static char *text_resource(ex_ctx *x, const char *role, size_t *n)
{
    size_t ti = nf_catalog_component(x->c, NF_TEXT_COMPONENT);
    size_t o = ex_resource(x->c, ti, role);
    return o == SIZE_MAX ? NULL : ex_read_resource(x, o, n);
}

/* GGUF's token types (llama.cpp's llama_token_type). */
enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_USER_DEFINED = 4, TT_UNUSED = 5 };

static bool bpe_tokenizer(ex_ctx *x, const char *json, size_t len, uint64_t vocab, ex_buf *b,
                          uint64_t *n_kv)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = x->file;
    nf_jdoc *doc = nf_jdoc_parse(json, len, 0, &local);
    nf_diags_move(x->d, &local);
    nf_diags_free(&local);
    if (!doc)
        return false;
    nf_jval *root = nf_jdoc_root(doc), *model = nf_jobj_get(root, "model");
    const char *kind = nf_jstr(nf_jobj_get(model, "type"), NULL);
    bool ok = false;
    ex_buf sig = {0};
    char **tok = NULL;
    int *tt = NULL;
    if (!kind || strcmp(kind, "BPE")) {
        nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "/components/text/resources/tokenizer.json",
                     "tokenizer kind \"%s\" is not exported to GGUF (byte-level BPE is; "
                     "--no-tokenizer writes none)", kind ? kind : "(none)");
        goto done;
    }
    bool byte_level = false;
    pre_sig(nf_jobj_get(root, "pre_tokenizer"), &sig, &byte_level, 0);
    eb_put(&sig, "", 1);
    const char *pre = NULL;
    for (size_t i = 0; sig.p && i < sizeof pre_table / sizeof *pre_table; i++)
        if (!strcmp((char *)sig.p, pre_table[i].sig))
            pre = pre_table[i].pre;
    if (!byte_level || !pre) {
        nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "/components/text/resources/tokenizer.json",
                     "%s pre-tokenizer %s is not in this build's table of llama.cpp's "
                     "(tokenizer.ggml.pre; --no-tokenizer writes none)",
                     byte_level ? "the" : "a BPE that is not byte-level:", sig.p ? (char *)sig.p : "?");
        goto done;
    }
    nf_jval *vv = nf_jobj_get(model, "vocab"), *added = nf_jobj_get(root, "added_tokens");
    uint64_t n = vocab;
    tok = calloc(n + 1, sizeof *tok);
    tt = calloc(n + 1, sizeof *tt);
    if (!tok || !tt) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        goto done;
    }
    nf_jiter it = nf_jobj_iter(vv);
    const char *k;
    nf_jval *val;
    bool bad = false;
    while (nf_jobj_next(&it, &k, &val)) {
        double id = nf_jdouble(val);
        if (nf_jtype_of(val) != NF_J_INT || id < 0 || id >= (double)n) {
            bad = true;
            break;
        }
        tok[(uint64_t)id] = (char *)k;
        tt[(uint64_t)id] = TT_NORMAL;
    }
    for (size_t i = 0; !bad && i < nf_jarr_len(added); i++) {
        nf_jval *a = nf_jarr_get(added, i);
        double id = nf_jdouble(nf_jobj_get(a, "id"));
        const char *content = nf_jstr(nf_jobj_get(a, "content"), NULL);
        if (!content || id < 0 || id >= (double)n) {
            bad = true;
            break;
        }
        tok[(uint64_t)id] = (char *)content;
        tt[(uint64_t)id] = nf_jbool(nf_jobj_get(a, "special")) ? TT_CONTROL : TT_USER_DEFINED;
    }
    if (bad) {
        nf_diag_addf(x->d, NF_C_SCHEMA, x->file, "/components/text/resources/tokenizer.json",
                     "a token id is not below the vocabulary's %llu rows", (unsigned long long)n);
        goto done;
    }
    eb_kv_str(b, "tokenizer.ggml.model", "gpt2", 4);
    eb_kv_str(b, "tokenizer.ggml.pre", pre, strlen(pre));
    eb_kv_arr(b, "tokenizer.ggml.tokens", NF_GGUF_STRING, n);
    for (uint64_t i = 0; i < n; i++) {
        char pad[40];
        if (!tok[i]) {
            snprintf(pad, sizeof pad, "[PAD%llu]", (unsigned long long)i);
            eb_str(b, pad, strlen(pad));
            tt[i] = TT_UNUSED;
        } else {
            eb_str(b, tok[i], strlen(tok[i]));
        }
    }
    eb_kv_arr(b, "tokenizer.ggml.token_type", NF_GGUF_I32, n);
    for (uint64_t i = 0; i < n; i++)
        eb_u32(b, (uint32_t)tt[i]);
    nf_jval *merges = nf_jobj_get(model, "merges");
    eb_kv_arr(b, "tokenizer.ggml.merges", NF_GGUF_STRING, nf_jarr_len(merges));
    for (size_t i = 0; i < nf_jarr_len(merges); i++) {
        nf_jval *m = nf_jarr_get(merges, i);
        size_t ml = 0;
        const char *s = nf_jstr(m, &ml);
        if (s) {
            eb_str(b, s, ml);
        } else { /* the newer form: a pair */
            size_t l0 = 0, l1 = 0;
            const char *a0 = nf_jstr(nf_jarr_get(m, 0), &l0), *a1 = nf_jstr(nf_jarr_get(m, 1), &l1);
            eb_u64(b, (a0 ? l0 : 0) + 1 + (a1 ? l1 : 0));
            eb_put(b, a0 ? a0 : "", a0 ? l0 : 0);
            eb_put(b, " ", 1);
            eb_put(b, a1 ? a1 : "", a1 ? l1 : 0);
        }
    }
    *n_kv += 5;
    /* special tokens: tokenizer_config.json's, else the config's ids */
    size_t tl = 0;
    char *tcj = text_resource(x, "tokenizer_config.json", &tl);
    nf_diags q = NF_DIAGS_INIT;
    nf_jdoc *tcd = tcj ? nf_jdoc_parse(tcj, tl, 0, &q) : NULL;
    nf_diags_free(&q);
    nf_jval *tc = tcd ? nf_jdoc_root(tcd) : NULL;
    static const struct {
        const char *cfg, *key;
    } sp[] = {{"bos_token", "tokenizer.ggml.bos_token_id"},
              {"eos_token", "tokenizer.ggml.eos_token_id"},
              {"unk_token", "tokenizer.ggml.unknown_token_id"},
              {"pad_token", "tokenizer.ggml.padding_token_id"}};
    for (size_t i = 0; i < sizeof sp / sizeof *sp; i++) {
        const char *content = tc ? special_content(tc, sp[i].cfg) : NULL;
        for (uint64_t id = 0; content && id < n; id++)
            if (tok[id] && !strcmp(tok[id], content)) {
                eb_kv_u32(b, sp[i].key, (uint32_t)id);
                (*n_kv)++;
                break;
            }
    }
    static const char *const flags[] = {"add_bos_token", "add_eos_token"};
    for (size_t i = 0; tc && i < 2; i++) {
        nf_jval *f = nf_jobj_get(tc, flags[i]);
        if (nf_jtype_of(f) == NF_J_BOOL) {
            char key[64];
            snprintf(key, sizeof key, "tokenizer.ggml.%s", flags[i]);
            eb_kv_bool(b, key, nf_jbool(f));
            (*n_kv)++;
        }
    }
    nf_jdoc_free(tcd);
    free(tcj);
    ok = true;
done:
    free(sig.p);
    free(tok);
    free(tt);
    nf_jdoc_free(doc);
    return ok;
}

bool ex_tokenizer_kvs(ex_ctx *x, const char *arch, uint64_t vocab, ex_buf *b, uint64_t *n_kv)
{
    (void)arch;
    size_t ti = nf_catalog_component(x->c, NF_TEXT_COMPONENT);
    bool found = false;
    if (!x->o->no_tokenizer) {
        size_t n = 0;
        char *tj = text_resource(x, "tokenizer.json", &n);
        if (tj) {
            found = true;
            bool ok = bpe_tokenizer(x, tj, n, vocab, b, n_kv);
            free(tj);
            if (!ok)
                return false;
        } else if (nf_diags_exit(x->d)) {
            return false;
        } else {
            size_t pr = ex_resource(x->c, ti, NF_GGUF_PREFIX_ROLE);
            if (pr != SIZE_MAX && !prefix_tokenizer(x, pr, b, n_kv, &found))
                return false;
        }
    }
    if (!found) {
        eb_kv_str(b, "tokenizer.ggml.model", "none", 4);
        (*n_kv)++;
    }
    /* the chat template: its own resource, else tokenizer_config.json's */
    size_t n = 0;
    char *ct = text_resource(x, "chat_template.jinja", &n);
    if (!ct && !nf_diags_exit(x->d)) {
        size_t tl = 0;
        char *tcj = text_resource(x, "tokenizer_config.json", &tl);
        nf_diags q = NF_DIAGS_INIT;
        nf_jdoc *tcd = tcj ? nf_jdoc_parse(tcj, tl, 0, &q) : NULL;
        nf_diags_free(&q);
        const char *s = tcd ? nf_jstr(nf_jobj_get(nf_jdoc_root(tcd), "chat_template"), &n) : NULL;
        if (s)
            ct = strndup(s, n);
        nf_jdoc_free(tcd);
        free(tcj);
    }
    if (ct) {
        eb_kv_str(b, "tokenizer.chat_template", ct, n);
        (*n_kv)++;
        free(ct);
    }
    return !nf_diags_exit(x->d);
}
