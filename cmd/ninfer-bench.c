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
#include "nf_codec_gguf.h"
#include "nf_device.h"
#include "nf_gemv.h"
#include "nf_util.h"

static const char usage_head[] =
    "usage: ninfer-bench --format F [--layout L] --shape NxK [OPTIONS]\n"
    "       ninfer-bench ARTIFACT [--param GLOB] [OPTIONS]\n"
    "Time a kernel over encoded weights (generated, or an artifact's own objects)\n"
    "and compare its throughput with the peak measured in the same run: on the CPU\n"
    "read-only passes over a buffer of 4x the last-level cache on the same threads;\n"
    "on CUDA a device-to-device copy larger than L2, counted as read + write.\n"
    "\n"
    "  --op gemv|decode|encode  the kernel (default gemv): y = W x with x in bf16;\n"
    "                        decode into a small reused buffer; encode from f32\n"
    "  --activation a16|a8   gemv: x as bf16 (default), or quantized per block of\n"
    "                        16 to int8 (the A8 path of AllowA8/AllowA4 uses)\n"
    "  --device cpu|cuda     where to run (default cpu)\n"
    "  --format F|all, --layout L, --shape NxK, --divisors N   generated weights;\n"
    "                        'all': every format in its default layout\n"
    "  --param GLOB          artifact mode: parameters to bench (default '*')\n"
    "  --iters N             timed iterations (default 20); --warmup N (default 3)\n"
    "  --threads N           CPU threads (default: all CPUs)\n"
    "  --llc-bytes N         the last-level cache to defeat (default: from sysfs,\n"
    "                        or $NF_BENCH_LLC_BYTES); K M G: 1024s, KB MB GB: 1000s\n"
    "  --json                one JSON object per case (with raw samples)\n"
    "  --csv                 CSV with a header line\n"
    "  --max-json-bytes N    artifact mode: refuse catalogs larger than N (default\n"
    "                        256M)\n"
    "  -h, --help, --version\n"
    "\n"
    "GB/s counts encoded bytes read (encode: encoded bytes written); x_peak is\n"
    "that over the peak. The weights are rotated through copies that together\n"
    "exceed 4x the last-level cache, so nothing is timed from cache; the peak is\n"
    "the best of all read-only passes so far over a buffer of that size, with\n"
    "the widest loads the CPU has.\n"
    "Exit status: 0 ok, 1 bad input, 2 usage, 3 I/O, 4 unsupported (a device or\n"
    "format this build cannot serve).\n";

static void print_usage(void)
{
    fputs(usage_head, stdout);
    fputs("\n", stdout);
    fputs(nf_remote_usage, stdout); /* artifact mode's operand may be a URL */
    fputs("\n", stdout);
    /* the list wrapped at 80 columns, continued on indented lines (last:
     * scripts read it to the end) */
    fputs("Formats:", stdout);
    size_t col = 8;
    for (int f = 0; f < NF_FMT_COUNT_; f++) {
        const char *name = nf_format_name((nf_format)f);
        if (col + 1 + strlen(name) > 80) {
            fputs("\n ", stdout);
            col = 1;
        }
        printf(" %s", name);
        col += 1 + strlen(name);
    }
    fputs("\n", stdout);
}

static struct {
    const char *op, *device, *param;
    unsigned iters, warmup, threads;
    int out;     /* 0 text, 1 json, 2 csv */
    nf_act act;
    uint64_t llc;
} opt = {"gemv", "cpu", "*", 20, 3, 0, 0, NF_ACT_A16, 0};

/* The rotation arena (CPU): at least 4x the last-level cache. The peak
 * passes read it too. */
static struct {
    uint8_t *p;
    size_t bytes;
} arena;

static double peak_gbps; /* best read-only pass so far (CPU), or the device's */
static uint64_t max_json; /* --max-json-bytes; 0: the reader's default */

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

/* n read-only passes over the arena, cycling through the access patterns of
 * nf_read_pass_variant; the best rate goes into peak_gbps. */
