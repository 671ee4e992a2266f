/* nf_codec_gguf.h — the codec of the gguf_* block formats in layout
 * gguf_rows_v1 (ninfer-formats(7)): decode and deep validation. nf_codec.c
 * calls into it for every gguf_rows_v1 object, so the public entry points
 * are nf_codec.h's (nf_decode_*, nf_codec_validate, nf_codec_finding_str);
 * what this header adds is the block-level decoder that tests, the GEMV
 * kernels and the CUDA host emulation share.
 *
 * Terms: a block is QK consecutive elements of one row in B bytes, laid
 * out as ggml's block struct (ggml-common.h; ninfer-formats(7) GGUF block
 * formats: gguf_f16 QK 1 B 2; q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4
 * QK 32; q2_k .. q6_k, iq4_xs QK 256). Row n of an [N,K] object is bytes
 * [n*RB, (n+1)*RB), RB = (K/QK)*B; element k of the row is element
 * e = k % QK of block k / QK.
 *
 * Numbers: every value is ggml's dequantize_row_<type> at quantization
 * version 2 in FP32, in its operation order (ggml-quants.c), which gguf-py
 * 0.19.0's gguf.quants.dequantize reproduces; tests/unit/t_codec_gguf.c
 * holds golden blocks computed with it. The scalar path evaluates the
 * formula of each element on its own; the AVX2 and AVX-512 paths compute
 * the same roundings from the same exact operands and agree bit for bit
 * (NaN payloads aside: a NaN f16 scale gives some NaN). Every code bit
 * pattern decodes: a non-finite f16 d, dmin or m simply propagates, and
 * MXFP4's E = 0xFF decodes as ggml does, to 2^127 * E2M1.
 *
 * Thread safety: everything is reentrant.
 */
#ifndef NF_CODEC_GGUF_H
#define NF_CODEC_GGUF_H

#include <stdint.h>

#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decode nblocks consecutive blocks of gguf format f starting at p (nblocks
 * * B bytes) into y[0 .. nblocks*QK) as f32, with the ISA's path
 * (NF_ISA_AUTO: the codec's current choice, nf_codec_isa; an ISA the CPU
 * lacks falls back to the best it has). Nothing happens for a format that
 * is not gguf_*. ninfer-formats(7) GGUF block formats. */
void nf_gguf_decode_blocks(nf_format f, nf_isa isa, const uint8_t *p, uint64_t nblocks,
                           float *y);

/* The reference value of element e (0 .. QK-1) of one block at p: the
 * formula of ninfer-formats(7) GGUF block formats (ggml's bit positions,
 * ggml-common.h) for that element alone. */
float nf_gguf_elem(nf_format f, const uint8_t *p, unsigned e);

/* Fill nblocks blocks of gguf format f at p with plausible weights for tests
 * and benchmarks (the toolkit does not quantize into gguf formats): random
 * codes and sub-block scales from a generator seeded with `seed`, every f16
 * d, dmin and m finite with a magnitude in [2^-12, 2^-7) (d and dmin
 * positive, m of either sign), MXFP4's E in 118..125; gguf_f16 halves of
 * magnitude below 2. Deterministic. */
void nf_gguf_random_blocks(nf_format f, uint64_t seed, uint8_t *p, uint64_t nblocks);

/* Hooks of nf_codec.c (t: a gguf_rows_v1 description from
 * nf_tensor_enc_init; obj: the whole object). Decode columns [k0, k1) of
 * row n into out[0 .. k1-k0) on the given path. */
void nf_gguf_row_decode(const nf_tensor_enc *t, nf_isa isa, const uint8_t *obj, uint64_t n,
                        uint64_t k0, uint64_t k1, float *out);

/* Deep validation (ninfer-formats(7)): every block's f16 d, dmin (q2_k, q4_k,
 * q5_k) and m (q4_1, q5_1) finite, and MXFP4's E != 0xFF; gguf_f16 accepts
 * every bit pattern. Findings are rule NF_CR_SCALE with row = the row,
 * index = the block's first column, value = the raw field (f16 bits or E)
 * and offset = the field's byte offset in the object; counted into c (the
 * first finding is the lowest row, then column, then field). */
void nf_gguf_validate(const nf_tensor_enc *t, const uint8_t *obj, nf_codec_check *c);

/* Describe a gguf finding, e.g. "row 3, columns 256..511: dmin 0x7e00 is
 * not finite" or "row 0, columns 32..63: mxfp4 scale E = 0xff (e8m0 nan)",
 * into buf (size n, always terminated). */
void nf_gguf_finding_str(const nf_tensor_enc *t, const nf_codec_finding *f, char *buf,
                         size_t n);

#ifdef __cplusplus
}
#endif
#endif
