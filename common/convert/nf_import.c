/* nf_import.c — checkpoints (Hugging Face safetensors, GGUF) to manifests
 * with the binder's logical names. */
#include "nf_import.h"
#include "nf_strmap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_binder.h"
#include "nf_digest.h"
#include "nf_export.h"
#include "nf_gguf.h"
#include "nf_io.h"
#include "nf_json.h"
#include "nf_safetensors.h"
#include "nf_source.h"
#include "nf_util.h"
#include "nf_writer.h"

#define MAX_CONFIG_BYTES (64ull << 20)
#define MAX_INDEX_BYTES (256ull << 20)

static const char *const frontend_files[] = {
    "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json",
    "generation_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "merges.txt", "tokenizer.model", "vocab.txt", NULL,
};

/* ---- small helpers ---------------------------------------------------------- */

static void warnf(const nf_import_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warnf(const nf_import_opts *o, const char *fmt, ...)
{
    if (!o->warn)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    o->warn(o->warn_ctx, msg);
}

static bool is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Why the checkpoint file p cannot be read as one: NULL for a regular file
 * (or a symlink to one); else what it is, as a message tail. A shard or
 * model.safetensors that is a FIFO, a device or a directory is no more
 * "missing" than a regular file is (DESIGN 3: such a path is io, exit 3,
 * said as what it is). */
static const char *file_problem(const char *p)
{
    struct stat sb, lb;
    if (stat(p, &sb) == 0)
        return S_ISREG(sb.st_mode) ? NULL
               : S_ISDIR(sb.st_mode) ? "is a directory"
                                     : "is not a regular file (a FIFO, socket or device)";
    if (errno == ENOENT && lstat(p, &lb) == 0)
        return "is missing (a dangling symbolic link)";
    return errno == ENOENT ? "is missing" : "cannot be read";
}

static bool is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Read a whole file of at most cap bytes. NULL with an io/header
 * diagnostic naming the file. */
static char *slurp(const char *path, uint64_t cap, size_t *len, nf_diags *d)
{
    char *t = NULL;
    int rc = nf_read_path(path, true, cap, &t, len);
    if (rc == -EFBIG) {
        struct stat sb;
        nf_diag_addf(d, NF_C_RANGE, path, "", "%llu bytes is over the %llu-byte cap",
                     stat(path, &sb) == 0 ? (unsigned long long)sb.st_size
                                          : (unsigned long long)cap + 1,
                     (unsigned long long)cap);
    } else if (rc < 0) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot read: %s",
                     rc == -EINVAL ? "not a regular file" : strerror(-rc));
    }
    if (rc < 0) {
        free(t);
        return NULL;
    }
    return t;
}

static char *absdup(const char *p)
{
    char buf[PATH_MAX];
    return realpath(p, buf) ? strdup(buf) : strdup(p);
}

/* A string -> index map (open addressing, FNV-1a). */
/* name lookups: nf_strmap (keys are C strings here) */
static size_t sm_get(const nf_strmap *m, const char *key)
{
    return nf_strmap_get(m, key, strlen(key));
}

static bool sm_put(nf_strmap *m, const char *key, size_t val)
{
    return nf_strmap_set(m, key, strlen(key), val);
}

/* ---- the checkpoint ----------------------------------------------------------- */

typedef enum { DT_F32, DT_F16, DT_BF16, DT_OTHER } src_dt;

typedef struct {
    bool gguf;
    char *dir;                /* directory of the checkpoint files (absolute) */
    nf_gguf *g;
    char *gguf_path;
    nf_safetensors **st;
    char **st_path;           /* absolute */
    size_t n_st;
    bool **used;              /* per shard (or [0] for GGUF), per tensor */
    nf_strmap where;             /* tensor name -> shard << 32 | index (safetensors) */
} ckpt;

typedef struct {
    const char *name;         /* as found in the checkpoint */
    const char *path;         /* absolute file */
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    src_dt dt;
    const char *dt_name;
    char tb[32];
    bool gguf;                /* a GGUF tensor (type below) */
    uint32_t ggml_type;
    size_t index;             /* GGUF: its index in the file's tensor infos */
} ck_t;

static void ck_free(ckpt *c)
{
    for (size_t i = 0; i < c->n_st; i++) {
        nf_safetensors_free(c->st[i]);
        free(c->st_path[i]);
        if (c->used)
            free(c->used[i]);
    }
    if (c->gguf && c->used)
        free(c->used[0]);
    free(c->used);
    free(c->st);
    free(c->st_path);
    nf_gguf_free(c->g);
    free(c->gguf_path);
    free(c->dir);
    nf_strmap_free(&c->where);
}

static bool ck_find_exact(ckpt *c, const char *name, ck_t *out)
{
    memset(out, 0, sizeof *out);
    if (c->gguf) {
        const nf_gguf_tensor *t = nf_gguf_find_tensor(c->g, name);
        if (!t)
            return false;
        out->name = t->name;
        out->path = c->gguf_path;
        out->rank = t->n_dims;
        nf_gguf_hf_dims(t, out->dims);
        out->dt = t->type == NF_GGML_F32 ? DT_F32 : t->type == NF_GGML_F16 ? DT_F16
                : t->type == NF_GGML_BF16 ? DT_BF16 : DT_OTHER;
        out->dt_name = nf_ggml_type_name(t->type, out->tb);
        out->gguf = true;
        out->ggml_type = t->type;
        out->index = (size_t)(t - c->g->tensors);
        c->used[0][out->index] = true;
        return true;
    }
    size_t w = sm_get(&c->where, name);
    if (w == SIZE_MAX)
        return false;
    size_t s = w >> 32, i = w & 0xffffffffu;
    const nf_st_tensor *t = &c->st[s]->tensors[i];
    out->name = t->name;
    out->path = c->st_path[s];
    out->rank = t->rank;
    memcpy(out->dims, t->dims, sizeof out->dims);
    out->dt = !strcmp(t->dtype, "F32") ? DT_F32 : !strcmp(t->dtype, "F16") ? DT_F16
            : !strcmp(t->dtype, "BF16") ? DT_BF16 : DT_OTHER;
    out->dt_name = t->dtype;
    c->used[s][i] = true;
    return true;
}

/* Hugging Face names may carry the multimodal prefix model.language_model. */
static bool ck_find(ckpt *c, const char *name, ck_t *out)
{
    if (ck_find_exact(c, name, out))
        return true;
    if (!c->gguf && strncmp(name, "model.", 6) == 0) {
        char alt[1024];
        snprintf(alt, sizeof alt, "model.language_model.%s", name + 6);
        return ck_find_exact(c, alt, out);
    }
    return false;
}

