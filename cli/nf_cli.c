/* nf_cli.c — shared command plumbing. */
#include "nf_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "nf_util.h"

#include <stdbool.h>

const char *nf_prog = "ninfer";

/* Every command, before main: a write past RLIMIT_FSIZE (`ulimit -f`) fails
 * with EFBIG, an I/O error reported like a full disk (io, exit 3: standard
 * output's "write error: File too large"), instead of SIGXFSZ ending the
 * process with no word and a partial file (status 153). The writers and
 * the stream output ignore it too (the library's own users). */
__attribute__((constructor)) static void nf_cli_ignore_sigxfsz(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

int nf_usage_error(const char *fmt, ...)
{
    va_list ap;
    char *msg = NULL;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    /* the message quotes the user's words: control characters escaped */
    fprintf(stderr, "%s: usage: ", nf_prog);
    nf_fput_text(msg ? msg : "(out of memory)", stderr);
    fprintf(stderr, " (see '%s --help')\n", nf_prog);
    free(msg);
    return NF_EXIT_USAGE;
}

int nf_bad_option(int argc, char **argv, const struct option *lo)
{
    /* getopt has moved optind past the word it refused */
    const char *w = optind > 0 && optind <= argc ? argv[optind - 1] : "";
    bool is_long = strncmp(w, "--", 2) == 0;
    const struct option *o = lo;
    while (o && o->name && !(optopt && !o->flag && o->val == optopt))
        o++;
    if (optopt && o && o->name) {
        if (o->has_arg == required_argument) {
            if (is_long)
                return nf_usage_error("option '--%s' needs an argument", o->name);
            return nf_usage_error("option '-%c' needs an argument", optopt);
        }
        if (is_long)
            return nf_usage_error("option '--%s' takes no argument", o->name);
    }
    if (!is_long && optopt > ' ' && optopt < 127)
        return nf_usage_error("invalid option '-%c'", optopt);
    return nf_usage_error("unrecognized option '%.*s'", (int)strcspn(w, "="), w);
}

int nf_size_opt(const char *opt, const char *arg, bool zero_ok, uint64_t *out)
{
    uint64_t v = 0;
    const char *why = nf_size_parse(arg, &v);
    if (!why && v == 0 && !zero_ok)
        why = "zero (give a positive size)";
    if (why)
        return nf_usage_error("bad %s '%s': %s", opt, arg, why);
    *out = v;
    return 0;
}

int nf_component_arg_check(const char *arg)
{
    size_t n = strlen(arg);
    if (!n)
        return nf_usage_error("--component '': a component ID is not empty (give C[,C...])");
    if (arg[0] == ',' || arg[n - 1] == ',' || strstr(arg, ",,"))
        return nf_usage_error("--component '%s': an empty component ID between commas (give "
                              "C[,C...])", arg);
    return 0;
}

const char *nf_not_manifest_hint(const void *vp, size_t n)
{
    const unsigned char *p = vp;
    if (n >= 8 && memcmp(p, NF_ENTRY_MAGIC, 6) == 0)
        return "this is an NInfer artifact, not a manifest (ninfer-cat --manifest prints its "
               "manifest; ninfer-split copies or re-splits it)";
    if (n >= 8 && memcmp(p, NF_PART_MAGIC, 6) == 0)
        return "this is a continuation part of an NInfer artifact, not a manifest";
    if (n >= 4 && memcmp(p, "GGUF", 4) == 0)
        return "this is a GGUF file, not a manifest (ninfer-import makes its manifest)";
    if (n >= 4 && memcmp(p, "\x28\xb5\x2f\xfd", 4) == 0)
        return "this is zstd-compressed, not a manifest (decompress it first)";
    if (n >= 9 && p[8] == '{' && p[0] != '{' && p[0] != ' ' && p[0] != '\n')
        return "this looks like a safetensors file, not a manifest (ninfer-import makes a "
               "manifest of its checkpoint)";
    return NULL;
}

void nf_print_version(void)
{
    printf("%s %s\n", nf_prog, NF_VERSION);
}

void nf_diag_stdout(nf_diags *d, int err)
{
    nf_diag_addf(d, NF_C_IO, NF_STDOUT_NAME, "", "write error: %s", strerror(err ? err : EIO));
}

/* glibc drops the buffer of a failed write and keeps only the error flag, so
 * errno from that write is the only witness left: take it when it is one a
 * write gives, else say EIO */
static int write_errno(int e)
{
    switch (e) {
    case ENOSPC: case EDQUOT: case EFBIG: case EIO: case EPIPE: case EBADF: return e;
    default: return EIO;
    }
}

int nf_stdout_flush(nf_diags *d)
{
    int prior = errno;
    bool bad = ferror(stdout) != 0;
    errno = 0;
    int e = fflush(stdout) != 0 ? (errno ? errno : EIO) : 0;
    if (bad && !e)
        e = write_errno(prior);
    if (!e)
        return 0;
    nf_diag_stdout(d, e);
    clearerr(stdout);
    return -1;
}

int nf_stdout_close(int rc)
{
    static bool closed;
    if (closed)
        return rc;
    closed = true;
    int prior = errno;
    bool bad = ferror(stdout) != 0;
    int e = 0;
    errno = 0;
    if (fflush(stdout) != 0)
        e = errno ? errno : EIO;
    if (!e && !bad && fclose(stdout) != 0 && errno != EBADF)
        e = errno;
    if (bad && !e)
        e = write_errno(prior);
    if (!e)
        return rc;
    nf_diags d = NF_DIAGS_INIT;
    nf_diag_stdout(&d, e);
    nf_diags_print(&d, nf_prog, stderr);
    nf_diags_free(&d);
    return nf_exit_combine(rc, NF_EXIT_IO);
}

/* ---- artifacts over HTTP ---- */

static struct {
    const char *urls_file, *cacert;
    int retries;
    unsigned jobs;
    double stall;
    nf_http *http;
    char **urls;
    size_t n_urls;
    bool urls_read;
} remote = {.retries = -1};

const char nf_remote_usage[] =
    "URL operands (http://, https://; NINFER_TOKEN: a bearer token for https):\n"
    "  --urls FILE           the URL of every file of the set, one a line, the\n"
    "                        entry first (signed URLs; else parts beside the entry)\n"
    "  --cacert FILE         trust the CA certificates in FILE, not the system's\n"
    "  --jobs N              requests at once (default 8)\n"
    "  --retries N           retries of a failed request (default 5)\n"
    "  --stall-timeout S     a transfer below 1 KiB/s this long fails (default 30)\n";

void nf_help_print(const char *text)
{
    const char *ex = strstr(text, "\nExit status");
    if (!ex) {
        fputs(text, stdout);
        fputs(nf_remote_usage, stdout);
        return;
    }
    fwrite(text, 1, (size_t)(ex - text) + 1, stdout);
    fputs(nf_remote_usage, stdout);
    fputs(ex, stdout);
}

int nf_remote_cli_opt(int c, const char *arg)
{
    uint64_t v;
    switch (c) {
    case NF_O_URLS: remote.urls_file = arg; return 1;
    case NF_O_CACERT: remote.cacert = arg; return 1;
    case NF_O_RETRIES:
        if (!nf_parse_u64(arg, &v) || v > 100)
            return nf_usage_error("bad --retries '%s' (0..100)", arg);
        remote.retries = (int)v;
        return 1;
    case NF_O_JOBS:
        if (!nf_parse_u64(arg, &v) || v < 1 || v > 64)
            return nf_usage_error("bad --jobs '%s' (1..64)", arg);
        remote.jobs = (unsigned)v;
        return 1;
    case NF_O_STALL: {
        char *end = NULL;
        double s = strtod(arg, &end);
        if (!end || *end || !(s >= 0.1 && s <= 86400))
            return nf_usage_error("bad --stall-timeout '%s' (seconds, 0.1..86400)", arg);
        remote.stall = s;
        return 1;
    }
    default: return 0;
    }
}

int nf_remote_or_bad_option(int c, int argc, char **argv, const struct option *lo)
{
    int r = nf_remote_cli_opt(c, optarg);
    return r == 1 ? 0 : r ? r : nf_bad_option(argc, argv, lo);
}

static void trace_line(void *ctx, const char *line)
{
    (void)ctx;
    fprintf(stderr, "%s: http: ", nf_prog);
    nf_fput_text(line, stderr);
    fputc('\n', stderr);
}

/* At exit: the I/O thread stopped, the token's bytes overwritten. */
static void free_client(void)
{
    nf_http_free(remote.http);
    remote.http = NULL;
}

/* The process's client, made once. */
static nf_http *client(void)
{
    if (remote.http)
        return remote.http;
    nf_http_opts ho = {0};
    ho.cacert = remote.cacert;
    ho.retries = remote.retries;
    ho.jobs = remote.jobs;
    ho.stall_seconds = remote.stall;
    ho.netrc = true;
    const char *tr = getenv("NINFER_HTTP_TRACE");
    if (tr && *tr && strcmp(tr, "0") != 0)
        ho.trace = trace_line;
    const char *bo = getenv("NINFER_HTTP_BACKOFF");
    if (bo && *bo)
        ho.backoff_seconds = strtod(bo, NULL);
    const char *tok = getenv("NINFER_TOKEN");
    if (tok && *tok) {
        /* a process that holds a token leaves no core and no /proc to read */
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_CORE, &rl);
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        ho.token = tok;
    }
    remote.http = nf_http_new(&ho);
    if (remote.http)
        atexit(free_client);
    return remote.http;
}

