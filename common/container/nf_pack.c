/* nf_pack.c — manifest objects to encoded bytes (their sources resolved by
 * nf_source), then the writer. */
#include "nf_pack.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_digest.h"
#include "nf_source.h"
#include "nf_values.h"
#include "nf_util.h"
#include "nf_writer.h"

#define CHUNK (8u << 20)

/* What an object's bytes come from: exact bytes (segments), or values that
 * are decoded to f32 and encoded into the object's format (transcoding). */
typedef struct {
    nf_source_segs s;
    bool transcode;
    nf_values v;
    nf_source_held held;   /* decoded-from objects held in memory */
} objsrc;

typedef struct {
    nf_diags *d;
    const nf_pack_opts *po;
    nf_source_inputs *in;  /* every source's input, opened once */
} pack_ctx;

/* NaN/Inf in the bytes of a bf16 or fp32 object that are copied, not
 * transcoded, from values of a declared dtype (DESIGN 7.4 holds for every
 * value source alike: an F32 safetensors tensor or GGUF norm copied into
 * fp32 is checked as an f64 file converted to it is). Such segments hold
 * whole elements and pass in chunks of a multiple of 8 bytes; an element
 * that is not wholly inside one chunk (which they never make) is not
 * looked at. */
static bool elem_nonfinite(const unsigned char *q, unsigned eb)
{
    if (eb == 2)
        return (q[1] & 0x7f) == 0x7f && (q[0] & 0x80);
    return (q[3] & 0x7f) == 0x7f && (q[2] & 0x80);
}

/* The index in the object of the first NaN/Inf element among the whole
 * elements of p[0..n), which sits at object offset rel, or UINT64_MAX;
 * *bits gets its raw little-endian bits. eb: 2 (bf16) or 4 (fp32). */
static uint64_t nonfinite_at(unsigned eb, uint64_t rel, const unsigned char *p, size_t n,
                             uint32_t *bits)
{
    size_t i = rel % eb ? eb - (size_t)(rel % eb) : 0;
    if (i >= n)
        return UINT64_MAX;
    uint64_t first = (rel + i) / eb;
    size_t whole = (n - i) / eb;
    /* blocks of 1024 elements tested 64 bits at a time (an element is
     * NaN/Inf when its exponent field is all ones: t = (x & M) ^ M has a
     * zero lane, which the borrow of t - 1-per-lane shows; t's lanes stay
     * below their top bit, so no lane is mistaken), then the exact element
     * only where a block has one: memory speed */
    const uint64_t M = eb == 2 ? 0x7f807f807f807f80ull : 0x7f8000007f800000ull;
    const uint64_t ONE = eb == 2 ? 0x0001000100010001ull : 0x0000000100000001ull;
    const uint64_t TOP = eb == 2 ? 0x8000800080008000ull : 0x8000000080000000ull;
    for (size_t b = 0; b < whole; b += 1024) {
        size_t m = whole - b < 1024 ? whole - b : 1024;
        const unsigned char *q = p + i + b * eb;
        size_t words = m * eb / 8;
        uint64_t hit = 0;
        for (size_t k = 0; k < words; k++) {
            uint64_t x;
            memcpy(&x, q + 8 * k, 8);
            uint64_t t = (x & M) ^ M;
            hit |= (t - ONE) & ~t & TOP;
        }
        for (size_t k = words * 8 / eb; k < m && !hit; k++)
            hit = elem_nonfinite(q + k * eb, eb);
        if (hit)
            for (size_t k = 0; k < m; k++)
                if (elem_nonfinite(q + k * eb, eb)) {
                    uint32_t w = 0;
                    memcpy(&w, q + k * eb, eb);
                    *bits = w;
                    return first + b + k;
                }
    }
    return UINT64_MAX;
}

static void os_free(objsrc *os)
{
    nf_source_segs_free(&os->s);
    nf_values_free(&os->v);
    nf_source_held_free(&os->held);
}


/* ---- transcoding: a pool of threads encoding objects in row blocks --------------
 *
 * The objects to transcode are jobs, each cut into blocks of rows (about
 * four a thread where the object allows, at most 4M elements, 256K when the
 * job is streamed; nvfp4: whole divisor slices). The pool's threads take
 * blocks of the jobs in catalog order; the main thread submits the next
 * jobs (two ahead, at most 256 MiB of encoded bytes in memory) and, while
 * the pool encodes them, hashes and writes the object before; a streamed
 * job's blocks are written as they come (write_streamed). A job's diagnostics and --report line come when
 * the main thread reaches it, in catalog order, as without the pool. */

typedef struct tc_job {
    nf_tensor_enc te;
    const nf_object *o;
    const objsrc *os;
    uint8_t *obj;
    uint64_t block, nblocks, next, done; /* next, done: under the pool's lock */
    int err;
    uint64_t bad; /* 1 + the first element refused (0: none) */
    nf_encode_stats st;
    double max_abs;
    bool report, cancel;
    nf_encode_opts eo;
    struct tc_job *qnext;
    /* streamed (red-team C2): each block is encoded as a tensor of its own
     * rows into blk[b], and the main thread writes it and frees it; at most
     * `window` blocks are encoded ahead of the one it writes */
    bool stream;
    nf_tensor_enc bte[2];  /* a block's encoding: full blocks, the last one */
    uint8_t **blk;         /* under the pool's lock, like bdone and consumed */
    bool *bdone;
    uint64_t consumed, window;
} tc_job;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t work, done;
    tc_job *head, *tail; /* jobs with blocks left to claim, in order */
    bool quit;
    unsigned n;
    pthread_t tid[16];
} tc_pool;

