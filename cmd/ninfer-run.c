/* ninfer-run — materialize components as an engine would and run every projection. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nf_cli.h"
#include "nf_device.h"
#include "nf_run.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-run [OPTIONS] ARTIFACT|-\n"
    "The engine's load path, made observable: select components, read each parent\n"
    "object they reference once (every other object stays unread), build the row\n"
    "views, and run every use's projection y = W x with the kernel for its\n"
    "format/layout (A16: x in bf16, f32 accumulation; A8 on the CPU for uses whose\n"
    "activation_policy allows it: x quantized to int8 per block of 16), checked\n"
    "against the CPU reference on the same activations within the f32\n"
    "dot-product bound K*2^-24*sum|w*x| per row.\n"
    "\n"
    "  --device cpu|cuda     host backing and CPU kernels, or device memory and CUDA\n"
    "                        kernels (default: cuda when built with CUDA, a GPU is\n"
    "                        present and ARTIFACT is a file, else cpu; said on\n"
    "                        stderr)\n"
    "  --component C,...     components to run (default text; mtp brings its target)\n"
    "  --input FILE          little-endian bf16 activations: the first K values are\n"
    "                        read (K the largest; fewer, or a NaN/Inf, is a usage\n"
    "                        error)\n"
    "  --iters N             timed runs per projection after an untimed warm-up,\n"
    "                        median reported (default 5)\n"
    "  --threads N           CPU threads, 1..64 (default: all CPUs)\n"
    "  --activation policy|a16  A8 for AllowA8/AllowA4 uses on the CPU (policy, the\n"
    "                        default), or every use on A16\n"
    "  --no-digests          skip the check of each parent's SHA-256 against the\n"
    "                        catalog's metadata.integrity as it is read\n"
    "  --json                one JSON report on stdout (also when the run fails)\n"
    "  --max-json-bytes N    refuse catalogs larger than N (default 256M)\n"
    "'-' reads a stream (optionally zstd-compressed) from standard input, CPU only.\n"
    "  -h, --help, --version\n"
    "\n"
    "Exit status: 0 every check passed, 1 a rule is broken (a digest mismatch) or a\n"
    "result is outside its bound, 2 usage, 3 I/O error, 4 unsupported (no device,\n"
    "no kernel).\n";

/* one figure of a use record: "-" when the run left none (a kernel that
 * failed), else the value; a null figure of a use that ran is the NaN
 * (max_rel) or infinity (err/bound) JSON cannot hold */
static const char *fig(nf_jval *u, const char *name, const char *fmt, const char *nonfinite,
                       char *buf, size_t n)
{
    nf_jval *v = nf_jobj_get(u, name);
    if (v)
        snprintf(buf, n, fmt, nf_jdouble(v));
    else
        snprintf(buf, n, "%s", nf_jobj_get(u, "rows_failed") ? nonfinite : "-");
    return buf;
}

