/* qwen3_5.c — Qwen3_5ForCausalLM (DESIGN 10, hybrid family with a dense
 * MLP; spec 12): the layer pattern and gated full attention of Qwen3-Next,
 * with the linear-attention input projections split into in_proj_qkv (all
 * q rows, then all k, then all v), in_proj_z, in_proj_b and in_proj_a.
 * Checkpoints may prefix tensor names with "model.language_model." (the
 * importer tries both). GGUF "qwen35" (GGUF.md 4.2): attn_qkv, attn_gate,
 * ssm_beta, ssm_alpha, ssm_conv1d, ssm_dt.bias, ssm_a and ssm_out with the
 * value heads tiled when Hk != Hv (rows bound head by head; ssm_out's
 * columns marked tiled), norms stored w + 1 (except ssm_norm), ssm_a =
 * -exp(A_log). */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen3_5(nf_ab *b)
{
    nf_geom g;
    if (!nf_geom_dense(b, &g) || !nf_geom_hybrid(b, &g) ||
        !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I)) {
        nf_geom_free(&g);
        return -1;
    }
    g.split_in_proj = true;
    nf_geom_gguf_hybrid(b, &g, "qwen35");
    nf_blk_embedding(b, &g);
    for (uint64_t i = 0; i < g.L && !b->failed; i++) {
        char lp[32], hp[48], gp[32];
        snprintf(lp, sizeof lp, "layers/%llu", (unsigned long long)i);
        snprintf(hp, sizeof hp, "model.layers.%llu", (unsigned long long)i);
        snprintf(gp, sizeof gp, "blk.%llu", (unsigned long long)i);
        nf_blk_layer(b, &g, lp, hp, gp, g.full_attn[i], NF_MLP_DENSE);
    }
    nf_blk_final(b, &g);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
}
