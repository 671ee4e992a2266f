/* nf_arch_blocks.c — the pieces every architecture family is made of
 * (DESIGN 10's table): config geometry, embedding and head, norms, full
 * and linear attention, dense MLP and MoE, each with its Hugging Face and
 * GGUF tensor names and its fuse groups. */
#include "nf_arch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_util.h"

#define D1(a) (const uint64_t[]){(a)}
#define D2(a, b) (const uint64_t[]){(a), (b)}
#define D3(a, b, c) (const uint64_t[]){(a), (b), (c)}

#define MAX_LAYERS 65536u
#define MAX_EXPERTS 65536u
#define MAX_EXPERT_SLOTS (4u << 20) /* layers x experts */

/* a*b, or a failure */
static bool mul(nf_ab *b, uint64_t x, uint64_t y, uint64_t *r, const char *what)
{
    if (!nf_mul_u64(x, y, r)) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "%s overflows U64", what);
        return false;
    }
    return true;
}

bool nf_geom_dense(nf_ab *b, nf_geom *g)
{
    memset(g, 0, sizeof *g);
    if (!nf_ab_u64(b, "hidden_size", true, 0, 1, &g->H) ||
        !nf_ab_u64(b, "vocab_size", true, 0, 1, &g->V) ||
        !nf_ab_u64(b, "num_hidden_layers", true, 0, 1, &g->L) ||
        !nf_ab_u64(b, "num_attention_heads", true, 0, 1, &g->Nq) ||
        !nf_ab_u64(b, "num_key_value_heads", false, g->Nq, 1, &g->Nkv) ||
        !nf_ab_bool(b, "tie_word_embeddings", false, &g->tied))
        return false;
    if (g->L > MAX_LAYERS) {
        nf_ab_fail(b, NF_C_RANGE, "num_hidden_layers", "%llu layers is over the cap of %u",
                   (unsigned long long)g->L, MAX_LAYERS);
        return false;
    }
    if (g->Nq % g->Nkv != 0) {
        nf_ab_fail(b, NF_C_RANGE, "num_key_value_heads",
                   "num_attention_heads %llu is not a multiple of num_key_value_heads %llu",
                   (unsigned long long)g->Nq, (unsigned long long)g->Nkv);
        return false;
    }
    nf_jval *hd = nf_ab_get(b, "head_dim");
    if (hd && nf_jtype_of(hd) != NF_J_NULL) {
        if (!nf_ab_u64(b, "head_dim", true, 0, 1, &g->D))
            return false;
    } else {
        if (g->H % g->Nq != 0) {
            nf_ab_fail(b, NF_C_RANGE, "num_attention_heads",
                       "hidden_size %llu is not a multiple of num_attention_heads %llu and "
                       "there is no head_dim", (unsigned long long)g->H,
                       (unsigned long long)g->Nq);
            return false;
        }
        g->D = g->H / g->Nq;
    }
    uint64_t x;
    return mul(b, g->Nq, g->D, &x, "num_attention_heads x head_dim") &&
           mul(b, x, 2, &x, "2 x num_attention_heads x head_dim") &&
           mul(b, g->V, g->H, &x, "vocab_size x hidden_size");
}

