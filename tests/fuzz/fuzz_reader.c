/* fuzz_reader.c — libFuzzer harness over the generic reader (spec 3, 11.1,
 * 11.2): entry header, catalog, files table, part headers and range reads,
 * plus the stream reader (DESIGN 4, zstd included) over the same entry.
 *
 * Input framing (all of it fuzzed):
 *   byte 0      flags: bit 0 check_fill, bit 1 also read the entry as a
 *               stream, bit 2 also walk nf_artifact_segments over the payload
 *   byte 1      number of part files, low 3 bits (0..7)
 *   4 x parts   each part's length, little-endian u32 (clamped to what is left)
 *   then        the entry file, then the part files back to back (the entry
 *               takes whatever the parts leave)
 * The entry is written as e.ninfer and part i as e.ninfer.part-000i in a
 * private directory under /dev/shm, so catalogs naming the spec 2.1 part
 * names find them. Every object is then read (in bounded chunks), and the
 * catalog is serialized back; a catalog that opened without any diagnostic
 * must serialize to text that parses without any diagnostic.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "nf_artifact.h"
#include "nf_catalog.h"
#include "nf_io.h"

#define RD_MAX_PARTS 7
#define RD_CHUNK (64u << 10)          /* bytes per range read */
#define RD_OBJ_CAP (1u << 20)         /* bytes read per object at most */
#define RD_STREAM_CAP (4u << 20)      /* payload bytes read from a stream at most */

static char rd_paths[RD_MAX_PARTS + 1][320];

static void rd_cleanup(void)
{
    for (int i = 0; i <= RD_MAX_PARTS; i++)
        if (rd_paths[i][0])
            unlink(rd_paths[i]);
    const char *dir = nf_fuzz_scratch_dir();
    if (dir)
        rmdir(dir);
}

static bool rd_setup(void)
{
    static int ready;
    if (ready)
        return ready > 0;
    const char *dir = nf_fuzz_scratch_dir();
    if (!dir) {
        ready = -1;
        return false;
    }
    snprintf(rd_paths[0], sizeof rd_paths[0], "%s/e.ninfer", dir);
    for (int i = 1; i <= RD_MAX_PARTS; i++)
        snprintf(rd_paths[i], sizeof rd_paths[i], "%s/e.ninfer.part-%04d", dir, i);
    atexit(rd_cleanup);
    ready = 1;
    return true;
}

static int rd_seg_fn(void *ctx, size_t file, nf_rfile *src, int fd, uint64_t file_off,
                     uint64_t range_off, uint64_t len)
{
    uint64_t *sum = ctx;
    (void)file;
    (void)src;
    (void)fd;
    (void)file_off;
    (void)range_off;
    *sum += len;
    return 0;
}

static void rd_read_objects(nf_artifact *a, const nf_catalog *c, unsigned char *buf)
{
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *o = &c->objects[i];
        if (!o->has_offset || !o->has_bytes)
            continue;
        uint64_t done = 0;
        while (done < o->bytes && done < RD_OBJ_CAP) {
            uint64_t left = o->bytes - done;
            size_t n = left < RD_CHUNK ? (size_t)left : RD_CHUNK;
            nf_diags d = NF_DIAGS_INIT;
            /* offset + done may overflow U64 for a hostile object: the
             * reader must refuse it (bounds), not wrap */
            int rc = nf_artifact_read(a, o->offset + done, buf, n, &d);
            nf_diags_free(&d);
            if (rc < 0)
                break;
            done += n;
        }
    }
    /* the empty read at the very end of the payload is allowed (spec 11.2) */
    if (c->has_files) {
        nf_diags d = NF_DIAGS_INIT;
        nf_artifact_read(a, c->payload_bytes, buf, 0, &d);
        nf_diags_free(&d);
    }
}

static void rd_reparse(const nf_catalog *c, bool clean)
{
    nf_serialize_opts so = {0};
    so.files = c->files;
    so.n_files = c->n_files;
    so.digests = true;
    size_t len = 0;
    char *text = nf_catalog_serialize(c, &so, &len);
    if (!text || !clean) {
        free(text);
        return;
    }
    nf_diags d = NF_DIAGS_INIT;
    nf_catalog *c2 = nf_catalog_parse(text, len, NF_CAT_ARTIFACT, "e.ninfer", &d);
    if (!c2 || d.n || d.dropped) {
        for (size_t i = 0; i < d.n; i++)
            fprintf(stderr, "re-parse: %s: %s: %s\n", d.v[i].pointer, nf_code_name(d.v[i].code),
                    d.v[i].message);
        fprintf(stderr, "serialized: %.*s\n", (int)(len > 4000 ? 4000 : len), text);
    }
    NF_FUZZ_ASSERT(c2 && d.n == 0 && d.dropped == 0,
                   "a clean catalog serialized to text that does not parse clean");
    nf_catalog_free(c2);
    nf_diags_free(&d);
    free(text);
}

