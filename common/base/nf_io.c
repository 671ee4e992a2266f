/* nf_io.c — plain and zstd byte streams. */
#include "nf_io.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define IN_CHUNK (1u << 20)

struct nf_input {
    int fd;
    nf_read_fn rd;          /* instead of fd, when not NULL */
    const char *(*rd_err)(void *ctx);
    void (*rd_close)(void *ctx);
    void *rd_ctx;
    bool own_fd, zstd, eof;
    ZSTD_DCtx *dctx;
    unsigned char *raw;     /* compressed (or peeked) bytes */
    size_t raw_len, raw_pos;
    uint64_t pos;
    const char *err;
    nf_in_fault fault;
    bool frame_done;        /* last decompress call ended a frame */
    char errbuf[192];       /* err, when it is made here */
    unsigned char fhead[6]; /* the current frame's first bytes (its window) */
    bool fhead_want;        /* a frame starts at raw_pos */
};

static ssize_t read_some(int fd, void *buf, size_t n)
{
    for (;;) {
        ssize_t r = read(fd, buf, n);
        if (r < 0 && errno == EINTR)
            continue;
        return r;
    }
}

/* read(2) of the input's descriptor, or its read function. */
static ssize_t in_read(nf_input *in, void *buf, size_t n)
{
    return in->rd ? in->rd(in->rd_ctx, buf, n) : read_some(in->fd, buf, n);
}

/* Fill raw with at least one byte unless at EOF. */
static int refill(nf_input *in)
{
    if (in->raw_pos < in->raw_len)
        return 0;
    in->raw_pos = in->raw_len = 0;
    if (in->eof)
        return 0;
    ssize_t r = in_read(in, in->raw, IN_CHUNK);
    if (r < 0)
        return -1;
    if (r == 0)
        in->eof = true;
    in->raw_len = (size_t)r;
    return 0;
}

static nf_input *input_open(int fd, bool own_fd, nf_read_fn rd, void *ctx)
{
    nf_input *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->fd = fd;
    in->own_fd = own_fd;
    in->rd = rd;
    in->rd_ctx = ctx;
    in->raw = malloc(IN_CHUNK);
    if (!in->raw) {
        free(in);
        return NULL;
    }
    /* Peek up to 4 bytes for the zstd magic; they stay in raw either way. */
    while (in->raw_len < 4 && !in->eof) {
        ssize_t r = in_read(in, in->raw + in->raw_len, 4 - in->raw_len);
        if (r < 0)
            break;
        if (r == 0)
            in->eof = true;
        in->raw_len += (size_t)r;
    }
    static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    /* or a skippable frame (0x184D2A50..5F LE) first, as pzstd and the
     * seekable format write: zstd's decoder steps over it */
    bool skippable = in->raw_len == 4 && (in->raw[0] & 0xf0) == 0x50 && in->raw[1] == 0x2a &&
                     in->raw[2] == 0x4d && in->raw[3] == 0x18;
    if (in->raw_len == 4 && (memcmp(in->raw, magic, 4) == 0 || skippable)) {
        in->zstd = true;
        in->fhead_want = true;
        /* the frame header's window descriptor too, for a message */
        while (in->raw_len < sizeof in->fhead && !in->eof) {
            ssize_t r = in_read(in, in->raw + in->raw_len, sizeof in->fhead - in->raw_len);
            if (r <= 0) {
                in->eof = r == 0;
                break;
            }
            in->raw_len += (size_t)r;
        }
        in->dctx = ZSTD_createDCtx();
        if (!in->dctx) {
            free(in->raw);
            free(in);
            return NULL;
        }
    }
    return in;
}

nf_input *nf_input_open_fd(int fd, bool own_fd) { return input_open(fd, own_fd, NULL, NULL); }

nf_input *nf_input_open_fn(nf_read_fn rd, const char *(*err)(void *ctx), void (*close_fn)(void *ctx),
                           void *ctx)
{
    nf_input *in = input_open(-1, false, rd, ctx);
    if (in) {
        in->rd_err = err;
        in->rd_close = close_fn;
    } else if (close_fn) {
        close_fn(ctx);
    }
    return in;
}

/* The window size a zstd frame header at p declares (RFC 8878 3.1.1.1:
 * the Window_Descriptor, absent in a single-segment frame), 0 when it
 * cannot be told. */
