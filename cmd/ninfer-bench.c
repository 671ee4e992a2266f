/* ninfer-bench — decode, encode and GEMV throughput per format/layout/shape. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_codec.h"
#include "nf_device.h"
#include "nf_gemv.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-bench --format F [--layout L] --shape NxK [OPTIONS]\n"
    "       ninfer-bench ARTIFACT [--param GLOB] [OPTIONS]\n"
    "Time a kernel over encoded weights (generated, or an artifact's own objects)\n"
    "and compare its throughput with the peak measured in the same run: on the CPU\n"
    "a read-only pass over a buffer larger than the last-level cache on all cores;\n"
    "on CUDA a device-to-device copy larger than L2, counted as read + write.\n"
    "\n"
    "  --op gemv|decode|encode  the kernel (default gemv): y = W x with x in bf16;\n"
    "                        decode into a small reused buffer; encode from f32\n"
    "  --device cpu|cuda     where to run (default cpu)\n"
    "  --format F, --layout L, --shape NxK, --divisors N   generated weights\n"
    "  --param GLOB          artifact mode: parameters to bench (default '*')\n"
    "  --iters N             timed iterations (default 20); --warmup N (default 3)\n"
    "  --threads N           CPU threads (default: all CPUs)\n"
    "  --json                one JSON object per case (with raw samples)\n"
    "  --csv                 CSV with a header line\n"
    "  -h, --help, --version\n"
    "\n"
    "GB/s counts encoded bytes read (encode: encoded bytes written). Weights are\n"
    "rotated through copies larger than the last-level cache so that nothing is\n"
    "timed from cache.\n"
    "Exit status: 0 ok, 1 bad input, 2 usage, 3 I/O, 4 unsupported (a device or\n"
    "format this build cannot serve).\n";

static struct {
    const char *op, *device, *param;
    unsigned iters, warmup, threads;
    int out; /* 0 text, 1 json, 2 csv */
} opt = {"gemv", "cpu", "*", 20, 3, 0, 0};

static double peak_gbps;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *s, unsigned n, double q)
{
    double idx = q * (n - 1);
    unsigned lo = (unsigned)idx;
    return lo + 1 < n ? s[lo] + (s[lo + 1] - s[lo]) * (idx - lo) : s[lo];
}

