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

struct job {
    nf_artifact *a;
    const nf_catalog *c;
    size_t *order, n;
    atomic_size_t next;
    atomic_uint_fast64_t done;
    uint64_t total;
    char (*out)[65];
    nf_diags *d;
    pthread_mutex_t dlock;
    atomic_int failed;
    nf_progress_fn progress;
    void *pctx;
};

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
        if (k >= j->n || atomic_load(&j->failed))
            break;
        if (k == 0)
            reporter = true;
        const nf_object *o = &j->c->objects[j->order[k]];
        nf_sha256 *s = nf_sha256_new();
        if (!s) {
            atomic_store(&j->failed, 1);
            break;
        }
        uint64_t off = o->offset, left = o->bytes;
        while (left) {
            size_t n = left > CHUNK ? CHUNK : (size_t)left;
            if (nf_artifact_read(j->a, off, buf, n, &local) < 0) {
                atomic_store(&j->failed, 1);
                break;
            }
            nf_sha256_update(s, buf, n);
            off += n;
            left -= n;
            uint64_t done = atomic_fetch_add(&j->done, n) + n;
            if (reporter && j->progress)
                j->progress(j->pctx, done, j->total);
        }
        if (left) {
            nf_sha256_free(s);
            break;
        }
        nf_sha256_final(s, j->out[j->order[k]]);
    }
    free(buf);
    if (local.n || local.dropped) {
        pthread_mutex_lock(&j->dlock);
        nf_diags_move(j->d, &local);
        pthread_mutex_unlock(&j->dlock);
    }
    nf_diags_free(&local);
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
    memset(&j, 0, sizeof j);
    j.a = a;
    j.c = c;
    j.out = out;
    j.d = d;
    j.progress = progress;
    j.pctx = pctx;
    j.order = malloc((c->n_objects ? c->n_objects : 1) * sizeof *j.order);
    if (!j.order) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < c->n_objects; i++)
        if (!want || want[i]) {
            j.order[j.n++] = i;
            j.total += c->objects[i].bytes;
        }
    qsort_r(j.order, j.n, sizeof *j.order, by_size_desc, (void *)c->objects);
    pthread_mutex_init(&j.dlock, NULL);
    if (!threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (unsigned)n : 1;
    }
    if (threads > 64)
        threads = 64;
    if (threads > j.n)
        threads = j.n ? (unsigned)j.n : 1;
    pthread_t tid[64];
    unsigned started = 0;
    for (unsigned t = 1; t < threads; t++)
        if (pthread_create(&tid[started], NULL, worker, &j) == 0)
            started++;
    worker(&j);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&j.dlock);
    free(j.order);
    if (atomic_load(&j.failed)) {
        if (!d->n && !d->dropped)
            nf_diag_add(d, NF_C_IO, "", "out of memory while hashing");
        return -1;
    }
    return 0;
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