/* The report as text: a summary, then one line per use. */
static void print_text(nf_jval *rep)
{
    char b1[32];
    nf_jval *comps = nf_jobj_get(rep, "components"), *uses = nf_jobj_get(rep, "uses");
    printf("device %s, components", nf_jstr(nf_jobj_get(rep, "device"), NULL));
    for (size_t i = 0; i < nf_jarr_len(comps); i++) {
        putchar(' '); /* IDs and names escaped: a table line per use, nothing raw */
        nf_fput_field(nf_jstr(nf_jarr_get(comps, i), NULL), 0, stdout);
    }
    printf("\nloaded %u parents, %s in %.3f s (%.2f GB/s), ",
           (unsigned)nf_jdouble(nf_jobj_get(rep, "parents_loaded")),
           nf_human_bytes((uint64_t)nf_jdouble(nf_jobj_get(rep, "bytes_read")), b1),
           nf_jdouble(nf_jobj_get(rep, "load_s")), nf_jdouble(nf_jobj_get(rep, "load_gbps")));
    const char *dg = nf_jstr(nf_jobj_get(rep, "digests"), NULL);
    if (dg && !strcmp(dg, "skipped"))
        printf("digests not checked (--no-digests)");
    else
        printf("%llu digests checked", (unsigned long long)nf_jdouble(nf_jobj_get(rep, "digests_checked")));
    if (nf_jdouble(nf_jobj_get(rep, "digests_absent")) > 0)
        printf(" (%llu parents have none)",
               (unsigned long long)nf_jdouble(nf_jobj_get(rep, "digests_absent")));
    printf("; %zu objects left unread\n", nf_jarr_len(nf_jobj_get(rep, "objects_unread")));
    printf("%-52s %-20s %-3s %7s %7s %9s %8s %10s %9s  %s\n", "parameter", "format", "act", "rows",
           "K", "time_ms", "GB/s", "max_rel", "err/bound", "status");
    for (size_t i = 0; i < nf_jarr_len(uses); i++) {
        nf_jval *u = nf_jarr_get(uses, i);
        const char *st = nf_jstr(nf_jobj_get(u, "status"), NULL);
        nf_fput_field(nf_jstr(nf_jobj_get(u, "parameter"), NULL), 52, stdout);
        if (!nf_jobj_has(u, "format")) {
            printf(" %-20s %-3s %7s %7s %9s %8s %10s %9s  %s\n", "-", "-", "-", "-", "-", "-",
                   "-", "-", st);
            continue;
        }
        char t[32], g[32], m[32], q[32], stb[64];
        uint64_t bad = (uint64_t)nf_jdouble(nf_jobj_get(u, "rows_failed"));
        if (bad)
            snprintf(stb, sizeof stb, "%s (%llu rows)", st, (unsigned long long)bad);
        else
            snprintf(stb, sizeof stb, "%s", st);
        putchar(' ');
        nf_fput_field(nf_jstr(nf_jobj_get(u, "format"), NULL), 20, stdout);
        printf(" %-3s %7llu %7llu %9s %8s %10s %9s  %s\n", nf_jstr(nf_jobj_get(u, "activation"), NULL),
               (unsigned long long)nf_jdouble(nf_jobj_get(u, "rows")),
               (unsigned long long)nf_jdouble(nf_jobj_get(u, "k")),
               fig(u, "time_ms", "%.4f", "-", t, sizeof t), fig(u, "gbps", "%.2f", "-", g, sizeof g),
               fig(u, "max_rel_error", "%.3g", "nan", m, sizeof m),
               fig(u, "max_err_over_bound", "%.3g", "inf", q, sizeof q), stb);
    }
}

/* --input: the first n bf16 values of the file (nf_run_opts.read_input);
 * only what the run needs is read, so /dev/zero or a huge file costs n. */
typedef struct {
    FILE *f;
    const char *path;
} input_file;

static int read_input(void *ctx, uint16_t *x, size_t n, nf_diags *d)
{
    input_file *in = ctx;
    size_t got = fread(x, sizeof *x, n, in->f);
    if (got == n)
        return 0;
    if (ferror(in->f))
        nf_diag_addf(d, NF_C_IO, in->path, "", "cannot read: %s", strerror(errno));
    else
        nf_diag_addf(d, NF_C_USAGE, in->path, "",
                     "--input holds %zu bf16 values; the largest projection needs K = %zu", got, n);
    return -1;
}

