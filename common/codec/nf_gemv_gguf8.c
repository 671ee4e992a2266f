/* nf_gemv_gguf8.c — the A8 GEMV of the gguf_* block formats
 * (nf_gemv_gguf.h): the G order of nf_gemv.h on VNNI integer dot products,
 * as llama.cpp's own kernels do with its q8 activations, and the same
 * order in portable C.
 *
 * The G order. x is nf_a8_quantize's codes q and scales d per block of 16
 * columns. Each format's weights are w = S_b * c - M_b over the 16 columns
 * of block b, c the format's integer code (q4_0: nib - 8, q4_k: the 4-bit
 * q, q6_k: q - 32, iq4_*: the table value, mxfp4: 2 * E2M1, ...), S_b and
 * M_b the block's exact scale and offset (d, d * sc, 2^(E-128); dmin * m,
 * -m; M = 0 where the format has none), all exact products of the block's
 * fields. Per row: for each block, in increasing b, the exact integers
 * I_b = sum c_k q_k and J_b = sum q_k, then in f64 T_b = fl(fl(S_b I_b -
 * M_b J_b) * d_b) (S_b I_b and M_b J_b are exact in f64, so the first is
 * one rounding of the block's exact sum), slot[b % 16] += T_b in 16 f64
 * slots; the tree in f64; y = f32(tree). The two roundings in f64 sit far
 * inside nf_gemv_ref_rows_act's bound (the weights are the codec's, exact
 * where the codec's products are), whatever S and M cancel, and no value
 * meets a subnormal. A row with a non-finite f16 field (d, dmin, m) or an
 * mxfp4 exponent of 253 or more (weights that overflow f32 in the codec)
 * takes the F order over its decoded weights instead, like the reference.
 *
 * The AVX-512 kernel (VNNI, VBMI) takes 256 columns at a time: four code
 * vectors of 64 unsigned bytes u = c + beta whose 128-bit lanes each cover
 * one block of 16 columns (the order of the blocks among the lanes is the
 * format's, x's codes are laid out the same way once per call), vpdpbusd
 * against them, the four dwords of each lane summed (I + beta J), then the
 * f64 epilogue 16 blocks at a time; up to 4 rows a pass share x's code
 * vectors, each row's chunks still in increasing order, so the grouping
 * changes no bit. The AVX2 kernel
 * computes the same integers with vpmaddubsw and vpmaddwd in vectors of 32
 * bytes (below), and the same epilogue four slots a vector.
 */
#include "nf_gemv_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_gemv_int.h"
#include "nf_pool.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_G8_X86 1
#include <immintrin.h>
#else
#define NF_G8_X86 0
#endif

static inline uint16_t ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline float h2f(const uint8_t *p) { return nf_fp16_to_f32(ld16(p)); }
static inline bool hfin(const uint8_t *p) { return (ld16(p) & 0x7c00u) != 0x7c00u; }

static const int8_t kv_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                    1,    13,   25,  38,  53,  69,  89,  113};
static const int8_t kv_fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

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

static inline unsigned nib16(const uint8_t *q, unsigned e)
{
    return e < 16 ? q[e] & 15u : q[e - 16] >> 4;
}

/* ---- the formats: codes, S and M of one 16-column block ------------------------ */

typedef struct {
    unsigned qk, bb;   /* elements and bytes a block */
    int beta;          /* the AVX-512 kernel's u = c + beta */
    bool min;          /* M is not always 0 */
    unsigned perm;     /* the kernel's order of the 16 blocks among its lanes */
} gfmt;

enum { P_NAT = 0, P_NIB = 1, P_K4 = 2, P_K2 = 3 };

static inline bool gfmt_of(nf_format f, gfmt *g)
{
    switch (f) {
    case NF_FMT_GGUF_Q8_0: *g = (gfmt){32, 34, 128, false, P_NAT}; return true;
    case NF_FMT_GGUF_Q4_0: *g = (gfmt){32, 18, 8, false, P_NIB}; return true;
    case NF_FMT_GGUF_Q4_1: *g = (gfmt){32, 20, 0, true, P_NIB}; return true;
    case NF_FMT_GGUF_Q5_0: *g = (gfmt){32, 22, 16, false, P_NIB}; return true;
    case NF_FMT_GGUF_Q5_1: *g = (gfmt){32, 24, 0, true, P_NIB}; return true;
    case NF_FMT_GGUF_IQ4_NL: *g = (gfmt){32, 18, 128, false, P_NIB}; return true;
    case NF_FMT_GGUF_MXFP4: *g = (gfmt){32, 17, 12, false, P_NIB}; return true;
    case NF_FMT_GGUF_Q2_K: *g = (gfmt){256, 84, 0, true, P_K2}; return true;
    case NF_FMT_GGUF_Q3_K: *g = (gfmt){256, 110, 4, false, P_K2}; return true;
    case NF_FMT_GGUF_Q4_K: *g = (gfmt){256, 144, 0, true, P_K4}; return true;
    case NF_FMT_GGUF_Q5_K: *g = (gfmt){256, 176, 0, true, P_K4}; return true;
    case NF_FMT_GGUF_Q6_K: *g = (gfmt){256, 210, 32, false, P_NAT}; return true;
    case NF_FMT_GGUF_IQ4_XS: *g = (gfmt){256, 136, 128, false, P_NIB}; return true;
    default: return false;
    }
}

/* Block b (of 16 columns) of a row: its 16 codes c, S and M (f64, exact). */
static void xblock(nf_format f, const uint8_t *row, uint64_t b, int *c, double *S, double *M)
{
    *M = 0;
    switch (f) {
    case NF_FMT_GGUF_Q8_0: {
        const uint8_t *blk = row + (b / 2) * 34;
        for (unsigned p = 0; p < 16; p++)
            c[p] = (int8_t)blk[2 + 16 * (b % 2) + p];
        *S = h2f(blk);
        return;
    }
    case NF_FMT_GGUF_Q4_0:
    case NF_FMT_GGUF_Q4_1:
    case NF_FMT_GGUF_IQ4_NL:
    case NF_FMT_GGUF_MXFP4: {
        unsigned B = f == NF_FMT_GGUF_Q4_1 ? 20 : f == NF_FMT_GGUF_MXFP4 ? 17 : 18;
        unsigned qo = f == NF_FMT_GGUF_Q4_1 ? 4 : f == NF_FMT_GGUF_MXFP4 ? 1 : 2;
        const uint8_t *blk = row + (b / 2) * B;
        for (unsigned p = 0; p < 16; p++) {
            unsigned n = nib16(blk + qo, 16 * (unsigned)(b % 2) + p);
            c[p] = f == NF_FMT_GGUF_Q4_0 ? (int)n - 8 : f == NF_FMT_GGUF_Q4_1 ? (int)n
                   : f == NF_FMT_GGUF_IQ4_NL ? kv_iq4nl[n] : kv_fp4[n];
        }
        if (f == NF_FMT_GGUF_MXFP4)
            *S = ldexp(1.0, (int)blk[0] - 128);
        else
            *S = h2f(blk);
        if (f == NF_FMT_GGUF_Q4_1)
            *M = -(double)h2f(blk + 2);
        return;
    }
    case NF_FMT_GGUF_Q5_0:
    case NF_FMT_GGUF_Q5_1: {
        bool one = f == NF_FMT_GGUF_Q5_1;
        const uint8_t *blk = row + (b / 2) * (one ? 24 : 22);
        uint32_t qh = ld32(blk + (one ? 4 : 2));
        for (unsigned p = 0; p < 16; p++) {
            unsigned e = 16 * (unsigned)(b % 2) + p;
            unsigned q = nib16(blk + (one ? 8 : 6), e) | ((qh >> e) & 1u) << 4;
            c[p] = one ? (int)q : (int)q - 16;
        }
        *S = h2f(blk);
        if (one)
            *M = -(double)h2f(blk + 2);
        return;
    }
    case NF_FMT_GGUF_Q2_K: {
        const uint8_t *blk = row + (b / 16) * 84;
        unsigned s = (unsigned)(b % 16), sc = blk[s];
        for (unsigned p = 0; p < 16; p++) {
            unsigned e = 16 * s + p, h = e / 128, r = e % 128, j = r / 32, l = r % 32;
            c[p] = (blk[16 + 32 * h + l] >> (2 * j)) & 3;
        }
        *S = h2f(blk + 80) * (float)(sc & 15u);
        *M = h2f(blk + 82) * (float)(sc >> 4);
        return;
    }
    case NF_FMT_GGUF_Q3_K: {
        const uint8_t *blk = row + (b / 16) * 110, *SC = blk + 96;
        unsigned s = (unsigned)(b % 16);
        for (unsigned p = 0; p < 16; p++) {
            unsigned e = 16 * s + p, h = e / 128, r = e % 128, j = r / 32, l = r % 32;
            int low = (blk[32 + 32 * h + l] >> (2 * j)) & 3;
            c[p] = low - (((blk[l] >> (4 * h + j)) & 1u) ? 0 : 4);
        }
        unsigned sc6 = (s < 8 ? SC[s] & 15u : (unsigned)SC[s - 8] >> 4) |
                       ((SC[8 + s % 4] >> (2 * (s / 4))) & 3u) << 4;
        *S = h2f(blk + 108) * (float)((int)sc6 - 32);
        return;
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        bool five = f == NF_FMT_GGUF_Q5_K;
        const uint8_t *blk = row + (b / 16) * (five ? 176 : 144), *qs = blk + (five ? 48 : 16);
        unsigned s = (unsigned)(b % 16), sc, m;
        scale_min_k4(blk + 4, s / 2, &sc, &m);
        for (unsigned p = 0; p < 16; p++) {
            unsigned e = 16 * s + p, cc = e / 64, r = e % 64;
            unsigned byte = qs[32 * cc + r % 32], q = r < 32 ? byte & 15u : byte >> 4;
            if (five)
                q += 16u * ((blk[16 + e % 32] >> (e / 32)) & 1u);
            c[p] = (int)q;
        }
        *S = h2f(blk) * (float)sc;
        *M = h2f(blk + 2) * (float)m;
        return;
    }
    case NF_FMT_GGUF_Q6_K: {
        const uint8_t *blk = row + (b / 16) * 210;
        unsigned s = (unsigned)(b % 16);
        for (unsigned p = 0; p < 16; p++) {
            unsigned e = 16 * s + p, h = e / 128, r = e % 128, t = r / 32, l = r % 32;
            unsigned byte = blk[64 * h + l + 32 * (t & 1)], low = t < 2 ? byte & 15u : byte >> 4;
            unsigned high = (blk[128 + 32 * h + l] >> (2 * t)) & 3u;
            c[p] = (int)(low | high << 4) - 32;
        }
        *S = h2f(blk + 208) * (float)(int8_t)blk[192 + s];
        return;
    }
    case NF_FMT_GGUF_IQ4_XS: {
        const uint8_t *blk = row + (b / 16) * 136;
        unsigned s = (unsigned)(b % 16), ib = s / 2;
        for (unsigned p = 0; p < 16; p++) {
            unsigned w = 16 * (s % 2) + p, byte = blk[8 + 16 * ib + w % 16];
            c[p] = kv_iq4nl[w < 16 ? byte & 15u : byte >> 4];
        }
        unsigned ls = ((blk[4 + ib / 2] >> (4 * (ib % 2))) & 15u) | ((ld16(blk + 2) >> (2 * ib)) & 3u) << 4;
        *S = h2f(blk) * (float)((int)ls - 32);
        return;
    }
    default:
        *S = 0;
        memset(c, 0, 16 * sizeof *c);
    }
}

