/* t_devcheck.c — the check of device results on sampled rows
 * (nf_devcheck.h), fed with the CPU's own results: the reference passes,
 * the CPU kernel passes within its bound, a perturbed row, a NaN and a
 * wrong infinity fail and are named; non-finite references compare by
 * class; decode compares bits; the sampled rows hold the first and last 64.
 */
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_devcheck.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float frand(void) { return (float)((double)(rnd() >> 11) * 0x1p-53 - 0.5); }

/* an object of format f [n, k] encoded from random f32 (gguf_*: random
 * blocks) */
static uint8_t *mk(nf_tensor_enc *t, nf_format f, uint64_t n, uint64_t k)
{
    uint64_t d[2] = {n, k};
    if (nf_tensor_enc_init(t, f, nf_format_default_layout(f), d, 2, 1, NULL) != NF_ENC_OK)
        return NULL;
    float *src = malloc(n * k * sizeof *src);
    uint8_t *obj = malloc(t->enc.encoded_bytes);
    for (uint64_t i = 0; i < n * k; i++)
        src[i] = frand() * 0.1f;
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    if (nf_format_is_gguf(f)) /* copied, never encoded into: plausible random blocks */
        nf_gguf_random_blocks(f, rnd(), obj, n * k / nf_gguf_info_of(f).qk);
    else if (nf_encode_f32(t, src, obj, t->enc.encoded_bytes, &eo, NULL)) {
        free(obj);
        obj = NULL;
    }
    free(src);
    return obj;
}

static void test_sample(void)
{
    uint64_t rows[300];
    size_t n = nf_devcheck_sample_rows(10, rows, 256);
    int ok = n == 10;
    for (size_t i = 0; ok && i < n; i++)
        ok = rows[i] == i;
    CHECK(ok, "10 rows: all sampled, in order");
    static const uint64_t Ns[] = {257, 1000, 8259, 151936, 1ull << 33};
    for (size_t t = 0; t < sizeof Ns / sizeof Ns[0]; t++) {
        uint64_t N = Ns[t];
        n = nf_devcheck_sample_rows(N, rows, 256);
        int sorted = 1, first = 1, last = 1, inside = 1;
        for (size_t i = 1; i < n; i++)
            sorted &= rows[i] > rows[i - 1];
        for (uint64_t i = 0; i < 64; i++)
            first &= rows[i] == i, last &= rows[n - 64 + i] == N - 64 + i;
        for (size_t i = 0; i < n; i++)
            inside &= rows[i] < N;
        CHECK(n > 200 && n <= 256 && sorted && first && last && inside,
              "%llu rows: %zu sampled, sorted and distinct, the first and last 64 among them",
              (unsigned long long)N, n);
    }
}

static void test_value(void)
{
    double e;
    CHECK(nf_devcheck_value(1.0, 1.0, 0, &e) && e == 0, "equal values pass with bound 0");
    CHECK(nf_devcheck_value(1.0 + 1e-7, 1.0, 1e-6, &e) && e > 0, "within the bound passes");
    CHECK(!nf_devcheck_value(1.1, 1.0, 1e-6, &e) && fabs(e - 0.1) < 1e-12,
          "outside the bound fails, the error given");
    CHECK(nf_devcheck_value(NAN, NAN, NAN, &e) && e == 0, "NaN where the reference is NaN passes");
    CHECK(nf_devcheck_value(INFINITY, INFINITY, INFINITY, &e) && e == 0,
          "+Inf where the reference is +Inf passes (Inf - Inf is no error)");
    CHECK(!nf_devcheck_value(-INFINITY, INFINITY, INFINITY, &e) && isnan(e),
          "-Inf where the reference is +Inf fails");
    CHECK(!nf_devcheck_value(1.0, NAN, NAN, &e), "a number where the reference is NaN fails");
    CHECK(!nf_devcheck_value(NAN, 0.5, 1e30, &e) && isnan(e),
          "NaN where the reference is finite fails, error NaN, whatever the bound");
    CHECK(!nf_devcheck_value(INFINITY, 3e38, 1e300, &e), "an overflow where the reference is "
          "finite fails");
}

