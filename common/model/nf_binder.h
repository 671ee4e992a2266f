/* nf_binder.h — the architecture binder (ninfer-bind(1); spec 7, 8,
 * 11.3, 12.6).
 *
 * From a component's config alone (a component with a `target` takes its
 * geometry from the target's config) the binder derives every logical
 * parameter of the architecture: its full name ("text/layers/3/attention/
 * query"), its shape, whether it is a projection with a use (and that use's
 * input name and whether it needs an activation_policy), and where its
 * values live in a Hugging Face checkpoint and (for the families llama.cpp
 * exports as plain tensors) in a GGUF file. Importers use this to write
 * manifests; `ninfer-bind --check` uses it to check an artifact's bindings
 * and uses against the architecture.
 *
 * Known architectures (config.architectures[0]), one module each under
 * common/model/arch/: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
 * Qwen3MoeForCausalLM, Qwen3NextForCausalLM, Qwen3_5ForCausalLM,
 * Qwen3_5MoeForCausalLM, and the mtp component's Qwen3NextMTP and
 * Qwen3_5MTP (target: the text component; Qwen3_5MTP targets Qwen3.5 or
 * Qwen3.5-MoE). The binder reads normalized configs only
 * (nf_import_normalize_config turns wrapper configs into these).
 *
 * Units: shapes and element counts in elements (C order, spec 7.2); element
 * ranges [begin, end) as spec 7.1's part ranges. Every product and sum is
 * overflow-checked; configs whose sizes leave U64 are `range` errors, and
 * configs that would derive more than NF_ARCH_MAX_PARAMS parameters are
 * refused (`range`) before any list is built.
 *
 * Diagnostics point into the catalog ("/components/text/config/hidden_size",
 * "/bindings/text~1head", "/uses/3") with the codes of ninfer-verify(1)
 * DIAGNOSTICS: schema (a config field missing or of the wrong type), range,
 * unsupported (an unknown architecture: exit 4), coverage, unknown-parameter,
 * auxiliary, component-missing, target.
 */
#ifndef NF_BINDER_H
#define NF_BINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_catalog.h"
#include "nf_codec.h"
#include "nf_diag.h"
#include "nf_layout.h"
#include "nf_source.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NF_ARCH_MAX_PARAMS (16u << 20) /* derived parameters per component, cap */

/* Checkpoint naming schemes a parameter can be mapped to. */
typedef enum {
    NF_NAMING_HF = 0,  /* Hugging Face safetensors names (model.layers.0....) */
    NF_NAMING_GGUF,    /* llama.cpp GGUF names (blk.0.attn_q.weight) */
    NF_NAMING_COUNT_
} nf_naming;

/* A checkpoint tensor the architecture expects, with its shape in C order
 * (a GGUF tensor's ne[] reversed). */
typedef struct {
    char *name;
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    uint64_t elements;
    uint64_t unpermute_heads; /* GGUF: undo llama.cpp's q/k rope row order with
                                 this many heads (ninfer-pack(1) "llama-rope");
                                 0: none */
    nf_value_map map;         /* GGUF: the stored values are a function of the
                                 logical ones; the source's "map" undoes it
                                 (minus-one: norms stored w + 1; log-neg: ssm_a =
                                 -exp(A_log)), ninfer-import(1) */
    uint64_t tiled_k, tiled_v, tiled_hd; /* GGUF qwen35*: the columns are v-head
                                 tiled (Hk, Hv, Dv; ninfer-import(1)): undone
                                 by a column unpermute (F32/F16/BF16) or by the
                                 use's input_columns (block formats); 0: not
                                 tiled */
} nf_src_tensor;

/* An element range [begin, end) of a checkpoint tensor. */
typedef struct {
    uint64_t begin, end;
} nf_erange;

/* Where a parameter's values come from in one naming: the element ranges of
 * one checkpoint tensor, joined in order (spec 7.1: the parameter's C-order
 * elements). n_ranges == 0 means the whole tensor (possibly a C-order
 * reshape, e.g. conv1d [C,1,k] -> [C,k]). tensor == SIZE_MAX: the
 * parameter has no tensor of its own in this naming (see nf_param.shares). */
typedef struct {
    size_t tensor;      /* index into nf_arch_plan.tensors[naming] */
    nf_erange *ranges;
    size_t n_ranges;
} nf_src_map;