static void *tc_worker(void *arg)
{
    tc_pool *P = arg;
    float *src = NULL, *back = NULL;
    uint64_t cap = 0;
    pthread_mutex_lock(&P->lock);
    for (;;) {
        while (P->head && P->head->next >= P->head->nblocks) /* fully claimed */
            P->head = P->head->qnext;
        if (!P->head) {
            P->tail = NULL;
            if (P->quit)
                break;
            pthread_cond_wait(&P->work, &P->lock);
            continue;
        }
        tc_job *j = P->head;
        if (j->stream && !j->err && !j->cancel && j->next - j->consumed >= j->window) {
            pthread_cond_wait(&P->work, &P->lock); /* the main thread writes one first */
            continue;
        }
        uint64_t b = j->next++;
        bool skip = j->err || j->cancel;
        pthread_mutex_unlock(&P->lock);
        int rc = 0;
        nf_encode_stats st = {0};
        double mx = 0;
        uint64_t cols = j->te.cols ? j->te.cols : 1;
        uint64_t r0 = b * j->block, r1 = r0 + j->block > j->te.rows ? j->te.rows : r0 + j->block;
        uint64_t need = (r1 - r0) * cols;
        /* a streamed block is a tensor of its own rows, in a buffer of its own */
        const nf_tensor_enc *te = j->stream ? &j->bte[b + 1 == j->nblocks] : &j->te;
        uint64_t er0 = j->stream ? 0 : r0, er1 = j->stream ? r1 - r0 : r1;
        uint8_t *dst = j->obj;
        if (!skip && j->stream && !(dst = calloc(1, te->enc.encoded_bytes ? te->enc.encoded_bytes : 1)))
            rc = NF_CODEC_ENOMEM;
        if (!skip && need > cap) {
            free(src);
            free(back);
            src = malloc(need * sizeof *src);
            back = j->report ? malloc(need * sizeof *back) : NULL;
            cap = src && (!j->report || back) ? need : 0;
            if (!cap)
                rc = NF_CODEC_ENOMEM;
        }
        if (!skip && !rc && j->report && !back) { /* a buffer made for a job without --report */
            back = malloc(cap * sizeof *back);
            if (!back)
                rc = NF_CODEC_ENOMEM;
        }
        if (!skip && !rc)
            rc = nf_values_read(&j->os->v, r0 * cols, r1 * cols, src);
        if (!skip && !rc)
            rc = nf_encode_rows_f32(te, src, er0, er1, dst, te->enc.encoded_bytes, &j->eo, &st);
        if (j->stream && st.bad_element)
            st.bad_element += r0 * cols; /* the object's element, not the block's */
        if (!skip && !rc && j->report &&
            !(rc = nf_decode_rows_f32(te, dst, te->enc.encoded_bytes, er0, er1, back)))
            for (uint64_t k = 0; k < need; k++) {
                double e = fabs((double)src[k] - (double)back[k]);
                if (e > mx && isfinite(src[k]))
                    mx = e;
            }
        pthread_mutex_lock(&P->lock);
        if (!skip) {
            if (rc) {
                if (st.bad_element && (!j->bad || st.bad_element < j->bad))
                    j->bad = st.bad_element;
                if (!j->err)
                    j->err = rc;
            }
            st.bad_element = 0; /* j->bad, above */
            nf_encode_stats_add(&j->st, &st);
            if (mx > j->max_abs)
                j->max_abs = mx;
        }
        if (j->stream) {
            if (rc || skip) {
                free(dst);
                dst = NULL;
            }
            j->blk[b] = dst;
            j->bdone[b] = true;
        }
        if (++j->done == j->nblocks || j->stream)
            pthread_cond_broadcast(&P->done);
    }
    pthread_mutex_unlock(&P->lock);
    free(src);
    free(back);
    return NULL;
}

static bool tc_pool_start(tc_pool *P, unsigned nt)
{
    memset(P, 0, sizeof *P);
    pthread_mutex_init(&P->lock, NULL);
    pthread_cond_init(&P->work, NULL);
    pthread_cond_init(&P->done, NULL);
    if (nt > 16)
        nt = 16;
    /* the workers start with every asynchronous signal blocked (they inherit
     * this mask): a Ctrl-C then runs the writer's handler in the main
     * thread, which changes the list of temporaries only with them blocked
     * (nf_writer.c) */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (unsigned t = 0; t < nt; t++)
        if (pthread_create(&P->tid[P->n], NULL, tc_worker, P) == 0)
            P->n++;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return P->n > 0;
}

