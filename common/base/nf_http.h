/* nf_http.h — files read over HTTP(S) with range requests, the one module
 * that calls libcurl (spec 11.2: range reads, in place; ninfer(5) "ARTIFACTS
 * OVER HTTP"; ninfer-fetch(1)).
 *
 * A client (nf_http) runs every transfer on one I/O thread of its own (a
 * curl multi handle: keep-alive connections reused, HTTP/2 multiplexed
 * where the server offers it, TLS sessions shared), at most `jobs` at once.
 * Callers on any thread start requests and wait for their bytes.
 *
 * Every request is `GET` with one `Range: bytes=A-B`. The rules a response
 * must keep, or the request fails (nf_rerr, nf_rfile.h):
 *   - 206 with `Content-Range: bytes A-B/TOTAL` for exactly the range asked
 *     (the first request of a file, whose length is not known yet, may get a
 *     shorter end where the file ends), a Content-Length equal to B-A+1 when
 *     given, no Content-Encoding, and a body of exactly that many bytes;
 *     TOTAL (a U64) is the file's length, the same in every response;
 *   - the validator of a file's first 2xx response after redirects (a strong
 *     ETag, else Last-Modified) is sent as If-Range with every later request
 *     and must come back unchanged; a 200 to a range request after the first
 *     (the file changed, If-Range said so), a changed validator or TOTAL is
 *     NF_RE_CHANGED, naming the file; a 200 to the first is NF_RE_NORANGE (the
 *     server does not serve ranges: see nf_hreq_start_whole); bytes of two
 *     versions are never mixed;
 *   - 416 past the end of a file of known length reads as its end;
 *   - 404/410: NF_RE_MISSING; 401/403: NF_RE_DENIED ("not authorized").
 * Faults are retried, `retries` times per request, resuming from the last
 * byte received, after an exponential backoff (`backoff_seconds`, doubled
 * each time, at most 30 s) or the server's Retry-After (seconds or a date,
 * at most 60 s): connection failures and resets, a transfer slower than
 * `stall_bytes` per second for `stall_seconds` (a timeout), 408, 429 and
 * 5xx. Redirects (301, 302, 303, 307, 308) are followed here, at most 10 per
 * request, never from https to http, each counted as a request; a file's
 * later requests go to where its first was sent.
 *
 * Security: TLS peers are always verified (the system's CAs, or `cacert`);
 * nothing turns that off. The bearer token (`token`, "Authorization: Bearer")
 * and ~/.netrc credentials (`netrc`, read by libcurl) go only to the host of
 * a file opened with send_credentials, only over https (plain http only to
 * a loopback address: 127.0.0.0/8, ::1, localhost), never after a redirect
 * to another host; a URL's own user:password follows the same rule (a URL
 * that would send it elsewhere is refused). The token never appears in an
 * error, a trace line or the statistics, and is wiped from memory when the
 * client is freed. Proxies are taken from the environment as libcurl reads
 * them (http_proxy, https_proxy, no_proxy...).
 */
#ifndef NF_HTTP_H
#define NF_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nf_rfile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line per request, for a trace (NINFER_HTTP_TRACE): method, the URL
 * without query and credentials, the range, the status or the error, and
 * whether it was a retry. Called from the I/O thread. */
typedef void (*nf_http_trace_fn)(void *ctx, const char *line);

typedef struct {
    const char *cacert;      /* a PEM file of CA certificates (NULL: the system's) */
    int retries;             /* retries per request (< 0: 5) */
    unsigned jobs;           /* transfers at once, also connections per host (0: 8) */
    double stall_seconds;    /* a transfer below stall_bytes/s this long is a timeout (0: 30) */
    unsigned stall_bytes;    /* (0: 1024) */
    double backoff_seconds;  /* the first retry's wait (0: 0.5) */
    const char *token;       /* bearer token (copied) or NULL */
    bool netrc;              /* let libcurl read ~/.netrc for credentials */
    nf_http_trace_fn trace;  /* NULL: no trace */
    void *trace_ctx;
} nf_http_opts;

#define NF_HTTP_RETRIES 5
#define NF_HTTP_JOBS 8

typedef struct nf_http nf_http;

/* A client. NULL when libcurl cannot be set up (nf_http_unavailable says
 * why) or memory is short. libcurl (libcurl.so.4, 7.68 or later) is loaded
 * when the first client is made. No thread is started until the first
 * request. */
