/* t_arch.c — the architecture modules (common/model/arch/, nf_binder.h): real
 * configs of ../shared/realdata against what they imply (Qwen2.5-14B's
 * index names one to one and its total_size; Qwen3-Next's layer kinds,
 * experts and totals computed by hand below), spec 12.1's small Text
 * example, small configs of every family (names, shapes, mappings, fuse
 * groups, GGUF names) and hostile configs with their codes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_binder.h"
#include "nf_import.h"
#include "nf_json.h"
#include "nf_realdata.h"
#include "nf_test.h"
#include "nf_cli.h" /* nf_diags_print */

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)sz + 1);
    if (p && fread(p, 1, (size_t)sz, f) != (size_t)sz) {
        free(p);
        p = NULL;
    }
    fclose(f);
    if (p) {
        p[sz] = 0;
        *n = (size_t)sz;
    }
    return p;
}

/* Derive component `comp` from config text; target config optional. */
static int derive(const char *comp, const char *cfg, const char *tcomp, const char *tcfg,
                  nf_arch_plan *p, nf_diags *d)
{
    nf_arch_input in;
    memset(&in, 0, sizeof in);
    in.component = comp;
    in.config_raw = cfg;
    in.config_len = strlen(cfg);
    in.target_component = tcomp;
    in.target_config_raw = tcfg;
    in.target_config_len = tcfg ? strlen(tcfg) : 0;
    return nf_arch_derive(&in, p, d);
}

static const nf_param *P(const nf_arch_plan *p, const char *name)
{
    return nf_arch_find(p, name);
}

static bool shape2(const nf_param *q, uint64_t a, uint64_t b)
{
    return q && q->rank == 2 && q->dims[0] == a && q->dims[1] == b;
}

static bool shape1(const nf_param *q, uint64_t a)
{
    return q && q->rank == 1 && q->dims[0] == a;
}

static const char *hf_name(const nf_arch_plan *p, const nf_param *q)
{
    return q && q->src[NF_NAMING_HF].tensor != SIZE_MAX
               ? p->tensors[NF_NAMING_HF][q->src[NF_NAMING_HF].tensor].name
               : NULL;
}

static const char *gguf_name(const nf_arch_plan *p, const nf_param *q)
{
    return q && q->src[NF_NAMING_GGUF].tensor != SIZE_MAX
               ? p->tensors[NF_NAMING_GGUF][q->src[NF_NAMING_GGUF].tensor].name
               : NULL;
}

/* ---- real: Qwen2.5-14B config vs its index -------------------------------- */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_qwen25(void)
{
    char b1[1024], b2[1024];
    const char *cp = nf_realdata("qwen2.5-14b-frontend/config.json", b1, sizeof b1);
    const char *ip = nf_realdata("qwen2.5-14b-frontend/model.safetensors.index.json", b2, sizeof b2);
    if (!cp || !ip) {
        SKIP("real data absent (../shared/realdata/qwen2.5-14b-frontend)", "Qwen2.5-14B config");
        return;
    }
    size_t cn, in;
    char *cfg = slurp(cp, &cn), *idx = slurp(ip, &in);
    nf_diags d = NF_DIAGS_INIT;
    nf_arch_plan p;
    int rc = derive("text", cfg, NULL, NULL, &p, &d);
    CHECK(rc == 0 && d.n == 0, "qwen2.5-14b: the real config derives");
    if (rc) {
        nf_diags_print(&d, "t_arch", stdout);
        goto out;
    }
    CHECK_STR(p.architecture, "Qwen2ForCausalLM", "qwen2.5-14b: architecture");
    /* 48 layers x (2 norms + q,k,v + 3 biases + o + gate,up,down) + embedding, final norm, head */
    CHECK_EQ_U64(p.n_params, 48 * 12 + 3, "qwen2.5-14b: 579 parameters");
    nf_jdoc *doc = nf_jdoc_parse(idx, in, 0, &d);
    nf_jval *wm = doc ? nf_jobj_get(nf_jdoc_root(doc), "weight_map") : NULL;
    size_t nw = nf_jobj_len(wm);
    char **names = calloc(nw + 1, sizeof *names), **mine = calloc(p.n_params + 1, sizeof *mine);
    nf_jiter it = nf_jobj_iter(wm);
    const char *k;
    nf_jval *v;
    size_t i = 0;
    while (nf_jobj_next(&it, &k, &v))
        names[i++] = (char *)k;
    size_t nm = 0;
    bool whole = true;
    for (size_t j = 0; j < p.n_params; j++) {
        const nf_param *q = &p.params[j];
        if (q->shares)
            continue;
        mine[nm++] = (char *)hf_name(&p, q);
        whole &= q->src[NF_NAMING_HF].n_ranges == 0 &&
                 p.tensors[NF_NAMING_HF][q->src[NF_NAMING_HF].tensor].elements == q->elements;
    }
    qsort(names, nw, sizeof *names, str_cmp);
    qsort(mine, nm, sizeof *mine, str_cmp);
    bool same = nw == nm;
    for (size_t j = 0; same && j < nw; j++)
        if (!mine[j] || strcmp(names[j], mine[j]) != 0) {
            printf("#   index has %s, derived %s\n", names[j], mine[j] ? mine[j] : "(none)");
            same = false;
        }
    CHECK(same && nw == 579, "qwen2.5-14b: derived tensor names equal the index's 579, one to one");
    CHECK(whole, "qwen2.5-14b: every parameter is one whole tensor");
    uint64_t total = 0, ts = 0;
    nf_arch_total_elements(&p, &total);
    nf_jval *md = doc ? nf_jobj_get(nf_jdoc_root(doc), "metadata") : NULL;
    nf_jval_u64(doc, nf_jobj_get(md, "total_size"), "/metadata/total_size", &ts);
    CHECK(ts == 29540067328ull && total * 2 == ts,
          "qwen2.5-14b: elements (%llu) x 2 bytes == total_size (%llu)",
          (unsigned long long)total, (unsigned long long)ts);
    const nf_param *qb = P(&p, "text/layers/47/attention/query_bias");
    CHECK(shape1(qb, 5120) && !qb->input, "qwen2.5-14b: query_bias [5120], no use");
    const nf_param *kk = P(&p, "text/layers/0/attention/key");
    CHECK(shape2(kk, 1024, 5120) && kk->needs_policy &&
          strcmp(kk->input, "text/layers/0/mixer_input") == 0,
          "qwen2.5-14b: key [1024,5120] reads text/layers/0/mixer_input");
    CHECK_STR(gguf_name(&p, P(&p, "text/layers/3/attention/value_bias")), "blk.3.attn_v.bias",
              "qwen2.5-14b: GGUF name of a bias");
    free(names);
    free(mine);
    nf_jdoc_free(doc);
    nf_arch_plan_free(&p);
out:
    nf_diags_free(&d);
    free(cfg);
    free(idx);
}

