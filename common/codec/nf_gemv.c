/* nf_gemv.c — CPU GEMV (nf_gemv.h): the float kernels, the dispatch, the
 * reference, the decode pass and the read-bandwidth kernels.
 *
 * Every path computes the accumulation order nf_gemv.h states, so that the
 * portable C code, AVX2 and AVX-512 give the same bits:
 *  - F order (fp32, int32, gguf_* on A16, and every row decoded first: the
 *    two-pass path): 64 f32 slots, column k into slot k % 64 with one FMA
 *    w*x in k order, then the pairwise tree (nf_gv_tree);
 *  - P order (bf16, fp8): 64 slots of column pairs, pair p = (2p, 2p+1)
 *    into slot p % 64, the odd column's FMA first, then the even one's;
 *    then the tree. vdpbf16ps (AVX512_BF16) computes exactly these two
 *    roundings where every product is exact and no product or partial sum
 *    is subnormal (its inputs and outputs are flushed to zero): with bf16
 *    weights w (or e4m3 codes, exact in bf16) and bf16 x, every product is
 *    a multiple of 2^(ew + ex - 14) (ew, ex the smallest unbiased exponents
 *    of the row's and x's nonzero values), and so is every partial sum,
 *    so ew + ex >= -112 with neither side subnormal keeps them all normal;
 *    elsewhere the same two FMAs run as FMAs.
 *  - I order (the integer path, nf_gemv_int.c) and G order (gguf_* on A8,
 *    nf_gemv_gguf.c).
 * A row's result is then made canonical (nf_gv_canon: +0 for a zero, the
 * default quiet NaN for a NaN), so neither the sign of a zero sum nor a NaN
 * payload depends on the ISA.
 *
 * Exactness of the weights: every kernel forms each weight with the
 * codec's own operations on the same exact operands (bf16 and fp32 words
 * as they are, int32 converted, e4m3 codes through a table of their exact
 * bf16 values), so only the summation differs from nf_gemv_ref_rows, and
 * the order above keeps it inside that bound.
 *
 * Threads: nf_pool.h's persistent workers, each on a contiguous range of
 * rows with stealing at the tail (nf_gv_run); nothing depends on the
 * thread count.
 *
 * Memory: rows are streamed in order; one software prefetch per 64 bytes,
 * PF_DIST ahead (the hardware prefetchers alone left these loops waiting
 * on memory).
 */
#include "nf_gemv.h"
#include "nf_gemv_gguf.h"
#include "nf_gemv_int.h"
#include "nf_pool.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_GEMV_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define NF_GEMV_X86 0
#endif

#include "nf_fp.h"

/* software prefetch distance in bytes of a stream */
#define PF_DIST 4096

unsigned nf_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

static inline uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* ---- which kernels ---------------------------------------------------------- */

static pthread_once_t g_env_once = PTHREAD_ONCE_INIT;
static nf_isa g_env_cap = NF_ISA_AVX512;

static void read_env(void)
{
    const char *e = getenv("NF_GEMV_ISA");
    if (!e)
        return;
    if (!strcmp(e, "scalar"))
        g_env_cap = NF_ISA_SCALAR;
    else if (!strcmp(e, "avx2"))
        g_env_cap = NF_ISA_AVX2;
    /* "avx512", "auto", "" or anything else: no cap */
}

nf_isa nf_gv_isa(void)
{
    pthread_once(&g_env_once, read_env);
    nf_isa c = nf_codec_isa();
    return c < g_env_cap ? c : g_env_cap;
}

static atomic_bool g_use_int = true;

bool nf_gemv_use_int(bool on)
{
    return atomic_exchange(&g_use_int, on);
}

#if NF_GEMV_X86
/* CPUID leaf 7 bits, asked once (in a VM CPUID is a slow exit) */
static _Atomic int g_cpu7 = -1;
static int cpu7(void)
{
    int v = atomic_load_explicit(&g_cpu7, memory_order_relaxed);
    if (v < 0) {
        unsigned a, b, c, d, a1 = 0, b1, c1, d1;
        v = 0;
        if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
            v |= (c & (1u << 11)) ? 1 : 0; /* AVX512_VNNI */
            v |= (c & (1u << 1)) ? 2 : 0;  /* AVX512_VBMI */
            if (a >= 1 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1))
                v |= (a1 & (1u << 5)) ? 4 : 0; /* AVX512_BF16 */
        }
        atomic_store_explicit(&g_cpu7, v, memory_order_relaxed);
    }
    return v;
}
bool nf_gv_cpu_vnni_vbmi(void) { return (cpu7() & 3) == 3; }
static bool cpu_bf16(void) { return (cpu7() & 4) != 0; }
static bool cpu_vbmi(void) { return (cpu7() & 2) != 0; }
#else
bool nf_gv_cpu_vnni_vbmi(void) { return false; }
#endif

/* ---- the contract's reductions ------------------------------------------------ */

float nf_gv_tree(float *s, unsigned n)
{
    for (unsigned h = n / 2; h; h /= 2)
        for (unsigned i = 0; i < h; i++)
            s[i] = s[i] + s[i + h];
    return s[0];
}

float nf_gv_canon(float y)
{
    if (y == 0.0f)
        return 0.0f;
    if (y != y)
        return nf_f32_from_bits(0x7fc00000u);
    return y;
}

/* F order over f32 arrays: the definition. */
static float dot64_scalar(const float *w, const float *x, uint64_t K)
{
    float a[64] = {0};
    for (uint64_t k = 0; k < K; k++)
        a[k & 63] = fmaf(w[k], x[k], a[k & 63]);
    return nf_gv_tree(a, 64);
}

/* P order over f32 arrays (w, x natural): the definition. */
static float pdot_scalar(const float *w, const float *x, uint64_t K)
{
    float a[64] = {0};
    for (uint64_t p = 0; 2 * p < K; p++) {
        float *s = &a[p & 63];
        if (2 * p + 1 < K)
            *s = fmaf(w[2 * p + 1], x[2 * p + 1], *s);
        *s = fmaf(w[2 * p], x[2 * p], *s);
    }
    return nf_gv_tree(a, 64);
}

#if NF_GEMV_X86
#define T256 __attribute__((target("avx2,fma,f16c")))
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define T512B __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx512vbmi,avx2,fma,f16c")))
#define NF_INLINE static inline __attribute__((always_inline))

#include "nf_gemv_tree.inc"

#define PF(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T0)

T512 NF_INLINE __mmask16 mask16(uint64_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
}

/* F order, AVX-512: a[j] holds slots 16j..16j+15; the tail masked (zeros
 * add nothing but, at most, a zero's sign, which nf_gv_canon removes). */
T512 static float dot64_512(const float *w, const float *x, uint64_t K)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t k = 0;
    for (; k + 64 <= K; k += 64) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k), _mm512_loadu_ps(x + k), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 16), _mm512_loadu_ps(x + k + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 32), _mm512_loadu_ps(x + k + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w + k + 48), _mm512_loadu_ps(x + k + 48), a3);
    }
#define DT(A, o)                                                                                   \
    if (k + (o) < K) {                                                                             \
        __mmask16 m = mask16(K - k - (o));                                                         \
        A = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w + k + (o)), _mm512_maskz_loadu_ps(m, x + k + (o)), A); \
    }
    DT(a0, 0) DT(a1, 16) DT(a2, 32) DT(a3, 48)
#undef DT
    return nf_tree64_512(a0, a1, a2, a3);
}

/* F order, AVX2: a[j] holds slots 8j..8j+7. */
T256 static float dot64_256(const float *w, const float *x, uint64_t K)
{
    __m256 a[8];
    for (int i = 0; i < 8; i++)
        a[i] = _mm256_setzero_ps();
    uint64_t k = 0;
    for (; k + 64 <= K; k += 64)
        for (int i = 0; i < 8; i++)
            a[i] = _mm256_fmadd_ps(_mm256_loadu_ps(w + k + 8 * i), _mm256_loadu_ps(x + k + 8 * i), a[i]);
    for (int i = 0; i < 8 && k + 8 * (uint64_t)i < K; i++) {
        uint64_t left = K - k - 8 * (uint64_t)i;
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left > 8 ? 8 : (int)left),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        a[i] = _mm256_fmadd_ps(_mm256_maskload_ps(w + k + 8 * i, m), _mm256_maskload_ps(x + k + 8 * i, m), a[i]);
    }
    return nf_tree64_256(a);
}
#endif

float nf_gv_dot64(const float *w, const float *x, uint64_t K, nf_isa isa)
{
#if NF_GEMV_X86
    if (isa >= NF_ISA_AVX512)
        return dot64_512(w, x, K);
    if (isa >= NF_ISA_AVX2)
        return dot64_256(w, x, K);
#endif
    (void)isa;
    return dot64_scalar(w, x, K);
}

