/* nf_export.c — the export's common part (tensors from bindings, reading
 * and transcoding rows) and the GGUF writer (DESIGN 16). */
#include "nf_export.h"
#include "nf_export_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_digest.h"
#include "nf_fp.h"
#include "nf_gguf.h"
#include "nf_import.h"
#include "nf_layout.h"
#include "nf_objhash.h"
#include "nf_writer.h"

void nf_export_result_free(nf_export_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_changed; i++)
        free(r->changed[i]);
    free(r->changed);
    for (size_t i = 0; i < r->n_files; i++)
        free(r->files[i]);
    free(r->files);
    memset(r, 0, sizeof *r);
}

/* ---- small helpers ------------------------------------------------------- */

void ex_warn(ex_ctx *x, const char *fmt, ...)
{
    if (!x->o->warn)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    x->o->warn(x->o->warn_ctx, msg);
}

void ex_progress(ex_ctx *x, uint64_t n)
{
    x->done += n;
    if (x->o->progress)
        x->o->progress(x->o->progress_ctx, x->done, x->total);
}

bool ex_note_name(char ***list, size_t *n, const char *name)
{
    char **v = realloc(*list, (*n + 1) * sizeof *v);
    if (!v)
        return false;
    *list = v;
    if (!(v[*n] = strdup(name)))
        return false;
    (*n)++;
    return true;
}

void eb_put(ex_buf *b, const void *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

void eb_u32(ex_buf *b, uint32_t v)
{
    unsigned char q[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    eb_put(b, q, 4);
}

void eb_u64(ex_buf *b, uint64_t v)
{
    unsigned char q[8];
    nf_store_le64(q, v);
    eb_put(b, q, 8);
}

void eb_str(ex_buf *b, const char *s, size_t n)
{
    eb_u64(b, n);
    eb_put(b, s, n);
}

void eb_kv_u32(ex_buf *b, const char *key, uint32_t v)
{
    eb_str(b, key, strlen(key));
    eb_u32(b, NF_GGUF_U32);
    eb_u32(b, v);
}

void eb_kv_f32(ex_buf *b, const char *key, float v)
{
    eb_str(b, key, strlen(key));
    eb_u32(b, NF_GGUF_F32);
    eb_u32(b, nf_f32_bits(v));
}

void eb_kv_bool(ex_buf *b, const char *key, bool v)
{
    unsigned char c = v;
    eb_str(b, key, strlen(key));
    eb_u32(b, NF_GGUF_BOOL);
    eb_put(b, &c, 1);
}

void eb_kv_str(ex_buf *b, const char *key, const char *v, size_t n)
{
    eb_str(b, key, strlen(key));
    eb_u32(b, NF_GGUF_STRING);
    eb_str(b, v, n);
}

void eb_kv_arr(ex_buf *b, const char *key, uint32_t et, uint64_t n)
{
    eb_str(b, key, strlen(key));
    eb_u32(b, NF_GGUF_ARRAY);
    eb_u32(b, et);
    eb_u64(b, n);
}

size_t ex_resource(const nf_catalog *c, size_t comp, const char *role)
{
    if (comp >= c->n_components)
        return SIZE_MAX;
    const nf_component *k = &c->components[comp];
    for (size_t i = 0; i < k->n_resources; i++)
        if (!strcmp(k->resources[i].role, role))
            return k->resources[i].obj;
    return SIZE_MAX;
}

char *ex_read_resource(ex_ctx *x, size_t obj, size_t *n)
{
    const nf_object *o = &x->c->objects[obj];
    if (o->bytes >= SIZE_MAX) {
        nf_diag_addf(x->d, NF_C_RANGE, x->file, "", "resource \"%s\" is too large", o->id);
        return NULL;
    }
    char *p = malloc((size_t)o->bytes + 1);
    if (!p) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    if (nf_artifact_read(x->a, o->offset, p, (size_t)o->bytes, x->d) < 0) {
        free(p);
        return NULL;
    }
    p[o->bytes] = 0;
    *n = (size_t)o->bytes;
    return p;
}

/* ---- tensors and their runs ------------------------------------------------ */

bool ex_add_tensor(ex_ctx *x, const ex_tensor *t)
{
    if (x->n_t == x->cap_t) {
        size_t cap = x->cap_t ? x->cap_t * 2 : 256;
        ex_tensor *v = realloc(x->t, cap * sizeof *v);
        if (!v) {
            nf_diag_add(x->d, NF_C_IO, "", "out of memory");
            return false;
        }
        x->t = v;
        x->cap_t = cap;
    }
    x->t[x->n_t++] = *t;
    return true;
}

void ex_tensors_free(ex_ctx *x)
{
    for (size_t i = 0; i < x->n_t; i++) {
        free(x->t[i].name);
        free(x->t[i].runs);
        free(x->t[i].run_at);
    }
    free(x->t);
    x->t = NULL;
    x->n_t = x->cap_t = 0;
    free(x->cbuf);
    x->cbuf = NULL;
    x->cobj = SIZE_MAX;
}

bool ex_finish_runs(ex_ctx *x, ex_tensor *t)
{
    free(t->run_at);
    t->run_at = malloc((t->n_runs + 1) * sizeof *t->run_at);
    if (!t->run_at) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return false;
    }
    uint64_t at = 0;
    for (size_t i = 0; i < t->n_runs; i++) {
        const ex_run *r = &t->runs[i];
        uint64_t end;
        t->run_at[i] = at;
        if (r->obj >= x->c->n_objects || !nf_add_u64(r->e0, r->n, &end) ||
            end > x->c->objects[r->obj].elements || !nf_add_u64(at, r->n, &at)) {
            nf_diag_addf(x->d, NF_C_PART_RANGE, x->file, "", "tensor \"%s\": a piece lies "
                         "outside its object", t->name);
            return false;
        }
    }
    t->run_at[t->n_runs] = at;
    if (at != t->elements) {
        nf_diag_addf(x->d, NF_C_COVERAGE, x->file, "", "tensor \"%s\": its bindings give %llu "
                     "of its %llu elements", t->name, (unsigned long long)at,
                     (unsigned long long)t->elements);
        return false;
    }
    return true;
}

/* The run holding logical element e (binary search). */
static size_t run_of(const ex_tensor *t, uint64_t e)
{
    size_t lo = 0, hi = t->n_runs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->run_at[mid] <= e)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int ex_load(ex_ctx *x, size_t obj)
{
    if (x->cobj == obj)
        return 0;
    free(x->cbuf);
    x->cbuf = NULL;
    x->cobj = SIZE_MAX;
    const nf_object *o = &x->c->objects[obj];
    const char *why = NULL;
    if (nf_tensor_enc_init(&x->cte, o->format, o->layout, o->dims, o->rank, o->divisors, &why) !=
        NF_ENC_OK) {
        nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "", "object \"%s\" (%s/%s) cannot be decoded%s%s",
                     o->id, o->format_name, o->layout_name, why ? ": " : "", why ? why : "");
        return -1;
    }
    if (o->bytes >= SIZE_MAX || !(x->cbuf = malloc(o->bytes ? (size_t)o->bytes : 1))) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory (object \"%s\", %llu bytes)", o->id,
                    (unsigned long long)o->bytes);
        return -1;
    }
    if (nf_artifact_read(x->a, o->offset, x->cbuf, (size_t)o->bytes, x->d) < 0) {
        free(x->cbuf);
        x->cbuf = NULL;
        return -1;
    }
    x->cobj = obj;
    return 0;
}

int ex_read_f32(ex_ctx *x, const ex_tensor *t, uint64_t e0, uint64_t e1, float *out)
{
    while (e0 < e1) {
        size_t i = run_of(t, e0);
        const ex_run *r = &t->runs[i];
        uint64_t in = e0 - t->run_at[i], n = r->n - in < e1 - e0 ? r->n - in : e1 - e0;
        if (ex_load(x, r->obj) < 0)
            return -1;
        int rc = nf_decode_elems_f32(&x->cte, x->cbuf, x->c->objects[r->obj].bytes, r->e0 + in,
                                     r->e0 + in + n, out);
        if (rc) {
            nf_diag_addf(x->d, NF_C_CODES, x->file, "", "object \"%s\": %s",
                         x->c->objects[r->obj].id, nf_codec_strerror(rc));
            return -1;
        }
        out += n;
        e0 += n;
    }
    return 0;
}