bool nf_geom_moe(nf_ab *b, nf_geom *g, bool shared)
{
    if (!nf_ab_u64(b, "num_experts", true, 0, 0, &g->E) ||
        !nf_ab_u64(b, "decoder_sparse_step", false, 1, 1, &g->sparse_step))
        return false;
    if (g->E > MAX_EXPERTS || (g->E && g->L > MAX_EXPERT_SLOTS / g->E)) {
        nf_ab_fail(b, NF_C_RANGE, "num_experts", "%llu experts x %llu layers is over the cap",
                   (unsigned long long)g->E, (unsigned long long)g->L);
        return false;
    }
    if (g->E && !nf_ab_u64(b, "moe_intermediate_size", true, 0, 1, &g->Im))
        return false;
    /* the router picks num_experts_per_tok of the num_experts (when given:
     * llama.cpp's expert_used_count) */
    uint64_t k = 0;
    if (g->E && !nf_ab_u64(b, "num_experts_per_tok", false, 0, 1, &k))
        return false;
    if (k > g->E) {
        nf_ab_fail(b, NF_C_RANGE, "num_experts_per_tok",
                   "num_experts_per_tok %llu is more than num_experts %llu",
                   (unsigned long long)k, (unsigned long long)g->E);
        return false;
    }
    if (shared && g->E && !nf_ab_u64(b, "shared_expert_intermediate_size", false, 0, 0, &g->Is))
        return false;
    nf_jval *m = nf_ab_get(b, "mlp_only_layers");
    if (m && nf_jtype_of(m) != NF_J_NULL) {
        if (nf_jtype_of(m) != NF_J_ARRAY) {
            nf_ab_fail(b, NF_C_SCHEMA, "mlp_only_layers", "mlp_only_layers must be an array");
            return false;
        }
        size_t n = nf_jarr_len(m);
        g->mlp_only = malloc((n ? n : 1) * sizeof *g->mlp_only);
        if (!g->mlp_only) {
            nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
            return false;
        }
        for (size_t i = 0; i < n; i++) {
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/mlp_only_layers/%zu", i);
            if (nf_jval_u64(b->doc, nf_jarr_get(m, i), ptr, &g->mlp_only[i]) != NF_JU64_OK) {
                nf_ab_fail(b, NF_C_SCHEMA, "mlp_only_layers",
                           "mlp_only_layers must hold layer indices");
                return false;
            }
        }
        g->n_mlp_only = n;
    }
    return true;
}

bool nf_geom_is_moe(const nf_geom *g, uint64_t i)
{
    if (!g->E || (i + 1) % g->sparse_step != 0)
        return false;
    for (size_t k = 0; k < g->n_mlp_only; k++)
        if (g->mlp_only[k] == i)
            return false;
    return true;
}

bool nf_geom_hybrid(nf_ab *b, nf_geom *g)
{
    g->gated = true;
    g->qk_norm = true;
    g->full_attn = calloc(g->L, sizeof *g->full_attn);
    if (!g->full_attn) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return false;
    }
    bool any_linear = false;
    nf_jval *lt = nf_ab_get(b, "layer_types");
    if (lt && nf_jtype_of(lt) != NF_J_NULL) {
        if (nf_jtype_of(lt) != NF_J_ARRAY || nf_jarr_len(lt) != g->L) {
            nf_ab_fail(b, NF_C_SCHEMA, "layer_types",
                       "layer_types must be an array of num_hidden_layers (%llu) strings",
                       (unsigned long long)g->L);
            return false;
        }
        for (uint64_t i = 0; i < g->L; i++) {
            const char *s = nf_jstr(nf_jarr_get(lt, i), NULL);
            if (s && strcmp(s, "full_attention") == 0)
                g->full_attn[i] = true;
            else if (s && strcmp(s, "linear_attention") == 0)
                any_linear = true;
            else {
                nf_ab_fail(b, NF_C_SCHEMA, "layer_types",
                           "layer_types[%llu] must be \"full_attention\" or \"linear_attention\"",
                           (unsigned long long)i);
                return false;
            }
        }
    } else {
        uint64_t every;
        if (!nf_ab_u64(b, "full_attention_interval", false, 4, 1, &every))
            return false;
        for (uint64_t i = 0; i < g->L; i++) {
            g->full_attn[i] = (i + 1) % every == 0;
            any_linear |= !g->full_attn[i];
        }
    }
    if (!any_linear)
        return true;
    if (!nf_ab_u64(b, "linear_num_key_heads", true, 0, 1, &g->Hk) ||
        !nf_ab_u64(b, "linear_num_value_heads", true, 0, 1, &g->Hv) ||
        !nf_ab_u64(b, "linear_key_head_dim", true, 0, 1, &g->Dk) ||
        !nf_ab_u64(b, "linear_value_head_dim", true, 0, 1, &g->Dv) ||
        !nf_ab_u64(b, "linear_conv_kernel_dim", false, 4, 1, &g->kernel))
        return false;
    if (g->Hv % g->Hk != 0) {
        nf_ab_fail(b, NF_C_RANGE, "linear_num_value_heads",
                   "linear_num_value_heads %llu is not a multiple of linear_num_key_heads %llu",
                   (unsigned long long)g->Hv, (unsigned long long)g->Hk);
        return false;
    }
    uint64_t x, y;
    if (!mul(b, g->Hk, g->Dk, &x, "linear key width") || !mul(b, x, 2, &x, "linear key width") ||
        !mul(b, g->Hv, g->Dv, &y, "linear value width") || !mul(b, y, 2, &y, "linear value width"))
        return false;
    if (!nf_add_u64(x, y, &x)) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "linear attention rows overflow U64");
        return false;
    }
    return mul(b, x, g->kernel, &x, "conv1d size");
}

