/* t_gemv.c — the CPU GEMV (nf_gemv.h) against its reference.
 *
 * For every format/layout: objects encoded with nf_encode_f32 from random
 * f32, and hostile-but-decodable bytes (random codes and scales, finite
 * where the format needs it; row_split padding columns and padding groups
 * filled with garbage too), on odd shapes (K not a multiple of 128 or the
 * group; nvfp4 with divisors), over row ranges that do not start at 0, on
 * every ISA path (nf_codec_set_isa picks the fused kernels' ISA as well),
 * with 1 and 3 threads. Checks:
 *  - |y - y_ref| <= bound of nf_gemv_ref_rows, row by row;
 *  - the result does not depend on the thread count (bit for bit);
 *  - exactness of the decode inside the fused kernels: with x = e_k (one
 *    column at 1.0) y is column k of W exactly, so it must equal
 *    nf_decode_rows_f32 bit for bit (as float values: +0 == -0, NaN == NaN);
 *  - rows the fused kernels decline (non-finite row_split scale, fp8 NaN
 *    code or huge row scale, nvfp4 slices too small for the table) give
 *    what the reference gives (same value, or both NaN);
 *  - the two-pass path and the AVX2 cap selected by NF_GEMV_ISA, in a child
 *    process (the variable is read once).
 * x holds zeros, negatives and large values. */
#include "nf_codec.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_gemv_int.h"
#include "nf_test.h"

