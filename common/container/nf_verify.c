/* nf_verify.c — the checks of ninfer-verify as a library call (spec 11.1,
 * 11.2; DESIGN 3, 9, 13). Phases: select what to check, check the files,
 * report formats this build does not know, choose the digests that can be
 * checked, hash (files in parallel, or a stream as it passes), compare,
 * and --deep's codec validation. */
#include "nf_verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_codec.h"
#include "nf_digest.h"
#include "nf_objhash.h"
#include "nf_layout.h"
#include "nf_select.h"

size_t nf_object_segments(const nf_artifact *a, const nf_object *o, nf_segment *seg, size_t max)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t first, last, n = 0;
    if (!nf_artifact_file_span(a, o->offset, o->bytes, &first, &last))
        return 0;
    uint64_t end = o->offset + o->bytes;
    for (size_t i = first; i <= last; i++, n++) {
        const nf_file *f = &c->files[i];
        uint64_t b = o->offset > f->logical_offset ? o->offset : f->logical_offset;
        uint64_t fe = f->logical_offset + f->payload_bytes, e = end < fe ? end : fe;
        if (n < max)
            seg[n] = (nf_segment){i, nf_artifact_file_payload_start(a, i) + (b - f->logical_offset),
                                  e - b};
    }
    return n;
}

/* "; its bytes: FILE bytes [off, +n), ..." for a digest message (cut to
 * fit tn), and the path of the only file the object lies in (NULL when it
 * spans several). */
const char *nf_object_segments_text(const nf_artifact *a, const nf_object *o, char *text,
                                    size_t tn)
{
    nf_segment seg[8];
    size_t n = nf_object_segments(a, o, seg, 8), used = 0;
    text[0] = 0;
    for (size_t k = 0; k < n && k < 8 && used < tn; k++) {
        int w = snprintf(text + used, tn - used, "%s%s bytes [%llu, +%llu)",
                         k ? ", " : "; its bytes: ", nf_artifact_file_path(a, seg[k].file),
                         (unsigned long long)seg[k].file_offset, (unsigned long long)seg[k].bytes);
        used += w > 0 ? (size_t)w : 0;
    }
    if (n > 8 && used < tn)
        snprintf(text + used, tn - used, ", and %zu more", n - 8);
    return n == 1 ? nf_artifact_file_path(a, seg[0].file) : NULL;
}

/* Streams: hash every wanted object as the payload passes. */
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

/* deep: every rule of the codec contract over every selected tensor
 * (DESIGN 7, 13), one tensor in memory at a time. */
static void deep_check(nf_artifact *a, const bool *only, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *o = &c->objects[i];
        if ((only && !only[i]) || o->kind != NF_OBJ_TENSOR || o->enc_status != NF_ENC_OK ||
            !o->has_bytes)
            continue;
        nf_tensor_enc te;
        if (nf_tensor_enc_init(&te, o->format, o->layout, o->dims, o->rank, o->divisors, NULL) !=
            NF_ENC_OK)
            continue;
        if (te.format == NF_FMT_BF16 || te.format == NF_FMT_FP32 || te.format == NF_FMT_INT32)
            continue; /* every bit pattern is valid */
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/objects/%zu", i);
        uint8_t *buf = o->bytes <= SIZE_MAX ? malloc(o->bytes ? (size_t)o->bytes : 1) : NULL;
        if (!buf) {
            nf_diag_add(d, NF_C_IO, ptr, "out of memory for %llu bytes",
                        (unsigned long long)o->bytes);
            continue;
        }
        nf_codec_check ck;
        if (nf_artifact_read(a, o->offset, buf, (size_t)o->bytes, d) == 0 &&
            nf_codec_validate(&te, buf, (size_t)o->bytes, &ck) > 0) {
            for (int r = 0; r < NF_CR_COUNT_; r++) {
                if (!ck.count[r])
                    continue;
                char msg[256];
                nf_codec_finding_str(&te, &ck.first[r], msg, sizeof msg);
                nf_diag_add(d, NF_C_CODES, ptr, "object \"%s\": %s; %llu %s finding%s in all",
                            o->id, msg, (unsigned long long)ck.count[r],
                            nf_codec_rule_name((nf_codec_rule)r), ck.count[r] == 1 ? "" : "s");
            }
        }
        free(buf);
    }
}

/* Objects whose format, layout or resource encoding this build does not
 * know: `unsupported` (exit 4), their sizes unchecked. */