/* Cancel what is queued, let the threads finish their block, join them. */
static void tc_pool_stop(tc_pool *P)
{
    pthread_mutex_lock(&P->lock);
    for (tc_job *j = P->head; j; j = j->qnext)
        j->cancel = true;
    P->quit = true;
    pthread_cond_broadcast(&P->work);
    pthread_mutex_unlock(&P->lock);
    for (unsigned t = 0; t < P->n; t++)
        pthread_join(P->tid[t], NULL);
    pthread_cond_destroy(&P->work);
    pthread_cond_destroy(&P->done);
    pthread_mutex_destroy(&P->lock);
}

static void tc_submit(tc_pool *P, tc_job *j)
{
    pthread_mutex_lock(&P->lock);
    j->qnext = NULL;
    if (P->tail && P->head)
        P->tail->qnext = j;
    else
        P->head = j;
    P->tail = j;
    pthread_cond_broadcast(&P->work);
    pthread_mutex_unlock(&P->lock);
}

static void tc_wait(tc_pool *P, tc_job *j)
{
    pthread_mutex_lock(&P->lock);
    while (j->done < j->nblocks)
        pthread_cond_wait(&P->done, &P->lock);
    pthread_mutex_unlock(&P->lock);
}

static void tc_free(tc_job *j);

/* Can job j be streamed (red-team C2)? Every plane row-major over all rows
 * (not nvfp4's tiles and divisors), rank >= 2, two blocks or more; then
 * blocks of at most 256K elements (a block's rows encode alone exactly as
 * within the object: every row-major format groups within a row), each
 * shape's encoding in bte[], and a window of a block a thread + 2. */
static bool tc_stream_setup(tc_job *j, unsigned nt)
{
    const nf_encoding *E = &j->te.enc;
    uint64_t rows = j->te.rows, cols = j->te.cols ? j->te.cols : 1;
    if (j->te.rank < 2 || j->te.dims[0] != rows || j->o->format == NF_FMT_NVFP4 || rows < 2)
        return false;
    for (unsigned p = 0; p < E->nplanes; p++)
        if (!E->plane[p].row_bytes || E->plane[p].rows != rows)
            return false;
    uint64_t block = j->block;
    if (block > (256u << 10) / cols)
        block = (256u << 10) / cols ? (256u << 10) / cols : 1;
    uint64_t nb = nf_ceil_div_u64(rows, block);
    if (nb < 2)
        return false;
    uint64_t dims[NF_MAX_RANK];
    memcpy(dims, j->te.dims, sizeof dims);
    for (int k = 0; k < 2; k++) {
        dims[0] = k ? rows - (nb - 1) * block : block;
        if (nf_tensor_enc_init(&j->bte[k], j->te.format, j->te.layout, dims, j->te.rank,
                               j->te.divisors, NULL) != NF_ENC_OK ||
            j->bte[k].enc.nplanes != E->nplanes)
            return false;
        for (unsigned p = 0; p < E->nplanes; p++)
            if (j->bte[k].enc.plane[p].row_bytes != E->plane[p].row_bytes ||
                j->bte[k].enc.plane[p].rows != dims[0])
                return false;
    }
    j->block = block;
    j->nblocks = nb;
    j->window = (uint64_t)(nt ? nt : 1) + 2;
    j->stream = true;
    return true;
}

/* Bytes of job j that are in memory at once: the object, or its window. */
static uint64_t tc_resident(const tc_job *j)
{
    uint64_t w = j->window * j->bte[0].enc.encoded_bytes;
    return j->stream && w < j->te.enc.encoded_bytes ? w : j->te.enc.encoded_bytes;
}

/* A job for object o: the encoding checked, its buffer, its blocks. NULL
 * when it cannot start; with quiet, nothing is said (the main thread asks
 * again, not quiet, when it reaches the object). */
