/* nf_kindex.h — the index arithmetic and the bit-level decode of the CUDA
 * kernels (cuda/nf_kernels.cuh), written once for the device and the host so
 * that everything that cannot be run without a GPU can still be checked on
 * the CPU against nf_codec (tests/unit/t_cudamath.c).
 *
 * Plain C11 and CUDA C++: every function is static inline; under nvcc the
 * NF_KFN ones are __host__ __device__. Nothing here allocates, prints or
 * touches device state.
 *
 * Contents
 *   - exact decoders of the small float encodings (ninfer-formats(7)
 *     Formats), as nf_fp.h;
 *   - nf_k_mul / nf_k_div: one IEEE f32 product or quotient with x86 SSE NaN
 *     results (the reference runs on x86; the GPU would give its canonical
 *     NaN), so decode-to-bf16 matches nf_decode_rows_bf16 bit for bit;
 *   - nf_kgeom: where each plane of an encoded object lives
 *     (ninfer-formats(7) Layouts);
 *   - nf_k_elem: one element decoded exactly as the reference decoder;
 *   - chunk addressing: the fast kernels give each lane one 16-byte load of
 *     the first plane (codes/base/data) per step: a "chunk" of C columns of
 *     one row (C = 64 q2/t2, 32 q4/q5/q6/nvfp4, 16 q8/fp8, 8 bf16, 4 fp32/
 *     int32), plus the chunk's high bits, group scale or block scales;
 *   - word decoders: 32 bits of codes to exact code values, without tables
 *     or branches (magic-number floats), each value times a known power of
 *     two (its "class") so that no shift is needed to line a field up;
 *   - chunk dot products: sum over the chunk of value * x in f32, with the
 *     scale applied once per chunk (all products code*x are exact);
 *   - the launch plan of the GEMV kernels, and (C only) a host emulation of
 *     the whole GEMV schedule that gives the device's result bit for bit.
 */
#ifndef NF_KINDEX_H
#define NF_KINDEX_H

#include <stdint.h>
#include <string.h>
#include "nf_layout.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define NF_KFN static __host__ __device__ __forceinline__
#else
#include <math.h>
#define NF_KFN static inline
#endif
#define NF_KHOST static inline
#ifdef __CUDA_ARCH__
#define NF_KUNROLL _Pragma("unroll")
#else
#define NF_KUNROLL
#endif

/* ---- bits ------------------------------------------------------------------ */

NF_KFN uint32_t nf_k_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

NF_KFN float nf_k_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

NF_KFN int nf_k_isnan(float f) { return (nf_k_bits(f) & 0x7fffffffu) > 0x7f800000u; }

/* fused multiply-add, one rounding (C99 fmaf on the host, FFMA on the GPU) */
NF_KFN float nf_k_fma(float a, float b, float c)
{
#ifdef __CUDA_ARCH__
    return __fmaf_rn(a, b, c);
#else
    return fmaf(a, b, c);
#endif
}

/* a + b, never contracted with a neighbouring product */
NF_KFN float nf_k_add(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

/* ---- exact decoders (ninfer-formats(7); the same values as nf_fp.h) ------ */

NF_KFN float nf_k_fp16(uint32_t h)
{
    uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return nf_k_float(s | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
        return s ? -v : v;
    }
    return nf_k_float(s | ((e + 112u) << 23) | (m << 13));
}

NF_KFN float nf_k_bf16(uint32_t b) { return nf_k_float((b & 0xffffu) << 16); }

NF_KFN float nf_k_e4m3(uint32_t c)
{
    uint32_t s = (c & 0x80u) << 24, e = (c >> 3) & 0xfu, m = c & 7u;
    if (e == 15 && m == 7)
        return nf_k_float(s | 0x7fc00000u);
    if (e == 0) {
        float v = (float)m * 0x1p-9f;
        return s ? -v : v;
    }
    return nf_k_float(s | ((e + 120u) << 23) | (m << 20));
}

/* E2M1 by arithmetic (no table, so nothing can land in local memory) */
NF_KFN float nf_k_e2m1(uint32_t c)
{
    uint32_t m = c & 7u, e = m >> 1;
    uint32_t b = e ? ((e + 126u) << 23) | ((m & 1u) << 22) : ((m & 1u) ? 0x3f000000u : 0u);
    return nf_k_float(b | ((c & 8u) << 28));
}

NF_KFN float nf_k_half(uint32_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half((unsigned short)h));
#else
    return nf_k_fp16(h & 0xffffu);
#endif
}

/* Scales for the GEMV (exact; a NaN scale gives some NaN, which is all a
 * dot product can keep): the FP16 group scale by the hardware conversion,
 * and the two E4M3 block scales of an nvfp4 chunk by one cvt on sm_89+. */
NF_KFN float nf_k_scale16(uint32_t h) { return nf_k_half(h & 0xffffu); }

NF_KFN void nf_k_scale_e4m3x2(uint32_t s, float *b0, float *b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("{.reg .b32 h; .reg .f16 lo, hi;\n\t"
        "cvt.rn.f16x2.e4m3x2 h, %2;\n\t"
        "mov.b32 {lo, hi}, h;\n\t"
        "cvt.f32.f16 %0, lo;\n\t"
        "cvt.f32.f16 %1, hi;}"
        : "=f"(*b0), "=f"(*b1)
        : "h"((unsigned short)(s & 0xffffu)));
#else
    *b0 = nf_k_e4m3(s & 0xffu);
    *b1 = nf_k_e4m3((s >> 8) & 0xffu);
#endif
}

