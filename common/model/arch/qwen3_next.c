/* qwen3_next.c — Qwen3NextForCausalLM (DESIGN 10, hybrid family with MoE;
 * spec 12): layer i is full attention when layer_types[i] says so, or
 * without layer_types when (i+1) % full_attention_interval == 0 (default
 * 4), else linear attention. Full attention is gated (q_proj holds D query
 * and D gate rows per head) with q/k norms; linear attention binds
 * in_proj_qkvz / in_proj_ba per key-head group. MoE layers (as Qwen3-MoE)
 * add the shared expert (shared_expert_intermediate_size) and its gate.
 * GGUF "qwen3next" (GGUF.md 4.2): attn_qkv = [all q; all k; all v] and
 * attn_gate = z, or the legacy ssm_in (in_proj_qkvz verbatim,
 * NF_GGUF_FORM_SSM_IN); ssm_ba as in_proj_ba; no v-head tiling; norms
 * stored w + 1 (except ssm_norm) and ssm_a = -exp(A_log), undone by maps. */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen3_next(nf_ab *b)
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
    nf_geom_gguf_hybrid(b, &g, "qwen3next");
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