static unsigned long long frame_window(const unsigned char *p, size_t n)
{
    static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
    if (n < 6 || memcmp(p, magic, 4) != 0 || (p[4] & 0x20))
        return 0;
    unsigned e = p[5] >> 3, m = p[5] & 7;
    unsigned long long base = 1ull << (10 + e);
    return base + base / 8 * m;
}

ssize_t nf_input_read(nf_input *in, void *buf, size_t n)
{
    size_t got = 0;
    unsigned char *out = buf;
    while (got < n) {
        if (!in->zstd) {
            if (in->raw_pos < in->raw_len) {
                size_t k = in->raw_len - in->raw_pos;
                if (k > n - got)
                    k = n - got;
                memcpy(out + got, in->raw + in->raw_pos, k);
                in->raw_pos += k;
                got += k;
                continue;
            }
            if (in->eof)
                break;
            /* large reads go straight to the caller's buffer */
            if (n - got >= IN_CHUNK) {
                ssize_t r = in_read(in, out + got, n - got);
                if (r < 0) {
                    in->fault = NF_IN_IO;
                    in->err = in->rd_err ? in->rd_err(in->rd_ctx) : NULL;
                    return -1;
                }
                if (r == 0) {
                    in->eof = true;
                    break;
                }
                got += (size_t)r;
                continue;
            }
            if (refill(in) < 0) {
                in->fault = NF_IN_IO;
                in->err = in->rd_err ? in->rd_err(in->rd_ctx) : NULL;
                return -1;
            }
            continue;
        }
        if (refill(in) < 0) {
            in->fault = NF_IN_IO;
            in->err = in->rd_err ? in->rd_err(in->rd_ctx) : NULL;
            return -1;
        }
        if (in->raw_pos == in->raw_len && in->eof) {
            if (!in->frame_done) {
                in->err = "zstd stream ends inside a frame";
                in->fault = NF_IN_TRUNCATED;
                errno = EBADMSG;
                return -1;
            }
            break;
        }
        if (in->fhead_want && in->raw_len - in->raw_pos >= sizeof in->fhead) {
            memcpy(in->fhead, in->raw + in->raw_pos, sizeof in->fhead);
            in->fhead_want = false;
        }
        ZSTD_inBuffer ib = {in->raw, in->raw_len, in->raw_pos};
        ZSTD_outBuffer ob = {out + got, n - got, 0};
        size_t rc = ZSTD_decompressStream(in->dctx, &ob, &ib);
        if (ZSTD_isError(rc)) {
            /* after a whole frame, bytes that do not start another one are
             * trailing garbage, not a corrupt frame */
            bool trailing = in->frame_done && ZSTD_getErrorCode(rc) == ZSTD_error_prefix_unknown;
            in->err = trailing ? "bytes after the end of the zstd frame" : ZSTD_getErrorName(rc);
            in->fault = trailing ? NF_IN_TRAILING : NF_IN_CORRUPT;
            if (ZSTD_getErrorCode(rc) == ZSTD_error_frameParameter_windowTooLarge) {
                /* not corrupt: made with a long window (red-team E2) */
                unsigned long long win = frame_window(in->fhead, sizeof in->fhead);
                unsigned lg = 0;
                while (lg < 63 && (1ull << lg) < win)
                    lg++;
                if (lg > 27)
                    snprintf(in->errbuf, sizeof in->errbuf,
                             "the frame needs a %llu MiB window (zstd --long=%u); this reader "
                             "allows 128 MiB (decompress it first: zstd -d --long=%u)",
                             win >> 20, lg, lg);
                else
                    snprintf(in->errbuf, sizeof in->errbuf,
                             "the frame needs a window over 128 MiB (zstd --long); this reader "
                             "allows 128 MiB (decompress it first: zstd -d --long=31)");
                in->err = in->errbuf;
                in->fault = NF_IN_WINDOW;
            }
            errno = EBADMSG;
            return -1;
        }
        in->frame_done = rc == 0;
        if (in->frame_done)
            in->fhead_want = true;
        in->raw_pos = ib.pos;
        got += ob.pos;
    }
    in->pos += got;
    return (ssize_t)got;
}

ssize_t nf_input_skip(nf_input *in, uint64_t n)
{
    unsigned char tmp[65536];
    uint64_t done = 0;
    while (done < n) {
        size_t k = n - done > sizeof tmp ? sizeof tmp : (size_t)(n - done);
        ssize_t r = nf_input_read(in, tmp, k);
        if (r < 0)
            return -1;
        done += (uint64_t)r;
        if ((size_t)r < k)
            break;
    }
    return (ssize_t)done;
}

