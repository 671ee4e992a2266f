/* t_gemv_gguf.c — the CPU GEMV of the gguf_* formats (nf_gemv.h,
 * nf_gemv_gguf.h) against its reference, on every ISA the CPU has.
 *
 * Objects: plausible random blocks (nf_gguf_random_blocks) and hostile
 * ones (every byte random, f16 fields included: infinities, NaNs,
 * subnormals), on shapes with a few blocks per row, over row ranges that do
 * not start at 0, with 1 and 3 threads. Checks, as t_gemv.c does for our
 * own formats:
 *  - |y - y_ref| <= the bound of nf_gemv_ref_rows, row by row (rows whose
 *    reference is not finite: the same value, or both NaN; rows whose sum of
 *    |w x| nears FLT_MAX may overflow in f32 to inf or NaN);
 *  - the result does not depend on the thread count (bit for bit);
 *  - the decode inside the fused kernels is exact: with x = e_k, y is
 *    column k of W, equal to nf_decode_rows_f32 (as values; NaN == NaN);
 *  - the kernels of each ISA give bit-identical y for the same x (same
 *    summation order per ISA width is not required across ISAs; the bound
 *    is). x holds zeros, negatives and large values. */
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_test.h"

#include <math.h>
#include <stdlib.h>

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const nf_format ALL[] = {
    NF_FMT_GGUF_F16,  NF_FMT_GGUF_Q8_0,   NF_FMT_GGUF_Q4_0,  NF_FMT_GGUF_Q4_1, NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q5_1, NF_FMT_GGUF_IQ4_NL, NF_FMT_GGUF_MXFP4, NF_FMT_GGUF_Q2_K, NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K, NF_FMT_GGUF_Q5_K,   NF_FMT_GGUF_Q6_K,  NF_FMT_GGUF_IQ4_XS,
};
static const nf_isa ISAS[] = {NF_ISA_SCALAR, NF_ISA_AVX2, NF_ISA_AVX512};

