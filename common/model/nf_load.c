/* nf_load.c — parents read once, on threads, hashed as they are read. */
#include "nf_load.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog.h"
#include "nf_digest.h"
#include "nf_gemv.h" /* nf_cpu_count */
#include "nf_util.h"
#include "nf_verify.h" /* nf_object_segments */

typedef struct {
    nf_artifact *a;
    const nf_catalog *c;
    const size_t *objs, *order;
    size_t n;
    const nf_load_io *io;
    uint64_t piece;
    atomic_size_t next;
    atomic_int failed;
    char (*got)[65];       /* by k: the parent's SHA-256 ("" when not hashed) */
    pthread_mutex_t lock;  /* d */
    nf_diags *d;
} load_job;

typedef struct {
    load_job *j;
    unsigned w;
} worker_arg;

/* One parent, piece by piece: read, hash, hand on. */
static int load_one(load_job *j, unsigned w, size_t k, nf_diags *d)
{
    const nf_object *o = &j->c->objects[j->objs[k]];
    bool hash = !j->io->no_digests && o->has_digest;
    nf_sha256 *s = hash ? nf_sha256_new() : NULL;
    if (hash && !s) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (uint64_t off = 0; off < o->bytes; off += j->piece) {
        size_t n = (size_t)(o->bytes - off < j->piece ? o->bytes - off : j->piece);
        uint8_t *buf = j->io->piece_buf(j->io->ctx, w, k, off, n, d);
        if (!buf || nf_artifact_read(j->a, o->offset + off, buf, n, d) < 0) {
            nf_sha256_free(s);
            return -1;
        }
        if (s)
            nf_sha256_update(s, buf, n);
        if (j->io->piece_done && j->io->piece_done(j->io->ctx, w, k, off, buf, n, d) < 0) {
            nf_sha256_free(s);
            return -1;
        }
    }
    if (s)
        nf_sha256_final(s, j->got[k]);
    return 0;
}

static void *worker(void *arg)
{
    worker_arg *wa = arg;
    load_job *j = wa->j;
    nf_diags local = NF_DIAGS_INIT;
    local.file = j->d->file;
    for (;;) {
        size_t i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n || atomic_load(&j->failed))
            break;
        if (load_one(j, wa->w, j->order[i], &local) < 0) {
            atomic_store(&j->failed, 1);
            break;
        }
    }
    if (local.n || local.dropped) {
        pthread_mutex_lock(&j->lock);
        nf_diags_move(j->d, &local);
        pthread_mutex_unlock(&j->lock);
    }
    nf_diags_free(&local);
    return NULL;
}

static int by_size_desc(const void *x, const void *y, void *ctx)
{
    const load_job *j = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    uint64_t sa = j->c->objects[j->objs[a]].bytes, sb = j->c->objects[j->objs[b]].bytes;
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a < b ? -1 : a > b; /* then in objs order: the same plan every run */
}

unsigned nf_load_workers(const nf_load_io *io, size_t n)
{
    unsigned t = io->threads ? io->threads : nf_cpu_count();
    if (t > 64)
        t = 64;
    if (t > n)
        t = n ? (unsigned)n : 1;
    return t ? t : 1;
}

void nf_load_digest_mismatch(nf_artifact *a, size_t oi, const char *got, nf_diags *d)
{
    const nf_object *o = &nf_artifact_catalog(a)->objects[oi];
    char want[65], ptr[48];
    nf_object_digest_hex(o, want);
    snprintf(ptr, sizeof ptr, "/objects/%zu", oi);
    nf_segment seg[2];
    const char *file = NULL;
    if (!nf_artifact_is_stream(a) && nf_object_segments(a, o, seg, 2) == 1)
        file = nf_artifact_file_path(a, seg[0].file);
    nf_diag_addf(d, NF_C_DIGEST, file ? file : nf_artifact_path(a), ptr,
                 "object \"%s\": sha256 %s, metadata.integrity says %s", o->id, got, want);
}

int nf_load_parents(nf_artifact *a, const size_t *objs, size_t n, const nf_load_io *io,
                    nf_load_stats *st, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    memset(st, 0, sizeof *st);
    st->digests_skipped = io->no_digests;
    load_job j;
    memset(&j, 0, sizeof j);
    j.a = a;
    j.c = c;
    j.objs = objs;
    j.n = n;
    j.io = io;
    j.d = d;
    j.piece = io->piece_bytes ? io->piece_bytes : (4u << 20);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    j.got = calloc(n ? n : 1, sizeof *j.got);
    if (!order || !j.got) {
        free(order);
        free(j.got);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        order[k] = k;
    qsort_r(order, n, sizeof *order, by_size_desc, &j);
    j.order = order;
    pthread_mutex_init(&j.lock, NULL);
    unsigned threads = nf_load_workers(io, n);
    pthread_t tid[64];
    worker_arg wa[64];
    unsigned started = 0;
    double t0 = nf_now();
    for (unsigned t = 1; t < threads; t++) {
        wa[t] = (worker_arg){&j, t};
        if (pthread_create(&tid[started], NULL, worker, &wa[t]) == 0)
            started++;
    }
    wa[0] = (worker_arg){&j, 0};
    worker(&wa[0]);
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    st->read_s = nf_now() - t0;
    pthread_mutex_destroy(&j.lock);
    int rc = atomic_load(&j.failed) ? -1 : 0;
    if (rc && !d->n && !d->dropped)
        nf_diag_add(d, NF_C_IO, "", "the load failed");
    for (size_t k = 0; k < n; k++) {
        const nf_object *o = &c->objects[objs[k]];
        st->bytes += o->bytes;
        st->parents++;
        if (io->no_digests)
            continue;
        if (!o->has_digest) {
            st->digests_absent++;
            continue;
        }
        if (!j.got[k][0])
            continue; /* not read: the load failed before it */
        st->digests_checked++;
        char want[65];
        nf_object_digest_hex(o, want);
        if (strcmp(want, j.got[k])) {
            nf_load_digest_mismatch(a, objs[k], j.got[k], d);
            rc = -1;
        }
    }
    free(order);
    free(j.got);
    return rc;
}
