/* nf_gemv.c — CPU GEMV, decode pass and read-bandwidth kernels.
 *
 * The integer path of nf_gemv_int.c serves the quantized formats where
 * the CPU has it (AVX-512 VNNI+VBMI) and the input fits its limbs; what it
 * declines comes here. Two ways to compute y = W x here:
 *  - fused kernels (AVX2+FMA+F16C, AVX-512 F/BW/VL; one per format/layout
 *    and ISA): each row is decoded in registers and multiplied into the
 *    accumulators at once, so the encoded bytes are read once and nothing is
 *    written back;
 *  - the generic two-pass path: nf_decode_rows_f32 into a small buffer, then
 *    dot products. It serves every format on every CPU, the rows the fused
 *    kernels decline (see below), and the decode benchmark.
 *
 * Exactness. Every fused kernel forms each weight with the codec's own
 * operations on the same exact operands, so each decoded weight equals
 * nf_decode_rows_f32's bit for bit; only the order of the f32 sums (and the
 * use of FMA) differs, which keeps the result within nf_gemv_ref_rows's
 * bound. The tricks, and why they are exact:
 *  - row_split: q8 (and q4 on AVX2) convert the code and multiply by s,
 *    as the codec does. q2, t2 (and q4, q5 on AVX-512) make the group's
 *    values for every code a small table, T[c] = (float)c * s (the codec's
 *    product), which the codes index with a permute. q6 (and q5/q6 on AVX2)
 *    splits the code into the base nibble and the high bits: c*s = nib*s +
 *    hi*s, two exact products whose sum c*s is representable (|c| < 64, s
 *    has 11 significant bits), so the f32 sum (or FMA) is exact and equals
 *    (float)c*s, signed zeros included.
 *  - nvfp4: a table per divisor value w of (e2m1(i) * e4m3(b)) / w for all
 *    256 block-scale codes b and all 16 codes i, computed with the same
 *    multiply then divide as the codec.
 *  - fp8: e4m3 bits moved to binary32 position read as e4m3(c) * 2^-120,
 *    multiplied by r * 2^120 (exact while |r| < 2^8): one rounding of the
 *    exact product e4m3(c) * r, like the codec.
 * Rows they decline go through the two-pass path: a row_split row with a
 * non-finite scale (the table's split sum or a padding column would turn it
 * into NaN where the codec gives +-inf), an fp8 row holding a NaN code or
 * with |r| >= 2^8 or r non-finite; nvfp4 objects whose divisor slices hold
 * fewer than 64 blocks (the table would cost more than it saves).
 *
 * Lane order. The kernels take x permuted to the order in which the codes
 * come out of the registers (e.g. for q4 the low nibbles of 16 bytes, i.e.
 * the even columns, then the high nibbles), built once per call; padding
 * columns K..Kp-1 get x = 0, so their codes never contribute.
 *
 * Memory. One software prefetch per 64 bytes of each stream, PF_DIST ahead
 * (the hardware prefetchers alone left these loops waiting on memory).
 */
#include "nf_gemv.h"
#include "nf_gemv_gguf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define NF_GEMV_X86 1
#include <immintrin.h>
#else
#define NF_GEMV_X86 0
#endif

#include "nf_fp.h"
#include "nf_gemv_int.h"

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

static float dot_scalar(const float *a, const float *b, uint64_t n)
{
    /* eight partial sums, like the SIMD path, so both round alike */
    float s[8] = {0};
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[i + l] * b[i + l];
    float t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}

#if NF_GEMV_X86
#define T256 __attribute__((target("avx2,fma,f16c")))
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#define NF_INLINE static inline __attribute__((always_inline))

T256 static float dot_avx2(const float *a, const float *b, uint64_t n)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
    }
    for (; i + 8 <= n; i += 8)
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    __m256 acc = _mm256_add_ps(acc0, acc1);
    __m128 lo = _mm256_castps256_ps128(acc), hi = _mm256_extractf128_ps(acc, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    float t = _mm_cvtss_f32(lo);
    for (; i < n; i++)
        t += a[i] * b[i];
    return t;
}
#endif

typedef float (*dot_fn)(const float *, const float *, uint64_t);

/* ---- which kernels ------------------------------------------------------- */

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

/* The ISA of the fused kernels: the codec's choice (nf_codec_set_isa),
 * capped by NF_GEMV_ISA. NF_ISA_SCALAR means the two-pass path. */
static nf_isa fused_isa(void)
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

static dot_fn pick_dot(void)
{
#if NF_GEMV_X86
    if (nf_codec_isa() >= NF_ISA_AVX2)
        return dot_avx2;
#endif
    return dot_scalar;
}

/* ---- fused kernels: shared state ----------------------------------------- */

typedef struct {
    float *sc;      /* the row's group scales as f32 (row_split) */
    float *tab;     /* nvfp4: (e2m1(i) * e4m3(b)) / w, 16 (AVX2: 8) per b */
    uint32_t tab_w; /* the divisor bits the table holds */
    bool tab_ok;
} gemv_tls;

struct gemv_ctx;
/* One row: 0 and *out = the dot product, or 1: the row is declined (use the
 * two-pass path). */
typedef int (*row_kernel)(const struct gemv_ctx *, gemv_tls *, uint64_t n, float *out);

typedef struct gemv_ctx {
    const nf_tensor_enc *t;
    const float *xp;        /* x in kernel lane order, zero padded */
    uint64_t K;
    const uint8_t *pl[3];   /* planes: row_split base/high/scales; nvfp4 codes,
                               block scales, divisors; fp8 codes, row scales;
                               contiguous data */
    uint64_t rb[3];         /* their row bytes (row_split) */
    unsigned ng;            /* row_split groups per row (Kp/G) */
    uint64_t pf_scl;        /* row_split: prefetch distance in the scales */
    uint64_t slice;         /* nvfp4 rows per divisor */
    row_kernel fn;
} gemv_ctx;

/* Column k of a block of B columns sits at (k%S)*(B/S) + (k%B)/S of the
 * block in xp: S = 2 for nibble pairs (even columns, then odd), 4 for 2-bit
 * codes or byte shuffles, 1 for the natural order. */
static void build_xp(const float *xf, uint64_t K, uint64_t Kx, unsigned B, unsigned S,
                     float *xp)
{
    if (S == 1) {
        memcpy(xp, xf, K * sizeof *xp);
        memset(xp + K, 0, (Kx - K) * sizeof *xp);
        return;
    }
    unsigned L = B / S;
    uint64_t b = 0;
    for (; b + B <= K; b += B) /* whole blocks: plain strided copies */
        for (unsigned q = 0; q < S; q++) {
            const float *src = xf + b + q;
            float *dst = xp + b + (uint64_t)q * L;
            for (unsigned j = 0; j < L; j++)
                dst[j] = src[(uint64_t)j * S];
        }
    memset(xp + b, 0, (Kx - b) * sizeof *xp);
    for (uint64_t k = b; k < K; k++) /* the last, partial block */
        xp[b + (k - b) % S * L + (k - b) / S] = xf[k];
}

/* Software prefetch distance in bytes of a stream (tuned on a 2-core
 * Ice Lake VM: 2-4 KiB gave 10-30% more than none for every format). */
#define PF_DIST 4096

#if NF_GEMV_X86
/* Software prefetch, one per 64 bytes of each stream, PF_DIST bytes ahead:
 * the hardware prefetchers alone leave these compute-heavy loops waiting
 * on memory (rows are contiguous, so running past a row's end fetches the
 * next rows). */
#define PF(p) _mm_prefetch((const char *)(p) + PF_DIST, _MM_HINT_T0)

T256 static void bf16_to_f32_avx2(const uint16_t *x, uint64_t K, float *xf)
{
    uint64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + k)));
        _mm256_storeu_ps(xf + k, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    }
    for (; k < K; k++)
        xf[k] = nf_bf16_to_f32(x[k]);
}

/* ======================= AVX-512 (F, BW, VL) ============================== */

