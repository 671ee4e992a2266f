/* nf_split.c — resharding by copying the logical payload. */
#include "nf_split.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_objhash.h"
#include "nf_verify.h"
#include "nf_util.h"
#include "nf_writer.h"

#define CHUNK (8u << 20)

struct copy_ctx {
    nf_writer *w;
    nf_diags *d;
    const nf_out_opts *o;
    uint64_t done, total;
};

static void progress(const nf_out_opts *o, uint64_t done, uint64_t total)
{
    if (o->progress)
        o->progress(o->progress_ctx, done, total);
}

static int copy_seg(void *vctx, size_t file, nf_rfile *src, int fd, uint64_t foff, uint64_t roff,
                    uint64_t len)
{
    struct copy_ctx *c = vctx;
    (void)file;
    (void)src;
    /* in slices, so the progress line moves */
    while (len) {
        uint64_t k = len > (256u << 20) ? (256u << 20) : len;
        if (nf_writer_copy(c->w, roff, fd, foff, k, c->d) < 0)
            return -1;
        len -= k;
        roff += k;
        foff += k;
        c->done += k;
        progress(c->o, c->done, c->total);
    }
    return 0;
}

/* A carried digest that the bytes read do not match: the input's fault, so
 * the diagnostic names the input file holding them (the entry when they
 * span several; the stream for one), with where they lie, never the
 * output. */
static void digest_error(nf_diags *d, nf_artifact *src, size_t i, const char *got,
                         const char *carried)
{
    const nf_catalog *c = nf_artifact_catalog(src);
    char ptr[64], where[1024] = "";
    snprintf(ptr, sizeof ptr, "/objects/%zu", i);
    const char *file = nf_artifact_is_stream(src)
                           ? NULL
                           : nf_object_segments_text(src, &c->objects[i], where, sizeof where);
    nf_diag_addf(d, NF_C_DIGEST, file ? file : nf_artifact_path(src), ptr,
                 "object \"%s\": sha256 %s, metadata.integrity says %s%s", c->objects[i].id,
                 got, carried, where);
}

static const char ZEROS64[] = "0000000000000000000000000000000000000000000000000000000000000000";