/* both halves of a half2 word to f32 (exact) */
NF_KFN void nf_k_half2(uint32_t h2, float *lo, float *hi)
{
#ifdef __CUDA_ARCH__
    asm("{.reg .f16 a, b;\n\t"
        "mov.b32 {a, b}, %2;\n\t"
        "cvt.f32.f16 %0, a;\n\t"
        "cvt.f32.f16 %1, b;}"
        : "=f"(*lo), "=f"(*hi)
        : "r"(h2));
#else
    *lo = nf_k_fp16(h2 & 0xffffu);
    *hi = nf_k_fp16(h2 >> 16);
#endif
}

/* f32 -> BF16, round to nearest even; NaN -> (bits >> 16) | 0x40 (nf_fp.h) */
NF_KFN uint32_t nf_k_to_bf16(float f)
{
    uint32_t u = nf_k_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

/* One f32 product/quotient as the x86 reference computes it: a NaN operand
 * comes back quieted (the first one when both are NaN), an invalid
 * operation (0 * inf, 0/0, inf/inf) gives the default NaN 0xffc00000. The
 * GPU alone would return 0x7fffffff for all of these. */
NF_KFN float nf_k_nan_rule_(float a, float b, float r)
{
    if (nf_k_isnan(a))
        return nf_k_float(nf_k_bits(a) | 0x400000u);
    if (nf_k_isnan(b))
        return nf_k_float(nf_k_bits(b) | 0x400000u);
    return nf_k_isnan(r) ? nf_k_float(0xffc00000u) : r;
}

NF_KFN float nf_k_mul(float a, float b)
{
#ifdef __CUDA_ARCH__
    return nf_k_nan_rule_(a, b, __fmul_rn(a, b));
#else
    return nf_k_nan_rule_(a, b, a * b);
#endif
}

NF_KFN float nf_k_div(float a, float b)
{
#ifdef __CUDA_ARCH__
    return nf_k_nan_rule_(a, b, __fdiv_rn(a, b));
#else
    return nf_k_nan_rule_(a, b, a / b);
#endif
}

/* little-endian loads from bytes (any alignment) */
NF_KFN uint32_t nf_k_ld16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
NF_KFN uint32_t nf_k_ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- geometry ---------------------------------------------------------------- */

/* Where an encoded object's planes are (offsets from the object start, row
 * strides in bytes) and the chunking of the fast kernels. */
typedef struct {
    int32_t format;            /* nf_format */
    uint32_t C;                /* columns per chunk (one 16-byte load) */
    uint32_t G;                /* row_split group size (0 otherwise) */
    uint32_t base_bits, high_bits, code_bits;
    uint32_t esize;            /* contiguous element bytes */
    uint32_t vec;              /* 1: every row's first-plane bytes start 16-byte
                                  aligned, so the chunk kernels apply */
    uint64_t rows, cols;       /* N, K (contiguous: dims[0], elements/rows) */
    uint64_t nch;              /* chunks per row: ceil(cols / C) */
    uint64_t o_codes, rb_codes;/* first plane (data/base/codes) and row stride */
    uint64_t o_high, rb_high;  /* q5/q6 high plane */
    uint64_t o_scale, rb_scale;/* row_split scales / fp8 row scales / nvfp4 tiles */
    uint64_t o_div;            /* nvfp4 divisors */
    uint64_t slice;            /* nvfp4 rows per divisor: N / divisors */
    uint32_t gq, gb;           /* gguf_rows_v1: elements and bytes per block (the
                                  row stride is rb_codes); 0 otherwise */
} nf_kgeom;

#include "nf_kindex_gguf.h"


/* Columns per chunk: 16 bytes of the first plane. 0 for an unknown format. */
NF_KFN uint32_t nf_k_chunk_cols(int32_t f)
{
    switch (f) {
    case NF_FMT_BF16: return 8;
    case NF_FMT_FP32:
    case NF_FMT_INT32: return 4;
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16: return 64;
    case NF_FMT_Q4_G64_FP16:
    case NF_FMT_Q5_G64_FP16:
    case NF_FMT_Q6_G64_FP16:
    case NF_FMT_NVFP4: return 32;
    case NF_FMT_Q8_G32_FP16:
    case NF_FMT_FP8_E4M3FN_ROW_BF16: return 16;
    default: return nf_kg_is_gguf(f) ? 32 : 0; /* gguf: the unit GEMV's 32 columns */
    }
}

/* Fill g from the layout contract (the caller's nf_encoding,
 * ninfer-formats(7) Layouts).
 * Returns 0, or -1 for a format/layout pair without kernels. */
NF_KHOST int nf_kgeom_init(nf_kgeom *g, nf_format f, nf_layout l, uint64_t rows, uint64_t cols,
                           uint64_t divisors, const nf_encoding *e)
{
    memset(g, 0, sizeof *g);
    g->format = f;
    g->rows = rows;
    g->cols = cols;
    g->C = nf_k_chunk_cols(f);
    if (!g->C || l != nf_format_default_layout(f) || !e->nplanes || !rows || !cols)
        return -1;
    g->nch = cols / g->C + (cols % g->C != 0);
    g->o_codes = e->plane[0].offset;
    g->rb_codes = e->plane[0].row_bytes;
    switch (l) {
    case NF_LAY_CONTIGUOUS_LE_V1:
        g->esize = nf_format_elem_bytes(f);
        g->rb_codes = cols * g->esize;
        g->vec = g->rb_codes % 16 == 0;
        break;
    case NF_LAY_ROW_SPLIT_K128_V1: {
        nf_rowsplit_info ri = nf_rowsplit_info_of(f);
        g->G = ri.group;
        g->base_bits = ri.base_bits;
        g->high_bits = ri.high_bits;
        g->code_bits = ri.code_bits;
        if (ri.high_bits) {
            g->o_high = e->plane[1].offset;
            g->rb_high = e->plane[1].row_bytes;
        }
        g->o_scale = e->plane[e->nplanes - 1].offset;
        g->rb_scale = e->plane[e->nplanes - 1].row_bytes;
        g->vec = 1; /* row strides are multiples of 16 (Kp % 128 == 0) */
        break;
    }
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1:
        if (e->nplanes != 3 || !divisors || rows % divisors)
            return -1;
        g->o_scale = e->plane[1].offset;
        g->o_div = e->plane[2].offset;
        g->slice = rows / divisors;
        g->vec = 1; /* K % 64 == 0: rows of K/2 bytes are 32-byte multiples */
        break;
    case NF_LAY_ROW_SCALE_V1:
        g->o_scale = e->plane[1].offset;
        g->rb_scale = 2;
        g->vec = cols % 16 == 0;
        break;
    case NF_LAY_GGUF_ROWS_V1: /* one plane; the unit GEMV and per-element decode */
        g->gq = nf_kg_qk(f);
        g->gb = nf_kg_bytes(f);
        if (!g->gq || cols % g->gq)
            return -1;
        g->vec = 0;
        break;
    default:
        return -1;
    }
    return 0;
}

/* nvfp4 block scale of row n, block column c: nf_nvfp4_scale_index and its
 * row and column parts (nf_layout.h, ninfer-formats(7) Layouts), host and
 * device. */

/* Chunk jj of a row: byte offsets inside the row of each plane. A chunk's
 * C columns never straddle a group (C <= G, G % C == 0) or a pair of nvfp4
 * block scales (C = 32: blocks 2jj and 2jj+1 share a 4-column tile slot). */
NF_KFN uint64_t nf_k_chunk_codes(uint64_t jj) { return jj * 16; }
NF_KFN uint64_t nf_k_chunk_high(const nf_kgeom *g, uint64_t jj)
{
    return jj * (g->C * g->high_bits / 8); /* q5: 4 bytes, q6: 8 bytes */
}
NF_KFN uint64_t nf_k_chunk_group(const nf_kgeom *g, uint64_t jj) { return jj * g->C / g->G; }

/* ---- one element, exactly as the reference (nf_codec.c row_scalar) --------- */

NF_KFN uint32_t nf_k_getbits(const uint8_t *row, uint64_t k, uint32_t w)
{
    uint64_t bit = k * w;
    return (row[bit >> 3] >> (bit & 7)) & ((1u << w) - 1);
}

/* Signed code of a row_split raw code: q2 offset by one, others two's
 * complement of code_bits bits. */
NF_KFN int32_t nf_k_rs_signed(int32_t f, uint32_t raw, uint32_t bits)
{
    if (f == NF_FMT_Q2_G64_FP16)
        return (int32_t)raw - 1;
    int32_t half = 1 << (bits - 1);
    return (int32_t)(raw ^ (uint32_t)half) - half;
}

NF_KFN float nf_k_elem(const uint8_t *obj, const nf_kgeom *g, uint64_t n, uint64_t k)
{
    if (g->gq) /* gguf_rows_v1 (nf_kindex_gguf.h) */
        return nf_kg_at(obj, g, n, k);
    switch (g->format) {
    case NF_FMT_BF16:
        return nf_k_bf16(nf_k_ld16(obj + g->o_codes + 2 * (n * g->cols + k)));
    case NF_FMT_FP32:
        return nf_k_float(nf_k_ld32(obj + g->o_codes + 4 * (n * g->cols + k)));
    case NF_FMT_INT32:
        return (float)(int32_t)nf_k_ld32(obj + g->o_codes + 4 * (n * g->cols + k));
    case NF_FMT_FP8_E4M3FN_ROW_BF16:
        return nf_k_mul(nf_k_e4m3(obj[g->o_codes + n * g->cols + k]),
                        nf_k_bf16(nf_k_ld16(obj + g->o_scale + 2 * n)));
    case NF_FMT_NVFP4: {
        uint32_t c = nf_k_getbits(obj + g->o_codes + n * (g->cols / 2), k, 4);
        float b = nf_k_e4m3(obj[g->o_scale + nf_nvfp4_scale_index(n, k / 16, g->cols)]);
        float w = nf_k_float(nf_k_ld32(obj + g->o_div + 4 * (n / g->slice)));
        return nf_k_div(nf_k_mul(nf_k_e2m1(c), b), w);
    }
    default: { /* row_split */
        uint32_t raw = nf_k_getbits(obj + g->o_codes + n * g->rb_codes, k, g->base_bits);
        if (g->high_bits)
            raw |= nf_k_getbits(obj + g->o_high + n * g->rb_high, k, g->high_bits) << 4;
        float s = nf_k_fp16(nf_k_ld16(obj + g->o_scale + n * g->rb_scale + 2 * (k / g->G)));
        return nf_k_mul((float)nf_k_rs_signed(g->format, raw, g->code_bits), s);
    }
    }
}

/* ---- word decoders ----------------------------------------------------------
 * A float whose bits are 0x4B000000 | m is 2^23 + m (m < 2^23, ulp 1): with a
 * code field f placed at bit position b inside m and the field's sign bit
 * flipped by the same LOP3 that ORs in the exponent, subtracting the
 * constant 2^23 + half*2^b leaves exactly c * 2^b (Sterbenz: both operands
 * lie in [2^23, 2^24)). Fields at bits 0..22 need no shift; the upper half
 * of a word is reached with one shift by 16 per word. c * 2^b * x is exact
 * for a bf16 x (at most 8 + 8 significant bits), so the class factor 2^b is
 * divided out once per chunk, exactly. Every v[] below is that c * 2^b. */

#define NF_K_MAGIC 0x4B000000u

NF_KFN float nf_k_field(uint32_t w, uint32_t mask, uint32_t flip)
{
    return nf_k_float((w & mask) ^ (NF_K_MAGIC | flip)) - nf_k_float(NF_K_MAGIC | flip);
}

/* q4: column p of the word (nibble p, even k low) -> v[p] = c * 16^(p&3) */
NF_KFN void nf_k_q4_word(uint32_t w, float v[8])
{
    uint32_t h = w >> 16;
    v[0] = nf_k_field(w, 0x000fu, 0x0008u);
    v[1] = nf_k_field(w, 0x00f0u, 0x0080u);
    v[2] = nf_k_field(w, 0x0f00u, 0x0800u);
    v[3] = nf_k_field(w, 0xf000u, 0x8000u);
    v[4] = nf_k_field(h, 0x000fu, 0x0008u);
    v[5] = nf_k_field(h, 0x00f0u, 0x0080u);
    v[6] = nf_k_field(h, 0x0f00u, 0x0800u);
    v[7] = nf_k_field(h, 0xf000u, 0x8000u);
}

/* q8: byte q -> v[q] = c * 256^(q&1) */
NF_KFN void nf_k_q8_word(uint32_t w, float v[4])
{
    uint32_t h = w >> 16;
    v[0] = nf_k_field(w, 0x00ffu, 0x0080u);
    v[1] = nf_k_field(w, 0xff00u, 0x8000u);
    v[2] = nf_k_field(h, 0x00ffu, 0x0080u);
    v[3] = nf_k_field(h, 0xff00u, 0x8000u);
}

/* q2 (c = u - 1) and t2 (two's complement, flip 2): field p -> c * 4^(p&7) */
NF_KFN void nf_k_2bit_word(uint32_t w, int t2, float v[16])
{
    uint32_t h = w >> 16;
    NF_KUNROLL
    for (int p = 0; p < 8; p++) {
        uint32_t mask = 3u << (2 * p), flip = t2 ? 2u << (2 * p) : 0u;
        /* q2: (u) - 1*4^p, i.e. subtract 2^23 + 4^p with nothing flipped */
        float base = nf_k_float(NF_K_MAGIC | (t2 ? flip : 1u << (2 * p)));
        v[p] = nf_k_float((w & mask) ^ (NF_K_MAGIC | flip)) - base;
        v[p + 8] = nf_k_float((h & mask) ^ (NF_K_MAGIC | flip)) - base;
    }
}

/* q5/q6: rebuild each code's bits at byte spacing, then one field per byte.
 * E holds the even columns (byte q = column 2q), O the odd ones; bits 4..
 * come from the high plane. q5: hb = 8 high bits of the word's 8 columns
 * (bit p = column p); the multiply moves bits 0,2,4,6 to 4,12,20,28 (the
 * partial products that collide only carry into bits the mask drops).
 * q6: hb = 16 bits (column p at bits 2p, 2p+1); pairs at 0,4,8,12 move to
 * 4,12,20,28 by two shift-and-mask steps. Column p -> v[p] = c * 256^((p>>1)&1). */
NF_KFN uint32_t nf_k_q5_spread(uint32_t b) { return ((b & 0x55u) * 0x00410410u) & 0x10101010u; }
NF_KFN uint32_t nf_k_q6_spread(uint32_t b)
{
    uint32_t x = (b << 4) & 0x33330u;            /* pairs at 4, 8, 12, 16 */
    x = (x | (x << 8)) & 0x03300330u;            /* pairs at 4, 8, 20, 24 */
    return (x | (x << 4)) & 0x30303030u;         /* pairs at 4, 12, 20, 28 */
}

NF_KFN void nf_k_bytes_word(uint32_t E, uint32_t O, uint32_t fm, uint32_t half, float v[8])
{
    /* fm: field mask of byte 0 (0x1f or 0x3f); half: its sign bit */
    uint32_t Eh = E >> 16, Oh = O >> 16;
    v[0] = nf_k_field(E, fm, half);
    v[1] = nf_k_field(O, fm, half);
    v[2] = nf_k_field(E, fm << 8, half << 8);
    v[3] = nf_k_field(O, fm << 8, half << 8);
    v[4] = nf_k_field(Eh, fm, half);
    v[5] = nf_k_field(Oh, fm, half);
    v[6] = nf_k_field(Eh, fm << 8, half << 8);
    v[7] = nf_k_field(Oh, fm << 8, half << 8);
}

NF_KFN void nf_k_q5_word(uint32_t w, uint32_t hb, float v[8])
{
    uint32_t E = (w & 0x0f0f0f0fu) | nf_k_q5_spread(hb);
    uint32_t O = ((w >> 4) & 0x0f0f0f0fu) | nf_k_q5_spread(hb >> 1);
    nf_k_bytes_word(E, O, 0x1fu, 0x10u, v);
}

NF_KFN void nf_k_q6_word(uint32_t w, uint32_t hb, float v[8])
{
    uint32_t E = (w & 0x0f0f0f0fu) | nf_k_q6_spread(hb);
    uint32_t O = ((w >> 4) & 0x0f0f0f0fu) | nf_k_q6_spread(hb >> 2);
    nf_k_bytes_word(E, O, 0x3fu, 0x20u, v);
}

/* nvfp4: nibbles p and p+4 become one half2 whose halves are the FP16
 * numbers e2m1(c) * 2^-14 (magnitude bits to 9..11, sign to 15: E2M1 is a
 * tiny float with the same exponent-mantissa order; its subnormal 0.5 is an
 * FP16 subnormal). Column p -> v[p] = e2m1(c) * 2^-14, exact in f32. */
NF_KFN uint32_t nf_k_e2m1_pair(uint32_t w, int p)
{
    uint32_t mag = p == 0 ? w << 9 : p == 1 ? w << 5 : p == 2 ? w << 1 : w >> 3;
    uint32_t sgn = p == 0 ? w << 12 : p == 1 ? w << 8 : p == 2 ? w << 4 : w;
    return (mag & 0x0e000e00u) | (sgn & 0x80008000u);
}

NF_KFN void nf_k_nvfp4_word(uint32_t w, float v[8])
{
    NF_KUNROLL
    for (int p = 0; p < 4; p++) {
        nf_k_half2(nf_k_e2m1_pair(w, p), &v[p], &v[p + 4]);
    }
}

/* fp8: byte q -> v[q] = e4m3(c) exactly (NaN codes give a NaN). On sm_89+
 * one cvt turns two E4M3 codes into two FP16 (E4M3 fits FP16 exactly). */
NF_KFN void nf_k_fp8_word(uint32_t w, float v[4])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    asm("{.reg .b16 a, b; .reg .b32 p, q; .reg .f16 p0, p1, q0, q1;\n\t"
        "mov.b32 {a, b}, %4;\n\t"
        "cvt.rn.f16x2.e4m3x2 p, a;\n\t"
        "cvt.rn.f16x2.e4m3x2 q, b;\n\t"
        "mov.b32 {p0, p1}, p;\n\t"
        "mov.b32 {q0, q1}, q;\n\t"
        "cvt.f32.f16 %0, p0;\n\t"
        "cvt.f32.f16 %1, p1;\n\t"
        "cvt.f32.f16 %2, q0;\n\t"
        "cvt.f32.f16 %3, q1;}"
        : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
        : "r"(w));
#else
    v[0] = nf_k_e4m3(w & 0xffu);
    v[1] = nf_k_e4m3((w >> 8) & 0xffu);
    v[2] = nf_k_e4m3((w >> 16) & 0xffu);
    v[3] = nf_k_e4m3(w >> 24);
#endif
}

