/* nf_export.h — artifacts back out: to a GGUF file (llama.cpp's container,
 * version 3) and to a Hugging Face checkpoint directory (config.json, the
 * frontend resources, safetensors shards); what ninfer-export(1) does.
 *
 * GGUF (nf_export_gguf):
 *  - an artifact imported from a GGUF (its text component has the resource
 *    NF_GGUF_PREFIX_ROLE and provenance.converter.source.gguf.tensors, see
 *    nf_import.h) whose every tensor is unchanged (each object's digest is
 *    the one its record implies; objects without a digest are hashed) is
 *    written back byte for byte: the prefix, then each tensor's bytes at
 *    its offset (copied, rows moved back, w + 1 / -exp undone from the
 *    kept original bytes, F16 narrowed back), the padding and the file's
 *    length as recorded. Otherwise (re-quantized, edited, a tensor missing)
 *    the file is regenerated: the GGUF's key/values as they were
 *    (general.file_type dropped when a type changed), the same tensors in
 *    the same order, each in the type its object maps to, and every
 *    changed tensor is named (nf_export_result);
 *  - any other artifact of an architecture whose binder module maps GGUF
 *    names (llama, qwen2, qwen3, qwen3moe, qwen3next, qwen35, qwen35moe):
 *    the architecture's keys from the component config, tensors under
 *    llama.cpp's names and row orders (llama q/k rows permuted as
 *    llama.cpp's converter does, w + 1 norms and -exp(A_log) for the
 *    hybrids, Qwen3.5's v-head tiling), fused parents cut back into their
 *    tensors, tied heads left out, the tokenizer from the tokenizer.json
 *    resource (byte-level BPE; tokenizer.ggml.pre from a table keyed on its
 *    pre_tokenizer) or tokenizer.ggml.model "none" with {arch}.vocab_size,
 *    the chat template from chat_template.jinja (or tokenizer_config.json);
 *  - formats: gguf_* copied; bf16 -> BF16 and fp32 -> F32 (vectors, and
 *    llama.cpp's F32-only tensors, widened to F32: exact); q8_g32_fp16 ->
 *    Q8_0, q4_g64_fp16 -> Q4_0 (two blocks per group with the group's
 *    scale, nibble = code + 8), q5_g64_fp16 -> Q5_0 (code + 16), each when
 *    K % 32 == 0: the same values; everything else by the fallback (f32
 *    exact; f16, bf16, q8_0 lossy, each lossy tensor reported with its
 *    error).
 * Safetensors (nf_export_safetensors): config.json (the component's
 * config), every resource of the text component under its role as file
 * name, the tensors under their Hugging Face names (an HF import's object
 * IDs; the architecture's names otherwise), bf16/fp32/int32 copied,
 * gguf_f16 as F16, everything else decoded to BF16 (lossy, reported) or
 * F32 (opts.dtype_f32, exact); model.safetensors, or shards of at most
 * max_shard_bytes with model.safetensors.index.json.
 *
 * Both stream: one tensor at a time in memory (a small multiple of it),
 * copies by the kernel where the bytes are the artifact's. Outputs follow
 * the writer rules of nf_writer.h (a temporary beside the target,
 * published only when complete, nothing left on failure or signal). The
 * library prints nothing: warnings, lossy tensors and progress go to the
 * callbacks; problems are diagnostics (spec and man page codes): usage
 * (bad target), io (reads, writes), schema (a config missing a key the
 * architecture needs, a resource role that is not a safe file name),
 * range (a shape a GGUF cannot hold), unsupported (exit 4: an
 * architecture without GGUF names, a tokenizer kind or pre-tokenizer the
 * table does not know, a format that cannot be decoded), component-missing,
 * digest (an object's bytes against its digest).
 */
#ifndef NF_EXPORT_H
#define NF_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_source.h"
#include "nf_util.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How tensors without a lossless mapping are written to GGUF. */
typedef enum {
    NF_FALLBACK_F32 = 0, /* exact for every format */
    NF_FALLBACK_F16,     /* lossy: IEEE half, round to nearest even */
    NF_FALLBACK_BF16,    /* lossy: bfloat16, round to nearest even */
    NF_FALLBACK_Q8_0,    /* lossy: ggml's quantize_row_q8_0_ref */
} nf_export_fallback;

