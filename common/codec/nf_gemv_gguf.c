/* nf_gemv_gguf.c — fused decode + dot GEMV kernels of the gguf_* formats
 * (nf_gemv_gguf.h). Each row's blocks go through the weight generators of
 * nf_gguf_simd.inc in GG_FMA mode: the weights are formed in registers and
 * multiplied into four accumulators, so the block bytes are read once and
 * nothing is written back. x stays in natural order (every generator
 * produces its weights in element order). One software prefetch per 64
 * bytes, PF_DIST ahead.
 */
#include "nf_gemv_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_gemv_int.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_GG_X86 1
#include "nf_gguf_simd.inc"
#else
#define NF_GG_X86 0
#endif

#define PF_DIST 8192 /* measured: 4096 left the 4096x14336 cold case ~15% behind */

typedef float (*row_fn)(const uint8_t *row, const float *x, uint64_t nb);

#if NF_GG_X86
#include "nf_gemv_tree.inc"

#define GG_NACC512 4
#define GG_NACC256 8
#define GG_TREE512(acc) nf_tree64_512(acc[0], acc[1], acc[2], acc[3])
#define GG_TREE256(acc) nf_tree64_256(acc)

/* One row of nb blocks in F order (element k into slot k % 64): a 32-block
 * fills half the slots, so blocks go in pairs, the odd one handed the
 * upper half of the accumulators; prefetch the bytes PF_DIST ahead a line
 * at a time. */
#define GG_ROW(W, name, QK, B)                                                           \
    GG_T##W static float row##W##_##name(const uint8_t *p, const float *x, uint64_t nb)  \
    {                                                                                    \
        __m##W acc[GG_NACC##W];                                                          \
        for (int a_ = 0; a_ < GG_NACC##W; a_++)                                          \
            acc[a_] = _mm##W##_setzero_ps();                                             \
        const uint8_t *pf = p;                                                           \
        uint64_t i = 0;                                                                  \
        if ((QK) == 32)                                                                  \
            for (; i + 2 <= nb; i += 2, p += 2 * (B), x += 64) {                         \
                for (; pf < p + 2 * (B); pf += 64)                                       \
                    _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);               \
                gg##W##_##name(p, (float *)x, acc, GG_FMA);                              \
                gg##W##_##name(p + (B), (float *)x + 32, acc + GG_NACC##W / 2, GG_FMA);  \
            }                                                                            \
        for (; i < nb; i++, p += (B), x += (QK)) {                                       \
            for (; pf < p + (B); pf += 64)                                               \
                _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);                   \
            gg##W##_##name(p, (float *)x, acc, GG_FMA);                                  \
        }                                                                                \
        return GG_TREE##W(acc);                                                          \
    }

#define GG_ROWS(W)                                                                       \
    GG_ROW(W, q8_0, 32, 34) GG_ROW(W, q4_0, 32, 18) GG_ROW(W, q4_1, 32, 20)              \
    GG_ROW(W, q5_0, 32, 22) GG_ROW(W, q5_1, 32, 24) GG_ROW(W, iq4_nl, 32, 18)            \
    GG_ROW(W, mxfp4, 32, 17) GG_ROW(W, q2_k, 256, 84) GG_ROW(W, q3_k, 256, 110)          \
    GG_ROW(W, q4_k, 256, 144) GG_ROW(W, q5_k, 256, 176) GG_ROW(W, q6_k, 256, 210)        \
    GG_ROW(W, iq4_xs, 256, 136)

GG_ROWS(512)
GG_ROWS(256)

/* The QK 32 formats with f16 scales on AVX-512: 8 blocks at a time, their
 * scales converted together (gg512_scales8) and the generators reading
 * them from memory, then the pairs and the odd block as GG_ROW does: the
 * same operations on the same values in the same slots, so the same bits. */
