/* nf-f32cmp — compare little-endian f32 files for the import tests
 * (DESIGN 12): exact equality with a tolerance, or a pooled SNR.
 *
 *   nf-f32cmp [--alog] GOT WANT
 *       exit 0 when both hold the same number of values and each pair is
 *       equal (bit for bit, NaN never equal), or with --alog within
 *       2^-21 * max(1, |want|) (DESIGN 10: A_log from ssm_a); prints the
 *       largest |got - want| and the count of values that differ.
 *   nf-f32cmp --snr REF DEQ [REF DEQ ...]
 *       prints 10*log10(sum ref^2 / sum (ref - deq)^2) in dB, pooled over
 *       every pair (the stories260K-gguf README's figure), with 2 decimals;
 *       "inf" when every value is equal.
 *
 * Sums are in double. Standalone: libc only.
 * Exit status: 0 ok, 1 values differ (or files of different lengths), 2
 * usage, 3 I/O error.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "nf-f32cmp"

static float *load(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, PROG ": %s: cannot open\n", path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    float *v = malloc(cap * sizeof *v);
    size_t got;
    while (v && (got = fread(v + len, sizeof *v, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            float *nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                free(v);
                v = NULL;
            }
            v = nv;
        }
    }
    if (!v || ferror(f)) {
        fprintf(stderr, PROG ": %s: read error\n", path);
        fclose(f);
        free(v);
        return NULL;
    }
    fclose(f);
    *n = len;
    return v;
}

int main(int argc, char **argv)
{
    bool alog = argc > 1 && strcmp(argv[1], "--alog") == 0;
    bool snr = argc > 1 && strcmp(argv[1], "--snr") == 0;
    int first = alog || snr ? 2 : 1;
    int nfiles = argc - first;
    if ((snr && (nfiles < 2 || nfiles % 2)) || (!snr && nfiles != 2)) {
        fprintf(stderr, "usage: " PROG " [--alog] GOT WANT\n       " PROG " --snr REF DEQ [REF DEQ ...]\n");
        return 2;
    }
    double sig = 0, err = 0, maxd = 0;
    size_t bad = 0;
    for (int i = first; i + 1 < argc; i += 2) {
        size_t na, nb;
        float *a = load(argv[i], &na), *b = load(argv[i + 1], &nb);
        if (!a || !b) {
            free(a);
            free(b);
            return 3;
        }
        if (na != nb) {
            fprintf(stderr, PROG ": %s has %zu values, %s %zu\n", argv[i], na, argv[i + 1], nb);
            return 1;
        }
        for (size_t k = 0; k < na; k++) {
            /* snr: a = reference, b = decoded; else a = got, b = want */
            double x = a[k], y = b[k], dd = fabs(x - y);
            sig += x * x;
            err += (x - y) * (x - y);
            if (dd > maxd || dd != dd)
                maxd = dd;
            bool ok = alog ? dd <= ldexp(1.0, -21) * fmax(1.0, fabs(y))
                           : memcmp(&a[k], &b[k], 4) == 0 && x == x;
            bad += !ok;
        }
        free(a);
        free(b);
    }
    if (snr) {
        if (err == 0)
            printf("inf\n");
        else
            printf("%.2f\n", 10 * log10(sig / err));
        return 0;
    }
    printf("max_abs_diff %.9g differing %zu\n", maxd, bad);
    return bad ? 1 : 0;
}