/* One lossy tensor: its name, the format it came from, what it became and
 * its error against the decoded values (as ninfer-pack --report: RMSE, SNR
 * in dB (INFINITY when exact), the largest absolute error). */
typedef struct {
    const char *tensor, *from, *to;
    double rmse, snr_db, max_abs;
} nf_export_lossy;

typedef struct {
    nf_artifact *a;                 /* the artifact (a file: streams are refused) */
    const char *out;                /* GGUF: the output file (NULL or "-": standard
                                       output); safetensors: the directory */
    bool force;                     /* replace an existing output */
    bool sync;                      /* fdatasync before publishing */
    const char *const *inputs;      /* the artifact's files (an output naming one is
                                       refused, nf_writer.h) */
    size_t n_inputs;
    const char *const *components;  /* --component: NULL/0 = text (with mtp where the
                                       format carries it) */
    size_t n_components;
    bool drop;                      /* skip declared components the format cannot
                                       carry (else `unsupported` naming them) */
    nf_export_fallback fallback;    /* GGUF */
    bool no_tokenizer;              /* GGUF: tokenizer.ggml.model "none" */
    bool dtype_f32;                 /* safetensors: decode to F32 (else BF16) */
    bool verify;                    /* hash every object first and check it against
                                       metadata.integrity (`digest`, nothing written):
                                       copies are otherwise made by the kernel, and a
                                       GGUF import's unchanged tensors are told by the
                                       digests the artifact carries */
    uint64_t max_shard_bytes;       /* safetensors: 0 = 5 GB (Hugging Face's default) */
    nf_progress_fn progress;        /* bytes done of total; may be NULL */
    void *progress_ctx;
    void (*warn)(void *ctx, const char *msg); /* may be NULL */
    void *warn_ctx;
    void (*lossy)(void *ctx, const nf_export_lossy *l); /* may be NULL */
    void *lossy_ctx;
} nf_export_opts;

typedef struct {
    bool identical;       /* GGUF: the source GGUF byte for byte */
    bool from_gguf;       /* the artifact was imported from a GGUF */
    uint64_t tensors;     /* tensors written */
    uint64_t bytes;       /* bytes written (every file) */
    uint64_t copied;      /* tensor bytes copied as they are */
    uint64_t lossy;       /* tensors written with a lossy fallback */
    char **changed;       /* GGUF-origin, regenerated: tensors whose bytes or type
                             differ from the source's (n_changed) */
    size_t n_changed;
    char **files;         /* safetensors: the files written, relative to the directory */
    size_t n_files;
} nf_export_result;

void nf_export_result_free(nf_export_result *r);

/* Write the GGUF of o->a to o->out (see above). Returns 0, or -1 with
 * diagnostics; on -1 nothing is left at o->out (a stream on standard output
 * is cut short). */
int nf_export_gguf(const nf_export_opts *o, nf_export_result *r, nf_diags *d);

/* Write the Hugging Face checkpoint directory of o->a at o->out: an absent
 * or empty directory (any other only with o->force, which replaces it),
 * built as a temporary directory beside it and renamed into place.
 * Returns 0, or -1 with diagnostics and nothing written. */
int nf_export_safetensors(const nf_export_opts *o, nf_export_result *r, nf_diags *d);

/* ---- the inverse transforms, shared with the importer ---------------------- */

/* Undo a source map (ninfer-pack(1) MANIFEST) in f32, as llama.cpp's converter
 * computes the stored values: minus-one -> v + 1, log-neg -> -expf(v). */
void nf_export_unmap(nf_value_map map, float *v, uint64_t n);

/* n f32 values as ggml type F32, F16 or BF16 (round to nearest even) into
 * out (4 or 2 bytes each, little-endian). False for another type. */
bool nf_export_to_ggml_float(uint32_t ggml_type, const float *v, uint64_t n, void *out);

/* Do the bytes raw[0..) of n elements of ggml type F32, F16 or BF16, mapped
 * by map (nf_values: minus-one x - 1, log-neg log(-x)) into an object of
 * format obj (fp32 or bf16), come back bit for bit through
 * nf_export_unmap and nf_export_to_ggml_float? (What decides whether an
 * import keeps a tensor's original bytes.) False when not, or for another
 * type or format. */
bool nf_export_map_exact(uint32_t ggml_type, nf_value_map map, nf_format obj, const void *raw,
                         uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
