/* nf_gemv_int.c — the integer GEMV path (nf_gemv_int.h; DESIGN 11), in the
 * I order of nf_gemv.h.
 *
 * Activations. x is taken per block of 16 consecutive columns. On A16 each
 * bf16 value is an integer multiple of the block's unit 2^(E-147) (E the
 * largest exponent field in the block): value = Q * unit with |Q| < 2^21,
 * which three signed 7-bit limbs hold exactly, Q = q0*2^14 + q1*2^7 + q2.
 * A value more than 2^13 below the block's largest loses bits below the
 * unit: those bits (and non-finite values, and every value of a block
 * whose largest exponent is below -60 or above 100, where the unit would
 * leave the normal f32 range) go to a short residual list (column, exact
 * remainder), multiplied in f64 and added at the end. On A8 the one limb is
 * nf_a8_quantize's codes and the unit its scale d (a block whose d is
 * outside [2^-60, 2^100] goes to the residuals as q * d). The participants
 * build the n shares of the columns (whole chunks), in parallel, into the
 * caller's reused buffers, each share claimed by whoever comes first; the
 * residual lists stay per share, in column order.
 *
 * Weights. The codes of a row become unsigned bytes u = c + bias (q4: 8,
 * q5: 16, q6: 32, q8: 128, q2: 1 (its raw code), t2: 2, nvfp4: 2*e2m1 + 12
 * so bias 12 and a unit halved), with bit operations only: nibble masks,
 * and for the high planes of q5/q6 a per-byte bit gather (vpmultishiftqb).
 *
 * Dot products. For each lane (4 consecutive bytes of a vector: 4*nv
 * consecutive columns, nv the code vectors of a chunk) the kernel forms
 * sum u*q over the lane's codes in int32 with vpdpbusd, one limb after the
 * other, the limbs combined with shifts, then adds the precomputed -bias *
 * sum(Q) of the lane: the exact integer sum of c * Q over the lane (it
 * fits: |c| <= 128, |Q| < 2^21, at most 16 codes a lane; wrap-around in
 * between cancels). That integer meets f32 once (converted, one
 * rounding), multiplied by unit * scale (rounded once) with an FMA into
 * the row's accumulator slot (lane index) % 16; then the tree. The portable
 * code computes the same integers directly from Q.
 *
 * Lane order. A chunk is B = nv * W consecutive columns (W = 64 bytes on
 * AVX-512, 32 on AVX2; nv = 2 for nibble formats, where vector 0 holds
 * the low nibbles (even columns) and vector 1 the high ones, 1 for q8, 4
 * for 2-bit codes); column k of a chunk sits in vector k % nv at byte
 * k / nv, so a lane covers 4*nv consecutive columns, inside one block of
 * 16 and one group, and lane i of chunk c is lane c*W/4 + i of the row.
 * Codes past K (padding, or the masked half chunk at the end) meet limbs
 * that are 0 and add exactly 0, whatever their bits.
 *
 * Rows go four at a time (two or one at the end of a unit), so the
 * activation limbs are loaded once for four rows, and a linear prefetch
 * stream runs over the row group after next (base plane, high plane,
 * scales) spread over the chunks of the current one.
 */
#include "nf_gemv_int.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_INT_X86 1
#include <immintrin.h>
#else
#define NF_INT_X86 0
#endif

/* ---- formats ----------------------------------------------------------------- */

typedef struct {
    unsigned nv; /* code vectors per chunk */
    int bias;    /* u = c + bias */
    bool half_unit; /* nvfp4: u - bias = 2 * e2m1 */
} ifmt;

static bool fmt_of(nf_format f, nf_layout l, ifmt *o)
{
    if (l == NF_LAY_ROW_SPLIT_K128_V1) {
        switch (f) {
        case NF_FMT_Q2_G64_FP16: *o = (ifmt){4, 1, false}; return true;
        case NF_FMT_T2_G128_FP16: *o = (ifmt){4, 2, false}; return true;
        case NF_FMT_Q4_G64_FP16: *o = (ifmt){2, 8, false}; return true;
        case NF_FMT_Q5_G64_FP16: *o = (ifmt){2, 16, false}; return true;
        case NF_FMT_Q6_G64_FP16: *o = (ifmt){2, 32, false}; return true;
        case NF_FMT_Q8_G32_FP16: *o = (ifmt){1, 128, false}; return true;
        default: return false;
        }
    }
    if (l == NF_LAY_BLOCK_SCALE_K16_M128X4_V1 && f == NF_FMT_NVFP4) {
        *o = (ifmt){2, 12, true};
        return true;
    }
    return false;
}

bool nf_gemv_int_supported(const nf_tensor_enc *t, nf_isa isa)
{
    ifmt F;
    if (!t || t->rank != 2 || !t->cols || !t->rows || !fmt_of(t->format, t->layout, &F))
        return false;
    if (t->format == NF_FMT_NVFP4 && (t->divisors == 0 || t->rows % t->divisors))
        return false;
    switch (isa) {
    case NF_ISA_SCALAR: return true;
#if NF_INT_X86
    case NF_ISA_AVX512: return nf_codec_isa_supported(NF_ISA_AVX512) && nf_gv_cpu_vnni_vbmi();
    case NF_ISA_AVX2: return nf_codec_isa_supported(NF_ISA_AVX2);
#endif
    default: return false;
    }
}

/* ---- the activations ----------------------------------------------------------- */

typedef struct {
    unsigned L, W, nv, lanes; /* W 0: the portable code (Q and Db only) */
    uint64_t B, nch, K, nb, bpc; /* bpc: blocks of 16 a chunk */
    bool half;     /* the last chunk holds only B/2 columns of the row bytes */
    int8_t *q;     /* [nch][L][nv][W] */
    int32_t *corr; /* [nch][lanes]: -bias * sum of Q over the lane */
    float *D;      /* [nch][lanes]: the lane's unit (nvfp4: halved) */
    int32_t *Q;    /* [K]: the integer activations */
    float *Db;     /* [nb]: the block units (0: the block is all residuals) */
    float *xf;     /* [K]: x (A16) or x^ (A8) in f32, for the rows done on the two-pass path
                      (W 0: built with the rest; else by xint_xf when first needed) */
    int8_t *qa;    /* [nb * 16]: A8 codes */
    float *dq;     /* [nb]: A8 scales (nf_a8_quantize's d) */
    uint64_t maxr; /* residuals a list may hold (and all lists together) */
    unsigned nres; /* residual lists, one per builder */
    uint32_t *rk;  /* [nres][maxr] columns */
    double *rv;    /* [nres][maxr] exact remainders */
    unsigned *rn;  /* [nres] counts (maxr + 1: overflowed) */
} xint;

/* Carve X's arrays out of the caller's buffer (nf_pool_scratch slot 3). */
static int xint_alloc(xint *X, uint64_t K, uint64_t Kc, nf_act act, const ifmt *F, unsigned W,
                      unsigned nres)
{
    memset(X, 0, sizeof *X);
    X->L = act == NF_ACT_A8 ? 1 : 3;
    X->W = W;
    X->nv = F->nv;
    X->K = K;
    X->nb = (K + 15) / 16;
    if (W) {
        X->lanes = W / 4;
        X->B = (uint64_t)F->nv * W;
        X->nch = (Kc + X->B - 1) / X->B;
        X->half = X->nch * X->B != Kc;
    } else {
        X->lanes = 0;
        X->B = 16;
        X->nch = X->nb;
    }
    X->bpc = X->B / 16;
    /* the residuals cost a scalar decode each per row: at most about a
     * quarter of the kernel's work */
    X->maxr = 16 + K / 256;
    X->nres = nres;
#define A64(n) (((uint64_t)(n) + 63) & ~(uint64_t)63)
    uint64_t sq = W ? A64(X->nch * X->L * X->B) : 0;
    uint64_t sl = W ? A64(X->nch * X->lanes * 4) : 0;
    uint64_t sQ = A64(X->nb * 16 * 4), sD = A64(X->nb * 4 + 64), sx = A64(K * 4);
    uint64_t sa = act == NF_ACT_A8 ? A64(X->nb * 16) : 0, sdq = act == NF_ACT_A8 ? A64(X->nb * 4) : 0;
    uint64_t sk = A64(nres * X->maxr * 4), sv = A64(nres * X->maxr * 8), sn = A64(nres * 4);
    uint64_t tot = sq + 2 * sl + sQ + sD + sx + sa + sdq + sk + sv + sn;
    uint8_t *p = nf_pool_scratch(3, tot ? tot : 64);
    if (!p)
        return NF_CODEC_ENOMEM;
    X->q = (int8_t *)p;
    p += sq;
    X->corr = (int32_t *)(void *)p;
    p += sl;
    X->D = (float *)(void *)p;
    p += sl;
    X->Q = (int32_t *)(void *)p;
    p += sQ;
    X->Db = (float *)(void *)p;
    p += sD;
    X->xf = (float *)(void *)p;
    p += sx;
    X->qa = act == NF_ACT_A8 ? (int8_t *)p : NULL;
    p += sa;
    X->dq = act == NF_ACT_A8 ? (float *)(void *)p : NULL;
    p += sdq;
    X->rk = (uint32_t *)(void *)p;
    p += sk;
    X->rv = (double *)(void *)p;
    p += sv;
    X->rn = (unsigned *)(void *)p;
#undef A64
    return 0;
}

/* Note a residual of list part; false when the list is full. */
static bool resid(xint *X, unsigned part, uint64_t k, double v)
{
    unsigned *n = &X->rn[part];
    if (*n >= X->maxr) {
        *n = (unsigned)X->maxr + 1;
        return false;
    }
    X->rk[part * X->maxr + *n] = (uint32_t)k;
    X->rv[part * X->maxr + *n] = v;
    (*n)++;
    return true;
}

#if NF_INT_X86
#define T5P __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

/* A16 stage 1 for 16 columns k0.. (n of them): Q (the exact multiples of
 * the block unit), the unit, and a mask of the columns that need the
 * scalar treatment (non-finite, out of range, bits below the unit). */
T5P static __mmask16 a16_block512(const uint16_t *x, unsigned n, int32_t *Q, float *Db)
{
    __mmask16 m = (__mmask16)((1u << n) - 1);
    __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x));
    __m512i e = _mm512_and_si512(_mm512_srli_epi32(u, 7), _mm512_set1_epi32(0xff));
    __mmask16 nz = _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x7fff));
    __mmask16 fin = _mm512_cmpneq_epi32_mask(e, _mm512_set1_epi32(0xff));
    __m512i ee = _mm512_max_epi32(e, _mm512_set1_epi32(1));
    int E = (nz & fin) ? _mm512_mask_reduce_max_epi32(nz & fin, ee) : 0;
    bool ok = (nz & fin) && E >= 127 - 60 && E <= 127 + 100;
    *Db = ok ? nf_f32_from_bits((uint32_t)(E - 20) << 23) : 0.0f;
    __m512i mant = _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi32(127)),
                                   _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(e, e),
                                                          _mm512_set1_epi32(128)));
    __m512i sh = _mm512_add_epi32(ee, _mm512_set1_epi32(13 - E));
    __mmask16 neg = _mm512_cmplt_epi32_mask(sh, _mm512_setzero_si512());
    __m512i rs = _mm512_sub_epi32(_mm512_setzero_si512(), sh);
    __m512i N = _mm512_mask_srlv_epi32(_mm512_sllv_epi32(mant, sh), neg, mant, rs);
    __mmask16 lost = neg & _mm512_cmpneq_epi32_mask(_mm512_sllv_epi32(N, rs), mant);
    __m512i Qv = _mm512_mask_sub_epi32(N, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x8000)),
                                       _mm512_setzero_si512(), N);
    _mm512_mask_storeu_epi32(Q, m, Qv);
    return (__mmask16)(m & nz & (ok ? (~fin | lost) : 0xffff));
}