static void unknown_encodings(const nf_catalog *c, nf_diags *d)
{
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *o = &c->objects[i];
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/objects/%zu", i);
        if (o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_UNSUPPORTED)
            nf_diag_add(d, NF_C_UNSUPPORTED, ptr,
                        "format \"%s\" with layout \"%s\" is unknown to this build%s; its "
                        "encoded size cannot be checked",
                        o->format_name, o->layout_name,
                        nf_format_reserved_note(o->format_name,
                                                o->format_name ? strlen(o->format_name) : 0));
        if (o->kind == NF_OBJ_RESOURCE && o->encoding_name &&
            strcmp(o->encoding_name, "raw_bytes_v1") != 0)
            nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "resource encoding \"%s\" is unknown",
                        o->encoding_name);
    }
}

/* The state of one verification, freed by verify_free. */
typedef struct {
    nf_artifact *a;
    const nf_catalog *c;
    const nf_verify_opts *o;
    bool stream, ranges_ok;
    bool *only;    /* [n_objects] the selection's objects, NULL: all */
    bool *bad;     /* [n_files] a file that failed its check */
    bool *want;    /* [n_objects] digests to compute */
    bool *skipped; /* [n_objects] digests that cannot be computed */
    char (*got)[65];
} verify_state;

static void verify_free(verify_state *s)
{
    free(s->bad);
    free(s->want);
    free(s->skipped);
    free(s->got);
}

/* --component: the selected components and objects (kept in r), and so
 * the files, to check. */
static int select_objects(verify_state *s, bool *files, nf_verify_result *r, nf_diags *d)
{
    const nf_catalog *c = s->c;
    r->components = calloc(c->n_components ? c->n_components : 1, sizeof *r->components);
    s->only = r->objects = calloc(c->n_objects ? c->n_objects : 1, sizeof *s->only);
    if (!r->components || !s->only)
        return -1;
    nf_select(c, s->o->component, true, r->components, s->only, d);
    for (size_t i = 0; i < c->n_objects; i++)
        if (s->only[i])
            nf_artifact_files_touched(s->a, c->objects[i].offset, c->objects[i].bytes, files);
    return 0;
}

/* Every file (of the selection) once: what fails here leaves its objects
 * unchecked. */
static void check_files(verify_state *s, const bool *files, nf_diags *d)
{
    for (size_t i = 0; !s->stream && i < s->c->n_files; i++)
        if (files[i])
            s->bad[i] = nf_artifact_file_check(s->a, i, d) < 0;
}

/* The digests to compute: objects with a digest, an offset and a size, in
 * the selection, whose bytes lie in files that passed their check. */
static void choose_digests(verify_state *s)
{
    const nf_catalog *c = s->c;
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *o = &c->objects[i];
        s->want[i] = !s->o->no_digests && o->has_digest && o->has_offset && o->has_bytes &&
                     (!s->only || s->only[i]);
        if (!s->want[i] || s->stream || !s->ranges_ok)
            continue;
        size_t first, last;
        if (nf_artifact_file_span(s->a, o->offset, o->bytes, &first, &last))
            for (size_t f = first; f <= last && !s->skipped[i]; f++)
                s->skipped[i] = s->bad[f];
        if (s->skipped[i])
            s->want[i] = false;
    }
}

/* Compare what was computed with metadata.integrity: one `digest`
 * diagnostic per mismatch, recorded in r. */
static int compare_digests(verify_state *s, nf_verify_result *r, nf_diags *d)
{
    const nf_catalog *c = s->c;
    for (size_t i = 0; i < c->n_objects; i++) {
        if (!s->want[i] || !s->got[i][0])
            continue;
        r->digests_checked++;
        char said[65];
        nf_object_digest_hex(&c->objects[i], said);
        if (strcmp(s->got[i], said) == 0)
            continue;
        char ptr[64], where[1024] = "";
        snprintf(ptr, sizeof ptr, "/objects/%zu", i);
        const char *file = s->stream ? NULL : nf_object_segments_text(s->a, &c->objects[i], where, sizeof where);
        size_t at = d->n;
        nf_diag_addf(d, NF_C_DIGEST, file ? file : nf_artifact_path(s->a), ptr,
                     "object \"%s\": sha256 %s, metadata.integrity says %s%s", c->objects[i].id,
                     s->got[i], said, where);
        if (d->n == at + 1) {
            nf_verify_mismatch *m = realloc(r->mismatch, (r->n_mismatch + 1) * sizeof *m);
            if (!m)
                return -1;
            r->mismatch = m;
            m[r->n_mismatch++] = (nf_verify_mismatch){at, i};
        }
    }
    return 0;
}

