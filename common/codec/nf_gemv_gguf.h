/* nf_gemv_gguf.h — the CPU GEMV of the gguf_* block formats
 * (ninfer-formats(7), ninfer-run(1)): fused decode + dot kernels for AVX2
 * (+FMA, F16C) and AVX-512 (F, BW, VL), one per format, called by nf_gemv.c
 * for every gguf_rows_v1 object. The public entry points are nf_gemv.h's
 * (nf_gemv, nf_gemv_rows); this header is the hook between the two files.
 *
 * Exactness (nf_gemv.h's contract): every weight is formed in registers
 * with the codec's own operations on the same exact operands
 * (nf_gguf_simd.inc), so it equals nf_decode_rows_f32's bit for bit; the
 * products w*x are summed in f32 with FMA, in an order of their own (four
 * accumulators of 8 or 16 lanes per row), which keeps the result within
 * nf_gemv_ref_rows's bound. Every row takes the fused path: a non-finite
 * f16 d, dmin or m gives the same non-finite weights as the codec. One
 * limit of any f32 GEMV: where the sum of |w x| nears FLT_MAX an f32
 * partial sum can overflow (to inf, or NaN when both signs do) although the
 * double reference stays finite; only gguf_mxfp4 blocks with E near 255
 * (weights up to 12 * 2^127) come near.
 */
#ifndef NF_GEMV_GGUF_H
#define NF_GEMV_GGUF_H

#include <stdint.h>

#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[0 .. r1-r0) = rows [r0, r1) of the gguf_rows_v1 object t/obj (whole,
 * obj_bytes >= its encoded size) times x (t->cols f32 values, natural
 * order), on `threads` threads (0: all CPUs), with the fused kernels of isa
 * (AVX2 or AVX-512; capped at what the CPU has). Returns 0, a negative
 * NF_CODEC_E* error, or 1 when isa is NF_ISA_SCALAR or the CPU has no AVX2
 * (the caller's two-pass path serves then). */
int nf_gemv_gguf_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                      uint64_t r1, const float *x, float *y, unsigned threads, nf_isa isa);

/* The A8 path of the gguf_* formats: y[0 .. r1-r0) = rows [r0, r1) times
 * the A8 activations of x (bf16, all finite; nf_a8_quantize's codes q and
 * scales d per block of 16 columns), in the G order of nf_gemv.h: each
 * format's weights are w = S_b c - M_b over block b of 16 columns (c the
 * integer code, S_b and M_b exact products of the block's fields; M = 0
 * where the format has no offset); per block, in increasing b, the exact
 * integers I_b = sum c q and J_b = sum q, then in f64 T_b = fl(fl(S_b I_b -
 * M_b J_b) * d_b) into slot b % 16 of 16 f64 slots, the f64 tree, y =
 * f32(tree). A row with a non-finite f16 field (d, dmin, m) or an mxfp4
 * exponent above 252 takes the F order over its decoded weights and x^.
 * The AVX-512 (VNNI, VBMI) and AVX2 kernels and the portable code give
 * the same bits (nf_gemv_gguf8.c). gguf_f16 has no such path: returns 1 (the
 * caller runs the F order over x^), as for another layout. Returns 0 or a
 * negative NF_CODEC_E* error otherwise. */
int nf_gemv_gguf_a8_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                         uint64_t r0, uint64_t r1, const uint16_t *x, float *y, unsigned threads,
                         nf_isa isa);

#ifdef __cplusplus
}
#endif
#endif