/* ---- real: Qwen3-Next-80B config, totals by hand -------------------------- */

static void test_qwen3_next(void)
{
    char b1[1024];
    const char *cp = nf_realdata("qwen3-next-80b-config/config.json", b1, sizeof b1);
    if (!cp) {
        SKIP("real data absent (../shared/realdata/qwen3-next-80b-config)", "Qwen3-Next config");
        return;
    }
    size_t cn;
    char *cfg = slurp(cp, &cn);
    nf_diags d = NF_DIAGS_INIT;
    nf_arch_plan p;
    int rc = derive("text", cfg, NULL, NULL, &p, &d);
    CHECK(rc == 0 && d.n == 0, "qwen3-next: the real config derives");
    if (rc) {
        nf_diags_print(&d, "t_arch", stdout);
        free(cfg);
        nf_diags_free(&d);
        return;
    }
    /* Layer kinds: full attention where (i+1) % 4 == 0: 12 full, 36 linear. */
    unsigned full = 0, linear = 0, moe = 0;
    for (unsigned i = 0; i < 48; i++) {
        char n[96];
        snprintf(n, sizeof n, "text/layers/%u/attention/gate", i);
        full += P(&p, n) != NULL;
        snprintf(n, sizeof n, "text/layers/%u/linear_attention/z", i);
        linear += P(&p, n) != NULL;
        snprintf(n, sizeof n, "text/layers/%u/mlp/experts/511/down", i);
        moe += P(&p, n) != NULL;
    }
    CHECK(full == 12 && linear == 36, "qwen3-next: 12 full-attention, 36 linear-attention layers");
    CHECK(P(&p, "text/layers/3/attention/query") && P(&p, "text/layers/0/linear_attention/query") &&
          !P(&p, "text/layers/3/linear_attention/query"), "qwen3-next: layer 3 full, layer 0 linear");
    CHECK(moe == 48 && !P(&p, "text/layers/0/mlp/experts/512/gate") && !P(&p, "text/layers/0/mlp/gate"),
          "qwen3-next: every layer has 512 experts (mlp_only_layers empty, step 1)");
    /* Shapes: H 2048, Nq 16, Nkv 2, D 256; Hk 16, Hv 32, Dk = Dv = 128, kernel 4. */
    CHECK(shape2(P(&p, "text/layers/3/attention/query"), 4096, 2048) &&
          shape2(P(&p, "text/layers/3/attention/gate"), 4096, 2048) &&
          shape2(P(&p, "text/layers/3/attention/key"), 512, 2048) &&
          shape1(P(&p, "text/layers/3/attention/query_norm"), 256) &&
          shape2(P(&p, "text/layers/3/attention/output"), 2048, 4096),
          "qwen3-next: gated attention shapes");
    CHECK(shape2(P(&p, "text/layers/0/linear_attention/query"), 2048, 2048) &&
          shape2(P(&p, "text/layers/0/linear_attention/value"), 4096, 2048) &&
          shape2(P(&p, "text/layers/0/linear_attention/b"), 32, 2048) &&
          shape2(P(&p, "text/layers/0/linear_attention/conv1d"), 8192, 4) &&
          shape1(P(&p, "text/layers/0/linear_attention/A_log"), 32) &&
          shape1(P(&p, "text/layers/0/linear_attention/norm"), 128) &&
          shape2(P(&p, "text/layers/0/linear_attention/output"), 2048, 4096),
          "qwen3-next: linear attention shapes");
    CHECK(shape2(P(&p, "text/layers/0/mlp/router"), 512, 2048) &&
          shape2(P(&p, "text/layers/0/mlp/experts/7/gate"), 512, 2048) &&
          shape2(P(&p, "text/layers/0/mlp/experts/7/down"), 2048, 512) &&
          shape2(P(&p, "text/layers/0/mlp/shared/up"), 512, 2048) &&
          shape2(P(&p, "text/layers/0/mlp/shared_gate"), 1, 2048),
          "qwen3-next: MoE shapes");
    /* Parameters: full layer 2 norms + 7 attention + MoE (router + 512x3 +
     * 3 shared + shared_gate = 1541) = 1550; linear layer 2 + 11 + 1541 =
     * 1554; 12x1550 + 36x1554 + embedding, final_norm, head = 74547. */
    CHECK_EQ_U64(p.n_params, 74547, "qwen3-next: 74547 parameters");
    /* Elements, by hand:
     *   full attention  3 x 4096x2048 + 2 x 512x2048 + 2 x 256  = 27,263,488
     *   linear          2 x 2048x2048 + 3 x 4096x2048 + 2 x 32x2048
     *                   + 8192x4 + 32 + 32 + 128                  = 33,718,464
     *   MoE             512x2048 + 512 x 3 x 512x2048 + 3 x 512x2048 + 2048
     *                                                             = 1,614,809,088
     *   norms           2 x 2048                                  = 4,096
     *   12 x (4096 + 27263488 + 1614809088) = 19,704,920,064
     *   36 x (4096 + 33718464 + 1614809088) = 59,347,139,328
     *   embedding + head 2 x 151936x2048 = 622,329,856; final norm 2048
     *   total 79,674,391,296 */
    uint64_t total = 0;
    nf_arch_total_elements(&p, &total);
    CHECK_EQ_U64(total, 79674391296ull, "qwen3-next: 79,674,391,296 elements");
    /* in_proj_qkvz rows per key-head group g: [g*768, +128) q, [+128, +256) k, ... */
    const nf_param *q = P(&p, "text/layers/0/linear_attention/query");
    const nf_param *z = P(&p, "text/layers/0/linear_attention/z");
    const nf_src_map *mq = &q->src[NF_NAMING_HF], *mz = &z->src[NF_NAMING_HF];
    CHECK(mq->n_ranges == 16 && mq->ranges[1].begin == 768ull * 2048 &&
              mq->ranges[1].end == (768ull + 128) * 2048 &&
              strcmp(hf_name(&p, q), "model.layers.0.linear_attn.in_proj_qkvz.weight") == 0,
          "qwen3-next: query rows of in_proj_qkvz per key-head group");
    CHECK(mz->n_ranges == 16 && mz->ranges[0].begin == 512ull * 2048 &&
              mz->ranges[0].end == 768ull * 2048, "qwen3-next: z rows [512, 768) of group 0");
    const nf_param *bb = P(&p, "text/layers/0/linear_attention/b");
    CHECK(bb->src[NF_NAMING_HF].n_ranges == 16 &&
              bb->src[NF_NAMING_HF].ranges[1].begin == 4ull * 2048,
          "qwen3-next: b rows of in_proj_ba per group (2 b rows, 2 a rows)");
    const nf_param *cv = P(&p, "text/layers/0/linear_attention/conv1d");
    const nf_src_tensor *ct = &p.tensors[NF_NAMING_HF][cv->src[NF_NAMING_HF].tensor];
    CHECK(ct->rank == 3 && ct->dims[1] == 1 && cv->src[NF_NAMING_HF].n_ranges == 0,
          "qwen3-next: conv1d [8192,1,4] maps whole (a reshape)");
    const nf_param *g = P(&p, "text/layers/3/attention/gate");
    CHECK(g->src[NF_NAMING_HF].n_ranges == 16 && g->src[NF_NAMING_HF].ranges[0].begin == 256ull * 2048,
          "qwen3-next: gate is the second 256 rows of each head's 512 in q_proj");
    /* GGUF qwen3next (GGUF.md 4.2): attn_qkv = [all q; all k; all v], attn_gate = z, no
     * tiling; w + 1 norms and ssm_a = -exp(A_log) undone by maps */
    CHECK_STR(p.gguf_arch, "qwen3next", "qwen3-next: GGUF architecture qwen3next");
    const nf_src_map *gq = &q->src[NF_NAMING_GGUF], *gz = &z->src[NF_NAMING_GGUF];
    CHECK(gq->n_ranges == 1 && gq->ranges[0].begin == 0 && gq->ranges[0].end == 2048ull * 2048 &&
              strcmp(gguf_name(&p, q), "blk.0.attn_qkv.weight") == 0,
          "qwen3-next GGUF: query is attn_qkv rows [0, 2048)");
    const nf_param *vv = P(&p, "text/layers/0/linear_attention/value");
    CHECK(vv->src[NF_NAMING_GGUF].n_ranges == 1 &&
              vv->src[NF_NAMING_GGUF].ranges[0].begin == 4096ull * 2048 &&
              gz->n_ranges == 0 && strcmp(gguf_name(&p, z), "blk.0.attn_gate.weight") == 0,
          "qwen3-next GGUF: value is attn_qkv rows [4096, 8192), z all of attn_gate");
    const nf_param *al = P(&p, "text/layers/0/linear_attention/A_log");
    const nf_param *in0 = P(&p, "text/layers/0/input_norm");
    const nf_param *sn = P(&p, "text/layers/0/linear_attention/norm");
    CHECK(strcmp(gguf_name(&p, al), "blk.0.ssm_a") == 0 &&
              p.tensors[NF_NAMING_GGUF][al->src[NF_NAMING_GGUF].tensor].map == NF_VMAP_LOG_NEG &&
              p.tensors[NF_NAMING_GGUF][in0->src[NF_NAMING_GGUF].tensor].map == NF_VMAP_MINUS_ONE &&
              p.tensors[NF_NAMING_GGUF][sn->src[NF_NAMING_GGUF].tensor].map == NF_VMAP_NONE,
          "qwen3-next GGUF: ssm_a log-neg, attn_norm minus-one, ssm_norm as stored");
    CHECK_STR(gguf_name(&p, P(&p, "text/layers/3/post_attention_norm")),
              "blk.3.post_attention_norm.weight", "qwen3-next GGUF: post_attention_norm");
    const nf_param *ex = P(&p, "text/layers/5/mlp/experts/7/up");
    CHECK(strcmp(gguf_name(&p, ex), "blk.5.ffn_up_exps.weight") == 0 &&
              ex->src[NF_NAMING_GGUF].ranges[0].begin == 7ull * 512 * 2048,
          "qwen3-next GGUF: expert 7 is its slice of the bank");
    CHECK_STR(gguf_name(&p, P(&p, "text/layers/0/mlp/shared_gate")),
              "blk.0.ffn_gate_inp_shexp.weight", "qwen3-next GGUF: the shared expert's gate");

    /* its MTP component: geometry from the target */
    nf_arch_plan m;
    rc = derive("mtp", "{\"architectures\": [\"Qwen3NextMTP\"]}", "text", cfg, &m, &d);
    CHECK(rc == 0, "qwen3-next: the mtp component derives from its target");
    if (rc == 0) {
        const nf_param *e = P(&m, "mtp/embedding"), *h = P(&m, "mtp/head");
        CHECK(e && h && e->shares && strcmp(e->shares, "text/embedding") == 0 && h->shares &&
              strcmp(h->shares, "text/head") == 0, "mtp: embedding and head share the text's");
        CHECK(shape2(P(&m, "mtp/fc"), 2048, 4096) &&
              strcmp(P(&m, "mtp/fc")->input, "mtp/fc_input") == 0 &&
              strcmp(hf_name(&m, P(&m, "mtp/fc")), "mtp.fc.weight") == 0,
              "mtp: fc [H,2H] reads mtp/fc_input");
        CHECK(P(&m, "mtp/layers/0/attention/gate") && P(&m, "mtp/layers/0/mlp/experts/511/up") &&
              !P(&m, "mtp/layers/1/input_norm"),
              "mtp: one gated full-attention layer with the MoE MLP");
        CHECK_STR(hf_name(&m, P(&m, "mtp/layers/0/mlp/shared_gate")),
                  "mtp.layers.0.mlp.shared_expert_gate.weight", "mtp: HF names under mtp.");
        CHECK_STR(hf_name(&m, P(&m, "mtp/final_norm")), "mtp.norm.weight", "mtp: final norm");
        bool mixed = false;
        for (size_t i = 0; i < m.n_groups; i++)
            for (size_t j = 0; j < m.groups[i].n_members; j++)
                mixed |= strncmp(m.params[m.groups[i].members[j]].name, "mtp/", 4) != 0;
        CHECK(!mixed && m.n_groups > 0, "mtp: fuse groups hold only MTP parameters");
        nf_arch_plan_free(&m);
    }
    nf_arch_plan_free(&p);
    nf_diags_free(&d);
    free(cfg);
}