/* Stage 2 for the 16 columns Qv (n of them, 0 past n) of one block: limbs
 * and lane sums into the chunk (nv vectors of 64 bytes per limb); block
 * index bi inside the chunk. */
T5P static inline __attribute__((always_inline)) void
scatter512(__m512i Qv, unsigned n, unsigned nv, unsigned L, unsigned bi, int8_t *qc, int32_t *co,
           float *dc, float Db, int bias)
{
    __mmask16 sg = _mm512_cmplt_epi32_mask(Qv, _mm512_setzero_si512());
    __m512i N = _mm512_abs_epi32(Qv);
    __m128i lb[3];
    if (L == 1) {
        lb[0] = _mm512_cvtepi32_epi8(Qv);
    } else {
        __m512i n0 = _mm512_srli_epi32(N, 14);
        __m512i n1 = _mm512_and_si512(_mm512_srli_epi32(N, 7), _mm512_set1_epi32(127));
        __m512i n2 = _mm512_and_si512(N, _mm512_set1_epi32(127));
        const __m512i z = _mm512_setzero_si512();
        lb[0] = _mm512_cvtepi32_epi8(_mm512_mask_sub_epi32(n0, sg, z, n0));
        lb[1] = _mm512_cvtepi32_epi8(_mm512_mask_sub_epi32(n1, sg, z, n1));
        lb[2] = _mm512_cvtepi32_epi8(_mm512_mask_sub_epi32(n2, sg, z, n2));
    }
    /* column t of the block: vector t % nv, byte 16*bi/nv + t/nv */
    const __m128i dei2 = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i dei4 = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (unsigned l = 0; l < L; l++) {
        int8_t *ql = qc + l * nv * 64;
        if (nv == 1) {
            _mm_storeu_si128((__m128i *)(ql + 16 * bi), lb[l]);
        } else if (nv == 2) {
            __m128i d = _mm_shuffle_epi8(lb[l], dei2);
            _mm_storel_epi64((__m128i *)(ql + 8 * bi), d);
            _mm_storel_epi64((__m128i *)(ql + 64 + 8 * bi), _mm_unpackhi_epi64(d, d));
        } else {
            __m128i d = _mm_shuffle_epi8(lb[l], dei4);
            for (unsigned v = 0; v < 4; v++) {
                int32_t w = _mm_extract_epi32(d, 0);
                memcpy(ql + v * 64 + 4 * bi, &w, 4);
                d = _mm_srli_si128(d, 4);
            }
        }
    }
    /* lanes: 4*nv columns each; their sums by a reduction tree in the
     * register (exact integers), lane j of the block at element j*per */
    unsigned per = 4 * nv, lanes = 16 / per, l0 = 16 * bi / per;
    __m512i t = _mm512_add_epi32(Qv, _mm512_shuffle_epi32(Qv, (_MM_PERM_ENUM)0xb1)); /* pairs */
    t = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, (_MM_PERM_ENUM)0x4e));           /* fours */
    if (per >= 8)
        t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, 0xb1));                   /* eights */
    if (per >= 16)
        t = _mm512_add_epi32(t, _mm512_shuffle_i32x4(t, t, 0x4e));                   /* all */
    const __m512i pick = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i pick8 = _mm512_setr_epi32(0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512i sums = _mm512_permutexvar_epi32(per == 4 ? pick : pick8, t);
    unsigned valid = (n + per - 1) / per;
    __mmask16 lm = (__mmask16)((1u << (valid < lanes ? valid : lanes)) - 1);
    _mm512_mask_storeu_epi32(co + l0, lm, _mm512_mullo_epi32(sums, _mm512_set1_epi32(-bias)));
    _mm512_mask_storeu_ps(dc + l0, lm, _mm512_set1_ps(Db));
}

/* scatter512 of n <= 16 int32 activations Q (A16), of n int8 codes q (A8) */
T5P static void scatter_block512(const int32_t *Q, unsigned n, unsigned nv, unsigned L,
                                 unsigned bi, int8_t *qc, int32_t *co, float *dc, float Db,
                                 int bias)
{
    __m512i Qv = _mm512_maskz_loadu_epi32((__mmask16)((1u << n) - 1), Q);
    scatter512(Qv, n, nv, L, bi, qc, co, dc, Db, bias);
}

T5P static void scatter8_block512(const int8_t *q, unsigned n, unsigned nv, unsigned bi, int8_t *qc,
                                  int32_t *co, float *dc, float Db, int bias)
{
    __m512i Qv = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8((__mmask16)((1u << n) - 1), q));
    scatter512(Qv, n, nv, 1, bi, qc, co, dc, Db, bias);
}
#endif

#if NF_INT_X86
#define T2P __attribute__((target("avx2,fma,f16c")))

/* The 16 columns of a block as two vectors of 8 int32 lanes (n of them
 * from p, the rest 0). */
T2P static inline void load16x32_256(const int32_t *p, unsigned n, __m256i *v)
{
    int32_t t[16] = {0};
    if (n < 16) {
        memcpy(t, p, n * sizeof *p);
        p = t;
    }
    v[0] = _mm256_loadu_si256((const __m256i *)(const void *)p);
    v[1] = _mm256_loadu_si256((const __m256i *)(const void *)(p + 8));
}

/* Store n <= 16 of the 16 int32 of v at p. */
T2P static inline void store16x32_256(void *p, unsigned n, const __m256i *v)
{
    if (n == 16) {
        _mm256_storeu_si256((__m256i *)p, v[0]);
        _mm256_storeu_si256((__m256i *)((char *)p + 32), v[1]);
        return;
    }
    int32_t t[16];
    _mm256_storeu_si256((__m256i *)(void *)t, v[0]);
    _mm256_storeu_si256((__m256i *)(void *)(t + 8), v[1]);
    memcpy(p, t, n * sizeof *t);
}

/* A16 stage 1 on AVX2: a16_block512's integers, units and mask (bit t:
 * column t needs the scalar treatment), 8 columns a vector. */
T2P static unsigned a16_block256(const uint16_t *x, unsigned n, int32_t *Q, float *Db)
{
    uint16_t tx[16] = {0};
    if (n < 16) {
        memcpy(tx, x, n * sizeof *x);
        x = tx;
    }
    const __m256i ones = _mm256_set1_epi32(-1), cff = _mm256_set1_epi32(0xff);
    __m256i u[2], e[2], zero[2], inf[2], ee[2], live = _mm256_setzero_si256();
    for (unsigned h = 0; h < 2; h++) {
        u[h] = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(x + 8 * h)));
        e[h] = _mm256_and_si256(_mm256_srli_epi32(u[h], 7), cff);
        zero[h] = _mm256_cmpeq_epi32(_mm256_and_si256(u[h], _mm256_set1_epi32(0x7fff)),
                                     _mm256_setzero_si256());
        inf[h] = _mm256_cmpeq_epi32(e[h], cff);
        ee[h] = _mm256_max_epi32(e[h], _mm256_set1_epi32(1));
        /* the exponents of the finite nonzero columns (0 elsewhere) */
        live = _mm256_max_epi32(live, _mm256_andnot_si256(_mm256_or_si256(zero[h], inf[h]), ee[h]));
    }
    __m256i mx = _mm256_max_epi32(live, _mm256_permute2x128_si256(live, live, 1));
    mx = _mm256_max_epi32(mx, _mm256_shuffle_epi32(mx, 0x4e));
    mx = _mm256_max_epi32(mx, _mm256_shuffle_epi32(mx, 0xb1));
    int E = _mm256_cvtsi256_si32(mx);
    bool ok = E >= 127 - 60 && E <= 127 + 100;
    *Db = ok ? nf_f32_from_bits((uint32_t)(E - 20) << 23) : 0.0f;
    __m256i Qv[2];
    unsigned fix = 0;
    for (unsigned h = 0; h < 2; h++) {
        __m256i normal = _mm256_andnot_si256(_mm256_cmpeq_epi32(e[h], _mm256_setzero_si256()),
                                             _mm256_set1_epi32(128));
        __m256i mant = _mm256_or_si256(_mm256_and_si256(u[h], _mm256_set1_epi32(127)), normal);
        __m256i sh = _mm256_add_epi32(ee[h], _mm256_set1_epi32(13 - E));
        __m256i neg = _mm256_cmpgt_epi32(_mm256_setzero_si256(), sh);
        __m256i rs = _mm256_sub_epi32(_mm256_setzero_si256(), sh);
        /* a count past 31 (a negative one) shifts to 0 */
        __m256i N = _mm256_blendv_epi8(_mm256_sllv_epi32(mant, sh), _mm256_srlv_epi32(mant, rs), neg);
        __m256i lost = _mm256_and_si256(
            neg, _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_sllv_epi32(N, rs), mant), ones));
        __m256i sg = _mm256_srai_epi32(_mm256_slli_epi32(u[h], 16), 31);
        Qv[h] = _mm256_sub_epi32(_mm256_xor_si256(N, sg), sg);
        __m256i f = _mm256_andnot_si256(zero[h], ok ? _mm256_or_si256(inf[h], lost) : ones);
        fix |= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(f)) << (8 * h);
    }
    store16x32_256(Q, n, Qv);
    return fix & ((1u << n) - 1);
}

/* 16 int32 in [-128, 127] as 16 bytes, in order. */
T2P static inline __m128i bytes16_256(__m256i a, __m256i b)
{
    __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xd8);
    return _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
}

/* Stage 2 on AVX2 for 16 columns of one block: scatter_block512's limbs
 * and lane sums into a chunk of 32-byte vectors. */