/* Everything that should have been hashed and was not, in catalog order. */
static int list_unchecked(verify_state *s, nf_verify_result *r)
{
    size_t n = 0;
    for (size_t i = 0; i < s->c->n_objects; i++)
        n += s->skipped[i] || (s->want[i] && !s->got[i][0]);
    if (!n)
        return 0;
    r->unchecked = malloc(n * sizeof *r->unchecked);
    if (!r->unchecked)
        return -1;
    for (size_t i = 0; i < s->c->n_objects; i++)
        if (s->skipped[i] || (s->want[i] && !s->got[i][0]))
            r->unchecked[r->n_unchecked++] = i;
    return 0;
}

/* The bytes of file i before its payload as they must be once its checks
 * passed (header, catalog text and its spaces, zero fill), into h. */
static void hash_file_head(nf_artifact *a, size_t i, nf_sha256 *h)
{
    const nf_header *hd = nf_artifact_header(a);
    unsigned char raw[32], zero[NF_PAGE] = {0};
    nf_header_encode(raw, i, hd->json_bytes, hd->artifact_id);
    nf_sha256_update(h, raw, 32);
    uint64_t at = 32;
    if (i == 0) {
        size_t jl;
        const char *j = nf_artifact_json(a, &jl);
        nf_sha256_update(h, j, jl);
        char sp[NF_PAGE];
        memset(sp, ' ', sizeof sp);
        for (uint64_t pad = nf_artifact_json_pad(a); pad;) {
            size_t k = pad > sizeof sp ? sizeof sp : (size_t)pad;
            nf_sha256_update(h, sp, k);
            pad -= k;
        }
        at = hd->metadata_end;
    }
    nf_sha256_update(h, zero, (size_t)(nf_artifact_file_payload_start(a, i) - at));
}

/* A URL artifact: every wanted object hashed as its bytes arrive, in one
 * ordered pass over the ranges (nf_scan); with file_sha the good files
 * whole, each file's digest from the same bytes (the bytes before its
 * payload as its checks proved them). */
static void remote_digests(verify_state *s, nf_verify_result *res, nf_diags *d)
{
    const nf_catalog *c = s->c;
    bool whole = res->file_sha != NULL;
    nf_range *r = malloc((c->n_objects + c->n_files + 1) * sizeof *r);
    nf_sha256 **fh = whole ? calloc(c->n_files, sizeof *fh) : NULL;
    nf_seqhash *h = nf_seqhash_new(c, s->want, s->got);
    size_t n = 0;
    uint64_t total = 0;
    if (!r || !h || (whole && !fh)) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    if (whole) {
        for (size_t i = 0; i < c->n_files; i++) {
            if (!res->files[i] || s->bad[i])
                continue;
            if (!(fh[i] = nf_sha256_new())) {
                nf_diag_add(d, NF_C_IO, "", "out of memory");
                goto out;
            }
            hash_file_head(s->a, i, fh[i]);
            if (c->files[i].payload_bytes)
                r[n++] = (nf_range){c->files[i].logical_offset, c->files[i].payload_bytes};
            total += c->files[i].payload_bytes;
        }
    } else {
        /* the wanted objects, neighbours closer than 1 MiB as one range */
        for (size_t i = 0; i < c->n_objects; i++) {
            const nf_object *o = &c->objects[i];
            if (!s->want[i] || !o->bytes)
                continue;
            total += o->bytes;
            if (n && o->offset >= r[n - 1].off + r[n - 1].len &&
                o->offset - (r[n - 1].off + r[n - 1].len) < (1u << 20))
                r[n - 1].len = o->offset + o->bytes - r[n - 1].off;
            else
                r[n++] = (nf_range){o->offset, o->bytes};
        }
    }
    nf_scan_opts so = {0, 4u << 20, 4u << 20};
    nf_scan *sc = n ? nf_scan_new(s->a, r, n, &so, d) : NULL;
    if (n && !sc)
        goto out;
    size_t file, len;
    uint64_t off, done = 0;
    const void *buf;
    while (sc && nf_scan_next(sc, &file, &off, &buf, &len, d) > 0) {
        if (nf_seqhash_feed(h, off, buf, len) < 0) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            break;
        }
        if (fh && fh[file])
            nf_sha256_update(fh[file], buf, len);
        done += len;
        if (s->o->progress)
            s->o->progress(s->o->progress_ctx, done, total);
    }
    nf_scan_free(sc);
    for (size_t i = 0; whole && done == total && i < c->n_files; i++)
        if (fh[i]) {
            nf_sha256_final(fh[i], res->file_sha[i]);
            fh[i] = NULL;
        }
