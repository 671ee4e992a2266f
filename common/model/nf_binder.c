/* nf_binder.c — the architecture binder: the builder the modules in
 * common/model/arch/ fill, the dispatch on config.architectures[0], and the
 * checks of spec 11.3 over an artifact's bindings and uses. */
#include "nf_binder.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/nf_arch.h"
#include "nf_fp.h"
#include "nf_json.h"
#include "nf_select.h"
#include "nf_util.h"

/* ---- the module table ------------------------------------------------------ */

static const struct {
    const char *name;
    int (*build)(nf_ab *b);
    const char *gguf_arch;   /* llama.cpp general.architecture, or NULL */
    const char *target_arch; /* the target's architecture, or NULL: no target */
    const char *target_alt;  /* another architecture the target may have */
} modules[] = {
    {"LlamaForCausalLM", nf_arch_llama, "llama", NULL, NULL},
    {"Qwen2ForCausalLM", nf_arch_qwen2, "qwen2", NULL, NULL},
    {"Qwen3ForCausalLM", nf_arch_qwen3, "qwen3", NULL, NULL},
    {"Qwen3MoeForCausalLM", nf_arch_qwen3_moe, "qwen3moe", NULL, NULL},
    {"Qwen3NextForCausalLM", nf_arch_qwen3_next, "qwen3next", NULL, NULL},
    {"Qwen3_5ForCausalLM", nf_arch_qwen3_5, "qwen35", NULL, NULL},
    {"Qwen3_5MoeForCausalLM", nf_arch_qwen3_5_moe, "qwen35moe", NULL, NULL},
    {"Qwen3NextMTP", nf_arch_mtp, NULL, "Qwen3NextForCausalLM", NULL},
    {"Qwen3_5MTP", nf_arch_mtp, NULL, "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM"},
};
#define N_MODULES (sizeof modules / sizeof *modules)

static int module_of(const char *arch)
{
    for (size_t i = 0; arch && i < N_MODULES; i++)
        if (strcmp(modules[i].name, arch) == 0)
            return (int)i;
    return -1;
}

bool nf_arch_known(const char *architecture)
{
    return module_of(architecture) >= 0;
}

const char *nf_arch_target_architecture(const char *architecture)
{
    int m = module_of(architecture);
    return m >= 0 ? modules[m].target_arch : NULL;
}

/* ---- the builder ------------------------------------------------------------ */

void nf_ab_fail(nf_ab *b, nf_code code, const char *key, const char *fmt, ...)
{
    char *ptr = key ? nf_ptr_join(b->cfg_ptr, key, strlen(key)) : NULL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    nf_diag_add(b->d, code, ptr ? ptr : b->cfg_ptr, "%s", msg);
    free(ptr);
    b->failed = true;
}

nf_jval *nf_ab_get(nf_ab *b, const char *key)
{
    return nf_jobj_get(b->cfg, key);
}

bool nf_ab_u64(nf_ab *b, const char *key, bool required, uint64_t def, uint64_t min,
               uint64_t *out)
{
    nf_jval *v = nf_jobj_get(b->cfg, key);
    if (!v || nf_jtype_of(v) == NF_J_NULL) {
        if (required) {
            nf_ab_fail(b, NF_C_SCHEMA, key, "the %s config needs \"%s\"", b->p->architecture, key);
            return false;
        }
        *out = def;
        return true;
    }
    char *rel = nf_ptr_join("", key, strlen(key));
    nf_ju64_status st = nf_jval_u64(b->doc, v, rel, out);
    free(rel);
    if (st == NF_JU64_NOT_INTEGER) {
        nf_ab_fail(b, NF_C_SCHEMA, key, "\"%s\" must be an integer", key);
        return false;
    }
    if (st != NF_JU64_OK || *out < min) {
        nf_ab_fail(b, NF_C_RANGE, key, "\"%s\" must be an integer of at least %llu", key,
                   (unsigned long long)min);
        return false;
    }
    return true;
}

bool nf_ab_bool(nf_ab *b, const char *key, bool def, bool *out)
{
    nf_jval *v = nf_jobj_get(b->cfg, key);
    if (!v || nf_jtype_of(v) == NF_J_NULL) {
        *out = def;
        return true;
    }
    if (nf_jtype_of(v) != NF_J_BOOL) {
        nf_ab_fail(b, NF_C_SCHEMA, key, "\"%s\" must be true or false", key);
        return false;
    }
    *out = nf_jbool(v);
    return true;
}

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

static char *prefixed(nf_ab *b, const char *suffix)
{
    char *s = NULL;
    if (suffix[0] == '/') /* a root name (proposal/...) */
        return strdup(suffix + 1);
    if (asprintf(&s, "%s/%s", b->comp, suffix) < 0)
        return NULL;
    return s;
}

size_t nf_ab_param(nf_ab *b, unsigned rank, const uint64_t *dims, const char *input_suffix,
                   bool policy, const char *fmt, ...)
{
    if (b->failed)
        return SIZE_MAX;
    nf_arch_plan *p = b->p;
    if (p->n_params >= NF_ARCH_MAX_PARAMS) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "the config derives more than %u parameters",
                   NF_ARCH_MAX_PARAMS);
        return SIZE_MAX;
    }
    if (p->n_params == b->cap_params) {
        size_t cap = b->cap_params ? b->cap_params * 2 : 256;
        nf_param *v = realloc(p->params, cap * sizeof *v);
        if (!v) {
            nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
            return SIZE_MAX;
        }
        p->params = v;
        b->cap_params = cap;
    }
    nf_param *q = &p->params[p->n_params];
    memset(q, 0, sizeof *q);
    q->group = SIZE_MAX;
    q->want_format = NF_FMT_UNKNOWN;
    for (int n = 0; n < NF_NAMING_COUNT_; n++)
        q->src[n].tensor = SIZE_MAX;
    va_list ap;
    va_start(ap, fmt);
    char *suffix = vfmt(fmt, ap);
    va_end(ap);
    q->name = suffix ? prefixed(b, suffix) : NULL;
    free(suffix);
    q->input = input_suffix ? prefixed(b, input_suffix) : NULL;
    q->needs_policy = policy;
    q->rank = rank;
    memcpy(q->dims, dims, rank * sizeof *dims);
    if (!q->name || (input_suffix && !q->input)) {
        free(q->name);
        free(q->input);
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return SIZE_MAX;
    }
    p->n_params++;
    if (!nf_shape_elements(dims, rank, &q->elements)) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "%s: the element count overflows U64", q->name);
        return SIZE_MAX;
    }
    return p->n_params - 1;
}