/* ---- real: a Qwen3.5-MoE config and its 15,973-tensor index --------------- */

static void test_qwen35_moe(void)
{
    char b1[1024], b2[1024];
    const char *cp = nf_realdata("qwen3.5-moe-frontend/config.json", b1, sizeof b1);
    const char *ip = nf_realdata("qwen3.5-moe-frontend/model.safetensors.index.json", b2, sizeof b2);
    if (!cp || !ip) {
        SKIP("real data absent (../shared/realdata/qwen3.5-moe-frontend)", "Qwen3.5-MoE index");
        return;
    }
    size_t cn, in;
    char *raw = slurp(cp, &cn), *idx = slurp(ip, &in);
    nf_diags d = NF_DIAGS_INIT;
    /* a flat wrapper (Qwen3_5MoeForConditionalGeneration, qwen3_5_moe_text): normalized */
    char *cfg = nf_import_normalize_config(raw, cn, cp, &d);
    CHECK(cfg && strstr(cfg, "\"architectures\":[\"Qwen3_5MoeForCausalLM\"]") &&
              strstr(cfg, "\"decoder_sparse_step\":1") && strstr(cfg, "\"rms_norm_eps\":1e-06") &&
              !strstr(cfg, "ForConditionalGeneration"),
          "qwen3.5-moe: the config normalizes to Qwen3_5MoeForCausalLM, decoder_sparse_step 1");
    nf_arch_plan p;
    int rc = cfg ? derive("text", cfg, NULL, NULL, &p, &d) : -1;
    CHECK(rc == 0 && d.n == 0, "qwen3.5-moe: the normalized config derives");
    if (rc) {
        nf_diags_print(&d, "t_arch", stdout);
        goto out;
    }
    nf_jdoc *doc = nf_jdoc_parse(idx, in, 0, &d);
    nf_jval *wm = doc ? nf_jobj_get(nf_jdoc_root(doc), "weight_map") : NULL;
    size_t nw = nf_jobj_len(wm);
    char **names = calloc(nw + 1, sizeof *names), **mine = calloc(p.n_params + 1, sizeof *mine);
    nf_jiter it = nf_jobj_iter(wm);
    const char *k;
    nf_jval *v;
    size_t i = 0, pref = 0;
    while (nf_jobj_next(&it, &k, &v)) { /* the importer strips model.language_model. */
        char *nm = NULL;
        if (!strncmp(k, "model.language_model.", 21)) {
            pref++;
            if (asprintf(&nm, "model.%s", k + 21) < 0)
                nm = NULL;
        } else {
            nm = strdup(k);
        }
        names[i++] = nm;
    }
    size_t nm = 0;
    for (size_t j = 0; j < p.n_params; j++)
        if (!p.params[j].shares)
            mine[nm++] = (char *)hf_name(&p, &p.params[j]);
    /* parameters of one tensor are counted once (q/gate share q_proj, ...) */
    qsort(names, nw, sizeof *names, str_cmp);
    qsort(mine, nm, sizeof *mine, str_cmp);
    size_t u = 0;
    for (size_t j = 0; j < nm; j++)
        if (mine[j] && (u == 0 || strcmp(mine[u - 1], mine[j]) != 0))
            mine[u++] = mine[j];
    bool same = nw == u;
    for (size_t j = 0; same && j < nw; j++)
        if (!names[j] || strcmp(names[j], mine[j]) != 0) {
            printf("#   index has %s, derived %s\n", names[j], mine[j]);
            same = false;
        }
    CHECK(same && nw == 15973 && pref == 15972,
          "qwen3.5-moe: the 15,973 index names (15,972 under model.language_model.) equal the "
          "derived tensor names one to one (%zu, %zu)", nw, u);
    /* 40 layers x (2 norms + MoE (router + 128x3 + 3 shared + shared gate) = 391)
     * + 30 linear x 11 + 10 full x 7 + embedding, final norm, head */
    CHECK_EQ_U64(p.n_params, 40 * 391 + 30 * 11 + 10 * 7 + 3, "qwen3.5-moe: 16043 parameters");
    CHECK(shape2(P(&p, "text/layers/0/linear_attention/value"), 4096, 2048) &&
              shape2(P(&p, "text/layers/0/linear_attention/z"), 4096, 2048) &&
              shape2(P(&p, "text/layers/3/attention/gate"), 4096, 2048) &&
              shape2(P(&p, "text/layers/39/mlp/experts/127/down"), 2048, 512) &&
              shape2(P(&p, "text/layers/39/mlp/shared_gate"), 1, 2048) &&
              P(&p, "text/layers/39/attention/query") && !P(&p, "text/layers/39/linear_attention/a"),
          "qwen3.5-moe: shapes, layer 39 full attention");
    /* GGUF qwen35moe: value heads tiled (Hk 16, Hv 32, r 2): logical head 1 is stored head 16 */
    const nf_param *val = P(&p, "text/layers/0/linear_attention/value");
    const nf_src_map *gv = &val->src[NF_NAMING_GGUF];
    CHECK(strcmp(p.gguf_arch, "qwen35moe") == 0 && gv->n_ranges == 32 &&
              gv->ranges[0].begin == 4096ull * 2048 &&
              gv->ranges[1].begin == (4096ull + 16 * 128) * 2048 &&
              gv->ranges[2].begin == (4096ull + 128) * 2048,
          "qwen3.5-moe GGUF: value binds attn_qkv's tiled v heads in logical order");
    const nf_param *bb = P(&p, "text/layers/0/linear_attention/b");
    CHECK(strcmp(gguf_name(&p, bb), "blk.0.ssm_beta.weight") == 0 &&
              bb->src[NF_NAMING_GGUF].n_ranges == 32 &&
              bb->src[NF_NAMING_GGUF].ranges[1].begin == 16ull * 2048,
          "qwen3.5-moe GGUF: b is ssm_beta's rows, head by head");
    const nf_param *out = P(&p, "text/layers/0/linear_attention/output");
    const nf_src_tensor *ot = &p.tensors[NF_NAMING_GGUF][out->src[NF_NAMING_GGUF].tensor];
    CHECK(ot->tiled_k == 16 && ot->tiled_v == 32 && ot->tiled_hd == 128 &&
              strcmp(ot->name, "blk.0.ssm_out.weight") == 0,
          "qwen3.5-moe GGUF: ssm_out's columns are tiled (16, 32, 128)");
    const nf_param *cv = P(&p, "text/layers/0/linear_attention/conv1d");
    CHECK(cv->src[NF_NAMING_GGUF].n_ranges == 32 &&
              cv->src[NF_NAMING_GGUF].ranges[0].end == (4096ull + 128) * 4 &&
              cv->src[NF_NAMING_GGUF].ranges[1].begin == (4096ull + 16 * 128) * 4,
          "qwen3.5-moe GGUF: conv1d: the q/k channels and v head 0, then the v heads in order");
    for (size_t j = 0; j < nw; j++)
        free(names[j]);
    free(names);
    free(mine);
    nf_jdoc_free(doc);
    nf_arch_plan_free(&p);
out:
    nf_diags_free(&d);
    free(cfg);
    free(raw);
    free(idx);
}