static void peak_passes(unsigned n)
{
    static unsigned variant;
    static volatile uint64_t sink;
    size_t bytes = arena.bytes & ~(size_t)255;
    for (unsigned i = 0; i < n; i++) {
        double t0 = nf_now();
        sink ^= nf_read_pass_variant(arena.p, bytes, opt.threads, variant++);
        double t = nf_now() - t0;
        if (t > 0 && (double)bytes / t / 1e9 > peak_gbps)
            peak_gbps = (double)bytes / t / 1e9;
    }
    (void)sink;
}

/* The arena: 4x the last-level cache plus 1 MiB, 64-byte aligned, touched. */
static int arena_init(void)
{
    uint64_t b = 0;
    if (!nf_mul_u64(opt.llc, 4, &b) || !nf_add_u64(b, 1u << 20, &b) || b > SIZE_MAX / 2)
        return nf_usage_error("--llc-bytes %llu is too large", (unsigned long long)opt.llc);
    b = (b + 4095) & ~(uint64_t)4095;
    arena.p = aligned_alloc(4096, (size_t)b);
    if (!arena.p) {
        fprintf(stderr, "%s: out of memory for the %llu-byte rotation buffer (4x the %llu-byte "
                        "last-level cache; see --llc-bytes)\n",
                nf_prog, (unsigned long long)b, (unsigned long long)opt.llc);
        return NF_EXIT_IO;
    }
    arena.bytes = (size_t)b;
    memset(arena.p, 1, arena.bytes);
    peak_passes(1); /* warm-up */
    peak_gbps = 0;
    peak_passes(2 * NF_READ_VARIANTS);
    return 0;
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

/* A CSV field: controls (CR and LF too), DEL, C1, invalid UTF-8 and '\\'
 * as \xHH, as diagnostics write them (no raw byte of a hostile ID reaches
 * a terminal), then quoted per RFC 4180 when it holds ',' or '"' ('"'
 * doubled). */
static void csv_field(const char *v)
{
    char *e = nf_text_escape_also(v, "\\");
    const char *t = e ? e : "(out of memory)";
    if (!strpbrk(t, ",\"")) {
        fputs(t, stdout);
    } else {
        putchar('"');
        for (; *t; t++) {
            if (*t == '"')
                putchar('"');
            putchar(*t);
        }
        putchar('"');
    }
    free(e);
}

static void report(const char *name, const nf_tensor_enc *t, double *s, unsigned n, double bytes)
{
    qsort(s, n, sizeof *s, cmp_d);
    double med = pct(s, n, 0.5), p10 = pct(s, n, 0.1), p90 = pct(s, n, 0.9);
    double gbps = bytes / med / 1e9, pp = peak_gbps > 0 ? 100 * gbps / peak_gbps : 0;
    const char *fmt = nf_format_name(t->format), *lay = nf_layout_name(t->layout);
    const char *act = strcmp(opt.op, "gemv") ? "-" : opt.act == NF_ACT_A8 ? "a8" : "a16";
    unsigned th = opt.threads ? opt.threads : nf_cpu_count();
    if (opt.out == 1) {
        nf_jval *o = nf_jnew_object(), *a = nf_jnew_array();
        nf_jobj_set(o, "case", nf_jnew_string(name));
        nf_jobj_set(o, "op", nf_jnew_string(opt.op));
        nf_jobj_set(o, "device", nf_jnew_string(opt.device));
        nf_jobj_set(o, "format", nf_jnew_string(fmt));
        nf_jobj_set(o, "layout", nf_jnew_string(lay));
        nf_jobj_set(o, "activation", nf_jnew_string(act));
        nf_jobj_set(o, "threads", nf_jnew_u64(th));
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
        /* the case is an object ID in artifact mode: escaped, quoted */
        csv_field(name);
        printf(",%s,%s,%s,%s,%s,%u,%llu,%llu,%llu,%.9f,%.9f,%.9f,%.3f,%.3f,%.1f\n",
               opt.op, opt.device, fmt, lay, act, th, (unsigned long long)t->rows,
               (unsigned long long)t->cols, (unsigned long long)t->enc.encoded_bytes, med, p10,
               p90, gbps, peak_gbps, pp);
    } else {
        nf_fput_field(name, 24, stdout); /* escaped as bind's listing */
        printf(" %-6s %-4s %-20s %7llu %7llu %12llu %9.3f %9.3f %9.3f %8.2f %8.2f %6.2f\n",
               opt.op, act, fmt, (unsigned long long)t->rows,
               (unsigned long long)t->cols, (unsigned long long)t->enc.encoded_bytes, med * 1e3,
               p10 * 1e3, p90 * 1e3, gbps, peak_gbps, peak_gbps > 0 ? gbps / peak_gbps : 0);
    }
    fflush(stdout);
}

/* Time op over the encoded object obj: copies of it side by side in the
 * arena (each 64-byte aligned), so that together they exceed 4x the
 * last-level cache, visited in turn; encode writes one copy. A peak pass
 * before and after the timed runs keeps the peak a ceiling for this case. */
static int bench_one(const char *name, const nf_tensor_enc *t, const uint8_t *obj,
                     const float *src)
{
    uint64_t eb = t->enc.encoded_bytes;
    uint64_t stride = (eb + 63) & ~(uint64_t)63;
    if (!stride)
        stride = 64;
    bool enc = !strcmp(opt.op, "encode");
    uint8_t *own = NULL;
    uint64_t copies = 1;
    if (stride > arena.bytes || enc) {
        own = aligned_alloc(64, stride);
        if (own)
            memcpy(own, obj, eb);
    } else {
        copies = arena.bytes / stride;
        for (uint64_t c = 0; c < copies; c++)
            memcpy(arena.p + c * stride, obj, eb);
    }
    uint16_t *x = malloc((t->cols ? t->cols : 1) * sizeof *x);
    float *y = malloc((t->rows ? t->rows : 1) * sizeof *y);
    double *s = calloc(opt.iters, sizeof *s);
    if ((!own && (stride > arena.bytes || enc)) || !x || !y || !s) {
        fprintf(stderr, "%s: %s: out of memory for %llu bytes\n", nf_prog, name,
                (unsigned long long)eb);
        free(own), free(x), free(y), free(s);
        return NF_EXIT_IO;
    }
    for (uint64_t k = 0; k < t->cols; k++)
        x[k] = (uint16_t)(0x3f80 ^ (k & 0x807f)); /* +-1.x, deterministic */
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    int rc = 0;
    if (!enc)
        peak_passes(NF_READ_VARIANTS);
    for (unsigned i = 0; !rc && i < opt.warmup + opt.iters; i++) {
        uint8_t *wc = own ? own : arena.p + (i % copies) * stride;
        double t0 = nf_now();
        if (!strcmp(opt.op, "gemv"))
            rc = nf_gemv_rows_act(t, wc, eb, 0, t->rows, x, y, opt.threads, opt.act);
        else if (!strcmp(opt.op, "decode"))
            rc = nf_decode_pass(t, wc, eb, opt.threads);
        else
            rc = nf_encode_f32(t, src, wc, eb, &eo, NULL);
        double dt = nf_now() - t0;
        if (i >= opt.warmup)
            s[i - opt.warmup] = dt;
        /* a peak pass between every four timed runs: on a busy machine both
         * figures then come from the same minutes */
        if (!enc && i >= opt.warmup && (i - opt.warmup) % 4 == 3)
            peak_passes(1);
    }
    if (!enc)
        peak_passes(NF_READ_VARIANTS);
    if (!rc)
        report(name, t, s, opt.iters, (double)eb);
    else
        fprintf(stderr, "%s: %s: %s\n", nf_prog, name, nf_codec_strerror(rc));
    free(own);
    free(x);
    free(y);
    free(s);
    return rc ? NF_EXIT_RULE : 0;
}

/* ---- the device path (--device cuda) ------------------------------------
 * Rows in the columns of ninfer-bench(1) (the CSV/JSON contract): the
 * backend times (warm-up by time, an L2 flush before each sample, weights
 * rotated), measures the copy peak just before and just after the case,
 * and checks the last results against the CPU reference (gemv: sampled
 * rows, the last 64 included; decode: sampled row blocks bit for bit). */

static const char *const dev_cols[] = {
    "device", "op", "activation", "format", "layout", "object", "rows", "cols", "threads",
    "bytes", "iters", "min_us", "p10_us", "med_us", "p90_us", "gbps", "input_mbps",
    "peak_before_gbps", "peak_after_gbps", "ratio", "unstable", "max_err", "bound", "check"};
#define DEV_NCOLS (sizeof dev_cols / sizeof dev_cols[0])

static nf_artifact *bench_a; /* artifact mode (below): the object column is the case */

static void device_header(void)
{
    if (opt.out == 2) {
        for (size_t i = 0; i < DEV_NCOLS; i++)
            printf("%s%s", i ? "," : "", dev_cols[i]);
        printf("\n");
    } else if (opt.out == 0) {
        printf("# CUDA: GB/s = encoded bytes / p10 time; ratio against the larger of the "
               "device-to-device copy peaks (read + write) just before and after each case\n");
        printf("%-6s %-3s %-20s %-24s %7s %7s %12s %5s %9s %9s %8s %8s %8s %6s %1s %9s %9s %s\n",
               "op", "act", "format", "object", "rows", "cols", "bytes", "iters", "p10_us",
               "med_us", "GB/s", "peak_b", "peak_a", "ratio", "u", "max_err", "bound", "check");
    }
    fflush(stdout);
}

/* One device row: v[i] the text of column i ("" empty); num[i] whether it
 * is a number (JSON). The table shows an object ID cut to 24 columns with
 * an ellipsis and escaped (never in CSV/JSON). */
static void device_row(char v[][40], const char *object, const bool *num)
{
    if (opt.out == 2) {
        for (size_t i = 0; i < DEV_NCOLS; i++) {
            if (i)
                putchar(',');
            csv_field(i == 5 ? object : v[i]);
        }
        putchar('\n');
    } else if (opt.out == 1) {
        nf_jval *o = nf_jnew_object();
        for (size_t i = 0; i < DEV_NCOLS; i++) {
            const char *t = i == 5 ? object : v[i];
            nf_jobj_set(o, dev_cols[i], !*t ? NULL : num[i] ? nf_jnew_double(strtod(t, NULL))
                                                           : nf_jnew_string(t));
        }
        nf_print_json_line(o);
        nf_jval_free(o);
    } else {
        char *esc = nf_text_escape(*object ? object : "-"), shown[32];
        size_t len = esc ? strlen(esc) : 0;
        if (len > 24)
            snprintf(shown, sizeof shown, "%.21s...", esc);
        else
            snprintf(shown, sizeof shown, "%s", esc ? esc : "?");
        free(esc);
        printf("%-6s %-3s %-20s %-24s %7s %7s %12s %5s %9s %9s %8s %8s %8s %6s %1s %9s %9s %s\n",
               v[1], *v[2] ? v[2] : "-", v[3], shown, v[6], v[7], v[9], v[10], v[12], v[13],
               v[15], v[17], v[18], v[19], v[20], *v[21] ? v[21] : "-", *v[22] ? v[22] : "-",
               v[23]);
    }
    fflush(stdout);
}

static int bench_device(const char *name, const nf_tensor_enc *t, const uint8_t *obj)
{
    if (!strcmp(opt.op, "encode")) {
        fprintf(stderr, "%s: --op encode runs on the CPU only\n", nf_prog);
        return NF_EXIT_USAGE;
    }
    double *s = calloc(opt.iters, sizeof *s);
    if (!s)
        return NF_EXIT_IO;
    nf_diags d = NF_DIAGS_INIT;
    nf_device_bench_info in;
    int ex = nf_device_bench_samples(opt.op, t, obj, opt.warmup, opt.iters, true, name, s, &in,
                                     &d);
    nf_diags_print(&d, nf_prog, stderr);
    nf_diags_free(&d);
    if (ex) {
        free(s);
        return ex;
    }
    unsigned n = opt.iters;
    qsort(s, n, sizeof *s, cmp_d);
    double bytes = (double)t->enc.encoded_bytes, p10 = pct(s, n, 0.1);
    double gbps = p10 > 0 ? bytes / p10 / 1e9 : 0;
    double peak = in.peak_before_gbps > in.peak_after_gbps ? in.peak_before_gbps : in.peak_after_gbps;
    double lo = in.peak_before_gbps < in.peak_after_gbps ? in.peak_before_gbps : in.peak_after_gbps;
    bool unstable = peak <= 0 || (peak - lo) / peak > 0.15;
    char v[DEV_NCOLS][40];
    bool num[DEV_NCOLS] = {0};
    for (size_t i = 6; i <= 22; i++)
        num[i] = true;
    memset(v, 0, sizeof v);
    snprintf(v[0], 40, "cuda");
    snprintf(v[1], 40, "%s", opt.op);
    snprintf(v[2], 40, "%s", strcmp(opt.op, "gemv") ? "" : "a16");
    snprintf(v[3], 40, "%s", nf_format_name(t->format));
    snprintf(v[4], 40, "%s", nf_layout_name(t->layout));
    snprintf(v[6], 40, "%llu", (unsigned long long)t->rows);
    snprintf(v[7], 40, "%llu", (unsigned long long)t->cols);
    snprintf(v[8], 40, "0");
    snprintf(v[9], 40, "%llu", (unsigned long long)t->enc.encoded_bytes);
    snprintf(v[10], 40, "%u", n);
    snprintf(v[11], 40, "%.3f", s[0] * 1e6);
    snprintf(v[12], 40, "%.3f", p10 * 1e6);
    snprintf(v[13], 40, "%.3f", pct(s, n, 0.5) * 1e6);
    snprintf(v[14], 40, "%.3f", pct(s, n, 0.9) * 1e6);
    snprintf(v[15], 40, "%.2f", gbps);
    snprintf(v[17], 40, "%.2f", in.peak_before_gbps);
    snprintf(v[18], 40, "%.2f", in.peak_after_gbps);
    snprintf(v[19], 40, "%.4f", peak > 0 ? gbps / peak : 0);
    snprintf(v[20], 40, "%d", unstable);
    if (in.check >= 0) {
        /* a NaN error (a NaN result where the reference is finite) prints as
         * nan in CSV and the table, null in JSON */
        if (isfinite(in.max_err))
            snprintf(v[21], 40, "%.6g", in.max_err);
        else
            snprintf(v[21], 40, "%s", opt.out == 1 ? "" : "nan");
        snprintf(v[22], 40, "%.6g", in.bound);
    }
    snprintf(v[23], 40, "%s", in.check < 0 ? "-" : in.check ? "FAIL" : "ok");
    device_row(v, bench_a ? name : "", num);
    fprintf(stderr, "%s: %s: device: sm_mhz=%.0f copies=%llu warmup_ms=%.0f warmup_runs=%u "
                    "rows_checked=%llu worst_row=%llu\n",
            nf_prog, name, in.sm_mhz, (unsigned long long)in.copies, in.warmup_s * 1e3,
            in.warmup_runs, (unsigned long long)in.rows_checked, (unsigned long long)in.worst_row);
    free(s);
    if (in.check == 1) {
        fprintf(stderr, "%s: %s: codes: %s on the device: row %llu: error %s over its bound %.3g "
                        "(%llu rows checked)\n",
                nf_prog, name, opt.op, (unsigned long long)in.worst_row, v[21][0] ? v[21] : "nan",
                in.bound, (unsigned long long)in.rows_checked);
        return NF_EXIT_RULE;
    }
    return 0;
}

/* skip_unencodable (--format all): a format the encoder cannot produce is
 * skipped with a note. gguf_* weights (copied, never quantized into, DESIGN
 * 7.5) are plausible random blocks (nf_gguf_random_blocks); --op encode
 * has nothing to time for them. */
static int bench_generated(nf_format f, nf_layout l, uint64_t N, uint64_t K, uint64_t div,
                           bool skip_unencodable)
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
    int rc = 0;
    if (nf_format_is_gguf(f) && strcmp(opt.op, "encode"))
        nf_gguf_random_blocks(f, 0x6767756675ull, obj, el / nf_gguf_info_of(f).qk);
    else
        rc = nf_encode_f32(&t, src, obj, t.enc.encoded_bytes, &eo, NULL);
    if (rc == NF_CODEC_EINVAL && skip_unencodable) {
        fprintf(stderr, "%s: %s: skipped: this build cannot encode into it\n", nf_prog,
                nf_format_name(f));
        free(src);
        free(obj);
        return 0;
    }
    if (rc && nf_format_is_gguf(f)) {
        fprintf(stderr, "%s: unsupported: %s holds a GGUF tensor's bytes; the toolkit does not "
                "encode into it\n", nf_prog, nf_format_name(f));
        free(src);
        free(obj);
        return NF_EXIT_UNSUPPORTED;
    }
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

/* Artifact mode: the artifact and its diagnostics, opened (and the
 * --param glob matched) before the peak pass and before any line on stdout,
 * so a bad operand costs no measuring and leaves no partial table (red-team
 * E8, E24). */
static nf_artifact *bench_a;
static nf_diags bench_d = NF_DIAGS_INIT;

/* Call fn for each distinct object of the bindings --param selects that
 * ninfer-bench can time (rank 2, a known encoding); returns how many. */
static size_t each_object(const nf_catalog *c, void (*fn)(const nf_object *o, const nf_tensor_enc *t))
{
    bool *done = calloc(c->n_objects ? c->n_objects : 1, sizeof *done);
    size_t count = 0;
    /* a plain name is looked up; a glob is matched against every name */
    bool glob = strpbrk(opt.param, "*?[\\") != NULL;
    size_t one = glob ? SIZE_MAX : nf_catalog_binding(c, opt.param);
    for (size_t b = glob ? 0 : one; done && b < c->n_bindings; b = glob ? b + 1 : SIZE_MAX) {
        const nf_named_binding *nb = &c->bindings[b];
        if (glob && fnmatch(opt.param, nb->name, 0) != 0)
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
            count++;
            if (fn)
                fn(o, &t);
        }
    }
    free(done);
    return count;
}