#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double urand(void) { return (double)(rnd() >> 11) * 0x1p-53; }
static double gauss(void)
{
    double u = urand() + 1e-300, v = urand();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

typedef struct {
    nf_tensor_enc t;
    uint8_t *obj;
    uint64_t bytes;
} tobj;

static int mk(tobj *o, nf_format f, uint64_t n, uint64_t k, uint64_t div)
{
    uint64_t d[2] = {n, k};
    const char *why = NULL;
    if (nf_tensor_enc_init(&o->t, f, nf_format_default_layout(f), d, 2, div, &why) != NF_ENC_OK) {
        printf("# mk %s %llux%llu: %s\n", nf_format_name(f), (unsigned long long)n,
               (unsigned long long)k, why ? why : "?");
        return -1;
    }
    o->bytes = o->t.enc.encoded_bytes;
    o->obj = calloc(1, o->bytes);
    return o->obj ? 0 : -1;
}

/* Random weights: per row a magnitude between 2^-8 and 2^8, a few exact
 * zeros and a few outliers. */
static int fill_encoded(tobj *o)
{
    uint64_t N = o->t.rows, K = o->t.cols;
    float *src = malloc(N * K * sizeof *src);
    if (!src)
        return -1;
    for (uint64_t n = 0; n < N; n++) {
        double m = ldexp(1.0, (int)(rnd() % 17) - 8);
        for (uint64_t k = 0; k < K; k++) {
            double v = gauss() * m;
            uint64_t r = rnd() % 100;
            if (r < 5)
                v = 0;
            else if (r < 7)
                v *= 20;
            if (o->t.format == NF_FMT_INT32)
                v = (double)(int64_t)(v * 1000.0);
            src[n * K + k] = (float)v;
        }
    }
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    eo.absmax_only = (rnd() & 1) != 0;
    int rc = nf_encode_f32(&o->t, src, o->obj, o->bytes, &eo, NULL);
    free(src);
    return rc;
}

/* A random FP16 / BF16 / E4M3 pattern that is finite. */
static uint16_t rnd_fp16(void)
{
    uint16_t h;
    do
        h = (uint16_t)rnd();
    while ((h & 0x7c00) == 0x7c00);
    return h;
}
static uint8_t rnd_e4m3(void)
{
    uint8_t c;
    do
        c = (uint8_t)rnd();
    while (nf_e4m3_is_nan(c));
    return c;
}

/* Hostile but decodable: every byte of every plane random (padding columns
 * and padding groups included), scales finite. Contiguous formats: random
 * words with the exponent kept away from overflow (bf16/fp32), any int32. */
static void fill_hostile(tobj *o)
{
    const nf_tensor_enc *t = &o->t;
    for (uint64_t i = 0; i < o->bytes; i++)
        o->obj[i] = (uint8_t)rnd();
    const nf_plane *p = t->enc.plane;
    switch (t->layout) {
    case NF_LAY_ROW_SPLIT_K128_V1: {
        const nf_plane *ps = &p[t->enc.nplanes - 1];
        for (uint64_t i = 0; i < ps->bytes / 2; i++) {
            uint16_t h = rnd_fp16();
            /* keep magnitudes within 2^-20 .. 2^10 mostly: large exponents
             * only make the test's sums overflow */
            if (((h >> 10) & 0x1f) > 25)
                h = (uint16_t)((h & 0x83ff) | (25u << 10));
            o->obj[ps->offset + 2 * i] = (uint8_t)h;
            o->obj[ps->offset + 2 * i + 1] = (uint8_t)(h >> 8);
        }
        break;
    }
    case NF_LAY_ROW_SCALE_V1:
        for (uint64_t i = 0; i < p[0].bytes; i++)
            o->obj[p[0].offset + i] = rnd_e4m3();
        for (uint64_t n = 0; n < t->rows; n++) {
            uint16_t r = (uint16_t)(((rnd() & 1) << 15) | ((110 + rnd() % 30) << 7) | (rnd() & 0x7f));
            o->obj[p[1].offset + 2 * n] = (uint8_t)r;
            o->obj[p[1].offset + 2 * n + 1] = (uint8_t)(r >> 8);
        }
        break;
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1:
        for (uint64_t i = 0; i < p[1].bytes; i++)
            o->obj[p[1].offset + i] = rnd_e4m3();
        for (uint64_t i = 0; i < t->divisors; i++) {
            float w = (float)ldexp(1.0 + urand(), (int)(rnd() % 21) - 10);
            uint32_t u = nf_f32_bits(w);
            for (int b = 0; b < 4; b++)
                o->obj[p[2].offset + 4 * i + b] = (uint8_t)(u >> (8 * b));
        }
        break;
    case NF_LAY_CONTIGUOUS_LE_V1:
        if (t->format == NF_FMT_BF16) {
            for (uint64_t i = 0; i < p[0].bytes / 2; i++) {
                uint8_t *q = o->obj + p[0].offset + 2 * i;
                unsigned e = 100 + (unsigned)(rnd() % 50);
                uint16_t v = (uint16_t)(((rnd() & 1) << 15) | (e << 7) | (rnd() & 0x7f));
                q[0] = (uint8_t)v;
                q[1] = (uint8_t)(v >> 8);
            }
        } else if (t->format == NF_FMT_FP32) {
            for (uint64_t i = 0; i < p[0].bytes / 4; i++) {
                uint8_t *q = o->obj + p[0].offset + 4 * i;
                uint32_t e = 100 + (uint32_t)(rnd() % 50);
                uint32_t v = (uint32_t)((rnd() & 1) << 31) | e << 23 | (uint32_t)(rnd() & 0x7fffff);
                for (int b = 0; b < 4; b++)
                    q[b] = (uint8_t)(v >> (8 * b));
            }
        }
        break;
    default:
        break;
    }
}

/* x in bf16: about 10% zeros, both signs, a few large values. */
static void fill_x(uint16_t *x, uint64_t K)
{
    for (uint64_t k = 0; k < K; k++) {
        uint64_t r = rnd() % 100;
        double v = gauss();
        if (r < 10)
            v = 0;
        else if (r < 14)
            v *= 1e4 + urand() * 1e6;
        else if (r < 16)
            v = (rnd() & 1) ? 65504.0 : -3e5;
        x[k] = nf_f32_to_bf16((float)v);
    }
}

static bool same(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}

static const nf_isa isas[] = {NF_ISA_SCALAR, NF_ISA_AVX2, NF_ISA_AVX512};

/* y of rows [r0,r1) on the current ISA with `threads` threads against the
 * reference; returns the number of rows out of bound (or -1 on an error). */
static long check_range_act(const tobj *o, uint64_t r0, uint64_t r1, const uint16_t *x,
                            unsigned threads, float *y, float *yr, double *bd, bool nan_ok,
                            nf_act act)
{
    uint64_t m = r1 - r0;
    for (uint64_t i = 0; i < m; i++)
        y[i] = 12345.0f;
    int rc = nf_gemv_rows_act(&o->t, o->obj, o->bytes, r0, r1, x, y, threads, act);
    int rr = nf_gemv_ref_rows_act(&o->t, o->obj, o->bytes, r0, r1, x, yr, bd, act);
    if (rc || rr) {
        printf("#   gemv %d, ref %d\n", rc, rr);
        return -1;
    }
    long bad = 0;
    for (uint64_t i = 0; i < m; i++) {
        bool ok = fabs((double)y[i] - (double)yr[i]) <= bd[i];
        if (nan_ok && !ok)
            ok = same(y[i], yr[i]);
        if (!ok && bad++ < 3)
            printf("#   row %llu: y %.9g ref %.9g |d| %.3g bound %.3g\n",
                   (unsigned long long)(r0 + i), y[i], yr[i], fabs((double)y[i] - yr[i]), bd[i]);
    }
    return bad;
}

static long check_range(const tobj *o, uint64_t r0, uint64_t r1, const uint16_t *x,
                        unsigned threads, float *y, float *yr, double *bd, bool nan_ok)
{
    return check_range_act(o, r0, r1, x, threads, y, yr, bd, nan_ok, NF_ACT_A16);
}

/* One-hot x: y must be column k of W bit for bit. Where a row holds a
 * non-finite weight (nan_ok), inf * 0 makes the whole row NaN, so there
 * y must equal the reference instead. */
static long check_onehot(const tobj *o, const uint64_t *cols, unsigned ncols, float *y,
                         float *wcol, uint16_t *x, bool nan_ok)
{
    uint64_t N = o->t.rows, K = o->t.cols;
    float *w = malloc(N * K * sizeof *w);
    if (!w)
        return -1;
    nf_isa cur = nf_codec_isa();
    nf_codec_set_isa(NF_ISA_SCALAR);
    int rc = nf_decode_rows_f32(&o->t, o->obj, o->bytes, 0, N, w);
    nf_codec_set_isa(cur);
    long bad = rc ? -1 : 0;
    memset(x, 0, K * sizeof *x);
    for (unsigned i = 0; !rc && i < ncols; i++) {
        uint64_t k = cols[i];
        x[k] = 0x3f80; /* 1.0 */
        if (nf_gemv(&o->t, o->obj, o->bytes, x, y, 2)) {
            bad = -1;
            break;
        }
        if (nan_ok && nf_gemv_ref(&o->t, o->obj, o->bytes, x, wcol)) {
            bad = -1;
            break;
        }
        x[k] = 0;
        for (uint64_t n = 0; n < N; n++) {
            if (!nan_ok)
                wcol[n] = w[n * K + k];
            if (!same(y[n], wcol[n]) && bad++ < 3)
                printf("#   column %llu row %llu: y %a, want %a\n", (unsigned long long)k,
                       (unsigned long long)n, y[n], wcol[n]);
        }
    }
    free(w);
    return bad;
}

/* All checks on one object, on every supported ISA. */
static void check_obj(const tobj *o, const char *what, bool nan_ok)
{
    uint64_t N = o->t.rows, K = o->t.cols;
    uint16_t *x = malloc(K * sizeof *x);
    float *y = malloc((N + 1) * sizeof *y), *y3 = malloc((N + 1) * sizeof *y3);
    float *yr = malloc((N + 1) * sizeof *yr), *wc = malloc((N + 1) * sizeof *wc);
    double *bd = malloc((N + 1) * sizeof *bd);
    if (!x || !y || !y3 || !yr || !wc || !bd) {
        CHECK(0, "%s: out of memory", what);
        goto out;
    }
    fill_x(x, K);
    /* one-hot columns: all of them for small K, else a spread of lanes */
    uint64_t cols[320];
    unsigned nc = 0;
    if (K <= 320) {
        for (uint64_t k = 0; k < K; k++)
            cols[nc++] = k;
    } else {
        uint64_t fixed[] = {0, 1, 2, 3, 4, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128,
                            129, K - 1, K - 2, K - 3, K - 64, K / 2};
        for (unsigned i = 0; i < sizeof fixed / sizeof *fixed; i++)
            cols[nc++] = fixed[i];
        while (nc < 48)
            cols[nc++] = rnd() % K;
    }
    for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
        nf_isa want = isas[ii];
        if (!nf_codec_isa_supported(want)) {
            SKIP("CPU lacks it", "%s: %s path", what, nf_isa_name(want));
            continue;
        }
        nf_codec_set_isa(want);
        const char *in = nf_isa_name(want);
        uint64_t r0 = N > 2 ? N / 3 : 0, r1 = N > 1 ? N - 1 : N;
        long b1 = check_range(o, 0, N, x, 1, y, yr, bd, nan_ok);
        long b2 = check_range(o, r0, r1, x, 3, y3, yr, bd, nan_ok);
        CHECK(b1 == 0 && b2 == 0, "%s, %s: rows [0,%llu) and [%llu,%llu) within the bound",
              what, in, (unsigned long long)N, (unsigned long long)r0, (unsigned long long)r1);
        long a1 = check_range_act(o, 0, N, x, 1, y, yr, bd, nan_ok, NF_ACT_A8);
        long a2 = check_range_act(o, r0, r1, x, 3, y3, yr, bd, nan_ok, NF_ACT_A8);
        CHECK(a1 == 0 && a2 == 0, "%s, %s: A8: rows [0,%llu) and [%llu,%llu) within the A8 "
              "reference's bound", what, in, (unsigned long long)N, (unsigned long long)r0,
              (unsigned long long)r1);
        /* threads do not change a row's result */
        long diff = 0;
        if (b1 >= 0 && b2 >= 0 && nf_gemv_rows(&o->t, o->obj, o->bytes, 0, N, x, y, 1) == 0 &&
            nf_gemv_rows(&o->t, o->obj, o->bytes, r0, r1, x, y3, 3) == 0) {
            for (uint64_t n = r0; n < r1; n++)
                diff += !same(y[n], y3[n - r0]) ||
                        (y[n] == 0 && signbit(y[n]) != signbit(y3[n - r0]));
        } else {
            diff = -1;
        }
        CHECK(diff == 0, "%s, %s: 1 and 3 threads agree bit for bit", what, in);
        long bo = check_onehot(o, cols, nc, y, wc, x, nan_ok);
        CHECK(bo == 0, "%s, %s: x = e_k gives %s exactly (%u columns)", what, in,
              nan_ok ? "the reference" : "column k", nc);
        fill_x(x, K); /* check_onehot zeroed it */
    }
    nf_codec_set_isa(NF_ISA_AUTO);
out:
    free(x);
    free(y);
    free(y3);
    free(yr);
    free(wc);
    free(bd);
}