nf_http *nf_remote_client(void) { return remote.http; }

bool nf_remote_stats(nf_http_stats *s)
{
    memset(s, 0, sizeof *s);
    if (!remote.http)
        return false;
    nf_http_get_stats(remote.http, s);
    return true;
}

/* --urls FILE: one URL a line (blank lines skipped). */
static int read_urls(nf_diags *d)
{
    if (remote.urls_read)
        return remote.urls ? 0 : -1;
    remote.urls_read = true;
    char *text = NULL;
    size_t n = 0;
    int rc = nf_read_path(remote.urls_file, false, 64u << 20, &text, &n);
    if (rc < 0) {
        nf_diag_addf(d, NF_C_USAGE, remote.urls_file, "", "--urls: cannot read: %s",
                     rc == -EFBIG ? "larger than 64 MiB" : strerror(-rc));
        free(text);
        return -1;
    }
    size_t cap = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
            line[--l] = 0;
        if (l) {
            if (!nf_is_url(line)) {
                nf_diag_addf(d, NF_C_USAGE, remote.urls_file, "",
                             "--urls: line %zu is no http:// or https:// URL", remote.n_urls + 1);
                free(text);
                return -1;
            }
            if (remote.n_urls == cap) {
                cap = cap ? 2 * cap : 16;
                char **nv = realloc(remote.urls, cap * sizeof *nv);
                if (!nv)
                    break;
                remote.urls = nv;
            }
            remote.urls[remote.n_urls++] = strdup(line);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (!remote.n_urls) {
        nf_diag_addf(d, NF_C_USAGE, remote.urls_file, "", "--urls: no URL in the file");
        return -1;
    }
    return 0;
}

int nf_remote_open_opts(nf_open_opts *o, const char *path, nf_diags *d)
{
    if (!nf_is_url(path)) {
        if (remote.urls_file) {
            nf_diag_add(d, NF_C_USAGE, "", "--urls is for an http:// or https:// operand");
            return -1;
        }
        return 0;
    }
    if (!o->http && !(o->http = client())) {
        nf_diag_add(d, NF_C_IO, "", "cannot read URLs: %s",
                    nf_http_unavailable() ? nf_http_unavailable() : "out of memory");
        return -1;
    }
    if (remote.urls_file && !o->urls) {
        if (read_urls(d) < 0)
            return -1;
        if (strcmp(remote.urls[0], path) != 0) {
            nf_diag_add(d, NF_C_USAGE, "", "--urls: its first URL must be the entry, the "
                        "operand");
            return -1;
        }
        o->urls = (const char *const *)remote.urls;
        o->n_urls = remote.n_urls;
    }
    return 0;
}

const char *nf_display_name(const char *path)
{
    static char **kept;
    static size_t n_kept;
    if (!nf_is_url(path))
        return path;
    for (size_t i = 0; i < n_kept; i++)
        if (!strcmp(kept[i] + strlen(kept[i]) + 1, path))
            return kept[i];
    /* the display form, then the URL it came from (to find it again) */
    char *disp = nf_url_display(path), *both = NULL;
    char **nv = realloc(kept, (n_kept + 1) * sizeof *nv);
    if (disp && nv) {
        size_t a = strlen(disp), b = strlen(path);
        both = malloc(a + b + 2);
        if (both) {
            memcpy(both, disp, a + 1);
            memcpy(both + a + 1, path, b + 1);
            kept = nv;
            kept[n_kept++] = both;
        }
    } else if (nv) {
        kept = nv;
    }
    free(disp);
    return both ? both : "(url)";
}

int nf_operand_open(nf_operand *op, const char *path, const nf_open_opts *oo, nf_diags *d)
{
    memset(op, 0, sizeof *op);
    op->name = nf_display_name(path);
    nf_open_opts local = {0};
    if (oo)
        local = *oo;
    const nf_open_opts *o = &local;
    if (nf_remote_open_opts(&local, path, d) < 0)
        return -1;
    if (strcmp(path, "-") == 0) {
        op->in = nf_input_open_fd(0, false);
        if (!op->in) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
        op->a = nf_artifact_open_stream(op->in, "-", o, d);
    } else {
        op->a = nf_artifact_open(path, o, d);
    }
    if (!op->a) {
        nf_input_close(op->in);
        op->in = NULL;
        return -1;
    }
    return 0;
}

void nf_operand_close(nf_operand *op)
{
    nf_artifact_close(op->a);
    nf_input_close(op->in);
    op->a = NULL;
    op->in = NULL;
}

static bool stdout_is_file(void)
{
    struct stat so;
    return fstat(1, &so) == 0 && S_ISREG(so.st_mode);
}

int nf_stdout_operand_check(const char *path, const nf_artifact *a, const char *const *extra,
                            size_t n_extra, nf_diags *d)
{
    if (!stdout_is_file())
        return 0;
    size_t nf = a && !nf_artifact_is_stream(a) ? nf_artifact_catalog(a)->n_files : 0;
    const char **v = malloc((1 + nf + n_extra) * sizeof *v);
    if (!v) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    size_t n = 0;
    v[n++] = path;
    for (size_t i = 1; i < nf; i++)
        v[n++] = nf_artifact_file_path(a, i);
    for (size_t k = 0; k < n_extra; k++)
        v[n++] = extra[k];
    int rc = nf_stdout_check(v, n, d);
    free(v);
    return rc;
}

int nf_operand_open_out(nf_operand *op, const char *path, const nf_open_opts *o,
                        const char *const *extra, size_t n_extra, nf_diags *d)
{
    memset(op, 0, sizeof *op);
    /* a closed standard output (`>&-`) is no file of ours: descriptor 1
     * may then be one the reader opens */
    bool closed = fcntl(1, F_GETFD) < 0 && errno == EBADF;
    if (!closed && nf_stdout_operand_check(path, NULL, extra, n_extra, d) < 0)
        return NF_STDOUT_REFUSED;
    if (nf_operand_open(op, path, o, d) < 0)
        return -1;
    if (!closed && nf_stdout_operand_check(path, op->a, NULL, 0, d) < 0) {
        nf_operand_close(op);
        return NF_STDOUT_REFUSED;
    }
    return 0;
}

int nf_stdout_operands_check(char *const *paths, size_t n, const nf_open_opts *o,
                             const char *const *extra, size_t n_extra, nf_diags *d)
{
    if (!stdout_is_file()) /* closed (`>&-`) too: nothing opened here may pose as it */
        return 0;
    for (size_t k = 0; k < n; k++) {
        nf_diags quiet = NF_DIAGS_INIT; /* the command reports these itself */
        nf_artifact *a = strcmp(paths[k], "-") ? nf_artifact_open(paths[k], o, &quiet) : NULL;
        int rc = nf_stdout_operand_check(paths[k], a, extra, n_extra, d);
        nf_artifact_close(a);
        nf_diags_free(&quiet);
        if (rc < 0)
            return -1;
    }
    return 0;
}

nf_jval *nf_files_json(const nf_artifact *a, const bool *need)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < c->n_files; i++) {
        if (need && !need[i])
            continue;
        nf_jval *f = nf_jnew_object();
        nf_jobj_set(f, "index", nf_jnew_u64(i));
        nf_jobj_set(f, "path", nf_jnew_string(i == 0 ? nf_basename(nf_artifact_path(a))
                                                     : c->files[i].path ? c->files[i].path : ""));
        nf_jobj_set(f, "payload_bytes", nf_jnew_u64(c->files[i].payload_bytes));
        nf_jobj_set(f, "logical_offset", nf_jnew_u64(c->files[i].logical_offset));
        nf_jobj_set(f, "file_bytes",
                    nf_jnew_u64(nf_artifact_file_payload_start(a, i) + c->files[i].payload_bytes));
        nf_jarr_push(arr, f);
    }
    return arr;
}