/* ---- chunk dot products ------------------------------------------------------
 * Each returns acc + (the chunk's sum of w * x) as the kernels compute it:
 * exact products code * x summed per class in f32, classes combined exactly,
 * then one fma with the scale. x holds the chunk's C activations (f32 of
 * bf16; zero past K). w[] are the 16 loaded bytes as 4 little-endian words. */

NF_KFN float nf_k_dot_q4(const uint32_t w[4], uint32_t sbits, const float *x, float acc)
{
    float P[4] = {0, 0, 0, 0};
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[8];
        nf_k_q4_word(w[i], v);
        NF_KUNROLL
        for (int p = 0; p < 8; p++)
            P[p & 3] = nf_k_fma(v[p], x[8 * i + p], P[p & 3]);
    }
    float sum = nf_k_fma(P[3], 0x1p-12f, nf_k_fma(P[2], 0x1p-8f, nf_k_fma(P[1], 0x1p-4f, P[0])));
    return nf_k_fma(nf_k_scale16(sbits), sum, acc);
}

NF_KFN float nf_k_dot_q8(const uint32_t w[4], uint32_t sbits, const float *x, float acc)
{
    float P[2] = {0, 0};
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[4];
        nf_k_q8_word(w[i], v);
        NF_KUNROLL
        for (int q = 0; q < 4; q++)
            P[q & 1] = nf_k_fma(v[q], x[4 * i + q], P[q & 1]);
    }
    return nf_k_fma(nf_k_scale16(sbits), nf_k_fma(P[1], 0x1p-8f, P[0]), acc);
}