struct shape {
    uint64_t n, k, div;
};

static const nf_format all_fmts[] = {
    NF_FMT_BF16, NF_FMT_FP32, NF_FMT_INT32, NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16,
    NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16,
    NF_FMT_NVFP4, NF_FMT_FP8_E4M3FN_ROW_BF16,
};

static void sweep(bool quick)
{
    static const struct shape gen[] = {
        {37, 100, 1}, {5, 1000, 1}, {130, 4100, 1}, {3, 1, 1}, {7, 63, 1}, {2, 257, 1},
    };
    static const struct shape nv[] = {
        {128, 64, 1}, {256, 192, 2}, {384, 320, 3}, {128, 64, 128}, {128, 4160, 1},
    };
    for (unsigned fi = 0; fi < sizeof all_fmts / sizeof *all_fmts; fi++) {
        nf_format f = all_fmts[fi];
        bool isnv = f == NF_FMT_NVFP4;
        const struct shape *sh = isnv ? nv : gen;
        unsigned ns = isnv ? sizeof nv / sizeof *nv : sizeof gen / sizeof *gen;
        if (quick)
            ns = 2;
        for (unsigned si = 0; si < ns; si++) {
            for (int hostile = 0; hostile < 2; hostile++) {
                if (hostile && quick)
                    continue;
                tobj o;
                char what[128];
                snprintf(what, sizeof what, "%s %llux%llu%s%s", nf_format_name(f),
                         (unsigned long long)sh[si].n, (unsigned long long)sh[si].k,
                         sh[si].div > 1 ? " divisors>1" : "", hostile ? " hostile" : " encoded");
                if (mk(&o, f, sh[si].n, sh[si].k, sh[si].div)) {
                    CHECK(0, "%s: make", what);
                    continue;
                }
                int rc = 0;
                if (hostile)
                    fill_hostile(&o);
                else
                    rc = fill_encoded(&o);
                if (rc)
                    CHECK(0, "%s: encode: %s", what, nf_codec_strerror(rc));
                else
                    check_obj(&o, what, false);
                free(o.obj);
            }
        }
    }
}

