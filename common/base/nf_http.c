/* nf_http.c — HTTP(S) range requests on one I/O thread over a curl multi
 * handle. Callers' threads only queue requests and wait; every curl call
 * but curl_multi_wakeup happens on the I/O thread. libcurl is loaded when
 * the first client is made (dlopen): a command that reads only local files
 * never maps it and the two dozen libraries it needs (its start-up stays as
 * it was). */
#include "nf_http.h"

#define CURL_DISABLE_TYPECHECK /* calls go through the pointers below */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nf_util.h"

#define MAX_REDIRECTS 10
#define DISCARD_CAP (64u << 10)   /* bytes of an error body read before giving up on it */
#define WAKE_BYTES (256u << 10)   /* a streaming reader is woken every this many bytes */
#define BACKOFF_CAP 30.0
#define RETRY_AFTER_CAP 60.0

struct nf_hfile {
    nf_http *h;
    char *url, *name;
    bool creds;
    /* under h->lock */
    bool have_size, have_val, val_etag, seen_2xx; /* seen_2xx: take_validator ran */
    uint64_t size;
    char val[256];
    char *eff_url;  /* where the first 2xx came from, after redirects */
    bool eff_creds;
};

struct nf_hreq {
    nf_http *h;
    nf_hfile *f;
    uint64_t off, len;
    unsigned char *buf;
    size_t cap;
    bool stream;
    bool whole;           /* no Range: the whole file, in order, in one response */
    struct nf_hreq *next; /* h->all, under lock */
    /* shared, under h->lock */
    size_t rpos, wpos, held;
    uint64_t got;         /* bytes of [off, off+len) received */
    uint64_t end;         /* bytes the range really has (less where the file ends) */
    bool done, failed, released, running, detached, paused, unpause, waiting;
    nf_rerr err;
    double due;
    /* I/O thread only */
    CURL *easy;
    struct curl_slist *hdrs;
    char *url;            /* current URL of a redirect chain (NULL: the file's) */
    bool url_creds, tried_orig, used_eff, sent_if_range, size_unknown, is_retry, is_redirect;
    unsigned tries, redirects;
    uint64_t att_from, att_to; /* this attempt's range [from, to], file offsets */
    uint64_t att_got;
    long status;
    bool checked, aborted, discard;
    nf_rerr abort_err;
    uint64_t discarded;
    /* response headers */
    bool cr_seen, cr_dup, cl_seen, ce_seen;
    char cr[128], etag[256], lastmod[96], ce[48], location[16384];
    const char *too_long; /* a header above kept past its buffer: never used cut */
    char errbuf[CURL_ERROR_SIZE];
    uint64_t cl;
    double retry_after;
};

struct nf_http {
    nf_http_opts o;
    char *cacert, *token;
    CURLM *multi;
    CURLSH *share;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t io;
    bool io_started, stop;
    nf_hreq *all;
    unsigned running;
    nf_http_stats st;
};

/* ---- errors ---- */

static void seterr(nf_rerr *e, nf_rerr_kind k, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void seterr(nf_rerr *e, nf_rerr_kind k, int status, const char *fmt, ...)
{
    va_list ap;
    e->kind = k;
    e->status = status;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* ---- URLs ---- */

/* The parts of scheme://[user[:pass]@]host[:port][/path][?query][#frag]:
 * [a0, a1) the authority, [h0, h1) the host (brackets kept), [p0, p1) the
 * path. False when s is no http(s) URL. */
typedef struct {
    size_t a0, a1, h0, h1, p0, p1, user_end; /* user_end: '@' + 1, or a0 */
    bool https;
} url_parts;

static bool url_split(const char *s, url_parts *u)
{
    size_t sl;
    if (!strncasecmp(s, "http://", 7))
        sl = 7, u->https = false;
    else if (!strncasecmp(s, "https://", 8))
        sl = 8, u->https = true;
    else
        return false;
    u->a0 = sl;
    u->a1 = sl + strcspn(s + sl, "/?#");
    u->user_end = u->a0;
    for (size_t i = u->a0; i < u->a1; i++)
        if (s[i] == '@')
            u->user_end = i + 1;
    u->h0 = u->user_end;
    u->h1 = u->a1;
    if (s[u->h0] == '[') {
        const char *rb = memchr(s + u->h0, ']', u->a1 - u->h0);
        if (rb)
            u->h1 = (size_t)(rb - s) + 1;
    } else {
        const char *colon = memchr(s + u->h0, ':', u->a1 - u->h0);
        if (colon)
            u->h1 = (size_t)(colon - s);
    }
    u->p0 = u->a1;
    u->p1 = u->p0 + strcspn(s + u->p0, "?#");
    return true;
}

bool nf_is_url(const char *s)
{
    url_parts u;
    return s && url_split(s, &u);
}

char *nf_url_display(const char *url)
{
    url_parts u;
    if (!url_split(url, &u))
        return strdup(url);
    size_t n = u.a0 + (u.a1 - u.h0) + (u.p1 - u.p0);
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    memcpy(o, url, u.a0);
    memcpy(o + u.a0, url + u.h0, u.a1 - u.h0);
    memcpy(o + u.a0 + (u.a1 - u.h0), url + u.p0, u.p1 - u.p0);
    o[n] = 0;
    return o;
}

char *nf_url_sibling(const char *url, const char *name)
{
    url_parts u;
    if (!url_split(url, &u))
        return NULL;
    size_t keep = u.p1; /* through the last '/' of the path */
    while (keep > u.p0 && url[keep - 1] != '/')
        keep--;
    bool slash = keep == u.p0; /* no path at all: "/" + name */
    if (slash)
        keep = u.a1;
    size_t nl = strlen(name);
    char *o = malloc(keep + 1 + 3 * nl + 1), *q = o;
    if (!o)
        return NULL;
    memcpy(q, url, keep);
    q += keep;
    if (slash)
        *q++ = '/';
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < nl; i++) {
        unsigned char c = (unsigned char)name[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            *q++ = (char)c;
        } else {
            *q++ = '%';
            *q++ = hex[c >> 4];
            *q++ = hex[c & 15];
        }
    }
    *q = 0;
    return o;
}

char *nf_url_basename(const char *url)
{
    url_parts u;
    if (!url_split(url, &u))
        return strdup(nf_basename(url));
    size_t b = u.p1;
    while (b > u.p0 && url[b - 1] != '/')
        b--;
    return strndup(url + b, u.p1 - b);
}

/* The port of a URL split by url_split: its explicit one, else the
 * scheme's (80, 443); 0 for a malformed one. */
static unsigned url_port(const char *url, const url_parts *u)
{
    if (u->h1 >= u->a1 || url[u->h1] != ':')
        return u->https ? 443 : 80;
    unsigned p = 0;
    for (size_t i = u->h1 + 1; i < u->a1; i++) {
        if (url[i] < '0' || url[i] > '9' || p > 65535)
            return 0;
        p = p * 10 + (unsigned)(url[i] - '0');
    }
    return u->h1 + 1 < u->a1 && p <= 65535 ? p : 0;
}

bool nf_url_same_origin(const char *a, const char *b)
{
    url_parts ua, ub;
    if (!url_split(a, &ua) || !url_split(b, &ub) || ua.https != ub.https)
        return false;
    size_t la = ua.h1 - ua.h0, lb = ub.h1 - ub.h0;
    unsigned pa = url_port(a, &ua), pb = url_port(b, &ub);
    return la == lb && strncasecmp(a + ua.h0, b + ub.h0, la) == 0 && pa && pa == pb;
}

/* May credentials travel to url: https, or plain http to a loopback host. */
static bool secure_enough(const char *url)
{
    url_parts u;
    if (!url_split(url, &u))
        return false;
    if (u.https)
        return true;
    const char *h = url + u.h0;
    size_t n = u.h1 - u.h0;
    if ((n == 9 && !strncasecmp(h, "localhost", 9)) || (n == 5 && !memcmp(h, "[::1]", 5)))
        return true;
    if (n < 4 || memcmp(h, "127.", 4) != 0)
        return false;
    for (size_t i = 4; i < n; i++)
        if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9')))
            return false;
    return true;
}

static bool has_userinfo(const char *url)
{
    url_parts u;
    return url_split(url, &u) && u.user_end > u.a0;
}


/* ---- libcurl, loaded at run time ---- */

static struct {
    CURLcode (*global_init)(long);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_cleanup)(CURLM *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd[], unsigned int, int, int *);
    CURLSH *(*share_init)(void);
    CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
    CURLSHcode (*share_cleanup)(CURLSH *);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    CURLcode (*easy_pause)(CURL *, int);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    time_t (*getdate)(const char *, const time_t *);
    CURLU *(*url)(void);
    CURLUcode (*url_set)(CURLU *, CURLUPart, const char *, unsigned int);
    CURLUcode (*url_get)(const CURLU *, CURLUPart, char **, unsigned int);
    void (*url_cleanup)(CURLU *);
    void (*free)(void *);
} C;

