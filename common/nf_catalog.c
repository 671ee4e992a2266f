/* nf_catalog.c — catalog parse, validation (spec 11.1) and serialization.
 *
 * The parser walks the json-c tree once per section, records every problem
 * with its JSON Pointer, and keeps going wherever the rest of the catalog
 * can still be checked. Pointers are only built when a problem is recorded
 * (or when the pre-scan saw big integers), so a large healthy catalog costs
 * no string work beyond its IDs. */
#include "nf_catalog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_strmap.h"
#include "nf_util.h"

static const uint64_t no_dims[1];

/* ---- parse context ---- */

typedef struct {
    nf_catalog *c;
    nf_jdoc *doc;
    nf_diags *d;
    nf_cat_mode mode;
    const char *entry_name;
    bool bigints; /* the pre-scan saw integers above U64: build pointers */
} pctx;

static void diag_at_oom(pctx *x);

/* A record string: a malloc'ed s moved into the arena (NULL stays NULL;
 * out of memory is reported). */
static char *to_arena(pctx *x, char *s)
{
    if (!s)
        return NULL;
    char *r = nf_arena_strndup(x->c->arena, s, strlen(s));
    free(s);
    if (!r)
        diag_at_oom(x);
    return r;
}

static char *interned(pctx *x, char *s)
{
    if (!s)
        return NULL;
    char *r = nf_catalog_intern(x->c, s, strlen(s));
    free(s);
    if (!r)
        diag_at_oom(x);
    return r;
}

/* Pointer builders used only on the error path (or for big integers). */
static char *ptr_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *ptr_fmt(const char *fmt, ...)
{
    char *p = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&p, fmt, ap) < 0)
        p = NULL;
    va_end(ap);
    return p;
}

static char *ptr_key(const char *base, const char *key)
{
    return nf_ptr_join(base, key, strlen(key));
}

static void diag_at(pctx *x, nf_code code, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void diag_at(pctx *x, nf_code code, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_diag_vadd(x->d, code, ptr ? ptr : "", fmt, ap);
    va_end(ap);
}

static void diag_at_oom(pctx *x)
{
    nf_diag_add(x->d, NF_C_IO, "", "out of memory");
}

/* Member-set check: every member of v must be in allowed[] (NULL-ended);
 * the names in required[] must be present. */
struct members_ctx {
    pctx *x;
    const char *ptr;
    const char *const *allowed;
    const char *what;
    bool ok;
};

static bool unknown_member_cb(void *vctx, const char *name, nf_jval *val)
{
    struct members_ctx *m = vctx;
    (void)val;
    for (const char *const *a = m->allowed; *a; a++)
        if (strcmp(*a, name) == 0)
            return true;
    char *p = ptr_key(m->ptr, name);
    diag_at(m->x, NF_C_SCHEMA, p, "unknown member \"%s\" in %s", name, m->what);
    free(p);
    m->ok = false;
    return true;
}

static bool check_members(pctx *x, nf_jval *v, const char *ptr,
                          const char *const *allowed, const char *const *required,
                          const char *what)
{
    struct members_ctx m = {x, ptr, allowed, what, true};
    nf_jobj_foreach(v, unknown_member_cb, &m);
    for (const char *const *r = required; r && *r; r++) {
        if (!nf_jobj_has(v, *r)) {
            char *p = ptr_key(ptr, *r);
            diag_at(x, NF_C_SCHEMA, p, "%s lacks required member \"%s\"", what, *r);
            free(p);
            m.ok = false;
        }
    }
    return m.ok;
}

static const char *article(nf_jtype t)
{
    return (t == NF_J_OBJECT || t == NF_J_ARRAY || t == NF_J_INT) ? "an" : "a";
}

static bool expect_type(pctx *x, nf_jval *v, nf_jtype t, const char *ptr,
                        const char *what)
{
    nf_jtype got = nf_jtype_of(v);
    if (got == t)
        return true;
    diag_at(x, NF_C_SCHEMA, ptr, "%s must be %s %s, not %s", what, article(t),
            nf_jtype_name(t), nf_jtype_name(got));
    return false;
}

/* An ID (spec 1): non-empty UTF-8 string without U+0000. Returns a copy or
 * NULL (with a `schema` record). */
static char *read_id(pctx *x, nf_jval *v, const char *ptr, const char *what)
{
    if (!expect_type(x, v, NF_J_STRING, ptr, what))
        return NULL;
    size_t n;
    const char *s = nf_jstr(v, &n);
    if (n == 0) {
        diag_at(x, NF_C_SCHEMA, ptr, "%s must be a non-empty ID", what);
        return NULL;
    }
    if (memchr(s, 0, n)) {
        diag_at(x, NF_C_SCHEMA, ptr, "%s must not contain U+0000", what);
        return NULL;
    }
    char *r = strndup(s, n);
    if (!r)
        diag_at(x, NF_C_IO, ptr, "out of memory");
    return r;
}

/* A member-name ID (component key, binding name): non-empty. U+0000 is
 * caught beforehand from the raw text (json-c truncates such names). */
static bool key_id_ok(pctx *x, const char *name, const char *ptr, const char *what)
{
    if (!name[0]) {
        diag_at(x, NF_C_SCHEMA, ptr, "%s must be a non-empty ID", what);
        return false;
    }
    return true;
}

/* Read a U64 field. positive: zero is a `range` error. */
static bool read_u64(pctx *x, nf_jval *v, const char *ptr, const char *what,
                     bool positive, uint64_t *out)
{
    uint64_t u = 0;
    nf_ju64_status st = nf_jval_u64(x->doc, v, x->bigints ? ptr : NULL, &u);
    switch (st) {
    case NF_JU64_OK:
        break;
    case NF_JU64_NOT_INTEGER:
        if (nf_jtype_of(v) == NF_J_DOUBLE) {
            size_t n;
            const char *t = nf_jval_to_text((nf_jval *)v, false, &n);
            diag_at(x, NF_C_SCHEMA, ptr, "%s must be a JSON integer, not %s", what,
                    t ? t : "a number with a fraction or exponent");
            free((char *)t);
        } else {
            diag_at(x, NF_C_SCHEMA, ptr, "%s must be an integer, not %s", what,
                    nf_jtype_name(nf_jtype_of(v)));
        }
        return false;
    case NF_JU64_NEGATIVE:
        diag_at(x, NF_C_RANGE, ptr, "%s is negative", what);
        return false;
    case NF_JU64_TOO_BIG:
        diag_at(x, NF_C_RANGE, ptr, "%s is above 2^64-1", what);
        return false;
    }
    if (positive && u == 0) {
        diag_at(x, NF_C_RANGE, ptr, "%s must be positive", what);
        return false;
    }
    *out = u;
    return true;
}

/* Pointer to a member of an array element: "/objects/3/offset". Only built
 * when needed: field pointers are computed lazily through this. */
static char *elem_ptr(const char *arr, size_t i, const char *member)
{
    if (member)
        return ptr_fmt("%s/%zu/%s", arr, i, member);
    return ptr_fmt("%s/%zu", arr, i);
}

/* ---- sources (manifest only, DESIGN 5) ---- */

static void source_free(nf_source *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->name);
    free(s->dtype);
    free(s->values);
    for (size_t i = 0; i < s->n_items; i++)
        source_free(&s->items[i]);
    free(s->items);
    free(s->pointer);
}

static const char *const dtypes[] = {"bf16", "f16", "f32", "f64", "i8", "i16", "i32",
                                     "i64", "u8", "u16", "u32", "u64", NULL};

/* "unpermute" of a source (DESIGN 5): llama-rope {scheme, heads} or
 * v-heads-tiled {scheme, axis, k_heads, v_heads, head_dim[, offset]}. */
