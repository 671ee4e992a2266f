/* nf_artifact.h — the generic reader (spec 3, 11.1, 11.2).
 *
 * nf_artifact_open reads and checks the entry: the 32-byte header (spec
 * 3.1), the JSON catalog (size-capped before any allocation, then strictly
 * parsed and validated by nf_catalog_parse) and the entry's length. Parts
 * are opened only when a read needs them (spec 11.1: a run opens only the
 * files its objects touch), and their headers (magic, part_index,
 * artifact_id, length) are checked on open (spec 3.2).
 *
 * All problems are diagnostics (nf_diag.h) naming the file and, where one
 * applies, the JSON Pointer. Entry and part paths that are not regular
 * files (directories, FIFOs, devices) are refused as I/O errors without
 * blocking on them.
 *
 * The bytes come from one byte source (nf_rfile.h): local files, or, for
 * an entry path that is an http:// or https:// URL, HTTP range requests
 * (nf_http.h; ninfer(5) Artifacts over HTTP). A URL artifact's first
 * request asks for the entry's first 64 KiB (kept: later reads inside them
 * need no request), a larger catalog takes one more; part i is the entry
 * URL with its last path segment replaced by files[i].path
 * (percent-encoded, the query dropped) unless nf_open_opts.urls names
 * them; each file's length is its responses' Content-Range total, checked
 * as a local file's length is. Diagnostics name URLs without their query
 * string and credentials. A file that changes while it is read is `io`
 * naming it; 404/410 of a part is part-missing, of the entry io.
 */
#ifndef NF_ARTIFACT_H
#define NF_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_diag.h"
#include "nf_io.h"
#include "nf_rfile.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NF_HEADER_BYTES 32
#define NF_PAGE 4096                         /* payload alignment, spec 2.3/3.2 */
#define NF_DEFAULT_MAX_JSON (256ull << 20)   /* default catalog cap, bytes */

extern const unsigned char NF_ENTRY_MAGIC[8]; /* "NINFER\0\3" */
extern const unsigned char NF_PART_MAGIC[8];  /* "NINPRT\0\3" */

typedef struct {
    uint64_t max_json_bytes; /* refuse larger catalogs (0: NF_DEFAULT_MAX_JSON) */
    bool check_fill;         /* report nonzero fill bytes (ninfer-verify) */
    /* URL artifacts: the client that reads them (NULL: the artifact makes
     * one of its own with nf_http's defaults), and the URL of every file
     * of the set, entry first (NULL: each part beside the entry; a count
     * other than the catalog's files is a `usage` diagnostic). */
    nf_http *http;
    const char *const *urls;
    size_t n_urls;
    /* a URL whose server does not serve ranges (HTTP 200 to the first
     * request) is read whole and in order, as a stream (nf_artifact_is_stream:
     * ninfer-verify of a one-file artifact); false: that is an `io` error */
    bool whole_file;
} nf_open_opts;

typedef struct {
    uint64_t json_bytes;
    unsigned char artifact_id[16];
    uint64_t metadata_end;        /* 32 + json_bytes */
    uint64_t entry_payload_start; /* align_up(metadata_end, 4096) */
    uint64_t entry_file_bytes;    /* entry_payload_start + files[0].payload_bytes */
} nf_header;

typedef struct nf_artifact nf_artifact;

/* Open the entry at path (a file, or an http:// or https:// URL). Returns
 * NULL when nothing usable could be read
 * (d says why: io, header, magic, json...). A returned artifact may still
 * carry rule violations in d (check nf_diags_exit); the catalog is then
 * available for inspection but callers should not trust references. */
nf_artifact *nf_artifact_open(const char *path, const nf_open_opts *o, nf_diags *d);

/* Open a stream (ninfer(5) The stream form): header and catalog are read
 * from in; the payload is then read in order with nf_artifact_stream_read.
 * name is used in messages ("-" or "(stdin)"). A catalog with more than one
 * file is refused (`files`). in stays owned by the caller. */
nf_artifact *nf_artifact_open_stream(nf_input *in, const char *name,
                                     const nf_open_opts *o, nf_diags *d);

void nf_artifact_close(nf_artifact *a);