static char g_unavailable[256];

/* dlopen libcurl and take every function above; false (with the reason in
 * g_unavailable) when it is missing or too old. */
static bool load_curl(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(g_unavailable, sizeof g_unavailable, "libcurl cannot be loaded (%s; the Debian "
                 "package libcurl4)", dlerror());
        return false;
    }
    static const struct {
        const char *name;
        size_t at;
    } fn[] = {
#define F(x) {"curl_" #x, offsetof(__typeof__(C), x)}
        F(global_init), F(multi_init), F(multi_setopt), F(multi_cleanup), F(multi_wakeup),
        F(multi_add_handle), F(multi_remove_handle), F(multi_perform), F(multi_info_read),
        F(multi_poll), F(share_init), F(share_setopt), F(share_cleanup), F(easy_init),
        F(easy_setopt), F(easy_getinfo), F(easy_cleanup), F(easy_pause), F(easy_strerror),
        F(slist_append), F(slist_free_all), F(getdate), F(url), F(url_set), F(url_get),
        F(url_cleanup), F(free),
#undef F
    };
    for (size_t i = 0; i < sizeof fn / sizeof *fn; i++) {
        void *f = dlsym(h, fn[i].name);
        if (!f) {
            snprintf(g_unavailable, sizeof g_unavailable, "libcurl has no %s (7.68 or later is "
                     "needed)", fn[i].name);
            return false;
        }
        memcpy((char *)&C + fn[i].at, &f, sizeof f);
    }
    return true;
}

/* ---- the client ---- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static CURLcode g_init = CURLE_FAILED_INIT;
static void global_init(void)
{
    if (load_curl())
        g_init = C.global_init(CURL_GLOBAL_DEFAULT);
    if (g_init != CURLE_OK && !g_unavailable[0])
        snprintf(g_unavailable, sizeof g_unavailable, "libcurl cannot be set up");
}

const char *nf_http_unavailable(void) { return g_unavailable[0] ? g_unavailable : NULL; }

nf_http *nf_http_new(const nf_http_opts *o)
{
    pthread_once(&g_once, global_init);
    if (g_init != CURLE_OK)
        return NULL;
    nf_http *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    if (o)
        h->o = *o;
    if (h->o.retries < 0)
        h->o.retries = NF_HTTP_RETRIES;
    if (!h->o.jobs)
        h->o.jobs = NF_HTTP_JOBS;
    if (h->o.stall_seconds <= 0)
        h->o.stall_seconds = 30;
    if (!h->o.stall_bytes)
        h->o.stall_bytes = 1024;
    if (h->o.backoff_seconds <= 0)
        h->o.backoff_seconds = 0.5;
    h->cacert = h->o.cacert ? strdup(h->o.cacert) : NULL;
    h->token = h->o.token && *h->o.token ? strdup(h->o.token) : NULL;
    h->o.cacert = h->o.token = NULL;
    h->multi = C.multi_init();
    h->share = C.share_init();
    if (!h->multi || !h->share || (o && o->cacert && !h->cacert) ||
        (o && o->token && *o->token && !h->token)) {
        nf_http_free(h);
        return NULL;
    }
    /* the I/O thread alone uses the share: no lock callbacks needed */
    C.share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    C.share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    C.multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)h->o.jobs);
    C.multi_setopt(h->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)h->o.jobs);
    C.multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)h->o.jobs * 2);
    C.multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->cond, NULL);
    return h;
}

static void *io_main(void *arg);

/* Lock held. */
static int ensure_thread(nf_http *h)
{
    if (h->io_started)
        return 0;
    sigset_t all, old;
    sigfillset(&all);
    /* the I/O thread takes no asynchronous signal: writers' handlers run on
     * the caller's threads (nf_writer.h) */
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&h->io, NULL, io_main, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return -1;
    h->io_started = true;
    return 0;
}

void nf_http_free(nf_http *h)
{
    if (!h)
        return;
    if (h->io_started) {
        pthread_mutex_lock(&h->lock);
        h->stop = true;
        pthread_mutex_unlock(&h->lock);
        C.multi_wakeup(h->multi);
        pthread_join(h->io, NULL);
    }
    if (h->multi)
        C.multi_cleanup(h->multi);
    if (h->share)
        C.share_cleanup(h->share);
    if (h->token) {
        explicit_bzero(h->token, strlen(h->token));
        free(h->token);
    }
    free(h->cacert);
    if (h->multi) {
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->cond);
    }
    free(h);
}

void nf_http_get_stats(nf_http *h, nf_http_stats *s)
{
    pthread_mutex_lock(&h->lock);
    *s = h->st;
    pthread_mutex_unlock(&h->lock);
}

unsigned nf_http_jobs(const nf_http *h) { return h->o.jobs; }

nf_hfile *nf_hfile_new(nf_http *h, const char *url, bool send_credentials)
{
    nf_hfile *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->h = h;
    f->url = strdup(url);
    f->name = nf_url_display(url);
    f->creds = send_credentials;
    if (!f->url || !f->name) {
        nf_hfile_free(f);
        return NULL;
    }
    return f;
}

