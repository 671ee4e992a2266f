/* nf_codec.c — decode, encode and deep validation of encoded tensors
 * (DESIGN 7, 8, 13). The scalar functions are the reference: one element at
 * a time, straight from the DESIGN 7 table. The AVX2 and AVX-512 row
 * kernels compute the same single FP32 product/quotient per element from
 * the same exact operands, so they agree with it bit for bit; t_codec
 * checks that.
 */
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_fp.h"
#include "nf_qsearch.h"
#include "nf_util.h"

#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_HAVE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define NF_HAVE_X86 0
#endif

/* ---- small helpers --------------------------------------------------------- */

static inline uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t ld64(const uint8_t *p)
{
    return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
}
static inline void st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* Bits [k*w, k*w+w) of a row, LSB-first (DESIGN 8); w in {1, 2, 4, 8}. */
static inline unsigned get_bits(const uint8_t *row, uint64_t k, unsigned w)
{
    uint64_t bit = k * w;
    return (row[bit >> 3] >> (bit & 7)) & ((1u << w) - 1);
}
static inline void or_bits(uint8_t *row, uint64_t k, unsigned w, unsigned v)
{
    uint64_t bit = k * w;
    row[bit >> 3] |= (uint8_t)((v & ((1u << w) - 1)) << (bit & 7));
}

static inline bool fp16_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }
static inline bool bf16_finite(uint16_t b) { return (b & 0x7f80u) != 0x7f80u; }

const char *nf_codec_strerror(int err)
{
    switch (err) {
    case NF_CODEC_OK: return "success";
    case NF_CODEC_EINVAL: return "invalid argument";
    case NF_CODEC_ERANGE: return "range outside the object";
    case NF_CODEC_ESHORT: return "buffer shorter than the encoded size";
    case NF_CODEC_ENONFINITE: return "non-finite source value";
    case NF_CODEC_EVALUE: return "source value not representable";
    case NF_CODEC_ENOMEM: return "out of memory";
    case NF_CODEC_EOVERFLOW: return "finite source value that rounds to infinity in bf16";
    default: return "unknown error";
    }
}

/* ---- description ----------------------------------------------------------- */

nf_enc_status nf_tensor_enc_init(nf_tensor_enc *t, nf_format f, nf_layout l,
                                 const uint64_t *dims, unsigned rank,
                                 uint64_t divisors, const char **why)
{
    if (!t)
        return NF_ENC_INVALID;
    memset(t, 0, sizeof *t);
    nf_encoding e;
    nf_enc_status st = nf_encoding_compute(f, l, dims, rank, divisors, &e, why);
    if (st != NF_ENC_OK)
        return st;
    t->format = f;
    t->layout = l;
    t->rank = rank;
    for (unsigned i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->divisors = divisors;
    t->enc = e;
    if (l == NF_LAY_CONTIGUOUS_LE_V1) {
        t->rows = rank ? dims[0] : 1;
        t->cols = e.elements / t->rows;
    } else {
        t->rows = dims[0];
        t->cols = dims[1];
    }
    return NF_ENC_OK;
}

static int check_obj(const nf_tensor_enc *t, const void *obj, uint64_t obj_bytes)
{
    if (!t || !obj || t->enc.nplanes == 0 || t->format < 0 ||
        t->format >= NF_FMT_COUNT_)
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    return 0;
}

/* Where one row of a rank-2 object lives. */
typedef struct {
    const uint8_t *base, *high, *scales; /* row_split: planes' row n */
    const uint8_t *codes;                /* nvfp4, fp8: codes row n */
    float rscale;                        /* fp8: bf16(r[n]); nvfp4: w */
    nf_rowsplit_info ri;
} rowp;

static rowp row_ptrs(const nf_tensor_enc *t, const uint8_t *obj, uint64_t n)
{
    rowp r;
    memset(&r, 0, sizeof r);
    const nf_plane *p = t->enc.plane;
    switch (t->layout) {
    case NF_LAY_ROW_SPLIT_K128_V1:
        r.ri = nf_rowsplit_info_of(t->format);
        r.base = obj + p[0].offset + n * p[0].row_bytes;
        if (r.ri.high_bits)
            r.high = obj + p[1].offset + n * p[1].row_bytes;
        r.scales = obj + p[t->enc.nplanes - 1].offset +
                   n * p[t->enc.nplanes - 1].row_bytes;
        break;
    case NF_LAY_ROW_SCALE_V1:
        r.codes = obj + p[0].offset + n * t->cols;
        r.rscale = nf_bf16_to_f32(ld16(obj + p[1].offset + 2 * n));
        break;
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1: {
        uint64_t slice = t->rows / t->divisors;
        r.codes = obj + p[0].offset + n * (t->cols / 2);
        r.scales = obj + p[1].offset;
        r.rscale = nf_f32_from_bits(ld32(obj + p[2].offset + 4 * (n / slice)));
        break;
    }
    default:
        break;
    }
    return r;
}

/* The signed code value of a row_split raw code (DESIGN 7): q2 offset by
 * one, the others two's complement of code_bits bits. */
static inline int rs_signed(nf_format f, unsigned raw, unsigned bits)
{
    if (f == NF_FMT_Q2_G64_FP16)
        return (int)raw - 1;
    int half = 1 << (bits - 1);
    return (int)(raw ^ (unsigned)half) - half;
}

static inline unsigned rs_raw(const rowp *r, uint64_t k)
{
    unsigned raw = get_bits(r->base, k, r->ri.base_bits);
    if (r->ri.high_bits)
        raw |= get_bits(r->high, k, r->ri.high_bits) << 4;
    return raw;
}

/* ---- scalar reference decode ---------------------------------------------- */

/* Decode columns [k0,k1) of row n of a rank-2 object, one element at a
 * time, exactly as DESIGN 7 writes it. */
static void row_scalar(const nf_tensor_enc *t, const uint8_t *obj, uint64_t n,
                       uint64_t k0, uint64_t k1, float *out)
{
    if (t->layout == NF_LAY_GGUF_ROWS_V1) { /* DESIGN 7.5: nf_codec_gguf.c */
        nf_gguf_row_decode(t, NF_ISA_SCALAR, obj, n, k0, k1, out);
        return;
    }
    rowp r = row_ptrs(t, obj, n);
    for (uint64_t k = k0; k < k1; k++) {
        float v;
        switch (t->layout) {
        case NF_LAY_ROW_SPLIT_K128_V1: {
            int c = rs_signed(t->format, rs_raw(&r, k), r.ri.code_bits);
            float s = nf_fp16_to_f32(ld16(r.scales + 2 * (k / r.ri.group)));
            v = (float)c * s;
            break;
        }
        case NF_LAY_ROW_SCALE_V1:
            v = nf_e4m3_to_f32(r.codes[k]) * r.rscale;
            break;
        case NF_LAY_BLOCK_SCALE_K16_M128X4_V1: {
            uint8_t c = (uint8_t)get_bits(r.codes, k, 4);
            float b = nf_e4m3_to_f32(
                r.scales[nf_nvfp4_scale_index(n, k / 16, t->cols)]);
            v = (nf_e2m1_to_f32(c) * b) / r.rscale;
            break;
        }
        default:
            v = 0.0f;
            break;
        }
        out[k - k0] = v;
    }
}

/* Contiguous formats, elements [e0,e1). */
static void contig_scalar(const nf_tensor_enc *t, const uint8_t *d,
                          uint64_t e0, uint64_t e1, float *out)
{
    for (uint64_t e = e0; e < e1; e++) {
        switch (t->format) {
        case NF_FMT_BF16: out[e - e0] = nf_bf16_to_f32(ld16(d + 2 * e)); break;
        case NF_FMT_FP32: out[e - e0] = nf_f32_from_bits(ld32(d + 4 * e)); break;
        default: out[e - e0] = (float)(int32_t)ld32(d + 4 * e); break;
        }
    }
}

/* ---- SIMD decode ------------------------------------------------------------ */

typedef void (*row_fn)(const nf_tensor_enc *, const uint8_t *, uint64_t,
                       uint64_t, uint64_t, float *);
typedef void (*contig_fn)(const nf_tensor_enc *, const uint8_t *, uint64_t,
                          uint64_t, float *);

#if NF_HAVE_X86

#define NF_T_AVX2 __attribute__((target("avx2,fma,f16c")))
#define NF_T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define NF_INLINE static inline __attribute__((always_inline))

/* 8 signed codes of columns k..k+7 (k % 8 == 0) as int32 lanes. `fmt` is a
 * constant at every call site, so each format gets its own loop. */
NF_T_AVX2 NF_INLINE __m256i codes8(nf_format fmt, const uint8_t *base,
                                    const uint8_t *high, uint64_t k)
{
    const __m256i sh4 = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i sh2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i sh1 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i v, h;
    switch (fmt) {
    case NF_FMT_Q8_G32_FP16:
        return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(base + k)));
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16:
        v = _mm256_srlv_epi32(_mm256_set1_epi32(ld16(base + k / 4)), sh2);
        v = _mm256_and_si256(v, _mm256_set1_epi32(3));
        if (fmt == NF_FMT_Q2_G64_FP16)
            return _mm256_sub_epi32(v, _mm256_set1_epi32(1));
        return _mm256_sub_epi32(_mm256_xor_si256(v, _mm256_set1_epi32(2)),
                                _mm256_set1_epi32(2));
    default:
        break;
    }
    v = _mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(base + k / 2)), sh4);
    v = _mm256_and_si256(v, _mm256_set1_epi32(15));
    int half = 8;
    if (fmt == NF_FMT_Q5_G64_FP16) {
        h = _mm256_srlv_epi32(_mm256_set1_epi32(high[k / 8]), sh1);
        h = _mm256_and_si256(h, _mm256_set1_epi32(1));
        v = _mm256_or_si256(v, _mm256_slli_epi32(h, 4));
        half = 16;
    } else if (fmt == NF_FMT_Q6_G64_FP16) {
        h = _mm256_srlv_epi32(_mm256_set1_epi32(ld16(high + k / 4)), sh2);
        h = _mm256_and_si256(h, _mm256_set1_epi32(3));
        v = _mm256_or_si256(v, _mm256_slli_epi32(h, 4));
        half = 32;
    }
    return _mm256_sub_epi32(_mm256_xor_si256(v, _mm256_set1_epi32(half)),
                            _mm256_set1_epi32(half));
}

