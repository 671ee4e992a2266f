/* nf_gemv_gguf.c — fused decode + dot GEMV kernels of the gguf_* formats
 * (nf_gemv_gguf.h). Each row's blocks go through the weight generators of
 * nf_gguf_simd.inc in GG_FMA mode: the weights are formed in registers and
 * multiplied into four accumulators, so the block bytes are read once and
 * nothing is written back. x stays in natural order (every generator
 * produces its weights in element order). One software prefetch per 64
 * bytes, PF_DIST ahead, as the other kernels do.
 */
#include "nf_gemv_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_GG_X86 1
#include "nf_gguf_simd.inc"
#else
#define NF_GG_X86 0
#endif

#define PF_DIST 4096

typedef float (*row_fn)(const uint8_t *row, const float *x, uint64_t nb);

#if NF_GG_X86

GG_T512 GG_INLINE float gg_hsum512(const __m512 *a)
{
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
}

GG_T256 GG_INLINE float gg_hsum256(const __m256 *a)
{
    __m256 s = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

/* One row of nb blocks: prefetch the bytes PF_DIST ahead a line at a time,
 * then the generator. */
#define GG_ROW(W, name, QK, B)                                                           \
    GG_T##W static float row##W##_##name(const uint8_t *p, const float *x, uint64_t nb)  \
    {                                                                                    \
        __m##W acc[4] = {_mm##W##_setzero_ps(), _mm##W##_setzero_ps(),                   \
                         _mm##W##_setzero_ps(), _mm##W##_setzero_ps()};                  \
        const uint8_t *pf = p;                                                           \
        for (uint64_t i = 0; i < nb; i++, p += (B), x += (QK)) {                         \
            for (; pf < p + (B); pf += 64)                                               \
                _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);                   \
            gg##W##_##name(p, (float *)x, acc, GG_FMA);                                  \
        }                                                                                \
        return gg_hsum##W(acc);                                                          \
    }

#define GG_ROWS(W)                                                                       \
    GG_ROW(W, q8_0, 32, 34) GG_ROW(W, q4_0, 32, 18) GG_ROW(W, q4_1, 32, 20)              \
    GG_ROW(W, q5_0, 32, 22) GG_ROW(W, q5_1, 32, 24) GG_ROW(W, iq4_nl, 32, 18)            \
    GG_ROW(W, mxfp4, 32, 17) GG_ROW(W, q2_k, 256, 84) GG_ROW(W, q3_k, 256, 110)          \
    GG_ROW(W, q4_k, 256, 144) GG_ROW(W, q5_k, 256, 176) GG_ROW(W, q6_k, 256, 210)        \
    GG_ROW(W, iq4_xs, 256, 136)

GG_ROWS(512)
GG_ROWS(256)

/* gguf_f16: nb is the element count; 16 (8) at a time, the tail in scalar */
GG_T512 static float row512_f16(const uint8_t *p, const float *x, uint64_t n)
{
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    uint64_t i = 0;
    const uint8_t *pf = p;
    for (; i + 64 <= n; i += 64) {
        for (; pf < p + 2 * i + 128; pf += 64)
            _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);
        for (int k = 0; k < 4; k++)
            acc[k] = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 2 * i + 32 * k))),
                                     _mm512_loadu_ps(x + i + 16 * k), acc[k]);
    }
    for (; i + 16 <= n; i += 16)
        acc[0] = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 2 * i))),
                                 _mm512_loadu_ps(x + i), acc[0]);
    float t = gg_hsum512(acc);
    for (; i < n; i++)
        t += nf_fp16_to_f32(gg_ld16(p + 2 * i)) * x[i];
    return t;
}

GG_T256 static float row256_f16(const uint8_t *p, const float *x, uint64_t n)
{
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    uint64_t i = 0;
    const uint8_t *pf = p;
    for (; i + 32 <= n; i += 32) {
        for (; pf < p + 2 * i + 64; pf += 64)
            _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);
        for (int k = 0; k < 4; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i + 16 * k))),
                                     _mm256_loadu_ps(x + i + 8 * k), acc[k]);
    }
    for (; i + 8 <= n; i += 8)
        acc[0] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))),
                                 _mm256_loadu_ps(x + i), acc[0]);
    float t = gg_hsum256(acc);
    for (; i < n; i++)
        t += nf_fp16_to_f32(gg_ld16(p + 2 * i)) * x[i];
    return t;
}

static row_fn pick(nf_format f, nf_isa isa)
{
    bool z = isa == NF_ISA_AVX512;
    switch (f) {
#define GG_PICK(F, name) case F: return z ? row512_##name : row256_##name;
        GG_FORMATS(GG_PICK)
#undef GG_PICK
    default: return NULL;
    }
}
#else
static row_fn pick(nf_format f, nf_isa isa)
{
    (void)f;
    (void)isa;
    return NULL;
}
#endif /* NF_GG_X86 */

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

/* ---- threads ---------------------------------------------------------------- */

struct job {
    row_fn fn;
    const uint8_t *data;
    uint64_t rb, nb, r0, r1, chunk;
    const float *x;
    float *y;
    atomic_uint_fast64_t next;
};

static void *worker(void *arg)
{
    struct job *j = arg;
    for (;;) {
        uint64_t c = atomic_fetch_add(&j->next, 1);
        uint64_t a = j->r0 + c * j->chunk;
        if (a >= j->r1)
            break;
        uint64_t b = a + j->chunk < j->r1 ? a + j->chunk : j->r1;
        for (uint64_t n = a; n < b; n++)
            j->y[n - j->r0] = j->fn(j->data + n * j->rb, j->x, j->nb);
    }
    return NULL;
}

int nf_gemv_gguf_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                      uint64_t r1, const float *x, float *y, unsigned threads, nf_isa isa)
{
    if (!t || !obj || !x || !y || t->layout != NF_LAY_GGUF_ROWS_V1 || !nf_format_is_gguf(t->format))
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    nf_isa have = cpu_best();
    if (isa > have)
        isa = have;
    if (isa < NF_ISA_AVX2)
        return 1;
    struct job j;
    memset(&j, 0, sizeof j);
    j.fn = pick(t->format, isa);
    if (!j.fn)
        return 1;
    nf_gguf_info gi = nf_gguf_info_of(t->format);
    j.data = obj + t->enc.plane[0].offset;
    j.rb = t->enc.plane[0].row_bytes;
    j.nb = t->cols / gi.qk; /* gguf_f16: the element count */
    j.r0 = r0;
    j.r1 = r1;
    j.x = x;
    j.y = y;
    if (!threads)
        threads = nf_cpu_count();
    if (threads > 64)
        threads = 64;
    /* no thread for less than ~256 KiB of weights */
    uint64_t bytes = (r1 - r0) * j.rb, most = bytes / (256u << 10) + 1;
    if (threads > most)
        threads = (unsigned)most;
    j.chunk = (r1 - r0) / ((uint64_t)threads * 16) + 1;
    pthread_t tid[64];
    unsigned started = 0;
    for (unsigned i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, worker, &j) == 0)
            started++;
    worker(&j);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return 0;
}