#define GG_ROW8S(name, B)                                                                \
    GG_T512 static float row512s_##name(const uint8_t *p, const float *x, uint64_t nb)   \
    {                                                                                    \
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),  \
                         _mm512_setzero_ps()};                                           \
        uint16_t ixa[32];                                                                \
        gg512_scales8_ix((B), ixa);                                                      \
        const __m512i ix = _mm512_loadu_si512((const void *)ixa);                        \
        float sc[16] __attribute__((aligned(64)));                                       \
        const uint8_t *pf = p;                                                           \
        uint64_t i = 0;                                                                  \
        for (; i + 8 <= nb; i += 8, p += 8 * (B), x += 256) {                            \
            for (; pf < p + 8 * (B); pf += 64)                                           \
                _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);                   \
            gg512_scales8(p, (B), ix, sc);                                               \
            for (int k = 0; k < 8; k += 2) {                                             \
                gg512_##name##_s(p + k * (B), sc + k, 8, (float *)x + 32 * k, acc, GG_FMA); \
                gg512_##name##_s(p + (k + 1) * (B), sc + k + 1, 8, (float *)x + 32 * k + 32, \
                                 acc + 2, GG_FMA);                                       \
            }                                                                            \
        }                                                                                \
        for (; i + 2 <= nb; i += 2, p += 2 * (B), x += 64) {                             \
            for (; pf < p + 2 * (B); pf += 64)                                           \
                _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);                   \
            gg512_##name(p, (float *)x, acc, GG_FMA);                                    \
            gg512_##name(p + (B), (float *)x + 32, acc + 2, GG_FMA);                     \
        }                                                                                \
        for (; i < nb; i++, p += (B), x += 32) {                                         \
            for (; pf < p + (B); pf += 64)                                               \
                _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);                   \
            gg512_##name(p, (float *)x, acc, GG_FMA);                                    \
        }                                                                                \
        return GG_TREE512(acc);                                                          \
    }
GG_ROW8S(q8_0, 34)
GG_ROW8S(q4_0, 18)
GG_ROW8S(q4_1, 20)
GG_ROW8S(q5_0, 22)
GG_ROW8S(q5_1, 24)
GG_ROW8S(iq4_nl, 18)

/* gguf_f16: nb is the element count; element k into slot k % 64, the tail
 * masked (AVX-512) or from a zeroed copy (AVX2). */
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
    for (int k = 0; k < 4 && i < n; k++, i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
        acc[k] = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p + 2 * i)),
                                 _mm512_maskz_loadu_ps(m, x + i), acc[k]);
    }
    return GG_TREE512(acc);
}

GG_T256 static float row256_f16(const uint8_t *p, const float *x, uint64_t n)
{
    __m256 acc[8];
    for (int k = 0; k < 8; k++)
        acc[k] = _mm256_setzero_ps();
    uint64_t i = 0;
    const uint8_t *pf = p;
    for (; i + 64 <= n; i += 64) {
        for (; pf < p + 2 * i + 128; pf += 64)
            _mm_prefetch((const char *)pf + PF_DIST, _MM_HINT_T0);
        for (int k = 0; k < 8; k++)
            acc[k] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i + 16 * k))),
                                     _mm256_loadu_ps(x + i + 8 * k), acc[k]);
    }
    for (int k = 0; k < 8 && i < n; k++, i += 8) {
        uint16_t h[8] = {0};
        float xv[8] = {0};
        unsigned m = n - i >= 8 ? 8 : (unsigned)(n - i);
        memcpy(h, p + 2 * i, 2 * m);
        memcpy(xv, x + i, 4 * m);
        acc[k] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h)),
                                 _mm256_loadu_ps(xv), acc[k]);
    }
    return GG_TREE256(acc);
}

static row_fn pick(nf_format f, nf_isa isa)
{
    bool z = isa == NF_ISA_AVX512;
    if (z)
        switch (f) {
        case NF_FMT_GGUF_Q8_0: return row512s_q8_0;
        case NF_FMT_GGUF_Q4_0: return row512s_q4_0;
        case NF_FMT_GGUF_Q4_1: return row512s_q4_1;
        case NF_FMT_GGUF_Q5_0: return row512s_q5_0;
        case NF_FMT_GGUF_Q5_1: return row512s_q5_1;
        case NF_FMT_GGUF_IQ4_NL: return row512s_iq4_nl;
        default: break;
        }
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

/* ---- A16: the fused float kernels ------------------------------------------------- */

typedef struct {
    row_fn fn;
    const uint8_t *data;
    uint64_t rb, nb, r0;
    const float *x;
    float *y;
} gjob;

static int grows(void *arg, uint64_t a, uint64_t b)
{
    const gjob *j = arg;
    for (uint64_t n = a; n < b; n++)
        j->y[n - j->r0] = nf_gv_canon(j->fn(j->data + n * j->rb, j->x, j->nb));
    return 0;
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
    gjob j;
    memset(&j, 0, sizeof j);
    j.fn = pick(t->format, isa);
    if (!j.fn)
        return 1;
    nf_gguf_info gi = nf_gguf_info_of(t->format);
    j.data = obj + t->enc.plane[0].offset;
    j.rb = t->enc.plane[0].row_bytes;
    j.nb = t->cols / gi.qk; /* gguf_f16: the element count */
    j.r0 = r0;
    j.x = x;
    j.y = y;
    return nf_gv_run(grows, &j, r0, r1, j.rb, threads);
}

