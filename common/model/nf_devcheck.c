/* nf_devcheck.c — sampled rows against the CPU reference. */
#include "nf_devcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_gemv.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t nf_devcheck_sample_rows(uint64_t N, uint64_t *rows, size_t max)
{
    if (max < 128)
        max = 128;
    if (N <= max) {
        for (uint64_t i = 0; i < N; i++)
            rows[i] = i;
        return (size_t)N;
    }
    size_t n = 0;
    for (uint64_t i = 0; i < 64; i++) {
        rows[n++] = i;
        rows[n++] = N - 64 + i;
    }
    /* N > max >= 128: the middle [64, N - 64) is not empty */
    uint64_t mid = N - 128, m = max - 128, s = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < m; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t step = mid / m ? mid / m : 1;
        uint64_t r = 64 + (i * mid) / m + s % step;
        rows[n++] = r < N - 64 ? r : N - 65;
    }
    qsort(rows, n, sizeof *rows, cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || rows[i] != rows[u - 1])
            rows[u++] = rows[i];
    return u;
}

bool nf_devcheck_value(double y, double ref, double bound, double *err)
{
    if (isnan(ref) || isinf(ref)) {
        bool ok = isnan(ref) ? isnan(y) : y == ref;
        *err = ok ? 0 : NAN;
        return ok;
    }
    if (!isfinite(y)) {
        *err = NAN;
        return false;
    }
    *err = fabs(y - ref);
    return *err <= bound;
}

int nf_devcheck_gemv(const nf_tensor_enc *t, const uint8_t *obj, const uint16_t *x,
                     const float *y, const uint64_t *rows, size_t n, double units,
                     nf_devcheck_result *r)
{
    memset(r, 0, sizeof *r);
    uint64_t K = t->cols, eb = t->enc.encoded_bytes;
    float *w = malloc((K ? K : 1) * sizeof *w), *xf = malloc((K ? K : 1) * sizeof *xf);
    int rc = w && xf ? 0 : NF_CODEC_ENOMEM;
    for (uint64_t k = 0; !rc && k < K; k++)
        xf[k] = nf_bf16_to_f32(x[k]);
    double worst = -1;
    for (size_t i = 0; !rc && i < n; i++) {
        uint64_t row = rows[i];
        float ref;
        if ((rc = nf_gemv_ref_rows(t, obj, eb, row, row + 1, x, &ref, NULL)) ||
            (rc = nf_decode_rows_f32(t, obj, eb, row, row + 1, w)))
            break;
        double mag = 0;
        for (uint64_t k = 0; k < K; k++)
            mag += fabs((double)w[k] * xf[k]);
        double bound = units * 0x1p-24 * mag + 0x1p-24 * fabs((double)ref) + 0x1p-140, err;
        bool ok = nf_devcheck_value(y[row], ref, bound, &err);
        /* the worst: the largest err / bound; a NaN mismatch above all */
        double ratio = isnan(err) ? INFINITY : bound > 0 ? err / bound : err > 0 ? INFINITY : 0;
        r->rows++;
        r->bad += !ok;
        if (ratio > worst) {
            worst = ratio;
            r->worst_row = row;
            r->max_err = err;
            r->bound = bound;
        }
    }
    r->ok = !rc && r->bad == 0;
    free(w);
    free(xf);
    return rc;
}

int nf_devcheck_decode(const nf_tensor_enc *t, const uint8_t *obj, uint64_t r0, uint64_t r1,
                       const uint16_t *got, nf_devcheck_result *r)
{
    memset(r, 0, sizeof *r);
    uint64_t K = t->cols, n = (r1 - r0) * K;
    uint16_t *ref = malloc((n ? n : 1) * sizeof *ref);
    if (!ref)
        return NF_CODEC_ENOMEM;
    int rc = nf_decode_rows_bf16(t, obj, t->enc.encoded_bytes, r0, r1, ref);
    for (uint64_t e = 0; !rc && e < n; e++)
        if (got[e] != ref[e] && !r->bad++)
            r->worst_row = r0 + e / (K ? K : 1);
    r->rows = r1 - r0;
    r->max_err = (double)r->bad;
    r->ok = !rc && r->bad == 0;
    free(ref);
    return rc;
}