/* ---- running rows on the pool ------------------------------------------------ */

/* Below this many weight bytes a participant costs more than it saves
 * (waking a spinning worker ~0.2 us, a sleeping one several us). */
#define GV_MIN_BYTES ((uint64_t)64 << 10)

unsigned nf_gv_participants(uint64_t bytes, unsigned threads)
{
    if (!threads)
        threads = nf_cpu_count();
    if (threads > NF_POOL_MAX)
        threads = NF_POOL_MAX;
    uint64_t most = bytes / GV_MIN_BYTES;
    if (most < 1)
        most = 1;
    return threads < most ? threads : (unsigned)most;
}

uint64_t nf_gv_unit_rows(uint64_t rows, uint64_t row_bytes, unsigned n)
{
    /* about 32 KiB a unit, a multiple of 4 rows (the kernels' row groups),
     * at least 8 units a participant where the rows allow it */
    uint64_t u = row_bytes ? ((uint64_t)32 << 10) / row_bytes : 64;
    uint64_t cap = rows / (8 * (uint64_t)n);
    if (u > cap)
        u = cap;
    u = (u + 3) & ~(uint64_t)3;
    if (u < 4)
        u = 4;
    if ((rows + u - 1) / u >= (1ull << 31)) /* nf_pool_span's 32-bit units */
        u = rows / (1ull << 30) + 4;
    return u;
}

typedef struct {
    nf_gv_rows_fn fn;
    void *ctx;
    uint64_t r0, r1, unit;
    unsigned spans;
    atomic_int err;
    nf_pool_span span[NF_POOL_MAX];
} gvjob;

static void gv_part(void *arg, unsigned idx, unsigned n)
{
    gvjob *j = arg;
    (void)n;
    for (;;) {
        uint64_t u = nf_pool_span_take(j->span, j->spans, idx);
        if (u == UINT64_MAX || atomic_load_explicit(&j->err, memory_order_relaxed))
            break;
        uint64_t a = j->r0 + u * j->unit, b = a + j->unit < j->r1 ? a + j->unit : j->r1;
        int rc = j->fn(j->ctx, a, b);
        if (rc) {
            atomic_store(&j->err, rc);
            break;
        }
    }
}

int nf_gv_run(nf_gv_rows_fn fn, void *ctx, uint64_t r0, uint64_t r1, uint64_t row_bytes,
              unsigned threads)
{
    if (r1 <= r0)
        return 0;
    uint64_t rows = r1 - r0, bytes = rows * row_bytes;
    unsigned n = nf_gv_participants(bytes, threads);
    if (n <= 1)
        return fn(ctx, r0, r1);
    gvjob *j = nf_pool_scratch(2, sizeof *j); /* the caller's: spans of this call */
    if (!j)
        return NF_CODEC_ENOMEM;
    j->fn = fn;
    j->ctx = ctx;
    j->r0 = r0;
    j->r1 = r1;
    j->unit = nf_gv_unit_rows(rows, row_bytes, n);
    j->spans = n;
    atomic_store(&j->err, 0);
    nf_pool_span_init(j->span, n, (rows + j->unit - 1) / j->unit);
    nf_pool_run_opt(gv_part, j, n);
    return atomic_load(&j->err);
}

/* ---- the float kernels --------------------------------------------------------- */

/* One call's state, shared by the participants (read-only while they run). */
typedef struct {
    const nf_tensor_enc *t;
    const uint8_t *obj;
    uint64_t obj_bytes, K, r0;
    const uint8_t *p0, *p1; /* planes: data / codes, fp8 row scales */
    nf_isa isa;
    bool vdp;               /* vdpbf16ps for this call (CPU, act, x's exponents) */
    int ex;                 /* x's smallest biased exponent of a nonzero value (bf16) */
    const uint16_t *xb;     /* x as given (A16), NULL on A8 */
    const float *xf;        /* x (A16) or x^ (A8) in f32, natural order */
    const float *xe, *xo;   /* P order with f32 x: xf's even / odd columns */
    uint64_t kb;            /* P order without vdp: columns a piece (0: rows whole) */
    float *y;               /* y[n - r0] */
} fctx;

/* Rows [a, b) of any format through the two-pass path in F order: decode a
 * few rows into this thread's buffer (at most 64 KiB of f32), then dot64. */
int nf_gv_rows_f32(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t a,
                   uint64_t b, const float *xf, float *y, uint64_t r0, nf_isa isa)
{
    uint64_t K = t->cols ? t->cols : 1;
    uint64_t per = 16384 / K ? 16384 / K : 1;
    if (per > 64)
        per = 64;
    float *buf = nf_pool_scratch(0, per * K * sizeof *buf);
    if (!buf)
        return NF_CODEC_ENOMEM;
    for (uint64_t r = a; r < b; r += per) {
        uint64_t e = r + per < b ? r + per : b;
        int rc = nf_decode_rows_f32(t, obj, obj_bytes, r, e, buf);
        if (rc)
            return rc;
        if (y)
            for (uint64_t n = r; n < e; n++)
                y[n - r0] = nf_gv_canon(nf_gv_dot64(buf + (n - r) * K, xf, t->cols, isa));
    }
    return 0;
}

static int rows_generic(void *arg, uint64_t a, uint64_t b)
{
    const fctx *c = arg;
    return nf_gv_rows_f32(c->t, c->obj, c->obj_bytes, a, b, c->xf, c->y, c->r0, c->isa);
}

/* The exact bf16 value of every E4M3FN code's magnitude (0x7f: NaN); the
 * sign is bit 7 of the code, bit 15 of the bf16. */
static uint16_t g_e4m3_bf16[128];
static pthread_once_t g_e4m3_once = PTHREAD_ONCE_INIT;
static void e4m3_table(void)
{
    for (unsigned c = 0; c < 128; c++)
        g_e4m3_bf16[c] = (uint16_t)(nf_f32_bits(nf_e4m3_to_f32((uint8_t)c)) >> 16);
}

/* The smallest biased exponent field of a nonzero bf16 of w[0..n) (0 for a
 * subnormal; 255 when all are zero): part of the vdpbf16ps condition. */
static int min_exp_bf16(const uint16_t *w, uint64_t n)
{
    unsigned m = 0xffff;
    for (uint64_t k = 0; k < n; k++) {
        unsigned v = (w[k] & 0x7fffu) - 1u; /* 0 -> 0xffff..: ignored */
        m = (v & 0xffff) < m ? (v & 0xffff) : m;
    }
    return m == 0xffff ? 255 : (int)((m + 1) >> 7);
}

/* vdpbf16ps is exact for a row whose nonzero weights have the smallest
 * exponent field ew against x's ex: both normal and ew + ex >= 142 (the
 * unbiased sum >= -112: every product and partial sum a multiple of
 * 2^-126). */
static bool vdp_ok(int ew, int ex)
{
    return ew >= 1 && ex >= 1 && ew + ex >= 142;
}

/* P order, portable: bf16 weights (raw words) or fp8 codes. */
static float prow_scalar(const fctx *c, uint64_t n, float *w)
{
    uint64_t K = c->K;
    if (c->t->format == NF_FMT_BF16) {
        const uint8_t *p = c->p0 + 2 * n * K;
        for (uint64_t k = 0; k < K; k++)
            w[k] = nf_bf16_to_f32(ld16(p + 2 * k));
    } else {
        const uint8_t *p = c->p0 + n * K;
        for (uint64_t k = 0; k < K; k++)
            w[k] = nf_e4m3_to_f32(p[k]);
    }
    return pdot_scalar(w, c->xf, K);
}

#if NF_GEMV_X86
/* P order, AVX-512, on 32 columns in v (16 bf16 pairs): vdpbf16ps, or
 * the same two FMAs with x from bf16 words (xb) or the even/odd f32
 * arrays (xe/xo, 16 pairs from pair p). */
T512B NF_INLINE __m512 p512_vdp(__m512 acc, __m512i v, __m512i xv)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)v, (__m512bh)xv);
}
T512 NF_INLINE __m512 p512_fma(__m512 acc, __m512i v, __m512 xe, __m512 xo)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000);
    acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, hm)), xo, acc);
    return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), xe, acc);
}
/* x of the 16 pairs from pair p: mp masks pairs (the f32 arrays), mw
 * words (the bf16 x, whose odd word past K is never read) */
T512 NF_INLINE void x512_pairs(const fctx *c, uint64_t p, __mmask16 mp, __mmask32 mw, __m512 *xe,
                               __m512 *xo)
{
    if (c->xe) {
        *xe = _mm512_maskz_loadu_ps(mp, c->xe + p);
        *xo = _mm512_maskz_loadu_ps(mp, c->xo + p);
    } else {
        __m512i u = _mm512_maskz_loadu_epi16(mw, c->xb + 2 * p);
        *xe = _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
        *xo = _mm512_castsi512_ps(_mm512_and_si512(u, _mm512_set1_epi32((int)0xffff0000)));
    }
}