/* The row takes the G order: every f16 field finite (and mxfp4 E <= 252). */
static bool row_ok(nf_format f, const gfmt *g, const uint8_t *row, uint64_t nblk)
{
    for (uint64_t i = 0; i < nblk; i++) {
        const uint8_t *blk = row + i * g->bb;
        bool ok;
        switch (f) {
        case NF_FMT_GGUF_MXFP4: ok = blk[0] <= 252; break;
        case NF_FMT_GGUF_Q4_1:
        case NF_FMT_GGUF_Q5_1:
        case NF_FMT_GGUF_Q4_K:
        case NF_FMT_GGUF_Q5_K: ok = hfin(blk) && hfin(blk + 2); break;
        case NF_FMT_GGUF_Q2_K: ok = hfin(blk + 80) && hfin(blk + 82); break;
        case NF_FMT_GGUF_Q3_K: ok = hfin(blk + 108); break;
        case NF_FMT_GGUF_Q6_K: ok = hfin(blk + 208); break;
        default: ok = hfin(blk); break; /* d at offset 0 */
        }
        if (!ok)
            return false;
    }
    return true;
}

static double tree16d(double *s)
{
    for (unsigned h = 8; h; h /= 2)
        for (unsigned i = 0; i < h; i++)
            s[i] = s[i] + s[i + h];
    return s[0];
}

/* The fields of the 8 blocks of a 256-column chunk, for the AVX-512 kernel
 * (fields8): byte indices of two 128-byte windows and their masks. */
typedef struct {
    uint8_t i0[64], i1[64];
    uint64_t mh, m1;
} gfield;

/* The header fields of the 8 blocks of the 4-bit and 5-bit formats (8 * B
 * <= 192) in one vector (hdr: d or E at bytes 0-15, m at 16-31, qh at
 * 32-63), picked from the chunk's three 64-byte loads W0, W1, W2 (W2 cut
 * at the chunk's end) that the code runs come from too: a field that ends
 * below byte 128 from the window W0:W1 (index i0), any other from W1:W2
 * (index i1, at its offset - 64; result bytes m1). Where 7 * B + (the
 * header's length) <= 128 all come from W0:W1 (the kernel knows this at
 * compile time). */
typedef struct {
    uint8_t i0[64], i1[64];
    uint64_t m1;
} gwin;

/* Field (off, w) of the 8 blocks at result byte out + k * w (block k). */
static void gwin_add(gwin *g, unsigned B, unsigned off, unsigned w, unsigned out)
{
    for (unsigned k = 0; k < 8; k++)
        for (unsigned i = 0; i < w; i++) {
            unsigned pos = k * B + off + i, t = out + k * w + i;
            if (k * B + off + w <= 128) {
                g->i0[t] = (uint8_t)pos;
            } else {
                g->i1[t] = (uint8_t)(pos - 64);
                g->m1 |= 1ull << t;
            }
        }
}

/* The code runs of 16 bytes at qo of blocks 0-3 (q[0], from W0:W1) and 4-7
 * (q[1], from W1:W2), one block a 128-bit lane. */
static void gruns_of(gwin *q, unsigned B, unsigned qo)
{
    memset(q, 0, 2 * sizeof *q);
    for (unsigned k = 0; k < 4; k++)
        for (unsigned i = 0; i < 16; i++) {
            q[0].i0[16 * k + i] = (uint8_t)(k * B + qo + i);
            q[1].i0[16 * k + i] = (uint8_t)((4 + k) * B + qo + i - 64);
        }
}

static void gfield_of(gfield *g, unsigned B, unsigned off, unsigned w)
{
    memset(g, 0, sizeof *g);
    for (unsigned k = 0; k < 4; k++)
        for (unsigned i = 0; i < w; i++) {
            g->i0[k * w + i] = (uint8_t)(k * B + off + i);
            g->i1[4 * w + k * w + i] = (uint8_t)(k * B + off + i);
        }
    unsigned hi = 4 * B > 64 ? 4 * B - 64 : 0; /* the valid bytes of window 1's upper half */
    g->mh = hi >= 64 ? ~0ull : (1ull << hi) - 1;
    g->m1 = ((1ull << (4 * w)) - 1) << (4 * w);
}

/* ---- one call's state ------------------------------------------------------------ */

typedef struct {
    const nf_tensor_enc *t;
    const uint8_t *obj, *data;
    uint64_t obj_bytes, rb, K, nb, nsc, r0; /* nb: blocks of 16; nsc: chunks of 256 */
    nf_format f;
    gfmt g;
    nf_isa isa;
    const int8_t *qa;   /* [nb * 16] */
    const double *da;   /* [nb] */
    const int32_t *J;   /* [nb] */
    const float *xf;    /* x^ in f32, for the rows in the F order */
    /* the AVX-512 kernel's x, per chunk of 256 columns in its lane order */
    const uint8_t *xq;  /* [nsc][4][64] */
    const double *dap;  /* [nsc][16] */
    const double *Jp;   /* [nsc][16] */
    const int32_t *BJp; /* [nsc][16]: beta * J */
    uint64_t tailb;     /* bytes of a row's last, partial chunk (0: none) */
    unsigned lb[16];    /* lane_block of the format's order (xq's layout) */
    unsigned ob[16];    /* the kernel's result lane l holds block ob[l] (dap, Jp, BJp, slots) */
    int32_t ri[2][16];  /* AVX-512 reduce4's last two index vectors, for the order ob */
    gfield gf;          /* q8_0's d fields */
    gwin gh;            /* the other QK 32 formats' header fields (gwin) */
    gwin gq[2];         /* their code runs: blocks 0-3 (from W0:W1), 4-7 (W1:W2) */
    float *y;
} gctx;

static float row_portable(const gctx *c, const uint8_t *row)
{
    double slot[16] = {0};
    int code[16];
    for (uint64_t b = 0; b < c->nb; b++) {
        double S, M;
        xblock(c->f, row, b, code, &S, &M);
        int64_t I = 0;
        for (unsigned p = 0; p < 16; p++)
            I += (int64_t)code[p] * c->qa[16 * b + p];
        double T = ((S * (double)I) - (M * (double)c->J[b])) * c->da[b];
        slot[b & 15] += T;
    }
    return (float)tree16d(slot);
}

/* the lane l (0..15) of a 256-column chunk: its block among the chunk's 16 */
static unsigned lane_block(unsigned perm, unsigned l)
{
    unsigned j = l / 4, L = l % 4;
    switch (perm) {
    case P_NIB: return (j & 1) + 2 * L + 8 * (j / 2);
    case P_K4: {
        static const unsigned t[4][4] = {{0, 1, 4, 5}, {2, 3, 6, 7}, {8, 9, 12, 13}, {10, 11, 14, 15}};
        return t[j][L];
    }
    case P_K2: return 8 * (L / 2) + 2 * j + (L % 2);
    default: return l;
    }
}

/* The AVX-512 kernel's result order: the formats with one scale (and
 * offset) per 32 columns, or per 32-column sub-block, put blocks 0, 2, ..,
 * 14 in lanes 0-7 and 1, 3, .., 15 in lanes 8-15, so that both halves of
 * the result take the same 8 scales without a permute; the formats with a
 * scale per block (q6_k, q2_k, q3_k) keep blocks in order. */
