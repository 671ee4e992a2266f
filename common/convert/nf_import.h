/* nf_import.h — a checkpoint to a manifest (ninfer-import(1); spec 4.2, 5.3,
 * 7, 8, 9.1, 10): what ninfer-import prints and ninfer-pack packs unedited.
 *
 * Checkpoints:
 *  - a Hugging Face directory: config.json, and model.safetensors or shards
 *    listed by model.safetensors.index.json (every shard must exist: a
 *    missing one is `io`, exit 3, naming it); frontend files present in the
 *    directory (tokenizer.json, tokenizer_config.json, chat_template.jinja,
 *    chat_template.json, generation_config.json, special_tokens_map.json,
 *    added_tokens.json, vocab.json, merges.txt, tokenizer.model, vocab.txt)
 *    become resources of the text component under their file names (spec
 *    9.1); empty files are skipped with a warning;
 *  - one .safetensors file with a config (opts.config, else config.json
 *    beside it), frontend files taken from its directory;
 *  - a GGUF file (v2/v3): F32, F16, BF16 and first-wave block-quantized
 *    tensors (ninfer-formats(7)) of the llama, qwen2, qwen3, qwen3moe,
 *    qwen3next, qwen35 and qwen35moe architectures, mapped to the logical
 *    names with the binder's GGUF naming, undoing what
 *    llama.cpp's converter did (ninfer-import(1)): llama q/k rows
 *    carry "unpermute" llama-rope sources; the hybrids' w + 1 norms and
 *    ssm_a carry "map" minus-one / log-neg; Qwen3.5's tiled value heads are
 *    bound head by head (parts) and an F32/F16/BF16 ssm_out carries a
 *    v-heads-tiled column unpermute; expert banks [E, N, K] are one object
 *    [E*N, K] each. Its config keys become a Hugging Face-style config
 *    (hybrids: block_count less nextn_predict_layers; an MTP block
 *    blk.L.nextn.* adds the mtp component; the alternative layouts, legacy
 *    ssm_in or fused ffn_gate_up_exps, are detected). Resources of the
 *    text component, each a byte range of the GGUF itself (no file is
 *    written beside the manifest): NF_GGUF_PREFIX_ROLE, the
 *    GGUF's bytes [0, data offset) (header, every key/value, the tensor
 *    infos: where tokenizer keys are read from, and what ninfer-export(1)
 *    writes back), tokenizer.chat_template as chat_template.jinja and
 *    tokenizer.huggingface.json as tokenizer.json (a value that is not
 *    UTF-8 is `utf8` naming the key; one that is not a string, or empty,
 *    is dropped with a warning). Every tensor of the GGUF becomes an
 *    object, also those no parameter binds (rope_freqs, ...), and
 *    provenance.converter.source.gguf.tensors records, per tensor in the
 *    GGUF's order, its name, the object holding it and the SHA-256 of its
 *    bytes, with the transform the import applied (nf_export.h reads
 *    them back); the original bytes of a tensor whose transform has no
 *    bit-exact inverse (log-neg; minus-one where w + 1 does not give the
 *    stored value back) are kept as an object of their own
 *    (NF_GGUF_ORIGINAL_PREFIX + name). A GGUF
 *    without tensors imports as resources only (empty bindings and uses).
 *    Later-wave block types (reserved gguf_* names) and non-weight types
 *    are `unsupported` (exit 4), once per type, naming it (a tensor of
 *    such a type that no parameter binds is left out with a warning).
 *
 * The manifest: components.text.config is the checkpoint's config
 * normalised by nf_import_normalize_config (below), every other value's
 * text kept; a checkpoint with mtp.* tensors of a hybrid family adds the
 * mtp component ({"architectures": ["Qwen3NextMTP"|"Qwen3_5MTP"]}, target
 * text). Objects:
 * one per checkpoint tensor used (ID = the tensor's name), in first-use
 * order, fp32 for F32, bf16 for BF16, opts.f16_as for F16 (the packer
 * converts; by default GGUF matrices and banks keep their bytes as
 * gguf_f16), a GGUF block type as its gguf_* format in gguf_rows_v1 (the
 * bytes as they are; vectors and mapped tensors decode to fp32), expert
 * banks [E*N, K]; a block-quantized ssm_out with v-head tiled columns adds
 * one shared int32 input_columns object on its uses (ninfer-import(1));
 * provenance.converter.source.gguf keeps the file's quantization keys and
 * lists row_copies / transformed objects; with opts.fuse, every fuse group
 * of the binder becomes one parent (ID = the group's ID) whose source is a
 * "concat" of row ranges,
 * and its members bind their row ranges with parts — never mixing
 * components (spec 5.3). Bindings: every logical parameter, a whole object
 * when the object's shape is the parameter's, parts otherwise; shared
 * parameters (tied head, mtp embedding/head) bind the same objects as the
 * parameter they share (spec 12.4). Uses: one per parameter with an input,
 * activation_policy A16Only for projections (the embedding's without).
 * provenance.converter records tool, version, options and every source
 * file with its size and SHA-256; metadata.name is the GGUF's general.name.
 * Source paths are absolute.
 *
 * Tensors of the checkpoint that no parameter uses are reported as one
 * warning line (warnings go to the `warn` callback, not to diagnostics).
 */
