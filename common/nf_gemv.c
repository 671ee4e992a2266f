/* nf_gemv.c — CPU GEMV, decode pass and read-bandwidth kernels. */
#include "nf_gemv.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "nf_fp.h"

unsigned nf_cpu_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
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

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static float dot_avx2(const float *a, const float *b,
                                                          uint64_t n)
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

static dot_fn pick_dot(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return dot_avx2;
#endif
    return dot_scalar;
}

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
};

static void *worker(void *arg)
{
    struct job *j = arg;
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
               uint64_t r1, const float *x, float *y, unsigned threads)
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

int nf_gemv_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes, uint64_t r0,
                 uint64_t r1, const uint16_t *x, float *y, unsigned threads)
{
    if (!t || !x || !y)
        return NF_CODEC_EINVAL;
    float *xf = malloc((t->cols ? t->cols : 1) * sizeof *xf);
    if (!xf)
        return NF_CODEC_ENOMEM;
    for (uint64_t k = 0; k < t->cols; k++)
        xf[k] = nf_bf16_to_f32(x[k]);
    int rc = run(t, obj, obj_bytes, r0, r1, xf, y, threads);
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
    if (!t || !obj || !x || !y)
        return NF_CODEC_EINVAL;
    if (r0 > r1 || r1 > t->rows)
        return NF_CODEC_ERANGE;
    nf_isa prev = nf_codec_isa();
    float *row = malloc((t->cols ? t->cols : 1) * sizeof *row);
    if (!row)
        return NF_CODEC_ENOMEM;
    /* the scalar path is the obviously-right one; SIMD paths match it bit
     * for bit, so this does not change results, only who computes them */
    nf_codec_set_isa(NF_ISA_SCALAR);
    int rc = 0;
    for (uint64_t n = r0; n < r1 && !rc; n++) {
        rc = nf_decode_rows_f32(t, obj, obj_bytes, n, n + 1, row);
        double s = 0, a = 0;
        for (uint64_t k = 0; !rc && k < t->cols; k++) {
            double p = (double)row[k] * (double)nf_bf16_to_f32(x[k]);
            s += p;
            a += fabs(p);
        }
        y[n - r0] = (float)s;
        if (bound)
            bound[n - r0] = (double)t->cols * 0x1p-24 * a + fabs(s) * 0x1p-24;
    }
    nf_codec_set_isa(prev);
    free(row);
    return rc;
}

int nf_decode_pass(const nf_tensor_enc *t, const uint8_t *obj, uint64_t obj_bytes,
                   unsigned threads)
{
    return t ? run(t, obj, obj_bytes, 0, t->rows, NULL, NULL, threads) : NF_CODEC_EINVAL;
}

struct rjob {
    const unsigned char *p;
    size_t bytes;
    unsigned threads, idx;
    uint64_t result;
};

static void *read_worker(void *arg)
{
    struct rjob *r = arg;
    size_t per = (r->bytes / r->threads) & ~(size_t)63;
    size_t b = per * r->idx, e = r->idx + 1 == r->threads ? r->bytes & ~(size_t)63 : b + per;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = b; i + 256 <= e; i += 256) {
        /* one 8-byte load per 64-byte line: the line is fetched whole */
        s0 += *(const uint64_t *)(r->p + i);
        s1 += *(const uint64_t *)(r->p + i + 64);
        s2 += *(const uint64_t *)(r->p + i + 128);
        s3 += *(const uint64_t *)(r->p + i + 192);
    }
    r->result = s0 ^ s1 ^ s2 ^ s3;
    return NULL;
}

uint64_t nf_read_pass(const void *buf, size_t bytes, unsigned threads)
{
    if (!threads)
        threads = nf_cpu_count();
    if (threads > 64)
        threads = 64;
    struct rjob r[64];
    pthread_t tid[64];
    bool started[64] = {false};
    for (unsigned i = 0; i < threads; i++)
        r[i] = (struct rjob){buf, bytes, threads, i, 0};
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