/* CPU peak: read-only passes over 512 MiB on all threads, best of 5. */
static double cpu_peak(void)
{
    size_t bytes = 512u << 20;
    unsigned char *b = malloc(bytes);
    if (!b)
        return 0;
    memset(b, 1, bytes);
    double best = 1e30;
    volatile uint64_t sink = 0;
    for (int i = 0; i < 6; i++) {
        double t0 = nf_now();
        sink ^= nf_read_pass(b, bytes, opt.threads);
        double t = nf_now() - t0;
        if (i && t < best)
            best = t;
    }
    (void)sink;
    free(b);
    return (double)bytes / best / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float gauss(void)
{
    /* sum of uniforms: close enough to normal for weights, deterministic */
    float s = 0;
    for (int i = 0; i < 4; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        s += (float)(rng >> 40) / (float)(1u << 24) - 0.5f;
    }
    return s * 0.035f;
}

static void report(const char *name, const nf_tensor_enc *t, double *s, unsigned n, double bytes)
{
    qsort(s, n, sizeof *s, cmp_d);
    double med = pct(s, n, 0.5), p10 = pct(s, n, 0.1), p90 = pct(s, n, 0.9);
    double gbps = bytes / med / 1e9, pp = peak_gbps > 0 ? 100 * gbps / peak_gbps : 0;
    const char *fmt = nf_format_name(t->format), *lay = nf_layout_name(t->layout);
    if (opt.out == 1) {
        nf_jval *o = nf_jnew_object(), *a = nf_jnew_array();
        nf_jobj_set(o, "case", nf_jnew_string(name));
        nf_jobj_set(o, "op", nf_jnew_string(opt.op));
        nf_jobj_set(o, "device", nf_jnew_string(opt.device));
        nf_jobj_set(o, "format", nf_jnew_string(fmt));
        nf_jobj_set(o, "layout", nf_jnew_string(lay));
        nf_jobj_set(o, "n", nf_jnew_u64(t->rows));
        nf_jobj_set(o, "k", nf_jnew_u64(t->cols));
        nf_jobj_set(o, "encoded_bytes", nf_jnew_u64(t->enc.encoded_bytes));
        nf_jobj_set(o, "iters", nf_jnew_u64(n));
        nf_jobj_set(o, "median_s", nf_jnew_double(med));
        nf_jobj_set(o, "p10_s", nf_jnew_double(p10));
        nf_jobj_set(o, "p90_s", nf_jnew_double(p90));
        nf_jobj_set(o, "gbps", nf_jnew_double(gbps));
        nf_jobj_set(o, "peak_gbps", nf_jnew_double(peak_gbps));
        nf_jobj_set(o, "pct_of_peak", nf_jnew_double(pp));
        for (unsigned i = 0; i < n; i++)
            nf_jarr_push(a, nf_jnew_double(s[i]));
        nf_jobj_set(o, "samples_s", a);
        nf_print_json_line(o);
        nf_jval_free(o);
    } else if (opt.out == 2) {
        printf("%s,%s,%s,%s,%s,%llu,%llu,%llu,%.9f,%.9f,%.9f,%.3f,%.1f\n", name, opt.op,
               opt.device, fmt, lay, (unsigned long long)t->rows, (unsigned long long)t->cols,
               (unsigned long long)t->enc.encoded_bytes, med, p10, p90, gbps, pp);
    } else {
        printf("%-8s %-6s %-20s %7llu %7llu %12llu %9.3f %9.3f %9.3f %8.2f %6.1f%%\n", opt.op,
               opt.device, fmt, (unsigned long long)t->rows, (unsigned long long)t->cols,
               (unsigned long long)t->enc.encoded_bytes, med * 1e3, p10 * 1e3, p90 * 1e3, gbps,
               pp);
    }
    fflush(stdout);
}

/* Time op over the encoded object obj (copies rotated past the cache). */
static int bench_one(const char *name, const nf_tensor_enc *t, const uint8_t *obj,
                     const float *src)
{
    uint64_t eb = t->enc.encoded_bytes;
    unsigned copies = (unsigned)((256ull << 20) / (eb ? eb : 1) + 1);
    if (copies > 4096)
        copies = 4096;
    if (!strcmp(opt.op, "encode"))
        copies = 1;
    uint8_t **w = calloc(copies, sizeof *w);
    for (unsigned c = 0; w && c < copies; c++) {
        w[c] = malloc(eb);
        if (!w[c]) {
            copies = c;
            break;
        }
        memcpy(w[c], obj, eb);
    }
    if (!w || !copies) {
        fprintf(stderr, "%s: out of memory for %llu bytes\n", nf_prog, (unsigned long long)eb);
        free(w);
        return NF_EXIT_IO;
    }
    uint16_t *x = malloc(t->cols * sizeof *x);
    float *y = malloc(t->rows * sizeof *y);
    double *s = calloc(opt.iters, sizeof *s);
    int rc = x && y && s ? 0 : NF_CODEC_ENOMEM;
    for (uint64_t k = 0; !rc && k < t->cols; k++)
        x[k] = (uint16_t)(0x3f80 ^ (k & 0x807f)); /* +-1.x, deterministic */
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    for (unsigned i = 0; !rc && i < opt.warmup + opt.iters; i++) {
        uint8_t *wc = w[i % copies];
        double t0 = nf_now();
        if (!strcmp(opt.op, "gemv"))
            rc = nf_gemv(t, wc, eb, x, y, opt.threads);
        else if (!strcmp(opt.op, "decode"))
            rc = nf_decode_pass(t, wc, eb, opt.threads);
        else
            rc = nf_encode_f32(t, src, wc, eb, &eo, NULL);
        double dt = nf_now() - t0;
        if (i >= opt.warmup)
            s[i - opt.warmup] = dt;
    }
    if (!rc)
        report(name, t, s, opt.iters, (double)eb);
    else
        fprintf(stderr, "%s: %s: %s\n", nf_prog, name, nf_codec_strerror(rc));
    for (unsigned c = 0; c < copies; c++)
        free(w[c]);
    free(w);
    free(x);
    free(y);
    free(s);
    return rc ? NF_EXIT_RULE : 0;
}

/* On the device: the backend times, we report (same fields as the CPU). */
static int bench_device(const char *name, const nf_tensor_enc *t, const uint8_t *obj)
{
    if (!strcmp(opt.op, "encode")) {
        fprintf(stderr, "%s: --op encode runs on the CPU only\n", nf_prog);
        return NF_EXIT_USAGE;
    }
    double *s = calloc(opt.iters, sizeof *s);
    if (!s)
        return NF_EXIT_IO;
    int ex = nf_device_bench_samples(opt.op, t, obj, opt.warmup, opt.iters, name, s);
    if (!ex)
        report(name, t, s, opt.iters, (double)t->enc.encoded_bytes);
    free(s);
    return ex;
}

static int bench_generated(nf_format f, nf_layout l, uint64_t N, uint64_t K, uint64_t div)
{
    uint64_t dims[2] = {N, K};
    nf_tensor_enc t;
    const char *why = NULL;
    if (nf_tensor_enc_init(&t, f, l, dims, 2, div, &why) != NF_ENC_OK) {
        fprintf(stderr, "%s: %s/%s %llux%llu: %s\n", nf_prog, nf_format_name(f), nf_layout_name(l),
                (unsigned long long)N, (unsigned long long)K, why ? why : "not allowed");
        return NF_EXIT_RULE;
    }
    uint64_t el = N * K;
    float *src = malloc(el * sizeof *src);
    uint8_t *obj = calloc(1, t.enc.encoded_bytes);
    if (!src || !obj) {
        fprintf(stderr, "%s: out of memory\n", nf_prog);
        free(src);
        free(obj);
        return NF_EXIT_IO;
    }
    for (uint64_t i = 0; i < el; i++)
        src[i] = f == NF_FMT_INT32 ? roundf(gauss() * 1000.0f) : gauss(); /* int32 holds integers */
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    eo.absmax_only = true; /* weights for timing: quality does not matter */
    int rc = nf_encode_f32(&t, src, obj, t.enc.encoded_bytes, &eo, NULL);
    if (rc) {
        fprintf(stderr, "%s: encode: %s\n", nf_prog, nf_codec_strerror(rc));
        free(src);
        free(obj);
        return NF_EXIT_RULE;
    }
    char name[96];
    snprintf(name, sizeof name, "%llux%llu", (unsigned long long)N, (unsigned long long)K);
    int ex;
    if (!strcmp(opt.device, "cuda"))
        ex = bench_device(name, &t, obj);
    else
        ex = bench_one(name, &t, obj, src);
    free(src);
    free(obj);
    return ex;
}

static int bench_artifact(const char *path)
{
    nf_diags d = NF_DIAGS_INIT;
    d.file = path;
    nf_open_opts oo = {0};
    nf_artifact *a = nf_artifact_open(path, &oo, &d);
    int ex = 0;
    if (a && !nf_diags_exit(&d)) {
        const nf_catalog *c = nf_artifact_catalog(a);
        bool *done = calloc(c->n_objects ? c->n_objects : 1, sizeof *done);
        for (size_t b = 0; done && b < c->n_bindings; b++) {
            const nf_named_binding *nb = &c->bindings[b];
            if (fnmatch(opt.param, nb->name, 0) != 0)
                continue;
            size_t n = nb->b.parts ? nb->b.n_parts : 1;
            for (size_t k = 0; k < n; k++) {
                size_t oi = nb->b.parts ? nb->b.parts[k].obj : nb->b.obj;
                if (oi == SIZE_MAX || done[oi])
                    continue;
                done[oi] = true;
                const nf_object *o = &c->objects[oi];
                nf_tensor_enc t;
                if (o->rank != 2 ||
                    nf_tensor_enc_init(&t, o->format, o->layout, o->dims, 2, o->divisors, NULL))
                    continue;
                uint8_t *obj = malloc(o->bytes);
                float *src = !strcmp(opt.op, "encode") ? malloc(t.rows * t.cols * sizeof *src) : NULL;
                if (obj && nf_artifact_read(a, o->offset, obj, o->bytes, &d) == 0 &&
                    (!src || nf_decode_rows_f32(&t, obj, o->bytes, 0, t.rows, src) == 0)) {
                    int e = !strcmp(opt.device, "cuda")
                                ? bench_device(o->id, &t, obj)
                                : bench_one(o->id, &t, obj, src);
                    ex = nf_exit_combine(ex, e);
                }
                free(obj);
                free(src);
            }
        }
        free(done);
    }
    nf_diags_print(&d, nf_prog, stderr);
    ex = nf_exit_combine(ex, nf_diags_exit(&d));
    nf_diags_free(&d);
    nf_artifact_close(a);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_FORMAT = 256, O_LAYOUT, O_SHAPE, O_OP, O_DEVICE, O_ITERS, O_WARMUP, O_THREADS,
           O_JSON, O_CSV, O_PARAM, O_DIV, O_VERSION };
    static const struct option lo[] = {
        {"format", required_argument, 0, O_FORMAT}, {"layout", required_argument, 0, O_LAYOUT},
        {"shape", required_argument, 0, O_SHAPE},   {"op", required_argument, 0, O_OP},
        {"device", required_argument, 0, O_DEVICE}, {"iters", required_argument, 0, O_ITERS},
        {"warmup", required_argument, 0, O_WARMUP}, {"threads", required_argument, 0, O_THREADS},
        {"json", no_argument, 0, O_JSON},           {"csv", no_argument, 0, O_CSV},
        {"param", required_argument, 0, O_PARAM},   {"divisors", required_argument, 0, O_DIV},
        {"help", no_argument, 0, 'h'},              {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-bench";
    const char *fmt = NULL, *lay = NULL, *shape = NULL;
    uint64_t N = 0, K = 0, div = 1, v;
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_FORMAT: fmt = optarg; break;
        case O_LAYOUT: lay = optarg; break;
        case O_SHAPE: shape = optarg; break;
        case O_OP:
            if (strcmp(optarg, "gemv") && strcmp(optarg, "decode") && strcmp(optarg, "encode"))
                return nf_usage_error("--op is gemv, decode or encode");
            opt.op = optarg;
            break;
        case O_DEVICE:
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                return nf_usage_error("--device is cpu or cuda");
            opt.device = optarg;
            break;
        case O_ITERS:
            if (!nf_parse_u64(optarg, &v) || v == 0 || v > 100000)
                return nf_usage_error("bad --iters '%s'", optarg);
            opt.iters = (unsigned)v;
            break;
        case O_WARMUP:
            if (!nf_parse_u64(optarg, &v) || v > 1000)
                return nf_usage_error("bad --warmup '%s'", optarg);
            opt.warmup = (unsigned)v;
            break;
        case O_THREADS:
            if (!nf_parse_u64(optarg, &v) || v == 0 || v > 64)
                return nf_usage_error("bad --threads '%s' (1..64)", optarg);
            opt.threads = (unsigned)v;
            break;
        case O_JSON: opt.out = 1; break;
        case O_CSV: opt.out = 2; break;
        case O_PARAM: opt.param = optarg; break;
        case O_DIV:
            if (!nf_parse_u64(optarg, &div) || div == 0)
                return nf_usage_error("bad --divisors '%s'", optarg);
            break;
        case 'h': fputs(usage, stdout); return 0;
        case O_VERSION: nf_print_version(); return 0;
        default: return nf_usage_error("unknown option");
        }
    }
    bool artifact = optind < argc;
    if (artifact == (fmt != NULL) || (artifact && optind + 1 != argc))
        return nf_usage_error("give either --format/--shape or one ARTIFACT");
    nf_format f = NF_FMT_UNKNOWN;
    nf_layout l = NF_LAY_UNKNOWN;
    if (!artifact) {
        f = nf_format_from_name(fmt, strlen(fmt));
        if (f == NF_FMT_UNKNOWN)
            return nf_usage_error("unknown format '%s'", fmt);
        l = lay ? nf_layout_from_name(lay, strlen(lay)) : nf_format_default_layout(f);
        if (l == NF_LAY_UNKNOWN)
            return nf_usage_error("unknown layout '%s'", lay);
        char *xp = shape ? strchr(shape, 'x') : NULL;
        if (!xp)
            return nf_usage_error("--shape is NxK");
        *xp = 0;
        if (!nf_parse_u64(shape, &N) || !nf_parse_u64(xp + 1, &K) || !N || !K ||
            N > (1u << 24) || K > (1u << 24) || N * K > (1ull << 32))
            return nf_usage_error("bad --shape (N, K >= 1, N*K <= 2^32)");
    }
    if (!artifact) {
        uint64_t dims[2] = {N, K};
        nf_encoding enc;
        const char *why = NULL;
        if (nf_encoding_compute(f, l, dims, 2, div, &enc, &why) != NF_ENC_OK) {
            fprintf(stderr, "%s: encoding: %s/%s cannot hold %llux%llu: %s\n", nf_prog,
                    nf_format_name(f), nf_layout_name(l), (unsigned long long)N,
                    (unsigned long long)K, why ? why : "not allowed");
            return NF_EXIT_RULE;
        }
    }
    if (!strcmp(opt.device, "cuda")) {
        int e = nf_device_init(stderr);
        if (e)
            return e;
        peak_gbps = nf_device_peak_gbps();
    } else {
        peak_gbps = cpu_peak();
    }
    if (opt.out == 2)
        printf("case,op,device,format,layout,n,k,encoded_bytes,median_s,p10_s,p90_s,gbps,pct_of_peak\n");
    else if (opt.out == 0)
        printf("# peak %.2f GB/s (%s, measured now)\n%-8s %-6s %-20s %7s %7s %12s %9s %9s %9s %8s %7s\n",
               peak_gbps, strcmp(opt.device, "cuda") ? "CPU read-only pass, all threads"
                                                     : "device-to-device copy, read + write",
               "op", "device", "format", "N", "K", "bytes", "med_ms", "p10_ms", "p90_ms", "GB/s",
               "%peak");
    int ex = artifact ? bench_artifact(argv[optind]) : bench_generated(f, l, N, K, div);
    if (fflush(stdout) != 0)
        ex = nf_exit_combine(ex, NF_EXIT_IO);
    return ex;
}
