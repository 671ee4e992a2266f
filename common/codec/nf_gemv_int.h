/* nf_gemv_int.h — internal to the library (nf_gemv.c): the integer GEMV
 * path of DESIGN 11 for the quantized formats (q2/q4/q5/q6/q8/t2 in
 * row_split_k128_v1, nvfp4 in block_scale_k16_m128x4_v1).
 *
 * The activations are cut into "limbs" of signed bytes per block of 16
 * (A16: three limbs holding each bf16 value exactly against a power-of-two
 * unit per block, the few values that do not fit kept aside as residuals;
 * A8: one limb, the codes of nf_a8_quantize), the weight codes become
 * unsigned bytes with a format bias, and the dot products are integer
 * (AVX-512 VNNI vpdpbusd, or AVX2 vpmaddubsw + vpmaddwd), exact; each lane's
 * integer sum then meets its group scale and block unit in f32. nf_gemv.h
 * states the resulting contract.
 */
#ifndef NF_GEMV_INT_H
#define NF_GEMV_INT_H

#include <stdbool.h>
#include <stdint.h>
#include "nf_codec.h"
#include "nf_gemv.h"

/* The CPU (and build) runs the integer kernels of `isa` (NF_ISA_AVX512:
 * also VNNI and VBMI; NF_ISA_AVX2: AVX2, where vpmaddubsw + vpmaddwd stand
 * in for vpdpbusd) for t's format and layout. (nf_gemv_int_rows may still
 * decline: AVX2 q8 on A16 stays on the float kernel, which is faster.) */
bool nf_gemv_int_supported(const nf_tensor_enc *t, nf_isa isa);

/* y[0 .. r1-r0) = W x for rows [r0, r1) on the integer path of `isa`, with
 * act's activations (A8: an x that is all finite). Returns 0, 1 when this
 * path does not serve (format, ISA, or an input with too many values
 * outside the limbs: the caller runs the float kernels), or a negative
 * NF_CODEC_E* error. Rows whose scales it cannot take (a non-finite
 * row_split scale, an nvfp4 NaN block scale or a divisor outside
 * [2^-60, 2^60]) are decoded and multiplied in f32 instead. */
int nf_gemv_int_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, nf_act act, float *y,
                     unsigned threads, nf_isa isa);

#endif