size_t nf_ab_tensor(nf_ab *b, nf_naming n, unsigned rank, const uint64_t *dims,
                    uint64_t unpermute_heads, const char *fmt, ...)
{
    if (b->failed)
        return SIZE_MAX;
    nf_arch_plan *p = b->p;
    if (p->n_tensors[n] == b->cap_tensors[n]) {
        size_t cap = b->cap_tensors[n] ? b->cap_tensors[n] * 2 : 256;
        nf_src_tensor *v = realloc(p->tensors[n], cap * sizeof *v);
        if (!v) {
            nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
            return SIZE_MAX;
        }
        p->tensors[n] = v;
        b->cap_tensors[n] = cap;
    }
    nf_src_tensor *t = &p->tensors[n][p->n_tensors[n]];
    memset(t, 0, sizeof *t);
    va_list ap;
    va_start(ap, fmt);
    t->name = vfmt(fmt, ap);
    va_end(ap);
    if (!t->name) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return SIZE_MAX;
    }
    t->rank = rank;
    memcpy(t->dims, dims, rank * sizeof *dims);
    t->unpermute_heads = unpermute_heads;
    p->n_tensors[n]++;
    if (!nf_shape_elements(dims, rank, &t->elements)) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "tensor %s: the element count overflows U64", t->name);
        return SIZE_MAX;
    }
    return p->n_tensors[n] - 1;
}

void nf_ab_map_whole(nf_ab *b, size_t param, nf_naming n, size_t t)
{
    if (b->failed || param == SIZE_MAX || t == SIZE_MAX)
        return;
    b->p->params[param].src[n].tensor = t;
}

void nf_ab_map_rows(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t first, uint64_t len,
                    uint64_t stride, uint64_t count)
{
    if (b->failed || param == SIZE_MAX || t == SIZE_MAX)
        return;
    const nf_src_tensor *st = &b->p->tensors[n][t];
    nf_src_map *m = &b->p->params[param].src[n];
    uint64_t rows = st->dims[0], cols = st->elements / rows;
    nf_erange *r = calloc(count ? count : 1, sizeof *r);
    if (!r) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    size_t nr = 0;
    for (uint64_t k = 0; k < count; k++) {
        uint64_t r0 = first + k * stride, r1 = r0 + len; /* all within rows, checked below */
        if (r1 > rows || r0 >= r1) {
            free(r);
            nf_ab_fail(b, NF_C_RANGE, NULL, "%s: rows [%llu, %llu) outside tensor %s",
                       b->p->params[param].name, (unsigned long long)r0,
                       (unsigned long long)r1, st->name);
            return;
        }
        if (nr && r[nr - 1].end == r0 * cols)
            r[nr - 1].end = r1 * cols; /* adjacent blocks join */
        else
            r[nr++] = (nf_erange){r0 * cols, r1 * cols};
    }
    free(m->ranges);
    m->tensor = t;
    m->ranges = r;
    m->n_ranges = nr;
}

void nf_ab_map_range(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t begin,
                     uint64_t end)
{
    if (b->failed || param == SIZE_MAX || t == SIZE_MAX)
        return;
    const nf_src_tensor *st = &b->p->tensors[n][t];
    nf_src_map *m = &b->p->params[param].src[n];
    if (begin >= end || end > st->elements) {
        nf_ab_fail(b, NF_C_RANGE, NULL, "%s: elements [%llu, %llu) outside tensor %s",
                   b->p->params[param].name, (unsigned long long)begin, (unsigned long long)end,
                   st->name);
        return;
    }
    nf_erange *r = malloc(sizeof *r);
    if (!r) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    *r = (nf_erange){begin, end};
    free(m->ranges);
    m->tensor = t;
    m->ranges = r;
    m->n_ranges = 1;
}

void nf_ab_map_tiled(nf_ab *b, size_t param, nf_naming n, size_t t, uint64_t lead,
                     uint64_t first, uint64_t hk, uint64_t hv, uint64_t hd)
{
    if (b->failed || param == SIZE_MAX || t == SIZE_MAX)
        return;
    const nf_src_tensor *st = &b->p->tensors[n][t];
    nf_src_map *m = &b->p->params[param].src[n];
    uint64_t rows = st->dims[0], cols = st->elements / rows, r = hv / hk; /* hk | hv: checked */
    if (lead > first || first > rows || hv * hd > rows - first) { /* hv*hd: a checked width */
        nf_ab_fail(b, NF_C_RANGE, NULL, "%s: %llu tiled heads of %llu rows from row %llu "
                   "outside tensor %s", b->p->params[param].name, (unsigned long long)hv,
                   (unsigned long long)hd, (unsigned long long)first, st->name);
        return;
    }
    nf_erange *v = calloc(hv + 1, sizeof *v);
    if (!v) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    size_t nr = 0;
    if (lead)
        v[nr++] = (nf_erange){0, lead * cols};
    for (uint64_t h = 0; h < hv; h++) {
        uint64_t r0 = first + ((h % r) * hk + h / r) * hd, r1 = r0 + hd;
        if (nr && v[nr - 1].end == r0 * cols)
            v[nr - 1].end = r1 * cols;
        else
            v[nr++] = (nf_erange){r0 * cols, r1 * cols};
    }
    free(m->ranges);
    m->tensor = t;
    m->ranges = v;
    m->n_ranges = nr;
}

