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

static const char usage[] =
    "usage: ninfer-verify [OPTIONS] ARTIFACT...|-\n"
    "Check NInfer v3 artifacts: header, catalog rules (spec 11.1), every file's\n"
    "header, length and fill, and every object digest in metadata.integrity.\n"
    "'-' reads a stream (optionally zstd-compressed) from standard input.\n"
    "\n"
    "  --json               one JSON record per operand on stdout\n"
    "  --sums               after a clean check, print '<sha256>  <file>' for the\n"
    "                       entry and each part (for sha256sum -c)\n"
    "  --check-sums FILE    check every file of the artifact against FILE\n"
    "                       (names relative to FILE's directory)\n"
    "  --no-digests         skip object digests (structure only)\n"
    "  --component C[,C...] check only what these components need: the files holding\n"
    "                       their objects (a partial download) and those objects'\n"
    "                       digests; targets come along (mtp brings text)\n"
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
    bool json, sums, no_digests, quiet, deep;
    int progress;
    const char *check_sums;
    nf_open_opts open;
    unsigned threads;
} opt;

/* Where object o's bytes lie: one {"file", "file_offset", "bytes"} per file
 * (spec 11.2's mapping), as JSON (json != NULL) and as text for a message.
 * Returns the path of the only file it lies in, or NULL when it spans
 * several. */
static const char *object_segments(const nf_artifact *a, const nf_object *o, nf_jval *json,
                                   char *text, size_t tn)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    bool *need = calloc(c->n_files ? c->n_files : 1, sizeof *need);
    const char *only = NULL;
    size_t used = 0, nseg = 0;
    if (tn)
        text[0] = 0;
    if (!need)
        return NULL;
    nf_artifact_files_touched(a, o->offset, o->bytes, need);
    uint64_t end = o->offset + o->bytes;
    for (size_t i = 0; i < c->n_files; i++) {
        if (!need[i])
            continue;
        const nf_file *f = &c->files[i];
        uint64_t b = o->offset > f->logical_offset ? o->offset : f->logical_offset;
        uint64_t fe = f->logical_offset + f->payload_bytes, e = end < fe ? end : fe;
        uint64_t foff = nf_artifact_file_payload_start(a, i) + (b - f->logical_offset);
        const char *p = nf_artifact_file_path(a, i);
        if (json) {
            nf_jval *sg = nf_jnew_object();
            nf_jobj_set(sg, "file", nf_jnew_string(p));
            nf_jobj_set(sg, "file_offset", nf_jnew_u64(foff));
            nf_jobj_set(sg, "bytes", nf_jnew_u64(e - b));
            nf_jarr_push(json, sg);
        }
        if (used < tn) {
            int k = snprintf(text + used, tn - used, "%s%s bytes [%llu, +%llu)", nseg ? ", " : "",
                             p, (unsigned long long)foff, (unsigned long long)(e - b));
            used += k > 0 ? (size_t)k : 0;
        }
        only = nseg++ ? NULL : p;
    }
    free(need);
    return only;
}

/* Streams: hash every object with a digest as the payload passes. */
static int stream_digests(nf_artifact *a, const bool *want, char (*got)[65], nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t cap = 4u << 20;
    unsigned char *buf = malloc(cap);
    nf_seqhash *h = nf_seqhash_new(c, want, got);
    int rc = buf && h ? 0 : -1;
    if (rc)
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    for (uint64_t pos = 0; !rc && pos < c->payload_bytes;) {
        size_t n = c->payload_bytes - pos > cap ? cap : (size_t)(c->payload_bytes - pos);
        ssize_t r = nf_artifact_stream_read(a, buf, n, d);
        if (r < 0 || (size_t)r < n || nf_seqhash_feed(h, pos, buf, n) < 0)
            rc = -1;
        pos += n;
    }
    if (!rc && nf_artifact_stream_finish(a, d) < 0)
        rc = -1;
    nf_seqhash_free(h);
    free(buf);
    return rc;
}

