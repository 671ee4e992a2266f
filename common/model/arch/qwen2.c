/* qwen2.c — Qwen2ForCausalLM (DESIGN 10, dense family): Llama's layout
 * with q/k/v biases (query_bias, key_bias, value_bias). GGUF "qwen2" names
 * keep Hugging Face's row order (no unpermute). */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_qwen2(nf_ab *b)
{
    nf_geom g;
    if (!nf_geom_dense(b, &g) || !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I))
        return -1;
    g.qkv_bias = true;
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
