/* qwen3_moe.c — Qwen3MoeForCausalLM (DESIGN 10, MoE family): Qwen3's
 * attention; layer i has the MoE MLP (router [E,H] and E experts of
 * gate/up [Im,H] and down [H,Im]) when num_experts > 0, i is not in
 * mlp_only_layers and (i+1) % decoder_sparse_step == 0, else the dense MLP
 * of intermediate_size. No shared expert. GGUF "qwen3moe" stacks the
 * experts in [E,Im,H] / [E,H,Im] banks; each expert maps to its slice
 * (spec 7.2). */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen3_moe(nf_ab *b)
{
    nf_geom g;
    bool attn_bias = false;
    if (!nf_geom_dense(b, &g) || !nf_ab_bool(b, "attention_bias", false, &attn_bias) ||
        !nf_geom_moe(b, &g, false)) {
        nf_geom_free(&g);
        return -1;
    }
    if (attn_bias) {
        nf_ab_fail(b, NF_C_UNSUPPORTED, "attention_bias",
                   "Qwen3MoeForCausalLM with attention_bias is not supported");
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
    g.qk_norm = true;
    g.gguf = true;
    nf_blk_embedding(b, &g);
    for (uint64_t i = 0; i < g.L && !b->failed; i++) {
        char lp[32], hp[48], gp[32];
        snprintf(lp, sizeof lp, "layers/%llu", (unsigned long long)i);
        snprintf(hp, sizeof hp, "model.layers.%llu", (unsigned long long)i);
        snprintf(gp, sizeof gp, "blk.%llu", (unsigned long long)i);
        nf_blk_layer(b, &g, lp, hp, gp, true, nf_geom_is_moe(&g, i) ? NF_MLP_MOE : NF_MLP_DENSE);
    }
    nf_blk_final(b, &g);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
}