static unsigned out_block(nf_format f, unsigned l)
{
    if (f == NF_FMT_GGUF_Q6_K || f == NF_FMT_GGUF_Q2_K || f == NF_FMT_GGUF_Q3_K)
        return l;
    return l < 8 ? 2 * l : 2 * (l - 8) + 1;
}

/* ---- AVX-512 (VNNI, VBMI) ----------------------------------------------------------- */

#if NF_G8_X86
#define TG5 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#define G_INLINE static inline __attribute__((always_inline))

TG5 G_INLINE __m512i ld512(const uint8_t *p) { return _mm512_loadu_si512((const void *)p); }
/* an f16 field as f32 with F16C (its value exact; the rows here have finite fields) */
TG5 G_INLINE float hc(const uint8_t *p)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld16(p))));
}
/* 32 bytes in both halves (vbroadcasti64x4 from memory: a load, no shuffle) */
TG5 G_INLINE __m512i bcast256(const uint8_t *p)
{
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)p));
}

/* The fields of width w (1, 2 or 4 bytes) at byte off of the 8 blocks of B
 * bytes of a 256-column chunk, packed in order (8w bytes): two 128-byte
 * windows (blocks 0-3 and 4-7) and one byte permute each, instead of a
 * gather; the window of blocks 4-7 is cut at the chunk's end. The index
 * vectors and masks are the call's (gfield, made once). */
TG5 G_INLINE __m256i fields8(const uint8_t *b, unsigned B, const gfield *g)
{
    __m512i r0 = _mm512_permutex2var_epi8(ld512(b), _mm512_loadu_si512((const void *)g->i0), ld512(b + 64));
    __m512i r1 = _mm512_permutex2var_epi8(ld512(b + 4 * B), _mm512_loadu_si512((const void *)g->i1),
                                          _mm512_maskz_loadu_epi8(g->mh, b + 4 * B + 64));
    return _mm512_castsi512_si256(_mm512_mask_blend_epi8(g->m1, r0, r1));
}

/* 8 f16 fields of the chunk's blocks as f32 lanes 0-7; *bad gets a bit
 * for a field that is not finite (the row then takes the F order). */
