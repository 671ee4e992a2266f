/* nf_arch.h — the binder's internal interface between nf_binder.c and the
 * architecture modules under common/model/arch/ (not installed).
 *
 * A module is one function that reads its config through an nf_ab builder
 * and adds, in a fixed order, the architecture's logical parameters (those
 * ninfer-bind(1) lists) with their checkpoint tensors and fuse groups. The
 * shared blocks (embedding, norms, attention, dense MLP, MoE, linear
 * attention) live in nf_arch_blocks.c so every family writes the same names
 * the same way.
 */
#ifndef NF_ARCH_H
#define NF_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_binder.h"
#include "nf_json.h"

/* The builder a module fills. */
typedef struct nf_ab {
    nf_arch_plan *p;
    nf_diags *d;
    const char *comp;      /* component ID (name prefix) */
    const char *target;    /* target component ID, or NULL */
    nf_jdoc *doc;          /* the config that gives the geometry */
    nf_jval *cfg;
    char *cfg_ptr;         /* its JSON Pointer: "/components/text/config" */
    nf_jdoc *own_doc;      /* the component's own config (mtp) */
    nf_jval *own_cfg;
    char *own_ptr;
    bool failed;           /* a diagnostic was added; stop adding */
    size_t cap_params, cap_tensors[NF_NAMING_COUNT_], cap_groups;
    const nf_arch_input *in;
} nf_ab;

/* Add a diagnostic at cfg_ptr/key (key NULL: the config itself) and mark
 * the build failed. */
