/* nf_source.c — manifest sources (DESIGN 5): the table of source kinds,
 * parsing (one source's text at a time, with json-c through nf_json, so
 * its cost is bounded by its own size, DESIGN 14) and writing in json-c's
 * form. Resolving to bytes or values, and the table of kinds that both
 * halves read (nf_src_kinds), are in nf_source_resolve.c. */
#include "nf_source.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_source_int.h"
#include "nf_util.h"

static const char *const dtypes[] = {"bf16", "f16", "f32", "f64", "i8", "i16", "i32",
                                     "i64", "u8", "u16", "u32", "u64", NULL};

static const char *const map_names[] = {[NF_VMAP_MINUS_ONE] = "minus-one",
                                        [NF_VMAP_LOG_NEG] = "log-neg"};

/* ---- parse context ---- */

typedef struct {
    nf_jdoc *doc;
    const char *text; /* doc's text: the spans below are offsets into it */
    const char *object; /* the object's ID, for messages (NULL: unknown) */
    nf_diags *d;
    bool bigints;     /* the source holds integers above U64: build pointers */
    size_t ptr_strip; /* pointers handed to read_u64 lead with this many bytes
                         that doc's own pointers lack (the source's pointer) */
} sctx;

static char *ptr_key(const char *base, const char *key)
{
    return nf_ptr_join(base, key, strlen(key));
}