TG5 G_INLINE __m256 h8(const uint8_t *b, unsigned B, const gfield *g, unsigned *bad)
{
    __m128i h = _mm256_castsi256_si128(fields8(b, B, g));
    *bad |= (unsigned)_mm_cmpeq_epi16_mask(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
    return _mm256_cvtph_ps(h);
}
/* The header vector of gwin from the chunk's three loads; one: every
 * field lies in W0:W1 (a constant) */
TG5 G_INLINE __m512i fields64w(const __m512i *W, const gwin *g, const bool one)
{
    __m512i r = _mm512_permutex2var_epi8(W[0], _mm512_loadu_si512((const void *)g->i0), W[1]);
    if (!one)
        r = _mm512_mask_blend_epi8(g->m1, r, _mm512_permutex2var_epi8(W[1], _mm512_loadu_si512((const void *)g->i1), W[2]));
    return r;
}
/* 8 f16 fields as f32, as h8 */
TG5 G_INLINE __m256 h8w(__m128i h, unsigned *bad)
{
    *bad |= (unsigned)_mm_cmpeq_epi16_mask(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
    return _mm256_cvtph_ps(h);
}
/* the same test on one field */
static inline unsigned hbad(const uint8_t *p) { return (ld16(p) & 0x7c00u) == 0x7c00u; }

/* 16 f32 lanes to two f64 vectors, after a permute into the lane order */
TG5 G_INLINE void to_d(__m512 v, __m512d *d)
{
    d[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    d[1] = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
}

/* 8 f32 values, one per pair of blocks (2i, 2i + 1), as the f64 of both
 * halves of the result in out_block's order */
TG5 G_INLINE void dup_d(__m256 v, __m512d *d) { d[0] = d[1] = _mm512_cvtps_pd(v); }

/* One 256-column chunk (at b: 8 blocks of 32, or one of 256): u[4], S[2],
 * M[2] (f64), S and M in out_block's order. */
TG5 G_INLINE void unpack512(nf_format f, const uint8_t *b, __m512i *u, __m512d *S, __m512d *M,
                            unsigned *bad, const gctx *c)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    switch (f) {
    case NF_FMT_GGUF_Q8_0: {
        const __m512i x80 = _mm512_set1_epi8((char)0x80);
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) {
            __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)(b + 68 * j + 2));
            __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(b + 68 * j + 36));
            u[j] = _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1), x80);
        }
        dup_d(h8(b, 34, &c->gf, bad), S);
        return;
    }
    case NF_FMT_GGUF_Q4_0:
    case NF_FMT_GGUF_Q4_1:
    case NF_FMT_GGUF_IQ4_NL:
    case NF_FMT_GGUF_MXFP4:
    case NF_FMT_GGUF_Q5_0:
    case NF_FMT_GGUF_Q5_1: {
        const unsigned B = f == NF_FMT_GGUF_Q4_1 ? 20 : f == NF_FMT_GGUF_MXFP4 ? 17 : f == NF_FMT_GGUF_Q5_0 ? 22
                           : f == NF_FMT_GGUF_Q5_1 ? 24 : 18;
        const __m512i W[3] = {ld512(b), ld512(b + 64),
                              _mm512_maskz_loadu_epi8(8 * B >= 192 ? ~0ull : (1ull << (8 * B - 128)) - 1, b + 128)};
        __m512i z0 = _mm512_permutex2var_epi8(W[0], _mm512_loadu_si512((const void *)c->gq[0].i0), W[1]);
        __m512i z1 = _mm512_permutex2var_epi8(W[1], _mm512_loadu_si512((const void *)c->gq[1].i0), W[2]);
        /* the header's bytes a block: d (E), m, qh */
        const unsigned hl = f == NF_FMT_GGUF_MXFP4 ? 1 : f == NF_FMT_GGUF_Q4_1 ? 4 : f == NF_FMT_GGUF_Q5_0 ? 6
                            : f == NF_FMT_GGUF_Q5_1 ? 8 : 2;
        const __m512i H = fields64w(W, &c->gh, 7 * B + hl <= 128);
        u[0] = _mm512_and_si512(z0, m4);
        u[1] = _mm512_and_si512(_mm512_srli_epi16(z0, 4), m4);
        u[2] = _mm512_and_si512(z1, m4);
        u[3] = _mm512_and_si512(_mm512_srli_epi16(z1, 4), m4);
        if (f == NF_FMT_GGUF_IQ4_NL || f == NF_FMT_GGUF_MXFP4) { /* kv + 128, 2 e2m1 + 12 */
            __m512i L = f == NF_FMT_GGUF_IQ4_NL
                            ? _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141,
                                                                   (char)153, (char)166, (char)181, (char)197, (char)217, (char)241))
                            : _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++)
                u[j] = _mm512_shuffle_epi8(L, u[j]);
        }
        if (f == NF_FMT_GGUF_Q5_0 || f == NF_FMT_GGUF_Q5_1) {
            /* bit 4 of the code of element e is bit e of its block's qh
             * (dwords 8-15 of H): each 128-bit lane's qh in both its qwords,
             * then vpmultishiftqb takes the 8 bits from e - 4 (mod 64) to
             * every byte, bit 4 of which is bit e; nibble bit 4 is 0 */
            const __m512i q03 = _mm512_permutexvar_epi32(_mm512_setr_epi32(8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11), H);
            const __m512i q47 = _mm512_permutexvar_epi32(_mm512_setr_epi32(12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15), H);
            const __m512i slo = _mm512_broadcast_i32x4(_mm_setr_epi8(60, 61, 62, 63, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11));
            const __m512i shi = _mm512_broadcast_i32x4(_mm_setr_epi8(12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27));
            const __m512i b4 = _mm512_set1_epi8(0x10);
            u[0] = _mm512_ternarylogic_epi32(u[0], _mm512_multishift_epi64_epi8(slo, q03), b4, 0xF8); /* u | (ms & b4) */
            u[1] = _mm512_ternarylogic_epi32(u[1], _mm512_multishift_epi64_epi8(shi, q03), b4, 0xF8);
            u[2] = _mm512_ternarylogic_epi32(u[2], _mm512_multishift_epi64_epi8(slo, q47), b4, 0xF8);
            u[3] = _mm512_ternarylogic_epi32(u[3], _mm512_multishift_epi64_epi8(shi, q47), b4, 0xF8);
        }
        if (f == NF_FMT_GGUF_MXFP4) {
            /* 2^(E - 128) for E <= 252 exactly in f64: the exponent field E + 895 */
            __m256i e = _mm256_cvtepu8_epi32(_mm512_castsi512_si128(H));
            *bad |= (unsigned)_mm256_cmpgt_epi32_mask(e, _mm256_set1_epi32(252));
            __m512d E = _mm512_castsi512_pd(_mm512_slli_epi64(_mm512_add_epi64(_mm512_cvtepu32_epi64(e), _mm512_set1_epi64(895)), 52));
            S[0] = S[1] = E;
        } else {
            dup_d(h8w(_mm512_castsi512_si128(H), bad), S);
        }
        if (f == NF_FMT_GGUF_Q4_1 || f == NF_FMT_GGUF_Q5_1) /* M = -m */
            dup_d(_mm256_sub_ps(_mm256_setzero_ps(), h8w(_mm512_extracti32x4_epi32(H, 1), bad)), M);
        return;
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        bool five = f == NF_FMT_GGUF_Q5_K;
        const uint8_t *qs = b + (five ? 48 : 16);
        __m512i z0 = ld512(qs), z1 = ld512(qs + 64);
        u[0] = _mm512_and_si512(z0, m4);
        u[1] = _mm512_and_si512(_mm512_srli_epi16(z0, 4), m4);
        u[2] = _mm512_and_si512(z1, m4);
        u[3] = _mm512_and_si512(_mm512_srli_epi16(z1, 4), m4);
        if (five) {
            __m512i QH = bcast256(b + 16);
            const __m512i b4 = _mm512_set1_epi8(0x10);
            static const uint8_t bits[4][2] = {{0x01, 0x04}, {0x02, 0x08}, {0x10, 0x40}, {0x20, 0x80}};
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m512i t = _mm512_mask_blend_epi8(0xffffffff00000000ull, _mm512_set1_epi8((char)bits[j][0]),
                                                   _mm512_set1_epi8((char)bits[j][1]));
                u[j] = _mm512_mask_add_epi8(u[j], _mm512_test_epi8_mask(QH, t), u[j], b4); /* bit 4 was 0 */
            }
        }
        const uint8_t *Sb = b + 4;
        uint32_t w0 = ld32(Sb), w1 = ld32(Sb + 4), w2 = ld32(Sb + 8);
        uint64_t scb = (uint64_t)(w0 & 0x3f3f3f3fu) | (uint64_t)((w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u)) << 32;
        uint64_t mb = (uint64_t)(w1 & 0x3f3f3f3fu) | (uint64_t)(((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u)) << 32;
        __m256 scf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)scb)));
        __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mb)));
        *bad |= hbad(b) | hbad(b + 2);
        dup_d(_mm256_mul_ps(_mm256_set1_ps(hc(b)), scf), S);
        dup_d(_mm256_mul_ps(_mm256_set1_ps(hc(b + 2)), mf), M);
        return;
    }
    case NF_FMT_GGUF_Q6_K: {
        /* u = ql's nibble | 2 bits of qh << 4: code vector j of a half takes
         * bits 2j' .. 2j'+1 of qh[l] (j' = 2 (j & 1) for bytes 0-31, + 1 for
         * 32-63, qh broadcast to both halves); vpmultishiftqb brings them to
         * bits 4-5 of byte l (the 8 bits from 8 (l % 8) + 2j' - 4, mod 64) */
        __m512i L0 = ld512(b), L1 = ld512(b + 64);
        __m512i Q0 = bcast256(b + 128), Q1 = bcast256(b + 160);
        const __m512i x30 = _mm512_set1_epi8(0x30);
        const __m512i s01 = _mm512_set_epi64(0x362e261e160e063ell, 0x362e261e160e063ell, 0x362e261e160e063ell, 0x362e261e160e063ell, 0x342c241c140c043cll, 0x342c241c140c043cll, 0x342c241c140c043cll, 0x342c241c140c043cll);
        const __m512i s23 = _mm512_add_epi8(s01, _mm512_set1_epi8(4));
        u[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(L0, m4), _mm512_multishift_epi64_epi8(s01, Q0), x30, 0xF8);
        u[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(L0, 4), m4), _mm512_multishift_epi64_epi8(s23, Q0), x30, 0xF8);
        u[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(L1, m4), _mm512_multishift_epi64_epi8(s01, Q1), x30, 0xF8);
        u[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(L1, 4), m4), _mm512_multishift_epi64_epi8(s23, Q1), x30, 0xF8);
        __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(const void *)(b + 192))));
        *bad |= hbad(b + 208);
        to_d(_mm512_mul_ps(_mm512_set1_ps(hc(b + 208)), s), S);
        return;
    }
    case NF_FMT_GGUF_Q2_K:
    case NF_FMT_GGUF_Q3_K: {
        bool three = f == NF_FMT_GGUF_Q3_K;
        __m512i QS = ld512(b + (three ? 32 : 16));
        const __m512i m3 = _mm512_set1_epi8(3);
        u[0] = _mm512_and_si512(QS, m3);
        u[1] = _mm512_and_si512(_mm512_srli_epi16(QS, 2), m3);
        u[2] = _mm512_and_si512(_mm512_srli_epi16(QS, 4), m3);
        u[3] = _mm512_and_si512(_mm512_srli_epi16(QS, 6), m3);
        if (three) {
            __m512i HM = bcast256(b);
            const __m512i b2 = _mm512_set1_epi8(4);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                __m512i t = _mm512_mask_blend_epi8(0xffffffff00000000ull, _mm512_set1_epi8((char)(1 << j)),
                                                   _mm512_set1_epi8((char)(1 << (4 + j))));
                u[j] = _mm512_mask_add_epi8(u[j], _mm512_test_epi8_mask(HM, t), u[j], b2); /* bit 2 was 0 */
            }
            const uint8_t *SC = b + 96;
            uint32_t a0 = ld32(SC), a1 = ld32(SC + 4), a2 = ld32(SC + 8);
            uint32_t s0 = (a0 & 0x0f0f0f0fu) | (a2 & 0x03030303u) << 4;
            uint32_t s1 = (a1 & 0x0f0f0f0fu) | ((a2 >> 2) & 0x03030303u) << 4;
            uint32_t s2 = ((a0 >> 4) & 0x0f0f0f0fu) | ((a2 >> 4) & 0x03030303u) << 4;
            uint32_t s3 = ((a1 >> 4) & 0x0f0f0f0fu) | ((a2 >> 6) & 0x03030303u) << 4;
            __m512i v = _mm512_cvtepu8_epi32(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3));
            v = _mm512_sub_epi32(v, _mm512_set1_epi32(32));
            *bad |= hbad(b + 108);
            to_d(_mm512_mul_ps(_mm512_set1_ps(hc(b + 108)), _mm512_cvtepi32_ps(v)), S);
        } else {
            __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)b));
            __m512i lo = _mm512_and_si512(v, _mm512_set1_epi32(15)), hi = _mm512_srli_epi32(v, 4);
            *bad |= hbad(b + 80) | hbad(b + 82);
            to_d(_mm512_mul_ps(_mm512_set1_ps(hc(b + 80)), _mm512_cvtepi32_ps(lo)), S);
            to_d(_mm512_mul_ps(_mm512_set1_ps(hc(b + 82)), _mm512_cvtepi32_ps(hi)), M);
        }
        return;
    }
    default: { /* NF_FMT_GGUF_IQ4_XS */
        __m512i z0 = ld512(b + 8), z1 = ld512(b + 72);
        __m512i L = _mm512_broadcast_i32x4(_mm_setr_epi8(1, 24, 45, 63, 79, 93, 106, 118, (char)129, (char)141, (char)153,
                                                         (char)166, (char)181, (char)197, (char)217, (char)241));
        u[0] = _mm512_shuffle_epi8(L, _mm512_and_si512(z0, m4));
        u[1] = _mm512_shuffle_epi8(L, _mm512_and_si512(_mm512_srli_epi16(z0, 4), m4));
        u[2] = _mm512_shuffle_epi8(L, _mm512_and_si512(z1, m4));
        u[3] = _mm512_shuffle_epi8(L, _mm512_and_si512(_mm512_srli_epi16(z1, 4), m4));
        const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(b + 4)), _mm256_slli_epi32(iota, 2)),
                                      _mm256_set1_epi32(15));
        __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(ld16(b + 2)), _mm256_slli_epi32(iota, 1)),
                                      _mm256_set1_epi32(3));
        __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        *bad |= hbad(b);
        dup_d(_mm256_mul_ps(_mm256_set1_ps(hc(b)), _mm256_cvtepi32_ps(ls)), S);
        return;
    }
    }
}

/* The four dwords of each 128-bit lane of a, b, c, d summed: the pair
 * sums first (ab: a's in lanes 0-7, b's in 8-15; cd alike), then result
 * lane r = the two pair sums at ri[0][r] and ri[1][r] of ab:cd, which
 * place vector j's lane L wherever the call's order ob wants it. */
TG5 G_INLINE __m512i reduce4(__m512i a, __m512i b, __m512i c, __m512i d, const int32_t (*ri)[16])
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    __m512i ab = _mm512_add_epi32(_mm512_permutex2var_epi32(a, ev, b), _mm512_permutex2var_epi32(a, od, b));
    __m512i cd = _mm512_add_epi32(_mm512_permutex2var_epi32(c, ev, d), _mm512_permutex2var_epi32(c, od, d));
    return _mm512_add_epi32(_mm512_permutex2var_epi32(ab, _mm512_loadu_si512((const void *)ri[0]), cd),
                            _mm512_permutex2var_epi32(ab, _mm512_loadu_si512((const void *)ri[1]), cd));
}

/* format f's gfmt as a value, for the kernels' compile-time constants (f
 * is a constant at every call: the switch folds away) */
static inline gfmt gfmt_k(nf_format f)
{
    gfmt g = {0, 0, 0, false, P_NAT};
    (void)gfmt_of(f, &g);
    return g;
}

/* One chunk of one row: its 16 block results T_b added into the row's
 * slots a (two f64 vectors, the lane order ob); X the chunk's four code
 * vectors of x, sc the chunk's index (dap, Jp, BJp). */