static tc_job *tc_prepare(pack_ctx *p, const nf_object *o, const objsrc *os, const char *ptr,
                          bool report, unsigned nt, bool quiet)
{
    const char *why = NULL;
    if (nf_format_is_gguf(o->format)) { /* DESIGN 7.5: copied, never encoded */
        if (!quiet)
            nf_diag_add(p->d, NF_C_UNSUPPORTED, ptr,
                        "object \"%s\": %s objects hold a GGUF tensor's bytes as they are; the "
                        "packer copies them and does not encode into them", o->id, o->format_name);
        return NULL;
    }
    tc_job *j = calloc(1, sizeof *j);
    if (!j) {
        if (!quiet)
            nf_diag_add(p->d, NF_C_IO, ptr, "out of memory");
        return NULL;
    }
    if (nf_tensor_enc_init(&j->te, o->format, o->layout, o->dims, o->rank, o->divisors, &why) != NF_ENC_OK) {
        if (!quiet)
            nf_diag_add(p->d, NF_C_UNSUPPORTED, ptr, "cannot encode %s/%s%s%s", o->format_name,
                        o->layout_name, why ? ": " : "", why ? why : "");
        free(j);
        return NULL;
    }
    if (os->v.elements != j->te.enc.elements) {
        if (!quiet)
            nf_diag_add(p->d, NF_C_SIZE, ptr, "the source gives %llu elements; shape %s needs %llu",
                        (unsigned long long)os->v.elements, "of the object",
                        (unsigned long long)j->te.enc.elements);
        free(j);
        return NULL;
    }
    j->o = o;
    j->os = os;
    j->report = report;
    j->eo.allow_nonfinite = p->po->allow_nonfinite;
    uint64_t cols = j->te.cols ? j->te.cols : 1, rows = j->te.rows;
    j->block = (4u << 20) / cols;
    uint64_t share = rows / (4 * (uint64_t)(nt ? nt : 1)); /* about 4 blocks a thread */
    if (share && share < j->block)
        j->block = share;
    if (j->block < 1)
        j->block = 1;
    if (o->format == NF_FMT_NVFP4) /* whole divisor slices: each w needs its slice's amax */
        j->block = rows / o->divisors;
    if (j->block > rows)
        j->block = rows ? rows : 1;
    j->nblocks = rows ? nf_ceil_div_u64(rows, j->block) : 0;
    if (tc_stream_setup(j, nt)) {
        j->blk = calloc(j->nblocks, sizeof *j->blk);
        j->bdone = calloc(j->nblocks, sizeof *j->bdone);
    } else {
        j->obj = calloc(1, j->te.enc.encoded_bytes ? j->te.enc.encoded_bytes : 1);
    }
    if (j->stream ? !j->blk || !j->bdone : !j->obj) {
        if (!quiet)
            nf_diag_add(p->d, NF_C_IO, ptr, "out of memory for %llu encoded bytes",
                        (unsigned long long)j->te.enc.encoded_bytes);
        tc_free(j);
        return NULL;
    }
    return j;
}

static void tc_free(tc_job *j)
{
    if (j) {
        for (uint64_t b = 0; j->blk && b < j->nblocks; b++)
            free(j->blk[b]);
        free(j->blk);
        free(j->bdone);
        free(j->obj);
        free(j);
    }
}

/* The main thread's side of a finished job: its diagnostics or its
 * --report line; returns the encoded bytes (the caller frees them) or
 * NULL. The job is freed. */
static uint8_t *tc_finish(pack_ctx *p, tc_job *jp, const char *ptr)
{
    const nf_object *o = jp->o;
    const objsrc *os = jp->os;
    uint8_t *obj = jp->obj;
    struct {
        nf_encode_stats st;
        double max_abs;
    } j = {jp->st, jp->max_abs};
    int err = jp->err;
    uint64_t bad = jp->bad;
    jp->obj = NULL;
    tc_free(jp);
    if (err) {
        char el[96] = "";
        float bv = 0;
        if (bad && nf_values_read(&os->v, bad - 1, bad, &bv) == 0)
            snprintf(el, sizeof el, " at element %llu (%.9g)", (unsigned long long)(bad - 1),
                     (double)bv);
        if (err == NF_CODEC_ENONFINITE)
            nf_diag_add(p->d, NF_C_RANGE, ptr, "object \"%s\": the source holds NaN or Inf%s%s",
                        o->id, el,
                        nf_format_elem_bytes(o->format) == 0 || o->format == NF_FMT_INT32
                            ? ", which this format cannot hold"
                            : " (--allow-nonfinite keeps them in bf16/fp32)");
        else if (err == NF_CODEC_EOVERFLOW)
            nf_diag_add(p->d, NF_C_RANGE, ptr,
                        "object \"%s\": a finite value%s rounds to infinity in bf16 "
                        "(--allow-nonfinite keeps it as infinity)",
                        o->id, el);
        else if (err == NF_CODEC_EVALUE)
            nf_diag_add(p->d, NF_C_RANGE, ptr, "object \"%s\": a value is not an int32", o->id);
        else if (err == -ENODATA)
            nf_diag_add(p->d, NF_C_LENGTH, ptr, "object \"%s\": a source file ended early", o->id);
        else if (err < 0 && err >= -4095 && err != NF_CODEC_ENOMEM && err < -6)
            nf_diag_add(p->d, NF_C_IO, ptr, "object \"%s\": read error: %s", o->id, strerror(-err));
        else
            nf_diag_add(p->d, NF_C_IO, ptr, "object \"%s\": %s", o->id, nf_codec_strerror(err));
        free(obj);
        return NULL;
    }
    if (p->po->report) {
        double n = j.st.elements ? (double)j.st.elements : 1;
        nf_pack_report rl = {o->id, o->format_name, j.st.elements, sqrt(j.st.sse / n),
                             p->po->max_abs_error ? j.max_abs : NAN,
                             j.st.sse > 0 ? 10 * log10(j.st.ssx / j.st.sse) : INFINITY,
                             j.st.scales, j.st.scales_saturated, j.st.scales_zeroed};
        p->po->report(p->po->report_ctx, &rl);
    }
    return obj;
}

static const char ZEROS64[] = "0000000000000000000000000000000000000000000000000000000000000000";

static int pack_catalog(nf_catalog *c, const char *base_dir, const nf_pack_opts *po,
                        nf_diags *d);

int nf_pack(const char *text, size_t len, const char *base_dir, const nf_pack_opts *po,
            nf_diags *d)
{
    char *copy = malloc(len ? len : 1);
    if (!copy) {
        nf_diag_add(d, NF_C_IO, "", "out of memory for the %zu-byte manifest", len);
        return -1;
    }
    if (len)
        memcpy(copy, text, len);
    return nf_pack_owned(copy, len, base_dir, po, d);
}