/* --deep: every rule of the codec contract over every tensor (DESIGN 7, 13). */
static void deep_check(nf_artifact *a, const bool *only, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *o = &c->objects[i];
        if ((only && !only[i]) || o->kind != NF_OBJ_TENSOR || o->enc_status != NF_ENC_OK || !o->has_bytes)
            continue;
        nf_tensor_enc te;
        if (nf_tensor_enc_init(&te, o->format, o->layout, o->dims, o->rank, o->divisors, NULL) !=
            NF_ENC_OK)
            continue;
        if (te.format == NF_FMT_BF16 || te.format == NF_FMT_FP32 || te.format == NF_FMT_INT32)
            continue; /* every bit pattern is valid */
        uint8_t *buf = malloc(o->bytes ? o->bytes : 1);
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/objects/%zu", i);
        if (!buf) {
            nf_diag_add(d, NF_C_IO, ptr, "out of memory for %llu bytes", (unsigned long long)o->bytes);
            continue;
        }
        nf_codec_check ck;
        if (nf_artifact_read(a, o->offset, buf, o->bytes, d) == 0 &&
            nf_codec_validate(&te, buf, o->bytes, &ck) > 0) {
            for (int r = 0; r < NF_CR_COUNT_; r++) {
                if (!ck.count[r])
                    continue;
                char msg[256];
                nf_codec_finding_str(&te, &ck.first[r], msg, sizeof msg);
                nf_diag_add(d, NF_C_CODES, ptr, "object \"%s\": %s%s%llu %s finding%s in all",
                            o->id, msg, "; ", (unsigned long long)ck.count[r],
                            nf_codec_rule_name((nf_codec_rule)r), ck.count[r] == 1 ? "" : "s");
            }
        }
        free(buf);
    }
}

/* Find FILE's line for path in the sums text; returns the hex or NULL. */
static const char *sums_lookup(char *text, const char *sums_dir, const char *path)
{
    char *want = realpath(path, NULL);
    const char *found = NULL;
    for (char *line = text; line && *line && !found;) {
        char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        if (ll > 66 && (line[64] == ' ') && (line[65] == ' ' || line[65] == '*')) {
            char *name = strndup(line + 66, ll - 66);
            char *full = name ? nf_path_join(sums_dir, name) : NULL;
            char *rp = full ? realpath(full, NULL) : NULL;
            if (rp && want && strcmp(rp, want) == 0)
                found = line;
            free(rp);
            free(full);
            free(name);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(want);
    return found;
}

/* Was a part-missing diagnostic already given for path? */
static bool said_missing(const nf_diags *d, const char *path)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->v[i].code == NF_C_PART_MISSING && d->v[i].file && !strcmp(d->v[i].file, path))
            return true;
    return false;
}

static void check_sums(nf_artifact *a, nf_diags *d)
{
    FILE *f = fopen(opt.check_sums, "r");
    if (!f) {
        nf_diag_add(d, NF_C_IO, "", "cannot read %s", opt.check_sums);
        return;
    }
    char *text = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&text, &cap, 0, f);
    fclose(f);
    if (n < 0) {
        free(text);
        text = strdup("");
    }
    char *dir = nf_dirname_dup(opt.check_sums);
    const nf_catalog *c = nf_artifact_catalog(a);
    for (size_t i = 0; i < c->n_files; i++) {
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
        const char *line = sums_lookup(text, dir, p);
        if (!line) {
            nf_diag_addf(d, NF_C_DIGEST, p, "", "no line for this file in %s", opt.check_sums);
            continue;
        }
        char hex[65];
        int rc = nf_digest_file(p, hex);
        if (rc < 0)
            nf_diag_addf(d, NF_C_IO, p, "", "cannot read: %s", strerror(-rc));
        else if (strncmp(hex, line, 64) != 0)
            nf_diag_addf(d, NF_C_DIGEST, p, "", "sha256 %s differs from %s's %.64s", hex,
                         opt.check_sums, line);
    }
    free(dir);
    free(text);
}