#ifndef NF_IMPORT_H
#define NF_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include "nf_diag.h"
#include "nf_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The resource role of a GGUF import's bytes [0, data offset). */
#define NF_GGUF_PREFIX_ROLE "gguf.prefix"
/* The ID prefix of the objects that keep a GGUF tensor's original bytes. */
#define NF_GGUF_ORIGINAL_PREFIX "gguf.original/"

typedef struct {
    const char *checkpoint;    /* directory, .safetensors or .gguf path */
    const char *config;        /* --config FILE, or NULL */
    bool fuse;                 /* build the fused parents of spec 12.1/12.3 */
    nf_format f16_as;          /* NF_FMT_UNKNOWN (default): GGUF F16 matrices and
                                  banks gguf_f16, other F16 tensors fp32;
                                  NF_FMT_FP32 (lossless) or NF_FMT_BF16: all */
    bool force;                /* replace an existing output file */
    const char *output;        /* the manifest's output path (NULL: standard output):
                                  a file the import reads that is the output (by
                                  device and inode: a symlink or hard link too;
                                  standard output when it is a regular file)
                                  is `usage` before anything is hashed or written
                                  (exit 2), with or without force; then an
                                  existing output without force is `io`
                                  (nf_output_file_check) */
    void (*warn)(void *ctx, const char *msg); /* may be NULL */
    void *warn_ctx;
} nf_import_opts;

/* Import the checkpoint and return the manifest as pretty JSON text (a
 * malloc'ed, NUL-terminated string; *len its length). NULL with
 * diagnostics: usage (o->output names an input), utf8 (a GGUF string that
 * is not UTF-8), io (unreadable files, a missing shard: exit 3), json/schema
 * (bad config or index), coverage (a parameter's tensor missing, or a
 * tensor whose shape is not the one the config implies), unsupported (an
 * unknown architecture, a dtype or GGUF tensor type import cannot take,
 * exit 4), and the binder's config diagnostics. Diagnostics about a file
 * name that file. */
char *nf_import(const nf_import_opts *o, size_t *len, nf_diags *d);

/* Source adaptation of a Hugging Face config.json (spec 4.2, ninfer-import(1)):
 * the text component's config, as compact JSON text (malloc'ed, NUL-
 * terminated), from text[0..len):
 *  - a wrapper with a "text_config" object: its members, with
 *    architectures "<X>ForConditionalGeneration" -> "<X>ForCausalLM" and
 *    tie_word_embeddings taken from the top when the text part lacks them;
 *  - a flat wrapper ("<X>ForConditionalGeneration" with a "*_text"
 *    model_type): the same members with the causal-LM class name;
 *  - MoE configs (num_experts) get the Hugging Face defaults
 *    decoder_sparse_step 1 and mlp_only_layers [] when absent;
 *  - anything else is returned as written.
 * Every other member keeps its text. NULL with diagnostics naming `file`
 * (json for bad JSON, schema for a non-object). */
char *nf_import_normalize_config(const char *text, size_t len, const char *file, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