/* Rows the fused kernels decline: the two-pass path gives what the
 * reference gives. */
static void declined(void)
{
    tobj o;
    /* row_split: a non-finite scale in row 1 (inside K), one in row 3's
     * padding group; fp16 inf and NaN */
    nf_format rsf[] = {NF_FMT_Q4_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q2_G64_FP16};
    for (unsigned i = 0; i < 3; i++) {
        if (mk(&o, rsf[i], 5, 130, 1) || fill_encoded(&o)) {
            CHECK(0, "declined rows: make");
            continue;
        }
        const nf_plane *ps = &o.t.enc.plane[o.t.enc.nplanes - 1];
        uint8_t *s1 = o.obj + ps->offset + 1 * ps->row_bytes;
        s1[0] = 0x00;
        s1[1] = 0x7c; /* +inf, group 0 of row 1 */
        uint8_t *s3 = o.obj + ps->offset + 3 * ps->row_bytes + ps->row_bytes - 2;
        s3[0] = 0x01;
        s3[1] = 0x7e; /* NaN, the last group: all padding for K=130 */
        char what[96];
        snprintf(what, sizeof what, "%s 5x130 with non-finite scales", nf_format_name(rsf[i]));
        check_obj(&o, what, true);
        free(o.obj);
    }
    /* fp8: a NaN code in row 0, a row scale >= 2^8 in row 2, inf in row 4 */
    if (mk(&o, NF_FMT_FP8_E4M3FN_ROW_BF16, 6, 300, 1) == 0 && fill_encoded(&o) == 0) {
        const nf_plane *p = o.t.enc.plane;
        o.obj[p[0].offset + 77] = 0xff;
        o.obj[p[1].offset + 2 * 2] = 0x80;
        o.obj[p[1].offset + 2 * 2 + 1] = 0x43; /* 256.0 */
        o.obj[p[1].offset + 2 * 4] = 0x80;
        o.obj[p[1].offset + 2 * 4 + 1] = 0x7f; /* +inf */
        check_obj(&o, "fp8 6x300 with a NaN code and large/inf row scales", true);
        free(o.obj);
    } else {
        CHECK(0, "declined fp8: make");
    }
}