uint64_t nf_input_pos(const nf_input *in) { return in->pos; }
bool nf_input_is_zstd(const nf_input *in) { return in->zstd; }
const char *nf_input_error(const nf_input *in) { return in->err; }
nf_in_fault nf_input_fault(const nf_input *in) { return in->fault; }

void nf_input_close(nf_input *in)
{
    if (!in)
        return;
    if (in->own_fd)
        close(in->fd);
    if (in->rd_close)
        in->rd_close(in->rd_ctx);
    ZSTD_freeDCtx(in->dctx);
    free(in->raw);
    free(in);
}

struct nf_output {
    int fd;
    bool own_fd;
    bool regular;       /* fd is a regular file (copies may shift pages) */
    ZSTD_CCtx *cctx;
    unsigned char *buf;
    size_t cap;
    uint64_t pos;
};

int nf_write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int nf_pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

ssize_t nf_pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

nf_output *nf_output_open_fd(int fd, int zstd_level, bool own_fd)
{
    /* a stream redirected to a file past RLIMIT_FSIZE (ulimit -f): the write
     * fails with EFBIG, an I/O error the caller reports, instead of SIGXFSZ
     * killing the process */
    signal(SIGXFSZ, SIG_IGN);
    nf_output *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->fd = fd;
    o->own_fd = own_fd;
    struct stat st;
    o->regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (zstd_level) {
        o->cctx = ZSTD_createCCtx();
        o->cap = ZSTD_CStreamOutSize();
        o->buf = malloc(o->cap);
        if (!o->cctx || !o->buf) {
            ZSTD_freeCCtx(o->cctx);
            free(o->buf);
            free(o);
            return NULL;
        }
        ZSTD_CCtx_setParameter(o->cctx, ZSTD_c_compressionLevel, zstd_level);
        ZSTD_CCtx_setParameter(o->cctx, ZSTD_c_checksumFlag, 1);
    }
    return o;
}

static int zstd_pump(nf_output *o, const void *buf, size_t n, ZSTD_EndDirective mode)
{
    ZSTD_inBuffer ib = {buf, n, 0};
    for (;;) {
        ZSTD_outBuffer ob = {o->buf, o->cap, 0};
        size_t rem = ZSTD_compressStream2(o->cctx, &ob, &ib, mode);
        if (ZSTD_isError(rem))
            return -EIO;
        if (ob.pos) {
            int rc = nf_write_all(o->fd, o->buf, ob.pos);
            if (rc)
                return rc;
        }
        if (mode == ZSTD_e_end ? rem == 0 : ib.pos == ib.size)
            return 0;
    }
}

int nf_output_write(nf_output *o, const void *buf, size_t n)
{
    int rc = o->cctx ? zstd_pump(o, buf, n, ZSTD_e_continue) : nf_write_all(o->fd, buf, n);
    if (!rc)
        o->pos += n;
    return rc;
}

int nf_output_finish(nf_output *o)
{
    if (!o->cctx)
        return 0;
    return zstd_pump(o, NULL, 0, ZSTD_e_end);
}

uint64_t nf_output_pos(const nf_output *o) { return o->pos; }

void nf_output_close(nf_output *o)
{
    if (!o)
        return;
    if (o->own_fd)
        close(o->fd);
    ZSTD_freeCCtx(o->cctx);
    free(o->buf);
    free(o);
}

