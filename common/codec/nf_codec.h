/* nf_codec.h — decode, encode and deep-validate encoded tensor objects: the
 * codec contract of ninfer-formats(7) Formats (spec 6.1) over the layout
 * contract of ninfer-formats(7) Layouts (spec 6.2), computed by nf_layout.
 *
 * Terms (the spec's): an encoded tensor object is the `bytes` of one tensor
 * object, laid out as planes (nf_encoding); its encoded size is
 * enc.encoded_bytes. A row is one index n of a rank-2 object [N,K]; a row
 * range [r0,r1) is the rows r0..r1-1; an element range [e0,e1) counts
 * logical elements in C order (padding and scales are never elements). A
 * group is G consecutive elements of one row sharing one FP16 scale (row
 * split formats); a block is 16 elements of one row sharing one E4M3FN block
 * scale (nvfp4).
 *
 * Units: element counts, rows, columns and ranges are in elements; offsets,
 * sizes and obj_bytes are in bytes. Every output buffer is written as a
 * dense C-order array of the requested elements.
 *
 * Numbers: decoding follows ninfer-formats(7) Formats exactly and computes
 * in FP32 (one rounding per product or quotient, no FMA): q-formats give
 * (float)c * s; fp8 gives e4m3(c) * bf16(r); nvfp4 gives (e2m1(c) *
 * e4m3(b)) / w in that order; int32 gives (float)value (round to nearest
 * even). Invalid codes decode by their bits: q8 -128 -> -128*s, t2 0b10 ->
 * -2*s, an E4M3 NaN code -> NaN. The scalar path and every SIMD path give
 * bit-identical results (NaN payloads aside).
 *
 * gguf_* formats (ninfer-formats(7) GGUF block formats, layout
 * gguf_rows_v1): decode gives ggml's dequantize_row_<type> in FP32, bit for
 * bit (nf_codec_gguf.h says how);
 * validation checks every f16 d, dmin, m finite and MXFP4's E != 0xFF
 * (rule "scale"); the toolkit copies their bytes and never encodes into
 * them (nf_encode_rows_f32 answers EINVAL).
 *
 * Thread safety: all functions are reentrant; nf_codec_set_isa changes a
 * process-wide choice and is meant for tests and benchmarks.
 *
 * Errors: functions return 0 on success or a negative NF_CODEC_E* value; the
 * library never prints.
 */
#ifndef NF_CODEC_H
#define NF_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nf_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative returns). */
enum {
    NF_CODEC_OK = 0,
    NF_CODEC_EINVAL = -1,      /* NULL pointer or an uninitialised description */
    NF_CODEC_ERANGE = -2,      /* a row/element range outside the object, or
                                  begin > end; nvfp4 encode range not whole
                                  divisor slices */
    NF_CODEC_ESHORT = -3,      /* obj_bytes < encoded size */
    NF_CODEC_ENONFINITE = -4,  /* encode: NaN/Inf source value not allowed */
    NF_CODEC_EVALUE = -5,      /* encode int32: source not an integer in
                                  [-2^31, 2^31) */
    NF_CODEC_ENOMEM = -6,
    NF_CODEC_EOVERFLOW = -7,   /* encode bf16: a finite value that rounds to
                                  +-Inf (|x| >= 0x7f7f8000 as f32 bits) and
                                  allow_nonfinite is not set (ninfer-pack(1)) */
};

/* A short lowercase description of an NF_CODEC_E* value ("range outside the
 * object"); "unknown error" for anything else. Never NULL. */
const char *nf_codec_strerror(int err);

/* ---- The description of one encoded tensor ------------------------------ */

/* Everything the codec needs to address an encoded object: format, layout,
 * shape, divisors and the planes from nf_encoding_compute. Fill it with
 * nf_tensor_enc_init; treat it as read-only afterwards. */
typedef struct {
    nf_format format;
    nf_layout layout;
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    uint64_t divisors;  /* nvfp4 weight divisors (1 for every other format) */
    uint64_t rows;      /* N for rank-2 layouts; contiguous: dims[0], 1 for a scalar */
    uint64_t cols;      /* K for rank-2 layouts; contiguous: elements / rows */
    nf_encoding enc;    /* planes and encoded size (ninfer-formats(7)
                           Layouts) */
} nf_tensor_enc;