TG5 G_INLINE void gchunk512(nf_format f, const gctx *c, const uint8_t *b, const __m512i *X, uint64_t sc,
                            __m512d *a, unsigned *bad)
{
    const gfmt g = gfmt_k(f);
    __m512i u[4];
    __m512d S[2], M[2];
    unpack512(f, b, u, S, M, bad, c);
    const __m512i z = _mm512_setzero_si512();
    __m512i U = reduce4(_mm512_dpbusd_epi32(z, u[0], X[0]), _mm512_dpbusd_epi32(z, u[1], X[1]),
                        _mm512_dpbusd_epi32(z, u[2], X[2]), _mm512_dpbusd_epi32(z, u[3], X[3]), c->ri);
    if (g.beta != 0)
        U = _mm512_sub_epi32(U, _mm512_loadu_si512((const void *)(c->BJp + 16 * sc)));
    __m512d I0 = _mm512_cvtepi32_pd(_mm512_castsi512_si256(U));
    __m512d I1 = _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(U, 1));
    __m512d T0 = _mm512_mul_pd(S[0], I0), T1 = _mm512_mul_pd(S[1], I1);
    if (g.min) { /* one rounding of the exact S I - M J */
        T0 = _mm512_fnmadd_pd(M[0], _mm512_loadu_pd(c->Jp + 16 * sc), T0);
        T1 = _mm512_fnmadd_pd(M[1], _mm512_loadu_pd(c->Jp + 16 * sc + 8), T1);
    }
    a[0] = _mm512_add_pd(a[0], _mm512_mul_pd(T0, _mm512_loadu_pd(c->dap + 16 * sc)));
    a[1] = _mm512_add_pd(a[1], _mm512_mul_pd(T1, _mm512_loadu_pd(c->dap + 16 * sc + 8)));
}

/* R rows (1, 2 or 4: a constant) in one pass over x, each in the G order (before
 * canon): every row's chunks in increasing order, as one row alone, so the
 * grouping changes no bit; x's code vectors are loaded once a chunk for
 * all R. The main loop has no tail test: a row's last, partial chunk (the
 * QK 32 formats, K / 32 not a multiple of 8) is done after it from a zero
 * padded copy. */
TG5 G_INLINE void growR512(nf_format f, const unsigned R, const gctx *c, const uint8_t *const *rows, uint64_t pfo,
                           float *v, unsigned *bad)
{
    const gfmt g = gfmt_k(f);
    const uint64_t csz = g.qk == 256 ? g.bb : 8 * (uint64_t)g.bb; /* bytes a chunk */
    unsigned bl[4] = {0, 0, 0, 0}; /* local: no store in the loop for c's loads to fear */
    __m512d a[4][2];
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++)
        a[r][0] = a[r][1] = _mm512_setzero_pd();
    const uint64_t full = c->tailb ? c->nsc - 1 : c->nsc;
    for (uint64_t sc = 0; sc < full; sc++) {
        const uint8_t *xq = c->xq + 256 * sc;
        __m512i X[4] = {ld512(xq), ld512(xq + 64), ld512(xq + 128), ld512(xq + 192)};
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++) {
            const uint8_t *b = rows[r] + sc * csz;
#pragma GCC unroll 8
            for (unsigned o = 0; o < csz; o += 64)
                _mm_prefetch((const char *)b + o + pfo, _MM_HINT_T0);
            gchunk512(f, c, b, X, sc, a[r], &bl[r]);
        }
    }
    if (full < c->nsc) {
        const uint8_t *xq = c->xq + 256 * full;
        __m512i X[4] = {ld512(xq), ld512(xq + 64), ld512(xq + 128), ld512(xq + 192)};
#pragma GCC unroll 4
        for (unsigned r = 0; r < R; r++) {
            uint8_t pad[8 * 34];
            memset(pad, 0, sizeof pad);
            memcpy(pad, rows[r] + full * csz, c->tailb);
            gchunk512(f, c, pad, X, full, a[r], &bl[r]);
        }
    }
#pragma GCC unroll 4
    for (unsigned r = 0; r < R; r++) {
        double l[16], s[16];
        _mm512_storeu_pd(l, a[r][0]);
        _mm512_storeu_pd(l + 8, a[r][1]);
        for (unsigned i = 0; i < 16; i++)
            s[c->ob[i]] = l[i];
        v[r] = (float)tree16d(s);
        bad[r] = bl[r];
    }
}

/* R rows at rows[0..R) (R 1, 2 or 4: grows8's groups): v[r] their results,
 * bad[r] non-zero where a row has a field that sends it to the F order */
typedef void (*growsR_fn)(const gctx *, const uint8_t *const *, unsigned, uint64_t, float *, unsigned *);
#define GROWS(NAME, F)                                                                             \
    TG5 static void NAME(const gctx *c, const uint8_t *const *rows, unsigned R, uint64_t pfo,      \
                         float *v, unsigned *bad)                                                  \
    {                                                                                              \
        if (R == 4)                                                                                \
            growR512(F, 4, c, rows, pfo, v, bad);                                                  \
        else if (R == 2)                                                                           \
            growR512(F, 2, c, rows, pfo, v, bad);                                                  \
        else                                                                                       \
            growR512(F, 1, c, rows, pfo, v, bad);                                                  \
    }
GROWS(g_q8_0, NF_FMT_GGUF_Q8_0)
GROWS(g_q4_0, NF_FMT_GGUF_Q4_0)
GROWS(g_q4_1, NF_FMT_GGUF_Q4_1)
GROWS(g_q5_0, NF_FMT_GGUF_Q5_0)
GROWS(g_q5_1, NF_FMT_GGUF_Q5_1)
GROWS(g_iq4_nl, NF_FMT_GGUF_IQ4_NL)
GROWS(g_mxfp4, NF_FMT_GGUF_MXFP4)
GROWS(g_q2_k, NF_FMT_GGUF_Q2_K)
GROWS(g_q3_k, NF_FMT_GGUF_Q3_K)
GROWS(g_q4_k, NF_FMT_GGUF_Q4_K)
GROWS(g_q5_k, NF_FMT_GGUF_Q5_K)
GROWS(g_q6_k, NF_FMT_GGUF_Q6_K)
GROWS(g_iq4_xs, NF_FMT_GGUF_IQ4_XS)

static growsR_fn pick512(nf_format f)
{
    switch (f) {
    case NF_FMT_GGUF_Q8_0: return g_q8_0;
    case NF_FMT_GGUF_Q4_0: return g_q4_0;
    case NF_FMT_GGUF_Q4_1: return g_q4_1;
    case NF_FMT_GGUF_Q5_0: return g_q5_0;
    case NF_FMT_GGUF_Q5_1: return g_q5_1;
    case NF_FMT_GGUF_IQ4_NL: return g_iq4_nl;
    case NF_FMT_GGUF_MXFP4: return g_mxfp4;
    case NF_FMT_GGUF_Q2_K: return g_q2_k;
    case NF_FMT_GGUF_Q3_K: return g_q3_k;
    case NF_FMT_GGUF_Q4_K: return g_q4_k;
    case NF_FMT_GGUF_Q5_K: return g_q5_k;
    case NF_FMT_GGUF_Q6_K: return g_q6_k;
    case NF_FMT_GGUF_IQ4_XS: return g_iq4_xs;
    default: return NULL;
    }
}

/* ---- AVX2 ------------------------------------------------------------------------- */

/* The same G order on AVX2 (no VNNI needed): the AVX-512 kernel's four
 * 64-byte code vectors as eight of 32 bytes (vector v holds the lanes 2v
 * and 2v + 1 of the chunk, x's codes at xq + 32 v as laid out for
 * AVX-512), vpmaddubsw then vpmaddwd by ones: exact, since u <= 63 where
 * the code is u = c + beta, and q8_0 and the iq4 tables (|c| <= 128) take
 * |c| against x with c's sign (vpsignb; |x| <= 127): 2 * 128 * 127 < 2^15.
 * The lane sums by two rounds of vphaddd; the epilogue as AVX-512's, four
 * f64 lanes a vector (the same operations on each slot). */
#define TG2 __attribute__((target("avx2,fma,f16c")))

TG2 G_INLINE __m256i ld256(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }
TG2 G_INLINE __m256i ld128x2(const uint8_t *p0, const uint8_t *p1)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)p0)),
                                   _mm_loadu_si128((const __m128i *)(const void *)p1), 1);
}
TG2 G_INLINE float hc2(const uint8_t *p)
{
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(ld16(p))));
}

/* the f16 fields at off of the 8 blocks of B bytes, as f32; *bad as h8 */
TG2 G_INLINE __m256 h8_2(const uint8_t *b, unsigned B, unsigned off, unsigned *bad)
{
    __m128i h = _mm_setr_epi16((short)ld16(b + off), (short)ld16(b + B + off), (short)ld16(b + 2 * B + off),
                               (short)ld16(b + 3 * B + off), (short)ld16(b + 4 * B + off),
                               (short)ld16(b + 5 * B + off), (short)ld16(b + 6 * B + off),
                               (short)ld16(b + 7 * B + off));
    const __m128i e = _mm_set1_epi16(0x7c00);
    *bad |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, e), e));
    return _mm256_cvtph_ps(h);
}

/* 8 f32 values a0..a7 to the 16 lanes' f64 S of the nibble order (pnib:
 * 0 1 2 3 0 1 2 3 4 5 6 7 4 5 6 7) */
TG2 G_INLINE void to_d_nib(__m256 v, __m256d *d)
{
    d[0] = d[1] = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    d[2] = d[3] = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
}
/* 16 f32 lanes (two vectors) to four f64 vectors */
TG2 G_INLINE void to_d2(__m256 lo, __m256 hi, __m256d *d)
{
    d[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(lo));
    d[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1));
    d[2] = _mm256_cvtps_pd(_mm256_castps256_ps128(hi));
    d[3] = _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1));
}

