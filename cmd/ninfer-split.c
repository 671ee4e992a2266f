/* ninfer-split — reshard an artifact (or merge it into one file). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_split.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-split [OPTIONS] -o OUT ARTIFACT|-\n"
    "Write ARTIFACT (or a stream on stdin, optionally zstd-compressed) anew with a\n"
    "new file-size limit: an entry and continuation parts, or one file (merge).\n"
    "Objects, bindings, uses and digests are kept; the files table and the\n"
    "artifact_id are new.\n"
    "\n"
    "%s"
    "  --verify                hash every object while copying and check the\n"
    "                          carried digests (files are otherwise copied in the\n"
    "                          kernel without reading them)\n"
    "  --max-json-bytes N      refuse input catalogs larger than N (default 256M)\n"
    "  -h, --help              this text\n"
    "      --version           print the version\n"
    "\n"
    "Exit status: 0 ok, 1 the input breaks a rule, 2 usage, 3 I/O error,\n"
    "4 unsupported.\n";

int main(int argc, char **argv)
{
    enum { O_VERIFY = 256, O_MAXJ, O_VERSION };
    static const struct option lo[] = {
        NF_WRITER_LONGOPTS,
        {"verify", no_argument, 0, O_VERIFY},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-split";
    nf_writer_cli wc;
    nf_writer_cli_init(&wc);
    nf_open_opts oo = {0};
    int c, r;
    uint64_t v;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        if ((r = nf_writer_cli_opt(&wc, c, optarg)) != 0) {
            if (r != 1)
                return r;
            continue;
        }
        switch (c) {
        case O_VERIFY: wc.verify = true; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            oo.max_json_bytes = v;
            wc.max_json_bytes = v;
            break;
        case 'h': {
            char *u = NULL;
            if (asprintf(&u, usage, nf_writer_usage) >= 0)
                nf_help_print(u);
            free(u);
            return nf_stdout_close(0);
        }
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
    if ((r = nf_writer_cli_check(&wc)) != 0)
        return r;
    const char *path = argv[optind];
    nf_diags d = NF_DIAGS_INIT;
    d.file = nf_display_name(path);
    nf_operand op;
    if (nf_operand_open(&op, path, &oo, &d) == 0) {
        if (nf_diags_exit(&d) == 0) {
            nf_out_opts o;
            nf_progress pr;
            nf_plan plan;
            nf_writer_cli_out(&wc, &o, &pr, "copying", &plan);
            o.text_stdout = wc.dry_run; /* the plan goes to standard output */
            d.file = wc.out ? wc.out : "-";
            if (nf_split(op.a, &o, &d) == 0 && wc.dry_run)
                nf_print_plan(&plan, &d);
            nf_progress_done(&pr);
            nf_plan_free(&plan);
        }
        nf_operand_close(&op);
    }
    nf_diags_print(&d, nf_prog, stderr);
    int ex = nf_diags_exit(&d);
    nf_diags_free(&d);
    return nf_stdout_close(ex);
}