T512 NF_INLINE float hsum512(__m512 a, __m512 b, __m512 c, __m512 d)
{
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a, b), _mm512_add_ps(c, d)));
}

/* The row's FP16 scales as f32 (exact: vcvtph2ps); false if one is not
 * finite. */
T512 static bool scales512(const uint8_t *s, unsigned ng, float *out)
{
    const __m256i ex = _mm256_set1_epi16(0x7c00);
    __mmask16 bad = 0;
    unsigned g = 0;
    for (; g + 16 <= ng; g += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(s + 2 * g));
        bad |= _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, ex), ex);
        _mm512_storeu_ps(out + g, _mm512_cvtph_ps(h));
    }
    if (g < ng) {
        __mmask16 m = (__mmask16)((1u << (ng - g)) - 1);
        __m256i h = _mm256_maskz_loadu_epi16(m, s + 2 * g);
        bad |= _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, ex), ex);
        _mm512_mask_storeu_ps(out + g, m, _mm512_cvtph_ps(h));
    }
    return bad == 0;
}

/* q2 (u-1) and t2 (2-bit two's complement): 16 bytes hold 64 codes; byte j
 * of them, zero-extended to lane j, carries codes 4j..4j+3; the permute
 * reads index bits 3:0, so the 4-entry table is repeated 4 times and the
 * neighbour's bits above bit 1 do not matter. */
T512 NF_INLINE void two_bit64(__m512 T, const uint8_t *b, const float *x, __m512 *a)
{
    __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
    a[0] = _mm512_fmadd_ps(_mm512_permutexvar_ps(d, T), _mm512_loadu_ps(x), a[0]);
    a[1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 2), T),
                           _mm512_loadu_ps(x + 16), a[1]);
    a[2] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 4), T),
                           _mm512_loadu_ps(x + 32), a[2]);
    a[3] = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d, 6), T),
                           _mm512_loadu_ps(x + 48), a[3]);
}

T512 static float q2_512(const uint8_t *base, const float *sc, const float *xp, unsigned ng,
                         bool t2)
{
    const __m512 cv = t2 ? _mm512_setr_ps(0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1, 0, 1, -2, -1)
                         : _mm512_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2, -1, 0, 1, 2);
    __m512 a[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
    if (t2) {
        for (unsigned g = 0; g < ng; g++) { /* 128 codes, 32 bytes */
            __m512 T = _mm512_mul_ps(cv, _mm512_set1_ps(sc[g]));
            if (!(g & 1))
                PF(base + 32 * g);
            two_bit64(T, base + 32 * g, xp + 128 * g, a);
            two_bit64(T, base + 32 * g + 16, xp + 128 * g + 64, a);
        }
    } else {
        for (unsigned g = 0; g < ng; g++) { /* 64 codes, 16 bytes */
            __m512 T = _mm512_mul_ps(cv, _mm512_set1_ps(sc[g]));
            if (!(g & 3))
                PF(base + 16 * g);
            two_bit64(T, base + 16 * g, xp + 64 * g, a);
        }
    }
    return hsum512(a[0], a[1], a[2], a[3]);
}

/* q4: byte j -> lane j; the low nibble (even column) indexes the 16-entry
 * table directly (the permute ignores bits 4+), the high nibble after a
 * shift. Table index = raw nibble: 0..7 -> 0..7, 8..15 -> -8..-1. */
T512 static float q4_512(const uint8_t *base, const float *sc, const float *xp, unsigned ng)
{
    const __m512 cv = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g++) { /* 64 codes, 32 bytes */
        __m512 T = _mm512_mul_ps(cv, _mm512_set1_ps(sc[g]));
        const uint8_t *b = base + 32 * g;
        const float *x = xp + 64 * g;
        if (!(g & 1))
            PF(b);
        __m512i d0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
        __m512i d1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 16)));
        a0 = _mm512_fmadd_ps(_mm512_permutexvar_ps(d0, T), _mm512_loadu_ps(x), a0);
        a1 = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d0, 4), T),
                             _mm512_loadu_ps(x + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_permutexvar_ps(d1, T), _mm512_loadu_ps(x + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d1, 4), T),
                             _mm512_loadu_ps(x + 48), a3);
    }
    return hsum512(a0, a1, a2, a3);
}

/* q5: a 32-entry table over two registers (index bit 4 = the high-plane
 * bit). The 32 high bits of 32 codes are broadcast; each lane rotates its
 * code's bit to bit 4 and a bit-select (ternlog 0xD8: C ? B : A) puts it
 * into the nibble's index. */
T512 static float q5_512(const uint8_t *base, const uint8_t *high, const float *sc,
                         const float *xp, unsigned ng)
{
    const __m512 c0 = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 c1 = _mm512_setr_ps(-16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5,
                                     -4, -3, -2, -1);
    /* lane j holds columns 2j (low nibble) and 2j+1 (high nibble) */
    const __m512i rlo = _mm512_setr_epi32(28, 30, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,
                                          24, 26);
    const __m512i rhi = _mm512_setr_epi32(29, 31, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23,
                                          25, 27);
    const __m512i b4 = _mm512_set1_epi32(0x10);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g++) { /* 64 codes: 32 base bytes, 8 high bytes */
        __m512 s = _mm512_set1_ps(sc[g]);
        __m512 T0 = _mm512_mul_ps(c0, s), T1 = _mm512_mul_ps(c1, s);
        const uint8_t *b = base + 32 * g, *h = high + 8 * g;
        const float *x = xp + 64 * g;
        if (!(g & 1))
            PF(b);
        if (!(g & 7))
            PF(h);
        __m512i d0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
        __m512i d1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 16)));
        __m512i h0 = _mm512_set1_epi32((int)ld32(h)), h1 = _mm512_set1_epi32((int)ld32(h + 4));
        __m512i i0 = _mm512_ternarylogic_epi32(d0, _mm512_rorv_epi32(h0, rlo), b4, 0xD8);
        __m512i i1 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(d0, 4),
                                               _mm512_rorv_epi32(h0, rhi), b4, 0xD8);
        __m512i i2 = _mm512_ternarylogic_epi32(d1, _mm512_rorv_epi32(h1, rlo), b4, 0xD8);
        __m512i i3 = _mm512_ternarylogic_epi32(_mm512_srli_epi32(d1, 4),
                                               _mm512_rorv_epi32(h1, rhi), b4, 0xD8);
        a0 = _mm512_fmadd_ps(_mm512_permutex2var_ps(T0, i0, T1), _mm512_loadu_ps(x), a0);
        a1 = _mm512_fmadd_ps(_mm512_permutex2var_ps(T0, i1, T1), _mm512_loadu_ps(x + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_permutex2var_ps(T0, i2, T1), _mm512_loadu_ps(x + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_permutex2var_ps(T0, i3, T1), _mm512_loadu_ps(x + 48), a3);
    }
    return hsum512(a0, a1, a2, a3);
}

/* q6: c = nib + 16*hs with hs = the 2 high bits as two's complement
 * (0, 1, -2, -1): w = T[nib] + H[hi], both exact, their sum exact. Lanes
 * 0-7 read the high bits from the first 32-bit word, lanes 8-15 from the
 * second; H is repeated 4 times (index bits 3:2 are the next code's). */