T2P static inline __attribute__((always_inline)) void
scatter256(const __m256i *q, unsigned n, unsigned nv, unsigned L, unsigned bi, int8_t *qc,
           int32_t *co, float *dc, float Db, int bias)
{
    __m128i lb[3];
    if (L == 1) {
        lb[0] = bytes16_256(q[0], q[1]);
    } else {
        __m256i a0 = _mm256_abs_epi32(q[0]), a1 = _mm256_abs_epi32(q[1]);
        const __m256i m7 = _mm256_set1_epi32(127);
        lb[0] = bytes16_256(_mm256_sign_epi32(_mm256_srli_epi32(a0, 14), q[0]),
                            _mm256_sign_epi32(_mm256_srli_epi32(a1, 14), q[1]));
        lb[1] = bytes16_256(_mm256_sign_epi32(_mm256_and_si256(_mm256_srli_epi32(a0, 7), m7), q[0]),
                            _mm256_sign_epi32(_mm256_and_si256(_mm256_srli_epi32(a1, 7), m7), q[1]));
        lb[2] = bytes16_256(_mm256_sign_epi32(_mm256_and_si256(a0, m7), q[0]),
                            _mm256_sign_epi32(_mm256_and_si256(a1, m7), q[1]));
    }
    /* column t of the block: vector t % nv, byte 16*bi/nv + t/nv */
    const __m128i dei2 = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i dei4 = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (unsigned l = 0; l < L; l++) {
        int8_t *ql = qc + l * nv * 32;
        if (nv == 1) {
            _mm_storeu_si128((__m128i *)(void *)(ql + 16 * bi), lb[l]);
        } else if (nv == 2) {
            __m128i d = _mm_shuffle_epi8(lb[l], dei2);
            _mm_storel_epi64((__m128i *)(void *)(ql + 8 * bi), d);
            _mm_storel_epi64((__m128i *)(void *)(ql + 32 + 8 * bi), _mm_unpackhi_epi64(d, d));
        } else {
            __m128i d = _mm_shuffle_epi8(lb[l], dei4);
            int32_t w[4];
            _mm_storeu_si128((__m128i *)(void *)w, d);
            for (unsigned v = 0; v < 4; v++)
                memcpy(ql + v * 32 + 4 * bi, &w[v], 4);
        }
    }
    /* the sums of the four columns 4j..4j+3 (exact integers); a lane of
     * 4*nv columns adds nv of them */
    __m256i h = _mm256_hadd_epi32(q[0], q[1]);
    h = _mm256_hadd_epi32(h, h); /* s0 s2 . . | s1 s3 . . */
    int32_t s[4] = {_mm256_extract_epi32(h, 0), _mm256_extract_epi32(h, 4),
                    _mm256_extract_epi32(h, 1), _mm256_extract_epi32(h, 5)};
    unsigned per = 4 * nv, lanes = 16 / per, l0 = 16 * bi / per;
    unsigned valid = (n + per - 1) / per;
    valid = valid < lanes ? valid : lanes;
    for (unsigned j = 0; j < valid; j++) {
        int32_t sum = 0;
        for (unsigned i = 0; i < nv; i++)
            sum += s[j * nv + i];
        co[l0 + j] = -bias * sum;
        dc[l0 + j] = Db;
    }
}

/* scatter256 of n <= 16 int32 activations Q (A16), of n int8 codes q (A8) */
T2P static void scatter_block256(const int32_t *Q, unsigned n, unsigned nv, unsigned L, unsigned bi,
                                 int8_t *qc, int32_t *co, float *dc, float Db, int bias)
{
    __m256i v[2];
    load16x32_256(Q, n, v);
    scatter256(v, n, nv, L, bi, qc, co, dc, Db, bias);
}

T2P static void scatter8_block256(const int8_t *q, unsigned n, unsigned nv, unsigned bi, int8_t *qc,
                                  int32_t *co, float *dc, float Db, int bias)
{
    int8_t t[16] = {0};
    memcpy(t, q, n);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)t);
    __m256i v[2] = {_mm256_cvtepi8_epi32(b), _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))};
    scatter256(v, n, nv, 1, bi, qc, co, dc, Db, bias);
}
#endif

/* The scalar treatment of A16 column k of block b: a non-finite value, or
 * any value of a block out of range (Db 0), goes to the residuals whole
 * with Q 0; otherwise the bits below the unit. false: the list is full. */
static bool a16_fix(xint *X, unsigned part, const uint16_t *x, uint64_t k, uint64_t b)
{
    unsigned u = x[k], e = (u >> 7) & 0xff;
    double v = (double)nf_bf16_to_f32((uint16_t)u);
    if (e == 0xff || X->Db[b] == 0.0f) {
        X->Q[k] = 0;
        return resid(X, part, k, v);
    }
    return resid(X, part, k, v - (double)X->Q[k] * (double)X->Db[b]);
}

#if NF_INT_X86
/* Chunks [c0, c1) on the kernel's vectors (W 64: AVX-512, 32: AVX2), block
 * by block: stage 1 (A16: Q and the unit; A8: the codes as they are), then
 * the scatter into the chunk. An A8 block set aside leaves its chunk bytes
 * 0. xf is left to xint_xf. */
static void build_simd(xint *X, const uint16_t *x, nf_act act, const ifmt *F, uint64_t c0,
                       uint64_t c1, unsigned part)
{
    unsigned W = X->W, L = X->L, nv = X->nv;
    float half = F->half_unit ? 0.5f : 1.0f;
    uint64_t K = X->K, nb = X->nb;
    for (uint64_t c = c0; c < c1; c++) {
        int8_t *qc = X->q + c * L * X->B;
        int32_t *co = X->corr + c * X->lanes;
        float *dc = X->D + c * X->lanes;
        for (unsigned bi = 0; bi < X->bpc; bi++) {
            uint64_t b = c * X->bpc + bi, kb = 16 * b;
            if (b >= nb)
                return;
            unsigned n = K - kb < 16 ? (unsigned)(K - kb) : 16;
            if (act == NF_ACT_A8) {
                const int8_t *q = X->qa + kb;
                float d = X->dq[b];
                if (d != 0.0f && !(d >= 0x1p-60f && d <= 0x1p100f)) { /* set aside */
                    X->Db[b] = 0.0f;
                    for (unsigned t = 0; t < n; t++)
                        if (q[t] && !resid(X, part, kb + t, (double)q[t] * (double)d))
                            return;
                    continue;
                }
                X->Db[b] = d;
                if (W == 64)
                    scatter8_block512(q, n, nv, bi, qc, co, dc, d * half, F->bias);
                else
                    scatter8_block256(q, n, nv, bi, qc, co, dc, d * half, F->bias);
                continue;
            }
            int32_t *Q = X->Q + kb;
            unsigned fix = W == 64 ? a16_block512(x + kb, n, Q, &X->Db[b])
                                   : a16_block256(x + kb, n, Q, &X->Db[b]);
            for (unsigned t = 0; fix; t++, fix >>= 1)
                if ((fix & 1) && !a16_fix(X, part, x, kb + t, b))
                    return;
            if (W == 64)
                scatter_block512(Q, n, nv, L, bi, qc, co, dc, X->Db[b] * half, F->bias);
            else
                scatter_block256(Q, n, nv, L, bi, qc, co, dc, X->Db[b] * half, F->bias);
        }
    }
}
#endif

/* Build chunks [c0, c1) of X from x (participant `part`'s share, its own
 * residual list): on the kernel's vectors (build_simd), or for the
 * portable code (W 0) Q, Db and xf. */
static void build_range(xint *X, const uint16_t *x, nf_act act, const ifmt *F, uint64_t c0,
                        uint64_t c1, unsigned part)
{
    uint64_t K = X->K, L = X->L;
    uint64_t b0 = c0 * X->bpc, b1 = c1 * X->bpc < X->nb ? c1 * X->bpc : X->nb;
    X->rn[part] = 0;
    if (X->W && c1 > c0) {
        memset(X->q + c0 * L * X->B, 0, (c1 - c0) * L * X->B);
        memset(X->corr + c0 * X->lanes, 0, (c1 - c0) * X->lanes * sizeof *X->corr);
        memset(X->D + c0 * X->lanes, 0, (c1 - c0) * X->lanes * sizeof *X->D);
    }
    if (b0 >= b1)
        return;
    uint64_t k0 = 16 * b0, k1 = 16 * b1 < K ? 16 * b1 : K;
    if (act == NF_ACT_A8)
        nf_a8_quantize(x + k0, k1 - k0, X->qa + k0, X->dq + b0);
#if NF_INT_X86
    if (X->W) {
        build_simd(X, x, act, F, c0, c1, part);
        return;
    }
#endif
    int32_t *Q = X->Q;
    float *Db = X->Db;
    if (act == NF_ACT_A8) {
        nf_gv_a8_dequant(X->qa + k0, X->dq + b0, k1 - k0, X->xf + k0);
        for (uint64_t b = b0; b < b1; b++) {
            float d = X->dq[b];
            bool aside = d != 0.0f && !(d >= 0x1p-60f && d <= 0x1p100f);
            Db[b] = aside ? 0.0f : d;
            for (uint64_t k = 16 * b; k < 16 * b + 16 && k < K; k++) {
                int8_t qk = X->qa[k];
                Q[k] = aside ? 0 : qk;
                if (aside && qk && !resid(X, part, k, (double)qk * (double)d))
                    return;
            }
        }
        return;
    }
    for (uint64_t k = k0; k < k1; k++)
        X->xf[k] = nf_bf16_to_f32(x[k]);
    for (uint64_t b = b0; b < b1; b++) {
        uint64_t kb = 16 * b, ke = kb + 16 < K ? kb + 16 : K;
        int E = 0;
        for (uint64_t k = kb; k < ke; k++) {
            unsigned u = x[k], e = (u >> 7) & 0xff;
            if (e == 0xff || !(u & 0x7fff))
                continue;
            int ee = e ? (int)e : 1;
            E = ee > E ? ee : E;
        }
        bool ok = E >= 127 - 60 && E <= 127 + 100;
        Db[b] = ok ? nf_f32_from_bits((uint32_t)(E - 20) << 23) : 0.0f; /* 2^(E-147) */
        for (uint64_t k = kb; k < ke; k++) {
            unsigned u = x[k], e = (u >> 7) & 0xff;
            int ee = e ? (int)e : 1, s = ee - E + 13; /* s <= 13 */
            uint32_t mant = (e ? 128u : 0u) | (u & 127u), N, rb;
            if (e == 0xff) { /* inf or NaN: s may pass 31; Q = 0 below */
                N = 0;
                rb = 0;
            } else if (s >= 0) {
                N = mant << s;
                rb = 0;
            } else {
                unsigned r = -s < 9 ? (unsigned)-s : 9; /* mant < 2^8 */
                N = mant >> r;
                rb = mant & ((1u << r) - 1);
            }
            Q[k] = (u & 0x8000) ? -(int32_t)N : (int32_t)N;
            if (__builtin_expect(rb != 0 || !ok || e == 0xff, 0) && (u & 0x7fff) &&
                !a16_fix(X, part, x, k, b))
                return;
        }
    }
}

/* ---- rows --------------------------------------------------------------------------- */

static inline int ld32s(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return (int)v;
}

/* nvfp4 tile row group: the rows (bit i) whose 4 bytes of a tile's 16 (bit
 * 4i + b of m: byte b of row i is a NaN) hold a NaN. */
static inline unsigned nv_bad_rows(unsigned m)
{
    unsigned r = 0;
    for (unsigned i = 0; i < 4; i++)
        r |= (m >> (4 * i) & 15u) ? 1u << i : 0;
    return r;
}

/* E4M3FN codes as f32 (exact; 0x7f/0xff: NaN), for nvfp4's block scales */
static float g_e4m3[256];
static pthread_once_t g_e4m3_once = PTHREAD_ONCE_INIT;
static void e4m3_init(void)
{
    for (unsigned c = 0; c < 256; c++)
        g_e4m3[c] = nf_e4m3_to_f32((uint8_t)c);
}

typedef struct {
    const uint8_t *base, *high; /* row_split planes; nvfp4: codes */
    float *sc;                  /* row_split: the row's scales (f32, 32 zeros after);
                                   nvfp4: its block scales (f32, 16 zeros after) */
    float wdiv;                 /* nvfp4 divisor */
    const uint8_t *ts;          /* nvfp4 tile mode, row 0 of a group: its scale tiles */
    uint64_t n;
} irow;

typedef struct {
    const nf_tensor_enc *t;
    const uint8_t *obj;
    uint64_t obj_bytes;
    const xint *X;
    ifmt F;
    nf_rowsplit_info ri;
    nf_isa isa;
    const uint8_t *pl[3];
    uint64_t rb[3];  /* row bytes of the planes (nvfp4: codes only) */
    unsigned ng;     /* row_split groups a row */
    uint64_t slice;  /* nvfp4 rows per divisor */
} ictx;

