/* t_gemv_order.c — nf_gemv.h's accumulation order: the portable path
 * (nf_codec_set_isa(NF_ISA_SCALAR)), AVX2 and AVX-512 give bit-identical y
 * for every format (ours and gguf_*), on both activation paths, whatever
 * the thread count and the row range (so whatever rows a kernel takes
 * together: 1, 2 or 4 a pass, and where a thread's share begins).
 *
 * Shapes: odd K, K not a multiple of 128 (nor of the group), K below one
 * vector, N = 1, N not a multiple of 4; nvfp4 with divisors. Weights:
 * encoded from random f32 (q-formats with the scale search or absmax),
 * hostile bytes (every byte random, scales finite), rows with non-finite
 * scales (the two-pass path inside a call); gguf_*: plausible random
 * blocks and hostile ones (f16 fields of any pattern). x: Gaussian (every
 * value in the integer path's limbs), with planted values it keeps aside,
 * wide blocks everywhere (the integer path declines), subnormals and
 * tiny values (vdpbf16ps must not serve), and +-inf (A16).
 *
 * The variable NF_GEMV_ISA is read once per process, so the caps it sets
 * run in children: each prints a hash of its results for the same cases,
 * which must equal the hash of the portable path's results here. */
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng;
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
    if (nf_tensor_enc_init(&o->t, f, nf_format_default_layout(f), d, 2, div, NULL) != NF_ENC_OK)
        return -1;
    o->bytes = o->t.enc.encoded_bytes;
    o->obj = calloc(1, o->bytes ? o->bytes : 1);
    return o->obj ? 0 : -1;
}

static uint16_t fin16(uint16_t h, unsigned maxexp)
{
    if (((h >> 10) & 0x1f) > maxexp)
        h = (uint16_t)((h & 0x83ff) | (maxexp << 10));
    return h;
}

/* kind 0: encoded from Gaussian f32; 1: hostile bytes; 2: encoded, then a
 * few non-finite scales / NaN codes / huge row scales */