/* Describe a tensor object of format f, layout l, shape dims[0..rank) and
 * `divisors` (1 unless nvfp4). Returns the nf_enc_status of
 * nf_encoding_compute (NF_ENC_OK = 0; UNSUPPORTED for unknown names,
 * INVALID, OVERFLOW) with `why` as there; t is zeroed on failure.
 * Spec 5.1, 6; ninfer-formats(7) Layouts, Encoded sizes. */
nf_enc_status nf_tensor_enc_init(nf_tensor_enc *t, nf_format f, nf_layout l,
                                 const uint64_t *dims, unsigned rank,
                                 uint64_t divisors, const char **why);

/* The nvfp4 block-scale index (the cuBLASLt VEC16_UE4M3 128x4 tile) is
 * nf_nvfp4_scale_index in nf_layout.h. */

/* ---- Decode -------------------------------------------------------------- */

/* Decode the element range [e0,e1) of the encoded object obj (obj_bytes >=
 * t->enc.encoded_bytes bytes: the whole object) into out[0 .. e1-e0) as
 * f32. Any range of any format; whole rows take the fast path.
 * Errors: EINVAL, ESHORT, ERANGE (e0 > e1 or e1 > elements).
 * ninfer-formats(7) Formats (values, invalid codes), Layouts (planes);
 * spec 6.1, 7. */
int nf_decode_elems_f32(const nf_tensor_enc *t, const uint8_t *obj,
                        uint64_t obj_bytes, uint64_t e0, uint64_t e1,
                        float *out);

/* Decode the row range [r0,r1) into out[0 .. (r1-r0)*cols) as f32: rows of
 * a rank-2 object, or of a contiguous object its outermost index (a scalar
 * has one row of one element). Errors as nf_decode_elems_f32 (ERANGE for
 * r0 > r1 or r1 > rows). ninfer-formats(7) Formats, Layouts. */
int nf_decode_rows_f32(const nf_tensor_enc *t, const uint8_t *obj,
                       uint64_t obj_bytes, uint64_t r0, uint64_t r1,
                       float *out);

/* The same two as BF16 codes: the f32 decode rounded to nearest even
 * (nf_f32_to_bf16), except that a bf16 object's words are copied as they
 * are. out holds one uint16_t per element. ninfer-formats(7) Formats. */
int nf_decode_elems_bf16(const nf_tensor_enc *t, const uint8_t *obj,
                         uint64_t obj_bytes, uint64_t e0, uint64_t e1,
                         uint16_t *out);
int nf_decode_rows_bf16(const nf_tensor_enc *t, const uint8_t *obj,
                        uint64_t obj_bytes, uint64_t r0, uint64_t r1,
                        uint16_t *out);

/* ---- Encode (the encoders of ninfer-formats(7) Formats) ------------------ */

typedef struct {
    /* bf16/fp32 targets: store NaN and +-Inf instead of failing with
     * ENONFINITE (bf16: nf_f32_to_bf16, which quiets a signalling NaN; fp32:
     * the word as it is), and let a finite value round to +-Inf in bf16
     * instead of failing with EOVERFLOW. Scaled formats (q*, t2, nvfp4, fp8)
     * and int32 cannot hold them and fail whatever this says. */
    bool allow_nonfinite;
    /* q-formats: false (default) searches per group for the FP16 scale with
     * the least squared error; true uses the absmax baseline only. */
    bool absmax_only;
} nf_encode_opts;

#define NF_ENCODE_OPTS_INIT {false, false}

/* What an encode did, accumulated over the encoded rows (pass NULL when not
 * wanted). RMSE = sqrt(sse / elements), SNR(dB) = 10*log10(ssx / sse).
 * Non-finite sources (allowed for bf16/fp32) are left out of both sums. */
