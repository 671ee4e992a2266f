/* nf-httpstress — many threads reading one URL at once through one nf_http
 * client (nf_http.h): streamed requests given up half way, requests
 * cancelled at once, whole preads (large ones cut into parallel requests),
 * every byte compared with the local copy the server serves. For the
 * client's own threading (tests/http.bats; run it under the sanitizers).
 *
 *   nf-httpstress URL FILE [THREADS [ROUNDS]]
 *
 * nf-httpstress --free-late URL FILE [ROUNDS]: requests freed by their
 * owner while the I/O thread is still finishing their transfer (as
 * nf_rstream_free frees a request once it has every byte it wants): the
 * trace callback, run by the I/O thread after the transfer has ended and
 * before it is done with the request, holds it there until the owner's
 * nf_hreq_free has either returned (the request freed under the I/O
 * thread: exit 1) or is waiting (the owner's thread asleep, in the state
 * /proc/self/task/TID/stat gives). No clock: the same every run.
 *
 * NF_STRESS_WINDOW=N sets the streamed requests' buffer (default 65536).
 *
 * Exit status: 0 every byte right, 1 a mismatch or a failed read, 2 usage.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nf_http.h"

static nf_http *h;
static const char *url;
static unsigned char *ref;
static size_t reflen;
static int rounds = 60;
static size_t win_bytes = 65536; /* a streamed request's buffer: $NF_STRESS_WINDOW */

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg;
    nf_hfile *f = nf_hfile_new(h, url, false);
    unsigned char *buf = malloc(1u << 21), *win = malloc(win_bytes);
    for (int i = 0; f && buf && win && i < rounds; i++) {
        size_t off = (size_t)rand_r(&seed) % reflen, n = (size_t)rand_r(&seed) % (1u << 21);
        if (off + n > reflen)
            n = reflen - off;
        nf_rerr e;
        if (i % 3 == 0) {
            nf_hreq *r = nf_hreq_start(f, off, n, win, win_bytes);
            const void *p;
            ssize_t k = 0;
            size_t got = 0;
            while (got < n / 2 && (k = nf_hreq_read(r, &p, &e)) > 0) {
                if (memcmp(p, ref + off + got, (size_t)k) != 0) {
                    fprintf(stderr, "nf-httpstress: streamed bytes differ at %zu\n", off + got);
                    exit(1);
                }
                got += (size_t)k;
            }
            if (k < 0) {
                fprintf(stderr, "nf-httpstress: streamed read at %zu: %s\n", off + got, e.msg);
                exit(1);
            }
            nf_hreq_free(r);
        } else if (i % 3 == 1) {
            nf_hreq_free(nf_hreq_start(f, off, n, buf, n));
        } else {
            ssize_t r = nf_hfile_pread(f, buf, n, off, &e);
            if (r != (ssize_t)n || memcmp(buf, ref + off, n) != 0) {
                fprintf(stderr, "nf-httpstress: pread at %zu: %s\n", off, r < 0 ? e.msg : "bytes differ");
                exit(1);
            }
        }
    }
    free(buf);
    free(win);
    nf_hfile_free(f);
    return NULL;
}

/* ---- --free-late ---- */

static sem_t late_ended;          /* the I/O thread is in the request's last trace */
static sem_t late_back;           /* ... and has left it */
static atomic_int late_armed, late_freeing, late_freed;
static pid_t late_owner;          /* the owner's thread id */

/* Is thread tid asleep ('S' in its stat)? Reads with no malloc (the owner
 * may be in free); exits 2 when /proc cannot tell. */
static bool asleep(pid_t tid)
{
    char path[64], st[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, st, sizeof st - 1);
    if (fd >= 0)
        close(fd);
    if (n <= 0) { /* without it the check would pass whatever the code does */
        static const char msg[] = "nf-httpstress: --free-late needs /proc/self/task/TID/stat\n";
        if (write(2, msg, sizeof msg - 1) < 0) {
            /* nothing more to say */
        }
        _exit(2);
    }
    st[n] = 0;
    const char *rp = strrchr(st, ')');
    return !rp || rp[1] != ' ' || rp[2] == 'S';
}