/* One logical parameter of the architecture (as ninfer-bind(1) lists it). */
typedef struct {
    char *name;             /* full name with its component prefix */
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    uint64_t elements;
    char *input;            /* the use's full input name; NULL: no use (norms,
                               biases, other vectors) */
    bool needs_policy;      /* the use needs activation_policy (every projection
                               except the embedding's lookup) */
    nf_format want_format;  /* NF_FMT_INT32 for token-id tables; else
                               NF_FMT_UNKNOWN (any format) */
    char *shares;           /* non-NULL: binds the same objects as this other
                               parameter (tied head -> embedding; mtp/embedding ->
                               text/embedding; mtp/head -> text/head) */
    nf_src_map src[NF_NAMING_COUNT_];
    size_t group;           /* fuse group (index into groups) or SIZE_MAX */
} nf_param;

/* Parameters that `--fuse` stacks row-wise into one parent, in this order
 * (spec 12.1/12.3: query, key, gate, value; MLP gate, up; expert banks).
 * Every member is rank 2 with the same K; a group never mixes components. */
typedef struct {
    char *id;               /* a suggested object ID for the parent */
    size_t *members;        /* parameter indices */
    size_t n_members;
} nf_fuse_group;

/* Everything derived for one component. */
typedef struct nf_arch_plan {
    char *component;        /* component ID: the prefix of every name */
    char *architecture;     /* config.architectures[0] */
    char *gguf_arch;        /* llama.cpp's general.architecture for this family,
                               or NULL when GGUF names are not mapped */
    nf_param *params;
    size_t n_params;
    nf_src_tensor *tensors[NF_NAMING_COUNT_];
    size_t n_tensors[NF_NAMING_COUNT_];
    nf_fuse_group *groups;
    size_t n_groups;
    size_t *by_name;        /* parameter indices sorted by name (lookups) */
} nf_arch_plan;

/* Is this architecture name known (a module exists)? */
bool nf_arch_known(const char *architecture);

/* The architecture an mtp-style component must target: "Qwen3NextMTP" ->
 * "Qwen3NextForCausalLM", "Qwen3_5MTP" -> "Qwen3_5ForCausalLM" (or
 * Qwen3_5MoeForCausalLM, which it also accepts); NULL for architectures
 * that take no target. */
const char *nf_arch_target_architecture(const char *architecture);

/* Derive the plan of component `component` from its config (JSON text
 * config_raw[0..config_len)); target_config_raw is the target component's
 * config (required for components whose architecture takes a target, e.g.
 * mtp; NULL otherwise) and target_component its ID (names of shared
 * parameters such as "text/embedding" use it). has_proposal/proposal_rows
 * describe text.proposal (spec 9.2: proposal/head, proposal/token_ids).
 * Diagnostics point at "/components/<component>/config/..." (the target's
 * config for geometry taken from it). Returns 0 and fills *out, or -1 with
 * diagnostics: schema/range for bad configs, unsupported (exit 4) for an
 * unknown architecture or a config feature the module does not implement
 * (e.g. Llama with attention_bias). Free with nf_arch_plan_free. */
typedef struct {
    const char *component;
    const char *config_raw;
    size_t config_len;
    const char *target_component;
    const char *target_config_raw;
    size_t target_config_len;
    bool has_proposal, proposal_indexed;
    uint64_t proposal_rows;
    unsigned gguf_forms;    /* NF_GGUF_FORM_* bits: which of llama.cpp's
                               alternative tensor layouts a GGUF uses (the
                               importer looks; GGUF names only) */
} nf_arch_input;

/* Alternative GGUF tensor layouts (llama.cpp's qwen3next and fused-expert
 * tensor names). */
enum {
    NF_GGUF_FORM_SSM_IN = 1,       /* qwen3next: legacy blk.i.ssm_in (HF
                                      in_proj_qkvz verbatim), no attn_qkv/attn_gate */
    NF_GGUF_FORM_GATE_UP_EXPS = 2, /* blk.i.ffn_gate_up_exps ([E, 2*Fe, X]: per
                                      expert gate rows then up rows) */
};
int nf_arch_derive(const nf_arch_input *in, nf_arch_plan *out, nf_diags *d);
void nf_arch_plan_free(nf_arch_plan *p);

/* The parameter with this full name, or NULL. O(log n). */
const nf_param *nf_arch_find(const nf_arch_plan *p, const char *name);