typedef struct {
    double sse;          /* sum of (x - decode(encode(x)))^2 */
    double ssx;          /* sum of x^2 */
    uint64_t elements;   /* elements encoded */
    uint64_t saturated;  /* codes clamped at the end of their range: their
                            nearest-even code is outside it (fp8 above 464,
                            nvfp4 7 and above, q at qmax + 1/2 when qmax is
                            odd), not a value that rounds to the end */
    uint64_t bad_element; /* on ENONFINITE/EOVERFLOW into a contiguous target:
                             1 + the C-order index of the first such element
                             (0: not known) */
    /* The encoders' scales (ninfer-formats(7) Formats: q groups with a value,
     * fp8 rows, nvfp4 blocks and divisors; none for bf16/fp32/int32): how
     * many were chosen, how many saturated (the scale the values need is
     * beyond its storage type: q
     * groups whose absmax scale amax/qmax is not a finite FP16 (65520 and
     * above), nvfp4 divisors 448*6/amax beyond FLT_MAX and block scales that
     * round past 448 (above 464: 448.00003 is 448; nf_e4m3_saturates)) and how
     * many were zeroed (a group, row or block with a nonzero value whose
     * stored scale is 0: its values decode to 0). */
    uint64_t scales, scales_saturated, scales_zeroed;
} nf_encode_stats;

/* Add src's sums and counts to dst (bad_element: the smaller nonzero one). */
void nf_encode_stats_add(nf_encode_stats *dst, const nf_encode_stats *src);

/* Encode src (the row range's elements in C order, (r1-r0)*cols f32) into
 * rows [r0,r1) of the object buffer obj (obj_bytes >= encoded size): every
 * byte those rows own in every plane, padding columns (code of value 0),
 * the scales, and the zero gaps between planes. Rows outside the range are
 * not touched, so encoding [0,rows) in any number of pieces gives the whole
 * object. nvfp4: r0 and r1 must be multiples of N/divisors (the divisor
 * slices, whose w needs the slice's amax), and the divisor values of those
 * slices are written. Defaults (ninfer-formats(7) Formats): scales rounded
 * to their storage type first and codes computed against the rounded
 * scale, codes saturate, an all-zero group/block/row/slice gets scale +0.0
 * (divisor 1.0);
 * q-formats: per group, a search over FP16 scales (a grid mapping the
 * largest-magnitude element m near either end of the code range,
 * least-squares refits, FP16 neighbours) that keeps the absmax baseline
 * (s = amax/qmax; q2: s = m/2) unless another scale has a strictly smaller
 * squared error, so it is never worse; codes rounded to nearest even; an
 * FP16 scale that would overflow saturates at +-65504. The result depends
 * only on the input (no ISA-specific arithmetic), given IEEE binary32/64
 * without contraction (-ffp-contract=off, the default under -std=c11). nvfp4: w = 448*6/amax(slice) (FLT_MAX if that is infinite), b =
 * e4m3(amax(block)/6*w), codes the nearest E2M1 to x*w/b. fp8: r =
 * bf16(amax(row)/448), codes RNE of x/r saturating at +-448. bf16: RNE.
 * int32: the value, which must be an integer in range.
 * Errors: EINVAL (also for a gguf_* target, whose bytes the toolkit only
 * copies: ninfer-formats(7) GGUF block formats), ESHORT, ERANGE,
 * ENONFINITE, EVALUE, ENOMEM; on error the rows may be partly written.
 * ninfer-formats(7) Formats, Layouts. */
int nf_encode_rows_f32(const nf_tensor_enc *t, const float *src, uint64_t r0,
                       uint64_t r1, uint8_t *obj, uint64_t obj_bytes,
                       const nf_encode_opts *opts, nf_encode_stats *stats);

/* nf_encode_rows_f32 over every row: src holds all elements in C order.
 * ninfer-formats(7) Formats. */
int nf_encode_f32(const nf_tensor_enc *t, const float *src, uint8_t *obj,
                  uint64_t obj_bytes, const nf_encode_opts *opts,
                  nf_encode_stats *stats);

/* ---- Deep validation (ninfer-verify --deep; ninfer-formats(7)) ----------- */