static void late_trace(void *ctx, const char *line)
{
    (void)ctx;
    size_t n = strlen(line);
    if (n < 4 || strcmp(line + n - 4, " 206") != 0 || !atomic_exchange(&late_armed, 0))
        return;
    sem_post(&late_ended);
    /* asleep after late_freeing: in nf_hreq_free (waiting for us), or past
     * it (late_freed set before it sleeps on late_back) */
    while (!atomic_load(&late_freed) && !(atomic_load(&late_freeing) && asleep(late_owner)))
        sched_yield();
    if (atomic_load(&late_freed)) {
        fprintf(stderr, "nf-httpstress: a request was freed while the I/O thread was still "
                        "finishing its transfer (%s)\n", line);
        _exit(1);
    }
    sem_post(&late_back); /* its owner waits in nf_hreq_free for the I/O thread */
}

static int free_late(int rounds_)
{
    nf_http_opts o = {0};
    o.retries = -1;
    o.trace = late_trace;
    h = nf_http_new(&o);
    nf_hfile *f = h ? nf_hfile_new(h, url, false) : NULL;
    size_t n = reflen < (100u << 10) ? reflen : (100u << 10);
    unsigned char *buf = malloc(n);
    if (!f || !buf || sem_init(&late_ended, 0, 0) != 0 || sem_init(&late_back, 0, 0) != 0)
        return 2;
    late_owner = (pid_t)syscall(SYS_gettid);
    for (int i = 0; i < rounds_; i++) {
        size_t off = (size_t)i * 4099 % (reflen - n + 1);
        atomic_store(&late_freeing, 0);
        atomic_store(&late_freed, 0);
        atomic_store(&late_armed, 1);
        nf_hreq *r = nf_hreq_start(f, off, n, buf, n);
        if (!r)
            return 1;
        while (sem_wait(&late_ended) != 0)
            ;
        atomic_store(&late_freeing, 1);
        nf_hreq_free(r);
        atomic_store(&late_freed, 1);
        while (sem_wait(&late_back) != 0)
            ;
        if (memcmp(buf, ref + off, n) != 0) {
            fprintf(stderr, "nf-httpstress: bytes differ in [%zu, %zu)\n", off, off + n);
            return 1;
        }
    }
    nf_http_stats st;
    nf_http_get_stats(h, &st);
    printf("%llu requests freed late, every byte right\n", (unsigned long long)st.requests);
    nf_hfile_free(f);
    nf_http_free(h);
    free(buf);
    free(ref);
    return 0;
}

int main(int argc, char **argv)
{
    const char *wv = getenv("NF_STRESS_WINDOW");
    if (wv && atol(wv) > 0)
        win_bytes = (size_t)atol(wv);
    bool late = argc > 1 && strcmp(argv[1], "--free-late") == 0;
    if (late) {
        argc--;
        argv++;
    }
    if (argc < 3 || argc > (late ? 4 : 5)) {
        fprintf(stderr, "usage: nf-httpstress URL FILE [THREADS [ROUNDS]]\n"
                        "       nf-httpstress --free-late URL FILE [ROUNDS]\n");
        return 2;
    }
    url = argv[1];
    int threads = late ? 1 : argc > 3 ? atoi(argv[3]) : 8;
    if (argc > 3)
        rounds = atoi(argv[late ? 3 : 4]);
    FILE *fp = fopen(argv[2], "rb");
    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (reflen = (size_t)ftell(fp)) == 0)
        return 2;
    rewind(fp);
    ref = malloc(reflen);
    if (!ref || fread(ref, 1, reflen, fp) != reflen)
        return 2;
    fclose(fp);
    if (late)
        return rounds < 1 ? 2 : free_late(rounds);
    nf_http_opts o = {0};
    o.retries = -1;
    o.jobs = 4;
    h = nf_http_new(&o);
    if (!h || threads < 1 || threads > 64)
        return 2;
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(size_t)(i + 1));
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    nf_http_stats st;
    nf_http_get_stats(h, &st);
    printf("%llu requests, every byte right\n", (unsigned long long)st.requests);
    nf_http_free(h);
    free(ref);
    return 0;
}