/* The bf16 words of 64 fp8 codes in column order (two vectors of 32), from
 * the 128-entry tables of the magnitudes' high and low bytes. */
typedef struct {
    __m512i l0, l1, h0, h1, ia, ib;
} fp8tab;
T512B static void fp8tab_init(fp8tab *T)
{
    uint8_t lo[128], hi[128], ia[64], ib[64];
    for (unsigned i = 0; i < 128; i++) {
        lo[i] = (uint8_t)g_e4m3_bf16[i];
        hi[i] = (uint8_t)(g_e4m3_bf16[i] >> 8);
    }
    for (unsigned j = 0; j < 32; j++) {
        ia[2 * j] = (uint8_t)j;
        ia[2 * j + 1] = (uint8_t)(64 + j);
        ib[2 * j] = (uint8_t)(32 + j);
        ib[2 * j + 1] = (uint8_t)(96 + j);
    }
    T->l0 = _mm512_loadu_si512(lo);
    T->l1 = _mm512_loadu_si512(lo + 64);
    T->h0 = _mm512_loadu_si512(hi);
    T->h1 = _mm512_loadu_si512(hi + 64);
    T->ia = _mm512_loadu_si512(ia);
    T->ib = _mm512_loadu_si512(ib);
}
T512B NF_INLINE void fp8_words512(const fp8tab *T, __m512i codes, __m512i *A, __m512i *B)
{
    __m512i lo = _mm512_permutex2var_epi8(T->l0, codes, T->l1);
    __m512i hi = _mm512_permutex2var_epi8(T->h0, codes, T->h1);
    hi = _mm512_ternarylogic_epi32(hi, codes, _mm512_set1_epi8((char)0x80), 0xF8); /* hi | (c & 0x80) */
    *A = _mm512_permutex2var_epi8(lo, T->ia, hi);
    *B = _mm512_permutex2var_epi8(lo, T->ib, hi);
}

/* One row in P order on AVX-512: bf16 (w words at p) or fp8 (codes at p).
 * vdp: vdpbf16ps with the bf16 x (the caller checked x; bf16 rows check
 * their own exponents and are redone with FMAs when they fail). */
T512B static float prow512(const fctx *c, const uint8_t *p, bool fp8, bool vdp, const fp8tab *T,
                           bool *redo)
{
    uint64_t K = c->K, np = (K + 1) / 2, k = 0;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m512i mn = _mm512_set1_epi16(-1);
    const __m512i m7 = _mm512_set1_epi16(0x7fff), one = _mm512_set1_epi16(1);
#define PSTEP(A, v, pp, m)                                                                         \
    do {                                                                                           \
        if (vdp) {                                                                                 \
            A = p512_vdp(A, v, _mm512_maskz_loadu_epi32(m, c->xb + 2 * (pp)));                     \
        } else {                                                                                   \
            __m512 xe_, xo_;                                                                       \
            x512_pairs(c, pp, m, ~0u, &xe_, &xo_);                                                 \
            A = p512_fma(A, v, xe_, xo_);                                                          \
        }                                                                                          \
    } while (0)
    if (!fp8) {
        for (; k + 128 <= K; k += 128) {
            const uint8_t *q = p + 2 * k;
            PF(q);
            PF(q + 64);
            PF(q + 128);
            PF(q + 192);
            __m512i v0 = _mm512_loadu_si512(q), v1 = _mm512_loadu_si512(q + 64);
            __m512i v2 = _mm512_loadu_si512(q + 128), v3 = _mm512_loadu_si512(q + 192);
            if (vdp) {
                mn = _mm512_min_epu16(mn, _mm512_sub_epi16(_mm512_and_si512(v0, m7), one));
                mn = _mm512_min_epu16(mn, _mm512_sub_epi16(_mm512_and_si512(v1, m7), one));
                mn = _mm512_min_epu16(mn, _mm512_sub_epi16(_mm512_and_si512(v2, m7), one));
                mn = _mm512_min_epu16(mn, _mm512_sub_epi16(_mm512_and_si512(v3, m7), one));
            }
            PSTEP(a0, v0, k / 2, 0xffff);
            PSTEP(a1, v1, k / 2 + 16, 0xffff);
            PSTEP(a2, v2, k / 2 + 32, 0xffff);
            PSTEP(a3, v3, k / 2 + 48, 0xffff);
        }
        /* the rest: up to 4 vectors of 16 pairs, the last one masked */
        for (unsigned j = 0; k < K; j++, k += 32) {
            uint64_t pp = k / 2, left = K - k;
            __mmask32 mw = left >= 32 ? ~0u : (__mmask32)((1u << left) - 1);
            __mmask16 mp = mask16(np - pp);
            __m512i v = _mm512_maskz_loadu_epi16(mw, p + 2 * k);
            if (vdp)
                mn = _mm512_mask_min_epu16(mn, mw, mn, _mm512_sub_epi16(_mm512_and_si512(v, m7), one));
            if (vdp && !c->xe) {
                /* x's odd word past K (odd K) must be 0 too: load by words */
                __m512i xv = _mm512_maskz_loadu_epi16(mw, c->xb + k);
                switch (j) {
                case 0: a0 = p512_vdp(a0, v, xv); break;
                case 1: a1 = p512_vdp(a1, v, xv); break;
                case 2: a2 = p512_vdp(a2, v, xv); break;
                default: a3 = p512_vdp(a3, v, xv); break;
                }
            } else {
                __m512 xe_, xo_;
                x512_pairs(c, pp, mp, mw, &xe_, &xo_);
                switch (j) {
                case 0: a0 = p512_fma(a0, v, xe_, xo_); break;
                case 1: a1 = p512_fma(a1, v, xe_, xo_); break;
                case 2: a2 = p512_fma(a2, v, xe_, xo_); break;
                default: a3 = p512_fma(a3, v, xe_, xo_); break;
                }
            }
        }
        if (vdp) {
            unsigned m = _mm512_reduce_min_epu32(_mm512_min_epu32(_mm512_and_si512(mn, _mm512_set1_epi32(0xffff)),
                                                                  _mm512_srli_epi32(mn, 16)));
            int ew = m == 0xffff ? 255 : (int)((m + 1) >> 7);
            *redo = !vdp_ok(ew, c->ex);
        }
    } else {
        /* fp8: 64 codes make two vectors of 32 bf16 words */
        for (; k + 128 <= K; k += 128) {
            PF(p + k);
            PF(p + k + 64);
            __m512i A, B, C, D;
            fp8_words512(T, _mm512_loadu_si512(p + k), &A, &B);
            fp8_words512(T, _mm512_loadu_si512(p + k + 64), &C, &D);
            PSTEP(a0, A, k / 2, 0xffff);
            PSTEP(a1, B, k / 2 + 16, 0xffff);
            PSTEP(a2, C, k / 2 + 32, 0xffff);
            PSTEP(a3, D, k / 2 + 48, 0xffff);
        }
        for (unsigned j = 0; k < K; j += 2, k += 64) {
            uint64_t left = K - k;
            __m512i A, B;
            fp8_words512(T, _mm512_maskz_loadu_epi8(left >= 64 ? ~0ull : (1ull << left) - 1, p + k), &A, &B);
            for (unsigned h = 0; h < 2 && k + 32 * h < K; h++) {
                uint64_t kk = k + 32 * h, pp = kk / 2, l2 = K - kk;
                __mmask32 mw = l2 >= 32 ? ~0u : (__mmask32)((1u << l2) - 1);
                __mmask16 mp = mask16(np - pp);
                __m512i v = h ? B : A;
                __m512 acc = (j + h) % 4 == 0 ? a0 : (j + h) % 4 == 1 ? a1 : (j + h) % 4 == 2 ? a2 : a3;
                if (vdp && !c->xe) {
                    acc = p512_vdp(acc, v, _mm512_maskz_loadu_epi16(mw, c->xb + kk));
                } else {
                    __m512 xe_, xo_;
                    x512_pairs(c, pp, mp, mw, &xe_, &xo_);
                    acc = p512_fma(acc, v, xe_, xo_);
                }
                switch ((j + h) % 4) {
                case 0: a0 = acc; break;
                case 1: a1 = acc; break;
                case 2: a2 = acc; break;
                default: a3 = acc; break;
                }
            }
        }
    }
#undef PSTEP
    return nf_tree64_512(a0, a1, a2, a3);
}