/* nf_a8_quantize: per block of 16, d = amax / 127, |x - q d| <= d / 2,
 * |q| <= 127, the block's largest magnitude on +-127, a zero block all 0,
 * the tail of q zero. */
static void a8_quantize(void)
{
    enum { K = 16 * 37 + 5 };
    uint16_t x[K];
    int8_t q[16 * 38];
    float d[38];
    fill_x(x, K);
    for (unsigned k = 32; k < 48; k++)
        x[k] = (k & 1) ? 0x8000 : 0; /* block 2: zeros of both signs */
    memset(q, 0x55, sizeof q);
    nf_a8_quantize(x, K, q, d);
    long bad = 0;
    for (unsigned b = 0; b < 38; b++) {
        float amax = 0;
        for (unsigned k = 16 * b; k < 16 * b + 16 && k < K; k++)
            amax = fmaxf(amax, fabsf(nf_bf16_to_f32(x[k])));
        bad += d[b] != amax / 127.0f;
        bool hit = amax == 0;
        for (unsigned k = 16 * b; k < 16 * b + 16; k++) {
            if (k >= K) {
                bad += q[k] != 0;
                continue;
            }
            double v = nf_bf16_to_f32(x[k]), e = fabs(v - (double)q[k] * d[b]);
            bad += q[k] < -127 || e > d[b] / 2 * (1 + 1e-6);
            hit |= fabs(v) == amax && (q[k] == 127 || q[k] == -127);
        }
        bad += !hit;
    }
    CHECK(bad == 0 && d[2] == 0 && q[32] == 0, "nf_a8_quantize: d = amax/127, |x - q d| <= d/2, "
          "the largest magnitude at +-127, zero blocks and the tail 0");
    /* every ISA gives the portable bytes: whole groups of 16 blocks and a
     * tail, blocks with an inf or a NaN, a zero block, one of subnormals
     * (127 / amax overflows: the quotients by d), one near the largest */
    {
        enum { K2 = 16 * 53 + 7 };
        static uint16_t x2[K2];
        static int8_t qr[16 * 54], qi[16 * 54];
        static float dr[54], di[54];
        fill_x(x2, K2);
        x2[16 * 3 + 5] = 0x7f80;                 /* +inf */
        x2[16 * 20 + 1] = 0xffc1;                /* NaN */
        for (unsigned k = 16 * 7; k < 16 * 8; k++)
            x2[k] = 0;
        for (unsigned k = 16 * 9; k < 16 * 10; k++)
            x2[k] = (uint16_t)((k & 1 ? 0x8000 : 0) | (k % 5 + 1)); /* subnormal */
        for (unsigned k = 16 * 40; k < 16 * 41; k++)
            x2[k] = (uint16_t)(0x7f70 + k % 15);
        nf_isa cur = nf_codec_isa();
        nf_codec_set_isa(NF_ISA_SCALAR);
        nf_a8_quantize(x2, K2, qr, dr);
        long diff = 0;
        unsigned ran = 0;
        for (nf_isa isa = NF_ISA_AVX2; isa <= NF_ISA_AVX512; isa++) {
            if (!nf_codec_isa_supported(isa))
                continue;
            nf_codec_set_isa(isa);
            memset(qi, 0x55, sizeof qi);
            nf_a8_quantize(x2, K2, qi, di);
            diff += memcmp(qi, qr, sizeof qr) != 0 || memcmp(di, dr, sizeof dr) != 0;
            ran++;
        }
        nf_codec_set_isa(cur);
        CHECK(diff == 0 && dr[3] == 0 && dr[20] == 0 && dr[9] > 0 && qr[16 * 9] != 0,
              "nf_a8_quantize: the same codes and scales on every ISA the CPU has (%u run)", ran);
    }
    /* an input holding a non-finite value: A8 is A16 */
    tobj o;
    if (mk(&o, NF_FMT_Q4_G64_FP16, 9, 200, 1) == 0 && fill_encoded(&o) == 0) {
        uint16_t xx[200];
        float y8[9], y16[9];
        fill_x(xx, 200);
        xx[150] = 0x7f80; /* +inf */
        int r8 = nf_gemv_rows_act(&o.t, o.obj, o.bytes, 0, 9, xx, y8, 1, NF_ACT_A8);
        int r16 = nf_gemv_rows_act(&o.t, o.obj, o.bytes, 0, 9, xx, y16, 1, NF_ACT_A16);
        bool eq = r8 == 0 && r16 == 0;
        for (int i = 0; eq && i < 9; i++)
            eq = same(y8[i], y16[i]);
        CHECK(eq, "A8 over an input holding +inf computes A16");
        CHECK(nf_gemv_rows_act(&o.t, o.obj, o.bytes, 0, 9, xx, y8, 1, (nf_act)7) == NF_CODEC_EINVAL,
              "an unknown activation path: EINVAL");
        free(o.obj);
    } else {
        CHECK(0, "a8: make");
    }
}