void nf_hfile_free(nf_hfile *f)
{
    if (!f)
        return;
    free(f->url);
    free(f->name);
    free(f->eff_url);
    free(f);
}

const char *nf_hfile_name(const nf_hfile *f) { return f->name; }

bool nf_hfile_size(nf_hfile *f, uint64_t *size)
{
    pthread_mutex_lock(&f->h->lock);
    bool ok = f->have_size;
    if (ok)
        *size = f->size;
    pthread_mutex_unlock(&f->h->lock);
    return ok;
}

bool nf_hfile_validator(nf_hfile *f, char *out, size_t cap)
{
    pthread_mutex_lock(&f->h->lock);
    bool ok = f->have_val;
    if (ok)
        snprintf(out, cap, "%s", f->val);
    pthread_mutex_unlock(&f->h->lock);
    return ok;
}

/* ---- requests, the callers' side ---- */

static nf_hreq *hreq_start(nf_hfile *f, uint64_t off, uint64_t len, void *buf, size_t cap,
                           bool whole);

nf_hreq *nf_hreq_start(nf_hfile *f, uint64_t off, uint64_t len, void *buf, size_t cap)
{
    return hreq_start(f, off, len, buf, cap, false);
}

static nf_hreq *hreq_start(nf_hfile *f, uint64_t off, uint64_t len, void *buf, size_t cap,
                           bool whole)
{
    nf_http *h = f->h;
    nf_hreq *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->h = h;
    r->f = f;
    r->off = off;
    r->len = len;
    r->end = len;
    r->buf = buf;
    r->cap = cap;
    r->stream = cap < len;
    r->whole = whole;
    r->retry_after = -1;
    /* libcurl may hand over CURL_MAX_WRITE_SIZE bytes at once, whatever its
     * buffer: a streamed request with less room could only stall */
    bool small = len && r->stream && cap < NF_HREQ_MIN_STREAM;
    pthread_mutex_lock(&h->lock);
    if (len == 0 || small || ensure_thread(h) < 0) {
        r->done = r->detached = true;
        r->failed = len != 0;
        if (small)
            seterr(&r->err, NF_RE_IO, 0, "a streamed request needs a buffer of at least %u bytes, not %zu",
                   (unsigned)NF_HREQ_MIN_STREAM, cap);
        else if (len)
            seterr(&r->err, NF_RE_NOMEM, 0, "cannot start the I/O thread");
        pthread_mutex_unlock(&h->lock);
        return r;
    }
    r->next = h->all;
    h->all = r;
    pthread_mutex_unlock(&h->lock);
    C.multi_wakeup(h->multi);
    return r;
}

nf_hreq *nf_hreq_start_whole(nf_hfile *f, void *buf, size_t cap)
{
    return hreq_start(f, 0, UINT64_MAX, buf, cap, true);
}

ssize_t nf_hreq_wait(nf_hreq *r, nf_rerr *e)
{
    nf_http *h = r->h;
    pthread_mutex_lock(&h->lock);
    while (!r->done) {
        r->waiting = true;
        pthread_cond_wait(&h->cond, &h->lock);
    }
    r->waiting = false;
    ssize_t n = r->failed ? -1 : (ssize_t)r->got;
    if (r->failed)
        *e = r->err;
    pthread_mutex_unlock(&h->lock);
    return n;
}

ssize_t nf_hreq_read(nf_hreq *r, const void **p, nf_rerr *e)
{
    nf_http *h = r->h;
    bool wake = false;
    pthread_mutex_lock(&h->lock);
    r->rpos += r->held;
    r->held = 0;
    if (r->stream) {
        /* the transfer writes under the lock: room can be made at any time */
        if (r->rpos == r->wpos) {
            r->rpos = r->wpos = 0;
        } else if (r->rpos > 0 && r->paused) {
            memmove(r->buf, r->buf + r->rpos, r->wpos - r->rpos);
            r->wpos -= r->rpos;
            r->rpos = 0;
        }
        if (r->paused && !r->unpause) {
            r->unpause = true;
            wake = true;
        }
    }
    if (wake) {
        pthread_mutex_unlock(&h->lock);
        C.multi_wakeup(h->multi);
        pthread_mutex_lock(&h->lock);
    }
    while (r->wpos == r->rpos && !r->done) {
        r->waiting = true;
        pthread_cond_wait(&h->cond, &h->lock);
    }
    r->waiting = false;
    ssize_t n;
    if (r->wpos > r->rpos) {
        *p = r->buf + r->rpos;
        r->held = r->wpos - r->rpos;
        n = (ssize_t)r->held;
    } else if (r->failed) {
        *e = r->err;
        n = -1;
    } else {
        n = 0;
    }
    pthread_mutex_unlock(&h->lock);
    return n;
}

void nf_hreq_free(nf_hreq *r)
{
    if (!r)
        return;
    nf_http *h = r->h;
    pthread_mutex_lock(&h->lock);
    r->released = true;
    if (!r->detached) {
        if (!r->running) {
            /* never handed to curl (or between attempts): unlink it here */
            for (nf_hreq **pp = &h->all; *pp; pp = &(*pp)->next)
                if (*pp == r) {
                    *pp = r->next;
                    break;
                }
            r->detached = true;
        } else {
            pthread_mutex_unlock(&h->lock);
            C.multi_wakeup(h->multi);
            pthread_mutex_lock(&h->lock);
            while (!r->detached)
                pthread_cond_wait(&h->cond, &h->lock);
        }
    }
    pthread_mutex_unlock(&h->lock);
    free(r->url);
    free(r);
}

ssize_t nf_hfile_pread(nf_hfile *f, void *buf, size_t len, uint64_t off, nf_rerr *e)
{
    const size_t piece_min = 4u << 20;
    unsigned jobs = f->h->o.jobs;
    size_t n = 1;
    if (len > 4 * piece_min) {
        n = len / piece_min;
        if (n > jobs)
            n = jobs;
    }
    nf_hreq *rq[64];
    if (n > 64)
        n = 64;
    size_t per = len / n;
    for (size_t k = 0; k < n; k++) {
        size_t a = k * per, b = k + 1 == n ? len : a + per;
        rq[k] = nf_hreq_start(f, off + a, b - a, (unsigned char *)buf + a, b - a);
        if (!rq[k]) {
            for (size_t j = 0; j < k; j++)
                nf_hreq_free(rq[j]);
            seterr(e, NF_RE_NOMEM, 0, "out of memory");
            return -1;
        }
    }
    ssize_t total = 0;
    bool failed = false, shortened = false;
    for (size_t k = 0; k < n; k++) {
        nf_rerr ek;
        ssize_t g = nf_hreq_wait(rq[k], &ek);
        size_t a = k * per, b = k + 1 == n ? len : a + per;
        if (g < 0 && !failed) {
            *e = ek;
            failed = true;
        } else if (g >= 0 && !shortened) {
            total += g;
            shortened = (size_t)g < b - a; /* the file ends here: later pieces are past it */
        }
        nf_hreq_free(rq[k]);
    }
    return failed ? -1 : total;
}