/* ---- spec 12.1: the small Qwen3.5 Text example ---------------------------- */

static const char *spec121 =
    "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"model_type\": \"qwen3_5_text\","
    " \"hidden_size\": 128, \"intermediate_size\": 256, \"num_hidden_layers\": 1,"
    " \"num_attention_heads\": 1, \"num_key_value_heads\": 1, \"head_dim\": 128,"
    " \"vocab_size\": 248320, \"layer_types\": [\"full_attention\"],"
    " \"rms_norm_eps\": 1e-06, \"tie_word_embeddings\": false}";

static void test_spec121(void)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_arch_plan p;
    int rc = derive("text", spec121, NULL, NULL, &p, &d);
    CHECK(rc == 0 && d.n == 0, "spec 12.1: the example config derives (no linear keys needed)");
    if (rc) {
        nf_diags_print(&d, "t_arch", stdout);
        nf_diags_free(&d);
        return;
    }
    static const char *const names[] = {
        "text/embedding", "text/layers/0/input_norm", "text/layers/0/attention/query",
        "text/layers/0/attention/key", "text/layers/0/attention/gate",
        "text/layers/0/attention/value", "text/layers/0/attention/query_norm",
        "text/layers/0/attention/key_norm", "text/layers/0/attention/output",
        "text/layers/0/post_attention_norm", "text/layers/0/mlp/gate", "text/layers/0/mlp/up",
        "text/layers/0/mlp/down", "text/final_norm", "text/head"};
    bool all = p.n_params == 15;
    for (size_t i = 0; i < 15 && all; i++)
        all = strcmp(p.params[i].name, names[i]) == 0;
    CHECK(all, "spec 12.1: the 15 logical parameters in order");
    CHECK(shape2(P(&p, "text/embedding"), 248320, 128) && shape2(P(&p, "text/head"), 248320, 128) &&
          !P(&p, "text/head")->shares, "spec 12.1: embedding and head [248320,128], not tied");
    CHECK(shape2(P(&p, "text/layers/0/attention/gate"), 128, 128) &&
          shape2(P(&p, "text/layers/0/mlp/down"), 128, 256), "spec 12.1: shapes");
    /* fuse groups: Q/K/gate/V [512,128] and gate/up [512,128] */
    CHECK(p.n_groups == 2 && p.groups[0].n_members == 4 && p.groups[1].n_members == 2,
          "spec 12.1: two fuse groups");
    if (p.n_groups == 2) {
        uint64_t rows = 0;
        for (size_t i = 0; i < 4; i++)
            rows += p.params[p.groups[0].members[i]].dims[0];
        CHECK(rows == 512 && strcmp(p.params[p.groups[0].members[2]].name,
                                    "text/layers/0/attention/gate") == 0,
              "spec 12.1: the attention parent is [512,128] in order Q, K, gate, V");
        /* spec 12.3's ranges for one parent P: query [0,Q), key, gate, value */
        rows = 0;
        for (size_t i = 0; i < 2; i++)
            rows += p.params[p.groups[1].members[i]].dims[0];
        CHECK(rows == 512, "spec 12.1: the MLP parent is [512,128]");
    }
    size_t uses = 0;
    for (size_t i = 0; i < p.n_params; i++)
        uses += p.params[i].input != NULL;
    CHECK(uses == 10 && !P(&p, "text/embedding")->needs_policy &&
          P(&p, "text/head")->needs_policy, "spec 12.1: 10 uses (9 projections + the embedding)");
    nf_arch_plan_free(&p);
    nf_diags_free(&d);
}

