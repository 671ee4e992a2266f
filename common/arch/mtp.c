/* mtp.c — the multi-token-prediction component (spec 4.2, 12; DESIGN 10):
 * config {"architectures": ["Qwen3_5MTP"]} (or "Qwen3NextMTP") with target
 * text, whose config gives the geometry. Parameters: mtp/embedding and
 * mtp/head bind the text's objects (spec 5.3: shared data); mtp/fc [H,2H]
 * reads the normed embedding then the normed hidden state (mtp/fc_input);
 * pre_fc_norm_embedding, pre_fc_norm_hidden and final_norm [H]; and
 * mtp/layers/{k} (k < mtp_num_hidden_layers, else num_nextn_predict_layers,
 * default 1), each a gated full-attention layer with the text's MLP kind
 * (MoE for Qwen3-Next). Hugging Face names start with "mtp.". */
#include "nf_arch.h"

#include <stdio.h>
#include <string.h>

#include "nf_util.h"

#define D1(a) (const uint64_t[]){(a)}
#define D2(a, b) (const uint64_t[]){(a), (b)}

static size_t whole(nf_ab *b, unsigned rank, const uint64_t *dims, const char *input, bool policy,
                    const char *name, const char *hf)
{
    size_t p = nf_ab_param(b, rank, dims, input, policy, "%s", name);
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, rank, dims, 0, "%s", hf));
    return p;
}

int nf_arch_mtp(nf_ab *b)
{
    const char *arch = b->p->architecture;
    bool next = strcmp(arch, "Qwen3NextMTP") == 0;
    nf_geom g;
    if (!nf_geom_dense(b, &g) || (next && !nf_geom_moe(b, &g, true)) || !nf_geom_hybrid(b, &g)) {
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
    bool moe = next && g.E > 0;
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
    whole(b, 1, D1(g.H), NULL, false, "pre_fc_norm_embedding", "mtp.pre_fc_norm_embedding.weight");
    whole(b, 1, D1(g.H), NULL, false, "pre_fc_norm_hidden", "mtp.pre_fc_norm_hidden.weight");
    whole(b, 2, D2(g.H, H2), "fc_input", true, "fc", "mtp.fc.weight");
    for (uint64_t k = 0; k < n && !b->failed; k++) {
        char lp[32], hp[48];
        snprintf(lp, sizeof lp, "layers/%llu", (unsigned long long)k);
        snprintf(hp, sizeof hp, "mtp.layers.%llu", (unsigned long long)k);
        nf_blk_layer(b, &g, lp, hp, NULL, true, moe ? NF_MLP_MOE : NF_MLP_DENSE);
    }
    whole(b, 1, D1(g.H), NULL, false, "final_norm", "mtp.norm.weight");
    p = nf_ab_param(b, 2, D2(g.V, g.H), "head_input", true, "head");
    snprintf(tname, sizeof tname, "%s/head", b->target);
    nf_ab_share(b, p, true, tname);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
fail:
    nf_geom_free(&g);
    return -1;
}