int nf_split(nf_artifact *src, const nf_out_opts *oo, nf_diags *d)
{
    nf_catalog *c = nf_artifact_catalog(src);
    bool stream_in = nf_artifact_is_stream(src);
    bool stream_out = !oo->out || strcmp(oo->out, "-") == 0;
    const char *entry = stream_out ? "-" : nf_basename(oo->out);
    size_t n = c->n_objects;
    bool *want = calloc(n ? n : 1, sizeof *want);
    char (*got)[65] = calloc(n ? n : 1, sizeof *got);
    char (*carried)[65] = calloc(n ? n : 1, sizeof *carried);
    bool hashing = false;
    int rc = -1;
    nf_writer *w = NULL;
    nf_plan plan = {0};
    unsigned char *buf = NULL;
    nf_seqhash *h = NULL;
    nf_scan *scan = NULL;
    nf_output *out_stream = NULL; /* the stream writer does not own it */
    if (!want || !got || !carried) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        nf_object *o = &c->objects[i];
        nf_object_digest_hex(o, carried[i]);
        if (oo->no_digests) {
            o->has_digest = false;
            continue;
        }
        /* check carried digests whenever the bytes pass through us anyway */
        want[i] = stream_in || oo->verify || (!o->has_digest && !stream_out);
        if (!o->has_digest && !stream_out)
            nf_object_set_digest_hex(o, ZEROS64); /* placeholder: same length as the digest */
        hashing |= want[i];
    }
    /* a reproducible id needs every object's digest in the catalog written */
    nf_write_opts wo = oo->w;
    size_t missing = 0;
    for (size_t i = 0; i < n; i++)
        missing += !c->objects[i].has_digest;
    if (nf_write_id_check(&wo, missing, "the catalog written", stream_out ? "(stdout)" : oo->out,
                          d) < 0)
        goto out;
    if (nf_plan_make(c, &wo, entry, !oo->no_digests, &plan, d) < 0)
        goto out;
    /* the files read: an output naming one is refused (DESIGN 3), standard
     * output too when it carries the stream or the caller's text */
    const char **inputs = calloc(c->n_files + 1, sizeof *inputs);
    size_t ni = 0;
    for (size_t i = 0; inputs && !stream_in && i < c->n_files; i++)
        inputs[ni++] = nf_artifact_file_path(src, i);
    if (inputs && stream_in)
        inputs[ni++] = "-"; /* a file redirected to standard input */
    if (!inputs) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    if (oo->text_stdout && nf_stdout_check(inputs, ni, d) < 0) {
        free(inputs);
        goto out;
    }
    if (oo->dry_run) {
        free(inputs);
        *oo->dry_run = plan; /* the caller shows it */
        memset(&plan, 0, sizeof plan);
        rc = 0;
        goto out;
    }
    if (stream_out && nf_stdout_check(inputs, ni, d) == 0)
        w = (out_stream = nf_output_open_fd(1, oo->zstd, false))
                ? nf_writer_open_stream(out_stream, &plan, &wo, d)
                : NULL;
    else if (!stream_out)
        w = nf_writer_open_files(oo->out, &plan, &wo, inputs, ni, d);
    free(inputs);
    if (!w)
        goto out;
    /* the writer has what it needs of the plan's text */
    free(plan.json);
    plan.json = NULL;
    bool remote = nf_artifact_is_remote(src);
    if (!hashing && !stream_in && !stream_out && !remote) {
        struct copy_ctx cc = {w, d, oo, 0, c->payload_bytes};
        if (nf_artifact_segments(src, 0, c->payload_bytes, copy_seg, &cc, d) != 0)
            goto out_w;
    } else {
        buf = malloc(CHUNK);
        h = hashing ? nf_seqhash_new(c, want, got) : NULL;
        if (!buf || (hashing && !h)) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto out_w;
        }
        size_t cursor = 0; /* the next object whose end has not passed */
        /* files are read in order through a scan (a URL artifact's ranges
         * fetched ahead, in parallel); a stream as it comes */
        nf_range all = {0, c->payload_bytes};
        nf_scan_opts so = {0, 4u << 20, 4u << 20};
        if (!stream_in && !(scan = nf_scan_new(src, &all, 1, &so, d)))
            goto out_w;
        for (uint64_t pos = 0; pos < c->payload_bytes;) {
            size_t k = c->payload_bytes - pos > CHUNK ? CHUNK : (size_t)(c->payload_bytes - pos);
            const void *got_buf = buf;
            if (stream_in) {
                ssize_t r = nf_artifact_stream_read(src, buf, k, d);
                if (r < 0 || (size_t)r != k)
                    goto out_w;
            } else {
                size_t file;
                uint64_t at;
                if (nf_scan_next(scan, &file, &at, &got_buf, &k, d) <= 0 || at != pos) {
                    if (!d->n)
                        nf_diag_add(d, NF_C_IO, "", "the payload ended early");
                    goto out_w;
                }
            }
            const unsigned char *bufp = got_buf;
            if (h && nf_seqhash_feed(h, pos, bufp, k) < 0) {
                nf_diag_add(d, NF_C_IO, "", "out of memory");
                goto out_w;
            }
            /* a carried digest that fails stops the copy before the object's
             * last bytes are written: a stream output is cut short (DESIGN 3) */
            bool bad_now = false;
            for (; h && cursor < n && c->objects[cursor].offset + c->objects[cursor].bytes <= pos + k;
                 cursor++)
                if (want[cursor] && got[cursor][0] && carried[cursor][0] &&
                    strcmp(carried[cursor], got[cursor]) != 0) {
                    digest_error(d, src, cursor, got[cursor], carried[cursor]);
                    bad_now = true;
                }
            if (bad_now)
                goto out_w;
            if (nf_writer_write(w, pos, bufp, k, d) < 0)
                goto out_w;
            pos += k;
            progress(oo, pos, c->payload_bytes);
        }
        if (stream_in && nf_artifact_stream_finish(src, d) < 0)
            goto out_w;
    }
    /* carried digests must match what passed; missing ones are filled in */
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        if (!want[i] || !got[i][0])
            continue;
        if (carried[i][0] && strcmp(carried[i], got[i]) != 0) {
            digest_error(d, src, i, got[i], carried[i]);
            bad = true;
        }
        if (!stream_out)
            nf_object_set_digest_hex(&c->objects[i], got[i]);
    }
    if (bad)
        goto out_w;
    rc = nf_writer_finish_catalog(w, c, !oo->no_digests, d);
    w = NULL;
out_w:
    nf_writer_abort(w);
out:
    nf_scan_free(scan);
    nf_output_close(out_stream);
    nf_seqhash_free(h);
    free(buf);
    nf_plan_free(&plan);
    free(want);
    free(got);
    free(carried);
    return rc;
}