NF_T_AVX2 NF_INLINE void rs_body8(nf_format fmt, unsigned G, const rowp *r,
                                  uint64_t ka, uint64_t kb, float *o)
{
    for (uint64_t k = ka; k < kb;) {
        uint64_t g = k / G, ge = (g + 1) * G;
        if (ge > kb)
            ge = kb;
        __m256 s = _mm256_set1_ps(nf_fp16_to_f32(ld16(r->scales + 2 * g)));
        for (; k < ge; k += 8) {
            __m256 c = _mm256_cvtepi32_ps(codes8(fmt, r->base, r->high, k));
            _mm256_storeu_ps(o + (k - ka), _mm256_mul_ps(c, s));
        }
    }
}

/* E4M3 of 8 codes (zero-extended in int32 lanes) as exact f32: the code's
 * bits moved to binary32 position read as a number 2^-120 times too small
 * (subnormals included), NaN patched in, sign copied. */
NF_T_AVX2 NF_INLINE __m256 e4m3x8(__m256i x)
{
    __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7f));
    __m256 f = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_slli_epi32(mag, 20)),
                             _mm256_set1_ps(0x1p120f));
    __m256 nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    f = _mm256_blendv_ps(f, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan);
    __m256i sg = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x80)), 24);
    return _mm256_or_ps(f, _mm256_castsi256_ps(sg));
}

NF_T_AVX2 static void row_avx2(const nf_tensor_enc *t, const uint8_t *obj,
                               uint64_t n, uint64_t k0, uint64_t k1, float *out)
{
    if (t->layout == NF_LAY_GGUF_ROWS_V1) {
        nf_gguf_row_decode(t, NF_ISA_AVX2, obj, n, k0, k1, out);
        return;
    }
    uint64_t ka = (k0 + 7) & ~(uint64_t)7, kb = k1 & ~(uint64_t)7;
    if (ka >= kb) {
        row_scalar(t, obj, n, k0, k1, out);
        return;
    }
    if (k0 < ka)
        row_scalar(t, obj, n, k0, ka, out);
    rowp r = row_ptrs(t, obj, n);
    float *o = out + (ka - k0);
    switch (t->format) {
    case NF_FMT_Q2_G64_FP16: rs_body8(NF_FMT_Q2_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q4_G64_FP16: rs_body8(NF_FMT_Q4_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q5_G64_FP16: rs_body8(NF_FMT_Q5_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q6_G64_FP16: rs_body8(NF_FMT_Q6_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q8_G32_FP16: rs_body8(NF_FMT_Q8_G32_FP16, 32, &r, ka, kb, o); break;
    case NF_FMT_T2_G128_FP16: rs_body8(NF_FMT_T2_G128_FP16, 128, &r, ka, kb, o); break;
    case NF_FMT_FP8_E4M3FN_ROW_BF16: {
        __m256 rs = _mm256_set1_ps(r.rscale);
        for (uint64_t k = ka; k < kb; k += 8) {
            __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(r.codes + k)));
            _mm256_storeu_ps(o + (k - ka), _mm256_mul_ps(e4m3x8(x), rs));
        }
        break;
    }
    case NF_FMT_NVFP4: {
        /* Per block, divide the 8 E2M1 magnitudes once: (e2m1*b)/w of a
         * negative code is exactly the negation (IEEE mul/div are sign
         * symmetric), so the sign is applied with XOR afterwards. */
        const __m256 lut = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
        const __m256i sh4 = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
        __m256 w = _mm256_set1_ps(r.rscale), vals = lut;
        for (uint64_t k = ka; k < kb; k += 8) {
            if (k == ka || k % 16 == 0) {
                float b = nf_e4m3_to_f32(r.scales[nf_nvfp4_scale_index(n, k / 16, t->cols)]);
                vals = _mm256_div_ps(_mm256_mul_ps(lut, _mm256_set1_ps(b)), w);
            }
            __m256i nib = _mm256_and_si256(
                _mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(r.codes + k / 2)), sh4),
                _mm256_set1_epi32(15));
            __m256 v = _mm256_permutevar8x32_ps(vals, _mm256_and_si256(nib, _mm256_set1_epi32(7)));
            __m256i sg = _mm256_slli_epi32(_mm256_and_si256(nib, _mm256_set1_epi32(8)), 28);
            _mm256_storeu_ps(o + (k - ka), _mm256_xor_ps(v, _mm256_castsi256_ps(sg)));
        }
        break;
    }
    default:
        row_scalar(t, obj, n, ka, kb, o);
        break;
    }
    if (kb < k1)
        row_scalar(t, obj, n, kb, k1, out + (kb - k0));
}

NF_T_AVX2 static void contig_avx2(const nf_tensor_enc *t, const uint8_t *d,
                                  uint64_t e0, uint64_t e1, float *out)
{
    if (t->format != NF_FMT_BF16) {
        contig_scalar(t, d, e0, e1, out);
        return;
    }
    uint64_t e = e0;
    for (; e + 8 <= e1; e += 8) {
        __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(d + 2 * e)));
        _mm256_storeu_ps(out + (e - e0), _mm256_castsi256_ps(_mm256_slli_epi32(x, 16)));
    }
    contig_scalar(t, d, e, e1, out + (e - e0));
}

/* ---- AVX-512: the same, 16 lanes ---- */

/* Two 32-bit words spread over lanes 0-7 and 8-15. */
NF_T_AVX512 NF_INLINE __m512i two_words(uint64_t w)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi32((int)(uint32_t)w)),
                              _mm256_set1_epi32((int)(uint32_t)(w >> 32)), 1);
}

