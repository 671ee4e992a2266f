/* nf_qsearch.c — the arithmetic of the q-format scale search (nf_qsearch.h,
 * DESIGN 7.4): the scalar definition, and AVX2 / AVX-512 versions that do
 * the same IEEE operations in the same order in every lane (no FMA, no
 * reassociation), so that all three give the same bits. The AVX-512 fast
 * evaluation runs two candidates at once (lanes 0-7 and 8-15).
 */
#include "nf_qsearch.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "nf_fp.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_QS_X86 1
#include <immintrin.h>
#else
#define NF_QS_X86 0
#endif

#define MAGIC23 0x1.8p23f
#define MAGIC52 0x1.8p52

static double combine8f(const float *a)
{
    return (((double)a[0] + a[4]) + ((double)a[2] + a[6])) +
           (((double)a[1] + a[5]) + ((double)a[3] + a[7]));
}

static double combine8d(const double *a)
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* ---- scalar: the definition --------------------------------------------------- */

static double fast_scalar(const float *x, unsigned L, float lo, float hi, uint16_t sb,
                          int *codes)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    float acc[8] = {0};
    for (unsigned i = 0; i < L; i += 8) {
        for (unsigned j = 0; j < 8; j++) {
            float t = x[i + j] * inv;
            t = t < lo ? lo : t;
            t = t > hi ? hi : t;
            float c = (t + MAGIC23) - MAGIC23; /* nearest even, |t| <= 127 */
            float dec = c * s;
            float d = x[i + j] - dec;
            float p2 = d * d;
            acc[j] += p2;
            if (codes)
                codes[i + j] = (int)c;
        }
    }
    return combine8f(acc);
}

static inline double rne_d(double t)
{
    return (t + MAGIC52) - MAGIC52;
}

/* One element of the exact evaluation: the code of x against s (inv =
 * 1/s in f64), whether it saturates. */
static inline int exact_code(float x, float s, double inv, int qmin, int qmax, bool *sat)
{
    double t = (double)x * inv;
    double r = rne_d(t);
    if (fabs(fabs(t - r) - 0.5) < 0x1p-30) { /* at or near a half-integer: divide */
        t = (double)x / (double)s;
        r = rne_d(t);
    }
    /* clamped: the nearest-even code is outside the range (at qmax + 1/2
     * the tie goes to qmax + 1 when qmax is odd, to qmax when it is even) */
    *sat = r > qmax || r < qmin;
    return r > qmax ? qmax : r < qmin ? qmin : (int)r;
}

static double exact_scalar(const float *x, unsigned n, int qmin, int qmax, uint16_t sb,
                           int *codes, uint64_t *sat)
{
    float s = nf_fp16_to_f32(sb);
    double inv = s != 0.0f ? 1.0 / (double)s : 0.0;
    double acc[8] = {0};
    uint64_t ns = 0;
    for (unsigned i = 0; i < n; i++) {
        int c = 0;
        if (s != 0.0f) {
            bool st;
            c = exact_code(x[i], s, inv, qmin, qmax, &st);
            ns += st;
        }
        codes[i] = c;
        double d = (double)x[i] - (double)((float)c * s);
        acc[i % 8] += d * d;
    }
    if (sat)
        *sat += ns;
    return combine8d(acc);
}

static void refit_scalar(const float *x, unsigned L, float lo, float hi, uint16_t sb,
                         double *cx, int64_t *cc)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    double lx[8] = {0};
    int64_t c2 = 0;
    for (unsigned i = 0; i < L; i += 8)
        for (unsigned j = 0; j < 8; j++) {
            float t = x[i + j] * inv;
            t = t < lo ? lo : t;
            t = t > hi ? hi : t;
            float c = (t + MAGIC23) - MAGIC23;
            lx[j] += (double)c * x[i + j];
            c2 += (int64_t)c * (int64_t)c;
        }
    *cx = combine8d(lx);
    *cc = c2;
}

static bool finite_scalar(const float *x, uint64_t K)
{
    bool ok = true;
    for (uint64_t k = 0; k < K; k++)
        ok &= isfinite(x[k]) != 0;
    return ok;
}

static float amax_scalar(const float *x, unsigned n, float *first)
{
    float a = 0.0f;
    for (unsigned i = 0; i < n; i++)
        a = fabsf(x[i]) > a ? fabsf(x[i]) : a;
    *first = 0.0f;
    for (unsigned i = 0; a != 0.0f && i < n; i++)
        if (fabsf(x[i]) == a) {
            *first = x[i];
            break;
        }
    return a;
}