static bool same(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

static void fill_x(uint16_t *x, uint64_t K)
{
    for (uint64_t k = 0; k < K; k++) {
        uint64_t r = rnd();
        float v = (float)((int)(r % 2001) - 1000) / 256.0f;
        if (r % 17 == 0)
            v = 0;
        if (r % 31 == 0)
            v *= 4096.0f;
        x[k] = nf_f32_to_bf16(v);
    }
}

/* y against the reference with its bound; returns the rows that fail */
static long check_rows_act(const nf_tensor_enc *t, const uint8_t *obj, uint64_t r0, uint64_t r1,
                           const uint16_t *x, unsigned threads, float *y_out, nf_act act)
{
    uint64_t n = r1 - r0;
    float *y = malloc(n * sizeof *y), *ref = malloc(n * sizeof *ref);
    double *bound = malloc(n * sizeof *bound);
    long bad = 0;
    if (nf_gemv_rows_act(t, obj, t->enc.encoded_bytes, r0, r1, x, y, threads, act) ||
        nf_gemv_ref_rows_act(t, obj, t->enc.encoded_bytes, r0, r1, x, ref, bound, act))
        bad = -1;
    for (uint64_t i = 0; bad >= 0 && i < n; i++) {
        bool ok = isfinite(ref[i]) ? fabs((double)y[i] - ref[i]) <= bound[i] : same(y[i], ref[i]);
        /* sum |w x| near FLT_MAX (mxfp4 with E near 255): an f32 partial sum may overflow
         * where the double reference does not (nf_gemv_gguf.h) */
        if (bound[i] * 0x1p24 / (double)t->cols > 0x1p126 && !isfinite(y[i]))
            ok = true;
        if (!ok && bad++ < 3)
            printf("#   row %llu: y %.9g ref %.9g bound %.3g\n", (unsigned long long)(r0 + i),
                   (double)y[i], (double)ref[i], bound[i]);
    }
    if (y_out)
        memcpy(y_out, y, n * sizeof *y);
    free(y);
    free(ref);
    free(bound);
    return bad;
}

static long check_rows(const nf_tensor_enc *t, const uint8_t *obj, uint64_t r0, uint64_t r1,
                       const uint16_t *x, unsigned threads, float *y_out)
{
    return check_rows_act(t, obj, r0, r1, x, threads, y_out, NF_ACT_A16);
}

static void one(nf_format f, bool hostile)
{
    nf_gguf_info gi = nf_gguf_info_of(f);
    uint64_t N = 37, K = gi.qk == 1 ? 157 : (gi.qk == 32 ? 9 : 3) * gi.qk, d[2] = {N, K};
    nf_tensor_enc t;
    nf_tensor_enc_init(&t, f, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL);
    uint8_t *obj = malloc(t.enc.encoded_bytes);
    uint64_t nb = N * (K / gi.qk);
    if (hostile)
        for (uint64_t i = 0; i < t.enc.encoded_bytes; i++)
            obj[i] = (uint8_t)rnd();
    else
        nf_gguf_random_blocks(f, rnd(), obj, nb);
    uint16_t *x = malloc(K * sizeof *x);
    fill_x(x, K);
    const char *fn = nf_format_name(f), *what = hostile ? "hostile" : "random";
    float *yi[3] = {malloc(N * sizeof(float)), malloc(N * sizeof(float)), malloc(N * sizeof(float))};
    for (size_t ii = 0; ii < 3; ii++) {
        nf_isa isa = ISAS[ii];
        if (!nf_codec_isa_supported(isa)) {
            SKIP("the CPU lacks it", "%s %s on %s", fn, what, nf_isa_name(isa));
            continue;
        }
        nf_codec_set_isa(isa);
        long bad = check_rows(&t, obj, 0, N, x, 1, yi[ii]);
        CHECK(bad == 0, "%s %s [%llu,%llu] on %s: within the reference's bound (%ld rows)", fn,
              what, (unsigned long long)N, (unsigned long long)K, nf_isa_name(isa), bad);
        bad = check_rows_act(&t, obj, 0, N, x, 2, NULL, NF_ACT_A8);
        CHECK(bad == 0, "%s %s on %s: A8 within the A8 reference's bound (%ld rows)", fn, what,
              nf_isa_name(isa), bad);
        float *y3 = malloc(N * sizeof *y3);
        bad = check_rows(&t, obj, 5, N, x, 3, y3);
        size_t diff = 0;
        for (uint64_t n = 5; n < N; n++)
            diff += !same(y3[n - 5], yi[ii][n]) ||
                    (y3[n - 5] == yi[ii][n] && signbit(y3[n - 5]) != signbit(yi[ii][n]));
        CHECK(bad == 0 && diff == 0,
              "%s %s on %s: rows [5,37) on 3 threads equal 1 thread bit for bit (%zu differ)", fn,
              what, nf_isa_name(isa), diff);
        free(y3);
        /* one-hot x: column k of W exactly */
        uint16_t *e = calloc(K, sizeof *e);
        float *col = malloc(N * sizeof *col), *w = malloc(N * K * sizeof *w);
        nf_decode_rows_f32(&t, obj, t.enc.encoded_bytes, 0, N, w);
        uint64_t ks[4] = {0, 1, K / 2 + 3, K - 1};
        size_t wrong = 0;
        for (int q = 0; q < 4; q++) {
            memset(e, 0, K * sizeof *e);
            e[ks[q]] = 0x3f80;
            nf_gemv(&t, obj, t.enc.encoded_bytes, e, col, 1);
            for (uint64_t n = 0; n < N; n++) {
                float want = w[n * K + ks[q]];
                /* inf * 0 in the other columns gives NaN: only finite rows say something */
                bool row_finite = true;
                for (uint64_t k = 0; k < K; k++)
                    row_finite &= isfinite(w[n * K + k]);
                if (row_finite && !same(col[n], want))
                    wrong++;
            }
        }
        CHECK(wrong == 0, "%s %s on %s: x = e_k gives column k of the decode exactly (%zu wrong)", fn,
              what, nf_isa_name(isa), wrong);
        free(e);
        free(col);
        free(w);
    }
    nf_codec_set_isa(NF_ISA_AUTO);
    for (int i = 0; i < 3; i++)
        free(yi[i]);
    free(obj);
    free(x);
}

static void errors(void)
{
    uint64_t d[2] = {4, 256};
    nf_tensor_enc t;
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q4_K, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL);
    uint8_t *obj = calloc(1, t.enc.encoded_bytes);
    uint16_t x[256] = {0};
    float y[4];
    CHECK(nf_gemv(&t, obj, t.enc.encoded_bytes - 1, x, y, 1) == NF_CODEC_ESHORT,
          "gemv of a short gguf object is ESHORT");
    CHECK(nf_gemv_rows(&t, obj, t.enc.encoded_bytes, 3, 5, x, y, 1) == NF_CODEC_ERANGE,
          "gemv rows past the end are ERANGE");
    CHECK(nf_gemv_rows(&t, obj, t.enc.encoded_bytes, 2, 2, x, y, 1) == 0, "an empty row range is fine");
    free(obj);
}

int main(void)
{
    for (size_t i = 0; i < sizeof ALL / sizeof *ALL; i++) {
        one(ALL[i], false);
        one(ALL[i], true);
    }
    errors();
    return nf_test_done();
}