static void test_gemv(nf_format f, uint64_t N, uint64_t K)
{
    nf_tensor_enc t;
    uint8_t *obj = mk(&t, f, N, K);
    if (!obj) {
        CHECK(0, "%s %llux%llu encodes", nf_format_name(f), (unsigned long long)N,
              (unsigned long long)K);
        return;
    }
    uint16_t *x = malloc(K * 2);
    for (uint64_t k = 0; k < K; k++)
        x[k] = nf_f32_to_bf16(frand() * 4);
    float *ref = malloc(N * 4), *y = malloc(N * 4);
    uint64_t rows[256];
    size_t ns = nf_devcheck_sample_rows(N, rows, 256);
    nf_gemv_ref_rows(&t, obj, t.enc.encoded_bytes, 0, N, x, ref, NULL);
    nf_devcheck_result r;
    int rc = nf_devcheck_gemv(&t, obj, x, ref, rows, ns, 30, &r);
    CHECK(rc == 0 && r.ok && r.rows == ns && r.bad == 0 && r.max_err == 0,
          "%s %llux%llu: the reference itself passes (%llu rows)", nf_format_name(f),
          (unsigned long long)N, (unsigned long long)K, (unsigned long long)r.rows);
    nf_gemv_rows(&t, obj, t.enc.encoded_bytes, 0, N, x, y, 2);
    rc = nf_devcheck_gemv(&t, obj, x, y, rows, ns, (double)K, &r);
    CHECK(rc == 0 && r.ok && r.bound > 0, "%s: the CPU kernel passes within its own bound "
          "(K units; worst %.3g of %.3g)", nf_format_name(f), r.max_err, r.bound);
    /* the last row off by far more than its bound: named */
    memcpy(y, ref, N * 4);
    y[N - 1] += 1.0f;
    rc = nf_devcheck_gemv(&t, obj, x, y, rows, ns, 30, &r);
    CHECK(rc == 0 && !r.ok && r.bad == 1 && r.worst_row == N - 1 && r.max_err > r.bound,
          "%s: the last row off by 1: fails, named (row %llu, error %.3g over %.3g)",
          nf_format_name(f), (unsigned long long)r.worst_row, r.max_err, r.bound);
    /* a NaN in the middle of the sample, with a large error elsewhere: the
     * NaN is the worst */
    memcpy(y, ref, N * 4);
    y[rows[ns / 2]] = NAN;
    y[0] += 1.0f;
    rc = nf_devcheck_gemv(&t, obj, x, y, rows, ns, 30, &r);
    CHECK(rc == 0 && !r.ok && r.bad == 2 && r.worst_row == rows[ns / 2] && isnan(r.max_err),
          "%s: a NaN result: fails, the worst, error NaN", nf_format_name(f));
    free(x), free(ref), free(y), free(obj);
}

/* bf16 weights with an Inf and a NaN: the reference's classes */
static void test_nonfinite(void)
{
    nf_tensor_enc t;
    uint64_t d[2] = {3, 64};
    nf_tensor_enc_init(&t, NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, NULL);
    uint16_t w[192], x[64];
    for (int i = 0; i < 192; i++)
        w[i] = nf_f32_to_bf16(frand());
    for (int i = 0; i < 64; i++)
        x[i] = nf_f32_to_bf16(1.0f + (float)i / 64);
    w[5] = 0x7f80;       /* row 0: +Inf */
    w[64 + 7] = 0x7fc0;  /* row 1: NaN */
    w[128 + 1] = 0xff80; /* row 2: -Inf */
    float ref[3], y[3];
    uint64_t rows[3] = {0, 1, 2};
    nf_gemv_ref_rows(&t, (const uint8_t *)w, sizeof w, 0, 3, x, ref, NULL);
    CHECK(isinf(ref[0]) && ref[0] > 0 && isnan(ref[1]) && isinf(ref[2]) && ref[2] < 0,
          "the reference: +Inf, NaN, -Inf");
    nf_gemv_rows(&t, (const uint8_t *)w, sizeof w, 0, 3, x, y, 1);
    nf_devcheck_result r;
    int rc = nf_devcheck_gemv(&t, (const uint8_t *)w, x, y, rows, 3, 30, &r);
    CHECK(rc == 0 && r.ok, "the CPU kernel's +Inf, NaN, -Inf pass by class");
    y[2] = INFINITY;
    rc = nf_devcheck_gemv(&t, (const uint8_t *)w, x, y, rows, 3, 30, &r);
    CHECK(rc == 0 && !r.ok && r.bad == 1 && r.worst_row == 2, "+Inf for -Inf fails, row 2");
}

static void test_decode(void)
{
    nf_tensor_enc t;
    uint8_t *obj = mk(&t, NF_FMT_Q4_G64_FP16, 200, 1000);
    uint16_t *out = malloc(50 * 1000 * 2);
    nf_decode_rows_bf16(&t, obj, t.enc.encoded_bytes, 100, 150, out);
    nf_devcheck_result r;
    int rc = nf_devcheck_decode(&t, obj, 100, 150, out, &r);
    CHECK(rc == 0 && r.ok && r.rows == 50 && r.max_err == 0 && r.bound == 0,
          "decode: nf_decode_rows_bf16's own rows pass (50 rows)");
    out[7 * 1000 + 3] ^= 1;
    out[9 * 1000] ^= 0x8000;
    rc = nf_devcheck_decode(&t, obj, 100, 150, out, &r);
    CHECK(rc == 0 && !r.ok && r.bad == 2 && r.worst_row == 107 && r.max_err == 2,
          "decode: two flipped words fail: 2 differ, the first in row 107");
    free(out);
    free(obj);
}

int main(void)
{
    test_sample();
    test_value();
    test_gemv(NF_FMT_Q4_G64_FP16, 300, 4100);
    test_gemv(NF_FMT_BF16, 1000, 256);
    test_gemv(NF_FMT_NVFP4, 384, 512);
    test_gemv(NF_FMT_GGUF_Q8_0, 129, 512);
    test_nonfinite();
    test_decode();
    return nf_test_done();
}