static bool stream_target(const nf_out_opts *o)
{
    return !o->out || strcmp(o->out, "-") == 0;
}

int nf_pack_owned(char *text, size_t len, const char *base_dir, const nf_pack_opts *po,
                  nf_diags *d)
{
    const char *entry = stream_target(&po->out) ? NULL : nf_basename(po->out.out);
    /* the catalog keeps (and frees) the text */
    nf_catalog *c = nf_catalog_parse_owned(text, len, NF_CAT_MANIFEST, entry, d);
    if (!c)
        return -1;
    return pack_catalog(c, base_dir, po, d);
}

/* One run of the packer: its phases (resolve, plan, open, write, finish)
 * share this. */
typedef struct {
    pack_ctx p;            /* the sources' inputs, shared with tc_* */
    nf_catalog *c;
    nf_diags *d;
    const nf_pack_opts *po;
    bool stream_out;
    nf_write_opts wo;     /* the output options, the artifact_id's mode settled */
    objsrc *src;           /* per object: what its bytes come from */
    nf_plan plan;
    nf_writer *w;
    nf_output *out;
    unsigned char *buf;    /* CHUNK bytes for copies */
    const char **inputs;   /* every file read (the output may name none) */
    tc_pool pool;
    bool pool_on;
    tc_job **jobs;         /* per object: its encoding job, once submitted */
    bool *tried;           /* a quiet tc_prepare failed: ask again, loudly */
    unsigned nt;           /* encoding threads */
    uint64_t done_bytes;   /* payload written (progress) */
} pack_run;

static void run_progress(const pack_run *r)
{
    if (r->po->out.progress)
        r->po->out.progress(r->po->out.progress_ctx, r->done_bytes, r->c->payload_bytes);
}

/* Phase 1: every object's source resolved to exact bytes (segs) or to
 * values to transcode (DESIGN 5, 7.4); sizes set. Diagnostics for all. */
static void resolve_all(pack_run *r)
{
    nf_catalog *c = r->c;
    nf_diags *d = r->d;
    /* a files table in a manifest (an edited catalog) is replaced by the plan */
    for (size_t i = 0; i < c->n_objects; i++) {
        nf_object *o = &c->objects[i];
        objsrc *os = &r->src[i];
        char ptr[64];
        snprintf(ptr, sizeof ptr, "/objects/%zu", i);
        if (o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_UNSUPPORTED) {
            nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "format \"%s\" with layout \"%s\" is unknown%s",
                        o->format_name, o->layout_name,
                        nf_format_reserved_note(o->format_name, o->format_name ? strlen(o->format_name) : 0));
            continue;
        }
        if (o->kind == NF_OBJ_RESOURCE && o->encoding_name &&
            strcmp(o->encoding_name, "raw_bytes_v1") != 0) {
            nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "resource encoding \"%s\" is unknown",
                        o->encoding_name);
            continue;
        }
        if (!o->source) {
            nf_diag_add(d, NF_C_SCHEMA, ptr, "object \"%s\" has no source", o->id);
            continue;
        }
        int rs = nf_source_bytes(r->p.in, o, o->source, &os->s);
        if (rs == 1) {
            /* the source's encoding differs: decode to f32, encode (DESIGN 7.4) */
            nf_source_segs_free(&os->s);
            os->transcode = true;
            uint64_t el = o->elements;
            if (nf_source_values(r->p.in, o, o->source, &os->v, &os->held) < 0)
                continue;
            if (os->v.elements != el) {
                nf_diag_add(d, NF_C_SIZE, ptr, "the source gives %llu elements; the shape needs %llu",
                            (unsigned long long)os->v.elements, (unsigned long long)el);
                continue;
            }
            o->has_digest = false;
            continue;
        }
        if (rs < 0)
            continue;
        if (o->has_bytes && os->s.total != o->bytes) {
            nf_diag_add(d, NF_C_SIZE, ptr, "bytes is %llu; the source gives %llu",
                        (unsigned long long)o->bytes, (unsigned long long)os->s.total);
            continue;
        }
        o->bytes = os->s.total;
        o->has_bytes = true;
        o->has_digest = false;
    }
}

/* Phase 2: layout and files table (placeholder digests keep the catalog's
 * length). With dry_run the plan goes to the caller: returns 1. */
static int plan_all(pack_run *r)
{
    const nf_out_opts *o = &r->po->out;
    nf_catalog *c = r->c;
    if (nf_catalog_layout(c, r->d) < 0)
        return -1;
    for (size_t i = 0; i < c->n_objects && !o->no_digests; i++)
        nf_object_set_digest_hex(&c->objects[i], ZEROS64);
    const char *entry = r->stream_out ? "-" : nf_basename(o->out);
    /* a reproducible id needs the digests in the catalog, which a stream
     * (written before its payload) cannot carry */
    r->wo = o->w;
    if (nf_write_id_check(&r->wo, o->no_digests || r->stream_out ? c->n_objects : 0,
                          r->stream_out ? "a stream from ninfer-pack (its catalog is written before its payload)"
                                        : "the catalog written",
                          r->stream_out ? "(stdout)" : o->out, r->d) < 0)
        return -1;
    if (nf_plan_make(c, &r->wo, entry, !o->no_digests && !r->stream_out, &r->plan, r->d) < 0)
        return -1;
    if (o->dry_run) {
        *o->dry_run = r->plan;
        memset(&r->plan, 0, sizeof r->plan);
        return 1;
    }
    return 0;
}

