/* nf_rfile.c — one byte source, two implementations: local files through a
 * descriptor pool, URLs through nf_http; and ordered reads of many ranges. */
#include "nf_rfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_http.h"

struct nf_rfile {
    nf_fdref *ref;  /* local */
    nf_hfile *hf;   /* remote */
};

static void seterr(nf_rerr *e, nf_rerr_kind k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void seterr(nf_rerr *e, nf_rerr_kind k, const char *fmt, ...)
{
    va_list ap;
    e->kind = k;
    e->status = 0;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* A local failure (-errno) as an nf_rerr: the reason alone, after what
 * when it is given ("read error at N: ..."). */
static void local_err(nf_rerr *e, int neg, const char *what)
{
    const char *why = strerror(-neg);
    nf_rerr_kind k = NF_RE_IO;
    switch (-neg) {
    case ENOENT: k = NF_RE_MISSING; break;
    case EISDIR: k = NF_RE_NOTREG, why = "is a directory"; break;
    case EINVAL: k = NF_RE_NOTREG, why = "not a regular file (a FIFO, socket or device)"; break;
    case EMFILE:
    case ENFILE: k = NF_RE_EMFILE, why = "too many open files"; break;
    case ENOMEM: k = NF_RE_NOMEM, why = "out of memory"; break;
    case ESTALE: k = NF_RE_CHANGED, why = "the file was replaced or changed while it was read"; break;
    default: break;
    }
    if (what && k == NF_RE_IO)
        seterr(e, k, "%s: %s", what, why);
    else
        seterr(e, k, "%s", why);
}

nf_rfile *nf_rfile_open(const char *path, nf_fdpool *pool, nf_http *http, bool send_credentials,
                        nf_rerr *e)
{
    nf_rfile *f = calloc(1, sizeof *f);
    if (!f) {
        seterr(e, NF_RE_NOMEM, "out of memory");
        return NULL;
    }
    if (nf_is_url(path)) {
        if (!http) {
            seterr(e, NF_RE_IO, "no HTTP client for a URL");
            free(f);
            return NULL;
        }
        f->hf = nf_hfile_new(http, path, send_credentials);
        if (!f->hf) {
            seterr(e, NF_RE_NOMEM, "out of memory");
            free(f);
            return NULL;
        }
        return f;
    }
    int rc = nf_fdpool_open(pool, path, &f->ref);
    if (rc < 0) {
        local_err(e, rc, NULL);
        free(f);
        return NULL;
    }
    return f;
}

void nf_rfile_close(nf_rfile *f)
{
    if (!f)
        return;
    /* a local ref stays in its pool (freed with it), closed on eviction */
    nf_hfile_free(f->hf);
    free(f);
}

bool nf_rfile_is_remote(const nf_rfile *f) { return f->hf != NULL; }

const char *nf_rfile_name(const nf_rfile *f)
{
    return f->hf ? nf_hfile_name(f->hf) : nf_fdref_path(f->ref);
}

bool nf_rfile_size(const nf_rfile *f, uint64_t *size)
{
    if (f->hf)
        return nf_hfile_size(f->hf, size);
    *size = nf_fdref_size(f->ref);
    return true;
}

bool nf_rfile_validator(const nf_rfile *f, char *out, size_t cap)
{
    return f->hf && nf_hfile_validator(f->hf, out, cap);
}

ssize_t nf_rfile_pread(nf_rfile *f, void *buf, size_t n, uint64_t off, nf_rerr *e)
{
    if (f->hf)
        return nf_hfile_pread(f->hf, buf, n, off, e);
    ssize_t r = nf_fdref_pread(f->ref, buf, n, off);
    if (r < 0) {
        char what[64];
        snprintf(what, sizeof what, "read error at %llu", (unsigned long long)off);
        local_err(e, (int)r, what);
        return -1;
    }
    return r;
}

/* A whole-file request as an nf_input's read function. */
typedef struct {
    nf_hreq *rq;
    unsigned char *win;
    const unsigned char *p;
    size_t left;
    bool done;
    nf_rerr e;
} whole_in;

static ssize_t whole_read(void *vc, void *buf, size_t n)
{
    whole_in *w = vc;
    while (!w->left && !w->done) {
        const void *p;
        ssize_t r = nf_hreq_read(w->rq, &p, &w->e);
        if (r < 0) {
            errno = EIO;
            return -1;
        }
        if (r == 0)
            w->done = true;
        w->p = p;
        w->left = (size_t)r;
    }
    size_t k = w->left < n ? w->left : n;
    memcpy(buf, w->p, k);
    w->p += k;
    w->left -= k;
    return (ssize_t)k;
}

static const char *whole_err(void *vc) { return ((whole_in *)vc)->e.msg; }

static void whole_close(void *vc)
{
    whole_in *w = vc;
    nf_hreq_free(w->rq);
    free(w->win);
    free(w);
}

nf_input *nf_rfile_open_whole(nf_rfile *f)
{
    if (!f->hf)
        return NULL;
    whole_in *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    const size_t cap = 1u << 20;
    w->win = malloc(cap);
    w->rq = w->win ? nf_hreq_start_whole(f->hf, w->win, cap) : NULL;
    if (!w->rq) {
        free(w->win);
        free(w);
        return NULL;
    }
    return nf_input_open_fn(whole_read, whole_err, whole_close, w);
}

int nf_rfile_copy_to(nf_rfile *f, int fd, nf_output *out, uint64_t off, uint64_t len)
{
    if (!f->hf && fd >= 0)
        return nf_output_copy_from(out, fd, off, len);
    size_t cap = len < (4u << 20) ? (size_t)len : (4u << 20);
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    while (!rc && len) {
        size_t k = len > cap ? cap : (size_t)len;
        nf_rerr e;
        ssize_t r = nf_rfile_pread(f, buf, k, off, &e);
        if (r < 0)
            rc = NF_COPY_READ;
        else if ((size_t)r != k)
            rc = NF_COPY_SHORT;
        else
            rc = nf_output_write(out, buf, k);
        off += k;
        len -= k;
    }
    free(buf);
    return rc;
}

int nf_rfile_pin(nf_rfile *f, nf_rerr *e)
{
    if (f->hf) {
        seterr(e, NF_RE_IO, "not a local file");
        return -1;
    }
    int fd = nf_fdref_pin(f->ref);
    if (fd < 0) {
        local_err(e, fd, NULL);
        return -1;
    }
    return fd;
}

void nf_rfile_unpin(nf_rfile *f)
{
    if (!f->hf)
        nf_fdref_unpin(f->ref);
}

/* ---- ordered reads ---- */

#define LOCAL_CHUNK (4u << 20)

typedef struct {
    size_t piece;
    uint64_t off, len;  /* file offset and length of this unit */
    uint64_t given;     /* bytes delivered so far */
    nf_hreq *rq;        /* remote: its request */
    unsigned char *buf; /* remote: its buffer (one of s->bufs) */
} unit;

struct nf_rstream {
    nf_rpiece *p;
    size_t *idx;        /* each kept piece's index in the caller's list */
    size_t n;
    nf_rstream_opts o;
    size_t pi;          /* planning: next piece, and how much of it is planned */
    uint64_t po;
    unit *q;            /* in flight, a ring of o.jobs units */
    size_t qh, qn;
    unsigned char **bufs; /* free buffers of o.window bytes */
    size_t n_bufs;
    unsigned char *lbuf;  /* local reads */
};

nf_rstream *nf_rstream_new(const nf_rpiece *p, size_t n, const nf_rstream_opts *o)
{
    nf_rstream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    if (o)
        s->o = *o;
    if (!s->o.jobs)
        s->o.jobs = 8;
    if (!s->o.window)
        s->o.window = 4u << 20;
    if (s->o.chunk && s->o.window > s->o.chunk)
        s->o.window = s->o.chunk;
    s->p = malloc((n ? n : 1) * sizeof *s->p);
    s->idx = malloc((n ? n : 1) * sizeof *s->idx);
    s->q = calloc(s->o.jobs, sizeof *s->q);
    s->bufs = calloc(s->o.jobs, sizeof *s->bufs);
    if (!s->p || !s->idx || !s->q || !s->bufs) {
        nf_rstream_free(s);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (p[i].len) {
            s->idx[s->n] = i;
            s->p[s->n++] = p[i];
        }
    return s;
}

void nf_rstream_free(nf_rstream *s)
{
    if (!s)
        return;
    for (size_t k = 0; s->q && k < s->qn; k++) {
        unit *u = &s->q[(s->qh + k) % s->o.jobs];
        nf_hreq_free(u->rq);
        free(u->buf);
    }
    for (size_t k = 0; k < s->n_bufs; k++)
        free(s->bufs[k]);
    free(s->bufs);
    free(s->q);
    free(s->p);
    free(s->idx);
    free(s->lbuf);
    free(s);
}

/* Plan (and start) units until o.jobs are in flight. Returns -1 when out
 * of memory. */
static int refill(nf_rstream *s)
{
    while (s->qn < s->o.jobs && s->pi < s->n) {
        const nf_rpiece *pc = &s->p[s->pi];
        uint64_t left = pc->len - s->po;
        bool remote = nf_rfile_is_remote(pc->f);
        uint64_t len = left;
        if (remote && s->o.chunk && len > s->o.chunk)
            len = s->o.chunk;
        unit u = {s->pi, pc->off + s->po, len, 0, NULL, NULL};
        if (remote) {
            size_t cap = len < s->o.window ? (size_t)len : s->o.window;
            u.buf = s->n_bufs ? s->bufs[--s->n_bufs] : malloc(s->o.window);
            if (!u.buf)
                return -1;
            u.rq = nf_hreq_start(pc->f->hf, u.off, u.len, u.buf, cap);
            if (!u.rq) {
                free(u.buf);
                return -1;
            }
        } else if (s->qn) {
            break; /* a local unit is read when it is first in line */
        }
        s->q[(s->qh + s->qn) % s->o.jobs] = u;
        s->qn++;
        s->po += len;
        if (s->po == pc->len) {
            s->pi++;
            s->po = 0;
        }
        if (!remote)
            break;
    }
    return 0;
}

static void pop(nf_rstream *s)
{
    unit *u = &s->q[s->qh];
    nf_hreq_free(u->rq);
    if (u->buf)
        s->bufs[s->n_bufs++] = u->buf;
    s->qh = (s->qh + 1) % s->o.jobs;
    s->qn--;
}

int nf_rstream_next(nf_rstream *s, size_t *piece, uint64_t *off, const void **buf, size_t *len,
                    nf_rerr *e)
{
    for (;;) {
        if (refill(s) < 0) {
            seterr(e, NF_RE_NOMEM, "out of memory");
            return -1;
        }
        if (!s->qn)
            return 0;
        unit *u = &s->q[s->qh];
        *piece = s->idx[u->piece];
        nf_rfile *f = s->p[u->piece].f;
        if (!u->rq && u->given == u->len) {
            pop(s);
            continue;
        }
        if (!u->rq) {
            if (!s->lbuf && !(s->lbuf = malloc(LOCAL_CHUNK))) {
                seterr(e, NF_RE_NOMEM, "out of memory");
                return -1;
            }
            uint64_t left = u->len - u->given;
            size_t k = left > LOCAL_CHUNK ? LOCAL_CHUNK : (size_t)left;
            ssize_t r = nf_rfile_pread(f, s->lbuf, k, u->off + u->given, e);
            if (r < 0)
                return -1;
            if ((size_t)r < k) {
                seterr(e, NF_RE_SHORT, "file ends at %llu, inside the declared payload (it changed or is truncated)",
                       (unsigned long long)(u->off + u->given + (uint64_t)r));
                return -1;
            }
            *off = u->off + u->given;
            *buf = s->lbuf;
            *len = k;
            u->given += k;
            return 1;
        }
        const void *p;
        ssize_t r = nf_hreq_read(u->rq, &p, e);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (u->given < u->len) {
                seterr(e, NF_RE_SHORT, "file ends at %llu, inside the declared payload (it changed or is truncated)",
                       (unsigned long long)(u->off + u->given));
                return -1;
            }
            pop(s);
            continue;
        }
        *off = u->off + u->given;
        *buf = p;
        *len = (size_t)r;
        u->given += (uint64_t)r;
        return 1;
    }
}
