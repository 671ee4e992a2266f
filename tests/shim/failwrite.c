/* failwrite — an LD_PRELOAD shim that simulates a full disk for the writer
 * tests (DESIGN section 12: "an LD_PRELOAD write shim ... for file writers").
 *
 *   LD_PRELOAD=build/tools/libfailwrite.so NF_FAIL_AFTER=N [NF_FAIL_ERRNO=E] cmd ...
 *
 * NF_FAIL_AFTER  decimal byte count (default 0): the process may write that
 *                many bytes in total, across all regular files; then writes
 *                to regular files fail.
 * NF_FAIL_ERRNO  ENOSPC (default), EIO, EFBIG, or a decimal errno value.
 * NF_FAIL_RENAME K: the K-th call (1-based) of rename, renameat, renameat2
 *                or link fails with NF_FAIL_ERRNO instead, changing
 *                nothing (a full directory, a failing disk in the middle
 *                of a publication); the others pass. With NF_FAIL_RENAME
 *                and no NF_FAIL_AFTER, writes are not limited.
 *
 * Semantics, as a real full disk shows them: a write that crosses the limit
 * writes only up to the limit and returns the short count; the next write
 * fails with -1 and errno. A write of 0 bytes passes through. fallocate,
 * fallocate64, posix_fallocate and posix_fallocate64 fail (posix_fallocate*
 * return the error number, as they do) once the limit is reached; they do
 * not count towards it.
 *
 * Only regular files are affected: each call fstat()s its destination fd (no
 * cache, so a reused fd number can never be misjudged); pipes, terminals,
 * sockets and devices (/dev/null, /dev/full) pass through untouched, so the
 * program can still print its error.
 *
 * Intercepted: write, pwrite, pwrite64, writev, pwritev, pwritev64, pwritev2,
 * pwritev64v2, copy_file_range, sendfile, sendfile64, splice (destination a
 * regular file), fallocate, fallocate64, posix_fallocate, posix_fallocate64,
 * and on the stdio side fwrite, fwrite_unlocked, fputs, fputs_unlocked
 * (counted when handed to stdio; on failure the stream's error indicator is
 * set). Not intercepted: other stdio output (fprintf, fputc, putc, ...),
 * writes through mmap, ftruncate (extending a file allocates nothing), and
 * direct syscall(2).
 *
 * The counter is one atomic; reservations are made with compare-and-swap
 * and unused reservations are given back, so threads never over-commit.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* bits/stdio.h may define these as macros under optimisation. */
#undef fwrite_unlocked
#undef fputs_unlocked

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

static _Atomic uint64_t fw_used;
static _Atomic uint64_t fw_limit;
static _Atomic int fw_errno = ENOSPC;
static _Atomic int fw_ready;
static _Atomic uint64_t fw_rename_at; /* NF_FAIL_RENAME (0: none) */
static _Atomic uint64_t fw_renames;

static void fw_init(void)
{
    if (atomic_load(&fw_ready))
        return;
    /* Idempotent: two threads racing here compute the same values. */
    const char *s = getenv("NF_FAIL_AFTER");
    const char *rn = getenv("NF_FAIL_RENAME");
    uint64_t lim = rn && *rn && !(s && *s) ? UINT64_MAX : 0;
    if (rn && *rn)
        atomic_store(&fw_rename_at, strtoull(rn, NULL, 10));
    if (s && *s) {
        uint64_t v = 0;
        int ok = 1;
        for (const char *p = s; *p; p++) {
            if (*p < '0' || *p > '9' || __builtin_mul_overflow(v, 10, &v) ||
                __builtin_add_overflow(v, (uint64_t)(*p - '0'), &v)) {
                ok = 0;
                break;
            }
        }
        lim = ok ? v : 0;
    }
    int e = ENOSPC;
    const char *en = getenv("NF_FAIL_ERRNO");
    if (en && *en) {
        if (strcmp(en, "ENOSPC") == 0)
            e = ENOSPC;
        else if (strcmp(en, "EIO") == 0)
            e = EIO;
        else if (strcmp(en, "EFBIG") == 0)
            e = EFBIG;
        else if (strcmp(en, "EDQUOT") == 0)
            e = EDQUOT;
        else {
            char *end;
            long v = strtol(en, &end, 10);
            if (*end == '\0' && v > 0 && v < 4096)
                e = (int)v;
        }
    }
    atomic_store(&fw_limit, lim);
    atomic_store(&fw_errno, e);
    atomic_store(&fw_ready, 1);
}

