/* nf_device.h — the device backend seen from C (DESIGN 11). Implemented in
 * cuda/ by nvcc when the CUDA toolkit is present, or by a stub that reports
 * "built without CUDA" (exit 4) when it is not (`make CUDA=0` forces the
 * stub). Nothing here prints: problems are diagnostics (nf_diag.h) for the
 * caller to print.
 */
#ifndef NF_DEVICE_H
#define NF_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "nf_artifact.h"
#include "nf_codec.h"
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when this build has the CUDA backend (not whether a GPU exists). */
bool nf_device_built(void);

/* Find and initialise a device. Returns 0, or NF_EXIT_UNSUPPORTED (4)
 * with one `unsupported` diagnostic (no file, no pointer) saying why
 * ("built without CUDA (rebuild where nvcc is installed)", "no CUDA device
 * (...)", a compute capability below 9.0). */
int nf_device_init(nf_diags *d);

/* Peak bandwidth of the device in GB/s: a device-to-device copy of a
 * buffer larger than L2, counted as 2 x size per second (DESIGN 11). */
double nf_device_peak_gbps(void);

/* Time op ("gemv" or "decode") over the encoded object obj on the device:
 * warmup untimed runs, then iters timed with events over weights rotated
 * through copies that exceed 4x L2 (DESIGN 11); samples_s[0..iters)
 * receives each timed iteration's seconds per launch, unsorted, for the
 * caller to report. Problems are diagnostics whose file is `name` (the
 * case): `unsupported` (no device, an op or format without a kernel), `io`
 * (out of memory, a CUDA error). Returns an exit status (0, 3, 4). */
int nf_device_bench_samples(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                            unsigned warmup, unsigned iters, const char *name,
                            double *samples_s, nf_diags *d);

/* ---- the load path and the kernels, for ninfer-run ---------------------- */

/* One parent object resident in device memory (opaque). */
typedef struct nf_dbuf nf_dbuf;

typedef struct {
    uint64_t bytes;       /* payload bytes read from the artifact files */
    double read_s;        /* wall time from the first read to the last copy done */
    unsigned parents;     /* parents loaded (each once) */
} nf_load_stats;

/* Materialize parents on the device (DESIGN 11, spec 11.2): for each object
 * index objs[i] of a's catalog, read its encoded bytes with large aligned
 * range reads across parts into pinned staging buffers and copy them to a
 * device allocation, copies overlapping reads (two CUDA streams, double
 * buffering). out[i] receives the buffer. Returns 0, or -1 with
 * diagnostics (read errors name the file; device errors are `io`). */
int nf_device_load(nf_artifact *a, const size_t *objs, size_t n, nf_dbuf **out,
                   nf_load_stats *st, nf_diags *d);
void nf_device_free(nf_dbuf *b);

/* y = W x on the device for the row range [r0, r1) of the resident object
 * w described by t (x: t->cols bf16 words on the host; y: r1-r0 floats on
 * the host). The kernel for t's format/layout; *ms receives its time in
 * milliseconds (CUDA events, median of `iters` launches after one warm-up).
 * Returns 0 or -1 with diagnostics (`unsupported` for a format without a
 * kernel). */
int nf_device_gemv(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                   const uint16_t *x, float *y, unsigned iters, double *ms, nf_diags *d);

/* Decode rows [r0, r1) of the resident object to bf16 on the device and
 * copy them to out (host, (r1-r0)*cols words): for checking decode kernels
 * against nf_decode_rows_bf16. Returns 0 or -1 with diagnostics. */
int nf_device_decode_bf16(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                          uint16_t *out, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
