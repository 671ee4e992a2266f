/* qwen3.c — Qwen3ForCausalLM (DESIGN 10, dense family): Llama's layout with
 * per-head q/k RMS norms (query_norm, key_norm of [D]) and head_dim from the
 * config. attention_bias is not supported. */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen3(nf_ab *b)
{
    nf_geom g;
    bool attn_bias = false;
    if (!nf_geom_dense(b, &g) || !nf_ab_bool(b, "attention_bias", false, &attn_bias) ||
        !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I))
        return -1;
    if (attn_bias) {
        nf_ab_fail(b, NF_C_UNSUPPORTED, "attention_bias",
                   "Qwen3ForCausalLM with attention_bias is not supported");
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
        nf_blk_layer(b, &g, lp, hp, gp, true, NF_MLP_DENSE);
    }
    nf_blk_final(b, &g);
    nf_geom_free(&g);
    return b->failed ? -1 : 0;
}