NF_KFN float nf_k_dot_2bit(const uint32_t w[4], int t2, uint32_t sbits, const float *x, float acc)
{
    float P[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[16];
        nf_k_2bit_word(w[i], t2, v);
        NF_KUNROLL
        for (int p = 0; p < 16; p++)
            P[p & 7] = nf_k_fma(v[p], x[16 * i + p], P[p & 7]);
    }
    float sum = P[0];
    NF_KUNROLL
    for (int c = 1; c < 8; c++) /* 4^-c exact */
        sum = nf_k_fma(P[c], nf_k_float((uint32_t)(127 - 2 * c) << 23), sum);
    return nf_k_fma(nf_k_scale16(sbits), sum, acc);
}

/* q5 (q6 = 0) or q6 (q6 = 1): h[] the chunk's high-plane words (q5: h[0]
 * with bit k = column k; q6: h[0] columns 0..15, h[1] 16..31). */
NF_KFN float nf_k_dot_q56(const uint32_t w[4], const uint32_t h[2], int q6, uint32_t sbits,
                          const float *x, float acc)
{
    float P[2] = {0, 0};
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[8];
        if (q6)
            nf_k_q6_word(w[i], (h[i >> 1] >> (16 * (i & 1))) & 0xffffu, v);
        else
            nf_k_q5_word(w[i], (h[0] >> (8 * i)) & 0xffu, v);
        NF_KUNROLL
        for (int p = 0; p < 8; p++)
            P[(p >> 1) & 1] = nf_k_fma(v[p], x[8 * i + p], P[(p >> 1) & 1]);
    }
    return nf_k_fma(nf_k_scale16(sbits), nf_k_fma(P[1], 0x1p-8f, P[0]), acc);
}