void nf_ab_fail(nf_ab *b, nf_code code, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Read an integer config field into *out: a JSON integer >= min (min 0 or
 * 1). Absent: *out = def when !required, else a `schema` failure. Returns
 * false on failure (diagnostic added). */
bool nf_ab_u64(nf_ab *b, const char *key, bool required, uint64_t def, uint64_t min,
               uint64_t *out);
/* A boolean field (absent: def; null: def; another type: `schema`). */
bool nf_ab_bool(nf_ab *b, const char *key, bool def, bool *out);
/* The member (NULL when absent). */
nf_jval *nf_ab_get(nf_ab *b, const char *key);

/* Add a parameter named "<comp>/<suffix>" (suffix printf-formatted) of the
 * given shape; input_suffix, when not NULL, names its use's input
 * "<comp>/<input_suffix>"; policy: the use needs an activation_policy.
 * Returns its index (SIZE_MAX after a failure). */
size_t nf_ab_param(nf_ab *b, unsigned rank, const uint64_t *dims, const char *input_suffix,
                   bool policy, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Add (or find) a checkpoint tensor of naming n, with its expected shape.
 * Returns its index (SIZE_MAX after a failure). */
size_t nf_ab_tensor(nf_ab *b, nf_naming n, unsigned rank, const uint64_t *dims,
                    uint64_t unpermute_heads, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Map parameter `param` to tensor `t` of naming n: the whole tensor. */
void nf_ab_map_whole(nf_ab *b, size_t param, nf_naming n, size_t t);
/* ... or blocks of its outer rows: for k in [0, count), rows [first +
 * k*stride, first + k*stride + len) (a row is one index of dims[0], so a
 * rank-3 expert bank's rows are experts). */
void nf_ab_map_rows(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t first,
                    uint64_t len, uint64_t stride, uint64_t count);

/* ... or one element range [begin, end) of it. */
void nf_ab_map_range(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t begin,
                     uint64_t end);
/* ... or, for a tensor whose rows [first, first + hv*hd) hold hv heads of hd
 * rows in Qwen3.5's tiled order (ninfer-pack(1) v-heads-tiled: logical head
 * g*r + j is stored as head j*hk + g, r = hv/hk), rows [0, lead) (lead <=
 * first; 0: none) then the heads in logical order, each its block of rows. */
void nf_ab_map_tiled(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t lead,
                     uint64_t first, uint64_t hk, uint64_t hv, uint64_t hd);
/* Tensor t stores map^-1 of the logical values (nf_src_tensor.map). */
void nf_ab_tensor_map(nf_ab *b, size_t t, nf_naming n, nf_value_map map);
/* Tensor t's columns are v-head tiled (nf_src_tensor.tiled_*); nothing when
 * hk == hv (the tiling is the identity). */
void nf_ab_tensor_tiled_columns(nf_ab *b, size_t t, nf_naming n, uint64_t hk, uint64_t hv,
                                uint64_t hd);

/* The parameter `param` shares the binding of the parameter named
 * "<comp>/<suffix>" (or a full name when full is true). */
void nf_ab_share(nf_ab *b, size_t param, bool full, const char *name);

/* A fuse group of n parameters (indices; SIZE_MAX entries make the group
 * void) with a suggested parent ID "<comp>/<suffix>". */
void nf_ab_group(nf_ab *b, const size_t *members, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- shared geometry and blocks (nf_arch_blocks.c) ------------------------ */

typedef enum { NF_MLP_NONE, NF_MLP_DENSE, NF_MLP_MOE } nf_mlp_kind;

typedef struct {
    uint64_t H, V, L, Nq, Nkv, D;
    uint64_t I;              /* dense MLP width (read when some layer needs it) */
    bool tied;
    /* attention */
    bool qkv_bias;           /* Qwen2 */
    bool qk_norm;            /* Qwen3, Qwen3-MoE, hybrid */
    bool gated;              /* hybrid: q_proj holds query and gate per head */
    bool gguf;               /* map GGUF names too */
    bool unpermute;          /* GGUF q/k rows in llama.cpp's rope order (llama) */
    /* MoE */
    uint64_t E, Im, Is;      /* experts, expert width, shared expert width (0: none) */
    uint64_t sparse_step;
    uint64_t *mlp_only;      /* mlp_only_layers: layer indices */
    size_t n_mlp_only;
    /* hybrid */
    uint64_t Hk, Hv, Dk, Dv, kernel;
    bool split_in_proj;      /* Qwen3.5: in_proj_qkv / _z / _b / _a */
    bool *full_attn;         /* per layer (L entries), NULL: all full attention */
    /* GGUF naming of the hybrids (qwen3next, qwen35, qwen35moe: llama.cpp's
       tensor names) */
    bool gguf_hybrid;        /* +1 norms, post_attention_norm, ssm_* tensors */
    bool gguf_tiled;         /* qwen35*: v heads tiled (the identity when Hk == Hv) */
    unsigned gguf_forms;     /* NF_GGUF_FORM_* of the file */
} nf_geom;

/* Read H, V, L, Nq, Nkv, D and tie_word_embeddings (D is head_dim when
 * present, else H/Nq). Caps L so the derived list stays under
 * NF_ARCH_MAX_PARAMS. */
bool nf_geom_dense(nf_ab *b, nf_geom *g);
/* Read num_experts, moe_intermediate_size, decoder_sparse_step,
 * mlp_only_layers and (shared) shared_expert_intermediate_size. */
bool nf_geom_moe(nf_ab *b, nf_geom *g, bool shared);
/* Read the hybrid keys: layer kinds (layer_types or full_attention_interval)
 * and the linear-attention geometry when some layer is linear. */
bool nf_geom_hybrid(nf_ab *b, nf_geom *g);
/* The hybrids' GGUF naming (g->gguf and the gguf_* fields) for llama.cpp
 * architecture arch ("qwen3next", "qwen35", "qwen35moe"), with the file's
 * forms from the builder's input. */
void nf_geom_gguf_hybrid(nf_ab *b, nf_geom *g, const char *arch);
/* Is layer i an MoE layer: experts (E > 0), i not in mlp_only_layers and
 * (i + 1) % decoder_sparse_step == 0? */
bool nf_geom_is_moe(const nf_geom *g, uint64_t i);
void nf_geom_free(nf_geom *g);

/* embedding (first) and final_norm + head (last). */
void nf_blk_embedding(nf_ab *b, const nf_geom *g);
void nf_blk_final(nf_ab *b, const nf_geom *g);
/* One decoder layer i: norms, attention (full or linear), MLP of the kind
 * given. lp: logical prefix ("layers/3"), hp: Hugging Face prefix
 * ("model.layers.3"), gp: GGUF prefix ("blk.3") or NULL. */
void nf_blk_layer(nf_ab *b, const nf_geom *g, const char *lp, const char *hp, const char *gp,
                  bool full_attention, nf_mlp_kind mlp);

/* ---- the modules ---------------------------------------------------------- */

int nf_arch_llama(nf_ab *b);
int nf_arch_qwen2(nf_ab *b);
int nf_arch_qwen3(nf_ab *b);
int nf_arch_qwen3_moe(nf_ab *b);
int nf_arch_qwen3_next(nf_ab *b);
int nf_arch_qwen3_5(nf_ab *b);
int nf_arch_qwen3_5_moe(nf_ab *b);
int nf_arch_mtp(nf_ab *b);   /* Qwen3NextMTP, Qwen3_5MTP */

#endif