static int rs_code(nf_format f, unsigned raw)
{
    switch (f) {
    case NF_FMT_Q2_G64_FP16: return (int)raw - 1;
    case NF_FMT_T2_G128_FP16: return raw & 2 ? (int)raw - 4 : (int)raw;
    case NF_FMT_Q4_G64_FP16: return raw & 8 ? (int)raw - 16 : (int)raw;
    case NF_FMT_Q5_G64_FP16: return raw & 16 ? (int)raw - 32 : (int)raw;
    case NF_FMT_Q6_G64_FP16: return raw & 32 ? (int)raw - 64 : (int)raw;
    default: return (int8_t)raw;
    }
}

/* The integer code of column k of row r: row_split c; nvfp4 2 * e2m1. */
static int icode(const ictx *c, const irow *r, uint64_t k)
{
    if (c->t->format == NF_FMT_NVFP4) {
        static const int8_t e2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
        return e2[(r->base[k / 2] >> (4 * (k & 1))) & 15];
    }
    unsigned bb = c->ri.base_bits, hb = c->ri.high_bits;
    unsigned raw = (r->base[k * bb / 8] >> (k * bb % 8)) & ((1u << bb) - 1);
    if (hb)
        raw |= ((r->high[k * hb / 8] >> (k * hb % 8)) & ((1u << hb) - 1)) << 4;
    return rs_code(c->t->format, raw);
}

/* w(n, k) as the codec decodes it (nf_codec.h: one rounding per product or
 * quotient, no FMA), for the residuals. */
static float elem(const ictx *c, const irow *r, uint64_t k)
{
    if (c->t->format == NF_FMT_NVFP4)
        return ((float)icode(c, r, k) * 0.5f * r->sc[k / 16]) / r->wdiv;
    return (float)icode(c, r, k) * r->sc[k / c->ri.group];
}

/* The row's residual sum in f64, the lists in column order. */
static double residual(const ictx *c, const irow *r)
{
    const xint *X = c->X;
    double s = 0;
    for (unsigned p = 0; p < X->nres; p++)
        for (unsigned j = 0; j < X->rn[p]; j++)
            s += (double)elem(c, r, X->rk[p * X->maxr + j]) * X->rv[p * X->maxr + j];
    return s;
}

/* The I order, portable: lane l = columns [4*nv*l, 4*nv*(l+1)), its exact
 * integer, converted, times fl(unit * scale), into slot l % 16. */
static float row_portable(const ictx *c, const irow *r)
{
    const xint *X = c->X;
    unsigned per = 4 * c->F.nv;
    uint64_t K = X->K;
    bool nv4 = c->t->format == NF_FMT_NVFP4;
    float half = c->F.half_unit ? 0.5f : 1.0f;
    float acc[16] = {0};
    for (uint64_t l = 0, k0 = 0; k0 < K; l++, k0 += per) {
        uint64_t k1 = k0 + per < K ? k0 + per : K;
        int64_t s = 0;
        for (uint64_t k = k0; k < k1; k++)
            s += (int64_t)icode(c, r, k) * X->Q[k];
        float S = nv4 ? r->sc[k0 / 16] : r->sc[k0 / c->ri.group];
        float D = X->Db[k0 / 16] * half;
        acc[l & 15] = fmaf((float)s, D * S, acc[l & 15]);
    }
    return nf_gv_tree(acc, 16);
}

/* A row's setup: pointers and scales; false when the integer kernels
 * cannot take it (a non-finite row_split scale; an nvfp4 NaN block scale
 * or a divisor outside [2^-60, 2^60]). nvfp4 with scales false leaves
 * r->sc to nv_scales4 (four rows of one tile row group at once). */
static bool row_setup(const ictx *c, uint64_t n, irow *r, bool scales);

/* Prefetching the row group pfd rows ahead: each row's base-plane (and
 * high-plane) bytes at the same offset pfd rows later, one line per chunk
 * as the kernel goes, so that the next group streams in linearly behind
 * the current one; nvfp4's block scales of that group (two tile lines a
 * chunk, shared by the four rows); row_split scales at the group's start. */
typedef struct {
    uint64_t off0, off1; /* bytes from a row's base / high plane to row n+pfd's */
    const char *nvs;     /* nvfp4: the scale tiles' line of row n+pfd, or NULL */
} pfplan;

static void pf_plan(const ictx *c, uint64_t n, uint64_t pfd, unsigned R, pfplan *pf)
{
    memset(pf, 0, sizeof *pf);
    uint64_t ahead = n + pfd;
    if (ahead >= c->t->rows)
        return; /* past the end: prefetch nothing */
    pf->off0 = pfd * c->rb[0];
    pf->off1 = pfd * c->rb[1];
    if (c->t->format == NF_FMT_NVFP4) {
        pf->nvs = (const char *)c->pl[1] + nf_nvfp4_scale_row_part(ahead, c->t->cols) / 64 * 64;
        return;
    }
    uint64_t m = ahead + R <= c->t->rows ? R : c->t->rows - ahead;
    const char *sc = (const char *)c->pl[2] + ahead * c->rb[2];
    for (uint64_t i = 0; i < m * c->rb[2]; i += 64)
        __builtin_prefetch(sc + i);
}

#if NF_INT_X86
#define NF_INLINE static inline __attribute__((always_inline))
#include "nf_gemv_tree.inc"

/* ---- AVX-512 VNNI + VBMI kernels ------------------------------------------------- */

#define T5I __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))
#ifdef NF_MCA /* llvm-mca regions: make NF_MCA=1 analysis only */
#define MCA_BEGIN() __asm__ volatile("# LLVM-MCA-BEGIN")
#define MCA_END() __asm__ volatile("# LLVM-MCA-END")
#else
#define MCA_BEGIN()
#define MCA_END()
#endif

/* The exact lane sums of one row's chunk, converted: the sum over vectors
 * v of u[v] * q[l][v] per limb l in its own accumulator (short dependency
 * chains: vpdpbusd has a latency of 5), the limbs then combined with
 * shifts (limb 0 times 2^14, limb 1 times 2^7), corr starting the last. */
T5I NF_INLINE __m512 lanes512(const __m512i *u, unsigned nv, const int8_t *q, unsigned L,
                              const int32_t *corr)
{
    __m512i a[3];
#pragma GCC unroll 4
    for (unsigned l = 0; l < L; l++) {
        a[l] = l + 1 == L ? _mm512_load_si512((const void *)corr) : _mm512_setzero_si512();
        if (nv == 4) { /* two chains of two: vpdpbusd's latency */
            __m512i b = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[1],
                                            _mm512_load_si512((const void *)(q + (l * nv + 1) * 64)));
            a[l] = _mm512_dpbusd_epi32(a[l], u[0], _mm512_load_si512((const void *)(q + (l * nv) * 64)));
            b = _mm512_dpbusd_epi32(b, u[3], _mm512_load_si512((const void *)(q + (l * nv + 3) * 64)));
            a[l] = _mm512_dpbusd_epi32(a[l], u[2], _mm512_load_si512((const void *)(q + (l * nv + 2) * 64)));
            a[l] = _mm512_add_epi32(a[l], b);
            continue;
        }
#pragma GCC unroll 4
        for (unsigned v = 0; v < nv; v++)
            a[l] = _mm512_dpbusd_epi32(a[l], u[v], _mm512_load_si512((const void *)(q + (l * nv + v) * 64)));
    }
    __m512i s = a[L - 1];
    if (L == 3)
        s = _mm512_add_epi32(_mm512_add_epi32(s, _mm512_slli_epi32(a[1], 7)),
                             _mm512_slli_epi32(a[0], 14));
    return _mm512_cvtepi32_ps(s);
}

T5I NF_INLINE __m512i load_chunk512(const uint8_t *p, bool half)
{
    return half ? _mm512_maskz_loadu_epi8(0xffffffffull, p) : _mm512_loadu_si512((const void *)p);
}

/* f(A,B,C) immediates of vpternlog: (A & B) ^ C, A | (B & C), A | (~B & C) */
#define TL_ANDXOR 0x6A
#define TL_ORAND 0xF8
#define TL_ORANDN 0xF2

/* The code vectors of one row's chunk c (row_split and nvfp4 codes). */
T5I NF_INLINE void codes512(nf_format f, const irow *r, uint64_t c, bool half, __m512i *u)
{
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    switch (f) {
    case NF_FMT_Q4_G64_FP16: {
        __m512i v = load_chunk512(r->base + 64 * c, half);
        const __m512i x8 = _mm512_set1_epi8(0x08);
        u[0] = _mm512_ternarylogic_epi32(v, m4, x8, TL_ANDXOR);
        u[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 4), m4, x8, TL_ANDXOR);
        break;
    }
    case NF_FMT_Q8_G32_FP16:
        u[0] = _mm512_xor_si512(load_chunk512(r->base + 64 * c, half), _mm512_set1_epi8((char)0x80));
        break;
    case NF_FMT_Q5_G64_FP16: {
        /* lo byte j = column 2j, high bit 2j of the chunk's 128; the high
         * 16 bytes as 8 qwords of 16 bits, from which vpmultishiftqb brings
         * bit 2t (2t+1) to bit 4 of output byte t; u = raw ^ 0x10 */
        __m512i v = _mm512_loadu_si512((const void *)(r->base + 64 * c));
        __m512i h = _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i *)(r->high + 16 * c)));
        const __m512i mlo = _mm512_set1_epi64(0x0a08060402003e3cll),
                      mhi = _mm512_set1_epi64(0x0b09070503013f3dll), b4 = _mm512_set1_epi8(0x10);
        u[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(v, m4), _mm512_multishift_epi64_epi8(mlo, h), b4, TL_ORANDN);
        u[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4),
                                         _mm512_multishift_epi64_epi8(mhi, h), b4, TL_ORANDN);
        break;
    }
    case NF_FMT_Q6_G64_FP16: {
        /* high 32 bytes as 8 qwords of 32 bits (code 2j: bits 4t, 4t+1 of
         * qword j/8, t = j%8; code 2j+1: bits 4t+2, 4t+3), bit 1 of each pair
         * flipped so that u = raw ^ 0x20 */
        __m512i v = _mm512_loadu_si512((const void *)(r->base + 64 * c));
        __m512i h = _mm512_xor_si512(
            _mm512_cvtepu32_epi64(_mm256_loadu_si256((const __m256i *)(r->high + 32 * c))),
            _mm512_set1_epi64(0xaaaaaaaall));
        const __m512i mlo = _mm512_set1_epi64(0x1814100c0804003cll),
                      mhi = _mm512_set1_epi64(0x1a16120e0a06023ell),
                      b45 = _mm512_set1_epi8(0x30);
        u[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(v, m4), _mm512_multishift_epi64_epi8(mlo, h), b45, TL_ORAND);
        u[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4),
                                         _mm512_multishift_epi64_epi8(mhi, h), b45, TL_ORAND);
        break;
    }
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16: {
        __m512i v = load_chunk512(r->base + 64 * c, half);
        const __m512i m3 = _mm512_set1_epi8(3);
        const __m512i x2 = _mm512_set1_epi8(f == NF_FMT_T2_G128_FP16 ? 2 : 0);
        const __m512i s2 = _mm512_set1_epi64(0x3a322a221a120a02ll),
                      s4 = _mm512_set1_epi64(0x3c342c241c140c04ll);
        u[0] = _mm512_ternarylogic_epi32(v, m3, x2, TL_ANDXOR);
        u[1] = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(s2, v), m3, x2, TL_ANDXOR);
        u[2] = _mm512_ternarylogic_epi32(_mm512_multishift_epi64_epi8(s4, v), m3, x2, TL_ANDXOR);
        u[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 6), m3, x2, TL_ANDXOR);
        break;
    }
    default: { /* nvfp4: 2 * e2m1 + 12 */
        const __m512i lut = _mm512_broadcast_i32x4(
            _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0));
        __m512i v = load_chunk512(r->base + 64 * c, half);
        u[0] = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
        u[1] = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
        break;
    }
    }
}

