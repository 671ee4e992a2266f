/* ninfer-verify — check artifacts: framing, catalog, files, fill, digests. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nf_cli.h"
#include "nf_codec.h"
#include "nf_digest.h"
#include "nf_select.h"
#include "nf_util.h"
#include "nf_verify.h"

static const char usage[] =
    "usage: ninfer-verify [OPTIONS] ARTIFACT...|-\n"
    "Check NInfer v3 artifacts: header, catalog rules (spec 11.1), every file's\n"
    "header, length and fill, and every object digest in metadata.integrity.\n"
    "'-' reads a stream (optionally zstd-compressed) from standard input.\n"
    "\n"
    "  --json               one JSON record per operand on stdout, with a verdict\n"
    "                       (ok, missing, incomplete, corrupt, foreign, invalid)\n"
    "  --sums               after a clean check, print '<sha256>  <file>' for the\n"
    "                       entry and each part (for sha256sum -c)\n"
    "  --check-sums FILE    check every file of the artifact against FILE, read as\n"
    "                       sha256sum -c reads it (names relative to its directory)\n"
    "  --no-digests         skip object digests (structure only)\n"
    "  --require-digests    fail (1) when no object digest was checked\n"
    "  --component C[,C...] check only what these components need: the files\n"
    "                       holding their objects (a partial download; --sums and\n"
    "                       --check-sums cover those files only) and those\n"
    "                       objects' digests; targets come along (mtp brings text)\n"
    "  --deep               also decode every tensor and check its codes, scales,\n"
    "                       padding and plane gaps (files only, not streams)\n"
    "  --max-json-bytes N   refuse catalogs larger than N (default 256M)\n"
    "  --threads N          hashing threads (default: all CPUs)\n"
    "  -q, --quiet          no 'OK' lines, no progress\n"
    "      --progress       show progress even when stderr is not a terminal\n"
    "  -h, --help           this text\n"
    "      --version        print the version\n"
    "\n"
    "Exit status: 0 valid, 1 a rule is broken, 2 usage, 3 I/O error (a file\n"
    "missing or unreadable), 4 unsupported format/layout/encoding.\n";

static struct {
    const char *component;
    bool json, sums, no_digests, quiet, deep, require_digests;
    int progress;
    const char *check_sums;
    nf_open_opts open;
    unsigned threads;
} opt;

/* The "segments" of a digest diagnostic in --json: where object o's bytes
 * lie, one {"file", "file_offset", "bytes"} per file (spec 11.2). */
static nf_jval *segments_json(const nf_artifact *a, const nf_object *o)
{
    size_t n = nf_object_segments(a, o, NULL, 0);
    nf_segment *seg = calloc(n ? n : 1, sizeof *seg);
    nf_jval *arr = nf_jnew_array();
    if (!seg || !arr) {
        free(seg);
        return arr;
    }
    nf_object_segments(a, o, seg, n);
    for (size_t k = 0; k < n; k++) {
        nf_jval *sg = nf_jnew_object();
        nf_jobj_set(sg, "file", nf_jnew_string(nf_artifact_file_path(a, seg[k].file)));
        nf_jobj_set(sg, "file_offset", nf_jnew_u64(seg[k].file_offset));
        nf_jobj_set(sg, "bytes", nf_jnew_u64(seg[k].bytes));
        nf_jarr_push(arr, sg);
    }
    free(seg);
    return arr;
}

/* ---- SHA256SUMS lines, as GNU sha256sum writes and reads them ---- */

/* One line of a sums file parsed as `sha256sum -c` (GNU coreutils 9) does:
 * leading blanks; a '\' that marks an escaped name (\\, \n, \r; any other
 * escape makes the line malformed); then either "SHA256 (NAME) = HEX" (the
 * --tag form) or "HEX", a blank, an optional ' ' or '*' (binary) and NAME.
 * HEX is 64 hex digits in either case. Returns true with hex (lower case,
 * NUL-terminated) and *name (malloc'ed) for a well-formed line. */
