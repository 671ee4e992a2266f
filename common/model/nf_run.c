/* nf_run.c — selection, materialization and checked projections. */
#include "nf_run.h"
#include "nf_select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_binder.h"
#include "nf_codec.h"
#include "nf_device.h"
#include "nf_devcheck.h"
#include "nf_gemv.h"
#include "nf_load.h"
#include "nf_objhash.h"
#include "nf_util.h"

typedef struct {
    size_t obj;
    uint64_t r0, r1;
} view;

/* Row views a projection's binding may have (Qwen3.5's tiled value heads
 * bind one part per head). */
#define MAX_VIEWS 1024

/* Row views of a projection's binding (spec 7.3): the whole object, or parts
 * that are whole rows of rank-2 parents with one K and zero-copy views of
 * their layout (nf_rows_are_view: nvfp4 parts are whole 128-row blocks).
 * Returns the number of views, 0 when the binding needs a gather. */
static size_t row_views(const nf_catalog *c, const nf_binding *b, view *v, size_t max,
                        uint64_t *K)
{
    if (!b->parts) {
        const nf_object *o = &c->objects[b->obj];
        if (o->rank != 2)
            return 0;
        *K = o->dims[1];
        v[0] = (view){b->obj, 0, o->dims[0]};
        return 1;
    }
    if (b->n_parts > max)
        return 0;
    for (size_t k = 0; k < b->n_parts; k++) {
        const nf_object *o = &c->objects[b->parts[k].obj];
        uint64_t kk = o->rank == 2 ? o->dims[1] : 0;
        if (!kk || (k && kk != *K) || b->parts[k].begin % kk || b->parts[k].end % kk ||
            !nf_rows_are_view(o->layout, b->parts[k].begin / kk, b->parts[k].end / kk))
            return 0;
        *K = kk;
        v[k] = (view){b->parts[k].obj, b->parts[k].begin / kk, b->parts[k].end / kk};
    }
    return b->n_parts;
}

/* Gather x by the use's input_columns (spec 8; DESIGN 10): stored column
 * c multiplies input element ic[c], so the kernel reads xg[c] = x[ic[c]].
 * The int32 values come from the host copies of the parents (CPU) or range
 * reads (CUDA keeps none). Returns 0, or -1 with a diagnostic (auxiliary:
 * not K int32 values below K; io). */
static int gather_input(const nf_catalog *c, nf_artifact *a, bool cuda, uint8_t *const *host,
                        const size_t *slot, const nf_aux *x, size_t u, uint16_t *in, uint64_t K,
                        nf_diags *d)
{
    char ptr[64];
    snprintf(ptr, sizeof ptr, "/uses/%zu/auxiliaries/input_columns", u);
    size_t np = x->b.parts ? x->b.n_parts : 1;
    int32_t *ic = malloc(K * sizeof *ic + 4);
    uint16_t *xg = malloc(K * sizeof *xg + 2);
    uint64_t got = 0;
    int rc = ic && xg ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < np; i++) {
        size_t oi = x->b.parts ? x->b.parts[i].obj : x->b.obj;
        const nf_object *ob = oi < c->n_objects ? &c->objects[oi] : NULL;
        uint64_t e0 = x->b.parts ? x->b.parts[i].begin : 0;
        uint64_t e1 = x->b.parts ? x->b.parts[i].end : ob ? ob->elements : 0;
        if (!ob || ob->format != NF_FMT_INT32 || ob->layout != NF_LAY_CONTIGUOUS_LE_V1 ||
            e1 < e0 || e1 - e0 > K - got || e1 > ob->elements) {
            rc = -1;
            break;
        }
        if (!cuda && host[slot[oi]])
            memcpy(ic + got, host[slot[oi]] + e0 * 4, (size_t)(e1 - e0) * 4);
        else if (nf_artifact_read(a, ob->offset + e0 * 4, ic + got, (size_t)(e1 - e0) * 4, d) < 0)
            rc = -2;
        got += e1 - e0;
    }
    for (uint64_t k = 0; rc == 0 && k < K; k++) {
        if (ic[k] < 0 || (uint64_t)ic[k] >= K)
            rc = -1;
        else
            xg[k] = in[ic[k]];
    }
    if (rc == 0 && got == K)
        memcpy(in, xg, K * sizeof *in);
    else if (rc != -2)
        nf_diag_add(d, NF_C_AUXILIARY, ptr, "input_columns is not %llu int32 indices below %llu",
                    (unsigned long long)K, (unsigned long long)K);
    free(ic);
    free(xg);
    return rc == 0 && got == K ? 0 : -1;
}

