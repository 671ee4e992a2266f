/* nf_codec_gguf.c — decode and deep validation of the gguf_* block formats
 * (DESIGN 7.5, gguf_rows_v1 of DESIGN 8; GGUF.md 2 has every formula).
 *
 * The scalar path is the reference: nf_gguf_elem evaluates GGUF.md's
 * formula of one element from the block's bytes, nothing shared between
 * elements. The SIMD paths decode whole blocks the way ggml's structs lay
 * them out and must agree with it bit for bit; they can, because in every
 * format the products ggml rounds are exact in f32 (an f16 has 11
 * significant bits, a 6-bit scale times a code of at most 7 bits adds 13:
 * d*sc*q has at most 24), so the only rounding left is the final addition
 * of m or subtraction of dmin*m, which an FMA of the same exact operands
 * performs identically.
 */
#include "nf_codec_gguf.h"
#include "nf_fp.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_GG_X86 1
#include <immintrin.h>
#else
#define NF_GG_X86 0
#endif

static inline uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline float h2f(const uint8_t *p) { return nf_fp16_to_f32(ld16(p)); }

/* kvalues_iq4nl and kvalues_mxfp4 (= 2 * E2M1) of ggml-common.h */
static const int8_t kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};
static const int8_t kv_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* ggml_e8m0_to_fp32_half: 2^(E-128), the two smallest as denormals */
static inline float e8m0_half(uint8_t x)
{
    uint32_t bits = x < 2 ? 0x00200000u << x : (uint32_t)(x - 1) << 23;
    return nf_f32_from_bits(bits);
}

/* the legacy 32-block nibble order: element j low, j+16 high of byte j */
static inline unsigned nib16(const uint8_t *q, unsigned e)
{
    return e < 16 ? q[e] & 15u : q[e - 16] >> 4;
}

/* get_scale_min_k4: the 6-bit scale and min of sub-block s (0..7) */
static inline void scale_min_k4(const uint8_t *S, unsigned s, unsigned *sc, unsigned *m)
{
    if (s < 4) {
        *sc = S[s] & 63u;
        *m = S[s + 4] & 63u;
    } else {
        *sc = (S[s + 4] & 15u) | (unsigned)(S[s - 4] >> 6) << 4;
        *m = (unsigned)(S[s + 4] >> 4) | (unsigned)(S[s] >> 6) << 4;
    }
}

/* ---- the reference: one element at a time, GGUF.md 2 ---------------------- */

