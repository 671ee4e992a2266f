/* nf_pool.h — internal to the library (the codec's kernels: nf_gemv.c,
 * nf_gemv_int.c, nf_gemv_gguf.c): one process-wide pool of persistent
 * worker threads, so that a kernel call starts no thread.
 *
 * A job runs fn(arg, i, n) for i in [0, n) at the same time: the caller is
 * participant 0, the pool's workers the others. A worker that has no job
 * spins for about NF_POOL_SPIN_US microseconds (so back-to-back calls find
 * it awake), then sleeps on a futex until the next job. One job at a time:
 * a call that finds the pool busy (another thread's job) runs alone, as
 * fn(arg, 0, 1), so the kernels' results must not depend on n (they do not:
 * nf_gemv.h). After fork() the child starts with no workers (they did not
 * survive) and makes new ones when it needs them.
 *
 * Work split: the kernels cut their rows into units, give participant i the
 * contiguous units [i*U/n, (i+1)*U/n) (one linear stream per thread, which
 * the prefetchers follow), and let a participant that has finished its own
 * take units from the end of another's (nf_pool_span_*), so that a thread
 * slowed by the machine delays the call by at most a few units.
 */
#ifndef NF_POOL_H
#define NF_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NF_POOL_MAX 64     /* participants, the caller included */
#define NF_POOL_SPIN_US 50 /* how long an idle worker stays awake */

typedef void (*nf_pool_fn)(void *arg, unsigned idx, unsigned n);

/* Run fn on n participants (n clamped to [1, NF_POOL_MAX]; fewer when the
 * pool is busy or cannot start its threads). Returns the n used, after
 * every participant has returned. */
unsigned nf_pool_run(nf_pool_fn fn, void *arg, unsigned n);

/* nf_pool_run for a job that any subset of participants 1..n-1 completes
 * together with the caller (fn(arg, 0, n) does whatever the others leave:
 * spans with stealing, parts claimed by whoever comes first): once the
 * caller's part returns, the workers that have not started yet are told
 * not to, so a worker the machine has not scheduled does not delay the
 * call. Returns the n the job was cut for. */
unsigned nf_pool_run_opt(nf_pool_fn fn, void *arg, unsigned n);

/* Spin (then yield) until the counter *c reaches n. */
void nf_pool_wait(atomic_uint *c, unsigned n);

/* ---- contiguous spans with stealing at the tail ------------------------- */

/* One participant's span of units [next, end), packed into one atomic so
 * that the owner (taking from the front) and a thief (taking from the end)
 * never take the same unit. */
typedef struct {
    _Alignas(64) _Atomic uint64_t ne; /* next << 32 | end */
} nf_pool_span;

/* Give n participants the units [0, units): span i = [i*units/n,
 * (i+1)*units/n). units < 2^32. */
void nf_pool_span_init(nf_pool_span *s, unsigned n, uint64_t units);

/* The next unit for participant idx: its own from the front, then, once
 * its span is empty, units from the end of the others' spans. Returns the
 * unit, or UINT64_MAX when none is left. */
uint64_t nf_pool_span_take(nf_pool_span *s, unsigned n, unsigned idx);

/* ---- per-thread scratch ------------------------------------------------- */

/* A buffer of at least `bytes` bytes, 64-byte aligned, owned by the calling
 * thread: slot 0 .. NF_POOL_SCRATCH-1 are separate buffers, kept between
 * calls (grown when too small, freed when the thread exits), so that a
 * kernel allocates nothing per call once warm. The contents are not kept
 * when it grows. NULL when out of memory. */
#define NF_POOL_SCRATCH 4
void *nf_pool_scratch(unsigned slot, size_t bytes);

#endif