static void diag_at(sctx *x, nf_code code, const char *ptr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void diag_at(sctx *x, nf_code code, const char *ptr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    nf_diag_vadd(x->d, code, ptr ? ptr : "", fmt, ap);
    va_end(ap);
}

/* Member-set check: every member of v must be in allowed[] (NULL-ended);
 * the names in required[] must be present. */
struct members_ctx {
    sctx *x;
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

static bool check_members(sctx *x, nf_jval *v, const char *ptr,
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

static bool expect_type(sctx *x, nf_jval *v, nf_jtype t, const char *ptr,
                        const char *what)
{
    nf_jtype got = nf_jtype_of(v);
    if (got == t)
        return true;
    diag_at(x, NF_C_SCHEMA, ptr, "%s must be %s %s, not %s", what,
            (t == NF_J_OBJECT || t == NF_J_ARRAY || t == NF_J_INT) ? "an" : "a",
            nf_jtype_name(t), nf_jtype_name(got));
    return false;
}

/* An ID (spec 1): non-empty UTF-8 string without U+0000. Returns a copy or
 * NULL (with a `schema` record). */
static char *read_id(sctx *x, nf_jval *v, const char *ptr, const char *what)
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

/* Read a U64 field. positive: zero is a `range` error. */
static bool read_u64(sctx *x, nf_jval *v, const char *ptr, const char *what,
                     bool positive, uint64_t *out)
{
    uint64_t u = 0;
    nf_ju64_status st = nf_jval_u64(x->doc, v, x->bigints ? ptr + x->ptr_strip : NULL, &u);
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

/* ---- parse ---- */

void nf_source_clear(nf_source *s)
{
    if (!s)
        return;
    free(s->path);
    free(s->name);
    free(s->dtype);
    free(s->values);
    for (size_t i = 0; i < s->n_items; i++)
        nf_source_clear(&s->items[i]);
    free(s->items);
    free(s->pointer);
    memset(s, 0, sizeof *s);
}

void nf_source_free(nf_source *s)
{
    nf_source_clear(s);
    free(s);
}

void nf_source_set_column_unpermute(nf_source *s, uint64_t k_heads, uint64_t v_heads,
                                    uint64_t head_dim)
{
    s->has_unpermute = true;
    s->unpermute = NF_UNPERMUTE_V_HEADS_TILED;
    s->unpermute_columns = true;
    s->k_heads = k_heads;
    s->v_heads = v_heads;
    s->head_dim = head_dim;
    s->unpermute_offset = 0;
}

/* The v-heads-tiled fields of an unpermute object m at pointer p: the
 * heads, the axis and how they fit. */
static bool parse_tiled(sctx *x, nf_jval *m, const char *p, nf_source *s)
{
    static const char *const tiled[] = {"scheme", "axis", "k_heads", "v_heads", "head_dim",
                                        "offset", NULL};
    static const char *const tiled_req[] = {"scheme", "axis", "k_heads", "v_heads", "head_dim",
                                            NULL};
    bool ok = check_members(x, m, p, tiled, tiled_req, "unpermute");
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
    return ok;
}

/* "unpermute" of a source (DESIGN 5): llama-rope {scheme, heads} or
 * v-heads-tiled {scheme, axis, k_heads, v_heads, head_dim[, offset]}. */
static bool parse_unpermute(sctx *x, nf_jval *m, const char *p, nf_source *s)
{
    static const char *const rope[] = {"scheme", "heads", NULL};
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
        ok = parse_tiled(x, m, p, s);
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

static bool parse_one(sctx *x, nf_jval *v, nf_span sp, const char *ptr, nf_source *s,
                      unsigned depth);

/* The path member of a file/safetensors/gguf/artifact source, and the
 * tensor or object name its kind takes. */
static bool parse_path_name(sctx *x, nf_jval *v, const char *ptr, nf_source *s)
{
    const nf_src_kind_info *k = &nf_src_kinds[s->kind];
    char *p = ptr_key(ptr, k->key);
    s->path = read_id(x, nf_jobj_get(v, k->key), p, "a source path");
    free(p);
    bool ok = s->path != NULL;
    if (k->name_key) {
        p = ptr_key(ptr, k->name_key);
        if (!nf_jobj_has(v, k->name_key)) {
            diag_at(x, NF_C_SCHEMA, p, "source lacks required member \"%s\"", k->name_key);
            ok = false;
        } else {
            s->name = read_id(x, nf_jobj_get(v, k->name_key), p, "a source name");
            ok &= s->name != NULL;
        }
        free(p);
    }
    return ok;
}

/* One number of a values source read from its text (the literal, not
 * json-c's value: json-c saturates integers beyond 64 bits, so
 * 100000000000000000000 would read as 2^64 - 1). */
struct num_read {
    double *out;
    size_t n;
};

static bool num_value(void *ctx, const char *text, size_t i, nf_span v)
{
    struct num_read *nr = ctx;
    if (i >= nr->n)
        return false;
    char small[64], *b = v.len < sizeof small ? small : malloc(v.len + 1);
    if (b) {
        memcpy(b, text + v.start, v.len);
        b[v.len] = 0;
        nr->out[i] = strtod(b, NULL); /* correctly rounded, as json-c's doubles */
        if (b != small)
            free(b);
    }
    return true;
}

/* The numbers of a values source whose text is at span sp. */
static bool parse_values(sctx *x, nf_jval *v, nf_span sp, const char *ptr, nf_source *s)
{
    nf_jval *m = nf_jobj_get(v, "values");
    char *p = ptr_key(ptr, "values");
    bool ok = expect_type(x, m, NF_J_ARRAY, p, "values");
    if (ok) {
        size_t n = nf_jarr_len(m);
        s->values = malloc((n ? n : 1) * sizeof *s->values);
        if (!s->values) {
            diag_at(x, NF_C_IO, p, "out of memory");
            ok = false;
            n = 0;
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
        nf_span arr;
        struct num_read nr = {s->values, s->n_values};
        if (ok && nf_jspan_member(x->text, sp, "values", 6, &arr))
            nf_jspan_elements(x->text, arr, num_value, &nr);
    }
    free(p);
    return ok;
}

/* The value spans of an array's elements, collected in order. */
struct item_spans {
    nf_span *v;
    size_t n;
};

static bool item_span(void *ctx, const char *text, size_t i, nf_span value)
{
    struct item_spans *is = ctx;
    (void)text;
    if (i < is->n)
        is->v[i] = value;
    return i + 1 < is->n;
}

/* The items of a concat source at span sp (depth: concats around it). */
static bool parse_concat(sctx *x, nf_jval *v, nf_span sp, const char *ptr, nf_source *s,
                         unsigned depth)
{
    nf_jval *m = nf_jobj_get(v, "concat");
    char *p = ptr_key(ptr, "concat");
    bool ok = true;
    if (depth > 4) {
        diag_at(x, NF_C_SCHEMA, p, "concat sources nest too deeply");
        ok = false;
    } else if (expect_type(x, m, NF_J_ARRAY, p, "concat") && nf_jarr_len(m) > 0) {
        size_t n = nf_jarr_len(m);
        s->items = calloc(n, sizeof *s->items);
        struct item_spans is = {calloc(n, sizeof *is.v), n};
        nf_span arr;
        if (!s->items || !is.v) {
            ok = false;
        } else {
            if (nf_jspan_member(x->text, sp, "concat", 6, &arr))
                nf_jspan_elements(x->text, arr, item_span, &is);
            s->n_items = n;
            for (size_t i = 0; i < n; i++) {
                char *q = nf_ptr_index(p, i);
                ok &= parse_one(x, nf_jarr_get(m, i), is.v[i], q, &s->items[i], depth + 1);
                free(q);
            }
        }
        free(is.v);
    } else {
        diag_at(x, NF_C_SCHEMA, p, "concat must be a non-empty array of sources");
        ok = false;
    }
    free(p);
    return ok;
}

/* The members any kind may carry: offset, dtype, rows, unpermute, map. */
static bool parse_modifiers(sctx *x, nf_jval *v, const char *ptr, nf_source *s)
{
    bool ok = true;
    char *p;
    nf_jval *m;
    if ((m = nf_jobj_get(v, "offset")) || nf_jobj_has(v, "offset")) {
        p = ptr_key(ptr, "offset");
        ok &= read_u64(x, m, p, "source offset", false, &s->offset);
        free(p);
    }
    if (nf_jobj_has(v, "dtype")) {
        p = ptr_key(ptr, "dtype");
        const char *t = nf_jstr(nf_jobj_get(v, "dtype"), NULL);
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
            /* both read (both reported), then combined */
            bool r0 = read_u64(x, nf_jarr_get(m, 0), q0, "rows begin", false, &s->rows[0]);
            bool r = read_u64(x, nf_jarr_get(m, 1), q1, "rows end", false, &s->rows[1]) && r0;
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
        s->map = NF_VMAP_NONE;
        for (int i = NF_VMAP_MINUS_ONE; mp && i <= NF_VMAP_LOG_NEG; i++)
            if (strcmp(mp, map_names[i]) == 0)
                s->map = (nf_value_map)i;
        if (s->map == NF_VMAP_NONE) {
            diag_at(x, NF_C_SCHEMA, p, "map must be \"minus-one\" or \"log-neg\"");
            ok = false;
        }
        free(p);
    }
    return ok;
}

/* ---- a values source's numbers against its dtype (DESIGN 5) ---- */

/* v rounded to the nearest number of a binary format with p significand
 * bits (the leading one included) and smallest normal exponent emin, ties
 * to even, the exponent unbounded above (the caller compares the result
 * with the format's largest finite value). Exact in double arithmetic: the
 * scaled value has at most p <= 24 integer bits. */
static double round_binary(double v, int p, int emin)
{
    if (v == 0 || !isfinite(v))
        return v;
    int e;
    frexp(v, &e); /* |v| in [2^(e-1), 2^e) */
    int q = (e - 1 < emin ? emin : e - 1) - (p - 1); /* the exponent of one ulp */
    double t = fabs(ldexp(v, -q)), f = floor(t), r = t - f;
    if (r > 0.5 || (r == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return copysign(ldexp(f, q), v);
}

/* The literal text of integer values, as written (json-c saturates below
 * -2^63): 0 when t[0..n) is a JSON integer within [-lo, hi], 1 when it is
 * not an integer literal (a fraction or an exponent), 2 when it is out of
 * range. */
static int int_literal(const char *t, size_t n, uint64_t lo, uint64_t hi)
{
    if (memchr(t, '.', n) || memchr(t, 'e', n) || memchr(t, 'E', n))
        return 1;
    bool neg = n && t[0] == '-';
    uint64_t mag = 0;
    for (size_t i = neg; i < n; i++) {
        unsigned dg = (unsigned)(t[i] - '0');
        if (dg > 9)
            return 1;
        if (mag > (UINT64_MAX - dg) / 10)
            return 2;
        mag = mag * 10 + dg;
    }
    return mag > (neg ? lo : hi) ? 2 : 0;
}

struct int_check {
    sctx *x;
    const char *ptr, *dtype;
    uint64_t lo, hi;
    bool is_signed, ok;
};

static bool int_value(void *ctx, const char *text, size_t i, nf_span v)
{
    struct int_check *ic = ctx;
    int r = int_literal(text + v.start, v.len, ic->lo, ic->hi);
    if (r == 0)
        return true;
    char *p = ptr_key(ic->ptr, "values"), *q = p ? nf_ptr_index(p, i) : NULL;
    int shown = v.len > 40 ? 40 : (int)v.len;
    const char *more = v.len > 40 ? "..." : "";
    const char *obj = ic->x->object ? ic->x->object : "";
    if (r == 1)
        diag_at(ic->x, NF_C_SCHEMA, q ? q : ic->ptr,
                "object \"%s\": value %zu (%.*s%s) is not a JSON integer, as dtype %s needs", obj,
                i, shown, text + v.start, more, ic->dtype);
    else if (ic->is_signed)
        diag_at(ic->x, NF_C_RANGE, q ? q : ic->ptr,
                "object \"%s\": value %zu (%.*s%s) is out of range for dtype %s (-%llu..%llu)",
                obj, i, shown, text + v.start, more, ic->dtype, (unsigned long long)ic->lo,
                (unsigned long long)ic->hi);
    else
        diag_at(ic->x, NF_C_RANGE, q ? q : ic->ptr,
                "object \"%s\": value %zu (%.*s%s) is out of range for dtype %s (0..%llu)", obj,
                i, shown, text + v.start, more, ic->dtype, (unsigned long long)ic->hi);
    free(q);
    free(p);
    ic->ok = false;
    return true;
}

/* A literal that json-c read as an infinity (JSON has none: one past the
 * double range, 1e400): range for the float dtype, named as written. */
struct inf_check {
    sctx *x;
    const char *ptr, *dtype;
    const nf_source *s;
    double max;
    bool ok;
};

static bool inf_value(void *ctx, const char *text, size_t i, nf_span v)
{
    struct inf_check *c = ctx;
    if (i >= c->s->n_values || isfinite(c->s->values[i]))
        return true;
    char *p = ptr_key(c->ptr, "values"), *q = p ? nf_ptr_index(p, i) : NULL;
    int shown = v.len > 40 ? 40 : (int)v.len;
    diag_at(c->x, NF_C_RANGE, q ? q : c->ptr,
            "object \"%s\": value %zu (%.*s%s) is out of range for dtype %s: it rounds to "
            "infinity (the largest finite %s is %.9g)",
            c->x->object ? c->x->object : "", i, shown, text + v.start, v.len > 40 ? "..." : "",
            c->dtype, c->dtype, c->max);
    free(q);
    free(p);
    c->ok = false;
    return true;
}

/* A values source holds elements of its dtype (ninfer-pack(1)): an integer
 * dtype takes JSON integers within its range (the literal checked as
 * written, so i64 takes -2^63 but not one less), a float dtype any number
 * that rounds (to nearest even) to a finite value of it, and the value is
 * then the element it rounds to (0.1 as f16 is 0.0999755859375); f64 any
 * number within its range. A literal past the double range (1e400, which
 * json-c reads as infinity) rounds to infinity in every float dtype: range,
 * as 70000 is for f16, whatever --allow-nonfinite says (a values source
 * without a dtype leaves it to the packer). sp: the source object's span. */
static bool check_values(sctx *x, nf_span sp, const char *ptr, nf_source *s)
{
    int dt = nf_dtype_from_name(s->dtype);
    static const struct {
        int p, emin;
        double max;
    } fl[] = {[NF_DT_BF16] = {8, -126, 0x1.fep127}, [NF_DT_F16] = {11, -14, 65504.0},
              [NF_DT_F32] = {24, -126, 0x1.fffffep127}};
    if (dt == NF_DT_BF16 || dt == NF_DT_F16 || dt == NF_DT_F32 || dt == NF_DT_F64) {
        bool any_inf = false;
        for (size_t i = 0; i < s->n_values && !any_inf; i++)
            any_inf = !isfinite(s->values[i]);
        struct inf_check ic = {x, ptr, s->dtype, s, dt == NF_DT_F64 ? DBL_MAX : fl[dt].max, true};
        nf_span arr;
        if (any_inf && nf_jspan_member(x->text, sp, "values", 6, &arr))
            nf_jspan_elements(x->text, arr, inf_value, &ic);
        if (dt == NF_DT_F64)
            return ic.ok;
        bool ok = ic.ok;
        for (size_t i = 0; i < s->n_values; i++) {
            double v = s->values[i], r = round_binary(v, fl[dt].p, fl[dt].emin);
            if (isfinite(v) && fabs(r) > fl[dt].max) {
                char *p = ptr_key(ptr, "values"), *q = p ? nf_ptr_index(p, i) : NULL;
                diag_at(x, NF_C_RANGE, q ? q : ptr,
                        "object \"%s\": value %zu (%.17g) is out of range for dtype %s: it rounds "
                        "to infinity (the largest finite %s is %.9g)",
                        x->object ? x->object : "", i, v, s->dtype, s->dtype, fl[dt].max);
                free(q);
                free(p);
                ok = false;
            }
            s->values[i] = r;
        }
        return ok;
    }
    if (dt < NF_DT_I8 || dt > NF_DT_U64)
        return true; /* f64 */
    unsigned bits = 8u << (unsigned)((dt - NF_DT_I8) % 4);
    bool sg = dt <= NF_DT_I64;
    uint64_t hi = bits == 64 ? (sg ? (uint64_t)INT64_MAX : UINT64_MAX)
                             : (sg ? ((uint64_t)1 << (bits - 1)) - 1 : ((uint64_t)1 << bits) - 1);
    struct int_check ic = {x, ptr, s->dtype, sg ? hi + 1 : 0, hi, sg, true};
    nf_span arr;
    if (nf_jspan_member(x->text, sp, "values", 6, &arr))
        nf_jspan_elements(x->text, arr, int_value, &ic);
    return ic.ok;
}

/* One source (an object) at ptr, its text at span sp; depth: concats
 * around it. */
static bool parse_one(sctx *x, nf_jval *v, nf_span sp, const char *ptr, nf_source *s,
                      unsigned depth)
{
    static const char *const allowed[] = {"file", "offset", "dtype", "values", "safetensors",
                                          "gguf", "tensor", "artifact", "object", "concat",
                                          "rows", "unpermute", "map", NULL};
    memset(s, 0, sizeof *s);
    s->pointer = strdup(ptr);
    if (!expect_type(x, v, NF_J_OBJECT, ptr, "source"))
        return false;
    bool ok = check_members(x, v, ptr, allowed, NULL, "source");
    int nk = 0;
    for (int i = NF_SRC_FILE; i <= NF_SRC_CONCAT; i++) {
        if (nf_jobj_has(v, nf_src_kinds[i].key)) {
            nk++;
            s->kind = (nf_src_kind)i;
        }
    }
    if (nk != 1) {
        diag_at(x, NF_C_SCHEMA, ptr,
                "a source names exactly one of file, values, safetensors, gguf, artifact, concat");
        return false;
    }
    switch (s->kind) {
    case NF_SRC_VALUES:
        ok &= parse_values(x, v, sp, ptr, s);
        break;
    case NF_SRC_CONCAT:
        ok &= parse_concat(x, v, sp, ptr, s, depth);
        break;
    default:
        ok &= parse_path_name(x, v, ptr, s);
        break;
    }
    ok = parse_modifiers(x, v, ptr, s) && ok;
    if (ok && s->kind == NF_SRC_VALUES && s->dtype)
        ok = check_values(x, sp, ptr, s);
    return ok;
}

nf_source *nf_source_parse(const char *text, size_t len, unsigned flags, const char *ptr,
                           const char *object, char **compact, size_t *compact_len, nf_diags *d)
{
    sctx x = {NULL, NULL, object, d, false, strlen(ptr)};
    nf_diags tmp = NF_DIAGS_INIT;
    if (compact)
        *compact = NULL;
    /* the pass scanned it: parse it as it stands, unless it holds integers
     * above U64 (their pointers come from a scan of its own) */
    x.doc = flags & NF_SOURCE_PRESCANNED ? nf_jdoc_parse_scanned(text, len, 0, &tmp)
                                         : nf_jdoc_parse(text, len, 0, &tmp);
    if (!x.doc) {
        for (size_t i = 0; i < tmp.n; i++) {
            size_t pl = strlen(ptr), ql = strlen(tmp.v[i].pointer);
            char *p = malloc(pl + ql + 1);
            if (p) {
                memcpy(p, ptr, pl);
                memcpy(p + pl, tmp.v[i].pointer, ql + 1);
            }
            diag_at(&x, tmp.v[i].code, p ? p : ptr, "%s", tmp.v[i].message);
            free(p);
        }
        nf_diags_free(&tmp);
        return NULL;
    }
    nf_diags_free(&tmp);
    nf_jval *v = nf_jdoc_root(x.doc);
    size_t rl = 0;
    char *raw = compact ? nf_json_c_compact(text, len, &rl) : NULL;
    if (compact && !raw && (raw = nf_jval_to_text(v, false, NULL)))
        rl = strlen(raw);
    nf_source *s = calloc(1, sizeof *s);
    if ((compact && !raw) || !s) {
        diag_at(&x, NF_C_IO, "", "out of memory");
        free(raw);
        free(s);
        nf_jdoc_free(x.doc);
        return NULL;
    }
    x.bigints = nf_jdoc_scan(x.doc)->n_bigint > 0;
    size_t tl = 0;
    x.text = nf_jdoc_text(x.doc, &tl);
    /* kept even when wrong: the diagnostics say what is wrong */
    parse_one(&x, v, nf_jspan_root(x.text, tl), ptr, s, 0);
    nf_jdoc_free(x.doc);
    if (compact) {
        *compact = raw;
        if (compact_len)
            *compact_len = rl;
    }
    return s;
}

/* ---- write ---- */

typedef struct {
    char *p;
    size_t n, cap;
    bool pretty;
} wbuf;

static void w_put(wbuf *w, const char *s, size_t n)
{
    if (w->p && w->n <= w->cap && n <= w->cap - w->n)
        memcpy(w->p + w->n, s, n);
    w->n += n;
}

static void w_str(wbuf *w, const char *s)
{
    size_t n = strlen(s);
    size_t k = nf_json_escape(s, n, w->p && w->n <= w->cap ? w->p + w->n : NULL,
                              w->p && w->n <= w->cap ? w->cap - w->n : 0);
    w->n += k;
}

static void w_u64(wbuf *w, uint64_t v)
{
    char b[24];
    int k = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    w_put(w, b, (size_t)k);
}

/* A number of a values source: an integer for an integer dtype, else as
 * json-c writes a double. An i64 or u64 value read from a literal near the
 * type's end can round up to 2^63 or 2^64 as a double: written as the
 * largest value, which reads back as the same double and stays in range. */
static void w_num(wbuf *w, double v, const char *dtype)
{
    char b[40];
    int k;
    bool integer = dtype && (dtype[0] == 'i' || dtype[0] == 'u') && v == floor(v);
    if (integer && v >= -0x1p63 && v < 0x1p63)
        k = snprintf(b, sizeof b, "%lld", (long long)v);
    else if (integer && dtype[0] == 'i' && v == 0x1p63)
        k = snprintf(b, sizeof b, "%lld", (long long)INT64_MAX);
    else if (integer && v > 0 && v < 0x1p64)
        k = snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    else if (integer && v == 0x1p64)
        k = snprintf(b, sizeof b, "%llu", (unsigned long long)UINT64_MAX);
    else if (isnan(v))
        k = snprintf(b, sizeof b, "NaN");
    else if (isinf(v))
        k = snprintf(b, sizeof b, v > 0 ? "Infinity" : "-Infinity");
    else {
        k = snprintf(b, sizeof b, "%.17g", v);
        if (!strpbrk(b, ".e"))
            k += snprintf(b + k, sizeof b - (size_t)k, ".0");
    }
    w_put(w, b, (size_t)k);
}

static void w_indent(wbuf *w, unsigned level)
{
    for (unsigned i = 0; w->pretty && i < level; i++)
        w_put(w, "  ", 2);
}

/* Containers: open, a member's name (count: members so far), close. */
static void w_open(wbuf *w, char br)
{
    w_put(w, &br, 1);
    if (w->pretty)
        w_put(w, "\n", 1);
}

static void w_next(wbuf *w, unsigned level, size_t *count)
{
    if ((*count)++)
        w_put(w, w->pretty ? ",\n" : ",", w->pretty ? 2 : 1);
    w_indent(w, level + 1);
}

static void w_key(wbuf *w, unsigned level, size_t *count, const char *k)
{
    w_next(w, level, count);
    w_str(w, k);
    w_put(w, w->pretty ? ": " : ":", w->pretty ? 2 : 1);
}

static void w_close(wbuf *w, unsigned level, size_t count, char br)
{
    if (w->pretty && count)
        w_put(w, "\n", 1);
    w_indent(w, level);
    w_put(w, &br, 1);
}

static void w_source(wbuf *w, const nf_source *s, unsigned level);

/* The unpermute object of s. */
static void w_unpermute(wbuf *w, const nf_source *s, unsigned level)
{
    size_t k = 0;
    w_open(w, '{');
    w_key(w, level, &k, "scheme");
    if (s->unpermute == NF_UNPERMUTE_LLAMA_ROPE) {
        w_str(w, "llama-rope");
        w_key(w, level, &k, "heads");
        w_u64(w, s->unpermute_heads);
    } else {
        w_str(w, "v-heads-tiled");
        w_key(w, level, &k, "axis");
        w_str(w, s->unpermute_columns ? "columns" : "rows");
        w_key(w, level, &k, "k_heads");
        w_u64(w, s->k_heads);
        w_key(w, level, &k, "v_heads");
        w_u64(w, s->v_heads);
        w_key(w, level, &k, "head_dim");
        w_u64(w, s->head_dim);
        if (s->unpermute_offset) {
            w_key(w, level, &k, "offset");
            w_u64(w, s->unpermute_offset);
        }
    }
    w_close(w, level, k, '}');
}

/* The kind member of s (its value) and the tensor/object name. */
static void w_kind(wbuf *w, const nf_source *s, unsigned level, size_t *k)
{
    const nf_src_kind_info *ki = &nf_src_kinds[s->kind];
    w_key(w, level, k, ki->key);
    if (s->kind == NF_SRC_VALUES) {
        size_t e = 0;
        w_open(w, '[');
        for (size_t i = 0; i < s->n_values; i++) {
            w_next(w, level + 1, &e);
            w_num(w, s->values[i], s->dtype);
        }
        w_close(w, level + 1, e, ']');
    } else if (s->kind == NF_SRC_CONCAT) {
        size_t e = 0;
        w_open(w, '[');
        for (size_t i = 0; i < s->n_items; i++) {
            w_next(w, level + 1, &e);
            w_source(w, &s->items[i], level + 2);
        }
        w_close(w, level + 1, e, ']');
    } else {
        w_str(w, s->path ? s->path : "");
        if (ki->name_key) {
            w_key(w, level, k, ki->name_key);
            w_str(w, s->name ? s->name : "");
        }
    }
}

static void w_source(wbuf *w, const nf_source *s, unsigned level)
{
    size_t k = 0;
    w_open(w, '{');
    if (s->kind > NF_SRC_NONE && s->kind <= NF_SRC_CONCAT)
        w_kind(w, s, level, &k);
    if (s->offset) {
        w_key(w, level, &k, "offset");
        w_u64(w, s->offset);
    }
    if (s->dtype) {
        w_key(w, level, &k, "dtype");
        w_str(w, s->dtype);
    }
    if (s->has_rows) {
        size_t e = 0;
        w_key(w, level, &k, "rows");
        w_open(w, '[');
        for (int i = 0; i < 2; i++) {
            w_next(w, level + 1, &e);
            w_u64(w, s->rows[i]);
        }
        w_close(w, level + 1, e, ']');
    }
    if (s->has_unpermute) {
        w_key(w, level, &k, "unpermute");
        w_unpermute(w, s, level + 1);
    }
    if (s->map > NF_VMAP_NONE && s->map <= NF_VMAP_LOG_NEG) {
        w_key(w, level, &k, "map");
        w_str(w, map_names[s->map]);
    }
    w_close(w, level, k, '}');
}

size_t nf_source_write(const nf_source *s, bool pretty, unsigned level, char *buf, size_t cap)
{
    wbuf w = {NULL, 0, 0, pretty}; /* count, then write only what fits whole */
    w_source(&w, s, level);
    if (buf && w.n <= cap) {
        w = (wbuf){buf, 0, cap, pretty};
        w_source(&w, s, level);
    }
    return w.n;
}

char *nf_source_text(const nf_source *s)
{
    size_t n = nf_source_write(s, false, 0, NULL, 0);
    char *t = malloc(n + 1);
    if (t) {
        nf_source_write(s, false, 0, t, n);
        t[n] = 0;
    }
    return t;
}