nf_catalog *nf_artifact_catalog(const nf_artifact *a);
const nf_header *nf_artifact_header(const nf_artifact *a);
/* The catalog text as stored, without its trailing spaces (NUL-terminated;
 * *len bytes), and how many spaces follow it: *len + pad == json_bytes.
 * Trailing spaces are counted, not kept, so a catalog padded to the cap
 * costs no more memory than its text. */
const char *nf_artifact_json(const nf_artifact *a, size_t *len);
uint64_t nf_artifact_json_pad(const nf_artifact *a);
const char *nf_artifact_path(const nf_artifact *a); /* entry path as given */
bool nf_artifact_is_stream(const nf_artifact *a);
/* Opened from a URL: its files are read with HTTP range requests. */
bool nf_artifact_is_remote(const nf_artifact *a);

/* Full path of file i (0 = entry; for a URL artifact its URL without query
 * and credentials). Owned by the artifact. */
const char *nf_artifact_file_path(const nf_artifact *a, size_t i);
/* A URL artifact's file i, once read: its length (the responses'
 * Content-Range total) and validator (a strong ETag, else Last-Modified,
 * into out; "" when the server gave none). False before, and for files. */
bool nf_artifact_file_remote(nf_artifact *a, size_t i, uint64_t *size, char *out, size_t cap);

/* Offset in file i where its payload starts (entry_payload_start or 4096). */
uint64_t nf_artifact_file_payload_start(const nf_artifact *a, size_t i);

/* File descriptors: part files are opened when a read needs
 * them and closed again, least recently used first, once more than a few
 * are open (an eighth of RLIMIT_NOFILE, 2..64 per artifact), so any part
 * count reads within a small `ulimit -n`. A file reopened later is checked
 * again. When the process has no descriptor left even after closing every
 * idle one, reads fail with one `io` diagnostic per artifact saying so. */

/* Check file i, opening it if it was never opened (part header, length,
 * fill with check_fill). Returns 0, or -1 with diagnostics: part-missing
 * (no such file, exit 3), io (unreadable, not a regular file), part-header,
 * artifact-id, length, fill. The verdict is cached (also failures, which
 * are reported once). Thread-safe. Not for streams. */
int nf_artifact_file_check(nf_artifact *a, size_t i, nf_diags *d);

/* nf_artifact_file_check, returning file i's descriptor (-1 with an `io`
 * diagnostic for a URL artifact, whose files have none). The descriptor
 * may be closed by the next read of this artifact (from any thread): use it
 * at once, single-threaded, or prefer nf_artifact_segments, whose callback
 * gets a descriptor held open for its duration. */
int nf_artifact_file_fd(nf_artifact *a, size_t i, nf_diags *d);

/* Range read (spec 11.2): copy logical payload [off, off+n) into buf.
 * [off, off+n) must lie inside [0, payload_bytes) (n = 0 allowed at the
 * end). Short reads inside the declared range are `length` errors (`io`
 * over HTTP: the file changed). One pread per file segment, or one range
 * request (a few in parallel for a large one). Returns 0 or -1 with
 * diagnostics. Thread-safe. Not for streams. */
int nf_artifact_read(nf_artifact *a, uint64_t off, void *buf, size_t n, nf_diags *d);

/* Call fn for each file segment of logical [off, off+len) in order:
 * (file index, its byte source, a local file's descriptor or -1 for a URL
 * artifact's, file offset, offset in the range, length). Opens (and
 * checks) the files it needs; the descriptor stays open while fn runs (not
 * after it returns): for the kernel's copy paths (sendfile,
 * copy_file_range); anything else reads src (nf_rfile_pread). Returns 0,
 * the first non-zero fn result, or -1 with diagnostics. */
typedef int (*nf_segment_fn)(void *ctx, size_t file, nf_rfile *src, int fd, uint64_t file_off,
                             uint64_t range_off, uint64_t len);
int nf_artifact_segments(nf_artifact *a, uint64_t off, uint64_t len, nf_segment_fn fn,
                         void *ctx, nf_diags *d);

/* One piece of a logical payload range in one file (spec 11.2): the file's
 * index, the offset in that file, and the length in bytes. */
typedef struct {
    size_t file;
    uint64_t file_offset, bytes;
} nf_segment;