/* Open the artifact; 0, or the exit status after printing why not. */
static int open_artifact(const char *path)
{
    bench_d.file = nf_display_name(path);
    nf_open_opts oo = {0};
    oo.max_json_bytes = max_json;
    /* `ninfer-bench A >> A`: nothing written there, nothing read */
    bench_a = nf_stdout_operand_check(path, NULL, NULL, 0, &bench_d) == 0 &&
                      nf_remote_open_opts(&oo, path, &bench_d) == 0
                  ? nf_artifact_open(path, &oo, &bench_d)
                  : NULL;
    int ex = nf_diags_exit(&bench_d);
    if (bench_a && !ex && !each_object(nf_artifact_catalog(bench_a), NULL)) {
        nf_artifact_close(bench_a);
        bench_a = NULL;
        nf_diags_free(&bench_d);
        return nf_usage_error("--param '%s' matches no parameter with a rank-2 tensor to time",
                              opt.param);
    }
    if (bench_a && !ex && nf_stdout_operand_check(path, bench_a, NULL, 0, &bench_d) < 0)
        ex = NF_EXIT_USAGE; /* `--artifact A >> A`: nothing written there */
    if (!bench_a || ex) {
        nf_diags_print(&bench_d, nf_prog, stderr);
        nf_diags_free(&bench_d);
        nf_artifact_close(bench_a);
        bench_a = NULL;
        return ex ? ex : NF_EXIT_IO;
    }
    return 0;
}

