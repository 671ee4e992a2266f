/* nf_io.c — plain and zstd byte streams. */
#include "nf_io.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define IN_CHUNK (1u << 20)

struct nf_input {
    int fd;
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

/* Fill raw with at least one byte unless at EOF. */
static int refill(nf_input *in)
{
    if (in->raw_pos < in->raw_len)
        return 0;
    in->raw_pos = in->raw_len = 0;
    if (in->eof)
        return 0;
    ssize_t r = read_some(in->fd, in->raw, IN_CHUNK);
    if (r < 0)
        return -1;
    if (r == 0)
        in->eof = true;
    in->raw_len = (size_t)r;
    return 0;
}

nf_input *nf_input_open_fd(int fd, bool own_fd)
{
    nf_input *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->fd = fd;
    in->own_fd = own_fd;
    in->raw = malloc(IN_CHUNK);
    if (!in->raw) {
        free(in);
        return NULL;
    }
    /* Peek up to 4 bytes for the zstd magic; they stay in raw either way. */
    while (in->raw_len < 4 && !in->eof) {
        ssize_t r = read_some(fd, in->raw + in->raw_len, 4 - in->raw_len);
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
            ssize_t r = read_some(fd, in->raw + in->raw_len, sizeof in->fhead - in->raw_len);
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
                ssize_t r = read_some(in->fd, out + got, n - got);
                if (r < 0) {
                    in->fault = NF_IN_IO;
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
                return -1;
            }
            continue;
        }
        if (refill(in) < 0) {
            in->fault = NF_IN_IO;
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
    ZSTD_freeDCtx(in->dctx);
    free(in->raw);
    free(in);
}

struct nf_output {
    int fd;
    bool own_fd;
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
    if (!o->cctx) {
        /* the kernel copies: no pass through user space */
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
