/* nf_device.h — the device backend seen from C (ninfer-run(1)). Implemented in
 * cuda/ by nvcc when the CUDA toolkit is present, or by a stub that reports
 * "built without CUDA" (exit 4) when it is not (`make CUDA=0` forces the
 * stub). Nothing here prints: problems are diagnostics (nf_diag.h) for the
 * caller to print.
 *
 * Timing rules (ninfer-bench(1), ninfer-run(1)): no figure is taken from
 * L2. Before each timed launch a read pass over a buffer of 2x the L2 size
 * (outside the timing events) leaves nothing of the weights cached, and
 * the benchmark also rotates through copies of the weights; the device
 * is warmed up by time (>= 150 ms of the case's own launches) before its
 * first timed run.
 */
#ifndef NF_DEVICE_H
#define NF_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "nf_artifact.h"
#include "nf_codec.h"
#include "nf_diag.h"
#include "nf_load.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when this build has the CUDA backend (not whether a GPU exists). */
bool nf_device_built(void);

/* Find and initialise a device. Returns 0, or NF_EXIT_UNSUPPORTED (4)
 * with one `unsupported` diagnostic (no file, no pointer) saying why:
 * "built without CUDA (rebuild where nvcc is installed)", "no NVIDIA
 * driver (...)", "the NVIDIA driver supports CUDA X.Y, older than this
 * build's runtime (CUDA A.B)", "no CUDA device (...)", a compute
 * capability below 9.0, or the device's initialisation failing. */
int nf_device_init(nf_diags *d);

/* What the initialised device is (zeros before nf_device_init succeeds). */
typedef struct {
    char name[128];
    int cc_major, cc_minor;
    int sms;                 /* multiprocessors */
    uint64_t l2_bytes;
    uint64_t mem_bytes, mem_free; /* cudaMemGetInfo at the call */
    int driver_version;      /* CUDA version the driver supports, 1000*major + 10*minor */
    int runtime_version;     /* this build's runtime, same form */
    int compute_mode;        /* cudaComputeMode: 0 default, 2 prohibited, 3 exclusive process */
    int clock_khz;           /* the device's rated SM clock (cudaDevAttrClockRate) */
} nf_device_info;

/* Fill *info for the initialised device. Returns 0, or -1 with an
 * `unsupported` (no device) or `io` (a CUDA error) diagnostic. */
int nf_device_query(nf_device_info *info, nf_diags *d);

/* Peak bandwidth of the device in GB/s: device-to-device copies of a
 * buffer of max(1 GiB, 8x L2) (at most a quarter of the free memory),
 * counted as 2 x size (read + write), at the p10 of 20 timed copies after
 * a warm-up by time: the statistic the benchmark takes for kernels. 0 when
 * it cannot be measured. */
double nf_device_peak_gbps(void);

/* The SM clock now, in MHz: a one-block kernel counts clock64() cycles over
 * 2 ms of the global timer. 0 when it cannot be measured. */
double nf_device_sm_mhz(void);

/* What a benchmark case measured beside its samples. */
typedef struct {
    double peak_before_gbps, peak_after_gbps; /* nf_device_peak_gbps just before
                                                 and just after the timed runs */
    double sm_mhz;            /* nf_device_sm_mhz right after the timed runs */
    double warmup_s;          /* seconds of untimed warm-up launches */
    unsigned warmup_runs;
    uint64_t copies;          /* copies of the weights one timed sample visits */
    /* the check of the last timed results (gemv: y of every row copied back,
     * sampled rows against the CPU reference within the kernel's bound;
     * decode: sampled row blocks decoded again in place, bit for bit);
     * nf_devcheck.h */
    int check;                /* -1 not checked, 0 ok, 1 failed */
    uint64_t rows_checked;
    double max_err, bound;    /* the worst row's error and bound (decode: the
                                 number of differing words, bound 0) */
    uint64_t worst_row;
} nf_device_bench_info;

/* Time op ("gemv" or "decode") over the encoded object obj on the device:
 * untimed launches for at least `warmup` runs and 150 ms, then iters timed
 * samples, each a CUDA graph of one launch per copy of the weights (copies
 * that together exceed 4x L2, at least 2, at most 4096), preceded by an L2
 * flush outside its events; samples_s[0..iters) receives each sample's
 * seconds per launch, unsorted, for the caller to report. Then the check
 * (above), unless `check` is false. info, when not NULL, receives the
 * peaks, the clock and the check. Problems are diagnostics whose file is
 * `name` (the case): `unsupported` (no device, an op or format without a
 * kernel), `io` (out of memory, a CUDA error: "cuda: WHAT: MESSAGE").
 * Returns an exit status (0, 3, 4); a failed check is info->check == 1
 * with status 0 (the caller reports the row). */
int nf_device_bench_samples(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                            unsigned warmup, unsigned iters, bool check, const char *name,
                            double *samples_s, nf_device_bench_info *info, nf_diags *d);

/* ---- the load path and the kernels, for ninfer-run ---------------------- */

/* One parent object resident in device memory (opaque). */
typedef struct nf_dbuf nf_dbuf;

/* Materialize parents on the device (ninfer-run(1), spec 11.2): for each object
 * index objs[i] of a's catalog, a device allocation, then nf_load_parents
 * (threads workers, 0: min(4, CPUs)) reads its encoded bytes with large
 * range reads into each worker's two pinned staging buffers, hashes them
 * (unless no_digests) and copies them to the device on the worker's
 * stream, so that reads, hashes and copies overlap. out[i] receives the
 * buffer. st as nf_load_parents fills it (read_s from the first read to
 * the last copy done, allocations not counted). Returns 0, or -1 with
 * diagnostics (read errors name the file; `digest` for a parent whose
 * bytes do not match metadata.integrity; device errors are `io`). */
int nf_device_load(nf_artifact *a, const size_t *objs, size_t n, unsigned threads,
                   bool no_digests, nf_dbuf **out, nf_load_stats *st, nf_diags *d);

/* Copy bytes host[0..n) into a new device buffer (tests, benchmarks).
 * Returns 0 or -1 with an `io` diagnostic. */
int nf_device_upload(const void *host, uint64_t n, nf_dbuf **out, nf_diags *d);
void nf_device_free(nf_dbuf *b);

/* y = W x on the device for the row range [r0, r1) of the resident object
 * w described by t (x: t->cols bf16 words on the host; y: r1-r0 floats on
 * the host). The kernel for t's format/layout; *ms receives its time in
 * milliseconds (CUDA events, median of `iters` launches after a warm-up of
 * at least one launch and 20 ms, each launch after an L2 flush outside its
 * events). Returns 0 or -1 with diagnostics (`unsupported` for a format
 * without a kernel, `io` "cuda: ..." for a CUDA error). */
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