/* ---- AVX2 ------------------------------------------------------------------------ */

#if NF_QS_X86
#define TQ2 __attribute__((target("avx2,f16c")))
#define TQ5 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,f16c")))
#define NF_QS_INLINE static inline __attribute__((always_inline))

TQ2 static double fast_avx2(const float *x, unsigned L, float lo, float hi, uint16_t sb,
                            int *codes)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    const __m256 S = _mm256_set1_ps(s), I = _mm256_set1_ps(inv), LO = _mm256_set1_ps(lo),
                 HI = _mm256_set1_ps(hi), M = _mm256_set1_ps(MAGIC23);
    __m256 acc = _mm256_setzero_ps();
    for (unsigned i = 0; i < L; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(xv, I), LO), HI);
        __m256 c = _mm256_sub_ps(_mm256_add_ps(t, M), M);
        __m256 d = _mm256_sub_ps(xv, _mm256_mul_ps(c, S));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, d));
        if (codes)
            _mm256_storeu_si256((__m256i *)(codes + i), _mm256_cvtps_epi32(c));
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    return combine8f(a);
}

TQ2 static void refit_avx2(const float *x, unsigned L, float lo, float hi, uint16_t sb,
                           double *cx, int64_t *cc)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    const __m256 I = _mm256_set1_ps(inv), LO = _mm256_set1_ps(lo), HI = _mm256_set1_ps(hi),
                 M = _mm256_set1_ps(MAGIC23);
    __m256d a0 = _mm256_setzero_pd(), a1 = a0;
    __m256i c2 = _mm256_setzero_si256();
    for (unsigned i = 0; i < L; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(xv, I), LO), HI);
        __m256 c = _mm256_sub_ps(_mm256_add_ps(t, M), M);
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(c)),
                                             _mm256_cvtps_pd(_mm256_castps256_ps128(xv))));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(c, 1)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1))));
        __m256i ci = _mm256_cvtps_epi32(c);
        c2 = _mm256_add_epi32(c2, _mm256_mullo_epi32(ci, ci)); /* <= 8 * 128 * 128^2 / 8 per lane */
    }
    double l[8];
    _mm256_storeu_pd(l, a0);
    _mm256_storeu_pd(l + 4, a1);
    *cx = combine8d(l);
    int32_t q[8];
    _mm256_storeu_si256((__m256i *)q, c2);
    int64_t t = 0;
    for (int j = 0; j < 8; j++)
        t += q[j];
    *cc = t;
}

TQ2 static void fast_refit_avx2(const float *x, unsigned L, float lo, float hi, uint16_t sb,
                                double *err, double *cx, int64_t *cc)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    const __m256 S = _mm256_set1_ps(s), I = _mm256_set1_ps(inv), LO = _mm256_set1_ps(lo),
                 HI = _mm256_set1_ps(hi), M = _mm256_set1_ps(MAGIC23);
    __m256 acc = _mm256_setzero_ps();
    __m256d a0 = _mm256_setzero_pd(), a1 = a0;
    __m256i c2 = _mm256_setzero_si256();
    for (unsigned i = 0; i < L; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(xv, I), LO), HI);
        __m256 c = _mm256_sub_ps(_mm256_add_ps(t, M), M);
        __m256 d = _mm256_sub_ps(xv, _mm256_mul_ps(c, S));
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, d));
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(c)),
                                             _mm256_cvtps_pd(_mm256_castps256_ps128(xv))));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(c, 1)),
                                             _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1))));
        __m256i ci = _mm256_cvtps_epi32(c);
        c2 = _mm256_add_epi32(c2, _mm256_mullo_epi32(ci, ci));
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    *err = combine8f(a);
    double l[8];
    _mm256_storeu_pd(l, a0);
    _mm256_storeu_pd(l + 4, a1);
    *cx = combine8d(l);
    int32_t q[8];
    _mm256_storeu_si256((__m256i *)q, c2);
    int64_t tq = 0;
    for (int j = 0; j < 8; j++)
        tq += q[j];
    *cc = tq;
}

TQ2 static bool finite_avx2(const float *x, uint64_t K)
{
    const __m256i ex = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    uint64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(x + k));
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(v, ex), ex));
    }
    bool ok = _mm256_testz_si256(bad, bad);
    for (; k < K; k++)
        ok &= isfinite(x[k]) != 0;
    return ok;
}

