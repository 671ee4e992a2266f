/* qwen3_5_moe.c — Qwen3_5MoeForCausalLM (DESIGN 10, hybrid MoE family):
 * Qwen3.5's hybrid layers and split linear-attention projections
 * (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a) with Qwen3-Next's MoE MLP
 * (router, E experts, shared expert and its gate). A layer is MoE when
 * num_experts > 0, it is not in mlp_only_layers and (i+1) %
 * decoder_sparse_step == 0 (defaults 1 and [], as the Hugging Face code
 * fills them), else dense (intermediate_size). GGUF "qwen35moe": the
 * qwen35 names (v heads tiled, maps) with stacked expert banks. */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen3_5_moe(nf_ab *b)
{
    nf_geom g;
    if (!nf_geom_dense(b, &g) || !nf_geom_moe(b, &g, true) || !nf_geom_hybrid(b, &g)) {
        nf_geom_free(&g);
        return -1;
    }
    bool dense = false;
    for (uint64_t i = 0; i < g.L; i++)
        dense |= !nf_geom_is_moe(&g, i);
    if (dense && !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I)) {
        nf_geom_free(&g);
        return -1;
    }
    g.split_in_proj = true;
    nf_geom_gguf_hybrid(b, &g, "qwen35moe");
    nf_blk_embedding(b, &g);
    for (uint64_t i = 0; i < g.L && !b->failed; i++) {
        char lp[32], hp[48], gp[32];
        snprintf(lp, sizeof lp, "layers/%llu", (unsigned long long)i);
        snprintf(hp, sizeof hp, "model.layers.%llu", (unsigned long long)i);
        snprintf(gp, sizeof gp, "blk.%llu", (unsigned long long)i);
        nf_blk_layer(b, &g, lp, hp, gp, g.full_attn[i],
                     nf_geom_is_moe(&g, i) ? NF_MLP_MOE : NF_MLP_DENSE);
    }
    nf_blk_final(b, &g);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
}