nf_jval *nf_diags_json(const nf_diags *d)
{
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < d->n; i++) {
        const nf_diag *r = &d->v[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "code", nf_jnew_string(nf_code_name(r->code)));
        nf_jobj_set(o, "pointer", nf_jnew_string(r->pointer));
        nf_jobj_set(o, "file", nf_jnew_string(r->file));
        nf_jobj_set(o, "message", nf_jnew_string(r->message));
        nf_jarr_push(arr, o);
    }
    return arr;
}

void nf_print_json_line(nf_jval *v)
{
    size_t n = 0;
    char *t = nf_jval_to_text(v, false, &n);
    if (t) {
        fwrite(t, 1, n, stdout);
        fputc('\n', stdout);
        free(t);
    }
}

const char *nf_human_bytes(uint64_t n, char buf[32])
{
    static const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    int i = 0;
    while (v >= 1024 && i < 5) {
        v /= 1024;
        i++;
    }
    snprintf(buf, 32, i ? "%.1f %s" : "%.0f %s", v, u[i]);
    return buf;
}

static nf_progress *g_progress; /* the one whose line is shown */

void nf_progress_init(nf_progress *p, const char *what, uint64_t total, int mode)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->total = total;
    p->enabled = mode > 0 || (mode == 0 && isatty(2));
    p->t0 = p->last = nf_now();
}