/* The FMA form of prow512 over columns [k0, k1) of one row (k0 a multiple
 * of 128; k1 one too, or K), continuing the row's four accumulators in a:
 * the same operations in the same order as prow512 without vdp, so that a
 * row done in pieces gives the same bits as a row done whole. */
T512B static void pseg512(const fctx *c, const uint8_t *p, bool fp8, const fp8tab *T, uint64_t k0,
                          uint64_t k1, __m512 *a, ptrdiff_t pd)
{
    uint64_t K = c->K, np = (K + 1) / 2, k = k0;
    __m512 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
/* the same bytes of the next piece in processing order (pd bytes on) */
#define PFN(q) _mm_prefetch((const char *)(q) + pd, _MM_HINT_T0)
#define FSTEP(A, v, pp)                                                                            \
    do {                                                                                           \
        __m512 xe_, xo_;                                                                           \
        x512_pairs(c, pp, 0xffff, ~0u, &xe_, &xo_);                                                \
        A = p512_fma(A, v, xe_, xo_);                                                              \
    } while (0)
    if (!fp8) {
        for (; k + 128 <= k1; k += 128) {
            const uint8_t *q = p + 2 * k;
            PFN(q);
            PFN(q + 64);
            PFN(q + 128);
            PFN(q + 192);
            FSTEP(a0, _mm512_loadu_si512(q), k / 2);
            FSTEP(a1, _mm512_loadu_si512(q + 64), k / 2 + 16);
            FSTEP(a2, _mm512_loadu_si512(q + 128), k / 2 + 32);
            FSTEP(a3, _mm512_loadu_si512(q + 192), k / 2 + 48);
        }
        for (unsigned j = 0; k < k1; j++, k += 32) {
            uint64_t pp = k / 2, left = K - k;
            __mmask32 mw = left >= 32 ? ~0u : (__mmask32)((1u << left) - 1);
            __m512i v = _mm512_maskz_loadu_epi16(mw, p + 2 * k);
            __m512 xe_, xo_;
            x512_pairs(c, pp, mask16(np - pp), mw, &xe_, &xo_);
            switch (j) {
            case 0: a0 = p512_fma(a0, v, xe_, xo_); break;
            case 1: a1 = p512_fma(a1, v, xe_, xo_); break;
            case 2: a2 = p512_fma(a2, v, xe_, xo_); break;
            default: a3 = p512_fma(a3, v, xe_, xo_); break;
            }
        }
    } else {
        for (; k + 128 <= k1; k += 128) {
            PFN(p + k);
            PFN(p + k + 64);
            __m512i A, B, C, D;
            fp8_words512(T, _mm512_loadu_si512(p + k), &A, &B);
            fp8_words512(T, _mm512_loadu_si512(p + k + 64), &C, &D);
            FSTEP(a0, A, k / 2);
            FSTEP(a1, B, k / 2 + 16);
            FSTEP(a2, C, k / 2 + 32);
            FSTEP(a3, D, k / 2 + 48);
        }
        for (unsigned j = 0; k < k1; j += 2, k += 64) {
            uint64_t left = K - k;
            __m512i A, B;
            fp8_words512(T, _mm512_maskz_loadu_epi8(left >= 64 ? ~0ull : (1ull << left) - 1, p + k), &A, &B);
            for (unsigned h = 0; h < 2 && k + 32 * h < K; h++) {
                uint64_t kk = k + 32 * h, pp = kk / 2, l2 = K - kk;
                __mmask32 mw = l2 >= 32 ? ~0u : (__mmask32)((1u << l2) - 1);
                __m512 xe_, xo_;
                x512_pairs(c, pp, mask16(np - pp), mw, &xe_, &xo_);
                __m512 acc = (j + h) % 4 == 0 ? a0 : (j + h) % 4 == 1 ? a1 : (j + h) % 4 == 2 ? a2 : a3;
                acc = p512_fma(acc, h ? B : A, xe_, xo_);
                switch ((j + h) % 4) {
                case 0: a0 = acc; break;
                case 1: a1 = acc; break;
                case 2: a2 = acc; break;
                default: a3 = acc; break;
                }
            }
        }
    }
#undef FSTEP
#undef PFN
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* P order, AVX2: 16 columns (8 pairs) a step, slot group s % 8. w even and
 * odd columns as f32 (bf16 words split; fp8 codes through the e4m3 bit
 * trick, exact, NaN codes seen by *nan). */
T256 static float prow256(const fctx *c, const uint8_t *p, bool fp8, bool *nan)
{
    uint64_t K = c->K;
    __m256 a[8];
    for (int i = 0; i < 8; i++)
        a[i] = _mm256_setzero_ps();
    const __m256i hm = _mm256_set1_epi32((int)0xffff0000);
    const __m128i split = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
    __m128i nanacc = _mm_setzero_si128();
    for (uint64_t k = 0, s = 0; k < K; k += 16, s++) {
        uint64_t left = K - k;
        __m256 we, wo, xe, xo;
        if (!fp8) {
            __m256i v;
            if (left >= 16) {
                if (!(s & 1))
                    PF(p + 2 * k);
                v = _mm256_loadu_si256((const __m256i *)(const void *)(p + 2 * k));
            } else {
                uint16_t tmp[16] = {0};
                memcpy(tmp, p + 2 * k, 2 * left);
                v = _mm256_loadu_si256((const __m256i *)(const void *)tmp);
            }
            we = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
            wo = _mm256_castsi256_ps(_mm256_and_si256(v, hm));
        } else {
            __m128i v;
            if (left >= 16) {
                if (!(s & 3))
                    PF(p + k);
                v = _mm_loadu_si128((const __m128i *)(const void *)(p + k));
            } else {
                uint8_t tmp[16] = {0};
                memcpy(tmp, p + k, left);
                v = _mm_loadu_si128((const __m128i *)(const void *)tmp);
            }
            nanacc = _mm_or_si128(nanacc, _mm_cmpeq_epi8(_mm_or_si128(v, _mm_set1_epi8((char)0x80)),
                                                         _mm_set1_epi8((char)0xff)));
            __m128i sv = _mm_shuffle_epi8(v, split);
            const __m256i fm = _mm256_set1_epi32((int)0x87f00000);
            const __m256 up = _mm256_set1_ps(0x1p120f);
            __m256i e = _mm256_slli_epi32(_mm256_cvtepi8_epi32(sv), 24);
            __m256i o = _mm256_slli_epi32(_mm256_cvtepi8_epi32(_mm_srli_si128(sv, 8)), 24);
            we = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(e, 4), fm)), up);
            wo = _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(o, 4), fm)), up);
        }
        uint64_t pp = k / 2, np = (K + 1) / 2;
        if (c->xe) {
            if (pp + 8 <= np) {
                xe = _mm256_loadu_ps(c->xe + pp);
                xo = _mm256_loadu_ps(c->xo + pp);
            } else {
                __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(np - pp)),
                                               _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                xe = _mm256_maskload_ps(c->xe + pp, m);
                xo = _mm256_maskload_ps(c->xo + pp, m);
            }
        } else {
            __m256i u;
            if (left >= 16) {
                u = _mm256_loadu_si256((const __m256i *)(const void *)(c->xb + k));
            } else {
                uint16_t tmp[16] = {0};
                memcpy(tmp, c->xb + k, 2 * left);
                u = _mm256_loadu_si256((const __m256i *)(const void *)tmp);
            }
            xe = _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
            xo = _mm256_castsi256_ps(_mm256_and_si256(u, hm));
        }
        __m256 *A = &a[s & 7];
        *A = _mm256_fmadd_ps(wo, xo, *A);
        *A = _mm256_fmadd_ps(we, xe, *A);
    }
    *nan = !_mm_testz_si128(nanacc, nanacc);
    return nf_tree64_256(a);
}

/* fp32 / int32 in F order, fused. */
T512 static float crow512(const uint8_t *p, bool i32, const float *x, uint64_t K)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t k = 0;
#define CW(m, o) (i32 ? _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(m, p + 4 * (k + (o)))) \
                      : _mm512_maskz_loadu_ps(m, p + 4 * (k + (o))))
    for (; k + 64 <= K; k += 64) {
        for (int i = 0; i < 256; i += 64)
            PF(p + 4 * k + i);
        a0 = _mm512_fmadd_ps(CW(0xffff, 0), _mm512_loadu_ps(x + k), a0);
        a1 = _mm512_fmadd_ps(CW(0xffff, 16), _mm512_loadu_ps(x + k + 16), a1);
        a2 = _mm512_fmadd_ps(CW(0xffff, 32), _mm512_loadu_ps(x + k + 32), a2);
        a3 = _mm512_fmadd_ps(CW(0xffff, 48), _mm512_loadu_ps(x + k + 48), a3);
    }