NF_T_AVX512 NF_INLINE __m512i codes16(nf_format fmt, const uint8_t *base,
                                       const uint8_t *high, uint64_t k)
{
    const __m512i sh4 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28,
                                          0, 4, 8, 12, 16, 20, 24, 28);
    const __m512i sh2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14,
                                          16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i sh1 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7,
                                          8, 9, 10, 11, 12, 13, 14, 15);
    __m512i v, h;
    switch (fmt) {
    case NF_FMT_Q8_G32_FP16:
        return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(base + k)));
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16:
        v = _mm512_srlv_epi32(_mm512_set1_epi32((int)ld32(base + k / 4)), sh2);
        v = _mm512_and_si512(v, _mm512_set1_epi32(3));
        if (fmt == NF_FMT_Q2_G64_FP16)
            return _mm512_sub_epi32(v, _mm512_set1_epi32(1));
        return _mm512_sub_epi32(_mm512_xor_si512(v, _mm512_set1_epi32(2)),
                                _mm512_set1_epi32(2));
    default:
        break;
    }
    v = _mm512_srlv_epi32(two_words(ld64(base + k / 2)), sh4);
    v = _mm512_and_si512(v, _mm512_set1_epi32(15));
    int half = 8;
    if (fmt == NF_FMT_Q5_G64_FP16) {
        h = _mm512_srlv_epi32(_mm512_set1_epi32(ld16(high + k / 8)), sh1);
        h = _mm512_and_si512(h, _mm512_set1_epi32(1));
        v = _mm512_or_si512(v, _mm512_slli_epi32(h, 4));
        half = 16;
    } else if (fmt == NF_FMT_Q6_G64_FP16) {
        h = _mm512_srlv_epi32(_mm512_set1_epi32((int)ld32(high + k / 4)), sh2);
        h = _mm512_and_si512(h, _mm512_set1_epi32(3));
        v = _mm512_or_si512(v, _mm512_slli_epi32(h, 4));
        half = 32;
    }
    return _mm512_sub_epi32(_mm512_xor_si512(v, _mm512_set1_epi32(half)),
                            _mm512_set1_epi32(half));
}

NF_T_AVX512 NF_INLINE void rs_body16(nf_format fmt, unsigned G, const rowp *r,
                                     uint64_t ka, uint64_t kb, float *o)
{
    for (uint64_t k = ka; k < kb;) {
        uint64_t g = k / G, ge = (g + 1) * G;
        if (ge > kb)
            ge = kb;
        __m512 s = _mm512_set1_ps(nf_fp16_to_f32(ld16(r->scales + 2 * g)));
        for (; k < ge; k += 16) {
            __m512 c = _mm512_cvtepi32_ps(codes16(fmt, r->base, r->high, k));
            _mm512_storeu_ps(o + (k - ka), _mm512_mul_ps(c, s));
        }
    }
}

NF_T_AVX512 static void row_avx512(const nf_tensor_enc *t, const uint8_t *obj,
                                   uint64_t n, uint64_t k0, uint64_t k1, float *out)
{
    if (t->layout == NF_LAY_GGUF_ROWS_V1) {
        nf_gguf_row_decode(t, NF_ISA_AVX512, obj, n, k0, k1, out);
        return;
    }
    uint64_t ka = (k0 + 15) & ~(uint64_t)15, kb = k1 & ~(uint64_t)15;
    if (ka >= kb) {
        row_avx2(t, obj, n, k0, k1, out);
        return;
    }
    if (k0 < ka)
        row_avx2(t, obj, n, k0, ka, out);
    rowp r = row_ptrs(t, obj, n);
    float *o = out + (ka - k0);
    switch (t->format) {
    case NF_FMT_Q2_G64_FP16: rs_body16(NF_FMT_Q2_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q4_G64_FP16: rs_body16(NF_FMT_Q4_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q5_G64_FP16: rs_body16(NF_FMT_Q5_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q6_G64_FP16: rs_body16(NF_FMT_Q6_G64_FP16, 64, &r, ka, kb, o); break;
    case NF_FMT_Q8_G32_FP16: rs_body16(NF_FMT_Q8_G32_FP16, 32, &r, ka, kb, o); break;
    case NF_FMT_T2_G128_FP16: rs_body16(NF_FMT_T2_G128_FP16, 128, &r, ka, kb, o); break;
    case NF_FMT_FP8_E4M3FN_ROW_BF16: {
        __m512 rs = _mm512_set1_ps(r.rscale);
        const __m512i m7f = _mm512_set1_epi32(0x7f);
        for (uint64_t k = ka; k < kb; k += 16) {
            __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(r.codes + k)));
            __m512i mag = _mm512_and_si512(x, m7f);
            __m512 f = _mm512_mul_ps(_mm512_castsi512_ps(_mm512_slli_epi32(mag, 20)),
                                     _mm512_set1_ps(0x1p120f));
            f = _mm512_mask_mov_ps(f, _mm512_cmpeq_epi32_mask(mag, m7f),
                                   _mm512_castsi512_ps(_mm512_set1_epi32(0x7fc00000)));
            __m512i sg = _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x80)), 24);
            f = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(f), sg));
            _mm512_storeu_ps(o + (k - ka), _mm512_mul_ps(f, rs));
        }
        break;
    }
    case NF_FMT_NVFP4: {
        /* as in row_avx2: 8 quotients per block, sign by XOR */
        const __m256 lut = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
        const __m512i sh4 = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28,
                                              0, 4, 8, 12, 16, 20, 24, 28);
        __m256 w = _mm256_set1_ps(r.rscale);
        for (uint64_t k = ka; k < kb; k += 16) {
            float b = nf_e4m3_to_f32(r.scales[nf_nvfp4_scale_index(n, k / 16, t->cols)]);
            __m512 vals = _mm512_castps256_ps512(
                _mm256_div_ps(_mm256_mul_ps(lut, _mm256_set1_ps(b)), w));
            __m512i nib = _mm512_and_si512(_mm512_srlv_epi32(two_words(ld64(r.codes + k / 2)), sh4),
                                           _mm512_set1_epi32(15));
            __m512 v = _mm512_permutexvar_ps(_mm512_and_si512(nib, _mm512_set1_epi32(7)), vals);
            __m512i sg = _mm512_slli_epi32(_mm512_and_si512(nib, _mm512_set1_epi32(8)), 28);
            v = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sg));
            _mm512_storeu_ps(o + (k - ka), v);
        }
        break;
    }
    default:
        row_avx2(t, obj, n, ka, kb, o);
        break;
    }
    if (kb < k1)
        row_avx2(t, obj, n, kb, k1, out + (kb - k0));
}

NF_T_AVX512 static void contig_avx512(const nf_tensor_enc *t, const uint8_t *d,
                                      uint64_t e0, uint64_t e1, float *out)
{
    if (t->format != NF_FMT_BF16) {
        contig_scalar(t, d, e0, e1, out);
        return;
    }
    uint64_t e = e0;
    for (; e + 16 <= e1; e += 16) {
        __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(d + 2 * e)));
        _mm512_storeu_ps(out + (e - e0), _mm512_castsi512_ps(_mm512_slli_epi32(x, 16)));
    }
    contig_avx2(t, d, e, e1, out + (e - e0));
}

/* CPUID is asked once (in a virtual machine each CPUID is a trip to the
 * hypervisor, tens of microseconds). */
static _Atomic int g_cpu = -1; /* bit 0: AVX2+FMA+F16C, bit 1: AVX-512 F/BW/VL */

static int cpu_bits(void)
{
    int v = atomic_load_explicit(&g_cpu, memory_order_relaxed);
    if (v >= 0)
        return v;
    unsigned a, b, c, d;
    __builtin_cpu_init();
    v = 0;
    /* clang 14 does not know "f16c" in __builtin_cpu_supports: CPUID.1:ECX.29 */
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        v |= 1;
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl"))
            v |= 2;
    }
    atomic_store_explicit(&g_cpu, v, memory_order_relaxed);
    return v;
}

static bool cpu_avx2(void)
{
    return cpu_bits() & 1;
}

static bool cpu_avx512(void)
{
    return (cpu_bits() & 2) != 0;
}
#else
static bool cpu_avx2(void) { return false; }
static bool cpu_avx512(void) { return false; }
#endif /* NF_HAVE_X86 */

/* ---- ISA choice --------------------------------------------------------- */

static _Atomic int g_isa = NF_ISA_AUTO;