static bool parse_unpermute(pctx *x, nf_jval *m, const char *p, nf_source *s)
{
    static const char *const rope[] = {"scheme", "heads", NULL};
    static const char *const tiled[] = {"scheme", "axis", "k_heads", "v_heads", "head_dim",
                                        "offset", NULL};
    static const char *const tiled_req[] = {"scheme", "axis", "k_heads", "v_heads", "head_dim",
                                            NULL};
    if (!expect_type(x, m, NF_J_OBJECT, p, "unpermute"))
        return false;
    const char *sch = nf_jstr(nf_jobj_get(m, "scheme"), NULL);
    char *q = ptr_key(p, "scheme");
    bool ok = true;
    if (sch && strcmp(sch, "llama-rope") == 0) {
        char *h = ptr_key(p, "heads");
        ok = check_members(x, m, p, rope, rope, "unpermute") &&
             read_u64(x, nf_jobj_get(m, "heads"), h, "heads", true, &s->unpermute_heads);
        free(h);
        s->unpermute = NF_UNPERMUTE_LLAMA_ROPE;
    } else if (sch && strcmp(sch, "v-heads-tiled") == 0) {
        ok = check_members(x, m, p, tiled, tiled_req, "unpermute");
        static const char *const names[] = {"k_heads", "v_heads", "head_dim", "offset"};
        uint64_t *dst[] = {&s->k_heads, &s->v_heads, &s->head_dim, &s->unpermute_offset};
        for (int i = 0; ok && i < 4; i++) {
            if (i == 3 && !nf_jobj_has(m, names[i]))
                break;
            char *f = ptr_key(p, names[i]);
            ok = read_u64(x, nf_jobj_get(m, names[i]), f, names[i], i < 3, dst[i]);
            free(f);
        }
        const char *axis = nf_jstr(nf_jobj_get(m, "axis"), NULL);
        char *a = ptr_key(p, "axis");
        uint64_t w;
        if (ok && (!axis || (strcmp(axis, "rows") && strcmp(axis, "columns")))) {
            diag_at(x, NF_C_SCHEMA, a, "axis must be \"rows\" or \"columns\"");
            ok = false;
        } else if (ok && s->v_heads % s->k_heads != 0) {
            char *f = ptr_key(p, "v_heads");
            diag_at(x, NF_C_RANGE, f, "v_heads %llu is not a multiple of k_heads %llu",
                    (unsigned long long)s->v_heads, (unsigned long long)s->k_heads);
            free(f);
            ok = false;
        } else if (ok && (!nf_mul_u64(s->v_heads, s->head_dim, &w) ||
                          !nf_add_u64(w, s->unpermute_offset, &w))) {
            diag_at(x, NF_C_RANGE, p, "offset + v_heads x head_dim overflows U64");
            ok = false;
        } else if (ok && axis[0] == 'c' && s->unpermute_offset) {
            char *f = ptr_key(p, "offset");
            diag_at(x, NF_C_SCHEMA, f, "a column unpermute takes every column: no offset");
            free(f);
            ok = false;
        }
        s->unpermute_columns = ok && axis[0] == 'c';
        free(a);
        s->unpermute = NF_UNPERMUTE_V_HEADS_TILED;
    } else {
        diag_at(x, NF_C_SCHEMA, q, "unpermute scheme must be \"llama-rope\" or \"v-heads-tiled\"");
        ok = false;
    }
    free(q);
    s->has_unpermute = ok;
    if (!ok)
        s->unpermute = NF_UNPERMUTE_NONE;
    return ok;
}

static bool parse_source(pctx *x, nf_jval *v, const char *ptr, nf_source *s, unsigned depth)
{
    static const char *const allowed[] = {"file", "offset", "dtype", "values", "safetensors",
                                          "gguf", "tensor", "artifact", "object", "concat",
                                          "rows", "unpermute", "map", NULL};
    memset(s, 0, sizeof *s);
    s->pointer = strdup(ptr);
    if (!expect_type(x, v, NF_J_OBJECT, ptr, "source"))
        return false;
    bool ok = check_members(x, v, ptr, allowed, NULL, "source");
    static const char *const kinds[] = {"file", "values", "safetensors", "gguf", "artifact",
                                        "concat"};
    int nk = 0;
    for (int i = 0; i < 6; i++) {
        if (nf_jobj_has(v, kinds[i])) {
            nk++;
            s->kind = (nf_src_kind)(i + 1);
        }
    }
    if (nk != 1) {
        diag_at(x, NF_C_SCHEMA, ptr,
                "a source names exactly one of file, values, safetensors, gguf, artifact, concat");
        return false;
    }
    char *p;
    nf_jval *m;
    switch (s->kind) {
    case NF_SRC_FILE:
    case NF_SRC_SAFETENSORS:
    case NF_SRC_GGUF:
    case NF_SRC_ARTIFACT: {
        const char *key = s->kind == NF_SRC_FILE ? "file"
                          : s->kind == NF_SRC_SAFETENSORS ? "safetensors"
                          : s->kind == NF_SRC_GGUF ? "gguf" : "artifact";
        p = ptr_key(ptr, key);
        s->path = read_id(x, nf_jobj_get(v, key), p, "a source path");
        free(p);
        ok &= s->path != NULL;
        if (s->kind != NF_SRC_FILE) {
            const char *nk2 = s->kind == NF_SRC_ARTIFACT ? "object" : "tensor";
            p = ptr_key(ptr, nk2);
            if (!nf_jobj_has(v, nk2)) {
                diag_at(x, NF_C_SCHEMA, p, "source lacks required member \"%s\"", nk2);
                ok = false;
            } else {
                s->name = read_id(x, nf_jobj_get(v, nk2), p, "a source name");
                ok &= s->name != NULL;
            }
            free(p);
        }
        break;
    }
    case NF_SRC_VALUES: {
        m = nf_jobj_get(v, "values");
        p = ptr_key(ptr, "values");
        if (expect_type(x, m, NF_J_ARRAY, p, "values")) {
            size_t n = nf_jarr_len(m);
            s->values = malloc((n ? n : 1) * sizeof *s->values);
            if (!s->values) {
                diag_at(x, NF_C_IO, p, "out of memory");
                ok = false;
                break;
            }
            for (size_t i = 0; i < n; i++) {
                nf_jval *e = nf_jarr_get(m, i);
                nf_jtype t = nf_jtype_of(e);
                if (t != NF_J_INT && t != NF_J_DOUBLE) {
                    char *q = nf_ptr_index(p, i);
                    diag_at(x, NF_C_SCHEMA, q, "values must be numbers");
                    free(q);
                    ok = false;
                    continue;
                }
                s->values[s->n_values++] = nf_jdouble(e);
            }
        } else {
            ok = false;
        }
        free(p);
        break;
    }
    case NF_SRC_CONCAT: {
        m = nf_jobj_get(v, "concat");
        p = ptr_key(ptr, "concat");
        if (depth > 4) {
            diag_at(x, NF_C_SCHEMA, p, "concat sources nest too deeply");
            ok = false;
        } else if (expect_type(x, m, NF_J_ARRAY, p, "concat") && nf_jarr_len(m) > 0) {
            size_t n = nf_jarr_len(m);
            s->items = calloc(n, sizeof *s->items);
            if (!s->items) {
                ok = false;
            } else {
                s->n_items = n;
                for (size_t i = 0; i < n; i++) {
                    char *q = nf_ptr_index(p, i);
                    ok &= parse_source(x, nf_jarr_get(m, i), q, &s->items[i], depth + 1);
                    free(q);
                }
            }
        } else {
            diag_at(x, NF_C_SCHEMA, p, "concat must be a non-empty array of sources");
            ok = false;
        }
        free(p);
        break;
    }
    default:
        break;
    }
    if ((m = nf_jobj_get(v, "offset")) || nf_jobj_has(v, "offset")) {
        p = ptr_key(ptr, "offset");
        ok &= read_u64(x, m, p, "source offset", false, &s->offset);
        free(p);
    }
    if (nf_jobj_has(v, "dtype")) {
        p = ptr_key(ptr, "dtype");
        m = nf_jobj_get(v, "dtype");
        const char *t = nf_jstr(m, NULL);
        bool known = false;
        for (int i = 0; t && dtypes[i]; i++)
            known |= strcmp(dtypes[i], t) == 0;
        if (!known) {
            diag_at(x, NF_C_SCHEMA, p, "dtype must be one of bf16 f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64");
            ok = false;
        } else {
            s->dtype = strdup(t);
        }
        free(p);
    }
    if (nf_jobj_has(v, "rows")) {
        p = ptr_key(ptr, "rows");
        m = nf_jobj_get(v, "rows");
        if (expect_type(x, m, NF_J_ARRAY, p, "rows") && nf_jarr_len(m) == 2) {
            char *q0 = nf_ptr_index(p, 0), *q1 = nf_ptr_index(p, 1);
            bool r = read_u64(x, nf_jarr_get(m, 0), q0, "rows begin", false, &s->rows[0]) &
                     read_u64(x, nf_jarr_get(m, 1), q1, "rows end", false, &s->rows[1]);
            free(q0);
            free(q1);
            if (r && s->rows[0] >= s->rows[1]) {
                diag_at(x, NF_C_RANGE, p, "rows must be [begin, end) with begin < end");
                r = false;
            }
            s->has_rows = r;
            ok &= r;
        } else {
            diag_at(x, NF_C_SCHEMA, p, "rows must be [BEGIN, END]");
            ok = false;
        }
        free(p);
    }
    if (nf_jobj_has(v, "unpermute")) {
        p = ptr_key(ptr, "unpermute");
        ok &= parse_unpermute(x, nf_jobj_get(v, "unpermute"), p, s);
        free(p);
    }
    if (nf_jobj_has(v, "map")) {
        p = ptr_key(ptr, "map");
        const char *mp = nf_jstr(nf_jobj_get(v, "map"), NULL);
        if (mp && strcmp(mp, "minus-one") == 0) {
            s->map = NF_VMAP_MINUS_ONE;
        } else if (mp && strcmp(mp, "log-neg") == 0) {
            s->map = NF_VMAP_LOG_NEG;
        } else {
            diag_at(x, NF_C_SCHEMA, p, "map must be \"minus-one\" or \"log-neg\"");
            ok = false;
        }
        free(p);
    }
    return ok;
}

/* ---- components (spec 4.2, 9.1, 9.2) ---- */