/* Append the object runs of elements [b, b + n) of binding bd to t. */
static bool runs_of_binding(ex_ctx *x, ex_tensor *t, const nf_binding *bd, uint64_t b, uint64_t n)
{
    const nf_part whole = {.obj = bd->obj, .begin = 0,
                           .end = bd->obj < x->c->n_objects ? x->c->objects[bd->obj].elements : 0};
    const nf_part *parts = bd->parts ? bd->parts : &whole;
    size_t np = bd->parts ? bd->n_parts : 1;
    uint64_t at = 0;
    for (size_t k = 0; k < np && n; k++) {
        uint64_t len = parts[k].end - parts[k].begin;
        if (b >= at + len) {
            at += len;
            continue;
        }
        if (parts[k].obj >= x->c->n_objects ||
            x->c->objects[parts[k].obj].kind != NF_OBJ_TENSOR) {
            nf_diag_addf(x->d, NF_C_REFERENCE, x->file, "", "tensor \"%s\": a binding names no "
                         "tensor object", t->name);
            return false;
        }
        uint64_t in = b - at, m = len - in < n ? len - in : n;
        ex_run *v = realloc(t->runs, (t->n_runs + 1) * sizeof *v);
        if (!v) {
            nf_diag_add(x->d, NF_C_IO, "", "out of memory");
            return false;
        }
        t->runs = v;
        /* adjacent elements of one object join */
        if (t->n_runs && v[t->n_runs - 1].obj == parts[k].obj &&
            v[t->n_runs - 1].e0 + v[t->n_runs - 1].n == parts[k].begin + in)
            v[t->n_runs - 1].n += m;
        else
            v[t->n_runs++] = (ex_run){parts[k].obj, parts[k].begin + in, m};
        b += m;
        n -= m;
        at += len;
    }
    if (n) {
        nf_diag_addf(x->d, NF_C_COVERAGE, x->file, "", "tensor \"%s\": a binding is shorter than "
                     "its parameter", t->name);
        return false;
    }
    return true;
}

/* A piece of a plan tensor: elements [tb, te) of it are the parameter's
 * elements [pb, pb + te - tb). */
typedef struct {
    uint64_t tb, te, pb;
    size_t param;
} piece;

static int piece_cmp(const void *a, const void *b)
{
    const piece *x = a, *y = b;
    return x->tb < y->tb ? -1 : x->tb > y->tb;
}

/* Names llama.cpp keeps in F32 whatever the output type (its converter's
 * rules, GGUF.md 4.2): vectors, routers, conv1d, ssm_a, ssm_dt. */
static bool f32_only(const char *name, unsigned rank)
{
    static const char *const suf[] = {"ffn_gate_inp.weight", "ffn_gate_inp_shexp.weight",
                                      "ssm_conv1d.weight", "ssm_a", "ssm_dt.bias", NULL};
    size_t l = strlen(name);
    for (const char *const *s = suf; *s; s++) {
        size_t k = strlen(*s);
        if (l >= k && !strcmp(name + l - k, *s))
            return true;
    }
    return rank <= 1;
}

bool ex_plan_tensors(ex_ctx *x, nf_naming nm)
{
    for (size_t pi = 0; pi < x->n_plans; pi++) {
        const nf_arch_plan *p = &x->plans[pi];
        size_t nt = p->n_tensors[nm];
        /* the pieces of every tensor, gathered once (no per-tensor scan) */
        size_t *count = calloc(nt + 1, sizeof *count), total = 0;
        if (!count) {
            nf_diag_add(x->d, NF_C_IO, "", "out of memory");
            return false;
        }
        for (size_t i = 0; i < p->n_params; i++) {
            const nf_src_map *m = &p->params[i].src[nm];
            if (p->params[i].shares || m->tensor == SIZE_MAX)
                continue;
            size_t k = m->n_ranges ? m->n_ranges : 1;
            count[m->tensor] += k;
            total += k;
        }
        size_t *start = calloc(nt + 1, sizeof *start);
        piece *pc = calloc(total + 1, sizeof *pc);
        size_t *fill = calloc(nt + 1, sizeof *fill);
        bool ok = start && pc && fill;
        for (size_t i = 1; ok && i <= nt; i++)
            start[i] = start[i - 1] + count[i - 1];
        for (size_t i = 0; ok && i < p->n_params; i++) {
            const nf_param *q = &p->params[i];
            const nf_src_map *m = &q->src[nm];
            if (q->shares || m->tensor == SIZE_MAX)
                continue;
            uint64_t pb = 0;
            size_t k = m->n_ranges ? m->n_ranges : 1;
            for (size_t j = 0; j < k; j++) {
                uint64_t b = m->n_ranges ? m->ranges[j].begin : 0;
                uint64_t e = m->n_ranges ? m->ranges[j].end : p->tensors[nm][m->tensor].elements;
                pc[start[m->tensor] + fill[m->tensor]++] = (piece){b, e, pb, i};
                pb += e - b;
            }
        }
        for (size_t ti = 0; ok && ti < nt; ti++) {
            const nf_src_tensor *st = &p->tensors[nm][ti];
            if (!count[ti])
                continue; /* a tensor no parameter of this plan fills */
            piece *v = pc + start[ti];
            qsort(v, count[ti], sizeof *v, piece_cmp);
            ex_tensor t;
            memset(&t, 0, sizeof t);
            t.original = SIZE_MAX;
            t.src_type = UINT32_MAX;
            t.name = strdup(st->name);
            t.n_dims = st->rank;
            for (unsigned k = 0; k < st->rank; k++)
                t.ne[k] = st->dims[st->rank - 1 - k];
            t.elements = st->elements;
            t.K = st->rank ? st->dims[st->rank - 1] : 1;
            t.R = t.K ? t.elements / t.K : 0;
            if (nm == NF_NAMING_GGUF) {
                t.heads = st->unpermute_heads;
                t.map = st->map;
                t.ck = st->tiled_k;
                t.cv = st->tiled_v;
                t.chd = st->tiled_hd;
                t.force_f32 = f32_only(st->name, st->rank);
            }
            ok = t.name != NULL;
            uint64_t at = 0;
            for (size_t k = 0; ok && k < count[ti]; k++) {
                const nf_param *q = &p->params[v[k].param];
                size_t b = nf_catalog_binding(x->c, q->name);
                if (v[k].tb != at) {
                    nf_diag_addf(x->d, NF_C_COVERAGE, x->file, "", "tensor \"%s\": elements "
                                 "[%llu, %llu) belong to no parameter", st->name,
                                 (unsigned long long)at, (unsigned long long)v[k].tb);
                    ok = false;
                } else if (b == SIZE_MAX) {
                    nf_diag_addf(x->d, NF_C_COVERAGE, x->file, "", "parameter \"%s\" is not bound",
                                 q->name);
                    ok = false;
                } else {
                    ok = runs_of_binding(x, &t, &x->c->bindings[b].b, v[k].pb, v[k].te - v[k].tb);
                    at = v[k].te;
                }
            }
            ok = ok && ex_finish_runs(x, &t) && ex_add_tensor(x, &t);
            if (!ok) {
                free(t.name);
                free(t.runs);
                free(t.run_at);
            }
        }
        free(count);
        free(start);
        free(pc);
        free(fill);
        if (!ok) {
            if (!nf_diags_exit(x->d))
                nf_diag_add(x->d, NF_C_IO, "", "out of memory");
            return false;
        }
    }
    return true;
}

/* ---- components ------------------------------------------------------------ */

