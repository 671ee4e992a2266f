/* nf_objhash.c — SHA-256 of an artifact's objects: range reads on threads,
 * or a payload fed in order (DESIGN 9). */
#include "nf_objhash.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_util.h"

#define CHUNK (4u << 20)

/* ---- the threads both hashers use ---- */

/* The thread count asked for (0: online CPUs), at most 64. */
static unsigned pool_threads(unsigned threads)
{
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    return threads > 64 ? 64 : threads;
}

/* Run fn(job) on `threads` threads, this one included, but no more than
 * there are tasks; returns once all are done. */
static void pool_run(unsigned threads, size_t tasks, void *(*fn)(void *), void *job)
{
    if (threads > tasks)
        threads = tasks ? (unsigned)tasks : 1;
    pthread_t tid[64];
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, fn, job) == 0)
            started++;
    fn(job);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
}

/* A worker's diagnostics into the job's, under its lock. */
static void pool_diags(pthread_mutex_t *lock, nf_diags *to, nf_diags *local)
{
    if (local->n || local->dropped) {
        pthread_mutex_lock(lock);
        nf_diags_move(to, local);
        pthread_mutex_unlock(lock);
    }
    nf_diags_free(local);
}

/* The end of a hashing job: -1 when it failed (with a diagnostic). */
static int pool_result(int failed, nf_diags *d)
{
    if (!failed)
        return 0;
    if (!d->n && !d->dropped)
        nf_diag_add(d, NF_C_IO, "", "out of memory while hashing");
    return -1;
}

/* A hashing job: tasks (objects, or files) taken in order by the threads. */
struct job {
    nf_artifact *a;
    const nf_catalog *c;
    size_t *order, n;     /* the tasks, largest first */
    atomic_size_t next;
    atomic_uint_fast64_t done;
    uint64_t total;
    char (*out)[65];      /* the objects' digests */
    nf_diags *d;
    pthread_mutex_t dlock;
    atomic_int failed;
    nf_progress_fn progress;
    void *pctx;
    /* whole files (nf_digest_files_objects) */
    const bool *want;
    char (*fout)[65];
    bool relay;           /* threads to spare: each file's objects are hashed
                             on a second thread beside its read */
    int (*task)(struct job *j, size_t i, unsigned char *buf, bool reporter, nf_diags *d);
    bool stop;            /* a failed task ends the job (objects), or not (a
                             file that cannot be read fails alone) */
};

/* Start a job of up to n tasks. Returns 0, or -1 (`io`, out of memory). */
static int job_init(struct job *j, nf_artifact *a, char (*out)[65], size_t n,
                    nf_progress_fn progress, void *pctx, nf_diags *d)
{
    memset(j, 0, sizeof *j);
    j->a = a;
    j->c = nf_artifact_catalog(a);
    j->out = out;
    j->d = d;
    j->progress = progress;
    j->pctx = pctx;
    j->order = malloc((n ? n : 1) * sizeof *j->order);
    if (!j->order) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    pthread_mutex_init(&j->dlock, NULL);
    return 0;
}

/* Run it and free it: 0, or -1 with a diagnostic. */
static void *worker(void *arg);

static int job_run(struct job *j, unsigned threads)
{
    pool_run(threads, j->n, worker, j);
    pthread_mutex_destroy(&j->dlock);
    free(j->order);
    return pool_result(atomic_load(&j->failed), j->d);
}

/* The task of nf_digest_objects: object i, through range reads. Returns 0
 * or -1 (the job then stops: one bad range is as good as many). */
static int hash_object(struct job *j, size_t i, unsigned char *buf, bool reporter, nf_diags *d)
{
    const nf_object *o = &j->c->objects[i];
    nf_sha256 *s = nf_sha256_new();
    if (!s)
        return -1;
    for (uint64_t off = o->offset, left = o->bytes; left;) {
        size_t n = left > CHUNK ? CHUNK : (size_t)left;
        if (nf_artifact_read(j->a, off, buf, n, d) < 0) {
            nf_sha256_free(s);
            return -1;
        }
        nf_sha256_update(s, buf, n);
        off += n;
        left -= n;
        uint64_t done = atomic_fetch_add(&j->done, n) + n;
        if (reporter && j->progress)
            j->progress(j->pctx, done, j->total);
    }
    nf_sha256_final(s, j->out[i]);
    return 0;
}

/* One thread of a job: tasks in order until none is left (or, with
 * j->stop, one failed); the thread that takes the first reports progress. */