bool nf_codec_isa_supported(nf_isa isa)
{
    switch (isa) {
    case NF_ISA_AUTO:
    case NF_ISA_SCALAR: return true;
    case NF_ISA_AVX2: return cpu_avx2();
    case NF_ISA_AVX512: return cpu_avx512();
    default: return false;
    }
}

static nf_isa best_isa(void)
{
    if (cpu_avx512())
        return NF_ISA_AVX512;
    if (cpu_avx2())
        return NF_ISA_AVX2;
    return NF_ISA_SCALAR;
}

nf_isa nf_codec_set_isa(nf_isa want)
{
    nf_isa got = (want == NF_ISA_AUTO || !nf_codec_isa_supported(want)) ? best_isa() : want;
    atomic_store_explicit(&g_isa, (int)got, memory_order_relaxed);
    return got;
}

nf_isa nf_codec_isa(void)
{
    int v = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (v == NF_ISA_AUTO) {
        v = (int)best_isa();
        atomic_store_explicit(&g_isa, v, memory_order_relaxed);
    }
    return (nf_isa)v;
}

const char *nf_isa_name(nf_isa isa)
{
    switch (isa) {
    case NF_ISA_AUTO: return "auto";
    case NF_ISA_SCALAR: return "scalar";
    case NF_ISA_AVX2: return "avx2";
    case NF_ISA_AVX512: return "avx512";
    default: return "unknown";
    }
}

static void pick(row_fn *rf, contig_fn *cf)
{
    *rf = row_scalar;
    *cf = contig_scalar;
#if NF_HAVE_X86
    switch (nf_codec_isa()) {
    case NF_ISA_AVX512: *rf = row_avx512; *cf = contig_avx512; break;
    case NF_ISA_AVX2: *rf = row_avx2; *cf = contig_avx2; break;
    default: break;
    }
#endif
}

/* ---- decode API ------------------------------------------------------------ */

int nf_decode_elems_f32(const nf_tensor_enc *t, const uint8_t *obj,
                        uint64_t obj_bytes, uint64_t e0, uint64_t e1, float *out)
{
    int rc = check_obj(t, obj, obj_bytes);
    if (rc)
        return rc;
    if (e0 > e1 || e1 > t->enc.elements)
        return NF_CODEC_ERANGE;
    if (e0 == e1)
        return 0;
    if (!out)
        return NF_CODEC_EINVAL;
    row_fn rf;
    contig_fn cf;
    pick(&rf, &cf);
    if (t->layout == NF_LAY_CONTIGUOUS_LE_V1) {
        cf(t, obj + t->enc.plane[0].offset, e0, e1, out);
        return 0;
    }
    uint64_t K = t->cols, n = e0 / K, k = e0 % K, e = e0;
    while (e < e1) {
        uint64_t kend = K - k < e1 - e ? K : k + (e1 - e);
        rf(t, obj, n, k, kend, out + (e - e0));
        e += kend - k;
        n++;
        k = 0;
    }
    return 0;
}

/* Rows -> elements, with the overflow checks. */
static int rows_to_elems(const nf_tensor_enc *t, uint64_t r0, uint64_t r1,
                         uint64_t *e0, uint64_t *e1)
{
    if (!t || t->enc.nplanes == 0)
        return NF_CODEC_EINVAL;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    /* r1 * cols <= elements, so these cannot overflow */
    *e0 = r0 * t->cols;
    *e1 = r1 * t->cols;
    return 0;
}

int nf_decode_rows_f32(const nf_tensor_enc *t, const uint8_t *obj,
                       uint64_t obj_bytes, uint64_t r0, uint64_t r1, float *out)
{
    uint64_t e0, e1;
    int rc = rows_to_elems(t, r0, r1, &e0, &e1);
    return rc ? rc : nf_decode_elems_f32(t, obj, obj_bytes, e0, e1, out);
}

int nf_decode_elems_bf16(const nf_tensor_enc *t, const uint8_t *obj,
                         uint64_t obj_bytes, uint64_t e0, uint64_t e1,
                         uint16_t *out)
{
    int rc = check_obj(t, obj, obj_bytes);
    if (rc)
        return rc;
    if (e0 > e1 || e1 > t->enc.elements)
        return NF_CODEC_ERANGE;
    if (e0 == e1)
        return 0;
    if (!out)
        return NF_CODEC_EINVAL;
    if (t->format == NF_FMT_BF16) {
        const uint8_t *d = obj + t->enc.plane[0].offset;
        for (uint64_t e = e0; e < e1; e++)
            out[e - e0] = ld16(d + 2 * e);
        return 0;
    }
    float buf[2048];
    for (uint64_t e = e0; e < e1;) {
        uint64_t m = e1 - e < 2048 ? e1 - e : 2048;
        rc = nf_decode_elems_f32(t, obj, obj_bytes, e, e + m, buf);
        if (rc)
            return rc;
        for (uint64_t i = 0; i < m; i++)
            out[e - e0 + i] = nf_f32_to_bf16(buf[i]);
        e += m;
    }
    return 0;
}

int nf_decode_rows_bf16(const nf_tensor_enc *t, const uint8_t *obj,
                        uint64_t obj_bytes, uint64_t r0, uint64_t r1,
                        uint16_t *out)
{
    uint64_t e0, e1;
    int rc = rows_to_elems(t, r0, r1, &e0, &e1);
    return rc ? rc : nf_decode_elems_bf16(t, obj, obj_bytes, e0, e1, out);
}

/* ---- encode ---------------------------------------------------------------- */

typedef struct {
    int qmin, qmax;
    unsigned G;
} qrange;

static qrange q_range(nf_format f)
{
    switch (f) {
    case NF_FMT_Q2_G64_FP16: return (qrange){-1, 2, 64};
    case NF_FMT_Q4_G64_FP16: return (qrange){-8, 7, 64};
    case NF_FMT_Q5_G64_FP16: return (qrange){-16, 15, 64};
    case NF_FMT_Q6_G64_FP16: return (qrange){-32, 31, 64};
    case NF_FMT_Q8_G32_FP16: return (qrange){-127, 127, 32};
    case NF_FMT_T2_G128_FP16: return (qrange){-1, 1, 128};
    default: return (qrange){0, 0, 0};
    }
}

/* Round a candidate scale to FP16, an overflow saturating at +-65504 (so
 * that the stored scale is always finite). */
static uint16_t q_scale(double s)
{
    uint16_t b = nf_f32_to_fp16((float)s);
    if (!fp16_finite(b))
        b = (uint16_t)((b & 0x8000u) | 0x7bffu);
    return b;
}

/* Candidate grid: scales that map the largest-magnitude element to
 * end + NF_GRID_STEP*i, i in [-NF_GRID, NF_GRID], for either end of the
 * code range. (9 points per end measured as good as 19 on Gaussian data.) */
#define NF_GRID 4
#define NF_GRID_STEP 0.2

/* The grid's divisors of a code range (end + NF_GRID_STEP*i for either
 * end, the same f64 values the search always used), computed once per
 * call of the encoder. */
typedef struct {
    double dv[2 * (2 * NF_GRID + 1)];
    unsigned nd;
} qgrid;

static void q_grid_of(const qrange *q, qgrid *g)
{
    int ends[2] = {q->qmax, q->qmin};
    int nends = q->qmin == -q->qmax ? 1 : 2;
    g->nd = 0;
    for (int e = 0; e < nends; e++) {
        for (int i = -NF_GRID; i <= NF_GRID; i++) {
            double d = ends[e] + NF_GRID_STEP * i;
            if (d == 0.0 || (d > 0) != (ends[e] > 0))
                continue;
            g->dv[g->nd++] = d;
        }
    }
}

static uint16_t q_group_(const qrange *q, const qgrid *qg, const float *x, unsigned n,
                         bool absmax_only, int *codes, double *sse, uint64_t *sat, float m,
                         uint16_t base);

/* q_group_ after the group's amax: an all-zero group gets +0.0; the scale
 * counts of nf_encode_stats (saturated: the absmax scale is beyond FP16;
 * zeroed: a nonzero group whose chosen scale is 0). */