bool ex_select(ex_ctx *x, bool carries_mtp)
{
    const nf_catalog *c = x->c;
    const nf_export_opts *o = x->o;
    for (size_t i = 0; i < o->n_components; i++)
        if (nf_catalog_component(c, o->components[i]) == SIZE_MAX) {
            nf_diag_addf(x->d, NF_C_COMPONENT_MISSING, x->file, "", "component \"%s\" is not in "
                         "the artifact", o->components[i]);
            return false;
        }
    if (nf_catalog_component(c, NF_TEXT_COMPONENT) == SIZE_MAX) {
        nf_diag_addf(x->d, NF_C_COMPONENT_MISSING, x->file, "", "the artifact has no text "
                     "component to export");
        return false;
    }
    /* the declared components the output leaves out */
    for (size_t i = 0; i < c->n_components; i++) {
        const char *id = c->components[i].id;
        bool asked = o->n_components == 0;
        for (size_t k = 0; k < o->n_components; k++)
            asked |= !strcmp(o->components[k], id);
        bool can = !strcmp(id, NF_TEXT_COMPONENT) || (carries_mtp && !strcmp(id, "mtp"));
        if (asked && !can && !o->drop) {
            nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "", "component \"%s\" has no place in "
                         "this format (--drop leaves it out)", id);
            return false;
        }
        if (asked && !can)
            ex_warn(x, "warning: %s: component \"%s\" left out (--drop)", x->file, id);
    }
    return true;
}

/* The plans of the components to export (text first). */
static bool ex_plans(ex_ctx *x, bool carries_mtp)
{
    const char *sel[2] = {NF_TEXT_COMPONENT, "mtp"};
    size_t n = 1;
    bool want_mtp = nf_catalog_component(x->c, "mtp") != SIZE_MAX && carries_mtp;
    if (x->o->n_components) {
        want_mtp = false;
        for (size_t k = 0; k < x->o->n_components; k++)
            want_mtp |= !strcmp(x->o->components[k], "mtp");
    }
    if (want_mtp)
        n = 2;
    nf_bind_opts bo = {.components = sel, .n_components = n};
    nf_diags local = NF_DIAGS_INIT;
    local.file = x->file;
    int rc = nf_binder_plans(x->c, &bo, &x->plans, &x->n_plans, &local);
    bool ok = rc == 0 && !nf_diags_exit(&local);
    nf_diags_move(x->d, &local);
    nf_diags_free(&local);
    if (ok && (x->n_plans == 0 || strcmp(x->plans[0].component, NF_TEXT_COMPONENT))) {
        /* keep text first */
        for (size_t i = 1; i < x->n_plans; i++)
            if (!strcmp(x->plans[i].component, NF_TEXT_COMPONENT)) {
                nf_arch_plan t = x->plans[0];
                x->plans[0] = x->plans[i];
                x->plans[i] = t;
            }
    }
    return ok && x->n_plans > 0;
}

/* ---- formats: what a tensor's bytes can become ------------------------------ */

/* The ggml type whose bytes an object format's are (gguf_* and our three
 * contiguous formats), or UINT32_MAX. */
static uint32_t native_type(nf_format f)
{
    switch (f) {
    case NF_FMT_FP32: return NF_GGML_F32;
    case NF_FMT_BF16: return NF_GGML_BF16;
    case NF_FMT_INT32: return NF_GGML_I32;
    default: break;
    }
    return nf_format_is_gguf(f) ? nf_gguf_info_of(f).ggml_type : UINT32_MAX;
}

/* The GGUF type holding exactly an object format's values, row by row
 * without decoding (DESIGN 16, ninfer-formats(7)): the native one, or
 * q8_g32_fp16 -> Q8_0, q4_g64_fp16 -> Q4_0, q5_g64_fp16 -> Q5_0 when K is a
 * multiple of 32. UINT32_MAX when there is none. */
static uint32_t lossless_type(nf_format f, nf_layout l, uint64_t K)
{
    uint32_t n = native_type(f);
    if (n != UINT32_MAX)
        return n;
    if (l != NF_LAY_ROW_SPLIT_K128_V1 || K % 32)
        return UINT32_MAX;
    return f == NF_FMT_Q8_G32_FP16 ? NF_GGML_Q8_0 : f == NF_FMT_Q4_G64_FP16 ? NF_GGML_Q4_0
         : f == NF_FMT_Q5_G64_FP16 ? NF_GGML_Q5_0 : UINT32_MAX;
}

/* Formats whose every value an IEEE type holds exactly. */
static bool exact_in(nf_format f, uint32_t type)
{
    if (type == NF_GGML_F32)
        return f != NF_FMT_UNKNOWN && f != NF_FMT_INT32;
    if (type == NF_GGML_BF16)
        return f == NF_FMT_BF16;
    if (type == NF_GGML_F16)
        return f == NF_FMT_GGUF_F16;
    return false;
}

static uint32_t fallback_type(const ex_ctx *x, uint64_t K)
{
    switch (x->o->fallback) {
    case NF_FALLBACK_F16: return NF_GGML_F16;
    case NF_FALLBACK_BF16: return NF_GGML_BF16;
    case NF_FALLBACK_Q8_0: return K % 32 ? NF_GGML_F32 : NF_GGML_Q8_0;
    default: return NF_GGML_F32;
    }
}

/* The output bytes of t in type (its shape as it stands); false when a row
 * is not whole blocks of the type or the size leaves U64. */
static bool type_bytes(const ex_tensor *t, uint32_t type, uint64_t *out)
{
    uint64_t qk, bb, rows = t->R;
    if (!nf_ggml_type_size(type, &qk, &bb) || t->K % qk)
        return false;
    uint64_t rb;
    return nf_mul_u64(t->K / qk, bb, &rb) && nf_mul_u64(rb, rows, out);
}

/* The common format of t's runs and whether every run is whole rows of an
 * object of t's K (so rows can be moved or transcoded without decoding). */
static nf_format runs_format(const ex_ctx *x, const ex_tensor *t, bool *rows)
{
    nf_format f = NF_FMT_UNKNOWN;
    *rows = t->n_runs > 0;
    for (size_t i = 0; i < t->n_runs; i++) {
        const nf_object *o = &x->c->objects[t->runs[i].obj];
        /* a contiguous object's elements read as rows of K wherever K
         * divides the run; a rank-2 layout's rows are its own */
        bool contiguous = o->layout == NF_LAY_CONTIGUOUS_LE_V1;
        uint64_t cols = o->rank ? o->dims[o->rank - 1] : 1;
        if ((!contiguous && cols != t->K) || t->runs[i].e0 % t->K || t->runs[i].n % t->K ||
            o->layout != x->c->objects[t->runs[0].obj].layout)
            *rows = false;
        if (i == 0)
            f = o->format;
        else if (f != o->format)
            return NF_FMT_UNKNOWN;
    }
    return f;
}

/* Decide how t is written when it is free to take any type (generated
 * GGUFs, and changed tensors of a GGUF-origin artifact). */
static bool decide_type(ex_ctx *x, ex_tensor *t)
{
    bool rows;
    nf_format f = runs_format(x, t, &rows);
    nf_layout l = t->n_runs ? x->c->objects[t->runs[0].obj].layout : NF_LAY_UNKNOWN;
    t->from = f;
    t->lossy = false;
    bool values = t->map || t->cv;
    uint32_t lt = f != NF_FMT_UNKNOWN ? lossless_type(f, l, t->K) : UINT32_MAX;
    if (t->force_f32) {
        t->type = NF_GGML_F32;
        t->path = EX_VALUES;
        if (lt == NF_GGML_F32 && !values && rows)
            t->path = EX_ROWS;
    } else if (lt != UINT32_MAX && lt != NF_GGML_I32 && !values && rows) {
        t->type = lt;
        t->path = EX_ROWS;
    } else {
        t->path = EX_VALUES;
        if (f == NF_FMT_BF16 && !t->map)
            t->type = NF_GGML_BF16;
        else if (f == NF_FMT_GGUF_F16 && !t->map)
            t->type = NF_GGML_F16;
        else if (f == NF_FMT_FP32 || t->map)
            t->type = NF_GGML_F32;
        else {
            t->type = fallback_type(x, t->K);
            if (x->o->fallback == NF_FALLBACK_Q8_0 && t->type == NF_GGML_F32)
                ex_warn(x, "warning: %s: tensor \"%s\": rows of %llu are not Q8_0 blocks of 32; "
                        "written F32 (exact)", x->file, t->name, (unsigned long long)t->K);
            t->lossy = !exact_in(f, t->type) && t->type != NF_GGML_F32;
            if (f == NF_FMT_UNKNOWN) {
                /* mixed sources: exact in F32 when each is */
                for (size_t i = 0; i < t->n_runs && !t->lossy; i++)
                    t->lossy = !exact_in(x->c->objects[t->runs[i].obj].format, t->type);
            }
        }
        if (f == NF_FMT_INT32 || t->type == NF_GGML_I32) {
            nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "", "tensor \"%s\": int32 values have "
                         "no place in this GGUF tensor", t->name);
            return false;
        }
    }
    /* a single whole object whose bytes are the tensor's: copied */
    if (t->path == EX_ROWS && !t->heads && t->n_runs == 1 && t->runs[0].e0 == 0 &&
        t->runs[0].n == x->c->objects[t->runs[0].obj].elements && native_type(f) == t->type &&
        type_bytes(t, t->type, &t->bytes) && x->c->objects[t->runs[0].obj].bytes == t->bytes)
        t->path = EX_COPY;
    if (!type_bytes(t, t->type, &t->bytes)) {
        nf_diag_addf(x->d, NF_C_RANGE, x->file, "", "tensor \"%s\": rows of %llu cannot be %s "
                     "blocks", t->name, (unsigned long long)t->K, nf_ggml_type_name(t->type, (char[32]){0}));
        return false;
    }
    return true;
}

