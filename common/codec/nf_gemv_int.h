/* nf_gemv_int.h — internal to the library: what the GEMV files (nf_gemv.c,
 * nf_gemv_int.c, nf_gemv_gguf.c) share, and the integer GEMV path
 * (ninfer-run(1)) for the quantized formats (q2/q4/q5/q6/q8/t2 in
 * row_split_k128_v1, nvfp4 in block_scale_k16_m128x4_v1).
 *
 * The activations are cut into "limbs" of signed bytes per block of 16
 * (A16: three limbs holding each bf16 value exactly against a power-of-two
 * unit per block, the few values that do not fit kept aside as residuals;
 * A8: one limb, the codes of nf_a8_quantize), the weight codes become
 * unsigned bytes with a format bias, and the dot products are integer
 * (AVX-512 VNNI vpdpbusd, AVX2 vpmaddubsw + vpmaddwd, or C), exact; each
 * lane's integer sum then meets its group scale and block unit in f32, in
 * the I order nf_gemv.h states.
 */
#ifndef NF_GEMV_INT_H
#define NF_GEMV_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "nf_codec.h"
#include "nf_gemv.h"

/* ---- shared by the GEMV files -------------------------------------------- */

/* The ISA of the kernels: the codec's (nf_codec_set_isa) capped by
 * NF_GEMV_ISA. */
nf_isa nf_gv_isa(void);

/* The CPU has AVX512_VNNI and AVX512_VBMI (asked once). */
bool nf_gv_cpu_vnni_vbmi(void);

/* The pairwise tree of nf_gemv.h over s[0..n) (n a power of two; s is
 * overwritten): t[i] = s[i] + s[i + h] for h = n/2, ..., 1. */
float nf_gv_tree(float *s, unsigned n);

/* A row's result made canonical: +0 for a zero, the default NaN for a NaN. */
float nf_gv_canon(float y);

/* A8's x^ in f32: xf[k] = fl(q[k] * d[k / NF_A8_BLOCK]) for k < K (q and
 * d as nf_a8_quantize writes them), 16 columns a step on AVX2 and up; the
 * same bits on every isa. */
void nf_gv_a8_dequant(const int8_t *q, const float *d, uint64_t K, float *xf);

/* F order: sum of w[k] * x[k], k < K, slot k % 64, then the tree; the
 * same bits on every isa. */
float nf_gv_dot64(const float *w, const float *x, uint64_t K, nf_isa isa);

/* Rows [a, b) of any format on the two-pass path (decode into this
 * thread's buffer, then nf_gv_dot64 with xf): y[n - r0] =
 * nf_gv_canon(the dot product); y NULL: decode only. */
int nf_gv_rows_f32(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t a,
                   uint64_t b, const float *xf, float *y, uint64_t r0, nf_isa isa);

/* How many participants a job over `bytes` of weights takes (at most
 * threads, 0: all CPUs), and the rows of one unit of work. */
unsigned nf_gv_participants(uint64_t bytes, unsigned threads);
uint64_t nf_gv_unit_rows(uint64_t rows, uint64_t row_bytes, unsigned n);

/* Run fn over rows [r0, r1) on the pool (nf_pool.h): units of
 * nf_gv_unit_rows rows, contiguous per participant, stolen at the tail.
 * Returns 0 or the first error fn returned. */
typedef int (*nf_gv_rows_fn)(void *ctx, uint64_t a, uint64_t b);
int nf_gv_run(nf_gv_rows_fn fn, void *ctx, uint64_t r0, uint64_t r1, uint64_t row_bytes,
              unsigned threads);

/* ---- the integer path ------------------------------------------------------ */

/* The integer path serves t's format and layout with the kernels of isa
 * (NF_ISA_AVX512: when the CPU also has VNNI and VBMI; NF_ISA_AVX2; and
 * NF_ISA_SCALAR, the portable C code). All three give the same bits. */
bool nf_gemv_int_supported(const nf_tensor_enc *t, nf_isa isa);

/* y[0 .. r1-r0) = W x for rows [r0, r1) on the integer path of `isa`, with
 * act's activations (A8: an x that is all finite). Returns 0, 1 when this
 * path does not serve (format, ISA, or an input with too many values
 * outside the limbs: the caller runs the F order), or a negative
 * NF_CODEC_E* error. Rows whose scales it cannot take (a non-finite
 * row_split scale, an nvfp4 NaN block scale or a divisor outside
 * [2^-60, 2^60]) are computed on the two-pass path instead. */
int nf_gemv_int_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, nf_act act, float *y,
                     unsigned threads, nf_isa isa);

#endif