static uint16_t q_group(nf_format f, const qrange *q, const qgrid *qg, const float *x,
                        unsigned n, bool absmax_only, int *codes, nf_encode_stats *st)
{
    float m;
    float amax = nf_qs_amax(x, n, &m, nf_codec_isa());
    if (amax == 0.0f) {
        for (unsigned i = 0; i < n; i++)
            codes[i] = 0;
        return 0x0000; /* +0.0 */
    }
    double ideal = f == NF_FMT_Q2_G64_FP16 ? (double)m / 2.0 : (double)amax / q->qmax;
    st->scales++;
    if (!fp16_finite(nf_f32_to_fp16((float)ideal)))
        st->scales_saturated++;
    uint16_t sb = q_group_(q, qg, x, n, absmax_only, codes, &st->sse, &st->saturated, m,
                           q_scale(ideal));
    if ((sb & 0x7fffu) == 0) { /* DESIGN 7.4: +0.0 with zero codes (q2's m < 0 gave -0.0) */
        st->scales_zeroed++;
        sb = 0x0000;
    }
    return sb;
}

/* The candidates a group's search has evaluated and their nf_qs_fast
 * errors, direct-mapped by the scale's low 6 bits (a group's candidates lie
 * within a few dozen FP16 steps of each other, so they seldom collide; a
 * collision forgets the older entry, which is then evaluated again, to the
 * same bits). 0xffff, a NaN, is never a candidate: it marks a free slot. */
typedef struct {
    uint16_t sb[64];
    double err[64];
} qmemo;

static inline bool memo_get(const qmemo *mm, uint16_t sb, double *err)
{
    if (mm->sb[sb & 63] != sb)
        return false;
    *err = mm->err[sb & 63];
    return true;
}

static inline void memo_put(qmemo *mm, uint16_t sb, double err)
{
    mm->sb[sb & 63] = sb;
    mm->err[sb & 63] = err;
}

/* Choose the FP16 scale of one group (DESIGN 7.4) and its codes: the
 * absmax baseline, the grid above, least-squares refits of the best codes
 * (for fixed codes the best real scale is sum(c*x)/sum(c*c)), and the FP16
 * neighbours of the best, ranked by nf_qs_fast (a scale met twice is
 * evaluated once, qmemo). The winner replaces the
 * baseline only if its exact error (nf_qs_exact) is strictly smaller, so
 * the result is never worse than absmax (base: its scale; m: the first
 * element of the largest magnitude). Returns the scale bits;
 * codes[0..n) receives the codes. The arithmetic is nf_qsearch's, the same
 * bits on every ISA. */
static uint16_t q_group_(const qrange *q, const qgrid *qg, const float *x, unsigned n,
                         bool absmax_only, int *codes, double *sse, uint64_t *sat, float m,
                         uint16_t base)
{
    nf_isa isa = nf_codec_isa();
    uint16_t best = base;
    if (!absmax_only) {
        float xp[128] __attribute__((aligned(64)));
        unsigned L = (n + 7) & ~7u;
        memcpy(xp, x, n * sizeof *xp);
        for (unsigned i = n; i < L; i++)
            xp[i] = 0.0f;
        /* the baseline and the grid, evaluated together (first wins ties,
         * so a scale that repeats an earlier one is left out) */
        uint16_t grid[2 * (2 * NF_GRID + 1)], cand[1 + 2 * (2 * NF_GRID + 1)];
        double err[1 + 2 * (2 * NF_GRID + 1)];
        unsigned nc = 0;
        cand[nc++] = base;
        nf_qs_grid((double)m, qg->dv, qg->nd, grid, isa); /* q_scale(m / d) */
        qmemo mm;
        memset(mm.sb, 0xff, sizeof mm.sb);
        mm.sb[base & 63] = base;
        for (unsigned j = 0; j < qg->nd; j++)
            if (mm.sb[grid[j] & 63] != grid[j]) /* not a repeat (or a collision: kept) */
                mm.sb[grid[j] & 63] = cand[nc++] = grid[j];
        nf_qs_fast(xp, L, q->qmin, q->qmax, cand, nc, err, isa);
        double best_err = err[0];
        memo_put(&mm, cand[0], err[0]);
        for (unsigned j = 1; j < nc; j++) {
            memo_put(&mm, cand[j], err[j]);
            if (err[j] < best_err) {
                best_err = err[j];
                best = cand[j];
            }
        }
        /* Every candidate compared so far has an error >= best_err, so one
         * met again cannot win (a win is strictly smaller): the memo skips
         * it with the result unchanged. */
        /* least-squares refits: the sums of the best's codes, then each
         * candidate's error and its own sums in one pass */
        double cx;
        int64_t cc;
        nf_qs_refit(xp, L, q->qmin, q->qmax, best, &cx, &cc, isa);
        for (int it = 0; it < 3 && cc != 0; it++) {
            uint16_t sb = q_scale(cx / (double)cc);
            double e1, cx1;
            int64_t cc1;
            if (memo_get(&mm, sb, &e1))
                break; /* evaluated: e1 >= best_err */
            nf_qs_fast_refit(xp, L, q->qmin, q->qmax, sb, &e1, &cx1, &cc1, isa);
            memo_put(&mm, sb, e1);
            if (!(e1 < best_err))
                break;
            best_err = e1;
            best = sb;
            cx = cx1;
            cc = cc1;
        }
        /* the FP16 neighbours: dlt -2, -1, 1, 2 from the current best (which
         * moves when one wins); those of the best at entry not yet
         * evaluated are evaluated together, the others when reached */
        static const int dl[4] = {-2, -1, 1, 2};
        uint16_t nb[4];
        double ne[4];
        unsigned nn = 0;
        for (int k = 0; k < 4; k++) {
            int mag = (int)(best & 0x7fffu) + dl[k];
            uint16_t sb = (uint16_t)((best & 0x8000u) | (unsigned)(mag > 0 ? mag : 0));
            double e1;
            if (mag > 0 && mag <= 0x7bff && !memo_get(&mm, sb, &e1))
                nb[nn++] = sb;
        }
        nf_qs_fast(xp, L, q->qmin, q->qmax, nb, nn, ne, isa);
        for (unsigned k = 0; k < nn; k++)
            memo_put(&mm, nb[k], ne[k]);
        for (int k = 0; k < 4; k++) {
            int mag = (int)(best & 0x7fffu) + dl[k];
            if (mag <= 0 || mag > 0x7bff)
                continue;
            uint16_t sb = (uint16_t)((best & 0x8000u) | (unsigned)mag);
            double e1;
            if (!memo_get(&mm, sb, &e1)) {
                nf_qs_fast(xp, L, q->qmin, q->qmax, &sb, 1, &e1, isa);
                memo_put(&mm, sb, e1);
            }
            if (e1 < best_err) {
                best_err = e1;
                best = sb;
            }
        }
        /* the exact comparison that guarantees "never worse than absmax" */
        if (best != base) {
            int cb[128];
            uint64_t sat_best = 0, sat_base = 0;
            double eb = nf_qs_exact(xp, n, q->qmin, q->qmax, best, codes, &sat_best, isa);
            double e0 = nf_qs_exact(xp, n, q->qmin, q->qmax, base, cb, &sat_base, isa);
            if (eb < e0) {
                *sse += eb;
                *sat += sat_best;
                return best;
            }
            memcpy(codes, cb, n * sizeof *codes);
            *sse += e0;
            *sat += sat_base;
            return base;
        }
    }
    *sse += nf_qs_exact(x, n, q->qmin, q->qmax, base, codes, sat, isa);
    return base;
}