/* Bytes of 0xff where bit i of m (i = the byte's index) is set. */
TG2 G_INLINE __m256i bits32(uint32_t m)
{
    const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                                         3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i r = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)m), idx), bit);
    return _mm256_cmpeq_epi8(r, bit);
}
/* Bytes of 0xff where the byte of Q has bit t set. */
TG2 G_INLINE __m256i tbit(__m256i Q, unsigned t)
{
    const __m256i m = _mm256_set1_epi8((char)t);
    return _mm256_cmpeq_epi8(_mm256_and_si256(Q, m), m);
}

/* One 256-column chunk: y[8] (u, or for sgn formats the signed codes c),
 * S[4], M[4]. */
TG2 G_INLINE void unpack256(nf_format f, const uint8_t *b, __m256i *y, __m256d *S, __m256d *M,
                            unsigned *bad)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    switch (f) {
    case NF_FMT_GGUF_Q8_0: {
        for (int k = 0; k < 8; k++)
            y[k] = ld256(b + 34 * k + 2);
        __m256 d = h8_2(b, 34, 0, bad);
        __m256 lo = _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
        __m256 hi = _mm256_permutevar8x32_ps(d, _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7));
        to_d2(lo, hi, S);
        return;
    }
    case NF_FMT_GGUF_Q4_0:
    case NF_FMT_GGUF_Q4_1:
    case NF_FMT_GGUF_IQ4_NL:
    case NF_FMT_GGUF_MXFP4:
    case NF_FMT_GGUF_Q5_0:
    case NF_FMT_GGUF_Q5_1: {
        unsigned B = f == NF_FMT_GGUF_Q4_1 ? 20 : f == NF_FMT_GGUF_MXFP4 ? 17 : f == NF_FMT_GGUF_Q5_0 ? 22
                     : f == NF_FMT_GGUF_Q5_1 ? 24 : 18;
        unsigned qo = f == NF_FMT_GGUF_Q4_1 ? 4 : f == NF_FMT_GGUF_MXFP4 ? 1 : f == NF_FMT_GGUF_Q5_0 ? 6
                      : f == NF_FMT_GGUF_Q5_1 ? 8 : 2;
        /* vector v: lanes 2v, 2v + 1; the blocks' low nibbles 0-1, 2-3, high
         * nibbles 0-1, 2-3, then the same for blocks 4-7 */
        for (int h = 0; h < 2; h++) {
            const uint8_t *p = b + 4 * h * B + qo;
            __m256i za = ld128x2(p, p + B), zb = ld128x2(p + 2 * B, p + 3 * B);
            y[4 * h + 0] = _mm256_and_si256(za, m4);
            y[4 * h + 1] = _mm256_and_si256(zb, m4);
            y[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(za, 4), m4);
            y[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(zb, 4), m4);
        }
        if (f == NF_FMT_GGUF_IQ4_NL || f == NF_FMT_GGUF_MXFP4) { /* kv (signed), 2 e2m1 + 12 */
            __m256i L = f == NF_FMT_GGUF_IQ4_NL
                            ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)kv_iq4nl))
                            : _mm256_broadcastsi128_si256(_mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
            for (int v = 0; v < 8; v++)
                y[v] = _mm256_shuffle_epi8(L, y[v]);
        }
        if (f == NF_FMT_GGUF_Q5_0 || f == NF_FMT_GGUF_Q5_1) {
            unsigned ho = f == NF_FMT_GGUF_Q5_0 ? 2 : 4;
            const __m256i b4 = _mm256_set1_epi8(0x10);
            for (int h = 0; h < 2; h++)
                for (int pr = 0; pr < 2; pr++) { /* blocks 4h + 2pr, 4h + 2pr + 1 */
                    uint32_t q0 = ld32(b + (4 * h + 2 * pr) * B + ho), q1 = ld32(b + (4 * h + 2 * pr + 1) * B + ho);
                    uint32_t lo = (q0 & 0xffffu) | q1 << 16, hi = q0 >> 16 | (q1 & 0xffff0000u);
                    y[4 * h + pr] = _mm256_or_si256(y[4 * h + pr], _mm256_and_si256(bits32(lo), b4));
                    y[4 * h + 2 + pr] = _mm256_or_si256(y[4 * h + 2 + pr], _mm256_and_si256(bits32(hi), b4));
                }
        }
        if (f == NF_FMT_GGUF_MXFP4) {
            /* 2^(E - 128) for E <= 252 exactly in f64: the exponent field E + 895 */
            uint64_t e8 = 0;
            for (unsigned k = 0; k < 8; k++) {
                *bad |= b[k * B] > 252;
                e8 |= (uint64_t)b[k * B] << (8 * k);
            }
            __m128i e = _mm_cvtsi64_si128((long long)e8);
            const __m256i o = _mm256_set1_epi64x(895);
            __m256d lo = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepu8_epi64(e), o), 52));
            __m256d hi = _mm256_castsi256_pd(
                _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepu8_epi64(_mm_srli_si128(e, 4)), o), 52));
            S[0] = S[1] = lo;
            S[2] = S[3] = hi;
        } else {
            to_d_nib(h8_2(b, B, 0, bad), S);
        }
        if (f == NF_FMT_GGUF_Q4_1 || f == NF_FMT_GGUF_Q5_1)
            to_d_nib(_mm256_sub_ps(_mm256_setzero_ps(), h8_2(b, B, 2, bad)), M); /* M = -m */
        return;
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        bool five = f == NF_FMT_GGUF_Q5_K;
        const uint8_t *qs = b + (five ? 48 : 16);
        for (int h = 0; h < 2; h++) {
            __m256i za = ld256(qs + 64 * h), zb = ld256(qs + 64 * h + 32);
            y[4 * h + 0] = _mm256_and_si256(za, m4);
            y[4 * h + 1] = _mm256_and_si256(zb, m4);
            y[4 * h + 2] = _mm256_and_si256(_mm256_srli_epi16(za, 4), m4);
            y[4 * h + 3] = _mm256_and_si256(_mm256_srli_epi16(zb, 4), m4);
        }
        if (five) {
            __m256i QH = ld256(b + 16);
            const __m256i b4 = _mm256_set1_epi8(0x10);
            static const uint8_t bits[4][2] = {{0x01, 0x04}, {0x02, 0x08}, {0x10, 0x40}, {0x20, 0x80}};
            for (int v = 0; v < 8; v++)
                y[v] = _mm256_or_si256(y[v], _mm256_and_si256(tbit(QH, bits[v / 2][v % 2]), b4));
        }
        const uint8_t *Sb = b + 4;
        uint32_t w0 = ld32(Sb), w1 = ld32(Sb + 4), w2 = ld32(Sb + 8);
        uint64_t scb = (uint64_t)(w0 & 0x3f3f3f3fu) | (uint64_t)((w2 & 0x0f0f0f0fu) | ((w0 >> 2) & 0x30303030u)) << 32;
        uint64_t mb = (uint64_t)(w1 & 0x3f3f3f3fu) | (uint64_t)(((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 2) & 0x30303030u)) << 32;
        const __m256i plo = _mm256_setr_epi32(0, 0, 2, 2, 1, 1, 3, 3), phi = _mm256_setr_epi32(4, 4, 6, 6, 5, 5, 7, 7);
        __m256i s8 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)scb));
        __m256i m8 = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)mb));
        *bad |= hbad(b) | hbad(b + 2);
        __m256 d = _mm256_set1_ps(hc2(b)), dm = _mm256_set1_ps(hc2(b + 2));
        to_d2(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(s8, plo))),
              _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(s8, phi))), S);
        to_d2(_mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(m8, plo))),
              _mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_permutevar8x32_epi32(m8, phi))), M);
        return;
    }
    case NF_FMT_GGUF_Q6_K: {
        const __m256i x30 = _mm256_set1_epi8(0x30);
        for (int h = 0; h < 2; h++) {
            __m256i La = ld256(b + 64 * h), Lb = ld256(b + 64 * h + 32), Q = ld256(b + 128 + 32 * h);
            __m256i Q2 = _mm256_srli_epi16(Q, 2), Q4 = _mm256_srli_epi16(Q, 4), Q6 = _mm256_srli_epi16(Q, 6);
            y[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(La, m4), _mm256_and_si256(_mm256_slli_epi16(Q, 4), x30));
            y[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(Lb, m4), _mm256_and_si256(_mm256_slli_epi16(Q2, 4), x30));
            y[4 * h + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(La, 4), m4),
                                           _mm256_and_si256(_mm256_slli_epi16(Q4, 4), x30));
            y[4 * h + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(Lb, 4), m4),
                                           _mm256_and_si256(_mm256_slli_epi16(Q6, 4), x30));
        }
        __m128i s16 = _mm_loadu_si128((const __m128i *)(const void *)(b + 192));
        *bad |= hbad(b + 208);
        __m256 d = _mm256_set1_ps(hc2(b + 208));
        to_d2(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(s16))),
              _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(s16, 8)))), S);
        return;
    }
    case NF_FMT_GGUF_Q2_K:
    case NF_FMT_GGUF_Q3_K: {
        bool three = f == NF_FMT_GGUF_Q3_K;
        const uint8_t *qs = b + (three ? 32 : 16);
        const __m256i m3 = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; h++) {
            __m256i Q = ld256(qs + 32 * h);
            for (int j = 0; j < 4; j++)
                y[2 * j + h] = _mm256_and_si256(_mm256_srli_epi16(Q, 2 * j), m3);
        }
        /* the 16 scale bytes in the lane order (vector v: blocks pk2[2v],
         * pk2[2v + 1]) with one byte shuffle: no scalar stores read back as
         * a vector (a store-forwarding stall each) */
        const __m128i pk2 = _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
        const __m128i m4 = _mm_set1_epi8(0x0f);
        if (three) {
            __m256i HM = ld256(b);
            const __m256i b2 = _mm256_set1_epi8(4);
            for (int v = 0; v < 8; v++)
                y[v] = _mm256_or_si256(y[v], _mm256_and_si256(tbit(HM, 1u << (v / 2 + 4 * (v % 2))), b2));
            const uint8_t *SC = b + 96;
            uint32_t a0 = ld32(SC), a1 = ld32(SC + 4), a2 = ld32(SC + 8);
            __m128i sv = _mm_setr_epi32((int)((a0 & 0x0f0f0f0fu) | (a2 & 0x03030303u) << 4),
                                        (int)((a1 & 0x0f0f0f0fu) | ((a2 >> 2) & 0x03030303u) << 4),
                                        (int)(((a0 >> 4) & 0x0f0f0f0fu) | ((a2 >> 4) & 0x03030303u) << 4),
                                        (int)(((a1 >> 4) & 0x0f0f0f0fu) | ((a2 >> 6) & 0x03030303u) << 4));
            sv = _mm_shuffle_epi8(sv, pk2);
            const __m256i b32 = _mm256_set1_epi32(32);
            *bad |= hbad(b + 108);
            __m256 d = _mm256_set1_ps(hc2(b + 108));
            to_d2(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(sv), b32))),
                  _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(sv, 8)), b32))),
                  S);
        } else {
            __m128i sv = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(const void *)b), pk2);
            __m128i lo = _mm_and_si128(sv, m4), hi = _mm_and_si128(_mm_srli_epi16(sv, 4), m4);
            *bad |= hbad(b + 80) | hbad(b + 82);
            __m256 d = _mm256_set1_ps(hc2(b + 80)), dm = _mm256_set1_ps(hc2(b + 82));
            to_d2(_mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo))),
                  _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)))), S);
            to_d2(_mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi))),
                  _mm256_mul_ps(dm, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)))), M);
        }
        return;
    }
    default: { /* NF_FMT_GGUF_IQ4_XS: signed table values */
        __m256i L = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)kv_iq4nl));
        for (int h = 0; h < 2; h++) {
            __m256i za = ld256(b + 8 + 64 * h), zb = ld256(b + 8 + 64 * h + 32);
            y[4 * h + 0] = _mm256_shuffle_epi8(L, _mm256_and_si256(za, m4));
            y[4 * h + 1] = _mm256_shuffle_epi8(L, _mm256_and_si256(zb, m4));
            y[4 * h + 2] = _mm256_shuffle_epi8(L, _mm256_and_si256(_mm256_srli_epi16(za, 4), m4));
            y[4 * h + 3] = _mm256_shuffle_epi8(L, _mm256_and_si256(_mm256_srli_epi16(zb, 4), m4));
        }
        const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld32(b + 4)), _mm256_slli_epi32(iota, 2)),
                                      _mm256_set1_epi32(15));
        __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(ld16(b + 2)), _mm256_slli_epi32(iota, 1)),
                                      _mm256_set1_epi32(3));
        __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        *bad |= hbad(b);
        to_d_nib(_mm256_mul_ps(_mm256_set1_ps(hc2(b)), _mm256_cvtepi32_ps(ls)), S);
        return;
    }
    }
}