/* ---- the I/O thread ---- */

static void trace(nf_http *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(nf_http *h, const char *fmt, ...)
{
    if (!h->o.trace)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    h->o.trace(h->o.trace_ctx, line);
}

/* The URL this attempt goes to, for messages. */
static char *attempt_name(const nf_hreq *r)
{
    return nf_url_display(r->url ? r->url : r->f->url);
}

/* Finish r (lock held). */
static void complete(nf_hreq *r)
{
    r->done = true;
    pthread_cond_broadcast(&r->h->cond);
}

static void fail(nf_hreq *r, const nf_rerr *e)
{
    pthread_mutex_lock(&r->h->lock);
    r->failed = true;
    r->err = *e;
    complete(r);
    pthread_mutex_unlock(&r->h->lock);
}

static void abort_with(nf_hreq *r, nf_rerr_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void abort_with(nf_hreq *r, nf_rerr_kind k, const char *fmt, ...)
{
    va_list ap;
    r->aborted = true;
    r->abort_err.kind = k;
    r->abort_err.status = (int)r->status;
    va_start(ap, fmt);
    vsnprintf(r->abort_err.msg, sizeof r->abort_err.msg, fmt, ap);
    va_end(ap);
}

static bool parse_u64_n(const char *s, size_t n, uint64_t *v, bool *overflow)
{
    uint64_t x = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        if (!nf_mul_u64(x, 10, &x) || !nf_add_u64(x, (uint64_t)(s[i] - '0'), &x)) {
            *overflow = true;
            return false;
        }
    }
    *v = x;
    return true;
}

/* Content-Range: "bytes A-B/T". Returns 0, -1 malformed, -2 a number past U64. */
static int parse_content_range(const char *s, uint64_t *a, uint64_t *b, uint64_t *t)
{
    if (strncasecmp(s, "bytes ", 6) != 0)
        return -1;
    s += 6;
    const char *dash = strchr(s, '-'), *slash = dash ? strchr(dash, '/') : NULL;
    if (!dash || !slash)
        return -1;
    bool of = false;
    if (!parse_u64_n(s, (size_t)(dash - s), a, &of) ||
        !parse_u64_n(dash + 1, (size_t)(slash - dash - 1), b, &of) ||
        !parse_u64_n(slash + 1, strlen(slash + 1), t, &of))
        return of ? -2 : -1;
    return 0;
}

/* Is the response's validator the file's? Sets the file's from the first
 * 2xx. Lock held. Returns false when it changed: another validator, none
 * where the first 2xx had one (an edge that strips it may serve another
 * version), or one where the first 2xx had none. */
static bool take_validator(nf_hreq *r)
{
    nf_hfile *f = r->f;
    bool strong = r->etag[0] && strncmp(r->etag, "W/", 2) != 0;
    const char *v = strong ? r->etag : r->lastmod[0] ? r->lastmod : NULL;
    bool first = !f->seen_2xx;
    f->seen_2xx = true;
    if (!f->have_val) {
        if (v && !first)
            return false;
        if (v) {
            snprintf(f->val, sizeof f->val, "%s", v);
            f->val_etag = strong;
            f->have_val = true;
        }
        return true;
    }
    if (f->val_etag)
        return strcmp(r->etag, f->val) == 0;
    return strcmp(r->lastmod, f->val) == 0;
}

/* The headers of a 2xx response, before its first body byte: the rules of
 * nf_http.h. Returns false (r aborted) when they break one. */
static bool check_response(nf_hreq *r)
{
    r->checked = true;
    nf_hfile *f = r->f;
    bool ok = false;
    if (r->too_long) {
        abort_with(r, NF_RE_SERVER, "a response header too long to keep whole (%s)", r->too_long);
        goto out;
    }
    if (r->ce_seen && strcasecmp(r->ce, "identity") != 0) {
        abort_with(r, NF_RE_SERVER, "the server sent a compressed %s (Content-Encoding: %s)",
                   r->whole ? "file" : "range", r->ce);
        goto out;
    }
    if (r->whole) {
        /* the whole file, once, in order: its length from Content-Length */
        if (r->status != 200) {
            abort_with(r, NF_RE_SERVER, "HTTP %ld to a request for the whole file", r->status);
            goto out;
        }
        pthread_mutex_lock(&r->h->lock);
        take_validator(r);
        if (r->cl_seen && r->cl != UINT64_MAX) {
            f->have_size = true;
            f->size = r->cl;
            r->end = r->cl;
        }
        pthread_mutex_unlock(&r->h->lock);
        ok = true;
        goto out;
    }
    if (r->status == 200) {
        pthread_mutex_lock(&r->h->lock);
        bool same = f->have_val && (f->val_etag ? !strcmp(r->etag, f->val)
                                                : !strcmp(r->lastmod, f->val));
        pthread_mutex_unlock(&r->h->lock);
        if (r->sent_if_range && !same)
            abort_with(r, NF_RE_CHANGED, "the file changed while it was read (the server "
                       "answered If-Range with the whole file, HTTP 200)");
        else if (r->sent_if_range)
            abort_with(r, NF_RE_SERVER, "the server ignored a Range request after serving "
                       "ranges of this file (HTTP 200 to \"Range: bytes=%llu-%llu\")",
                       (unsigned long long)r->att_from, (unsigned long long)r->att_to);
        else
            abort_with(r, NF_RE_NORANGE, "the server does not serve byte ranges (HTTP 200 to "
                       "\"Range: bytes=%llu-%llu\")", (unsigned long long)r->att_from,
                       (unsigned long long)r->att_to);
        goto out;
    }
    if (!r->cr_seen || r->cr_dup) {
        abort_with(r, NF_RE_SERVER, r->cr_dup ? "two Content-Range headers in one response"
                                              : "HTTP 206 without a Content-Range");
        goto out;
    }
    uint64_t a, b, t;
    int pc = parse_content_range(r->cr, &a, &b, &t);
    if (pc == -2) {
        abort_with(r, NF_RE_SERVER, "Content-Range \"%s\": a length past U64", r->cr);
        goto out;
    }
    if (pc < 0 || b < a || b >= t) {
        abort_with(r, NF_RE_SERVER, "malformed Content-Range \"%s\"", r->cr);
        goto out;
    }
    bool end_ok = b == r->att_to || (r->size_unknown && b < r->att_to && b + 1 == t);
    if (a != r->att_from || !end_ok) {
        abort_with(r, NF_RE_SERVER, "Content-Range \"%s\" is not the range asked, bytes %llu-%llu",
                   r->cr, (unsigned long long)r->att_from, (unsigned long long)r->att_to);
        goto out;
    }
    if (r->cl_seen && r->cl != b - a + 1) {
        abort_with(r, NF_RE_SERVER, "Content-Length %llu for a range of %llu bytes",
                   (unsigned long long)r->cl, (unsigned long long)(b - a + 1));
        goto out;
    }
    pthread_mutex_lock(&r->h->lock);
    if (f->have_size && f->size != t) {
        uint64_t was = f->size;
        pthread_mutex_unlock(&r->h->lock);
        abort_with(r, NF_RE_CHANGED, "the file changed while it was read (its length went from "
                   "%llu to %llu bytes)", (unsigned long long)was, (unsigned long long)t);
        goto out;
    }
    if (!take_validator(r)) {
        char was[sizeof f->val];
        snprintf(was, sizeof was, "%s", f->have_val ? f->val : "none");
        const char *now = f->have_val && f->val_etag ? r->etag : r->etag[0] ? r->etag : r->lastmod;
        pthread_mutex_unlock(&r->h->lock);
        abort_with(r, NF_RE_CHANGED, "the file changed while it was read (its validator went "
                   "from %s to %s)", was, now[0] ? now : "none");
        goto out;
    }
    if (!f->have_size) {
        f->have_size = true;
        f->size = t;
    }
    if (!f->eff_url && r->url) {
        f->eff_url = strdup(r->url);
        f->eff_creds = r->url_creds;
    }
    /* a first request past the end of a shorter file: the range ends there */
    if (b < r->att_to)
        r->end = b + 1 - r->off;
    pthread_mutex_unlock(&r->h->lock);
    r->att_to = b;
    ok = true;
out:
    return ok;
}

static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    nf_hreq *r = ud;
    size_t n = sz * nm, k = n;
    while (k && (p[k - 1] == '\r' || p[k - 1] == '\n'))
        k--;
    if (k >= 5 && !strncmp(p, "HTTP/", 5)) {
        /* a new response (after a 1xx): forget the last one's headers */
        r->cr_seen = r->cr_dup = r->cl_seen = r->ce_seen = false;
        r->etag[0] = r->lastmod[0] = r->location[0] = 0;
        r->too_long = NULL;
        r->retry_after = -1;
        return n;
    }
    const char *colon = memchr(p, ':', k);
    if (!colon)
        return n;
    size_t nl = (size_t)(colon - p);
    const char *v = colon + 1;
    size_t vl = k - nl - 1;
    while (vl && (*v == ' ' || *v == '\t'))
        v++, vl--;
    while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        vl--;
#define IS(name) (nl == sizeof(name) - 1 && !strncasecmp(p, name, nl))
#define KEEP(dst, name)                                                                    \
    do {                                                                                   \
        if (vl >= sizeof dst && !r->too_long)                                              \
            r->too_long = name;                                                            \
        snprintf(dst, sizeof dst, "%.*s", (int)(vl < sizeof dst ? vl : sizeof dst - 1), v); \
    } while (0)
    if (IS("Content-Range")) {
        r->cr_dup = r->cr_seen;
        r->cr_seen = true;
        KEEP(r->cr, "Content-Range");
    } else if (IS("Content-Length")) {
        bool of = false;
        r->cl_seen = true;
        if (!parse_u64_n(v, vl, &r->cl, &of))
            r->cl = UINT64_MAX; /* unparsable or past U64: it matches no range */
    } else if (IS("ETag")) {
        KEEP(r->etag, "ETag");
    } else if (IS("Last-Modified")) {
        KEEP(r->lastmod, "Last-Modified");
    } else if (IS("Content-Encoding")) {
        r->ce_seen = true;
        KEEP(r->ce, "Content-Encoding");
    } else if (IS("Location")) {
        KEEP(r->location, "Location");
    } else if (IS("Retry-After")) {
        char t[96];
        /* a longer one is past U64 anyway: capped */
        snprintf(t, sizeof t, "%.*s", (int)(vl < sizeof t ? vl : sizeof t - 1), v);
        bool of = false;
        uint64_t s;
        if (parse_u64_n(t, strlen(t), &s, &of))
            r->retry_after = (double)s;
        else if (of)
            r->retry_after = RETRY_AFTER_CAP;
        else {
            time_t when = C.getdate(t, NULL);
            if (when != (time_t)-1) {
                double d = difftime(when, time(NULL));
                r->retry_after = d < 0 ? 0 : d;
            }
        }
    }
#undef IS
#undef KEEP
    return n;
}

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    nf_hreq *r = ud;
    size_t n = sz * nm;
    if (!r->checked && !r->discard) {
        C.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
        if (r->status == 206 || r->status == 200) {
            if (!check_response(r))
                return 0;
        } else {
            r->discard = true;
        }
    }
    if (r->discard) {
        r->discarded += n;
        pthread_mutex_lock(&r->h->lock);
        r->h->st.body_bytes += n;
        pthread_mutex_unlock(&r->h->lock);
        return r->discarded > DISCARD_CAP ? 0 : n;
    }
    uint64_t span = r->whole ? (r->cl_seen ? r->cl : UINT64_MAX) : r->att_to - r->att_from + 1;
    if (r->att_got + n > span) {
        abort_with(r, NF_RE_SERVER, "the server sent more than the %llu bytes of the range",
                   (unsigned long long)span);
        return 0;
    }
    nf_http *h = r->h;
    pthread_mutex_lock(&h->lock);
    if (r->released) {
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    if (r->stream) {
        if (r->rpos == r->wpos && !r->held)
            r->rpos = r->wpos = 0;
        if (n > r->cap) {
            /* it would never fit: an error, not a pause for ever */
            pthread_mutex_unlock(&h->lock);
            abort_with(r, NF_RE_IO, "libcurl handed %zu bytes at once, more than the %zu-byte buffer "
                       "of a streamed request", n, r->cap);
            return 0;
        }
        if (r->cap - r->wpos < n) {
            r->paused = true;
            if (r->waiting)
                pthread_cond_broadcast(&h->cond); /* the buffer is full: its reader's turn */
            pthread_mutex_unlock(&h->lock);
            return CURL_WRITEFUNC_PAUSE;
        }
        memcpy(r->buf + r->wpos, p, n);
        r->wpos += n;
    } else {
        memcpy(r->buf + r->got, p, n);
        r->wpos = (size_t)(r->got + n);
    }
    r->got += n;
    r->att_got += n;
    h->st.body_bytes += n;
    size_t wake = r->stream && r->cap / 2 < WAKE_BYTES ? r->cap / 2 : WAKE_BYTES;
    if (r->waiting && r->wpos - r->rpos >= wake)
        pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* A reserved request that did not reach curl gives its slot back (after
 * fail or complete: its owner may free it once running is false). */
static void unreserve(nf_http *h, nf_hreq *r)
{
    pthread_mutex_lock(&h->lock);
    r->running = false;
    h->running--;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->lock);
}