static void *worker(void *arg)
{
    struct job *j = arg;
    unsigned char *buf = malloc(CHUNK);
    nf_diags local = NF_DIAGS_INIT;
    local.file = j->d->file;
    bool reporter = false;
    if (!buf) {
        atomic_store(&j->failed, 1);
        return NULL;
    }
    for (;;) {
        size_t k = atomic_fetch_add(&j->next, 1);
        if (k >= j->n || (j->stop && atomic_load(&j->failed)))
            break;
        if (k == 0)
            reporter = true;
        if (j->task(j, j->order[k], buf, reporter, &local) < 0)
            atomic_store(&j->failed, 1);
    }
    free(buf);
    pool_diags(&j->dlock, j->d, &local);
    return NULL;
}

static int by_size_desc(const void *x, const void *y, void *ctx)
{
    const nf_object *o = ctx;
    uint64_t a = o[*(const size_t *)x].bytes, b = o[*(const size_t *)y].bytes;
    return a > b ? -1 : a < b ? 1 : 0;
}

int nf_digest_objects(nf_artifact *a, const bool *want, char (*out)[65], unsigned threads,
                      nf_progress_fn progress, void *pctx, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    struct job j;
    if (job_init(&j, a, out, c->n_objects, progress, pctx, d) < 0)
        return -1;
    for (size_t i = 0; i < c->n_objects; i++)
        if (!want || want[i]) {
            j.order[j.n++] = i;
            j.total += c->objects[i].bytes;
        }
    qsort_r(j.order, j.n, sizeof *j.order, by_size_desc, (void *)c->objects);
    j.task = hash_object;
    j.stop = true;
    return job_run(&j, pool_threads(threads));
}

/* ---- whole files and their objects, one read ---- */

/* One file's read, inside nf_artifact_segments (the descriptor is held for
 * it): its bytes before the payload, then the payload chunk by chunk, fed
 * to the file's hash and to the objects that start in it. */
struct fread_ctx {
    struct job *j;
    size_t file;
    unsigned char *buf;
    nf_sha256 *fs;
    nf_sha256 **os;       /* per object starting in the file (indices first..) */
    size_t first, last;   /* objects overlapping the file: [first, last) */
    size_t cur;           /* the first of them whose end is not passed yet */
    bool reporter;
    nf_diags *d;
    struct relay *r;      /* NULL: the objects are hashed by the reader */
};

/* The payload chunk buf = logical [lo, lo + k) into the digests of the
 * objects that start in the file (in order: a cursor over them). */
static void objects_feed(struct fread_ctx *x, const unsigned char *buf, uint64_t lo, size_t k)
{
    const nf_catalog *c = x->j->c;
    uint64_t hi = lo + k;
    while (x->cur < x->last && c->objects[x->cur].offset + c->objects[x->cur].bytes <= lo)
        x->cur++;
    for (size_t i = x->cur; i < x->last && c->objects[i].offset < hi; i++) {
        const nf_object *o = &c->objects[i];
        nf_sha256 *s = x->os[i - x->first];
        uint64_t oe = o->offset + o->bytes;
        uint64_t b = o->offset > lo ? o->offset : lo, e = oe < hi ? oe : hi;
        if (s && b < e)
            nf_sha256_update(s, buf + (b - lo), (size_t)(e - b));
    }
}

/* Two buffers between the reader, which fills one and hashes it into the
 * file's digest, and a second thread, which hashes the other into the
 * objects' digests: one read, both hashes at once. */
struct relay {
    pthread_mutex_t m;
    pthread_cond_t cv;
    unsigned char *buf[2];
    size_t len[2];
    uint64_t lo[2];
    bool full[2], end;
    struct fread_ctx *x;
};

static void *relay_objects(void *arg)
{
    struct relay *r = arg;
    for (int slot = 0;; slot ^= 1) {
        pthread_mutex_lock(&r->m);
        while (!r->full[slot] && !r->end)
            pthread_cond_wait(&r->cv, &r->m);
        bool have = r->full[slot];
        pthread_mutex_unlock(&r->m);
        if (!have)
            return NULL; /* the reader is done, and so is every buffer */
        objects_feed(r->x, r->buf[slot], r->lo[slot], r->len[slot]);
        pthread_mutex_lock(&r->m);
        r->full[slot] = false;
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->m);
    }
}

/* The reader's next buffer (waiting until the relay is done with it). */
static unsigned char *relay_take(struct relay *r, int slot)
{
    pthread_mutex_lock(&r->m);
    while (r->full[slot])
        pthread_cond_wait(&r->cv, &r->m);
    pthread_mutex_unlock(&r->m);
    return r->buf[slot];
}

