/* ninfer-bench — decode, encode and GEMV throughput per format/layout/shape,
 * against the read peak measured just before and just after each case. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
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
    "usage: ninfer-bench --format F,... [--layout L] --shape NxK,... [OPTIONS]\n"
    "       ninfer-bench ARTIFACT [--param GLOB] [OPTIONS]\n"
    "Time a kernel over encoded weights (generated, or an artifact's own objects)\n"
    "and compare its throughput with the read peak measured just before and just\n"
    "after it, in the same process, on the same threads: on the CPU read-only passes\n"
    "over the rotation buffer; on CUDA a device-to-device copy larger than L2.\n"
    "\n"
    "  --op gemv|decode|encode  the kernel (default gemv): y = W x with x in bf16;\n"
    "                        decode into a small reused buffer; encode from f32\n"
    "  --activation a16|a8   gemv: x as bf16 (default), or quantized per block of\n"
    "                        16 to int8 (the A8 path of AllowA8/AllowA4 uses)\n"
    "  --device cpu|cuda     where to run (default cpu)\n"
    "  --format F|all, --shape NxK  (repeated, or comma lists: every shape with\n"
    "                        every format); --layout L, --divisors N (nvfp4)\n"
    "  --param GLOB          artifact mode: parameters to bench (default '*')\n"
    "  --iters N             timed iterations (default 30); --warmup N (default 3)\n"
    "  --threads N           CPU threads (default: all CPUs)\n"
    "  --hot                 time the weights from cache (one copy, no rotation)\n"
    "  --llc-bytes N         the last-level cache to defeat (default: from sysfs,\n"
    "                        or $NF_BENCH_LLC_BYTES); K M G: 1024s, KB MB GB: 1000s\n"
    "  --rotate-bytes N      the rotation buffer, at least 4x the LLC + 1 MiB\n"
    "                        (default 256M, or $NF_BENCH_ROTATE_BYTES)\n"
    "  --json                one JSON object per case; --csv  CSV (RFC 4180)\n"
    "  --max-json-bytes N    artifact mode: refuse a catalog over N (default 256M)\n"
    "  -h, --help, --version\n"
    "\n"
    "Columns: device op activation format layout object rows cols threads bytes\n"
    "iters min_us p10_us med_us p90_us gbps input_mbps peak_before_gbps\n"
    "peak_after_gbps ratio unstable max_err bound check. gbps = bytes / p10 time;\n"
    "ratio = gbps / max(peak before, after), a fraction; unstable = 1 when the\n"
    "peaks differ by more than 15% or the machine was busy (/proc/stat).\n"
    "Exit status: 0 ok, 1 bad input or a failed check, 2 usage, 3 I/O,\n"
    "4 unsupported (a device or format this build cannot serve).\n";

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
    bool hot;
    uint64_t llc, rotate;
} opt = {"gemv", "cpu", "*", 30, 3, 0, 0, NF_ACT_A16, false, 0, 0};

/* The rotation arena (CPU): max(--rotate-bytes, 4x the last-level cache +
 * 1 MiB). The peak passes read it too. */
static struct {
    uint8_t *p;
    size_t bytes;
} arena;

static uint64_t max_json; /* --max-json-bytes; 0: the reader's default */
static bool any_fail;     /* a case whose check failed: exit 1 */

/* What report() prints beside a CPU case's samples: its peaks, stability
 * and check (bench_one fills it; bench_device prints its own rows). */
static struct {
    double peak_before, peak_after;
    bool unstable;
    bool checked, check_ok;
    double max_err, bound;
} g_case;

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

/* The read peak now: the best of one pass of each access pattern of
 * nf_read_pass_variant over the arena, on the case's threads. */
static double peak_now(void)
{
    static volatile uint64_t sink;
    size_t bytes = arena.bytes & ~(size_t)255;
    double best = 0;
    for (unsigned v = 0; v < NF_READ_VARIANTS; v++) {
        double t0 = nf_now();
        sink ^= nf_read_pass_variant(arena.p, bytes, opt.threads, v);
        double t = nf_now() - t0;
        if (t > 0 && (double)bytes / t / 1e9 > best)
            best = (double)bytes / t / 1e9;
    }
    (void)sink;
    return best;
}

