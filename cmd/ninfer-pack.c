/* ninfer-pack — build an artifact from a manifest. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_cli.h"
#include "nf_pack.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-pack [OPTIONS] -o OUT MANIFEST|-\n"
    "Build an NInfer v3 artifact from a manifest (the catalog JSON with `source`\n"
    "on each object, offsets, bytes and files optional; see ninfer-pack(1)).\n"
    "Objects are laid out in array order and their SHA-256 digests written to\n"
    "metadata.integrity. Relative source paths are relative to MANIFEST's\n"
    "directory (the working directory for '-').\n"
    "\n"
    "%s"
    "  --report                print per transcoded object: elements, RMSE, max abs\n"
    "                          error, SNR (dB) against the source, and the scales\n"
    "                          that saturated or were zeroed (tab-separated)\n"
    "  --allow-nonfinite       keep NaN/Inf source values in bf16/fp32 objects\n"
    "  --threads N             encoding threads, 1..16 (default: all CPUs, at most\n"
    "                          16; the bytes written do not depend on it)\n"
    "  --max-json-bytes N      refuse manifests larger than N (default 256M)\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the manifest breaks a rule, 2 usage, 3 I/O error,\n"
    "4 unsupported (an unknown format, a quantized GGUF tensor).\n";

/* --report's table (when f): a header, then one tab-separated line per
 * transcoded object (nf_pack_report); and, with or without it, a warning on
 * stderr for an object whose scales saturated or were zeroed (DESIGN 7.4:
 * a user without --report must learn that those weights are lost;
 * red-team E18). */
typedef struct {
    FILE *f;
    const char *manifest;
} report_out;

static void print_report(void *ctx, const nf_pack_report *r)
{
    report_out *ro = ctx;
    nf_progress_break();
    if (!r) {
        if (ro->f)
            fprintf(ro->f, "object\tformat\telements\trmse\tmax_abs_error\tsnr_db\t"
                           "scales_saturated\tscales_zeroed\n");
        return;
    }
    if (ro->f) {
        /* an ID with a tab or an escape splits no column, drives no terminal */
        nf_fput_field(r->id, 0, ro->f);
        fputc('\t', ro->f);
        nf_fput_field(r->format, 0, ro->f);
        fprintf(ro->f, "\t%llu\t%.9g\t%.9g\t%.3f\t%llu\t%llu\n", (unsigned long long)r->elements,
                r->rmse, r->max_abs_error, r->snr_db, (unsigned long long)r->scales_saturated,
                (unsigned long long)r->scales_zeroed);
    }
    if (r->scales_saturated || r->scales_zeroed) {
        fprintf(stderr, "%s: ", nf_prog);
        nf_fput_text(ro->manifest, stderr);
        fputs(": warning: object \"", stderr);
        nf_fput_text(r->id, stderr);
        fprintf(stderr,
                "\" (%s): of %llu scales, %llu saturated (their values clamped) and %llu "
                "zeroed (their values decode to 0); snr %.3f dB\n",
                r->format, (unsigned long long)r->scales, (unsigned long long)r->scales_saturated,
                (unsigned long long)r->scales_zeroed, r->snr_db);
    }
}

