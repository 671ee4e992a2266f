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
 * The contract (what the tests check, on every ISA path the machine has):
 *  - A16: |y[n] - ref[n]| <= bound[n] of nf_gemv_ref_rows, the error bound
 *    of an f32 evaluation of the exact sum (K * 2^-24 * sum_k |w_nk x_k| +
 *    2^-24 |y|), where the weights are the codec's f32 decode;
 *  - A8: the same against nf_gemv_ref_rows_act(..., NF_ACT_A8), the exact
 *    sum over the A8 activations x^ of nf_a8_quantize;
 *  - a row's result does not depend on the thread count or the row range
 *    (bit for bit), and with x = e_k (one column at 1.0) y is column k of
 *    W exactly, as nf_decode_rows_f32 gives it;
 *  - rows holding non-finite weights give what the reference gives where it
 *    is NaN or infinite.
 * Bit-identity with the reference itself is not promised: the sums run in
 * another order.
 *
 * Kernels, chosen at run time:
 *  - the integer path (nf_gemv_int.c) for q2/q4/q5/q6/q8/t2 and nvfp4 on
 *    AVX-512 with VNNI and VBMI (vpdpbusd), else on AVX2 (vpmaddubsw +
 *    vpmaddwd; q8 there only on A8): x is cut into blocks of 16 and held as
 *    signed 7-bit limbs against a power-of-two unit per block (A16: three
 *    limbs, exact for every value within 2^13 of its block's largest; the
 *    few others, and non-finite values, are kept aside and added in f64;
 *    an input with more than 16 + K/256 of them goes to the float kernels)
 *    or as nf_a8_quantize's codes (A8: one limb). The weight codes become
 *    unsigned bytes with bit operations, the dot products are exact int32
 *    sums, and each lane's sum meets the group scale and the
 *    block unit once in f32: a few roundings per lane and per group, inside
 *    the bound above. Rows it cannot take (a non-finite row_split scale, an
 *    nvfp4 NaN block scale or a divisor outside [2^-60, 2^60]) are decoded
 *    and multiplied in f32.
 *  - fused float kernels for every format/layout on AVX2 (+FMA, F16C) and
 *    AVX-512 (F, BW, VL): each row is decoded in registers and multiplied
 *    into f32 accumulators; each decoded weight equals the codec's f32
 *    decode bit for bit, only the order of the f32 sums differs.
 *  - the generic two-pass path (decode a few rows into a cache-resident f32
 *    buffer with nf_decode_rows_f32, then dot products): CPUs without AVX2,
 *    and the rows a fused kernel declines (a row_split row with a
 *    non-finite group scale, an fp8 row with a NaN code or a row scale
 *    |r| >= 2^8 or not finite, nvfp4 objects whose divisor slices hold
 *    fewer than 64 blocks).
 * The gguf_* formats (DESIGN 7.5) have their own fused kernels, under the
 * same contract, in nf_gemv_gguf.c (nf_gemv_gguf.h); they decline no row.
 * Both A16 and A8 are exact in their integer part; A8 differs from A16 by
 * the quantization of x (at most sum_k |w_nk| d[k/16] / 2).
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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The activation path of a projection (spec 8: a use whose
 * activation_policy is AllowA8 or AllowA4 permits A8; A16Only only A16). */
typedef enum {
    NF_ACT_A16 = 0, /* x as given (bf16), accumulation in f32 */
    NF_ACT_A8 = 1,  /* x quantized per block to int8 (nf_a8_quantize), integer
                       dot products where the format has them */
} nf_act;

/* A8 activations: x is cut into blocks of NF_A8_BLOCK consecutive elements
 * (the last one short when K is not a multiple); block b gets the f32
 * scale d[b] = amax(|x| over the block) / 127 and each element the code
 * q[k] = the nearest even integer to x[k] * (127 / amax) (f32 product;
 * x[k] / d[b] where that reciprocal is not finite), clamped to [-127, 127]
 * (q 0 where d is 0). x^[k] = q[k] * d[b] (as a real number) is what the
 * A8 path multiplies by; |x[k] - x^[k]| <= d[b] / 2 (within an ulp). A
 * block holding a non-finite value gets d = 0 and codes 0 (callers keep
 * such inputs on A16: nf_gemv_rows_act does). q holds ceil(K /
 * NF_A8_BLOCK) * NF_A8_BLOCK codes (the tail zero), d one scale per block.
 * spec 8 (AllowA8, AllowA4); DESIGN 11. */