static void parse_resources(pctx *x, nf_component *comp, nf_jval *v, const char *ptr)
{
    if (!expect_type(x, v, NF_J_OBJECT, ptr, "resources"))
        return;
    size_t n = nf_jobj_len(v);
    comp->resources = nf_arena_alloc(x->c->arena, (n ? n : 1) * sizeof *comp->resources);
    if (!comp->resources) {
        diag_at(x, NF_C_IO, ptr, "out of memory");
        return;
    }
    nf_jiter it = nf_jobj_iter(v);
    const char *role;
    nf_jval *m;
    while (nf_jobj_next(&it, &role, &m)) {
        char *p = ptr_key(ptr, role);
        char *id = to_arena(x, read_id(x, m, p, "a resource reference"));
        if (id) {
            nf_resource_ref *r = &comp->resources[comp->n_resources++];
            r->role = nf_catalog_intern(x->c, role, strlen(role));
            r->object = id;
            r->obj = SIZE_MAX;
        }
        free(p);
    }
}

static void parse_proposal(pctx *x, nf_component *comp, nf_jval *v, const char *ptr)
{
    static const char *const allowed[] = {"domain", "rows", NULL};
    static const char *const required[] = {"domain", NULL};
    if (!expect_type(x, v, NF_J_OBJECT, ptr, "proposal"))
        return;
    check_members(x, v, ptr, allowed, required, "proposal");
    comp->has_proposal = true;
    nf_jval *dom = nf_jobj_get(v, "domain");
    const char *ds = nf_jstr(dom, NULL);
    char *p = ptr_key(ptr, "domain");
    if (nf_jobj_has(v, "domain")) {
        if (ds && strcmp(ds, "indexed") == 0)
            comp->proposal_indexed = true;
        else if (!ds || strcmp(ds, "full") != 0)
            diag_at(x, NF_C_SCHEMA, p, "proposal domain must be \"full\" or \"indexed\"");
    }
    free(p);
    p = ptr_key(ptr, "rows");
    if (nf_jobj_has(v, "rows")) {
        if (!comp->proposal_indexed && ds && strcmp(ds, "full") == 0)
            diag_at(x, NF_C_SCHEMA, p, "proposal rows is only allowed with domain \"indexed\"");
        else if (read_u64(x, nf_jobj_get(v, "rows"), p, "proposal rows", true,
                          &comp->proposal_rows))
            comp->has_rows = true;
    } else if (comp->proposal_indexed) {
        diag_at(x, NF_C_SCHEMA, p, "proposal with domain \"indexed\" needs rows");
    }
    free(p);
}

static void parse_components(pctx *x, nf_jval *v)
{
    static const char *const allowed[] = {"config", "target", "resources", "proposal", NULL};
    static const char *const required[] = {"config", NULL};
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_OBJECT, "/components", "components"))
        return;
    size_t n = nf_jobj_len(v);
    if (n == 0) {
        diag_at(x, NF_C_SCHEMA, "/components", "components must not be empty");
        return;
    }
    static const char *const path[] = {"components", NULL};
    nf_span span;
    char *nulp = NULL;
    if (nf_jdoc_span(x->doc, path, &span) &&
        nf_jname_has_nul(x->doc, span, "/components", &nulp)) {
        diag_at(x, NF_C_SCHEMA, nulp, "component ID must not contain U+0000");
        free(nulp);
    }
    c->components = calloc(n, sizeof *c->components);
    if (!c->components) {
        diag_at(x, NF_C_IO, "/components", "out of memory");
        return;
    }
    nf_jiter it = nf_jobj_iter(v);
    const char *key;
    nf_jval *m;
    while (nf_jobj_next(&it, &key, &m)) {
        char *p = ptr_key("/components", key);
        nf_component *comp = &c->components[c->n_components++];
        comp->id = nf_arena_strndup(c->arena, key, strlen(key));
        comp->config_text = "{}";
        comp->config_len = 2;
        comp->target_index = SIZE_MAX;
        key_id_ok(x, key, p, "component ID");
        if (expect_type(x, m, NF_J_OBJECT, p, "a component")) {
            check_members(x, m, p, allowed, required, "component");
            nf_jval *cfg = nf_jobj_get(m, "config");
            char *q = ptr_key(p, "config");
            if (nf_jobj_has(m, "config") && expect_type(x, cfg, NF_J_OBJECT, q, "config")) {
                const char *cpath[] = {"components", key, "config", NULL};
                nf_span cs;
                if (nf_jdoc_span(x->doc, cpath, &cs)) {
                    comp->config_text = c->text + cs.start;
                    comp->config_len = cs.len;
                }
            }
            free(q);
            if (nf_jobj_has(m, "target")) {
                q = ptr_key(p, "target");
                comp->target = to_arena(x, read_id(x, nf_jobj_get(m, "target"), q, "target"));
                free(q);
            }
            if (nf_jobj_has(m, "resources")) {
                q = ptr_key(p, "resources");
                const char *rpath[] = {"components", key, "resources", NULL};
                nf_span rs;
                char *np = NULL;
                if (nf_jdoc_span(x->doc, rpath, &rs) &&
                    nf_jname_has_nul(x->doc, rs, q, &np)) {
                    diag_at(x, NF_C_SCHEMA, np, "resource role must not contain U+0000");
                    free(np);
                }
                parse_resources(x, comp, nf_jobj_get(m, "resources"), q);
                free(q);
            }
            if (nf_jobj_has(m, "proposal")) {
                q = ptr_key(p, "proposal");
                if (strcmp(key, "text") != 0)
                    diag_at(x, NF_C_SCHEMA, q, "only the text component may have a proposal");
                parse_proposal(x, comp, nf_jobj_get(m, "proposal"), q);
                free(q);
            }
        }
        free(p);
    }
}

/* ---- objects (spec 5) ---- */

static void parse_shape(pctx *x, nf_object *o, nf_jval *v, const char *ptr)
{
    if (!expect_type(x, v, NF_J_ARRAY, ptr, "shape"))
        return;
    size_t n = nf_jarr_len(v);
    if (n > NF_MAX_RANK) {
        diag_at(x, NF_C_SCHEMA, ptr, "shape has rank %zu; at most %d dimensions are allowed",
                n, NF_MAX_RANK);
        o->enc_status = NF_ENC_INVALID;
        return;
    }
    bool ok = true;
    uint64_t *dims = n ? nf_arena_alloc(x->c->arena, n * sizeof *dims) : NULL;
    if (n && !dims) {
        diag_at_oom(x);
        o->enc_status = NF_ENC_INVALID;
        return;
    }
    if (n)
        o->dims = dims;
    for (size_t i = 0; i < n; i++) {
        char *p = x->bigints ? nf_ptr_index(ptr, i) : NULL;
        nf_jval *e = nf_jarr_get(v, i);
        uint64_t u = 0;
        if (!x->bigints && nf_jval_u64(x->doc, e, NULL, &u) == NF_JU64_OK && u > 0) {
            o->dims[i] = u;
            continue;
        }
        if (!p)
            p = nf_ptr_index(ptr, i);
        if (read_u64(x, e, p, "a shape dimension", true, &u))
            o->dims[i] = u;
        else
            ok = false;
        free(p);
    }
    o->rank = (unsigned)n;
    if (!ok)
        o->enc_status = NF_ENC_INVALID;
}

static char *read_name(pctx *x, nf_jval *v, const char *ptr, const char *what)
{
    return interned(x, read_id(x, v, ptr, what));
}