TQ2 static void sq8_avx2(const float *x, unsigned n, double *l)
{
    __m256d a0 = _mm256_loadu_pd(l), a1 = _mm256_loadu_pd(l + 4);
    unsigned i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1));
        a0 = _mm256_add_pd(a0, _mm256_mul_pd(lo, lo));
        a1 = _mm256_add_pd(a1, _mm256_mul_pd(hi, hi));
    }
    _mm256_storeu_pd(l, a0);
    _mm256_storeu_pd(l + 4, a1);
    for (; i < n; i++)
        l[i % 8] += (double)x[i] * x[i];
}

TQ2 static float amax_avx2(const float *x, unsigned n, float *first)
{
    const __m256 ab = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    unsigned i = 0;
    for (; i + 8 <= n; i += 8)
        m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(x + i), ab));
    float l[8], a = 0.0f;
    _mm256_storeu_ps(l, m);
    for (int j = 0; j < 8; j++)
        a = l[j] > a ? l[j] : a;
    for (; i < n; i++)
        a = fabsf(x[i]) > a ? fabsf(x[i]) : a;
    *first = 0.0f;
    if (a == 0.0f)
        return a;
    const __m256 A = _mm256_set1_ps(a);
    unsigned k = 0;
    for (; k + 8 <= n; k += 8) {
        unsigned mk = (unsigned)_mm256_movemask_ps(
            _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), ab), A, _CMP_EQ_OQ));
        if (mk) {
            *first = x[k + (unsigned)__builtin_ctz(mk)];
            return a;
        }
    }
    for (; k < n; k++)
        if (fabsf(x[k]) == a) {
            *first = x[k];
            break;
        }
    return a;
}

/* Exact, eight f64 lanes in two vectors of four; lanes near a
 * half-integer are redone in scalar code. */
TQ2 static double exact_avx2(const float *x, unsigned n, int qmin, int qmax, uint16_t sb,
                             int *codes, uint64_t *sat)
{
    float s = nf_fp16_to_f32(sb);
    if (s == 0.0f)
        return exact_scalar(x, n, qmin, qmax, sb, codes, sat);
    double inv = 1.0 / (double)s;
    const __m256d INV = _mm256_set1_pd(inv), M = _mm256_set1_pd(MAGIC52),
                  LO = _mm256_set1_pd((double)qmin), HI = _mm256_set1_pd((double)qmax),
                  H = _mm256_set1_pd(0.5), EPS = _mm256_set1_pd(0x1p-30),
                  AB = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
    const __m128 S = _mm_set1_ps(s);
    __m256d acc[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    uint64_t ns = 0;
    unsigned i = 0;
    for (; i + 8 <= n; i += 8) {
        for (unsigned h = 0; h < 2; h++) {
            __m128 xf = _mm_loadu_ps(x + i + 4 * h);
            __m256d xd = _mm256_cvtps_pd(xf);
            __m256d t = _mm256_mul_pd(xd, INV);
            __m256d r = _mm256_sub_pd(_mm256_add_pd(t, M), M);
            __m256d near = _mm256_cmp_pd(
                _mm256_and_pd(_mm256_sub_pd(_mm256_and_pd(_mm256_sub_pd(t, r), AB), H), AB), EPS,
                _CMP_LT_OQ);
            if (_mm256_movemask_pd(near)) { /* rare: the division */
                double tt[4], rr[4];
                _mm256_storeu_pd(tt, t);
                _mm256_storeu_pd(rr, r);
                for (unsigned l = 0; l < 4; l++)
                    if (fabs(fabs(tt[l] - rr[l]) - 0.5) < 0x1p-30) {
                        tt[l] = (double)x[i + 4 * h + l] / (double)s;
                        rr[l] = rne_d(tt[l]);
                    }
                t = _mm256_loadu_pd(tt);
                r = _mm256_loadu_pd(rr);
            }
            __m256d satm = _mm256_or_pd(_mm256_cmp_pd(r, HI, _CMP_GT_OQ),
                                        _mm256_cmp_pd(r, LO, _CMP_LT_OQ));
            ns += (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_pd(satm));
            __m256d c = _mm256_min_pd(_mm256_max_pd(r, LO), HI);
            __m128 cf = _mm256_cvtpd_ps(c);
            __m256d dec = _mm256_cvtps_pd(_mm_mul_ps(cf, S));
            __m256d d = _mm256_sub_pd(xd, dec);
            acc[h] = _mm256_add_pd(acc[h], _mm256_mul_pd(d, d));
            _mm_storeu_si128((__m128i *)(codes + i + 4 * h), _mm256_cvtpd_epi32(c));
        }
    }
    double a[8];
    _mm256_storeu_pd(a, acc[0]);
    _mm256_storeu_pd(a + 4, acc[1]);
    for (; i < n; i++) { /* the tail, lane i % 8 */
        bool st;
        int c = exact_code(x[i], s, inv, qmin, qmax, &st);
        ns += st;
        codes[i] = c;
        double d = (double)x[i] - (double)((float)c * s);
        a[i % 8] += d * d;
    }
    if (sat)
        *sat += ns;
    return combine8d(a);
}

/* ---- AVX-512 -------------------------------------------------------------------- */

/* combine8f of four candidates at once: a holds candidates 0 (lanes 0-7)
 * and 1 (8-15), b candidates 2 and 3; out[0..4) their errors, each formed
 * by the same f64 additions as combine8f. */
TQ5 NF_QS_INLINE void combine4_512(__m512 a, __m512 b, double *out)
{
    __m512d a0 = _mm512_cvtps_pd(_mm512_castps512_ps256(a)), a1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(a, 1));
    __m512d b0 = _mm512_cvtps_pd(_mm512_castps512_ps256(b)), b1 = _mm512_cvtps_pd(_mm512_extractf32x8_ps(b, 1));
    /* per candidate, lanes j and j + 4: (l0 + l4, l1 + l5, l2 + l6, l3 + l7) */
    __m512d ta = _mm512_add_pd(_mm512_shuffle_f64x2(a0, a1, 0x44), _mm512_shuffle_f64x2(a0, a1, 0xee));
    __m512d tb = _mm512_add_pd(_mm512_shuffle_f64x2(b0, b1, 0x44), _mm512_shuffle_f64x2(b0, b1, 0xee));
    /* (l0 + l4) + (l2 + l6) and (l1 + l5) + (l3 + l7), candidates 0-3 in pairs of lanes */
    const __m512i P02 = _mm512_set_epi64(13, 12, 9, 8, 5, 4, 1, 0), P13 = _mm512_set_epi64(15, 14, 11, 10, 7, 6, 3, 2);
    __m512d u = _mm512_add_pd(_mm512_permutex2var_pd(ta, P02, tb), _mm512_permutex2var_pd(ta, P13, tb));
    /* the two halves of each candidate added: lanes 0, 2, 4, 6 + 1, 3, 5, 7 */
    const __m512i E = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
    __m512d v = _mm512_permutexvar_pd(E, u);
    _mm256_storeu_pd(out, _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1)));
}

