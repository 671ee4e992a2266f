/* nf_gemv.h — CPU kernels over encoded tensors (DESIGN 11): batch-1 GEMV
 * y = W x for every format/layout (A16: x in bf16, accumulation in f32),
 * a decode pass for benchmarks, and the read-only streaming kernel that
 * measures the machine's bandwidth ceiling.
 *
 * W is one encoded rank-2 object [N,K] (or a contiguous object viewed as
 * rows x cols by nf_tensor_enc) held in memory: obj_bytes >= its encoded
 * size. Units: N, K and row ranges in elements/rows; sizes in bytes.
 * Multithreaded over rows.
 *
 * Kernels. Every format/layout has fused decode+dot kernels for AVX2
 * (+FMA, F16C) and AVX-512 (F, BW, VL), chosen at run time: each row is
 * decoded in registers and multiplied into f32 accumulators, so the encoded
 * bytes are read once. Each decoded weight equals the codec's f32 decode
 * (nf_decode_rows_f32) bit for bit; only the order of the f32 sums differs
 * (FMA included), so results stay within nf_gemv_ref_rows's bound. The
 * generic two-pass path (decode a few rows into a cache-resident f32 buffer
 * with nf_decode_rows_f32, then dot products) serves CPUs without AVX2 and
 * the rows a fused kernel declines: a row_split row with a non-finite group
 * scale, an fp8 row with a NaN code or a row scale |r| >= 2^8 or not finite,
 * and nvfp4 objects whose divisor slices hold fewer than 64 blocks.
 *
 * Choosing the ISA (tests, benchmarks): the fused kernels use the codec's
 * ISA (nf_codec_set_isa / nf_codec_isa: the best the CPU has by default)
 * capped by the environment variable NF_GEMV_ISA, read once per process:
 *   NF_GEMV_ISA=scalar   the two-pass path only (decode still uses the
 *                        codec's ISA);
 *   NF_GEMV_ISA=avx2     fused AVX2 kernels at most;
 *   NF_GEMV_ISA=avx512   (or auto, or unset) no cap.
 * nf_codec_set_isa(NF_ISA_SCALAR) gives the portable path throughout.
 */
#ifndef NF_GEMV_H
#define NF_GEMV_H

#include <stddef.h>
#include <stdint.h>
#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[0..N) = W x, x[0..K) bf16 words, y f32. threads 0: all CPUs.
 * Returns 0 or a negative NF_CODEC_E* error. */
int nf_gemv(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
            const uint16_t *x, float *y, unsigned threads);

/* The same over the row range [r0, r1) only (a view of a fused parent,
 * spec 7.3): y[0 .. r1-r0). */
int nf_gemv_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                 uint64_t r1, const uint16_t *x, float *y, unsigned threads);

/* The reference over rows [r0, r1), with the error bound of an f32
 * evaluation: bound[n] = K * 2^-24 * sum_k |w_nk x_k| (NULL: not wanted).
 * A fast path that decodes bit-exactly and only sums in another order (or
 * in f32) stays within it (Higham, the standard dot-product bound). */
int nf_gemv_ref_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, float *y, double *bound);

/* The reference: rows decoded by the scalar codec path, dot products in
 * double, rounded to f32 at the end. For checking nf_gemv and device
 * kernels; slow. Returns 0 or an NF_CODEC_E* error. */
int nf_gemv_ref(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                const uint16_t *x, float *y);

/* Decode every row once into a small per-thread buffer (reused, so it
 * stays in cache) and discard it: the decode benchmark. Returns 0 or an
 * NF_CODEC_E* error. */
int nf_decode_pass(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                   unsigned threads);

/* Read-only pass over buf[0..bytes) on `threads` threads (a sum over 64-byte
 * lines): the CPU peak of DESIGN 11. Returns a value derived from the data
 * so the compiler cannot drop the reads. */
uint64_t nf_read_pass(const void *buf, size_t bytes, unsigned threads);

/* Number of online CPUs (>= 1). */
unsigned nf_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