float nf_gguf_elem(nf_format f, const uint8_t *b, unsigned e)
{
    switch (f) {
    case NF_FMT_GGUF_F16:
        return h2f(b);
    case NF_FMT_GGUF_Q8_0:
        return (float)(int8_t)b[2 + e] * h2f(b);
    case NF_FMT_GGUF_Q4_0:
        return (float)((int)nib16(b + 2, e) - 8) * h2f(b);
    case NF_FMT_GGUF_Q4_1:
        return (float)nib16(b + 4, e) * h2f(b) + h2f(b + 2);
    case NF_FMT_GGUF_Q5_0: {
        unsigned q = nib16(b + 6, e) | ((ld32(b + 2) >> e) & 1u) << 4;
        return (float)((int)q - 16) * h2f(b);
    }
    case NF_FMT_GGUF_Q5_1: {
        unsigned q = nib16(b + 8, e) | ((ld32(b + 4) >> e) & 1u) << 4;
        return (float)q * h2f(b) + h2f(b + 2);
    }
    case NF_FMT_GGUF_IQ4_NL:
        return h2f(b) * (float)kv_iq4nl[nib16(b + 2, e)];
    case NF_FMT_GGUF_MXFP4:
        return (float)kv_fp4[nib16(b + 1, e)] * e8m0_half(b[0]);
    case NF_FMT_GGUF_Q2_K: {
        unsigned h = e / 128, r = e % 128, j = r / 32, l = r % 32;
        unsigned q = (b[16 + 32 * h + l] >> (2 * j)) & 3u, sc = b[e / 16];
        float dl = h2f(b + 80) * (float)(sc & 15u), ml = h2f(b + 82) * (float)(sc >> 4);
        return dl * (float)q - ml;
    }
    case NF_FMT_GGUF_Q3_K: {
        unsigned h = e / 128, r = e % 128, j = r / 32, l = r % 32, s = e / 16;
        const uint8_t *S = b + 96;
        int low = (b[32 + 32 * h + l] >> (2 * j)) & 3;
        int q = low - (((b[l] >> (4 * h + j)) & 1u) ? 0 : 4);
        unsigned sc6 = (s < 8 ? S[s] & 15u : (unsigned)S[s - 8] >> 4) |
                       ((S[8 + s % 4] >> (2 * (s / 4))) & 3u) << 4;
        return (h2f(b + 108) * (float)((int)sc6 - 32)) * (float)q;
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        unsigned sc, m, c = e / 64, r = e % 64;
        scale_min_k4(b + 4, e / 32, &sc, &m);
        const uint8_t *qs = b + (f == NF_FMT_GGUF_Q4_K ? 16 : 48);
        unsigned byte = qs[32 * c + r % 32], q = r < 32 ? byte & 15u : byte >> 4;
        if (f == NF_FMT_GGUF_Q5_K)
            q += 16u * ((b[16 + e % 32] >> (e / 32)) & 1u);
        return (h2f(b) * (float)sc) * (float)q - h2f(b + 2) * (float)m;
    }
    case NF_FMT_GGUF_Q6_K: {
        unsigned h = e / 128, r = e % 128, t = r / 32, l = r % 32;
        unsigned byte = b[64 * h + l + 32 * (t & 1)];
        unsigned low = t < 2 ? byte & 15u : byte >> 4;
        unsigned high = (b[128 + 32 * h + l] >> (2 * t)) & 3u;
        int q = (int)(low | high << 4) - 32;
        return (h2f(b + 208) * (float)(int8_t)b[192 + e / 16]) * (float)q;
    }
    case NF_FMT_GGUF_IQ4_XS: {
        unsigned ib = e / 32, w = e % 32, byte = b[8 + 16 * ib + w % 16];
        unsigned n = w < 16 ? byte & 15u : byte >> 4;
        unsigned ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15u) |
                      ((ld16(b + 2) >> (2 * ib)) & 3u) << 4;
        return (h2f(b) * (float)((int)ls - 32)) * (float)kv_iq4nl[n];
    }
    default:
        return 0.0f;
    }
}

static void blocks_scalar(nf_format f, const uint8_t *p, uint64_t nb, float *y)
{
    nf_gguf_info gi = nf_gguf_info_of(f);
    for (uint64_t i = 0; i < nb; i++, p += gi.block_bytes, y += gi.qk)
        for (unsigned e = 0; e < gi.qk; e++)
            y[e] = nf_gguf_elem(f, p, e);
}

/* ---- SIMD block decoders ---------------------------------------------------- */

typedef void (*blocks_fn)(nf_format, const uint8_t *, uint64_t, float *);

#if NF_GG_X86
#include "nf_gguf_simd.inc"