void nf_ab_tensor_map(nf_ab *b, size_t t, nf_naming n, nf_value_map map)
{
    if (!b->failed && t != SIZE_MAX)
        b->p->tensors[n][t].map = map;
}

void nf_ab_tensor_tiled_columns(nf_ab *b, size_t t, nf_naming n, uint64_t hk, uint64_t hv,
                                uint64_t hd)
{
    if (b->failed || t == SIZE_MAX || hk == hv)
        return;
    nf_src_tensor *st = &b->p->tensors[n][t];
    st->tiled_k = hk;
    st->tiled_v = hv;
    st->tiled_hd = hd;
}

void nf_ab_share(nf_ab *b, size_t param, bool full, const char *name)
{
    if (b->failed || param == SIZE_MAX)
        return;
    char *s = full ? strdup(name) : prefixed(b, name);
    if (!s) {
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    b->p->params[param].shares = s;
}

void nf_ab_group(nf_ab *b, const size_t *members, size_t n, const char *fmt, ...)
{
    if (b->failed || n == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (members[i] == SIZE_MAX)
            return;
    nf_arch_plan *p = b->p;
    if (p->n_groups == b->cap_groups) {
        size_t cap = b->cap_groups ? b->cap_groups * 2 : 64;
        nf_fuse_group *v = realloc(p->groups, cap * sizeof *v);
        if (!v) {
            nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
            return;
        }
        p->groups = v;
        b->cap_groups = cap;
    }
    nf_fuse_group *g = &p->groups[p->n_groups];
    va_list ap;
    va_start(ap, fmt);
    char *suffix = vfmt(fmt, ap);
    va_end(ap);
    g->id = suffix ? prefixed(b, suffix) : NULL;
    free(suffix);
    g->members = malloc(n * sizeof *g->members);
    if (!g->id || !g->members) {
        free(g->id);
        free(g->members);
        nf_ab_fail(b, NF_C_IO, NULL, "out of memory");
        return;
    }
    memcpy(g->members, members, n * sizeof *members);
    g->n_members = n;
    for (size_t i = 0; i < n; i++)
        p->params[members[i]].group = p->n_groups;
    p->n_groups++;
}

/* ---- derive ----------------------------------------------------------------- */

void nf_arch_plan_free(nf_arch_plan *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_params; i++) {
        nf_param *q = &p->params[i];
        free(q->name);
        free(q->input);
        free(q->shares);
        for (int n = 0; n < NF_NAMING_COUNT_; n++)
            free(q->src[n].ranges);
    }
    for (int n = 0; n < NF_NAMING_COUNT_; n++) {
        for (size_t i = 0; i < p->n_tensors[n]; i++)
            free(p->tensors[n][i].name);
        free(p->tensors[n]);
    }
    for (size_t i = 0; i < p->n_groups; i++) {
        free(p->groups[i].id);
        free(p->groups[i].members);
    }
    free(p->params);
    free(p->groups);
    free(p->by_name);
    free(p->component);
    free(p->architecture);
    free(p->gguf_arch);
    memset(p, 0, sizeof *p);
}

static int by_name_cmp(const void *a, const void *b, void *ctx)
{
    const nf_param *v = ctx;
    return strcmp(v[*(const size_t *)a].name, v[*(const size_t *)b].name);
}

const nf_param *nf_arch_find(const nf_arch_plan *p, const char *name)
{
    if (!p || !p->by_name || !name)
        return NULL;
    size_t lo = 0, hi = p->n_params;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(p->params[p->by_name[mid]].name, name);
        if (c == 0)
            return &p->params[p->by_name[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

bool nf_arch_total_elements(const nf_arch_plan *p, uint64_t *out)
{
    uint64_t t = 0;
    for (size_t i = 0; i < p->n_params; i++)
        if (!p->params[i].shares && !nf_add_u64(t, p->params[i].elements, &t))
            return false;
    *out = t;
    return true;
}

/* architectures[0] of a parsed config, or NULL (with a diagnostic when
 * ptr is given). */
static const char *arch_of(nf_jval *cfg, nf_diags *d, const char *ptr)
{
    nf_jval *a = nf_jobj_get(cfg, "architectures");
    nf_jval *a0 = nf_jtype_of(a) == NF_J_ARRAY && nf_jarr_len(a) > 0 ? nf_jarr_get(a, 0) : NULL;
    size_t n = 0;
    const char *s = nf_jstr(a0, &n);
    /* the full string: "LlamaForCausalLM\u0000Qwen" is no Llama */
    bool nul = s && memchr(s, 0, n);
    if ((!s || nul) && d) {
        char *q = nf_ptr_join(ptr, "architectures", 13);
        char *q0 = q && nul ? nf_ptr_index(q, 0) : NULL;
        nf_diag_add(d, NF_C_SCHEMA, q0 ? q0 : q ? q : ptr, "%s",
                    nul ? "an architecture name must not contain U+0000"
                        : "config needs \"architectures\": a non-empty array of strings");
        free(q0);
        free(q);
    }
    return nul ? NULL : s;
}

static char *comp_cfg_ptr(const char *comp)
{
    char *a = nf_ptr_join("/components", comp, strlen(comp));
    char *b = a ? nf_ptr_join(a, "config", 6) : NULL;
    free(a);
    return b;
}

int nf_arch_derive(const nf_arch_input *in, nf_arch_plan *out, nf_diags *d)
{
    memset(out, 0, sizeof *out);
    nf_ab b;
    memset(&b, 0, sizeof b);
    b.p = out;
    b.d = d;
    b.in = in;
    b.comp = in->component;
    b.target = in->target_component;
    b.own_ptr = comp_cfg_ptr(in->component);
    nf_jdoc *tdoc = NULL;
    int rc = -1;
    out->component = strdup(in->component);
    if (!b.own_ptr || !out->component) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto done;
    }
    nf_diags local = NF_DIAGS_INIT;
    b.own_doc = nf_jdoc_parse(in->config_raw, in->config_len, 0, &local);
    if (!b.own_doc) {
        for (size_t i = 0; i < local.n; i++)
            nf_diag_add(d, local.v[i].code, b.own_ptr, "config: %s", local.v[i].message);
        nf_diags_free(&local);
        goto done;
    }
    nf_diags_free(&local);
    b.own_cfg = nf_jdoc_root(b.own_doc);
    if (nf_jtype_of(b.own_cfg) != NF_J_OBJECT) {
        nf_diag_add(d, NF_C_SCHEMA, b.own_ptr, "config must be an object");
        goto done;
    }
    const char *arch = arch_of(b.own_cfg, d, b.own_ptr);
    if (!arch)
        goto done;
    out->architecture = strdup(arch);
    int m = module_of(arch);
    if (m < 0) {
        char *q = nf_ptr_join(b.own_ptr, "architectures", 13);
        nf_diag_add(d, NF_C_UNSUPPORTED, q ? q : b.own_ptr,
                    "unknown architecture \"%s\" (known: LlamaForCausalLM, Qwen2ForCausalLM, "
                    "Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen3NextForCausalLM, "
                    "Qwen3_5ForCausalLM, Qwen3_5MoeForCausalLM, Qwen3NextMTP, Qwen3_5MTP)",
                    arch);
        free(q);
        goto done;
    }
    if (modules[m].gguf_arch)
        out->gguf_arch = strdup(modules[m].gguf_arch);
    if (modules[m].target_arch) {
        if (!in->target_component || !in->target_config_raw) {
            nf_diag_add(d, NF_C_TARGET, b.own_ptr,
                        "component \"%s\" (%s) needs a target component of architecture %s",
                        in->component, arch, modules[m].target_arch);
            goto done;
        }
        b.cfg_ptr = comp_cfg_ptr(in->target_component);
        nf_diags l2 = NF_DIAGS_INIT;
        tdoc = nf_jdoc_parse(in->target_config_raw, in->target_config_len, 0, &l2);
        nf_diags_free(&l2);
        if (!tdoc || !b.cfg_ptr || nf_jtype_of(nf_jdoc_root(tdoc)) != NF_J_OBJECT) {
            nf_diag_add(d, NF_C_TARGET, b.own_ptr, "the target \"%s\" has no usable config",
                        in->target_component);
            goto done;
        }
        const char *ta = arch_of(nf_jdoc_root(tdoc), NULL, NULL);
        if (!ta || (strcmp(ta, modules[m].target_arch) != 0 &&
                    (!modules[m].target_alt || strcmp(ta, modules[m].target_alt) != 0))) {
            nf_diag_add(d, NF_C_TARGET, b.own_ptr,
                        "component \"%s\" (%s) needs a target of architecture %s%s%s; \"%s\" is %s",
                        in->component, arch, modules[m].target_arch,
                        modules[m].target_alt ? " or " : "",
                        modules[m].target_alt ? modules[m].target_alt : "", in->target_component,
                        ta ? ta : "without architectures");
            goto done;
        }
        b.doc = tdoc;
        b.cfg = nf_jdoc_root(tdoc);
    } else {
        b.cfg_ptr = strdup(b.own_ptr);
        b.doc = b.own_doc;
        b.cfg = b.own_cfg;
        if (!b.cfg_ptr)
            goto done;
    }
    if (modules[m].build(&b) != 0 || b.failed)
        goto done;
    if (in->has_proposal) {
        uint64_t H, V, rows;
        if (!nf_ab_u64(&b, "hidden_size", true, 0, 1, &H) ||
            !nf_ab_u64(&b, "vocab_size", true, 0, 1, &V))
            goto done;
        rows = in->proposal_indexed ? in->proposal_rows : V;
        nf_ab_param(&b, 2, (const uint64_t[]){rows, H}, "head_input", true, "/proposal/head");
        if (in->proposal_indexed) {
            size_t t = nf_ab_param(&b, 1, (const uint64_t[]){rows}, NULL, false,
                                   "/proposal/token_ids");
            if (t != SIZE_MAX)
                out->params[t].want_format = NF_FMT_INT32;
        }
        if (b.failed)
            goto done;
    }
    out->by_name = malloc((out->n_params ? out->n_params : 1) * sizeof *out->by_name);
    if (!out->by_name) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto done;
    }
    for (size_t i = 0; i < out->n_params; i++)
        out->by_name[i] = i;
    qsort_r(out->by_name, out->n_params, sizeof *out->by_name, by_name_cmp, out->params);
    rc = 0;
done:
    nf_jdoc_free(b.own_doc);
    nf_jdoc_free(tdoc);
    free(b.own_ptr);
    free(b.cfg_ptr);
    if (rc)
        nf_arch_plan_free(out);
    return rc;
}

/* ---- plans of an artifact's components ------------------------------------- */

/* Which components are selected: sel[i] for component i, every one when
 * none is named, with their targets (nf_select_components). Asked-for but
 * absent ones are component-missing. Returns false when one is missing. */
static bool select_components(const nf_catalog *c, const nf_bind_opts *o, bool *sel, nf_diags *d)
{
    return nf_select_components(c, o ? o->components : NULL, o ? o->n_components : 0, sel, d) == 0;
}

static int derive_component(const nf_catalog *c, size_t i, nf_arch_plan *plan, nf_diags *d)
{
    const nf_component *k = &c->components[i];
    nf_arch_input in;
    memset(&in, 0, sizeof in);
    in.component = k->id;
    in.config_raw = k->config_text;
    in.config_len = k->config_len;
    in.has_proposal = k->has_proposal;
    in.proposal_indexed = k->proposal_indexed;
    in.proposal_rows = k->proposal_rows;
    if (k->target) {
        size_t t = k->target_index; /* resolved at parse */
        if (t < c->n_components) {
            in.target_component = c->components[t].id;
            in.target_config_raw = c->components[t].config_text;
            in.target_config_len = c->components[t].config_len;
        }
    }
    return nf_arch_derive(&in, plan, d);
}

int nf_binder_plans(const nf_catalog *c, const nf_bind_opts *o, nf_arch_plan **plans, size_t *n,
                    nf_diags *d)
{
    *plans = NULL;
    *n = 0;
    bool *sel = calloc(c->n_components ? c->n_components : 1, sizeof *sel);
    nf_arch_plan *v = calloc(c->n_components ? c->n_components : 1, sizeof *v);
    if (!sel || !v) {
        free(sel);
        free(v);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    int rc = select_components(c, o, sel, d) ? 0 : -1;
    for (size_t i = 0; i < c->n_components; i++) {
        if (!sel[i])
            continue;
        if (derive_component(c, i, &v[*n], d) == 0)
            (*n)++;
        else if (nf_diags_exit(d) != NF_EXIT_UNSUPPORTED)
            rc = -1;
    }
    free(sel);
    *plans = v;
    return rc;
}

void nf_arch_plans_free(nf_arch_plan *plans, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nf_arch_plan_free(&plans[i]);
    free(plans);
}

/* ---- checks ----------------------------------------------------------------- */

typedef struct {
    const nf_catalog *c;
    nf_artifact *a;
    nf_diags *d;
    const nf_param **param; /* per binding: the parameter it binds, once checked */
} chk;

/* the catalog resolved its bindings by name when it was parsed */
static const nf_named_binding *find_binding(const chk *k, const char *name)
{
    size_t i = nf_catalog_binding(k->c, name);
    return i == SIZE_MAX ? NULL : &k->c->bindings[i];
}

static char *bptr(const char *name)
{
    return nf_ptr_join("/bindings", name, strlen(name));
}

static bool same_binding(const nf_binding *x, const nf_binding *y)
{
    if ((x->parts == NULL) != (y->parts == NULL))
        return false;
    if (!x->parts)
        return x->object && y->object && strcmp(x->object, y->object) == 0;
    if (x->n_parts != y->n_parts)
        return false;
    for (size_t i = 0; i < x->n_parts; i++)
        if (strcmp(x->parts[i].object, y->parts[i].object) != 0 ||
            x->parts[i].begin != y->parts[i].begin || x->parts[i].end != y->parts[i].end)
            return false;
    return true;
}

static const nf_object *binding_obj(const nf_catalog *c, const nf_binding *b, size_t part)
{
    size_t i = b->parts ? b->parts[part].obj : b->obj;
    return i < c->n_objects ? &c->objects[i] : NULL;
}

static const char *comp_of_name(const char *name, size_t *len)
{
    const char *s = strchr(name, '/');
    *len = s ? (size_t)(s - name) : strlen(name);
    return name;
}

static void check_param(chk *k, const nf_arch_plan *plan, const nf_param *p)
{
    const nf_catalog *c = k->c;
    const nf_named_binding *nb = find_binding(k, p->name);
    if (nb && k->param)
        k->param[nb - c->bindings] = p;
    /* the pointer and the shape's text only when a problem needs them */
    char *ptr = NULL, shape[128] = "";
#define PTR (ptr ? ptr : (ptr = bptr(p->name)) ? ptr : "/bindings")
#define SHAPE (shape[0] ? shape : (nf_shape_str(p->dims, p->rank, shape, sizeof shape), shape))
    if (!nb) {
        nf_diag_add(k->d, NF_C_COVERAGE, "/bindings", "parameter \"%s\" [%s] of %s is not bound",
                    p->name, SHAPE, plan->architecture);
        free(ptr);
        return;
    }
    uint64_t el;
    if (!nf_binding_elements(c, &nb->b, &el)) {
        free(ptr); /* an unresolved reference: the generic reader reported it */
        return;
    }
    if (el != p->elements) {
        nf_diag_add(k->d, NF_C_COVERAGE, PTR,
                    "parameter \"%s\" needs %llu elements ([%s]); its binding covers %llu",
                    p->name, (unsigned long long)p->elements, SHAPE, (unsigned long long)el);
    } else if (!nb->b.parts) {
        const nf_object *o = binding_obj(c, &nb->b, 0);
        if (o && (o->rank != p->rank || memcmp(o->dims, p->dims, p->rank * sizeof *p->dims))) {
            char os[128];
            nf_shape_str(o->dims, o->rank, os, sizeof os);
            nf_diag_add(k->d, NF_C_COVERAGE, PTR,
                        "whole-object binding of \"%s\" needs shape [%s]; object \"%s\" is [%s] "
                        "(a reshape takes parts, spec 7.2)", p->name, SHAPE, o->id, os);
        }
    }
    if (p->want_format != NF_FMT_UNKNOWN) {
        size_t np = nb->b.parts ? nb->b.n_parts : 1;
        for (size_t i = 0; i < np; i++) {
            const nf_object *o = binding_obj(c, &nb->b, i);
            if (o && o->format != p->want_format) {
                nf_diag_add(k->d, NF_C_COVERAGE, PTR, "parameter \"%s\" must be %s; object \"%s\" is %s",
                            p->name, nf_format_name(p->want_format), o->id,
                            o->format_name ? o->format_name : "?");
                break;
            }
        }
    }
    if (p->shares) {
        const nf_named_binding *sb = find_binding(k, p->shares);
        if (sb && !same_binding(&nb->b, &sb->b)) {
            size_t l1, l2;
            comp_of_name(p->name, &l1);
            comp_of_name(p->shares, &l2);
            bool cross = l1 != l2 || strncmp(p->name, p->shares, l1) != 0;
            nf_diag_add(k->d, cross ? NF_C_TARGET : NF_C_COVERAGE, PTR,
                        "parameter \"%s\" must bind the same objects as \"%s\" (%s)", p->name,
                        p->shares, cross ? "shared data, spec 5.3" : "tied, spec 12.4");
        }
    }
    /* uses */
    size_t nu;
    const size_t *ul = nf_catalog_uses_of(c, (size_t)(nb - c->bindings), &nu);
    bool found = false;
    for (size_t j = 0; j < nu; j++) {
        size_t ui = ul[j];
        const nf_use *u = &c->uses[ui];
        bool bad = !p->input || strcmp(u->input, p->input) != 0 ||
                   (p->needs_policy && !u->activation_policy);
        if (p->input && !strcmp(u->input, p->input))
            found = true;
        if (!bad)
            continue; /* the common case: no pointer to build */
        char *up = nf_ptr_index("/uses", ui);
        if (!p->input) {
            nf_diag_add(k->d, NF_C_UNKNOWN_PARAMETER, up,
                        "parameter \"%s\" takes no input in %s; use on \"%s\" is unknown",
                        p->name, plan->architecture, u->input);
        } else if (strcmp(u->input, p->input) != 0) {
            nf_diag_add(k->d, NF_C_UNKNOWN_PARAMETER, up,
                        "\"%s\" is not an input of \"%s\" in %s (its input is \"%s\")", u->input,
                        p->name, plan->architecture, p->input);
        } else {
            found = true;
            if (p->needs_policy && !u->activation_policy) {
                char *q = nf_ptr_join(up, "activation_policy", 17);
                nf_diag_add(k->d, NF_C_SCHEMA, q ? q : up,
                            "the use of projection \"%s\" needs an activation_policy", p->name);
                free(q);
            }
        }
        free(up);
    }
    if (p->input && !found)
        nf_diag_add(k->d, NF_C_COVERAGE, PTR, "%s \"%s\" has no use on input \"%s\"",
                    p->needs_policy ? "projection" : "parameter", p->name, p->input);
    free(ptr);
#undef PTR
#undef SHAPE
}


/* Read the elements [b, e) of a binding's parts into buf (raw words of
 * `eb` bytes; every parent must be a contiguous_le_v1 object). */
static int read_binding(chk *k, const nf_binding *b, unsigned eb, uint64_t n, void *buf)
{
    uint64_t done = 0;
    size_t np = b->parts ? b->n_parts : 1;
    for (size_t i = 0; i < np; i++) {
        const nf_object *o = binding_obj(k->c, b, i);
        if (!o)
            return -1;
        uint64_t e0 = b->parts ? b->parts[i].begin : 0;
        uint64_t e1 = b->parts ? b->parts[i].end : o->bytes / eb;
        if (e1 - e0 > n - done)
            return -1;
        if (nf_artifact_read(k->a, o->offset + e0 * eb, (char *)buf + done * eb,
                             (size_t)((e1 - e0) * eb), k->d) < 0)
            return -1;
        done += e1 - e0;
    }
    return done == n ? 0 : -1;
}

/* input_columns (spec 8, DESIGN 10): only on a use whose parameter's
 * parts all have gguf_* formats; int32 [K] (K the parameter's input width),
 * a permutation of 0..K-1 (values read when the artifact is a file). */
static void check_input_columns(chk *k, const nf_use *u, const nf_param *p, const nf_aux *x,
                                bool resolved, uint64_t el, const char *ptr)
{
    const nf_catalog *c = k->c;
    const nf_binding *pb = u->binding < c->n_bindings ? &c->bindings[u->binding].b : NULL;
    size_t np = pb ? (pb->parts ? pb->n_parts : 1) : 0;
    uint64_t K = p && p->rank == 2 ? p->dims[1] : 0;
    bool gguf = np > 0;
    for (size_t i = 0; i < np; i++) {
        const nf_object *o = binding_obj(c, pb, i);
        gguf &= o && nf_format_is_gguf(o->format);
        if (o && !p && o->rank == 2)
            K = o->dims[1];
    }
    if (!gguf) {
        nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                    "input_columns is accepted only on parameters whose parts are all gguf_* "
                    "formats; \"%s\" has another", u->parameter);
        return;
    }
    if (!resolved)
        return; /* an unresolved reference: the generic reader reported it */
    size_t nx = x->b.parts ? x->b.n_parts : 1;
    bool fmt_ok = true;
    for (size_t i = 0; i < nx; i++) {
        const nf_object *o = binding_obj(c, &x->b, i);
        fmt_ok &= o && o->format == NF_FMT_INT32 && o->layout == NF_LAY_CONTIGUOUS_LE_V1;
    }
    const nf_object *o0 = binding_obj(c, &x->b, 0);
    if (!fmt_ok || (!x->b.parts && o0 && o0->rank != 1)) {
        nf_diag_add(k->d, NF_C_AUXILIARY, ptr, "input_columns must be an int32 vector [K]");
        return;
    }
    if (el != K) {
        nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                    "input_columns has %llu elements; \"%s\" has K = %llu columns",
                    (unsigned long long)el, u->parameter, (unsigned long long)K);
        return;
    }
    if (!k->a || el > (256u << 20))
        return;
    int32_t *v = malloc((size_t)el * 4 + 4);
    uint8_t *seen = calloc((size_t)el + 1, 1);
    if (v && seen && read_binding(k, &x->b, 4, el, v) == 0) {
        for (uint64_t i = 0; i < el; i++) {
            int32_t w;
            memcpy(&w, &v[i], 4); /* little-endian words */
            if (w < 0 || (uint64_t)w >= K || seen[w]) {
                nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                            "input_columns[%llu] is %ld: not a permutation of 0..%llu",
                            (unsigned long long)i, (long)w, (unsigned long long)(K - 1));
                break;
            }
            seen[w] = 1;
        }
    }
    free(v);
    free(seen);
}