/* ---- rows ------------------------------------------------------------------ */

/* The logical row stored at row s (the forward llama-rope order: llama.cpp's
 * row h*hd + 2*i + t holds Hugging Face row h*hd + t*hd/2 + i). */
static uint64_t logical_row(const ex_tensor *t, uint64_t s)
{
    if (!t->heads)
        return s;
    uint64_t hd = t->R / t->heads, h = s / hd, w = s % hd;
    return h * hd + (w % 2) * (hd / 2) + w / 2;
}

/* v-heads tiling: the stored column of logical column c (GGUF.md 3.3). */
static uint64_t tiled_col(const ex_tensor *t, uint64_t c)
{
    uint64_t r = t->cv / t->ck, head = c / t->chd, d = c % t->chd;
    return ((head % r) * t->ck + head / r) * t->chd + d;
}

/* ggml's quantize_row_q8_0_ref on n (a multiple of 32) values. */
static void quantize_q8_0(const float *v, uint64_t n, uint8_t *out)
{
    for (uint64_t b = 0; b < n / 32; b++) {
        float amax = 0;
        for (int j = 0; j < 32; j++)
            if (fabsf(v[b * 32 + j]) > amax)
                amax = fabsf(v[b * 32 + j]);
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        uint16_t h = nf_f32_to_fp16(d);
        memcpy(out + b * 34, &h, 2);
        for (int j = 0; j < 32; j++)
            out[b * 34 + 2 + j] = (uint8_t)(int8_t)roundf(v[b * 32 + j] * id);
    }
}

/* The values a row of type `type` decodes to (for the error of a lossy
 * fallback). */
static void decode_out(uint32_t type, const uint8_t *p, uint64_t n, float *v)
{
    for (uint64_t i = 0; i < n; i++) {
        uint16_t h;
        if (type == NF_GGML_F32) {
            memcpy(&v[i], p + 4 * i, 4);
        } else if (type == NF_GGML_F16 || type == NF_GGML_BF16) {
            memcpy(&h, p + 2 * i, 2);
            v[i] = type == NF_GGML_F16 ? nf_fp16_to_f32(h) : nf_bf16_to_f32(h);
        } else { /* Q8_0 */
            const uint8_t *b = p + (i / 32) * 34;
            memcpy(&h, b, 2);
            v[i] = (float)(int8_t)b[2 + i % 32] * nf_fp16_to_f32(h);
        }
    }
}

typedef struct {
    float *src, *tmp, *back;
    double sse, ssx, max_abs;
} row_scratch;

/* A code of row-split plane bits (w bits per code, LSB first). */
static unsigned plane_code(const uint8_t *p, uint64_t k, unsigned w)
{
    uint64_t bit = k * w;
    return (unsigned)(p[bit / 8] >> (bit % 8)) & ((1u << w) - 1);
}

/* Object row r of the loaded object (cte) transcoded into `type`, K
 * elements, without decoding (EX_ROWS). */
static void row_transcode(const ex_ctx *x, uint64_t r, uint32_t type, uint64_t K, uint8_t *dst)
{
    const nf_tensor_enc *te = &x->cte;
    const uint8_t *obj = x->cbuf;
    if (native_type(te->format) == type) {
        uint64_t rb;
        const uint8_t *src;
        if (te->layout == NF_LAY_CONTIGUOUS_LE_V1) {
            unsigned eb = nf_format_elem_bytes(te->format);
            rb = K * eb;
            src = obj + r * rb; /* K-aligned rows of the C-order elements */
        } else {
            rb = te->enc.plane[0].row_bytes;
            src = obj + te->enc.plane[0].offset + r * rb;
        }
        memcpy(dst, src, (size_t)rb);
        return;
    }
    const nf_plane *base = &te->enc.plane[0], *high = NULL, *sc = NULL;
    for (unsigned i = 1; i < te->enc.nplanes; i++) {
        if (!strcmp(te->enc.plane[i].name, "high"))
            high = &te->enc.plane[i];
        else if (!strcmp(te->enc.plane[i].name, "scales"))
            sc = &te->enc.plane[i];
    }
    const uint8_t *b = obj + base->offset + r * base->row_bytes;
    const uint8_t *h = high ? obj + high->offset + r * high->row_bytes : NULL;
    const uint8_t *s = obj + sc->offset + r * sc->row_bytes;
    for (uint64_t blk = 0; blk < K / 32; blk++) {
        uint64_t k0 = blk * 32;
        if (te->format == NF_FMT_Q8_G32_FP16) {
            uint8_t *o = dst + blk * 34;
            memcpy(o, s + 2 * blk, 2);
            memcpy(o + 2, b + k0, 32);
        } else if (te->format == NF_FMT_Q4_G64_FP16) {
            uint8_t *o = dst + blk * 18;
            memcpy(o, s + 2 * (k0 / 64), 2);
            for (int j = 0; j < 16; j++)
                o[2 + j] = (uint8_t)((plane_code(b, k0 + j, 4) ^ 8) |
                                     (plane_code(b, k0 + 16 + j, 4) ^ 8) << 4);
        } else { /* q5 */
            uint8_t *o = dst + blk * 22;
            uint32_t qh = 0;
            memcpy(o, s + 2 * (k0 / 64), 2);
            for (int j = 0; j < 32; j++) {
                unsigned q = (plane_code(b, k0 + j, 4) | plane_code(h, k0 + j, 1) << 4) ^ 16;
                qh |= (uint32_t)(q >> 4) << j;
                if (j < 16)
                    o[6 + j] = (uint8_t)(q & 15);
                else
                    o[6 + j - 16] |= (uint8_t)((q & 15) << 4);
            }
            uint8_t q4[4] = {(uint8_t)qh, (uint8_t)(qh >> 8), (uint8_t)(qh >> 16),
                             (uint8_t)(qh >> 24)};
            memcpy(o + 2, q4, 4);
        }
    }
}

/* Stored row s of t into dst (rb bytes). Returns 0 or -1. */
static int make_row(ex_ctx *x, ex_tensor *t, uint64_t s, uint8_t *dst, row_scratch *rs)
{
    uint64_t l = logical_row(t, s), K = t->K;
    if (t->path == EX_ROWS) {
        size_t i = run_of(t, l * K);
        const ex_run *r = &t->runs[i];
        if (ex_load(x, r->obj) < 0)
            return -1;
        row_transcode(x, (r->e0 + (l * K - t->run_at[i])) / K, t->type, K, dst);
        return 0;
    }
    if (ex_read_f32(x, t, l * K, (l + 1) * K, rs->src) < 0)
        return -1;
    float *v = rs->src;
    if (t->cv) {
        for (uint64_t c = 0; c < K; c++)
            rs->tmp[tiled_col(t, c)] = rs->src[c];
        v = rs->tmp;
    }
    nf_export_unmap(t->map, v, K);
    if (t->type == NF_GGML_Q8_0)
        quantize_q8_0(v, K, dst);
    else
        nf_export_to_ggml_float(t->type, v, K, dst);
    if (t->lossy) {
        decode_out(t->type, dst, K, rs->back);
        for (uint64_t k = 0; k < K; k++) {
            if (!isfinite(v[k]))
                continue;
            double e = (double)v[k] - (double)rs->back[k];
            rs->sse += e * e;
            rs->ssx += (double)v[k] * (double)v[k];
            if (fabs(e) > rs->max_abs)
                rs->max_abs = fabs(e);
        }
    }
    return 0;
}