#define CT(A, o)                                                                                   \
    if (k + (o) < K) {                                                                             \
        __mmask16 m = mask16(K - k - (o));                                                         \
        A = _mm512_fmadd_ps(CW(m, o), _mm512_maskz_loadu_ps(m, x + k + (o)), A);                   \
    }
    CT(a0, 0) CT(a1, 16) CT(a2, 32) CT(a3, 48)
#undef CT
#undef CW
    return nf_tree64_512(a0, a1, a2, a3);
}

T256 static float crow256(const uint8_t *p, bool i32, const float *x, uint64_t K)
{
    __m256 a[8];
    for (int i = 0; i < 8; i++)
        a[i] = _mm256_setzero_ps();
    uint64_t k = 0;
#define CW(o) (i32 ? _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p + 4 * (k + (o))))) \
                   : _mm256_loadu_ps((const float *)(const void *)(p + 4 * (k + (o)))))
    for (; k + 64 <= K; k += 64) {
        for (int i = 0; i < 256; i += 64)
            PF(p + 4 * k + i);
        for (int i = 0; i < 8; i++)
            a[i] = _mm256_fmadd_ps(CW(8 * i), _mm256_loadu_ps(x + k + 8 * i), a[i]);
    }
#undef CW
    for (int i = 0; i < 8 && k + 8 * (uint64_t)i < K; i++) {
        uint64_t left = K - k - 8 * (uint64_t)i;
        __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(left > 8 ? 8 : (int)left),
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        __m256i wv = _mm256_maskload_epi32((const int *)(const void *)(p + 4 * (k + 8 * i)), m);
        __m256 w = i32 ? _mm256_cvtepi32_ps(wv) : _mm256_castsi256_ps(wv);
        a[i] = _mm256_fmadd_ps(w, _mm256_maskload_ps(x + k + 8 * i, m), a[i]);
    }
    return nf_tree64_256(a);
}
#endif /* NF_GEMV_X86 */

#if NF_GEMV_X86
/* The P order without vdpbf16ps on AVX-512, for an x too large for L1
 * (A8's f32 even/odd columns take 4 bytes a column: 57 KB at K = 14336,
 * re-read from L2 for every row): up to P_GROUP rows in pieces of c->kb
 * columns, each row's accumulators carried from piece to piece, so the
 * piece of x stays in L1 for the group. Each slot sees the same FMAs in
 * the same order as a whole row: the same bits. */
#define P_GROUP 8
#define P_PIECE_BYTES 16384 /* of x a piece */
T512B static void prows512_pieces(const fctx *c, const uint64_t *rows, unsigned R, bool fp8,
                                  const fp8tab *T, float *v)
{
    __m512 acc[P_GROUP][4];
    uint64_t K = c->K;
    for (unsigned i = 0; i < R; i++)
        for (unsigned q = 0; q < 4; q++)
            acc[i][q] = _mm512_setzero_ps();
    uint64_t bw = fp8 ? 1 : 2; /* bytes a weight */
    for (uint64_t k0 = 0; k0 < K; k0 += c->kb) {
        uint64_t k1 = K - k0 > c->kb ? k0 + c->kb : K;
        for (unsigned i = 0; i < R; i++) {
            /* prefetch the piece after this one: the next row's same
             * columns, or the first row's next columns */
            const uint8_t *p = c->p0 + bw * rows[i] * K;
            const uint8_t *nx = i + 1 < R ? c->p0 + bw * (rows[i + 1] * K + k0)
                                          : c->p0 + bw * (rows[0] * K + k1);
            pseg512(c, p, fp8, T, k0, k1, acc[i], nx - (p + bw * k0));
        }
    }
    for (unsigned i = 0; i < R; i++)
        v[i] = nf_tree64_512(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
}
#endif

/* fp8: y = r * T, T the P-order sum of e4m3(c) * x, where the row scale
 * allows it (r = 0, or 2^-100 <= |r| <= 2^100: e4m3(c) * r then is exact,
 * as the codec's weight); other rows (r tiny, huge or not finite) go
 * through the two-pass path. */
static bool fp8_row_ok(float r)
{
    float a = fabsf(r);
    return a == 0.0f || (a >= 0x1p-100f && a <= 0x1p100f);
}

/* Row n's scale r (bf16: 1): 0 when the kernels take the row, 1 when it
 * went through the two-pass path (fp8_row_ok failed), or that path's
 * error (negative). */
static int p_row_scale(const fctx *c, bool fp8, uint64_t n, float *r)
{
    *r = fp8 ? nf_bf16_to_f32(ld16(c->p1 + 2 * n)) : 1.0f;
    if (fp8_row_ok(*r))
        return 0;
    int rc = nf_gv_rows_f32(c->t, c->obj, c->obj_bytes, n, n + 1, c->xf, c->y, c->r0, c->isa);
    return rc ? rc : 1;
}

static int rows_p(void *arg, uint64_t a, uint64_t b)
{
    const fctx *c = arg;
    bool fp8 = c->t->format == NF_FMT_FP8_E4M3FN_ROW_BF16;
    uint64_t K = c->K;
#if NF_GEMV_X86
    fp8tab T;
    bool vbmi = c->isa >= NF_ISA_AVX512 && cpu_vbmi();
    if (fp8 && vbmi)
        fp8tab_init(&T);
#endif
    float *w = NULL;
#if NF_GEMV_X86
    if (c->kb && c->isa >= NF_ISA_AVX512 && (!fp8 || vbmi)) {
        for (uint64_t n = a; n < b;) {
            uint64_t rows[P_GROUP];
            float rs[P_GROUP], v[P_GROUP];
            unsigned R = 0;
            for (; n < b && R < P_GROUP; n++) {
                float r;
                int rc = p_row_scale(c, fp8, n, &r);
                if (rc < 0)
                    return rc;
                if (rc)
                    continue;
                rows[R] = n;
                rs[R++] = r;
            }
            prows512_pieces(c, rows, R, fp8, &T, v);
            for (unsigned i = 0; i < R; i++)
                c->y[rows[i] - c->r0] = nf_gv_canon(fp8 ? rs[i] * v[i] : v[i]);
        }
        return 0;
    }
#endif
    for (uint64_t n = a; n < b; n++) {
        float r, v;
        int rc = p_row_scale(c, fp8, n, &r);
        if (rc < 0)
            return rc;
        if (rc)
            continue;
#if NF_GEMV_X86
        if (c->isa >= NF_ISA_AVX512 && (!fp8 || vbmi)) {
            const uint8_t *p = c->p0 + (fp8 ? n * K : 2 * n * K);
            bool redo = false;
            v = c->vdp ? prow512(c, p, fp8, true, &T, &redo) : prow512(c, p, fp8, false, &T, &redo);
            if (redo)
                v = prow512(c, p, fp8, false, &T, &redo);
        } else if (c->isa >= NF_ISA_AVX2) {
            bool nan = false;
            v = prow256(c, c->p0 + (fp8 ? n * K : 2 * n * K), fp8, &nan);
            if (nan)
                v = NAN;
        } else
#endif
        {
            if (!w && !(w = nf_pool_scratch(0, (K ? K : 1) * sizeof *w)))
                return NF_CODEC_ENOMEM;
            v = prow_scalar(c, n, w);
        }
        c->y[n - c->r0] = nf_gv_canon(fp8 ? r * v : v);
    }
    return 0;
}

static int rows_contig32(void *arg, uint64_t a, uint64_t b)
{
    const fctx *c = arg;
#if NF_GEMV_X86
    if (c->isa >= NF_ISA_AVX2) {
        bool i32 = c->t->format == NF_FMT_INT32;
        for (uint64_t n = a; n < b; n++) {
            const uint8_t *p = c->p0 + 4 * n * c->K;
            float v = c->isa >= NF_ISA_AVX512 ? crow512(p, i32, c->xf, c->K) : crow256(p, i32, c->xf, c->K);
            c->y[n - c->r0] = nf_gv_canon(v);
        }
        return 0;
    }
#endif
    return rows_generic(arg, a, b);
}

/* ---- the dispatch ---------------------------------------------------------------- */

#if NF_GEMV_X86
/* Nonzero when a bf16 word of x[0 .. K/16*16) is not finite. */
T256 static uint16_t x_finite256(const uint16_t *x, uint64_t K)
{
    const __m256i ex = _mm256_set1_epi16(0x7f80);
    __m256i bad = _mm256_setzero_si256();
    for (uint64_t k = 0; k + 16 <= K; k += 16) {
        __m256i v = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(const void *)(x + k)), ex);
        bad = _mm256_or_si256(bad, _mm256_cmpeq_epi16(v, ex));
    }
    return (uint16_t)!_mm256_testz_si256(bad, bad);
}
#endif