static void check_aux(chk *k, size_t ui, const nf_param *p)
{
    const nf_use *u = &k->c->uses[ui];
    char *up = nf_ptr_index("/uses", ui);
    char *ap = up ? nf_ptr_join(up, "auxiliaries", 11) : NULL;
    for (size_t j = 0; j < u->n_aux; j++) {
        const nf_aux *x = &u->aux[j];
        char *q = ap ? nf_ptr_join(ap, x->role, strlen(x->role)) : NULL;
        const char *ptr = q ? q : "";
        uint64_t el = 0;
        bool resolved = nf_binding_elements(k->c, &x->b, &el);
        size_t np = x->b.parts ? x->b.n_parts : 1;
        if (strcmp(x->role, "activation_input_divisor") == 0) {
            const nf_object *o = binding_obj(k->c, &x->b, 0);
            bool ok = resolved && o && el == 1 && np == 1 && o->format == NF_FMT_FP32 &&
                      o->layout == NF_LAY_CONTIGUOUS_LE_V1 && (x->b.parts || o->rank == 0);
            if (!ok && resolved) {
                nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                            "activation_input_divisor must be an fp32 scalar (shape [] or one "
                            "element of an fp32 object)");
            } else if (ok && k->a) {
                float v;
                if (read_binding(k, &x->b, 4, 1, &v) == 0 && !(isfinite(v) && v > 0))
                    nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                                "activation_input_divisor is %g; it must be finite and > 0",
                                (double)v);
            }
        } else if (strcmp(x->role, "hadamard_signs") == 0) {
            uint64_t K = p && p->rank == 2 ? p->dims[1] : 0;
            bool fmt_ok = true;
            for (size_t i = 0; i < np && resolved; i++) {
                const nf_object *o = binding_obj(k->c, &x->b, i);
                fmt_ok &= o && o->format == NF_FMT_BF16 && o->layout == NF_LAY_CONTIGUOUS_LE_V1;
            }
            const nf_object *o0 = binding_obj(k->c, &x->b, 0);
            if (resolved && (!fmt_ok || (!x->b.parts && o0 && o0->rank != 1))) {
                nf_diag_add(k->d, NF_C_AUXILIARY, ptr, "hadamard_signs must be a bf16 vector [K]");
            } else if (resolved && p && (el != K || K % 1024 != 0)) {
                nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                            "hadamard_signs has %llu elements; \"%s\" needs K = %llu, a multiple "
                            "of 1024", (unsigned long long)el, p->name, (unsigned long long)K);
            } else if (resolved && k->a && el <= (64u << 20)) {
                uint16_t *w = malloc((size_t)el * 2);
                if (w && read_binding(k, &x->b, 2, el, w) == 0) {
                    for (uint64_t i = 0; i < el; i++)
                        if (w[i] != 0x3f80 && w[i] != 0xbf80) {
                            nf_diag_add(k->d, NF_C_AUXILIARY, ptr,
                                        "hadamard_signs[%llu] is 0x%04x, not +1 or -1",
                                        (unsigned long long)i, w[i]);
                            break;
                        }
                }
                free(w);
            }
        } else if (strcmp(x->role, "input_columns") == 0) {
            check_input_columns(k, u, p, x, resolved, el, ptr);
        } else {
            nf_diag_add(k->d, NF_C_AUXILIARY, ptr, "unknown auxiliary role \"%s\"", x->role);
        }
        free(q);
    }
    free(ap);
    free(up);
}


