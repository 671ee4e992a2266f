/* ninfer-fetch — download an artifact from its URL, every object proven as
 * it arrives; resumable; published at once. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_cli.h"
#include "nf_fetch.h"
#include "nf_util.h"

static const char usage[] =
    "usage: ninfer-fetch [OPTIONS] URL -o PATH\n"
    "Download the NInfer v3 artifact at URL (http:// or https://) to PATH, its\n"
    "entry, with its parts beside it: every object's SHA-256 is checked as its\n"
    "bytes arrive, an interrupted run resumes (.PATH.ninfer-fetch/ beside it), and\n"
    "the set is published at once, parts then entry, only when all of it verifies.\n"
    "\n"
    "  -o, --output PATH        the entry file to write\n"
    "  --component C[,C...]     only the files these components need (as\n"
    "                           ninfer-cat --files --component lists them)\n"
    "  --no-resume              start over, whatever an earlier run left\n"
    "  --require-digests        refuse an artifact without object digests\n"
    "  --sums FILE              write '<sha256>  <file>' lines of the files to FILE\n"
    "  --force                  replace an existing entry (its surplus parts go)\n"
    "  --no-sync                do not fdatasync files before publishing them\n"
    "  --json                   a JSON summary on stdout\n"
    "  --max-json-bytes N       refuse catalogs larger than N (default 256M)\n"
    "  --progress / -q, --quiet  force / silence the progress line\n"
    "  -h, --help               this text\n"
    "      --version            print the version\n";

static const char usage_tail[] =
    "\n"
    "Exit status: 0 fetched and verified, 1 the artifact breaks a rule (a digest,\n"
    "a header, a length), 2 usage, 3 I/O error (network, disk, the resume\n"
    "directory), 4 unsupported.\n";

static struct {
    const char *out, *component, *sums;
    bool json, no_resume, require, force, nosync;
    int progress;
    nf_open_opts open;
} opt;

typedef struct {
    bool on;
    double t0, last;
} progress_line;

/* bytes, total, rate, ETA and retries, about four times a second */
static void show(void *ctx, uint64_t done, uint64_t total)
{
    progress_line *p = ctx;
    double t = nf_now();
    if (!p->on || (t - p->last < 0.25 && done < total))
        return;
    p->last = t;
    double rate = t > p->t0 ? (double)done / (t - p->t0) : 0;
    nf_http_stats st;
    nf_remote_stats(&st);
    char a[32], b[32], r[32];
    fprintf(stderr, "\r%s: %s / %s, %s/s, ETA %.0fs, %llu retries   ", nf_prog,
            nf_human_bytes(done, a), nf_human_bytes(total, b), nf_human_bytes((uint64_t)rate, r),
            rate > 0 ? (double)(total - done) / rate : 0, (unsigned long long)st.retries);
}

/* SHA256SUMS lines as sha256sum writes them (a name with '\', '\n' or '\r'
 * escaped after a leading '\'). */
static char *sums_text(const nf_fetch_result *r, size_t *len)
{
    nf_text t = {0};
    for (size_t i = 0; i < r->n; i++) {
        const char *nm = r->names[i];
        bool esc = strpbrk(nm, "\\\n\r") != NULL;
        if (esc)
            nf_text_puts(&t, "\\");
        nf_text_puts(&t, r->sha[i]);
        nf_text_puts(&t, "  ");
        for (const char *c = nm; *c; c++) {
            if (esc && (*c == '\\' || *c == '\n' || *c == '\r'))
                nf_text_puts(&t, *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : "\\r");
            else
                nf_text_put(&t, c, 1);
        }
        nf_text_puts(&t, "\n");
    }
    return nf_text_take(&t, len);
}

