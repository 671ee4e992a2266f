/* sigat — an LD_PRELOAD shim that sends the process a signal at an exact
 * point of its I/O, so that the fault tests hold a writer or reader at a
 * known place instead of racing a timer (issue 12: "never a race against
 * the clock").
 *
 *   LD_PRELOAD=build/tools/libsigat.so NF_SIG_AT=WHAT:N NF_SIG=SIG cmd ...
 *
 * NF_SIG_AT  write:N   once N bytes in all were written to regular files
 *                      (write, pwrite, pwrite64, copy_file_range, sendfile,
 *                      sendfile64): the call
 *                      that crosses N writes only up to N, the signal is
 *                      sent, and the short count is returned (the caller
 *                      writes the rest, if it still runs);
 *            read:N    the same for bytes read from regular files (read,
 *                      pread, pread64, copy_file_range's source);
 *            rename:K  just before the K-th rename, renameat, renameat2 or
 *                      link (1-based): the publication steps of a writer;
 *            unlink:K  just before the K-th unlink or unlinkat (1-based):
 *                      the clean-up steps after a publication.
 * NF_SIG     INT, TERM, HUP, PIPE, KILL, STOP, QUIT, USR1, USR2, ALRM,
 *            XCPU, VTALRM, PROF, ABRT, or a decimal number (default TERM).
 *
 * The signal goes to the whole process with kill(getpid(), sig), once. A
 * signal the program blocks stays pending until it unblocks it, as a
 * Ctrl-C would; STOP stops it until a test sends SIGCONT. Only regular
 * files count (each call fstat()s its descriptor).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum { AT_NONE, AT_WRITE, AT_READ, AT_RENAME, AT_UNLINK };

static int sa_what = AT_NONE;
static uint64_t sa_n;
static int sa_sig = SIGTERM;
static _Atomic uint64_t sa_count;
static _Atomic int sa_fired;

__attribute__((constructor)) static void sa_init(void)
{
    const char *at = getenv("NF_SIG_AT");
    if (!at)
        return;
    const char *colon = strchr(at, ':');
    if (!colon)
        return;
    size_t wl = (size_t)(colon - at);
    if (wl == 5 && !strncmp(at, "write", 5))
        sa_what = AT_WRITE;
    else if (wl == 4 && !strncmp(at, "read", 4))
        sa_what = AT_READ;
    else if (wl == 6 && !strncmp(at, "rename", 6))
        sa_what = AT_RENAME;
    else if (wl == 6 && !strncmp(at, "unlink", 6))
        sa_what = AT_UNLINK;
    sa_n = strtoull(colon + 1, NULL, 10);
    const char *s = getenv("NF_SIG");
    if (s && *s) {
        static const struct {
            const char *name;
            int sig;
        } names[] = {{"INT", SIGINT},     {"TERM", SIGTERM},     {"HUP", SIGHUP},
                     {"PIPE", SIGPIPE},   {"KILL", SIGKILL},     {"STOP", SIGSTOP},
                     {"QUIT", SIGQUIT},   {"USR1", SIGUSR1},     {"USR2", SIGUSR2},
                     {"ALRM", SIGALRM},   {"XCPU", SIGXCPU},     {"VTALRM", SIGVTALRM},
                     {"PROF", SIGPROF},   {"ABRT", SIGABRT}};
        sa_sig = atoi(s) > 0 ? atoi(s) : SIGTERM;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!strcmp(s, names[i].name))
                sa_sig = names[i].sig;
    }
}

static void *sa_resolve(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (!p) {
        p = dlsym(RTLD_NEXT, name);
        atomic_store(slot, p);
    }
    return p;
}

#define REAL(name)                                                          \
    static void *_Atomic slot_##name;                                       \
    __typeof__(name) *real_##name =                                         \
        (__typeof__(name) *)sa_resolve(&slot_##name, #name);                \
    if (!real_##name) {                                                     \
        errno = ENOSYS;                                                     \
        return -1;                                                          \
    }

static int sa_regular(int fd)
{
    int saved = errno;
    struct stat st;
    int r = fstat(fd, &st);
    errno = saved;
    return r == 0 && S_ISREG(st.st_mode);
}

static void sa_fire(void)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&sa_fired, &expect, 1)) {
        int saved = errno;
        kill(getpid(), sa_sig);
        errno = saved;
    }
}

/* How many of n bytes the call may move before the signal: all of them, or
 * the bytes up to the threshold (the caller then fires). */