T512 static float q6_512(const uint8_t *base, const uint8_t *high, const float *sc,
                         const float *xp, unsigned ng)
{
    const __m512 cl = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 ch = _mm512_setr_ps(0, 16, -32, -16, 0, 16, -32, -16, 0, 16, -32, -16, 0, 16,
                                     -32, -16);
    const __m512i rlo = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24,
                                          28);
    const __m512i rhi = _mm512_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30, 2, 6, 10, 14, 18, 22,
                                          26, 30);
    const __m512i sel = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g++) { /* 64 codes: 32 base bytes, 16 high bytes */
        __m512 s = _mm512_set1_ps(sc[g]);
        __m512 T = _mm512_mul_ps(cl, s), H = _mm512_mul_ps(ch, s);
        const uint8_t *b = base + 32 * g, *h = high + 16 * g;
        const float *x = xp + 64 * g;
        if (!(g & 1))
            PF(b);
        if (!(g & 3))
            PF(h);
        __m512i d0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b));
        __m512i d1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 16)));
        __m512i h0 = _mm512_permutexvar_epi32(
            sel, _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)h)));
        __m512i h1 = _mm512_permutexvar_epi32(
            sel, _mm512_castsi128_si512(_mm_loadl_epi64((const __m128i *)(h + 8))));
        __m512 w0 = _mm512_add_ps(_mm512_permutexvar_ps(d0, T),
                                  _mm512_permutexvar_ps(_mm512_rorv_epi32(h0, rlo), H));
        __m512 w1 = _mm512_add_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d0, 4), T),
                                  _mm512_permutexvar_ps(_mm512_rorv_epi32(h0, rhi), H));
        __m512 w2 = _mm512_add_ps(_mm512_permutexvar_ps(d1, T),
                                  _mm512_permutexvar_ps(_mm512_rorv_epi32(h1, rlo), H));
        __m512 w3 = _mm512_add_ps(_mm512_permutexvar_ps(_mm512_srli_epi32(d1, 4), T),
                                  _mm512_permutexvar_ps(_mm512_rorv_epi32(h1, rhi), H));
        a0 = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x), a0);
        a1 = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + 16), a1);
        a2 = _mm512_fmadd_ps(w2, _mm512_loadu_ps(x + 32), a2);
        a3 = _mm512_fmadd_ps(w3, _mm512_loadu_ps(x + 48), a3);
    }
    return hsum512(a0, a1, a2, a3);
}

/* q8: sign-extend, convert, times s: the codec's operations; two groups of
 * 32 per step. */
T512 static float q8_512(const uint8_t *base, const float *sc, const float *xp, unsigned ng)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g += 2) { /* ng is a multiple of 4 */
        __m512 s0 = _mm512_set1_ps(sc[g]), s1 = _mm512_set1_ps(sc[g + 1]);
        const uint8_t *b = base + 32 * g;
        const float *x = xp + 32 * g;
        PF(b);
#define Q8W(o, s) _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32( \
                      _mm_loadu_si128((const __m128i *)(b + (o))))), s)
        a0 = _mm512_fmadd_ps(Q8W(0, s0), _mm512_loadu_ps(x), a0);
        a1 = _mm512_fmadd_ps(Q8W(16, s0), _mm512_loadu_ps(x + 16), a1);
        a2 = _mm512_fmadd_ps(Q8W(32, s1), _mm512_loadu_ps(x + 32), a2);
        a3 = _mm512_fmadd_ps(Q8W(48, s1), _mm512_loadu_ps(x + 48), a3);
#undef Q8W
    }
    return hsum512(a0, a1, a2, a3);
}

T512 static int rs_row512(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    const uint8_t *base = c->pl[0] + n * c->rb[0];
    const uint8_t *scl = c->pl[2] + n * c->rb[2];
    for (uint64_t i = 0; i < c->rb[2]; i += 64)
        _mm_prefetch((const char *)scl + c->pf_scl + i, _MM_HINT_T0);
    if (!scales512(scl, c->ng, s->sc))
        return 1;
    switch (c->t->format) {
    case NF_FMT_Q2_G64_FP16: *out = q2_512(base, s->sc, c->xp, c->ng, false); break;
    case NF_FMT_T2_G128_FP16: *out = q2_512(base, s->sc, c->xp, c->ng, true); break;
    case NF_FMT_Q4_G64_FP16: *out = q4_512(base, s->sc, c->xp, c->ng); break;
    case NF_FMT_Q5_G64_FP16:
        *out = q5_512(base, c->pl[1] + n * c->rb[1], s->sc, c->xp, c->ng);
        break;
    case NF_FMT_Q6_G64_FP16:
        *out = q6_512(base, c->pl[1] + n * c->rb[1], s->sc, c->xp, c->ng);
        break;
    case NF_FMT_Q8_G32_FP16: *out = q8_512(base, s->sc, c->xp, c->ng); break;
    default: return 1;
    }
    return 0;
}

/* nvfp4 table for divisor w: 16 floats per block-scale code b, index = the
 * E2M1 code (bit 3 = sign), value (e2m1(i) * e4m3(b)) / w. */
T512 static void nv_table512(float *tab, float w)
{
    const __m512 e2 = _mm512_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f,
                                     -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f);
    __m512 wv = _mm512_set1_ps(w);
    for (unsigned b = 0; b < 256; b++)
        _mm512_store_ps(tab + 16 * b,
                        _mm512_div_ps(_mm512_mul_ps(e2, _mm512_set1_ps(nf_e4m3_to_f32((uint8_t)b))),
                                      wv));
}

/* nvfp4: 16 code bytes are two blocks; lanes 0-7 belong to the first, 8-15
 * to the second, so a two-register permute over both blocks' tables with
 * index bit 4 set in lanes 8-15 (ternlog 0xEC: (A & C) | B). */
T512 static int nv_row512(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    uint64_t K = c->K;
    uint32_t wb = ld32(c->pl[2] + 4 * (n / c->slice));
    if (!s->tab_ok || s->tab_w != wb) {
        nv_table512(s->tab, nf_f32_from_bits(wb));
        s->tab_w = wb;
        s->tab_ok = true;
    }
    const float *tab = s->tab;
    const uint8_t *codes = c->pl[0] + n * (K / 2);
    const uint8_t *sb = c->pl[1] + nf_nvfp4_scale_row_part(n, K);
    const __m512i blk = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 16, 16, 16, 16, 16, 16, 16, 16);
    const __m512i m15 = _mm512_set1_epi32(15);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float *x = c->xp;
    for (uint64_t q = 0; q < K / 64; q++, x += 64) { /* 4 blocks */
        uint32_t b4 = ld32(sb + nf_nvfp4_scale_col_part(4 * q)); /* blocks 4q..4q+3 */
        const uint8_t *cb = codes + 32 * q;
        if (!(q & 1))
            PF(cb);
        __m512 A = _mm512_load_ps(tab + 16 * (b4 & 0xff));
        __m512 B = _mm512_load_ps(tab + 16 * ((b4 >> 8) & 0xff));
        __m512 C = _mm512_load_ps(tab + 16 * ((b4 >> 16) & 0xff));
        __m512 D = _mm512_load_ps(tab + 16 * (b4 >> 24));
        __m512i d0 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)cb));
        __m512i d1 = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(cb + 16)));
        __m512i i0 = _mm512_ternarylogic_epi32(d0, blk, m15, 0xEC);
        __m512i i1 = _mm512_or_si512(_mm512_srli_epi32(d0, 4), blk);
        __m512i i2 = _mm512_ternarylogic_epi32(d1, blk, m15, 0xEC);
        __m512i i3 = _mm512_or_si512(_mm512_srli_epi32(d1, 4), blk);
        a0 = _mm512_fmadd_ps(_mm512_permutex2var_ps(A, i0, B), _mm512_loadu_ps(x), a0);
        a1 = _mm512_fmadd_ps(_mm512_permutex2var_ps(A, i1, B), _mm512_loadu_ps(x + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_permutex2var_ps(C, i2, D), _mm512_loadu_ps(x + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_permutex2var_ps(C, i3, D), _mm512_loadu_ps(x + 48), a3);
    }
    *out = hsum512(a0, a1, a2, a3);
    return 0;
}

/* fp8 e4m3 * bf16 row scale. Per 64 codes, four in-lane byte shuffles put
 * byte 4m+q of the 64 into the top byte of lane m of vector q; an
 * arithmetic shift by 4 and a mask give sign | e4m3 bits << 20, the binary32
 * pattern of e4m3(c) * 2^-120 (subnormals included); times r * 2^120 that
 * is one rounding of e4m3(c) * r. NaN codes are caught with a running max
 * of (c | 0x80), which is 0xff only for 0x7f/0xff. */