/* True when every bf16 word of x[0..K) is finite (A8 needs it). */
static bool x_finite(const uint16_t *x, uint64_t K)
{
    uint64_t k = 0;
#if NF_GEMV_X86
    if (nf_codec_isa() >= NF_ISA_AVX2) {
        uint16_t acc = x_finite256(x, K);
        if (acc)
            return false;
        k = K / 16 * 16;
    }
#endif
    for (; k < K; k++)
        if ((x[k] & 0x7f80u) == 0x7f80u)
            return false;
    return true;
}

#if NF_GEMV_X86
/* nf_gv_a8_dequant over the whole blocks of 16; returns the columns done */
T256 static uint64_t a8_dequant256(const int8_t *q, const float *d, uint64_t K, float *xf)
{
    uint64_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(q + k));
        __m256 s = _mm256_set1_ps(d[k / 16]);
        _mm256_storeu_ps(xf + k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)), s));
        _mm256_storeu_ps(xf + k + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(v, 8))), s));
    }
    return k;
}
#endif

void nf_gv_a8_dequant(const int8_t *q, const float *d, uint64_t K, float *xf)
{
    uint64_t k = 0;
#if NF_GEMV_X86
    if (nf_gv_isa() >= NF_ISA_AVX2)
        k = a8_dequant256(q, d, K, xf);
#endif
    for (; k < K; k++)
        xf[k] = (float)q[k] * d[k / NF_A8_BLOCK];
}

/* x (bf16) as f32 into xf, or for A8 its quantized values x^ (nf_a8_quantize,
 * x^ = q * d rounded to f32); q8/d8: room for the codes and scales. */
static void x_to_f32(const uint16_t *x, uint64_t K, nf_act act, float *xf, int8_t *q8, float *d8)
{
    if (act == NF_ACT_A8) {
        nf_a8_quantize(x, K, q8, d8);
        nf_gv_a8_dequant(q8, d8, K, xf);
        return;
    }
    for (uint64_t k = 0; k < K; k++)
        xf[k] = nf_bf16_to_f32(x[k]);
}

int nf_gemv_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                 uint64_t r1, const uint16_t *x, float *y, unsigned threads)
{
    return nf_gemv_rows_act(t, obj, obj_bytes, r0, r1, x, y, threads, NF_ACT_A16);
}

int nf_gemv_rows_act(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, float *y, unsigned threads,
                     nf_act act)
{
    if (!t || !x || !y || !obj)
        return NF_CODEC_EINVAL;
    if (act != NF_ACT_A16 && act != NF_ACT_A8)
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    if (r0 == r1)
        return 0;
    uint64_t K = t->cols;
    if (act == NF_ACT_A8 && !x_finite(x, K))
        act = NF_ACT_A16;
    if (!threads)
        threads = nf_cpu_count();
    nf_isa isa = nf_gv_isa();
    if (atomic_load(&g_use_int) && nf_gemv_int_supported(t, isa)) {
        int rc = nf_gemv_int_rows(t, obj, obj_bytes, r0, r1, x, act, y, threads, isa);
        if (rc != 1)
            return rc;
    }
    if (t->layout == NF_LAY_GGUF_ROWS_V1 && act == NF_ACT_A8) {
        int rc = nf_gemv_gguf_a8_rows(t, obj, obj_bytes, r0, r1, x, y, threads, isa);
        if (rc != 1)
            return rc;
    }
    /* x in f32 (and its even / odd columns for the P order on A8), in this
     * thread's buffer */
    uint64_t np = (K + 1) / 2, nb = (K + NF_A8_BLOCK - 1) / NF_A8_BLOCK;
    uint64_t xfb = ((K ? K : 1) * sizeof(float) + 63) & ~(uint64_t)63;
    uint64_t pb = ((np + 16) * sizeof(float) + 63) & ~(uint64_t)63;
    uint64_t qb = (nb * NF_A8_BLOCK + 63) & ~(uint64_t)63, db = (nb * sizeof(float) + 63) & ~(uint64_t)63;
    uint8_t *xbuf = nf_pool_scratch(3, xfb + 2 * pb + qb + db);
    if (!xbuf)
        return NF_CODEC_ENOMEM;
    fctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.obj = obj;
    c.obj_bytes = obj_bytes;
    c.K = K;
    c.r0 = r0;
    c.y = y;
    c.isa = isa;
    float *xf = (float *)(void *)xbuf;
    x_to_f32(x, K, act, xf, (int8_t *)(xbuf + xfb + 2 * pb), (float *)(void *)(xbuf + xfb + 2 * pb + qb));
    c.xf = xf;
    uint64_t row_bytes = t->rows ? t->enc.encoded_bytes / t->rows : 0;
    nf_gv_rows_fn fn = rows_generic;
    if (t->layout == NF_LAY_GGUF_ROWS_V1) {
        int rc = nf_gemv_gguf_rows(t, obj, obj_bytes, r0, r1, xf, y, threads, isa);
        if (rc != 1)
            return rc;
    } else if (t->layout == NF_LAY_CONTIGUOUS_LE_V1 && t->enc.nplanes &&
               (t->format == NF_FMT_FP32 || t->format == NF_FMT_INT32)) {
        c.p0 = obj + t->enc.plane[0].offset;
        fn = rows_contig32;
    } else if ((t->layout == NF_LAY_CONTIGUOUS_LE_V1 && t->format == NF_FMT_BF16 && t->enc.nplanes) ||
               (t->layout == NF_LAY_ROW_SCALE_V1 && t->format == NF_FMT_FP8_E4M3FN_ROW_BF16)) {
        bool fp8 = t->format == NF_FMT_FP8_E4M3FN_ROW_BF16;
        c.p0 = obj + t->enc.plane[0].offset;
        if (fp8)
            c.p1 = obj + t->enc.plane[1].offset;
        pthread_once(&g_e4m3_once, e4m3_table);
        if (act == NF_ACT_A16) {
            c.xb = x;
#if NF_GEMV_X86
            if (isa >= NF_ISA_AVX512 && cpu_bf16() && (!fp8 || cpu_vbmi())) {
                c.ex = min_exp_bf16(x, K);
                c.vdp = fp8 ? c.ex >= 17 : c.ex >= 1;
            }
#endif
        }
        if (!c.vdp) {
            /* the FMA form takes x's even and odd columns apart as f32, once
             * a call instead of once a row (A8: x^; A16: x, the same values
             * the kernels would split from the bf16 words) */
            float *xe = (float *)(void *)(xbuf + xfb), *xo = (float *)(void *)(xbuf + xfb + pb);
            for (uint64_t p = 0; p < np; p++) {
                xe[p] = xf[2 * p];
                xo[p] = 2 * p + 1 < K ? xf[2 * p + 1] : 0.0f;
            }
            c.xe = xe;
            c.xo = xo;
        }
#if NF_GEMV_X86
        /* without vdp, x in pieces that stay in L1 once it outgrows it */
        uint64_t xcol = c.xe ? 4 : 2; /* x's bytes a column: f32 pairs, or bf16 */
        if (!c.vdp && K * xcol > P_PIECE_BYTES)
            c.kb = P_PIECE_BYTES / xcol; /* a multiple of 128 columns */
#endif
        fn = rows_p;
    }
    return nf_gv_run(fn, &c, r0, r1, row_bytes, threads);
}

int nf_gemv(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, const uint16_t *x,
            float *y, unsigned threads)
{
    return t ? nf_gemv_rows(t, obj, obj_bytes, 0, t->rows, x, y, threads) : NF_CODEC_EINVAL;
}

/* ---- the reference ----------------------------------------------------------------- */

int nf_gemv_ref(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                const uint16_t *x, float *y)
{
    return t ? nf_gemv_ref_rows(t, obj, obj_bytes, 0, t->rows, x, y, NULL) : NF_CODEC_EINVAL;
}

int nf_gemv_ref_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                     uint64_t r0, uint64_t r1, const uint16_t *x, float *y, double *bound)
{
    return nf_gemv_ref_rows_act(t, obj, obj_bytes, r0, r1, x, y, bound, NF_ACT_A16);
}