static void parse_object(pctx *x, size_t i, nf_jval *v)
{
    static const char *const t_allowed[] = {"id", "kind", "shape", "format", "layout",
                                            "offset", "bytes", "divisors", NULL};
    static const char *const t_allowed_m[] = {"id", "kind", "shape", "format", "layout",
                                              "offset", "bytes", "divisors", "source", NULL};
    static const char *const t_required[] = {"id", "kind", "shape", "format", "layout",
                                             "offset", "bytes", NULL};
    static const char *const t_required_m[] = {"id", "kind", "shape", "format", "layout", NULL};
    static const char *const r_allowed[] = {"id", "kind", "encoding", "offset", "bytes", NULL};
    static const char *const r_allowed_m[] = {"id", "kind", "encoding", "offset", "bytes",
                                              "source", NULL};
    static const char *const r_required[] = {"id", "kind", "encoding", "offset", "bytes", NULL};
    static const char *const r_required_m[] = {"id", "kind", "encoding", NULL};
    nf_object *o = &x->c->objects[i];
    bool man = x->mode == NF_CAT_MANIFEST;
    char *p = elem_ptr("/objects", i, NULL), *q;
    o->dims = (uint64_t *)no_dims;
    o->divisors = 1;
    o->enc_status = NF_ENC_OK;
    if (!expect_type(x, v, NF_J_OBJECT, p, "an object")) {
        o->enc_status = NF_ENC_INVALID;
        free(p);
        return;
    }
    nf_jval *kind = nf_jobj_get(v, "kind");
    const char *ks = nf_jstr(kind, NULL);
    q = ptr_key(p, "kind");
    if (!nf_jobj_has(v, "kind")) {
        diag_at(x, NF_C_SCHEMA, q, "object lacks required member \"kind\"");
        o->enc_status = NF_ENC_INVALID;
    } else if (ks && strcmp(ks, "tensor") == 0) {
        o->kind = NF_OBJ_TENSOR;
    } else if (ks && strcmp(ks, "resource") == 0) {
        o->kind = NF_OBJ_RESOURCE;
    } else {
        diag_at(x, NF_C_SCHEMA, q, "kind must be \"tensor\" or \"resource\"");
        o->enc_status = NF_ENC_INVALID;
    }
    free(q);
    bool tensor = o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_OK;
    bool resource = o->kind == NF_OBJ_RESOURCE && o->enc_status == NF_ENC_OK;
    if (tensor)
        check_members(x, v, p, man ? t_allowed_m : t_allowed, man ? t_required_m : t_required,
                      "tensor object");
    else if (resource)
        check_members(x, v, p, man ? r_allowed_m : r_allowed, man ? r_required_m : r_required,
                      "resource object");

    if (nf_jobj_has(v, "id")) {
        q = ptr_key(p, "id");
        o->id = to_arena(x, read_id(x, nf_jobj_get(v, "id"), q, "object ID"));
        free(q);
    }
    if (tensor) {
        if (nf_jobj_has(v, "shape")) {
            q = ptr_key(p, "shape");
            parse_shape(x, o, nf_jobj_get(v, "shape"), q);
            free(q);
        } else {
            o->enc_status = NF_ENC_INVALID;
        }
        q = ptr_key(p, "format");
        if (nf_jobj_has(v, "format") &&
            (o->format_name = read_name(x, nf_jobj_get(v, "format"), q, "format")))
            o->format = nf_format_from_name(o->format_name, strlen(o->format_name));
        else
            o->enc_status = NF_ENC_INVALID;
        free(q);
        q = ptr_key(p, "layout");
        if (nf_jobj_has(v, "layout") &&
            (o->layout_name = read_name(x, nf_jobj_get(v, "layout"), q, "layout")))
            o->layout = nf_layout_from_name(o->layout_name, strlen(o->layout_name));
        else
            o->enc_status = NF_ENC_INVALID;
        free(q);
        if (nf_jobj_has(v, "divisors")) {
            q = ptr_key(p, "divisors");
            if (read_u64(x, nf_jobj_get(v, "divisors"), q, "divisors", true, &o->divisors))
                o->has_divisors = true;
            else
                o->enc_status = NF_ENC_INVALID;
            free(q);
        }
    } else if (resource && nf_jobj_has(v, "encoding")) {
        q = ptr_key(p, "encoding");
        o->encoding_name = read_name(x, nf_jobj_get(v, "encoding"), q, "encoding");
        free(q);
    }
    if (nf_jobj_has(v, "offset")) {
        q = ptr_key(p, "offset");
        o->has_offset = read_u64(x, nf_jobj_get(v, "offset"), q, "offset", false, &o->offset);
        free(q);
    }
    if (nf_jobj_has(v, "bytes")) {
        q = ptr_key(p, "bytes");
        o->has_bytes = read_u64(x, nf_jobj_get(v, "bytes"), q, "bytes", true, &o->bytes);
        free(q);
    }
    o->bytes_given = nf_jobj_has(v, "bytes");
    if (man && nf_jobj_has(v, "source")) {
        o->source_raw = to_arena(x, nf_jval_to_text(nf_jobj_get(v, "source"), false, NULL));
        q = ptr_key(p, "source");
        o->source = calloc(1, sizeof *o->source);
        if (o->source && !parse_source(x, nf_jobj_get(v, "source"), q, o->source, 0)) {
            /* keep it: diagnostics already say what is wrong */
        }
        free(q);
    }

    /* encoded size (DESIGN 8); unknown names are not structural (DESIGN 13) */
    if (tensor && o->enc_status == NF_ENC_OK) {
        const char *why = NULL;
        nf_encoding enc;
        o->enc_status = nf_encoding_compute(o->format, o->layout, o->dims, o->rank,
                                            o->divisors, &enc, &why);
        if (o->enc_status == NF_ENC_OK || o->enc_status == NF_ENC_UNSUPPORTED)
            if (!nf_shape_elements(o->dims, o->rank, &o->elements))
                o->elements = 0;
        if (o->enc_status == NF_ENC_INVALID) {
            diag_at(x, NF_C_ENCODING, p, "%s with %s: %s", o->format_name, o->layout_name,
                    why ? why : "not allowed");
        } else if (o->enc_status == NF_ENC_OVERFLOW) {
            diag_at(x, NF_C_RANGE, p, "encoded size of shape overflows U64%s%s",
                    why ? ": " : "", why ? why : "");
        } else if (o->enc_status == NF_ENC_OK && o->has_bytes &&
                   o->bytes != enc.encoded_bytes) {
            q = ptr_key(p, "bytes");
            diag_at(x, NF_C_SIZE, q, "bytes is %llu but %s/%s of this shape encodes to %llu",
                    (unsigned long long)o->bytes, o->format_name, o->layout_name,
                    (unsigned long long)enc.encoded_bytes);
            free(q);
        }
        if (o->enc_status == NF_ENC_OK && !o->has_bytes && !nf_jobj_has(v, "bytes")) {
            o->bytes = enc.encoded_bytes;
            o->has_bytes = true;
        }
    }
    if (tensor && o->has_offset && o->offset % NF_TENSOR_ALIGN) {
        q = ptr_key(p, "offset");
        diag_at(x, NF_C_ALIGNMENT, q, "%llu is not a multiple of %d",
                (unsigned long long)o->offset, NF_TENSOR_ALIGN);
        free(q);
    }
    free(p);
}

static int cmp_by_offset(const void *a, const void *b, void *ctx)
{
    const nf_object *objs = ctx;
    const nf_object *x = &objs[*(const size_t *)a], *y = &objs[*(const size_t *)b];
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Order, overlap and bounds over the objects that have offset and bytes.
 * payload: the logical payload size, or UINT64_MAX when unknown. */
static void check_ranges(pctx *x, uint64_t payload)
{
    nf_catalog *c = x->c;
    size_t n = c->n_objects, k = 0;
    size_t *ix = malloc((n ? n : 1) * sizeof *ix);
    if (!ix) {
        diag_at(x, NF_C_IO, "/objects", "out of memory");
        return;
    }
    bool have_prev = false;
    uint64_t prev_off = 0;
    size_t prev_i = 0;
    for (size_t i = 0; i < n; i++) {
        nf_object *o = &c->objects[i];
        if (!o->has_offset || !o->has_bytes)
            continue;
        uint64_t end;
        if (!nf_add_u64(o->offset, o->bytes, &end)) {
            char *p = elem_ptr("/objects", i, "bytes");
            diag_at(x, NF_C_RANGE, p, "offset + bytes overflows U64");
            free(p);
            continue;
        }
        if (have_prev && o->offset < prev_off) {
            char *p = elem_ptr("/objects", i, "offset");
            diag_at(x, NF_C_ORDER, p, "offset %llu is below the offset %llu of /objects/%zu",
                    (unsigned long long)o->offset, (unsigned long long)prev_off, prev_i);
            free(p);
        }
        have_prev = true;
        prev_off = o->offset;
        prev_i = i;
        if (payload != UINT64_MAX && end > payload) {
            char *p = elem_ptr("/objects", i, NULL);
            diag_at(x, NF_C_BOUNDS, p, "object ends at %llu, past the payload of %llu bytes",
                    (unsigned long long)end, (unsigned long long)payload);
            free(p);
        }
        ix[k++] = i;
    }
    qsort_r(ix, k, sizeof *ix, cmp_by_offset, c->objects);
    /* sweep: the object reaching furthest so far against the next start */
    uint64_t reach = 0;
    size_t reach_i = SIZE_MAX;
    for (size_t j = 0; j < k; j++) {
        nf_object *o = &c->objects[ix[j]];
        if (reach_i != SIZE_MAX && o->offset < reach) {
            char *p = elem_ptr("/objects", ix[j], NULL);
            diag_at(x, NF_C_OVERLAP, p, "bytes [%llu, %llu) overlap /objects/%zu",
                    (unsigned long long)o->offset,
                    (unsigned long long)(o->offset + o->bytes), reach_i);
            free(p);
        }
        if (reach_i == SIZE_MAX || o->offset + o->bytes > reach) {
            reach = o->offset + o->bytes;
            reach_i = ix[j];
        }
    }
    free(ix);
}

static void parse_objects(pctx *x, nf_jval *v)
{
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_ARRAY, "/objects", "objects"))
        return;
    size_t n = nf_jarr_len(v);
    if (n == 0) {
        diag_at(x, NF_C_SCHEMA, "/objects", "objects must not be empty");
        return;
    }
    c->objects = calloc(n, sizeof *c->objects);
    c->objects_cap = n;
    if (!c->objects || !nf_ixmap_init(&c->ix->objects, n)) {
        diag_at(x, NF_C_IO, "/objects", "out of memory for %zu objects", n);
        return;
    }
    c->n_objects = n;
    for (size_t i = 0; i < n; i++) {
        parse_object(x, i, nf_jarr_get(v, i));
        nf_object *o = &c->objects[i];
        if (!o->id)
            continue;
        size_t prev = nf_catalog_index_add_object(c, i);
        if (prev == SIZE_MAX - 1) {
            diag_at(x, NF_C_IO, "/objects", "out of memory");
        } else if (prev != SIZE_MAX) {
            char *p = elem_ptr("/objects", i, "id");
            diag_at(x, NF_C_DUPLICATE_ID, p, "object ID \"%s\" is already used by /objects/%zu",
                    o->id, prev);
            free(p);
        }
    }
}