#define NF_A8_BLOCK 16
void nf_a8_quantize(const uint16_t *x, uint64_t K, int8_t *q, float *d);

/* y[0..N) = W x, x[0..K) bf16 words, y f32. threads 0: all CPUs.
 * Returns 0 or a negative NF_CODEC_E* error. */
int nf_gemv(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
            const uint16_t *x, float *y, unsigned threads);

/* The same over the row range [r0, r1) only (a view of a fused parent,
 * spec 7.3): y[0 .. r1-r0). */
int nf_gemv_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                 uint64_t r1, const uint16_t *x, float *y, unsigned threads);

/* nf_gemv_rows on the activation path act. NF_ACT_A8: y = W x^ with x^
 * the A8 activations of x (nf_a8_quantize), within the bound that
 * nf_gemv_ref_rows_act(..., NF_ACT_A8) gives; an x holding a non-finite
 * value is computed on A16. EINVAL for an unknown act. */
int nf_gemv_rows_act(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, float *y, unsigned threads,
                     nf_act act);

/* The reference over rows [r0, r1), with the error bound of an f32
 * evaluation: bound[n] = K * 2^-24 * sum_k |w_nk x_k| (NULL: not wanted).
 * A fast path that decodes bit-exactly and only sums in another order (or
 * in f32) stays within it (Higham, the standard dot-product bound). */
int nf_gemv_ref_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, float *y, double *bound);

/* The same for an activation path: NF_ACT_A8 computes the reference over
 * x^ (the A8 activations, each x^[k] = q[k] * d[b] exact in double), with
 * the bound of an f32 evaluation of that sum, K * 2^-24 * sum_k |w_nk x^_k|
 * + 2^-24 |y|. How far A8 is from A16 is not in the bound: it is at most
 * sum_k |w_nk| * d[k / NF_A8_BLOCK] / 2. */
int nf_gemv_ref_rows_act(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                         uint64_t r0, uint64_t r1, const uint16_t *x, float *y, double *bound,
                         nf_act act);

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

/* Read-only pass over buf[0..bytes) on `threads` threads (0: all CPUs), the
 * CPU peak of DESIGN 11: every byte is loaded with the widest loads the CPU
 * has (64-byte AVX-512 loads, else 32-byte AVX2, else 8-byte words), summed
 * into four independent accumulators. buf must be 64-byte aligned; bytes
 * past the last multiple of 256 are not read. Variants (variant %
 * NF_READ_VARIANTS): 0 each thread reads one contiguous share; 1 the same
 * with a software prefetch PF_DIST (4 KiB) ahead, as the GEMV kernels
 * issue; 2 chunks of 256 KiB handed out in turn to the threads, with the
 * prefetch (the GEMV's row scheduling). A benchmark takes the best time of
 * several passes over the variants, so that its peak is at least what any
 * of these access patterns reaches. Returns a value derived from the data
 * so the compiler cannot drop the reads. */
#define NF_READ_VARIANTS 3
uint64_t nf_read_pass_variant(const void *buf, size_t bytes, unsigned threads,
                              unsigned variant);
uint64_t nf_read_pass(const void *buf, size_t bytes, unsigned threads); /* variant 0 */

/* The size in bytes of the CPU's last-level cache: the largest data or
 * unified cache of the highest level sysfs lists for CPU 0
 * (/sys/devices/system/cpu/cpu0/cache), else sysconf(_SC_LEVEL3_CACHE_SIZE)
 * or _SC_LEVEL2_CACHE_SIZE, else 32 MiB. A benchmark rotates its weights
 * and sizes its peak buffer past 4 times this (DESIGN 11). */
uint64_t nf_llc_bytes(void);

/* Tests and benchmarks: whether the integer kernels may serve (the
 * default); false keeps every format on the float kernels. Process-wide;
 * returns the previous setting. */
bool nf_gemv_use_int(bool on);

/* Number of online CPUs (>= 1). */
unsigned nf_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