int main(int argc, char **argv)
{
    enum { O_MAXJ = 256, O_VERSION, O_REPORT, O_NONFINITE, O_THREADS };
    static const struct option lo[] = {
        NF_WRITER_LONGOPTS,
        {"report", no_argument, 0, O_REPORT},
        {"allow-nonfinite", no_argument, 0, O_NONFINITE},
        {"threads", required_argument, 0, O_THREADS},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-pack";
    nf_writer_cli wc;
    nf_writer_cli_init(&wc);
    nf_pack_opts po = {0};
    bool report = false;
    uint64_t maxj = 256ull << 20, v;
    int c, r;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        if ((r = nf_writer_cli_opt(&wc, c, optarg)) != 0) {
            if (r != 1)
                return r;
            continue;
        }
        switch (c) {
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            maxj = v;
            wc.max_json_bytes = v;
            break;
        case O_REPORT: report = true; break;
        case O_NONFINITE: po.allow_nonfinite = true; break;
        case O_THREADS:
            if (!nf_parse_u64(optarg, &v) || v == 0 || v > 16)
                return nf_usage_error("bad --threads '%s' (1..16)", optarg);
            po.threads = (unsigned)v;
            break;
        case 'h': printf(usage, nf_writer_usage); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: return nf_bad_option(argc, argv, lo);
        }
    }
    if (optind + 1 != argc)
        return nf_usage_error(optind >= argc ? "no manifest given" : "one manifest at a time");
    if ((r = nf_writer_cli_check(&wc)) != 0)
        return r;
    const char *path = argv[optind];
    nf_diags d = NF_DIAGS_INIT;
    d.file = path;
    /* read the manifest, refusing more than the cap before allocating it */
    char *text = NULL;
    size_t len = 0;
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        nf_diag_add(&d, NF_C_IO, "", "cannot open: %s", strerror(errno));
    } else {
        int rc = nf_read_all(fd, maxj, &text, &len);
        if (fd > 0)
            close(fd);
        /* an artifact or a GGUF given as the manifest: say what it is */
        const char *hint = text && len >= 9 ? nf_not_manifest_hint(text, len) : NULL;
        if (hint && (rc == 0 || rc == -EFBIG))
            nf_diag_add(&d, NF_C_JSON, "", "not JSON: %s", hint);
        else if (rc == -EFBIG)
            nf_diag_add(&d, NF_C_HEADER, "", "manifest is larger than %llu bytes (--max-json-bytes)",
                        (unsigned long long)maxj);
        else if (rc == -EISDIR)
            nf_diag_add(&d, NF_C_IO, "", "is a directory, not a manifest (a checkpoint? "
                        "ninfer-import makes its manifest)");
        else if (rc < 0)
            nf_diag_add(&d, NF_C_IO, "", rc == -ENOMEM ? "out of memory" : "read error: %s",
                        strerror(-rc));
    }
    /* the manifest is an input too: -o naming it is refused before anything
     * is written (DESIGN 3), as the writer refuses -o naming a source */
    struct stat sm, so;
    bool in_stdin = strcmp(path, "-") == 0;
    if (!nf_diags_exit(&d) && wc.out && strcmp(wc.out, "-") != 0 &&
        (in_stdin ? fstat(0, &sm) : stat(path, &sm)) == 0 && stat(wc.out, &so) == 0 &&
        sm.st_dev == so.st_dev && sm.st_ino == so.st_ino)
        nf_diag_addf(&d, NF_C_USAGE, wc.out, "", "output names an input file (%s); refusing to write",
                     in_stdin ? "standard input" : path);
    /* standard output carries the stream, the plan or the report: not
     * onto the manifest (the packer checks the sources) */
    const char *manifest[1] = {path};
    bool stream = !wc.out || strcmp(wc.out, "-") == 0;
    if (!nf_diags_exit(&d) && (stream || wc.dry_run || report))
        nf_stdout_check(manifest, 1, &d);
    if (!nf_diags_exit(&d)) {
        char *base = strcmp(path, "-") == 0 ? strdup(".") : nf_dirname_dup(path);
        nf_progress pr;
        nf_plan plan;
        nf_writer_cli_out(&wc, &po.out, &pr, "packing", &plan);
        /* --report: to stdout, or stderr when the artifact goes to stdout */
        FILE *rf = stream ? stderr : stdout;
        po.out.text_stdout = wc.dry_run || (report && !stream);
        report_out ro = {report ? rf : NULL, path};
        po.report = print_report; /* the warnings come through it too */
        po.report_ctx = &ro;
        po.max_abs_error = report;
        int rc = nf_pack_owned(text, len, base ? base : ".", &po, &d);
        text = NULL; /* the packer took it */
        nf_progress_done(&pr);
        if (report)
            fflush(rf);
        if (rc == 0 && wc.dry_run)
            nf_print_plan(&plan, &d);
        nf_plan_free(&plan);
        free(base);
    }
    free(text);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