/* The scale of each lane of chunk c (lane i covers columns 4*nv*i ..). */

/* The scale of each lane of chunk c (lane i covers columns 4*nv*i ..). */
T5I NF_INLINE __m512 scales512c(nf_format f, const irow *r, uint64_t c)
{
    switch (f) {
    case NF_FMT_Q2_G64_FP16: /* 4 groups of 4 lanes */
        return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                     _mm512_castps128_ps512(_mm_loadu_ps(r->sc + 4 * c)));
    case NF_FMT_NVFP4: /* 8 blocks of 2 lanes */
        return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7),
                                     _mm512_castps256_ps512(_mm256_loadu_ps(r->sc + 8 * c)));
    default: /* q4/q5/q6 (G64, B128), q8 (G32, B64), t2 (G128, B256): two groups of 8 lanes */
        return _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(r->sc[2 * c]), _mm512_set1_ps(r->sc[2 * c + 1]));
    }
}

/* One chunk of one row: tot += (lane sums) * fl(unit * scale). */
T5I NF_INLINE __m512 chunk512(nf_format f, unsigned nv, unsigned L, const xint *X, const irow *r,
                              uint64_t c, bool half, __m512 D, __m512 tot, const pfplan *pf)
{
    __m512i u[4];
    _mm_prefetch((const char *)r->base + 64 * c + pf->off0, _MM_HINT_T0);
    if ((f == NF_FMT_Q5_G64_FP16 && !(c & 3)) || (f == NF_FMT_Q6_G64_FP16 && !(c & 1)))
        _mm_prefetch((const char *)r->high + (f == NF_FMT_Q5_G64_FP16 ? 16 : 32) * c + pf->off1, _MM_HINT_T0);
    codes512(f, r, c, half, u);
    __m512 F = lanes512(u, nv, X->q + c * L * nv * 64, L, X->corr + 16 * c);
    return _mm512_fmadd_ps(F, _mm512_mul_ps(D, scales512c(f, r, c)), tot);
}

/* R rows (1, 2 or 4) of format f with L limbs: out[i] = the tree of row
 * i's 16 slots. */
T5I NF_INLINE void rows512(nf_format f, const xint *X, const irow *r, unsigned R, unsigned L,
                           float *out, const pfplan *pf)
{
    const unsigned nv = f == NF_FMT_Q8_G32_FP16 ? 1
                        : (f == NF_FMT_Q2_G64_FP16 || f == NF_FMT_T2_G128_FP16) ? 4 : 2;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t nch = X->nch, full = X->half ? nch - 1 : nch, c = 0;
    for (; c < full; c++) {
        MCA_BEGIN();
        __m512 D = _mm512_load_ps(X->D + 16 * c);
        a0 = chunk512(f, nv, L, X, &r[0], c, false, D, a0, pf);
        if (R >= 2)
            a1 = chunk512(f, nv, L, X, &r[1], c, false, D, a1, pf);
        if (R >= 4) {
            a2 = chunk512(f, nv, L, X, &r[2], c, false, D, a2, pf);
            a3 = chunk512(f, nv, L, X, &r[3], c, false, D, a3, pf);
        }
        if (f == NF_FMT_NVFP4 && pf->nvs) {
            _mm_prefetch(pf->nvs + 1024 * c, _MM_HINT_T0);
            _mm_prefetch(pf->nvs + 1024 * c + 512, _MM_HINT_T0);
        }
        MCA_END();
    }
    if (c < nch) {
        __m512 D = _mm512_load_ps(X->D + 16 * c);
        a0 = chunk512(f, nv, L, X, &r[0], c, true, D, a0, pf);
        if (R >= 2)
            a1 = chunk512(f, nv, L, X, &r[1], c, true, D, a1, pf);
        if (R >= 4) {
            a2 = chunk512(f, nv, L, X, &r[2], c, true, D, a2, pf);
            a3 = chunk512(f, nv, L, X, &r[3], c, true, D, a3, pf);
        }
    }
    out[0] = nf_tree16_512(a0);
    if (R >= 2)
        out[1] = nf_tree16_512(a1);
    if (R >= 4) {
        out[2] = nf_tree16_512(a2);
        out[3] = nf_tree16_512(a3);
    }
}

/* nvfp4's E4M3 block scales of 16 bytes as f32 (exact; a NaN code gives
 * garbage, flagged in *bad by byte). */
T5I NF_INLINE __m512 e4m3x16_512(__m128i b, __mmask16 *bad)
{
    *bad |= _mm_cmpeq_epi8_mask(_mm_and_si128(b, _mm_set1_epi8(0x7f)), _mm_set1_epi8(0x7f));
    __m512i t = _mm512_slli_epi32(_mm512_cvtepu8_epi32(b), 24);
    t = _mm512_and_si512(_mm512_srai_epi32(t, 4), _mm512_set1_epi32((int)0x87f00000));
    return _mm512_mul_ps(_mm512_castsi512_ps(t), _mm512_set1_ps(0x1p120f));
}

/* nvfp4, chunk c of the four rows n + 32i of one tile row group (r[0].ts
 * their scale tiles, nf_nvfp4_scale_row_part(n, K)): as chunk512, the lane
 * scales taken from the tiles, 16 bytes of each of the chunk's two tiles
 * (row i's blocks at 4i) serving the four rows. Its own loop: folded into
 * rows512, the other formats' A16 kernels lost ~5% to code generation. */
T5I NF_INLINE void nvtile_step512(unsigned L, const xint *X, const irow *r, uint64_t c, const bool half,
                                  __m512 *a, __mmask16 *bad, const pfplan *pf)
{
    static const int32_t ix[4][16] = {
        {0, 0, 1, 1, 2, 2, 3, 3, 16, 16, 17, 17, 18, 18, 19, 19},
        {4, 4, 5, 5, 6, 6, 7, 7, 20, 20, 21, 21, 22, 22, 23, 23},
        {8, 8, 9, 9, 10, 10, 11, 11, 24, 24, 25, 25, 26, 26, 27, 27},
        {12, 12, 13, 13, 14, 14, 15, 15, 28, 28, 29, 29, 30, 30, 31, 31}};
    const uint8_t *t = r[0].ts + 1024 * c;
    __m512 D = _mm512_load_ps(X->D + 16 * c);
    __m512 T0 = e4m3x16_512(_mm_loadu_si128((const __m128i *)(const void *)t), bad);
    __m512 T1 = half ? _mm512_setzero_ps() /* a half chunk has one tile */
                     : e4m3x16_512(_mm_loadu_si128((const __m128i *)(const void *)(t + 512)), bad);
#pragma GCC unroll 4
    for (unsigned i = 0; i < 4; i++) {
        __m512i u[4];
        _mm_prefetch((const char *)r[i].base + 64 * c + pf->off0, _MM_HINT_T0);
        codes512(NF_FMT_NVFP4, &r[i], c, half, u);
        __m512 F = lanes512(u, 2, X->q + c * L * 2 * 64, L, X->corr + 16 * c);
        __m512 S = _mm512_permutex2var_ps(T0, _mm512_loadu_si512((const void *)ix[i]), T1);
        a[i] = _mm512_fmadd_ps(F, _mm512_mul_ps(D, S), a[i]);
    }
}

/* nvfp4, the four rows of one tile row group: out[i] = row i's tree;
 * bit i of the result: row i has a NaN scale (its out[i] is then not its
 * value). */
T5I NF_INLINE unsigned nvtile512(const xint *X, const irow *r, unsigned L, float *out, const pfplan *pf)
{
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    __mmask16 bad = 0;
    uint64_t nch = X->nch, full = X->half ? nch - 1 : nch, c = 0;
    for (; c < full; c++) {
        nvtile_step512(L, X, r, c, false, a, &bad, pf);
        if (pf->nvs) {
            _mm_prefetch(pf->nvs + 1024 * c, _MM_HINT_T0);
            _mm_prefetch(pf->nvs + 1024 * c + 512, _MM_HINT_T0);
        }
    }
    if (c < nch)
        nvtile_step512(L, X, r, c, true, a, &bad, pf);
    for (unsigned i = 0; i < 4; i++)
        out[i] = nf_tree16_512(a[i]);
    return nv_bad_rows(bad);
}

/* rows512 for R = 1, 2 or 4; tile: nvtile512 (nvfp4, R = 4). Returns
 * nvtile512's NaN rows, else 0. */
typedef unsigned (*rows_fn)(const xint *, const irow *, unsigned R, float *, const pfplan *, bool tile);

#define ROWS512(NAME, FMT, L)                                                                      \
    T5I static unsigned NAME(const xint *X, const irow *r, unsigned R, float *out, const pfplan *pf, \
                             bool tile)                                                            \
    {                                                                                              \
        if (FMT == NF_FMT_NVFP4 && tile)                                                           \
            return nvtile512(X, r, L, out, pf);                                                    \
        if (R == 4)                                                                                \
            rows512(FMT, X, r, 4, L, out, pf);                                                     \
        else if (R == 2)                                                                           \
            rows512(FMT, X, r, 2, L, out, pf);                                                     \
        else                                                                                       \
            rows512(FMT, X, r, 1, L, out, pf);                                                     \
        return 0;                                                                                  \
    }
ROWS512(q2_512_1, NF_FMT_Q2_G64_FP16, 1)
ROWS512(q2_512_3, NF_FMT_Q2_G64_FP16, 3)
ROWS512(t2_512_1, NF_FMT_T2_G128_FP16, 1)
ROWS512(t2_512_3, NF_FMT_T2_G128_FP16, 3)
ROWS512(q4_512_1, NF_FMT_Q4_G64_FP16, 1)
ROWS512(q4_512_3, NF_FMT_Q4_G64_FP16, 3)
ROWS512(q5_512_1, NF_FMT_Q5_G64_FP16, 1)
ROWS512(q5_512_3, NF_FMT_Q5_G64_FP16, 3)
ROWS512(q6_512_1, NF_FMT_Q6_G64_FP16, 1)
ROWS512(q6_512_3, NF_FMT_Q6_G64_FP16, 3)
ROWS512(q8_512_1, NF_FMT_Q8_G32_FP16, 1)
ROWS512(q8_512_3, NF_FMT_Q8_G32_FP16, 3)
ROWS512(nv_512_1, NF_FMT_NVFP4, 1)
ROWS512(nv_512_3, NF_FMT_NVFP4, 3)

static rows_fn pick512(nf_format f, unsigned L)
{
    bool a = L == 1;
    switch (f) {
    case NF_FMT_Q2_G64_FP16: return a ? q2_512_1 : q2_512_3;
    case NF_FMT_T2_G128_FP16: return a ? t2_512_1 : t2_512_3;
    case NF_FMT_Q4_G64_FP16: return a ? q4_512_1 : q4_512_3;
    case NF_FMT_Q5_G64_FP16: return a ? q5_512_1 : q5_512_3;
    case NF_FMT_Q6_G64_FP16: return a ? q6_512_1 : q6_512_3;
    case NF_FMT_Q8_G32_FP16: return a ? q8_512_1 : q8_512_3;
    case NF_FMT_NVFP4: return a ? nv_512_1 : nv_512_3;
    default: return NULL;
    }
}