/* The arena, 64-byte aligned, touched, and one untimed pass. */
static int arena_init(void)
{
    uint64_t b = 0;
    if (!nf_mul_u64(opt.llc, 4, &b) || !nf_add_u64(b, 1u << 20, &b) || b > SIZE_MAX / 2)
        return nf_usage_error("--llc-bytes %llu is too large", (unsigned long long)opt.llc);
    if (b < opt.rotate)
        b = opt.rotate;
    b = (b + 4095) & ~(uint64_t)4095;
    arena.p = aligned_alloc(4096, (size_t)b);
    if (!arena.p) {
        fprintf(stderr, "%s: out of memory for the %llu-byte rotation buffer (see --rotate-bytes "
                        "and --llc-bytes)\n",
                nf_prog, (unsigned long long)b);
        return NF_EXIT_IO;
    }
    arena.bytes = (size_t)b;
    memset(arena.p, 1, arena.bytes);
    (void)peak_now(); /* warm-up: pages, threads */
    return 0;
}

/* ---- the machine's load, from /proc/stat ------------------------------------- */

typedef struct {
    unsigned long long total, busy, steal, self;
    bool ok;
} load_snap;

static load_snap load_now(void)
{
    load_snap s = {0, 0, 0, 0, false};
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return s;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                   &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 8)
        return s;
    for (int i = 0; i < 8; i++) /* guest time is counted in user already */
        s.total += v[i];
    s.busy = s.total - v[3] - v[4];
    s.steal = v[7];
    f = fopen("/proc/self/stat", "r");
    if (!f)
        return s;
    char buf[1024];
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    const char *p = strrchr(buf, ')'); /* after the command name */
    unsigned long long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return s;
    s.self = ut + st;
    s.ok = true;
    return s;
}

/* Whether other work ran beside the case: (Δbusy - Δself) / Δtotal > 3%
 * or steal / Δtotal > 1%. */