static int fill(tobj *o, int kind)
{
    const nf_tensor_enc *t = &o->t;
    uint64_t N = t->rows, K = t->cols;
    if (nf_format_is_gguf(t->format)) {
        nf_gguf_info gi = nf_gguf_info_of(t->format);
        if (kind == 0)
            nf_gguf_random_blocks(t->format, rnd(), o->obj, N * K / gi.qk);
        else
            for (uint64_t i = 0; i < o->bytes; i++)
                o->obj[i] = (uint8_t)rnd();
        return 0;
    }
    if (kind == 1) {
        for (uint64_t i = 0; i < o->bytes; i++)
            o->obj[i] = (uint8_t)rnd();
        const nf_plane *p = t->enc.plane;
        if (t->layout == NF_LAY_ROW_SPLIT_K128_V1) {
            const nf_plane *ps = &p[t->enc.nplanes - 1];
            for (uint64_t i = 0; i < ps->bytes / 2; i++) {
                uint16_t h = fin16((uint16_t)rnd(), 25);
                o->obj[ps->offset + 2 * i] = (uint8_t)h;
                o->obj[ps->offset + 2 * i + 1] = (uint8_t)(h >> 8);
            }
        } else if (t->layout == NF_LAY_ROW_SCALE_V1) {
            for (uint64_t n = 0; n < N; n++) { /* |r| in 2^-17 .. 2^12, some outside the fast range */
                uint16_t r = (uint16_t)(((rnd() & 1) << 15) | ((110 + rnd() % 30) << 7) | (rnd() & 0x7f));
                if (rnd() % 8 == 0)
                    r = (uint16_t)((r & 0x807f) | ((rnd() % 2 ? 10 : 240) << 7));
                o->obj[p[1].offset + 2 * n] = (uint8_t)r;
                o->obj[p[1].offset + 2 * n + 1] = (uint8_t)(r >> 8);
            }
        } else if (t->layout == NF_LAY_BLOCK_SCALE_K16_M128X4_V1) {
            for (uint64_t i = 0; i < t->divisors; i++) {
                float w = (float)ldexp(1.0 + urand(), (int)(rnd() % 21) - 10);
                uint32_t u = nf_f32_bits(w);
                memcpy(o->obj + p[2].offset + 4 * i, &u, 4);
            }
        } else if (t->format == NF_FMT_BF16) {
            for (uint64_t i = 0; i < p[0].bytes / 2; i++) {
                /* exponents 0 .. 160: subnormal and tiny weights too */
                uint16_t v = (uint16_t)(((rnd() & 1) << 15) | ((rnd() % 8 ? 100 + rnd() % 50 : rnd() % 160) << 7) |
                                        (rnd() & 0x7f));
                memcpy(o->obj + p[0].offset + 2 * i, &v, 2);
            }
        } else if (t->format == NF_FMT_FP32) {
            for (uint64_t i = 0; i < p[0].bytes / 4; i++) {
                uint32_t v = (uint32_t)((rnd() & 1) << 31) | (uint32_t)(100 + rnd() % 50) << 23 |
                             (uint32_t)(rnd() & 0x7fffff);
                memcpy(o->obj + p[0].offset + 4 * i, &v, 4);
            }
        }
        return 0;
    }
    float *src = malloc((N * K > 0 ? N * K : 1) * sizeof *src);
    if (!src)
        return -1;
    for (uint64_t n = 0; n < N; n++) {
        double m = ldexp(1.0, (int)(rnd() % 17) - 8);
        for (uint64_t k = 0; k < K; k++) {
            double v = gauss() * m;
            if (rnd() % 20 == 0)
                v = 0;
            if (t->format == NF_FMT_INT32)
                v = (double)(int64_t)(v * 1000.0);
            src[n * K + k] = (float)v;
        }
    }
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    eo.absmax_only = (rnd() & 1) != 0;
    int rc = nf_encode_f32(&o->t, src, o->obj, o->bytes, &eo, NULL);
    free(src);
    if (rc || kind != 2)
        return rc;
    const nf_plane *p = t->enc.plane;
    if (t->layout == NF_LAY_ROW_SPLIT_K128_V1) { /* row 0: +inf in group 0; the last row: NaN */
        const nf_plane *ps = &p[t->enc.nplanes - 1];
        o->obj[ps->offset + 1] = 0x7c;
        o->obj[ps->offset + 0] = 0;
        o->obj[ps->offset + (N - 1) * ps->row_bytes + 1] = 0x7e;
    } else if (t->layout == NF_LAY_ROW_SCALE_V1) { /* a NaN code, r = +inf, r = 2^120 */
        o->obj[p[0].offset + K / 2] = 0x7f;
        if (N > 1) {
            o->obj[p[1].offset + 2] = 0x80;
            o->obj[p[1].offset + 3] = 0x7f;
        }
        if (N > 2) {
            o->obj[p[1].offset + 4] = 0x80;
            o->obj[p[1].offset + 5] = 0x7b;
        }
    } else if (t->layout == NF_LAY_BLOCK_SCALE_K16_M128X4_V1) { /* a NaN block scale */
        o->obj[p[1].offset + nf_nvfp4_scale_index(N / 2, 0, K)] = 0x7f;
    } else if (t->format == NF_FMT_BF16) { /* an inf weight, a subnormal one */
        uint16_t inf = 0x7f80, sub = 0x0005;
        memcpy(o->obj + p[0].offset + 2 * (K / 3), &inf, 2);
        if (N > 1)
            memcpy(o->obj + p[0].offset + 2 * (K + K / 2), &sub, 2);
    }
    return 0;
}

/* kind 0: Gaussian; 1: planted values (bits below the unit, a block at
 * 2^-80, a subnormal); 2: wide blocks everywhere; 3: tiny values (2^-115:
 * vdpbf16ps would flush products); 4: +-inf (A16 only) */
static void fill_x(uint16_t *x, uint64_t K, int kind)
{
    for (uint64_t k = 0; k < K; k++) {
        double v = gauss();
        if (kind == 2 && k % 16 == 0)
            v = 1e6;
        if (kind == 3 && k % 7 == 3)
            v = ldexp(v, -115);
        x[k] = nf_f32_to_bf16((float)v);
    }
    if (kind == 1 && K >= 48) {
        x[1] = nf_f32_to_bf16(3.0f);
        x[2] = nf_f32_to_bf16(3.0f * 0x1p-18f + 0x1p-27f);
        for (uint64_t k = 16; k < 32; k++)
            x[k] = k == 17 ? nf_f32_to_bf16(0x1.8p-80f) : 0;
        x[40] = 0x0003;
    }
    if (kind == 4)
        x[K / 2] = (rnd() & 1) ? 0x7f80 : 0xff80;
}