static size_t sa_clip(int what, int fd, size_t n, int *fire)
{
    *fire = 0;
    if (sa_what != what || atomic_load(&sa_fired) || n == 0 || !sa_regular(fd))
        return n;
    uint64_t done = atomic_load(&sa_count);
    if (done + n < sa_n)
        return n;
    *fire = 1;
    return sa_n > done ? (size_t)(sa_n - done) : 0;
}

static ssize_t sa_after(int what, int fd, ssize_t r, int fire)
{
    if (r > 0 && sa_what == what && sa_regular(fd))
        atomic_fetch_add(&sa_count, (uint64_t)r);
    if (fire)
        sa_fire();
    return r;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    REAL(write);
    int fire;
    size_t k = sa_clip(AT_WRITE, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_WRITE, fd, real_write(fd, buf, k), fire);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite);
    int fire;
    size_t k = sa_clip(AT_WRITE, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_WRITE, fd, real_pwrite(fd, buf, k, off), fire);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    REAL(pwrite64);
    int fire;
    size_t k = sa_clip(AT_WRITE, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_WRITE, fd, real_pwrite64(fd, buf, k, off), fire);
}

ssize_t read(int fd, void *buf, size_t n)
{
    REAL(read);
    int fire;
    size_t k = sa_clip(AT_READ, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_READ, fd, real_read(fd, buf, k), fire);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    REAL(pread);
    int fire;
    size_t k = sa_clip(AT_READ, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_READ, fd, real_pread(fd, buf, k, off), fire);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    REAL(pread64);
    int fire;
    size_t k = sa_clip(AT_READ, fd, n, &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(AT_READ, fd, real_pread64(fd, buf, k, off), fire);
}

ssize_t copy_file_range(int in, off_t *ioff, int out, off_t *ooff, size_t n, unsigned flags)
{
    REAL(copy_file_range);
    int fire;
    size_t k = sa_clip(sa_what == AT_READ ? AT_READ : AT_WRITE, sa_what == AT_READ ? in : out, n,
                       &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(sa_what == AT_READ ? AT_READ : AT_WRITE, sa_what == AT_READ ? in : out,
                    real_copy_file_range(in, ioff, out, ooff, k, flags), fire);
}

ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
    REAL(sendfile);
    int fire;
    size_t k = sa_clip(sa_what == AT_READ ? AT_READ : AT_WRITE, sa_what == AT_READ ? in : out, n,
                       &fire);
    if (fire && k == 0) {
        sa_fire();
        k = n;
        fire = 0;
    }
    return sa_after(sa_what == AT_READ ? AT_READ : AT_WRITE, sa_what == AT_READ ? in : out,
                    real_sendfile(out, in, off, k), fire);
}

ssize_t sendfile64(int out, int in, off_t *off, size_t n)
{
    return sendfile(out, in, off, n);
}

/* ---- publication steps --------------------------------------------------- */

static void sa_step(void)
{
    if (sa_what == AT_RENAME && atomic_fetch_add(&sa_count, 1) + 1 == sa_n)
        sa_fire();
}

int rename(const char *a, const char *b)
{
    REAL(rename);
    sa_step();
    return real_rename(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
    REAL(renameat);
    sa_step();
    return real_renameat(da, a, db, b);
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
    REAL(renameat2);
    sa_step();
    return real_renameat2(da, a, db, b, flags);
}

int link(const char *a, const char *b)
{
    REAL(link);
    sa_step();
    return real_link(a, b);
}

static void sa_unlink_step(void)
{
    if (sa_what == AT_UNLINK && atomic_fetch_add(&sa_count, 1) + 1 == sa_n)
        sa_fire();
}

int unlink(const char *a)
{
    REAL(unlink);
    sa_unlink_step();
    return real_unlink(a);
}

int unlinkat(int dfd, const char *a, int flags)
{
    REAL(unlinkat);
    sa_unlink_step();
    return real_unlinkat(dfd, a, flags);
}