void nf_geom_gguf_hybrid(nf_ab *b, nf_geom *g, const char *arch)
{
    g->gguf = true;
    g->gguf_hybrid = true;
    g->gguf_tiled = strcmp(arch, "qwen3next") != 0;
    g->gguf_forms = b->in ? b->in->gguf_forms : 0;
}

void nf_geom_free(nf_geom *g)
{
    free(g->full_attn);
    free(g->mlp_only);
    g->full_attn = NULL;
    g->mlp_only = NULL;
}

/* ---- blocks ----------------------------------------------------------------- */

void nf_blk_embedding(nf_ab *b, const nf_geom *g)
{
    size_t p = nf_ab_param(b, 2, D2(g->V, g->H), "token_ids", false, "embedding");
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 2, D2(g->V, g->H), 0,
                                                     "model.embed_tokens.weight"));
    if (g->gguf)
        nf_ab_map_whole(b, p, NF_NAMING_GGUF, nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(g->V, g->H),
                                                           0, "token_embd.weight"));
}

void nf_blk_final(nf_ab *b, const nf_geom *g)
{
    size_t p = nf_ab_param(b, 1, D1(g->H), NULL, false, "final_norm");
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 1, D1(g->H), 0,
                                                     "model.norm.weight"));
    if (g->gguf) {
        size_t t = nf_ab_tensor(b, NF_NAMING_GGUF, 1, D1(g->H), 0, "output_norm.weight");
        nf_ab_map_whole(b, p, NF_NAMING_GGUF, t);
        if (g->gguf_hybrid)
            nf_ab_tensor_map(b, t, NF_NAMING_GGUF, NF_VMAP_MINUS_ONE);
    }
    p = nf_ab_param(b, 2, D2(g->V, g->H), "head_input", true, "head");
    if (g->tied) {
        nf_ab_share(b, p, false, "embedding");
        return;
    }
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 2, D2(g->V, g->H), 0,
                                                     "lm_head.weight"));
    if (g->gguf)
        nf_ab_map_whole(b, p, NF_NAMING_GGUF, nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(g->V, g->H),
                                                           0, "output.weight"));
}

/* A parameter mapped to one whole HF tensor (hf_suffix after hp) and,
 * when gp and gg are given, one whole GGUF tensor. */
static size_t simple(nf_ab *b, const nf_geom *g, unsigned rank, const uint64_t *dims,
                     const char *input, bool policy, const char *lp, const char *name,
                     const char *hp, const char *hf, const char *gp, const char *gg,
                     uint64_t unpermute)
{
    size_t p = nf_ab_param(b, rank, dims, input, policy, "%s/%s", lp, name);
    nf_ab_map_whole(b, p, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, rank, dims, 0, "%s.%s",
                                                     hp, hf));
    if (g->gguf && gp && gg)
        nf_ab_map_whole(b, p, NF_NAMING_GGUF,
                        nf_ab_tensor(b, NF_NAMING_GGUF, rank, dims, unpermute, "%s.%s", gp, gg));
    return p;
}

/* A norm [n]: stored as w + 1 in the hybrids' GGUFs (GGUF.md 4.2). */
static size_t norm(nf_ab *b, const nf_geom *g, uint64_t n, const char *lp, const char *name,
                   const char *hp, const char *hf, const char *gp, const char *gg)
{
    size_t p = simple(b, g, 1, D1(n), NULL, false, lp, name, hp, hf, gp, gg, 0);
    if (g->gguf && g->gguf_hybrid && gp && p != SIZE_MAX)
        nf_ab_tensor_map(b, b->p->params[p].src[NF_NAMING_GGUF].tensor, NF_NAMING_GGUF,
                         NF_VMAP_MINUS_ONE);
    return p;
}

/* One whole GGUF tensor "<gp>.<name>" for parameter p. */
static size_t gguf_whole(nf_ab *b, size_t p, unsigned rank, const uint64_t *dims, const char *gp,
                         const char *name)
{
    size_t t = nf_ab_tensor(b, NF_NAMING_GGUF, rank, dims, 0, "%s.%s", gp, name);
    nf_ab_map_whole(b, p, NF_NAMING_GGUF, t);
    return t;
}