T512 NF_INLINE __m512 fp8_w16(__m512i v, __m512i ctl, __m512 R)
{
    const __m512i fm = _mm512_set1_epi32((int)0x87f00000);
    __m512i u = _mm512_shuffle_epi8(v, ctl);
    return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_srai_epi32(u, 4), fm)), R);
}

/* (written out: a loop over an accumulator array kept them in memory) */
T512 NF_INLINE void fp8_64(__m512i v, const float *x, __m512 R, __m512 *a0, __m512 *a1,
                           __m512 *a2, __m512 *a3)
{
    const __m512i c0 = _mm512_set4_epi32((int)0x0c808080, (int)0x08808080, (int)0x04808080,
                                         (int)0x00808080);
    const __m512i c1 = _mm512_set4_epi32((int)0x0d808080, (int)0x09808080, (int)0x05808080,
                                         (int)0x01808080);
    const __m512i c2 = _mm512_set4_epi32((int)0x0e808080, (int)0x0a808080, (int)0x06808080,
                                         (int)0x02808080);
    const __m512i c3 = _mm512_set4_epi32((int)0x0f808080, (int)0x0b808080, (int)0x07808080,
                                         (int)0x03808080);
    *a0 = _mm512_fmadd_ps(fp8_w16(v, c0, R), _mm512_loadu_ps(x), *a0);
    *a1 = _mm512_fmadd_ps(fp8_w16(v, c1, R), _mm512_loadu_ps(x + 16), *a1);
    *a2 = _mm512_fmadd_ps(fp8_w16(v, c2, R), _mm512_loadu_ps(x + 32), *a2);
    *a3 = _mm512_fmadd_ps(fp8_w16(v, c3, R), _mm512_loadu_ps(x + 48), *a3);
}

T512 static int fp8_row512(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    (void)s;
    uint64_t K = c->K;
    float r = nf_bf16_to_f32(ld16(c->pl[1] + 2 * n));
    if (!(fabsf(r) < 256.0f))
        return 1;
    __m512 R = _mm512_set1_ps(r * 0x1p120f);
    const uint8_t *p = c->pl[0] + n * K;
    const __m512i hi = _mm512_set1_epi8((char)0x80);
    __m512i mx = _mm512_setzero_si512();
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t k = 0;
    for (; k + 64 <= K; k += 64) {
        __m512i v = _mm512_loadu_si512((const void *)(p + k));
        PF(p + k);
        mx = _mm512_max_epu8(mx, _mm512_or_si512(v, hi));
        fp8_64(v, c->xp + k, R, &a0, &a1, &a2, &a3);
    }
    if (k < K) {
        __m512i v = _mm512_maskz_loadu_epi8(~0ull >> (64 - (K - k)), p + k);
        mx = _mm512_max_epu8(mx, _mm512_or_si512(v, hi));
        fp8_64(v, c->xp + k, R, &a0, &a1, &a2, &a3);
    }
    if (_mm512_cmpeq_epi8_mask(mx, _mm512_set1_epi8((char)0xff)))
        return 1;
    *out = hsum512(a0, a1, a2, a3);
    return 0;
}

/* bf16: a 32-bit word holds columns 2i (low half) and 2i+1 (high half);
 * shifting or masking gives both as f32. fp32, int32: natural order. */
T512 static int contig_row512(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    (void)s;
    uint64_t K = c->K, k = 0;
    const float *x = c->xp;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    if (c->t->format == NF_FMT_BF16) {
        const uint8_t *p = c->pl[0] + 2 * n * K;
        const __m512i hm = _mm512_set1_epi32((int)0xffff0000);
        for (; k + 64 <= K; k += 64) {
            __m512i v0 = _mm512_loadu_si512((const void *)(p + 2 * k));
            __m512i v1 = _mm512_loadu_si512((const void *)(p + 2 * k + 64));
            PF(p + 2 * k);
            PF(p + 2 * k + 64);
            a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)),
                                 _mm512_loadu_ps(x + k), a0);
            a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v0, hm)),
                                 _mm512_loadu_ps(x + k + 16), a1);
            a2 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v1, 16)),
                                 _mm512_loadu_ps(x + k + 32), a2);
            a3 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v1, hm)),
                                 _mm512_loadu_ps(x + k + 48), a3);
        }
        for (; k < K; k += 32) {
            uint64_t m = K - k;
            __m512i v = _mm512_maskz_loadu_epi16(m >= 32 ? ~0u : (1u << m) - 1, p + 2 * k);
            a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)),
                                 _mm512_loadu_ps(x + k), a0);
            a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, hm)),
                                 _mm512_loadu_ps(x + k + 16), a1);
        }
    } else {
        const uint8_t *p = c->pl[0] + 4 * n * K;
        bool i32 = c->t->format == NF_FMT_INT32;
#define CW(o) (i32 ? _mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(p + 4 * (k + (o))))) \
                   : _mm512_loadu_ps((const float *)(const void *)(p + 4 * (k + (o)))))
        for (; k + 64 <= K; k += 64) {
            for (int i = 0; i < 256; i += 64)
                PF(p + 4 * k + i);
            a0 = _mm512_fmadd_ps(CW(0), _mm512_loadu_ps(x + k), a0);
            a1 = _mm512_fmadd_ps(CW(16), _mm512_loadu_ps(x + k + 16), a1);
            a2 = _mm512_fmadd_ps(CW(32), _mm512_loadu_ps(x + k + 32), a2);
            a3 = _mm512_fmadd_ps(CW(48), _mm512_loadu_ps(x + k + 48), a3);
        }
#undef CW
        for (; k < K; k += 16) {
            uint64_t m = K - k;
            __m512i v = _mm512_maskz_loadu_epi32(m >= 16 ? 0xffff : (__mmask16)((1u << m) - 1),
                                                 p + 4 * k);
            __m512 w = i32 ? _mm512_cvtepi32_ps(v) : _mm512_castsi512_ps(v);
            a0 = _mm512_fmadd_ps(w, _mm512_loadu_ps(x + k), a0);
        }
    }
    *out = hsum512(a0, a1, a2, a3);
    return 0;
}

/* ============================ AVX2 + FMA + F16C =========================== */

T256 NF_INLINE float hsum256(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 acc = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
    return _mm_cvtss_f32(lo);
}

T256 static bool scales256(const uint8_t *s, unsigned ng, float *out)
{
    const __m128i ex = _mm_set1_epi16(0x7c00);
    int bad = 0;
    unsigned g = 0;
    for (; g + 8 <= ng; g += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(s + 2 * g));
        bad |= _mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, ex), ex));
        _mm256_storeu_ps(out + g, _mm256_cvtph_ps(h));
    }
    for (; g < ng; g++) {
        uint16_t h = ld16(s + 2 * g);
        bad |= (h & 0x7c00) == 0x7c00;
        out[g] = nf_fp16_to_f32(h);
    }
    return bad == 0;
}

#define LD64(p) _mm_loadl_epi64((const __m128i *)(const void *)(p))

/* q2/t2: 8 bytes = 32 codes; byte j -> lane j carries codes 4j..4j+3; the
 * 8-entry permute reads index bits 2:0, so the table is repeated twice. */
T256 static float q2_256(const uint8_t *base, const float *sc, const float *xp, unsigned ng,
                         bool t2)
{
    const __m256 cv = t2 ? _mm256_setr_ps(0, 1, -2, -1, 0, 1, -2, -1)
                         : _mm256_setr_ps(-1, 0, 1, 2, -1, 0, 1, 2);
    unsigned per = t2 ? 4 : 2; /* 32-code steps per group */
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float *x = xp;
    const uint8_t *b = base;
    for (unsigned g = 0; g < ng; g++) {
        __m256 T = _mm256_mul_ps(cv, _mm256_set1_ps(sc[g]));
        for (unsigned i = 0; i < per; i++, b += 8, x += 32) {
            if (!(((uintptr_t)b - (uintptr_t)base) & 63))
                PF(b);
            __m256i d = _mm256_cvtepu8_epi32(LD64(b));
            a0 = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(T, d), _mm256_loadu_ps(x), a0);
            a1 = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(T, _mm256_srli_epi32(d, 2)),
                                 _mm256_loadu_ps(x + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(T, _mm256_srli_epi32(d, 4)),
                                 _mm256_loadu_ps(x + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_permutevar8x32_ps(T, _mm256_srli_epi32(d, 6)),
                                 _mm256_loadu_ps(x + 24), a3);
        }
    }
    return hsum256(a0, a1, a2, a3);
}