/* One step of the ranking error for a pair of candidates (S, I: their
 * scales and reciprocals in lanes 0-7 and 8-15), as fast_scalar:
 * t = clamp(x * inv), c = (t + 1.5*2^23) - 1.5*2^23, acc += (x - c*s)^2. */
TQ5 NF_QS_INLINE __m512 fast_step512(__m512 acc, __m512 X, __m512 S, __m512 I, __m512 LO, __m512 HI,
                                     __m512 M)
{
    __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(X, I), LO), HI);
    __m512 q = _mm512_sub_ps(_mm512_add_ps(t, M), M);
    __m512 d = _mm512_sub_ps(X, _mm512_mul_ps(q, S));
    return _mm512_add_ps(acc, _mm512_mul_ps(d, d));
}

/* The candidates four at a time, in two pairs (lanes 0-7 one, 8-15 the
 * next) over x held in registers; the scales and their reciprocals
 * converted and divided 16 at a time (the same IEEE division as the scalar
 * 1.0f / s). A missing fourth (or third) candidate repeats the last;
 * where only two are left, one pair is evaluated. */
TQ5 NF_QS_INLINE void fast_n512_(const float *x, unsigned L, float lo, float hi,
                                 const uint16_t *sb, unsigned nc, double *err)
{
    __m512 SV[2], IV[2];
    for (unsigned c = 0; c < 32; c += 16) { /* nc <= 32; the second vector repeats the first if unused */
        if (c >= nc) {
            SV[1] = SV[0];
            IV[1] = IV[0];
            break;
        }
        unsigned m = nc - c < 16 ? nc - c : 16;
        __m512 s = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16((__mmask16)((1u << m) - 1), sb + c));
        __mmask16 nz = _mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        SV[c / 16] = s;
        IV[c / 16] = _mm512_maskz_div_ps(nz, _mm512_set1_ps(1.0f), s);
    }
    const __m512 LO = _mm512_set1_ps(lo), HI = _mm512_set1_ps(hi), M = _mm512_set1_ps(MAGIC23);
    __m512 X[16];
    unsigned nx = L / 8;
    for (unsigned k = 0; k < nx; k++) {
        __m256 h = _mm256_loadu_ps(x + 8 * k);
        X[k] = _mm512_insertf32x8(_mm512_castps256_ps512(h), h, 1);
    }
    /* lanes 0-7 candidate c, 8-15 candidate c + 1 (the last one where c + 1
     * is past the end), taken from the registers by index */
    const __m512i LANE = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    for (unsigned c = 0; c < nc; c += 4) {
        __m512i ia = _mm512_min_epu32(_mm512_add_epi32(LANE, _mm512_set1_epi32((int)c)), _mm512_set1_epi32((int)nc - 1));
        __m512i ib = _mm512_min_epu32(_mm512_add_epi32(LANE, _mm512_set1_epi32((int)c + 2)), _mm512_set1_epi32((int)nc - 1));
        /* indexes 0-31 across the two vectors */
        __m512 Sa = _mm512_permutex2var_ps(SV[0], ia, SV[1]), Ia = _mm512_permutex2var_ps(IV[0], ia, IV[1]);
        __m512 Sb = _mm512_permutex2var_ps(SV[0], ib, SV[1]), Ib = _mm512_permutex2var_ps(IV[0], ib, IV[1]);
        __m512 acca = _mm512_setzero_ps(), accb = _mm512_setzero_ps();
        if (nc - c > 2) {
            for (unsigned k = 0; k < nx; k++) {
                acca = fast_step512(acca, X[k], Sa, Ia, LO, HI, M);
                accb = fast_step512(accb, X[k], Sb, Ib, LO, HI, M);
            }
        } else { /* one pair left */
            for (unsigned k = 0; k < nx; k++)
                acca = fast_step512(acca, X[k], Sa, Ia, LO, HI, M);
        }
        double e[4];
        combine4_512(acca, accb, e);
        for (unsigned j = 0; j < 4 && c + j < nc; j++)
            err[c + j] = e[j];
    }
}