/* Rows of t are made in chunks and handed to sink. */
typedef int (*row_sink)(void *ctx, const void *buf, size_t n);

static int make_rows(ex_ctx *x, ex_tensor *t, row_sink sink, void *ctx)
{
    uint64_t qk, bb;
    nf_ggml_type_size(t->type, &qk, &bb);
    uint64_t rb = t->K / qk * bb;
    uint64_t per = rb >= (1u << 20) ? 1 : (1u << 20) / rb; /* chunks that stay in cache */
    if (per > t->R)
        per = t->R;
    row_scratch rs = {0};
    uint8_t *buf = malloc((size_t)(per * rb) + 1);
    int rc = buf ? 0 : -1;
    if (t->path == EX_VALUES && !rc) {
        rs.src = malloc((size_t)t->K * sizeof(float));
        rs.tmp = malloc((size_t)t->K * sizeof(float));
        rs.back = malloc((size_t)t->K * sizeof(float));
        rc = rs.src && rs.tmp && rs.back ? 0 : -1;
    }
    if (rc)
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
    for (uint64_t s = 0; !rc && s < t->R; s += per) {
        uint64_t n = t->R - s < per ? t->R - s : per;
        for (uint64_t k = 0; !rc && k < n; k++)
            rc = make_row(x, t, s + k, buf + k * rb, &rs);
        if (!rc)
            rc = sink(ctx, buf, (size_t)(n * rb));
        if (!rc)
            ex_progress(x, n * rb);
    }
    if (!rc && t->lossy && x->o->lossy) {
        nf_export_lossy l = {t->name, t->from != NF_FMT_UNKNOWN ? nf_format_name(t->from) : "mixed",
                             NULL, sqrt(rs.sse / (double)(t->elements ? t->elements : 1)),
                             rs.sse > 0 ? 10.0 * log10(rs.ssx / rs.sse) : INFINITY, rs.max_abs};
        char tb[32];
        l.to = nf_ggml_type_name(t->type, tb);
        x->o->lossy(x->o->lossy_ctx, &l);
    }
    free(buf);
    free(rs.src);
    free(rs.tmp);
    free(rs.back);
    return rc;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct {
    ex_ctx *x;
    nf_output *out;
    const char *name;
} out_sink;

static int sink_out(void *ctx, const void *buf, size_t n)
{
    out_sink *s = ctx;
    int rc = nf_output_write(s->out, buf, n);
    if (rc) {
        nf_diag_addf(s->x->d, NF_C_IO, s->name, "", "write error: %s", strerror(-rc));
        return -1;
    }
    return 0;
}

typedef struct {
    ex_ctx *x;
    nf_output *out;
    const char *name;
    int err;
} copy_ctx;

static int copy_seg(void *ctx, size_t file, nf_rfile *src, int fd, uint64_t file_off,
                    uint64_t range_off, uint64_t len)
{
    (void)file;
    (void)range_off;
    copy_ctx *cc = ctx;
    int rc = nf_rfile_copy_to(src, fd, cc->out, file_off, len);
    if (rc) {
        cc->err = rc;
        if (rc > 0)
            nf_diag_addf(cc->x->d, rc == NF_COPY_SHORT ? NF_C_LENGTH : NF_C_IO, cc->x->file, "",
                         "cannot read the artifact: %s", rc == NF_COPY_SHORT
                         ? "a file ended inside an object" : "read error");
        else
            nf_diag_addf(cc->x->d, NF_C_IO, cc->name, "", "write error: %s", strerror(-rc));
        return -1;
    }
    ex_progress(cc->x, len);
    return 0;
}

/* Copy object obj's bytes to out with the kernel. */
static int copy_object(ex_ctx *x, size_t obj, nf_output *out, const char *outname)
{
    const nf_object *o = &x->c->objects[obj];
    copy_ctx cc = {x, out, outname, 0};
    int rc = nf_artifact_segments(x->a, o->offset, o->bytes, copy_seg, &cc, x->d);
    return rc ? -1 : 0;
}

int ex_write_tensor(ex_ctx *x, ex_tensor *t, nf_output *out, const char *outname)
{
    if (t->path == EX_COPY)
        return copy_object(x, t->runs[0].obj, out, outname);
    if (t->path == EX_ORIGINAL)
        return copy_object(x, t->original, out, outname);
    out_sink s = {x, out, outname};
    return make_rows(x, t, sink_out, &s);
}

static int sink_hash(void *ctx, const void *buf, size_t n)
{
    nf_sha256_update(ctx, buf, n);
    return 0;
}

int ex_hash_tensor(ex_ctx *x, ex_tensor *t, char hex[65])
{
    nf_sha256 *h = nf_sha256_new();
    if (!h) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return -1;
    }
    uint64_t done = x->done;
    int rc = make_rows(x, t, sink_hash, h);
    x->done = done; /* a check, not output */
    if (rc) {
        nf_sha256_free(h);
        return -1;
    }
    nf_sha256_final(h, hex);
    return 0;
}

/* Zeros to pad the output to position `to`. */
static int pad_to(ex_ctx *x, nf_output *out, uint64_t to, const char *outname)
{
    static const unsigned char z[4096];
    while (nf_output_pos(out) < to) {
        uint64_t k = to - nf_output_pos(out);
        int rc = nf_output_write(out, z, k > sizeof z ? sizeof z : (size_t)k);
        if (rc) {
            nf_diag_addf(x->d, NF_C_IO, outname, "", "write error: %s", strerror(-rc));
            return -1;
        }
    }
    return 0;
}

/* ---- the GGUF of a GGUF-origin artifact -------------------------------------- */

typedef struct {
    nf_gguf *g;                /* the prefix */
    char *prefix;
    size_t prefix_len;
    uint64_t file_bytes;       /* the source file's length (0: not recorded) */
    bool nonzero_padding;
    nf_jdoc *prov;
} origin;

static void origin_free(origin *og)
{
    nf_gguf_free(og->g);
    free(og->prefix);
    nf_jdoc_free(og->prov);
    memset(og, 0, sizeof *og);
}

/* provenance.converter.source.gguf of the catalog, parsed (NULL: none). */
static nf_jval *gguf_prov(ex_ctx *x, origin *og)
{
    if (!x->c->provenance_text)
        return NULL;
    nf_diags local = NF_DIAGS_INIT;
    og->prov = nf_jdoc_parse(x->c->provenance_text, x->c->provenance_len, 0, &local);
    nf_diags_free(&local);
    nf_jval *v = og->prov ? nf_jdoc_root(og->prov) : NULL;
    static const char *const path[] = {"converter", "source", "gguf", NULL};
    for (const char *const *p = path; *p && v; p++)
        v = nf_jobj_get(v, *p);
    return nf_jtype_of(v) == NF_J_OBJECT ? v : NULL;
}

/* A record's count: a non-negative integer below 2^53 (exact in a double),
 * else UINT64_MAX (which no check lets through). */
static uint64_t json_count(nf_jval *v)
{
    double d = nf_jdouble(v);
    return nf_jtype_of(v) == NF_J_INT && d >= 0 && d < 9007199254740992.0 ? (uint64_t)d
                                                                            : UINT64_MAX;
}

/* Parse a record's "rows" [[trow, prow, n], ...]: runs of object obj with
 * cols K, in tensor row order. */