static void attention(nf_ab *b, const nf_geom *g, const char *lp, const char *hp,
                      const char *gp)
{
    uint64_t H = g->H, QD = g->Nq * g->D, KD = g->Nkv * g->D; /* checked in nf_geom_dense */
    char in[256];
    snprintf(in, sizeof in, "%s/mixer_input", lp);
    size_t q, k, v, gate = SIZE_MAX;
    if (g->gated) {
        /* q_proj holds, per head, D query rows then D gate rows */
        size_t t = nf_ab_tensor(b, NF_NAMING_HF, 2, D2(2 * QD, H), 0, "%s.self_attn.q_proj.weight",
                                hp);
        q = nf_ab_param(b, 2, D2(QD, H), in, true, "%s/attention/query", lp);
        nf_ab_map_rows(b, q, NF_NAMING_HF, t, 0, g->D, 2 * g->D, g->Nq);
        k = simple(b, g, 2, D2(KD, H), in, true, lp, "attention/key", hp, "self_attn.k_proj.weight",
                   gp, "attn_k.weight", 0);
        gate = nf_ab_param(b, 2, D2(QD, H), in, true, "%s/attention/gate", lp);
        nf_ab_map_rows(b, gate, NF_NAMING_HF, t, g->D, g->D, 2 * g->D, g->Nq);
        if (g->gguf && gp) { /* attn_q keeps HF's per-head query/gate interleave (GGUF.md 4.3) */
            size_t u = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(2 * QD, H), 0, "%s.attn_q.weight", gp);
            nf_ab_map_rows(b, q, NF_NAMING_GGUF, u, 0, g->D, 2 * g->D, g->Nq);
            nf_ab_map_rows(b, gate, NF_NAMING_GGUF, u, g->D, g->D, 2 * g->D, g->Nq);
        }
    } else {
        q = simple(b, g, 2, D2(QD, H), in, true, lp, "attention/query", hp,
                   "self_attn.q_proj.weight", gp, "attn_q.weight", g->unpermute ? g->Nq : 0);
        k = simple(b, g, 2, D2(KD, H), in, true, lp, "attention/key", hp,
                   "self_attn.k_proj.weight", gp, "attn_k.weight", g->unpermute ? g->Nkv : 0);
    }
    v = simple(b, g, 2, D2(KD, H), in, true, lp, "attention/value", hp, "self_attn.v_proj.weight",
               gp, "attn_v.weight", 0);
    if (g->qkv_bias) {
        simple(b, g, 1, D1(QD), NULL, false, lp, "attention/query_bias", hp,
               "self_attn.q_proj.bias", gp, "attn_q.bias", 0);
        simple(b, g, 1, D1(KD), NULL, false, lp, "attention/key_bias", hp,
               "self_attn.k_proj.bias", gp, "attn_k.bias", 0);
        simple(b, g, 1, D1(KD), NULL, false, lp, "attention/value_bias", hp,
               "self_attn.v_proj.bias", gp, "attn_v.bias", 0);
    }
    if (g->qk_norm) {
        norm(b, g, g->D, lp, "attention/query_norm", hp, "self_attn.q_norm.weight", gp,
             "attn_q_norm.weight");
        norm(b, g, g->D, lp, "attention/key_norm", hp, "self_attn.k_norm.weight", gp,
             "attn_k_norm.weight");
    }
    snprintf(in, sizeof in, "%s/attention/context", lp);
    simple(b, g, 2, D2(H, QD), in, true, lp, "attention/output", hp, "self_attn.o_proj.weight", gp,
           "attn_output.weight", 0);
    if (g->gated) {
        size_t m[4] = {q, k, gate, v};
        nf_ab_group(b, m, 4, "%s/attention/qkgv", lp);
    } else {
        size_t m[3] = {q, k, v};
        nf_ab_group(b, m, 3, "%s/attention/qkv", lp);
    }
}

/* The GGUF tensors of a linear-attention layer (GGUF.md 4.2): qwen3next's
 * attn_qkv = [all q; all k; all v] and attn_gate = z (or the legacy ssm_in,
 * HF's in_proj_qkvz verbatim) with ssm_ba; qwen35*'s attn_qkv, attn_gate,
 * ssm_beta, ssm_alpha with the value heads tiled; ssm_conv1d [C, kernel]
 * (v channels tiled in qwen35*), ssm_dt.bias, ssm_a = -exp(A_log) (tiled),
 * ssm_norm, ssm_out (columns tiled). */