nf_http *nf_http_new(const nf_http_opts *o);
/* Why no client can be made (libcurl missing or too old), or NULL. */
const char *nf_http_unavailable(void);
/* Stop the I/O thread and free everything (every request must be freed
 * first); the token's bytes are overwritten. NULL is fine. */
void nf_http_free(nf_http *h);

/* What went over the wire so far: requests sent (redirects are requests;
 * retries are counted apart, in `retries`), bytes of response bodies
 * received, and redirects followed. */
typedef struct {
    uint64_t requests, retries, redirects, body_bytes;
} nf_http_stats;
void nf_http_get_stats(nf_http *h, nf_http_stats *s);
/* The client's jobs (transfers at once). */
unsigned nf_http_jobs(const nf_http *h);

/* ---- URLs ---- */

/* url without its query string, fragment and user:password (what every
 * message, --json record and trace shows). malloc'ed; NULL when out of
 * memory. */
char *nf_url_display(const char *url);

/* url with its last path segment replaced by name, every byte of name
 * outside A-Za-z0-9-._~ percent-encoded, and its query string and fragment
 * dropped (ninfer(5): a part beside its entry). malloc'ed or NULL. */
char *nf_url_sibling(const char *url, const char *name);

/* The last path segment of url (percent-decoding left alone), malloc'ed,
 * "" for a URL whose path ends in '/'. */
char *nf_url_basename(const char *url);

/* Do a and b name the same origin: scheme, host (case-insensitive) and
 * port (the scheme's default when none is given), as credentials may
 * follow only to the origin they were given for? False for a malformed
 * URL. */
bool nf_url_same_origin(const char *a, const char *b);

/* ---- files and requests ---- */

typedef struct nf_hfile nf_hfile;

/* A file at url (copied). No request is made. send_credentials: the token,
 * netrc and the URL's own user:password may go to url's host (ninfer(5)
 * Artifacts over HTTP: only the entry's host). NULL: out of memory. */
nf_hfile *nf_hfile_new(nf_http *h, const char *url, bool send_credentials);
void nf_hfile_free(nf_hfile *f);
const char *nf_hfile_name(const nf_hfile *f); /* nf_url_display of its URL */
/* The length once a response told it. */
bool nf_hfile_size(nf_hfile *f, uint64_t *size);
/* Its validator once a 2xx response gave one (a strong ETag, else
 * Last-Modified, as sent): into out (cap bytes). */
bool nf_hfile_validator(nf_hfile *f, char *out, size_t cap);

typedef struct nf_hreq nf_hreq;

/* Start a request for [off, off+len) of f into buf, which holds cap bytes
 * and must outlive the request: cap >= len fills buf in place (read it with
 * nf_hreq_wait); a smaller cap streams (read it with nf_hreq_read: the
 * transfer pauses while buf is full). A streamed cap must be at least
 * NF_HREQ_MIN_STREAM (libcurl may hand over CURL_MAX_WRITE_SIZE, 16 KiB,
 * at once; its receive buffer is set to min(cap, 512 KiB)): a smaller one
 * fails the request (NF_RE_IO) instead of stalling it, as does a piece
 * larger than cap. len 0 asks nothing. NULL: out of memory. */
#define NF_HREQ_MIN_STREAM 16384u
nf_hreq *nf_hreq_start(nf_hfile *f, uint64_t off, uint64_t len, void *buf, size_t cap);
/* A server that does not serve ranges (NF_RE_NORANGE to a first request):
 * the whole file, one request without Range, streamed through buf (cap
 * bytes, at least NF_HREQ_MIN_STREAM; read it with nf_hreq_read). Its length is its Content-Length; a
 * fault after the first byte cannot be resumed (an `io` failure). */
nf_hreq *nf_hreq_start_whole(nf_hfile *f, void *buf, size_t cap);

/* Wait for the whole request; returns the bytes received (fewer than len
 * only where the file ends) or -1 with e. */
ssize_t nf_hreq_wait(nf_hreq *r, nf_rerr *e);
/* Streaming: the bytes received since the last call (the previous ones are
 * given back to the transfer): *p and the count, 0 at the end, -1 with e. */
ssize_t nf_hreq_read(nf_hreq *r, const void **p, nf_rerr *e);
/* Cancel (when running) and free. NULL is fine. */
void nf_hreq_free(nf_hreq *r);

/* nf_hreq_start + nf_hreq_wait into buf; len over 16 MiB is cut into
 * requests of at least 4 MiB fetched in parallel. */
ssize_t nf_hfile_pread(nf_hfile *f, void *buf, size_t len, uint64_t off, nf_rerr *e);

#ifdef __cplusplus
}
#endif
#endif