/* Which files does logical [off, off+len) touch: sets need[i] = true. */
void nf_artifact_files_touched(const nf_artifact *a, uint64_t off, uint64_t len, bool *need);

/* The files logical [off, off+len) touches, as the index range
 * [*first, *last] (binary search: O(log files)). Returns false, leaving
 * both unset, when len is 0, off+len overflows or off is past the payload. */
bool nf_artifact_file_span(const nf_artifact *a, uint64_t off, uint64_t len, size_t *first,
                           size_t *last);

/* ---- ordered reads of many ranges (spec 11.2) ----
 *
 * An nf_scan delivers logical payload ranges in order, as consumers that
 * pass bytes on in order (a stream out, a reshard, digests, a download)
 * read them: each file is checked before its first byte is given out; a
 * local file is read with large preads; a URL artifact's ranges are fetched
 * ahead in parallel (nf_rstream of nf_rfile.h: `jobs` requests of at most
 * `chunk` bytes, each buffered in at most `window` bytes), ranges of one
 * file closer than 1 MiB as one request (the bytes between are not given
 * out), and a part not checked yet from its byte 0 when its first range
 * starts within 1 MiB of its payload, so that its header check costs no
 * request of its own. Bytes of the entry's first 64 KiB come from memory. */
typedef struct {
    uint64_t off, len;
} nf_range;

typedef struct {
    unsigned jobs;  /* requests in flight (0: the client's jobs) */
    size_t chunk;   /* bytes per request at most (0: a file's range each) */
    size_t window;  /* buffer per request (0: 4 MiB) */
} nf_scan_opts;

typedef struct nf_scan nf_scan;

/* Read r[0..n): ascending, not overlapping, inside the payload (`bounds`
 * otherwise). Opens and checks the files the ranges need (diagnostics as
 * nf_artifact_file_check's) before returning. NULL with diagnostics. Not
 * for streams. */
nf_scan *nf_scan_new(nf_artifact *a, const nf_range *r, size_t n, const nf_scan_opts *o,
                     nf_diags *d);
/* The next bytes: *file (index), *off (logical offset), *buf and *len
 * (valid until the next call; never across a file boundary). Returns 1, 0
 * after the last range, or -1 with diagnostics (read errors name the
 * file; a part whose check rode along reports as nf_artifact_file_check
 * would). */
int nf_scan_next(nf_scan *s, size_t *file, uint64_t *off, const void **buf, size_t *len,
                 nf_diags *d);
void nf_scan_free(nf_scan *s);

/* Streams: read the next n payload bytes. Returns bytes read (< n only when
 * the stream ended early, also reported as `length`) or -1 (`io`). */
ssize_t nf_artifact_stream_read(nf_artifact *a, void *buf, size_t n, nf_diags *d);
/* Streams: after the payload, the stream must end: trailing bytes or a
 * short payload are `length` errors. Returns 0 or -1. */
int nf_artifact_stream_finish(nf_artifact *a, nf_diags *d);
/* Streams: payload bytes consumed so far. */
uint64_t nf_artifact_stream_pos(const nf_artifact *a);

/* Check file i's fill bytes are zero (entry [metadata_end, payload start),
 * part [32, 4096)). Returns 0 or -1 with a `fill` diagnostic. */
int nf_artifact_check_fill(nf_artifact *a, size_t i, nf_diags *d);

/* Parse a 32-byte entry header (spec 3.1). Returns 0 or -1 with header /
 * magic diagnostics (file_size: the file's size, or UINT64_MAX when not
 * known, as for a stream). max_json: the catalog cap in bytes. */
int nf_header_parse(const unsigned char raw[32], uint64_t file_size, uint64_t max_json,
                    nf_header *h, nf_diags *d);

/* Encode a 32-byte file header (spec 3.1, 3.2): for file_index 0 the
 * entry's (entry magic, json_bytes, artifact_id), for a part its (part
 * magic, file_index, artifact_id); json_bytes is ignored for parts. The
 * inverse of nf_header_parse for the entry. */
void nf_header_encode(unsigned char raw[32], size_t file_index, uint64_t json_bytes,
                      const unsigned char artifact_id[16]);

#ifdef __cplusplus
}
#endif
#endif