/* fast_n512_ for the group sizes of the formats (unrolled), and any L */
TQ5 static void fast_n512(const float *x, unsigned L, float lo, float hi, const uint16_t *sb,
                          unsigned nc, double *err)
{
    switch (L) {
    case 32: fast_n512_(x, 32, lo, hi, sb, nc, err); break;
    case 64: fast_n512_(x, 64, lo, hi, sb, nc, err); break;
    case 128: fast_n512_(x, 128, lo, hi, sb, nc, err); break;
    default: fast_n512_(x, L, lo, hi, sb, nc, err); break;
    }
}

/* Eight elements of the exact evaluation in f64 (the definition's
 * arithmetic: t = x * (1/s) in f64, x/s where t is near a half-integer). */
TQ5 NF_QS_INLINE void exact8_512(const float *x, float s, double inv, int qmin, int qmax,
                                 int *codes, __m512d *acc, uint64_t *ns)
{
    const __m512d INV = _mm512_set1_pd(inv), M = _mm512_set1_pd(MAGIC52),
                  LO = _mm512_set1_pd((double)qmin), HI = _mm512_set1_pd((double)qmax),
                  H = _mm512_set1_pd(0.5), EPS = _mm512_set1_pd(0x1p-30);
    __m512d xd = _mm512_cvtps_pd(_mm256_loadu_ps(x));
    __m512d t = _mm512_mul_pd(xd, INV);
    __m512d r = _mm512_sub_pd(_mm512_add_pd(t, M), M);
    __mmask8 near = _mm512_cmp_pd_mask(
        _mm512_abs_pd(_mm512_sub_pd(_mm512_abs_pd(_mm512_sub_pd(t, r)), H)), EPS, _CMP_LT_OQ);
    if (near) {
        double tt[8], rr[8];
        _mm512_storeu_pd(tt, t);
        _mm512_storeu_pd(rr, r);
        for (unsigned l = 0; l < 8; l++)
            if (near >> l & 1) {
                tt[l] = (double)x[l] / (double)s;
                rr[l] = rne_d(tt[l]);
            }
        r = _mm512_loadu_pd(rr);
    }
    __mmask8 satm = _mm512_cmp_pd_mask(r, HI, _CMP_GT_OQ) | _mm512_cmp_pd_mask(r, LO, _CMP_LT_OQ);
    *ns += (uint64_t)__builtin_popcount(satm);
    __m512d c = _mm512_min_pd(_mm512_max_pd(r, LO), HI);
    __m512d dec = _mm512_cvtps_pd(_mm256_mul_ps(_mm512_cvtpd_ps(c), _mm256_set1_ps(s)));
    __m512d d = _mm512_sub_pd(xd, dec);
    *acc = _mm512_add_pd(*acc, _mm512_mul_pd(d, d));
    _mm256_storeu_si256((__m256i *)codes, _mm512_cvtpd_epi32(c));
}

