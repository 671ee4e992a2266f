/* nf_pool.c — the persistent worker pool of the codec's kernels
 * (nf_pool.h).
 *
 * Handshake. The caller holds `busy` (a trylock) for the whole job. Each
 * worker has a mailbox on its own cache line: the caller writes the job
 * into the mailboxes of participants 1..n-1, then bumps each one's
 * generation (and wakes the worker only when it said it sleeps: `sleeping`,
 * seq_cst against `gen`, so that a worker deciding to sleep either sees the
 * new generation in the futex's own check or is seen by the caller). A
 * worker runs its job, then decrements `left`; the caller returns when
 * `left` is 0, so nothing of the job is touched after nf_pool_run returns,
 * and a worker that takes no part in a job never reads it.
 *
 * Claims. Before bumping a worker's generation g the caller posts
 * claim = g << 2 | POSTED; the worker, woken, takes the job only by turning
 * that into RUNNING (a CAS). In an optional job (nf_pool_run_opt) the
 * caller, its own part done, turns every claim still POSTED into
 * CANCELLED and counts that worker as done: a worker the scheduler has
 * not run yet then costs nothing, and when it runs it finds its claim
 * gone (or a newer job's) and reads nothing of the job.
 */
#include "nf_pool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#define NF_FUTEX 1
#else
#define NF_FUTEX 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

enum { POSTED = 1, RUNNING = 2, CANCELLED = 3 };

typedef struct {
    _Alignas(64) _Atomic uint32_t gen;
    _Atomic int sleeping;
    _Atomic uint64_t claim; /* gen << 2 | POSTED, RUNNING or CANCELLED */
    uint32_t start; /* gen when the worker was created */
    nf_pool_fn fn;
    void *arg;
    unsigned n;
#if !NF_FUTEX
    pthread_mutex_t lk;
    pthread_cond_t cv;
#endif
} mailbox;

static struct {
    pthread_mutex_t busy; /* held by the caller of the job in flight */
    pthread_mutex_t grow; /* starting workers */
    unsigned started;     /* workers running (participants 1..started) */
    _Alignas(64) _Atomic unsigned left; /* workers of this job still running */
    mailbox mb[NF_POOL_MAX];
} P = {
    .busy = PTHREAD_MUTEX_INITIALIZER,
    .grow = PTHREAD_MUTEX_INITIALIZER,
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void wait_gen(mailbox *m, uint32_t seen)
{
#if NF_FUTEX
    syscall(SYS_futex, (uint32_t *)&m->gen, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
#else
    pthread_mutex_lock(&m->lk);
    while (atomic_load(&m->gen) == seen)
        pthread_cond_wait(&m->cv, &m->lk);
    pthread_mutex_unlock(&m->lk);
#endif
}

static void wake(mailbox *m)
{
#if NF_FUTEX
    syscall(SYS_futex, (uint32_t *)&m->gen, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
#else
    pthread_mutex_lock(&m->lk);
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->lk);
#endif
}

static void *worker(void *a)
{
    mailbox *m = a;
    uint32_t seen = m->start;
    for (;;) {
        /* spin a while, then sleep until the generation moves */
        double t0 = 0;
        for (unsigned i = 0; atomic_load_explicit(&m->gen, memory_order_acquire) == seen; i++) {
            CPU_RELAX();
            if ((i & 63) != 63)
                continue;
            double t = now_us();
            if (t0 == 0) {
                t0 = t;
            } else if (t - t0 > NF_POOL_SPIN_US) {
                atomic_store(&m->sleeping, 1);
                while (atomic_load(&m->gen) == seen)
                    wait_gen(m, seen);
                atomic_store(&m->sleeping, 0);
                break;
            }
        }
        seen = atomic_load_explicit(&m->gen, memory_order_acquire);
        uint64_t want = (uint64_t)seen << 2 | POSTED;
        if (!atomic_compare_exchange_strong(&m->claim, &want, (uint64_t)seen << 2 | RUNNING))
            continue; /* cancelled (or a newer job is posted: the loop sees it) */
        m->fn(m->arg, (unsigned)(m - P.mb), m->n);
        atomic_fetch_sub_explicit(&P.left, 1, memory_order_release);
    }
    return NULL;
}

static void atfork_child(void)
{
    /* the workers did not survive the fork: start again with none */
    pthread_mutex_init(&P.busy, NULL);
    pthread_mutex_init(&P.grow, NULL);
    P.started = 0;
    atomic_store(&P.left, 0);
}
static void atfork_prepare(void) { pthread_mutex_lock(&P.busy); }
static void atfork_parent(void) { pthread_mutex_unlock(&P.busy); }

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init_once(void) { pthread_atfork(atfork_prepare, atfork_parent, atfork_child); }

/* Workers 1..want-1 running; returns how many participants can take part. */
static unsigned grow(unsigned want)
{
    pthread_mutex_lock(&P.grow);
    while (P.started + 1 < want) {
        mailbox *m = &P.mb[P.started + 1];
        atomic_store(&m->sleeping, 0);
        m->start = atomic_load(&m->gen);
#if !NF_FUTEX
        pthread_mutex_init(&m->lk, NULL);
        pthread_cond_init(&m->cv, NULL);
#endif
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, (size_t)1 << 20); /* nothing big on a worker's stack */
        int rc = pthread_create(&t, &at, worker, m);
        pthread_attr_destroy(&at);
        if (rc)
            break;
        P.started++;
    }
    unsigned have = P.started + 1;
    pthread_mutex_unlock(&P.grow);
    return have < want ? have : want;
}

static unsigned run(nf_pool_fn fn, void *arg, unsigned n, bool optional)
{
    if (n > NF_POOL_MAX)
        n = NF_POOL_MAX;
    if (n <= 1 || pthread_once(&once, init_once) != 0 || pthread_mutex_trylock(&P.busy) != 0) {
        fn(arg, 0, 1);
        return 1;
    }
    n = grow(n);
    if (n <= 1) {
        pthread_mutex_unlock(&P.busy);
        fn(arg, 0, 1);
        return 1;
    }
    atomic_store_explicit(&P.left, n - 1, memory_order_relaxed);
    uint32_t g[NF_POOL_MAX];
    for (unsigned w = 1; w < n; w++) {
        mailbox *m = &P.mb[w];
        m->fn = fn;
        m->arg = arg;
        m->n = n;
        g[w] = atomic_load_explicit(&m->gen, memory_order_relaxed) + 1; /* only callers move gen */
        atomic_store(&m->claim, (uint64_t)g[w] << 2 | POSTED);
        atomic_store(&m->gen, g[w]); /* seq_cst: against `sleeping` */
        if (atomic_load(&m->sleeping))
            wake(m);
    }
    fn(arg, 0, n);
    for (unsigned w = 1; optional && w < n; w++) {
        uint64_t want = (uint64_t)g[w] << 2 | POSTED;
        if (atomic_compare_exchange_strong(&P.mb[w].claim, &want, (uint64_t)g[w] << 2 | CANCELLED))
            atomic_fetch_sub_explicit(&P.left, 1, memory_order_relaxed);
    }
    for (unsigned i = 0; atomic_load_explicit(&P.left, memory_order_acquire); i++) {
        CPU_RELAX();
        if (i > 4096)
            sched_yield();
    }
    pthread_mutex_unlock(&P.busy);
    return n;
}

unsigned nf_pool_run(nf_pool_fn fn, void *arg, unsigned n) { return run(fn, arg, n, false); }

unsigned nf_pool_run_opt(nf_pool_fn fn, void *arg, unsigned n) { return run(fn, arg, n, true); }

void nf_pool_wait(atomic_uint *c, unsigned n)
{
    for (unsigned i = 0; atomic_load(c) < n; i++) {
        CPU_RELAX();
        if (i > 4096)
            sched_yield();
    }
}

void nf_pool_span_init(nf_pool_span *s, unsigned n, uint64_t units)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t a = units * i / n, e = units * (i + 1) / n;
        atomic_store_explicit(&s[i].ne, a << 32 | e, memory_order_relaxed);
    }
}