/* The row's FP16 scales as f32 (vcvtph2ps, exact), the 32 after them 0;
 * false if one is not finite. */
T5I static bool scales_f32_512(const uint8_t *s, unsigned ng, float *out)
{
    const __m256i ex = _mm256_set1_epi16(0x7c00);
    __mmask16 bad = 0;
    unsigned g = 0;
    for (; g + 16 <= ng; g += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(s + 2 * g));
        bad |= _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, ex), ex);
        _mm512_storeu_ps(out + g, _mm512_cvtph_ps(h));
    }
    if (g < ng) {
        __mmask16 m = (__mmask16)((1u << (ng - g)) - 1);
        __m256i h = _mm256_maskz_loadu_epi16(m, s + 2 * g);
        bad |= _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, ex), ex);
        _mm512_storeu_ps(out + g, _mm512_cvtph_ps(h)); /* masked-off lanes: 0 */
        g += 16;
    }
    _mm512_storeu_ps(out + g, _mm512_setzero_ps());
    _mm512_storeu_ps(out + g + 16, _mm512_setzero_ps());
    return bad == 0;
}

/* nvfp4: the row's K/16 E4M3 block scales as f32 (exact), 16 zeros after;
 * false if one is a NaN. The scales of blocks 4q..4q+3 are 4 bytes of
 * tile q (nf_layout.h). */
T5I static bool nv_scales_512(const uint8_t *sb, uint64_t K, float *out)
{
    uint64_t nq = K / 64, q = 0;
    __mmask16 bad = 0;
    const __m512i fm = _mm512_set1_epi32((int)0x87f00000);
    for (; q < nq; q += 4) {
        unsigned m = nq - q >= 4 ? 4 : (unsigned)(nq - q);
        /* built in registers (a store then a wider load would stall) */
        __m128i b = _mm_setr_epi32(ld32s(sb + q * 512), m > 1 ? ld32s(sb + (q + 1) * 512) : 0,
                                   m > 2 ? ld32s(sb + (q + 2) * 512) : 0, m > 3 ? ld32s(sb + (q + 3) * 512) : 0);
        bad |= _mm_cmpeq_epi8_mask(_mm_and_si128(b, _mm_set1_epi8(0x7f)), _mm_set1_epi8(0x7f));
        __m512i t = _mm512_slli_epi32(_mm512_cvtepu8_epi32(b), 24);
        t = _mm512_and_si512(_mm512_srai_epi32(t, 4), fm);
        _mm512_storeu_ps(out + 4 * q, _mm512_mul_ps(_mm512_castsi512_ps(t), _mm512_set1_ps(0x1p120f)));
    }
    _mm512_storeu_ps(out + 4 * q, _mm512_setzero_ps());
    return bad == 0;
}
/* nvfp4, the rows n + 32i (i = 0..3) of one tile row group (n % 128 <
 * 32, sb = the scale plane at nf_nvfp4_scale_row_part(n, K)): their K/16
 * E4M3 block scales as f32 (exact) into out[i], 16 zeros after each. The
 * 16 bytes at sb + 512 q are blocks 4q..4q+3 of row i at 4i (nf_layout.h),
 * so one load serves the four rows and each tile line is read once. Bit i
 * of the result: row i has a NaN scale. */
T5I static unsigned nv_scales4_512(const uint8_t *sb, uint64_t K, float *const out[4])
{
    uint64_t nq = K / 64;
    __mmask16 bad = 0;
    for (uint64_t q = 0; q < nq; q++) {
        __m512 f = e4m3x16_512(_mm_loadu_si128((const __m128i *)(const void *)(sb + 512 * q)), &bad);
        _mm_storeu_ps(out[0] + 4 * q, _mm512_castps512_ps128(f));
        _mm_storeu_ps(out[1] + 4 * q, _mm512_extractf32x4_ps(f, 1));
        _mm_storeu_ps(out[2] + 4 * q, _mm512_extractf32x4_ps(f, 2));
        _mm_storeu_ps(out[3] + 4 * q, _mm512_extractf32x4_ps(f, 3));
    }
    for (unsigned i = 0; i < 4; i++)
        _mm512_storeu_ps(out[i] + 4 * nq, _mm512_setzero_ps());
    return nv_bad_rows(bad);
}

/* ---- AVX2 kernels (vpmaddubsw + vpmaddwd in place of vpdpbusd) ------------------
 *
 * The same scheme on 32-byte vectors: a chunk is nv * 32 columns, a lane 4
 * bytes, 8 lanes a vector. vpmaddubsw adds two u8 * s8 products into a
 * saturating s16: with u <= 63 (every format but q8) two products stay
 * within 2 * 63 * 127 = 16002; q8 takes u = |c| (at most 128) against the
 * limbs with the sign of c (vpsignb), 2 * 128 * 127 = 32512, and no bias.
 * The pair sums of a limb's nv vectors are added in 16 bits, and vpmaddwd
 * by the limb's weight sums pairs into the int32 lane: the same exact
 * integer as vpdpbusd and the shifts (lanes256). Codes come from nibble masks and shifts; the high
 * planes' bits become bytes with vpshufb and compares. */
#define T2I __attribute__((target("avx2,fma,f16c")))

T2I NF_INLINE __m256 lanes256(const __m256i *u, const __m256i *sg, unsigned nv, const int8_t *q,
                              unsigned L, const int32_t *corr)
{
    /* per limb: the nv vectors' vpmaddubsw pair sums added in 16 bits
     * (exact: nv * 2 * u_max * 127 <= 32004 for q6, the largest; q8 has
     * nv = 1), then one vpmaddwd by the limb's weight 2^(7 (L-1-l)) (at
     * most 2 * 32004 * 2^14 < 2^31): the same integers as the shifts of
     * the per-vector sums, mod 2^32, in half the vpmaddwd */
    __m256i t = _mm256_load_si256((const __m256i *)corr);
#pragma GCC unroll 4
    for (unsigned l = 0; l < L; l++) {
        __m256i s = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (unsigned v = 0; v < nv; v++) {
            __m256i qv = _mm256_load_si256((const __m256i *)(q + (l * nv + v) * 32));
            if (sg)
                qv = _mm256_sign_epi8(qv, sg[v]);
            __m256i p = _mm256_maddubs_epi16(u[v], qv);
            s = v == 0 ? p : _mm256_add_epi16(s, p);
        }
        t = _mm256_add_epi32(t, _mm256_madd_epi16(s, _mm256_set1_epi16((short)(1 << (7 * (L - 1 - l))))));
    }
    return _mm256_cvtepi32_ps(t);
}

T2I NF_INLINE __m256i load_chunk256(const uint8_t *p, bool half)
{
    return half ? _mm256_zextsi128_si256(_mm_loadu_si128((const __m128i *)p))
                : _mm256_loadu_si256((const __m256i *)p);
}

/* Bytes j of a 32-byte vector from bit pattern positions: byte j gets bit
 * (bits of byte j of idx) of the 8 bytes of h (broadcast), 0xff or 0. */
T2I NF_INLINE __m256i bitbytes256(__m256i hb, __m256i idx, __m256i mask)
{
    __m256i r = _mm256_and_si256(_mm256_shuffle_epi8(hb, idx), mask);
    return _mm256_cmpeq_epi8(r, mask);
}

/* The code vectors of one row's chunk c, and for q8 the signs. */
T2I NF_INLINE void codes256(nf_format f, const irow *r, uint64_t c, bool half, __m256i *u,
                            __m256i *sg)
{
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    switch (f) {
    case NF_FMT_Q4_G64_FP16: {
        __m256i v = _mm256_xor_si256(load_chunk256(r->base + 32 * c, half), _mm256_set1_epi8((char)0x88));
        u[0] = _mm256_and_si256(v, m4);
        u[1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        break;
    }
    case NF_FMT_Q8_G32_FP16: {
        __m256i v = load_chunk256(r->base + 32 * c, half);
        u[0] = _mm256_abs_epi8(v);
        sg[0] = v;
        break;
    }
    case NF_FMT_Q5_G64_FP16: {
        /* lo byte j: column 2j, high bit 2j of the chunk's 64: byte j/4 of
         * the 8 high bytes, bit 2(j%4); hi: bit 2(j%4)+1. u = raw ^ 0x10. */
        __m256i v = _mm256_loadu_si256((const __m256i *)(r->base + 32 * c));
        uint64_t hq;
        memcpy(&hq, r->high + 8 * c, 8);
        __m256i hb = _mm256_set1_epi64x((long long)hq);
        const __m256i idx = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4,
                                             4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
        const __m256i mlo = _mm256_set1_epi32(0x40100401), mhi = _mm256_set1_epi32((int)0x80200802);
        const __m256i b4 = _mm256_set1_epi8(0x10);
        u[0] = _mm256_or_si256(_mm256_and_si256(v, m4),
                               _mm256_andnot_si256(bitbytes256(hb, idx, mlo), b4));
        u[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
                               _mm256_andnot_si256(bitbytes256(hb, idx, mhi), b4));
        break;
    }
    case NF_FMT_Q6_G64_FP16: {
        /* 16 high bytes; lo byte j (column 2j): bits 4j, 4j+1, byte j/2 of
         * them at bits 4(j%2); hi: 4(j%2)+2. Bit 1 of each pair flipped:
         * u = raw ^ 0x20. */
        __m256i v = _mm256_loadu_si256((const __m256i *)(r->base + 32 * c));
        __m256i H = _mm256_broadcastsi128_si256(
            _mm_xor_si128(_mm_loadu_si128((const __m128i *)(r->high + 16 * c)), _mm_set1_epi8((char)0xaa)));
        const __m256i idx = _mm256_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9,
                                             10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);
        const __m256i odd = _mm256_set1_epi16((short)0xff00), b45 = _mm256_set1_epi8(0x30);
        __m256i R = _mm256_shuffle_epi8(H, idx);
        __m256i lo = _mm256_blendv_epi8(_mm256_slli_epi16(R, 4), R, odd);
        __m256i hi = _mm256_blendv_epi8(_mm256_slli_epi16(R, 2), _mm256_srli_epi16(R, 2), odd);
        u[0] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(lo, b45));
        u[1] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_and_si256(hi, b45));
        break;
    }
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_T2_G128_FP16: {
        __m256i v = load_chunk256(r->base + 32 * c, half);
        if (f == NF_FMT_T2_G128_FP16)
            v = _mm256_xor_si256(v, _mm256_set1_epi8((char)0xaa)); /* u = raw ^ 2 */
        const __m256i m3 = _mm256_set1_epi8(3);
        u[0] = _mm256_and_si256(v, m3);
        u[1] = _mm256_and_si256(_mm256_srli_epi16(v, 2), m3);
        u[2] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m3);
        u[3] = _mm256_and_si256(_mm256_srli_epi16(v, 6), m3);
        break;
    }
    default: { /* nvfp4: 2 * e2m1 + 12 */
        const __m256i lut = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
                                             12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
        __m256i v = load_chunk256(r->base + 32 * c, half);
        u[0] = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
        u[1] = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        break;
    }
    }
}

/* The scale of each lane of chunk c (lane i: columns 4*nv*i ..). */