int nf_binder_check(const nf_catalog *c, nf_artifact *a, const nf_bind_opts *o, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = d->file;
    chk k = {c, a, &local, NULL};
    /* each binding's parameter, found once by check_param: the loops over
     * bindings and uses below then look nothing up by name */
    k.param = calloc(c->n_bindings ? c->n_bindings : 1, sizeof *k.param);
    size_t nc = c->n_components ? c->n_components : 1;
    bool *sel = calloc(nc, sizeof *sel);
    nf_arch_plan *plans = calloc(nc, sizeof *plans);
    bool *have = calloc(nc, sizeof *have);
    if (!sel || !plans || !have) {
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
        goto done;
    }
    bool all = !o || !o->n_components;
    select_components(c, o, sel, &local);

    for (size_t i = 0; i < c->n_components; i++) {
        if (!sel[i])
            continue;
        const nf_component *comp = &c->components[i];
        have[i] = derive_component(c, i, &plans[i], &local) == 0;
        if (!have[i])
            continue;
        const nf_arch_plan *plan = &plans[i];
        /* a target's geometry: the component's own config must not disagree */
        if (comp->target) {
            size_t t = comp->target_index; /* resolved at parse */
            nf_diags tmp = NF_DIAGS_INIT;
            nf_jdoc *own = nf_jdoc_parse(comp->config_text, comp->config_len, 0, &tmp);
            nf_jdoc *tgt = t < c->n_components ? nf_jdoc_parse(c->components[t].config_text,
                                                  c->components[t].config_len, 0, &tmp)
                                  : NULL;
            static const char *const keys[] = {"hidden_size", "vocab_size", "num_attention_heads",
                                               "num_key_value_heads", "head_dim"};
            for (size_t j = 0; own && tgt && j < sizeof keys / sizeof *keys; j++) {
                nf_jval *x = nf_jobj_get(nf_jdoc_root(own), keys[j]);
                nf_jval *y = nf_jobj_get(nf_jdoc_root(tgt), keys[j]);
                if (!x)
                    continue;
                char *sx = nf_jval_to_text(x, false, NULL);
                char *sy = y ? nf_jval_to_text(y, false, NULL) : NULL;
                if (!sy || !sx || strcmp(sx, sy) != 0) {
                    char *cp = comp_cfg_ptr(comp->id);
                    char *q = cp ? nf_ptr_join(cp, keys[j], strlen(keys[j])) : NULL;
                    nf_diag_add(&local, NF_C_TARGET, q ? q : "",
                                "%s is %s here but %s in the target \"%s\"; the geometry follows "
                                "the target", keys[j], sx ? sx : "?", sy ? sy : "absent",
                                comp->target);
                    free(q);
                    free(cp);
                }
                free(sx);
                free(sy);
            }
            nf_jdoc_free(own);
            nf_jdoc_free(tgt);
            nf_diags_free(&tmp);
        } else if (nf_arch_target_architecture(plan->architecture)) {
            nf_diag_add(&local, NF_C_TARGET, "/components", "component \"%s\" needs a target",
                        comp->id);
        }
        for (size_t j = 0; j < plan->n_params; j++)
            check_param(&k, plan, &plan->params[j]);
    }

    /* bindings and uses the architectures do not know */
    for (size_t i = 0; i < c->n_bindings; i++) {
        const char *name = c->bindings[i].name;
        size_t w = c->bindings[i].component; /* nf_catalog_owner */
        if (w >= c->n_components) {
            if (all) {
                char *ptr = bptr(name);
                nf_diag_add(&local, NF_C_UNKNOWN_PARAMETER, ptr,
                            "\"%s\" belongs to no declared component", name);
                free(ptr);
            }
            continue;
        }
        if (!sel[w] || !have[w] || (k.param && k.param[i]) || nf_arch_find(&plans[w], name))
            continue;
        char *ptr = bptr(name);
        nf_diag_add(&local, NF_C_UNKNOWN_PARAMETER, ptr, "%s has no parameter \"%s\"",
                    plans[w].architecture, name);
        free(ptr);
    }
    for (size_t i = 0; i < c->n_uses; i++) {
        const nf_use *u = &c->uses[i];
        size_t w = nf_catalog_owner(c, u->parameter);
        if (w >= c->n_components || !sel[w])
            continue;
        const nf_param *p = u->binding < c->n_bindings && k.param && k.param[u->binding]
                                ? k.param[u->binding]
                            : have[w] ? nf_arch_find(&plans[w], u->parameter) : NULL;
        if (have[w] && !p) {
            char *up = nf_ptr_index("/uses", i);
            nf_diag_add(&local, NF_C_UNKNOWN_PARAMETER, up, "use of \"%s\", which %s does not have",
                        u->parameter, plans[w].architecture);
            free(up);
        }
        check_aux(&k, i, p);
    }
done:
    for (size_t i = 0; plans && i < c->n_components; i++)
        if (have && have[i])
            nf_arch_plan_free(&plans[i]);
    free(plans);
    free(have);
    free(sel);
    free(k.param);
    int rc = nf_diags_exit(&local);
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    return rc;
}