/* q4: 16 bytes = 32 codes; the nibbles become signed bytes with a byte
 * shuffle (port 5, idle otherwise), then sign-extend, convert, times s.
 * Vectors: even columns 0-14, 16-30, odd columns 1-15, 17-31. */
T256 static float q4_256(const uint8_t *base, const float *sc, const float *xp, unsigned ng)
{
    const __m128i lut = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2, -1);
    const __m128i m4 = _mm_set1_epi8(15);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g++) {
        __m256 s = _mm256_set1_ps(sc[g]);
        const uint8_t *b = base + 32 * g;
        const float *x = xp + 64 * g;
        PF(b);
        for (unsigned i = 0; i < 2; i++, x += 32) {
            __m128i v = _mm_loadu_si128((const __m128i *)(b + 16 * i));
            __m128i lo = _mm_shuffle_epi8(lut, _mm_and_si128(v, m4));
            __m128i hi = _mm_shuffle_epi8(lut, _mm_and_si128(_mm_srli_epi16(v, 4), m4));
#define Q4W(c8) _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(c8)), s)
            a0 = _mm256_fmadd_ps(Q4W(lo), _mm256_loadu_ps(x), a0);
            a1 = _mm256_fmadd_ps(Q4W(_mm_srli_si128(lo, 8)), _mm256_loadu_ps(x + 8), a1);
            a2 = _mm256_fmadd_ps(Q4W(hi), _mm256_loadu_ps(x + 16), a2);
            a3 = _mm256_fmadd_ps(Q4W(_mm_srli_si128(hi, 8)), _mm256_loadu_ps(x + 24), a3);
#undef Q4W
        }
    }
    return hsum256(a0, a1, a2, a3);
}

/* q5/q6: w = fma(nib, s, H[hi]) with H[hi] = 16*hs*s (hs the high bits as
 * two's complement: q5 0/-1, q6 0/1/-2/-1): nib*s and H exact, the exact
 * sum c*s representable, so the FMA gives (float)c*s. The high bits of 16
 * codes are one 16-bit (q5) or 32-bit (q6) word, shifted per lane. */
T256 static float q56_256(const uint8_t *base, const uint8_t *high, const float *sc,
                          const float *xp, unsigned ng, bool q6)
{
    const __m256 ch = q6 ? _mm256_setr_ps(0, 16, -32, -16, 0, 16, -32, -16)
                         : _mm256_setr_ps(0, -16, 0, -16, 0, -16, 0, -16);
    const __m256i slo = q6 ? _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)
                           : _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i shi = q6 ? _mm256_setr_epi32(2, 6, 10, 14, 18, 22, 26, 30)
                           : _mm256_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15);
    const __m256i m15 = _mm256_set1_epi32(15);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    unsigned hb = q6 ? 4 : 2; /* high bytes per 16 codes */
    for (unsigned g = 0; g < ng; g++) {
        __m256 s = _mm256_set1_ps(sc[g]);
        __m256 H = _mm256_mul_ps(ch, s);
        const uint8_t *b = base + 32 * g, *h = high + 4 * hb * g;
        const float *x = xp + 64 * g;
        if (!(g & 1))
            PF(b);
        if (!(g & (q6 ? 3 : 7)))
            PF(h);
        for (unsigned i = 0; i < 4; i += 2) {
            __m256i d0 = _mm256_cvtepu8_epi32(LD64(b + 8 * i));
            __m256i d1 = _mm256_cvtepu8_epi32(LD64(b + 8 * i + 8));
            __m256i h0 = _mm256_set1_epi32(q6 ? (int)ld32(h + hb * i) : ld16(h + hb * i));
            __m256i h1 = _mm256_set1_epi32(q6 ? (int)ld32(h + hb * i + hb)
                                              : ld16(h + hb * i + hb));
#define W56(nib, hw, sh) _mm256_fmadd_ps(_mm256_cvtepi32_ps(nib), s, \
                _mm256_permutevar8x32_ps(H, _mm256_srlv_epi32(hw, sh)))
            a0 = _mm256_fmadd_ps(W56(_mm256_and_si256(d0, m15), h0, slo),
                                 _mm256_loadu_ps(x + 16 * i), a0);
            a1 = _mm256_fmadd_ps(W56(_mm256_srli_epi32(d0, 4), h0, shi),
                                 _mm256_loadu_ps(x + 16 * i + 8), a1);
            a2 = _mm256_fmadd_ps(W56(_mm256_and_si256(d1, m15), h1, slo),
                                 _mm256_loadu_ps(x + 16 * i + 16), a2);
            a3 = _mm256_fmadd_ps(W56(_mm256_srli_epi32(d1, 4), h1, shi),
                                 _mm256_loadu_ps(x + 16 * i + 24), a3);
#undef W56
        }
    }
    return hsum256(a0, a1, a2, a3);
}

T256 static float q8_256(const uint8_t *base, const float *sc, const float *xp, unsigned ng)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (unsigned g = 0; g < ng; g++) {
        __m256 s = _mm256_set1_ps(sc[g]);
        const uint8_t *b = base + 32 * g;
        const float *x = xp + 32 * g;
        if (!(g & 1))
            PF(b);
#define Q8W(o) _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(LD64(b + (o)))), s)
        a0 = _mm256_fmadd_ps(Q8W(0), _mm256_loadu_ps(x), a0);
        a1 = _mm256_fmadd_ps(Q8W(8), _mm256_loadu_ps(x + 8), a1);
        a2 = _mm256_fmadd_ps(Q8W(16), _mm256_loadu_ps(x + 16), a2);
        a3 = _mm256_fmadd_ps(Q8W(24), _mm256_loadu_ps(x + 24), a3);
#undef Q8W
    }
    return hsum256(a0, a1, a2, a3);
}

T256 static int rs_row256(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    const uint8_t *base = c->pl[0] + n * c->rb[0];
    const uint8_t *scl = c->pl[2] + n * c->rb[2];
    for (uint64_t i = 0; i < c->rb[2]; i += 64)
        _mm_prefetch((const char *)scl + c->pf_scl + i, _MM_HINT_T0);
    if (!scales256(scl, c->ng, s->sc))
        return 1;
    switch (c->t->format) {
    case NF_FMT_Q2_G64_FP16: *out = q2_256(base, s->sc, c->xp, c->ng, false); break;
    case NF_FMT_T2_G128_FP16: *out = q2_256(base, s->sc, c->xp, c->ng, true); break;
    case NF_FMT_Q4_G64_FP16: *out = q4_256(base, s->sc, c->xp, c->ng); break;
    case NF_FMT_Q5_G64_FP16:
        *out = q56_256(base, c->pl[1] + n * c->rb[1], s->sc, c->xp, c->ng, false);
        break;
    case NF_FMT_Q6_G64_FP16:
        *out = q56_256(base, c->pl[1] + n * c->rb[1], s->sc, c->xp, c->ng, true);
        break;
    case NF_FMT_Q8_G32_FP16: *out = q8_256(base, s->sc, c->xp, c->ng); break;
    default: return 1;
    }
    return 0;
}

/* nvfp4 table for AVX2: the 8 magnitudes per b; the sign is applied by XOR
 * afterwards (IEEE mul/div are sign-symmetric, as in the codec). */
T256 static void nv_table256(float *tab, float w)
{
    const __m256 e2 = _mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f);
    __m256 wv = _mm256_set1_ps(w);
    for (unsigned b = 0; b < 256; b++)
        _mm256_store_ps(tab + 8 * b,
                        _mm256_div_ps(_mm256_mul_ps(e2, _mm256_set1_ps(nf_e4m3_to_f32((uint8_t)b))),
                                      wv));
}