/* Start the next attempt of r, reserved by io_main (running set, its slot
 * counted: its owner waits for it rather than free it under us). */
static void start_attempt(nf_http *h, nf_hreq *r)
{
    nf_hfile *f = r->f;
    char ifr[300] = "";
    const char *url;
    bool creds;
    pthread_mutex_lock(&h->lock);
    r->size_unknown = !f->have_size;
    if (r->whole && r->got) {
        /* no range to resume from: what came is all there is */
        pthread_mutex_unlock(&h->lock);
        nf_rerr e;
        seterr(&e, NF_RE_IO, 0, "the transfer of the whole file stopped after %llu bytes, and "
               "a server that does not serve ranges cannot resume it",
               (unsigned long long)r->got);
        fail(r, &e);
        unreserve(h, r);
        return;
    }
    if (f->have_size && !r->whole) {
        uint64_t avail = r->off >= f->size ? 0 : f->size - r->off;
        if (r->end > avail)
            r->end = avail; /* the file ends inside (or before) this range */
    }
    if (r->got >= r->end) {
        complete(r);
        r->running = false;
        h->running--;
        pthread_mutex_unlock(&h->lock);
        return;
    }
    uint64_t from = r->off + r->got, to = r->off + r->end - 1;
    if (f->have_val && !r->whole)
        snprintf(ifr, sizeof ifr, "If-Range: %s", f->val);
    r->used_eff = false;
    if (r->url) {
        url = r->url;
        creds = r->url_creds;
    } else if (f->eff_url && !r->tried_orig) {
        url = f->eff_url;
        creds = f->eff_creds;
        r->used_eff = true;
    } else {
        url = f->url;
        creds = f->creds;
    }
    char *u = strdup(url);
    if (r->is_retry)
        h->st.retries++;
    else
        h->st.requests++;
    if (r->is_redirect)
        h->st.redirects++;
    pthread_mutex_unlock(&h->lock);
    nf_rerr e;
    if (!u) {
        seterr(&e, NF_RE_NOMEM, 0, "out of memory");
        fail(r, &e);
        unreserve(h, r);
        return;
    }
    bool secure = secure_enough(u);
    if (has_userinfo(u) && !(creds && secure)) {
        char *nm = nf_url_display(u);
        seterr(&e, NF_RE_IO, 0, "refusing to send the user name and password of %s %s",
               nm ? nm : "the URL", secure ? "to another host" : "over plain http");
        free(nm);
        free(u);
        fail(r, &e);
        unreserve(h, r);
        return;
    }
    char range[80];
    snprintf(range, sizeof range, "Range: bytes=%llu-%llu", (unsigned long long)from,
             (unsigned long long)to);
    r->att_from = from;
    r->att_to = to;
    r->att_got = 0;
    r->sent_if_range = ifr[0] != 0;
    r->status = 0;
    r->checked = r->aborted = r->discard = false;
    r->discarded = 0;
    r->cr_seen = r->cr_dup = r->cl_seen = r->ce_seen = false;
    r->etag[0] = r->lastmod[0] = r->location[0] = 0;
    r->retry_after = -1;
    struct curl_slist *hl = C.slist_append(NULL, r->whole ? "Accept-Encoding: identity" : range);
    if (hl && ifr[0])
        hl = C.slist_append(hl, ifr);
    if (hl && creds && secure && h->token) {
        size_t tl = strlen(h->token);
        char *auth = malloc(tl + 32);
        if (auth) {
            memcpy(auth, "Authorization: Bearer ", 22);
            memcpy(auth + 22, h->token, tl + 1);
            hl = C.slist_append(hl, auth); /* copied */
            explicit_bzero(auth, tl + 22);
            free(auth);
        }
    }
    CURL *c = C.easy_init();
    if (!hl || !c) {
        C.slist_free_all(hl);
        if (c)
            C.easy_cleanup(c);
        free(u);
        seterr(&e, NF_RE_NOMEM, 0, "out of memory");
        fail(r, &e);
        unreserve(h, r);
        return;
    }
    C.easy_setopt(c, CURLOPT_URL, u);
    /* http and https only (CURLOPT_PROTOCOLS_STR since curl 7.85; the
     * bitmask before it, which newer curls still take) */
    if (C.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") != CURLE_OK) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        C.easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#pragma GCC diagnostic pop
    }
    C.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    C.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    C.easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    C.easy_setopt(c, CURLOPT_USERAGENT, "ninfer/" NF_VERSION);
    C.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    C.easy_setopt(c, CURLOPT_WRITEDATA, r);
    C.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    C.easy_setopt(c, CURLOPT_HEADERDATA, r);
    C.easy_setopt(c, CURLOPT_PRIVATE, r);
    r->errbuf[0] = 0;
    C.easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
    C.easy_setopt(c, CURLOPT_SHARE, h->share);
    C.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    C.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->cacert)
        C.easy_setopt(c, CURLOPT_CAINFO, h->cacert);
    C.easy_setopt(c, CURLOPT_NETRC, creds && secure && h->o.netrc ? (long)CURL_NETRC_OPTIONAL
                                                                     : (long)CURL_NETRC_IGNORED);
    C.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, (long)h->o.stall_bytes);
    long stall = (long)ceil(h->o.stall_seconds);
    C.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall < 1 ? 1L : stall);
    C.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(h->o.stall_seconds * 1000));
    /* a streamed request's callback data must fit its buffer whole */
    long bufsz = 512L << 10;
    if (r->stream && r->cap < (size_t)bufsz)
        bufsz = (long)r->cap; /* at least NF_HREQ_MIN_STREAM */
    C.easy_setopt(c, CURLOPT_BUFFERSIZE, bufsz);
    C.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    C.easy_setopt(c, CURLOPT_PIPEWAIT, 1L);
    r->easy = c;
    r->hdrs = hl;
    free(u);
    C.multi_add_handle(h->multi, c);
}