uint64_t nf_pool_span_take(nf_pool_span *s, unsigned n, unsigned idx)
{
    uint64_t v = atomic_load_explicit(&s[idx].ne, memory_order_relaxed);
    while ((v >> 32) < (uint32_t)v) { /* own span: from the front */
        if (atomic_compare_exchange_weak_explicit(&s[idx].ne, &v, v + (1ull << 32),
                                                  memory_order_relaxed, memory_order_relaxed))
            return v >> 32;
    }
    for (;;) { /* steal one unit from the end of the fullest span */
        unsigned best = n;
        uint64_t most = 0;
        for (unsigned i = 0; i < n; i++) {
            uint64_t w = atomic_load_explicit(&s[i].ne, memory_order_relaxed);
            uint64_t left = (uint32_t)w > (w >> 32) ? (uint32_t)w - (w >> 32) : 0;
            if (left > most) {
                most = left;
                best = i;
            }
        }
        if (best == n)
            return UINT64_MAX;
        uint64_t w = atomic_load_explicit(&s[best].ne, memory_order_relaxed);
        while ((w >> 32) < (uint32_t)w) {
            if (atomic_compare_exchange_weak_explicit(&s[best].ne, &w, w - 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                return (uint32_t)w - 1;
        }
    }
}

/* ---- per-thread scratch ------------------------------------------------------- */

typedef struct {
    void *p[NF_POOL_SCRATCH];
    size_t n[NF_POOL_SCRATCH];
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_free(void *a)
{
    scratch *s = a;
    for (unsigned i = 0; i < NF_POOL_SCRATCH; i++)
        free(s->p[i]);
    free(s);
}
static void scratch_init(void) { scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

void *nf_pool_scratch(unsigned slot, size_t bytes)
{
    if (slot >= NF_POOL_SCRATCH || pthread_once(&scratch_once, scratch_init) || !scratch_ok)
        return NULL;
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->n[slot] < bytes) {
        size_t want = (bytes + 4095) & ~(size_t)4095;
        if (want < bytes)
            return NULL;
        void *p = aligned_alloc(64, want);
        if (!p)
            return NULL;
        free(s->p[slot]);
        s->p[slot] = p;
        s->n[slot] = want;
    }
    return s->p[slot];
}