static bool sums_parse(const char *s, size_t n, char hex[65], char **name)
{
    size_t i = 0, nb, ne;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    bool esc = i < n && s[i] == '\\';
    i += esc;
    const char *h;
    if (n - i >= 6 && memcmp(s + i, "SHA256", 6) == 0 &&
        (s[i + 6] == '(' || (s[i + 6] == ' ' && i + 7 < n && s[i + 7] == '('))) {
        i += s[i + 6] == '(' ? 7 : 8;
        size_t j = n;
        while (j > i && s[j - 1] != ')')
            j--;
        if (j == i)
            return false;
        nb = i;
        ne = j - 1;
        j++;
        while (j < n && (s[j] == ' ' || s[j] == '\t'))
            j++;
        if (j >= n || s[j] != '=')
            return false;
        j++;
        while (j < n && (s[j] == ' ' || s[j] == '\t'))
            j++;
        if (n - j != 64)
            return false;
        h = s + j;
    } else {
        if (n - i < 66 || (s[i + 64] != ' ' && s[i + 64] != '\t'))
            return false;
        h = s + i;
        nb = i + 65;
        if (nb < n - 1 && (s[nb] == ' ' || s[nb] == '*'))
            nb++; /* the type: text or binary; else the one-blank form */
        ne = n;
    }
    for (int k = 0; k < 64; k++) {
        char c = h[k];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
            return false;
        hex[k] = c >= 'A' && c <= 'F' ? (char)(c - 'A' + 'a') : c;
    }
    hex[64] = 0;
    if (ne <= nb)
        return false;
    char *o = malloc(ne - nb + 1), *q = o;
    if (!o)
        return false;
    for (size_t k = nb; k < ne; k++) {
        if (s[k] == '\0') {
            free(o);
            return false;
        }
        if (esc && s[k] == '\\') {
            if (k + 1 >= ne || (s[k + 1] != '\\' && s[k + 1] != 'n' && s[k + 1] != 'r')) {
                free(o);
                return false;
            }
            k++;
            *q++ = s[k] == 'n' ? '\n' : s[k] == 'r' ? '\r' : '\\';
        } else {
            *q++ = s[k];
        }
    }
    *q = 0;
    *name = o;
    return true;
}

/* Append "<hex>  <name>" as sha256sum writes it to t: a name holding a
 * backslash, a newline or a carriage return is written escaped (as two
 * characters each: backslash, then the backslash, n or r) after a leading
 * backslash (red-team E15). */
static void sums_line(nf_text *t, const char *hex, const char *name)
{
    bool esc = strpbrk(name, "\\\n\r") != NULL;
    if (esc)
        nf_text_puts(t, "\\");
    nf_text_puts(t, hex);
    nf_text_puts(t, "  ");
    for (const char *c = name; *c; c++) {
        if (esc && (*c == '\\' || *c == '\n' || *c == '\r'))
            nf_text_puts(t, *c == '\\' ? "\\\\" : *c == '\n' ? "\\n" : "\\r");
        else
            nf_text_put(t, c, 1);
    }
    nf_text_puts(t, "\n");
}

/* --sums: every operand's lines, printed once all operands verified (a
 * failure anywhere prints none: no partial sums file). */
static nf_text g_sums;

/* The one-word verdict of an operand's --json record (ninfer-verify(1)):
 * ok; missing (a file absent: the entry, or a part); incomplete (a file
 * shorter than its table says: an interrupted download); corrupt (a
 * digest mismatch); foreign (another artifact's part); invalid (any other
 * finding). With several, the first of invalid, foreign, corrupt,
 * incomplete, missing. */
static const char *verdict(const nf_diags *d, int ex, const char *path, bool opened)
{
    if (ex == 0)
        return "ok";
    bool other = false, foreign = false, corrupt = false, incomplete = false, missing = false;
    struct stat st;
    for (size_t i = 0; i < d->n; i++) {
        switch (d->v[i].code) {
        case NF_C_ARTIFACT_ID: foreign = true; break;
        case NF_C_DIGEST: corrupt = true; break;
        case NF_C_INCOMPLETE: incomplete = true; break;
        case NF_C_PART_MISSING: missing = true; break;
        case NF_C_IO:
            /* the operand itself absent */
            if (!opened && strcmp(path, "-") != 0 && lstat(path, &st) < 0 && errno == ENOENT) {
                missing = true;
                break;
            }
            other = true;
            break;
        default: other = true; break;
        }
    }
    return other ? "invalid" : foreign ? "foreign" : corrupt ? "corrupt"
         : incomplete ? "incomplete" : missing ? "missing" : "invalid";
}