void nf_progress_update(void *vp, uint64_t done, uint64_t total)
{
    nf_progress *p = vp;
    if (!p || !p->enabled)
        return;
    double t = nf_now();
    if (t - p->last < 0.25 && done < total)
        return;
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? (double)done / el : 0;
    char a[32], b[32], r[32];
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    p->shown = true;
    g_progress = p;
    fprintf(stderr, "\r%s: %s: %s / %s, %s/s, ETA %.0fs   ", nf_prog, p->what,
            nf_human_bytes(done, a), nf_human_bytes(total, b), nf_human_bytes((uint64_t)rate, r),
            eta);
}

void nf_progress_done(nf_progress *p)
{
    if (p && p->shown)
        fputc('\n', stderr);
    if (p)
        p->shown = false;
    if (g_progress == p)
        g_progress = NULL;
}

void nf_progress_break(void)
{
    nf_progress_done(g_progress);
}

const char nf_writer_usage[] =
    "  -o, --output PATH       the entry file to write; '-' or none: a stream on\n"
    "                          stdout\n"
    "  --max-file-bytes N      split into an entry and parts of at most N bytes each\n"
    "                          (default: one file; sizes: K M G T or KiB MiB GiB TiB\n"
    "                          are powers of 1024, KB MB GB TB powers of 1000)\n"
    "  --json-bytes N          reserve exactly N bytes for the catalog (error if it\n"
    "                          does not fit, or if N is over --max-json-bytes)\n"
    "  --dry-run               print the catalog's files array as it would be\n"
    "                          written; write nothing\n"
    "  --force                 replace an existing entry (moved aside until the new\n"
    "                          set is in place; its surplus parts are removed)\n"
    "  --no-digests            do not write metadata.integrity digests\n"
    "  --reproducible          artifact_id from the catalog's digests: the same\n"
    "                          inputs give the same bytes (implied by\n"
    "                          SOURCE_DATE_EPOCH); --artifact-id HEX gives one\n"
    "  --zstd[=LEVEL]          compress a stream written to stdout (default level 3)\n"
    "  --no-sync               do not fdatasync files before publishing them\n"
    "  --progress / -q, --quiet  force / silence the progress line\n";

