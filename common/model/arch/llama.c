/* llama.c — LlamaForCausalLM (DESIGN 10, dense family): embedding, per
 * layer input/post-attention norms, q/k/v/o projections and the gate/up/
 * down MLP, final norm and head (tied when tie_word_embeddings). GGUF
 * names are llama.cpp's "llama" ones, whose q/k rows are in llama.cpp's
 * rope order (undone with unpermute, DESIGN 5). */
#include "nf_arch.h"

#include <stdio.h>

int nf_arch_llama(nf_ab *b)
{
    nf_geom g;
    bool attn_bias = false, mlp_bias = false;
    if (!nf_geom_dense(b, &g) || !nf_ab_bool(b, "attention_bias", false, &attn_bias) ||
        !nf_ab_bool(b, "mlp_bias", false, &mlp_bias) ||
        !nf_ab_u64(b, "intermediate_size", true, 0, 1, &g.I))
        return -1;
    if (attn_bias || mlp_bias) {
        nf_ab_fail(b, NF_C_UNSUPPORTED, attn_bias ? "attention_bias" : "mlp_bias",
                   "LlamaForCausalLM with %s is not supported", attn_bias ? "attention_bias" : "mlp_bias");
        return -1;
    }
    g.gguf = true;
    g.unpermute = true;
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