/* ---- small configs of each family ------------------------------------------ */

static void test_families(void)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_arch_plan p;
    /* stories260K's shape: tied, GQA 8/4, D 8 */
    const char *llama = "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64,"
                        " \"intermediate_size\": 172, \"num_hidden_layers\": 5,"
                        " \"num_attention_heads\": 8, \"num_key_value_heads\": 4,"
                        " \"vocab_size\": 512, \"tie_word_embeddings\": true}";
    CHECK(derive("text", llama, NULL, NULL, &p, &d) == 0, "llama: derives");
    CHECK_EQ_U64(p.n_params, 5 * 9 + 3, "llama: 48 parameters");
    const nf_param *h = P(&p, "text/head");
    CHECK(h && h->shares && strcmp(h->shares, "text/embedding") == 0 &&
          h->src[NF_NAMING_HF].tensor == SIZE_MAX, "llama: the tied head shares the embedding");
    const nf_param *q = P(&p, "text/layers/2/attention/query");
    const nf_param *k = P(&p, "text/layers/2/attention/key");
    CHECK(shape2(q, 64, 64) && shape2(k, 32, 64), "llama: query [64,64], key [32,64]");
    CHECK_STR(gguf_name(&p, q), "blk.2.attn_q.weight", "llama: GGUF query name");
    CHECK(p.tensors[NF_NAMING_GGUF][q->src[NF_NAMING_GGUF].tensor].unpermute_heads == 8 &&
          p.tensors[NF_NAMING_GGUF][k->src[NF_NAMING_GGUF].tensor].unpermute_heads == 4,
          "llama: GGUF q/k undo the rope permutation with 8 and 4 heads");
    CHECK_STR(gguf_name(&p, P(&p, "text/layers/4/post_attention_norm")), "blk.4.ffn_norm.weight",
              "llama: GGUF ffn_norm");
    CHECK_STR(p.gguf_arch, "llama", "llama: llama.cpp architecture name");
    uint64_t t;
    nf_arch_total_elements(&p, &t);
    /* 512x64 + 5 x (2x64 + 64x64 + 2x32x64 + 64x64 + 3x172x64) + 64 */
    CHECK_EQ_U64(t, 32768 + 5 * (128 + 4096 + 4096 + 4096 + 33024) + 64,
                 "llama: stories260K's element count");
    nf_arch_plan_free(&p);

    const char *q3 = "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 32,"
                     " \"intermediate_size\": 48, \"num_hidden_layers\": 2,"
                     " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 16,"
                     " \"vocab_size\": 100}";
    CHECK(derive("text", q3, NULL, NULL, &p, &d) == 0, "qwen3: derives");
    CHECK(shape2(P(&p, "text/layers/1/attention/query"), 64, 32) &&
          shape1(P(&p, "text/layers/1/attention/key_norm"), 16) &&
          shape2(P(&p, "text/layers/1/attention/output"), 32, 64) &&
          !P(&p, "text/head")->shares, "qwen3: head_dim 16 != H/Nq; q/k norms; untied head");
    CHECK_STR(gguf_name(&p, P(&p, "text/layers/1/attention/query_norm")),
              "blk.1.attn_q_norm.weight", "qwen3: GGUF q norm");
    CHECK(p.tensors[NF_NAMING_GGUF][P(&p, "text/layers/1/attention/query")->src[NF_NAMING_GGUF].tensor]
              .unpermute_heads == 0, "qwen3: no unpermute");
    nf_arch_plan_free(&p);

    const char *moe = "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 32,"
                      " \"intermediate_size\": 64, \"moe_intermediate_size\": 16,"
                      " \"num_experts\": 4, \"num_experts_per_tok\": 2,"
                      " \"decoder_sparse_step\": 2, \"mlp_only_layers\": [3],"
                      " \"num_hidden_layers\": 4, \"num_attention_heads\": 4,"
                      " \"num_key_value_heads\": 2, \"head_dim\": 8, \"vocab_size\": 64}";
    CHECK(derive("text", moe, NULL, NULL, &p, &d) == 0, "qwen3-moe: derives");
    CHECK(P(&p, "text/layers/0/mlp/gate") && P(&p, "text/layers/1/mlp/experts/3/down") &&
          P(&p, "text/layers/2/mlp/up") && P(&p, "text/layers/3/mlp/down") &&
          !P(&p, "text/layers/3/mlp/router") && !P(&p, "text/layers/1/mlp/shared/gate"),
          "qwen3-moe: step 2 and mlp_only_layers [3]: only layer 1 is MoE; no shared expert");
    const nf_param *eu = P(&p, "text/layers/1/mlp/experts/2/up");
    CHECK(shape2(eu, 16, 32) && strcmp(eu->input, "text/layers/1/mlp_input") == 0 &&
          strcmp(P(&p, "text/layers/1/mlp/experts/2/down")->input,
                 "text/layers/1/mlp/experts/2/product") == 0, "qwen3-moe: expert shapes and inputs");
    const nf_src_map *gm = &eu->src[NF_NAMING_GGUF];
    CHECK(gm->n_ranges == 1 && gm->ranges[0].begin == 2 * 16 * 32 &&
          gm->ranges[0].end == 3 * 16 * 32 &&
          strcmp(gguf_name(&p, eu), "blk.1.ffn_up_exps.weight") == 0,
          "qwen3-moe: GGUF expert 2 is the third slice of the up bank");
    CHECK_STR(hf_name(&p, eu), "model.layers.1.mlp.experts.2.up_proj.weight", "qwen3-moe: HF name");
    bool banks = false;
    for (size_t i = 0; i < p.n_groups; i++)
        banks |= strcmp(p.groups[i].id, "text/layers/1/mlp/experts/gate_up") == 0 &&
                 p.groups[i].n_members == 8;
    CHECK(banks, "qwen3-moe: one gate/up bank of 8 rows blocks");
    nf_arch_plan_free(&p);

    const char *q35 = "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"hidden_size\": 64,"
                      " \"intermediate_size\": 96, \"num_hidden_layers\": 2,"
                      " \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 32,"
                      " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4,"
                      " \"linear_key_head_dim\": 16, \"linear_value_head_dim\": 8,"
                      " \"linear_conv_kernel_dim\": 4, \"full_attention_interval\": 2,"
                      " \"vocab_size\": 80, \"tie_word_embeddings\": true}";
    CHECK(derive("text", q35, NULL, NULL, &p, &d) == 0, "qwen3.5: derives");
    const nf_param *lv = P(&p, "text/layers/0/linear_attention/value");
    CHECK(lv && shape2(lv, 32, 64) && lv->src[NF_NAMING_HF].n_ranges == 1 &&
          lv->src[NF_NAMING_HF].ranges[0].begin == 64ull * 64 &&
          strcmp(hf_name(&p, lv), "model.layers.0.linear_attn.in_proj_qkv.weight") == 0,
          "qwen3.5: value is rows [64, 96) of in_proj_qkv");
    CHECK_STR(hf_name(&p, P(&p, "text/layers/0/linear_attention/a")),
              "model.layers.0.linear_attn.in_proj_a.weight", "qwen3.5: a is in_proj_a");
    CHECK(P(&p, "text/layers/1/attention/gate") && P(&p, "text/layers/1/mlp/gate") &&
          !P(&p, "text/layers/1/mlp/router"), "qwen3.5: layer 1 full attention, dense MLP");
    nf_arch_plan_free(&p);
    CHECK(derive("mtp", "{\"architectures\": [\"Qwen3_5MTP\"]}", "text", q35, &p, &d) == 0 &&
          P(&p, "mtp/layers/0/mlp/down") && !P(&p, "mtp/layers/0/mlp/router"),
          "qwen3.5 mtp: the dense MLP of its target");
    nf_arch_plan_free(&p);
    CHECK(d.n == 0, "families: no diagnostics");
    nf_diags_print(&d, "t_arch", stdout);
    nf_diags_free(&d);
}