__attribute__((constructor)) static void fw_ctor(void) { fw_init(); }

static void *fw_resolve(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        atomic_store(slot, p);
    }
    return p;
}

/* real_<name>: the next definition of name, resolved once. */
#define REAL(name)                                                          \
    static void *_Atomic slot_##name;                                       \
    __typeof__(name) *real_##name =                                         \
        (__typeof__(name) *)fw_resolve(&slot_##name, #name);                \
    if (!real_##name) {                                                     \
        errno = ENOSYS;                                                     \
        return -1;                                                          \
    }

static int fw_regular(int fd)
{
    int saved = errno;
    struct stat st;
    int r = fstat(fd, &st);
    errno = saved;
    return r == 0 && S_ISREG(st.st_mode);
}

/* Reserve up to n bytes under the limit; 0 means the limit is reached. */
static uint64_t fw_reserve(uint64_t n)
{
    fw_init();
    uint64_t lim = atomic_load(&fw_limit);
    uint64_t old = atomic_load(&fw_used);
    for (;;) {
        if (old >= lim)
            return 0;
        uint64_t room = lim - old;
        uint64_t take = n < room ? n : room;
        if (atomic_compare_exchange_weak(&fw_used, &old, old + take))
            return take;
    }
}

static void fw_refund(uint64_t n)
{
    if (n)
        atomic_fetch_sub(&fw_used, n);
}

static int fw_limit_reached(void)
{
    fw_init();
    return atomic_load(&fw_used) >= atomic_load(&fw_limit);
}

static ssize_t fw_fail(void)
{
    errno = atomic_load(&fw_errno);
    return -1;
}

/* Give back what a call reserved but did not write. */
static ssize_t fw_settle(uint64_t took, ssize_t r)
{
    int saved = errno;
    fw_refund(r > 0 ? took - (uint64_t)r : took);
    errno = saved;
    return r;
}

/* ---- write, pwrite ------------------------------------------------------ */

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write);
    if (n == 0 || !fw_regular(fd))
        return real_write(fd, buf, n);
    uint64_t take = fw_reserve(n);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_write(fd, buf, (size_t)take));
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    if (n == 0 || !fw_regular(fd))
        return real_pwrite(fd, buf, n, off);
    uint64_t take = fw_reserve(n);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_pwrite(fd, buf, (size_t)take, off));
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
    REAL(pwrite64);
    if (n == 0 || !fw_regular(fd))
        return real_pwrite64(fd, buf, n, off);
    uint64_t take = fw_reserve(n);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_pwrite64(fd, buf, (size_t)take, off));
}

/* ---- vectored writes ----------------------------------------------------- */

/* Decide a vectored write: returns 0 to pass it through unchanged, 1 to fail
 * it, 2 to issue it with *out / *outcnt (possibly a truncated copy in tmp),
 * having reserved *took bytes. */
static int fw_vec(int fd, const struct iovec *iov, int cnt, struct iovec *tmp,
                  const struct iovec **out, int *outcnt, uint64_t *took)
{
    if (cnt <= 0 || cnt > IOV_MAX || !fw_regular(fd))
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < cnt; i++) {
        if (__builtin_add_overflow(total, (uint64_t)iov[i].iov_len, &total))
            return 0; /* the kernel rejects it (EINVAL) */
    }
    if (total == 0 || total > (uint64_t)SSIZE_MAX)
        return 0;
    uint64_t take = fw_reserve(total);
    if (!take)
        return 1;
    *took = take;
    if (take == total) {
        *out = iov;
        *outcnt = cnt;
        return 2;
    }
    uint64_t left = take;
    int k = 0;
    for (int i = 0; i < cnt && left > 0; i++) {
        tmp[k] = iov[i];
        if (tmp[k].iov_len > left)
            tmp[k].iov_len = (size_t)left;
        left -= tmp[k].iov_len;
        k++;
    }
    *out = tmp;
    *outcnt = k;
    return 2;
}

