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
 */
#ifndef NF_ARTIFACT_H
#define NF_ARTIFACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_diag.h"
#include "nf_io.h"

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
} nf_open_opts;

typedef struct {
    uint64_t json_bytes;
    unsigned char artifact_id[16];
    uint64_t metadata_end;        /* 32 + json_bytes */
    uint64_t entry_payload_start; /* align_up(metadata_end, 4096) */
    uint64_t entry_file_bytes;    /* entry_payload_start + files[0].payload_bytes */
} nf_header;

typedef struct nf_artifact nf_artifact;

/* Open the entry at path. Returns NULL when nothing usable could be read
 * (d says why: io, header, magic, json...). A returned artifact may still
 * carry rule violations in d (check nf_diags_exit); the catalog is then
 * available for inspection but callers should not trust references. */
nf_artifact *nf_artifact_open(const char *path, const nf_open_opts *o, nf_diags *d);

/* Open a stream (DESIGN 4): header and catalog are read from in; the
 * payload is then read in order with nf_artifact_stream_read. name is used
 * in messages ("-" or "(stdin)"). A catalog with more than one file is
 * refused (`files`). in stays owned by the caller. */
nf_artifact *nf_artifact_open_stream(nf_input *in, const char *name,
                                     const nf_open_opts *o, nf_diags *d);

void nf_artifact_close(nf_artifact *a);

nf_catalog *nf_artifact_catalog(const nf_artifact *a);
const nf_header *nf_artifact_header(const nf_artifact *a);
/* The catalog text as stored, without its trailing spaces (NUL-terminated;
 * *len bytes), and how many spaces follow it: *len + pad == json_bytes.
 * Trailing spaces are counted, not kept, so a catalog padded to the cap
 * costs no more memory than its text (issue 11). */
const char *nf_artifact_json(const nf_artifact *a, size_t *len);
uint64_t nf_artifact_json_pad(const nf_artifact *a);
const char *nf_artifact_path(const nf_artifact *a); /* entry path as given */
bool nf_artifact_is_stream(const nf_artifact *a);

/* Full path of file i (0 = entry). Owned by the artifact. */
const char *nf_artifact_file_path(const nf_artifact *a, size_t i);
/* Offset in file i where its payload starts (entry_payload_start or 4096). */
uint64_t nf_artifact_file_payload_start(const nf_artifact *a, size_t i);

/* File descriptors (issue 11): part files are opened when a read needs
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

/* nf_artifact_file_check, returning file i's descriptor. The descriptor
 * may be closed by the next read of this artifact (from any thread): use it
 * at once, single-threaded, or prefer nf_artifact_segments, whose callback
 * gets a descriptor held open for its duration. */
int nf_artifact_file_fd(nf_artifact *a, size_t i, nf_diags *d);

/* Range read (spec 11.2): copy logical payload [off, off+n) into buf.
 * [off, off+n) must lie inside [0, payload_bytes) (n = 0 allowed at the
 * end). Short reads inside the declared range are `length` errors.
 * Returns 0 or -1 with diagnostics. Thread-safe (pread). Not for streams. */
int nf_artifact_read(nf_artifact *a, uint64_t off, void *buf, size_t n, nf_diags *d);

/* Call fn for each file segment of logical [off, off+len) in order:
 * (file index, fd, file offset, offset in the range, length). Opens the
 * files it needs; fd stays open while fn runs (not after it returns).
 * Returns 0, the first non-zero fn result, or -1 with diagnostics. */
typedef int (*nf_segment_fn)(void *ctx, size_t file, int fd, uint64_t file_off,
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