/* nvfp4: two blocks of 16 (words 0-1, 2-3), each times its block scale
 * b * 2^14 (exact); sbits: byte 0 the scale of block 2jj, byte 1 of 2jj+1.
 * The divisor is applied per row by the caller (nf_k_finish). */
NF_KFN float nf_k_dot_nvfp4(const uint32_t w[4], uint32_t sbits, const float *x, float acc)
{
    float P[2] = {0, 0};
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[8];
        nf_k_nvfp4_word(w[i], v);
        NF_KUNROLL
        for (int p = 0; p < 8; p++)
            P[i >> 1] = nf_k_fma(v[p], x[8 * i + p], P[i >> 1]);
    }
    float b0, b1;
    nf_k_scale_e4m3x2(sbits, &b0, &b1);
    acc = nf_k_fma(b0 * 0x1p14f, P[0], acc);
    return nf_k_fma(b1 * 0x1p14f, P[1], acc);
}

/* fp8: exact e4m3 * x summed; the row scale is applied by nf_k_finish. */
NF_KFN float nf_k_dot_fp8(const uint32_t w[4], const float *x, float acc)
{
    float P = 0;
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        float v[4];
        nf_k_fp8_word(w[i], v);
        NF_KUNROLL
        for (int q = 0; q < 4; q++)
            P = nf_k_fma(v[q], x[4 * i + q], P);
    }
    return nf_k_add(acc, P);
}