int nf_output_copy_from(nf_output *o, int in_fd, uint64_t off, uint64_t len)
{
    /* file to file: the kernel moves whole pages when source and destination
     * are at the same offset within a page (copy_file_range, from the
     * descriptor's position); when they are not it shifts every byte, which
     * is slower than a copy through a buffer that stays in cache (1 GiB on
     * ext4, not quiet: 0.48 s in the kernel at a shifted offset, 0.32 s
     * through 1 MiB, 1.2 s through 4 MiB; 0.33 s either way when aligned) */
    off_t at_out = o->regular && !o->cctx ? lseek(o->fd, 0, SEEK_CUR) : -1;
    bool shifted = at_out >= 0 && (((uint64_t)at_out - off) & 4095) != 0;
    if (!o->cctx && at_out >= 0 && !shifted) {
        loff_t ioff = (loff_t)off;
        while (len) {
            size_t k = len > (1u << 30) ? (1u << 30) : (size_t)len;
            ssize_t w = copy_file_range(in_fd, &ioff, o->fd, NULL, k, 0);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                          errno == EOPNOTSUPP || errno == EBADF))
                break; /* not for this pair: sendfile, else read and write */
            if (w < 0)
                return -errno;
            if (w == 0)
                return NF_COPY_SHORT;
            len -= (uint64_t)w;
            o->pos += (uint64_t)w;
        }
        off = (uint64_t)ioff;
    }
    if (shifted)
        goto through_memory;
    if (!o->cctx && len && !o->regular) {
        /* to a pipe or socket the kernel copies: no pass through user space */
        off_t at = (off_t)off;
        while (len) {
            size_t k = len > (1u << 30) ? (1u << 30) : (size_t)len;
            ssize_t w = sendfile(o->fd, in_fd, &at, k);
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0 && (errno == EINVAL || errno == ENOSYS))
                break; /* not for this pair of files: read and write */
            if (w < 0)
                return -errno;
            if (w == 0)
                return NF_COPY_SHORT;
            len -= (uint64_t)w;
            o->pos += (uint64_t)w;
        }
        off = (uint64_t)at;
    }
through_memory:
    if (!len)
        return 0;
    size_t cap = len < (1u << 20) ? (size_t)len : (1u << 20);
    unsigned char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    while (!rc && len) {
        size_t k = len > cap ? cap : (size_t)len;
        ssize_t r = nf_pread_full(in_fd, buf, k, off);
        if (r < 0)
            rc = NF_COPY_READ;
        else if ((size_t)r != k)
            rc = NF_COPY_SHORT;
        else
            rc = nf_output_write(o, buf, k);
        len -= k;
        off += k;
    }
    free(buf);
    return rc;
}

/* ---- descriptors opened lazily, closed least recently used first ---- */

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>

size_t nf_fd_cap(void)
{
    struct rlimit rl;
    uint64_t n = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        n = (uint64_t)rl.rlim_cur;
    n /= 8;
    return n < 2 ? 2 : n > 64 ? 64 : (size_t)n;
}

static pthread_mutex_t g_rec_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reclaimer {
    nf_fd_reclaim_fn fn;
    void *ctx;
} *g_rec;
static size_t g_n_rec;

int nf_fd_reclaimer_add(nf_fd_reclaim_fn fn, void *ctx)
{
    int slot = -1;
    pthread_mutex_lock(&g_rec_lock);
    for (size_t k = 0; k < g_n_rec && slot < 0; k++)
        if (!g_rec[k].fn)
            slot = (int)k;
    if (slot < 0 && g_n_rec < INT_MAX) {
        struct reclaimer *nv = realloc(g_rec, (g_n_rec + 1) * sizeof *nv);
        if (nv) {
            g_rec = nv;
            slot = (int)g_n_rec++;
        }
    }
    if (slot >= 0)
        g_rec[slot] = (struct reclaimer){fn, ctx};
    pthread_mutex_unlock(&g_rec_lock);
    return slot;
}

void nf_fd_reclaimer_remove(int slot)
{
    pthread_mutex_lock(&g_rec_lock);
    if (slot >= 0 && (size_t)slot < g_n_rec)
        g_rec[slot] = (struct reclaimer){NULL, NULL};
    pthread_mutex_unlock(&g_rec_lock);
}

void nf_fd_reclaim(void *self)
{
    pthread_mutex_lock(&g_rec_lock);
    for (size_t k = 0; k < g_n_rec; k++)
        if (g_rec[k].fn && g_rec[k].ctx != self)
            g_rec[k].fn(g_rec[k].ctx);
    pthread_mutex_unlock(&g_rec_lock);
}

struct nf_fdref {
    nf_fdpool *pool;
    char *path;
    int fd;           /* -1: closed */
    unsigned pins;
    uint64_t used;
    dev_t dev;        /* the file first opened: a reopened path must be it */
    ino_t ino;
    off_t size;
    struct timespec mtime;
};

struct nf_fdpool {
    pthread_mutex_t lock;
    pthread_cond_t unpinned;
    nf_fdref **refs;
    size_t n, cap_refs, n_open, cap;
    uint64_t tick;
    int slot;         /* reclaimer registration */
};