static void relay_give(struct relay *r, int slot, uint64_t lo, size_t k, bool end)
{
    pthread_mutex_lock(&r->m);
    if (k) {
        r->full[slot] = true;
        r->lo[slot] = lo;
        r->len[slot] = k;
    }
    r->end = end;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->m);
}

static int file_pass(void *vctx, size_t file, nf_rfile *src, int fd, uint64_t file_off,
                     uint64_t range_off, uint64_t len)
{
    struct fread_ctx *x = vctx;
    struct job *j = x->j;
    const nf_catalog *c = j->c;
    (void)src; /* local files (a URL artifact's are hashed by nf_verify's scan) */
    (void)range_off;
    const char *path = nf_artifact_file_path(j->a, file);
    /* the header, the catalog and the fill, as they are in the file */
    for (uint64_t at = 0; at < file_off;) {
        size_t k = file_off - at > CHUNK ? CHUNK : (size_t)(file_off - at);
        ssize_t r = nf_pread_full(fd, x->buf, k, at);
        if (r < 0 || (size_t)r != k) {
            nf_diag_addf(x->d, r < 0 ? NF_C_IO : NF_C_INCOMPLETE, path, "", "%s at %llu%s%s",
                         r < 0 ? "read error" : "file ends", (unsigned long long)(at + (r > 0 ? (uint64_t)r : 0)),
                         r < 0 ? ": " : ", before its payload", r < 0 ? strerror((int)-r) : "");
            return -1;
        }
        nf_sha256_update(x->fs, x->buf, k);
        at += k;
    }
    uint64_t p0 = c->files[file].logical_offset;
    int slot = 0;
    for (uint64_t at = 0; at < len; slot ^= 1) {
        size_t k = len - at > CHUNK ? CHUNK : (size_t)(len - at);
        unsigned char *buf = x->r ? relay_take(x->r, slot) : x->buf;
        ssize_t r = nf_pread_full(fd, buf, k, file_off + at);
        if (r < 0 || (size_t)r != k) {
            nf_diag_addf(x->d, r < 0 ? NF_C_IO : NF_C_INCOMPLETE, path, "",
                         r < 0 ? "read error at %llu: %s"
                               : "file ends at %llu, inside the declared payload%s",
                         (unsigned long long)(file_off + at + (r > 0 ? (uint64_t)r : 0)),
                         r < 0 ? strerror((int)-r) : "");
            return -1;
        }
        nf_sha256_update(x->fs, buf, k);
        if (x->r)
            relay_give(x->r, slot, p0 + at, k, false);
        else
            objects_feed(x, buf, p0 + at, k);
        at += k;
        uint64_t done = atomic_fetch_add(&j->done, k) + k;
        if (x->reporter && j->progress)
            j->progress(j->pctx, done, j->total);
    }
    return 0;
}

/* Hash file i and the wanted objects that start in it. Returns 0 or -1. */
static int hash_file(struct job *j, size_t i, unsigned char *buf, bool reporter, nf_diags *d)
{
    const nf_catalog *c = j->c;
    const nf_file *f = &c->files[i];
    struct fread_ctx x = {j, i, buf, nf_sha256_new(), NULL, 0, 0, 0, reporter, d, NULL};
    /* the objects overlapping the file */
    x.first = x.cur = nf_catalog_object_after(c, f->logical_offset);
    uint64_t fe = f->logical_offset + f->payload_bytes;
    for (x.last = x.first; x.last < c->n_objects && c->objects[x.last].offset < fe; x.last++)
        ;
    x.os = calloc(x.last - x.first + 1, sizeof *x.os);
    int rc = x.fs && x.os ? 0 : -1;
    bool any = false;
    for (size_t k = x.first; !rc && k < x.last; k++) {
        const nf_object *o = &c->objects[k];
        /* an object is the file's where it starts (one of zero bytes at
         * the file's start too) */
        if ((!j->want || j->want[k]) && o->offset >= f->logical_offset &&
            !(x.os[k - x.first] = nf_sha256_new()))
            rc = -1;
        any |= x.os[k - x.first] != NULL;
    }
    if (rc)
        nf_diag_add(d, NF_C_IO, "", "out of memory while hashing");
    /* with threads to spare, the objects are hashed beside the read */
    struct relay rl = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {buf, NULL}, {0}, {0},
                       {false, false}, false, &x};
    pthread_t rt;
    bool relayed = !rc && j->relay && any && (rl.buf[1] = malloc(CHUNK)) &&
                   pthread_create(&rt, NULL, relay_objects, &rl) == 0;
    x.r = relayed ? &rl : NULL;
    if (!rc)
        rc = nf_artifact_segments(j->a, f->logical_offset, f->payload_bytes, file_pass, &x, d);
    if (relayed) {
        relay_give(&rl, 0, 0, 0, true);
        pthread_join(rt, NULL);
    }
    free(rl.buf[1]);
    for (size_t k = x.first; k < x.last; k++) {
        nf_sha256 *s = x.os[k - x.first];
        if (!s)
            continue;
        const nf_object *o = &c->objects[k];
        /* the rest of an object that runs on into later files */
        for (uint64_t at = fe; !rc && at < o->offset + o->bytes;) {
            uint64_t left = o->offset + o->bytes - at;
            size_t n = left > CHUNK ? CHUNK : (size_t)left;
            rc = nf_artifact_read(j->a, at, buf, n, d);
            if (!rc)
                nf_sha256_update(s, buf, n);
            at += n;
        }
        if (rc)
            nf_sha256_free(s);
        else
            nf_sha256_final(s, j->out[k]);
    }
    if (rc)
        nf_sha256_free(x.fs);
    else
        nf_sha256_final(x.fs, j->fout[i]);
    free(x.os);
    return rc;
}