/* The exact evaluation, 16 elements a step: the codes from t = x * (1/s)
 * in f32, which are those of the quotient x/s wherever |t| <= 256 and t is
 * at least 2^-13 from a half-integer (t is within |x/s| * 2^-23 <= 2^-15
 * of x/s, so both round to the same integer); any other step, about one in
 * 250, goes through exact8_512. The error sum is the definition's: d = x -
 * f32(c * s) (exact where |c| < 2^13: s has 11 significant bits) in f64,
 * d*d added to lane i % 8. */
TQ5 static double exact_avx512(const float *x, unsigned n, int qmin, int qmax, uint16_t sb,
                               int *codes, uint64_t *sat)
{
    float s = nf_fp16_to_f32(sb);
    if (s == 0.0f)
        return exact_scalar(x, n, qmin, qmax, sb, codes, sat);
    double inv = 1.0 / (double)s;
    const __m512 INV = _mm512_set1_ps(1.0f / s), M = _mm512_set1_ps(MAGIC23),
                 LO = _mm512_set1_ps((float)qmin), HI = _mm512_set1_ps((float)qmax),
                 S = _mm512_set1_ps(s), NEAR = _mm512_set1_ps(0.5f - 0x1p-13f),
                 TMAX = _mm512_set1_ps(256.0f);
    __m512d acc = _mm512_setzero_pd();
    uint64_t ns = 0;
    unsigned i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        __m512 t = _mm512_mul_ps(xv, INV);
        __m512 r = _mm512_sub_ps(_mm512_add_ps(t, M), M);
        __mmask16 near = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, r)), NEAR, _CMP_NLE_UQ) |
                         _mm512_cmp_ps_mask(_mm512_abs_ps(t), TMAX, _CMP_NLE_UQ);
        if (near) {
            exact8_512(x + i, s, inv, qmin, qmax, codes + i, &acc, &ns);
            exact8_512(x + i + 8, s, inv, qmin, qmax, codes + i + 8, &acc, &ns);
            continue;
        }
        __mmask16 satm = _mm512_cmp_ps_mask(r, HI, _CMP_GT_OQ) | _mm512_cmp_ps_mask(r, LO, _CMP_LT_OQ);
        ns += (uint64_t)__builtin_popcount(satm);
        __m512 c = _mm512_min_ps(_mm512_max_ps(r, LO), HI);
        __m512 dec = _mm512_mul_ps(c, S);
        __m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(xv)),
                                   _mm512_cvtps_pd(_mm512_castps512_ps256(dec)));
        __m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(xv, 1)),
                                   _mm512_cvtps_pd(_mm512_extractf32x8_ps(dec, 1)));
        acc = _mm512_add_pd(acc, _mm512_mul_pd(d0, d0));
        acc = _mm512_add_pd(acc, _mm512_mul_pd(d1, d1));
        _mm512_storeu_si512((void *)(codes + i), _mm512_cvtps_epi32(c));
    }
    for (; i + 8 <= n; i += 8)
        exact8_512(x + i, s, inv, qmin, qmax, codes + i, &acc, &ns);
    double a[8];
    _mm512_storeu_pd(a, acc);
    for (; i < n; i++) {
        bool st;
        int c = exact_code(x[i], s, inv, qmin, qmax, &st);
        ns += st;
        codes[i] = c;
        double d = (double)x[i] - (double)((float)c * s);
        a[i % 8] += d * d;
    }
    if (sat)
        *sat += ns;
    return combine8d(a);
}

/* refit, fast_refit and amax on AVX-512: 16 elements a step, taken as two
 * halves of 8 in order, so each of the eight lane sums sees its elements
 * in the scalar order. */
