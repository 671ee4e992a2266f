/* nf_stream.c — an artifact as the stream form, and payload ranges copied
 * to an output (DESIGN 4; spec 3.1, 11.2, 11.4). */
#include "nf_stream.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "nf_util.h"
#include "nf_writer.h"

/* write n bytes; a failure is the output's (*out_err) */
static int put(nf_output *out, const void *buf, size_t n, int *out_err)
{
    int rc = nf_output_write(out, buf, n);
    if (rc)
        *out_err = -rc;
    return rc ? -1 : 0;
}

static int put_fill(nf_output *out, char byte, uint64_t n, int *out_err)
{
    char b[4096];
    memset(b, byte, sizeof b);
    while (n) {
        size_t k = n > sizeof b ? sizeof b : (size_t)n;
        if (put(out, b, k, out_err) < 0)
            return -1;
        n -= k;
    }
    return 0;
}

typedef struct {
    nf_output *out;
    int *out_err;
    nf_diags *d;
} seg_ctx;

static int seg_copy(void *vc, size_t file, nf_rfile *src, int fd, uint64_t foff, uint64_t roff,
                    uint64_t len)
{
    seg_ctx *c = vc;
    (void)file;
    (void)roff;
    int rc = nf_rfile_copy_to(src, fd, c->out, foff, len);
    if (rc < 0)
        *c->out_err = -rc;
    else if (rc == NF_COPY_SHORT)
        nf_diag_add(c->d, NF_C_INCOMPLETE, "", "file ends inside the declared payload");
    else if (rc == NF_COPY_READ)
        nf_diag_add(c->d, NF_C_IO, "", "read error in the payload");
    return rc ? -1 : 0;
}

/* a stream: read in order to end, writing [off, end) to out (NULL with
 * off == end: read only) */
static int stream_range(nf_artifact *a, uint64_t off, uint64_t end, nf_output *out,
                        int *out_err, nf_diags *d)
{
    unsigned char *buf = malloc(1 << 20);
    if (!buf) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    int rc = 0;
    while (rc == 0 && nf_artifact_stream_pos(a) < end) {
        uint64_t pos = nf_artifact_stream_pos(a);
        size_t k = end - pos > (1u << 20) ? (1u << 20) : (size_t)(end - pos);
        if (pos < off && off - pos < k)
            k = (size_t)(off - pos);
        ssize_t r = nf_artifact_stream_read(a, buf, k, d);
        if (r < 0 || (size_t)r != k)
            rc = -1;
        else if (pos >= off)
            rc = put(out, buf, k, out_err);
    }
    free(buf);
    return rc;
}

/* A URL artifact's range: one request per file it touches (fetched a little
 * ahead, never held whole), written as it comes. */
static int scan_range(nf_artifact *a, uint64_t off, uint64_t len, nf_output *out, int *out_err,
                      nf_diags *d)
{
    nf_range r = {off, len};
    nf_scan_opts so = {0, 0, 0};
    nf_scan *s = nf_scan_new(a, &r, 1, &so, d);
    if (!s)
        return -1;
    int rc;
    size_t file, n;
    uint64_t at;
    const void *buf;
    while ((rc = nf_scan_next(s, &file, &at, &buf, &n, d)) > 0)
        if (put(out, buf, n, out_err) < 0) {
            rc = -1;
            break;
        }
    nf_scan_free(s);
    return rc < 0 ? -1 : 0;
}

int nf_stream_write_range(nf_artifact *a, uint64_t off, uint64_t len, nf_output *out,
                          int *out_err, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    uint64_t end;
    *out_err = 0;
    if (nf_artifact_is_stream(a)) {
        if (!nf_add_u64(off, len, &end) || end > c->payload_bytes) {
            nf_diag_add(d, NF_C_BOUNDS, "", "range is outside the %llu-byte payload",
                        (unsigned long long)c->payload_bytes);
            return -1;
        }
        return stream_range(a, off, end, out, out_err, d);
    }
    if (nf_artifact_is_remote(a))
        return scan_range(a, off, len, out, out_err, d);
    /* (nf_artifact_segments checks the bounds of a file artifact's range) */
    /* open (and check) every file the range needs before writing a byte */
    size_t first, last;
    if (nf_artifact_file_span(a, off, len, &first, &last))
        for (size_t i = first; i <= last; i++)
            if (nf_artifact_file_check(a, i, d) < 0)
                return -1;
    seg_ctx sc = {out, out_err, d};
    return nf_artifact_segments(a, off, len, seg_copy, &sc, d) ? -1 : 0;
}

int nf_stream_write(nf_artifact *a, const nf_write_opts *wo, nf_output *out, int *out_err,
                    nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    const nf_header *h = nf_artifact_header(a);
    unsigned char head[32];
    *out_err = 0;
    bool given = wo && wo->id_mode == NF_ID_GIVEN;
    if (c->n_files == 1) {
        size_t jl;
        const char *j = nf_artifact_json(a, &jl);
        nf_header_encode(head, 0, h->json_bytes, given ? wo->id : h->artifact_id);
        if (put(out, head, 32, out_err) || put(out, j, jl, out_err) ||
            put_fill(out, ' ', nf_artifact_json_pad(a), out_err) ||
            put_fill(out, 0, h->entry_payload_start - h->metadata_end, out_err))
            return -1;
        return nf_stream_write_range(a, 0, c->payload_bytes, out, out_err, d);
    }
    nf_write_opts po = {0}, mode = {0};
    if (wo)
        mode = *wo;
    size_t missing = 0;
    for (size_t i = 0; i < c->n_objects; i++)
        missing += !c->objects[i].has_digest;
    if (nf_write_id_check(&mode, missing, "the artifact's catalog", "(stdout)", d) < 0)
        return -1;
    nf_plan plan;
    unsigned char id[16];
    if (mode.id_mode == NF_ID_RANDOM && nf_random_bytes(id, sizeof id) < 0) {
        nf_diag_add(d, NF_C_IO, "", "cannot read the OS random source");
        return -1;
    }
    if (nf_plan_make(c, &po, "-", true, &plan, d) < 0)
        return -1;
    if (mode.id_mode == NF_ID_GIVEN)
        memcpy(id, mode.id, 16);
    else if (mode.id_mode == NF_ID_REPRODUCIBLE)
        nf_catalog_artifact_id(plan.json, plan.json_len, plan.json_bytes, id);
    nf_header_encode(head, 0, plan.json_bytes, id);
    int rc = put(out, head, 32, out_err) || put(out, plan.json, plan.json_len, out_err) ||
             put_fill(out, ' ', plan.json_bytes - plan.json_len, out_err) ||
             put_fill(out, 0, plan.entry_payload_start - 32 - plan.json_bytes, out_err);
    nf_plan_free(&plan);
    return rc ? -1 : nf_stream_write_range(a, 0, c->payload_bytes, out, out_err, d);
}

int nf_stream_drain(nf_artifact *a, nf_diags *d)
{
    if (!nf_artifact_is_stream(a))
        return 0;
    /* read to the end writing nothing (a range that starts at the end) */
    uint64_t end = nf_artifact_catalog(a)->payload_bytes;
    int out_err = 0;
    if (stream_range(a, end, end, NULL, &out_err, d) < 0)
        return -1;
    return nf_artifact_stream_finish(a, d) < 0 ? -1 : 0;
}