/* ---- bindings and uses (spec 7, 8) ---- */

static bool parse_binding(pctx *x, nf_binding *b, nf_jval *v, const char *ptr)
{
    static const char *const allowed[] = {"object", "parts", NULL};
    b->obj = SIZE_MAX;
    if (!expect_type(x, v, NF_J_OBJECT, ptr, "a binding"))
        return false;
    bool ok = check_members(x, v, ptr, allowed, NULL, "binding");
    bool ho = nf_jobj_has(v, "object"), hp = nf_jobj_has(v, "parts");
    if (ho == hp) {
        diag_at(x, NF_C_SCHEMA, ptr, "a binding has exactly one of \"object\" and \"parts\"");
        return false;
    }
    char *p;
    if (ho) {
        p = ptr_key(ptr, "object");
        b->object = to_arena(x, read_id(x, nf_jobj_get(v, "object"), p, "binding object"));
        free(p);
        return ok && b->object;
    }
    nf_jval *parts = nf_jobj_get(v, "parts");
    p = ptr_key(ptr, "parts");
    if (!expect_type(x, parts, NF_J_ARRAY, p, "parts") || nf_jarr_len(parts) == 0) {
        if (nf_jtype_of(parts) == NF_J_ARRAY)
            diag_at(x, NF_C_SCHEMA, p, "parts must not be empty");
        free(p);
        return false;
    }
    size_t n = nf_jarr_len(parts);
    b->parts = nf_arena_alloc(x->c->arena, n * sizeof *b->parts);
    if (b->parts)
        memset(b->parts, 0, n * sizeof *b->parts);
    if (!b->parts) {
        diag_at(x, NF_C_IO, p, "out of memory");
        free(p);
        return false;
    }
    b->n_parts = n;
    static const char *const pa[] = {"object", "range", NULL};
    for (size_t i = 0; i < n; i++) {
        nf_jval *e = nf_jarr_get(parts, i);
        nf_part *pt = &b->parts[i];
        pt->obj = SIZE_MAX;
        char *q = nf_ptr_index(p, i);
        if (!expect_type(x, e, NF_J_OBJECT, q, "a part") ||
            !check_members(x, e, q, pa, pa, "part")) {
            ok = false;
            free(q);
            continue;
        }
        char *r = ptr_key(q, "object");
        pt->object = to_arena(x, read_id(x, nf_jobj_get(e, "object"), r, "part object"));
        ok &= pt->object != NULL;
        free(r);
        r = ptr_key(q, "range");
        nf_jval *rg = nf_jobj_get(e, "range");
        if (expect_type(x, rg, NF_J_ARRAY, r, "range") && nf_jarr_len(rg) == 2) {
            char *r0 = nf_ptr_index(r, 0), *r1 = nf_ptr_index(r, 1);
            bool g = read_u64(x, nf_jarr_get(rg, 0), r0, "range begin", false, &pt->begin) &
                     read_u64(x, nf_jarr_get(rg, 1), r1, "range end", false, &pt->end);
            if (g && pt->begin >= pt->end) {
                diag_at(x, NF_C_PART_RANGE, r, "range [%llu, %llu) is empty or reversed",
                        (unsigned long long)pt->begin, (unsigned long long)pt->end);
                g = false;
            }
            ok &= g;
            free(r0);
            free(r1);
        } else {
            if (nf_jtype_of(rg) == NF_J_ARRAY)
                diag_at(x, NF_C_SCHEMA, r, "range must be [BEGIN, END]");
            ok = false;
        }
        free(r);
        free(q);
    }
    free(p);
    return ok;
}

static void parse_bindings(pctx *x, nf_jval *v)
{
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_OBJECT, "/bindings", "bindings"))
        return;
    static const char *const path[] = {"bindings", NULL};
    nf_span span;
    char *nulp = NULL;
    if (nf_jdoc_span(x->doc, path, &span) &&
        nf_jname_has_nul(x->doc, span, "/bindings", &nulp)) {
        diag_at(x, NF_C_SCHEMA, nulp, "parameter name must not contain U+0000");
        free(nulp);
    }
    size_t n = nf_jobj_len(v);
    c->bindings = calloc(n ? n : 1, sizeof *c->bindings);
    if (!c->bindings || !nf_ixmap_init(&c->ix->bindings, n)) {
        diag_at(x, NF_C_IO, "/bindings", "out of memory");
        return;
    }
    nf_jiter it = nf_jobj_iter(v);
    const char *name;
    nf_jval *m;
    while (nf_jobj_next(&it, &name, &m)) {
        nf_named_binding *nb = &c->bindings[c->n_bindings];
        char *p = ptr_key("/bindings", name);
        key_id_ok(x, name, p, "parameter name");
        nb->name = nf_arena_strndup(c->arena, name, strlen(name));
        nb->component = SIZE_MAX;
        parse_binding(x, &nb->b, m, p);
        if (nb->name)
            nf_catalog_index_add_binding(c, c->n_bindings);
        c->n_bindings++;
        free(p);
    }
}

static void parse_uses(pctx *x, nf_jval *v)
{
    static const char *const allowed[] = {"parameter", "input", "activation_policy",
                                          "auxiliaries", NULL};
    static const char *const required[] = {"parameter", "input", NULL};
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_ARRAY, "/uses", "uses"))
        return;
    size_t n = nf_jarr_len(v);
    c->uses = calloc(n ? n : 1, sizeof *c->uses);
    if (!c->uses || !nf_ixmap_init(&c->ix->uses, n)) {
        diag_at(x, NF_C_IO, "/uses", "out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        nf_jval *e = nf_jarr_get(v, i);
        nf_use *u = &c->uses[c->n_uses++];
        u->binding = SIZE_MAX;
        char *p = nf_ptr_index("/uses", i), *q;
        if (!expect_type(x, e, NF_J_OBJECT, p, "a use")) {
            free(p);
            continue;
        }
        check_members(x, e, p, allowed, required, "use");
        if (nf_jobj_has(e, "parameter")) {
            q = ptr_key(p, "parameter");
            u->parameter = to_arena(x, read_id(x, nf_jobj_get(e, "parameter"), q, "parameter"));
            free(q);
        }
        if (nf_jobj_has(e, "input")) {
            q = ptr_key(p, "input");
            u->input = interned(x, read_id(x, nf_jobj_get(e, "input"), q, "input"));
            free(q);
        }
        if (nf_jobj_has(e, "activation_policy")) {
            q = ptr_key(p, "activation_policy");
            const char *s = nf_jstr(nf_jobj_get(e, "activation_policy"), NULL);
            if (s && (!strcmp(s, "A16Only") || !strcmp(s, "AllowA8") || !strcmp(s, "AllowA4")))
                u->activation_policy = nf_catalog_intern(c, s, strlen(s));
            else
                diag_at(x, NF_C_SCHEMA, q,
                        "activation_policy must be \"A16Only\", \"AllowA8\" or \"AllowA4\"");
            free(q);
        }
        if (nf_jobj_has(e, "auxiliaries")) {
            q = ptr_key(p, "auxiliaries");
            nf_jval *a = nf_jobj_get(e, "auxiliaries");
            if (expect_type(x, a, NF_J_OBJECT, q, "auxiliaries")) {
                size_t na = nf_jobj_len(a);
                u->aux = nf_arena_alloc(c->arena, (na ? na : 1) * sizeof *u->aux);
                if (u->aux)
                    memset(u->aux, 0, (na ? na : 1) * sizeof *u->aux);
                nf_jiter it = nf_jobj_iter(a);
                const char *role;
                nf_jval *m;
                while (u->aux && nf_jobj_next(&it, &role, &m)) {
                    nf_aux *ax = &u->aux[u->n_aux++];
                    ax->role = nf_catalog_intern(c, role, strlen(role));
                    char *r = ptr_key(q, role);
                    parse_binding(x, &ax->b, m, r);
                    free(r);
                }
            }
            free(q);
        }
        if (u->parameter && u->input) {
            size_t prev = nf_catalog_index_add_use(c, i);
            if (prev == SIZE_MAX - 1)
                diag_at_oom(x);
            else if (prev != SIZE_MAX)
                diag_at(x, NF_C_DUPLICATE_USE, p,
                        "(parameter \"%s\", input \"%s\") is already used by /uses/%zu",
                        u->parameter, u->input, prev);
        }
        free(p);
    }
}

/* ---- files (spec 3.3) ---- */