/* Sum of the elements of every parameter of the plan that has its own
 * values (shares == NULL). False on overflow. */
bool nf_arch_total_elements(const nf_arch_plan *p, uint64_t *out);

/* ---- checks over an artifact (spec 11.3, 12.6; ninfer-bind(1) --check) ---- */

typedef struct {
    /* Components selected (spec 4.2, 12.6); NULL/0: every declared one.
     * Selecting a component selects its target too (mtp -> text). */
    const char *const *components;
    size_t n_components;
} nf_bind_opts;

/* Run the binder checks on catalog c: for every selected component, its
 * architecture is known (else `unsupported`, exit 4; generic checks still
 * run), its target exists and is the component its architecture needs
 * (`target`), parameters that a target's config decides agree with it
 * (`target`); every derived parameter is bound with the right element count
 * and, for whole-object bindings, the right shape (`coverage`); every
 * projection has its use with the architecture's input and, where needed,
 * an activation_policy (`coverage`; a use on another input or a use of an
 * unknown parameter: `unknown-parameter`); no binding under a selected
 * component's prefix is unknown to it (`unknown-parameter`); shared
 * parameters (tied head, mtp/embedding, mtp/head) bind the same objects as
 * the parameter they share (`target` across components, `coverage` within
 * one); auxiliaries of spec 8 have the required form (`auxiliary`): an
 * activation_input_divisor is one fp32 element, finite and > 0;
 * hadamard_signs is bf16 [K] (K the projection's input width, a multiple of
 * 1024) of +-1 values; input_columns is int32 [K], a permutation of
 * 0..K-1, on a use whose parameter's parts are all gguf_* formats. Values
 * are read through `a` (range reads); with a == NULL (a stream) value checks
 * are skipped. Components asked for but not declared are `component-missing`.
 * Returns nf_diags_exit of what it found (0 when all is well). */
int nf_binder_check(const nf_catalog *c, nf_artifact *a, const nf_bind_opts *o, nf_diags *d);

/* The derived plans of every selected component of c (for listing, planning
 * and extraction). *plans gets an array of *n plans (components whose
 * architecture is unknown are left out, with an `unsupported` diagnostic).
 * Returns 0, or -1 when a selected component is missing or a config is
 * broken. Free with nf_arch_plans_free. */
int nf_binder_plans(const nf_catalog *c, const nf_bind_opts *o, nf_arch_plan **plans,
                    size_t *n, nf_diags *d);
void nf_arch_plans_free(nf_arch_plan *plans, size_t n);

/* ---- views and plans (ninfer-formats(7), spec 7.3, 11.2) ------------------ */

/* nf_view_spans (nf_layout.h: the zero-copy views of ninfer-formats(7)) of a
 * part [begin, end) of an object with encoding te: the byte intervals it
 * needs, one per plane, and whether it is a view. Returns the number of
 * spans, 0 for a bad range. */
unsigned nf_part_spans(const nf_tensor_enc *te, uint64_t begin, uint64_t end,
                       nf_plane_span *out, bool *view);

/* ---- extraction (ninfer-bind --extract; spec 7.1, 11.2) ------------------- */

typedef enum {
    NF_EXTRACT_F32,  /* decoded values as little-endian binary32 */
    NF_EXTRACT_BF16, /* decoded values rounded to bf16 (bf16 objects: their words) */
    NF_EXTRACT_I32,  /* the int32 words of int32 objects (others: unsupported) */
} nf_extract_dtype;

/* Decode the logical elements of binding b (whole object, or its parts
 * joined in order, spec 7.1) of the file artifact a and hand them to sink
 * in order, in chunks (sink returns 0 to go on; non-zero stops with that
 * result). Objects are read with range reads (a part's object once, however
 * many parts use it in a row) and decoded with nf_codec (any format).
 * Returns 0, the sink's non-zero result, or -1 with diagnostics:
 * unsupported (an unknown format/layout; i32 from a non-int32 object),
 * reference (an unresolved object), io/part-missing/length (reads), and
 * codes for a failing decode. */
typedef int (*nf_extract_sink)(void *ctx, const void *buf, size_t bytes);
int nf_binding_extract(nf_artifact *a, const nf_binding *b, nf_extract_dtype dt,
                       nf_extract_sink sink, void *ctx, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