/* Standard output, where the caller prints a report or a plan, must not be
 * a file read (DESIGN 3): the sources' files are known once resolved. */
static void stdout_text_check(pack_run *r)
{
    size_t ni = 0;
    const char **in = nf_source_inputs_files(r->p.in, &ni);
    if (!in)
        nf_diag_add(r->d, NF_C_IO, "", "out of memory");
    else
        nf_stdout_check(in, ni, r->d);
    free(in);
}

/* Phase 3: the writer, after every file read is known: an output naming
 * one is refused (DESIGN 3). */
static int open_output(pack_run *r)
{
    const nf_out_opts *o = &r->po->out;
    size_t ni = 0;
    r->inputs = nf_source_inputs_files(r->p.in, &ni);
    if (!r->inputs) {
        nf_diag_add(r->d, NF_C_IO, "", "out of memory");
        return -1;
    }
    if (r->stream_out) {
        r->out = nf_stdout_check(r->inputs, ni, r->d) == 0 ? nf_output_open_fd(1, o->zstd, false)
                                                            : NULL;
        r->w = r->out ? nf_writer_open_stream(r->out, &r->plan, &r->wo, r->d) : NULL;
    } else {
        r->w = nf_writer_open_files(o->out, &r->plan, &r->wo, r->inputs, ni, r->d);
    }
    if (!r->w)
        return -1;
    /* the writer has what it needs of the plan's text (a stream wrote it;
     * files are written from the catalog at the end) */
    free(r->plan.json);
    r->plan.json = NULL;
    size_t n = r->c->n_objects ? r->c->n_objects : 1;
    r->buf = malloc(CHUNK);
    r->jobs = calloc(n, sizeof *r->jobs);
    r->tried = calloc(n, sizeof *r->tried);
    if (!r->buf || !r->jobs || !r->tried) {
        nf_diag_add(r->d, NF_C_IO, "", "out of memory");
        return -1;
    }
    if (r->po->report)
        r->po->report(r->po->report_ctx, NULL); /* the table begins */
    return 0;
}

/* Write n zero bytes at *pos (a gap between planes), hashed. */
static int write_zeros(pack_run *r, uint64_t *pos, uint64_t n, nf_sha256 *h)
{
    memset(r->buf, 0, n < CHUNK ? n : CHUNK);
    while (n) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        if (h)
            nf_sha256_update(h, r->buf, k);
        if (nf_writer_write(r->w, *pos, r->buf, k, r->d) < 0)
            return -1;
        *pos += k;
        n -= k;
    }
    return 0;
}

/* A streamed job (red-team C2): block by block as the pool finishes them,
 * the first plane's rows written and hashed at once, the other planes'
 * rows gathered (the row scales, a few percent of the object) and written
 * after it; then the job's diagnostics or report line. The job is freed. */
static int write_streamed(pack_run *r, size_t i, tc_job *j, const char *ptr, nf_sha256 *h)
{
    const nf_encoding enc = j->te.enc, *E = &enc; /* a copy: tc_finish frees j */
    uint64_t base = r->c->objects[i].offset, pos = base;
    uint8_t *side[NF_MAX_PLANES] = {0};
    bool oom = false, failed = false;
    for (unsigned p = 1; p < E->nplanes; p++)
        oom |= !(side[p] = malloc(E->plane[p].bytes ? E->plane[p].bytes : 1));
    if (!oom && write_zeros(r, &pos, E->plane[0].offset, h) < 0)
        failed = true;
    for (uint64_t b = 0; !oom && !failed && b < j->nblocks; b++) {
        pthread_mutex_lock(&r->pool.lock);
        while (!j->bdone[b])
            pthread_cond_wait(&r->pool.done, &r->pool.lock);
        uint8_t *blk = j->blk[b];
        j->blk[b] = NULL;
        pthread_mutex_unlock(&r->pool.lock);
        if (!blk)
            break; /* an error: said by tc_finish */
        const nf_tensor_enc *bt = &j->bte[b + 1 == j->nblocks];
        uint64_t r0 = b * j->block;
        const nf_plane *p0 = &bt->enc.plane[0];
        if (h)
            nf_sha256_update(h, blk + p0->offset, p0->bytes);
        if (nf_writer_write(r->w, pos, blk + p0->offset, p0->bytes, r->d) < 0)
            failed = true;
        pos += p0->bytes;
        for (unsigned p = 1; p < E->nplanes; p++)
            memcpy(side[p] + r0 * E->plane[p].row_bytes, blk + bt->enc.plane[p].offset,
                   bt->enc.plane[p].bytes);
        free(blk);
        pthread_mutex_lock(&r->pool.lock);
        j->consumed++;
        pthread_cond_broadcast(&r->pool.work);
        pthread_mutex_unlock(&r->pool.lock);
    }
    /* the job's end: every block claimed and finished (a failure cancels
     * the rest, which then finish at once) */
    pthread_mutex_lock(&r->pool.lock);
    if (oom || failed || j->err)
        j->cancel = true;
    j->window = UINT64_MAX;
    pthread_cond_broadcast(&r->pool.work);
    pthread_mutex_unlock(&r->pool.lock);
    tc_wait(&r->pool, j);
    bool ok = !oom && !failed && !j->err;
    uint8_t *none = tc_finish(&r->p, j, ptr); /* diagnostics or the report line */
    free(none);
    if (oom)
        nf_diag_add(r->d, NF_C_IO, ptr, "out of memory for the object's scales");
    for (unsigned p = 1; ok && p < E->nplanes; p++) {
        uint64_t gap = base + E->plane[p].offset - pos;
        if (write_zeros(r, &pos, gap, h) < 0)
            ok = false;
        else if (h)
            nf_sha256_update(h, side[p], E->plane[p].bytes);
        if (ok && nf_writer_write(r->w, pos, side[p], E->plane[p].bytes, r->d) < 0)
            ok = false;
        pos += E->plane[p].bytes;
    }
    for (unsigned p = 1; p < E->nplanes; p++)
        free(side[p]);
    if (!ok)
        return -1;
    r->done_bytes += pos - base;
    run_progress(r);
    return 0;
}