static void parse_files(pctx *x, nf_jval *v)
{
    static const char *const fa[] = {"path", "payload_bytes", NULL};
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_ARRAY, "/files", "files"))
        return;
    size_t n = nf_jarr_len(v);
    if (n == 0) {
        diag_at(x, NF_C_SCHEMA, "/files", "files must not be empty");
        return;
    }
    c->files = calloc(n, sizeof *c->files);
    nf_strmap names = NF_STRMAP_INIT;
    if (!c->files) {
        diag_at(x, NF_C_IO, "/files", "out of memory");
        return;
    }
    c->n_files = n;
    c->has_files = true;
    bool sum_ok = true;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        nf_jval *e = nf_jarr_get(v, i);
        nf_file *f = &c->files[i];
        char *p = nf_ptr_index("/files", i), *q;
        if (!expect_type(x, e, NF_J_OBJECT, p, "a files entry") ||
            !check_members(x, e, p, fa, fa, "files entry")) {
            sum_ok = false;
            free(p);
            continue;
        }
        q = ptr_key(p, "path");
        nf_jval *pv = nf_jobj_get(e, "path");
        if (i == 0) {
            if (nf_jtype_of(pv) != NF_J_NULL)
                diag_at(x, NF_C_FILES, q, "files[0] describes the entry: its path must be null");
        } else if (nf_jtype_of(pv) != NF_J_STRING) {
            diag_at(x, NF_C_FILES, q, "a part path must be a string, not %s",
                    nf_jtype_name(nf_jtype_of(pv)));
        } else {
            size_t len;
            const char *s = nf_jstr(pv, &len);
            const char *bad = NULL;
            if (len == 0)
                bad = "is empty";
            else if (memchr(s, 0, len))
                bad = "contains U+0000";
            else if (memchr(s, '/', len))
                bad = "contains '/'";
            else if (memchr(s, '\\', len))
                bad = "contains '\\'";
            else if (!strcmp(s, ".") || !strcmp(s, ".."))
                bad = "is \".\" or \"..\"";
            else if (x->entry_name && !strcmp(s, x->entry_name))
                bad = "is the entry's own file name";
            if (bad) {
                diag_at(x, NF_C_FILES, q, "part path %s", bad);
            } else {
                f->path = nf_arena_strndup(c->arena, s, len);
                size_t prev = f->path ? nf_strmap_add(&names, f->path, len, i) : SIZE_MAX;
                if (prev != SIZE_MAX && prev != SIZE_MAX - 1) {
                    diag_at(x, NF_C_FILES, q, "part path \"%s\" is also files[%zu]", s, prev);
                }
            }
        }
        free(q);
        q = ptr_key(p, "payload_bytes");
        if (read_u64(x, nf_jobj_get(e, "payload_bytes"), q, "payload_bytes", true,
                     &f->payload_bytes)) {
            f->logical_offset = sum;
            if (sum_ok && !nf_add_u64(sum, f->payload_bytes, &sum)) {
                diag_at(x, NF_C_RANGE, q, "the sum of payload_bytes overflows U64");
                sum_ok = false;
            }
        } else {
            sum_ok = false;
        }
        free(q);
        free(p);
    }
    nf_strmap_free(&names);
    c->payload_bytes = sum_ok ? sum : UINT64_MAX;
    if (!sum_ok)
        c->has_files = false;
}

/* ---- metadata (spec 10; DESIGN 9 and 13 for integrity) ---- */

static bool is_lower_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static void parse_metadata(pctx *x, nf_jval *v)
{
    nf_catalog *c = x->c;
    if (!expect_type(x, v, NF_J_OBJECT, "/metadata", "metadata"))
        return;
    c->has_metadata = true;
    if (nf_jobj_has(v, "name")) {
        size_t n;
        const char *s = nf_jstr(nf_jobj_get(v, "name"), &n);
        if (!s || n == 0)
            diag_at(x, NF_C_SCHEMA, "/metadata/name", "metadata name must be a non-empty string");
    }
    static const char *const path[] = {"metadata", NULL};
    nf_span span;
    if (nf_jdoc_span(x->doc, path, &span)) {
        /* such names cannot be written back (json-c keys end at a NUL):
         * refused like component keys, binding names and roles */
        char *nulp = NULL;
        if (nf_jname_has_nul(x->doc, span, "/metadata", &nulp)) {
            diag_at(x, NF_C_SCHEMA, nulp, "metadata member name must not contain U+0000");
            free(nulp);
        }
        c->metadata_text = c->text + span.start;
        c->metadata_len = span.len;
    }

    if (!nf_jobj_has(v, "integrity"))
        return;
    c->has_integrity = true;
    nf_jval *in = nf_jobj_get(v, "integrity");
    if (nf_jtype_of(in) != NF_J_OBJECT) {
        diag_at(x, NF_C_INTEGRITY, "/metadata/integrity", "integrity must be an object");
        return;
    }
    nf_jiter it = nf_jobj_iter(in);
    const char *k;
    nf_jval *m;
    while (nf_jobj_next(&it, &k, &m)) {
        if (strcmp(k, "sha256") != 0) {
            char *p = ptr_key("/metadata/integrity", k);
            diag_at(x, NF_C_INTEGRITY, p, "unknown member \"%s\" in integrity", k);
            free(p);
        }
    }
    nf_jval *sh = nf_jobj_get(in, "sha256");
    if (nf_jtype_of(sh) != NF_J_OBJECT) {
        diag_at(x, NF_C_INTEGRITY, "/metadata/integrity/sha256",
                "integrity needs a sha256 object");
        return;
    }
    it = nf_jobj_iter(sh);
    while (nf_jobj_next(&it, &k, &m)) {
        size_t len;
        const char *s = nf_jstr(m, &len);
        size_t oi = nf_catalog_find(c, k);
        if (oi == SIZE_MAX || !s || !is_lower_hex64(s, len)) {
            char *p = ptr_key("/metadata/integrity/sha256", k);
            if (oi == SIZE_MAX)
                diag_at(x, NF_C_INTEGRITY, p, "digest for \"%s\", which is no object", k);
            else
                diag_at(x, NF_C_INTEGRITY, p, "digest must be 64 lowercase hex digits");
            free(p);
            continue;
        }
        nf_object_set_digest_hex(&c->objects[oi], s);
    }
}

/* ---- references (spec 11.1 item 4) ---- */

static void resolve_binding(pctx *x, nf_binding *b, const char *ptr)
{
    nf_catalog *c = x->c;
    if (b->object) {
        b->obj = nf_catalog_find(c, b->object);
        char *p = ptr_key(ptr, "object");
        if (b->obj == SIZE_MAX)
            diag_at(x, NF_C_REFERENCE, p, "no object \"%s\"", b->object);
        else if (c->objects[b->obj].kind != NF_OBJ_TENSOR)
            diag_at(x, NF_C_REFERENCE, p, "\"%s\" is a resource, not a tensor", b->object);
        free(p);
        return;
    }
    for (size_t i = 0; i < b->n_parts; i++) {
        nf_part *pt = &b->parts[i];
        if (!pt->object)
            continue;
        pt->obj = nf_catalog_find(c, pt->object);
        char *p = ptr_fmt("%s/parts/%zu/object", ptr, i);
        if (pt->obj == SIZE_MAX) {
            diag_at(x, NF_C_REFERENCE, p, "no object \"%s\"", pt->object);
        } else if (c->objects[pt->obj].kind != NF_OBJ_TENSOR) {
            diag_at(x, NF_C_REFERENCE, p, "\"%s\" is a resource, not a tensor", pt->object);
        } else {
            nf_object *o = &c->objects[pt->obj];
            uint64_t el;
            if (o->enc_status != NF_ENC_INVALID &&
                nf_shape_elements(o->dims, o->rank, &el) && pt->end > el && pt->end > pt->begin) {
                char *r = ptr_fmt("%s/parts/%zu/range", ptr, i);
                diag_at(x, NF_C_PART_RANGE, r,
                        "range end %llu is past the %llu elements of \"%s\"",
                        (unsigned long long)pt->end, (unsigned long long)el, pt->object);
                free(r);
            }
        }
        free(p);
    }
}

static void check_references(pctx *x)
{
    nf_catalog *c = x->c;
    for (size_t i = 0; i < c->n_components; i++) {
        nf_component *k = &c->components[i];
        char *base = ptr_key("/components", k->id ? k->id : "");
        if (k->target) {
            if (k->target_index == SIZE_MAX) {
                char *p = ptr_key(base, "target");
                diag_at(x, NF_C_REFERENCE, p, "target \"%s\" is no component", k->target);
                free(p);
            }
        }
        for (size_t j = 0; j < k->n_resources; j++) {
            nf_resource_ref *r = &k->resources[j];
            r->obj = nf_catalog_find(c, r->object);
            if (r->obj != SIZE_MAX && c->objects[r->obj].kind == NF_OBJ_RESOURCE)
                continue;
            char *pp = ptr_key(base, "resources");
            char *p2 = nf_ptr_join(pp, r->role ? r->role : "", r->role ? strlen(r->role) : 0);
            diag_at(x, NF_C_REFERENCE, p2, r->obj == SIZE_MAX ? "no object \"%s\""
                                                              : "\"%s\" is a tensor, not a resource",
                    r->object);
            free(pp);
            free(p2);
        }
        free(base);
    }
    for (size_t i = 0; i < c->n_bindings; i++) {
        char *p = ptr_key("/bindings", c->bindings[i].name ? c->bindings[i].name : "");
        resolve_binding(x, &c->bindings[i].b, p);
        free(p);
    }
    for (size_t i = 0; i < c->n_uses; i++) {
        nf_use *u = &c->uses[i];
        if (u->parameter && c->ix->bindings.s && nf_catalog_binding(c, u->parameter) == SIZE_MAX) {
            char *p = elem_ptr("/uses", i, "parameter");
            diag_at(x, NF_C_REFERENCE, p, "no binding \"%s\"", u->parameter);
            free(p);
        }
        for (size_t j = 0; j < u->n_aux; j++) {
            char *p = ptr_fmt("/uses/%zu/auxiliaries", i);
            char *q = nf_ptr_join(p, u->aux[j].role ? u->aux[j].role : "",
                                  u->aux[j].role ? strlen(u->aux[j].role) : 0);
            resolve_binding(x, &u->aux[j].b, q);
            free(p);
            free(q);
        }
    }
}