static int by_file_size_desc(const void *x, const void *y, void *ctx)
{
    const nf_file *f = ctx;
    uint64_t a = f[*(const size_t *)x].payload_bytes, b = f[*(const size_t *)y].payload_bytes;
    return a > b ? -1 : a < b ? 1 : 0;
}

int nf_digest_files_objects(nf_artifact *a, const bool *files, char (*fout)[65], const bool *want,
                            char (*out)[65], unsigned threads, nf_progress_fn progress,
                            void *pctx, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    struct job j;
    if (job_init(&j, a, out, c->n_files, progress, pctx, d) < 0)
        return -1;
    j.want = want;
    j.fout = fout;
    for (size_t i = 0; i < c->n_files; i++) {
        fout[i][0] = 0;
        if (!files || files[i]) {
            j.order[j.n++] = i;
            j.total += c->files[i].payload_bytes;
        }
    }
    for (size_t i = 0; i < c->n_objects; i++)
        out[i][0] = 0;
    qsort_r(j.order, j.n, sizeof *j.order, by_file_size_desc, (void *)c->files);
    threads = pool_threads(threads);
    /* fewer files than threads: a second thread per file hashes its objects */
    j.relay = threads > j.n && threads > 1;
    j.task = hash_file;
    return job_run(&j, threads);
}

struct nf_seqhash {
    const nf_catalog *c;
    const bool *want;
    char (*out)[65];
    nf_sha256 **ctx;
    size_t cur;
};

nf_seqhash *nf_seqhash_new(const nf_catalog *c, const bool *want, char (*out)[65])
{
    nf_seqhash *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->c = c;
    h->want = want;
    h->out = out;
    h->ctx = calloc(c->n_objects ? c->n_objects : 1, sizeof *h->ctx);
    if (!h->ctx) {
        free(h);
        return NULL;
    }
    for (size_t i = 0; i < c->n_objects; i++)
        out[i][0] = 0;
    return h;
}

int nf_seqhash_feed(nf_seqhash *h, uint64_t pos, const void *buf, size_t n)
{
    const nf_catalog *c = h->c;
    const unsigned char *p = buf;
    uint64_t end = pos + n;
    while (h->cur < c->n_objects && c->objects[h->cur].offset + c->objects[h->cur].bytes <= pos)
        h->cur++;
    for (size_t i = h->cur; i < c->n_objects && c->objects[i].offset < end; i++) {
        const nf_object *o = &c->objects[i];
        if (h->want && !h->want[i])
            continue;
        uint64_t oe = o->offset + o->bytes;
        uint64_t b = o->offset > pos ? o->offset : pos, e = oe < end ? oe : end;
        if (b >= e)
            continue;
        if (!h->ctx[i] && !(h->ctx[i] = nf_sha256_new()))
            return -1;
        nf_sha256_update(h->ctx[i], p + (b - pos), (size_t)(e - b));
        if (e == oe) {
            nf_sha256_final(h->ctx[i], h->out[i]);
            h->ctx[i] = NULL;
        }
    }
    return 0;
}

void nf_seqhash_free(nf_seqhash *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->c->n_objects; i++)
        nf_sha256_free(h->ctx[i]);
    free(h->ctx);
    free(h);
}