int main(int argc, char **argv)
{
    enum { O_DEVICE = 256, O_COMPONENT, O_INPUT, O_ITERS, O_THREADS, O_JSON, O_VERSION, O_MAXJ,
           O_ACT, O_NODIG };
    static const struct option lo[] = {
        {"device", required_argument, 0, O_DEVICE}, {"component", required_argument, 0, O_COMPONENT},
        {"input", required_argument, 0, O_INPUT},   {"iters", required_argument, 0, O_ITERS},
        {"threads", required_argument, 0, O_THREADS}, {"json", no_argument, 0, O_JSON},
        {"activation", required_argument, 0, O_ACT}, {"no-digests", no_argument, 0, O_NODIG},
        {"help", no_argument, 0, 'h'},              {"version", no_argument, 0, O_VERSION},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-run";
    nf_open_opts oo = {0};
    nf_run_opts ro = {0};
    const char *device = NULL, *input = NULL;
    bool json = false;
    uint64_t v;
    int c;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case O_DEVICE:
            if (strcmp(optarg, "cpu") && strcmp(optarg, "cuda"))
                return nf_usage_error("--device is cpu or cuda");
            device = optarg;
            break;
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            ro.components = optarg;
            break;
        case O_INPUT: input = optarg; break;
        case O_ITERS:
            if (!nf_parse_u64(optarg, &v) || !v || v > 1000)
                return nf_usage_error("bad --iters '%s' (1..1000)", optarg);
            ro.iters = (unsigned)v;
            break;
        case O_THREADS:
            if (!nf_parse_u64(optarg, &v) || !v || v > 64)
                return nf_usage_error("bad --threads '%s' (1..64)", optarg);
            ro.threads = (unsigned)v;
            break;
        case O_JSON: json = true; break;
        case O_ACT:
            if (strcmp(optarg, "policy") && strcmp(optarg, "a16"))
                return nf_usage_error("--activation is policy or a16");
            ro.a16_only = !strcmp(optarg, "a16");
            break;
        case O_NODIG: ro.no_digests = true; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            oo.max_json_bytes = v;
            break;
        case 'h': nf_help_print(usage); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: {
            int rr = nf_remote_or_bad_option(c, argc, argv, lo);
            if (rr)
                return rr;
            break;
        }
        }
    }
    if (optind + 1 != argc)
        return nf_usage_error(optind >= argc ? "no artifact given" : "one artifact at a time");
    const char *path = argv[optind];
    bool stream = !strcmp(path, "-");
    /* usage before the device probe: a stream is read on the CPU only */
    if (device && !strcmp(device, "cuda") && stream)
        return nf_usage_error("--device cuda reads an artifact file, not a stream");
    if (!device && stream) {
        fprintf(stderr, "%s: running on the CPU (a stream)\n", nf_prog);
    } else if (!device) {
        nf_diags quiet = NF_DIAGS_INIT; /* why not: the line below says it */
        ro.cuda = nf_device_built() && nf_device_init(&quiet) == 0;
        nf_diags_free(&quiet);
        fprintf(stderr, "%s: running on the %s\n", nf_prog,
                ro.cuda ? "CUDA device" : (nf_device_built() ? "CPU (no CUDA device found)"
                                                             : "CPU (built without CUDA)"));
    } else if (!strcmp(device, "cuda")) {
        nf_diags dd = NF_DIAGS_INIT;
        int e = nf_device_init(&dd);
        nf_diags_print(&dd, nf_prog, stderr);
        nf_diags_free(&dd);
        if (e)
            return e;
        ro.cuda = true;
    }
    nf_diags d = NF_DIAGS_INIT;
    d.file = nf_display_name(path);
    input_file inf = {NULL, input};
    if (input) {
        struct stat st;
        inf.f = fopen(input, "rb");
        if (!inf.f)
            nf_diag_addf(&d, NF_C_IO, input, "", "cannot open: %s", strerror(errno));
        else if (fstat(fileno(inf.f), &st) == 0 && S_ISDIR(st.st_mode))
            nf_diag_addf(&d, NF_C_IO, input, "", "cannot read: %s", strerror(EISDIR));
        ro.read_input = read_input;
        ro.read_input_ctx = &inf;
        ro.input_name = input;
    }
    nf_operand op = {0};
    nf_jval *rep = NULL;
    const char *extra[1] = {input};
    int orc = nf_diags_exit(&d) ? -1 : nf_operand_open_out(&op, path, &oo, extra, input ? 1 : 0, &d);
    if (orc == NF_STDOUT_REFUSED) {
        /* standard output is an input: nothing goes there, no record */
        if (inf.f)
            fclose(inf.f);
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
        return nf_stdout_close(NF_EXIT_USAGE);
    }
    if (orc == 0 && !nf_diags_exit(&d))
        nf_run(op.a, &ro, &rep, &d);
    int ex = nf_diags_exit(&d);
    if (json && !rep)
        rep = nf_jnew_object(); /* a failed run still gets its record (DESIGN 3) */
    if (rep && json) {
        nf_jobj_set(rep, "file", nf_jnew_string(path));
        nf_jobj_set(rep, "exit", nf_jnew_i64(ex));
        nf_jobj_set(rep, "diagnostics", nf_diags_json(&d));
        nf_print_json_line(rep);
    } else if (rep) {
        print_text(rep);
    }
    nf_jval_free(rep);
    nf_operand_close(&op);
    if (inf.f)
        fclose(inf.f);
    nf_stdout_flush(&d);
    ex = nf_diags_exit(&d);
    nf_diags_print(&d, nf_prog, stderr);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