/* ---- root ---- */

nf_catalog *nf_catalog_parse_owned(char *text, size_t len, nf_cat_mode mode,
                                   const char *entry_name, nf_diags *d)
{
    static const char *const allowed[] = {"components", "objects", "bindings", "uses",
                                          "files", "metadata", "provenance", NULL};
    static const char *const required[] = {"components", "objects", "bindings", "uses",
                                           "files", NULL};
    static const char *const required_m[] = {"components", "objects", "bindings", "uses",
                                             NULL};
    nf_jdoc *doc = nf_jdoc_parse(text, len, 0, d);
    if (!doc) {
        free(text);
        return NULL;
    }
    nf_catalog *c = calloc(1, sizeof *c);
    if (c) {
        c->text = text;
        c->text_len = len;
        c->arena = nf_arena_new();
        c->ix = calloc(1, sizeof *c->ix);
    }
    if (!c || !c->arena || !c->ix) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        nf_jdoc_free(doc);
        if (c)
            nf_catalog_free(c);
        else
            free(text);
        return NULL;
    }
    pctx x = {c, doc, d, mode, entry_name, nf_jdoc_scan(doc)->n_bigint > 0};
    nf_jval *root = nf_jdoc_root(doc);
    if (!expect_type(&x, root, NF_J_OBJECT, "", "the catalog")) {
        nf_jdoc_free(doc);
        nf_catalog_free(c);
        return NULL;
    }
    check_members(&x, root, "", allowed, mode == NF_CAT_MANIFEST ? required_m : required,
                  "the catalog");
    if (nf_jobj_has(root, "files"))
        parse_files(&x, nf_jobj_get(root, "files"));
    if (nf_jobj_has(root, "components"))
        parse_components(&x, nf_jobj_get(root, "components"));
    if (nf_jobj_has(root, "objects"))
        parse_objects(&x, nf_jobj_get(root, "objects"));
    if (nf_jobj_has(root, "bindings"))
        parse_bindings(&x, nf_jobj_get(root, "bindings"));
    if (nf_jobj_has(root, "uses"))
        parse_uses(&x, nf_jobj_get(root, "uses"));
    if (nf_jobj_has(root, "metadata"))
        parse_metadata(&x, nf_jobj_get(root, "metadata"));
    if (nf_jobj_has(root, "provenance")) {
        nf_jval *pv = nf_jobj_get(root, "provenance");
        if (expect_type(&x, pv, NF_J_OBJECT, "/provenance", "provenance")) {
            static const char *const path[] = {"provenance", NULL};
            nf_span s;
            if (nf_jdoc_span(doc, path, &s)) {
                c->provenance_text = text + s.start;
                c->provenance_len = s.len;
            }
            c->has_provenance = true;
        }
    }
    /* unknown resource encodings are reported when interpreted (DESIGN 13) */
    check_ranges(&x, c->has_files ? c->payload_bytes : UINT64_MAX);
    if (!nf_catalog_index_build(c))
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    check_references(&x);
    nf_jdoc_free(doc);
    return c;
}

nf_catalog *nf_catalog_parse(const char *text, size_t len, nf_cat_mode mode,
                             const char *entry_name, nf_diags *d)
{
    char *copy = malloc(len ? len : 1);
    if (!copy) {
        nf_diag_add(d, NF_C_IO, "", "out of memory for %zu bytes of catalog", len);
        return NULL;
    }
    if (len)
        memcpy(copy, text, len);
    return nf_catalog_parse_owned(copy, len, mode, entry_name, d);
}

const char *nf_catalog_text(const nf_catalog *c, size_t *len)
{
    if (len)
        *len = c->text_len;
    return c->text;
}

void nf_catalog_free(nf_catalog *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_objects; i++) {
        nf_object *o = &c->objects[i];
        if (o->source) {
            source_free(o->source);
            free(o->source);
        }
    }
    free(c->components);
    free(c->objects);
    free(c->bindings);
    free(c->uses);
    free(c->files);
    free(c->own_provenance);
    nf_catalog_index_free(c);
    nf_arena_free(c->arena);
    free(c->text);
    free(c);
}

bool nf_binding_elements(const nf_catalog *c, const nf_binding *b, uint64_t *out)
{
    if (!b->parts) {
        if (b->obj == SIZE_MAX)
            return false;
        const nf_object *o = &c->objects[b->obj];
        return nf_shape_elements(o->dims, o->rank, out);
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < b->n_parts; i++)
        if (!nf_add_u64(sum, b->parts[i].end - b->parts[i].begin, &sum))
            return false;
    *out = sum;
    return true;
}

/* ---- layout of a manifest (DESIGN 5) ---- */

int nf_catalog_layout(nf_catalog *c, nf_diags *d)
{
    uint64_t pos = 0;
    int bad = 0;
    for (size_t i = 0; i < c->n_objects; i++) {
        nf_object *o = &c->objects[i];
        char *p = ptr_fmt("/objects/%zu", i);
        nf_encoding enc;
        if (o->kind == NF_OBJ_TENSOR && !o->has_bytes && nf_object_encoding(o, &enc) == NF_ENC_OK) {
            o->bytes = enc.encoded_bytes;
            o->has_bytes = true;
        }
        if (o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_UNSUPPORTED && !o->has_bytes) {
            nf_diag_add(d, NF_C_UNSUPPORTED, p, "format \"%s\" with layout \"%s\" is not known to this build%s",
                        o->format_name ? o->format_name : "", o->layout_name ? o->layout_name : "",
                        nf_format_reserved_note(o->format_name, o->format_name ? strlen(o->format_name) : 0));
            bad = 1;
        } else if (!o->has_bytes) {
            nf_diag_add(d, NF_C_SCHEMA, p, "the size of object \"%s\" is unknown", o->id ? o->id : "");
            bad = 1;
        }
        if (!o->has_offset) {
            uint64_t a = o->kind == NF_OBJ_TENSOR ? NF_TENSOR_ALIGN : 1;
            if (!nf_align_up_u64(pos, a, &o->offset)) {
                nf_diag_add(d, NF_C_RANGE, p, "payload offset overflows U64");
                bad = 1;
                free(p);
                break;
            }
            o->has_offset = true;
        }
        if (o->has_bytes) {
            uint64_t end;
            if (!nf_add_u64(o->offset, o->bytes, &end)) {
                nf_diag_add(d, NF_C_RANGE, p, "payload end overflows U64");
                bad = 1;
            } else if (end > pos) {
                pos = end;
            }
        }
        free(p);
    }
    if (bad)
        return -1;
    c->payload_bytes = pos;
    pctx x = {c, NULL, d, NF_CAT_MANIFEST, NULL, false};
    size_t before = d->n + d->dropped;
    check_ranges(&x, UINT64_MAX);
    for (size_t i = 0; i < c->n_objects; i++) {
        nf_object *o = &c->objects[i];
        if (o->kind == NF_OBJ_TENSOR && o->offset % NF_TENSOR_ALIGN) {
            char *p = ptr_fmt("/objects/%zu/offset", i);
            nf_diag_add(d, NF_C_ALIGNMENT, p, "%llu is not a multiple of %d",
                        (unsigned long long)o->offset, NF_TENSOR_ALIGN);
            free(p);
        }
    }
    return d->n + d->dropped > before ? -1 : 0;
}

/* ---- serialization ---- */

static nf_jval *binding_json(const nf_binding *b)
{
    nf_jval *o = nf_jnew_object();
    if (!o)
        return NULL;
    if (!b->parts) {
        nf_jobj_set(o, "object", nf_jnew_string(b->object ? b->object : ""));
        return o;
    }
    nf_jval *arr = nf_jnew_array();
    for (size_t i = 0; arr && i < b->n_parts; i++) {
        nf_jval *p = nf_jnew_object(), *r = nf_jnew_array();
        if (!p || !r) {
            nf_jval_free(p);
            nf_jval_free(r);
            nf_jval_free(arr);
            nf_jval_free(o);
            return NULL;
        }
        nf_jobj_set(p, "object", nf_jnew_string(b->parts[i].object ? b->parts[i].object : ""));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].begin));
        nf_jarr_push(r, nf_jnew_u64(b->parts[i].end));
        nf_jobj_set(p, "range", r);
        nf_jarr_push(arr, p);
    }
    nf_jobj_set(o, "parts", arr);
    return o;
}

/* The unescaped name of a member (raw_name is a span of accepted JSON). */
static char *member_name(const char *text, nf_span raw_name)
{
    const char *raw = text + raw_name.start;
    if (!memchr(raw, '\\', raw_name.len))
        return strndup(raw, raw_name.len);
    char *quoted = NULL, *out = NULL;
    if (asprintf(&quoted, "\"%.*s\"", (int)raw_name.len, raw) < 0)
        return NULL;
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *nd = nf_jdoc_parse(quoted, strlen(quoted), 4, &tmp);
    size_t nl = 0;
    const char *name = nd ? nf_jstr(nf_jdoc_root(nd), &nl) : NULL;
    if (name)
        out = strndup(name, nl);
    nf_jdoc_free(nd);
    nf_diags_free(&tmp);
    free(quoted);
    return out;
}

