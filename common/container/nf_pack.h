/* nf_pack.h — build an artifact from a manifest (ninfer-pack(1) MANIFEST;
 * spec 11.4).
 *
 * Each object's `source` is resolved to the exact encoded bytes of the
 * object: byte ranges of files (raw files, safetensors tensors, objects of
 * existing artifacts, GGUF tensors) or bytes made from inline values.
 * Sources already in the object's encoding are copied (BF16 -> bf16, F32
 * -> fp32, I32 -> int32, a GGUF tensor of a gguf_* type -> that format in
 * gguf_rows_v1, identical format/layout/shape from an artifact, any bytes
 * into a resource); a GGUF source whose unpermute moves whole rows (llama
 * rope order, v-heads-tiled rows) is still a copy, row by row
 * (ninfer-import(1)); any other source, and every map or column unpermute, is
 * decoded to f32 and encoded. Objects are laid out in array order, written
 * through the crash-safe writer, and their SHA-256 digests recorded in
 * metadata.integrity (ninfer(5) Object digests).
 */
#ifndef NF_PACK_H
#define NF_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"
#include "nf_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One transcoded object's --report line (ninfer-pack(1)): RMSE and the largest
 * absolute error of the decoded values against the source's f32 values
 * (non-finite sources left out; max_abs_error is NaN unless
 * po->max_abs_error), the SNR in dB (+inf when exact), and the scales the
 * encoder chose (q groups, fp8 rows, nvfp4 blocks and divisors) with those
 * that saturated at their storage type's largest value or were stored as 0
 * for values that are not (nf_encode_stats). */
typedef struct {
    const char *id, *format;
    uint64_t elements;
    double rmse, max_abs_error, snr_db;
    uint64_t scales, scales_saturated, scales_zeroed;
} nf_pack_report;

/* Called once with NULL when writing begins (the table's start), then once
 * per transcoded object in catalog order, from the calling thread. */
typedef void (*nf_pack_report_fn)(void *ctx, const nf_pack_report *r);

typedef struct {
    nf_out_opts out;          /* where and how (nf_writer.h); out.dry_run:
                                 resolve and plan only */
    nf_pack_report_fn report; /* NULL: no report */
    void *report_ctx;
    bool max_abs_error;       /* decode each transcoded object back for the
                                 report's max_abs_error */
    bool allow_nonfinite;     /* keep NaN/Inf sources in bf16/fp32 objects */
    unsigned threads;         /* encoding threads (0: all CPUs) */
} nf_pack_opts;

/* Pack the manifest text[0..len). base_dir resolves relative source paths
 * (the manifest's directory, or "." for stdin). Sources already in the
 * object's encoding are copied; others are decoded to f32 and encoded
 * (ninfer-formats(7)) in row blocks on po->threads threads. An object whose
 * planes are all row-major (every format but nvfp4) is streamed: blocks of
 * at most 256K elements, at most threads + 2 of them encoded ahead of the
 * one being written, its first plane written as the blocks come and its
 * other planes (scales: a few percent of it) gathered and written after;
 * so memory does not grow with the object. An nvfp4 object is held whole
 * (and its largest divisor slice in f32).
 * Per transcoded object po->report gets its errors (nf_pack_report);
 * progress goes to po->out.progress; nothing is printed. An output naming
 * a source file (standard output too) is `usage` before anything is
 * written. Returns 0 or -1 with
 * diagnostics (schema/reference/size for bad sources, range for NaN/Inf
 * or out-of-range values, unsupported for unknown formats and quantized
 * GGUF tensors, io for unreadable sources). */
int nf_pack(const char *text, size_t len, const char *base_dir, const nf_pack_opts *po,
            nf_diags *d);

/* nf_pack taking ownership of the malloc'ed manifest text[0..len) (freed
 * before it returns, also on failure): the manifest is in memory once. */
int nf_pack_owned(char *text, size_t len, const char *base_dir, const nf_pack_opts *po,
                  nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
