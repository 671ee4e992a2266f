/* nf_gemv.h — CPU kernels over encoded tensors (ninfer-run(1),
 * ninfer-bench(1)): batch-1 GEMV y = W x for every format/layout (A16: x in
 * bf16, accumulation in f32), a decode pass for benchmarks, and the read-only
 * streaming kernel that measures the machine's bandwidth ceiling.
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
 *  - every path computes the accumulation order below, so the portable C
 *    code (NF_GEMV_ISA=scalar, or nf_codec_set_isa(NF_ISA_SCALAR)), AVX2 and
 *    AVX-512 give the same bits for the same call, whatever the thread count,
 *    the row range, and how many rows a kernel takes at a time; with x = e_k
 *    (one column at 1.0) y is column k of W exactly, as nf_decode_rows_f32
 *    gives it;
 *  - a row's result is canonical: a zero is +0, a NaN the default quiet NaN
 *    (0x7fc00000); rows holding non-finite weights give what the reference
 *    gives where it is NaN or infinite.
 * Bit-identity with the reference itself is not promised: its sums run in
 * f64.
 *
 * The accumulation order (per row; fma is one rounding of a*b+c, every
 * other operation one IEEE f32 rounding to nearest even; "the tree" over
 * n slots s is t[i] = s[i] + s[i + n/2] for i < n/2, recursively, down to
 * one value):
 *  - F (fp32, int32, gguf_* on A16, and the two-pass path: rows decoded to
 *    f32 first): 64 slots starting at +0; column k, in increasing k, does
 *    slot[k % 64] = fma(w_k, x_k, slot[k % 64]); then the tree. x is the
 *    f32 value of x (A16) or fl(q[k] * d[k/16]) (A8).
 *  - P (bf16, fp8_e4m3fn_row_bf16): 64 slots; pair p = columns (2p, 2p+1),
 *    in increasing p, does slot[p % 64] = fma(w_2p+1, x_2p+1, slot) then
 *    fma(w_2p, x_2p, slot) (a missing odd column is skipped); then the
 *    tree. bf16: w is the weight; fp8: w = e4m3(c) and the row's result is
 *    fl(r * tree), which needs the row scale r to be 0 or within [2^-100,
 *    2^100] (then every e4m3(c) * r is exact); rows with another r take the
 *    F order over the decoded weights. A NaN code makes the row NaN.
 *  - I (q2/q4/q5/q6/q8/t2 in row_split_k128_v1, nvfp4): the integer path
 *    (nf_gemv_int.c). x becomes integers Q_k against a power-of-two unit
 *    D_b per block b of 16 columns (A16: bf16 values as exact multiples of
 *    2^(E-147), E the block's largest exponent field; A8: Q = q, D = d),
 *    values that do not fit (more than 2^13 below the block's largest, non-
 *    finite, or in a block whose unit leaves [2^-80, 2^80] (A16) or whose d
 *    leaves [2^-60, 2^100] (A8)) set aside as residuals. A lane is 4*nv consecutive columns (nv = 1 for q8, 2 for
 *    q4/q5/q6/nvfp4, 4 for q2/t2): lane l holds the exact integer
 *    I_l = sum c_k * Q_k over its columns (c the weight's integer code;
 *    nvfp4: 2 * e2m1), and 16 slots take slot[l % 16] = fma(f32(I_l),
 *    fl(D_l * S_l), slot[l % 16]) in increasing l, D_l the lane's unit
 *    (nvfp4: D/2), S_l its group scale (nvfp4: the e4m3 block scale); then
 *    the tree; nvfp4 divides that by the slice's divisor; where residuals
 *    exist, y = f32(f64(y) + the f64 sum of w_k * remainder_k in column
 *    order). An input with more than 16 + K/256 residuals, and rows whose
 *    scales the integer kernels cannot take (a non-finite row_split scale,
 *    an nvfp4 NaN block scale, a divisor outside [2^-60, 2^60]), take the
 *    F order instead.
 *  - G (gguf_* but gguf_f16 on A8): per block b of 16 columns the exact
 *    integers I_b = sum c_k q_k and J_b = sum q_k (c the format's integer
 *    code, w = S_b c - M_b), T_b = fl(fl(S_b I_b - M_b J_b) * d_b) in f64
 *    into slot b % 16 of 16 f64 slots, the tree in f64, then one rounding to
 *    f32 (nf_gemv_gguf.h); rows with a non-finite f16 field take the F
 *    order.
 * vdpbf16ps (AVX512_BF16) computes the P order's two roundings exactly
 * where every product is exact and no product or partial sum can be
 * subnormal: bf16 x against bf16 weights whose smallest nonzero exponents
 * sum to at least -112 (none subnormal), or e4m3 codes against x with no
 * nonzero value below 2^-110; elsewhere the same FMAs run.
 *
 * Kernels, chosen at run time:
 *  - the integer path (I order) for q2/q4/q5/q6/q8/t2 and nvfp4 on
 *    AVX-512 with VNNI and VBMI (vpdpbusd), on AVX2 (vpmaddubsw +
 *    vpmaddwd), or in C;
 *  - fused kernels for bf16 and fp8 (P order: vdpbf16ps where exact) and
 *    fp32/int32 (F order) on AVX2 (+FMA, F16C) and AVX-512 (F, BW, VL),
 *    each weight formed in registers equal to the codec's f32 decode bit
 *    for bit;
 *  - the gguf_* formats: A16 in nf_gemv_gguf.c (F order, fused decode), A8
 *    in nf_gemv_gguf8.c (G order, vpdpbusd on AVX-512 VNNI+VBMI, vpmaddubsw
 *    + vpmaddwd on AVX2, or C);
 *  - the two-pass path (decode a few rows into a cache-resident f32 buffer
 *    with nf_decode_rows_f32, then the F order): the rows and inputs the
 *    others decline (above), and the formats without a kernel of their own.
 * Threads: a persistent pool (no thread is started per call); each thread
 * takes a contiguous range of rows, with stealing only at the tail, and a
 * worker the machine has not yet run when the caller has done its own
 * part is left out (the others take its rows).
 *
 * Choosing the ISA (tests, benchmarks): the kernels use the codec's ISA
 * (nf_codec_set_isa / nf_codec_isa: the best the CPU has by default) capped
 * by the environment variable NF_GEMV_ISA, read once per process:
 *   NF_GEMV_ISA=scalar   the portable C code throughout;
 *   NF_GEMV_ISA=avx2     AVX2 kernels at most;
 *   NF_GEMV_ISA=avx512   (or auto, or unset) no cap.
 * All give the same bits.
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
 * spec 8 (AllowA8, AllowA4); ninfer-run(1). */
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
 * CPU peak of ninfer-bench(1): every byte is loaded with the widest loads the
 * CPU has (64-byte AVX-512 loads, else 32-byte AVX2, else 8-byte words),
 * summed into four independent accumulators. buf must be 64-byte aligned;
 * bytes past the last multiple of 256 are not read. Variants (variant %
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
 * and sizes its peak buffer past 4 times this (ninfer-bench(1)). */
uint64_t nf_llc_bytes(void);

/* Tests and benchmarks: whether the integer kernels may serve (the
 * default); false computes the I-order formats in the F order instead (a
 * different, still ISA-independent result). Process-wide; returns the
 * previous setting. */
bool nf_gemv_use_int(bool on);

/* Number of online CPUs (>= 1). */
unsigned nf_cpu_count(void);

#ifdef __cplusplus
}
#endif
#endif
