/* nf_rfile.h — a file read at offsets, wherever it lives: the one byte
 * source under the reader (spec 11.2 range reads; ninfer(5), ninfer-fetch(1)).
 *
 * Two implementations behind one handle:
 *   - a local regular file, through a descriptor pool (nf_io.h: opened
 *     lazily, closed least recently used first, reopened by path and
 *     checked to be the same file); its descriptor is there for the
 *     kernel's copy paths (sendfile, copy_file_range) while it is pinned;
 *   - an http:// or https:// URL, read with HTTP range requests through
 *     nf_http.h (libcurl): its length and validator come with the first
 *     response; it has no descriptor.
 * Callers that only read (nf_rfile_pread, nf_rstream) never need to know
 * which. Errors are an nf_rerr: a kind that decides the diagnostic code
 * (the caller's: a missing part is part-missing, a missing entry io) and a
 * message that names no credential. Nothing is printed.
 */
#ifndef NF_RFILE_H
#define NF_RFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nf_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_http nf_http; /* nf_http.h */
typedef struct nf_hfile nf_hfile;

/* What a read met. NF_RE_MISSING: no such file (ENOENT, HTTP 404/410);
 * NF_RE_DENIED: not allowed (EACCES, HTTP 401/403, "not authorized");
 * NF_RE_CHANGED: the file is not the one first read (another inode, size
 * or mtime; another validator, Content-Range total or a 200 to If-Range);
 * NF_RE_SERVER: a server that breaks HTTP's range rules (a Content-Range
 * other than asked, a 200 to a range, a compressed range, a body longer or
 * shorter than its range, a length past U64, a redirect loop or one from
 * https to http); NF_RE_NOTREG: a local path that is a directory, FIFO or
 * device; NF_RE_EMFILE: no descriptor left; NF_RE_SHORT: the file ends
 * inside a range that an nf_rstream was asked for; NF_RE_NORANGE: a server
 * that answers the first range request of a file with the whole file (HTTP
 * 200): nf_rfile_open_whole reads such a file in order; NF_RE_IO: anything
 * else (a read error, a reset or stalled transfer that outlived its
 * retries, TLS). */
typedef enum {
    NF_RE_OK = 0, NF_RE_IO, NF_RE_MISSING, NF_RE_DENIED, NF_RE_CHANGED, NF_RE_SERVER,
    NF_RE_NOTREG, NF_RE_EMFILE, NF_RE_NOMEM, NF_RE_SHORT, NF_RE_NORANGE,
} nf_rerr_kind;

typedef struct {
    nf_rerr_kind kind;
    int status;     /* the HTTP status, when one applies (else 0) */
    char msg[256];  /* lowercase, no full stop, no credential, no query string */
} nf_rerr;

typedef struct nf_rfile nf_rfile;

/* Is s an http:// or https:// URL (scheme case-insensitive)? */
bool nf_is_url(const char *s);

/* Open path: a URL (an nf_hfile of http, which must not be NULL; no request
 * is made yet; send_credentials: the bearer token and ~/.netrc may go to
 * its host, see nf_http.h) or a local file (must be a regular file; its
 * descriptor joins pool). Returns NULL with e filled (NF_RE_MISSING,
 * NF_RE_NOTREG, NF_RE_DENIED, NF_RE_EMFILE...). */
nf_rfile *nf_rfile_open(const char *path, nf_fdpool *pool, nf_http *http,
                        bool send_credentials, nf_rerr *e);
void nf_rfile_close(nf_rfile *f);

bool nf_rfile_is_remote(const nf_rfile *f);
/* The file's name for messages: the path as given, or the URL without its
 * query string and credentials (nf_url_display). Owned by f. */
const char *nf_rfile_name(const nf_rfile *f);
/* Its length in bytes: a local file's at open; a remote file's once a first
 * response told it (false before). */
bool nf_rfile_size(const nf_rfile *f, uint64_t *size);
/* A remote file's validator (nf_http.h) once a response gave one, into
 * out; false for local files and before. */
bool nf_rfile_validator(const nf_rfile *f, char *out, size_t cap);

/* Read exactly n bytes at off (fewer only where the file ends). Returns the
 * bytes read or -1 with e. A remote read is one range request, or a few in
 * parallel for a large n (nf_http.h). Thread-safe. */
ssize_t nf_rfile_pread(nf_rfile *f, void *buf, size_t n, uint64_t off, nf_rerr *e);

/* A remote file whose server does not serve ranges, read whole and in
 * order as an nf_input (one request without Range; nf_hreq_start_whole):
 * what a stream reader (nf_artifact_open_stream) takes. NULL when out of
 * memory or f is local. */
nf_input *nf_rfile_open_whole(nf_rfile *f);

/* Copy [off, off+len) of f to out: a local file through nf_output_copy_from
 * on its pinned descriptor fd (sendfile, copy_file_range), a remote one
 * (fd -1) through reads of up to 4 MiB. Returns what nf_output_copy_from
 * returns (0, -errno for the output, NF_COPY_READ, NF_COPY_SHORT). */
int nf_rfile_copy_to(nf_rfile *f, int fd, nf_output *out, uint64_t off, uint64_t len);

/* Local files: pin the descriptor open (valid until nf_rfile_unpin) for
 * the kernel's copy paths. Returns it, or -1 with e (remote files have no
 * descriptor: NF_RE_IO "not a local file"). */
int nf_rfile_pin(nf_rfile *f, nf_rerr *e);
void nf_rfile_unpin(nf_rfile *f);

/* ---- ordered reads of many ranges ----
 *
 * An nf_rstream delivers the bytes of a list of pieces (file, offset,
 * length) in order, chunk by chunk. Local pieces are read with pread into
 * one buffer. Remote pieces are fetched ahead: each piece is cut into
 * requests of at most `chunk` bytes (0: one request per piece), up to
 * `jobs` of them in flight at once, each into a buffer of at most
 * `window` bytes (a request longer than its buffer is paused while its
 * bytes wait for the reader). Memory: jobs x min(window, chunk) bytes,
 * whatever the lengths. */
typedef struct {
    nf_rfile *f;
    uint64_t off, len;
} nf_rpiece;

typedef struct {
    unsigned jobs;  /* remote requests in flight (0: 8) */
    size_t chunk;   /* bytes per remote request at most (0: a piece each) */
    size_t window;  /* buffer per request (0: 4 MiB) */
} nf_rstream_opts;

typedef struct nf_rstream nf_rstream;

/* The pieces are copied; zero-length ones are skipped. NULL: out of memory. */
nf_rstream *nf_rstream_new(const nf_rpiece *p, size_t n, const nf_rstream_opts *o);
/* The next bytes in order: *piece (index into the list), *off (offset in
 * that piece's file), *buf and *len (valid until the next call). Returns 1,
 * 0 when every piece was delivered, or -1 with e (and *piece set to the
 * piece that failed). A file that ends inside a piece is NF_RE_SHORT ("file
 * ends at N, inside the declared payload ..."). */
int nf_rstream_next(nf_rstream *s, size_t *piece, uint64_t *off, const void **buf,
                    size_t *len, nf_rerr *e);
void nf_rstream_free(nf_rstream *s);

#ifdef __cplusplus
}
#endif
#endif