/* Phase 4a: transcoded object i: its job (and the next two, within 256 MiB
 * of encoded bytes in flight) submitted, waited for, written, hashed. */
static int write_transcoded(pack_run *r, size_t i, nf_sha256 *h)
{
    nf_catalog *c = r->c;
    nf_object *o = &c->objects[i];
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/objects/%zu", i);
    if (!r->pool_on) {
        r->pool_on = tc_pool_start(&r->pool, r->nt);
        if (!r->pool_on) {
            nf_diag_add(r->d, NF_C_IO, ptr, "cannot start the encoding threads");
            return -1;
        }
    }
    uint64_t fly = 0;
    for (size_t k = i, ahead = 0; k < c->n_objects && ahead < 3; k++) {
        if (!r->src[k].transcode)
            continue;
        if (!r->jobs[k] && (k == i || !r->tried[k])) {
            if (k > i && fly + c->objects[k].bytes > (256u << 20))
                break;
            char pk[64];
            snprintf(pk, sizeof pk, "/objects/%zu", k);
            r->jobs[k] = tc_prepare(&r->p, &c->objects[k], &r->src[k], pk,
                                    r->po->report && r->po->max_abs_error, r->nt, k != i);
            r->tried[k] = k != i; /* quiet failures are retried, loudly, at k */
            if (r->jobs[k])
                tc_submit(&r->pool, r->jobs[k]);
        }
        if (r->jobs[k])
            fly += tc_resident(r->jobs[k]);
        ahead++;
    }
    if (r->jobs[i] && r->jobs[i]->stream) {
        tc_job *j = r->jobs[i];
        r->jobs[i] = NULL;
        return write_streamed(r, i, j, ptr, h);
    }
    uint8_t *obj = NULL;
    if (r->jobs[i]) {
        tc_wait(&r->pool, r->jobs[i]);
        obj = tc_finish(&r->p, r->jobs[i], ptr);
        r->jobs[i] = NULL;
    }
    int wr = obj ? nf_writer_write(r->w, o->offset, obj, o->bytes, r->d) : -1;
    if (obj && h)
        nf_sha256_update(h, obj, o->bytes);
    free(obj);
    if (wr < 0)
        return -1;
    r->done_bytes += o->bytes;
    run_progress(r);
    return 0;
}

/* Phase 4b: copied object i, segment by segment in CHUNK pieces, hashed as
 * it passes; a source artifact's carried digest is settled before the
 * segment's last bytes are written (a stream is cut short: DESIGN 3). */