/* metadata members other than integrity, their values as written */
static bool meta_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    nf_jval *m = vctx;
    char *name = member_name(text, raw_name);
    if (name && strcmp(name, "integrity") != 0)
        nf_jobj_set(m, name, nf_jnew_raw(text + value.start, value.len));
    free(name);
    return true;
}

char *nf_catalog_serialize(const nf_catalog *c, const nf_serialize_opts *op, size_t *len)
{
    nf_jval *root = nf_jnew_object();
    if (!root)
        return NULL;
    nf_jval *comps = nf_jnew_object();
    for (size_t i = 0; i < c->n_components; i++) {
        const nf_component *k = &c->components[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "config", nf_jnew_raw(k->config_text ? k->config_text : "{}",
                                             k->config_text ? k->config_len : 2));
        if (k->target)
            nf_jobj_set(o, "target", nf_jnew_string(k->target));
        if (k->n_resources) {
            nf_jval *r = nf_jnew_object();
            for (size_t j = 0; j < k->n_resources; j++)
                nf_jobj_set(r, k->resources[j].role, nf_jnew_string(k->resources[j].object));
            nf_jobj_set(o, "resources", r);
        }
        if (k->has_proposal) {
            nf_jval *p = nf_jnew_object();
            nf_jobj_set(p, "domain", nf_jnew_string(k->proposal_indexed ? "indexed" : "full"));
            if (k->has_rows)
                nf_jobj_set(p, "rows", nf_jnew_u64(k->proposal_rows));
            nf_jobj_set(o, "proposal", p);
        }
        nf_jobj_set(comps, k->id, o);
    }
    nf_jobj_set(root, "components", comps);

    nf_jval *objs = nf_jnew_array();
    for (size_t i = 0; i < c->n_objects; i++) {
        const nf_object *ob = &c->objects[i];
        nf_jval *o = nf_jnew_object();
        /* a catalog with problems may lack any of these: write "" */
        nf_jobj_set(o, "id", nf_jnew_string(ob->id ? ob->id : ""));
        if (ob->kind == NF_OBJ_TENSOR) {
            nf_jobj_set(o, "kind", nf_jnew_string("tensor"));
            nf_jval *sh = nf_jnew_array();
            for (unsigned r = 0; r < ob->rank; r++)
                nf_jarr_push(sh, nf_jnew_u64(ob->dims[r]));
            nf_jobj_set(o, "shape", sh);
            nf_jobj_set(o, "format", nf_jnew_string(ob->format_name ? ob->format_name : ""));
            nf_jobj_set(o, "layout", nf_jnew_string(ob->layout_name ? ob->layout_name : ""));
        } else {
            nf_jobj_set(o, "kind", nf_jnew_string("resource"));
            nf_jobj_set(o, "encoding", nf_jnew_string(ob->encoding_name ? ob->encoding_name
                                                                        : "raw_bytes_v1"));
        }
        if (!op->manifest) {
            nf_jobj_set(o, "offset", nf_jnew_u64(ob->offset));
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        } else if (ob->kind == NF_OBJ_RESOURCE && ob->bytes_given && !op->artifact_path) {
            nf_jobj_set(o, "bytes", nf_jnew_u64(ob->bytes));
        }
        if (ob->kind == NF_OBJ_TENSOR && ob->has_divisors)
            nf_jobj_set(o, "divisors", nf_jnew_u64(ob->divisors));
        if (op->manifest && !op->artifact_path && ob->source_raw) {
            nf_jobj_set(o, "source", nf_jnew_raw(ob->source_raw, strlen(ob->source_raw)));
        } else if (op->manifest && op->artifact_path) {
            nf_jval *s = nf_jnew_object();
            nf_jobj_set(s, "artifact", nf_jnew_string(op->artifact_path));
            nf_jobj_set(s, "object", nf_jnew_string(ob->id ? ob->id : ""));
            nf_jobj_set(o, "source", s);
        }
        nf_jarr_push(objs, o);
    }
    nf_jobj_set(root, "objects", objs);

    nf_jval *binds = nf_jnew_object();
    for (size_t i = 0; i < c->n_bindings; i++)
        nf_jobj_set(binds, c->bindings[i].name, binding_json(&c->bindings[i].b));
    nf_jobj_set(root, "bindings", binds);

    nf_jval *uses = nf_jnew_array();
    for (size_t i = 0; i < c->n_uses; i++) {
        const nf_use *u = &c->uses[i];
        nf_jval *o = nf_jnew_object();
        nf_jobj_set(o, "parameter", nf_jnew_string(u->parameter ? u->parameter : ""));
        nf_jobj_set(o, "input", nf_jnew_string(u->input ? u->input : ""));
        if (u->activation_policy)
            nf_jobj_set(o, "activation_policy", nf_jnew_string(u->activation_policy));
        if (u->n_aux) {
            nf_jval *a = nf_jnew_object();
            for (size_t j = 0; j < u->n_aux; j++)
                nf_jobj_set(a, u->aux[j].role, binding_json(&u->aux[j].b));
            nf_jobj_set(o, "auxiliaries", a);
        }
        nf_jarr_push(uses, o);
    }
    nf_jobj_set(root, "uses", uses);

    if (!op->manifest && op->files) {
        nf_jval *files = nf_jnew_array();
        for (size_t i = 0; i < op->n_files; i++) {
            nf_jval *f = nf_jnew_object();
            nf_jobj_set(f, "path", op->files[i].path ? nf_jnew_string(op->files[i].path) : NULL);
            nf_jobj_set(f, "payload_bytes", nf_jnew_u64(op->files[i].payload_bytes));
            nf_jarr_push(files, f);
        }
        nf_jobj_set(root, "files", files);
    }

    bool any_digest = false;
    if (op->digests && !op->manifest)
        for (size_t i = 0; i < c->n_objects; i++)
            any_digest |= c->objects[i].has_digest;
    if (c->has_metadata || any_digest) {
        nf_jval *m = nf_jnew_object();
        if (c->metadata_text)
            nf_jspan_members(c->metadata_text, nf_jspan_root(c->metadata_text, c->metadata_len),
                             meta_member, m);
        if (any_digest) {
            nf_jval *in = nf_jnew_object(), *sh = nf_jnew_object();
            for (size_t i = 0; i < c->n_objects; i++)
                if (c->objects[i].has_digest) {
                    char hex[65];
                    nf_object_digest_hex(&c->objects[i], hex);
                    nf_jobj_set(sh, c->objects[i].id, nf_jnew_string(hex));
                }
            nf_jobj_set(in, "sha256", sh);
            nf_jobj_set(m, "integrity", in);
        }
        nf_jobj_set(root, "metadata", m);
    }
    if (c->provenance_text)
        nf_jobj_set(root, "provenance", nf_jnew_raw(c->provenance_text, c->provenance_len));
    char *text = nf_jval_to_text(root, op->pretty, len);
    nf_jval_free(root);
    return text;
}

/* ---- manifest editing ---- */

struct prov_ctx {
    const char *skip;
    nf_jval *obj;
    bool ok;
};

static bool prov_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    struct prov_ctx *pc = vctx;
    char *q = NULL;
    if (asprintf(&q, "\"%.*s\"", (int)raw_name.len, text + raw_name.start) < 0)
        return pc->ok = false;
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *nd = nf_jdoc_parse(q, strlen(q), 4, &tmp);
    size_t nl = 0;
    const char *name = nd ? nf_jstr(nf_jdoc_root(nd), &nl) : NULL;
    if (name && strcmp(name, pc->skip) != 0)
        pc->ok &= nf_jobj_set(pc->obj, name, nf_jnew_raw(text + value.start, value.len));
    nf_jdoc_free(nd);
    nf_diags_free(&tmp);
    free(q);
    return pc->ok;
}

bool nf_catalog_set_provenance(nf_catalog *c, const char *name, const char *value_json)
{
    nf_diags tmp = NF_DIAGS_INIT;
    nf_jdoc *vd = nf_jdoc_parse(value_json, strlen(value_json), 0, &tmp);
    nf_diags_free(&tmp);
    if (!vd)
        return false;
    nf_jdoc_free(vd);
    struct prov_ctx pc = {name, nf_jnew_object(), true};
    if (!pc.obj)
        return false;
    if (c->provenance_text)
        nf_jspan_members(c->provenance_text, nf_jspan_root(c->provenance_text, c->provenance_len),
                         prov_member, &pc);
    pc.ok &= nf_jobj_set(pc.obj, name, nf_jnew_raw(value_json, strlen(value_json)));
    char *t = pc.ok ? nf_jval_to_text(pc.obj, false, NULL) : NULL;
    nf_jval_free(pc.obj);
    if (!t)
        return false;
    free(c->own_provenance);
    c->own_provenance = t;
    c->provenance_text = t;
    c->provenance_len = strlen(t);
    c->has_provenance = true;
    return true;
}