static void linear_gguf(nf_ab *b, const nf_geom *g, const char *gp, const size_t *p6, size_t c,
                        size_t dt, size_t al, size_t nm, size_t out)
{
    uint64_t H = g->H, Hk = g->Hk, Hv = g->Hv, Dk = g->Dk, Dv = g->Dv, r = Hv / Hk;
    uint64_t KW = Hk * Dk, VW = Hv * Dv, C = 2 * KW + VW;
    bool tiled = g->gguf_tiled && Hk != Hv;
    size_t q = p6[0], k = p6[1], v = p6[2], z = p6[3], pb = p6[4], pa = p6[5];
    if (!g->gguf_tiled && (g->gguf_forms & NF_GGUF_FORM_SSM_IN)) {
        uint64_t gs = 2 * Dk + 2 * r * Dv;
        size_t t = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(C + VW, H), 0, "%s.ssm_in.weight", gp);
        nf_ab_map_rows(b, q, NF_NAMING_GGUF, t, 0, Dk, gs, Hk);
        nf_ab_map_rows(b, k, NF_NAMING_GGUF, t, Dk, Dk, gs, Hk);
        nf_ab_map_rows(b, v, NF_NAMING_GGUF, t, 2 * Dk, r * Dv, gs, Hk);
        nf_ab_map_rows(b, z, NF_NAMING_GGUF, t, 2 * Dk + r * Dv, r * Dv, gs, Hk);
    } else {
        size_t t = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(C, H), 0, "%s.attn_qkv.weight", gp);
        nf_ab_map_rows(b, q, NF_NAMING_GGUF, t, 0, KW, 0, 1);
        nf_ab_map_rows(b, k, NF_NAMING_GGUF, t, KW, KW, 0, 1);
        size_t u = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(VW, H), 0, "%s.attn_gate.weight", gp);
        if (tiled) {
            nf_ab_map_tiled(b, v, NF_NAMING_GGUF, t, 0, 2 * KW, Hk, Hv, Dv);
            nf_ab_map_tiled(b, z, NF_NAMING_GGUF, u, 0, 0, Hk, Hv, Dv);
        } else {
            nf_ab_map_rows(b, v, NF_NAMING_GGUF, t, 2 * KW, VW, 0, 1);
            nf_ab_map_whole(b, z, NF_NAMING_GGUF, u);
        }
    }
    if (g->gguf_tiled) {
        size_t tb = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(Hv, H), 0, "%s.ssm_beta.weight", gp);
        size_t ta = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(Hv, H), 0, "%s.ssm_alpha.weight", gp);
        if (tiled) {
            nf_ab_map_tiled(b, pb, NF_NAMING_GGUF, tb, 0, 0, Hk, Hv, 1);
            nf_ab_map_tiled(b, pa, NF_NAMING_GGUF, ta, 0, 0, Hk, Hv, 1);
        } else {
            nf_ab_map_whole(b, pb, NF_NAMING_GGUF, tb);
            nf_ab_map_whole(b, pa, NF_NAMING_GGUF, ta);
        }
    } else { /* ssm_ba is HF's in_proj_ba: per group, r b rows then r a rows */
        size_t u = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(2 * Hv, H), 0, "%s.ssm_ba.weight", gp);
        nf_ab_map_rows(b, pb, NF_NAMING_GGUF, u, 0, r, 2 * r, Hk);
        nf_ab_map_rows(b, pa, NF_NAMING_GGUF, u, r, r, 2 * r, Hk);
    }
    size_t tc = nf_ab_tensor(b, NF_NAMING_GGUF, 2, D2(C, g->kernel), 0, "%s.ssm_conv1d.weight", gp);
    size_t td = nf_ab_tensor(b, NF_NAMING_GGUF, 1, D1(Hv), 0, "%s.ssm_dt.bias", gp);
    size_t ts = nf_ab_tensor(b, NF_NAMING_GGUF, 1, D1(Hv), 0, "%s.ssm_a", gp);
    nf_ab_tensor_map(b, ts, NF_NAMING_GGUF, NF_VMAP_LOG_NEG);
    if (tiled) {
        nf_ab_map_tiled(b, c, NF_NAMING_GGUF, tc, 2 * KW, 2 * KW, Hk, Hv, Dv);
        nf_ab_map_tiled(b, dt, NF_NAMING_GGUF, td, 0, 0, Hk, Hv, 1);
        nf_ab_map_tiled(b, al, NF_NAMING_GGUF, ts, 0, 0, Hk, Hv, 1);
    } else {
        nf_ab_map_whole(b, c, NF_NAMING_GGUF, tc);
        nf_ab_map_whole(b, dt, NF_NAMING_GGUF, td);
        nf_ab_map_whole(b, al, NF_NAMING_GGUF, ts);
    }
    gguf_whole(b, nm, 1, D1(Dv), gp, "ssm_norm.weight");
    size_t to = gguf_whole(b, out, 2, D2(H, VW), gp, "ssm_out.weight");
    if (tiled)
        nf_ab_tensor_tiled_columns(b, to, NF_NAMING_GGUF, Hk, Hv, Dv);
}