#define VEC_BODY(callreal_orig, callreal_new)                               \
    struct iovec tmp[IOV_MAX];                                              \
    const struct iovec *v;                                                  \
    int vc;                                                                 \
    uint64_t took = 0;                                                      \
    switch (fw_vec(fd, iov, cnt, tmp, &v, &vc, &took)) {                    \
    case 0:                                                                 \
        return callreal_orig;                                               \
    case 1:                                                                 \
        return fw_fail();                                                   \
    default:                                                                \
        return fw_settle(took, callreal_new);                               \
    }

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    REAL(writev);
    VEC_BODY(real_writev(fd, iov, cnt), real_writev(fd, v, vc))
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    REAL(pwritev);
    VEC_BODY(real_pwritev(fd, iov, cnt, off), real_pwritev(fd, v, vc, off))
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
    REAL(pwritev64);
    VEC_BODY(real_pwritev64(fd, iov, cnt, off), real_pwritev64(fd, v, vc, off))
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    REAL(pwritev2);
    VEC_BODY(real_pwritev2(fd, iov, cnt, off, flags), real_pwritev2(fd, v, vc, off, flags))
}

ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags)
{
    REAL(pwritev64v2);
    VEC_BODY(real_pwritev64v2(fd, iov, cnt, off, flags),
             real_pwritev64v2(fd, v, vc, off, flags))
}

/* ---- kernel-side copies --------------------------------------------------- */

ssize_t copy_file_range(int fd_in, off64_t *off_in, int fd_out, off64_t *off_out,
                        size_t len, unsigned int flags)
{
    REAL(copy_file_range);
    if (len == 0 || !fw_regular(fd_out))
        return real_copy_file_range(fd_in, off_in, fd_out, off_out, len, flags);
    uint64_t take = fw_reserve(len);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_copy_file_range(fd_in, off_in, fd_out, off_out,
                                                (size_t)take, flags));
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
    REAL(sendfile);
    if (count == 0 || !fw_regular(out_fd))
        return real_sendfile(out_fd, in_fd, offset, count);
    uint64_t take = fw_reserve(count);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_sendfile(out_fd, in_fd, offset, (size_t)take));
}

ssize_t sendfile64(int out_fd, int in_fd, off64_t *offset, size_t count)
{
    REAL(sendfile64);
    if (count == 0 || !fw_regular(out_fd))
        return real_sendfile64(out_fd, in_fd, offset, count);
    uint64_t take = fw_reserve(count);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_sendfile64(out_fd, in_fd, offset, (size_t)take));
}

ssize_t splice(int fd_in, off64_t *off_in, int fd_out, off64_t *off_out, size_t len,
               unsigned int flags)
{
    REAL(splice);
    if (len == 0 || !fw_regular(fd_out))
        return real_splice(fd_in, off_in, fd_out, off_out, len, flags);
    uint64_t take = fw_reserve(len);
    if (!take)
        return fw_fail();
    return fw_settle(take, real_splice(fd_in, off_in, fd_out, off_out, (size_t)take, flags));
}

/* ---- preallocation ------------------------------------------------------------ */