/* x as a model's activations look: Gaussian, no outliers (every block's
 * values within 2^13 of its largest, so the integer path holds them all in
 * its limbs), optionally with four planted values that it must keep aside:
 * a tiny value beside a large one (bits below the block's unit), two in a
 * block whose largest is 2^-80 (a unit outside the f32 range), a bf16
 * subnormal; plant 2 adds four values near 2^110 in one block, kept aside
 * on A8 too (its A8 scale leaves [2^-60, 2^100]): they dominate y, so a
 * residual lost or added twice leaves the bound. */
static void fill_smooth(uint16_t *x, uint64_t K, int plant)
{
    for (uint64_t k = 0; k < K; k++) {
        double v = gauss();
        x[k] = nf_f32_to_bf16((float)(fabs(v) < 0.02 ? 0.02 : v));
    }
    if (plant && K >= 48) {
        x[1] = nf_f32_to_bf16(3.0f);
        x[2] = nf_f32_to_bf16(3.0f * 0x1p-18f + 0x1p-27f); /* bits below 2^-19 */
        for (uint64_t k = 16; k < 32; k++) /* a block whose largest is 2^-80: its unit */
            x[k] = k == 17 || k == 22 ? nf_f32_to_bf16((float)ldexp(k == 17 ? 1.5 : -1.25, -80))
                                      : 0;
        x[40] = 0x0003; /* a subnormal */
    }
    if (plant == 2 && K >= 64) /* four values, so that the residuals stay within 16 + K/256 */
        for (uint64_t k = 48; k < 64; k++)
            x[k] = k < 52 ? nf_f32_to_bf16((float)ldexp(1.0 + (double)(k % 5) / 8, 110) * (k & 1 ? -1.0f : 1.0f)) : 0;
}

/* The integer path (AVX-512 VNNI+VBMI here; nf_gemv_int.h): it serves an
 * input whose values fit its limbs (a few kept aside), declines one with
 * too many values outside them, and stays within the reference's bound on
 * both activation paths; a row it cannot take (a non-finite scale, an
 * nvfp4 NaN block scale) is computed in f32 and matches the reference. */
static void int_path_on(nf_isa isa);