static void linear_attention(nf_ab *b, const nf_geom *g, const char *lp, const char *hp,
                             const char *gp)
{
    uint64_t H = g->H, Hk = g->Hk, Hv = g->Hv, Dk = g->Dk, Dv = g->Dv, r = Hv / Hk;
    uint64_t KW = Hk * Dk, VW = Hv * Dv, C = 2 * KW + VW; /* checked in nf_geom_hybrid */
    char in[256];
    snprintf(in, sizeof in, "%s/mixer_input", lp);
    size_t q = nf_ab_param(b, 2, D2(KW, H), in, true, "%s/linear_attention/query", lp);
    size_t k = nf_ab_param(b, 2, D2(KW, H), in, true, "%s/linear_attention/key", lp);
    size_t v = nf_ab_param(b, 2, D2(VW, H), in, true, "%s/linear_attention/value", lp);
    size_t z = nf_ab_param(b, 2, D2(VW, H), in, true, "%s/linear_attention/z", lp);
    size_t pb = nf_ab_param(b, 2, D2(Hv, H), in, true, "%s/linear_attention/b", lp);
    size_t pa = nf_ab_param(b, 2, D2(Hv, H), in, true, "%s/linear_attention/a", lp);
    if (g->split_in_proj) {
        /* Qwen3.5: all q rows, then all k, then all v; z, b, a apart */
        size_t t = nf_ab_tensor(b, NF_NAMING_HF, 2, D2(C, H), 0, "%s.linear_attn.in_proj_qkv.weight",
                                hp);
        nf_ab_map_rows(b, q, NF_NAMING_HF, t, 0, KW, 0, 1);
        nf_ab_map_rows(b, k, NF_NAMING_HF, t, KW, KW, 0, 1);
        nf_ab_map_rows(b, v, NF_NAMING_HF, t, 2 * KW, VW, 0, 1);
        nf_ab_map_whole(b, z, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 2, D2(VW, H), 0,
                                                         "%s.linear_attn.in_proj_z.weight", hp));
        nf_ab_map_whole(b, pb, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 2, D2(Hv, H), 0,
                                                          "%s.linear_attn.in_proj_b.weight", hp));
        nf_ab_map_whole(b, pa, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 2, D2(Hv, H), 0,
                                                          "%s.linear_attn.in_proj_a.weight", hp));
    } else {
        /* Qwen3-Next: per key-head group, Dk q rows, Dk k rows, r*Dv v rows, r*Dv z rows */
        uint64_t gs = 2 * Dk + 2 * r * Dv;
        size_t t = nf_ab_tensor(b, NF_NAMING_HF, 2, D2(C + VW, H), 0,
                                "%s.linear_attn.in_proj_qkvz.weight", hp);
        nf_ab_map_rows(b, q, NF_NAMING_HF, t, 0, Dk, gs, Hk);
        nf_ab_map_rows(b, k, NF_NAMING_HF, t, Dk, Dk, gs, Hk);
        nf_ab_map_rows(b, v, NF_NAMING_HF, t, 2 * Dk, r * Dv, gs, Hk);
        nf_ab_map_rows(b, z, NF_NAMING_HF, t, 2 * Dk + r * Dv, r * Dv, gs, Hk);
        /* in_proj_ba: per group, r b rows then r a rows */
        size_t u = nf_ab_tensor(b, NF_NAMING_HF, 2, D2(2 * Hv, H), 0,
                                "%s.linear_attn.in_proj_ba.weight", hp);
        nf_ab_map_rows(b, pb, NF_NAMING_HF, u, 0, r, 2 * r, Hk);
        nf_ab_map_rows(b, pa, NF_NAMING_HF, u, r, r, 2 * r, Hk);
    }
    /* conv1d [C,1,kernel] is the parameter [C,kernel] by a C-order reshape (spec 7.2) */
    size_t c = nf_ab_param(b, 2, D2(C, g->kernel), NULL, false, "%s/linear_attention/conv1d", lp);
    nf_ab_map_whole(b, c, NF_NAMING_HF, nf_ab_tensor(b, NF_NAMING_HF, 3, D3(C, 1, g->kernel), 0,
                                                     "%s.linear_attn.conv1d.weight", hp));
    size_t dt = simple(b, g, 1, D1(Hv), NULL, false, lp, "linear_attention/dt_bias", hp,
                       "linear_attn.dt_bias", NULL, NULL, 0);
    size_t al = simple(b, g, 1, D1(Hv), NULL, false, lp, "linear_attention/A_log", hp,
                       "linear_attn.A_log", NULL, NULL, 0);
    size_t nm = simple(b, g, 1, D1(Dv), NULL, false, lp, "linear_attention/norm", hp,
                       "linear_attn.norm.weight", NULL, NULL, 0);
    snprintf(in, sizeof in, "%s/linear_attention/context", lp);
    size_t out = simple(b, g, 2, D2(H, VW), in, true, lp, "linear_attention/output", hp,
                        "linear_attn.out_proj.weight", NULL, NULL, 0);
    size_t m[6] = {q, k, v, z, pb, pa};
    if (g->gguf && g->gguf_hybrid && gp)
        linear_gguf(b, g, gp, m, c, dt, al, nm, out);
    nf_ab_group(b, m, 6, "%s/linear_attention/in_proj", lp);
}