/* The lane sums of 4 vectors of 8 dwords (vector v: lanes 2v, 2v + 1), in
 * lane order. */
TG2 G_INLINE __m256i reduce4x2(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

TG2 G_INLINE float grow256(nf_format f, const gctx *c, const uint8_t *row, uint64_t pfo, bool *rbad)
{
    unsigned bad = 0;
    const bool min = f == NF_FMT_GGUF_Q4_1 || f == NF_FMT_GGUF_Q5_1 || f == NF_FMT_GGUF_Q2_K ||
                     f == NF_FMT_GGUF_Q4_K || f == NF_FMT_GGUF_Q5_K;
    const bool sgn = f == NF_FMT_GGUF_Q8_0 || f == NF_FMT_GGUF_IQ4_NL || f == NF_FMT_GGUF_IQ4_XS;
    const bool beta = c->g.beta != 0 && !sgn;
    const uint64_t csz = c->g.qk == 256 ? c->g.bb : 8 * (uint64_t)c->g.bb;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256d a[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
    uint64_t full = c->tailb ? c->nsc - 1 : c->nsc;
    for (uint64_t sc = 0; sc < c->nsc; sc++) {
        const uint8_t *xq = c->xq + 256 * sc;
        for (uint64_t o = 0; o < csz; o += 64)
            _mm_prefetch((const char *)row + sc * csz + o + pfo, _MM_HINT_T0);
        __m256i y[8];
        __m256d S[4], M[4];
        if (sc >= full) {
            uint8_t pad[8 * 34];
            memset(pad, 0, sizeof pad);
            memcpy(pad, row + sc * csz, c->tailb);
            unpack256(f, pad, y, S, M, &bad);
        } else {
            unpack256(f, row + sc * csz, y, S, M, &bad);
        }
        __m256i p[8];
        for (int v = 0; v < 8; v++) {
            __m256i xv = ld256(xq + 32 * v), uv = y[v];
            if (sgn) {
                xv = _mm256_sign_epi8(xv, uv);
                uv = _mm256_abs_epi8(uv);
            }
            p[v] = _mm256_madd_epi16(_mm256_maddubs_epi16(uv, xv), ones);
        }
        __m256i U[2] = {reduce4x2(p[0], p[1], p[2], p[3]), reduce4x2(p[4], p[5], p[6], p[7])};
        for (int h = 0; h < 2; h++) {
            if (beta)
                U[h] = _mm256_sub_epi32(U[h], _mm256_loadu_si256((const __m256i *)(const void *)(c->BJp + 16 * sc + 8 * h)));
            for (int q = 0; q < 2; q++) {
                unsigned i = 2 * h + q;
                __m256d I = _mm256_cvtepi32_pd(q ? _mm256_extracti128_si256(U[h], 1) : _mm256_castsi256_si128(U[h]));
                __m256d T = _mm256_mul_pd(S[i], I);
                if (min)
                    T = _mm256_fnmadd_pd(M[i], _mm256_loadu_pd(c->Jp + 16 * sc + 4 * i), T);
                a[i] = _mm256_add_pd(a[i], _mm256_mul_pd(T, _mm256_loadu_pd(c->dap + 16 * sc + 4 * i)));
            }
        }
    }
    double l[16], s[16];
    for (int i = 0; i < 4; i++)
        _mm256_storeu_pd(l + 4 * i, a[i]);
    for (unsigned i = 0; i < 16; i++)
        s[c->ob[i]] = l[i];
    *rbad = bad != 0;
    return (float)tree16d(s);
}

#define GROWS2(NAME, F)                                                                            \
    TG2 static void NAME(const gctx *c, const uint8_t *const *rows, unsigned R, uint64_t pfo,      \
                         float *v, unsigned *bad)                                                  \
    {                                                                                              \
        for (unsigned r = 0; r < R; r++) {                                                         \
            bool b_ = false;                                                                       \
            v[r] = grow256(F, c, rows[r], pfo, &b_);                                               \
            bad[r] = b_;                                                                           \
        }                                                                                          \
    }
GROWS2(g2_q8_0, NF_FMT_GGUF_Q8_0)
GROWS2(g2_q4_0, NF_FMT_GGUF_Q4_0)
GROWS2(g2_q4_1, NF_FMT_GGUF_Q4_1)
GROWS2(g2_q5_0, NF_FMT_GGUF_Q5_0)
GROWS2(g2_q5_1, NF_FMT_GGUF_Q5_1)
GROWS2(g2_iq4_nl, NF_FMT_GGUF_IQ4_NL)
GROWS2(g2_mxfp4, NF_FMT_GGUF_MXFP4)
GROWS2(g2_q2_k, NF_FMT_GGUF_Q2_K)
GROWS2(g2_q3_k, NF_FMT_GGUF_Q3_K)
GROWS2(g2_q4_k, NF_FMT_GGUF_Q4_K)
GROWS2(g2_q5_k, NF_FMT_GGUF_Q5_K)
GROWS2(g2_q6_k, NF_FMT_GGUF_Q6_K)
GROWS2(g2_iq4_xs, NF_FMT_GGUF_IQ4_XS)

static growsR_fn pick256(nf_format f)
{
    switch (f) {
    case NF_FMT_GGUF_Q8_0: return g2_q8_0;
    case NF_FMT_GGUF_Q4_0: return g2_q4_0;
    case NF_FMT_GGUF_Q4_1: return g2_q4_1;
    case NF_FMT_GGUF_Q5_0: return g2_q5_0;
    case NF_FMT_GGUF_Q5_1: return g2_q5_1;
    case NF_FMT_GGUF_IQ4_NL: return g2_iq4_nl;
    case NF_FMT_GGUF_MXFP4: return g2_mxfp4;
    case NF_FMT_GGUF_Q2_K: return g2_q2_k;
    case NF_FMT_GGUF_Q3_K: return g2_q3_k;
    case NF_FMT_GGUF_Q4_K: return g2_q4_k;
    case NF_FMT_GGUF_Q5_K: return g2_q5_k;
    case NF_FMT_GGUF_Q6_K: return g2_q6_k;
    case NF_FMT_GGUF_IQ4_XS: return g2_iq4_xs;
    default: return NULL;
    }
}

/* x's per-block sums J[b] (exact), 16 codes a vpsadbw: the values of the
 * portable loop in nf_gemv_gguf_a8_rows. */
TG2 static void a8_sums256(const int8_t *qa, uint64_t nb, int32_t *J)
{
    const __m128i x80 = _mm_set1_epi8((char)0x80);
    for (uint64_t b = 0; b < nb; b++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(qa + 16 * b));
        __m128i s = _mm_sad_epu8(_mm_xor_si128(v, x80), _mm_setzero_si128()); /* sums of q + 128 */
        J[b] = (int32_t)(_mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4)) - 16 * 128;
    }
}
#endif /* NF_G8_X86 */