static bool load_busy(load_snap a, load_snap b)
{
    if (!a.ok || !b.ok || b.total <= a.total)
        return false;
    double tot = (double)(b.total - a.total);
    double others = (double)(b.busy - a.busy) - (double)(b.self - a.self);
    return others / tot > 0.03 || (double)(b.steal - a.steal) / tot > 0.01;
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

/* ---- output ------------------------------------------------------------------- */

static bool g_artifact;      /* cases are an artifact's objects (the object column) */
static nf_artifact *bench_a; /* artifact mode (below): the object column is the case */

/* One CSV field: controls (CR and LF too), DEL, C1, invalid UTF-8 and '\\'
 * as \xHH, as diagnostics write them (no raw byte of a hostile ID reaches
 * a terminal), then quoted per RFC 4180 when it holds ',' or '"' ('"'
 * doubled); a ',' after it, or the line's end. */
static void csv_field(const char *s, bool last)
{
    char *e = nf_text_escape_also(s, "\\");
    const char *t = e ? e : "(out of memory)";
    if (strpbrk(t, ",\"")) {
        putchar('"');
        for (const char *p = t; *p; p++) {
            if (*p == '"')
                putchar('"');
            putchar(*p);
        }
        putchar('"');
    } else {
        fputs(t, stdout);
    }
    free(e);
    putchar(last ? '\n' : ',');
}

/* s escaped as bind's listing escapes a field (NF_FIELD_ESCAPES: controls,
 * DEL, C1, invalid UTF-8, ',' '\\' '"' as \xHH) and cut to at most w
 * characters (UTF-8 code points), the cut marked with "...": a table cell,
 * padded to w and a space after (last: a newline instead). */
static void table_cell(const char *s, unsigned w, bool last)
{
    char *e = nf_text_escape_also(s ? s : "", NF_FIELD_ESCAPES);
    const char *t = e ? e : "?";
    unsigned n = 0;
    const char *p = t, *cut = NULL;
    for (; *p; p++)
        if (((unsigned char)*p & 0xc0) != 0x80) {
            if (n == w - 3)
                cut = p;
            n++;
        }
    if (n > w && cut) {
        printf("%.*s...", (int)(cut - t), t);
        n = w;
    } else {
        fputs(t, stdout);
    }
    if (last)
        putchar('\n');
    else
        printf("%*s ", (int)(w - (n < w ? n : w)), "");
    free(e);
}

static const char *const cols[] = {
    "device", "op", "activation", "format", "layout", "object", "rows", "cols", "threads",
    "bytes", "iters", "min_us", "p10_us", "med_us", "p90_us", "gbps", "input_mbps",
    "peak_before_gbps", "peak_after_gbps", "ratio", "unstable", "max_err", "bound", "check",
};
#define NCOLS (sizeof cols / sizeof *cols)
/* the table: shorter labels, widths */
static const char *const tcols[NCOLS] = {
    "device", "op", "act", "format", "layout", "object", "rows", "cols", "thr", "bytes", "iters",
    "min_us", "p10_us", "med_us", "p90_us", "GB/s", "in_MB/s", "peak_b", "peak_a", "ratio",
    "unst", "max_err", "bound", "check",
};
static const unsigned twidth[NCOLS] = {6, 6, 4, 20, 25, 48, 7, 7, 3, 11, 5, 10, 10, 10, 10,
                                       7, 8, 7, 7, 6, 4, 9, 9, 5};

static void print_header(void)
{
    if (opt.out == 2) {
        for (unsigned i = 0; i < NCOLS; i++)
            csv_field(cols[i], i + 1 == NCOLS);
    } else if (opt.out == 0) {
        for (unsigned i = 0; i < NCOLS; i++)
            table_cell(tcols[i], twidth[i], i + 1 == NCOLS);
    }
    fflush(stdout);
}

/* One case's row, from its samples (s, n, unsorted) and the encoded bytes it
 * reads (gemv, decode); the peaks, stability and check from g_case. */
static void report(const char *name, const nf_tensor_enc *t, double *s, unsigned n, double bytes)
{
    qsort(s, n, sizeof *s, cmp_d);
    bool enc = !strcmp(opt.op, "encode");
    if (enc)
        bytes = (double)t->rows * (double)t->cols * 4.0; /* the f32 input */
    double mn = s[0], p10 = pct(s, n, 0.1), med = pct(s, n, 0.5), p90 = pct(s, n, 0.9);
    double rate = p10 > 0 ? bytes / p10 : 0;
    double peak = g_case.peak_before > g_case.peak_after ? g_case.peak_before : g_case.peak_after;
    unsigned th = opt.threads ? opt.threads : nf_cpu_count();
    char v[NCOLS][48];
    const char *sv[NCOLS];
    snprintf(v[0], sizeof v[0], "cpu");
    snprintf(v[1], sizeof v[1], "%s", opt.op);
    snprintf(v[2], sizeof v[2], "%s", strcmp(opt.op, "gemv") ? "" : opt.act == NF_ACT_A8 ? "a8" : "a16");
    snprintf(v[3], sizeof v[3], "%s", nf_format_name(t->format));
    snprintf(v[4], sizeof v[4], "%s", nf_layout_name(t->layout));
    v[5][0] = 0; /* the object: sv[5] */
    snprintf(v[6], sizeof v[6], "%llu", (unsigned long long)t->rows);
    snprintf(v[7], sizeof v[7], "%llu", (unsigned long long)t->cols);
    snprintf(v[8], sizeof v[8], "%u", th);
    snprintf(v[9], sizeof v[9], "%.0f", bytes);
    snprintf(v[10], sizeof v[10], "%u", n);
    snprintf(v[11], sizeof v[11], "%.3f", mn * 1e6);
    snprintf(v[12], sizeof v[12], "%.3f", p10 * 1e6);
    snprintf(v[13], sizeof v[13], "%.3f", med * 1e6);
    snprintf(v[14], sizeof v[14], "%.3f", p90 * 1e6);
    snprintf(v[15], sizeof v[15], enc ? "" : "%.3f", rate / 1e9);
    snprintf(v[16], sizeof v[16], enc ? "%.3f" : "", rate / 1e6);
    snprintf(v[17], sizeof v[17], "%.3f", g_case.peak_before);
    snprintf(v[18], sizeof v[18], "%.3f", g_case.peak_after);
    snprintf(v[19], sizeof v[19], enc || peak <= 0 ? "" : "%.4f", rate / 1e9 / peak);
    snprintf(v[20], sizeof v[20], "%d", g_case.unstable ? 1 : 0);
    snprintf(v[21], sizeof v[21], g_case.checked ? "%.3g" : "", g_case.max_err);
    snprintf(v[22], sizeof v[22], g_case.checked ? "%.3g" : "", g_case.bound);
    snprintf(v[23], sizeof v[23], "%s", !g_case.checked ? "-" : g_case.check_ok ? "ok" : "FAIL");
    for (unsigned i = 0; i < NCOLS; i++)
        sv[i] = v[i];
    sv[5] = g_artifact ? name : "";
    if (g_case.checked && !g_case.check_ok)
        any_fail = true;
    if (opt.out == 1) {
        /* strings and numbers; an empty field is null */
        static const char kind[NCOLS + 1] = "ssssssiiiiiddddddddd" "iddS";
        nf_jval *o = nf_jnew_object();
        for (unsigned i = 0; i < NCOLS; i++) {
            nf_jval *jv;
            if (!sv[i][0])
                jv = nf_jnew_null();
            else if (kind[i] == 's' || kind[i] == 'S')
                jv = nf_jnew_string(sv[i]);
            else if (isfinite(strtod(sv[i], NULL)))
                jv = nf_jnew_raw(sv[i], strlen(sv[i])); /* the number as the table prints it */
            else
                jv = nf_jnew_null();
            nf_jobj_set(o, cols[i], jv);
        }
        nf_print_json_line(o);
        nf_jval_free(o);
    } else if (opt.out == 2) {
        for (unsigned i = 0; i < NCOLS; i++)
            csv_field(sv[i], i + 1 == NCOLS);
    } else {
        for (unsigned i = 0; i < NCOLS; i++)
            table_cell(sv[i], twidth[i], i + 1 == NCOLS);
    }
    fflush(stdout);
}

/* ---- timing one case ---------------------------------------------------------- */

/* The rows whose y is checked against the reference: the first and the
 * last eight (all of them for a small matrix). */
static void check_gemv(const nf_tensor_enc *t, const uint8_t *obj, const uint16_t *x,
                       const float *y)
{
    uint64_t N = t->rows, m = N < 16 ? N : 16;
    float yr[16];
    double bd[16];
    uint64_t rows[16];
    for (uint64_t i = 0; i < m; i++)
        rows[i] = N <= 16 ? i : i < 8 ? i : N - 16 + i;
    g_case.checked = true;
    g_case.check_ok = true;
    g_case.max_err = 0;
    g_case.bound = 0;
    double worst = -1;
    for (uint64_t i = 0; i < m; i++) {
        uint64_t r = rows[i];
        if (nf_gemv_ref_rows_act(t, obj, t->enc.encoded_bytes, r, r + 1, x, &yr[i], &bd[i], opt.act)) {
            g_case.check_ok = false;
            continue;
        }
        double e = fabs((double)y[r] - (double)yr[i]);
        bool ok = e <= bd[i] || (isnan(y[r]) && isnan(yr[i])) || (y[r] == yr[i]);
        if (!ok)
            g_case.check_ok = false;
        double ratio = bd[i] > 0 ? e / bd[i] : e > 0 ? INFINITY : 0;
        if (!isnan(e) && e > g_case.max_err)
            g_case.max_err = e;
        if (ratio > worst) {
            worst = ratio;
            g_case.bound = bd[i];
        }
    }
}

/* Time op over the encoded object obj: copies of it side by side in the
 * arena (each 64-byte aligned) visited in turn, so that nothing is timed
 * from cache (--hot: one copy, warm); encode writes one copy. The peak
 * right before the warm-up and right after the timed runs. */
static int bench_one(const char *name, const nf_tensor_enc *t, const uint8_t *obj,
                     const float *src)
{
    uint64_t eb = t->enc.encoded_bytes;
    uint64_t stride = (eb + 63) & ~(uint64_t)63;
    if (!stride)
        stride = 64;
    bool enc = !strcmp(opt.op, "encode"), gemv = !strcmp(opt.op, "gemv");
    uint8_t *own = NULL;
    uint64_t copies = 1;
    bool one = opt.hot || stride > arena.bytes || enc;
    if (one) {
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
    if ((one && !own) || !x || !y || !s) {
        fprintf(stderr, "%s: %s: out of memory for %llu bytes\n", nf_prog, name,
                (unsigned long long)eb);
        free(own), free(x), free(y), free(s);
        return NF_EXIT_IO;
    }
    for (uint64_t k = 0; k < t->cols; k++)
        x[k] = (uint16_t)(0x3f80 ^ (k & 0x807f)); /* +-1.x, deterministic */
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    int rc = 0;
    memset(&g_case, 0, sizeof g_case);
    load_snap l0 = load_now();
    g_case.peak_before = peak_now();
    for (unsigned i = 0; !rc && i < opt.warmup + opt.iters; i++) {
        uint8_t *wc = own ? own : arena.p + (i % copies) * stride;
        double t0 = nf_now();
        if (gemv)
            rc = nf_gemv_rows_act(t, wc, eb, 0, t->rows, x, y, opt.threads, opt.act);
        else if (!enc)
            rc = nf_decode_pass(t, wc, eb, opt.threads);
        else
            rc = nf_encode_f32(t, src, wc, eb, &eo, NULL);
        double dt = nf_now() - t0;
        if (i >= opt.warmup)
            s[i - opt.warmup] = dt;
    }
    g_case.peak_after = peak_now();
    load_snap l1 = load_now();
    double hi = g_case.peak_before > g_case.peak_after ? g_case.peak_before : g_case.peak_after;
    double lo = g_case.peak_before < g_case.peak_after ? g_case.peak_before : g_case.peak_after;
    g_case.unstable = load_busy(l0, l1) || (hi > 0 && (hi - lo) > 0.15 * hi);
    if (!rc && gemv)
        check_gemv(t, obj, x, y);
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

#define dev_cols cols /* the columns of the contract (above) */
#define DEV_NCOLS NCOLS

static void device_header(void)
{
    if (opt.out == 2) {
        for (size_t i = 0; i < DEV_NCOLS; i++)
            csv_field(dev_cols[i], i + 1 == DEV_NCOLS);
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
        for (size_t i = 0; i < DEV_NCOLS; i++)
            csv_field(i == 5 ? object : v[i], i + 1 == DEV_NCOLS); /* RFC 4180 */
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

/* ---- generated weights ----------------------------------------------------------- */

typedef struct {
    nf_format f;
    nf_layout l;
    uint64_t N, K, div;
} gcase;

/* The weights of a generated case, encoded on the case's threads: blocks
 * of rows (nvfp4: whole slices, whose scale spans them) taken in turn. */
typedef struct {
    const nf_tensor_enc *t;
    const float *src;
    uint8_t *obj;
    uint64_t block, nblocks;
    atomic_uint_fast64_t next;
    atomic_int rc;
} encjob;

static void *enc_worker(void *arg)
{
    encjob *j = arg;
    nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
    eo.absmax_only = true; /* weights for timing: quality does not matter */
    for (;;) {
        uint64_t b = atomic_fetch_add(&j->next, 1);
        if (b >= j->nblocks || atomic_load(&j->rc))
            break;
        uint64_t r0 = b * j->block, r1 = r0 + j->block < j->t->rows ? r0 + j->block : j->t->rows;
        int rc = nf_encode_rows_f32(j->t, j->src + r0 * j->t->cols, r0, r1, j->obj, j->t->enc.encoded_bytes,
                                    &eo, NULL);
        if (rc)
            atomic_store(&j->rc, rc);
    }
    return NULL;
}

static int encode_par(const nf_tensor_enc *t, const float *src, uint8_t *obj)
{
    unsigned n = opt.threads ? opt.threads : nf_cpu_count();
    encjob j = {t, src, obj, 0, 0, 0, 0};
    j.block = t->format == NF_FMT_NVFP4 ? t->rows / t->divisors : (t->rows + 4 * n - 1) / (4 * n);
    if (!j.block)
        j.block = 1;
    j.nblocks = (t->rows + j.block - 1) / j.block;
    pthread_t th[64];
    unsigned started = 0;
    for (; started + 1 < n && started < 64; started++)
        if (pthread_create(&th[started], NULL, enc_worker, &j))
            break;
    enc_worker(&j);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&j.rc);
}

/* Time one generated case (checked before any output: its encoding exists,
 * and the op serves its format). gguf_* weights (copied, never quantized
 * into, DESIGN 7.5) are plausible random blocks (nf_gguf_random_blocks). */
static int bench_generated(const gcase *c)
{
    uint64_t dims[2] = {c->N, c->K};
    nf_tensor_enc t;
    if (nf_tensor_enc_init(&t, c->f, c->l, dims, 2, c->div, NULL) != NF_ENC_OK)
        return NF_EXIT_RULE; /* checked before: not reached */
    uint64_t el = c->N * c->K;
    /* the source values, made once per shape (and kind) and kept for the
     * next case: generating them costs more than timing a case */
    static float *src;
    static uint64_t src_n, src_k;
    static int src_int = -1;
    int want_int = c->f == NF_FMT_INT32; /* int32 holds integers */
    bool need = !nf_format_is_gguf(c->f) || !strcmp(opt.op, "encode"); /* gguf: random blocks */
    if (need && (!src || src_n != c->N || src_k != c->K || src_int != want_int)) {
        free(src);
        src = malloc((el ? el : 1) * sizeof *src);
        src_n = c->N, src_k = c->K, src_int = want_int;
        rng = 0x9e3779b97f4a7c15ull;
        for (uint64_t i = 0; src && i < el; i++)
            src[i] = want_int ? roundf(gauss() * 1000.0f) : gauss();
    }
    uint8_t *obj = calloc(1, t.enc.encoded_bytes ? t.enc.encoded_bytes : 1);
    if ((need && !src) || !obj) {
        fprintf(stderr, "%s: out of memory\n", nf_prog);
        free(obj);
        return NF_EXIT_IO;
    }
    int rc = 0;
    if (nf_format_is_gguf(c->f))
        nf_gguf_random_blocks(c->f, 0x6767756675ull, obj, el / nf_gguf_info_of(c->f).qk);
    else
        rc = encode_par(&t, src, obj);
    if (rc) {
        fprintf(stderr, "%s: %s: encode: %s\n", nf_prog, nf_format_name(c->f), nf_codec_strerror(rc));
        free(obj);
        return NF_EXIT_RULE;
    }
    char name[96];
    snprintf(name, sizeof name, "%llux%llu", (unsigned long long)c->N, (unsigned long long)c->K);
    int ex;
    if (!strcmp(opt.device, "cuda"))
        ex = bench_device(name, &t, obj);
    else
        ex = bench_one(name, &t, obj, need ? src : NULL);
    free(obj);
    return ex;
}

/* ---- artifact mode ------------------------------------------------------------------- */

/* The artifact's diagnostics (bench_a above), opened (and the --param glob
 * matched) before the peak pass and before any line on stdout, so a bad
 * operand costs no measuring and leaves no partial table (red-team E8, E24). */
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

static size_t n_gguf_objects;
static void count_gguf(const nf_object *o, const nf_tensor_enc *t)
{
    (void)o;
    n_gguf_objects += nf_format_is_gguf(t->format);
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
    if (!strcmp(opt.op, "encode")) {
        each_object(nf_artifact_catalog(bench_a), count_gguf);
        if (n_gguf_objects) {
            fprintf(stderr, "%s: unsupported: %zu of the objects hold GGUF tensors' bytes; the "
                            "toolkit does not encode into gguf_* formats\n",
                    nf_prog, n_gguf_objects);
            nf_artifact_close(bench_a);
            bench_a = NULL;
            nf_diags_free(&bench_d);
            return NF_EXIT_UNSUPPORTED;
        }
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
        int e;
        if (!strcmp(opt.device, "cuda"))
            e = bench_device(o->id, &t, obj);
        else
            e = bench_one(o->id, &t, obj, src);
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

/* ---- the options --------------------------------------------------------------------- */

/* Append the comma-separated items of arg to list (at most cap). */
static int split_list(char *arg, char **list, unsigned *n, unsigned cap, const char *what)
{
    for (char *save = NULL, *tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap)
            return nf_usage_error("too many --%s values (at most %u)", what, cap);
        list[(*n)++] = tok;
    }
    return 0;
}

#define MAX_LIST 64

int main(int argc, char **argv)
{
    enum { O_FORMAT = 256, O_LAYOUT, O_SHAPE, O_OP, O_DEVICE, O_ITERS, O_WARMUP, O_THREADS,
           O_JSON, O_CSV, O_PARAM, O_DIV, O_VERSION, O_ACT, O_LLC, O_MAXJ, O_HOT, O_ROT };
    static const struct option lo[] = {
        {"format", required_argument, 0, O_FORMAT}, {"layout", required_argument, 0, O_LAYOUT},
        {"shape", required_argument, 0, O_SHAPE},   {"op", required_argument, 0, O_OP},
        {"device", required_argument, 0, O_DEVICE}, {"iters", required_argument, 0, O_ITERS},
        {"warmup", required_argument, 0, O_WARMUP}, {"threads", required_argument, 0, O_THREADS},
        {"json", no_argument, 0, O_JSON},           {"csv", no_argument, 0, O_CSV},
        {"param", required_argument, 0, O_PARAM},   {"divisors", required_argument, 0, O_DIV},
        {"activation", required_argument, 0, O_ACT}, {"llc-bytes", required_argument, 0, O_LLC},
        {"help", no_argument, 0, 'h'},              {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {"max-json-bytes", required_argument, 0, O_MAXJ}, {"hot", no_argument, 0, O_HOT},
        {"rotate-bytes", required_argument, 0, O_ROT},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-bench";
    char *fmts[MAX_LIST], *shapes[MAX_LIST];
    unsigned nfmt = 0, nshape = 0;
    const char *lay = NULL, *llc = getenv("NF_BENCH_LLC_BYTES"), *rot = getenv("NF_BENCH_ROTATE_BYTES");
    uint64_t div = 1, v;
    bool act_set = false;
    int c, e;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_FORMAT:
            if ((e = split_list(optarg, fmts, &nfmt, MAX_LIST, "format")))
                return e;
            break;
        case O_LAYOUT: lay = optarg; break;
        case O_SHAPE:
            if ((e = split_list(optarg, shapes, &nshape, MAX_LIST, "shape")))
                return e;
            break;
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
        case O_ROT: rot = optarg; break;
        case O_HOT: opt.hot = true; break;
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
    opt.rotate = 256ull << 20;
    if (rot) {
        const char *why = nf_size_parse(rot, &opt.rotate);
        if (!why && (opt.rotate == 0 || opt.rotate > (64ull << 30)))
            why = "not 1 to 64G";
        if (why)
            return nf_usage_error("bad --rotate-bytes (or NF_BENCH_ROTATE_BYTES) '%s': %s", rot, why);
    }
    if (act_set && strcmp(opt.op, "gemv"))
        return nf_usage_error("--activation applies to --op gemv only");
    if (act_set && opt.act == NF_ACT_A8 && !strcmp(opt.device, "cuda"))
        return nf_usage_error("--activation a8 runs on the CPU only");
    if (opt.hot && !strcmp(opt.device, "cuda"))
        return nf_usage_error("--hot applies to the CPU");
    bool artifact = optind < argc;
    if (artifact == (nfmt > 0) || (artifact && optind + 1 != argc))
        return nf_usage_error("give either --format/--shape or one ARTIFACT");
    if (artifact && !strcmp(argv[optind], "-"))
        return nf_usage_error("ninfer-bench times objects read from an artifact's files, not a "
                              "stream ('-')");
    if (artifact && nshape)
        return nf_usage_error("--shape is for generated weights, not an ARTIFACT");
    /* every generated case, checked before anything is measured or printed */
    gcase *cases = NULL;
    unsigned ncase = 0;
    int pre = 0;
    if (!artifact) {
        if (!nshape)
            return nf_usage_error("--shape is NxK");
        nf_format fl[NF_FMT_COUNT_ * MAX_LIST];
        bool from_all[NF_FMT_COUNT_ * MAX_LIST];
        unsigned nf = 0;
        for (unsigned i = 0; i < nfmt; i++) {
            if (!strcmp(fmts[i], "all")) {
                if (lay)
                    return nf_usage_error("--format all takes each format's default layout: no --layout");
                for (int f = 0; f < NF_FMT_COUNT_; f++) {
                    from_all[nf] = true;
                    fl[nf++] = (nf_format)f;
                }
                continue;
            }
            nf_format f = nf_format_from_name(fmts[i], strlen(fmts[i]));
            if (f == NF_FMT_UNKNOWN)
                return nf_usage_error("unknown format '%s'", fmts[i]);
            from_all[nf] = false;
            fl[nf++] = f;
        }
        nf_layout l = NF_LAY_UNKNOWN;
        if (lay && (l = nf_layout_from_name(lay, strlen(lay))) == NF_LAY_UNKNOWN)
            return nf_usage_error("unknown layout '%s'", lay);
        uint64_t Ns[MAX_LIST], Ks[MAX_LIST];
        for (unsigned i = 0; i < nshape; i++) {
            char *xp = strchr(shapes[i], 'x');
            if (!xp)
                return nf_usage_error("--shape is NxK");
            *xp = 0;
            if (!nf_parse_u64(shapes[i], &Ns[i]) || !nf_parse_u64(xp + 1, &Ks[i]) || !Ns[i] || !Ks[i] ||
                Ns[i] > (1u << 24) || Ks[i] > (1u << 24) || Ns[i] * Ks[i] > (1ull << 32))
                return nf_usage_error("bad --shape (N, K >= 1, N*K <= 2^32)");
        }
        cases = calloc((size_t)nf * nshape, sizeof *cases);
        if (!cases)
            return NF_EXIT_IO;
        bool enc = !strcmp(opt.op, "encode");
        for (unsigned si = 0; si < nshape && !pre; si++)
            for (unsigned fi = 0; fi < nf && !pre; fi++) {
                nf_format f = fl[fi];
                nf_layout li = lay ? l : nf_format_default_layout(f);
                uint64_t dims[2] = {Ns[si], Ks[si]}, dv = f == NF_FMT_NVFP4 ? div : 1;
                nf_encoding encd;
                const char *why = NULL;
                if (enc && nf_format_is_gguf(f)) {
                    if (from_all[fi]) {
                        fprintf(stderr, "%s: %s: skipped: the toolkit does not encode into gguf_* formats\n",
                                nf_prog, nf_format_name(f));
                        continue;
                    }
                    fprintf(stderr, "%s: unsupported: %s holds a GGUF tensor's bytes; the toolkit does "
                                    "not encode into it\n", nf_prog, nf_format_name(f));
                    pre = NF_EXIT_UNSUPPORTED;
                    continue;
                }
                if (nf_encoding_compute(f, li, dims, 2, dv, &encd, &why) != NF_ENC_OK) {
                    if (from_all[fi]) {
                        fprintf(stderr, "%s: %s: skipped: %s/%s cannot hold %llux%llu: %s\n", nf_prog,
                                nf_format_name(f), nf_format_name(f), nf_layout_name(li),
                                (unsigned long long)Ns[si], (unsigned long long)Ks[si],
                                why ? why : "not allowed");
                        continue;
                    }
                    fprintf(stderr, "%s: encoding: %s/%s cannot hold %llux%llu: %s\n", nf_prog,
                            nf_format_name(f), nf_layout_name(li), (unsigned long long)Ns[si],
                            (unsigned long long)Ks[si], why ? why : "not allowed");
                    pre = NF_EXIT_RULE;
                    continue;
                }
                cases[ncase++] = (gcase){f, li, Ns[si], Ks[si], dv};
            }
        if (pre) {
            free(cases);
            return pre;
        }
    } else if (nfmt || lay) {
        return nf_usage_error("give either --format/--shape or one ARTIFACT");
    } else {
        int ea = open_artifact(argv[optind]);
        if (ea)
            return ea;
        g_artifact = true;
    }
    if (!strcmp(opt.device, "cuda")) {
        nf_diags d = NF_DIAGS_INIT;
        int ed = nf_device_init(&d);
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
        if (ed) {
            free(cases);
            if (bench_a)
                nf_artifact_close(bench_a), nf_diags_free(&bench_d);
            return ed;
        }
    } else {
        if (!opt.llc)
            opt.llc = nf_llc_bytes();
        int ea = arena_init();
        if (ea) {
            free(cases);
            return ea;
        }
    }
    if (!strcmp(opt.device, "cuda")) {
        device_header(); /* each case measures its own peaks (bench_device) */
    } else {
        if (opt.out == 0)
            printf("# peak: CPU read-only passes over the %llu MiB rotation buffer (>= 4x the %llu KiB "
                   "last-level cache), %u threads, just before and after each case%s\n",
                   (unsigned long long)(arena.bytes >> 20), (unsigned long long)(opt.llc >> 10),
                   opt.threads ? opt.threads : nf_cpu_count(), opt.hot ? "; weights hot (in cache)" : "");
        print_header();
    }
    int ex = 0;
    if (artifact) {
        ex = bench_artifact();
    } else {
        for (unsigned i = 0; i < ncase; i++)
            ex = nf_exit_combine(ex, bench_generated(&cases[i]));
    }
    free(cases);
    free(arena.p);
    if (any_fail)
        ex = nf_exit_combine(ex, NF_EXIT_RULE);
    return nf_stdout_close(ex);
}