int fallocate(int fd, int mode, off_t off, off_t len)
{
    REAL(fallocate);
    if (fw_regular(fd) && fw_limit_reached())
        return (int)fw_fail();
    return real_fallocate(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
    REAL(fallocate64);
    if (fw_regular(fd) && fw_limit_reached())
        return (int)fw_fail();
    return real_fallocate64(fd, mode, off, len);
}

/* posix_fallocate returns the error number and leaves errno alone. */
int posix_fallocate(int fd, off_t off, off_t len)
{
    static void *_Atomic slot;
    __typeof__(posix_fallocate) *real = (__typeof__(posix_fallocate) *)fw_resolve(&slot, "posix_fallocate");
    if (!real)
        return ENOSYS;
    if (fw_regular(fd) && fw_limit_reached())
        return atomic_load(&fw_errno);
    return real(fd, off, len);
}

int posix_fallocate64(int fd, off64_t off, off64_t len)
{
    static void *_Atomic slot;
    __typeof__(posix_fallocate64) *real = (__typeof__(posix_fallocate64) *)fw_resolve(&slot, "posix_fallocate64");
    if (!real)
        return ENOSYS;
    if (fw_regular(fd) && fw_limit_reached())
        return atomic_load(&fw_errno);
    return real(fd, off, len);
}

/* ---- stdio ---------------------------------------------------------------------- */

/* glibc's stdio writes through internal calls that bypass the functions
 * above, so bytes handed to fwrite/fputs are counted here instead (never
 * twice). On failure the stream's error indicator is set, as a failed flush
 * would. Whole items only: fwrite returns an item count. */
static size_t fw_fwrite(size_t (*real)(const void *, size_t, size_t, FILE *),
                        const void *p, size_t size, size_t n, FILE *f)
{
    uint64_t total;
    if (size == 0 || n == 0 || __builtin_mul_overflow((uint64_t)size, (uint64_t)n, &total))
        return real(p, size, n, f);
    int fd = fileno(f);
    if (fd < 0 || !fw_regular(fd))
        return real(p, size, n, f);
    uint64_t take = fw_reserve(total);
    size_t items = (size_t)(take / size);
    if (items < n)
        fw_refund(take - (uint64_t)items * size);
    size_t r = items ? real(p, size, items, f) : 0;
    if (r < items)
        fw_refund((uint64_t)(items - r) * size);
    if (items < n) {
        flockfile(f); /* recursive: fine when the caller holds it */
        f->_flags |= _IO_ERR_SEEN;
        funlockfile(f);
        errno = atomic_load(&fw_errno);
    }
    return r;
}

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    static void *_Atomic slot;
    size_t (*real)(const void *, size_t, size_t, FILE *) =
        (size_t (*)(const void *, size_t, size_t, FILE *))fw_resolve(&slot, "fwrite");
    if (!real) {
        errno = ENOSYS;
        return 0;
    }
    return fw_fwrite(real, p, size, n, f);
}

size_t fwrite_unlocked(const void *p, size_t size, size_t n, FILE *f)
{
    static void *_Atomic slot;
    size_t (*real)(const void *, size_t, size_t, FILE *) =
        (size_t (*)(const void *, size_t, size_t, FILE *))fw_resolve(&slot, "fwrite_unlocked");
    if (!real) {
        errno = ENOSYS;
        return 0;
    }
    return fw_fwrite(real, p, size, n, f);
}

static int fw_fputs(size_t (*real)(const void *, size_t, size_t, FILE *), const char *s, FILE *f)
{
    size_t n = strlen(s);
    if (n == 0)
        return 0;
    return fw_fwrite(real, s, 1, n, f) == n ? 1 : EOF;
}

int fputs(const char *s, FILE *f)
{
    static void *_Atomic slot;
    size_t (*real)(const void *, size_t, size_t, FILE *) =
        (size_t (*)(const void *, size_t, size_t, FILE *))fw_resolve(&slot, "fwrite");
    if (!real) {
        errno = ENOSYS;
        return EOF;
    }
    return fw_fputs(real, s, f);
}

int fputs_unlocked(const char *s, FILE *f)
{
    static void *_Atomic slot;
    size_t (*real)(const void *, size_t, size_t, FILE *) =
        (size_t (*)(const void *, size_t, size_t, FILE *))fw_resolve(&slot, "fwrite_unlocked");
    if (!real) {
        errno = ENOSYS;
        return EOF;
    }
    return fw_fputs(real, s, f);
}

/* ---- publication steps (NF_FAIL_RENAME) ----------------------------------- */

/* Does this rename or link fail (the K-th one)? Sets errno when it does. */
static int fw_rename_fails(void)
{
    fw_init();
    uint64_t k = atomic_load(&fw_rename_at);
    if (!k || atomic_fetch_add(&fw_renames, 1) + 1 != k)
        return 0;
    errno = atomic_load(&fw_errno);
    return 1;
}

int rename(const char *a, const char *b)
{
    REAL(rename);
    return fw_rename_fails() ? -1 : real_rename(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
    REAL(renameat);
    return fw_rename_fails() ? -1 : real_renameat(da, a, db, b);
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
    REAL(renameat2);
    return fw_rename_fails() ? -1 : real_renameat2(da, a, db, b, flags);
}

int link(const char *a, const char *b)
{
    REAL(link);
    return fw_rename_fails() ? -1 : real_link(a, b);
}