out:
    for (size_t i = 0; fh && i < c->n_files; i++)
        nf_sha256_free(fh[i]);
    free(fh);
    nf_seqhash_free(h);
    free(r);
}

static void hash_objects(verify_state *s, nf_verify_result *r, nf_diags *d)
{
    const nf_catalog *c = s->c;
    if (s->stream) {
        if (s->ranges_ok)
            stream_digests(s->a, s->want, s->got, d);
        return;
    }
    if (nf_artifact_is_remote(s->a)) {
        if (s->ranges_ok && (!s->o->no_digests || r->file_sha))
            remote_digests(s, r, d);
        return;
    }
    if (r->file_sha) {
        /* one read of each good file for its own digest and its objects' */
        bool *good = malloc(c->n_files ? c->n_files : 1);
        if (!good) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return;
        }
        for (size_t i = 0; i < c->n_files; i++)
            good[i] = r->files[i] && !s->bad[i];
        if (s->ranges_ok)
            nf_digest_files_objects(s->a, good, r->file_sha, s->want, s->got, s->o->threads,
                                    s->o->progress, s->o->progress_ctx, d);
        free(good);
        return;
    }
    size_t n_want = 0;
    for (size_t i = 0; i < c->n_objects; i++)
        n_want += s->want[i];
    if (!s->o->no_digests && s->ranges_ok && n_want)
        nf_digest_objects(s->a, s->want, s->got, s->o->threads, s->o->progress,
                          s->o->progress_ctx, d);
}

int nf_verify(nf_artifact *a, const nf_verify_opts *o, nf_verify_result *r, nf_diags *d)
{
    static const nf_verify_opts none = {0};
    memset(r, 0, sizeof *r);
    verify_state s = {.a = a, .c = nf_artifact_catalog(a), .o = o ? o : &none,
                      .stream = nf_artifact_is_stream(a), .ranges_ok = true};
    const nf_catalog *c = s.c;
    size_t no = c->n_objects ? c->n_objects : 1, nfl = c->n_files ? c->n_files : 1;
    bool *files = r->files = calloc(nfl, sizeof *files);
    s.bad = calloc(nfl, sizeof *s.bad);
    s.want = calloc(no, sizeof *s.want);
    s.skipped = calloc(no, sizeof *s.skipped);
    s.got = calloc(no, sizeof *s.got);
    if (s.o->file_digests && !s.stream)
        r->file_sha = calloc(nfl, sizeof *r->file_sha);
    if (!files || !s.bad || !s.want || !s.skipped || !s.got ||
        (s.o->file_digests && !s.stream && !r->file_sha) ||
        (s.o->component && select_objects(&s, files, r, d) < 0)) {
        verify_free(&s);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return nf_diags_exit(d);
    }
    r->n_files = s.stream ? 0 : c->n_files;
    for (size_t i = 0; !s.o->component && i < c->n_files; i++)
        files[i] = true;
    files[0] = true; /* the entry: its header and catalog are always read */
    check_files(&s, files, d);
    if (s.stream) {
        free(r->files);
        r->files = NULL;
    }
    unknown_encodings(c, d);
    for (size_t i = 0; i < d->n; i++) {
        nf_code k = d->v[i].code;
        if (k == NF_C_BOUNDS || k == NF_C_OVERLAP || k == NF_C_RANGE || k == NF_C_ORDER)
            s.ranges_ok = false;
    }
    choose_digests(&s);
    hash_objects(&s, r, d);
    if (((s.stream || !s.o->no_digests) && s.ranges_ok && compare_digests(&s, r, d) < 0) ||
        list_unchecked(&s, r) < 0)
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    /* digests there but unread (a missing, short or unreadable file) fail
     * the run for that reason, which the diagnostics already give: it is
     * not integrity, and must not turn a missing part (3) into 1 */
    if (s.o->require_digests && !r->digests_checked && !r->n_unchecked)
        nf_diag_add(d, NF_C_INTEGRITY, "/metadata/integrity",
                    "no object digest was checked (metadata.integrity has none for what was "
                    "checked); --require-digests asks for one at least");
    if (s.o->deep && !s.stream && s.ranges_ok)
        deep_check(a, s.only, d);
    verify_free(&s);
    return nf_diags_exit(d);
}

void nf_verify_result_free(nf_verify_result *r)
{
    free(r->unchecked);
    free(r->mismatch);
    free(r->files);
    free(r->file_sha);
    free(r->components);
    free(r->objects);
    memset(r, 0, sizeof *r);
}