NF_KFN float nf_k_dot_bf16(const uint32_t w[4], const float *x, float acc)
{
    float P = 0;
    NF_KUNROLL
    for (int i = 0; i < 4; i++) {
        P = nf_k_fma(nf_k_float(w[i] << 16), x[2 * i], P);
        P = nf_k_fma(nf_k_float(w[i] & 0xffff0000u), x[2 * i + 1], P);
    }
    return nf_k_add(acc, P);
}

NF_KFN float nf_k_dot_fp32(const uint32_t w[4], int is_int, const float *x, float acc)
{
    float P = 0;
    NF_KUNROLL
    for (int i = 0; i < 4; i++)
        P = nf_k_fma(is_int ? (float)(int32_t)w[i] : nf_k_float(w[i]), x[i], P);
    return nf_k_add(acc, P);
}

/* The per-row step after the reduction: fp8 times bf16(r[n]), nvfp4 divided
 * by w[n / slice]; rscale is that r or w. */
NF_KFN float nf_k_finish(int32_t f, float y, float rscale)
{
#ifdef __CUDA_ARCH__
    if (f == NF_FMT_FP8_E4M3FN_ROW_BF16)
        return __fmul_rn(y, rscale);
    if (f == NF_FMT_NVFP4)
        return __fdiv_rn(y, rscale);
#else
    if (f == NF_FMT_FP8_E4M3FN_ROW_BF16)
        return y * rscale;
    if (f == NF_FMT_NVFP4)
        return y / rscale;
#endif
    return y;
}

/* The row scale nf_k_finish needs (fp8 r[n], nvfp4 w[n / slice]; else 1). */
NF_KFN float nf_k_rscale(const uint8_t *obj, const nf_kgeom *g, uint64_t n)
{
    if (g->format == NF_FMT_FP8_E4M3FN_ROW_BF16)
        return nf_k_bf16(nf_k_ld16(obj + g->o_scale + 2 * n));
    if (g->format == NF_FMT_NVFP4)
        return nf_k_float(nf_k_ld32(obj + g->o_div + 4 * (n / g->slice)));
    return 1.0f;
}

/* The chunk's raw data as the kernels load it. */
typedef struct {
    uint32_t w[4];   /* 16 bytes of the first plane */
    uint32_t h[2];   /* q5: h[0]; q6: h[0], h[1] */
    uint32_t s;      /* FP16 group scale, or nvfp4's two block-scale bytes */
} nf_kraw;

/* The chunk dot of format f (a constant in the kernels: the switch folds). */
NF_KFN float nf_k_dot(int32_t f, const nf_kraw *r, const float *x, float acc)
{
    switch (f) {
    case NF_FMT_BF16: return nf_k_dot_bf16(r->w, x, acc);
    case NF_FMT_FP32: return nf_k_dot_fp32(r->w, 0, x, acc);
    case NF_FMT_INT32: return nf_k_dot_fp32(r->w, 1, x, acc);
    case NF_FMT_Q2_G64_FP16: return nf_k_dot_2bit(r->w, 0, r->s, x, acc);
    case NF_FMT_T2_G128_FP16: return nf_k_dot_2bit(r->w, 1, r->s, x, acc);
    case NF_FMT_Q4_G64_FP16: return nf_k_dot_q4(r->w, r->s, x, acc);
    case NF_FMT_Q5_G64_FP16: return nf_k_dot_q56(r->w, r->h, 0, r->s, x, acc);
    case NF_FMT_Q6_G64_FP16: return nf_k_dot_q56(r->w, r->h, 1, r->s, x, acc);
    case NF_FMT_Q8_G32_FP16: return nf_k_dot_q8(r->w, r->s, x, acc);
    case NF_FMT_NVFP4: return nf_k_dot_nvfp4(r->w, r->s, x, acc);
    case NF_FMT_FP8_E4M3FN_ROW_BF16: return nf_k_dot_fp8(r->w, x, acc);
    default: return acc;
    }
}

/* The chunk's C values decoded exactly as the reference decoder (row_split,
 * nvfp4, fp8; contiguous formats go element by element): the word
 * decoders' c * 2^b times 2^-b is exact, then the one product/quotient of
 * ninfer-formats(7) Formats with the reference's NaN results. rscale:
 * nf_k_rscale. */