int nf_gemv_ref_rows_act(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                         uint64_t r0, uint64_t r1, const uint16_t *x, float *y, double *bound,
                         nf_act act)
{
    if (!t || !obj || !x || !y)
        return NF_CODEC_EINVAL;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    if (act != NF_ACT_A16 && act != NF_ACT_A8)
        return NF_CODEC_EINVAL;
    uint64_t K = t->cols;
    nf_isa prev = nf_codec_isa();
    float *row = malloc((K ? K : 1) * sizeof *row);
    double *xd = malloc((K ? K : 1) * sizeof *xd);
    int8_t *q = act == NF_ACT_A8 ? malloc((K / NF_A8_BLOCK + 1) * NF_A8_BLOCK) : NULL;
    float *qd = act == NF_ACT_A8 ? malloc((K / NF_A8_BLOCK + 1) * sizeof *qd) : NULL;
    if (!row || !xd || (act == NF_ACT_A8 && (!q || !qd))) {
        free(row);
        free(xd);
        free(q);
        free(qd);
        return NF_CODEC_ENOMEM;
    }
    if (act == NF_ACT_A8 && x_finite(x, K)) {
        nf_a8_quantize(x, K, q, qd);
        for (uint64_t k = 0; k < K; k++) /* exact: 8 x 24 bits */
            xd[k] = (double)q[k] * (double)qd[k / NF_A8_BLOCK];
    } else {
        for (uint64_t k = 0; k < K; k++)
            xd[k] = (double)nf_bf16_to_f32(x[k]);
    }
    /* the scalar path is the obviously-right one; SIMD paths match it bit
     * for bit, so this does not change results, only who computes them */
    nf_codec_set_isa(NF_ISA_SCALAR);
    int rc = 0;
    for (uint64_t n = r0; n < r1 && !rc; n++) {
        rc = nf_decode_rows_f32(t, obj, obj_bytes, n, n + 1, row);
        double s = 0, a = 0;
        for (uint64_t k = 0; !rc && k < t->cols; k++) {
            double p = (double)row[k] * xd[k];
            s += p;
            a += fabs(p);
        }
        y[n - r0] = (float)s;
        if (bound)
            bound[n - r0] = (double)t->cols * 0x1p-24 * a + fabs(s) * 0x1p-24;
    }
    nf_codec_set_isa(prev);
    free(row);
    free(xd);
    free(q);
    free(qd);
    return rc;
}

static void a8q_scalar(const uint16_t *x, uint64_t K, int8_t *q, float *d)
{
    for (uint64_t b = 0; b * NF_A8_BLOCK < K; b++) {
        uint64_t k0 = b * NF_A8_BLOCK, k1 = k0 + NF_A8_BLOCK < K ? k0 + NF_A8_BLOCK : K;
        float amax = 0.0f;
        bool fin = true;
        for (uint64_t k = k0; k < k1; k++) {
            float v = nf_bf16_to_f32(x[k]);
            fin &= isfinite(v);
            amax = fabsf(v) > amax ? fabsf(v) : amax;
        }
        float db = fin ? amax / 127.0f : 0.0f, id = db != 0.0f ? 127.0f / amax : 0.0f;
        bool recip = isfinite(id);
        d[b] = db;
        for (uint64_t k = k0; k < k1; k++) {
            float v = nf_bf16_to_f32(x[k]);
            float t = db == 0.0f ? 0.0f : recip ? v * id : v / db;
            t = t > 127.0f ? 127.0f : t < -127.0f ? -127.0f : t;
            q[k] = (int8_t)(int)((t + 0x1.8p23f) - 0x1.8p23f);
        }
        for (uint64_t k = k1; k < k0 + NF_A8_BLOCK; k++)
            q[k] = 0;
    }
}

#if NF_GEMV_X86
/* Lane i of the result: the largest of the 16 lanes of v[i] (blocks of 16
 * in order): four rounds that halve the partial maxima of two vectors into
 * one (even and odd lanes), 15 vpermt2ps pairs for 16 blocks instead of a
 * reduction each. */
T512 static __m512 max16x16(__m512 *v)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (unsigned n = 16; n > 1; n /= 2)
        for (unsigned j = 0; j < n / 2; j++)
            v[j] = _mm512_max_ps(_mm512_permutex2var_ps(v[2 * j], ev, v[2 * j + 1]),
                                 _mm512_permutex2var_ps(v[2 * j], od, v[2 * j + 1]));
    return v[0];
}

/* The same operations lane by lane, a block of 16 a vector; the scales of
 * 16 blocks at a time (their maxima by max16x16, the divisions as vectors:
 * the same IEEE quotients). */
T512 static void a8q_512(const uint16_t *x, uint64_t K, int8_t *q, float *d)
{
    const __m512i ex = _mm512_set1_epi32(0x7f800000), ab = _mm512_set1_epi32(0x7fffffff);
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f), mg = _mm512_set1_ps(0x1.8p23f);
    uint64_t b = 0;
    for (; 16 * b + 256 <= K; b += 16) { /* 16 whole blocks */
        __m512 a[16];
        __mmask16 fin = 0;
        for (unsigned i = 0; i < 16; i++) {
            __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + 16 * (b + i)))), 16);
            fin |= (__mmask16)((_mm512_cmpeq_epi32_mask(_mm512_and_si512(u, ex), ex) == 0) << i);
            a[i] = _mm512_castsi512_ps(_mm512_and_si512(u, ab));
        }
        __m512 amax = max16x16(a);
        __m512 db = _mm512_maskz_div_ps(fin, amax, _mm512_set1_ps(127.0f));
        __mmask16 nz = _mm512_cmpneq_ps_mask(db, _mm512_setzero_ps());
        __m512 id = _mm512_maskz_div_ps(nz, _mm512_set1_ps(127.0f), amax);
        __mmask16 rec = _mm512_cmp_ps_mask(_mm512_abs_ps(id), _mm512_set1_ps(0x1.fffffep127f), _CMP_LE_OQ);
        float iv[16];
        _mm512_storeu_ps(d + b, db);
        _mm512_storeu_ps(iv, id);
        for (unsigned i = 0; i < 16; i++) {
            uint64_t k0 = 16 * (b + i);
            if (!((nz >> i) & 1)) {
                _mm_storeu_si128((__m128i *)(void *)(q + k0), _mm_setzero_si128());
                continue;
            }
            __m512 v = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(x + k0))), 16));
            __m512 t = (rec >> i) & 1 ? _mm512_mul_ps(v, _mm512_set1_ps(iv[i])) : _mm512_div_ps(v, _mm512_set1_ps(d[b + i]));
            t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
            t = _mm512_sub_ps(_mm512_add_ps(t, mg), mg);
            _mm_storeu_si128((__m128i *)(void *)(q + k0), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(t)));
        }
    }
    for (; b * 16 < K; b++) {
        uint64_t k0 = 16 * b;
        __mmask16 m = mask16(K - k0);
        __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, x + k0)), 16);
        bool fin = !_mm512_mask_cmpeq_epi32_mask(m, _mm512_and_si512(u, ex), ex);
        float amax = fin ? _mm512_reduce_max_ps(_mm512_castsi512_ps(_mm512_and_si512(u, ab))) : 0.0f;
        float db = fin ? amax / 127.0f : 0.0f, id = db != 0.0f ? 127.0f / amax : 0.0f;
        d[b] = db;
        if (db == 0.0f) {
            _mm_storeu_si128((__m128i *)(void *)(q + k0), _mm_setzero_si128());
            continue;
        }
        __m512 v = _mm512_castsi512_ps(u);
        __m512 t = isfinite(id) ? _mm512_mul_ps(v, _mm512_set1_ps(id)) : _mm512_div_ps(v, _mm512_set1_ps(db));
        t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
        t = _mm512_sub_ps(_mm512_add_ps(t, mg), mg);
        _mm_storeu_si128((__m128i *)(void *)(q + k0), _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(t)));
    }
}