static uint64_t h64(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void make_input(const char *name, uint16_t *x, uint64_t K)
{
    uint64_t s = h64(name) | 1;
    for (uint64_t k = 0; k < K; k++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        /* values in [-2, 2) on a bf16 grid, so x converts exactly */
        float f = (float)((int64_t)(s >> 40) - (1ll << 23)) / (float)(1 << 22);
        uint32_t u;
        memcpy(&u, &f, 4);
        x[k] = (uint16_t)(u >> 16);
    }
}

/* The host copies of the parents objs[0..nobj) in one buffer, each at a
 * 256-byte boundary as in the payload (spec 5.1), so planes keep their
 * alignment: host[k] points into it. One allocation, not one page-aligned
 * block per parent (red-team C1: 74k 2 KB experts took 8 KB each, 600 MB).
 * Returns the buffer (free it), or NULL with an io record. */
static uint8_t *host_arena(const nf_catalog *c, const size_t *objs, size_t nobj, uint8_t **host,
                           nf_diags *d)
{
    uint64_t total = 0;
    for (size_t k = 0; k < nobj; k++) {
        uint64_t b = c->objects[objs[k]].bytes;
        if (b > UINT64_MAX - 255 || !nf_add_u64(total, (b + 255) / 256 * 256, &total)) {
            nf_diag_add(d, NF_C_RANGE, "", "the selected parents' bytes overflow U64");
            return NULL;
        }
    }
    if (total > SIZE_MAX - 4096) {
        nf_diag_add(d, NF_C_IO, "", "out of memory for %llu bytes of parents",
                    (unsigned long long)total);
        return NULL;
    }
    uint8_t *buf = aligned_alloc(4096, (size_t)(total ? (total + 4095) / 4096 * 4096 : 4096));
    if (!buf) {
        nf_diag_add(d, NF_C_IO, "", "out of memory for %llu bytes of parents",
                    (unsigned long long)total);
        return NULL;
    }
    uint64_t off = 0;
    for (size_t k = 0; k < nobj; k++) {
        host[k] = buf + off;
        off += (c->objects[objs[k]].bytes + 255) / 256 * 256;
    }
    return buf;
}

/* What the phases of nf_run share: the selection, the parents (host copies
 * or device buffers, by slot), the activations. */
typedef struct {
    nf_artifact *a;
    const nf_catalog *c;
    const nf_run_opts *o;
    nf_diags *d;
    bool *sel, *need;        /* components selected; objects needed */
    size_t *objs, *slot;     /* the needed objects in order; object -> slot */
    size_t nobj;
    uint8_t **host;          /* by slot: the parent's bytes (CPU), in host_buf */
    uint8_t *host_buf;
    nf_dbuf **dev;           /* by slot: the parent on the device (CUDA) */
    const uint16_t *input;   /* the given activations, or NULL */
    size_t input_len;
    uint16_t *input_buf;     /* read_input's */
} run_ctx;

static int oom(nf_diags *d)
{
    nf_diag_add(d, NF_C_IO, "", "out of memory");
    return -1;
}

/* Phase 1: the selection and its parents, then the architecture checks of
 * ninfer-bind --check on the selected components, as an engine binds
 * (issue 11 item 7: a parameter bound to an object of the wrong shape, a
 * config with hidden_size 0, an unknown architecture are the same
 * diagnostics and stop the run). */
static int select_and_bind(run_ctx *r)
{
    const nf_catalog *c = r->c;
    if (nf_select(c, r->o->components, false, r->sel, r->need, r->d) < 0 || nf_diags_exit(r->d))
        return -1;
    const char **names = calloc(c->n_components ? c->n_components : 1, sizeof *names);
    if (!names)
        return oom(r->d);
    nf_bind_opts bo = {names, 0};
    for (size_t i = 0; i < c->n_components; i++)
        if (r->sel[i])
            names[bo.n_components++] = c->components[i].id;
    int bx = bo.n_components
                 ? nf_binder_check(c, nf_artifact_is_stream(r->a) ? NULL : r->a, &bo, r->d)
                 : 0;
    free(names);
    if (bx || nf_diags_exit(r->d))
        return -1;
    for (size_t i = 0; i < c->n_objects; i++)
        if (r->need[i]) {
            r->slot[i] = r->nobj;
            r->objs[r->nobj++] = i;
        }
    return 0;
}

/* Phase 2: the activations. A given input (or read_input's) must cover
 * every projection's K and be finite: a NaN or infinity makes every result
 * NaN, the input's fault, not the artifact's (which `codes` would claim). */
static int prepare_input(run_ctx *r)
{
    const nf_catalog *c = r->c;
    const nf_run_opts *o = r->o;
    r->input = o->input;
    r->input_len = o->input_len;
    if (!o->input && !o->read_input)
        return 0;
    uint64_t maxk = 0;
    for (size_t u = 0; u < c->n_uses; u++) {
        const nf_use *use = &c->uses[u];
        if (!use->parameter || !use->activation_policy || !nf_select_has(c, r->sel, use->parameter))
            continue;
        if (use->binding >= c->n_bindings)
            continue;
        view vv[MAX_VIEWS];
        uint64_t kk = 0;
        if (row_views(c, &c->bindings[use->binding].b, vv, MAX_VIEWS, &kk) && kk > maxk)
            maxk = kk;
    }
    if (o->read_input && maxk) {
        r->input_buf = maxk <= SIZE_MAX / sizeof *r->input_buf
                           ? malloc(maxk * sizeof *r->input_buf)
                           : NULL;
        if (!r->input_buf)
            return oom(r->d);
        if (o->read_input(o->read_input_ctx, r->input_buf, (size_t)maxk, r->d) < 0)
            return -1;
        r->input = r->input_buf;
        r->input_len = (size_t)maxk;
    }
    if (r->input_len < maxk) {
        nf_diag_addf(r->d, NF_C_USAGE, o->input_name, "",
                     "--input holds %zu bf16 values; the largest projection needs K = %llu",
                     r->input_len, (unsigned long long)maxk);
        return -1;
    }
    for (uint64_t k = 0; k < maxk; k++)
        if ((r->input[k] & 0x7f80) == 0x7f80) {
            nf_diag_addf(r->d, NF_C_USAGE, o->input_name, "",
                         "--input value %llu is %s (bf16 0x%04x): activations must be finite",
                         (unsigned long long)k, r->input[k] & 0x7f ? "NaN" : "infinite",
                         r->input[k]);
            return -1;
        }
    return 0;
}

/* Host copies for every parent (host_arena). */
static int host_buffers(run_ctx *r)
{
    r->host_buf = host_arena(r->c, r->objs, r->nobj, r->host, r->d);
    return r->host_buf ? 0 : -1;
}

/* A stream passes once, in order: keep the bytes of the parents as they
 * go by, hashing each (nf_seqhash) unless told not to. */
static int load_stream(run_ctx *r, nf_load_stats *ls)
{
    const nf_catalog *c = r->c;
    if (host_buffers(r) < 0)
        return -1;
    size_t no = c->n_objects ? c->n_objects : 1;
    unsigned char *buf = malloc(4u << 20);
    bool *want = r->o->no_digests ? NULL : calloc(no, sizeof *want);
    char(*got)[65] = r->o->no_digests ? NULL : calloc(no, sizeof *got);
    nf_seqhash *h = NULL;
    int rc = 0;
    if (!r->o->no_digests) {
        for (size_t k = 0; want && k < r->nobj; k++)
            want[r->objs[k]] = c->objects[r->objs[k]].has_digest;
        h = want && got ? nf_seqhash_new(c, want, got) : NULL;
    }
    if (!buf || (!r->o->no_digests && !h))
        rc = oom(r->d);
    size_t cur = 0;
    for (uint64_t pos = 0; !rc && pos < c->payload_bytes;) {
        size_t n = c->payload_bytes - pos > (4u << 20) ? (4u << 20) : (size_t)(c->payload_bytes - pos);
        ssize_t gotn = nf_artifact_stream_read(r->a, buf, n, r->d);
        if (gotn < 0 || (size_t)gotn != n || (h && nf_seqhash_feed(h, pos, buf, n) < 0)) {
            rc = -1;
            break;
        }
        while (cur < r->nobj && c->objects[r->objs[cur]].offset + c->objects[r->objs[cur]].bytes <= pos)
            cur++;
        for (size_t k = cur; k < r->nobj && c->objects[r->objs[k]].offset < pos + n; k++) {
            const nf_object *ob = &c->objects[r->objs[k]];
            uint64_t b = ob->offset > pos ? ob->offset : pos;
            uint64_t e = ob->offset + ob->bytes < pos + n ? ob->offset + ob->bytes : pos + n;
            if (b < e)
                memcpy(r->host[k] + (b - ob->offset), buf + (b - pos), (size_t)(e - b));
        }
        pos += n;
    }
    if (!rc && nf_artifact_stream_finish(r->a, r->d) < 0)
        rc = -1;
    ls->digests_skipped = r->o->no_digests;
    for (size_t k = 0; !rc && got && k < r->nobj; k++) {
        const nf_object *ob = &c->objects[r->objs[k]];
        char said[65];
        if (!ob->has_digest) {
            ls->digests_absent++;
            continue;
        }
        ls->digests_checked++;
        nf_object_digest_hex(ob, said);
        if (strcmp(said, got[r->objs[k]])) {
            nf_load_digest_mismatch(r->a, r->objs[k], got[r->objs[k]], r->d);
            rc = -1;
        }
    }
    nf_seqhash_free(h);
    free(want);
    free(got);
    free(buf);
    return rc;
}

/* nf_load_parents into the host copies: each piece straight into place. */
static uint8_t *host_piece(void *ctx, unsigned worker, size_t k, uint64_t off, size_t n,
                           nf_diags *d)
{
    (void)worker, (void)n, (void)d;
    return ((run_ctx *)ctx)->host[k] + off;
}

/* Phase 3: materialize each parent once: on the device, from a stream, or
 * with range reads of the files on threads; each hashed as it is read
 * unless --no-digests (a `digest` mismatch stops the run: an engine
 * trusts no byte it did not check). */
static int load_parents(run_ctx *r, nf_load_stats *ls)
{
    const nf_catalog *c = r->c;
    memset(ls, 0, sizeof *ls);
    if (r->o->cuda && nf_artifact_is_stream(r->a)) {
        nf_diag_add(r->d, NF_C_USAGE, "", "--device cuda reads an artifact file, not a stream");
        return -1;
    }
    if (r->o->cuda)
        return nf_device_load(r->a, r->objs, r->nobj, r->o->threads, r->o->no_digests, r->dev,
                              ls, r->d);
    if (nf_artifact_is_stream(r->a)) {
        double t0 = nf_now();
        int rc = load_stream(r, ls);
        for (size_t k = 0; k < r->nobj; k++) {
            ls->bytes += c->objects[r->objs[k]].bytes;
            ls->parents++;
        }
        ls->read_s = nf_now() - t0;
        return rc;
    }
    if (host_buffers(r) < 0)
        return -1;
    nf_load_io io = {host_piece, NULL, r, 0, r->o->threads, r->o->no_digests};
    return nf_load_parents(r->a, r->objs, r->nobj, &io, ls, r->d);
}

/* The report's head: device, components, what was loaded. */
static void report_load(const run_ctx *r, const nf_load_stats *ls, nf_jval *rep)
{
    const nf_catalog *c = r->c;
    nf_jobj_set(rep, "device", nf_jnew_string(r->o->cuda ? "cuda" : "cpu"));
    nf_jval *comps = nf_jnew_array();
    for (size_t i = 0; i < c->n_components; i++)
        if (r->sel[i])
            nf_jarr_push(comps, nf_jnew_string(c->components[i].id));
    nf_jobj_set(rep, "components", comps);
    nf_jobj_set(rep, "parents_loaded", nf_jnew_u64(ls->parents));
    nf_jobj_set(rep, "bytes_read", nf_jnew_u64(ls->bytes));
    nf_jobj_set(rep, "load_s", nf_jnew_double(ls->read_s));
    nf_jobj_set(rep, "load_gbps", nf_jnew_double(ls->read_s > 0 ? ls->bytes / ls->read_s / 1e9 : 0));
    nf_jobj_set(rep, "digests", nf_jnew_string(ls->digests_skipped ? "skipped" : "checked"));
    nf_jobj_set(rep, "digests_checked", nf_jnew_u64(ls->digests_checked));
    nf_jobj_set(rep, "digests_absent", nf_jnew_u64(ls->digests_absent));
    nf_jval *loaded = nf_jnew_array(), *unread = nf_jnew_array();
    for (size_t i = 0; i < c->n_objects; i++)
        nf_jarr_push(r->need[i] ? loaded : unread, nf_jnew_string(c->objects[i].id));
    nf_jobj_set(rep, "objects_loaded", loaded);
    nf_jobj_set(rep, "objects_unread", unread);
}

/* The median of `it` timed CPU runs of rows [r0,r1) of one view, in ms,
 * after untimed runs (at least one, and until 5 ms have passed, at most
 * 50): threads started, pages touched and code paged in before the clock
 * starts, so --iters 1 times a warm run like the others. */
static int time_cpu(const run_ctx *r, const nf_tensor_enc *te, const nf_object *ob,
                    const uint8_t *w, const view *v, const uint16_t *x, float *y, nf_act act,
                    double *ms)
{
    double best[64];
    unsigned it = r->o->iters ? (r->o->iters > 64 ? 64 : r->o->iters) : 5;
    /* a small view costs less than starting threads */
    unsigned th = ob->bytes < (1u << 20) ? 1 : r->o->threads;
    int e = 0;
    double w0 = nf_now();
    for (unsigned i = 0; !e && i < 50 && (i == 0 || nf_now() - w0 < 5e-3); i++)
        e = nf_gemv_rows_act(te, w, ob->bytes, v->r0, v->r1, x, y, th, act);
    for (unsigned i = 0; i < it && !e; i++) {
        double ts = nf_now();
        e = nf_gemv_rows_act(te, w, ob->bytes, v->r0, v->r1, x, y, th, act);
        best[i] = (nf_now() - ts) * 1e3;
    }
    for (unsigned i = 1; i < it; i++) /* insertion sort: a few values */
        for (unsigned j = i; j > 0 && best[j] < best[j - 1]; j--) {
            double tmp = best[j];
            best[j] = best[j - 1];
            best[j - 1] = tmp;
        }
    *ms = e ? 0 : best[it / 2];
    return e;
}

/* One view of use u: the kernel (timed) into y, the reference into yr and
 * bound. Returns 0, or -1 (a diagnostic where the kernel or the encoding
 * failed). */
static int run_view(const run_ctx *r, size_t u, const view *v, const uint16_t *x, nf_act act,
                    float *y, float *yr, double *bound, double *ms)
{
    const nf_catalog *c = r->c;
    const nf_use *use = &c->uses[u];
    const nf_object *ob = &c->objects[v->obj];
    nf_tensor_enc te;
    if (nf_tensor_enc_init(&te, ob->format, ob->layout, ob->dims, ob->rank, ob->divisors, NULL) !=
        NF_ENC_OK) {
        char optr[48];
        snprintf(optr, sizeof optr, "/objects/%zu", v->obj);
        nf_diag_add(r->d, NF_C_UNSUPPORTED, optr, "%s: no kernel for %s/%s", use->parameter,
                    ob->format_name, ob->layout_name);
        return -1;
    }
    const uint8_t *w = r->host[r->slot[v->obj]];
    int e = r->o->cuda ? nf_device_gemv(&te, r->dev[r->slot[v->obj]], v->r0, v->r1, x, y,
                                        r->o->iters ? r->o->iters : 5, ms, r->d)
                       : time_cpu(r, &te, ob, w, v, x, y, act, ms);
    if (e) {
        char uptr[48];
        snprintf(uptr, sizeof uptr, "/uses/%zu", u);
        if (!r->o->cuda)
            nf_diag_add(r->d, NF_C_CODES, uptr, "%s: kernel failed: %s", use->parameter,
                        nf_codec_strerror(e));
        return -1;
    }
    /* the reference needs host bytes; the device path keeps none */
    uint8_t *hb = (uint8_t *)w;
    if (r->o->cuda) {
        hb = malloc(ob->bytes);
        if (!hb || nf_artifact_read(r->a, ob->offset, hb, ob->bytes, r->d) < 0) {
            free(hb);
            return -1;
        }
    }
    e = nf_gemv_ref_rows_act(&te, hb, ob->bytes, v->r0, v->r1, x, yr, bound, act);
    if (r->o->cuda)
        free(hb);
    return e ? -1 : 0;
}

/* Phase 4, one use: its record (status lookup or gather without a
 * projection to run), or the projection over each row view against the
 * reference. Returns 0 (*failed: a view failed or a row is out of bound),
 * or -1 to stop (out of memory, a bad input_columns). */
static int run_use(const run_ctx *r, size_t u, nf_jval *rec, bool *failed)
{
    const nf_catalog *c = r->c;
    const nf_use *use = &c->uses[u];
    nf_jobj_set(rec, "parameter", nf_jnew_string(use->parameter));
    nf_jobj_set(rec, "input", nf_jnew_string(use->input));
    view v[MAX_VIEWS];
    uint64_t K = 0;
    size_t nv = row_views(c, &c->bindings[use->binding].b, v, MAX_VIEWS, &K);
    const char *status = NULL;
    if (!use->activation_policy)
        status = "lookup"; /* token ids index rows; no projection to run */
    else if (!nv)
        status = "gather"; /* not row views of rank-2 parents: no native view */
    if (status) {
        nf_jobj_set(rec, "status", nf_jnew_string(status));
        return 0;
    }
    uint64_t N = 0;
    for (size_t k = 0; k < nv; k++)
        N += v[k].r1 - v[k].r0;
    uint16_t *x = malloc(K * sizeof *x);
    float *y = malloc(N * sizeof *y), *yr = malloc(N * sizeof *yr);
    double *bound = malloc(N * sizeof *bound);
    int rc = x && y && yr && bound ? 0 : oom(r->d);
    if (rc == 0 && r->input && r->input_len >= K)
        memcpy(x, r->input, K * sizeof *x);
    else if (rc == 0)
        make_input(use->input, x, K);
    const nf_aux *icx = NULL;
    for (size_t j = 0; j < use->n_aux; j++)
        if (!strcmp(use->aux[j].role, "input_columns"))
            icx = &use->aux[j];
    if (rc == 0 && icx &&
        gather_input(c, r->a, r->o->cuda, r->host, r->slot, icx, u, x, K, r->d) < 0)
        rc = -1;
    if (rc == 0 && icx)
        nf_jobj_set(rec, "input_columns", nf_jnew_bool(true));
    /* spec 8: A8 where the use's policy allows it (CPU kernels only) */
    nf_act act = !r->o->cuda && !r->o->a16_only &&
                         (!strcmp(use->activation_policy, "AllowA8") ||
                          !strcmp(use->activation_policy, "AllowA4"))
                     ? NF_ACT_A8
                     : NF_ACT_A16;
    double ms_total = 0, bytes = 0, maxdiff = 0, maxref = 0, ratio = 0;
    bool ran = rc == 0, nan_err = false;
    for (size_t k = 0, row = 0; ran && k < nv; row += v[k].r1 - v[k].r0, k++) {
        const nf_object *ob = &c->objects[v[k].obj];
        double ms = 0;
        ran = run_view(r, u, &v[k], x, act, y + row, yr + row, bound + row, &ms) == 0;
        if (!ran)
            break;
        ms_total += ms;
        bytes += (double)ob->bytes * (double)(v[k].r1 - v[k].r0) / (double)ob->dims[0];
    }
    /* by class where the reference is not finite (an Inf or NaN weight in a
     * valid artifact: Inf - Inf would fail any bound); the figures count the
     * failures, so a NaN from the kernel shows as max_rel nan */
    uint64_t nbad = 0, first_bad = 0;
    for (uint64_t n = 0; ran && n < N; n++) {
        double err;
        bool pass = nf_devcheck_value(y[n], yr[n], bound[n], &err);
        if (isfinite(yr[n]) && fabs(yr[n]) > maxref)
            maxref = fabs(yr[n]);
        if (!pass && !nbad++)
            first_bad = n;
        if (isnan(err))
            nan_err = true;
        else if (err > maxdiff)
            maxdiff = err;
        double q = !pass && isnan(err) ? INFINITY : bound[n] > 0 ? err / bound[n] : err > 0 ? INFINITY : 0;
        if (q > ratio)
            ratio = q;
    }
    if (nbad) {
        char uptr[48];
        snprintf(uptr, sizeof uptr, "/uses/%zu", u);
        uint64_t n = first_bad;
        char more[96] = "";
        if (nbad > 1)
            snprintf(more, sizeof more, "; %llu of %llu rows out of bound", (unsigned long long)nbad,
                     (unsigned long long)N);
        nf_diag_add(r->d, NF_C_CODES, uptr,
                    "%s: row %llu: kernel gives %.9g, the reference %.9g (bound %.3g)%s",
                    use->parameter, (unsigned long long)n, y[n], yr[n], bound[n], more);
    }
    free(x), free(y), free(yr), free(bound);
    if (rc < 0)
        return -1;
    double maxrel = nan_err ? NAN : maxref > 0 ? maxdiff / maxref : maxdiff;
    bool ok = ran && nbad == 0;
    nf_jobj_set(rec, "format", nf_jnew_string(c->objects[v[0].obj].format_name));
    nf_jobj_set(rec, "rows", nf_jnew_u64(N));
    nf_jobj_set(rec, "k", nf_jnew_u64(K));
    nf_jobj_set(rec, "parents", nf_jnew_u64(nv));
    nf_jobj_set(rec, "view", nf_jnew_string("rows"));
    nf_jobj_set(rec, "activation", nf_jnew_string(act == NF_ACT_A8 ? "a8" : "a16"));
    /* a kernel that failed leaves no figures: null, not zeros that read as a
     * result; NaN and infinities are null too (JSON has no such numbers),
     * rows_failed saying why */
    nf_jobj_set(rec, "time_ms", ran ? nf_jnew_double(ms_total) : NULL);
    nf_jobj_set(rec, "gbps", ran && ms_total > 0 ? nf_jnew_double(bytes / (ms_total * 1e-3) / 1e9)
                                                 : NULL);
    nf_jobj_set(rec, "max_rel_error", ran && isfinite(maxrel) ? nf_jnew_double(maxrel) : NULL);
    nf_jobj_set(rec, "max_err_over_bound", ran && isfinite(ratio) ? nf_jnew_double(ratio) : NULL);
    nf_jobj_set(rec, "rows_failed", ran ? nf_jnew_u64(nbad) : NULL);
    nf_jobj_set(rec, "status", nf_jnew_string(ok ? "ok" : "failed"));
    *failed |= !ok;
    return 0;
}

int nf_run(nf_artifact *a, const nf_run_opts *o, nf_jval **report, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    *report = NULL;
    size_t no = c->n_objects ? c->n_objects : 1;
    run_ctx r = {a, c, o, d, calloc(c->n_components ? c->n_components : 1, sizeof(bool)),
                 calloc(no, sizeof(bool)), calloc(no, sizeof(size_t)), calloc(no, sizeof(size_t)),
                 0, calloc(no, sizeof(uint8_t *)), NULL, calloc(no, sizeof(nf_dbuf *)), NULL, 0,
                 NULL};
    int rc = -1;
    nf_jval *rep = nf_jnew_object(), *uses = nf_jnew_array();
    nf_load_stats ls;
    if (!r.sel || !r.need || !r.objs || !r.slot || !r.host || !r.dev || !rep || !uses) {
        oom(d);
        goto out;
    }
    if (select_and_bind(&r) < 0 || prepare_input(&r) < 0 || load_parents(&r, &ls) < 0)
        goto out;
    report_load(&r, &ls, rep);
    /* every projection of the selected components */
    bool failed = false;
    for (size_t u = 0; u < c->n_uses; u++) {
        const nf_use *use = &c->uses[u];
        if (!use->parameter || !nf_select_has(c, r.sel, use->parameter) ||
            use->binding >= c->n_bindings)
            continue;
        nf_jval *rec = nf_jnew_object();
        if (run_use(&r, u, rec, &failed) < 0) {
            nf_jval_free(rec);
            goto out;
        }
        nf_jarr_push(uses, rec);
    }
    nf_jobj_set(rep, "uses", uses);
    uses = NULL;
    rc = failed ? -1 : 0;
out:
    if (rc == 0 || nf_jobj_len(rep)) {
        *report = rep;
        rep = NULL;
    }
    nf_jval_free(uses);
    nf_jval_free(rep);
    free(r.host_buf);
    for (size_t k = 0; k < r.nobj; k++) {
        if (r.dev && r.dev[k])
            nf_device_free(r.dev[k]);
    }
    free(r.sel), free(r.need), free(r.objs), free(r.slot), free(r.host), free(r.dev);
    free(r.input_buf);
    return rc;
}