static bool all_finite(const float *x, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

#if NF_HAVE_X86
/* One group's codes into the planes, as enc_rowsplit's scalar loops do:
 * raw = code - off (zero_raw past nv), the low bb bits packed LSB-first
 * into the base plane, bits 4.. (hb of them) into the high plane. */
NF_T_AVX512 static void pack512(const int *codes, unsigned nv, unsigned G, int off,
                                unsigned zero_raw, unsigned bb, unsigned hb, uint8_t *pbb,
                                uint8_t *ph)
{
    uint8_t raw[128] __attribute__((aligned(64)));
    for (unsigned i = 0; i < G; i += 16) {
        __mmask16 m = i >= nv ? 0 : nv - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (nv - i)) - 1);
        __m512i c = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(m, codes + i), _mm512_set1_epi32(off));
        c = _mm512_mask_mov_epi32(_mm512_set1_epi32((int)zero_raw), m, c);
        _mm_store_si128((__m128i *)(void *)(raw + i), _mm512_cvtepi32_epi8(c));
    }
    for (unsigned i = 0; i < G; i += 64) {
        unsigned n = G - i < 64 ? G - i : 64; /* G is 32, 64 or 128 */
        __mmask64 mb = n == 64 ? ~0ull : (1ull << n) - 1;
        __m512i v = _mm512_maskz_loadu_epi8(mb, raw + i);
        if (bb == 8) {
            _mm512_mask_storeu_epi8(pbb + i, mb, v);
        } else if (bb == 4) { /* u16 lanes: lo | hi << 4 */
            __m512i w = _mm512_ternarylogic_epi32(_mm512_and_si512(v, _mm512_set1_epi16(0x000f)),
                                                  _mm512_srli_epi16(v, 4), _mm512_set1_epi16(0x00f0), 0xF8);
            _mm256_mask_storeu_epi8(pbb + i / 2, (__mmask32)(mb >> 0) & ((n / 2 == 32) ? ~0u : (1u << (n / 2)) - 1),
                                    _mm512_cvtepi16_epi8(w));
        } else { /* bb == 2, u32 lanes */
            __m128i w = _mm512_cvtepi32_epi8(
                _mm512_or_si512(_mm512_or_si512(_mm512_and_si512(v, _mm512_set1_epi32(3)),
                                                _mm512_and_si512(_mm512_srli_epi32(v, 6), _mm512_set1_epi32(0xc))),
                                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(v, 12), _mm512_set1_epi32(0x30)),
                                                _mm512_and_si512(_mm512_srli_epi32(v, 18), _mm512_set1_epi32(0xc0)))));
            _mm_mask_storeu_epi8(pbb + i / 4, (__mmask16)(n / 4 == 16 ? 0xffff : (1u << (n / 4)) - 1), w);
        }
        if (hb == 1) {
            uint64_t bits = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x10)) & mb;
            memcpy(ph + i / 8, &bits, n / 8);
        } else if (hb == 2) {
            __m512i h = _mm512_srli_epi32(v, 4); /* bits 4, 5 of each byte to 0, 1; 6, 7 masked away below */
            h = _mm512_and_si512(h, _mm512_set1_epi8(0x03));
            __m128i w = _mm512_cvtepi32_epi8(
                _mm512_or_si512(_mm512_or_si512(_mm512_and_si512(h, _mm512_set1_epi32(3)),
                                                _mm512_and_si512(_mm512_srli_epi32(h, 6), _mm512_set1_epi32(0xc))),
                                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(h, 12), _mm512_set1_epi32(0x30)),
                                                _mm512_and_si512(_mm512_srli_epi32(h, 18), _mm512_set1_epi32(0xc0)))));
            _mm_mask_storeu_epi8(ph + i / 4, (__mmask16)(n / 4 == 16 ? 0xffff : (1u << (n / 4)) - 1), w);
        }
    }
}
#endif

static int enc_rowsplit(const nf_tensor_enc *t, const float *src, uint64_t r0,
                        uint64_t r1, uint8_t *obj, const nf_encode_opts *o,
                        nf_encode_stats *st)
{
    nf_rowsplit_info ri = nf_rowsplit_info_of(t->format);
    qrange q = q_range(t->format);
    uint64_t K = t->cols, ngroups = t->enc.plane[0].row_bytes * 8 / ri.base_bits / ri.group;
    int codes[128];
    const nf_plane *pb = &t->enc.plane[0], *ph = &t->enc.plane[1],
                   *ps = &t->enc.plane[t->enc.nplanes - 1];
    unsigned zero_raw = t->format == NF_FMT_Q2_G64_FP16 ? 1 : 0;
    unsigned bb = ri.base_bits, hb = ri.high_bits, G = ri.group;
    int off = t->format == NF_FMT_Q2_G64_FP16 ? -1 : 0; /* raw = code - off */
    qgrid qg;
    q_grid_of(&q, &qg);
#if NF_HAVE_X86
    bool p512 = nf_codec_isa() >= NF_ISA_AVX512;
#endif
    for (uint64_t n = r0; n < r1; n++) {
        const float *x = src + (n - r0) * K;
        double l2[8] = {0};
        if (!nf_qs_finite(x, K, nf_codec_isa()))
            return NF_CODEC_ENONFINITE;
        uint8_t *base = obj + pb->offset + n * pb->row_bytes;
        uint8_t *high = hb ? obj + ph->offset + n * ph->row_bytes : NULL;
        uint8_t *scales = obj + ps->offset + n * ps->row_bytes;
        for (uint64_t g = 0; g < ngroups; g++) {
            uint64_t k0 = g * G;
            unsigned nv = k0 >= K ? 0 : (unsigned)(K - k0 < G ? K - k0 : G);
            uint16_t sb = 0;
            nf_qs_sq8(x + k0, nv, l2, nf_codec_isa()); /* beside the search, not before it */
            if (nv)
                sb = q_group(t->format, &q, &qg, x + k0, nv, o->absmax_only, codes, st);
            st16(scales + 2 * g, sb);
#if NF_HAVE_X86
            if (p512) { /* the same bytes, vectorized */
                pack512(codes, nv, G, off, zero_raw, bb, hb, base + k0 * bb / 8,
                        hb ? high + k0 * hb / 8 : NULL);
                continue;
            }
#endif
            /* the group's bytes in each plane (whole bytes: G * bits is a
             * multiple of 8); padding columns get the code of value 0 */
            unsigned char raw[128];
            for (unsigned i = 0; i < G; i++)
                raw[i] = (unsigned char)(i < nv ? codes[i] - off : (int)zero_raw);
            uint8_t *pbb = base + k0 * bb / 8;
            if (bb == 8) {
                memcpy(pbb, raw, G);
            } else if (bb == 4) {
                for (unsigned j = 0; j < G / 2; j++)
                    pbb[j] = (uint8_t)((raw[2 * j] & 15) | (raw[2 * j + 1] & 15) << 4);
            } else {
                for (unsigned j = 0; j < G / 4; j++)
                    pbb[j] = (uint8_t)((raw[4 * j] & 3) | (raw[4 * j + 1] & 3) << 2 |
                                       (raw[4 * j + 2] & 3) << 4 | (raw[4 * j + 3] & 3) << 6);
            }
            if (hb == 1) {
                uint8_t *ph8 = high + k0 / 8;
                for (unsigned j = 0; j < G / 8; j++) {
                    unsigned v = 0;
                    for (unsigned b = 0; b < 8; b++)
                        v |= ((raw[8 * j + b] >> 4) & 1u) << b;
                    ph8[j] = (uint8_t)v;
                }
            } else if (hb == 2) {
                uint8_t *ph8 = high + k0 / 4;
                for (unsigned j = 0; j < G / 4; j++)
                    ph8[j] = (uint8_t)(((raw[4 * j] >> 4) & 3) | ((raw[4 * j + 1] >> 4) & 3) << 2 |
                                       ((raw[4 * j + 2] >> 4) & 3) << 4 | ((raw[4 * j + 3] >> 4) & 3) << 6);
            }
        }
        st->ssx += nf_qs_combine8(l2);
    }
    return 0;
}