T256 static void a8q_256(const uint16_t *x, uint64_t K, int8_t *q, float *d)
{
    const __m256i ex = _mm256_set1_epi32(0x7f800000), ab = _mm256_set1_epi32(0x7fffffff);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f), mg = _mm256_set1_ps(0x1.8p23f);
    for (uint64_t b = 0; b * 16 < K; b++) {
        uint64_t k0 = 16 * b;
        uint16_t w[16] = {0};
        if (K - k0 >= 16)
            memcpy(w, x + k0, 32);
        else
            memcpy(w, x + k0, 2 * (K - k0));
        __m128i wl = _mm_loadu_si128((const __m128i *)(const void *)w);
        __m128i wh = _mm_loadu_si128((const __m128i *)(const void *)(w + 8));
        __m256i u0 = _mm256_slli_epi32(_mm256_cvtepu16_epi32(wl), 16);
        __m256i u1 = _mm256_slli_epi32(_mm256_cvtepu16_epi32(wh), 16);
        __m256i bad = _mm256_or_si256(_mm256_cmpeq_epi32(_mm256_and_si256(u0, ex), ex),
                                      _mm256_cmpeq_epi32(_mm256_and_si256(u1, ex), ex));
        bool fin = _mm256_testz_si256(bad, bad);
        float amax = 0.0f;
        if (fin) {
            __m256 a = _mm256_max_ps(_mm256_castsi256_ps(_mm256_and_si256(u0, ab)),
                                     _mm256_castsi256_ps(_mm256_and_si256(u1, ab)));
            __m128 r = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
            r = _mm_max_ps(r, _mm_movehl_ps(r, r));
            amax = _mm_cvtss_f32(_mm_max_ss(r, _mm_shuffle_ps(r, r, 1)));
        }
        float db = fin ? amax / 127.0f : 0.0f, id = db != 0.0f ? 127.0f / amax : 0.0f;
        d[b] = db;
        if (db == 0.0f) {
            memset(q + k0, 0, 16);
            continue;
        }
        bool recip = isfinite(id);
        __m256 t0 = _mm256_castsi256_ps(u0), t1 = _mm256_castsi256_ps(u1);
        t0 = recip ? _mm256_mul_ps(t0, _mm256_set1_ps(id)) : _mm256_div_ps(t0, _mm256_set1_ps(db));
        t1 = recip ? _mm256_mul_ps(t1, _mm256_set1_ps(id)) : _mm256_div_ps(t1, _mm256_set1_ps(db));
        t0 = _mm256_sub_ps(_mm256_add_ps(_mm256_min_ps(_mm256_max_ps(t0, lo), hi), mg), mg);
        t1 = _mm256_sub_ps(_mm256_add_ps(_mm256_min_ps(_mm256_max_ps(t1, lo), hi), mg), mg);
        __m256i p = _mm256_packs_epi32(_mm256_cvttps_epi32(t0), _mm256_cvttps_epi32(t1));
        p = _mm256_permute4x64_epi64(p, 0xd8);
        __m128i b8 = _mm_packs_epi16(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
        _mm_storeu_si128((__m128i *)(void *)(q + k0), b8);
    }
}
#endif

void nf_a8_quantize(const uint16_t *x, uint64_t K, int8_t *q, float *d)
{
#if NF_GEMV_X86
    nf_isa isa = nf_codec_isa();
    if (isa >= NF_ISA_AVX512) {
        a8q_512(x, K, q, d);
        return;
    }
    if (isa >= NF_ISA_AVX2) {
        a8q_256(x, K, q, d);
        return;
    }
#endif
    a8q_scalar(x, K, q, d);
}

static int rows_decode(void *arg, uint64_t a, uint64_t b)
{
    const fctx *c = arg;
    return nf_gv_rows_f32(c->t, c->obj, c->obj_bytes, a, b, NULL, NULL, 0, c->isa);
}

int nf_decode_pass(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                   unsigned threads)
{
    if (!t || !obj)
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    fctx c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.obj = obj;
    c.obj_bytes = obj_bytes;
    c.isa = nf_gv_isa();
    uint64_t row_bytes = t->rows ? t->enc.encoded_bytes / t->rows : 0;
    return nf_gv_run(rows_decode, &c, 0, t->rows, row_bytes, threads ? threads : nf_cpu_count());
}

/* ---- the CPU peak: read-only passes ----------------------------------------- */

/* The size of the last-level cache: the largest cache of the highest level
 * that sysfs lists for CPU 0 (data or unified), else sysconf's L3 or L2,
 * else 32 MiB. */
uint64_t nf_llc_bytes(void)
{
    uint64_t best = 0;
    int best_level = 0;
    for (int i = 0; i < 16; i++) {
        char path[96], buf[64];
        int level = 0;
        uint64_t size = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        if (fgets(buf, sizeof buf, f))
            level = atoi(buf);
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        f = fopen(path, "r");
        bool instr = false;
        if (f) {
            instr = fgets(buf, sizeof buf, f) && !strncmp(buf, "Instruction", 11);
            fclose(f);
        }
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (f) {
            char *end = NULL;
            if (fgets(buf, sizeof buf, f)) {
                unsigned long long v = strtoull(buf, &end, 10);
                size = v;
                if (end && (*end == 'K' || *end == 'k'))
                    size = v << 10;
                else if (end && (*end == 'M' || *end == 'm'))
                    size = v << 20;
                else if (end && (*end == 'G' || *end == 'g'))
                    size = v << 30;
            }
            fclose(f);
        }
        if (instr || !size)
            continue;
        if (level > best_level || (level == best_level && size > best)) {
            best_level = level;
            best = size;
        }
    }
    if (!best) {
        long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
        v = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
        if (v <= 0)
            v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        best = v > 0 ? (uint64_t)v : 32u << 20;
    }
    return best;
}

struct rjob {
    const unsigned char *p;
    size_t bytes;
    unsigned variant;
    atomic_size_t *next; /* variant 2: the next chunk */
    uint64_t result[NF_POOL_MAX];
};

#define RCHUNK ((size_t)256 << 10)

#if NF_GEMV_X86
/* Sum [b, e) (multiples of 256) with 64-byte loads, 4 in flight;
 * pf: software prefetch PF_DIST ahead, as the kernels do. */
T512 static uint64_t read512(const unsigned char *p, size_t b, size_t e, bool pf)
{
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = b; i < e; i += 256) {
        if (pf)
            for (int l = 0; l < 256; l += 64)
                _mm_prefetch((const char *)p + i + l + PF_DIST, _MM_HINT_T0);
        s0 = _mm512_add_epi64(s0, _mm512_load_si512((const void *)(p + i)));
        s1 = _mm512_add_epi64(s1, _mm512_load_si512((const void *)(p + i + 64)));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512((const void *)(p + i + 128)));
        s3 = _mm512_add_epi64(s3, _mm512_load_si512((const void *)(p + i + 192)));
    }
    uint64_t l[8], r = 0; /* not _mm512_reduce_add_epi64: its sums are signed */
    _mm512_storeu_si512((void *)l, _mm512_add_epi64(_mm512_add_epi64(s0, s1),
                                                    _mm512_add_epi64(s2, s3)));
    for (int i = 0; i < 8; i++)
        r += l[i];
    return r;
}

T256 static uint64_t read256(const unsigned char *p, size_t b, size_t e, bool pf)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = b; i < e; i += 128) {
        if (pf)
            for (int l = 0; l < 128; l += 64)
                _mm_prefetch((const char *)p + i + l + PF_DIST, _MM_HINT_T0);
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(p + i + 32)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(p + i + 64)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(p + i + 96)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    return (uint64_t)_mm256_extract_epi64(s, 0) + (uint64_t)_mm256_extract_epi64(s, 1) +
           (uint64_t)_mm256_extract_epi64(s, 2) + (uint64_t)_mm256_extract_epi64(s, 3);
}
#endif

static uint64_t read_range(const unsigned char *p, size_t b, size_t e, bool pf)
{
#if NF_GEMV_X86
    nf_isa isa = nf_codec_isa();
    if (isa >= NF_ISA_AVX512)
        return read512(p, b, e, pf);
    if (isa >= NF_ISA_AVX2)
        return read256(p, b, e, pf);
#endif
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = b; i < e; i += 32) {
        if (pf)
            __builtin_prefetch(p + i + PF_DIST);
        s0 += *(const uint64_t *)(const void *)(p + i);
        s1 += *(const uint64_t *)(const void *)(p + i + 8);
        s2 += *(const uint64_t *)(const void *)(p + i + 16);
        s3 += *(const uint64_t *)(const void *)(p + i + 24);
    }
    return s0 ^ s1 ^ s2 ^ s3;
}

static void read_part(void *arg, unsigned idx, unsigned n)
{
    struct rjob *r = arg;
    size_t end = r->bytes & ~(size_t)255;
    if (r->variant == 2) { /* chunks handed out in turn, as the GEMV hands out rows */
        uint64_t x = 0;
        for (;;) {
            size_t c = atomic_fetch_add(r->next, 1) * RCHUNK;
            if (c >= end)
                break;
            x += read_range(r->p, c, c + RCHUNK < end ? c + RCHUNK : end, true);
        }
        r->result[idx] = x;
        return;
    }
    size_t per = (end / n) & ~(size_t)255;
    size_t b = per * idx, e = idx + 1 == n ? end : b + per;
    r->result[idx] = read_range(r->p, b, e, r->variant == 1);
}

uint64_t nf_read_pass_variant(const void *buf, size_t bytes, unsigned threads, unsigned variant)
{
    if (!threads)
        threads = nf_cpu_count();
    if (threads > NF_POOL_MAX)
        threads = NF_POOL_MAX;
    atomic_size_t next = 0;
    struct rjob r;
    memset(&r, 0, sizeof r);
    r.p = buf;
    r.bytes = bytes;
    r.variant = variant % NF_READ_VARIANTS;
    r.next = &next;
    unsigned n = nf_pool_run(read_part, &r, threads);
    uint64_t x = 0;
    for (unsigned i = 0; i < n; i++)
        x ^= r.result[i];
    return x;
}

uint64_t nf_read_pass(const void *buf, size_t bytes, unsigned threads)
{
    return nf_read_pass_variant(buf, bytes, threads, 0);
}