static const nf_isa isas[] = {NF_ISA_SCALAR, NF_ISA_AVX2, NF_ISA_AVX512};

/* FNV-1a over the bits */
static uint64_t hash_add(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static bool child_mode;
static uint64_t g_hash = 0xcbf29ce484222325ull;

/* One object, one x, one act: the portable result over all rows, then
 * every ISA with 1, 2 and 3 threads over [0,N) and over ranges starting at
 * 1, 2 and 3, compared bit for bit. Children only hash their own result. */
static long one_case(const tobj *o, const uint16_t *x, nf_act act, const char *what)
{
    uint64_t N = o->t.rows;
    float *ref = malloc(N * sizeof *ref), *y = malloc(N * sizeof *y);
    long bad = 0;
    if (!ref || !y) {
        free(ref), free(y);
        return -1;
    }
    if (child_mode) {
        int rc = nf_gemv_rows_act(&o->t, o->obj, o->bytes, 0, N, x, ref, 2, act);
        g_hash = hash_add(g_hash, &rc, sizeof rc);
        g_hash = hash_add(g_hash, ref, N * sizeof *ref);
        free(ref), free(y);
        return 0;
    }
    nf_codec_set_isa(NF_ISA_SCALAR);
    int rc0 = nf_gemv_rows_act(&o->t, o->obj, o->bytes, 0, N, x, ref, 1, act);
    g_hash = hash_add(g_hash, &rc0, sizeof rc0);
    g_hash = hash_add(g_hash, ref, N * sizeof *ref);
    for (unsigned ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
        if (!nf_codec_isa_supported(isas[ii]))
            continue;
        nf_codec_set_isa(isas[ii]);
        for (unsigned th = 1; th <= 3; th++)
            for (uint64_t r0 = 0; r0 < 4 && r0 < N; r0 += th == 1 ? 1 : 3) {
                memset(y, 0x55, N * sizeof *y);
                int rc = nf_gemv_rows_act(&o->t, o->obj, o->bytes, r0, N, x, y, th, act);
                if (rc != rc0) {
                    if (bad++ < 3)
                        printf("# %s: %s, %u threads, from row %llu: rc %d, portable %d\n", what,
                               nf_isa_name(isas[ii]), th, (unsigned long long)r0, rc, rc0);
                    continue;
                }
                for (uint64_t n = r0; !rc && n < N; n++)
                    if (memcmp(&y[n - r0], &ref[n], sizeof *y) && bad++ < 3)
                        printf("# %s: %s, %u threads, from row %llu: row %llu %a (%08x), portable %a (%08x)\n",
                               what, nf_isa_name(isas[ii]), th, (unsigned long long)r0,
                               (unsigned long long)n, y[n - r0], nf_f32_bits(y[n - r0]), ref[n],
                               nf_f32_bits(ref[n]));
            }
    }
    nf_codec_set_isa(NF_ISA_AUTO);
    free(ref), free(y);
    return bad;
}

static const nf_format ours[] = {
    NF_FMT_BF16, NF_FMT_FP32, NF_FMT_INT32, NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16,
    NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16,
    NF_FMT_NVFP4, NF_FMT_FP8_E4M3FN_ROW_BF16,
};
static const nf_format ggufs[] = {
    NF_FMT_GGUF_F16,  NF_FMT_GGUF_Q8_0,   NF_FMT_GGUF_Q4_0,  NF_FMT_GGUF_Q4_1, NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q5_1, NF_FMT_GGUF_IQ4_NL, NF_FMT_GGUF_MXFP4, NF_FMT_GGUF_Q2_K, NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K, NF_FMT_GGUF_Q5_K,   NF_FMT_GGUF_Q6_K,  NF_FMT_GGUF_IQ4_XS,
};

struct shape {
    uint64_t n, k, div;
};

static void sweep(void)
{
    static const struct shape gen[] = {
        {1, 1, 1}, {5, 7, 1}, {9, 63, 1}, {13, 129, 1}, {6, 300, 1}, {11, 1000, 1}, {3, 4225, 1},
        {10, 8333, 1}, /* K past 8192: x no longer fits L1 beside the rows */
    };
    static const struct shape nv[] = {{128, 64, 1}, {256, 192, 2}, {128, 320, 1}, {128, 1088, 1}};
    static const struct shape gg[] = {{1, 256, 1}, {7, 512, 1}, {5, 1280, 1}};
    static const struct shape gg32[] = {{1, 32, 1}, {6, 96, 1}, {9, 544, 1}};
    static const struct shape f16s[] = {{1, 1, 1}, {5, 77, 1}, {3, 1000, 1}};
    for (int part = 0; part < 2; part++) {
        const nf_format *fs = part ? ggufs : ours;
        unsigned nf = part ? sizeof ggufs / sizeof *ggufs : sizeof ours / sizeof *ours;
        for (unsigned fi = 0; fi < nf; fi++) {
            nf_format f = fs[fi];
            const struct shape *sh;
            unsigned ns;
            if (f == NF_FMT_NVFP4) {
                sh = nv, ns = sizeof nv / sizeof *nv;
            } else if (f == NF_FMT_GGUF_F16) {
                sh = f16s, ns = sizeof f16s / sizeof *f16s;
            } else if (part && nf_gguf_info_of(f).qk == 32) {
                sh = gg32, ns = sizeof gg32 / sizeof *gg32;
            } else if (part) {
                sh = gg, ns = sizeof gg / sizeof *gg;
            } else {
                sh = gen, ns = sizeof gen / sizeof *gen;
            }
            long bad = 0;
            unsigned cases = 0;
            for (unsigned si = 0; si < ns; si++)
                for (int kind = 0; kind < 3; kind++) {
                    if (part && kind == 2)
                        continue;
                    tobj o;
                    rng = 0x9e3779b97f4a7c15ull ^ (f * 1000003ull + si * 131 + (uint64_t)kind);
                    if (mk(&o, f, sh[si].n, sh[si].k, sh[si].div) || fill(&o, kind)) {
                        bad = -1000;
                        continue;
                    }
                    uint64_t K = sh[si].k;
                    uint16_t *x = malloc(K * sizeof *x);
                    for (int xk = 0; x && xk < 5; xk++) {
                        fill_x(x, K, xk);
                        for (int a = 0; a < 2; a++) {
                            char what[128];
                            snprintf(what, sizeof what, "%s %llux%llu w%d x%d %s", nf_format_name(f),
                                     (unsigned long long)sh[si].n, (unsigned long long)K, kind, xk,
                                     a ? "A8" : "A16");
                            bad += one_case(&o, x, a ? NF_ACT_A8 : NF_ACT_A16, what);
                            cases++;
                        }
                    }
                    free(x);
                    free(o.obj);
                }
            if (!child_mode)
                CHECK(bad == 0, "%s: portable, AVX2 and AVX-512 bit-identical at 1-3 threads and "
                      "any starting row (%u cases)", nf_format_name(f), cases);
        }
    }
}

/* The hash a child with NF_GEMV_ISA=val computes for the same cases. */
static void child(const char *argv0, const char *val, uint64_t want)
{
    int fd[2];
    if (pipe(fd)) {
        CHECK(0, "pipe");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("NF_GEMV_ISA", val, 1);
        if (dup2(fd[1], 1) < 0)
            _exit(3);
        execl(argv0, argv0, "--child", (char *)NULL);
        _exit(4);
    }
    close(fd[1]);
    char buf[64] = {0};
    ssize_t n = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int st = 0;
    bool ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    unsigned long long got = n > 0 ? strtoull(buf, NULL, 16) : 0;
    CHECK(ok && got == want, "NF_GEMV_ISA=%s: the same bits as the portable path (hash %016llx, "
          "want %016llx)", val, got, (unsigned long long)want);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--child")) {
        child_mode = true;
        sweep();
        printf("%016llx\n", (unsigned long long)g_hash);
        return 0;
    }
    for (unsigned i = 1; i < sizeof isas / sizeof *isas; i++)
        if (!nf_codec_isa_supported(isas[i]))
            SKIP("CPU lacks it", "the %s path", nf_isa_name(isas[i]));
    sweep();
    child(argv[0], "scalar", g_hash);
    child(argv[0], "avx2", g_hash);
    child(argv[0], "avx512", g_hash);
    return nf_test_done();
}