static void rd_stream(const uint8_t *entry, size_t n, bool check_fill, unsigned char *buf)
{
    int fd = nf_fuzz_memfd(entry, n);
    if (fd < 0)
        return;
    nf_input *in = nf_input_open_fd(fd, false);
    if (!in) {
        close(fd);
        return;
    }
    nf_open_opts oo = {0};
    oo.check_fill = check_fill;
    nf_diags d = NF_DIAGS_INIT;
    nf_artifact *a = nf_artifact_open_stream(in, "-", &oo, &d);
    if (a) {
        uint64_t total = 0;
        for (;;) {
            ssize_t r = nf_artifact_stream_read(a, buf, RD_CHUNK, &d);
            if (r <= 0)
                break;
            total += (uint64_t)r;
            if ((size_t)r < RD_CHUNK || total >= RD_STREAM_CAP)
                break;
        }
        nf_artifact_stream_finish(a, &d);
        (void)nf_artifact_stream_pos(a);
        nf_artifact_close(a);
    }
    nf_diags_free(&d);
    nf_input_close(in);
    close(fd);
}

int NF_FUZZ_ENTRY(reader)(const uint8_t *data, size_t size);
int NF_FUZZ_ENTRY(reader)(const uint8_t *data, size_t size)
{
    if (size < 2 || !rd_setup())
        return 0;
    unsigned flags = data[0];
    unsigned nparts = data[1] & RD_MAX_PARTS;
    size_t pos = 2;
    size_t plen[RD_MAX_PARTS] = {0};
    for (unsigned i = 0; i < nparts; i++) {
        if (size - pos < 4) {
            nparts = i;
            break;
        }
        plen[i] = nf_fuzz_le32(data + pos);
        pos += 4;
    }
    /* parts take their lengths from the end; the entry keeps the rest */
    size_t end = size;
    size_t pstart[RD_MAX_PARTS] = {0};
    for (int i = (int)nparts - 1; i >= 0; i--) {
        size_t avail = end - pos;
        if (plen[i] > avail)
            plen[i] = avail;
        end -= plen[i];
        pstart[i] = end;
    }
    const uint8_t *entry = data + pos;
    size_t entry_len = end - pos;

    if (nf_fuzz_write_file(rd_paths[0], entry, entry_len) < 0)
        return 0;
    for (unsigned i = 1; i <= RD_MAX_PARTS; i++) {
        if (i <= nparts)
            nf_fuzz_write_file(rd_paths[i], data + pstart[i - 1], plen[i - 1]);
        else
            unlink(rd_paths[i]);
    }

    unsigned char *buf = malloc(RD_CHUNK);
    if (!buf)
        return 0;
    nf_open_opts oo = {0};
    oo.check_fill = flags & 1;
    nf_diags d = NF_DIAGS_INIT;
    nf_artifact *a = nf_artifact_open(rd_paths[0], &oo, &d);
    if (a) {
        nf_catalog *c = nf_artifact_catalog(a);
        const nf_header *h = nf_artifact_header(a);
        size_t jl = 0;
        const char *js = nf_artifact_json(a, &jl);
        NF_FUZZ_ASSERT(js && jl + nf_artifact_json_pad(a) == h->json_bytes,
                       "catalog text and its trailing spaces differ from json_bytes");
        bool clean = d.n == 0 && d.dropped == 0;
        /* every file: open, check its header, length and (with the flag) fill */
        for (size_t i = 0; i < c->n_files; i++) {
            (void)nf_artifact_file_path(a, i);
            (void)nf_artifact_file_payload_start(a, i);
            int fd = nf_artifact_file_fd(a, i, &d);
            if (fd >= 0 && (flags & 1))
                nf_artifact_check_fill(a, i, &d);
        }
        clean = clean && d.n == 0 && d.dropped == 0;
        rd_read_objects(a, c, buf);
        if ((flags & 4) && c->has_files) {
            uint64_t sum = 0;
            nf_diags d2 = NF_DIAGS_INIT;
            if (nf_artifact_segments(a, 0, c->payload_bytes, rd_seg_fn, &sum, &d2) == 0)
                NF_FUZZ_ASSERT(sum == c->payload_bytes, "segments cover %llu of %llu bytes",
                               (unsigned long long)sum, (unsigned long long)c->payload_bytes);
            bool *need = calloc(c->n_files, 1);
            if (need) {
                nf_artifact_files_touched(a, 0, c->payload_bytes, need);
                free(need);
            }
            nf_diags_free(&d2);
        }
        rd_reparse(c, clean);
        nf_artifact_close(a);
    }
    nf_diags_free(&d);
    if (flags & 2)
        rd_stream(entry, entry_len, flags & 1, buf);
    free(buf);
    return 0;
}