T256 static int nv_row256(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    uint64_t K = c->K;
    uint32_t wb = ld32(c->pl[2] + 4 * (n / c->slice));
    if (!s->tab_ok || s->tab_w != wb) {
        nv_table256(s->tab, nf_f32_from_bits(wb));
        s->tab_w = wb;
        s->tab_ok = true;
    }
    const float *tab = s->tab;
    const uint8_t *codes = c->pl[0] + n * (K / 2);
    const uint8_t *sb = c->pl[1] + nf_nvfp4_scale_row_part(n, K);
    const __m256i sg = _mm256_set1_epi32((int)0x80000000);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    const float *x = c->xp;
    for (uint64_t q = 0; q < K / 64; q++) {
        uint32_t b4 = ld32(sb + nf_nvfp4_scale_col_part(4 * q)); /* blocks 4q..4q+3 */
        const uint8_t *cb = codes + 32 * q;
        if (!(q & 1))
            PF(cb);
        for (unsigned i = 0; i < 4; i += 2, x += 32) {
            __m256 A = _mm256_load_ps(tab + 8 * ((b4 >> (8 * i)) & 0xff));
            __m256 B = _mm256_load_ps(tab + 8 * ((b4 >> (8 * i + 8)) & 0xff));
            __m256i d0 = _mm256_cvtepu8_epi32(LD64(cb + 8 * i));
            __m256i d1 = _mm256_cvtepu8_epi32(LD64(cb + 8 * i + 8));
#define NVW(T, d, idx, sh) _mm256_xor_ps(_mm256_permutevar8x32_ps(T, idx), \
                _mm256_castsi256_ps(_mm256_and_si256(_mm256_slli_epi32(d, sh), sg)))
            a0 = _mm256_fmadd_ps(NVW(A, d0, d0, 28), _mm256_loadu_ps(x), a0);
            a1 = _mm256_fmadd_ps(NVW(A, d0, _mm256_srli_epi32(d0, 4), 24),
                                 _mm256_loadu_ps(x + 8), a1);
            a2 = _mm256_fmadd_ps(NVW(B, d1, d1, 28), _mm256_loadu_ps(x + 16), a2);
            a3 = _mm256_fmadd_ps(NVW(B, d1, _mm256_srli_epi32(d1, 4), 24),
                                 _mm256_loadu_ps(x + 24), a3);
#undef NVW
        }
    }
    *out = hsum256(a0, a1, a2, a3);
    return 0;
}

/* fp8 on AVX2: as fp8_64, 32 codes per step, in-lane shuffles (lane m of
 * vector q <- byte 4m+q). */
T256 NF_INLINE __m256 fp8_w8(__m256i v, __m256i ctl, __m256 R)
{
    const __m256i fm = _mm256_set1_epi32((int)0x87f00000);
    __m256i u = _mm256_shuffle_epi8(v, ctl);
    return _mm256_mul_ps(_mm256_castsi256_ps(_mm256_and_si256(_mm256_srai_epi32(u, 4), fm)), R);
}

/* fp8 on AVX2: as fp8_64, 32 codes per step, in-lane shuffles (lane m of
 * vector q <- byte 4m+q). */
T256 NF_INLINE void fp8_32(__m256i v, const float *x, __m256 R, __m256 *a0, __m256 *a1,
                           __m256 *a2, __m256 *a3)
{
#define FP8C(q) _mm256_setr_epi32((int)0x00808080 + ((q) << 24), (int)0x04808080 + ((q) << 24), \
                                  (int)0x08808080 + ((q) << 24), (int)0x0c808080 + ((q) << 24), \
                                  (int)0x00808080 + ((q) << 24), (int)0x04808080 + ((q) << 24), \
                                  (int)0x08808080 + ((q) << 24), (int)0x0c808080 + ((q) << 24))
    *a0 = _mm256_fmadd_ps(fp8_w8(v, FP8C(0), R), _mm256_loadu_ps(x), *a0);
    *a1 = _mm256_fmadd_ps(fp8_w8(v, FP8C(1), R), _mm256_loadu_ps(x + 8), *a1);
    *a2 = _mm256_fmadd_ps(fp8_w8(v, FP8C(2), R), _mm256_loadu_ps(x + 16), *a2);
    *a3 = _mm256_fmadd_ps(fp8_w8(v, FP8C(3), R), _mm256_loadu_ps(x + 24), *a3);
#undef FP8C
}

T256 static int fp8_row256(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    (void)s;
    uint64_t K = c->K;
    float r = nf_bf16_to_f32(ld16(c->pl[1] + 2 * n));
    if (!(fabsf(r) < 256.0f))
        return 1;
    __m256 R = _mm256_set1_ps(r * 0x1p120f);
    const uint8_t *p = c->pl[0] + n * K;
    const __m256i hi = _mm256_set1_epi8((char)0x80);
    __m256i mx = _mm256_setzero_si256();
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    uint64_t k = 0;
    for (; k + 32 <= K; k += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(p + k));
        if (!(k & 32))
            PF(p + k);
        mx = _mm256_max_epu8(mx, _mm256_or_si256(v, hi));
        fp8_32(v, c->xp + k, R, &a0, &a1, &a2, &a3);
    }
    if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(mx, _mm256_set1_epi8((char)0xff))))
        return 1;
    float t = 0.0f;
    for (; k < K; k++) {
        if (nf_e4m3_is_nan(p[k]))
            return 1;
        t += (nf_e4m3_to_f32(p[k]) * r) * c->xp[k];
    }
    *out = hsum256(a0, a1, a2, a3) + t;
    return 0;
}

T256 static int contig_row256(const gemv_ctx *c, gemv_tls *s, uint64_t n, float *out)
{
    (void)s;
    uint64_t K = c->K, k = 0;
    const float *x = c->xp;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    float t = 0.0f;
    if (c->t->format == NF_FMT_BF16) {
        const uint8_t *p = c->pl[0] + 2 * n * K;
        const __m256i hm = _mm256_set1_epi32((int)0xffff0000);
        for (; k + 32 <= K; k += 32) {
            __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + 2 * k));
            __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 2 * k + 32));
            PF(p + 2 * k);
            a0 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v0, 16)),
                                 _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v0, hm)),
                                 _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v1, 16)),
                                 _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v1, hm)),
                                 _mm256_loadu_ps(x + k + 24), a3);
        }
        for (; k < K; k++)
            t += nf_bf16_to_f32(ld16(p + 2 * k)) * x[k];
    } else {
        const uint8_t *p = c->pl[0] + 4 * n * K;
        bool i32 = c->t->format == NF_FMT_INT32;
#define CW(o) (i32 ? _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(p + 4 * (k + (o))))) \
                   : _mm256_loadu_ps((const float *)(const void *)(p + 4 * (k + (o)))))
        for (; k + 32 <= K; k += 32) {
            PF(p + 4 * k);
            PF(p + 4 * k + 64);
            a0 = _mm256_fmadd_ps(CW(0), _mm256_loadu_ps(x + k), a0);
            a1 = _mm256_fmadd_ps(CW(8), _mm256_loadu_ps(x + k + 8), a1);
            a2 = _mm256_fmadd_ps(CW(16), _mm256_loadu_ps(x + k + 16), a2);
            a3 = _mm256_fmadd_ps(CW(24), _mm256_loadu_ps(x + k + 24), a3);
        }
#undef CW
        for (; k < K; k++) {
            uint32_t u = ld32(p + 4 * k);
            float w = i32 ? (float)(int32_t)u : nf_f32_from_bits(u);
            t += w * x[k];
        }
    }
    *out = hsum256(a0, a1, a2, a3) + t;
    return 0;
}
#undef LD64

#endif /* NF_GEMV_X86 */

static row_kernel pick_kernel_(const nf_tensor_enc *t, nf_isa isa, unsigned *B, unsigned *S,
                               uint64_t *Kx);

