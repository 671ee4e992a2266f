/* mtp.c — the multi-token-prediction component (spec 4.2, 12; DESIGN 10):
 * config {"architectures": ["Qwen3_5MTP"]} (or "Qwen3NextMTP") with target
 * text, whose config gives the geometry. Parameters: mtp/embedding and
 * mtp/head bind the text's objects (spec 5.3: shared data); mtp/fc [H,2H]
 * reads the normed embedding then the normed hidden state (mtp/fc_input);
 * pre_fc_norm_embedding, pre_fc_norm_hidden and final_norm [H]; and
 * mtp/layers/{k} (k < mtp_num_hidden_layers, else num_nextn_predict_layers,
 * default 1), each a gated full-attention layer with the text's MLP kind
 * (MoE for Qwen3-Next and Qwen3.5-MoE targets). Hugging Face names start
 * with "mtp."; GGUF names (GGUF.md 4.4) put MTP layer k at blk.(L+k) (L
 * the text's num_hidden_layers) and fc / the three norms at
 * blk.L.nextn.{eh_proj, enorm, hnorm, shared_head_norm}, norms stored
 * w + 1. */
#include "nf_arch.h"

#include <stdio.h>
#include <string.h>

#include "nf_util.h"

#define D1(a) (const uint64_t[]){(a)}
#define D2(a, b) (const uint64_t[]){(a), (b)}

/* A parameter of one whole HF tensor and one whole GGUF tensor
 * "blk.<L>.nextn.<gg>" (a norm: stored w + 1). */
static size_t whole(nf_ab *b, const nf_geom *g, unsigned rank, const uint64_t *dims,
                    const char *input, bool policy, const char *name, const char *hf,
                    const char *gg)
{
    size_t p = nf_ab_param(b, rank, dims, input, policy, "%s", name);
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, rank, dims, 0, "%s", hf));
    size_t t = nf_ab_tensor(b, NF_NAMING_GGUF, rank, dims, 0, "blk.%llu.nextn.%s",
                            (unsigned long long)g->L, gg);
    nf_ab_map_whole(b, p, NF_NAMING_GGUF, t);
    if (rank == 1)
        nf_ab_tensor_map(b, t, NF_NAMING_GGUF, NF_VMAP_MINUS_ONE);
    return p;
}

int nf_arch_mtp(nf_ab *b)
{
    const char *arch = b->p->architecture;
    bool next = strcmp(arch, "Qwen3NextMTP") == 0;
    nf_jval *ta = nf_ab_get(b, "architectures");
    const char *tarch = nf_jstr(nf_jarr_get(ta, 0), NULL);
    bool moe_target = next || (tarch && strcmp(tarch, "Qwen3_5MoeForCausalLM") == 0);
    nf_geom g;
    if (!nf_geom_dense(b, &g) || (moe_target && !nf_geom_moe(b, &g, true)) ||
        !nf_geom_hybrid(b, &g)) {
        nf_geom_free(&g);
        return -1;
    }
    uint64_t n = 1;
    if (nf_ab_get(b, "mtp_num_hidden_layers")) {
        if (!nf_ab_u64(b, "mtp_num_hidden_layers", true, 1, 1, &n))
            goto fail;
    } else if (!nf_ab_u64(b, "num_nextn_predict_layers", false, 1, 1, &n)) {
        goto fail;
    }
    if (n > g.L + 64) {
        nf_ab_fail(b, NF_C_RANGE, "mtp_num_hidden_layers", "%llu MTP layers is over the cap",
                   (unsigned long long)n);
        goto fail;
    }
    bool moe = moe_target && g.E > 0;
    nf_geom_gguf_hybrid(b, &g, next ? "qwen3next" : moe_target ? "qwen35moe" : "qwen35");
    if (g.L + n < g.L) {
        nf_ab_fail(b, NF_C_RANGE, "mtp_num_hidden_layers", "layer numbers overflow");
        goto fail;
    }
    if (!moe && !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I))
        goto fail;
    uint64_t H2;
    if (!nf_mul_u64(g.H, 2, &H2)) {
        nf_ab_fail(b, NF_C_RANGE, "hidden_size", "2 x hidden_size overflows U64");
        goto fail;
    }
    char tname[256];
    size_t p = nf_ab_param(b, 2, D2(g.V, g.H), "token_ids", false, "embedding");
    snprintf(tname, sizeof tname, "%s/embedding", b->target);
    nf_ab_share(b, p, true, tname);
    whole(b, &g, 1, D1(g.H), NULL, false, "pre_fc_norm_embedding",
          "mtp.pre_fc_norm_embedding.weight", "enorm.weight");
    whole(b, &g, 1, D1(g.H), NULL, false, "pre_fc_norm_hidden", "mtp.pre_fc_norm_hidden.weight",
          "hnorm.weight");
    whole(b, &g, 2, D2(g.H, H2), "fc_input", true, "fc", "mtp.fc.weight", "eh_proj.weight");
    for (uint64_t k = 0; k < n && !b->failed; k++) {
        char lp[32], hp[48], gp[32];
        snprintf(lp, sizeof lp, "layers/%llu", (unsigned long long)k);
        snprintf(hp, sizeof hp, "mtp.layers.%llu", (unsigned long long)k);
        snprintf(gp, sizeof gp, "blk.%llu", (unsigned long long)(g.L + k));
        nf_blk_layer(b, &g, lp, hp, gp, true, moe ? NF_MLP_MOE : NF_MLP_DENSE);
    }
    whole(b, &g, 1, D1(g.H), NULL, false, "final_norm", "mtp.norm.weight",
          "shared_head_norm.weight");
    p = nf_ab_param(b, 2, D2(g.V, g.H), "head_input", true, "head");
    snprintf(tname, sizeof tname, "%s/head", b->target);
    nf_ab_share(b, p, true, tname);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
fail:
    nf_geom_free(&g);
    return -1;
}