/* Close unpinned descriptors, least recently used first, until at most keep
 * are open. Lock held. Returns how many were closed. */
static size_t pool_evict(nf_fdpool *p, size_t keep)
{
    size_t closed = 0;
    while (p->n_open > keep) {
        nf_fdref *victim = NULL;
        for (size_t k = 0; k < p->n; k++) {
            nf_fdref *r = p->refs[k];
            if (r->fd >= 0 && !r->pins && (!victim || r->used < victim->used))
                victim = r;
        }
        if (!victim)
            break;
        close(victim->fd);
        victim->fd = -1;
        p->n_open--;
        closed++;
    }
    return closed;
}

static void pool_reclaim(void *ctx)
{
    nf_fdpool *p = ctx;
    if (pthread_mutex_trylock(&p->lock) == 0) {
        pool_evict(p, 0);
        pthread_mutex_unlock(&p->lock);
    }
}

nf_fdpool *nf_fdpool_new(size_t cap)
{
    nf_fdpool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->unpinned, NULL);
    p->cap = cap ? cap : nf_fd_cap();
    p->slot = nf_fd_reclaimer_add(pool_reclaim, p);
    return p;
}

void nf_fdpool_free(nf_fdpool *p)
{
    if (!p)
        return;
    nf_fd_reclaimer_remove(p->slot);
    for (size_t k = 0; k < p->n; k++) {
        if (p->refs[k]->fd >= 0)
            close(p->refs[k]->fd);
        free(p->refs[k]->path);
        free(p->refs[k]);
    }
    free(p->refs);
    pthread_cond_destroy(&p->unpinned);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

nf_fdref *nf_fdpool_add(nf_fdpool *p, const char *path, int fd)
{
    struct stat st;
    nf_fdref *r = calloc(1, sizeof *r);
    if (r)
        r->path = strdup(path);
    if (!r || !r->path || fstat(fd, &st) < 0) {
        if (r)
            free(r->path);
        free(r);
        close(fd);
        return NULL;
    }
    *r = (nf_fdref){p, r->path, fd, 0, 0, st.st_dev, st.st_ino, st.st_size, st.st_mtim};
    pthread_mutex_lock(&p->lock);
    if (p->n == p->cap_refs) {
        size_t nc = p->cap_refs ? p->cap_refs * 2 : 16;
        nf_fdref **nv = realloc(p->refs, nc * sizeof *nv);
        if (!nv) {
            pthread_mutex_unlock(&p->lock);
            close(fd);
            free(r->path);
            free(r);
            return NULL;
        }
        p->refs = nv;
        p->cap_refs = nc;
    }
    p->refs[p->n++] = r;
    r->used = ++p->tick;
    p->n_open++;
    pool_evict(p, p->cap);
    pthread_mutex_unlock(&p->lock);
    return r;
}

static int open_reg(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    struct stat st;
    int e = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0
                                         : S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    if (e) {
        close(fd);
        return e;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

int nf_fdpool_open(nf_fdpool *p, const char *path, nf_fdref **out)
{
    *out = NULL;
    int fd = open_reg(path);
    for (int round = 0; fd == -EMFILE || fd == -ENFILE; round++) {
        /* out of descriptors: this pool's idle ones, then every other
         * cache's, then wait for one of this pool's pins to go */
        pthread_mutex_lock(&p->lock);
        size_t closed = pool_evict(p, 0);
        if (!closed && round > 1) {
            bool others = false;
            for (size_t k = 0; k < p->n && !others; k++)
                others = p->refs[k]->fd >= 0 && p->refs[k]->pins;
            if (!others) {
                pthread_mutex_unlock(&p->lock);
                return -EMFILE;
            }
            pthread_cond_wait(&p->unpinned, &p->lock);
        }
        pthread_mutex_unlock(&p->lock);
        if (!closed && round <= 1)
            nf_fd_reclaim(p);
        fd = open_reg(path);
    }
    if (fd < 0)
        return fd;
    *out = nf_fdpool_add(p, path, fd);
    return *out ? 0 : -ENOMEM;
}

int nf_fdref_fd(const nf_fdref *r) { return r->fd; }

const char *nf_fdref_path(const nf_fdref *r)
{
    return r->path;
}

uint64_t nf_fdref_size(const nf_fdref *r)
{
    return (uint64_t)r->size;
}

/* Reopen r->path (lock held): EMFILE/ENFILE free this pool's idle
 * descriptors, then every other cache's, then wait for a pin of this pool
 * to be released. Returns the fd or -errno. */
static int ref_reopen(nf_fdpool *p, nf_fdref *r)
{
    for (int round = 0;; round++) {
        int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd >= 0) {
            struct stat st;
            if (fstat(fd, &st) < 0 || st.st_dev != r->dev || st.st_ino != r->ino ||
                st.st_size != r->size || st.st_mtim.tv_sec != r->mtime.tv_sec ||
                st.st_mtim.tv_nsec != r->mtime.tv_nsec) {
                close(fd);
                return -ESTALE; /* replaced or changed since it was first read */
            }
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            return fd;
        }
        int e = errno;
        if (e != EMFILE && e != ENFILE)
            return -e;
        if (pool_evict(p, 0))
            continue;
        if (round == 0 || round == 1) {
            nf_fd_reclaim(p); /* the others only trylock: no deadlock */
            if (round == 0)
                continue;
        }
        bool others = false;
        for (size_t k = 0; k < p->n && !others; k++)
            others = p->refs[k]->fd >= 0 && p->refs[k]->pins;
        if (!others)
            return -e;
        pthread_cond_wait(&p->unpinned, &p->lock);
        if (r->fd >= 0)
            return r->fd; /* another thread reopened it meanwhile */
    }
}

int nf_fdref_pin(nf_fdref *r)
{
    nf_fdpool *p = r->pool;
    pthread_mutex_lock(&p->lock);
    if (r->fd < 0) {
        pool_evict(p, p->cap - 1);
        int fd = ref_reopen(p, r);
        if (fd < 0) {
            pthread_mutex_unlock(&p->lock);
            return fd;
        }
        if (r->fd < 0) {
            r->fd = fd;
            p->n_open++;
        }
    }
    r->pins++;
    r->used = ++p->tick;
    int fd = r->fd;
    pthread_mutex_unlock(&p->lock);
    return fd;
}

void nf_fdref_unpin(nf_fdref *r)
{
    nf_fdpool *p = r->pool;
    pthread_mutex_lock(&p->lock);
    if (r->pins)
        r->pins--;
    pool_evict(p, p->cap);
    pthread_cond_broadcast(&p->unpinned);
    pthread_mutex_unlock(&p->lock);
}

ssize_t nf_fdref_pread(nf_fdref *r, void *buf, size_t n, uint64_t off)
{
    int fd = nf_fdref_pin(r);
    if (fd < 0)
        return fd;
    ssize_t got = nf_pread_full(fd, buf, n, off);
    nf_fdref_unpin(r);
    return got;
}

/* ---- whole files ---- */

int nf_read_all(int fd, uint64_t cap, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    struct stat st;
    bool big = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap;
    /* a regular file over the cap: only its first bytes, for the caller's
     * message (what the file is); else up to cap + 1 bytes (one more says
     * "over") */
    uint64_t stop = (big ? (cap < 65536 ? cap : 65536) : cap) + 1;
    if (stop > SIZE_MAX - 2)
        stop = SIZE_MAX - 2;
    size_t n = 0, room = 0;
    char *t = NULL;
    while (n < stop) {
        if (n + 1 >= room) { /* one byte for the NUL */
            size_t nr = room ? room * 2 : 65536;
            if (nr > stop + 1)
                nr = (size_t)stop + 1;
            char *nt = realloc(t, nr);
            if (!nt) {
                free(t);
                return -ENOMEM;
            }
            t = nt;
            room = nr;
        }
        size_t k = room - 1 - n;
        if (k > stop - n)
            k = (size_t)(stop - n);
        ssize_t r = read_some(fd, t + n, k);
        if (r < 0) {
            int e = errno;
            free(t);
            return -e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (!t && !(t = malloc(1)))
        return -ENOMEM;
    t[n] = 0;
    *out = t;
    *len = n;
    return big || n > cap ? -EFBIG : 0;
}

int nf_read_path(const char *path, bool regular, uint64_t cap, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int fd = strcmp(path, "-") == 0 ? 0
                                     : open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
                                                      (regular ? O_NONBLOCK : 0));
    if (fd < 0)
        return -errno;
    struct stat st;
    if (regular && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        if (fd > 0)
            close(fd);
        return -EINVAL;
    }
    int rc = nf_read_all(fd, cap, out, len);
    if (fd > 0)
        close(fd);
    return rc;
}