/* ---- the rows --------------------------------------------------------------------- */

typedef struct {
    gctx c;
#if NF_G8_X86
    growsR_fn fn;
#endif
    uint64_t pfd; /* prefetch distance in rows */
} gjob8;

static int grows8(void *arg, uint64_t a, uint64_t b)
{
    const gjob8 *j = arg;
    const gctx *c = &j->c;
    uint64_t nblk = c->K / c->g.qk;
    for (uint64_t n = a; n < b;) {
        unsigned R = b - n >= 4 ? 4 : b - n >= 2 ? 2 : 1;
        const uint8_t *rows[4];
        bool ok[4];
        float v[4] = {0, 0, 0, 0};
        uint64_t pfo = n + j->pfd + R <= c->t->rows ? j->pfd * c->rb : 0;
        for (unsigned i = 0; i < R; i++)
            rows[i] = c->data + (n + i) * c->rb;
#if NF_G8_X86
        if (j->fn) { /* the kernel checks the fields as it goes */
            unsigned bad[4] = {0, 0, 0, 0};
            j->fn(c, rows, R, pfo, v, bad);
            for (unsigned i = 0; i < R; i++)
                ok[i] = bad[i] == 0;
        } else
#endif
            for (unsigned i = 0; i < R; i++) {
                ok[i] = row_ok(c->f, &c->g, rows[i], nblk);
                if (ok[i])
                    v[i] = row_portable(c, rows[i]);
            }
        for (unsigned i = 0; i < R; i++) {
            if (ok[i]) {
                c->y[n + i - c->r0] = nf_gv_canon(v[i]);
                continue;
            }
            int rc = nf_gv_rows_f32(c->t, c->obj, c->obj_bytes, n + i, n + i + 1, c->xf, c->y,
                                    c->r0, c->isa);
            if (rc)
                return rc;
        }
        n += R;
    }
    return 0;
}

int nf_gemv_gguf_a8_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                         uint64_t r0, uint64_t r1, const uint16_t *x, float *y, unsigned threads,
                         nf_isa isa)
{
    gjob8 j;
    memset(&j, 0, sizeof j);
    gctx *c = &j.c;
    if (!t || !obj || !x || !y || t->layout != NF_LAY_GGUF_ROWS_V1 || !gfmt_of(t->format, &c->g))
        return 1;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    if (r0 == r1)
        return 0;
    uint64_t K = t->cols;
    c->t = t;
    c->obj = obj;
    c->obj_bytes = obj_bytes;
    c->data = obj + t->enc.plane[0].offset;
    c->rb = t->enc.plane[0].row_bytes;
    c->K = K;
    c->nb = K / 16;
    c->nsc = (K + 255) / 256;
    c->r0 = r0;
    c->f = t->format;
    c->isa = isa;
    c->y = y;
    c->tailb = c->g.qk == 32 && (K / 32) % 8 ? ((K / 32) % 8) * c->g.bb : 0;
    for (unsigned l = 0; l < 16; l++)
        c->lb[l] = c->ob[l] = lane_block(c->g.perm, l);
#if NF_G8_X86
    if (c->g.qk == 32) {
        unsigned B = c->g.bb;
        if (c->f != NF_FMT_GGUF_Q8_0) {
            unsigned qo = c->f == NF_FMT_GGUF_Q4_1 ? 4 : c->f == NF_FMT_GGUF_MXFP4 ? 1 : c->f == NF_FMT_GGUF_Q5_0 ? 6
                          : c->f == NF_FMT_GGUF_Q5_1 ? 8 : 2;
            memset(&c->gh, 0, sizeof c->gh);
            gwin_add(&c->gh, B, 0, c->f == NF_FMT_GGUF_MXFP4 ? 1 : 2, 0);
            if (c->f == NF_FMT_GGUF_Q4_1 || c->f == NF_FMT_GGUF_Q5_1)
                gwin_add(&c->gh, B, 2, 2, 16);
            if (c->f == NF_FMT_GGUF_Q5_0 || c->f == NF_FMT_GGUF_Q5_1)
                gwin_add(&c->gh, B, c->f == NF_FMT_GGUF_Q5_0 ? 2 : 4, 4, 32);
            gruns_of(c->gq, B, qo);
        } else {
            gfield_of(&c->gf, B, 0, 2);
        }
    }
#endif
#if NF_G8_X86
    bool k512 = isa >= NF_ISA_AVX512 && nf_gv_cpu_vnni_vbmi();
    bool simd = k512 || (isa >= NF_ISA_AVX2 && nf_codec_isa_supported(NF_ISA_AVX2));
    if (k512) /* result lane r: the natural lane n = 4j + L holding block ob[r] */
        for (unsigned r = 0; r < 16; r++) {
            c->ob[r] = out_block(c->f, r);
            unsigned n = 0;
            while (n < 15 && c->lb[n] != c->ob[r]) /* lb is a permutation of 0..15 */
                n++;
            unsigned j = n / 4, L = n % 4;
            c->ri[0][r] = (int32_t)((j >= 2 ? 16 : 0) + (j % 2) * 8 + 2 * L);
            c->ri[1][r] = c->ri[0][r] + 1;
        }
#else
    bool simd = false;
#endif
    /* x's codes, scales and sums, and the kernel's layout of them, in this
     * thread's buffer */
    uint64_t nsc = c->nsc, nbp = 16 * nsc;
#define A64(n) (((uint64_t)(n) + 63) & ~(uint64_t)63)
    uint64_t sq = A64(nbp * 16), sd = A64(nbp * 8), sj = A64(nbp * 4), sx = A64(K * 4), sf = A64(nbp * 4);
    uint64_t sxq = simd ? A64(nsc * 256) : 0, sdp = simd ? A64(nsc * 16 * 8) : 0, sbj = simd ? A64(nsc * 16 * 4) : 0;
    uint8_t *p = nf_pool_scratch(3, sq + sd + sj + sx + sf + sxq + 2 * sdp + sbj);
    if (!p)
        return NF_CODEC_ENOMEM;
    int8_t *qa = (int8_t *)p;
    double *da = (double *)(void *)(p + sq);
    int32_t *J = (int32_t *)(void *)(p + sq + sd);
    float *xf = (float *)(void *)(p + sq + sd + sj);
    float *df = (float *)(void *)(p + sq + sd + sj + sx); /* nf_a8_quantize's f32 scales */
    uint8_t *q2 = p + sq + sd + sj + sx + sf;
#undef A64
    memset(qa, 0, nbp * 16);
    nf_a8_quantize(x, K, qa, df);
    for (uint64_t b = 0; b < nbp; b++)
        da[b] = b < c->nb ? (double)df[b] : 0.0;
    nf_gv_a8_dequant(qa, df, K, xf);
#if NF_G8_X86
    if (simd)
        a8_sums256(qa, nbp, J);
    else
#endif
        for (uint64_t b = 0; b < nbp; b++) {
            int32_t s = 0;
            for (unsigned i = 0; i < 16; i++)
                s += qa[16 * b + i];
            J[b] = s;
        }
    c->qa = qa;
    c->da = da;
    c->J = J;
    c->xf = xf;
#if NF_G8_X86
    if (simd) {
        uint8_t *xq = q2;
        double *dap = (double *)(void *)(q2 + sxq), *Jp = (double *)(void *)(q2 + sxq + sdp);
        int32_t *BJp = (int32_t *)(void *)(q2 + sxq + 2 * sdp);
        for (uint64_t sc = 0; sc < nsc; sc++)
            for (unsigned l = 0; l < 16; l++) {
                uint64_t b = 16 * sc + c->lb[l], o = 16 * sc + c->ob[l];
                memcpy(xq + 256 * sc + 64 * (l / 4) + 16 * (l % 4), qa + 16 * b, 16);
                dap[16 * sc + l] = da[o];
                Jp[16 * sc + l] = (double)J[o];
                BJp[16 * sc + l] = c->g.beta * J[o];
            }
        c->xq = xq;
        c->dap = dap;
        c->Jp = Jp;
        c->BJp = BJp;
        j.fn = k512 ? pick512(t->format) : pick256(t->format);
    }
#endif
    uint64_t grp = 4 * c->rb;
    j.pfd = 4 * (grp >= 8192 ? 1 : (8192 + grp - 1) / grp);
    return nf_gv_run(grows8, &j, r0, r1, c->rb, threads);
}