TQ5 NF_QS_INLINE void refit_step512(__m512 xv, __m512 I, __m512 LO, __m512 HI, __m512 M,
                                    __m512 *c, __m512d *lx, __m512 *c2)
{
    __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(xv, I), LO), HI);
    *c = _mm512_sub_ps(_mm512_add_ps(t, M), M);
    *lx = _mm512_add_pd(*lx, _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(*c)),
                                           _mm512_cvtps_pd(_mm512_castps512_ps256(xv))));
    *lx = _mm512_add_pd(*lx, _mm512_mul_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(*c, 1)),
                                           _mm512_cvtps_pd(_mm512_extractf32x8_ps(xv, 1))));
    /* c*c summed in f32 is exact: integers, at most 128 * 127^2 < 2^24 */
    *c2 = _mm512_add_ps(*c2, _mm512_mul_ps(*c, *c));
}

TQ5 static void refit_512(const float *x, unsigned L, float lo, float hi, uint16_t sb, double *err,
                          double *cx, int64_t *cc)
{
    float s = nf_fp16_to_f32(sb);
    float inv = s != 0.0f ? 1.0f / s : 0.0f;
    const __m512 S = _mm512_set1_ps(s), I = _mm512_set1_ps(inv), LO = _mm512_set1_ps(lo),
                 HI = _mm512_set1_ps(hi), M = _mm512_set1_ps(MAGIC23);
    __m256 acc = _mm256_setzero_ps();
    __m512d lx = _mm512_setzero_pd();
    __m512 c2 = _mm512_setzero_ps();
    unsigned i = 0;
    for (; i + 16 <= L; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i), c;
        refit_step512(xv, I, LO, HI, M, &c, &lx, &c2);
        if (err) {
            __m512 d = _mm512_sub_ps(xv, _mm512_mul_ps(c, S));
            __m512 d2 = _mm512_mul_ps(d, d);
            acc = _mm256_add_ps(acc, _mm512_castps512_ps256(d2));
            acc = _mm256_add_ps(acc, _mm512_extractf32x8_ps(d2, 1));
        }
    }
    if (i < L) { /* L % 16 == 8: one half */
        __m512 xv = _mm512_maskz_loadu_ps(0xff, x + i), c;
        __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(xv, I), LO), HI);
        c = _mm512_sub_ps(_mm512_add_ps(t, M), M);
        lx = _mm512_add_pd(lx, _mm512_mul_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(c)),
                                             _mm512_cvtps_pd(_mm512_castps512_ps256(xv))));
        c2 = _mm512_add_ps(c2, _mm512_mul_ps(c, c)); /* lanes 8-15 are 0 */
        if (err) {
            __m512 d = _mm512_sub_ps(xv, _mm512_mul_ps(c, S));
            acc = _mm256_add_ps(acc, _mm512_castps512_ps256(_mm512_mul_ps(d, d)));
        }
    }
    if (err) {
        float a[8];
        _mm256_storeu_ps(a, acc);
        *err = combine8f(a);
    }
    double l[8];
    _mm512_storeu_pd(l, lx);
    *cx = combine8d(l);
    *cc = (int64_t)_mm512_reduce_add_ps(c2); /* exact, as above */
}

TQ5 static float amax_512(const float *x, unsigned n, float *first)
{
    const __m512 ab = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 m = _mm512_setzero_ps();
    unsigned i = 0;
    for (; i + 16 <= n; i += 16)
        m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(x + i), ab));
    if (i < n)
        m = _mm512_max_ps(m, _mm512_and_ps(_mm512_maskz_loadu_ps((__mmask16)((1u << (n - i)) - 1), x + i), ab));
    float a = _mm512_reduce_max_ps(m);
    *first = 0.0f;
    if (a == 0.0f)
        return a;
    const __m512 A = _mm512_set1_ps(a);
    for (unsigned k = 0; k < n; k += 16) {
        __mmask16 lm = n - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - k)) - 1);
        __mmask16 hit = _mm512_mask_cmp_ps_mask(lm, _mm512_and_ps(_mm512_maskz_loadu_ps(lm, x + k), ab), A, _CMP_EQ_OQ);
        if (hit) {
            *first = x[k + (unsigned)__builtin_ctz(hit)];
            break;
        }
    }
    return a;
}
#endif /* NF_QS_X86 */

/* ---- dispatch ---------------------------------------------------------------------- */

void nf_qs_fast(const float *x, unsigned L, int qmin, int qmax, const uint16_t *sb,
                unsigned nc, double *err, nf_isa isa)
{
    float lo = (float)qmin, hi = (float)qmax;
    unsigned i = 0;
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512 && nc >= 2 && nc <= 32) {
        fast_n512(x, L, lo, hi, sb, nc, err);
        return;
    }
    if (isa >= NF_ISA_AVX2) {
        for (; i < nc; i++)
            err[i] = fast_avx2(x, L, lo, hi, sb[i], NULL);
        return;
    }