static bool ck_add_shard(ckpt *c, const char *path, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = path;
    nf_safetensors *st = nf_safetensors_open(path, &local);
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    if (!st)
        return false;
    size_t n = c->n_st;
    nf_safetensors **v = realloc(c->st, (n + 1) * sizeof *v);
    char **p = v ? realloc(c->st_path, (n + 1) * sizeof *p) : NULL;
    bool **u = p ? realloc(c->used, (n + 1) * sizeof *u) : NULL;
    if (v)
        c->st = v;
    if (p)
        c->st_path = p;
    if (u)
        c->used = u;
    if (!u || !(c->used[n] = calloc(st->n_tensors + 1, 1)) || !(c->st_path[n] = absdup(path))) {
        nf_safetensors_free(st);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    c->st[n] = st;
    c->n_st = n + 1;
    for (size_t i = 0; i < st->n_tensors; i++) {
        if (sm_get(&c->where, st->tensors[i].name) != SIZE_MAX) {
            nf_diag_addf(d, NF_C_DUPLICATE_MEMBER, path, "",
                         "tensor \"%s\" is also in another shard", st->tensors[i].name);
            return false;
        }
        if (!sm_put(&c->where, st->tensors[i].name, (n << 32) | i)) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return false;
        }
    }
    return true;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The shards an index lists, in order of first appearance; every one must
 * exist (a missing shard is `io`, exit 3, naming it). */
static bool open_index(ckpt *c, const char *index_path, nf_diags *d)
{
    size_t len;
    char *text = slurp(index_path, MAX_INDEX_BYTES, &len, d);
    if (!text)
        return false;
    nf_diags local = NF_DIAGS_INIT;
    local.file = index_path;
    nf_jdoc *doc = nf_jdoc_parse(text, len, 0, &local);
    free(text);
    nf_jval *wm = doc ? nf_jobj_get(nf_jdoc_root(doc), "weight_map") : NULL;
    if (doc && nf_jtype_of(wm) != NF_J_OBJECT)
        nf_diag_add(&local, NF_C_SCHEMA, "/weight_map", "the index needs a \"weight_map\" object");
    bool ok = doc && nf_jtype_of(wm) == NF_J_OBJECT;
    char **shards = NULL;
    size_t n = 0;
    if (ok) {
        shards = calloc(nf_jobj_len(wm) + 1, sizeof *shards);
        nf_strmap seen = {0};
        nf_jiter it = nf_jobj_iter(wm);
        const char *k;
        nf_jval *v;
        while (ok && shards && nf_jobj_next(&it, &k, &v)) {
            const char *f = nf_jstr(v, NULL);
            if (!f || !*f || strchr(f, '/')) {
                char *q = nf_ptr_join("/weight_map", k, strlen(k));
                nf_diag_add(&local, NF_C_SCHEMA, q ? q : "",
                            "a shard must be a file name in the checkpoint's directory");
                free(q);
                ok = false;
            } else if (sm_get(&seen, f) == SIZE_MAX) {
                sm_put(&seen, f, n);
                shards[n++] = (char *)f;
            }
        }
        nf_strmap_free(&seen);
        ok = ok && shards;
    }
    if (ok)
        qsort(shards, n, sizeof *shards, str_cmp);
    size_t missing = 0, first_missing = 0;
    const char *why = NULL;
    for (size_t i = 0; ok && i < n; i++) {
        char *p = nf_path_join(c->dir, shards[i]);
        const char *w = p ? file_problem(p) : "cannot be read";
        if (w && missing++ == 0) {
            first_missing = i;
            why = w;
        }
        free(p);
    }
    if (missing) {
        char *p = nf_path_join(c->dir, shards[first_missing]);
        nf_diag_addf(&local, NF_C_IO, p ? p : shards[first_missing], "",
                     "shard \"%s\" of %s %s%s", shards[first_missing],
                     nf_basename(index_path), why, missing > 1 ? " (and others)" : "");
        free(p);
    }
    ok = ok && !nf_diags_exit(&local);
    size_t base = c->n_st; /* shards[i] becomes shard base + i */
    for (size_t i = 0; ok && i < n; i++) {
        char *p = nf_path_join(c->dir, shards[i]);
        ok = p && ck_add_shard(c, p, &local);
        free(p);
    }
    /* every name of the map is where the map says; shards are compared by
     * the index's own names, never by the file a symlink resolves to (a
     * Hugging Face cache links each shard to a blob named by its hash) */
    nf_jiter it = nf_jobj_iter(wm);
    const char *k;
    nf_jval *v;
    while (ok && nf_jobj_next(&it, &k, &v)) {
        size_t w = sm_get(&c->where, k);
        const char *f = nf_jstr(v, NULL);
        char **at = f ? bsearch(&f, shards, n, sizeof *shards, str_cmp) : NULL;
        if (w == SIZE_MAX || !at || (w >> 32) != base + (size_t)(at - shards)) {
            char *q = nf_ptr_join("/weight_map", k, strlen(k));
            nf_diag_add(&local, NF_C_REFERENCE, q ? q : "", "tensor \"%s\" is not in shard \"%s\"", k,
                        nf_jstr(v, NULL));
            free(q);
            ok = false;
        }
    }
    free(shards);
    nf_jdoc_free(doc);
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    return ok;
}

/* An index beside model.safetensors. The single file is what is imported,
 * as transformers loads it when both are there (SAFE_WEIGHTS_NAME before
 * SAFE_WEIGHTS_INDEX_NAME); the index is still read, never ignored
 * silently: a malformed one (json, schema) or one that is no regular file
 * (io) is an error, one that maps every tensor to model.safetensors must
 * agree with it (reference), and one naming other shards gets a warning
 * that they are not imported. c holds model.safetensors as its only shard. */
static bool index_beside_single(ckpt *c, const nf_import_opts *o, const char *index_path,
                                nf_diags *d)
{
    const char *why = file_problem(index_path);
    if (why) {
        nf_diag_addf(d, NF_C_IO, index_path, "", "%s beside model.safetensors %s",
                     nf_basename(index_path), why);
        return false;
    }
    size_t len;
    char *text = slurp(index_path, MAX_INDEX_BYTES, &len, d);
    if (!text)
        return false;
    nf_diags local = NF_DIAGS_INIT;
    local.file = index_path;
    nf_jdoc *doc = nf_jdoc_parse(text, len, 0, &local);
    free(text);
    nf_jval *wm = doc ? nf_jobj_get(nf_jdoc_root(doc), "weight_map") : NULL;
    if (doc && nf_jtype_of(wm) != NF_J_OBJECT)
        nf_diag_add(&local, NF_C_SCHEMA, "/weight_map", "the index needs a \"weight_map\" object");
    const char *other = NULL;
    nf_jiter it = nf_jobj_iter(wm);
    const char *k;
    nf_jval *v;
    while (doc && nf_jtype_of(wm) == NF_J_OBJECT && !nf_diags_exit(&local) &&
           nf_jobj_next(&it, &k, &v)) {
        const char *f = nf_jstr(v, NULL);
        char *q = nf_ptr_join("/weight_map", k, strlen(k));
        if (!f || !*f || strchr(f, '/'))
            nf_diag_add(&local, NF_C_SCHEMA, q ? q : "",
                        "a shard must be a file name in the checkpoint's directory");
        else if (strcmp(f, "model.safetensors") != 0)
            other = other ? other : f;
        else if (sm_get(&c->where, k) == SIZE_MAX)
            nf_diag_add(&local, NF_C_REFERENCE, q ? q : "",
                        "tensor \"%s\" is not in model.safetensors", k);
        free(q);
    }
    bool ok = doc && !nf_diags_exit(&local);
    if (ok && other)
        warnf(o, "warning: %s names other shards (\"%s\"); model.safetensors beside it is "
              "imported, as transformers loads it", index_path, other);
    nf_jdoc_free(doc);
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    return ok;
}

/* ---- configs ------------------------------------------------------------------ */

typedef struct {
    nf_jval *obj;
    const char *text;
} cfg_copy_ctx;

/* Copy every member of the object at span obj as raw text, leaving out
 * names in skip (NULL-ended). */
static nf_jval *copy_members(const nf_jdoc *doc, const char *const *path, const char *const *skip)
{
    size_t tl;
    const char *text = nf_jdoc_text(doc, &tl);
    nf_jval *src = nf_jdoc_root(doc);
    for (const char *const *p = path; *p; p++)
        src = nf_jobj_get(src, *p);
    nf_jval *out = nf_jnew_object();
    if (!out || nf_jtype_of(src) != NF_J_OBJECT)
        return out;
    nf_jiter it = nf_jobj_iter(src);
    const char *k;
    nf_jval *v;
    while (nf_jobj_next(&it, &k, &v)) {
        bool skipped = false;
        for (const char *const *s = skip; s && *s; s++)
            skipped |= strcmp(*s, k) == 0;
        if (skipped)
            continue;
        const char *mp[8];
        size_t n = 0;
        for (const char *const *p = path; *p && n < 6; p++)
            mp[n++] = *p;
        mp[n++] = k;
        mp[n] = NULL;
        nf_span sp;
        if (nf_jdoc_span(doc, mp, &sp))
            nf_jobj_set(out, k, nf_jnew_raw(text + sp.start, sp.len));
    }
    (void)v;
    return out;
}

/* "<X>ForConditionalGeneration" -> "<X>ForCausalLM" into buf; false when
 * name is not a wrapper class. */
static bool causal_name(const char *name, char *buf, size_t n)
{
    static const char suf[] = "ForConditionalGeneration";
    size_t l = name ? strlen(name) : 0;
    if (l <= sizeof suf - 1 || l > 200 || strcmp(name + l - (sizeof suf - 1), suf) != 0)
        return false;
    snprintf(buf, n, "%.*sForCausalLM", (int)(l - (sizeof suf - 1)), name);
    return true;
}

char *nf_import_normalize_config(const char *text, size_t len, const char *file, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = file;
    nf_jdoc *doc = nf_jdoc_parse(text, len, 0, &local);
    char *out = NULL;
    nf_jval *o = NULL;
    if (doc && nf_jtype_of(nf_jdoc_root(doc)) != NF_J_OBJECT) {
        nf_diag_add(&local, NF_C_SCHEMA, "", "config must be a JSON object");
        goto done;
    }
    if (!doc)
        goto done;
    size_t tl;
    const char *t = nf_jdoc_text(doc, &tl);
    nf_jval *root = nf_jdoc_root(doc);
    nf_jval *tc = nf_jobj_get(root, "text_config");
    nf_jval *a = nf_jobj_get(root, "architectures");
    const char *top = nf_jtype_of(a) == NF_J_ARRAY ? nf_jstr(nf_jarr_get(a, 0), NULL) : NULL;
    char name[256];
    bool wrapper = causal_name(top, name, sizeof name);
    const char *mt = nf_jstr(nf_jobj_get(root, "model_type"), NULL);
    bool flat_text = wrapper && mt && ends_with(mt, "_text");
    nf_jval *geom = root;
    if (nf_jtype_of(tc) == NF_J_OBJECT) {
        /* the text part; architectures and tie_word_embeddings from the top */
        static const char *const tp[] = {"text_config", NULL};
        o = copy_members(doc, tp, NULL);
        geom = tc;
        if (o && !nf_jobj_has(tc, "architectures") && wrapper) {
            nf_jval *arr = nf_jnew_array();
            nf_jarr_push(arr, nf_jnew_string(name));
            nf_jobj_set(o, "architectures", arr);
        }
        if (o && !nf_jobj_has(tc, "tie_word_embeddings")) {
            static const char *const p2[] = {"tie_word_embeddings", NULL};
            nf_span sp;
            if (nf_jdoc_span(doc, p2, &sp))
                nf_jobj_set(o, "tie_word_embeddings", nf_jnew_raw(t + sp.start, sp.len));
        }
    } else if (flat_text) {
        /* the text geometry at the top, a wrapper class name (spec 4.2) */
        static const char *const none[] = {NULL};
        static const char *const skip[] = {"architectures", NULL};
        nf_jval *c = copy_members(doc, none, skip);
        o = nf_jnew_object();
        nf_jval *arr = nf_jnew_array();
        nf_jarr_push(arr, nf_jnew_string(name));
        nf_jobj_set(o, "architectures", arr);
        nf_jiter it = nf_jobj_iter(c);
        const char *k;
        nf_jval *v;
        while (o && nf_jobj_next(&it, &k, &v))
            nf_jobj_set(o, k, nf_jval_ref(v));
        nf_jval_free(c);
    }
    /* the Hugging Face defaults of the MoE families */
    bool moe = nf_jobj_has(geom, "num_experts") || nf_jobj_has(geom, "num_local_experts");
    if (moe && !nf_jobj_has(geom, "decoder_sparse_step")) {
        if (!o) {
            static const char *const none[] = {NULL};
            o = copy_members(doc, none, NULL);
        }
        if (o)
            nf_jobj_set(o, "decoder_sparse_step", nf_jnew_u64(1));
    }
    if (moe && !nf_jobj_has(geom, "mlp_only_layers")) {
        if (!o) {
            static const char *const none[] = {NULL};
            o = copy_members(doc, none, NULL);
        }
        if (o)
            nf_jobj_set(o, "mlp_only_layers", nf_jnew_array());
    }
    if (o) {
        out = nf_jval_to_text(o, false, NULL);
    } else {
        nf_span sp = nf_jspan_root(t, tl);
        out = strndup(t + sp.start, sp.len);
    }
    if (!out)
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
done:
    nf_jval_free(o);
    nf_jdoc_free(doc);
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    return out;
}

/* The normalised config of a Hugging Face config.json file. */
static char *hf_config(const char *path, nf_diags *d)
{
    size_t len;
    char *text = slurp(path, MAX_CONFIG_BYTES, &len, d);
    if (!text)
        return NULL;
    char *out = nf_import_normalize_config(text, len, path, d);
    free(text);
    return out;
}

/* llama.cpp architecture -> Hugging Face architecture and model_type. */
static const struct {
    const char *gguf, *arch, *model_type;
} gguf_archs[] = {
    {"llama", "LlamaForCausalLM", "llama"},       {"qwen2", "Qwen2ForCausalLM", "qwen2"},
    {"qwen3", "Qwen3ForCausalLM", "qwen3"},       {"qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe"},
    {"qwen3next", "Qwen3NextForCausalLM", "qwen3_next"},
    {"qwen35", "Qwen3_5ForCausalLM", "qwen3_5_text"},
    {"qwen35moe", "Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"},
    {"phi3", "Phi3ForCausalLM", "phi3"},          {"gpt2", "GPT2LMHeadModel", "gpt2"},
    {"mistral", "MistralForCausalLM", "mistral"}, {"gemma", "GemmaForCausalLM", "gemma"},
};

/* Copy GGUF key ARCH.SUFFIX into o as hf_key, as its JSON value; a value
 * JSON cannot hold as it is (a NaN or infinite epsilon, a string that is
 * not UTF-8) is a diagnostic in d (range, utf8: nf_gguf_kv_json), never a
 * null. */
static void set_kv(nf_jval *o, const nf_gguf *g, const char *hf_key, const char *arch,
                   const char *suffix, nf_diags *d)
{
    char key[256];
    snprintf(key, sizeof key, "%s%s%s", arch ? arch : "", arch ? "." : "", suffix);
    const nf_gguf_kv *kv = nf_gguf_find_kv(g, key);
    if (!kv || kv->type == NF_GGUF_ARRAY)
        return;
    size_t len;
    char *j = nf_gguf_kv_json(g, kv, &len, d);
    if (j)
        nf_jobj_set(o, hf_key, nf_jnew_raw(j, len));
    free(j);
}

static bool kv_u64(const nf_gguf *g, const char *arch, const char *suffix, uint64_t *out)
{
    char key[256];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return nf_gguf_kv_u64(g, nf_gguf_find_kv(g, key), out);
}

/* Which of llama.cpp's alternative tensor layouts a GGUF uses (nf_binder.h
 * NF_GGUF_FORM_*), from the first layers' tensor names. */
static unsigned gguf_forms(const nf_gguf *g, const char *arch)
{
    uint64_t L = 0;
    unsigned f = 0;
    kv_u64(g, arch, "block_count", &L);
    for (uint64_t i = 0; i < L && i < 8; i++) {
        char n[96];
        snprintf(n, sizeof n, "blk.%llu.ssm_in.weight", (unsigned long long)i);
        if (!strcmp(arch, "qwen3next") && nf_gguf_find_tensor(g, n))
            f |= NF_GGUF_FORM_SSM_IN;
        snprintf(n, sizeof n, "blk.%llu.ffn_gate_up_exps.weight", (unsigned long long)i);
        if (nf_gguf_find_tensor(g, n))
            f |= NF_GGUF_FORM_GATE_UP_EXPS;
    }
    return f;
}

/* The hybrids' keys (GGUF.md 4.1) into Hugging Face names: the trunk's
 * layers (block_count less nextn_predict_layers, which becomes
 * mtp_num_hidden_layers), full_attention_interval and the linear-attention
 * geometry (Dv = inner_size / time_step_rank). */
static bool gguf_hybrid_config(nf_jval *o, const nf_gguf *g, const char *arch, nf_diags *d)
{
    uint64_t L = 0, nextn = 0, v;
    if (kv_u64(g, arch, "block_count", &L) && kv_u64(g, arch, "nextn_predict_layers", &nextn) &&
        nextn) {
        if (nextn >= L) {
            nf_diag_addf(d, NF_C_RANGE, g->path, "", "%s.nextn_predict_layers %llu is not below "
                         "block_count %llu", arch, (unsigned long long)nextn, (unsigned long long)L);
            return false;
        }
        nf_jobj_set(o, "num_hidden_layers", nf_jnew_u64(L - nextn));
        nf_jobj_set(o, "mtp_num_hidden_layers", nf_jnew_u64(nextn));
    }
    set_kv(o, g, "full_attention_interval", arch, "full_attention_interval", d);
    set_kv(o, g, "linear_conv_kernel_dim", arch, "ssm.conv_kernel", d);
    set_kv(o, g, "linear_key_head_dim", arch, "ssm.state_size", d);
    set_kv(o, g, "linear_num_key_heads", arch, "ssm.group_count", d);
    set_kv(o, g, "linear_num_value_heads", arch, "ssm.time_step_rank", d);
    set_kv(o, g, "shared_expert_intermediate_size", arch, "expert_shared_feed_forward_length", d);
    uint64_t inner, hv;
    if (kv_u64(g, arch, "ssm.inner_size", &inner) && kv_u64(g, arch, "ssm.time_step_rank", &hv)) {
        if (hv == 0 || inner % hv != 0) {
            nf_diag_addf(d, NF_C_SCHEMA, g->path, "", "%s.ssm.inner_size %llu is not a multiple "
                         "of %s.ssm.time_step_rank %llu", arch, (unsigned long long)inner, arch,
                         (unsigned long long)hv);
            return false;
        }
        nf_jobj_set(o, "linear_value_head_dim", nf_jnew_u64(inner / hv));
    }
    if (kv_u64(g, arch, "rope.dimension_count", &v)) {
        uint64_t D = 0;
        if (kv_u64(g, arch, "attention.key_length", &D) && D && v <= D && v) {
            char buf[64];
            snprintf(buf, sizeof buf, "%.17g", (double)v / (double)D);
            if (!strchr(buf, '.') && !strchr(buf, 'e'))
                strcat(buf, ".0");
            nf_jobj_set(o, "partial_rotary_factor", nf_jnew_raw(buf, strlen(buf)));
        }
    }
    return true;
}

/* A Hugging Face-style config from a GGUF's keys (as JSON text). */
static char *gguf_config(const nf_gguf *g, const char *arch, nf_diags *d)
{
    nf_jval *o = nf_jnew_object();
    if (!o) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < sizeof gguf_archs / sizeof *gguf_archs; i++)
        if (strcmp(gguf_archs[i].gguf, arch) == 0) {
            nf_jval *a = nf_jnew_array();
            nf_jarr_push(a, nf_jnew_string(gguf_archs[i].arch));
            nf_jobj_set(o, "architectures", a);
            nf_jobj_set(o, "model_type", nf_jnew_string(gguf_archs[i].model_type));
        }
    if (!nf_jobj_has(o, "model_type"))
        nf_jobj_set(o, "model_type", nf_jnew_string(arch));
    char key[128];
    static const struct {
        const char *hf, *suffix;
    } keys[] = {
        {"hidden_size", "embedding_length"},
        {"intermediate_size", "feed_forward_length"},
        {"num_hidden_layers", "block_count"},
        {"num_attention_heads", "attention.head_count"},
        {"num_key_value_heads", "attention.head_count_kv"},
        {"head_dim", "attention.key_length"},
        {"max_position_embeddings", "context_length"},
        {"rms_norm_eps", "attention.layer_norm_rms_epsilon"},
        {"layer_norm_epsilon", "attention.layer_norm_epsilon"},
        {"rope_theta", "rope.freq_base"},
        {"num_experts", "expert_count"},
        {"num_experts_per_tok", "expert_used_count"},
        {"moe_intermediate_size", "expert_feed_forward_length"},
        {"vocab_size", "vocab_size"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        set_kv(o, g, keys[i].hf, arch, keys[i].suffix, d);
    bool hybrid = !strcmp(arch, "qwen3next") || !strcmp(arch, "qwen35") || !strcmp(arch, "qwen35moe");
    if ((hybrid && !gguf_hybrid_config(o, g, arch, d)) || nf_diags_exit(d)) {
        nf_jval_free(o);
        return NULL;
    }
    if (!nf_jobj_has(o, "vocab_size")) {
        const nf_gguf_tensor *e = nf_gguf_find_tensor(g, "token_embd.weight");
        const nf_gguf_kv *tok = nf_gguf_find_kv(g, "tokenizer.ggml.tokens");
        if (e && e->n_dims == 2)
            nf_jobj_set(o, "vocab_size", nf_jnew_u64(e->ne[1]));
        else if (tok && tok->type == NF_GGUF_ARRAY)
            nf_jobj_set(o, "vocab_size", nf_jnew_u64(tok->n_elems));
    }
    if ((!strcmp(arch, "qwen3moe") || !strcmp(arch, "qwen3next") || !strcmp(arch, "qwen35moe")) &&
        nf_jobj_has(o, "num_experts")) {
        /* llama.cpp keeps no such key: a layer without a router is dense */
        nf_jval *dense = nf_jnew_array();
        uint64_t L = 0, nextn = 0;
        kv_u64(g, arch, "block_count", &L);
        if (kv_u64(g, arch, "nextn_predict_layers", &nextn) && nextn < L)
            L -= nextn; /* MTP layers are not the trunk's */
        for (uint64_t i = 0; g->n_tensors && i < L && i < 65536; i++) {
            char tn[64];
            snprintf(tn, sizeof tn, "blk.%llu.ffn_gate_inp.weight", (unsigned long long)i);
            if (!nf_gguf_find_tensor(g, tn))
                nf_jarr_push(dense, nf_jnew_u64(i));
        }
        nf_jobj_set(o, "decoder_sparse_step", nf_jnew_u64(1));
        nf_jobj_set(o, "mlp_only_layers", dense);
    }
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    const nf_gguf_kv *rs = nf_gguf_find_kv(g, key);
    if (rs) {
        nf_jval *r = nf_jnew_object();
        set_kv(r, g, "rope_type", arch, "rope.scaling.type", d);
        set_kv(r, g, "factor", arch, "rope.scaling.factor", d);
        nf_jobj_set(o, "rope_scaling", r);
    }
    set_kv(o, g, "bos_token_id", NULL, "tokenizer.ggml.bos_token_id", d);
    set_kv(o, g, "eos_token_id", NULL, "tokenizer.ggml.eos_token_id", d);
    if (nf_diags_exit(d)) {
        nf_jval_free(o);
        return NULL;
    }
    if (g->n_tensors)
        nf_jobj_set(o, "tie_word_embeddings", nf_jnew_bool(!nf_gguf_find_tensor(g, "output.weight")));
    char *t = nf_jval_to_text(o, false, NULL);
    nf_jval_free(o);
    if (!t)
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    return t;
}

/* ---- the manifest --------------------------------------------------------------- */

typedef struct {
    const nf_import_opts *o;
    nf_diags *d;
    ckpt *c;
    nf_jval *objects, *bindings, *uses;
    nf_strmap objs;      /* object ID -> index in objects */
    size_t n_objects;
    nf_strmap bound;     /* parameter name -> 1 (bound) */
    nf_jval **bjson;  /* binding values by order of binding, for shares */
    nf_strmap bidx;      /* parameter name -> index into bjson */
    size_t n_b, cap_b;
    size_t n_missing;
    bool type_reported[64];  /* unsupported GGUF types already named */
    bool other_reported;
    nf_strmap colsaux;       /* parameter -> 1: its use takes input_columns */
    char *colsaux_id;        /* the shared input_columns object (one geometry) */
    uint64_t cols_k, cols_v, cols_hd;
    nf_jval *row_copies;     /* GGUF objects whose whole rows the packer moves */
    nf_jval *transformed;    /* objects decoded and re-encoded with a transform */
    struct gtrec *gt;        /* GGUF: per tensor of the file, what holds it */
    char (*gt_sha)[65];      /* GGUF: per tensor, the SHA-256 of its bytes */
    uint64_t nonzero_gap;    /* GGUF: first nonzero padding byte (UINT64_MAX: none) */
} mb;

/* Rows [trow, trow + n) of a GGUF tensor (after its unpermute) are rows
 * [prow, prow + n) of a fused parent. */
typedef struct {
    uint64_t trow, prow, n;
} gseg;

/* What an export back to GGUF needs of one tensor of the file (DESIGN 16):
 * the object holding it and the transform the import applied. */
typedef struct gtrec {
    const char *object;      /* NULL: no object holds it */
    uint64_t heads;          /* llama-rope unpermute */
    nf_value_map map;
    uint64_t ck, cv, chd;    /* v-heads-tiled column unpermute (Hk, Hv, Dv) */
    bool original;           /* its bytes are kept as NF_GGUF_ORIGINAL_PREFIX + name */
    gseg *segs;              /* fused: where its rows are in the parent */
    size_t n_segs;
} gtrec;

/* How one checkpoint tensor becomes an object (DESIGN 7.5, 10 "Importing
 * GGUF"). */
typedef struct {
    const char *format, *layout;
    bool cols_aux;   /* block format with tiled columns: the use takes input_columns */
} obj_enc;

/* The object encoding of tensor t for expected tensor want: F32 -> fp32,
 * BF16 -> bf16 (identical bytes); F16 -> gguf_f16 when a GGUF matrix or
 * bank and f16_as is left to its default (else opts.f16_as, or fp32 for
 * vectors and tensors a transform needs in values); a block-quantized
 * GGUF matrix or bank -> its gguf_* format in gguf_rows_v1 (the bytes as
 * they are; tiled columns go to the use's input_columns), decoded to fp32
 * when it is a vector or needs a map. False for types import cannot take
 * (no diagnostic). */
static bool enc_of(const mb *m, const ck_t *t, const nf_src_tensor *want, obj_enc *e)
{
    static const char *const contig = "contiguous_le_v1", *const rows = "gguf_rows_v1";
    bool matrix = t->gguf && (t->rank == 2 || t->rank == 3);
    e->cols_aux = false;
    e->layout = contig;
    switch (t->dt) {
    case DT_F32: e->format = "fp32"; return true;
    case DT_BF16: e->format = "bf16"; return true;
    case DT_F16:
        if (m->o->f16_as == NF_FMT_BF16)
            e->format = "bf16";
        else if (m->o->f16_as == NF_FMT_UNKNOWN && matrix && !want->map && !want->tiled_v)
            e->format = "gguf_f16", e->layout = rows;
        else
            e->format = "fp32";
        return true;
    default:
        break;
    }
    nf_format f = t->gguf ? nf_format_of_ggml_type(t->ggml_type) : NF_FMT_UNKNOWN;
    if (!nf_format_is_gguf(f))
        return false;
    if (!matrix || want->map) {
        e->format = "fp32";
        return true;
    }
    e->format = nf_format_name(f);
    e->layout = rows;
    e->cols_aux = want->tiled_v != 0;
    return true;
}

/* The unsupported diagnostic for tensor t's type, once per type. */
static void type_unsupported(mb *m, const ck_t *t)
{
    bool *seen = t->gguf && t->ggml_type < 64 ? &m->type_reported[t->ggml_type] : &m->other_reported;
    if (*seen)
        return;
    *seen = true;
    const char *res = t->gguf ? nf_gguf_reserved_name(t->ggml_type) : NULL;
    if (res)
        nf_diag_addf(m->d, NF_C_UNSUPPORTED, t->path, "",
                     "GGUF tensor type %s (\"%s\"; format %s) is a later-wave format this build "
                     "does not support", t->dt_name, t->name, res);
    else if (t->gguf)
        nf_diag_addf(m->d, NF_C_UNSUPPORTED, t->path, "",
                     "GGUF tensor type %s (\"%s\") is not supported: import takes F32, F16, BF16 "
                     "and the gguf_* block types", t->dt_name, t->name);
    else
        nf_diag_addf(m->d, NF_C_UNSUPPORTED, t->path, "",
                     "tensor \"%s\" is %s; import takes F32, F16 and BF16 tensors", t->name,
                     t->dt_name);
}

static nf_jval *shape_json(unsigned rank, const uint64_t *dims)
{
    nf_jval *a = nf_jnew_array();
    for (unsigned i = 0; a && i < rank; i++)
        nf_jarr_push(a, nf_jnew_u64(dims[i]));
    return a;
}

/* A source (DESIGN 5) as a manifest value: its text (nf_source_write),
 * frozen. */
static nf_jval *source_json(const nf_source *s)
{
    char *t = nf_source_text(s);
    nf_jval *v = t ? nf_jnew_frozen(t, strlen(t)) : NULL;
    free(t);
    return v;
}

/* The source of one checkpoint tensor (optionally rows [r0,r1)), with the
 * transforms that undo what llama.cpp's converter did (DESIGN 5): llama
 * q/k rope order, maps (w + 1 norms, -exp(A_log)) and, for F32/F16/BF16
 * tensors, v-head tiled columns. Its strings are t's (s owns nothing). */
static void tensor_source(const mb *m, const ck_t *t, const nf_src_tensor *want, bool rows,
                          uint64_t r0, uint64_t r1, nf_source *s)
{
    obj_enc e;
    bool cols_aux = enc_of(m, t, want, &e) && e.cols_aux;
    memset(s, 0, sizeof *s);
    s->kind = m->c->gguf ? NF_SRC_GGUF : NF_SRC_SAFETENSORS;
    s->path = (char *)t->path;
    s->name = (char *)t->name;
    s->has_rows = rows;
    s->rows[0] = r0;
    s->rows[1] = r1;
    if (want->unpermute_heads) {
        s->has_unpermute = true;
        s->unpermute = NF_UNPERMUTE_LLAMA_ROPE;
        s->unpermute_heads = want->unpermute_heads;
    } else if (want->tiled_v && !cols_aux) {
        nf_source_set_column_unpermute(s, want->tiled_k, want->tiled_v, want->tiled_hd);
    }
    s->map = want->map;
}

static bool push_binding(mb *m, const char *name, nf_jval *b_in)
{
    /* kept as text (the caller's reference to the tree goes when it is done) */
    nf_jval *b = nf_jval_freeze(nf_jval_ref(b_in));
    if (m->n_b == m->cap_b) {
        size_t cap = m->cap_b ? m->cap_b * 2 : 1024;
        nf_jval **v = realloc(m->bjson, cap * sizeof *v);
        if (!v) {
            nf_jval_free(b);
            return false;
        }
        m->bjson = v;
        m->cap_b = cap;
    }
    m->bjson[m->n_b] = b;
    if (!sm_put(&m->bidx, name, m->n_b)) {
        m->bjson[m->n_b] = NULL;
        nf_jval_free(b);
        return false;
    }
    m->n_b++;
    return nf_jobj_set(m->bindings, name, nf_jval_ref(b));
}

/* Look up and check the checkpoint tensor of a parameter's mapping. */
static bool find_src(mb *m, const nf_arch_plan *plan, const nf_param *p, nf_naming nm, ck_t *t)
{
    const nf_src_map *map = &p->src[nm];
    if (map->tensor == SIZE_MAX) {
        nf_diag_add(m->d, NF_C_UNSUPPORTED, "",
                    "%s: no %s tensor maps to \"%s\"", plan->architecture,
                    nm == NF_NAMING_GGUF ? "GGUF" : "checkpoint", p->name);
        return false;
    }
    const nf_src_tensor *want = &plan->tensors[nm][map->tensor];
    if (!ck_find(m->c, want->name, t)) {
        if (m->n_missing++ < 20)
            nf_diag_add(m->d, NF_C_COVERAGE, "",
                        "the checkpoint has no tensor \"%s\" for parameter \"%s\"", want->name,
                        p->name);
        return false;
    }
    /* a ggml tensor written with trailing 1 dimensions (ne = [64, 64, 1])
     * is the same tensor as without them: same elements, same bytes */
    if (t->gguf && t->rank > want->rank) {
        unsigned extra = t->rank - want->rank, k = 0;
        while (k < extra && t->dims[k] == 1)
            k++;
        if (k == extra) {
            memmove(t->dims, t->dims + extra, want->rank * sizeof *t->dims);
            t->rank = want->rank;
        }
    }
    if (t->rank != want->rank || memcmp(t->dims, want->dims, want->rank * sizeof *t->dims)) {
        char a[128], b[128];
        nf_shape_str(t->dims, t->rank, a, sizeof a);
        nf_shape_str(want->dims, want->rank, b, sizeof b);
        nf_diag_addf(m->d, NF_C_COVERAGE, t->path, "",
                     "tensor \"%s\" is [%s]; the config implies [%s] for \"%s\"", t->name, a, b,
                     p->name);
        return false;
    }
    obj_enc e;
    if (!enc_of(m, t, want, &e)) {
        type_unsupported(m, t);
        return false;
    }
    return true;
}

/* Provenance of the objects whose bytes are not the GGUF tensor's: row
 * copies of gguf_* bytes (unpermute), and values decoded and re-encoded
 * with a transform (map, unpermute of F32/F16/BF16). */
static void note_transform(mb *m, const ck_t *t, const nf_src_tensor *want, const obj_enc *e)
{
    if (!t->gguf)
        return;
    bool tiled_cols = want->tiled_v && !e->cols_aux;
    if (!want->unpermute_heads && !want->map && !tiled_cols)
        return;
    bool copy = want->unpermute_heads && !want->map &&
                (!strcmp(e->layout, "gguf_rows_v1") || (t->dt == DT_F32 && !strcmp(e->format, "fp32")) ||
                 (t->dt == DT_BF16 && !strcmp(e->format, "bf16")));
    nf_jval **list = copy ? &m->row_copies : &m->transformed;
    if (!*list)
        *list = nf_jnew_array();
    nf_jarr_push(*list, nf_jnew_string(t->name));
}

/* The use of parameter `param` takes the shared input_columns object of
 * the tiled geometry of want (DESIGN 10; GGUF.md 3.3): made on first use. */
static bool cols_aux(mb *m, const char *param, const nf_src_tensor *want)
{
    if (m->colsaux_id && (m->cols_k != want->tiled_k || m->cols_v != want->tiled_v ||
                          m->cols_hd != want->tiled_hd)) {
        nf_diag_add(m->d, NF_C_UNSUPPORTED, "", "%s: a second linear-attention geometry", param);
        return false;
    }
    if (!m->colsaux_id) {
        uint64_t hk = want->tiled_k, hv = want->tiled_v, hd = want->tiled_hd, r = hv / hk;
        uint64_t K = hv * hd; /* the tensor's columns: a checked shape */
        char id[128];
        snprintf(id, sizeof id, "input_columns.v_heads_tiled.%llux%llux%llu",
                 (unsigned long long)hk, (unsigned long long)hv, (unsigned long long)hd);
        nf_jval *o = nf_jnew_object();
        double *vals = malloc((K ? K : 1) * sizeof *vals);
        /* stored column (j*Hk + g)*Dv + d multiplies input (g*r + j)*Dv + d */
        for (uint64_t c = 0; c < K && vals; c++) {
            uint64_t head = c / hd, j = head / hk, g = head % hk;
            vals[c] = (double)((g * r + j) * hd + c % hd);
        }
        nf_source src = {.kind = NF_SRC_VALUES, .values = vals, .n_values = vals ? K : 0,
                         .dtype = "i32"};
        nf_jobj_set(o, "id", nf_jnew_string(id));
        nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
        nf_jobj_set(o, "shape", shape_json(1, &K));
        nf_jobj_set(o, "format", nf_jnew_string("int32"));
        nf_jobj_set(o, "layout", nf_jnew_string("contiguous_le_v1"));
        nf_jobj_set(o, "source", vals ? source_json(&src) : NULL);
        free(vals);
        nf_jarr_push(m->objects, nf_jval_freeze(o));
        sm_put(&m->objs, id, m->n_objects++);
        m->colsaux_id = strdup(id);
        m->cols_k = hk, m->cols_v = hv, m->cols_hd = hd;
        if (!m->colsaux_id)
            return false;
    }
    return sm_put(&m->colsaux, param, 1);
}

/* The round-trip record of GGUF tensor t, held by `object` (DESIGN 16):
 * the transform the import applies, and whether the tensor's original
 * bytes must be kept too: when the object's values cannot give them back
 * bit for bit (log-neg; a minus-one that nf_export_map_exact refuses; a
 * block-quantized tensor decoded to fp32). False with a diagnostic when the
 * tensor cannot be read. */
static bool record_tensor(mb *m, const ck_t *t, const nf_src_tensor *want, const obj_enc *e,
                          const char *object)
{
    if (!t->gguf || !m->gt || m->gt[t->index].object)
        return true;
    gtrec *r = &m->gt[t->index];
    r->object = object;
    r->heads = want->unpermute_heads;
    r->map = want->map;
    if (want->tiled_v && !e->cols_aux) {
        r->ck = want->tiled_k;
        r->cv = want->tiled_v;
        r->chd = want->tiled_hd;
    }
    if (t->dt == DT_OTHER) {
        r->original = strcmp(e->layout, "gguf_rows_v1") != 0;
    } else if (want->map == NF_VMAP_LOG_NEG) {
        r->original = true;
    } else if (want->map == NF_VMAP_MINUS_ONE) {
        const nf_gguf_tensor *gt = &m->c->g->tensors[t->index];
        void *raw = gt->bytes < SIZE_MAX ? malloc(gt->bytes ? (size_t)gt->bytes : 1) : NULL;
        int rc = raw ? nf_gguf_read_tensor(m->c->g, gt, 0, raw, (size_t)gt->bytes) : -ENOMEM;
        if (rc) {
            nf_diag_addf(m->d, NF_C_IO, t->path, "", "cannot read tensor \"%s\": %s", t->name,
                         strerror(-rc));
            free(raw);
            return false;
        }
        nf_format of = nf_format_from_name(e->format, strlen(e->format));
        r->original = !nf_export_map_exact(t->ggml_type, want->map, of, raw, gt->elements);
        free(raw);
    }
    return true;
}

/* One object per checkpoint tensor; the parameter binds it whole or in parts. */
static nf_jval *bind_plain(mb *m, const nf_arch_plan *plan, const nf_param *p, nf_naming nm)
{
    ck_t t;
    if (!find_src(m, plan, p, nm, &t))
        return NULL;
    const nf_src_map *map = &p->src[nm];
    const nf_src_tensor *want = &plan->tensors[nm][map->tensor];
    obj_enc e;
    enc_of(m, &t, want, &e); /* checked by find_src */
    if (sm_get(&m->objs, t.name) == SIZE_MAX) {
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "id", nf_jnew_string(t.name));
        nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
        if (m->c->gguf && t.rank == 3) /* an expert bank [E, N, K]: the object [E*N, K] (DESIGN 8) */
            nf_jobj_set(o, "shape", shape_json(2, (const uint64_t[]){t.dims[0] * t.dims[1],
                                                                    t.dims[2]}));
        else
            nf_jobj_set(o, "shape", shape_json(t.rank, t.dims));
        nf_jobj_set(o, "format", nf_jnew_string(e.format));
        nf_jobj_set(o, "layout", nf_jnew_string(e.layout));
        nf_source src;
        tensor_source(m, &t, want, false, 0, 0, &src);
        nf_jobj_set(o, "source", source_json(&src));
        /* kept as text: a manifest of 74k records stays a few times its size */
        nf_jarr_push(m->objects, nf_jval_freeze(o));
        sm_put(&m->objs, t.name, m->n_objects++);
        note_transform(m, &t, want, &e);
        if (!record_tensor(m, &t, want, &e, t.name))
            return NULL;
    }
    if (e.cols_aux && !cols_aux(m, p->name, want))
        return NULL;
    nf_jval *b = nf_jnew_object();
    bool same_shape = t.rank == p->rank && !memcmp(t.dims, p->dims, p->rank * sizeof *p->dims);
    if (map->n_ranges == 0 && same_shape) {
        nf_jobj_set(b, "object", nf_jnew_string(t.name));
        return b;
    }
    nf_jval *parts = nf_jnew_array();
    size_t nr = map->n_ranges ? map->n_ranges : 1;
    for (size_t i = 0; i < nr; i++) {
        uint64_t b0 = map->n_ranges ? map->ranges[i].begin : 0;
        uint64_t b1 = map->n_ranges ? map->ranges[i].end : want->elements;
        nf_jval *pt = nf_jnew_object(), *r = nf_jnew_array();
        nf_jobj_set(pt, "object", nf_jnew_string(t.name));
        nf_jarr_push(r, nf_jnew_u64(b0));
        nf_jarr_push(r, nf_jnew_u64(b1));
        nf_jobj_set(pt, "range", r);
        nf_jarr_push(parts, pt);
    }
    nf_jobj_set(b, "parts", parts);
    return b;
}

/* A fused parent's rows [prow, prow + n) hold rows [trow, trow + n) of
 * GGUF tensor t (its record, record_tensor, names the parent). */
static bool record_segment(mb *m, const ck_t *t, const nf_src_tensor *want, const obj_enc *e,
                           const char *parent, uint64_t trow, uint64_t prow, uint64_t n)
{
    if (!t->gguf || !m->gt)
        return true;
    if (!record_tensor(m, t, want, e, parent))
        return false;
    gtrec *r = &m->gt[t->index];
    gseg *v = realloc(r->segs, (r->n_segs + 1) * sizeof *v);
    if (!v) {
        nf_diag_add(m->d, NF_C_IO, "", "out of memory");
        return false;
    }
    r->segs = v;
    r->segs[r->n_segs++] = (gseg){trow, prow, n};
    return true;
}

/* A fused parent for group gi; binds every member. Returns false on error. */
static bool bind_group(mb *m, const nf_arch_plan *plan, size_t gi, nf_naming nm)
{
    const nf_fuse_group *g = &plan->groups[gi];
    uint64_t K = plan->params[g->members[0]].dims[1], rows = 0;
    const char *fmt = NULL, *lay = NULL;
    bool mixed = false, ok = true;
    size_t n_items = 0, max_items = 0;
    for (size_t k = 0; k < g->n_members; k++) {
        size_t nr = plan->params[g->members[k]].src[nm].n_ranges;
        max_items += nr ? nr : 1;
    }
    nf_source *items = calloc(max_items ? max_items : 1, sizeof *items);
    uint64_t *first = calloc(g->n_members, sizeof *first);
    if (!items || !first) {
        free(items);
        free(first);
        nf_diag_add(m->d, NF_C_IO, "", "out of memory");
        return false;
    }
    for (size_t k = 0; k < g->n_members && ok; k++) {
        const nf_param *p = &plan->params[g->members[k]];
        ck_t t;
        if (!find_src(m, plan, p, nm, &t)) {
            ok = false;
            break;
        }
        const nf_src_map *map = &p->src[nm];
        const nf_src_tensor *want = &plan->tensors[nm][map->tensor];
        obj_enc e;
        enc_of(m, &t, want, &e); /* checked by find_src */
        if (fmt && (strcmp(fmt, e.format) != 0 || strcmp(lay, e.layout) != 0))
            mixed = true;
        fmt = e.format;
        lay = e.layout;
        first[k] = rows;
        uint64_t cols = want->elements / want->dims[0], prow = rows;
        size_t nr = map->n_ranges ? map->n_ranges : 1;
        for (size_t i = 0; i < nr && ok; i++) {
            uint64_t b0 = map->n_ranges ? map->ranges[i].begin : 0;
            uint64_t b1 = map->n_ranges ? map->ranges[i].end : want->elements;
            bool whole = map->n_ranges == 0;
            tensor_source(m, &t, want, !whole, b0 / cols, b1 / cols, &items[n_items++]);
            ok = record_segment(m, &t, want, &e, g->id, b0 / cols, prow, (b1 - b0) / cols);
            prow += (b1 - b0) / cols;
        }
        rows += p->dims[0];
    }
    if (ok) {
        nf_jval *o = nf_jnew_object();
        nf_source src = {.kind = NF_SRC_CONCAT, .items = items, .n_items = n_items};
        nf_jobj_set(o, "id", nf_jnew_string(g->id));
        nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
        nf_jobj_set(o, "shape", shape_json(2, (const uint64_t[]){rows, K}));
        nf_jobj_set(o, "format", nf_jnew_string(mixed ? "fp32" : fmt));
        nf_jobj_set(o, "layout", nf_jnew_string(mixed ? "contiguous_le_v1" : lay));
        nf_jobj_set(o, "source", source_json(&src));
        nf_jarr_push(m->objects, nf_jval_freeze(o));
        sm_put(&m->objs, g->id, m->n_objects++);
        for (size_t k = 0; k < g->n_members; k++) {
            const nf_param *p = &plan->params[g->members[k]];
            nf_jval *b = nf_jnew_object(), *parts = nf_jnew_array(), *pt = nf_jnew_object(),
                    *r = nf_jnew_array();
            nf_jobj_set(pt, "object", nf_jnew_string(g->id));
            nf_jarr_push(r, nf_jnew_u64(first[k] * K));
            nf_jarr_push(r, nf_jnew_u64(first[k] * K + p->elements));
            nf_jobj_set(pt, "range", r);
            nf_jarr_push(parts, pt);
            nf_jobj_set(b, "parts", parts);
            if (!push_binding(m, p->name, b))
                ok = false;
            nf_jval_free(b);
        }
    }
    free(items); /* the items' strings are the checkpoint's */
    free(first);
    return ok;
}

/* A group can be fused when every member reads rank-2 rows of the same K. */
static bool fusable(const nf_arch_plan *plan, const nf_fuse_group *g, nf_naming nm)
{
    uint64_t K = plan->params[g->members[0]].dims[1];
    for (size_t k = 0; k < g->n_members; k++) {
        const nf_param *p = &plan->params[g->members[k]];
        const nf_src_map *map = &p->src[nm];
        if (p->rank != 2 || p->dims[1] != K || map->tensor == SIZE_MAX ||
            plan->tensors[nm][map->tensor].rank != 2)
            return false;
    }
    return true;
}

static bool add_plan(mb *m, const nf_arch_plan *plan, nf_naming nm)
{
    bool ok = true;
    bool *done = calloc(plan->n_groups + 1, 1);
    if (!done)
        return false;
    for (size_t i = 0; i < plan->n_params; i++) {
        const nf_param *p = &plan->params[i];
        if (p->shares)
            continue;
        if (m->o->fuse && p->group != SIZE_MAX && fusable(plan, &plan->groups[p->group], nm)) {
            if (!done[p->group]) {
                done[p->group] = true;
                ok &= bind_group(m, plan, p->group, nm);
            }
            continue;
        }
        nf_jval *b = bind_plain(m, plan, p, nm);
        if (!b) {
            ok = false;
            continue;
        }
        ok &= push_binding(m, p->name, b);
        nf_jval_free(b);
    }
    free(done);
    return ok;
}

static bool add_shares_and_uses(mb *m, const nf_arch_plan *plan)
{
    for (size_t i = 0; i < plan->n_params; i++) {
        const nf_param *p = &plan->params[i];
        if (p->shares) {
            size_t j = sm_get(&m->bidx, p->shares);
            if (j == SIZE_MAX) {
                nf_diag_add(m->d, NF_C_COVERAGE, "", "\"%s\" shares \"%s\", which is not bound",
                            p->name, p->shares);
                return false;
            }
            nf_jval *b = nf_jval_ref(m->bjson[j]);
            if (!push_binding(m, p->name, b)) {
                nf_jval_free(b);
                return false;
            }
            nf_jval_free(b);
        }
    }
    for (size_t i = 0; i < plan->n_params; i++) {
        const nf_param *p = &plan->params[i];
        if (!p->input)
            continue;
        nf_jval *u = nf_jnew_object();
        nf_jobj_set(u, "parameter", nf_jnew_string(p->name));
        nf_jobj_set(u, "input", nf_jnew_string(p->input));
        if (p->needs_policy)
            nf_jobj_set(u, "activation_policy", nf_jnew_string("A16Only"));
        if (sm_get(&m->colsaux, p->name) != SIZE_MAX) { /* spec 8: the stored column order */
            nf_jval *a = nf_jnew_object(), *b = nf_jnew_object();
            nf_jobj_set(b, "object", nf_jnew_string(m->colsaux_id));
            nf_jobj_set(a, "input_columns", b);
            nf_jobj_set(u, "auxiliaries", a);
        }
        nf_jarr_push(m->uses, nf_jval_freeze(u));
    }
    return true;
}

/* ---- sources, provenance ---------------------------------------------------------- */

typedef struct {
    nf_jval *files;
    const char *dir;
    const char *out;      /* the output (-o, or "(stdout)" when standard output
                             is a regular file), NULL: none */
    char *mdir;           /* the manifest's directory (absolute): provenance
                             names files relative to it (reproducible builds) */
    bool out_exists;      /* out names an existing file: */
    dev_t out_dev;
    ino_t out_ino;
} prov;

/* The absolute directory the manifest goes to (-o's, or the working
 * directory for standard output), whether or not it exists yet. */
static char *manifest_dir(const nf_import_opts *o)
{
    char *d = o->output ? nf_dirname_dup(o->output) : strdup(".");
    char *r = d ? realpath(d, NULL) : NULL;
    if (!r && d && d[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        r = cwd ? nf_path_join(cwd, d) : NULL;
        free(cwd);
    } else if (!r && d) {
        r = strdup(d);
    }
    free(d);
    return r;
}

/* path (absolute) as provenance records it: relative to the manifest's
 * directory, so that a build elsewhere writes the same bytes. */
static char *prov_path(const prov *pv, const char *abs)
{
    return pv->mdir && abs[0] == '/' ? nf_path_relative(abs, pv->mdir) : strdup(abs);
}

/* Is the existing file st the output? (DESIGN 3: an output naming an input
 * is refused before anything is written, with or without --force.) */
static bool is_output(const prov *pv, const struct stat *st)
{
    return pv->out_exists && st->st_dev == pv->out_dev && st->st_ino == pv->out_ino;
}

static void output_is_input(const prov *pv, const char *path, nf_diags *d)
{
    nf_diag_addf(d, NF_C_USAGE, pv->out, "", "%s names an input file (%s); refusing to write",
                 strcmp(pv->out, "(stdout)") ? "output" : "standard output", path);
}

/* Is path (when it exists) the output? Then a `usage` diagnostic. */
static bool not_output(const prov *pv, const char *path, nf_diags *d)
{
    struct stat sb;
    if (path && stat(path, &sb) == 0 && is_output(pv, &sb)) {
        output_is_input(pv, path, d);
        return false;
    }
    return true;
}

/* Every input of the checkpoint c (the config, the index, the shards, the
 * frontend files, the GGUF) against the output, by device and inode; then
 * the output by the rules of nf_output_file_check. */
static bool outputs_checked(const nf_import_opts *o, const prov *pv, const ckpt *c,
                            const char *config_path, const char *index_path, nf_diags *d)
{
    bool ok = not_output(pv, c->gguf ? c->gguf_path : config_path, d) &&
              not_output(pv, index_path, d);
    for (size_t s = 0; ok && s < c->n_st; s++)
        ok = not_output(pv, c->st_path[s], d);
    for (const char *const *f = frontend_files; ok && !c->gguf && *f; f++) {
        char *p = nf_path_join(c->dir, *f);
        ok = not_output(pv, p, d);
        free(p);
    }
    return ok && (!o->output || nf_output_file_check(o->output, o->force, NULL, 0, d) == 0);
}

/* Every file the import reads is recorded here, before anything is written
 * (the side file of a GGUF is written after its GGUF is recorded). */
static bool prov_file_hashed(prov *pv, const char *path, const char *given, nf_diags *d);

static bool prov_file(prov *pv, const char *path, nf_diags *d)
{
    return prov_file_hashed(pv, path, NULL, d);
}

/* prov_file with the file's SHA-256 already known (given, 64 hex digits),
 * or computed here (given NULL). */
static bool prov_file_hashed(prov *pv, const char *path, const char *given, nf_diags *d)
{
    struct stat sb;
    char hex[65];
    if (stat(path, &sb) != 0) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot stat: %s", strerror(errno));
        return false;
    }
    if (is_output(pv, &sb)) {
        output_is_input(pv, path, d);
        return false;
    }
    int rc = given ? 0 : nf_digest_file(path, hex);
    if (given)
        memcpy(hex, given, 65);
    if (rc) {
        nf_diag_addf(d, NF_C_IO, path, "", "cannot read: %s", strerror(-rc));
        return false;
    }
    char *abs = absdup(path);
    /* every file the manifest names is recorded here first: a path that is
     * not UTF-8 cannot be written into JSON as it is (nf_util.h) */
    const char *np = abs ? abs : path;
    if (nf_utf8_invalid_at(np, strlen(np)) != strlen(np)) {
        nf_diag_addf(d, NF_C_USAGE, path, "",
                     "this path is not valid UTF-8: a manifest cannot name it (rename it)");
        free(abs);
        return false;
    }
    size_t dl = pv->dir ? strlen(pv->dir) : 0;
    /* inside the checkpoint: relative to it; else to the manifest */
    char *rel = abs && !(pv->dir && strncmp(abs, pv->dir, dl) == 0 && abs[dl] == '/')
                    ? prov_path(pv, abs) : NULL;
    const char *shown = rel ? rel : abs ? abs + dl + 1 : NULL;
    nf_jval *f = nf_jnew_object();
    nf_jobj_set(f, "path", nf_jnew_string(shown ? shown : path));
    free(rel);
    nf_jobj_set(f, "bytes", nf_jnew_u64((uint64_t)sb.st_size));
    nf_jobj_set(f, "sha256", nf_jnew_string(hex));
    nf_jarr_push(pv->files, f);
    free(abs);
    return true;
}

static nf_jval *resource_obj(const char *role, const char *path, bool has_range, uint64_t off,
                             uint64_t len)
{
    char id[300];
    snprintf(id, sizeof id, "r.%s", role);
    nf_jval *o = nf_jnew_object();
    nf_source s = {.kind = NF_SRC_FILE, .path = (char *)path, .offset = has_range ? off : 0};
    nf_jobj_set(o, "id", nf_jnew_string(id));
    nf_jobj_set(o, "kind", nf_jnew_string("resource"));
    nf_jobj_set(o, "encoding", nf_jnew_string("raw_bytes_v1"));
    if (has_range)
        nf_jobj_set(o, "bytes", nf_jnew_u64(len));
    nf_jobj_set(o, "source", source_json(&s));
    return o;
}

static void add_resource(mb *m, nf_jval *res, const char *role, nf_jval *obj)
{
    char id[300];
    snprintf(id, sizeof id, "r.%s", role);
    nf_jarr_push(m->objects, obj);
    sm_put(&m->objs, id, m->n_objects++);
    nf_jobj_set(res, role, nf_jnew_string(id));
}

/* A tokenizer string key of the GGUF (tokenizer.chat_template,
 * tokenizer.huggingface.json) as resource `role`: a byte range of the GGUF
 * itself, no copy. A value that is not UTF-8 is refused as every other
 * GGUF string is (utf8, naming the key); a value that is not a string, or
 * an empty one, is dropped with a warning saying so. */
static bool gguf_string_resource(mb *m, const nf_gguf *g, const char *key, const char *role,
                                 nf_jval *res)
{
    const nf_gguf_kv *kv = nf_gguf_find_kv(g, key);
    if (!kv)
        return true;
    char ptr[96];
    snprintf(ptr, sizeof ptr, "/kv/%s", key);
    if (kv->type != NF_GGUF_STRING || kv->value_bytes <= 8) {
        warnf(m->o, "warning: %s: %s is %s; dropped (resource %s needs a non-empty string)",
              g->path, key, kv->type != NF_GGUF_STRING ? nf_gguf_vtype_name(kv->type)
                                                       : "an empty string", role);
        return true;
    }
    size_t len = 0;
    char *v = nf_gguf_kv_string(g, kv, &len);
    if (!v) {
        nf_diag_addf(m->d, NF_C_IO, g->path, ptr, "cannot read %s", key);
        return false;
    }
    size_t bad = nf_utf8_invalid_at(v, len);
    free(v);
    if (bad != len) {
        nf_diag_addf(m->d, NF_C_UTF8, g->path, ptr,
                     "%s is not a UTF-8 string at byte %zu (GGUF strings are UTF-8)", key, bad);
        return false;
    }
    add_resource(m, res, role,
                 resource_obj(role, m->c->gguf_path, true, kv->value_offset + 8, len));
    return true;
}

/* The GGUF's own resources (roles of the header comment): its bytes
 * [0, data_offset) as gguf.prefix (header, key/values, tensor infos: where
 * the tokenizer keys are read from, and what an export back to GGUF
 * starts with), the chat template and the Hugging Face tokenizer. */
static bool gguf_resources(mb *m, const nf_gguf *g, nf_jval *res)
{
    /* every other tokenizer key/value must be what GGUF says it is too:
     * UTF-8 strings, finite numbers (nf_gguf_kv_json checks, names the key
     * and, in an array, the element), though nothing but the prefix keeps it */
    for (size_t i = 0; i < g->n_kv; i++) {
        const nf_gguf_kv *kv = &g->kv[i];
        if (strncmp(kv->key, "tokenizer.", 10) != 0 ||
            !strcmp(kv->key, "tokenizer.chat_template") ||
            !strcmp(kv->key, "tokenizer.huggingface.json"))
            continue;
        char *j = nf_gguf_kv_json(g, kv, NULL, m->d);
        if (!j)
            return false; /* m->d says why */
        free(j);
    }
    if (!gguf_string_resource(m, g, "tokenizer.huggingface.json", "tokenizer.json", res) ||
        !gguf_string_resource(m, g, "tokenizer.chat_template", "chat_template.jinja", res))
        return false;
    /* a GGUF without tensors may end before its data section would start */
    uint64_t n = g->data_start < g->file_size ? g->data_start : g->file_size;
    add_resource(m, res, NF_GGUF_PREFIX_ROLE,
                 resource_obj(NF_GGUF_PREFIX_ROLE, m->c->gguf_path, true, 0, n));
    return true;
}

/* A JSON string for s into t (json-c's escapes). False when out of memory. */
static bool put_jstr(nf_text *t, const char *s)
{
    size_t n = nf_json_escape(s, strlen(s), NULL, 0);
    char *q = malloc(n + 1);
    if (!q)
        return false;
    nf_json_escape(s, strlen(s), q, n);
    nf_text_put(t, q, n);
    free(q);
    return true;
}

static int seg_cmp(const void *x, const void *y)
{
    const gseg *a = x, *b = y;
    return a->trow < b->trow ? -1 : a->trow > b->trow;
}

/* provenance.converter.source.gguf.tensors: per tensor of the file, in
 * its order, {"name", "object", "sha256"} ("object" only when the
 * object's ID is not the name; null for a tensor left out) and the
 * transform the import applied ("unpermute" {"scheme": "llama-rope", "heads"}, "map",
 * "columns" {"scheme": "v-heads-tiled", "k_heads", "v_heads",
 * "head_dim"}, "rows" [[tensor row, parent row, rows], ...] in a fused
 * parent, "original": the object of its original bytes). Each record is one line of compact text (74k of
 * them make a few MB, not the tens a pretty tree would). */
static nf_jval *gguf_tensor_records(mb *m, const nf_gguf *g)
{
    nf_jval *a = nf_jnew_array();
    nf_text t = {0};
    char num[200];
    bool ok = a != NULL;
    for (size_t i = 0; ok && i < g->n_tensors; i++) {
        gtrec *r = &m->gt[i];
        const char *name = g->tensors[i].name;
        nf_text_puts(&t, "{\"name\":");
        ok = put_jstr(&t, name);
        if (!r->object) {
            nf_text_puts(&t, ",\"object\":null");
        } else if (strcmp(r->object, name) != 0) {
            nf_text_puts(&t, ",\"object\":");
            ok = ok && put_jstr(&t, r->object);
        }
        nf_text_puts(&t, ",\"sha256\":\"");
        nf_text_puts(&t, m->gt_sha[i]);
        nf_text_puts(&t, "\"");
        if (r->heads) {
            snprintf(num, sizeof num, ",\"unpermute\":{\"scheme\":\"llama-rope\",\"heads\":%llu}",
                     (unsigned long long)r->heads);
            nf_text_puts(&t, num);
        }
        if (r->map)
            nf_text_puts(&t, r->map == NF_VMAP_MINUS_ONE ? ",\"map\":\"minus-one\""
                                                         : ",\"map\":\"log-neg\"");
        if (r->cv) {
            snprintf(num, sizeof num, ",\"columns\":{\"scheme\":\"v-heads-tiled\",\"k_heads\":%llu,"
                     "\"v_heads\":%llu,\"head_dim\":%llu}", (unsigned long long)r->ck,
                     (unsigned long long)r->cv, (unsigned long long)r->chd);
            nf_text_puts(&t, num);
        }
        if (r->n_segs) {
            qsort(r->segs, r->n_segs, sizeof *r->segs, seg_cmp);
            nf_text_puts(&t, ",\"rows\":[");
            for (size_t k = 0; k < r->n_segs; k++) {
                snprintf(num, sizeof num, "%s[%llu,%llu,%llu]", k ? "," : "",
                         (unsigned long long)r->segs[k].trow, (unsigned long long)r->segs[k].prow,
                         (unsigned long long)r->segs[k].n);
                nf_text_puts(&t, num);
            }
            nf_text_puts(&t, "]");
        }
        if (r->original) {
            char *id = NULL;
            nf_text_puts(&t, ",\"original\":");
            ok = ok && asprintf(&id, "%s%s", NF_GGUF_ORIGINAL_PREFIX, name) >= 0 &&
                 put_jstr(&t, id);
            free(id);
        }
        nf_text_puts(&t, "}");
        size_t len;
        char *txt = nf_text_take(&t, &len);
        ok = ok && txt && nf_jarr_push(a, nf_jnew_raw(txt, len));
        free(txt);
    }
    if (!ok) {
        free(nf_text_take(&t, NULL));
        nf_jval_free(a);
        return NULL;
    }
    return a;
}

/* provenance.converter.source.gguf: the file's quantization keys
 * (general.file_type, general.quantization_version, general.quantized_by
 * and llama-quantize's quantize.* keys, as their JSON values) and which
 * objects do not hold the GGUF tensor's bytes: row_copies (gguf_* rows
 * moved whole, lossless) and transformed (decoded, mapped or unpermuted,
 * re-encoded). */
static nf_jval *gguf_provenance(mb *m, const nf_gguf *g)
{
    nf_jval *o = nf_jnew_object(), *keys = nf_jnew_object();
    for (size_t i = 0; i < g->n_kv; i++) {
        const nf_gguf_kv *kv = &g->kv[i];
        if (strcmp(kv->key, "general.file_type") && strcmp(kv->key, "general.quantization_version") &&
            strcmp(kv->key, "general.quantized_by") && strncmp(kv->key, "quantize.", 9))
            continue;
        size_t jl;
        char *j = nf_gguf_kv_json(g, kv, &jl, m->d);
        if (!j) {
            nf_jval_free(keys);
            nf_jval_free(o);
            return NULL; /* m->d says why */
        }
        nf_jobj_set(keys, kv->key, nf_jnew_raw(j, jl));
        free(j);
    }
    nf_jobj_set(o, "keys", keys);
    nf_jval *tensors = gguf_tensor_records(m, g);
    if (!tensors) {
        nf_jval_free(o);
        nf_diag_add(m->d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    nf_jobj_set(o, "tensors", tensors);
    nf_jobj_set(o, "file_bytes", nf_jnew_u64(g->file_size));
    if (m->nonzero_gap != UINT64_MAX)
        nf_jobj_set(o, "nonzero_padding", nf_jnew_u64(m->nonzero_gap));
    nf_jobj_set(o, "row_copies", m->row_copies ? m->row_copies : nf_jnew_array());
    nf_jobj_set(o, "transformed", m->transformed ? m->transformed : nf_jnew_array());
    m->row_copies = m->transformed = NULL;
    return o;
}

/* ---- the import ------------------------------------------------------------------- */

static nf_jval *component_json(const char *config, nf_jval *resources, const char *target)
{
    nf_jval *c = nf_jnew_object();
    nf_jobj_set(c, "config", nf_jnew_raw(config, strlen(config)));
    if (target)
        nf_jobj_set(c, "target", nf_jnew_string(target));
    if (resources && nf_jobj_len(resources))
        nf_jobj_set(c, "resources", nf_jval_ref(resources));
    return c;
}

/* A GGUF's layer tensors (blk.N.*) past its block_count: the metadata and
 * the tensors disagree, and importing the first block_count layers would
 * make another model than the file holds (llama.cpp refuses such a file:
 * "wrong number of tensors"). One coverage diagnostic naming the first and
 * the count; false then. */
static bool gguf_blocks_within(const ckpt *c, const char *arch, nf_diags *d)
{
    uint64_t L = 0;
    kv_u64(c->g, arch, "block_count", &L);
    size_t n = 0, first = 0;
    unsigned long long first_n = 0;
    for (size_t i = 0; i < c->g->n_tensors; i++) {
        const char *name = c->g->tensors[i].name;
        if (strncmp(name, "blk.", 4) != 0 || name[4] < '0' || name[4] > '9')
            continue;
        char *end;
        errno = 0;
        unsigned long long b = strtoull(name + 4, &end, 10);
        if (*end != '.' || (errno == ERANGE) || b < L)
            continue;
        if (n++ == 0) {
            first = i;
            first_n = b;
        }
    }
    if (!n)
        return true;
    char ptr[48];
    snprintf(ptr, sizeof ptr, "/tensors/%zu", first);
    nf_diag_addf(d, NF_C_COVERAGE, c->g->path, ptr,
                 "tensor \"%s\" is of layer %llu, but %s.block_count is %llu (%zu tensor%s past "
                 "it): the GGUF's metadata and tensors disagree", c->g->tensors[first].name,
                 first_n, arch, (unsigned long long)L, n, n == 1 ? "" : "s");
    return false;
}

/* Unused checkpoint tensors: one warning line. */
static void warn_unused(const nf_import_opts *o, ckpt *c)
{
    size_t n = 0;
    const char *first = NULL;
    if (c->gguf) {
        for (size_t i = 0; i < c->g->n_tensors; i++)
            if (!c->used[0][i] && n++ == 0)
                first = c->g->tensors[i].name;
    } else {
        for (size_t s = 0; s < c->n_st; s++)
            for (size_t i = 0; i < c->st[s]->n_tensors; i++)
                if (!c->used[s][i] && !ends_with(c->st[s]->tensors[i].name, "rotary_emb.inv_freq") &&
                    n++ == 0)
                    first = c->st[s]->tensors[i].name;
    }
    if (n)
        warnf(o, "warning: %zu checkpoint tensor%s no parameter uses (\"%s\"%s) left out", n,
              n == 1 ? "" : "s", first, n > 1 ? " and others" : "");
}

/* What nf_import carries from one phase to the next (imp_free frees it). */
typedef struct {
    const nf_import_opts *o;
    nf_diags *d;
    const char *cp;           /* o->checkpoint */
    ckpt c;
    mb m;
    char *config;             /* the text component's config (JSON text) */
    char *config_path;        /* Hugging Face: config.json (or --config) */
    char *index_path;         /* model.safetensors.index.json, when read */
    char *gguf_arch;          /* GGUF: general.architecture */
    nf_arch_plan plan, mtp;
    bool have_plan, have_mtp;
    char mtp_cfg[96];         /* the mtp component's config */
    nf_jval *res;             /* the text component's resources (role -> ID) */
    nf_jval *comps, *meta;    /* components; metadata (GGUF general.name) */
    nf_jval *resource_objs;   /* the resource objects, set apart (they go last) */
    size_t n_resources;
    prov pv;
} imp;

static void imp_free(imp *s)
{
    mb *m = &s->m;
    nf_jval_free(s->resource_objs);
    nf_jval_free(s->comps);
    nf_jval_free(s->meta);
    nf_jval_free(s->res);
    nf_jval_free(s->pv.files);
    free(s->pv.mdir);
    nf_jval_free(m->objects);
    nf_jval_free(m->bindings);
    nf_jval_free(m->uses);
    for (size_t i = 0; i < m->n_b; i++)
        nf_jval_free(m->bjson[i]);
    free(m->bjson);
    nf_strmap_free(&m->objs);
    nf_strmap_free(&m->colsaux);
    free(m->colsaux_id);
    nf_jval_free(m->row_copies);
    nf_jval_free(m->transformed);
    for (size_t i = 0; m->gt && s->c.g && i < s->c.g->n_tensors; i++)
        free(m->gt[i].segs);
    free(m->gt);
    free(m->gt_sha);
    nf_strmap_free(&m->bound);
    nf_strmap_free(&m->bidx);
    if (s->have_plan)
        nf_arch_plan_free(&s->plan);
    if (s->have_mtp)
        nf_arch_plan_free(&s->mtp);
    free(s->config);
    free(s->config_path);
    free(s->index_path);
    free(s->gguf_arch);
    ck_free(&s->c);
}

/* A Hugging Face checkpoint directory: model.safetensors, or the shards of
 * model.safetensors.index.json. */
static bool open_hf_dir(imp *s)
{
    const char *cp = s->cp;
    ckpt *c = &s->c;
    c->dir = absdup(cp);
    s->config_path = s->o->config ? strdup(s->o->config) : nf_path_join(cp, "config.json");
    char *single = nf_path_join(cp, "model.safetensors");
    s->index_path = nf_path_join(cp, "model.safetensors.index.json");
    const char *sw = single ? file_problem(single) : "cannot be read";
    struct stat ib;
    bool index_there = s->index_path && lstat(s->index_path, &ib) == 0;
    const char *iw = index_there ? file_problem(s->index_path) : NULL;
    bool ok;
    if (sw && strcmp(sw, "is missing") != 0) {
        /* there, but a FIFO, a device, a directory: not "absent" */
        nf_diag_addf(s->d, NF_C_IO, single ? single : cp, "", "model.safetensors %s", sw);
        ok = false;
    } else if (!sw) {
        ok = ck_add_shard(c, single, s->d) &&
             (!index_there || index_beside_single(c, s->o, s->index_path, s->d));
        free(s->index_path);
        s->index_path = NULL;
    } else if (iw) {
        nf_diag_addf(s->d, NF_C_IO, s->index_path, "", "model.safetensors.index.json %s", iw);
        ok = false;
    } else if (!s->index_path || !is_file(s->index_path)) {
        nf_diag_addf(s->d, NF_C_IO, cp, "",
                     "no model.safetensors or model.safetensors.index.json in the directory");
        ok = false;
    } else {
        ok = open_index(c, s->index_path, s->d);
    }
    free(single);
    return ok;
}

/* A .gguf file: its header read and checked (nf_gguf_open). */
static bool open_gguf_file(imp *s)
{
    const char *cp = s->cp;
    ckpt *c = &s->c;
    nf_diags local = NF_DIAGS_INIT;
    local.file = cp;
    c->gguf = true;
    c->g = nf_gguf_open(cp, &local);
    nf_diags_move(s->d, &local);
    nf_diags_free(&local);
    if (!c->g)
        return false;
    /* llama.cpp's gguf-split: the tensors are spread over split.count
     * files; one of them alone is not the model (a coverage line per
     * missing tensor told nothing) */
    uint64_t sc = 0, sn = 0;
    if (nf_gguf_kv_u64(c->g, nf_gguf_find_kv(c->g, "split.count"), &sc) && sc > 1) {
        nf_gguf_kv_u64(c->g, nf_gguf_find_kv(c->g, "split.no"), &sn);
        nf_diag_addf(s->d, NF_C_UNSUPPORTED, cp, "/kv/split.count",
                     "a split GGUF (file %llu of split.count %llu, llama.cpp's gguf-split): "
                     "this build imports single-file GGUFs (join them with "
                     "llama-gguf-split --merge)",
                     (unsigned long long)sn + 1, (unsigned long long)sc);
        return false;
    }
    c->gguf_path = absdup(cp);
    char *dir = nf_dirname_dup(cp);
    c->dir = dir ? absdup(dir) : NULL;
    free(dir);
    c->used = calloc(1, sizeof *c->used);
    if (!c->used || !(c->used[0] = calloc(c->g->n_tensors + 1, 1))) {
        nf_diag_add(s->d, NF_C_IO, "", "out of memory");
        return false;
    }
    return true;
}

/* Phase 1, what kind of checkpoint: a directory, a .gguf file or a single
 * .safetensors file (with a config beside it or --config). */
static bool open_checkpoint(imp *s)
{
    const char *cp = s->cp;
    bool ok;
    if (is_dir(cp)) {
        ok = open_hf_dir(s);
    } else if (ends_with(cp, ".gguf") || ends_with(cp, ".GGUF")) {
        ok = open_gguf_file(s);
    } else if (ends_with(cp, ".safetensors")) {
        char *dir = nf_dirname_dup(cp);
        s->c.dir = dir ? absdup(dir) : NULL;
        free(dir);
        s->config_path = s->o->config ? strdup(s->o->config) : nf_path_join(s->c.dir, "config.json");
        ok = s->o->config || (s->config_path && is_file(s->config_path));
        if (!ok)
            nf_diag_addf(s->d, NF_C_USAGE, cp, "", "a single .safetensors file needs --config FILE");
        ok = ok && ck_add_shard(&s->c, cp, s->d);
    } else if (!is_file(cp)) {
        nf_diag_addf(s->d, NF_C_IO, cp, "", "no such checkpoint: %s", strerror(errno ? errno : ENOENT));
        ok = false;
    } else {
        nf_diag_addf(s->d, NF_C_UNSUPPORTED, cp, "",
                     "not a checkpoint this build reads (a Hugging Face directory, a .safetensors "
                     "file with --config, or a .gguf file)");
        ok = false;
    }
    s->pv.dir = s->c.dir;
    return ok;
}

/* A GGUF's config: general.architecture (a UTF-8 string), the Hugging
 * Face-style config of its keys (gguf_config) and general.name as the
 * manifest's metadata.name. */
static bool read_gguf_config(imp *s)
{
    const nf_gguf *g = s->c.g;
    const char *cp = s->cp;
    size_t alen = 0, nlen = 0;
    s->gguf_arch = nf_gguf_kv_string(g, nf_gguf_find_kv(g, "general.architecture"), &alen);
    if (!s->gguf_arch) {
        nf_diag_addf(s->d, NF_C_SCHEMA, cp, "/kv/general.architecture",
                     "the GGUF has no general.architecture string");
        return false;
    }
    if (nf_utf8_invalid_at(s->gguf_arch, alen) != alen || strlen(s->gguf_arch) != alen) {
        nf_diag_addf(s->d, NF_C_UTF8, cp, "/kv/general.architecture",
                     "general.architecture is not a UTF-8 string (GGUF strings are UTF-8)");
        return false;
    }
    s->config = gguf_config(g, s->gguf_arch, s->d);
    if (!s->config)
        return false;
    char *name = nf_gguf_kv_string(g, nf_gguf_find_kv(g, "general.name"), &nlen);
    if (name && (nf_utf8_invalid_at(name, nlen) != nlen || strlen(name) != nlen)) {
        nf_diag_addf(s->d, NF_C_UTF8, cp, "/kv/general.name",
                     "general.name is not a UTF-8 string (GGUF strings are UTF-8)");
        free(name);
        return false;
    }
    if (name && *name) {
        s->meta = nf_jnew_object();
        nf_jobj_set(s->meta, "name", nf_jnew_string(name));
    }
    free(name);
    return true;
}

/* Phase 2, the config: a GGUF's from its keys, else config.json. */
static bool read_config(imp *s)
{
    if (s->c.gguf)
        return read_gguf_config(s);
    s->config = hf_config(s->config_path, s->d);
    return s->config != NULL;
}

/* The frontend files beside a Hugging Face checkpoint (frontend_files) as
 * resources of the text component, each recorded in provenance. */
static bool add_frontend_files(imp *s)
{
    for (const char *const *f = frontend_files; *f; f++) {
        char *p = nf_path_join(s->c.dir, *f);
        struct stat sb, lb;
        /* a frontend file that is there but is no regular file (a FIFO,
         * a directory, a device, a dangling link of an interrupted
         * download) is an I/O failure, never silently left out */
        bool there = p && lstat(p, &lb) == 0;
        bool readable = there && stat(p, &sb) == 0;
        if (there && (!readable || !S_ISREG(sb.st_mode))) {
            nf_diag_addf(s->d, NF_C_IO, p, "", "%s", !readable
                         ? "frontend file cannot be read (a dangling symlink?)"
                         : S_ISDIR(sb.st_mode) ? "frontend file is a directory"
                         : "frontend file is not a regular file (a FIFO or device)");
            free(p);
            return false;
        }
        if (readable && S_ISREG(sb.st_mode)) {
            if (sb.st_size == 0) {
                warnf(s->o, "warning: %s is empty; left out (a resource has positive length)", p);
            } else {
                char *abs = absdup(p);
                add_resource(&s->m, s->res, *f, resource_obj(*f, abs, false, 0, 0));
                free(abs);
                if (!prov_file(&s->pv, p, s->d)) {
                    free(p);
                    return false;
                }
            }
        }
        free(p);
    }
    return true;
}

/* The GGUF in provenance: one pass over it gives its SHA-256 and every
 * tensor's (m.gt_sha), and finds nonzero padding, which an export cannot
 * give back (it writes zeros there): said in a warning. */
static bool prov_gguf(imp *s)
{
    const nf_gguf *g = s->c.g;
    char hex[65];
    s->m.gt = calloc(g->n_tensors + 1, sizeof *s->m.gt);
    s->m.gt_sha = calloc(g->n_tensors + 1, sizeof *s->m.gt_sha);
    if (!s->m.gt || !s->m.gt_sha) {
        nf_diag_add(s->d, NF_C_IO, "", "out of memory");
        return false;
    }
    struct stat sb;
    if (stat(g->path, &sb) == 0 && is_output(&s->pv, &sb)) {
        output_is_input(&s->pv, g->path, s->d);
        return false;
    }
    int rc = nf_gguf_hash(g, hex, s->m.gt_sha, &s->m.nonzero_gap);
    if (rc) {
        nf_diag_addf(s->d, NF_C_IO, g->path, "", "cannot read: %s", strerror(-rc));
        return false;
    }
    if (s->m.nonzero_gap != UINT64_MAX)
        warnf(s->o, "warning: %s: byte %llu, padding of the data section, is not zero; an "
              "export back to GGUF writes zeros there", g->path,
              (unsigned long long)s->m.nonzero_gap);
    return prov_file_hashed(&s->pv, s->c.gguf_path, hex, s->d);
}

/* Phase 3, resources and provenance files (they do not depend on the
 * architecture): the files read, with their digests, and the tokenizer
 * resources. The resource objects are then set apart: they come last in
 * the payload. */
static bool add_resources(imp *s)
{
    bool ok;
    if (!s->c.gguf) {
        ok = prov_file(&s->pv, s->config_path, s->d) &&
             (!s->index_path || prov_file(&s->pv, s->index_path, s->d));
        for (size_t i = 0; ok && i < s->c.n_st; i++)
            ok = prov_file(&s->pv, s->c.st_path[i], s->d);
        ok = ok && add_frontend_files(s);
    } else {
        ok = prov_gguf(s) && gguf_resources(&s->m, s->c.g, s->res);
    }
    if (!ok)
        return false;
    s->resource_objs = s->m.objects;
    s->m.objects = nf_jnew_array();
    s->n_resources = s->m.n_objects;
    return true;
}

/* The text component's plan (nf_arch_derive) from the config, for a GGUF
 * only when it is an architecture this build imports from GGUF. */
static bool derive_text_plan(imp *s, nf_arch_input *in)
{
    const char *cp = s->cp;
    memset(in, 0, sizeof *in);
    in->component = "text";
    in->config_raw = s->config;
    in->config_len = strlen(s->config);
    if (s->c.gguf) {
        bool known = false;
        for (size_t i = 0; i < sizeof gguf_archs / sizeof *gguf_archs; i++)
            known |= strcmp(gguf_archs[i].gguf, s->gguf_arch) == 0;
        if (!known) {
            nf_diag_addf(s->d, NF_C_UNSUPPORTED, cp, "/kv/general.architecture",
                         "GGUF architecture \"%s\" is not supported", s->gguf_arch);
            return false;
        }
        in->gguf_forms = gguf_forms(s->c.g, s->gguf_arch);
    }
    nf_diags local = NF_DIAGS_INIT;
    local.file = s->c.gguf ? cp : s->config_path;
    s->have_plan = nf_arch_derive(in, &s->plan, &local) == 0;
    nf_diags_move(s->d, &local);
    nf_diags_free(&local);
    if (!s->have_plan)
        return false;
    if (s->c.gguf && (!s->plan.gguf_arch || strcmp(s->plan.gguf_arch, s->gguf_arch) != 0)) {
        nf_diag_addf(s->d, NF_C_UNSUPPORTED, cp, "/kv/general.architecture",
                     "GGUF import of %s is not supported", s->plan.architecture);
        return false;
    }
    return true;
}

/* An mtp component for hybrid checkpoints that carry mtp.* tensors (in a
 * GGUF, the MTP block follows the trunk's: blk.L.nextn.*, GGUF.md 4.4):
 * its plan derived and bound. True when there is none. */
static bool add_mtp_plan(imp *s, const nf_arch_input *in, nf_naming nm)
{
    const char *a = s->plan.architecture;
    const char *mtp_arch = !strcmp(a, "Qwen3NextForCausalLM") ? "Qwen3NextMTP"
                         : !strcmp(a, "Qwen3_5ForCausalLM") || !strcmp(a, "Qwen3_5MoeForCausalLM")
                               ? "Qwen3_5MTP"
                               : NULL;
    char probe[64] = "mtp.fc.weight";
    if (s->c.gguf) {
        uint64_t L = 0, nextn = 0;
        kv_u64(s->c.g, s->gguf_arch, "block_count", &L);
        kv_u64(s->c.g, s->gguf_arch, "nextn_predict_layers", &nextn);
        snprintf(probe, sizeof probe, "blk.%llu.nextn.eh_proj.weight",
                 (unsigned long long)(nextn < L ? L - nextn : 0));
        if (!nextn || nextn >= L)
            mtp_arch = NULL;
    }
    ck_t pt;
    if (!mtp_arch || !ck_find(&s->c, probe, &pt))
        return true;
    snprintf(s->mtp_cfg, sizeof s->mtp_cfg, "{\"architectures\":[\"%s\"]}", mtp_arch);
    nf_arch_input mi;
    memset(&mi, 0, sizeof mi);
    mi.component = "mtp";
    mi.config_raw = s->mtp_cfg;
    mi.config_len = strlen(s->mtp_cfg);
    mi.target_component = "text";
    mi.target_config_raw = s->config;
    mi.target_config_len = strlen(s->config);
    mi.gguf_forms = in->gguf_forms;
    s->have_mtp = nf_arch_derive(&mi, &s->mtp, s->d) == 0;
    return s->have_mtp && add_plan(&s->m, &s->mtp, nm);
}

/* The encoding that keeps a GGUF tensor's bytes as they are (or widens an
 * F16 one exactly, as --f16-as asks): into e and the object's shape dims
 * (rank *rank). False for a type no object format holds. */
static bool copy_enc(const mb *m, const ck_t *t, bool original, obj_enc *e, uint64_t *dims,
                     unsigned *rank)
{
    const nf_gguf_tensor *gt = &m->c->g->tensors[t->index];
    uint64_t k = gt->ne[0], rows = gt->elements / (k ? k : 1);
    e->cols_aux = false;
    e->layout = "contiguous_le_v1";
    *rank = t->rank;
    memcpy(dims, t->dims, sizeof t->dims);
    if (t->dt == DT_F32 || t->dt == DT_BF16) {
        e->format = t->dt == DT_F32 ? "fp32" : "bf16";
        return true;
    }
    nf_format f = nf_format_of_ggml_type(t->ggml_type);
    if (t->dt == DT_F16 && !original) {
        bool matrix = t->rank == 2 || t->rank == 3;
        if (m->o->f16_as == NF_FMT_BF16 || m->o->f16_as == NF_FMT_FP32 || !matrix) {
            e->format = m->o->f16_as == NF_FMT_BF16 ? "bf16" : "fp32";
            return true;
        }
    }
    if (!nf_format_is_gguf(f))
        return false;
    e->format = nf_format_name(f);
    e->layout = "gguf_rows_v1";
    *rank = 2;
    dims[0] = rows;
    dims[1] = k;
    return true;
}

/* An object holding GGUF tensor t's bytes as copy_enc keeps them (id: the
 * tensor's name, or the original-bytes ID). */
static bool add_copy_object(mb *m, const ck_t *t, const char *id, bool original)
{
    obj_enc e;
    uint64_t dims[NF_MAX_RANK];
    unsigned rank;
    if (!copy_enc(m, t, original, &e, dims, &rank))
        return false;
    nf_jval *o = nf_jnew_object();
    nf_source src = {.kind = NF_SRC_GGUF, .path = (char *)t->path, .name = (char *)t->name};
    nf_jobj_set(o, "id", nf_jnew_string(id));
    nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
    nf_jobj_set(o, "shape", shape_json(rank, dims));
    nf_jobj_set(o, "format", nf_jnew_string(e.format));
    nf_jobj_set(o, "layout", nf_jnew_string(e.layout));
    nf_jobj_set(o, "source", source_json(&src));
    nf_jarr_push(m->objects, nf_jval_freeze(o));
    sm_put(&m->objs, id, m->n_objects++);
    return true;
}

/* Phase 4b (GGUF), what a round trip needs beyond the bindings (DESIGN
 * 16): every tensor no parameter uses as an object of its own bytes (one
 * of a type no format holds is left out, with a warning), and the original
 * bytes of the tensors record_tensor marked. */
static bool add_gguf_rest(imp *s)
{
    mb *m = &s->m;
    const nf_gguf *g = s->c.g;
    size_t left = 0;
    const char *first = NULL;
    for (size_t i = 0; i < g->n_tensors; i++) {
        if (s->c.used[0][i])
            continue;
        ck_t t;
        ck_find_exact(&s->c, g->tensors[i].name, &t);
        if (sm_get(&m->objs, t.name) != SIZE_MAX || !add_copy_object(m, &t, t.name, false)) {
            if (left++ == 0)
                first = t.name;
            continue;
        }
        m->gt[i].object = t.name;
    }
    if (left)
        warnf(s->o, "warning: %zu GGUF tensor%s of a type no format holds (\"%s\"%s) left out: "
              "an export back to GGUF cannot give the file back", left, left == 1 ? "" : "s",
              first, left > 1 ? " and others" : "");
    for (size_t i = 0; i < g->n_tensors; i++) {
        if (!m->gt[i].original)
            continue;
        ck_t t;
        ck_find_exact(&s->c, g->tensors[i].name, &t);
        char *id = NULL;
        if (asprintf(&id, "%s%s", NF_GGUF_ORIGINAL_PREFIX, t.name) < 0 ||
            sm_get(&m->objs, id) != SIZE_MAX || !add_copy_object(m, &t, id, true))
            m->gt[i].original = false;
        free(id);
    }
    return true;
}

/* Phase 4, the weights: the plans bound to checkpoint tensors (objects,
 * bindings, shares, uses), then the checks of what was left out. */
static bool add_weights(imp *s)
{
    nf_arch_input in;
    if (!derive_text_plan(s, &in))
        return false;
    nf_naming nm = s->c.gguf ? NF_NAMING_GGUF : NF_NAMING_HF;
    bool ok = add_plan(&s->m, &s->plan, nm) && add_mtp_plan(s, &in, nm);
    ok = ok && add_shares_and_uses(&s->m, &s->plan) &&
         (!s->have_mtp || add_shares_and_uses(&s->m, &s->mtp));
    if (!ok || nf_diags_exit(s->d)) {
        if (s->m.n_missing > 20)
            nf_diag_add(s->d, NF_C_COVERAGE, "", "%zu more tensors missing", s->m.n_missing - 20);
        if (!nf_diags_exit(s->d))
            nf_diag_add(s->d, NF_C_IO, "", "out of memory");
        return false;
    }
    if (s->c.gguf && !gguf_blocks_within(&s->c, s->gguf_arch, s->d))
        return false;
    warn_unused(s->o, &s->c);
    return true;
}

/* Phase 5, provenance.converter: the tool, its options and the source
 * files (with a GGUF's quantization keys and transformed objects). NULL
 * with a diagnostic. */
static nf_jval *provenance_json(imp *s)
{
    const nf_import_opts *o = s->o;
    nf_jval *conv = nf_jnew_object(), *opts = nf_jnew_object(), *src = nf_jnew_object(),
            *provn = nf_jnew_object();
    nf_jobj_set(conv, "tool", nf_jnew_string("ninfer-import"));
    nf_jobj_set(conv, "version", nf_jnew_string(NF_VERSION));
    nf_jobj_set(opts, "fuse", nf_jnew_bool(o->fuse));
    nf_jobj_set(opts, "f16_as", nf_jnew_string(o->f16_as == NF_FMT_BF16 ? "bf16"
                                               : o->f16_as == NF_FMT_FP32 ? "fp32" : "auto"));
    nf_jobj_set(conv, "options", opts);
    nf_jobj_set(src, "format", nf_jnew_string(s->c.gguf ? "gguf" : "safetensors"));
    char *abs = absdup(s->cp), *rel = abs ? prov_path(&s->pv, abs) : NULL;
    nf_jobj_set(src, "path", nf_jnew_string(rel ? rel : s->cp));
    free(rel);
    free(abs);
    nf_jobj_set(src, "files", s->pv.files);
    s->pv.files = NULL;
    nf_jval *gprov = s->c.gguf ? gguf_provenance(&s->m, s->c.g) : NULL;
    if (gprov)
        nf_jobj_set(src, "gguf", gprov);
    nf_jobj_set(conv, "source", src);
    if (s->c.gguf && !gprov) {
        nf_jval_free(provn);
        nf_jval_free(conv);
        return NULL;
    }
    nf_jobj_set(provn, "converter", conv);
    return provn;
}

/* Phase 6, the manifest's text: components, objects (resources last),
 * bindings, uses, metadata, provenance. */
static char *manifest_text(imp *s, size_t *len)
{
    mb *m = &s->m;
    for (size_t i = 0; i < s->n_resources; i++)
        nf_jarr_push(m->objects, nf_jval_ref(nf_jarr_get(s->resource_objs, i)));
    if (nf_jarr_len(m->objects) == 0) {
        nf_diag_addf(s->d, NF_C_SCHEMA, s->cp, "", "nothing to import: no tensors and no tokenizer");
        return NULL;
    }
    nf_jval *provn = provenance_json(s);
    if (!provn)
        return NULL;
    nf_jval *root = nf_jnew_object();
    nf_jobj_set(root, "components", s->comps);
    s->comps = NULL;
    nf_jobj_set(root, "objects", m->objects);
    nf_jobj_set(root, "bindings", m->bindings);
    nf_jobj_set(root, "uses", m->uses);
    m->objects = m->bindings = m->uses = NULL;
    if (s->meta) {
        nf_jobj_set(root, "metadata", s->meta);
        s->meta = NULL;
    }
    nf_jobj_set(root, "provenance", provn);
    char *out = nf_jval_to_text(root, true, len);
    if (!out)
        nf_diag_add(s->d, NF_C_IO, "", "out of memory");
    nf_jval_free(root);
    return out;
}

/* The output (-o, or standard output when it is a regular file), which
 * prov_file compares with every file read (DESIGN 3). */
static void prov_output(prov *pv, const nf_import_opts *o)
{
    struct stat ost;
    pv->mdir = manifest_dir(o);
    if (o->output && stat(o->output, &ost) == 0) {
        pv->out = o->output;
        pv->out_exists = true;
    } else if (o->output) {
        pv->out = o->output;
    } else if (fstat(1, &ost) == 0 && S_ISREG(ost.st_mode)) {
        pv->out = "(stdout)";
        pv->out_exists = true;
    }
    if (pv->out_exists) {
        pv->out_dev = ost.st_dev;
        pv->out_ino = ost.st_ino;
    }
}

char *nf_import(const nf_import_opts *o, size_t *len, nf_diags *d)
{
    imp s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.d = d;
    s.cp = o->checkpoint;
    s.m.o = o;
    s.m.d = d;
    s.m.c = &s.c;
    s.res = nf_jnew_object();
    s.pv.files = nf_jnew_array();
    prov_output(&s.pv, o);
    s.m.objects = nf_jnew_array();
    s.m.bindings = nf_jnew_object();
    s.m.uses = nf_jnew_array();
    s.comps = nf_jnew_object();
    char *out = NULL;
    if (!s.res || !s.pv.files || !s.m.objects || !s.m.bindings || !s.m.uses || !s.comps) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    } else if (open_checkpoint(&s) && read_config(&s) &&
               /* an output naming any file the import reads is refused
                * before the files are hashed or anything is written
                * (DESIGN 3); then an existing output without force */
               outputs_checked(o, &s.pv, &s.c, s.config_path, s.index_path, d)) {
        /* a GGUF of only a tokenizer has no weights */
        bool weights = !s.c.gguf || s.c.g->n_tensors > 0;
        if (add_resources(&s) && (!weights || add_weights(&s)) &&
            (!weights || !s.c.gguf || add_gguf_rest(&s))) {
            nf_jobj_set(s.comps, "text", component_json(s.config, s.res, NULL));
            if (s.have_mtp)
                nf_jobj_set(s.comps, "mtp", component_json(s.mtp_cfg, NULL, "text"));
            out = manifest_text(&s, len);
        }
    }
    imp_free(&s);
    return out;
}