/* ---- hostile configs --------------------------------------------------------- */

static void test_hostile(void)
{
    static const struct {
        const char *what, *cfg, *tcomp, *tcfg;
        nf_code code;
    } cases[] = {
        {"unknown architecture", "{\"architectures\": [\"GPT2LMHeadModel\"]}", NULL, NULL,
         NF_C_UNSUPPORTED},
        {"no architectures", "{\"hidden_size\": 4}", NULL, NULL, NF_C_SCHEMA},
        {"missing hidden_size", "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 4,"
         " \"num_hidden_layers\": 1, \"num_attention_heads\": 1, \"intermediate_size\": 4}",
         NULL, NULL, NF_C_SCHEMA},
        {"hidden_size as a string", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\":"
         " \"64\"}", NULL, NULL, NF_C_SCHEMA},
        {"hidden_size 64.0", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64.0}",
         NULL, NULL, NF_C_SCHEMA},
        {"negative layers", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4,"
         " \"vocab_size\": 4, \"num_hidden_layers\": -1}", NULL, NULL, NF_C_RANGE},
        {"zero heads", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4,"
         " \"vocab_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 0}", NULL, NULL,
         NF_C_RANGE},
        {"hidden_size above U64", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\":"
         " 99999999999999999999999}", NULL, NULL, NF_C_RANGE},
        {"a million layers", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4,"
         " \"vocab_size\": 4, \"num_hidden_layers\": 1000000, \"num_attention_heads\": 1}",
         NULL, NULL, NF_C_RANGE},
        {"H not a multiple of Nq", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 6,"
         " \"vocab_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 4}", NULL, NULL,
         NF_C_RANGE},
        {"V x H overflows", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\":"
         " 4294967296, \"vocab_size\": 4294967296, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4}", NULL, NULL, NF_C_RANGE},
        {"experts x layers over the cap", "{\"architectures\": [\"Qwen3MoeForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 60000,"
         " \"num_attention_heads\": 1, \"num_experts\": 60000, \"moe_intermediate_size\": 4}",
         NULL, NULL, NF_C_RANGE},
        {"num_experts_per_tok above num_experts", "{\"architectures\": [\"Qwen3MoeForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4, \"num_experts\": 4,"
         " \"num_experts_per_tok\": 5, \"moe_intermediate_size\": 4}", NULL, NULL, NF_C_RANGE},
        {"num_experts_per_tok 0", "{\"architectures\": [\"Qwen3MoeForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4, \"num_experts\": 4,"
         " \"num_experts_per_tok\": 0, \"moe_intermediate_size\": 4}", NULL, NULL, NF_C_RANGE},
        {"qwen3next num_experts_per_tok above num_experts", "{\"architectures\": [\"Qwen3NextForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4, \"num_experts\": 2,"
         " \"num_experts_per_tok\": 3, \"moe_intermediate_size\": 4}", NULL, NULL, NF_C_RANGE},
        {"llama attention_bias", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4,"
         " \"vocab_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
         " \"intermediate_size\": 4, \"attention_bias\": true}", NULL, NULL, NF_C_UNSUPPORTED},
        {"layer_types of the wrong length", "{\"architectures\": [\"Qwen3_5ForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 2,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4,"
         " \"layer_types\": [\"full_attention\"]}", NULL, NULL, NF_C_SCHEMA},
        {"linear layer without linear keys", "{\"architectures\": [\"Qwen3_5ForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4,"
         " \"layer_types\": [\"linear_attention\"]}", NULL, NULL, NF_C_SCHEMA},
        {"mtp without a target", "{\"architectures\": [\"Qwen3_5MTP\"]}", NULL, NULL, NF_C_TARGET},
        {"mtp with a target of another family", "{\"architectures\": [\"Qwen3NextMTP\"]}", "text",
         "{\"architectures\": [\"Qwen3_5ForCausalLM\"]}", NF_C_TARGET},
        {"not JSON", "{\"architectures\": [", NULL, NULL, NF_C_JSON},
        /* string values with their full length, names without U+0000 */
        {"architecture with U+0000", "{\"architectures\": [\"LlamaForCausalLM\\u0000Qwen\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4}", NULL, NULL, NF_C_SCHEMA},
        {"hidden_size\\u0000x", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\\u0000x\": 4,"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4}", NULL, NULL, NF_C_SCHEMA},
        {"layer_types value with U+0000", "{\"architectures\": [\"Qwen3_5ForCausalLM\"],"
         " \"hidden_size\": 4, \"vocab_size\": 4, \"num_hidden_layers\": 1,"
         " \"num_attention_heads\": 1, \"intermediate_size\": 4,"
         " \"layer_types\": [\"full_attention\\u0000\"]}", NULL, NULL, NF_C_SCHEMA},
        {"mtp target architecture with U+0000", "{\"architectures\": [\"Qwen3_5MTP\"]}", "text",
         "{\"architectures\": [\"Qwen3_5ForCausalLM\\u0000\"]}", NF_C_TARGET},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        nf_diags d = NF_DIAGS_INIT;
        nf_arch_plan p;
        int rc = derive(cases[i].tcomp ? "mtp" : "text", cases[i].cfg, cases[i].tcomp,
                        cases[i].tcfg, &p, &d);
        bool ok = rc == -1 && d.n > 0 && d.v[0].code == cases[i].code;
        CHECK(ok, "hostile config: %s -> %s", cases[i].what, nf_code_name(cases[i].code));
        if (!ok)
            nf_diags_print(&d, "#  ", stdout);
        if (rc == 0)
            nf_arch_plan_free(&p);
        nf_diags_free(&d);
    }
    nf_diags d = NF_DIAGS_INIT;
    nf_arch_plan p;
    int rc = derive("text", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4}", NULL,
                    NULL, &p, &d);
    CHECK(rc == -1 && d.n && strcmp(d.v[0].pointer, "/components/text/config/vocab_size") == 0,
          "hostile config: the pointer names the missing field");
    nf_diags_free(&d);
    rc = derive("text", "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"hidden_size\": 4,"
                " \"vocab_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
                " \"intermediate_size\": 4, \"num_experts\": 4, \"num_experts_per_tok\": 100,"
                " \"moe_intermediate_size\": 4}", NULL, NULL, &p, &d);
    CHECK(rc == -1 && d.n == 1 &&
              strcmp(d.v[0].pointer, "/components/text/config/num_experts_per_tok") == 0 &&
              strcmp(d.v[0].message, "num_experts_per_tok 100 is more than num_experts 4") == 0,
          "hostile config: num_experts_per_tok 100 of 4 experts names the key and both counts");
    nf_diags_free(&d);
    rc = derive("text", "{\"architectures\": [\"LlamaForCausalLM\\u0000Qwen\"]}", NULL, NULL, &p, &d);
    CHECK(rc == -1 && d.n == 1 && d.v[0].code == NF_C_SCHEMA &&
              strcmp(d.v[0].pointer, "/components/text/config/architectures/0") == 0 &&
              strcmp(d.v[0].message, "an architecture name must not contain U+0000") == 0,
          "hostile config: \"LlamaForCausalLM\\u0000Qwen\" is no Llama: schema at architectures/0");
    nf_diags_free(&d);
    rc = derive("text", "{\"architectures\": [\"Qwen3_5ForCausalLM\"], \"hidden_size\": 4,"
                " \"vocab_size\": 4, \"num_hidden_layers\": 1, \"num_attention_heads\": 1,"
                " \"intermediate_size\": 4, \"layer_types\": [\"linear_attention\\u0000x\"]}",
                NULL, NULL, &p, &d);
    CHECK(rc == -1 && d.n == 1 && d.v[0].code == NF_C_SCHEMA &&
              strcmp(d.v[0].pointer, "/components/text/config/layer_types") == 0,
          "hostile config: \"linear_attention\\u0000x\" is no layer type");
    nf_diags_free(&d);
    rc = derive("text", "{\"architectures\": [\"GPT2LMHeadModel\"]}", NULL, NULL, &p, &d);
    CHECK(rc == -1 && d.n &&
              strcmp(d.v[0].pointer, "/components/text/config/architectures") == 0,
          "hostile config: an unknown architecture points at architectures");
    nf_diags_free(&d);
}

int main(void)
{
    test_qwen25();
    test_qwen3_next();
    test_qwen35_moe();
    test_spec121();
    test_families();
    test_hostile();
    return nf_test_done();
}