/* The scale of each lane of chunk c (lane i: columns 4*nv*i ..). */
T2I NF_INLINE __m256 scales256c(nf_format f, const irow *r, uint64_t c)
{
    switch (f) {
    case NF_FMT_Q2_G64_FP16: /* B 128: two groups of 4 lanes */
        return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_castpd_ps(_mm_load_sd((const double *)(const void *)(r->sc + 2 * c)))),
                                        _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
    case NF_FMT_NVFP4: /* blocks 4c .. 4c+3: lane i <- block i/2 */
        return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(r->sc + 4 * c)),
                                        _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    default: /* q4/q5/q6 (B 64 = G), q8 (B 32 = G), t2 (B 128 = G): one group */
        return _mm256_set1_ps(r->sc[c]);
    }
}

T2I NF_INLINE __m256 chunk256(nf_format f, unsigned nv, unsigned L, const xint *X, const irow *r,
                              uint64_t c, __m256 D, __m256 tot, const pfplan *pf)
{
    __m256i u[4], sg[4];
    if (!(c & 1))
        _mm_prefetch((const char *)r->base + 32 * c + pf->off0, _MM_HINT_T0);
    if ((f == NF_FMT_Q5_G64_FP16 && !(c & 7)) || (f == NF_FMT_Q6_G64_FP16 && !(c & 3)))
        _mm_prefetch((const char *)r->high + (f == NF_FMT_Q5_G64_FP16 ? 8 : 16) * c + pf->off1, _MM_HINT_T0);
    codes256(f, r, c, false, u, sg);
    __m256 F = lanes256(u, f == NF_FMT_Q8_G32_FP16 ? sg : NULL, nv, X->q + c * L * nv * 32, L,
                        X->corr + 8 * c);
    return _mm256_fmadd_ps(F, _mm256_mul_ps(D, scales256c(f, r, c)), tot);
}

/* R rows (1, 2 or 4): chunk c's 8 lanes are slots 8 * (c % 2) .. + 7. */
T2I NF_INLINE void rows256(nf_format f, const xint *X, const irow *r, unsigned R, unsigned L,
                           float *out, const pfplan *pf)
{
    const unsigned nv = f == NF_FMT_Q8_G32_FP16 ? 1
                        : (f == NF_FMT_Q2_G64_FP16 || f == NF_FMT_T2_G128_FP16) ? 4 : 2;
    __m256 a[4][2];
    for (unsigned i = 0; i < 4; i++)
        a[i][0] = a[i][1] = _mm256_setzero_ps();
    uint64_t nch = X->nch, c = 0;
    for (; c + 2 <= nch; c += 2) {
        __m256 D0 = _mm256_load_ps(X->D + 8 * c), D1 = _mm256_load_ps(X->D + 8 * c + 8);
        for (unsigned i = 0; i < R; i++) {
            a[i][0] = chunk256(f, nv, L, X, &r[i], c, D0, a[i][0], pf);
            a[i][1] = chunk256(f, nv, L, X, &r[i], c + 1, D1, a[i][1], pf);
        }
        if (f == NF_FMT_NVFP4 && pf->nvs)
            _mm_prefetch(pf->nvs + 512 * c, _MM_HINT_T0);
    }
    if (c < nch) {
        __m256 D0 = _mm256_load_ps(X->D + 8 * c);
        for (unsigned i = 0; i < R; i++)
            a[i][0] = chunk256(f, nv, L, X, &r[i], c, D0, a[i][0], pf);
    }
    for (unsigned i = 0; i < R; i++)
        out[i] = nf_tree16_256(a[i][0], a[i][1]);
}

#define ROWS256(NAME, FMT, L)                                                                      \
    T2I static unsigned NAME(const xint *X, const irow *r, unsigned R, float *out, const pfplan *pf, \
                             bool tile)                                                            \
    {                                                                                              \
        (void)tile; /* never asked: irows converts the tiles first */                              \
        if (R == 4)                                                                                \
            rows256(FMT, X, r, 4, L, out, pf);                                                     \
        else if (R == 2)                                                                           \
            rows256(FMT, X, r, 2, L, out, pf);                                                     \
        else                                                                                       \
            rows256(FMT, X, r, 1, L, out, pf);                                                     \
        return 0;                                                                                  \
    }
ROWS256(q2_256_1, NF_FMT_Q2_G64_FP16, 1)
ROWS256(q2_256_3, NF_FMT_Q2_G64_FP16, 3)
ROWS256(t2_256_1, NF_FMT_T2_G128_FP16, 1)
ROWS256(t2_256_3, NF_FMT_T2_G128_FP16, 3)
ROWS256(q4_256_1, NF_FMT_Q4_G64_FP16, 1)
ROWS256(q4_256_3, NF_FMT_Q4_G64_FP16, 3)
ROWS256(q5_256_1, NF_FMT_Q5_G64_FP16, 1)
ROWS256(q5_256_3, NF_FMT_Q5_G64_FP16, 3)
ROWS256(q6_256_1, NF_FMT_Q6_G64_FP16, 1)
ROWS256(q6_256_3, NF_FMT_Q6_G64_FP16, 3)
ROWS256(q8_256_1, NF_FMT_Q8_G32_FP16, 1)
ROWS256(q8_256_3, NF_FMT_Q8_G32_FP16, 3)
ROWS256(nv_256_1, NF_FMT_NVFP4, 1)
ROWS256(nv_256_3, NF_FMT_NVFP4, 3)

static rows_fn pick256(nf_format f, unsigned L)
{
    bool a = L == 1;
    switch (f) {
    case NF_FMT_Q2_G64_FP16: return a ? q2_256_1 : q2_256_3;
    case NF_FMT_T2_G128_FP16: return a ? t2_256_1 : t2_256_3;
    case NF_FMT_Q4_G64_FP16: return a ? q4_256_1 : q4_256_3;
    case NF_FMT_Q5_G64_FP16: return a ? q5_256_1 : q5_256_3;
    case NF_FMT_Q6_G64_FP16: return a ? q6_256_1 : q6_256_3;
    case NF_FMT_Q8_G32_FP16: return a ? q8_256_1 : q8_256_3;
    case NF_FMT_NVFP4: return a ? nv_256_1 : nv_256_3;
    default: return NULL;
    }
}

/* nv_scales4_512 on AVX2: the 16 bytes of a tile as two vectors of 8
 * (rows 0-1, rows 2-3), the same exact conversion. */
T2I NF_INLINE __m256 e4m3x8_256(__m128i b)
{
    __m256i t = _mm256_slli_epi32(_mm256_cvtepu8_epi32(b), 24);
    t = _mm256_and_si256(_mm256_srai_epi32(t, 4), _mm256_set1_epi32((int)0x87f00000));
    return _mm256_mul_ps(_mm256_castsi256_ps(t), _mm256_set1_ps(0x1p120f));
}
T2I static unsigned nv_scales4_256(const uint8_t *sb, uint64_t K, float *const out[4])
{
    uint64_t nq = K / 64;
    unsigned bad = 0;
    for (uint64_t q = 0; q < nq; q++) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(sb + 512 * q));
        bad |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(b, _mm_set1_epi8(0x7f)), _mm_set1_epi8(0x7f)));
        __m256 lo = e4m3x8_256(b), hi = e4m3x8_256(_mm_unpackhi_epi64(b, b));
        _mm_storeu_ps(out[0] + 4 * q, _mm256_castps256_ps128(lo));
        _mm_storeu_ps(out[1] + 4 * q, _mm256_extractf128_ps(lo, 1));
        _mm_storeu_ps(out[2] + 4 * q, _mm256_castps256_ps128(hi));
        _mm_storeu_ps(out[3] + 4 * q, _mm256_extractf128_ps(hi, 1));
    }
    for (unsigned i = 0; i < 4; i++)
        memset(out[i] + 4 * nq, 0, 16 * sizeof *out[i]);
    return nv_bad_rows(bad);
}

T2I static bool scales_f32_256(const uint8_t *s, unsigned ng, float *out)
{
    const __m128i ex = _mm_set1_epi16(0x7c00);
    int bad = 0;
    unsigned g = 0;
    for (; g + 8 <= ng; g += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * g));
        bad |= _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, ex), ex));
        _mm256_storeu_ps(out + g, _mm256_cvtph_ps(h));
    }
    for (; g < ng; g++) {
        uint16_t h;
        memcpy(&h, s + 2 * g, 2);
        bad |= (h & 0x7c00) == 0x7c00;
        out[g] = nf_fp16_to_f32(h);
    }
    memset(out + ng, 0, 32 * sizeof *out);
    return bad == 0;
}
#endif /* NF_INT_X86 */

/* ---- the job ------------------------------------------------------------------------- */

/* The portable nv_scales4_512. */
static unsigned nv_scales4(const uint8_t *sb, uint64_t K, float *const out[4])
{
    pthread_once(&g_e4m3_once, e4m3_init);
    unsigned bad = 0;
    for (uint64_t q = 0; q < K / 64; q++)
        for (unsigned i = 0; i < 4; i++)
            for (unsigned b = 0; b < 4; b++) {
                uint8_t v = sb[512 * q + 4 * i + b];
                bad |= (v & 0x7fu) == 0x7fu ? 1u << (4 * i + b) : 0;
                out[i][4 * q + b] = g_e4m3[v];
            }
    for (unsigned i = 0; i < 4; i++)
        memset(out[i] + K / 16, 0, 16 * sizeof *out[i]);
    return nv_bad_rows(bad);
}

static bool row_setup(const ictx *c, uint64_t n, irow *r, bool scales)
{
    r->n = n;
    uint64_t K = c->t->cols;
    if (c->t->format == NF_FMT_NVFP4) {
        r->base = c->pl[0] + n * (K / 2);
        uint32_t wb;
        memcpy(&wb, c->pl[2] + 4 * (n / c->slice), 4);
        r->wdiv = nf_f32_from_bits(wb);
        if (!(r->wdiv >= 0x1p-60f && r->wdiv <= 0x1p60f))
            return false;
        if (!scales)
            return true;
        const uint8_t *sb = c->pl[1] + nf_nvfp4_scale_row_part(n, K);
#if NF_INT_X86
        if (c->isa == NF_ISA_AVX512)
            return nv_scales_512(sb, K, r->sc);
#endif
        pthread_once(&g_e4m3_once, e4m3_init);
        unsigned bad = 0;
        for (uint64_t q = 0; q < K / 64; q++)
            for (unsigned i = 0; i < 4; i++) {
                uint8_t v = sb[512 * q + i];
                bad |= (v & 0x7fu) == 0x7fu;
                r->sc[4 * q + i] = g_e4m3[v];
            }
        bool ok = !bad;
        memset(r->sc + K / 16, 0, 16 * sizeof *r->sc);
        return ok;
    }
    r->base = c->pl[0] + n * c->rb[0];
    r->high = c->ri.high_bits ? c->pl[1] + n * c->rb[1] : NULL;
    const uint8_t *s = c->pl[2] + n * c->rb[2];
#if NF_INT_X86
    if (c->isa == NF_ISA_AVX512)
        return scales_f32_512(s, c->ng, r->sc);
    if (c->isa == NF_ISA_AVX2)
        return scales_f32_256(s, c->ng, r->sc);
#endif
    bool ok = true;
    for (unsigned g = 0; g < c->ng; g++) {
        uint16_t h = (uint16_t)(s[2 * g] | s[2 * g + 1] << 8);
        ok &= (h & 0x7c00) != 0x7c00;
        r->sc[g] = nf_fp16_to_f32(h);
    }
    memset(r->sc + c->ng, 0, 32 * sizeof *r->sc);
    return ok;
}