static int write_copied(pack_run *r, size_t i, nf_sha256 *h)
{
    nf_diags *d = r->d;
    objsrc *os = &r->src[i];
    const nf_object *o = &r->c->objects[i];
    uint64_t pos = o->offset;
    unsigned scan_eb = 0; /* NaN/Inf check of copied values (DESIGN 7.4) */
    if (!r->po->allow_nonfinite && o->kind == NF_OBJ_TENSOR &&
        o->layout == NF_LAY_CONTIGUOUS_LE_V1 &&
        (o->format == NF_FMT_BF16 || o->format == NF_FMT_FP32))
        scan_eb = o->format == NF_FMT_BF16 ? 2 : 4;
    for (size_t k = 0; k < os->s.n; k++) {
        const nf_source_seg *sg = &os->s.v[k];
        nf_sha256 *sh = sg->check ? nf_sha256_new() : NULL;
        if (sg->check && !sh) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
        for (uint64_t q = 0; q < sg->len;) {
            size_t n = sg->len - q > CHUNK ? CHUNK : (size_t)(sg->len - q);
            const unsigned char *data = r->buf;
            if (sg->a) {
                if (nf_artifact_read(sg->a, sg->off + q, r->buf, n, d) < 0) {
                    nf_sha256_free(sh);
                    return -1;
                }
            } else if (!sg->ref) {
                data = os->s.mem + sg->off + q;
            } else {
                ssize_t got = nf_fdref_pread(sg->ref, r->buf, n, sg->off + q);
                if (got < 0 || (size_t)got != n) {
                    nf_diag_addf(d, got < 0 ? NF_C_IO : NF_C_INCOMPLETE, sg->path, "",
                                 "cannot read %zu bytes at %llu: %s", n,
                                 (unsigned long long)(sg->off + q),
                                 got == -ESTALE ? "the file was replaced or changed while "
                                                  "it was packed"
                                 : got < 0      ? strerror((int)-got)
                                                : "the file is shorter than its header says");
                    nf_sha256_free(sh);
                    return -1;
                }
            }
            if (sh) {
                nf_sha256_update(sh, data, n);
                if (q + n == sg->len) {
                    char got[65], want[65];
                    nf_sha256_final(sh, got);
                    sh = NULL;
                    nf_object_digest_hex(sg->check, want);
                    if (strcmp(got, want) != 0) {
                        nf_source_digest_error(d, sg->path, sg->check_index, sg->check, got);
                        return -1;
                    }
                }
            }
            uint32_t bits = 0;
            uint64_t bad = scan_eb && sg->values
                               ? nonfinite_at(scan_eb, pos - o->offset, data, n, &bits)
                               : UINT64_MAX;
            if (bad != UINT64_MAX) {
                char ptr[64];
                float f;
                if (scan_eb == 2)
                    bits <<= 16;
                memcpy(&f, &bits, 4);
                snprintf(ptr, sizeof ptr, "/objects/%zu", i);
                nf_diag_add(d, NF_C_RANGE, ptr,
                            "object \"%s\": the source holds NaN or Inf at element %llu "
                            "(%.9g; copied as %s) (--allow-nonfinite keeps them in bf16/fp32)",
                            o->id, (unsigned long long)bad, (double)f, o->format_name);
                nf_sha256_free(sh);
                return -1;
            }
            if (h)
                nf_sha256_update(h, data, n);
            if (nf_writer_write(r->w, pos, data, n, d) < 0) {
                nf_sha256_free(sh);
                return -1;
            }
            pos += n;
            q += n;
            r->done_bytes += n;
            run_progress(r);
        }
    }
    return 0;
}

/* Phase 4: every object in catalog order, its digest recorded; then the
 * catalog and publication (nf_writer_finish_catalog). */
static int write_all(pack_run *r)
{
    bool digests = !r->po->out.no_digests;
    for (size_t i = 0; i < r->c->n_objects; i++) {
        nf_sha256 *h = digests ? nf_sha256_new() : NULL;
        if (digests && !h) {
            nf_diag_add(r->d, NF_C_IO, "", "out of memory");
            return -1;
        }
        int rc = r->src[i].transcode ? write_transcoded(r, i, h) : write_copied(r, i, h);
        if (rc < 0) {
            nf_sha256_free(h);
            return -1;
        }
        if (h) {
            char hex[65];
            nf_sha256_final(h, hex);
            nf_object_set_digest_hex(&r->c->objects[i], hex);
        }
    }
    int rc = nf_writer_finish_catalog(r->w, r->c, digests, r->d);
    r->w = NULL;
    return rc;
}

static void run_free(pack_run *r)
{
    if (r->pool_on)
        tc_pool_stop(&r->pool);
    for (size_t i = 0; r->jobs && i < r->c->n_objects; i++)
        tc_free(r->jobs[i]);
    free(r->jobs);
    free(r->tried);
    nf_writer_abort(r->w);
    nf_output_close(r->out);
    free(r->buf);
    free(r->inputs);
    nf_plan_free(&r->plan);
    for (size_t i = 0; r->src && i < r->c->n_objects; i++)
        os_free(&r->src[i]);
    free(r->src);
    nf_source_inputs_free(r->p.in);
    nf_catalog_free(r->c);
}

static int pack_catalog(nf_catalog *c, const char *base_dir, const nf_pack_opts *po,
                        nf_diags *d)
{
    pack_run r;
    memset(&r, 0, sizeof r);
    r.p = (pack_ctx){d, po, nf_source_inputs_new(base_dir, po->allow_nonfinite, d)};
    r.c = c;
    r.d = d;
    r.po = po;
    r.stream_out = stream_target(&po->out);
    r.nt = po->threads ? po->threads : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    r.src = calloc(c->n_objects ? c->n_objects : 1, sizeof *r.src);
    int rc = -1;
    if (!r.src || !r.p.in)
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    if (!nf_diags_exit(d)) {
        resolve_all(&r);
        if (!nf_diags_exit(d) && po->out.text_stdout)
            stdout_text_check(&r);
        int pl = nf_diags_exit(d) ? -1 : plan_all(&r);
        if (pl == 1)
            rc = 0;
        else if (pl == 0 && open_output(&r) == 0)
            rc = write_all(&r);
    }
    run_free(&r);
    return rc;
}