static void dense_mlp(nf_ab *b, const nf_geom *g, const char *lp, const char *hp, const char *gp)
{
    char in[256], prod[256];
    snprintf(in, sizeof in, "%s/mlp_input", lp);
    snprintf(prod, sizeof prod, "%s/mlp/product", lp);
    size_t m[2];
    m[0] = simple(b, g, 2, D2(g->I, g->H), in, true, lp, "mlp/gate", hp, "mlp.gate_proj.weight",
                  gp, "ffn_gate.weight", 0);
    m[1] = simple(b, g, 2, D2(g->I, g->H), in, true, lp, "mlp/up", hp, "mlp.up_proj.weight", gp,
                  "ffn_up.weight", 0);
    simple(b, g, 2, D2(g->H, g->I), prod, true, lp, "mlp/down", hp, "mlp.down_proj.weight", gp,
           "ffn_down.weight", 0);
    nf_ab_group(b, m, 2, "%s/mlp/gate_up", lp);
}

static void moe_mlp(nf_ab *b, const nf_geom *g, const char *lp, const char *hp, const char *gp)
{
    uint64_t H = g->H, E = g->E, Im = g->Im;
    char in[256], prod[256];
    snprintf(in, sizeof in, "%s/mlp_input", lp);
    simple(b, g, 2, D2(E, H), in, true, lp, "mlp/router", hp, "mlp.gate.weight", gp,
           "ffn_gate_inp.weight", 0);
    size_t gg = SIZE_MAX, gu = SIZE_MAX, gd = SIZE_MAX, gf = SIZE_MAX;
    if (g->gguf && gp) { /* llama.cpp stacks the experts: [E, Im, H] and [E, H, Im] */
        if (g->gguf_forms & NF_GGUF_FORM_GATE_UP_EXPS) /* per expert, gate rows then up rows */
            gf = nf_ab_tensor(b, NF_NAMING_GGUF, 3, D3(E, 2 * Im, H), 0,
                              "%s.ffn_gate_up_exps.weight", gp);
        else {
            gg = nf_ab_tensor(b, NF_NAMING_GGUF, 3, D3(E, Im, H), 0, "%s.ffn_gate_exps.weight", gp);
            gu = nf_ab_tensor(b, NF_NAMING_GGUF, 3, D3(E, Im, H), 0, "%s.ffn_up_exps.weight", gp);
        }
        gd = nf_ab_tensor(b, NF_NAMING_GGUF, 3, D3(E, H, Im), 0, "%s.ffn_down_exps.weight", gp);
    }
    uint64_t eg = Im * H; /* elements of one expert's gate (or up): checked by its nf_ab_param */
    size_t *gate_up = malloc(2 * E * sizeof *gate_up), *down = malloc(E * sizeof *down);
    if (!gate_up || !down) {
        free(gate_up);
        free(down);
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    for (uint64_t e = 0; e < E && !b->failed; e++) {
        char name[64], hf[96];
        snprintf(prod, sizeof prod, "%s/mlp/experts/%llu/product", lp, (unsigned long long)e);
        snprintf(name, sizeof name, "mlp/experts/%llu/gate", (unsigned long long)e);
        snprintf(hf, sizeof hf, "mlp.experts.%llu.gate_proj.weight", (unsigned long long)e);
        gate_up[2 * e] = simple(b, g, 2, D2(Im, H), in, true, lp, name, hp, hf, NULL, NULL, 0);
        nf_ab_map_rows(b, gate_up[2 * e], NF_NAMING_GGUF, gg, e, 1, 0, 1);
        nf_ab_map_range(b, gate_up[2 * e], NF_NAMING_GGUF, gf, 2 * e * eg, (2 * e + 1) * eg);
        snprintf(name, sizeof name, "mlp/experts/%llu/up", (unsigned long long)e);
        snprintf(hf, sizeof hf, "mlp.experts.%llu.up_proj.weight", (unsigned long long)e);
        gate_up[2 * e + 1] = simple(b, g, 2, D2(Im, H), in, true, lp, name, hp, hf, NULL, NULL, 0);
        nf_ab_map_rows(b, gate_up[2 * e + 1], NF_NAMING_GGUF, gu, e, 1, 0, 1);
        nf_ab_map_range(b, gate_up[2 * e + 1], NF_NAMING_GGUF, gf, (2 * e + 1) * eg,
                        (2 * e + 2) * eg);
        snprintf(name, sizeof name, "mlp/experts/%llu/down", (unsigned long long)e);
        snprintf(hf, sizeof hf, "mlp.experts.%llu.down_proj.weight", (unsigned long long)e);
        down[e] = simple(b, g, 2, D2(H, Im), prod, true, lp, name, hp, hf, NULL, NULL, 0);
        nf_ab_map_rows(b, down[e], NF_NAMING_GGUF, gd, e, 1, 0, 1);
    }
    nf_ab_group(b, gate_up, 2 * E, "%s/mlp/experts/gate_up", lp);
    nf_ab_group(b, down, E, "%s/mlp/experts/down", lp);
    free(gate_up);
    free(down);
    if (g->Is) {
        snprintf(prod, sizeof prod, "%s/mlp/shared/product", lp);
        size_t m[2];
        m[0] = simple(b, g, 2, D2(g->Is, H), in, true, lp, "mlp/shared/gate", hp,
                      "mlp.shared_expert.gate_proj.weight", gp, "ffn_gate_shexp.weight", 0);
        m[1] = simple(b, g, 2, D2(g->Is, H), in, true, lp, "mlp/shared/up", hp,
                      "mlp.shared_expert.up_proj.weight", gp, "ffn_up_shexp.weight", 0);
        simple(b, g, 2, D2(H, g->Is), prod, true, lp, "mlp/shared/down", hp,
               "mlp.shared_expert.down_proj.weight", gp, "ffn_down_shexp.weight", 0);
        simple(b, g, 2, D2(1, H), in, true, lp, "mlp/shared_gate", hp,
               "mlp.shared_expert_gate.weight", gp, "ffn_gate_inp_shexp.weight", 0);
        nf_ab_group(b, m, 2, "%s/mlp/shared/gate_up", lp);
    }
}

void nf_blk_layer(nf_ab *b, const nf_geom *g, const char *lp, const char *hp, const char *gp,
                  bool full_attention, nf_mlp_kind mlp)
{
    norm(b, g, g->H, lp, "input_norm", hp, "input_layernorm.weight", gp, "attn_norm.weight");
    if (full_attention)
        attention(b, g, lp, hp, gp);
    else
        linear_attention(b, g, lp, hp, gp);
    norm(b, g, g->H, lp, "post_attention_norm", hp, "post_attention_layernorm.weight", gp,
         g->gguf_hybrid ? "post_attention_norm.weight" : "ffn_norm.weight");
    if (mlp == NF_MLP_DENSE)
        dense_mlp(b, g, lp, hp, gp);
    else if (mlp == NF_MLP_MOE)
        moe_mlp(b, g, lp, hp, gp);
}