void nf_writer_cli_out(const nf_writer_cli *wc, nf_out_opts *o, nf_progress *pr,
                       const char *what, nf_plan *dry)
{
    memset(o, 0, sizeof *o);
    o->w = wc->w;
    o->out = wc->out;
    o->zstd = wc->zstd;
    o->no_digests = wc->no_digests;
    o->verify = wc->verify;
    nf_progress_init(pr, what, 0, wc->progress);
    o->progress = nf_progress_update;
    o->progress_ctx = pr;
    memset(dry, 0, sizeof *dry);
    o->dry_run = wc->dry_run ? dry : NULL;
}

int nf_print_plan(const nf_plan *plan, nf_diags *d)
{
    char *t = nf_plan_files_json(plan, true);
    int rc = 0;
    if (!t) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        rc = -1;
    } else {
        printf("%s\n", t);
        rc = nf_stdout_flush(d);
    }
    free(t);
    return rc;
}

void nf_cli_warn(void *ctx, const char *path, const char *msg)
{
    (void)ctx;
    nf_progress_break();
    fprintf(stderr, "%s: ", nf_prog);
    nf_fput_text(path, stderr);
    fputs(": ", stderr);
    nf_fput_text(msg, stderr);
    fputc('\n', stderr);
}

void nf_writer_cli_init(nf_writer_cli *wc)
{
    memset(wc, 0, sizeof *wc);
    wc->w.sync = true;
    wc->max_json_bytes = NF_DEFAULT_MAX_JSON;
    wc->w.warn = nf_cli_warn;
}