/* ---- views ------------------------------------------------------------------ */

unsigned nf_part_spans(const nf_tensor_enc *te, uint64_t begin, uint64_t end, nf_plane_span *out,
                       bool *view)
{
    return nf_view_spans(te->format, te->layout, te->dims, te->rank, &te->enc, begin, end, out,
                         view);
}

/* ---- extraction ---------------------------------------------------------------- */

int nf_binding_extract(nf_artifact *a, const nf_binding *b, nf_extract_dtype dt,
                       nf_extract_sink sink, void *ctx, nf_diags *d)
{
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t np = b->parts ? b->n_parts : 1, cached = SIZE_MAX;
    uint8_t *obj = NULL;
    nf_tensor_enc te;
    int rc = 0;
    enum { CHUNK = 1 << 16 };
    void *out = malloc(CHUNK * 4);
    if (!out) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < np && rc == 0; i++) {
        size_t oi = b->parts ? b->parts[i].obj : b->obj;
        if (oi >= c->n_objects || c->objects[oi].kind != NF_OBJ_TENSOR) {
            nf_diag_add(d, NF_C_REFERENCE, "", "binding refers to no tensor object");
            rc = -1;
            break;
        }
        const nf_object *o = &c->objects[oi];
        char *ptr = nf_ptr_index("/objects", oi);
        if (oi != cached) {
            const char *why = NULL;
            nf_enc_status st = nf_tensor_enc_init(&te, o->format, o->layout, o->dims, o->rank,
                                                  o->divisors, &why);
            if (st != NF_ENC_OK) {
                nf_diag_add(d, st == NF_ENC_UNSUPPORTED ? NF_C_UNSUPPORTED : NF_C_ENCODING,
                            ptr ? ptr : "", "object \"%s\": cannot decode %s/%s%s%s", o->id,
                            o->format_name, o->layout_name, why ? ": " : "", why ? why : "");
                free(ptr);
                rc = -1;
                break;
            }
            if (dt == NF_EXTRACT_I32 && o->format != NF_FMT_INT32) {
                nf_diag_add(d, NF_C_UNSUPPORTED, ptr ? ptr : "",
                            "object \"%s\" is %s; --dtype i32 takes int32 objects", o->id,
                            o->format_name);
                free(ptr);
                rc = -1;
                break;
            }
            free(obj);
            obj = o->bytes <= SIZE_MAX ? malloc(o->bytes ? (size_t)o->bytes : 1) : NULL;
            if (!obj) {
                nf_diag_add(d, NF_C_IO, ptr ? ptr : "", "out of memory for object \"%s\"", o->id);
                free(ptr);
                rc = -1;
                break;
            }
            if (nf_artifact_read(a, o->offset, obj, (size_t)o->bytes, d) < 0) {
                free(ptr);
                rc = -1;
                break;
            }
            cached = oi;
        }
        uint64_t e0 = b->parts ? b->parts[i].begin : 0;
        uint64_t e1 = b->parts ? b->parts[i].end : te.enc.elements;
        for (uint64_t e = e0; e < e1 && rc == 0; e += CHUNK) {
            uint64_t n = e1 - e < CHUNK ? e1 - e : CHUNK;
            int r;
            size_t bytes;
            if (dt == NF_EXTRACT_I32) {
                memcpy(out, obj + e * 4, (size_t)n * 4);
                r = 0;
                bytes = (size_t)n * 4;
            } else if (dt == NF_EXTRACT_BF16) {
                r = nf_decode_elems_bf16(&te, obj, o->bytes, e, e + n, out);
                bytes = (size_t)n * 2;
            } else {
                r = nf_decode_elems_f32(&te, obj, o->bytes, e, e + n, out);
                bytes = (size_t)n * 4;
            }
            if (r) {
                nf_diag_add(d, NF_C_CODES, ptr ? ptr : "", "object \"%s\": %s", o->id,
                            nf_codec_strerror(r));
                rc = -1;
            } else {
                rc = sink(ctx, out, bytes);
            }
        }
        free(ptr);
    }
    free(obj);
    free(out);
    return rc;
}