static int enc_rowscale(const nf_tensor_enc *t, const float *src, uint64_t r0,
                        uint64_t r1, uint8_t *obj, nf_encode_stats *st)
{
    uint64_t K = t->cols;
    const nf_plane *pc = &t->enc.plane[0], *pr = &t->enc.plane[1];
    for (uint64_t n = r0; n < r1; n++) {
        const float *x = src + (n - r0) * K;
        if (!all_finite(x, K))
            return NF_CODEC_ENONFINITE;
        float amax = 0.0f;
        for (uint64_t k = 0; k < K; k++)
            amax = fmaxf(amax, fabsf(x[k]));
        uint16_t rb = nf_f32_to_bf16(amax / NF_E4M3_MAX);
        float r = nf_bf16_to_f32(rb);
        /* amax / 448 of a finite row is far below BF16's largest: no row
         * scale saturates; one of a tiny row can round to 0 */
        st->scales++;
        st->scales_zeroed += r == 0.0f && amax != 0.0f;
        st16(obj + pr->offset + 2 * n, rb);
        uint8_t *codes = obj + pc->offset + n * K;
        for (uint64_t k = 0; k < K; k++) {
            uint8_t c = 0;
            if (r != 0.0f) {
                float qv = x[k] / r;
                st->saturated += nf_e4m3_saturates(qv); /* above 464, not 448 */
                c = nf_f32_to_e4m3(qv);
            }
            codes[k] = c;
            double d = (double)x[k] - (double)(nf_e4m3_to_f32(c) * r);
            st->sse += d * d;
            st->ssx += (double)x[k] * x[k];
        }
    }
    return 0;
}

static int enc_nvfp4(const nf_tensor_enc *t, const float *src, uint64_t r0,
                     uint64_t r1, uint8_t *obj, nf_encode_stats *st)
{
    uint64_t N = t->rows, K = t->cols, slice = N / t->divisors;
    if (r0 % slice || r1 % slice)
        return NF_CODEC_ERANGE;
    const nf_plane *pc = &t->enc.plane[0], *pbs = &t->enc.plane[1],
                   *pw = &t->enc.plane[2];
    for (uint64_t j = r0 / slice; j < r1 / slice; j++) {
        const float *xs = src + (j * slice - r0) * K;
        if (!all_finite(xs, slice * K))
            return NF_CODEC_ENONFINITE;
        float amax = 0.0f;
        for (uint64_t i = 0; i < slice * K; i++)
            amax = fmaxf(amax, fabsf(xs[i]));
        float w = amax == 0.0f ? 1.0f : (NF_E4M3_MAX * 6.0f) / amax;
        st->scales++;
        if (isinf(w)) {
            w = FLT_MAX;
            st->scales_saturated++;
        }
        st32(obj + pw->offset + 4 * j, nf_f32_bits(w));
        for (uint64_t n = j * slice; n < (j + 1) * slice; n++) {
            const float *x = src + (n - r0) * K;
            uint8_t *codes = obj + pc->offset + n * (K / 2);
            memset(codes, 0, K / 2);
            for (uint64_t c = 0; c < K / 16; c++) {
                const float *xb = x + 16 * c;
                float bmax = 0.0f;
                for (int i = 0; i < 16; i++)
                    bmax = fmaxf(bmax, fabsf(xb[i]));
                float bs = bmax / 6.0f * w;
                uint8_t bb = nf_f32_to_e4m3(bs);
                float b = nf_e4m3_to_f32(bb);
                if (bmax != 0.0f) {
                    st->scales++;
                    /* bs is 448.00003 for about one block in five whose
                     * amax is its slice's: that rounds to 448 exactly */
                    st->scales_saturated += nf_e4m3_saturates(bs);
                    st->scales_zeroed += b == 0.0f;
                }
                obj[pbs->offset + nf_nvfp4_scale_index(n, c, K)] = bb;
                for (int i = 0; i < 16; i++) {
                    uint8_t code = 0;
                    if (b != 0.0f) {
                        float qv = (xb[i] * w) / b;
                        st->saturated += nf_e2m1_saturates(qv); /* 7 and above, not 6.1 */
                        code = nf_f32_to_e2m1(qv);
                    }
                    or_bits(codes, 16 * c + (uint64_t)i, 4, code);
                    double d = (double)xb[i] - (double)((nf_e2m1_to_f32(code) * b) / w);
                    st->sse += d * d;
                    st->ssx += (double)xb[i] * xb[i];
                }
            }
        }
    }
    return 0;
}

static int enc_contig(const nf_tensor_enc *t, const float *src, uint64_t e0,
                      uint64_t e1, uint8_t *obj, const nf_encode_opts *o,
                      nf_encode_stats *st)
{
    uint8_t *d = obj + t->enc.plane[0].offset;
    for (uint64_t e = e0; e < e1; e++) {
        float x = src[e - e0];
        bool fin = isfinite(x);
        if (!fin && (t->format == NF_FMT_INT32 || !o->allow_nonfinite)) {
            st->bad_element = e + 1;
            return NF_CODEC_ENONFINITE;
        }
        /* a finite f32 at or above 0x7f7f8000 rounds to +-Inf in bf16 */
        if (fin && t->format == NF_FMT_BF16 && !o->allow_nonfinite &&
            (nf_f32_bits(x) & 0x7fffffffu) >= 0x7f7f8000u) {
            st->bad_element = e + 1;
            return NF_CODEC_EOVERFLOW;
        }
        float back = x;
        switch (t->format) {
        case NF_FMT_BF16: {
            uint16_t b = nf_f32_to_bf16(x);
            st16(d + 2 * e, b);
            back = nf_bf16_to_f32(b);
            break;
        }
        case NF_FMT_FP32:
            st32(d + 4 * e, nf_f32_bits(x));
            break;
        default:
            if (!(x >= -2147483648.0f && x < 2147483648.0f) ||
                x != (float)(int32_t)x)
                return NF_CODEC_EVALUE;
            st32(d + 4 * e, (uint32_t)(int32_t)x);
            break;
        }
        if (fin) {
            if (!isfinite(back))
                st->saturated++; /* bf16 overflow to infinity */
            else
                st->sse += ((double)x - back) * ((double)x - back);
            st->ssx += (double)x * x;
        }
    }
    return 0;
}

static void zero_gaps(const nf_tensor_enc *t, uint8_t *obj)
{
    for (unsigned i = 1; i < t->enc.nplanes; i++) {
        uint64_t end = t->enc.plane[i - 1].offset + t->enc.plane[i - 1].bytes;
        memset(obj + end, 0, t->enc.plane[i].offset - end);
    }
}

int nf_encode_rows_f32(const nf_tensor_enc *t, const float *src, uint64_t r0,
                       uint64_t r1, uint8_t *obj, uint64_t obj_bytes,
                       const nf_encode_opts *opts, nf_encode_stats *stats)
{
    int rc = check_obj(t, obj, obj_bytes);
    if (rc)
        return rc;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    if (!src && r0 != r1)
        return NF_CODEC_EINVAL;
    nf_encode_opts o = NF_ENCODE_OPTS_INIT;
    if (opts)
        o = *opts;
    nf_encode_stats st;
    memset(&st, 0, sizeof st);
    switch (t->layout) {
    case NF_LAY_CONTIGUOUS_LE_V1:
        rc = enc_contig(t, src, r0 * t->cols, r1 * t->cols, obj, &o, &st);
        break;
    case NF_LAY_ROW_SPLIT_K128_V1:
        rc = enc_rowsplit(t, src, r0, r1, obj, &o, &st);
        break;
    case NF_LAY_ROW_SCALE_V1:
        rc = enc_rowscale(t, src, r0, r1, obj, &st);
        break;
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1:
        rc = enc_nvfp4(t, src, r0, r1, obj, &st);
        break;
    default:
        return NF_CODEC_EINVAL;
    }
    if (rc) {
        if (stats)
            stats->bad_element = st.bad_element;
        return rc;
    }
    zero_gaps(t, obj);
    st.elements = (r1 - r0) * t->cols;
    if (stats)
        nf_encode_stats_add(stats, &st);
    return 0;
}

void nf_encode_stats_add(nf_encode_stats *dst, const nf_encode_stats *src)
{
    dst->sse += src->sse;
    dst->ssx += src->ssx;
    dst->elements += src->elements;
    dst->saturated += src->saturated;
    if (src->bad_element && (!dst->bad_element || src->bad_element < dst->bad_element))
        dst->bad_element = src->bad_element;
    dst->scales += src->scales;
    dst->scales_saturated += src->scales_saturated;
    dst->scales_zeroed += src->scales_zeroed;
}