int nf_id_opt(nf_write_opts *w, int c, const char *arg)
{
    if (c != NF_O_REPRODUCIBLE && c != NF_O_ARTIFACT_ID)
        return 0;
    int want = c == NF_O_REPRODUCIBLE ? NF_ID_REPRODUCIBLE : NF_ID_GIVEN;
    if (w->id_mode != NF_ID_RANDOM && w->id_mode != want)
        return nf_usage_error("--reproducible derives the artifact_id; --artifact-id gives "
                              "one: choose one");
    w->id_mode = want;
    if (c == NF_O_ARTIFACT_ID) {
        size_t n = strlen(arg);
        for (size_t i = 0; n == 32 && i < 32; i++) {
            int ch = arg[i];
            int v = ch >= '0' && ch <= '9' ? ch - '0'
                  : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                  : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
            if (v < 0) {
                n = 0;
                break;
            }
            w->id[i / 2] = (unsigned char)(i % 2 ? (w->id[i / 2] | v) : v << 4);
        }
        if (n != 32)
            return nf_usage_error("bad --artifact-id '%s' (32 hex digits, as ninfer-cat --header "
                                  "prints one)", arg);
    }
    return 1;
}

void nf_id_env(nf_write_opts *w)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    if (w->id_mode == NF_ID_RANDOM && e) {
        w->id_mode = NF_ID_REPRODUCIBLE;
        w->id_best_effort = true;
    }
}