NF_KFN void nf_k_decode_chunk(int32_t f, const nf_kraw *r, float rscale, float *out)
{
    switch (f) {
    case NF_FMT_Q4_G64_FP16: {
        float s = nf_k_fp16(r->s);
        NF_KUNROLL
        for (int i = 0; i < 4; i++) {
            float v[8];
            nf_k_q4_word(r->w[i], v);
            NF_KUNROLL
            for (int p = 0; p < 8; p++)
                out[8 * i + p] = nf_k_mul(v[p] * nf_k_float((uint32_t)(127 - 4 * (p & 3)) << 23), s);
        }
        break;
    }
    case NF_FMT_Q8_G32_FP16: {
        float s = nf_k_fp16(r->s);
        NF_KUNROLL
        for (int i = 0; i < 4; i++) {
            float v[4];
            nf_k_q8_word(r->w[i], v);
            NF_KUNROLL
            for (int q = 0; q < 4; q++)
                out[4 * i + q] = nf_k_mul(v[q] * ((q & 1) ? 0x1p-8f : 1.0f), s);
        }
        break;
    }
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16: {
        float s = nf_k_fp16(r->s);
        NF_KUNROLL
        for (int i = 0; i < 4; i++) {
            float v[16];
            nf_k_2bit_word(r->w[i], f == NF_FMT_T2_G128_FP16, v);
            NF_KUNROLL
            for (int p = 0; p < 16; p++)
                out[16 * i + p] = nf_k_mul(v[p] * nf_k_float((uint32_t)(127 - 2 * (p & 7)) << 23), s);
        }
        break;
    }
    case NF_FMT_Q5_G64_FP16:
    case NF_FMT_Q6_G64_FP16: {
        float s = nf_k_fp16(r->s);
        NF_KUNROLL
        for (int i = 0; i < 4; i++) {
            float v[8];
            if (f == NF_FMT_Q6_G64_FP16)
                nf_k_q6_word(r->w[i], (r->h[i >> 1] >> (16 * (i & 1))) & 0xffffu, v);
            else
                nf_k_q5_word(r->w[i], (r->h[0] >> (8 * i)) & 0xffu, v);
            NF_KUNROLL
            for (int p = 0; p < 8; p++)
                out[8 * i + p] = nf_k_mul(v[p] * (((p >> 1) & 1) ? 0x1p-8f : 1.0f), s);
        }
        break;
    }
    case NF_FMT_NVFP4: {
        float b0 = nf_k_e4m3(r->s & 0xffu), b1 = nf_k_e4m3((r->s >> 8) & 0xffu);
        NF_KUNROLL
        for (int i = 0; i < 4; i++) {
            float v[8];
            nf_k_nvfp4_word(r->w[i], v);
            NF_KUNROLL
            for (int p = 0; p < 8; p++)
                out[8 * i + p] = nf_k_div(nf_k_mul(v[p] * 0x1p14f, i < 2 ? b0 : b1), rscale);
        }
        break;
    }
    case NF_FMT_FP8_E4M3FN_ROW_BF16:
        NF_KUNROLL
        for (int q = 0; q < 16; q++)
            out[q] = nf_k_mul(nf_k_e4m3((r->w[q >> 2] >> (8 * (q & 3))) & 0xffu), rscale);
        break;
    default:
        break;
    }
}

/* ---- the launch plan of the GEMV kernels --------------------------------------
 * A block holds gpb row groups of W warps each; a row group owns R
 * consecutive rows (the last group's missing rows are clamped to the last
 * row for loading and never written). The W warps of a group split the
 * row's chunks: lane l of warp s takes chunks s*32 + l + i*32*W, U of them
 * per loop step (all loads of a step issued before any use). Partial sums
 * are reduced across the warp by an xor butterfly, then across the W warps
 * in warp order through shared memory. The scalar plan (rows not 16-byte
 * aligned, or forced) is one warp per row, lanes striding over columns. */

#define NF_KPLAN_U 2            /* chunks per row in flight per lane and step */
#define NF_KPLAN_TARGET_WARPS 4096 /* ~32 resident warps on each of 132 SMs */

typedef struct {
    uint32_t scalar;   /* 1: the per-element kernel; 2: the gguf unit kernel
                          (nf_kindex_gguf.h: one warp per row, lanes over
                          32-column units) */
    uint32_t R, W;     /* rows per group, warps per group */
    uint32_t gpb;      /* groups per block */
    uint32_t threads;  /* block size: 32 * W * gpb */
    uint64_t groups;   /* ceil(nrows / R) (scalar: nrows) */
    uint64_t blocks;   /* ceil(groups / gpb) */
} nf_kplan;

/* A thread's part in the chunk GEMV kernel (block, thread index): its
 * lane, warp, the warp's place sub in its row group, and the group's first
 * row (relative to the range start). Rows first .. first+R-1; chunks
 * sub*32 + lane + i*32*W. The launch uses p.threads threads per block. */
NF_KFN void nf_k_role(uint32_t W, uint32_t R, uint32_t threads, uint64_t block, uint32_t tid,
                      uint32_t *lane, uint32_t *warp, uint32_t *sub, uint64_t *first)
{
    *lane = tid & 31u;
    *warp = tid >> 5;
    *sub = *warp % W;
    *first = (block * (threads / 32u / W) + *warp / W) * R;
}

/* force_R: 1, 2 or 4 (0: default 2); force_W: 1, 2, 4 or 8 (0: heuristic);
 * force_scalar: use the per-element kernel. nrows >= 1. */