typedef struct {
    char hex[65];
    char *real;   /* the named file's real path (NULL: it cannot be resolved) */
} sum_line;

static int sum_line_cmp(const void *x, const void *y)
{
    const sum_line *a = x, *b = y;
    return !a->real ? (b->real ? -1 : 0) : !b->real ? 1 : strcmp(a->real, b->real);
}

/* Every well-formed line of text (sha256sum -c's reading: '#' comment
 * lines and empty lines skipped, one trailing '\r' dropped), its name
 * resolved against dir; sorted by real path. *bad counts malformed lines. */
static sum_line *sums_read(char *text, size_t len, const char *dir, size_t *n, size_t *bad)
{
    sum_line *v = NULL;
    size_t cap = 0;
    *n = *bad = 0;
    for (size_t at = 0; at < len;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t ll = nl ? (size_t)(nl - line) : len - at;
        at += ll + (nl != NULL);
        if (ll && line[0] == '#')
            continue;
        if (ll && line[ll - 1] == '\r')
            ll--;
        if (!ll)
            continue;
        char hex[65], *name = NULL;
        if (!sums_parse(line, ll, hex, &name)) {
            (*bad)++;
            continue;
        }
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            sum_line *nv = realloc(v, nc * sizeof *nv);
            if (!nv) {
                free(name);
                break;
            }
            v = nv;
            cap = nc;
        }
        char *full = nf_path_join(dir, name);
        v[*n].real = full ? realpath(full, NULL) : NULL;
        memcpy(v[*n].hex, hex, 65);
        (*n)++;
        free(full);
        free(name);
    }
    if (*n)
        qsort(v, *n, sizeof *v, sum_line_cmp);
    return v;
}

/* Was a part-missing diagnostic already given for path? */
static bool said_missing(const nf_diags *d, const char *path)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].code == NF_C_PART_MISSING && d->v[i].file && !strcmp(d->v[i].file, path))
            return true;
    return false;
}

/* --check-sums (red-team E6): every line that names a file the check
 * covers (every file, or with --component those the selection needs) must
 * match it, duplicates too, as sha256sum -c checks every line; such a file
 * with no line is a digest error; files outside the selection are ignored,
 * present or not, listed or not. Malformed lines are counted in one
 * warning (sha256sum -c's "N lines are improperly formatted", exit status
 * unchanged). The files' digests come from nf_verify's one read of each
 * (r->file_sha); a file it could not read has its own diagnostic. */