static bool record_rows(ex_tensor *t, size_t obj, nf_jval *rows, uint64_t K)
{
    size_t n = nf_jarr_len(rows);
    t->runs = calloc(n + 1, sizeof *t->runs);
    if (!t->runs)
        return false;
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        nf_jval *s = nf_jarr_get(rows, i);
        if (nf_jarr_len(s) != 3)
            return false;
        uint64_t trow = json_count(nf_jarr_get(s, 0)), prow = json_count(nf_jarr_get(s, 1));
        uint64_t m = json_count(nf_jarr_get(s, 2)), e0, n;
        if (trow != at || !nf_mul_u64(prow, K, &e0) || !nf_mul_u64(m, K, &n) ||
            !nf_add_u64(at, m, &at))
            return false;
        t->runs[t->n_runs++] = (ex_run){obj, e0, n};
    }
    return true;
}

/* The tensors of the source GGUF with their records. False when the
 * records do not describe the prefix (the artifact is then exported as a
 * generated GGUF); diagnostics only for I/O. */
static bool origin_tensors(ex_ctx *x, origin *og, nf_jval *src)
{
    nf_jval *recs = nf_jobj_get(src, "tensors");
    const nf_gguf *g = og->g;
    if (nf_jtype_of(recs) != NF_J_ARRAY || nf_jarr_len(recs) != g->n_tensors)
        return false;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const nf_gguf_tensor *gt = &g->tensors[i];
        nf_jval *r = nf_jarr_get(recs, i);
        const char *name = nf_jstr(nf_jobj_get(r, "name"), NULL);
        if (!name || strcmp(name, gt->name))
            return false;
        nf_jval *ov = nf_jobj_get(r, "object");
        const char *oid = nf_jobj_has(r, "object") ? nf_jstr(ov, NULL) : name;
        const char *sha = nf_jstr(nf_jobj_get(r, "sha256"), NULL);
        ex_tensor t;
        memset(&t, 0, sizeof t);
        t.name = strdup(gt->name);
        t.n_dims = gt->n_dims;
        memcpy(t.ne, gt->ne, sizeof t.ne);
        t.elements = gt->elements;
        t.K = gt->ne[0];
        t.R = t.K ? t.elements / t.K : 0;
        t.src_type = gt->type;
        t.src_offset = gt->offset;
        t.original = SIZE_MAX;
        t.force_f32 = false;
        if (sha && strlen(sha) == 64)
            memcpy(t.sha, sha, 65);
        nf_jval *up = nf_jobj_get(r, "unpermute");
        if (up)
            t.heads = json_count(nf_jobj_get(up, "heads"));
        const char *map = nf_jstr(nf_jobj_get(r, "map"), NULL);
        t.map = !map ? NF_VMAP_NONE : !strcmp(map, "minus-one") ? NF_VMAP_MINUS_ONE
              : !strcmp(map, "log-neg") ? NF_VMAP_LOG_NEG : (nf_value_map)-1;
        nf_jval *cols = nf_jobj_get(r, "columns");
        if (cols) {
            t.ck = json_count(nf_jobj_get(cols, "k_heads"));
            t.cv = json_count(nf_jobj_get(cols, "v_heads"));
            t.chd = json_count(nf_jobj_get(cols, "head_dim"));
        }
        /* transforms that fit the tensor (heads of an even number of rows,
         * v heads a multiple of the k heads covering every column), or the
         * record is not one an import wrote */
        uint64_t vk;
        bool fits = (int)t.map >= 0 &&
                    (!up || (t.heads && t.heads <= t.R && t.R % t.heads == 0 &&
                             (t.R / t.heads) % 2 == 0)) &&
                    (!cols || (t.ck && t.chd && t.cv % t.ck == 0 &&
                               nf_mul_u64(t.cv, t.chd, &vk) && vk == t.K));
        const char *orig = nf_jstr(nf_jobj_get(r, "original"), NULL);
        if (orig)
            t.original = nf_catalog_find(x->c, orig);
        if (t.original != SIZE_MAX && x->c->objects[t.original].kind != NF_OBJ_TENSOR)
            t.original = SIZE_MAX;
        size_t obj = oid ? nf_catalog_find(x->c, oid) : SIZE_MAX;
        bool ok = t.name != NULL && fits;
        if (ok && obj != SIZE_MAX && x->c->objects[obj].kind == NF_OBJ_TENSOR) {
            nf_jval *rows = nf_jobj_get(r, "rows");
            if (rows)
                ok = record_rows(&t, obj, rows, t.K);
            else if ((t.runs = malloc(sizeof *t.runs)))
                t.runs[t.n_runs++] = (ex_run){obj, 0, x->c->objects[obj].elements};
            else
                ok = false;
            ok = ok && ex_finish_runs(x, &t);
        } else if (ok) {
            t.n_runs = 0; /* no object holds it: left out of a regenerated file */
            t.changed = true;
        }
        if (!ok || !ex_add_tensor(x, &t)) {
            free(t.name);
            free(t.runs);
            free(t.run_at);
            return false;
        }
    }
    return true;
}

/* Can t be written in its source type, and is it then the source's bytes?
 * Sets t->path and t->bytes for the source type; *same when the bytes are
 * shown (digests) or computed (hashing what would be written) to be the
 * recorded ones. */
static int check_unchanged(ex_ctx *x, ex_tensor *t, char (*digests)[65], bool *same)
{
    *same = false;
    if (!t->n_runs || !t->sha[0])
        return 0;
    t->type = t->src_type;
    if (!type_bytes(t, t->type, &t->bytes))
        return 0;
    bool rows;
    nf_format f = runs_format(x, t, &rows);
    nf_layout l = x->c->objects[t->runs[0].obj].layout;
    t->from = f;
    /* the original bytes, when the object they were mapped into is as the
     * import made it (re-applying its map to them gives that object) */
    if (t->original != SIZE_MAX && t->n_runs == 1) {
        const nf_object *oo = &x->c->objects[t->original], *mo = &x->c->objects[t->runs[0].obj];
        if (strcmp(digests[t->original], t->sha) != 0)
            return 0;
        /* the mapped object from the original bytes, as the import computes it */
        ex_tensor probe = *t;
        ex_run run = {t->original, 0, oo->elements};
        probe.runs = &run;
        probe.n_runs = 1;
        uint64_t at[2] = {0, oo->elements};
        probe.run_at = at;
        probe.map = NF_VMAP_NONE;
        probe.heads = 0;
        probe.cv = 0;
        float *v = malloc((size_t)oo->elements * sizeof *v + 1);
        nf_tensor_enc te;
        uint8_t *enc = NULL;
        int rc = v ? ex_read_f32(x, &probe, 0, oo->elements, v) : -1;
        if (!rc && nf_tensor_enc_init(&te, mo->format, mo->layout, mo->dims, mo->rank, 1, NULL) ==
                       NF_ENC_OK && (enc = malloc((size_t)te.enc.encoded_bytes + 1))) {
            for (uint64_t k = 0; k < oo->elements; k++)
                v[k] = t->map == NF_VMAP_MINUS_ONE ? v[k] - 1.0f
                     : t->map == NF_VMAP_LOG_NEG ? (float)log(-(double)v[k]) : v[k];
            nf_encode_opts eo = NF_ENCODE_OPTS_INIT;
            eo.allow_nonfinite = true;
            if (nf_encode_f32(&te, v, enc, te.enc.encoded_bytes, &eo, NULL) == 0 &&
                ex_load(x, t->runs[0].obj) == 0 && te.enc.encoded_bytes == mo->bytes &&
                memcmp(enc, x->cbuf, (size_t)mo->bytes) == 0) {
                t->path = EX_ORIGINAL;
                *same = true;
            }
        }
        free(v);
        free(enc);
        return rc;
    }
    uint32_t nt = native_type(f);
    if (nt == t->type && !t->heads && !t->map && !t->cv && t->n_runs == 1 &&
        t->runs[0].e0 == 0 && t->runs[0].n == x->c->objects[t->runs[0].obj].elements &&
        x->c->objects[t->runs[0].obj].bytes == t->bytes) {
        t->path = EX_COPY;
        *same = strcmp(digests[t->runs[0].obj], t->sha) == 0;
        return 0;
    }
    uint32_t lt = f != NF_FMT_UNKNOWN ? lossless_type(f, l, t->K) : UINT32_MAX;
    if (lt == t->type && rows && !t->map && !t->cv)
        t->path = EX_ROWS;
    else if (t->type == NF_GGML_F32 || t->type == NF_GGML_F16 || t->type == NF_GGML_BF16)
        t->path = EX_VALUES;
    else
        return 0;
    t->lossy = false;
    char hex[65];
    if (ex_hash_tensor(x, t, hex) < 0)
        return -1;
    *same = strcmp(hex, t->sha) == 0;
    return 0;
}