/* Take r's attempt out of curl (lock not held; a reserved one may not be
 * in it yet). r stays reserved: its owner still may not free it. */
static void drop_easy(nf_http *h, nf_hreq *r)
{
    if (r->easy) {
        C.multi_remove_handle(h->multi, r->easy);
        C.easy_cleanup(r->easy);
    }
    /* the token's copy in the header list is wiped before it is freed */
    for (struct curl_slist *s = r->hdrs; s; s = s->next)
        if (!strncasecmp(s->data, "Authorization:", 14))
            explicit_bzero(s->data, strlen(s->data));
    C.slist_free_all(r->hdrs);
    r->easy = NULL;
    r->hdrs = NULL;
}

/* Give r's slot back (lock not held). Its owner may free it the moment
 * running is false: the I/O thread's last touch of r. */
static void release_slot(nf_http *h, nf_hreq *r)
{
    pthread_mutex_lock(&h->lock);
    r->running = false;
    r->paused = r->unpause = false;
    h->running--;
    pthread_mutex_unlock(&h->lock);
}

/* Take r out of curl and give its slot back. */
static void detach(nf_http *h, nf_hreq *r)
{
    drop_easy(h, r);
    release_slot(h, r);
}

/* Retry r after a fault, or fail it when its retries are spent. */
static void retry_or_fail(nf_http *h, nf_hreq *r, nf_rerr_kind kind, const char *why,
                          const char *name)
{
    uint64_t left = r->end - r->got;
    if (r->tries >= (unsigned)h->o.retries) {
        nf_rerr e;
        seterr(&e, kind, (int)r->status, "%s; gave up after %u %s (%llu bytes of the range "
               "never came)", why, r->tries, r->tries == 1 ? "retry" : "retries",
               (unsigned long long)left);
        trace(h, "GET %s bytes=%llu-%llu: %s; giving up", name, (unsigned long long)r->att_from,
              (unsigned long long)r->att_to, why);
        fail(r, &e);
        return;
    }
    double d = h->o.backoff_seconds * pow(2.0, (double)r->tries);
    if (d > BACKOFF_CAP)
        d = BACKOFF_CAP;
    if (r->retry_after >= 0)
        d = r->retry_after > RETRY_AFTER_CAP ? RETRY_AFTER_CAP : r->retry_after;
    r->tries++;
    trace(h, "GET %s bytes=%llu-%llu: %s; retry %u in %.1f s", name,
          (unsigned long long)r->att_from, (unsigned long long)r->att_to, why, r->tries, d);
    free(r->url);
    r->url = NULL;
    r->redirects = 0;
    r->is_retry = true;
    r->is_redirect = false;
    pthread_mutex_lock(&h->lock);
    r->due = nf_now() + d;
    pthread_mutex_unlock(&h->lock);
}