static void check_sums(nf_artifact *a, const nf_verify_result *r, nf_diags *d)
{
    char *text = NULL;
    size_t n = 0;
    /* a sums file is a few lines a file: the catalog cap bounds it */
    int rc = nf_read_path(opt.check_sums, false, NF_DEFAULT_MAX_JSON, &text, &n);
    if (rc < 0) {
        nf_diag_add(d, NF_C_IO, "", "cannot read %s: %s", opt.check_sums,
                    rc == -EFBIG ? "larger than 256 MiB" : strerror(-rc));
        free(text);
        return;
    }
    /* names are relative to the sums file's directory, unless it has none
     * worth the name: a pipe or device reached through a link (/dev/stdin,
     * <(curl ...) as /dev/fd/63) or "-" read from where we are, as
     * sha256sum -c reads every list (a named FIFO keeps its directory) */
    struct stat ls, fs;
    bool here = strcmp(opt.check_sums, "-") == 0 ||
                (lstat(opt.check_sums, &ls) == 0 && stat(opt.check_sums, &fs) == 0 &&
                 !S_ISREG(fs.st_mode) && !S_ISFIFO(ls.st_mode));
    char *dir = here ? strdup(".") : nf_dirname_dup(opt.check_sums);
    size_t nl = 0, bad = 0;
    sum_line *lines = sums_read(text, n, dir ? dir : ".", &nl, &bad);
    free(text);
    if (bad && !opt.quiet) {
        fprintf(stderr, "%s: ", nf_prog);
        nf_fput_text(opt.check_sums, stderr);
        fprintf(stderr, ": warning: %zu line%s improperly formatted\n", bad,
                bad == 1 ? " is" : "s are");
    }
    const nf_catalog *c = nf_artifact_catalog(a);
    for (size_t i = 0; i < c->n_files; i++) {
        if (!r->files || !r->files[i])
            continue;
        const char *p = nf_artifact_file_path(a, i);
        struct stat st;
        if (lstat(p, &st) < 0 && errno == ENOENT) {
            /* a file that is not there is missing, whatever the list says */
            if (!said_missing(d, p)) {
                char ptr[48];
                snprintf(ptr, sizeof ptr, "/files/%zu", i);
                nf_diag_addf(d, NF_C_PART_MISSING, p, ptr, "part %zu is missing", i);
            }
            continue;
        }
        char *want = realpath(p, NULL);
        sum_line key = {"", want};
        sum_line *hit = want && nl ? bsearch(&key, lines, nl, sizeof *lines, sum_line_cmp) : NULL;
        while (hit && hit > lines && sum_line_cmp(hit - 1, &key) == 0)
            hit--;
        if (!hit) {
            nf_diag_addf(d, NF_C_DIGEST, p, "", "no line for this file in %s", opt.check_sums);
            free(want);
            continue;
        }
        const char *hex = r->file_sha ? r->file_sha[i] : "";
        for (; hex[0] && hit < lines + nl && sum_line_cmp(hit, &key) == 0; hit++)
            if (strcmp(hex, hit->hex) != 0)
                nf_diag_addf(d, NF_C_DIGEST, p, "", "sha256 %s differs from %s's %s", hex,
                             opt.check_sums, hit->hex);
        free(want);
    }
    for (size_t k = 0; k < nl; k++)
        free(lines[k].real);
    free(lines);
    free(dir);
}

/* A URL artifact's file i as it is named on disk: the entry's last path
 * segment, percent-decoded, or the part's files[i].path. */
static char *remote_name(nf_artifact *a, size_t i)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    if (i > 0)
        return strdup(c->files[i].path ? c->files[i].path : "");
    char *b = nf_url_basename(nf_artifact_path(a)), *o = b;
    for (char *q = b; b && *q; q++) {
        unsigned x;
        if (q[0] == '%' && sscanf(q + 1, "%2x", &x) == 1 && x && q[1] && q[2]) {
            *o++ = (char)x;
            q += 2;
        } else {
            *o++ = *q;
        }
    }
    if (o)
        *o = 0;
    return b;
}