struct ijob {
    ictx c;
    xint *X;
    const uint16_t *x;
    nf_act act;
    uint64_t r0, r1, unit, pfd; /* pfd: prefetch distance in rows */
    float *y;
    unsigned spans;
    atomic_uint built;  /* build shares done */
    atomic_uint xfclaim, xfdone; /* xint_xf: taken, done */
    atomic_int declined;
    atomic_int err;
#if NF_INT_X86
    rows_fn fn;
#endif
    atomic_uint bclaim[NF_POOL_MAX]; /* build share i taken */
    nf_pool_span span[NF_POOL_MAX];
};

/* X's xf for the rows on the two-pass path: built with the rest on the
 * portable code; after a vector build, by the first participant that asks,
 * once a call, the others waiting for it. */
static const float *xint_xf(struct ijob *j)
{
    xint *X = j->X;
    if (!X->W)
        return X->xf;
    unsigned free_ = 0;
    if (atomic_compare_exchange_strong(&j->xfclaim, &free_, 1)) {
        if (j->act == NF_ACT_A8)
            nf_gv_a8_dequant(X->qa, X->dq, X->K, X->xf);
        else
            for (uint64_t k = 0; k < X->K; k++)
                X->xf[k] = nf_bf16_to_f32(j->x[k]);
        atomic_store(&j->xfdone, 1);
    }
    nf_pool_wait(&j->xfdone, 1);
    return X->xf;
}

/* Finish row r's value v: nvfp4's divisor, the residuals, canonical. */
static float finish(const ictx *c, const irow *r, float v)
{
    if (c->t->format == NF_FMT_NVFP4)
        v /= r->wdiv; /* the residuals' weights are divided already */
    if (c->X->nres) {
        bool any = false;
        for (unsigned p = 0; p < c->X->nres && !any; p++)
            any = c->X->rn[p] != 0;
        if (any)
            v = (float)((double)v + residual(c, r));
    }
    return nf_gv_canon(v);
}

/* Rows [a, b): groups of 4 (2, 1 at the end), a row the kernels cannot
 * take on the two-pass path. nvfp4 over whole 128-row blocks takes rows
 * n, n+32, n+64, n+96 together: their block scales share 16-byte pieces
 * of the scale tiles (nf_layout.h), so each tile line is read once. */
static int irows(struct ijob *j, uint64_t a, uint64_t b, float *scb)
{
    const ictx *c = &j->c;
    irow r[4];
    memset(r, 0, sizeof r);
    uint64_t stride = (uint64_t)(c->t->format == NF_FMT_NVFP4 ? c->t->cols / 16 : c->ng) + 64;
    for (unsigned i = 0; i < 4; i++)
        r[i].sc = scb + i * stride;
    bool tiles = c->t->format == NF_FMT_NVFP4 && a % 128 == 0 && (b - a) % 128 == 0;
    bool res = false; /* residuals: finish reads r->sc */
    for (unsigned p = 0; p < c->X->nres; p++)
        res |= c->X->rn[p] != 0;
    for (uint64_t k = 0; k < b - a;) {
        unsigned R = tiles ? 4 : b - a - k >= 4 ? 4 : b - a - k >= 2 ? 2 : 1;
        uint64_t rows[4];
        for (unsigned i = 0; i < R; i++)
            rows[i] = tiles ? a + (k + i) / 128 * 128 + (k % 128) / 4 + 32 * i : a + k + i;
        bool ok[4], all = true;
        for (unsigned i = 0; i < R; i++)
            all &= ok[i] = row_setup(c, rows[i], &r[i], !tiles);
        float v[4] = {0, 0, 0, 0};
        pfplan pf;
        /* pfd rows is pfd / 4 groups ahead; a tile row group's next groups
         * are its rows + 1, + 2, .. (4 rows ahead was 4 groups: its lines
         * left L1 before they were read, 1.18-1.31x at 1 thread) */
        pf_plan(c, rows[0], tiles ? (j->pfd + 3) / 4 : j->pfd, R, &pf);
        /* tiles: the four rows' block scales straight from their tiles in the
         * AVX-512 kernel, or first from one pass over them */
        const uint8_t *sb = tiles ? c->pl[1] + nf_nvfp4_scale_row_part(rows[0], c->t->cols) : NULL;
        bool fused = false;
#if NF_INT_X86
        fused = tiles && all && !res && c->isa == NF_ISA_AVX512;
        if (fused) {
            r[0].ts = sb;
            unsigned bad = j->fn(c->X, r, 4, v, &pf, true);
            for (unsigned i = 0; i < 4; i++)
                if (bad >> i & 1u)
                    ok[i] = false;
        }
#endif
        if (tiles && !fused) {
            float *const out[4] = {r[0].sc, r[1].sc, r[2].sc, r[3].sc};
            unsigned bad;
#if NF_INT_X86
            if (c->isa == NF_ISA_AVX512)
                bad = nv_scales4_512(sb, c->t->cols, out);
            else if (c->isa == NF_ISA_AVX2)
                bad = nv_scales4_256(sb, c->t->cols, out);
            else
#endif
                bad = nv_scales4(sb, c->t->cols, out);
            for (unsigned i = 0; i < 4; i++)
                if (bad >> i & 1u)
                    all = ok[i] = false;
        }
#if NF_INT_X86
        if (!fused && c->isa != NF_ISA_SCALAR) {
            if (all) {
                j->fn(c->X, r, R, v, &pf, false);
            } else {
                for (unsigned i = 0; i < R; i++)
                    if (ok[i])
                        j->fn(c->X, &r[i], 1, &v[i], &pf, false);
            }
        }
#endif
        if (!fused && (!NF_INT_X86 || c->isa == NF_ISA_SCALAR))
            for (unsigned i = 0; i < R; i++)
                if (ok[i])
                    v[i] = row_portable(c, &r[i]);
        for (unsigned i = 0; i < R; i++) {
            if (ok[i]) {
                j->y[rows[i] - j->r0] = finish(c, &r[i], v[i]);
                continue;
            }
            int rc = nf_gv_rows_f32(c->t, c->obj, c->obj_bytes, rows[i], rows[i] + 1, xint_xf(j),
                                    j->y, j->r0, c->isa);
            if (rc)
                return rc;
        }
        k += R;
    }
    return 0;
}

static void ipart(void *arg, unsigned idx, unsigned n)
{
    struct ijob *j = arg;
    xint *X = j->X;
    /* the build: n shares of the chunks, each with its own list, each
     * built by whoever claims it first (its own participant first): a
     * worker that never starts leaves its share to the others */
    for (unsigned i = 0; i < n; i++) {
        unsigned p = (idx + i) % n, free_ = 0;
        if (!atomic_compare_exchange_strong(&j->bclaim[p], &free_, 1))
            continue;
        uint64_t c0 = X->nch * p / n, c1 = X->nch * (p + 1) / n;
        if (p == 0)
            X->nres = n; /* the lists this job writes (n may be less than asked) */
        build_range(X, j->x, j->act, &j->c.F, c0, c1, p);
        atomic_fetch_add(&j->built, 1);
    }
    nf_pool_wait(&j->built, n);
    uint64_t tot = 0;
    for (unsigned p = 0; p < n; p++)
        tot += X->rn[p];
    if (tot > X->maxr) {
        if (idx == 0)
            atomic_store(&j->declined, 1);
        return;
    }
    uint64_t stride = (uint64_t)(j->c.t->format == NF_FMT_NVFP4 ? j->c.t->cols / 16 : j->c.ng) + 64;
    float *scb = nf_pool_scratch(1, 4 * stride * sizeof *scb);
    if (!scb) {
        atomic_store(&j->err, NF_CODEC_ENOMEM);
        return;
    }
    for (;;) {
        uint64_t u = nf_pool_span_take(j->span, j->spans, idx);
        if (u == UINT64_MAX || atomic_load_explicit(&j->err, memory_order_relaxed))
            break;
        uint64_t a = j->r0 + u * j->unit, b = a + j->unit < j->r1 ? a + j->unit : j->r1;
        int rc = irows(j, a, b, scb);
        if (rc) {
            atomic_store(&j->err, rc);
            break;
        }
    }
}

int nf_gemv_int_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, nf_act act, float *y,
                     unsigned threads, nf_isa isa)
{
    if (!nf_gemv_int_supported(t, isa))
        return 1;
    if (!obj || !x || !y)
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    if (r0 == r1)
        return 0;
    struct ijob *j = nf_pool_scratch(2, sizeof *j);
    if (!j)
        return NF_CODEC_ENOMEM;
    memset(j, 0, offsetof(struct ijob, span));
    ictx *c = &j->c;
    fmt_of(t->format, t->layout, &c->F);
    unsigned W = isa == NF_ISA_AVX512 ? 64 : isa == NF_ISA_AVX2 ? 32 : 0;
    if (W == 32 && t->format == NF_FMT_Q8_G32_FP16)
        c->F.bias = 0; /* |c| against the limbs with c's sign */
    c->t = t;
    c->obj = obj;
    c->obj_bytes = obj_bytes;
    c->isa = isa;
    const nf_plane *p = t->enc.plane;
    uint64_t Kc, row_bytes;
    if (t->layout == NF_LAY_ROW_SPLIT_K128_V1) {
        c->ri = nf_rowsplit_info_of(t->format);
        unsigned last = t->enc.nplanes - 1;
        c->pl[0] = obj + p[0].offset;
        c->rb[0] = p[0].row_bytes;
        if (c->ri.high_bits) {
            c->pl[1] = obj + p[1].offset;
            c->rb[1] = p[1].row_bytes;
        }
        c->pl[2] = obj + p[last].offset;
        c->rb[2] = p[last].row_bytes;
        c->ng = (unsigned)(p[last].row_bytes / 2);
        Kc = p[0].row_bytes * 8 / c->ri.base_bits;
        row_bytes = c->rb[0] + c->rb[1] + c->rb[2];
    } else {
        for (unsigned i = 0; i < 3; i++)
            c->pl[i] = obj + p[i].offset;
        c->rb[0] = t->cols / 2;
        c->slice = t->rows / t->divisors;
        Kc = t->cols;
        row_bytes = t->cols / 2 + t->cols / 16;
    }
    unsigned n = nf_gv_participants((r1 - r0) * row_bytes, threads);
    xint X;
    int rc = xint_alloc(&X, t->cols, Kc, act, &c->F, W, n);
    if (rc)
        return rc;
    c->X = &X;
    j->X = &X;
    j->x = x;
    j->act = act;
#if NF_INT_X86
    if (W)
        j->fn = W == 64 ? pick512(t->format, X.L) : pick256(t->format, X.L);
#endif
    j->r0 = r0;
    j->r1 = r1;
    j->y = y;
    /* prefetch the group after next, at least ~8 KiB ahead */
    uint64_t grp = 4 * row_bytes;
    j->pfd = 4 * (grp >= 8192 ? 1 : (8192 + grp - 1) / grp);
    j->unit = nf_gv_unit_rows(r1 - r0, row_bytes, n);
    if (t->format == NF_FMT_NVFP4 && r0 % 128 == 0 && (r1 - r0) % 128 == 0)
        j->unit = (j->unit + 127) / 128 * 128; /* whole 128-row blocks: irows' scale tiles */
    j->spans = n;
    nf_pool_span_init(j->span, n, (r1 - r0 + j->unit - 1) / j->unit);
    nf_pool_run_opt(ipart, j, n);
    if (atomic_load(&j->declined))
        return 1;
    return atomic_load(&j->err);
}