void ex_kv_raw(const char *prefix, const nf_gguf_kv *kv, const char **p, size_t *n)
{
    uint64_t start = kv->value_offset - 4 - strlen(kv->key) - 8;
    *p = prefix + start;
    *n = (size_t)(kv->value_offset + kv->value_bytes - start);
}

/* The header of a GGUF: magic, version 3, counts, key/values (kvs, n_kv of
 * them) and the tensor infos of the tensors kept, their offsets laid out
 * in order at `align`; sets each tensor's offset (from the data section) and
 * returns the data section's offset in *data. */
static bool gguf_header(ex_ctx *x, const ex_buf *kvs, uint64_t n_kv, uint64_t align, ex_buf *h,
                        uint64_t *data)
{
    uint64_t n = 0;
    for (size_t i = 0; i < x->n_t; i++)
        n += x->t[i].n_runs > 0;
    eb_put(h, "GGUF", 4);
    eb_u32(h, 3);
    eb_u64(h, n);
    eb_u64(h, n_kv);
    eb_put(h, kvs->p, kvs->n);
    uint64_t off = 0;
    for (size_t i = 0; i < x->n_t; i++) {
        ex_tensor *t = &x->t[i];
        if (!t->n_runs)
            continue;
        for (unsigned k = 0; k < t->n_dims; k++)
            if (t->ne[k] > INT64_MAX) {
                nf_diag_addf(x->d, NF_C_RANGE, x->file, "", "tensor \"%s\": dimension %llu is "
                             "more than a GGUF holds", t->name, (unsigned long long)t->ne[k]);
                return false;
            }
        eb_str(h, t->name, strlen(t->name));
        eb_u32(h, t->n_dims);
        for (unsigned k = 0; k < t->n_dims; k++)
            eb_u64(h, t->ne[k]);
        eb_u32(h, t->type);
        t->offset = off;
        eb_u64(h, off);
        if (!nf_add_u64(off, t->bytes, &off) || !nf_align_up_u64(off, align, &off)) {
            nf_diag_addf(x->d, NF_C_RANGE, x->file, "", "the GGUF's size leaves U64");
            return false;
        }
    }
    if (h->oom || !nf_align_up_u64(h->n, align, data)) {
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return false;
    }
    return true;
}

/* A valid GGUF tensor name: 1..63 bytes of UTF-8 (ggml's GGML_MAX_NAME is
 * 64 with its NUL), no U+0000. */
static bool gguf_name_ok(const char *s)
{
    size_t n = strlen(s);
    return n > 0 && n < 64 && nf_utf8_invalid_at(s, n) == n;
}

typedef struct {
    bool identical;
    const ex_buf *kvs;     /* regenerated: key/values */
    uint64_t n_kv, align;
    const origin *og;      /* identical: the prefix is written as it is */
} gguf_plan;

/* Write the GGUF: header, then each tensor at its offset, then the tail. */
/* qsort_r order of tensor indices by source offset, then index (the sort
 * then gives one order whatever qsort does with ties). */
static int by_src_offset(const void *a, const void *b, void *ctx)
{
    const ex_tensor *t = ctx;
    size_t i = *(const size_t *)a, k = *(const size_t *)b;
    if (t[i].src_offset != t[k].src_offset)
        return t[i].src_offset < t[k].src_offset ? -1 : 1;
    return (i > k) - (i < k);
}

static int gguf_write(ex_ctx *x, const gguf_plan *gp)
{
    const nf_export_opts *o = x->o;
    ex_buf h = {0};
    uint64_t data = 0;
    for (size_t i = 0; i < x->n_t; i++)
        if (x->t[i].n_runs && !gguf_name_ok(x->t[i].name)) {
            nf_diag_addf(x->d, NF_C_SCHEMA, x->file, "", "\"%s\" is not a GGUF tensor name "
                         "(1 to 63 bytes of UTF-8)", x->t[i].name);
            return -1;
        }
    if (!gp->identical && !gguf_header(x, gp->kvs, gp->n_kv, gp->align, &h, &data)) {
        free(h.p);
        return -1;
    }
    x->total = 0;
    for (size_t i = 0; i < x->n_t; i++)
        x->total += x->t[i].n_runs ? x->t[i].bytes : 0;
    const char *path = o->out && strcmp(o->out, "-") ? o->out : NULL;
    nf_file_out *fo = nf_file_out_open(path, o->force, o->inputs, o->n_inputs, x->d);
    if (!fo) {
        free(h.p);
        return -1;
    }
    const char *oname = nf_file_out_name(fo);
    nf_output *out = nf_output_open_fd(nf_file_out_fd(fo), 0, false);
    int rc = out ? 0 : -1;
    if (rc)
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
    /* the tensors in the order of their offsets */
    size_t *ord = malloc((x->n_t + 1) * sizeof *ord), n = 0;
    if (!ord)
        rc = -1;
    for (size_t i = 0; !rc && i < x->n_t; i++)
        if (x->t[i].n_runs)
            ord[n++] = i;
    if (!rc && gp->identical) {
        /* offsets as the source has them */
        qsort_r(ord, n, sizeof *ord, by_src_offset, x->t);
    }
    if (!rc) {
        const void *hp = gp->identical ? (const void *)gp->og->prefix : h.p;
        size_t hn = gp->identical ? gp->og->prefix_len : h.n;
        rc = nf_output_write(out, hp, hn);
        if (rc) {
            nf_diag_addf(x->d, NF_C_IO, oname, "", "write error: %s", strerror(-rc));
            rc = -1;
        }
    }
    for (size_t k = 0; !rc && k < n; k++) {
        ex_tensor *t = &x->t[ord[k]];
        uint64_t at = gp->identical ? t->src_offset : data + t->offset;
        rc = pad_to(x, out, at, oname);
        if (!rc)
            rc = ex_write_tensor(x, t, out, oname);
        if (!rc) {
            x->r->tensors++;
            if (t->path == EX_COPY || t->path == EX_ORIGINAL)
                x->r->copied += t->bytes;
            x->r->lossy += t->lossy;
        }
    }
    if (!rc && gp->identical && gp->og->file_bytes)
        rc = pad_to(x, out, gp->og->file_bytes, oname);
    else if (!rc && n) {
        /* gguf-py pads the last tensor to the alignment too */
        uint64_t end = 0;
        nf_align_up_u64(nf_output_pos(out), gp->align, &end);
        rc = pad_to(x, out, end, oname);
    }
    if (!rc) {
        int f = nf_output_finish(out);
        if (f) {
            nf_diag_addf(x->d, NF_C_IO, oname, "", "write error: %s", strerror(-f));
            rc = -1;
        }
    }
    if (out)
        x->r->bytes = nf_output_pos(out);
    nf_output_close(out);
    free(ord);
    free(h.p);
    if (rc) {
        nf_file_out_abort(fo);
        return -1;
    }
    return nf_file_out_finish(fo, o->sync, x->d);
}

int ex_verify(ex_ctx *x)
{
    const nf_catalog *c = x->c;
    if (!x->o->verify)
        return 0;
    char (*dg)[65] = calloc(c->n_objects + 1, sizeof *dg);
    bool *want = calloc(c->n_objects + 1, sizeof *want);
    int rc = dg && want ? 0 : -1;
    if (rc)
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
    for (size_t i = 0; !rc && i < c->n_objects; i++)
        want[i] = c->objects[i].has_digest;
    if (!rc && nf_digest_objects(x->a, want, dg, 0, NULL, NULL, x->d) < 0)
        rc = -1;
    for (size_t i = 0; !rc && i < c->n_objects; i++) {
        char hex[65];
        if (!want[i])
            continue;
        nf_object_digest_hex(&c->objects[i], hex);
        if (strcmp(hex, dg[i]) != 0) {
            char ptr[48];
            snprintf(ptr, sizeof ptr, "/objects/%zu", i);
            nf_diag_addf(x->d, NF_C_DIGEST, x->file, ptr, "object \"%s\": sha256 %s, "
                         "metadata.integrity says %s", c->objects[i].id, dg[i], hex);
        }
    }
    free(dg);
    free(want);
    return rc || nf_diags_exit(x->d) ? -1 : 0;
}