static int verify_one(const char *path)
{
    nf_diags d = NF_DIAGS_INIT;
    d.file = path;
    nf_operand op;
    size_t checked = 0;
    nf_jval *rec = opt.json ? nf_jnew_object() : NULL;
    nf_jval *unchecked = opt.json ? nf_jnew_array() : NULL;
    /* digest diagnostics (index in d) and their objects, for "segments" */
    size_t *dig_diag = NULL, n_dig = 0;
    nf_jval *dig_segs = NULL;
    if (nf_operand_open(&op, path, &opt.open, &d) == 0) {
        nf_artifact *a = op.a;
        const nf_catalog *c = nf_artifact_catalog(a);
        bool stream = nf_artifact_is_stream(a);
        /* --component: only the objects (and so the files) the selection needs */
        bool *only = NULL;
        bool *files = calloc(c->n_files ? c->n_files : 1, sizeof *files);
        if (opt.component && files) {
            bool *comps = calloc(c->n_components ? c->n_components : 1, sizeof *comps);
            only = calloc(c->n_objects ? c->n_objects : 1, sizeof *only);
            if (comps && only)
                nf_select(c, opt.component, true, comps, only, &d);
            for (size_t i = 0; only && i < c->n_objects; i++)
                if (only[i])
                    nf_artifact_files_touched(a, c->objects[i].offset, c->objects[i].bytes, files);
            free(comps);
        }
        /* every file once: what fails here leaves its objects unchecked */
        bool *bad = calloc(c->n_files ? c->n_files : 1, sizeof *bad);
        for (size_t i = 0; !stream && bad && i < c->n_files; i++)
            if (!opt.component || i == 0 || (files && files[i]))
                bad[i] = nf_artifact_file_check(a, i, &d) < 0;
        free(files);
        for (size_t i = 0; i < c->n_objects; i++) {
            const nf_object *o = &c->objects[i];
            char ptr[64];
            snprintf(ptr, sizeof ptr, "/objects/%zu", i);
            if (o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_UNSUPPORTED)
                nf_diag_add(&d, NF_C_UNSUPPORTED, ptr,
                            "format \"%s\" with layout \"%s\" is unknown to this build%s; its "
                            "encoded size cannot be checked",
                            o->format_name, o->layout_name,
                            nf_format_reserved_note(o->format_name,
                                                    o->format_name ? strlen(o->format_name) : 0));
            if (o->kind == NF_OBJ_RESOURCE && o->encoding_name &&
                strcmp(o->encoding_name, "raw_bytes_v1") != 0)
                nf_diag_add(&d, NF_C_UNSUPPORTED, ptr, "resource encoding \"%s\" is unknown",
                            o->encoding_name);
        }
        bool ranges_ok = true;
        for (size_t i = 0; i < d.n; i++) {
            nf_code k = d.v[i].code;
            if (k == NF_C_BOUNDS || k == NF_C_OVERLAP || k == NF_C_RANGE || k == NF_C_ORDER)
                ranges_ok = false;
        }
        char (*got)[65] = calloc(c->n_objects ? c->n_objects : 1, sizeof *got);
        bool *want = calloc(c->n_objects ? c->n_objects : 1, sizeof *want);
        bool *skipped = calloc(c->n_objects ? c->n_objects : 1, sizeof *skipped);
        bool *touch = calloc(c->n_files ? c->n_files : 1, sizeof *touch);
        for (size_t i = 0; i < c->n_objects && want && skipped; i++) {
            want[i] = !opt.no_digests && c->objects[i].has_digest &&
                      c->objects[i].has_offset && c->objects[i].has_bytes &&
                      (!only || only[i]);
            if (!want[i] || stream || !bad || !touch)
                continue;
            /* an object in a file that is missing or broken cannot be hashed:
             * it is listed as unchecked, not counted as checked */
            const nf_object *o = &c->objects[i];
            if (!ranges_ok)
                continue;
            nf_artifact_files_touched(a, o->offset, o->bytes, touch);
            for (size_t f = 0; f < c->n_files; f++) {
                if (touch[f] && bad[f])
                    skipped[i] = true;
                touch[f] = false;
            }
            if (skipped[i])
                want[i] = false;
        }
        free(touch);
        size_t n_want = 0;
        for (size_t i = 0; want && i < c->n_objects; i++)
            n_want += want[i];
        if (!got || !want) {
            nf_diag_add(&d, NF_C_IO, "", "out of memory");
        } else if (stream) {
            if (ranges_ok)
                stream_digests(a, want, got, &d);
        } else if (!opt.no_digests && ranges_ok && n_want) {
            nf_progress pr;
            uint64_t total = 0;
            for (size_t i = 0; i < c->n_objects; i++)
                total += want[i] ? c->objects[i].bytes : 0;
            nf_progress_init(&pr, "hashing", total, opt.quiet ? -1 : opt.progress);
            nf_digest_objects(a, want, got, opt.threads, nf_progress_update, &pr, &d);
            nf_progress_done(&pr);
        }
        if (got && want && (stream || !opt.no_digests) && ranges_ok)
            for (size_t i = 0; i < c->n_objects; i++) {
                if (!want[i] || !got[i][0])
                    continue;
                checked++;
                char said[65];
                nf_object_digest_hex(&c->objects[i], said);
                if (strcmp(got[i], said) != 0) {
                    char ptr[96], where[1024] = "";
                    snprintf(ptr, sizeof ptr, "/objects/%zu", i);
                    const char *file = NULL;
                    nf_jval *segs = NULL;
                    if (!stream) {
                        segs = opt.json ? nf_jnew_array() : NULL;
                        file = object_segments(a, &c->objects[i], segs, where, sizeof where);
                    }
                    size_t at = d.n;
                    nf_diag_addf(&d, NF_C_DIGEST, file ? file : path, ptr,
                                 "object \"%s\": sha256 %s, metadata.integrity says %s%s%s",
                                 c->objects[i].id, got[i], said,
                                 where[0] ? "; its bytes: " : "", where);
                    if (segs && d.n == at + 1) {
                        size_t *nd = realloc(dig_diag, (n_dig + 1) * sizeof *nd);
                        if (nd)
                            dig_diag = nd;
                        if (!dig_segs)
                            dig_segs = nf_jnew_array();
                        if (nd && dig_segs) {
                            dig_diag[n_dig++] = at;
                            nf_jarr_push(dig_segs, segs);
                            segs = NULL;
                        }
                    }
                    nf_jval_free(segs);
                }
            }
        /* everything that should have been hashed and was not */
        for (size_t i = 0; unchecked && want && skipped && got && i < c->n_objects; i++)
            if (skipped[i] || (want[i] && !got[i][0]))
                nf_jarr_push(unchecked, nf_jnew_string(c->objects[i].id));
        free(skipped);
        free(bad);
        free(got);
        free(want);
        if (opt.deep && !stream && ranges_ok)
            deep_check(a, only, &d);
        free(only);
        if (opt.check_sums && !stream)
            check_sums(a, &d);
        int ex = nf_diags_exit(&d);
        if (opt.sums && ex == 0 && !stream) {
            for (size_t i = 0; i < c->n_files; i++) {
                char hex[65];
                const char *p = nf_artifact_file_path(a, i);
                int rc = nf_digest_file(p, hex);
                if (rc < 0)
                    nf_diag_addf(&d, NF_C_IO, p, "", "cannot read: %s", strerror(-rc));
                else if (!opt.json)
                    printf("%s  %s\n", hex, nf_basename(p));
            }
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
            nf_jobj_set(rec, "digests_checked", nf_jnew_u64(checked));
            nf_jobj_set(rec, "digests_unchecked", unchecked);
            unchecked = NULL;
        }
        nf_operand_close(&op);
    }
    int ex = nf_diags_exit(&d);
    if (rec) {
        nf_jobj_set(rec, "file", nf_jnew_string(path));
        nf_jobj_set(rec, "exit", nf_jnew_i64(ex));
        nf_jval *diags = nf_diags_json(&d);
        for (size_t k = 0; k < n_dig; k++) {
            nf_jval *dg = nf_jarr_get(diags, dig_diag[k]);
            if (dg)
                nf_jobj_set(dg, "segments", nf_jval_ref(nf_jarr_get(dig_segs, k)));
        }
        nf_jobj_set(rec, "diagnostics", diags);
        nf_print_json_line(rec);
        nf_jval_free(rec);
    } else {
        nf_diags_print(&d, nf_prog, stderr);
        if (ex == 0 && !opt.quiet && !opt.sums)
            printf("%s: OK (%zu digests checked)\n", path, checked);
    }
    nf_jval_free(unchecked);
    nf_jval_free(dig_segs);
    free(dig_diag);
    nf_diags_free(&d);
    return ex;
}