typedef enum {
    NF_CR_SCALE,       /* q-format group scale s not finite; gguf_*: a block's
                          f16 d, dmin or m not finite, or MXFP4's E = 0xFF
                          (index = the block's first column) */
    NF_CR_CODE,        /* invalid code: q8 -128, t2 0b10, fp8 E4M3 NaN code */
    NF_CR_PAD_CODE,    /* a padding column (K..Kp-1) whose code is not the code
                          of value 0 (q2: u = 1; others 0) */
    NF_CR_PAD_SCALE,   /* a group wholly inside the padding whose scale is not
                          +0.0 (0x0000) */
    NF_CR_ROW_SCALE,   /* fp8 row scale r not finite */
    NF_CR_BLOCK_SCALE, /* nvfp4 block scale b NaN or negative (-0.0 is 0) */
    NF_CR_DIVISOR,     /* nvfp4 weight divisor w <= 0, NaN or infinite */
    NF_CR_GAP,         /* a nonzero byte between two planes */
    NF_CR_COUNT_
} nf_codec_rule;

#define NF_CODEC_NONE UINT64_MAX

/* One violation. row and index are NF_CODEC_NONE where they do not apply. */
typedef struct {
    nf_codec_rule rule;
    uint64_t row;    /* row n */
    uint64_t index;  /* CODE, PAD_CODE: column k; SCALE, PAD_SCALE: group g;
                        BLOCK_SCALE: block column c = k/16; DIVISOR: divisor
                        index; ROW_SCALE, GAP: NF_CODEC_NONE */
    uint32_t value;  /* the raw code, or the raw scale/divisor bits (FP16,
                        BF16, E4M3, FP32 word), or the gap byte */
    uint64_t offset; /* byte offset in the object of the first byte holding
                        it (a code's byte in its lowest plane) */
} nf_codec_finding;

/* The result of nf_codec_validate: for every rule, how many violations and
 * the first one (lowest row, then lowest column/group; gaps by offset). */
typedef struct {
    uint64_t count[NF_CR_COUNT_];
    nf_codec_finding first[NF_CR_COUNT_]; /* valid where count[r] > 0 */
} nf_codec_check;

/* Check every validity rule of ninfer-formats(7) Formats plus the padding
 * and gap rules of its Layouts over the whole object. Returns the number of
 * rules violated (0: valid), or a negative error (EINVAL, ESHORT). Contiguous
 * formats accept every bit pattern. */
int nf_codec_validate(const nf_tensor_enc *t, const uint8_t *obj,
                      uint64_t obj_bytes, nf_codec_check *out);

/* The rule's stable name ("scale", "code", "pad-code", "pad-scale",
 * "row-scale", "block-scale", "divisor", "gap"). Never NULL. */
const char *nf_codec_rule_name(nf_codec_rule r);

/* Describe a finding in one lowercase line without a full stop, e.g.
 * "row 3, group 1: scale 0x7c00 is not finite" or "row 0, column 5: code
 * -128 is invalid for q8_g32_fp16", into buf (size n, always terminated). */
void nf_codec_finding_str(const nf_tensor_enc *t, const nf_codec_finding *f,
                          char *buf, size_t n);

/* ---- Implementation choice (tests, benchmarks) --------------------------- */

typedef enum {
    NF_ISA_AUTO = 0,   /* the best the CPU supports (the default) */
    NF_ISA_SCALAR,     /* the reference path */
    NF_ISA_AVX2,       /* AVX2 + FMA + F16C */
    NF_ISA_AVX512,     /* AVX-512 F/BW/VL */
} nf_isa;

/* Choose the decode path for the whole process. Asking for an ISA the CPU
 * lacks (or that was not compiled in) falls back to the best available.
 * Returns the path now in use (never NF_ISA_AUTO). */
nf_isa nf_codec_set_isa(nf_isa want);

/* The path in use, and whether the CPU (and build) supports one. */
nf_isa nf_codec_isa(void);
bool nf_codec_isa_supported(nf_isa isa);
const char *nf_isa_name(nf_isa isa); /* "auto", "scalar", "avx2", "avx512" */

#ifdef __cplusplus
}
#endif
#endif