static void int_path(void)
{
    nf_tensor_enc probe;
    uint64_t dd[2] = {128, 128};
    nf_tensor_enc_init(&probe, NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, dd, 2, 1, NULL);
    if (nf_gemv_int_supported(&probe, NF_ISA_AVX512))
        int_path_on(NF_ISA_AVX512);
    else
        SKIP("CPU lacks AVX-512 VNNI+VBMI", "the integer path on AVX-512");
    if (nf_gemv_int_supported(&probe, NF_ISA_AVX2))
        int_path_on(NF_ISA_AVX2);
    else
        SKIP("CPU lacks AVX2", "the integer path on AVX2");
}

static void int_path_on(nf_isa isa)
{
    const char *in = nf_isa_name(isa);
    static const struct {
        nf_format f;
        uint64_t n, k, div;
    } cs[] = {
        {NF_FMT_Q4_G64_FP16, 37, 1000, 1}, {NF_FMT_Q5_G64_FP16, 9, 300, 1},
        {NF_FMT_Q6_G64_FP16, 11, 260, 1},  {NF_FMT_Q8_G32_FP16, 13, 999, 1},
        {NF_FMT_Q2_G64_FP16, 7, 400, 1},   {NF_FMT_T2_G128_FP16, 8, 200, 1},
        {NF_FMT_NVFP4, 256, 192, 2},       {NF_FMT_NVFP4, 128, 128, 1},
    };
    for (unsigned i = 0; i < sizeof cs / sizeof *cs; i++) {
        tobj o;
        if (mk(&o, cs[i].f, cs[i].n, cs[i].k, cs[i].div) || fill_encoded(&o)) {
            CHECK(0, "int path: make");
            continue;
        }
        uint64_t N = cs[i].n, K = cs[i].k;
        uint16_t *x = malloc(K * sizeof *x);
        float *y = malloc(N * sizeof *y), *yr = malloc(N * sizeof *yr);
        double *bd = malloc(N * sizeof *bd);
        const char *fn = nf_format_name(cs[i].f);
        for (int plant = 0; plant < 3; plant++) {
            fill_smooth(x, K, plant);
            for (int a = 0; a < 2; a++) {
                nf_act act = a ? NF_ACT_A8 : NF_ACT_A16;
                int rc = nf_gemv_int_rows(&o.t, o.obj, o.bytes, 0, N, x, act, y, 2, isa);
                int rr = nf_gemv_ref_rows_act(&o.t, o.obj, o.bytes, 0, N, x, yr, bd, act);
                long bad = rc || rr ? -1 : 0;
                for (uint64_t n = 0; !bad && n < N; n++)
                    if (!(fabs((double)y[n] - yr[n]) <= bd[n]) && bad++ < 3)
                        printf("#   row %llu: y %.9g ref %.9g bound %.3g\n", (unsigned long long)n,
                               y[n], yr[n], bd[n]);
                CHECK(rc == 0 && bad == 0, "int path (%s) %s %llux%llu %s%s: served, within the bound",
                      in, fn, (unsigned long long)N, (unsigned long long)K, a ? "A8" : "A16",
                      plant == 2 ? " (values kept aside, one block near 2^110)" : plant ? " (values kept aside)" : "");
            }
        }
        /* too many values outside the limbs: declined (A16) */
        fill_x(x, K);
        for (uint64_t k = 0; k < K; k += 16)
            x[k] = nf_f32_to_bf16(1e6f);
        CHECK(nf_gemv_int_rows(&o.t, o.obj, o.bytes, 0, N, x, NF_ACT_A16, y, 1, isa) == 1,
              "int path (%s) %s: an input with wide blocks everywhere is declined", in, fn);
        free(x), free(y), free(yr), free(bd);
        free(o.obj);
    }
    /* declined rows inside a served call */
    tobj o;
    if (mk(&o, NF_FMT_Q4_G64_FP16, 6, 256, 1) == 0 && fill_encoded(&o) == 0) {
        const nf_plane *ps = &o.t.enc.plane[o.t.enc.nplanes - 1];
        o.obj[ps->offset + 2 * ps->row_bytes + 3] = 0x7c; /* row 2, group 1: +inf */
        uint16_t x[256];
        float y[6], yr[6];
        double bd[6];
        fill_smooth(x, 256, false);
        int rc = nf_gemv_int_rows(&o.t, o.obj, o.bytes, 0, 6, x, NF_ACT_A16, y, 1, isa);
        nf_gemv_ref_rows(&o.t, o.obj, o.bytes, 0, 6, x, yr, bd);
        bool ok = rc == 0;
        for (int n = 0; ok && n < 6; n++)
            ok = fabs((double)y[n] - yr[n]) <= bd[n] || same(y[n], yr[n]);
        CHECK(ok, "int path (%s): a row with an infinite scale is computed in f32, like the reference", in);
        free(o.obj);
    }
    if (mk(&o, NF_FMT_NVFP4, 128, 128, 1) == 0 && fill_encoded(&o) == 0) {
        o.obj[o.t.enc.plane[1].offset + nf_nvfp4_scale_index(5, 3, 128)] = 0x7f; /* NaN */
        uint16_t x[128];
        float y[128], yr[128];
        double bd[128];
        fill_smooth(x, 128, false);
        int rc = nf_gemv_int_rows(&o.t, o.obj, o.bytes, 0, 128, x, NF_ACT_A16, y, 1, isa);
        nf_gemv_ref_rows(&o.t, o.obj, o.bytes, 0, 128, x, yr, bd);
        bool ok = rc == 0 && isnan(y[5]);
        for (int n = 0; ok && n < 128; n++)
            ok = fabs((double)y[n] - yr[n]) <= bd[n] || same(y[n], yr[n]);
        CHECK(ok, "int path (%s): an nvfp4 row with a NaN block scale is NaN, the others within the bound", in);
        free(o.obj);
    }
}