/* Choose the fused kernel for t on isa and the lane order of x it wants:
 * columns in blocks of *B, stride *S (build_xp); *Kx the padded length.
 * Returns NULL where the two-pass path serves. Tails: AVX-512 loads the
 * last partial block masked (zeros), AVX2 finishes it in scalar code with
 * x in natural order, so the AVX2 contiguous/fp8 orders keep whole blocks
 * of 32 permuted and the tail natural. */
static row_kernel pick_kernel(const nf_tensor_enc *t, nf_isa isa, unsigned *B, unsigned *S,
                              uint64_t *Kx, uint64_t *Kb)
{
    row_kernel fn = pick_kernel_(t, isa, B, S, Kx);
    /* AVX2 contiguous and fp8 kernels step 32 columns and finish the rest
     * in natural order; everything else is permuted up to Kx */
    *Kb = fn && isa == NF_ISA_AVX2 && (t->layout == NF_LAY_CONTIGUOUS_LE_V1 ||
                                       t->layout == NF_LAY_ROW_SCALE_V1)
              ? t->cols / 32 * 32
              : *Kx;
    return fn;
}

static row_kernel pick_kernel_(const nf_tensor_enc *t, nf_isa isa, unsigned *B, unsigned *S,
                               uint64_t *Kx)
{
#if NF_GEMV_X86
    if (isa < NF_ISA_AVX2 || t->format < 0 || t->format >= NF_FMT_COUNT_ ||
        t->enc.nplanes == 0 || t->cols == 0)
        return NULL;
    bool z = isa == NF_ISA_AVX512;
    uint64_t K = t->cols;
    switch (t->layout) {
    case NF_LAY_CONTIGUOUS_LE_V1:
        if (t->format == NF_FMT_BF16) {
            *B = z ? 32 : 16;
            *S = 2;
        } else {
            *B = 16;
            *S = 1;
        }
        *Kx = z ? (K + 63) / 64 * 64 : K;
        return z ? contig_row512 : contig_row256;
    case NF_LAY_ROW_SCALE_V1:
        if (t->format != NF_FMT_FP8_E4M3FN_ROW_BF16)
            return NULL;
        *B = z ? 64 : 32;
        *S = 4;
        *Kx = z ? (K + 63) / 64 * 64 : K;
        return z ? fp8_row512 : fp8_row256;
    case NF_LAY_ROW_SPLIT_K128_V1:
        *Kx = (K + 127) / 128 * 128;
        switch (t->format) {
        case NF_FMT_Q2_G64_FP16:
        case NF_FMT_T2_G128_FP16:
            *B = z ? 64 : 32;
            *S = 4;
            break;
        case NF_FMT_Q4_G64_FP16:
            *B = 32;
            *S = 2;
            break;
        case NF_FMT_Q5_G64_FP16:
        case NF_FMT_Q6_G64_FP16:
            *B = z ? 32 : 16;
            *S = 2;
            break;
        case NF_FMT_Q8_G32_FP16:
            *B = 16;
            *S = 1;
            break;
        default:
            return NULL;
        }
        return z ? rs_row512 : rs_row256;
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1:
        if (t->format != NF_FMT_NVFP4 || t->divisors == 0 || t->rows % t->divisors)
            return NULL;
        /* the table (256 divisions of 8 or 16 lanes) pays off from ~64 blocks */
        if ((t->rows / t->divisors) * (K / 16) < 64)
            return NULL;
        *B = z ? 32 : 16;
        *S = 2;
        *Kx = K;
        return z ? nv_row512 : nv_row256;
    default:
        return NULL;
    }
#else
    (void)t;
    (void)isa;
    (void)B;
    (void)S;
    (void)Kx;
    return NULL;
#endif
}

#define PF_DIST_ROWS(rb) ((uint64_t)PF_DIST / (rb) + 1)

/* ---- the job ---------------------------------------------------------------- */

struct job {
    uint64_t r0, r1;
    const nf_tensor_enc *t;
    const uint8_t *obj;
    uint64_t obj_bytes;
    const float *x;
    float *y;
    uint64_t rows_per, chunk;
    atomic_uint_fast64_t next;
    atomic_int err;
    dot_fn dot;
    const gemv_ctx *ctx; /* fused kernel, or NULL */
};

/* The two-pass path for one row (a row a fused kernel declined). */
static int row_generic(const struct job *j, float *buf, uint64_t n, float *out)
{
    int rc = nf_decode_rows_f32(j->t, j->obj, j->obj_bytes, n, n + 1, buf);
    if (!rc)
        *out = j->dot(buf, j->x, j->t->cols);
    return rc;
}

static void *worker_fused(struct job *j)
{
    const gemv_ctx *c = j->ctx;
    uint64_t K = j->t->cols, N = j->r1;
    gemv_tls s;
    memset(&s, 0, sizeof s);
    float *row = malloc(K * sizeof *row);
    s.sc = malloc(((uint64_t)c->ng + 16) * sizeof *s.sc);
    if (j->t->format == NF_FMT_NVFP4)
        s.tab = aligned_alloc(64, 256 * 16 * sizeof *s.tab);
    if (!row || !s.sc || (j->t->format == NF_FMT_NVFP4 && !s.tab)) {
        atomic_store(&j->err, NF_CODEC_ENOMEM);
        goto out;
    }
    for (;;) {
        uint64_t ch = atomic_fetch_add(&j->next, 1);
        uint64_t r0 = j->r0 + ch * j->chunk;
        if (r0 >= N || atomic_load(&j->err))
            break;
        uint64_t r1 = r0 + j->chunk < N ? r0 + j->chunk : N;
        for (uint64_t n = r0; n < r1; n++) {
            float v;
            if (c->fn(c, &s, n, &v)) {
                int rc = row_generic(j, row, n, &v);
                if (rc) {
                    atomic_store(&j->err, rc);
                    goto out;
                }
            }
            j->y[n - j->r0] = v;
        }
    }
out:
    free(row);
    free(s.sc);
    free(s.tab);
    return NULL;
}

static void *worker(void *arg)
{
    struct job *j = arg;
    if (j->ctx)
        return worker_fused(j);
    uint64_t K = j->t->cols, N = j->r1;
    float *buf = malloc(j->rows_per * K * sizeof *buf);
    if (!buf) {
        atomic_store(&j->err, NF_CODEC_ENOMEM);
        return NULL;
    }
    for (;;) {
        uint64_t c = atomic_fetch_add(&j->next, 1);
        uint64_t r0 = j->r0 + c * j->chunk;
        if (r0 >= N || atomic_load(&j->err))
            break;
        uint64_t r1 = r0 + j->chunk < N ? r0 + j->chunk : N;
        for (uint64_t r = r0; r < r1; r += j->rows_per) {
            uint64_t re = r + j->rows_per < r1 ? r + j->rows_per : r1;
            int rc = nf_decode_rows_f32(j->t, j->obj, j->obj_bytes, r, re, buf);
            if (rc) {
                atomic_store(&j->err, rc);
                break;
            }
            if (j->y)
                for (uint64_t k = r; k < re; k++)
                    j->y[k - j->r0] = j->dot(buf + (k - r) * K, j->x, K);
        }
    }
    free(buf);
    return NULL;
}

static int run(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
               uint64_t r1, const float *x, float *y, unsigned threads, const gemv_ctx *ctx)
{
    if (!t || !obj)
        return NF_CODEC_EINVAL;
    if (obj_bytes < t->enc.encoded_bytes)
        return NF_CODEC_ESHORT;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    struct job j;
    memset(&j, 0, sizeof j);
    j.r0 = r0;
    j.r1 = r1;
    j.t = t;
    j.obj = obj;
    j.obj_bytes = obj_bytes;
    j.x = x;
    j.y = y;
    j.dot = pick_dot();
    j.ctx = y ? ctx : NULL;
    uint64_t K = t->cols ? t->cols : 1;
    j.rows_per = (16384 / K) ? 16384 / K : 1; /* <= 64 KiB of f32 per decode */
    if (j.rows_per > 64)
        j.rows_per = 64;
    if (!threads)
        threads = nf_cpu_count();
    /* chunks of rows so threads share the tail evenly */
    j.chunk = (r1 - r0) / (threads * 16) + 1;
    if (j.chunk < j.rows_per)
        j.chunk = j.rows_per;
    pthread_t tid[64];
    unsigned started = 0;
    if (threads > 64)
        threads = 64;
    for (unsigned i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, worker, &j) == 0)
            started++;
    worker(&j);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    return atomic_load(&j.err);
}

