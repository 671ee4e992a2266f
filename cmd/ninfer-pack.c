/* ninfer-pack — build an artifact from a manifest. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    "  --report                print per transcoded object: elements, RMSE, max abs error\n"
    "                          and SNR (dB) against the source (tab-separated)\n"
    "  --allow-nonfinite       keep NaN/Inf source values in bf16/fp32 objects\n"
    "  --threads N             encoding threads (default: all CPUs)\n"
    "  --max-json-bytes N      refuse manifests larger than N (default 256M)\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the manifest breaks a rule, 2 usage, 3 I/O error,\n"
    "4 unsupported (an unknown format, a quantized GGUF tensor).\n";

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
    nf_pack_opts po = {&wc, false, false, 0};
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
            if (!nf_parse_size(optarg, &v) || v == 0)
                return nf_usage_error("bad --max-json-bytes '%s'", optarg);
            maxj = v;
            wc.max_json_bytes = v;
            break;
        case O_REPORT: po.report = true; break;
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
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    if (!f) {
        nf_diag_add(&d, NF_C_IO, "", "cannot open: %s", strerror(errno));
    } else {
        for (;;) {
            if (len == cap) {
                size_t nc = cap ? cap * 2 : 65536;
                char *nt = len < maxj ? realloc(text, nc) : NULL;
                if (!nt) {
                    nf_diag_add(&d, len >= maxj ? NF_C_HEADER : NF_C_IO, "",
                                len >= maxj ? "manifest is larger than %llu bytes (--max-json-bytes)"
                                            : "out of memory (%llu)",
                                (unsigned long long)maxj);
                    break;
                }
                text = nt;
                cap = nc;
            }
            size_t k = fread(text + len, 1, cap - len, f);
            len += k;
            if (k == 0)
                break;
            /* an artifact or a GGUF given as the manifest: say what it is
             * at once, before reading up to the cap of it */
            const char *hint = len >= 9 ? nf_not_manifest_hint(text, len) : NULL;
            if (hint) {
                nf_diag_add(&d, NF_C_JSON, "", "not JSON: %s", hint);
                break;
            }
        }
        if (ferror(f))
            nf_diag_add(&d, NF_C_IO, "", "read error");
        if (f != stdin)
            fclose(f);
    }
    if (!nf_diags_exit(&d) && len > maxj)
        nf_diag_add(&d, NF_C_HEADER, "", "manifest is larger than %llu bytes (--max-json-bytes)",
                    (unsigned long long)maxj);
    /* the manifest is an input too: -o naming it is refused before anything
     * is written (DESIGN 3), as the writer refuses -o naming a source */
    struct stat sm, so;
    bool in_stdin = strcmp(path, "-") == 0;
    if (!nf_diags_exit(&d) && wc.out && strcmp(wc.out, "-") != 0 &&
        (in_stdin ? fstat(0, &sm) : stat(path, &sm)) == 0 && stat(wc.out, &so) == 0 &&
        sm.st_dev == so.st_dev && sm.st_ino == so.st_ino)
        nf_diag_addf(&d, NF_C_USAGE, wc.out, "", "output names an input file (%s); refusing to write",
                     in_stdin ? "standard input" : path);
    const char *manifest[1] = {path};
    if (!nf_diags_exit(&d) && (!wc.out || strcmp(wc.out, "-") == 0) && !wc.dry_run)
        nf_stdout_check(manifest, 1, &d);
    if (!nf_diags_exit(&d)) {
        char *base = strcmp(path, "-") == 0 ? strdup(".") : nf_dirname_dup(path);
        nf_pack_owned(text, len, base ? base : ".", &po, &d);
        text = NULL; /* the packer took it */
        free(base);
    }
    free(text);
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