/* nf_read_pass_variant reads every byte: one nonzero word anywhere in
 * the whole 256-byte blocks shows in the result, on every variant and
 * thread count. */
static void read_pass(void)
{
    size_t bytes = (3u << 20) + 256 + 100;
    uint8_t *b = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!b) {
        CHECK(0, "read_pass: out of memory");
        return;
    }
    memset(b, 0, bytes);
    size_t pos[] = {0, 64, 4096 + 8, (1u << 20) + 200, (bytes & ~(size_t)255) - 8};
    long bad = 0;
    for (unsigned v = 0; v < NF_READ_VARIANTS; v++)
        for (unsigned th = 1; th <= 3; th += 2)
            for (unsigned i = 0; i < sizeof pos / sizeof *pos; i++) {
                b[pos[i]] = 1;
                bad += nf_read_pass_variant(b, bytes, th, v) == 0;
                b[pos[i]] = 0;
                bad += nf_read_pass_variant(b, bytes, th, v) != 0;
            }
    CHECK(bad == 0, "nf_read_pass_variant: every byte is read (%u variants, 1 and 3 threads)",
          NF_READ_VARIANTS);
    CHECK(nf_llc_bytes() >= 4096, "nf_llc_bytes: %llu", (unsigned long long)nf_llc_bytes());
    free(b);
}

static void errors(void)
{
    tobj o;
    if (mk(&o, NF_FMT_Q4_G64_FP16, 4, 128, 1)) {
        CHECK(0, "errors: make");
        return;
    }
    uint16_t x[128] = {0};
    float y[4];
    CHECK(nf_gemv(&o.t, o.obj, o.bytes - 1, x, y, 1) == NF_CODEC_ESHORT, "short object: ESHORT");
    CHECK(nf_gemv_rows(&o.t, o.obj, o.bytes, 2, 5, x, y, 1) == NF_CODEC_ERANGE,
          "rows past the end: ERANGE");
    CHECK(nf_gemv_rows(&o.t, o.obj, o.bytes, 3, 2, x, y, 1) == NF_CODEC_ERANGE,
          "r0 > r1: ERANGE");
    CHECK(nf_gemv(&o.t, NULL, o.bytes, x, y, 1) == NF_CODEC_EINVAL, "NULL object: EINVAL");
    CHECK(nf_gemv_rows(&o.t, o.obj, o.bytes, 2, 2, x, y, 1) == 0, "empty range: 0");
    free(o.obj);
}

/* Run this binary again with NF_GEMV_ISA=val and --child: its quick sweep
 * must pass. */
static void child(const char *argv0, const char *val)
{
    fflush(stdout); /* or the child's copy of the buffer is written twice */
    pid_t pid = fork();
    if (pid == 0) {
        setenv("NF_GEMV_ISA", val, 1);
        if (!freopen("/dev/null", "w", stdout))
            _exit(3);
        execl(argv0, argv0, "--child", (char *)NULL);
        _exit(4);
    }
    int st = 0;
    bool ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    CHECK(ok, "NF_GEMV_ISA=%s: the quick sweep passes in a child process", val);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--child")) {
        sweep(true);
        return nf_test_done();
    }
    errors();
    a8_quantize();
    read_pass();
    int_path();
    sweep(false);
    declined();
    child(argv[0], "scalar");
    child(argv[0], "avx2");
    return nf_test_done();
}