int main(int argc, char **argv)
{
    enum { O_JSON = 256, O_SUMS, O_CHECK, O_NODIG, O_MAXJ, O_THREADS, O_PROG, O_VERSION, O_DEEP,
           O_COMPONENT };
    static const struct option lo[] = {
        {"component", required_argument, 0, O_COMPONENT},
        {"deep", no_argument, 0, O_DEEP},
        {"json", no_argument, 0, O_JSON},
        {"sums", no_argument, 0, O_SUMS},
        {"check-sums", required_argument, 0, O_CHECK},
        {"no-digests", no_argument, 0, O_NODIG},
        {"max-json-bytes", required_argument, 0, O_MAXJ},
        {"threads", required_argument, 0, O_THREADS},
        {"quiet", no_argument, 0, 'q'},
        {"progress", no_argument, 0, O_PROG},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    nf_prog = "ninfer-verify";
    opt.open.check_fill = true;
    int c;
    uint64_t v;
    opterr = 0; /* nf_bad_option says it, once */
    while ((c = getopt_long(argc, argv, "qh", lo, NULL)) != -1) {
        switch (c) {
        case O_JSON: opt.json = true; break;
        case O_SUMS: opt.sums = true; break;
        case O_CHECK: opt.check_sums = optarg; break;
        case O_NODIG: opt.no_digests = true; break;
        case O_DEEP: opt.deep = true; break;
        case O_COMPONENT:
            if (nf_component_arg_check(optarg))
                return NF_EXIT_USAGE;
            opt.component = optarg;
            break;
        case O_MAXJ:
            if (!nf_parse_size(optarg, &v) || v == 0)
                return nf_usage_error("bad --max-json-bytes '%s'", optarg);
            opt.open.max_json_bytes = v;
            break;
        case O_THREADS:
            if (!nf_parse_u64(optarg, &v) || v == 0 || v > 64)
                return nf_usage_error("bad --threads '%s' (1..64)", optarg);
            opt.threads = (unsigned)v;
            break;
        case 'q': opt.quiet = true; opt.progress = -1; break;
        case O_PROG: opt.progress = 1; break;
        case 'h': fputs(usage, stdout); return nf_stdout_close(0);
        case O_VERSION: nf_print_version(); return nf_stdout_close(0);
        default: return nf_bad_option(argc, argv, lo);
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
    int ex = 0, stdin_used = 0;
    for (int i = optind; i < argc; i++) {
        if (strcmp(argv[i], "-") == 0 && stdin_used++)
            return nf_usage_error("'-' may be given once");
    }
    for (int i = optind; i < argc; i++)
        ex = nf_exit_combine(ex, verify_one(argv[i]));
    return nf_stdout_close(ex);
}