static bool retryable(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT: case CURLE_RECV_ERROR: case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE: case CURLE_GOT_NOTHING: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2: case CURLE_HTTP2_STREAM:
        return true;
    default:
        return false;
    }
}

/* Follow a redirect of r to its Location. */
static void redirect(nf_http *h, nf_hreq *r, const char *name)
{
    nf_rerr e;
    const char *base = r->url ? r->url : r->used_eff ? r->f->eff_url : r->f->url;
    if (!r->location[0]) {
        seterr(&e, NF_RE_SERVER, (int)r->status, "HTTP %ld without a Location", r->status);
        fail(r, &e);
        return;
    }
    if (r->too_long) {
        seterr(&e, NF_RE_SERVER, (int)r->status, "HTTP %ld with a header too long to keep whole "
               "(%s)", r->status, r->too_long);
        fail(r, &e);
        return;
    }
    if (++r->redirects > MAX_REDIRECTS) {
        seterr(&e, NF_RE_SERVER, (int)r->status, "more than %d redirects (a redirect loop?)",
               MAX_REDIRECTS);
        fail(r, &e);
        return;
    }
    CURLU *u = C.url();
    char *to = NULL;
    if (!u || C.url_set(u, CURLUPART_URL, base, 0) != CURLUE_OK ||
        C.url_set(u, CURLUPART_URL, r->location, 0) != CURLUE_OK ||
        C.url_get(u, CURLUPART_URL, &to, 0) != CURLUE_OK || !nf_is_url(to)) {
        C.url_cleanup(u);
        C.free(to);
        seterr(&e, NF_RE_SERVER, (int)r->status, "HTTP %ld to a Location that is no http(s) "
               "URL", r->status);
        fail(r, &e);
        return;
    }
    C.url_cleanup(u);
    bool from_https = !strncasecmp(base, "https:", 6), to_http = !strncasecmp(to, "http:", 5);
    char *tn = nf_url_display(to);
    trace(h, "GET %s bytes=%llu-%llu %ld -> %s", name, (unsigned long long)r->att_from,
          (unsigned long long)r->att_to, r->status, tn ? tn : "?");
    free(tn);
    if (from_https && to_http) {
        C.free(to);
        seterr(&e, NF_RE_SERVER, (int)r->status, "refusing a redirect from https to http");
        fail(r, &e);
        return;
    }
    bool creds = (r->url ? r->url_creds : r->used_eff ? r->f->eff_creds : r->f->creds) &&
                 nf_url_same_origin(to, r->f->url);
    free(r->url);
    r->url = strdup(to);
    r->url_creds = creds;
    C.free(to);
    if (!r->url) {
        seterr(&e, NF_RE_NOMEM, 0, "out of memory");
        fail(r, &e);
        return;
    }
    r->is_retry = false;
    r->is_redirect = true;
    pthread_mutex_lock(&h->lock);
    r->due = 0;
    pthread_mutex_unlock(&h->lock);
}

/* An attempt of r ended with res. r stays reserved (running) until the
 * end, where release_slot gives it back: an owner that frees it without
 * waiting for it to finish (nf_rstream_free once it has every byte it
 * wants, a cancel) waits in nf_hreq_free until then, not under us. */
static void attempt_end(nf_http *h, nf_hreq *r, CURLcode res);

static void attempt_done(nf_http *h, nf_hreq *r, CURLcode res)
{
    attempt_end(h, r, res);
    release_slot(h, r);
}