/* gguf_f16: 16 (8) halves per step, the tail by the reference */
#define GG_BLOCKS(W, L)                                                                  \
    static void gg_blocks_##W(nf_format f, const uint8_t *p, uint64_t nb, float *y)     \
    {                                                                                    \
        nf_gguf_info gi = nf_gguf_info_of(f);                                            \
        if (f == NF_FMT_GGUF_F16) {                                                      \
            uint64_t i = 0;                                                              \
            for (; i + L <= nb; i += L)                                                  \
                gg##W##_f16(p + 2 * i, y + i, NULL, GG_STORE);                           \
            blocks_scalar(f, p + 2 * i, nb - i, y + i);                                  \
            return;                                                                      \
        }                                                                                \
        switch (f) {                                                                     \
            GG_FORMATS(GG_CASE_##W)                                                      \
        default: break;                                                                  \
        }                                                                                \
        (void)gi;                                                                        \
    }

#define GG_LOOP(W, name)                                                                 \
    for (uint64_t i = 0; i < nb; i++)                                                    \
        gg##W##_##name(p + i * gi.block_bytes, y + i * gi.qk, NULL, GG_STORE);
#define GG_CASE_512(F, name) case F: if (F != NF_FMT_GGUF_F16) { GG_LOOP(512, name) } break;
#define GG_CASE_256(F, name) case F: if (F != NF_FMT_GGUF_F16) { GG_LOOP(256, name) } break;

GG_T512 GG_BLOCKS(512, 16)
GG_T256 GG_BLOCKS(256, 8)
#endif

/* What the CPU has, asked once (CPUID is slow, a VM exit under KVM). */
static nf_isa cpu_best(void)
{
    static _Atomic int best = -1;
    int b = atomic_load_explicit(&best, memory_order_relaxed);
    if (b < 0) {
        b = nf_codec_isa_supported(NF_ISA_AVX512) ? NF_ISA_AVX512
            : nf_codec_isa_supported(NF_ISA_AVX2) ? NF_ISA_AVX2
                                                  : NF_ISA_SCALAR;
        atomic_store_explicit(&best, b, memory_order_relaxed);
    }
    return (nf_isa)b;
}

static blocks_fn pick_blocks(nf_isa isa)
{
    if (isa == NF_ISA_AUTO)
        isa = nf_codec_isa();
    nf_isa have = cpu_best();
    if (isa > have)
        isa = have;
#if NF_GG_X86
    if (isa == NF_ISA_AVX512)
        return gg_blocks_512;
    if (isa == NF_ISA_AVX2)
        return gg_blocks_256;
#endif
    return blocks_scalar;
}

void nf_gguf_decode_blocks(nf_format f, nf_isa isa, const uint8_t *p, uint64_t nblocks,
                           float *y)
{
    if (!nf_format_is_gguf(f) || !nblocks)
        return;
    pick_blocks(isa)(f, p, nblocks, y);
}

/* ---- rows ------------------------------------------------------------------- */

void nf_gguf_row_decode(const nf_tensor_enc *t, nf_isa isa, const uint8_t *obj, uint64_t n,
                        uint64_t k0, uint64_t k1, float *out)
{
    nf_gguf_info gi = nf_gguf_info_of(t->format);
    if (!gi.qk || k0 >= k1)
        return;
    const nf_plane *pl = &t->enc.plane[0];
    const uint8_t *row = obj + pl->offset + n * pl->row_bytes;
    blocks_fn fn = pick_blocks(isa);
    uint64_t QK = gi.qk, B = gi.block_bytes;
    uint64_t b0 = k0 / QK, b1 = (k1 + QK - 1) / QK;
    float tmp[256];
    uint64_t k = k0;
    /* a partial first block */
    if (k0 % QK) {
        fn(t->format, row + b0 * B, 1, tmp);
        uint64_t end = (b0 + 1) * QK < k1 ? (b0 + 1) * QK : k1;
        memcpy(out, tmp + k0 % QK, (end - k0) * sizeof *out);
        k = end;
        b0++;
    }
    /* whole blocks straight into out */
    uint64_t whole = k1 / QK > b0 ? k1 / QK - b0 : 0;
    if (whole) {
        fn(t->format, row + b0 * B, whole, out + (k - k0));
        k += whole * QK;
        b0 += whole;
    }
    /* a partial last block */
    if (k < k1 && b0 < b1) {
        fn(t->format, row + b0 * B, 1, tmp);
        memcpy(out + (k - k0), tmp, (k1 - k) * sizeof *out);
    }
}

/* ---- deep validation -------------------------------------------------------- */

/* Byte offsets inside a block of the fields that must be finite f16 (up to
 * two), or -1; MXFP4's E is checked apart. */
static void f16_fields(nf_format f, int *a, int *b)
{
    *a = -1;
    *b = -1;
    switch (f) {
    case NF_FMT_GGUF_Q8_0:
    case NF_FMT_GGUF_Q4_0:
    case NF_FMT_GGUF_Q5_0:
    case NF_FMT_GGUF_IQ4_NL:
    case NF_FMT_GGUF_IQ4_XS: *a = 0; break;
    case NF_FMT_GGUF_Q4_1:
    case NF_FMT_GGUF_Q5_1:
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: *a = 0; *b = 2; break;
    case NF_FMT_GGUF_Q2_K: *a = 80; *b = 82; break;
    case NF_FMT_GGUF_Q3_K: *a = 108; break;
    case NF_FMT_GGUF_Q6_K: *a = 208; break;
    default: break;
    }
}

static uint64_t sm64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void nf_gguf_random_blocks(nf_format f, uint64_t seed, uint8_t *p, uint64_t nblocks)
{
    nf_gguf_info gi = nf_gguf_info_of(f);
    if (!gi.qk)
        return;
    uint64_t s = seed, n = nblocks * gi.block_bytes;
    for (uint64_t i = 0; i < n; i += 8) {
        uint64_t r = sm64(&s);
        for (unsigned k = 0; k < 8 && i + k < n; k++)
            p[i + k] = (uint8_t)(r >> (8 * k));
    }
    if (f == NF_FMT_GGUF_F16) { /* exponent 0..15: |h| < 2 */
        for (uint64_t i = 0; i < nblocks; i++)
            p[2 * i + 1] &= 0xbf;
        return;
    }
    int fa, fb;
    f16_fields(f, &fa, &fb);
    for (uint64_t i = 0; i < nblocks; i++) {
        uint8_t *b = p + i * gi.block_bytes;
        uint64_t r = sm64(&s);
        if (f == NF_FMT_GGUF_MXFP4) {
            b[0] = (uint8_t)(118 + r % 8);
            continue;
        }
        /* exponent field 3..7 (2^-12 .. 2^-8 times 1.m), random mantissa */
        uint16_t d = (uint16_t)(((3 + (r >> 8) % 5) << 10) | (r & 0x3ff));
        b[fa] = (uint8_t)d;
        b[fa + 1] = (uint8_t)(d >> 8);
        if (fb >= 0) {
            bool is_m = f == NF_FMT_GGUF_Q4_1 || f == NF_FMT_GGUF_Q5_1;
            uint16_t m = (uint16_t)(((3 + (r >> 24) % 5) << 10) | ((r >> 32) & 0x3ff));
            if (is_m && (r >> 40) & 1)
                m |= 0x8000;
            b[fb] = (uint8_t)m;
            b[fb + 1] = (uint8_t)(m >> 8);
        }
    }
}

static void note(nf_codec_check *c, uint64_t row, uint64_t col, uint32_t v, uint64_t off)
{
    if (c->count[NF_CR_SCALE]++ == 0)
        c->first[NF_CR_SCALE] = (nf_codec_finding){NF_CR_SCALE, row, col, v, off};
}

void nf_gguf_validate(const nf_tensor_enc *t, const uint8_t *obj, nf_codec_check *c)
{
    nf_gguf_info gi = nf_gguf_info_of(t->format);
    if (!gi.qk || t->format == NF_FMT_GGUF_F16)
        return;
    const nf_plane *pl = &t->enc.plane[0];
    uint64_t nb = t->cols / gi.qk;
    int fa, fb;
    f16_fields(t->format, &fa, &fb);
    for (uint64_t n = 0; n < t->rows; n++) {
        uint64_t roff = pl->offset + n * pl->row_bytes;
        for (uint64_t i = 0; i < nb; i++) {
            uint64_t off = roff + i * gi.block_bytes;
            const uint8_t *b = obj + off;
            if (t->format == NF_FMT_GGUF_MXFP4) {
                if (b[0] == 0xff)
                    note(c, n, i * gi.qk, b[0], off);
                continue;
            }
            uint16_t h = ld16(b + fa);
            if ((h & 0x7c00u) == 0x7c00u)
                note(c, n, i * gi.qk, h, off + (uint64_t)fa);
            if (fb >= 0) {
                h = ld16(b + fb);
                if ((h & 0x7c00u) == 0x7c00u)
                    note(c, n, i * gi.qk, h, off + (uint64_t)fb);
            }
        }
    }
}

void nf_gguf_finding_str(const nf_tensor_enc *t, const nf_codec_finding *f, char *buf,
                         size_t n)
{
    nf_gguf_info gi = nf_gguf_info_of(t->format);
    unsigned long long row = f->row, c0 = f->index, c1 = f->index + gi.qk - 1;
    if (t->format == NF_FMT_GGUF_MXFP4) {
        snprintf(buf, n, "row %llu, columns %llu..%llu: mxfp4 scale E = 0x%02x (e8m0 nan)", row,
                 c0, c1, f->value);
        return;
    }
    /* which field: its offset inside the block */
    const nf_plane *pl = &t->enc.plane[0];
    uint64_t in = gi.block_bytes ? (f->offset - pl->offset - f->row * pl->row_bytes) %
                                       gi.block_bytes
                                 : 0;
    int fa, fb;
    f16_fields(t->format, &fa, &fb);
    const char *field = (int)in == fb ? (t->format == NF_FMT_GGUF_Q4_1 ||
                                         t->format == NF_FMT_GGUF_Q5_1 ? "m" : "dmin")
                                      : "d";
    snprintf(buf, n, "row %llu, columns %llu..%llu: %s 0x%04x is not finite", row, c0, c1,
             field, f->value);
}