static int fetch(const char *url)
{
    nf_diags d = NF_DIAGS_INIT;
    d.file = nf_display_name(url);
    double t0 = nf_now();
    nf_fetch_result r = {0};
    nf_operand op = {0};
    if (opt.sums)
        nf_output_file_check(opt.sums, opt.force, NULL, 0, &d);
    if (!d.n && nf_operand_open(&op, url, &opt.open, &d) == 0 && !nf_diags_exit(&d)) {
        progress_line pl = {opt.progress > 0 || (opt.progress == 0 && isatty(2)), t0, 0};
        nf_fetch_opts fo = {0};
        fo.component = opt.component;
        fo.no_resume = opt.no_resume;
        fo.require_digests = opt.require;
        fo.file_digests = opt.sums != NULL;
        fo.w.force = opt.force;
        fo.w.sync = !opt.nosync;
        fo.w.warn = opt.progress < 0 ? NULL : nf_cli_warn;
        fo.progress = show;
        fo.progress_ctx = &pl;
        int rc = nf_fetch(op.a, opt.out, &fo, &r, &d);
        if (pl.on && nf_now() - t0 > 0.25)
            fputc('\n', stderr);
        if (rc == 0 && opt.sums) {
            size_t n = 0;
            char *t = sums_text(&r, &n);
            if (!t)
                nf_diag_add(&d, NF_C_IO, "", "out of memory");
            else
                nf_write_file(opt.sums, t, n, opt.force, NULL, 0, &d);
            free(t);
        }
    }
    nf_operand_close(&op);
    int ex = nf_diags_exit(&d);
    if (opt.json) {
        nf_http_stats st;
        nf_remote_stats(&st);
        nf_jval *rec = nf_jnew_object();
        nf_jobj_set(rec, "file", nf_jnew_string(nf_display_name(url)));
        nf_jobj_set(rec, "output", nf_jnew_string(opt.out));
        nf_jobj_set(rec, "exit", nf_jnew_i64(ex));
        nf_jobj_set(rec, "files", nf_jnew_u64(r.files));
        nf_jobj_set(rec, "bytes", nf_jnew_u64(r.bytes));
        nf_jobj_set(rec, "resumed_bytes", nf_jnew_u64(r.resumed));
        nf_jobj_set(rec, "total_bytes", nf_jnew_u64(r.total));
        nf_jobj_set(rec, "requests", nf_jnew_u64(st.requests));
        nf_jobj_set(rec, "retries", nf_jnew_u64(st.retries));
        nf_jobj_set(rec, "redirects", nf_jnew_u64(st.redirects));
        nf_jobj_set(rec, "digests_checked", nf_jnew_u64(r.digests_checked));
        nf_jobj_set(rec, "seconds", nf_jnew_double(nf_now() - t0));
        nf_jobj_set(rec, "diagnostics", nf_diags_json(&d));
        nf_print_json_line(rec);
        nf_jval_free(rec);
    } else {
        nf_diags_print(&d, nf_prog, stderr);
    }
    nf_fetch_result_free(&r);
    nf_diags_free(&d);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_COMPONENT = 256, O_NORESUME, O_REQUIRE, O_SUMS, O_FORCE, O_NOSYNC, O_JSON, O_MAXJ,
           O_PROG, O_VERSION };
    static const struct option lo[] = {
        {"output", required_argument, 0, 'o'},
        {"component", required_argument, 0, O_COMPONENT},
        {"no-resume", no_argument, 0, O_NORESUME},
        {"require-digests", no_argument, 0, O_REQUIRE},
        {"sums", required_argument, 0, O_SUMS},
        {"force", no_argument, 0, O_FORCE},
        {"no-sync", no_argument, 0, O_NOSYNC},
        {"json", no_argument, 0, O_JSON},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"progress", no_argument, 0, O_PROG},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-fetch";
    opt.open.check_fill = true;
    int c;
    uint64_t v;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "o:qh", lo, NULL)) != -1) {
        switch (c) {
        case 'o': opt.out = optarg; break;
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            opt.component = optarg;
            break;
        case O_NORESUME: opt.no_resume = true; break;
        case O_REQUIRE: opt.require = true; break;
        case O_SUMS: opt.sums = optarg; break;
        case O_FORCE: opt.force = true; break;
        case O_NOSYNC: opt.nosync = true; break;
        case O_JSON: opt.json = true; break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            opt.open.max_json_bytes = v;
            break;
        case O_PROG: opt.progress = 1; break;
        case 'q': opt.progress = -1; break;
        case 'h':
            fputs(usage, stdout);
            fputs(nf_remote_usage, stdout);
            fputs(usage_tail, stdout); /* (its remote options are part of the command) */
            return nf_stdout_close(0);
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
        return nf_usage_error(optind >= argc ? "no URL given" : "one URL at a time");
    if (!nf_is_url(argv[optind]))
        return nf_usage_error("'%s' is no http:// or https:// URL (ninfer-split copies a "
                              "local artifact)", argv[optind]);
    if (!opt.out)
        return nf_usage_error("-o PATH names the entry to write");
    if (!strcmp(opt.out, "-"))
        return nf_usage_error("ninfer-fetch writes files (a stream: ninfer-cat URL)");
    return nf_stdout_close(fetch(argv[optind]));
}