static void attempt_end(nf_http *h, nf_hreq *r, CURLcode res)
{
    if (!r->status)
        C.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    bool released;
    pthread_mutex_lock(&h->lock);
    released = r->released;
    pthread_mutex_unlock(&h->lock);
    /* a 2xx without a body byte is checked here */
    if (res == CURLE_OK && !r->checked && !r->aborted && (r->status == 200 || r->status == 206))
        check_response(r);
    drop_easy(h, r);
    if (released) {
        if (res == CURLE_OK && (r->status == 206 || r->status == 200)) {
            char *nm = attempt_name(r);
            trace(h, "GET %s bytes=%llu-%llu %ld", nm ? nm : "(url)",
                  (unsigned long long)r->att_from, (unsigned long long)r->att_to, r->status);
            free(nm);
        }
        return;
    }
    char *nm = attempt_name(r);
    const char *name = nm ? nm : "(url)";
    nf_rerr e;
    char why[320];
    if (r->aborted && !r->discard) {
        trace(h, "GET %s bytes=%llu-%llu %ld: %s", name, (unsigned long long)r->att_from,
              (unsigned long long)r->att_to, r->status, r->abort_err.msg);
        fail(r, &r->abort_err);
        goto out;
    }
    if (res != CURLE_OK && !(r->discard && res == CURLE_WRITE_ERROR)) {
        if (res == CURLE_OPERATION_TIMEDOUT)
            snprintf(why, sizeof why, "stalled: below %u bytes/s for %g s", h->o.stall_bytes,
                     h->o.stall_seconds);
        else if (r->errbuf[0])
            snprintf(why, sizeof why, "%s", r->errbuf); /* libcurl's detail (TLS, DNS...) */
        else
            snprintf(why, sizeof why, "%s", C.easy_strerror(res));
        if (r->att_got)
            snprintf(why + strlen(why), sizeof why - strlen(why), " after %llu of %llu bytes",
                     (unsigned long long)r->att_got,
                     (unsigned long long)(r->att_to - r->att_from + 1));
        if (retryable(res))
            retry_or_fail(h, r, NF_RE_IO, why, name);
        else {
            trace(h, "GET %s bytes=%llu-%llu: %s", name, (unsigned long long)r->att_from,
                  (unsigned long long)r->att_to, why);
            seterr(&e, NF_RE_IO, 0, "%s", why);
            fail(r, &e);
        }
        goto out;
    }
    long st = r->status;
    if (r->whole && st == 200) {
        trace(h, "GET %s whole file 200", name);
        pthread_mutex_lock(&h->lock);
        r->end = r->got;
        complete(r);
        pthread_mutex_unlock(&h->lock);
        goto out;
    }
    if (st == 206 || st == 200) {
        uint64_t span = r->att_to - r->att_from + 1;
        trace(h, "GET %s bytes=%llu-%llu %ld%s", name, (unsigned long long)r->att_from,
              (unsigned long long)r->att_to, st, r->is_retry ? " (retry)" : "");
        if (r->att_got < span) {
            snprintf(why, sizeof why, "the response ended after %llu of %llu bytes",
                     (unsigned long long)r->att_got, (unsigned long long)span);
            retry_or_fail(h, r, NF_RE_IO, why, name);
            goto out;
        }
        pthread_mutex_lock(&h->lock);
        if (r->got >= r->end)
            complete(r);
        else
            r->due = 0; /* more of the range (a file whose length came late) */
        pthread_mutex_unlock(&h->lock);
        goto out;
    }
    trace(h, "GET %s bytes=%llu-%llu %ld", name, (unsigned long long)r->att_from,
          (unsigned long long)r->att_to, st);
    if (st == 301 || st == 302 || st == 303 || st == 307 || st == 308) {
        redirect(h, r, name);
        goto out;
    }
    if ((st == 401 || st == 403 || st == 404 || st == 410) && r->used_eff && !r->tried_orig) {
        /* a redirect target may expire (a signed URL): once more from the start */
        r->tried_orig = true;
        pthread_mutex_lock(&h->lock);
        r->due = 0;
        pthread_mutex_unlock(&h->lock);
        goto out;
    }
    if (st == 404 || st == 410) {
        seterr(&e, NF_RE_MISSING, (int)st, "not found (HTTP %ld)", st);
        fail(r, &e);
    } else if (st == 401 || st == 403) {
        seterr(&e, NF_RE_DENIED, (int)st, "not authorized (HTTP %ld)", st);
        fail(r, &e);
    } else if (st == 416) {
        pthread_mutex_lock(&h->lock);
        bool past = r->f->have_size && r->att_from >= r->f->size;
        if (!past && !r->f->have_size) {
            uint64_t t;
            bool of = false;
            const char *star = strncasecmp(r->cr, "bytes */", 8) == 0 ? r->cr + 8 : NULL;
            if (star && parse_u64_n(star, strlen(star), &t, &of) && r->att_from >= t) {
                r->f->have_size = true;
                r->f->size = t;
                past = true;
            }
        }
        if (past) {
            r->end = r->got;
            complete(r);
        }
        pthread_mutex_unlock(&h->lock);
        if (!past) {
            seterr(&e, NF_RE_SERVER, 416, "HTTP 416 for bytes=%llu-%llu, inside the file",
                   (unsigned long long)r->att_from, (unsigned long long)r->att_to);
            fail(r, &e);
        }
    } else if (st == 408 || st == 429 || (st >= 500 && st <= 599)) {
        snprintf(why, sizeof why, "HTTP %ld", st);
        retry_or_fail(h, r, NF_RE_IO, why, name);
    } else {
        seterr(&e, NF_RE_IO, (int)st, "HTTP %ld", st);
        fail(r, &e);
    }
out:
    free(nm);
}

static void *io_main(void *arg)
{
    nf_http *h = arg;
    nf_hreq **work = NULL;
    size_t work_cap = 0;
    for (;;) {
        size_t nw = 0;
        double now = nf_now(), next_due = 1.0;
        pthread_mutex_lock(&h->lock);
        if (h->stop && !h->all) {
            pthread_mutex_unlock(&h->lock);
            break;
        }
        size_t live = 0;
        for (nf_hreq *r = h->all; r; r = r->next)
            live++;
        if (live > work_cap) {
            nf_hreq **nv = realloc(work, live * 2 * sizeof *nv);
            if (nv) {
                work = nv;
                work_cap = live * 2;
            }
        }
        unsigned slots = h->o.jobs > h->running ? h->o.jobs - h->running : 0;
        for (nf_hreq **pp = &h->all; *pp;) {
            nf_hreq *r = *pp;
            if ((r->released || h->stop) && r->running) {
                if (nw < work_cap)
                    work[nw++] = r; /* to take out of curl */
            } else if (r->running && r->unpause) {
                if (nw < work_cap)
                    work[nw++] = r;
            } else if (r->done || r->released || h->stop) {
                /* finished: out of the list; its owner frees it */
                *pp = r->next;
                r->detached = true;
                if (h->stop && !r->done) {
                    r->failed = true;
                    seterr(&r->err, NF_RE_IO, 0, "the client was closed");
                    r->done = true;
                }
                pthread_cond_broadcast(&h->cond);
                continue;
            } else if (!r->running) {
                if (r->due <= now && slots && nw < work_cap) {
                    /* reserved here, under the lock: its owner now waits
                     * for it instead of freeing it while it starts */
                    slots--;
                    r->running = true;
                    h->running++;
                    work[nw++] = r;
                } else if (r->due > now && r->due - now < next_due) {
                    next_due = r->due - now;
                }
            }
            pp = &r->next;
        }
        pthread_mutex_unlock(&h->lock);
        for (size_t k = 0; k < nw; k++) {
            nf_hreq *r = work[k];
            bool cancel, unp;
            pthread_mutex_lock(&h->lock);
            cancel = (r->released || h->stop) && r->running;
            unp = r->running && r->unpause && r->easy;
            if (unp)
                r->paused = r->unpause = false;
            pthread_mutex_unlock(&h->lock);
            if (cancel) {
                detach(h, r);
            } else if (unp) {
                C.easy_pause(r->easy, CURLPAUSE_CONT);
            } else if (!r->easy) {
                start_attempt(h, r);
            }
        }
        int still = 0;
        C.multi_perform(h->multi, &still);
        CURLMsg *m;
        int left;
        while ((m = C.multi_info_read(h->multi, &left))) {
            if (m->msg != CURLMSG_DONE)
                continue;
            nf_hreq *r = NULL;
            CURL *e = m->easy_handle;
            CURLcode res = m->data.result;
            C.easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
            if (r)
                attempt_done(h, r, res);
        }
        pthread_mutex_lock(&h->lock);
        bool busy = false;
        now = nf_now();
        for (nf_hreq *r = h->all; r && !busy; r = r->next) {
            busy = (!r->running && !r->done && r->due <= now &&
                    h->running < h->o.jobs) || r->released || (r->running && r->unpause);
            /* a retry scheduled by attempt_done above, after next_due was taken */
            if (!r->running && !r->done && r->due > now && r->due - now < next_due)
                next_due = r->due - now;
        }
        pthread_mutex_unlock(&h->lock);
        if (!busy)
            C.multi_poll(h->multi, NULL, 0, (int)(next_due * 1000) + 1, NULL);
    }
    free(work);
    return NULL;
}