int nf_writer_cli_opt(nf_writer_cli *wc, int c, const char *arg)
{
    uint64_t v;
    int r = nf_id_opt(&wc->w, c, arg);
    if (r)
        return r;
    switch (c) {
    case 'o': wc->out = arg; return 1;
    case NF_O_MAX_FILE:
        if (nf_size_opt("--max-file-bytes", arg, false, &v))
            return NF_EXIT_USAGE;
        wc->w.max_file_bytes = v;
        return 1;
    case NF_O_JSON_BYTES:
        if (nf_size_opt("--json-bytes", arg, false, &v))
            return NF_EXIT_USAGE;
        wc->w.json_bytes = v;
        return 1;
    case NF_O_DRY_RUN: wc->dry_run = true; return 1;
    case NF_O_FORCE: wc->w.force = true; return 1;
    case NF_O_NO_DIGESTS: wc->no_digests = true; return 1;
    case NF_O_NO_SYNC: wc->w.sync = false; return 1;
    case NF_O_ZSTD:
        wc->zstd = 3;
        if (arg && (!nf_parse_u64(arg, &v) || v < 1 || v > 22))
            return nf_usage_error("bad --zstd level '%s' (1..22)", arg);
        if (arg)
            wc->zstd = (int)v;
        return 1;
    case NF_O_PROGRESS: wc->progress = 1; return 1;
    case 'q': wc->progress = -1; wc->quiet = true; return 1;
    default: return 0;
    }
}

int nf_writer_cli_check(nf_writer_cli *wc)
{
    bool stream = !wc->out || strcmp(wc->out, "-") == 0;
    if (wc->w.id_mode == NF_ID_REPRODUCIBLE && wc->no_digests)
        return nf_usage_error("--reproducible derives the artifact_id from the digests that "
                              "--no-digests leaves out");
    nf_id_env(&wc->w);
    if (stream && wc->w.max_file_bytes)
        return nf_usage_error("a stream is one file: --max-file-bytes needs -o PATH");
    if (!stream && wc->zstd)
        return nf_usage_error("--zstd compresses a stream on stdout, not files");
    if (wc->w.json_bytes > wc->max_json_bytes)
        return nf_usage_error("--json-bytes %llu is over --max-json-bytes %llu: readers refuse "
                              "such a catalog with their default cap (raise --max-json-bytes "
                              "here and in every reader)",
                              (unsigned long long)wc->w.json_bytes,
                              (unsigned long long)wc->max_json_bytes);
    if (stream && !wc->dry_run && isatty(1))
        return nf_usage_error("refusing to write an artifact to a terminal (use -o PATH)");
    return 0;
}

void nf_fput_text(const char *s, FILE *f)
{
    char *e = nf_text_escape(s);
    fprintf(f, "%.*s", e ? (int)strlen(e) : 16, e ? e : "(out of memory)");
    free(e);
}

void nf_fput_field(const char *s, int width, FILE *f)
{
    char *e = nf_text_escape_also(s ? s : "", NF_FIELD_ESCAPES);
    fprintf(f, "%-*s", width > 0 ? width : 0, e ? e : "(out of memory)");
    free(e);
}

void nf_diags_print(const nf_diags *d, const char *prog, FILE *f)
{
    for (size_t i = 0; i <= d->n; i++) {
        char *line = nf_diag_line(d, i, prog);
        if (line)
            fprintf(f, "%s\n", line);
        else if (i < d->n)
            fprintf(f, "%s: out of memory\n", prog);
        free(line);
    }
}