static int verify_one(const char *path)
{
    nf_diags d = NF_DIAGS_INIT;
    nf_http_stats before;
    nf_remote_stats(&before);
    d.file = nf_display_name(path);
    nf_operand op;
    nf_verify_result r = {0};
    nf_jval *rec = opt.json ? nf_jnew_object() : NULL;
    nf_jval *segs = NULL; /* per mismatch, its "segments" (--json) */
    const char *extra[1] = {opt.check_sums};
    int orc = nf_operand_open_out(&op, path, &opt.open, extra, opt.check_sums ? 1 : 0, &d);
    bool opened = orc == 0;
    if (orc == NF_STDOUT_REFUSED) {
        /* standard output is one of the files read (`--sums A >> A`):
         * nothing is written there, not even the --json record */
        nf_diags_print(&d, nf_prog, stderr);
        nf_jval_free(rec);
        nf_diags_free(&d);
        return NF_EXIT_USAGE;
    }
    if (opened) {
        nf_artifact *a = op.a;
        const nf_catalog *c = nf_artifact_catalog(a);
        bool stream = nf_artifact_is_stream(a);
        nf_progress pr;
        uint64_t total = 0;
        for (size_t i = 0; !stream && !opt.no_digests && i < c->n_objects; i++)
            total += c->objects[i].has_digest ? c->objects[i].bytes : 0;
        nf_progress_init(&pr, "hashing", total, opt.quiet || stream ? -1 : opt.progress);
        nf_verify_opts vo = {.component = opt.component, .no_digests = opt.no_digests,
                             .deep = opt.deep, .threads = opt.threads,
                             .file_digests = opt.sums || opt.check_sums,
                             .require_digests = opt.require_digests,
                             .progress = nf_progress_update, .progress_ctx = &pr};
        nf_verify(a, &vo, &r, &d);
        nf_progress_done(&pr); /* its line ends before any result */
        if (opt.check_sums && !stream && nf_artifact_is_remote(a))
            nf_diag_add(&d, NF_C_USAGE, "", "--check-sums checks files on disk, not a URL "
                        "(ninfer-fetch downloads the set)");
        else if (opt.check_sums && !stream)
            check_sums(a, &r, &d);
        int ex = nf_diags_exit(&d);
        /* --sums: the files the check covered (all, or the selection's),
         * each hashed in nf_verify's one read (a URL's from the bytes as
         * they came, named as on disk) */
        for (size_t i = 0; opt.sums && ex == 0 && !stream && i < c->n_files; i++)
            if (r.files[i]) {
                char *rname = nf_artifact_is_remote(a) ? remote_name(a, i) : NULL;
                sums_line(&g_sums, r.file_sha[i],
                          rname ? rname : nf_basename(nf_artifact_file_path(a, i)));
                free(rname);
            }
        if (rec) {
            char id[33];
            const nf_header *h = nf_artifact_header(a);
            nf_hex(h->artifact_id, 16, id);
            nf_jobj_set(rec, "artifact_id", nf_jnew_string(id));
            nf_jobj_set(rec, "json_bytes", nf_jnew_u64(h->json_bytes));
            nf_jobj_set(rec, "payload_bytes", nf_jnew_u64(c->payload_bytes));
            nf_jobj_set(rec, "files", nf_files_json(a, NULL));
            nf_jobj_set(rec, "objects", nf_jnew_u64(c->n_objects));
            nf_jobj_set(rec, "digests_checked", nf_jnew_u64(r.digests_checked));
            nf_jval *unchecked = nf_jnew_array();
            for (size_t k = 0; k < r.n_unchecked; k++)
                nf_jarr_push(unchecked, nf_jnew_string(c->objects[r.unchecked[k]].id));
            nf_jobj_set(rec, "digests_unchecked", unchecked);
            nf_http_stats now;
            if (nf_is_url(path) && nf_remote_stats(&now)) {
                /* this operand's requests: redirects are requests, retries apart */
                nf_jobj_set(rec, "requests", nf_jnew_u64(now.requests - before.requests));
                nf_jobj_set(rec, "retries", nf_jnew_u64(now.retries - before.retries));
                nf_jobj_set(rec, "bytes_received",
                            nf_jnew_u64(now.body_bytes - before.body_bytes));
            }
            segs = nf_jnew_array();
            for (size_t k = 0; !stream && k < r.n_mismatch; k++)
                nf_jarr_push(segs, segments_json(a, &c->objects[r.mismatch[k].object]));
            if (r.components) {
                /* a --component run: what was checked, and what was not */
                nf_jval *comps = nf_jnew_array(), *outside = nf_jnew_array();
                for (size_t k = 0; k < c->n_components; k++)
                    if (r.components[k])
                        nf_jarr_push(comps, nf_jnew_string(c->components[k].id));
                for (size_t k = 0; k < c->n_objects; k++)
                    if (!r.objects[k])
                        nf_jarr_push(outside, nf_jnew_string(c->objects[k].id));
                nf_jobj_set(rec, "components", comps);
                nf_jobj_set(rec, "objects_outside", outside);
                nf_jobj_set(rec, "files_checked", nf_files_json(a, r.files));
            }
        }
        nf_operand_close(&op);
    }
    int ex = nf_diags_exit(&d);
    if (rec) {
        nf_jobj_set(rec, "file", nf_jnew_string(nf_display_name(path)));
        nf_jobj_set(rec, "exit", nf_jnew_i64(ex));
        nf_jobj_set(rec, "verdict", nf_jnew_string(verdict(&d, ex, path, opened)));
        nf_jval *diags = nf_diags_json(&d);
        for (size_t k = 0; segs && k < r.n_mismatch; k++) {
            nf_jval *dg = nf_jarr_get(diags, r.mismatch[k].diag);
            nf_jval *sg = nf_jarr_get(segs, k);
            if (dg && sg)
                nf_jobj_set(dg, "segments", nf_jval_ref(sg));
        }
        nf_jobj_set(rec, "diagnostics", diags);
        nf_print_json_line(rec);
        nf_jval_free(rec);
    } else {
        nf_diags_print(&d, nf_prog, stderr);
        if (ex == 0 && !opt.quiet && !opt.sums) {
            /* the name escaped as in diagnostics: one line per operand */
            nf_fput_text(nf_display_name(path), stdout);
            printf(": OK (%zu digests checked)\n", r.digests_checked);
        }
    }
    nf_jval_free(segs);
    nf_verify_result_free(&r);
    nf_diags_free(&d);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_JSON = 256, O_SUMS, O_CHECK, O_NODIG, O_MAXJ, O_THREADS, O_PROG, O_VERSION, O_DEEP,
           O_COMPONENT, O_REQDIG };
    static const struct option lo[] = {
        {"component", required_argument, 0, O_COMPONENT},
        {"deep", no_argument, 0, O_DEEP},
        {"json", no_argument, 0, O_JSON},
        {"sums", no_argument, 0, O_SUMS},
        {"check-sums", required_argument, 0, O_CHECK},
        {"no-digests", no_argument, 0, O_NODIG},
        {"require-digests", no_argument, 0, O_REQDIG},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"threads", required_argument, 0, O_THREADS},
        {"quiet", no_argument, 0, 'q'},
        {"progress", no_argument, 0, O_PROG},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        NF_REMOTE_LONGOPTS,
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-verify";
    opt.open.check_fill = true;
    opt.open.whole_file = true; /* a server without ranges: a one-file artifact, in order */
    int c;
    uint64_t v;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case O_JSON: opt.json = true; break;
        case O_SUMS: opt.sums = true; break;
        case O_CHECK: opt.check_sums = optarg; break;
        case O_NODIG: opt.no_digests = true; break;
        case O_REQDIG: opt.require_digests = true; break;
        case O_DEEP: opt.deep = true; break;
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            opt.component = optarg;
            break;
        case O_MAXJ:
            if (nf_size_opt("--max-json-bytes", optarg, false, &v))
                return NF_EXIT_USAGE;
            opt.open.max_json_bytes = v;
            break;
        case O_THREADS:
            if (!nf_parse_u64(optarg, &v) || v == 0 || v > 64)
                return nf_usage_error("bad --threads '%s' (1..64)", optarg);
            opt.threads = (unsigned)v;
            break;
        case 'q': opt.quiet = true; opt.progress = -1; break;
        case O_PROG: opt.progress = 1; break;
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
    if (optind >= argc)
        return nf_usage_error("no artifact given");
    for (int i = optind; i < argc; i++)
        if (!strcmp(argv[i], "-") && (opt.sums || opt.check_sums || opt.deep || opt.component))
            return nf_usage_error("--sums, --check-sums, --deep and --component need artifact "
                                  "files, not '-'");
    if (opt.sums && opt.json)
        return nf_usage_error("--sums prints sha256sum lines; it does not combine with --json");
    if (opt.require_digests && opt.no_digests)
        return nf_usage_error("--require-digests asks for the digests --no-digests skips");
    int ex = 0, stdin_used = 0;
    for (int i = optind; i < argc; i++) {
        if (strcmp(argv[i], "-") == 0 && stdin_used++)
            return nf_usage_error("'-' may be given once");
    }
    if (argc - optind > 1) {
        /* standard output onto any operand is refused before the first
         * operand's output */
        nf_diags d = NF_DIAGS_INIT;
        const char *extra[1] = {opt.check_sums};
        int rc = nf_stdout_operands_check(argv + optind, (size_t)(argc - optind), &opt.open,
                                          extra, opt.check_sums ? 1 : 0, &d);
        nf_diags_print(&d, nf_prog, stderr);
        nf_diags_free(&d);
        if (rc < 0)
            return nf_stdout_close(NF_EXIT_USAGE);
    }
    for (int i = optind; i < argc; i++)
        ex = nf_exit_combine(ex, verify_one(argv[i]));
    size_t n = 0;
    char *sums = nf_text_take(&g_sums, &n);
    if (!sums) {
        fprintf(stderr, "%s: io: out of memory\n", nf_prog);
        ex = nf_exit_combine(ex, NF_EXIT_IO);
    } else if (ex == 0) {
        fwrite(sums, 1, n, stdout);
    }
    free(sums);
    return nf_stdout_close(ex);
}
