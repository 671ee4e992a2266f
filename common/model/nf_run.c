/* nf_run.c — selection, materialization and checked projections. */
#include "nf_run.h"
#include "nf_select.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_cli.h"
#include "nf_binder.h"
#include "nf_codec.h"
#include "nf_device.h"
#include "nf_gemv.h"
#include "nf_util.h"

typedef struct {
    size_t obj;
    uint64_t r0, r1;
} view;

/* Row views a projection's binding may have (Qwen3.5's tiled value heads
 * bind one part per head). */
#define MAX_VIEWS 1024

/* Row views of a projection's binding (spec 7.3): the whole object, or parts
 * that are whole rows of rank-2 parents with one K. Returns the number of
 * views, 0 when the binding needs a gather. */
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
        if (!kk || (k && kk != *K) || b->parts[k].begin % kk || b->parts[k].end % kk)
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

int nf_run(nf_artifact *a, const nf_run_opts *o, nf_jval **report, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    *report = NULL;
    bool *sel = calloc(c->n_components ? c->n_components : 1, sizeof *sel);
    bool *need = calloc(c->n_objects ? c->n_objects : 1, sizeof *need);
    size_t *objs = calloc(c->n_objects ? c->n_objects : 1, sizeof *objs);
    size_t *slot = calloc(c->n_objects ? c->n_objects : 1, sizeof *slot);
    uint8_t **host = calloc(c->n_objects ? c->n_objects : 1, sizeof *host);
    nf_dbuf **dev = calloc(c->n_objects ? c->n_objects : 1, sizeof *dev);
    int rc = -1;
    nf_jval *rep = nf_jnew_object(), *uses = nf_jnew_array();
    size_t nobj = 0;
    const uint16_t *input = o->input;
    size_t input_len = o->input_len;
    uint16_t *input_buf = NULL;
    uint8_t *host_buf = NULL; /* every host[k] points into it */
    if (!sel || !need || !objs || !slot || !host || !dev || !rep || !uses) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    /* parents of the selected bindings and of their uses' auxiliaries */
    if (nf_select(c, o->components, false, sel, need, d) < 0 || nf_diags_exit(d))
        goto out;
    /* bind as an engine would: the architecture checks of ninfer-bind --check
     * on the selected components (issue 11 item 7: a parameter bound to an
     * object of the wrong shape, a config with hidden_size 0, an unknown
     * architecture are the same diagnostics and stop the run) */
    {
        const char **names = calloc(c->n_components ? c->n_components : 1, sizeof *names);
        if (!names) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto out;
        }
        nf_bind_opts bo = {names, 0};
        for (size_t i = 0; i < c->n_components; i++)
            if (sel[i])
                names[bo.n_components++] = c->components[i].id;
        int bx = bo.n_components
                     ? nf_binder_check(c, nf_artifact_is_stream(a) ? NULL : a, &bo, d)
                     : 0;
        free(names);
        if (bx || nf_diags_exit(d))
            goto out;
    }
    for (size_t i = 0; i < c->n_objects; i++)
        if (need[i]) {
            slot[i] = nobj;
            objs[nobj++] = i;
        }
    /* materialize: each parent once */
    /* the activations: a given input must cover every projection's K */
    if (o->input || o->read_input) {
        uint64_t maxk = 0;
        for (size_t u = 0; u < c->n_uses; u++) {
            const nf_use *use = &c->uses[u];
            if (!use->parameter || !use->activation_policy || !nf_select_has(c, sel, use->parameter))
                continue;
            if (use->binding >= c->n_bindings)
                continue;
            view vv[MAX_VIEWS];
            uint64_t kk = 0;
            if (row_views(c, &c->bindings[use->binding].b, vv, MAX_VIEWS, &kk) && kk > maxk)
                maxk = kk;
        }
        if (o->read_input && maxk) {
            input_buf = maxk <= SIZE_MAX / sizeof *input_buf ? malloc(maxk * sizeof *input_buf)
                                                              : NULL;
            if (!input_buf) {
                nf_diag_add(d, NF_C_IO, "", "out of memory");
                goto out;
            }
            if (o->read_input(o->read_input_ctx, input_buf, (size_t)maxk, d) < 0)
                goto out;
            input = input_buf;
            input_len = (size_t)maxk;
        }
        if (input_len < maxk) {
            nf_diag_addf(d, NF_C_USAGE, o->input_name, "",
                         "--input holds %zu bf16 values; the largest projection needs K = %llu",
                         input_len, (unsigned long long)maxk);
            goto out;
        }
        /* a NaN or infinity makes every result NaN: the input's fault, not
         * the artifact's (which `codes` would claim) */
        for (uint64_t k = 0; k < maxk; k++)
            if ((input[k] & 0x7f80) == 0x7f80) {
                nf_diag_addf(d, NF_C_USAGE, o->input_name, "",
                             "--input value %llu is %s (bf16 0x%04x): activations must be finite",
                             (unsigned long long)k, input[k] & 0x7f ? "NaN" : "infinite",
                             input[k]);
                goto out;
            }
    }
    nf_load_stats ls = {0};
    double t0 = nf_now();
    if (o->cuda && nf_artifact_is_stream(a)) {
        nf_diag_add(d, NF_C_USAGE, "", "--device cuda reads an artifact file, not a stream");
        goto out;
    }
    if (o->cuda) {
        if (nf_device_load(a, objs, nobj, dev, &ls, d) < 0)
            goto out;
    } else if (nf_artifact_is_stream(a)) {
        /* a stream passes once, in order: keep the bytes of the parents */
        if (!(host_buf = host_arena(c, objs, nobj, host, d)))
            goto out;
        unsigned char *buf = malloc(4u << 20);
        if (!buf) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto out;
        }
        size_t cur = 0;
        for (uint64_t pos = 0; pos < c->payload_bytes;) {
            size_t n = c->payload_bytes - pos > (4u << 20) ? (4u << 20) : (size_t)(c->payload_bytes - pos);
            ssize_t r = nf_artifact_stream_read(a, buf, n, d);
            if (r < 0 || (size_t)r != n) {
                free(buf);
                goto out;
            }
            while (cur < nobj && c->objects[objs[cur]].offset + c->objects[objs[cur]].bytes <= pos)
                cur++;
            for (size_t k = cur; k < nobj && c->objects[objs[k]].offset < pos + n; k++) {
                const nf_object *ob = &c->objects[objs[k]];
                uint64_t b = ob->offset > pos ? ob->offset : pos;
                uint64_t e = ob->offset + ob->bytes < pos + n ? ob->offset + ob->bytes : pos + n;
                if (b < e)
                    memcpy(host[k] + (b - ob->offset), buf + (b - pos), (size_t)(e - b));
            }
            pos += n;
        }
        free(buf);
        if (nf_artifact_stream_finish(a, d) < 0)
            goto out;
        for (size_t k = 0; k < nobj; k++) {
            ls.bytes += c->objects[objs[k]].bytes;
            ls.parents++;
        }
        ls.read_s = nf_now() - t0;
    } else {
        if (!(host_buf = host_arena(c, objs, nobj, host, d)))
            goto out;
        for (size_t k = 0; k < nobj; k++) {
            const nf_object *ob = &c->objects[objs[k]];
            if (nf_artifact_read(a, ob->offset, host[k], ob->bytes, d) < 0)
                goto out;
            ls.bytes += ob->bytes;
            ls.parents++;
        }
        ls.read_s = nf_now() - t0;
    }
    nf_jobj_set(rep, "device", nf_jnew_string(o->cuda ? "cuda" : "cpu"));
    nf_jval *comps = nf_jnew_array();
    for (size_t i = 0; i < c->n_components; i++)
        if (sel[i])
            nf_jarr_push(comps, nf_jnew_string(c->components[i].id));
    nf_jobj_set(rep, "components", comps);
    nf_jobj_set(rep, "parents_loaded", nf_jnew_u64(ls.parents));
    nf_jobj_set(rep, "bytes_read", nf_jnew_u64(ls.bytes));
    nf_jobj_set(rep, "load_s", nf_jnew_double(ls.read_s));
    nf_jobj_set(rep, "load_gbps", nf_jnew_double(ls.read_s > 0 ? ls.bytes / ls.read_s / 1e9 : 0));
    nf_jval *loaded = nf_jnew_array(), *unread = nf_jnew_array();
    for (size_t i = 0; i < c->n_objects; i++)
        nf_jarr_push(need[i] ? loaded : unread, nf_jnew_string(c->objects[i].id));
    nf_jobj_set(rep, "objects_loaded", loaded);
    nf_jobj_set(rep, "objects_unread", unread);

    /* every projection of the selected components */
    bool failed = false;
    for (size_t u = 0; u < c->n_uses; u++) {
        const nf_use *use = &c->uses[u];
        if (!use->parameter || !nf_select_has(c, sel, use->parameter))
            continue;
        size_t bi = use->binding;
        if (bi >= c->n_bindings)
            continue;
        nf_jval *rec = nf_jnew_object();
        nf_jobj_set(rec, "parameter", nf_jnew_string(use->parameter));
        nf_jobj_set(rec, "input", nf_jnew_string(use->input));
        view v[MAX_VIEWS];
        uint64_t K = 0;
        size_t nv = row_views(c, &c->bindings[bi].b, v, MAX_VIEWS, &K);
        const char *status = NULL;
        if (!use->activation_policy)
            status = "lookup"; /* token ids index rows; no projection to run */
        else if (!nv)
            status = "gather"; /* not whole rows of rank-2 parents: no native view */
        if (status) {
            nf_jobj_set(rec, "status", nf_jnew_string(status));
            nf_jarr_push(uses, rec);
            continue;
        }
        uint64_t N = 0;
        for (size_t k = 0; k < nv; k++)
            N += v[k].r1 - v[k].r0;
        uint16_t *x = malloc(K * sizeof *x);
        float *y = malloc(N * sizeof *y), *yr = malloc(N * sizeof *yr);
        double *bound = malloc(N * sizeof *bound);
        if (!x || !y || !yr || !bound) {
            free(x), free(y), free(yr), free(bound);
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto out;
        }
        if (input && input_len >= K)
            memcpy(x, input, K * sizeof *x);
        else
            make_input(use->input, x, K);
        const nf_aux *icx = NULL;
        for (size_t j = 0; j < use->n_aux; j++)
            if (!strcmp(use->aux[j].role, "input_columns"))
                icx = &use->aux[j];
        if (icx && gather_input(c, a, o->cuda, host, slot, icx, u, x, K, d) < 0) {
            free(x), free(y), free(yr), free(bound);
            nf_jval_free(rec);
            goto out;
        }
        if (icx)
            nf_jobj_set(rec, "input_columns", nf_jnew_bool(true));
        /* spec 8: A8 where the use's policy allows it (CPU kernels only) */
        nf_act act = !o->cuda && !o->a16_only &&
                             (!strcmp(use->activation_policy, "AllowA8") ||
                              !strcmp(use->activation_policy, "AllowA4"))
                         ? NF_ACT_A8
                         : NF_ACT_A16;
        double ms_total = 0, bytes = 0, maxrel = 0, maxref = 0;
        bool ok = true;
        const char *fmt = c->objects[v[0].obj].format_name;
        for (size_t k = 0, row = 0; k < nv; row += v[k].r1 - v[k].r0, k++) {
            const nf_object *ob = &c->objects[v[k].obj];
            nf_tensor_enc te;
            if (nf_tensor_enc_init(&te, ob->format, ob->layout, ob->dims, ob->rank, ob->divisors,
                                   NULL) != NF_ENC_OK) {
                char optr[48];
                snprintf(optr, sizeof optr, "/objects/%zu", v[k].obj);
                nf_diag_add(d, NF_C_UNSUPPORTED, optr, "%s: no kernel for %s/%s",
                            use->parameter, ob->format_name, ob->layout_name);
                ok = false;
                break;
            }
            const uint8_t *w = host[slot[v[k].obj]];
            double ms = 0;
            int e;
            if (o->cuda) {
                e = nf_device_gemv(&te, dev[slot[v[k].obj]], v[k].r0, v[k].r1, x, y + row,
                                   o->iters ? o->iters : 5, &ms, d);
            } else {
                double best[64];
                unsigned it = o->iters ? (o->iters > 64 ? 64 : o->iters) : 5;
                e = 0;
                for (unsigned i = 0; i < it && !e; i++) {
                    double ts = nf_now();
                    /* a small view costs less than starting threads */
                    unsigned th = ob->bytes < (1u << 20) ? 1 : o->threads;
                    e = nf_gemv_rows_act(&te, w, ob->bytes, v[k].r0, v[k].r1, x, y + row, th, act);
                    best[i] = (nf_now() - ts) * 1e3;
                }
                for (unsigned i = 1; i < it; i++) /* insertion sort: a few values */
                    for (unsigned j = i; j > 0 && best[j] < best[j - 1]; j--) {
                        double tmp = best[j];
                        best[j] = best[j - 1];
                        best[j - 1] = tmp;
                    }
                ms = best[it / 2];
            }
            if (e) {
                char uptr[48];
                snprintf(uptr, sizeof uptr, "/uses/%zu", u);
                if (!o->cuda)
                    nf_diag_add(d, NF_C_CODES, uptr, "%s: kernel failed: %s", use->parameter,
                                nf_codec_strerror(e));
                ok = false;
                break;
            }
            /* the reference needs host bytes; the device path keeps none */
            uint8_t *hb = (uint8_t *)w;
            if (o->cuda) {
                hb = malloc(ob->bytes);
                if (!hb || nf_artifact_read(a, ob->offset, hb, ob->bytes, d) < 0) {
                    free(hb);
                    ok = false;
                    break;
                }
            }
            e = nf_gemv_ref_rows_act(&te, hb, ob->bytes, v[k].r0, v[k].r1, x, yr + row,
                                     bound + row, act);
            if (o->cuda)
                free(hb);
            if (e) {
                ok = false;
                break;
            }
            ms_total += ms;
            bytes += (double)ob->bytes * (double)(v[k].r1 - v[k].r0) / (double)ob->dims[0];
        }
        for (uint64_t n = 0; ok && n < N; n++) {
            double diff = fabs((double)y[n] - (double)yr[n]);
            if (fabs(yr[n]) > maxref)
                maxref = fabs(yr[n]);
            if (!(diff <= bound[n])) {
                ok = false;
                char uptr[48];
                snprintf(uptr, sizeof uptr, "/uses/%zu", u);
                nf_diag_add(d, NF_C_CODES, uptr,
                            "%s: row %llu: kernel gives %.9g, the reference %.9g (bound %.3g)",
                            use->parameter, (unsigned long long)n, y[n], yr[n], bound[n]);
            }
            if (diff > maxrel)
                maxrel = diff;
        }
        maxrel = maxref > 0 ? maxrel / maxref : maxrel;
        nf_jobj_set(rec, "format", nf_jnew_string(fmt));
        nf_jobj_set(rec, "rows", nf_jnew_u64(N));
        nf_jobj_set(rec, "k", nf_jnew_u64(K));
        nf_jobj_set(rec, "parents", nf_jnew_u64(nv));
        nf_jobj_set(rec, "view", nf_jnew_string("rows"));
        nf_jobj_set(rec, "activation", nf_jnew_string(act == NF_ACT_A8 ? "a8" : "a16"));
        nf_jobj_set(rec, "time_ms", nf_jnew_double(ms_total));
        nf_jobj_set(rec, "gbps", nf_jnew_double(ms_total > 0 ? bytes / (ms_total * 1e-3) / 1e9 : 0));
        nf_jobj_set(rec, "max_rel_error", nf_jnew_double(maxrel));
        nf_jobj_set(rec, "status", nf_jnew_string(ok ? "ok" : "failed"));
        nf_jarr_push(uses, rec);
        failed |= !ok;
        free(x), free(y), free(yr), free(bound);
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
    free(host_buf);
    for (size_t k = 0; k < nobj; k++) {
        if (dev && dev[k])
            nf_device_free(dev[k]);
    }
    free(sel), free(need), free(objs), free(slot), free(host), free(dev);
    free(input_buf);
    return rc;
}