static int bench_ex;

static void bench_object(const nf_object *o, const nf_tensor_enc *tp)
{
    nf_tensor_enc t = *tp;
    uint8_t *obj = o->bytes <= SIZE_MAX ? malloc(o->bytes ? (size_t)o->bytes : 1) : NULL;
    float *src = !strcmp(opt.op, "encode") ? malloc(t.rows * t.cols * sizeof *src) : NULL;
    if (!obj || (!strcmp(opt.op, "encode") && !src))
        nf_diag_add(&bench_d, NF_C_IO, "", "object \"%s\": out of memory", o->id);
    else if (nf_artifact_read(bench_a, o->offset, obj, o->bytes, &bench_d) == 0 &&
             (!src || nf_decode_rows_f32(&t, obj, o->bytes, 0, t.rows, src) == 0)) {
        int e = !strcmp(opt.device, "cuda") ? bench_device(o->id, &t, obj)
                                            : bench_one(o->id, &t, obj, src);
        bench_ex = nf_exit_combine(bench_ex, e);
    }
    free(obj);
    free(src);
}

static int bench_artifact(void)
{
    each_object(nf_artifact_catalog(bench_a), bench_object);
    nf_diags_print(&bench_d, nf_prog, stderr);
    int ex = nf_exit_combine(bench_ex, nf_diags_exit(&bench_d));
    nf_diags_free(&bench_d);
    nf_artifact_close(bench_a);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_FORMAT = 256, O_LAYOUT, O_SHAPE, O_OP, O_DEVICE, O_ITERS, O_WARMUP, O_THREADS,
           O_JSON, O_CSV, O_PARAM, O_DIV, O_VERSION, O_ACT, O_LLC, O_MAXJ };
    static const struct option lo[] = {
        {"format", required_argument, 0, O_FORMAT}, {"layout", required_argument, 0, O_LAYOUT},
        {"shape", required_argument, 0, O_SHAPE},   {"op", required_argument, 0, O_OP},
        {"device", required_argument, 0, O_DEVICE}, {"iters", required_argument, 0, O_ITERS},
        {"warmup", required_argument, 0, O_WARMUP}, {"threads", required_argument, 0, O_THREADS},
        {"json", no_argument, 0, O_JSON},           {"csv", no_argument, 0, O_CSV},
        {"param", required_argument, 0, O_PARAM},   {"divisors", required_argument, 0, O_DIV},
        {"activation", required_argument, 0, O_ACT}, {"llc-bytes", required_argument, 0, O_LLC},
        {"help", no_argument, 0, 'h'},              {"version", no_argument, 0, O_VERSION},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-bench";
    const char *fmt = NULL, *lay = NULL, *shape = NULL, *llc = getenv("NF_BENCH_LLC_BYTES");
    uint64_t N = 0, K = 0, div = 1, v;
    bool act_set = false;
    int c;
    opterr = 0; /* nf_bad_option says it, once */
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
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &max_json))
                return NF_EXIT_USAGE;
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
        case O_ACT:
            if (strcmp(optarg, "a16") && strcmp(optarg, "a8"))
                return nf_usage_error("--activation is a16 or a8");
            opt.act = strcmp(optarg, "a8") ? NF_ACT_A16 : NF_ACT_A8;
            act_set = true;
            break;
        case O_LLC: llc = optarg; break;
        case 'h': print_usage(); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: {
            int rr = nf_remote_or_bad_option(c, argc, argv, lo);
            if (rr)
                return rr;
            break;
        }
        }
    }
    if (llc) {
        const char *why = nf_size_parse(llc, &opt.llc);
        if (!why && (opt.llc == 0 || opt.llc > (64ull << 30)))
            why = "not 1 to 64G";
        if (why)
            return nf_usage_error("bad --llc-bytes (or NF_BENCH_LLC_BYTES) '%s': %s", llc, why);
    }
    if (act_set && strcmp(opt.op, "gemv"))
        return nf_usage_error("--activation applies to --op gemv only");
    if (act_set && opt.act == NF_ACT_A8 && !strcmp(opt.device, "cuda"))
        return nf_usage_error("--activation a8 runs on the CPU only");
    bool artifact = optind < argc;
    if (artifact == (fmt != NULL) || (artifact && optind + 1 != argc))
        return nf_usage_error("give either --format/--shape or one ARTIFACT");
    if (artifact && !strcmp(argv[optind], "-"))
        return nf_usage_error("ninfer-bench times objects read from an artifact's files, not a "
                              "stream ('-')");
    if (artifact) {
        int e = open_artifact(argv[optind]);
        if (e)
            return e;
    }
    bool all = fmt && !strcmp(fmt, "all");
    nf_format f = NF_FMT_UNKNOWN;
    nf_layout l = NF_LAY_UNKNOWN;
    if (!artifact) {
        if (all && lay)
            return nf_usage_error("--format all takes each format's default layout: no --layout");
        if (!all) {
            f = nf_format_from_name(fmt, strlen(fmt));
            if (f == NF_FMT_UNKNOWN)
                return nf_usage_error("unknown format '%s'", fmt);
            l = lay ? nf_layout_from_name(lay, strlen(lay)) : nf_format_default_layout(f);
            if (l == NF_LAY_UNKNOWN)
                return nf_usage_error("unknown layout '%s'", lay);
        }
        char *xp = shape ? strchr(shape, 'x') : NULL;
        if (!xp)
            return nf_usage_error("--shape is NxK");
        *xp = 0;
        if (!nf_parse_u64(shape, &N) || !nf_parse_u64(xp + 1, &K) || !N || !K ||
            N > (1u << 24) || K > (1u << 24) || N * K > (1ull << 32))
            return nf_usage_error("bad --shape (N, K >= 1, N*K <= 2^32)");
    }
    if (!artifact && !all) {
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
        nf_diags d = NF_DIAGS_INIT;
        int e = nf_device_init(&d);
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
        if (e)
            return e; /* each case measures its own peaks (bench_device) */
    } else {
        if (!opt.llc)
            opt.llc = nf_llc_bytes();
        int e = arena_init();
        if (e)
            return e;
    }
    if (!strcmp(opt.device, "cuda"))
        device_header();
    else if (opt.out == 2)
        printf("case,op,device,format,layout,activation,threads,n,k,encoded_bytes,median_s,"
               "p10_s,p90_s,gbps,peak_gbps,pct_of_peak\n");
    else if (opt.out == 0) {
        if (strcmp(opt.device, "cuda"))
            printf("# peak %.2f GB/s (CPU read-only passes over %llu MiB = 4x the %llu KiB "
                   "last-level cache, %u threads; best so far, per row)\n",
                   peak_gbps, (unsigned long long)(arena.bytes >> 20),
                   (unsigned long long)(opt.llc >> 10), opt.threads ? opt.threads : nf_cpu_count());
        else
            printf("# peak %.2f GB/s (device-to-device copy, read + write)\n", peak_gbps);
        printf("%-24s %-6s %-4s %-20s %7s %7s %12s %9s %9s %9s %8s %8s %6s\n", "case", "op", "act",
               "format", "N", "K", "bytes", "med_ms", "p10_ms", "p90_ms", "GB/s", "peak",
               "x_peak");
    }
    int ex = 0;
    if (artifact) {
        ex = bench_artifact();
    } else if (!all) {
        ex = bench_generated(f, l, N, K, div, false);
    } else {
        for (int i = 0; i < NF_FMT_COUNT_; i++) {
            nf_format fi = (nf_format)i;
            nf_layout li = nf_format_default_layout(fi);
            uint64_t dims[2] = {N, K};
            nf_encoding enc;
            const char *why = NULL;
            uint64_t dv = fi == NF_FMT_NVFP4 ? div : 1;
            if (nf_encoding_compute(fi, li, dims, 2, dv, &enc, &why) != NF_ENC_OK) {
                fprintf(stderr, "%s: %s: skipped: %s/%s cannot hold %llux%llu: %s\n", nf_prog,
                        nf_format_name(fi), nf_format_name(fi), nf_layout_name(li),
                        (unsigned long long)N, (unsigned long long)K, why ? why : "not allowed");
                continue;
            }
            ex = nf_exit_combine(ex, bench_generated(fi, li, N, K, dv, true));
        }
    }
    free(arena.p);
    return nf_stdout_close(ex);
}