#endif
    (void)isa;
    for (; i < nc; i++)
        err[i] = fast_scalar(x, L, lo, hi, sb[i], NULL);
}

void nf_qs_refit(const float *x, unsigned L, int qmin, int qmax, uint16_t sb, double *cx,
                 int64_t *cc, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512) {
        refit_512(x, L, (float)qmin, (float)qmax, sb, NULL, cx, cc);
        return;
    }
    if (isa >= NF_ISA_AVX2) {
        refit_avx2(x, L, (float)qmin, (float)qmax, sb, cx, cc);
        return;
    }
#endif
    (void)isa;
    refit_scalar(x, L, (float)qmin, (float)qmax, sb, cx, cc);
}

void nf_qs_fast_refit(const float *x, unsigned L, int qmin, int qmax, uint16_t sb, double *err,
                      double *cx, int64_t *cc, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512) {
        refit_512(x, L, (float)qmin, (float)qmax, sb, err, cx, cc);
        return;
    }
    if (isa >= NF_ISA_AVX2) {
        fast_refit_avx2(x, L, (float)qmin, (float)qmax, sb, err, cx, cc);
        return;
    }
#endif
    (void)isa;
    *err = fast_scalar(x, L, (float)qmin, (float)qmax, sb, NULL);
    refit_scalar(x, L, (float)qmin, (float)qmax, sb, cx, cc);
}

bool nf_qs_finite(const float *x, uint64_t K, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX2)
        return finite_avx2(x, K);
#endif
    (void)isa;
    return finite_scalar(x, K);
}

void nf_qs_sq8(const float *x, unsigned n, double *l, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX2) {
        sq8_avx2(x, n, l);
        return;
    }
#endif
    (void)isa;
    for (unsigned i = 0; i < n; i++)
        l[i % 8] += (double)x[i] * x[i];
}

double nf_qs_combine8(const double *l)
{
    return combine8d(l);
}

static uint16_t grid1(double m, double d)
{
    uint16_t b = nf_f32_to_fp16((float)(m / d));
    if ((b & 0x7c00u) == 0x7c00u)
        b = (uint16_t)((b & 0x8000u) | 0x7bffu);
    return b;
}

#if NF_QS_X86
TQ5 static void grid512(double m, const double *d, unsigned n, uint16_t *out)
{
    for (unsigned i = 0; i < n; i += 8) {
        unsigned k = n - i < 8 ? n - i : 8;
        __mmask8 mk = (__mmask8)((1u << k) - 1);
        __m512d q = _mm512_div_pd(_mm512_set1_pd(m), _mm512_mask_loadu_pd(_mm512_set1_pd(1.0), mk, d + i));
        __m128i h = _mm256_cvtps_ph(_mm512_cvtpd_ps(q), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m128i inf = _mm_cmpeq_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7c00)), _mm_set1_epi16(0x7c00));
        h = _mm_blendv_epi8(h, _mm_or_si128(_mm_and_si128(h, _mm_set1_epi16((short)0x8000)),
                                            _mm_set1_epi16(0x7bff)), inf);
        _mm_mask_storeu_epi16(out + i, mk, h);
    }
}
#endif

void nf_qs_grid(double m, const double *d, unsigned n, uint16_t *out, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512) {
        grid512(m, d, n, out);
        return;
    }
#endif
    (void)isa;
    for (unsigned i = 0; i < n; i++)
        out[i] = grid1(m, d[i]);
}

float nf_qs_amax(const float *x, unsigned n, float *first, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512)
        return amax_512(x, n, first);
    if (isa >= NF_ISA_AVX2)
        return amax_avx2(x, n, first);
#endif
    (void)isa;
    return amax_scalar(x, n, first);
}

double nf_qs_exact(const float *x, unsigned n, int qmin, int qmax, uint16_t sb, int *codes,
                   uint64_t *sat, nf_isa isa)
{
#if NF_QS_X86
    if (isa >= NF_ISA_AVX512)
        return exact_avx512(x, n, qmin, qmax, sb, codes, sat);
    if (isa >= NF_ISA_AVX2)
        return exact_avx2(x, n, qmin, qmax, sb, codes, sat);
#endif
    (void)isa;
    return exact_scalar(x, n, qmin, qmax, sb, codes, sat);
}