/* Digests of every object: metadata.integrity's, else hashed now. */
static char (*object_digests(ex_ctx *x))[65]
{
    const nf_catalog *c = x->c;
    char (*dg)[65] = calloc(c->n_objects + 1, sizeof *dg);
    bool *want = calloc(c->n_objects + 1, sizeof *want);
    size_t missing = 0;
    if (!dg || !want) {
        free(dg);
        free(want);
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < c->n_objects; i++) {
        if (c->objects[i].has_digest)
            nf_object_digest_hex(&c->objects[i], dg[i]);
        else if (c->objects[i].kind == NF_OBJ_TENSOR)
            missing += want[i] = true;
    }
    if (missing && nf_digest_objects(x->a, want, dg, 0, NULL, NULL, x->d) < 0) {
        free(dg);
        dg = NULL;
    }
    free(want);
    return dg;
}

/* A GGUF-origin artifact: byte for byte when nothing changed, else the
 * source's key/values with the tensors as they are now. 1 when the
 * artifact is not one (records missing or not matching its prefix). */
static int export_origin(ex_ctx *x)
{
    size_t text = nf_catalog_component(x->c, NF_TEXT_COMPONENT);
    size_t pr = ex_resource(x->c, text, NF_GGUF_PREFIX_ROLE);
    if (pr == SIZE_MAX || x->o->n_components)
        return 1;
    origin og = {0};
    nf_jval *src = gguf_prov(x, &og);
    if (!src) {
        origin_free(&og);
        return 1;
    }
    og.prefix = ex_read_resource(x, pr, &og.prefix_len);
    if (!og.prefix) {
        origin_free(&og);
        return -1;
    }
    nf_diags local = NF_DIAGS_INIT;
    og.g = nf_gguf_open_prefix(og.prefix, og.prefix_len, x->file, &local);
    nf_diags_move(x->d, &local);
    nf_diags_free(&local);
    if (!og.g) {
        origin_free(&og);
        return -1;
    }
    og.file_bytes = (uint64_t)nf_jdouble(nf_jobj_get(src, "file_bytes"));
    og.nonzero_padding = nf_jobj_has(src, "nonzero_padding");
    if (!origin_tensors(x, &og, src)) {
        ex_tensors_free(x);
        origin_free(&og);
        if (nf_diags_exit(x->d))
            return -1;
        ex_warn(x, "warning: %s: its GGUF records do not describe its gguf.prefix; written as "
                "a generated GGUF", x->file);
        return 1;
    }
    x->r->from_gguf = true;
    char (*dg)[65] = object_digests(x);
    int rc = dg ? 0 : -1;
    bool all = !og.nonzero_padding && og.file_bytes;
    for (size_t i = 0; !rc && i < x->n_t; i++) {
        bool same;
        rc = check_unchanged(x, &x->t[i], dg, &same);
        x->t[i].changed = !same;
        all &= same;
    }
    free(dg);
    gguf_plan gp = {.identical = all, .og = &og, .align = og.g->alignment};
    ex_buf kvs = {0};
    if (!rc && !all) {
        /* regenerated: the changed tensors take the types their objects map to */
        bool type_changed = false;
        for (size_t i = 0; !rc && i < x->n_t; i++) {
            ex_tensor *t = &x->t[i];
            if (!t->changed)
                continue;
            if (!ex_note_name(&x->r->changed, &x->r->n_changed, t->name))
                rc = -1;
            else if (t->n_runs) {
                t->force_f32 = t->src_type == NF_GGML_F32 && f32_only(t->name, t->n_dims);
                if (!decide_type(x, t))
                    rc = -1;
            }
            type_changed |= !t->n_runs || t->type != t->src_type;
        }
        uint64_t n_kv = 0;
        for (size_t i = 0; !rc && i < og.g->n_kv; i++) {
            const nf_gguf_kv *kv = &og.g->kv[i];
            if (type_changed && !strcmp(kv->key, "general.file_type"))
                continue; /* no longer true: llama.cpp guesses it from the tensors */
            const char *p;
            size_t n;
            ex_kv_raw(og.prefix, kv, &p, &n);
            eb_put(&kvs, p, n);
            n_kv++;
        }
        gp.kvs = &kvs;
        gp.n_kv = n_kv;
        if (og.nonzero_padding)
            ex_warn(x, "warning: %s: the source GGUF's padding held nonzero bytes; written as "
                    "zeros", x->file);
    }
    if (!rc)
        rc = gguf_write(x, &gp);
    x->r->identical = !rc && all;
    free(kvs.p);
    origin_free(&og);
    return rc;
}

/* ---- a generated GGUF ------------------------------------------------------------ */

static int export_generated(ex_ctx *x)
{
    if (!ex_select(x, true) || !ex_plans(x, true))
        return -1;
    const nf_arch_plan *text = &x->plans[0];
    if (!text->gguf_arch) {
        nf_diag_addf(x->d, NF_C_UNSUPPORTED, x->file, "/components/text/config/architectures",
                     "%s has no GGUF names in this build (GGUF export takes llama, qwen2, qwen3, "
                     "qwen3moe, qwen3next, qwen35 and qwen35moe)", text->architecture);
        return -1;
    }
    bool mtp = x->n_plans > 1;
    ex_buf kvs = {0};
    uint64_t n_kv = 0;
    if (!ex_arch_kvs(x, text, mtp, &kvs, &n_kv) || !ex_plan_tensors(x, NF_NAMING_GGUF)) {
        free(kvs.p);
        return -1;
    }
    for (size_t i = 0; i < x->n_t; i++)
        if (!decide_type(x, &x->t[i])) {
            free(kvs.p);
            return -1;
        }
    /* the vocabulary's size: the embedding's rows */
    uint64_t vocab = 0;
    for (size_t i = 0; i < x->n_t; i++)
        if (!strcmp(x->t[i].name, "token_embd.weight"))
            vocab = x->t[i].R;
    bool quant = false;
    for (size_t i = 0; i < x->n_t; i++)
        quant |= x->t[i].type != NF_GGML_F32 && x->t[i].type != NF_GGML_F16 &&
                 x->t[i].type != NF_GGML_BF16;
    if (!ex_tokenizer_kvs(x, text->gguf_arch, vocab, &kvs, &n_kv)) {
        free(kvs.p);
        return -1;
    }
    if (quant) {
        eb_kv_u32(&kvs, "general.quantization_version", 2);
        n_kv++;
    }
    if (kvs.oom) {
        free(kvs.p);
        nf_diag_add(x->d, NF_C_IO, "", "out of memory");
        return -1;
    }
    gguf_plan gp = {.identical = false, .kvs = &kvs, .n_kv = n_kv, .align = 32};
    int rc = gguf_write(x, &gp);
    free(kvs.p);
    return rc;
}

void ex_init(ex_ctx *x, const nf_export_opts *o, nf_export_result *r, nf_diags *d)
{
    memset(r, 0, sizeof *r);
    *x = (ex_ctx){.o = o, .d = d, .a = o->a, .c = nf_artifact_catalog(o->a), .r = r,
                  .cobj = SIZE_MAX, .file = nf_artifact_path(o->a)};
}

int nf_export_gguf(const nf_export_opts *o, nf_export_result *r, nf_diags *d)
{
    ex_ctx x;
    ex_init(&x, o, r, d);
    /* the output is checked before any work (DESIGN 3), and again when written */
    const char *path = o->out && strcmp(o->out, "-") ? o->out : NULL;
    if (path ? nf_output_file_check(path, o->force, o->inputs, o->n_inputs, d) < 0
             : nf_stdout_check(o->inputs, o->n_inputs, d) < 0)
        return -1;
    int rc = ex_verify(&x) ? -1 : export_origin(&x);
    if (rc == 1) {
        ex_tensors_free(&x);
        rc = export_generated(&x);
    }
    ex_tensors_free(&x);
    nf_arch_plans_free(x.plans, x.n_plans);
    return rc ? -1 : 0;
}