NF_KHOST nf_kplan nf_k_gemv_plan(const nf_kgeom *g, uint64_t nrows, unsigned force_R,
                                 unsigned force_W, int force_scalar)
{
    nf_kplan p;
    memset(&p, 0, sizeof p);
    if (force_scalar || !g->vec) {
        p.scalar = g->gq && !force_scalar ? 2 : 1;
        p.R = 1;
        p.W = 1;
        p.gpb = 4;
        p.threads = 128;
        p.groups = nrows;
        p.blocks = (nrows + 3) / 4;
        return p;
    }
    p.R = (force_R == 1 || force_R == 4) ? force_R : 2;
    p.groups = (nrows + p.R - 1) / p.R;
    if (force_W == 1 || force_W == 2 || force_W == 4 || force_W == 8) {
        p.W = force_W;
    } else {
        /* at most ~8 chunks per lane per row ... */
        p.W = 1;
        while (p.W < 8 && g->nch > (uint64_t)32 * p.W * 8)
            p.W *= 2;
        /* ... and enough warps to cover the memory latency, while every
         * warp still has a chunk */
        while (p.W < 8 && p.groups * p.W < NF_KPLAN_TARGET_WARPS &&
               g->nch > (uint64_t)32 * p.W)
            p.W *= 2;
    }
    p.gpb = p.W >= 4 ? 1 : 4 / p.W; /* 128 threads, 256 for W = 8 */
    p.threads = 32 * p.W * p.gpb;
    p.blocks = (p.groups + p.gpb - 1) / p.gpb;
    return p;
}

/* The GEMV error bound of nf_kernels.cuh in units of 2^-24 sum_k |w_nk x_k|
 * (plus 2^-24 |y_ref|), covering the chunk, per-element and gguf unit
 * kernels alike: C + (nch + 31) / 32 + (K + 31) / 32 + 24. t_device and the
 * benchmark's check (nf_devcheck_gemv) use it. */
NF_KHOST double nf_k_gemv_bound_units(const nf_kgeom *g)
{
    return (double)g->C + (double)(g->nch + 31) / 32 + (double)(g->cols + 31) / 32 + 24;
}

/* ---- host emulation of the device GEMV (C only: tests) ------------------------ */
#ifndef __CUDACC__

NF_KHOST nf_kraw nf_k_load_host(const uint8_t *obj, const nf_kgeom *g, uint64_t n, uint64_t jj)
{
    nf_kraw r;
    memset(&r, 0, sizeof r);
    const uint8_t *c = obj + g->o_codes + n * g->rb_codes + nf_k_chunk_codes(jj);
    for (int i = 0; i < 4; i++)
        r.w[i] = nf_k_ld32(c + 4 * i);
    switch (g->format) {
    case NF_FMT_Q5_G64_FP16:
        r.h[0] = nf_k_ld32(obj + g->o_high + n * g->rb_high + nf_k_chunk_high(g, jj));
        break;
    case NF_FMT_Q6_G64_FP16: {
        const uint8_t *h = obj + g->o_high + n * g->rb_high + nf_k_chunk_high(g, jj);
        r.h[0] = nf_k_ld32(h);
        r.h[1] = nf_k_ld32(h + 4);
        break;
    }
    case NF_FMT_NVFP4:
        r.s = nf_k_ld16(obj + g->o_scale + nf_nvfp4_scale_row_part(n, g->cols) +
                        nf_nvfp4_scale_col_part(2 * jj));
        break;
    default:
        break;
    }
    if (g->G)
        r.s = nf_k_ld16(obj + g->o_scale + n * g->rb_scale + 2 * nf_k_chunk_group(g, jj));
    return r;
}

/* xor butterfly over 32 lane values, as __shfl_xor_sync does it */
NF_KHOST float nf_k_butterfly(float v[32])
{
    for (int off = 16; off; off >>= 1) {
        float t[32];
        for (int l = 0; l < 32; l++)
            t[l] = v[l] + v[l ^ off];
        memcpy(v, t, sizeof t);
    }
    return v[0];
}

/* y[i] for rows n0 + i, i < nrows, exactly as the device computes it under
 * plan p. x: f32 activations, g->nch * g->C of them (zero past K). */
NF_KHOST void nf_k_gemv_emulate(const uint8_t *obj, const nf_kgeom *g, const nf_kplan *p,
                                uint64_t n0, uint64_t nrows, const float *x, float *y)
{
    if (p->scalar == 2) { /* gguf units: nf_gemv_gguf_kernel */
        for (uint64_t i = 0; i < nrows; i++) {
            float v[32];
            for (int l = 0; l < 32; l++) {
                float acc = 0;
                for (uint64_t u = (uint64_t)l; u < g->nch; u += 32)
                    acc = nf_kg_unit_dot(obj, g, n0 + i, u, x, acc);
                v[l] = acc;
            }
            y[i] = nf_k_butterfly(v);
        }
        return;
    }
    if (p->scalar) {
        for (uint64_t i = 0; i < nrows; i++) {
            uint64_t n = n0 + i;
            float v[32];
            for (int l = 0; l < 32; l++) {
                float acc = 0;
                for (uint64_t k = (uint64_t)l; k < g->cols; k += 32)
                    acc = nf_k_fma(nf_k_elem(obj, g, n, k), x[k], acc);
                v[l] = acc;
            }
            y[i] = nf_k_butterfly(v); /* nf_k_elem already applied r or w */
        }
        return;
    }
    uint64_t step = 32ull * p->W;
    for (uint64_t grp = 0; grp < p->groups; grp++) {
        for (uint32_t r = 0; r < p->R; r++) {
            uint64_t i = grp * p->R + r;
            if (i >= nrows)
                break;
            uint64_t n = n0 + i;
            float tot = 0;
            for (uint32_t s = 0; s < p->W; s++) {
                float v[32];
                for (int l = 0; l < 32; l++) {
                    float acc = 0;
                    for (uint64_t j = s * 32ull + (uint64_t)l; j < g->nch; j += step) {
                        nf_kraw raw = nf_k_load_host(obj, g, n, j);
                        acc = nf_k_dot(g->format, &raw, x + j * g->C, acc);
                    }
                    v[l] = acc;
                }
                float wsum = nf_k_butterfly(v);
                tot = s ? tot + wsum : wsum;
            }
            y[i] = nf_k_finish(g->format, tot, nf_k_rscale(obj, g, n));
        }
    }
}
#endif /* !__CUDACC__ */

#endif