int nf_encode_f32(const nf_tensor_enc *t, const float *src, uint8_t *obj,
                  uint64_t obj_bytes, const nf_encode_opts *opts,
                  nf_encode_stats *stats)
{
    if (!t)
        return NF_CODEC_EINVAL;
    return nf_encode_rows_f32(t, src, 0, t->rows, obj, obj_bytes, opts, stats);
}

/* ---- deep validation ------------------------------------------------------- */

static void note(nf_codec_check *c, nf_codec_rule r, uint64_t row,
                 uint64_t index, uint32_t value, uint64_t offset)
{
    if (c->count[r]++ == 0)
        c->first[r] = (nf_codec_finding){r, row, index, value, offset};
}

static void val_rowsplit(const nf_tensor_enc *t, const uint8_t *obj,
                         nf_codec_check *c)
{
    nf_rowsplit_info ri = nf_rowsplit_info_of(t->format);
    const nf_plane *pb = &t->enc.plane[0], *ps = &t->enc.plane[t->enc.nplanes - 1];
    uint64_t K = t->cols, Kp = pb->row_bytes * 8 / ri.base_bits;
    unsigned zero_raw = t->format == NF_FMT_Q2_G64_FP16 ? 1 : 0;
    for (uint64_t n = 0; n < t->rows; n++) {
        rowp r = row_ptrs(t, obj, n);
        for (uint64_t g = 0; g < Kp / ri.group; g++) {
            uint16_t s = ld16(r.scales + 2 * g);
            uint64_t off = ps->offset + n * ps->row_bytes + 2 * g;
            if (!fp16_finite(s))
                note(c, NF_CR_SCALE, n, g, s, off);
            if (g * ri.group >= K && s != 0x0000)
                note(c, NF_CR_PAD_SCALE, n, g, s, off);
        }
        for (uint64_t k = 0; k < Kp; k++) {
            unsigned raw = rs_raw(&r, k);
            uint64_t off = pb->offset + n * pb->row_bytes + k * ri.base_bits / 8;
            if (k >= K) {
                if (raw != zero_raw)
                    note(c, NF_CR_PAD_CODE, n, k, raw, off);
            } else if ((t->format == NF_FMT_Q8_G32_FP16 && raw == 0x80) ||
                       (t->format == NF_FMT_T2_G128_FP16 && raw == 2)) {
                note(c, NF_CR_CODE, n, k, raw, off);
            }
        }
    }
}

static void val_rowscale(const nf_tensor_enc *t, const uint8_t *obj,
                         nf_codec_check *c)
{
    const nf_plane *pc = &t->enc.plane[0], *pr = &t->enc.plane[1];
    for (uint64_t n = 0; n < t->rows; n++) {
        const uint8_t *codes = obj + pc->offset + n * t->cols;
        for (uint64_t k = 0; k < t->cols; k++)
            if (nf_e4m3_is_nan(codes[k]))
                note(c, NF_CR_CODE, n, k, codes[k], pc->offset + n * t->cols + k);
        uint16_t r = ld16(obj + pr->offset + 2 * n);
        if (!bf16_finite(r))
            note(c, NF_CR_ROW_SCALE, n, NF_CODEC_NONE, r, pr->offset + 2 * n);
    }
}

static void val_nvfp4(const nf_tensor_enc *t, const uint8_t *obj,
                      nf_codec_check *c)
{
    const nf_plane *pbs = &t->enc.plane[1], *pw = &t->enc.plane[2];
    for (uint64_t n = 0; n < t->rows; n++)
        for (uint64_t b = 0; b < t->cols / 16; b++) {
            uint64_t off = pbs->offset + nf_nvfp4_scale_index(n, b, t->cols);
            uint8_t v = obj[off];
            if (nf_e4m3_is_nan(v) || (v & 0x80u && v != 0x80u))
                note(c, NF_CR_BLOCK_SCALE, n, b, v, off);
        }
    for (uint64_t j = 0; j < t->divisors; j++) {
        uint32_t u = ld32(obj + pw->offset + 4 * j);
        float w = nf_f32_from_bits(u);
        if (!(w > 0.0f) || isinf(w))
            note(c, NF_CR_DIVISOR, NF_CODEC_NONE, j, u, pw->offset + 4 * j);
    }
}

int nf_codec_validate(const nf_tensor_enc *t, const uint8_t *obj,
                      uint64_t obj_bytes, nf_codec_check *out)
{
    int rc = check_obj(t, obj, obj_bytes);
    if (rc)
        return rc;
    if (!out)
        return NF_CODEC_EINVAL;
    memset(out, 0, sizeof *out);
    switch (t->layout) {
    case NF_LAY_ROW_SPLIT_K128_V1: val_rowsplit(t, obj, out); break;
    case NF_LAY_ROW_SCALE_V1: val_rowscale(t, obj, out); break;
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1: val_nvfp4(t, obj, out); break;
    case NF_LAY_GGUF_ROWS_V1: nf_gguf_validate(t, obj, out); break;
    default: break;
    }
    for (unsigned i = 1; i < t->enc.nplanes; i++) {
        uint64_t end = t->enc.plane[i - 1].offset + t->enc.plane[i - 1].bytes;
        for (uint64_t o = end; o < t->enc.plane[i].offset; o++)
            if (obj[o])
                note(out, NF_CR_GAP, NF_CODEC_NONE, NF_CODEC_NONE, obj[o], o);
    }
    int nrules = 0;
    for (int r = 0; r < NF_CR_COUNT_; r++)
        nrules += out->count[r] > 0;
    return nrules;
}

const char *nf_codec_rule_name(nf_codec_rule r)
{
    static const char *const names[NF_CR_COUNT_] = {
        "scale", "code", "pad-code", "pad-scale", "row-scale", "block-scale",
        "divisor", "gap",
    };
    return (r >= 0 && r < NF_CR_COUNT_) ? names[r] : "unknown";
}

void nf_codec_finding_str(const nf_tensor_enc *t, const nf_codec_finding *f,
                          char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    const char *fmt = t ? nf_format_name(t->format) : NULL;
    unsigned long long row = f->row, idx = f->index, off = f->offset;
    unsigned v = f->value;
    switch (f->rule) {
    case NF_CR_SCALE:
        if (t && t->layout == NF_LAY_GGUF_ROWS_V1) {
            nf_gguf_finding_str(t, f, buf, n);
            break;
        }
        snprintf(buf, n, "row %llu, group %llu: scale 0x%04x is not finite", row, idx, v);
        break;
    case NF_CR_CODE:
        if (t && t->format == NF_FMT_Q8_G32_FP16)
            snprintf(buf, n, "row %llu, column %llu: code -128 is invalid for %s", row, idx, fmt);
        else if (t && t->format == NF_FMT_T2_G128_FP16)
            snprintf(buf, n, "row %llu, column %llu: code 0b10 is invalid for %s", row, idx, fmt);
        else
            snprintf(buf, n, "row %llu, column %llu: code 0x%02x is an e4m3 nan", row, idx, v);
        break;
    case NF_CR_PAD_CODE:
        snprintf(buf, n, "row %llu, column %llu: padding code 0x%x is not the code of value 0",
                 row, idx, v);
        break;
    case NF_CR_PAD_SCALE:
        snprintf(buf, n, "row %llu, group %llu: scale 0x%04x of a group wholly inside the padding is not +0.0",
                 row, idx, v);
        break;
    case NF_CR_ROW_SCALE:
        snprintf(buf, n, "row %llu: row scale 0x%04x is not finite", row, v);
        break;
    case NF_CR_BLOCK_SCALE:
        snprintf(buf, n, "row %llu, block %llu: block scale 0x%02x is %s", row, idx, v,
                 nf_e4m3_is_nan((uint8_t)v) ? "nan" : "negative");
        break;
    case NF_CR_DIVISOR:
        snprintf(buf, n, "divisor %llu: 0x%08x (%g) is not finite and positive", idx, v,
                 (double)nf_f32_from_bits(v));
        break;
    case NF_CR_GAP:
        snprintf(buf, n, "offset %llu: byte 0x%02x between planes is not zero", off, v);
        break;
    default:
        snprintf(buf, n, "unknown finding");
        break;
    }
}