int nf_gemv(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, const uint16_t *x,
            float *y, unsigned threads)
{
    return t ? nf_gemv_rows(t, obj, obj_bytes, 0, t->rows, x, y, threads) : NF_CODEC_EINVAL;
}

/* True when every bf16 word of x[0..K) is finite (A8 needs it). */
static bool x_finite(const uint16_t *x, uint64_t K)
{
    for (uint64_t k = 0; k < K; k++)
        if ((x[k] & 0x7f80u) == 0x7f80u)
            return false;
    return true;
}

/* x (bf16) as f32, and for A8 its quantized values x^ (nf_a8_quantize). */
static int x_to_f32(const uint16_t *x, uint64_t K, nf_act act, float *xf)
{
    nf_isa isa = fused_isa();
#if NF_GEMV_X86
    if (isa >= NF_ISA_AVX2)
        bf16_to_f32_avx2(x, K, xf);
    else
#endif
        for (uint64_t k = 0; k < K; k++)
            xf[k] = nf_bf16_to_f32(x[k]);
    (void)isa;
    if (act != NF_ACT_A8 || !x_finite(x, K))
        return 0;
    uint64_t nb = (K + NF_A8_BLOCK - 1) / NF_A8_BLOCK;
    int8_t *q = malloc(nb * NF_A8_BLOCK);
    float *d = malloc(nb * sizeof *d);
    if (!q || !d) {
        free(q);
        free(d);
        return NF_CODEC_ENOMEM;
    }
    nf_a8_quantize(x, K, q, d);
    for (uint64_t k = 0; k < K; k++)
        xf[k] = (float)q[k] * d[k / NF_A8_BLOCK];
    free(q);
    free(d);
    return 0;
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
    if (!t || !x || !y)
        return NF_CODEC_EINVAL;
    if (act != NF_ACT_A16 && act != NF_ACT_A8)
        return NF_CODEC_EINVAL;
    if (act == NF_ACT_A8 && !x_finite(x, t->cols))
        act = NF_ACT_A16;
    if (atomic_load(&g_use_int) && obj) {
        nf_isa fi = fused_isa(), ii = NF_ISA_SCALAR;
        if (fi >= NF_ISA_AVX512 && nf_gemv_int_supported(t, NF_ISA_AVX512))
            ii = NF_ISA_AVX512;
        else if (fi >= NF_ISA_AVX2 && nf_gemv_int_supported(t, NF_ISA_AVX2))
            ii = NF_ISA_AVX2;
        int ir = ii != NF_ISA_SCALAR ? nf_gemv_int_rows(t, obj, obj_bytes, r0, r1, x, act, y, threads, ii)
                                     : 1;
        if (ir != 1)
            return ir;
    }
    float *xf = malloc((t->cols ? t->cols : 1) * sizeof *xf);
    if (!xf)
        return NF_CODEC_ENOMEM;
    int xrc = x_to_f32(x, t->cols, act, xf);
    if (xrc) {
        free(xf);
        return xrc;
    }
    nf_isa isa = fused_isa();
    if (t->layout == NF_LAY_GGUF_ROWS_V1 && obj) { /* DESIGN 7.5: nf_gemv_gguf.c (xf: x or x^) */
        int grc = nf_gemv_gguf_rows(t, obj, obj_bytes, r0, r1, xf, y, threads, isa);
        if (grc <= 0) {
            free(xf);
            return grc;
        }
    }
    gemv_ctx c;
    memset(&c, 0, sizeof c);
    unsigned B = 1, S = 1;
    uint64_t Kx = 0, Kb = 0;
    float *xp = NULL;
    c.fn = pick_kernel(t, isa, &B, &S, &Kx, &Kb);
    if (c.fn && obj && obj_bytes >= t->enc.encoded_bytes) {
        xp = malloc((Kx + 64) * sizeof *xp);
        if (!xp) {
            free(xf);
            return NF_CODEC_ENOMEM;
        }
        build_xp(xf, Kb < t->cols ? Kb : t->cols, Kb, B, S, xp);
        memcpy(xp + Kb, xf + Kb, (Kx - Kb) * sizeof *xp);
        c.t = t;
        c.xp = xp;
        c.K = t->cols;
        const nf_plane *p = t->enc.plane;
        switch (t->layout) {
        case NF_LAY_ROW_SPLIT_K128_V1: {
            nf_rowsplit_info ri = nf_rowsplit_info_of(t->format);
            unsigned last = t->enc.nplanes - 1;
            c.pl[0] = obj + p[0].offset;
            c.rb[0] = p[0].row_bytes;
            if (ri.high_bits) {
                c.pl[1] = obj + p[1].offset;
                c.rb[1] = p[1].row_bytes;
            }
            c.pl[2] = obj + p[last].offset;
            c.rb[2] = p[last].row_bytes;
            c.ng = (unsigned)(p[last].row_bytes / 2);
            /* the scales as many rows ahead as PF_DIST is in the base */
            c.pf_scl = (PF_DIST_ROWS(p[0].row_bytes)) * p[last].row_bytes;
            break;
        }
        case NF_LAY_BLOCK_SCALE_K16_M128X4_V1:
            c.slice = t->rows / t->divisors;
            /* fall through */
        default:
            for (unsigned i = 0; i < t->enc.nplanes && i < 3; i++)
                c.pl[i] = obj + p[i].offset;
            break;
        }
    } else {
        c.fn = NULL;
    }
    int rc = run(t, obj, obj_bytes, r0, r1, xf, y, threads, c.fn ? &c : NULL);
    free(xp);
    free(xf);
    return rc;
}

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

void nf_a8_quantize(const uint16_t *x, uint64_t K, int8_t *q, float *d)
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

int nf_decode_pass(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                   unsigned threads)
{
    return t ? run(t, obj, obj_bytes, 0, t->rows, NULL, NULL, threads, NULL) : NF_CODEC_EINVAL;
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
    unsigned threads, idx, variant;
    atomic_size_t *next; /* variant 2: the next chunk */
    uint64_t result;
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

static void *read_worker(void *arg)
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
        r->result = x;
        return NULL;
    }
    size_t per = (end / r->threads) & ~(size_t)255;
    size_t b = per * r->idx, e = r->idx + 1 == r->threads ? end : b + per;
    r->result = read_range(r->p, b, e, r->variant == 1);
    return NULL;
}

uint64_t nf_read_pass_variant(const void *buf, size_t bytes, unsigned threads, unsigned variant)
{
    if (!threads)
        threads = nf_cpu_count();
    if (threads > 64)
        threads = 64;
    struct rjob r[64];
    pthread_t tid[64];
    bool started[64] = {false};
    atomic_size_t next = 0;
    for (unsigned i = 0; i < threads; i++)
        r[i] = (struct rjob){buf, bytes, threads, i, variant % NF_READ_VARIANTS, &next, 0};
    for (unsigned i = 1; i < threads; i++)
        started[i] = pthread_create(&tid[i], NULL, read_worker, &r[i]) == 0;
    read_worker(&r[0]);
    uint64_t x = r[0].result;
    for (unsigned i = 1; i < threads; i++) {
        if (started[i])
            pthread_join(tid[i], NULL);
        else
            read_worker(&r[i]);
        x ^= r[i].result;
    }
    return x;
}

uint64_t nf_read_pass(const void *buf, size_t bytes, unsigned threads)
{
    return nf_read_pass_variant(buf, bytes, threads, 0);
}
