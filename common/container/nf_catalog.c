/* nf_catalog.c — catalog parse and validation (spec 11.1; DESIGN 13, 14).
 *
 * One pass of the strict scanner (nf_jscan_ex) drives the parser: each
 * record of the record arrays is gathered into a small tree (see "record
 * trees"), checked, stored compactly, and forgotten; config, metadata and
 * provenance stay spans of the text. Every problem is recorded with its
 * JSON Pointer, and parsing goes on wherever the rest of the catalog can
 * still be checked. Pointers are only built when a problem is recorded, so
 * a large healthy catalog costs no string work beyond its IDs. A manifest
 * object's `source` is parsed on its own (nf_source_parse, with json-c), its
 * cost bounded by its own size. */
#include "nf_catalog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_source.h"
#include "nf_strmap.h"
#include "nf_util.h"

static const uint64_t no_dims[1];

/* ---- parse context ---- */

typedef struct {
    nf_catalog *c;
    nf_diags *d;
    nf_cat_mode mode;
    const char *entry_name;
} pctx;

static void diag_at_oom(pctx *x);

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

static const char *article(nf_jtype t)
{
    return (t == NF_J_OBJECT || t == NF_J_ARRAY || t == NF_J_INT) ? "an" : "a";
}

/* Pointer to a member of an array element: "/objects/3/offset". Only built
 * when needed: field pointers are computed lazily through this. */
static char *elem_ptr(const char *arr, size_t i, const char *member)
{
    if (member)
        return ptr_fmt("%s/%zu/%s", arr, i, member);
    return ptr_fmt("%s/%zu", arr, i);
}

/* ---- record trees ------------------------------------------------------------
 * The scanner hands its events (nf_jscan_sink) to a builder that keeps, for
 * the one record being read (an element of /objects, /files or /uses, a
 * member of /components or /bindings), a small tree of what the schema
 * looks at: materialized containers only where the record's fields have
 * them (a shape, parts, a range, auxiliaries, resources, a proposal), every
 * other container an opaque span (config, source, unknown members). When
 * the record's value ends it is checked and stored as a compact record,
 * and the tree is emptied for the next one: the builder's memory is that
 * of one record, whatever the catalog holds. */

enum { TF_ESC = 1, TF_BIG = 2, TF_NEG = 4, TF_OPAQUE = 8 };

/* Member names the schema knows, by number: a record's member names are
 * classified once, as they arrive, and looked up by number. */
enum {
    F_UNKNOWN = 0,
    F_ID,
    F_KIND,
    F_SHAPE,
    F_FORMAT,
    F_LAYOUT,
    F_OFFSET,
    F_BYTES,
    F_DIVISORS,
    F_SOURCE,
    F_ENCODING,
    F_PATH,
    F_PAYLOAD_BYTES,
    F_PARAMETER,
    F_INPUT,
    F_ACTIVATION_POLICY,
    F_AUXILIARIES,
    F_OBJECT,
    F_PARTS,
    F_RANGE,
    F_CONFIG,
    F_TARGET,
    F_RESOURCES,
    F_PROPOSAL,
    F_DOMAIN,
    F_ROWS,
    F_COUNT_
};
static const char *const field_names[F_COUNT_] = {
    "","id","kind","shape","format","layout","offset","bytes","divisors","source","encoding","path","payload_bytes","parameter","input","activation_policy","auxiliaries","object","parts","range","config","target","resources","proposal","domain","rows"};

/* The field number of the unescaped name s[0..n) (the scanner refuses
 * names with U+0000, so none is cut). */
static uint16_t field_id(const char *s, size_t n)
{
    static const uint8_t len[F_COUNT_] = {0, 2, 4, 5, 6, 6, 6, 5, 8, 6, 8, 4, 13, 9, 5, 17, 11, 6, 5, 5, 6, 6, 9, 8, 6, 4};
    if (n == 0 || n > 17)
        return F_UNKNOWN;
    for (uint16_t f = 1; f < F_COUNT_; f++)
        if (len[f] == n && field_names[f][0] == s[0] && memcmp(field_names[f], s, n) == 0)
            return f;
    return F_UNKNOWN;
}

#define FM(f) ((uint32_t)1 << (f))


typedef struct {
    uint64_t a, b;  /* scalar or opaque: span start and length; container: first kid, kids stored */
    uint32_t n;     /* container: members or elements (saturating) */
    uint8_t type;   /* nf_jtype */
    uint8_t flags;  /* TF_* */
    uint16_t ctx;   /* container: its schema context; member name: its field (F_*) */
} tnode;

/* Schema contexts: which children a materialized container keeps. */
enum {
    X_LEAF = 0,  /* containers below are opaque */
    X_OBJECT,    /* an /objects element: "shape" */
    X_SHAPE,     /* at most NF_MAX_RANK elements kept */
    X_FILE,
    X_USE,       /* "auxiliaries" */
    X_AUXS,      /* every member a binding */
    X_BINDING,   /* "parts" */
    X_PARTS,     /* every element a part */
    X_PART,      /* "range" */
    X_RANGE,     /* at most 3 elements kept */
    X_COMP,      /* "resources", "proposal" */
    X_RES,
    X_PROP,
};

typedef struct {
    size_t node;      /* the container's node */
    size_t pend_base; /* its children start here on the pending stack */
    uint32_t count;   /* children seen */
    uint16_t ctx;
    bool obj;
    uint16_t key_ctx; /* object: context of the current member's value */
} tframe;

typedef struct {
    const char *text;
    tnode *nodes;
    size_t n_nodes, cap_nodes;
    size_t *pend;     /* children of open containers, in order */
    size_t n_pend, cap_pend;
    size_t *kids;     /* children of closed containers */
    size_t n_kids, cap_kids;
    tframe *fr;
    size_t n_fr, cap_fr;
    size_t skip;      /* inside an opaque container: its depth below the record */
    size_t root;      /* the record's value node */
    bool done;        /* the record's value is complete */
    bool oom;
    size_t bigs;      /* integers above 2^64-1 anywhere in the record */
    char *scratch[2]; /* decoded strings */
    size_t scap[2];
} tbuild;

static bool grow_vec(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / size)
            return false;
        nc *= 2;
    }
    void *nv = realloc(*v, nc * size);
    if (!nv)
        return false;
    *v = nv;
    *cap = nc;
    return true;
}

static void tb_reset(tbuild *t)
{
    t->n_nodes = t->n_pend = t->n_kids = t->n_fr = 0;
    t->skip = 0;
    t->root = SIZE_MAX;
    t->done = false;
    t->bigs = 0;
}

static void tb_free(tbuild *t)
{
    free(t->nodes);
    free(t->pend);
    free(t->kids);
    free(t->fr);
    free(t->scratch[0]);
    free(t->scratch[1]);
}

static size_t tb_node(tbuild *t, uint8_t type, uint8_t flags, uint64_t a, uint64_t b)
{
    if (!grow_vec((void **)&t->nodes, &t->cap_nodes, t->n_nodes + 1, sizeof *t->nodes)) {
        t->oom = true;
        return SIZE_MAX;
    }
    tnode *n = &t->nodes[t->n_nodes];
    memset(n, 0, sizeof *n);
    n->type = type;
    n->flags = flags;
    n->a = a;
    n->b = b;
    return t->n_nodes++;
}

static void tb_push(tbuild *t, size_t node)
{
    if (!grow_vec((void **)&t->pend, &t->cap_pend, t->n_pend + 1, sizeof *t->pend)) {
        t->oom = true;
        return;
    }
    t->pend[t->n_pend++] = node;
}

/* The unescaped bytes of a string node (or a member name node) into
 * scratch slot k: pointer and length; for strings without escapes the text
 * itself (not NUL-terminated). */
static const char *tb_str(tbuild *t, const tnode *n, int k, size_t *len)
{
    const char *raw = t->text + n->a;
    if (!(n->flags & TF_ESC)) {
        *len = (size_t)n->b;
        return raw;
    }
    if (!grow_vec((void **)&t->scratch[k], &t->scap[k], (size_t)n->b + 1, 1)) {
        t->oom = true;
        *len = 0;
        return "";
    }
    *len = nf_junescape(raw, (size_t)n->b, t->scratch[k]);
    t->scratch[k][*len] = 0;
    return t->scratch[k];
}

/* A member name unescaped, as a C string in scratch slot k (names hold no
 * U+0000: the scanner refuses them). */
static const char *tb_name(tbuild *t, const tnode *n, int k)
{
    size_t len;
    const char *s = tb_str(t, n, k, &len);
    if (!grow_vec((void **)&t->scratch[k], &t->scap[k], len + 1, 1)) {
        t->oom = true;
        return "";
    }
    if (s != t->scratch[k])
        memcpy(t->scratch[k], s, len);
    t->scratch[k][len] = 0;
    return t->scratch[k];
}

/* Context of a child value (member name n, or an element when n is NULL). */
static uint16_t child_ctx(tbuild *t, uint16_t ctx, const tnode *name)
{
    (void)t;
    switch (ctx) {
    case X_OBJECT: return name && name->ctx == F_SHAPE ? X_SHAPE : X_LEAF;
    case X_USE: return name && name->ctx == F_AUXILIARIES ? X_AUXS : X_LEAF;
    case X_AUXS: return X_BINDING;
    case X_BINDING: return name && name->ctx == F_PARTS ? X_PARTS : X_LEAF;
    case X_PARTS: return X_PART;
    case X_PART: return name && name->ctx == F_RANGE ? X_RANGE : X_LEAF;
    case X_COMP:
        if (name && name->ctx == F_RESOURCES)
            return X_RES;
        return name && name->ctx == F_PROPOSAL ? X_PROP : X_LEAF;
    default: return X_LEAF;
    }
}

static bool ctx_is_array(uint16_t ctx)
{
    return ctx == X_SHAPE || ctx == X_PARTS || ctx == X_RANGE;
}

static uint32_t ctx_keep(uint16_t ctx)
{
    return ctx == X_SHAPE ? NF_MAX_RANK : ctx == X_RANGE ? 3 : UINT32_MAX;
}

/* The context a value starting now gets, and whether it is kept at all
 * (elements past what an array keeps are not). */
static bool tb_slot(tbuild *t, uint16_t root_ctx, uint16_t *ctx)
{
    if (!t->n_fr) {
        *ctx = root_ctx;
        return true;
    }
    tframe *f = &t->fr[t->n_fr - 1];
    if (f->obj) {
        *ctx = f->key_ctx;
        return true;
    }
    bool keep = f->count < ctx_keep(f->ctx);
    *ctx = child_ctx(t, f->ctx, NULL);
    return keep;
}

/* A value completed: count it in its parent (kept or not). */
static void tb_child_done(tbuild *t, size_t node, bool keep)
{
    if (!t->n_fr) {
        t->root = node;
        t->done = true;
        return;
    }
    tframe *f = &t->fr[t->n_fr - 1];
    if (f->count < UINT32_MAX)
        f->count++;
    if (keep && node != SIZE_MAX)
        tb_push(t, node);
}

static void tb_open(tbuild *t, bool obj, size_t off, uint16_t root_ctx)
{
    if (t->skip) {
        t->skip++;
        return;
    }
    uint16_t ctx;
    bool keep = tb_slot(t, root_ctx, &ctx);
    bool want_arr = ctx_is_array(ctx);
    if (!keep || ctx == X_LEAF || obj == want_arr) {
        /* opaque: its span is enough (type, and the text for config/source) */
        size_t nd = keep ? tb_node(t, obj ? NF_J_OBJECT : NF_J_ARRAY, TF_OPAQUE, off, 0) : SIZE_MAX;
        if (keep && nd == SIZE_MAX)
            return;
        /* remember where it goes: a frame that only waits for the close */
        if (!grow_vec((void **)&t->fr, &t->cap_fr, t->n_fr + 1, sizeof *t->fr)) {
            t->oom = true;
            return;
        }
        t->fr[t->n_fr++] = (tframe){nd, keep, 0, X_LEAF, obj, X_LEAF};
        t->skip = 1;
        return;
    }
    size_t nd = tb_node(t, obj ? NF_J_OBJECT : NF_J_ARRAY, 0, 0, 0);
    if (nd == SIZE_MAX)
        return;
    t->nodes[nd].ctx = ctx;
    if (!grow_vec((void **)&t->fr, &t->cap_fr, t->n_fr + 1, sizeof *t->fr)) {
        t->oom = true;
        return;
    }
    t->fr[t->n_fr++] = (tframe){nd, t->n_pend, 0, ctx, obj, X_LEAF};
}

static void tb_close(tbuild *t, size_t end)
{
    if (t->skip > 1) {
        t->skip--;
        return;
    }
    tframe f = t->fr[--t->n_fr];
    if (t->skip == 1) {
        t->skip = 0;
        /* pend_base holds `keep` for opaque frames */
        if (f.node != SIZE_MAX)
            t->nodes[f.node].b = end - t->nodes[f.node].a;
        tb_child_done(t, f.node, f.pend_base != 0);
        return;
    }
    tnode *n = &t->nodes[f.node];
    size_t k = t->n_pend - f.pend_base;
    if (!grow_vec((void **)&t->kids, &t->cap_kids, t->n_kids + k, sizeof *t->kids)) {
        t->oom = true;
        return;
    }
    if (k)
        memcpy(t->kids + t->n_kids, t->pend + f.pend_base, k * sizeof *t->kids);
    n->a = t->n_kids;
    n->b = k;
    n->n = f.obj ? (uint32_t)(k / 2) : f.count;
    t->n_kids += k;
    t->n_pend = f.pend_base;
    tb_child_done(t, f.node, true);
}

static void tb_key(tbuild *t, size_t start, size_t len, bool esc)
{
    if (t->skip)
        return;
    tframe *f = &t->fr[t->n_fr - 1];
    if (len > UINT32_MAX || (size_t)(uint64_t)len != len) {
        t->oom = true;
        return;
    }
    size_t nd = tb_node(t, NF_J_STRING, esc ? TF_ESC : 0, start, len);
    if (nd == SIZE_MAX)
        return;
    if (f->ctx != X_AUXS && f->ctx != X_RES) {
        /* roles are free names; everything else may be a field */
        size_t n;
        const char *nm = tb_str(t, &t->nodes[nd], 0, &n);
        t->nodes[nd].ctx = field_id(nm, n);
    }
    tb_push(t, nd);
    f->key_ctx = child_ctx(t, f->ctx, &t->nodes[nd]);
}

static void tb_scalar(tbuild *t, nf_jscalar kind, size_t start, size_t len, uint16_t root_ctx)
{
    if (kind == NF_JS_BIGINT)
        t->bigs++; /* also inside opaque values: a source must know */
    if (t->skip)
        return;
    uint16_t ctx;
    bool keep = tb_slot(t, root_ctx, &ctx);
    size_t nd = SIZE_MAX;
    if (keep) {
        uint8_t type = NF_J_NULL, flags = 0;
        switch (kind) {
        case NF_JS_STRING: type = NF_J_STRING; break;
        case NF_JS_ESTRING: type = NF_J_STRING; flags = TF_ESC; break;
        case NF_JS_INT: type = NF_J_INT; break;
        case NF_JS_NEGINT: type = NF_J_INT; flags = TF_NEG; break;
        case NF_JS_BIGINT: type = NF_J_INT; flags = TF_BIG; break;
        case NF_JS_NUMBER: type = NF_J_DOUBLE; break;
        case NF_JS_TRUE: case NF_JS_FALSE: type = NF_J_BOOL; break;
        case NF_JS_NULL: type = NF_J_NULL; break;
        }
        nd = tb_node(t, type, flags, start, len);
    }
    tb_child_done(t, nd, keep);
}

/* ---- lazy JSON Pointers ----
 * A record's field pointers are chains on the stack ("/objects" -> 3 ->
 * "offset") turned into text only when a problem is recorded, so a clean
 * record costs no pointer at all. */
typedef struct lp {
    const struct lp *up;
    const char *key;  /* a member name (NULL: an array index) */
    size_t klen;
    size_t index;
} lp;

#define LPK(u, k) ((lp){(u), (k), strlen(k), 0})
#define LPI(u, i) ((lp){(u), NULL, 0, (i)})

/* The pointer's text, escaped as nf_ptr_join does, cut after
 * NF_DIAG_MAX_TEXT + 1 bytes: a record keeps no more (nf_diag.h), so a
 * diagnostic under a 5 MB name costs a few KB, not a copy of the name per
 * token (hostile.bats: 1000 diagnostics under one name). */
static char *lp_str(const lp *p)
{
    const lp *chain[64];
    size_t n = 0;
    for (const lp *q = p; q && n < 64; q = q->up)
        chain[n++] = q;
    enum { CAP = NF_DIAG_MAX_TEXT + 1 };
    char *s = malloc(CAP + 1);
    if (!s)
        return NULL;
    size_t len = 0;
#define PUT(ch) (len < CAP ? (void)(s[len++] = (ch)) : (void)0)
    while (n-- && len < CAP) {
        const lp *q = chain[n];
        PUT('/');
        if (!q->key) {
            char num[24];
            int k = snprintf(num, sizeof num, "%zu", q->index);
            for (int j = 0; j < k; j++)
                PUT(num[j]);
            continue;
        }
        for (size_t i = 0; i < q->klen && len < CAP; i++) {
            char ch = q->key[i];
            if (ch == '~' || ch == '/') {
                PUT('~');
                PUT(ch == '~' ? '0' : '1');
            } else {
                PUT(ch ? ch : '?'); /* NUL as nf_ptr_join shows it */
            }
        }
    }
#undef PUT
    s[len] = 0;
    return s;
}

static void diag_lp(pctx *x, nf_code code, const lp *p, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void diag_lp(pctx *x, nf_code code, const lp *p, const char *fmt, ...)
{
    char *ps = p ? lp_str(p) : NULL;
    va_list ap;
    va_start(ap, fmt);
    nf_diag_vadd(x->d, code, ps ? ps : "", fmt, ap);
    va_end(ap);
    free(ps);
}

/* ---- tree queries (the json-c helpers' counterparts) ---- */

typedef struct {
    pctx *x;
    tbuild *t;
} rctx;

#define TN(r, i) (&(r)->t->nodes[i])

static nf_jtype t_type(rctx *r, size_t i)
{
    return i == SIZE_MAX ? NF_J_NULL : (nf_jtype)TN(r, i)->type;
}

/* Member by field (the last of equal names, as json-c keeps them; the
 * scanner reports the repeat), SIZE_MAX when absent or when o is not a
 * materialized object. */
static size_t t_get(rctx *r, size_t o, uint16_t field)
{
    if (o == SIZE_MAX || TN(r, o)->type != NF_J_OBJECT || (TN(r, o)->flags & TF_OPAQUE))
        return SIZE_MAX;
    const tnode *n = TN(r, o);
    size_t found = SIZE_MAX;
    for (uint64_t k = 0; k + 1 < n->b; k += 2)
        if (TN(r, r->t->kids[n->a + k])->ctx == field)
            found = r->t->kids[n->a + k + 1];
    return found;
}

static bool t_has(rctx *r, size_t o, uint16_t field)
{
    return t_get(r, o, field) != SIZE_MAX;
}

/* Members of object o: count, and the name/value nodes of member k. */
static size_t t_members(rctx *r, size_t o)
{
    if (o == SIZE_MAX || TN(r, o)->type != NF_J_OBJECT || (TN(r, o)->flags & TF_OPAQUE))
        return 0;
    return (size_t)(TN(r, o)->b / 2);
}

static size_t t_mname(rctx *r, size_t o, size_t k)
{
    return r->t->kids[TN(r, o)->a + 2 * k];
}

static size_t t_mval(rctx *r, size_t o, size_t k)
{
    return r->t->kids[TN(r, o)->a + 2 * k + 1];
}

/* Elements of array a: how many the text has, and element i (i below what
 * the array's context keeps). */
static size_t t_len(rctx *r, size_t a)
{
    if (a == SIZE_MAX || TN(r, a)->type != NF_J_ARRAY)
        return 0;
    if (TN(r, a)->flags & TF_OPAQUE)
        return 0;
    return TN(r, a)->n;
}

static size_t t_at(rctx *r, size_t a, size_t i)
{
    const tnode *n = TN(r, a);
    return i < n->b ? r->t->kids[n->a + i] : SIZE_MAX;
}

/* The string value of node i (unescaped) into scratch slot k, or NULL for
 * non-strings. */
static const char *t_str(rctx *r, size_t i, int k, size_t *len)
{
    if (t_type(r, i) != NF_J_STRING)
        return NULL;
    return tb_str(r->t, TN(r, i), k, len);
}

static bool t_expect(rctx *r, size_t i, nf_jtype t, const lp *ptr, const char *what)
{
    nf_jtype got = t_type(r, i);
    if (got == t)
        return true;
    diag_lp(r->x, NF_C_SCHEMA, ptr, "%s must be %s %s, not %s", what, article(t),
            nf_jtype_name(t), nf_jtype_name(got));
    return false;
}

/* Member-set check (as check_members): unknown members in text order, then
 * the required ones that are missing. */
static bool t_check_members(rctx *r, size_t o, const lp *ptr, uint32_t allowed,
                            const uint8_t *required, const char *what)
{
    bool ok = true;
    size_t n = t_members(r, o);
    for (size_t k = 0; k < n; k++) {
        const tnode *nm = TN(r, t_mname(r, o, k));
        if (nm->ctx != F_UNKNOWN && (allowed & FM(nm->ctx)))
            continue;
        const char *name = tb_name(r->t, nm, 1);
        lp P = LPK(ptr, name);
        diag_lp(r->x, NF_C_SCHEMA, &P, "unknown member \"%s\" in %s", name, what);
        ok = false;
    }
    for (const uint8_t *q = required; q && *q; q++) {
        if (!t_has(r, o, *q)) {
            lp P = LPK(ptr, field_names[*q]);
            diag_lp(r->x, NF_C_SCHEMA, &P, "%s lacks required member \"%s\"", what,
                    field_names[*q]);
            ok = false;
        }
    }
    return ok;
}

/* An ID (spec 1): non-empty string without U+0000. Returns its bytes in
 * scratch slot 0 (or the text) and length, or NULL with a `schema` record. */
static const char *t_id(rctx *r, size_t i, const lp *ptr, const char *what, size_t *len)
{
    if (!t_expect(r, i, NF_J_STRING, ptr, what))
        return NULL;
    const char *s = t_str(r, i, 0, len);
    if (*len == 0) {
        diag_lp(r->x, NF_C_SCHEMA, ptr, "%s must be a non-empty ID", what);
        return NULL;
    }
    if (memchr(s, 0, *len)) {
        diag_lp(r->x, NF_C_SCHEMA, ptr, "%s must not contain U+0000", what);
        return NULL;
    }
    return s;
}

/* t_id copied into the arena */
static char *t_id_copy(rctx *r, size_t i, const lp *ptr, const char *what)
{
    size_t n;
    const char *s = t_id(r, i, ptr, what, &n);
    if (!s)
        return NULL;
    char *p = nf_arena_strndup(r->x->c->arena, s, n);
    if (!p)
        diag_at_oom(r->x);
    return p;
}

/* t_id interned (format, layout and encoding names, inputs) */
static char *t_id_intern(rctx *r, size_t i, const lp *ptr, const char *what)
{
    size_t n;
    const char *s = t_id(r, i, ptr, what, &n);
    if (!s)
        return NULL;
    char *p = nf_catalog_intern(r->x->c, s, n);
    if (!p)
        diag_at_oom(r->x);
    return p;
}

/* A reference to an object: the object's own ID string when the object is
 * known already, else a copy (resolved after the pass). */
static char *t_ref(rctx *r, size_t i, const lp *ptr, const char *what, size_t *obj)
{
    size_t n;
    *obj = SIZE_MAX;
    const char *s = t_id(r, i, ptr, what, &n);
    if (!s)
        return NULL;
    nf_catalog *c = r->x->c;
    if (c->ix->objects.s) {
        size_t oi = nf_catalog_index_find_object(c, s, n, &c->ix->hint_ref);
        if (oi != SIZE_MAX) {
            *obj = oi;
            return c->objects[oi].id;
        }
    }
    char *p = nf_arena_strndup(c->arena, s, n);
    if (!p)
        diag_at_oom(r->x);
    return p;
}

/* A U64 field (DESIGN 3), with the messages of nf_source.c's read_u64. */
static bool t_u64(rctx *r, size_t i, const lp *ptr, const char *what, bool positive,
                  uint64_t *out)
{
    nf_jtype t = t_type(r, i);
    if (t != NF_J_INT) {
        if (t == NF_J_DOUBLE) {
            const tnode *n = TN(r, i);
            diag_lp(r->x, NF_C_SCHEMA, ptr, "%s must be a JSON integer, not %.*s", what,
                    (int)n->b, r->t->text + n->a);
        } else {
            diag_lp(r->x, NF_C_SCHEMA, ptr, "%s must be an integer, not %s", what,
                    nf_jtype_name(t));
        }
        return false;
    }
    const tnode *n = TN(r, i);
    if (n->flags & TF_NEG) {
        diag_lp(r->x, NF_C_RANGE, ptr, "%s is negative", what);
        return false;
    }
    if (n->flags & TF_BIG) {
        diag_lp(r->x, NF_C_RANGE, ptr, "%s is above 2^64-1", what);
        return false;
    }
    uint64_t u = 0;
    const char *p = r->t->text + n->a, *e = p + n->b;
    if (*p == '-')
        p++; /* "-0" */
    for (; p < e; p++)
        u = u * 10 + (uint64_t)(*p - '0'); /* the scanner checked the range */
    if (positive && u == 0) {
        diag_lp(r->x, NF_C_RANGE, ptr, "%s must be positive", what);
        return false;
    }
    *out = u;
    return true;
}

/* ---- components (spec 4.2, 9.1, 9.2) ---- */

static void rec_resources(rctx *r, nf_component *comp, size_t v, const lp *ptr)
{
    if (!t_expect(r, v, NF_J_OBJECT, ptr, "resources"))
        return;
    size_t n = t_members(r, v);
    comp->resources = nf_arena_alloc(r->x->c->arena, (n ? n : 1) * sizeof *comp->resources);
    if (!comp->resources) {
        diag_lp(r->x, NF_C_IO, ptr, "out of memory");
        return;
    }
    for (size_t k = 0; k < n; k++) {
        const char *role = tb_name(r->t, TN(r, t_mname(r, v, k)), 1);
        char *rl = nf_catalog_intern(r->x->c, role, strlen(role));
        if (!rl) {
            diag_at_oom(r->x);
            continue;
        }
        /* the pointer's key is the interned copy: scratch slot 1 is reused
         * (and may move) while the value is read */
        lp P = LPK(ptr, rl);
        size_t oi;
        char *id = t_ref(r, t_mval(r, v, k), &P, "a resource reference", &oi);
        if (id) {
            nf_resource_ref *rr = &comp->resources[comp->n_resources++];
            rr->role = rl;
            rr->object = id;
            rr->obj = oi;
        }
    }
}

static void rec_proposal(rctx *r, nf_component *comp, size_t v, const lp *ptr)
{
    const uint32_t allowed = FM(F_DOMAIN) | FM(F_ROWS);
    static const uint8_t required[] = {F_DOMAIN, 0};
    if (!t_expect(r, v, NF_J_OBJECT, ptr, "proposal"))
        return;
    t_check_members(r, v, ptr, allowed, required, "proposal");
    comp->has_proposal = true;
    size_t dom = t_get(r, v, F_DOMAIN);
    size_t dl = 0;
    const char *ds = t_str(r, dom, 0, &dl);
    bool is_full = ds && dl == 4 && memcmp(ds, "full", 4) == 0;
    lp P = LPK(ptr, "domain");
    if (dom != SIZE_MAX) {
        if (ds && dl == 7 && memcmp(ds, "indexed", 7) == 0)
            comp->proposal_indexed = true;
        else if (!is_full)
            diag_lp(r->x, NF_C_SCHEMA, &P, "proposal domain must be \"full\" or \"indexed\"");
    }
    P = LPK(ptr, "rows");
    size_t rows = t_get(r, v, F_ROWS);
    if (rows != SIZE_MAX) {
        if (!comp->proposal_indexed && is_full)
            diag_lp(r->x, NF_C_SCHEMA, &P, "proposal rows is only allowed with domain \"indexed\"");
        else if (t_u64(r, rows, &P, "proposal rows", true, &comp->proposal_rows))
            comp->has_rows = true;
    } else if (comp->proposal_indexed) {
        diag_lp(r->x, NF_C_SCHEMA, &P, "proposal with domain \"indexed\" needs rows");
    }
}

/* One member of /components: key is its name, unescaped. */
static void rec_component(rctx *r, const char *key, size_t m)
{
    const uint32_t allowed = FM(F_CONFIG) | FM(F_TARGET) | FM(F_RESOURCES) | FM(F_PROPOSAL);
    static const uint8_t required[] = {F_CONFIG, 0};
    pctx *x = r->x;
    nf_catalog *c = x->c;
    nf_component *comp = &c->components[c->n_components++];
    memset(comp, 0, sizeof *comp);
    comp->id = nf_arena_strndup(c->arena, key, strlen(key));
    /* pointers keyed by the arena's copy, never by a scratch buffer */
    lp C = LPK(NULL, "components"), P = LPK(&C, comp->id ? comp->id : key), Q;
    comp->config_text = "{}";
    comp->config_len = 2;
    comp->target_index = SIZE_MAX;
    if (!comp->id)
        diag_at_oom(x);
    if (!key[0])
        diag_lp(x, NF_C_SCHEMA, &P, "%s must be a non-empty ID", "component ID");
    if (t_expect(r, m, NF_J_OBJECT, &P, "a component")) {
        t_check_members(r, m, &P, allowed, required, "component");
        size_t cfg = t_get(r, m, F_CONFIG);
        Q = LPK(&P, "config");
        if (cfg != SIZE_MAX && t_expect(r, cfg, NF_J_OBJECT, &Q, "config")) {
            comp->config_text = c->text + TN(r, cfg)->a;
            comp->config_len = (size_t)TN(r, cfg)->b;
        }
        size_t tg = t_get(r, m, F_TARGET);
        if (tg != SIZE_MAX) {
            Q = LPK(&P, "target");
            comp->target = t_id_copy(r, tg, &Q, "target");
        }
        size_t rs = t_get(r, m, F_RESOURCES);
        if (rs != SIZE_MAX) {
            Q = LPK(&P, "resources");
            rec_resources(r, comp, rs, &Q);
        }
        size_t pr = t_get(r, m, F_PROPOSAL);
        if (pr != SIZE_MAX) {
            Q = LPK(&P, "proposal");
            if (strcmp(key, NF_TEXT_COMPONENT) != 0)
                diag_lp(x, NF_C_SCHEMA, &Q, "only the text component may have a proposal");
            rec_proposal(r, comp, pr, &Q);
        }
    }
}

/* A manifest object's source (DESIGN 5): parsed alone (nf_source_parse),
 * so the cost guard of nf_jdoc_parse applies to it alone (DESIGN 14).
 * source_raw keeps it as json-c writes it (compact). */
static void rec_source(rctx *r, nf_object *o, size_t m, const lp *lptr)
{
    pctx *x = r->x;
    char *ptr = lp_str(lptr);
    if (!ptr) {
        diag_at_oom(x);
        return;
    }
    const tnode *n = TN(r, m);
    size_t start = (size_t)n->a, len = (size_t)n->b;
    if (n->type == NF_J_STRING) {
        start--; /* with its quotes */
        len += 2;
    }
    char *raw = NULL;
    size_t rl = 0;
    /* integers above U64 get their pointers from a scan of its own */
    o->source = nf_source_parse(r->t->text + start, len, r->t->bigs ? 0 : NF_SOURCE_PRESCANNED,
                                ptr, o->id, &raw, &rl, x->d);
    if (raw) {
        o->source_raw = nf_arena_strndup(x->c->arena, raw, rl);
        free(raw);
        if (!o->source_raw)
            diag_at_oom(x);
    }
    free(ptr);
}

/* ---- objects (spec 5) ---- */

static void rec_shape(rctx *r, nf_object *o, size_t v, const lp *ptr)
{
    if (!t_expect(r, v, NF_J_ARRAY, ptr, "shape"))
        return;
    size_t n = t_len(r, v);
    if (n > NF_MAX_RANK) {
        diag_lp(r->x, NF_C_SCHEMA, ptr, "shape has rank %zu; at most %d dimensions are allowed",
                n, NF_MAX_RANK);
        o->enc_status = NF_ENC_INVALID;
        return;
    }
    bool ok = true;
    uint64_t *dims = n ? nf_arena_alloc(r->x->c->arena, n * sizeof *dims) : NULL;
    if (n && !dims) {
        diag_at_oom(r->x);
        o->enc_status = NF_ENC_INVALID;
        return;
    }
    if (n)
        o->dims = dims;
    for (size_t i = 0; i < n; i++) {
        size_t e = t_at(r, v, i);
        const tnode *en = TN(r, e);
        if (en->type == NF_J_INT && !(en->flags & (TF_NEG | TF_BIG))) {
            /* the common case without building a pointer */
            uint64_t u = 0;
            const char *q = r->t->text + en->a, *end = q + en->b;
            if (*q == '-')
                q++;
            for (; q < end; q++)
                u = u * 10 + (uint64_t)(*q - '0');
            if (u > 0) {
                dims[i] = u;
                continue;
            }
        }
        lp P = LPI(ptr, i);
        uint64_t u = 0;
        if (t_u64(r, e, &P, "a shape dimension", true, &u))
            dims[i] = u;
        else
            ok = false;
    }
    o->rank = (unsigned)n;
    if (!ok)
        o->enc_status = NF_ENC_INVALID;
}

static void rec_object(rctx *r, size_t i, size_t v)
{
    const uint32_t t_allowed = FM(F_ID) | FM(F_KIND) | FM(F_SHAPE) | FM(F_FORMAT) | FM(F_LAYOUT) | FM(F_OFFSET) | FM(F_BYTES) | FM(F_DIVISORS);
    const uint32_t t_allowed_m = FM(F_ID) | FM(F_KIND) | FM(F_SHAPE) | FM(F_FORMAT) | FM(F_LAYOUT) | FM(F_OFFSET) | FM(F_BYTES) | FM(F_DIVISORS) | FM(F_SOURCE);
    static const uint8_t t_required[] = {F_ID, F_KIND, F_SHAPE, F_FORMAT, F_LAYOUT, F_OFFSET, F_BYTES, 0};
    static const uint8_t t_required_m[] = {F_ID, F_KIND, F_SHAPE, F_FORMAT, F_LAYOUT, 0};
    const uint32_t r_allowed = FM(F_ID) | FM(F_KIND) | FM(F_ENCODING) | FM(F_OFFSET) | FM(F_BYTES);
    const uint32_t r_allowed_m = FM(F_ID) | FM(F_KIND) | FM(F_ENCODING) | FM(F_OFFSET) | FM(F_BYTES) | FM(F_SOURCE);
    static const uint8_t r_required[] = {F_ID, F_KIND, F_ENCODING, F_OFFSET, F_BYTES, 0};
    static const uint8_t r_required_m[] = {F_ID, F_KIND, F_ENCODING, 0};
    pctx *x = r->x;
    nf_object *o = &x->c->objects[i];
    memset(o, 0, sizeof *o);
    bool man = x->mode == NF_CAT_MANIFEST;
    lp A = LPK(NULL, "objects"), P = LPI(&A, i), Q;
    o->dims = (uint64_t *)no_dims;
    o->divisors = 1;
    o->enc_status = NF_ENC_OK;
    if (!t_expect(r, v, NF_J_OBJECT, &P, "an object")) {
        o->enc_status = NF_ENC_INVALID;
        return;
    }
    size_t kind = t_get(r, v, F_KIND);
    size_t kl = 0;
    const char *ks = t_str(r, kind, 0, &kl);
    Q = LPK(&P, "kind");
    if (kind == SIZE_MAX) {
        diag_lp(x, NF_C_SCHEMA, &Q, "object lacks required member \"kind\"");
        o->enc_status = NF_ENC_INVALID;
    } else if (ks && kl == 6 && memcmp(ks, "tensor", 6) == 0) {
        o->kind = NF_OBJ_TENSOR;
    } else if (ks && kl == 8 && memcmp(ks, "resource", 8) == 0) {
        o->kind = NF_OBJ_RESOURCE;
    } else {
        diag_lp(x, NF_C_SCHEMA, &Q, "kind must be \"tensor\" or \"resource\"");
        o->enc_status = NF_ENC_INVALID;
    }
    bool tensor = o->kind == NF_OBJ_TENSOR && o->enc_status == NF_ENC_OK;
    bool resource = o->kind == NF_OBJ_RESOURCE && o->enc_status == NF_ENC_OK;
    if (tensor)
        t_check_members(r, v, &P, man ? t_allowed_m : t_allowed, man ? t_required_m : t_required,
                        "tensor object");
    else if (resource)
        t_check_members(r, v, &P, man ? r_allowed_m : r_allowed, man ? r_required_m : r_required,
                        "resource object");

    size_t m;
    if ((m = t_get(r, v, F_ID)) != SIZE_MAX) {
        Q = LPK(&P, "id");
        o->id = t_id_copy(r, m, &Q, "object ID");
    }
    if (tensor) {
        if ((m = t_get(r, v, F_SHAPE)) != SIZE_MAX) {
            Q = LPK(&P, "shape");
            rec_shape(r, o, m, &Q);
        } else {
            o->enc_status = NF_ENC_INVALID;
        }
        Q = LPK(&P, "format");
        if ((m = t_get(r, v, F_FORMAT)) != SIZE_MAX &&
            (o->format_name = t_id_intern(r, m, &Q, "format")))
            o->format = nf_format_from_name(o->format_name, strlen(o->format_name));
        else
            o->enc_status = NF_ENC_INVALID;
        Q = LPK(&P, "layout");
        if ((m = t_get(r, v, F_LAYOUT)) != SIZE_MAX &&
            (o->layout_name = t_id_intern(r, m, &Q, "layout")))
            o->layout = nf_layout_from_name(o->layout_name, strlen(o->layout_name));
        else
            o->enc_status = NF_ENC_INVALID;
        if ((m = t_get(r, v, F_DIVISORS)) != SIZE_MAX) {
            Q = LPK(&P, "divisors");
            if (t_u64(r, m, &Q, "divisors", true, &o->divisors))
                o->has_divisors = true;
            else
                o->enc_status = NF_ENC_INVALID;
        }
    } else if (resource && (m = t_get(r, v, F_ENCODING)) != SIZE_MAX) {
        Q = LPK(&P, "encoding");
        o->encoding_name = t_id_intern(r, m, &Q, "encoding");
    }
    if ((m = t_get(r, v, F_OFFSET)) != SIZE_MAX) {
        Q = LPK(&P, "offset");
        o->has_offset = t_u64(r, m, &Q, "offset", false, &o->offset);
    }
    size_t bm = t_get(r, v, F_BYTES);
    if (bm != SIZE_MAX) {
        Q = LPK(&P, "bytes");
        o->has_bytes = t_u64(r, bm, &Q, "bytes", true, &o->bytes);
    }
    o->bytes_given = bm != SIZE_MAX;
    if (man && (m = t_get(r, v, F_SOURCE)) != SIZE_MAX) {
        Q = LPK(&P, "source");
        rec_source(r, o, m, &Q);
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
            diag_lp(x, NF_C_ENCODING, &P, "%s with %s: %s", o->format_name, o->layout_name,
                    why ? why : "not allowed");
        } else if (o->enc_status == NF_ENC_OVERFLOW) {
            diag_lp(x, NF_C_RANGE, &P, "encoded size of shape overflows U64%s%s",
                    why ? ": " : "", why ? why : "");
        } else if (o->enc_status == NF_ENC_OK && o->has_bytes &&
                   o->bytes != enc.encoded_bytes) {
            Q = LPK(&P, "bytes");
            diag_lp(x, NF_C_SIZE, &Q, "bytes is %llu but %s/%s of this shape encodes to %llu",
                    (unsigned long long)o->bytes, o->format_name, o->layout_name,
                    (unsigned long long)enc.encoded_bytes);
        }
        if (o->enc_status == NF_ENC_OK && !o->has_bytes && bm == SIZE_MAX) {
            o->bytes = enc.encoded_bytes;
            o->has_bytes = true;
        }
    }
    if (tensor && o->has_offset && o->offset % NF_TENSOR_ALIGN) {
        Q = LPK(&P, "offset");
        diag_lp(x, NF_C_ALIGNMENT, &Q, "%llu is not a multiple of %d",
                (unsigned long long)o->offset, NF_TENSOR_ALIGN);
    }
}

/* ---- bindings and uses (spec 7, 8) ---- */

static bool rec_binding(rctx *r, nf_binding *b, size_t v, const lp *ptr)
{
    const uint32_t allowed = FM(F_OBJECT) | FM(F_PARTS);
    pctx *x = r->x;
    b->obj = SIZE_MAX;
    if (!t_expect(r, v, NF_J_OBJECT, ptr, "a binding"))
        return false;
    bool ok = t_check_members(r, v, ptr, allowed, NULL, "binding");
    size_t ho = t_get(r, v, F_OBJECT), hp = t_get(r, v, F_PARTS);
    if ((ho != SIZE_MAX) == (hp != SIZE_MAX)) {
        diag_lp(x, NF_C_SCHEMA, ptr, "a binding has exactly one of \"object\" and \"parts\"");
        return false;
    }
    if (ho != SIZE_MAX) {
        lp P = LPK(ptr, "object");
        b->object = t_ref(r, ho, &P, "binding object", &b->obj);
        return ok && b->object;
    }
    lp P = LPK(ptr, "parts");
    if (!t_expect(r, hp, NF_J_ARRAY, &P, "parts") || t_len(r, hp) == 0) {
        if (t_type(r, hp) == NF_J_ARRAY)
            diag_lp(x, NF_C_SCHEMA, &P, "parts must not be empty");
        return false;
    }
    size_t n = t_len(r, hp);
    b->parts = n <= SIZE_MAX / sizeof *b->parts
                   ? nf_arena_alloc(x->c->arena, n * sizeof *b->parts) : NULL;
    if (!b->parts) {
        diag_lp(x, NF_C_IO, &P, "out of memory");
        return false;
    }
    memset(b->parts, 0, n * sizeof *b->parts);
    b->n_parts = n;
    const uint32_t pa = FM(F_OBJECT) | FM(F_RANGE);
    static const uint8_t pa_req[] = {F_OBJECT, F_RANGE, 0};
    for (size_t i = 0; i < n; i++) {
        size_t e = t_at(r, hp, i);
        nf_part *pt = &b->parts[i];
        pt->obj = SIZE_MAX;
        lp Q = LPI(&P, i);
        if (!t_expect(r, e, NF_J_OBJECT, &Q, "a part") ||
            !t_check_members(r, e, &Q, pa, pa_req, "part")) {
            ok = false;
            continue;
        }
        lp RP = LPK(&Q, "object");
        pt->object = t_ref(r, t_get(r, e, F_OBJECT), &RP, "part object", &pt->obj);
        ok &= pt->object != NULL;
        RP = LPK(&Q, "range");
        size_t rg = t_get(r, e, F_RANGE);
        if (t_expect(r, rg, NF_J_ARRAY, &RP, "range") && t_len(r, rg) == 2) {
            lp R0 = LPI(&RP, 0), R1 = LPI(&RP, 1);
            /* both read (both reported), then combined */
            bool g0 = t_u64(r, t_at(r, rg, 0), &R0, "range begin", false, &pt->begin);
            bool g = t_u64(r, t_at(r, rg, 1), &R1, "range end", false, &pt->end) && g0;
            if (g && pt->begin >= pt->end) {
                diag_lp(x, NF_C_PART_RANGE, &RP, "range [%llu, %llu) is empty or reversed",
                        (unsigned long long)pt->begin, (unsigned long long)pt->end);
                g = false;
            }
            ok &= g;
        } else {
            if (t_type(r, rg) == NF_J_ARRAY)
                diag_lp(x, NF_C_SCHEMA, &RP, "range must be [BEGIN, END]");
            ok = false;
        }
    }
    return ok;
}

/* One member of /bindings. */
/* One member of /bindings: its record i was made (and entered in the map)
 * when its name was read. */
static void rec_named_binding(rctx *r, size_t i, size_t v)
{
    nf_catalog *c = r->x->c;
    nf_named_binding *nb = &c->bindings[i];
    const char *name = nb->name ? nb->name : "";
    lp B = LPK(NULL, "bindings"), P = LPK(&B, name);
    if (!name[0])
        diag_lp(r->x, NF_C_SCHEMA, &P, "%s must be a non-empty ID", "parameter name");
    if (!nb->name)
        diag_at_oom(r->x);
    rec_binding(r, &nb->b, v, &P);
}

/* A use's parameter: its binding's name when the binding is known. */
static char *t_param(rctx *r, size_t i, const lp *ptr, size_t *binding)
{
    size_t n;
    const char *s = t_id(r, i, ptr, "parameter", &n);
    if (!s)
        return NULL;
    nf_catalog *c = r->x->c;
    if (c->ix->bindings.s) {
        size_t bi = nf_catalog_index_find_binding(c, s, n, &c->ix->hint_param);
        if (bi != SIZE_MAX) {
            *binding = bi;
            return c->bindings[bi].name;
        }
    }
    char *p = nf_arena_strndup(c->arena, s, n);
    if (!p)
        diag_at_oom(r->x);
    return p;
}

static void rec_use(rctx *r, size_t i, size_t e)
{
    const uint32_t allowed = FM(F_PARAMETER) | FM(F_INPUT) | FM(F_ACTIVATION_POLICY) | FM(F_AUXILIARIES);
    static const uint8_t required[] = {F_PARAMETER, F_INPUT, 0};
    pctx *x = r->x;
    nf_catalog *c = x->c;
    nf_use *u = &c->uses[c->n_uses++];
    memset(u, 0, sizeof *u);
    u->binding = SIZE_MAX;
    lp A = LPK(NULL, "uses"), P = LPI(&A, i), Q;
    if (!t_expect(r, e, NF_J_OBJECT, &P, "a use")) {
        return;
    }
    t_check_members(r, e, &P, allowed, required, "use");
    size_t m;
    if ((m = t_get(r, e, F_PARAMETER)) != SIZE_MAX) {
        Q = LPK(&P, "parameter");
        u->parameter = t_param(r, m, &Q, &u->binding);
    }
    if ((m = t_get(r, e, F_INPUT)) != SIZE_MAX) {
        Q = LPK(&P, "input");
        u->input = t_id_intern(r, m, &Q, "input");
    }
    if ((m = t_get(r, e, F_ACTIVATION_POLICY)) != SIZE_MAX) {
        Q = LPK(&P, "activation_policy");
        size_t sl = 0;
        const char *s = t_str(r, m, 0, &sl);
        if (s && ((sl == 7 && !memcmp(s, "A16Only", 7)) || (sl == 7 && !memcmp(s, "AllowA8", 7)) ||
                  (sl == 7 && !memcmp(s, "AllowA4", 7)))) {
            u->activation_policy = nf_catalog_intern(c, s, sl);
            if (!u->activation_policy)
                diag_at_oom(x);
        } else {
            diag_lp(x, NF_C_SCHEMA, &Q,
                    "activation_policy must be \"A16Only\", \"AllowA8\" or \"AllowA4\"");
        }
    }
    if ((m = t_get(r, e, F_AUXILIARIES)) != SIZE_MAX) {
        Q = LPK(&P, "auxiliaries");
        if (t_expect(r, m, NF_J_OBJECT, &Q, "auxiliaries")) {
            size_t na = t_members(r, m);
            u->aux = nf_arena_alloc(c->arena, (na ? na : 1) * sizeof *u->aux);
            if (!u->aux)
                diag_at_oom(x);
            for (size_t k = 0; u->aux && k < na; k++) {
                nf_aux *ax = &u->aux[u->n_aux++];
                memset(ax, 0, sizeof *ax);
                const char *role = tb_name(r->t, TN(r, t_mname(r, m, k)), 1);
                ax->role = nf_catalog_intern(c, role, strlen(role));
                if (!ax->role) {
                    diag_at_oom(x);
                    u->n_aux--;
                    continue;
                }
                /* the key is the interned copy, not scratch slot 1: an
                 * unknown member of the binding reuses (and may grow) that
                 * slot while this pointer is still in use (red-team A0) */
                lp RP = LPK(&Q, ax->role);
                rec_binding(r, &ax->b, t_mval(r, m, k), &RP);
            }
        }
    }
    if (u->parameter && u->input) {
        size_t prev = nf_catalog_index_add_use(c, i);
        if (prev == SIZE_MAX - 1)
            diag_at_oom(x);
        else if (prev != SIZE_MAX)
            diag_lp(x, NF_C_DUPLICATE_USE, &P,
                    "(parameter \"%s\", input \"%s\") is already used by /uses/%zu",
                    u->parameter, u->input, prev);
    }
}

/* ---- files (spec 3.3) ---- */

typedef struct {
    nf_strmap names;
    bool sum_ok;
    uint64_t sum;
} files_state;

static void rec_file(rctx *r, files_state *fs, size_t i, size_t e)
{
    const uint32_t fa = FM(F_PATH) | FM(F_PAYLOAD_BYTES);
    static const uint8_t fa_req[] = {F_PATH, F_PAYLOAD_BYTES, 0};
    pctx *x = r->x;
    nf_catalog *c = x->c;
    nf_file *f = &c->files[i];
    memset(f, 0, sizeof *f);
    lp A = LPK(NULL, "files"), P = LPI(&A, i), Q;
    if (!t_expect(r, e, NF_J_OBJECT, &P, "a files entry") ||
        !t_check_members(r, e, &P, fa, fa_req, "files entry")) {
        fs->sum_ok = false;
        return;
    }
    Q = LPK(&P, "path");
    size_t pv = t_get(r, e, F_PATH);
    if (i == 0) {
        if (t_type(r, pv) != NF_J_NULL)
            diag_lp(x, NF_C_FILES, &Q, "files[0] describes the entry: its path must be null");
    } else if (t_type(r, pv) != NF_J_STRING) {
        diag_lp(x, NF_C_FILES, &Q, "a part path must be a string, not %s",
                nf_jtype_name(t_type(r, pv)));
    } else {
        size_t len;
        const char *s = t_str(r, pv, 0, &len);
        const char *bad = NULL;
        if (len == 0)
            bad = "is empty";
        else if (memchr(s, 0, len))
            bad = "contains U+0000";
        else if (memchr(s, '/', len))
            bad = "contains '/'";
        else if (memchr(s, '\\', len))
            bad = "contains '\\'";
        else if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
            bad = "is \".\" or \"..\"";
        else if (x->entry_name && strlen(x->entry_name) == len && !memcmp(s, x->entry_name, len))
            bad = "is the entry's own file name";
        if (bad) {
            diag_lp(x, NF_C_FILES, &Q, "part path %s", bad);
        } else {
            f->path = nf_arena_strndup(c->arena, s, len);
            size_t prev = f->path ? nf_strmap_add(&fs->names, f->path, len, i) : SIZE_MAX;
            if (!f->path || prev == SIZE_MAX - 1)
                diag_at_oom(x);
            else if (prev != SIZE_MAX)
                diag_lp(x, NF_C_FILES, &Q, "part path \"%s\" is also files[%zu]", f->path, prev);
        }
    }
    Q = LPK(&P, "payload_bytes");
    if (t_u64(r, t_get(r, e, F_PAYLOAD_BYTES), &Q, "payload_bytes", true, &f->payload_bytes)) {
        f->logical_offset = fs->sum;
        if (fs->sum_ok && !nf_add_u64(fs->sum, f->payload_bytes, &fs->sum)) {
            diag_lp(x, NF_C_RANGE, &Q, "the sum of payload_bytes overflows U64");
            fs->sum_ok = false;
        }
    } else {
        fs->sum_ok = false;
    }
}

/* ---- the pass: sections of the root object --------------------------------- */

/* Diagnostics are kept by section and joined in the order the sections are
 * checked (as they always were), whatever order the text has them in. */
enum {
    D_ROOT, D_FILES, D_COMPONENTS, D_OBJECTS, D_BINDINGS, D_USES,
    D_METADATA, D_PROVENANCE, D_POST, D_COUNT_
};

enum {
    S_UNKNOWN, S_FILES, S_COMPONENTS, S_OBJECTS, S_BINDINGS, S_USES, S_METADATA,
    S_PROVENANCE, S_COUNT_
};

static const char *const sec_names[S_COUNT_] = {"", "files", "components", "objects",
                                                "bindings", "uses", "metadata", "provenance"};

/* metadata states */
enum { M_NONE, M_INTEGRITY, M_SHA };

/* A digest read before its object (metadata ahead of objects in the text). */
typedef struct {
    char *id;
    uint8_t digest[32];
    bool ok; /* 64 lowercase hex digits */
} pend_digest;

typedef struct {
    pctx x;
    nf_diags sd[D_COUNT_];
    nf_diags *out;
    const char *text;
    size_t depth;             /* open containers */
    size_t skip;              /* > 0: inside a value nobody reads, its nesting */
    bool skip_prov;           /* that value is the provenance object */
    bool root_bad;            /* the root is not an object */
    nf_jtype root_type;
    int sec;                  /* the root member being read */
    bool sec_container;       /* its value is the container we walk */
    bool sec_done[S_COUNT_];
    size_t sec_start;         /* where its value began */
    /* records */
    tbuild t;
    bool in_rec;
    uint16_t rec_ctx;
    size_t n_rec;             /* records of the section so far */
    size_t key_start, key_len; /* name of the current member (object sections) */
    bool key_esc;
    files_state fs;
    size_t cap_files, cap_comps, cap_binds, cap_uses;
    /* metadata */
    int mstate;
    bool m_integrity, m_name, int_obj, int_sha, sha_obj;
    nf_diags m_name_d, m_unk_d, m_sha_d;
    pend_digest *pend;
    size_t n_pend, cap_pend;
    char *scratch;
    size_t scap;
    size_t scratch_len;       /* pass_name's bytes */
    /* member names the pass checks for duplicates itself (NF_JSCAN_OWN_NAMES:
     * /bindings, and metadata.integrity.sha256 once the objects are read) */
    nf_strmap ghost_keys;     /* digest names that are no object, exactly */
    uint8_t *dig_seen;        /* a bit per object: its digest name was read */
    bool sha_own;
    size_t cur_binding;       /* the binding whose value is being read */
    bool cur_dup;             /* ... which is a duplicate (the scan fails) */
    size_t dkey_obj;          /* the object of the digest being read */
} pass;

static void pass_diags_init(pass *s, nf_diags *d)
{
    nf_diags *all[] = {&s->m_name_d, &s->m_unk_d, &s->m_sha_d};
    for (int i = 0; i < D_COUNT_; i++) {
        s->sd[i] = (nf_diags)NF_DIAGS_INIT;
        s->sd[i].file = d->file;
        s->sd[i].limit = d->limit;
    }
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        *all[i] = (nf_diags)NF_DIAGS_INIT;
        all[i]->file = d->file;
        all[i]->limit = d->limit;
    }
}

static void pass_free(pass *s)
{
    for (int i = 0; i < D_COUNT_; i++)
        nf_diags_free(&s->sd[i]);
    nf_diags_free(&s->m_name_d);
    nf_diags_free(&s->m_unk_d);
    nf_diags_free(&s->m_sha_d);
    for (size_t i = 0; i < s->n_pend; i++)
        free(s->pend[i].id);
    free(s->pend);
    free(s->scratch);
    nf_strmap_free(&s->ghost_keys);
    free(s->dig_seen);
    tb_free(&s->t);
    nf_strmap_free(&s->fs.names);
}

static nf_diags *sec_diags(pass *s, int sec)
{
    switch (sec) {
    case S_FILES: return &s->sd[D_FILES];
    case S_COMPONENTS: return &s->sd[D_COMPONENTS];
    case S_OBJECTS: return &s->sd[D_OBJECTS];
    case S_BINDINGS: return &s->sd[D_BINDINGS];
    case S_USES: return &s->sd[D_USES];
    case S_METADATA: return &s->sd[D_METADATA];
    case S_PROVENANCE: return &s->sd[D_PROVENANCE];
    default: return &s->sd[D_ROOT];
    }
}

/* Stop the scan for want of memory (the diagnostic goes straight out: the
 * half-built catalog is dropped). */
static int pass_oom(pass *s)
{
    nf_diag_add(s->out, NF_C_IO, "", "out of memory reading the catalog");
    return 1;
}

/* The unescaped member name at [start, start+len), in s->scratch (names
 * hold no U+0000: the scanner refuses them). */
static const char *pass_name(pass *s, size_t start, size_t len, bool esc)
{
    if (!grow_vec((void **)&s->scratch, &s->scap, len + 1, 1))
        return NULL;
    size_t n = len;
    if (esc)
        n = nf_junescape(s->text + start, len, s->scratch);
    else
        memcpy(s->scratch, s->text + start, len);
    s->scratch[n] = 0;
    s->scratch_len = n;
    return s->scratch;
}

static nf_jtype scalar_type(nf_jscalar k)
{
    switch (k) {
    case NF_JS_STRING: case NF_JS_ESTRING: return NF_J_STRING;
    case NF_JS_INT: case NF_JS_NEGINT: case NF_JS_BIGINT: return NF_J_INT;
    case NF_JS_NUMBER: return NF_J_DOUBLE;
    case NF_JS_TRUE: case NF_JS_FALSE: return NF_J_BOOL;
    default: return NF_J_NULL;
    }
}

static bool sec_is_array(int sec)
{
    return sec == S_FILES || sec == S_OBJECTS || sec == S_USES;
}

static uint16_t rec_ctx_of(int sec)
{
    switch (sec) {
    case S_FILES: return X_FILE;
    case S_OBJECTS: return X_OBJECT;
    case S_USES: return X_USE;
    case S_BINDINGS: return X_BINDING;
    case S_COMPONENTS: return X_COMP;
    default: return X_LEAF;
    }
}

/* The value of a section has the wrong type. */
static void sec_type_error(pass *s, nf_jtype got)
{
    nf_jtype want = sec_is_array(s->sec) ? NF_J_ARRAY : NF_J_OBJECT;
    char ptr[16];
    snprintf(ptr, sizeof ptr, "/%s", sec_names[s->sec]);
    nf_diag_add(sec_diags(s, s->sec), NF_C_SCHEMA, ptr, "%s must be %s %s, not %s",
                sec_names[s->sec], article(want), nf_jtype_name(want), nf_jtype_name(got));
}

/* A record's value is complete: check it and store it. */
static int finish_record(pass *s)
{
    nf_catalog *c = s->x.c;
    rctx r = {&s->x, &s->t};
    size_t root = s->t.root, i = s->n_rec++;
    s->in_rec = false;
    if (s->t.oom)
        return pass_oom(s);
    s->x.d = sec_diags(s, s->sec);
    switch (s->sec) {
    case S_FILES:
        if (!grow_vec((void **)&c->files, &s->cap_files, i + 1, sizeof *c->files))
            return pass_oom(s);
        c->n_files = i + 1;
        rec_file(&r, &s->fs, i, root);
        break;
    case S_OBJECTS: {
        if (!grow_vec((void **)&c->objects, &c->objects_cap, i + 1, sizeof *c->objects))
            return pass_oom(s);
        c->n_objects = i + 1;
        rec_object(&r, i, root);
        nf_object *o = &c->objects[i];
        if (!o->id)
            break;
        size_t prev = nf_catalog_index_add_object(c, i);
        if (prev == SIZE_MAX - 1) {
            return pass_oom(s);
        } else if (prev != SIZE_MAX) {
            char *p = elem_ptr("/objects", i, "id");
            diag_at(&s->x, NF_C_DUPLICATE_ID, p,
                    "object ID \"%s\" is already used by /objects/%zu", o->id, prev);
            free(p);
        }
        break;
    }
    case S_USES:
        if (!grow_vec((void **)&c->uses, &s->cap_uses, i + 1, sizeof *c->uses))
            return pass_oom(s);
        rec_use(&r, i, root);
        break;
    case S_BINDINGS:
        if (!s->cur_dup)
            rec_named_binding(&r, s->cur_binding, root);
        break;
    case S_COMPONENTS: {
        const char *name = pass_name(s, s->key_start, s->key_len, s->key_esc);
        if (!name || !grow_vec((void **)&c->components, &s->cap_comps, c->n_components + 1,
                               sizeof *c->components))
            return pass_oom(s);
        rec_component(&r, name, root);
        break;
    }
    default:
        break;
    }
    return s->t.oom ? pass_oom(s) : 0;
}

static int start_record(pass *s)
{
    tb_reset(&s->t);
    s->t.text = s->text;
    s->in_rec = true;
    s->rec_ctx = rec_ctx_of(s->sec);
    return 0;
}

/* ---- metadata (spec 10; DESIGN 9 and 13 for integrity) ---- */

/* Lowercase hex digit values; 16 for every other byte. */
static const uint8_t hexlow[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8,
    ['8'] = 9, ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15,
    ['f'] = 16,
}; /* value + 1; 0: not a digit */

/* 64 lowercase hex digits s[0..n) into out: false (out unspecified) when
 * s is not that. */
static bool hex_digest(const char *s, size_t n, uint8_t out[32])
{
    if (n != 64)
        return false;
    unsigned bad = 0;
    for (int i = 0; i < 32; i++) {
        unsigned a = hexlow[(unsigned char)s[2 * i]], b = hexlow[(unsigned char)s[2 * i + 1]];
        bad |= (a == 0) | (b == 0);
        out[i] = (uint8_t)((a - 1) << 4 | ((b - 1) & 15));
    }
    return !bad;
}

static void digest_diag(pass *s, const char *id, bool no_object)
{
    char *p = ptr_key("/metadata/integrity/sha256", id);
    if (no_object)
        nf_diag_add(&s->m_sha_d, NF_C_INTEGRITY, p, "digest for \"%s\", which is no object", id);
    else
        nf_diag_add(&s->m_sha_d, NF_C_INTEGRITY, p, "digest must be 64 lowercase hex digits");
    free(p);
}

/* One member of metadata.integrity.sha256: its value is a string (val,
 * unescaped, n bytes) or not (val NULL). */
static int digest_member(pass *s, const char *val, size_t n)
{
    nf_catalog *c = s->x.c;
    uint8_t dg[32];
    bool ok = val && hex_digest(val, n, dg);
    if (s->sha_own && s->dkey_obj != SIZE_MAX) {
        /* the name was looked up when it was read */
        if (ok) {
            memcpy(c->objects[s->dkey_obj].digest, dg, 32);
            c->objects[s->dkey_obj].has_digest = true;
            return 0;
        }
        const char *id = pass_name(s, s->key_start, s->key_len, s->key_esc);
        if (!id)
            return pass_oom(s);
        digest_diag(s, id, false);
        return 0;
    }
    if (ok && !s->key_esc && s->sec_done[S_OBJECTS]) {
        /* the common case: look the name up in place */
        const char *k = s->text + s->key_start;
        size_t oi = nf_catalog_index_find_object(c, k, s->key_len, &c->ix->hint_digest);
        if (oi != SIZE_MAX) {
            memcpy(c->objects[oi].digest, dg, 32);
            c->objects[oi].has_digest = true;
            return 0;
        }
    }
    const char *id = pass_name(s, s->key_start, s->key_len, s->key_esc);
    if (!id)
        return pass_oom(s);
    if (!s->sec_done[S_OBJECTS]) {
        /* the objects come later: decide at the end, in this order */
        if (!grow_vec((void **)&s->pend, &s->cap_pend, s->n_pend + 1, sizeof *s->pend))
            return pass_oom(s);
        pend_digest *pd = &s->pend[s->n_pend];
        pd->id = strdup(id);
        if (!pd->id)
            return pass_oom(s);
        pd->ok = ok;
        if (ok)
            memcpy(pd->digest, dg, 32);
        s->n_pend++;
        return 0;
    }
    size_t oi = nf_catalog_find(c, id);
    if (oi == SIZE_MAX || !ok) {
        digest_diag(s, id, oi == SIZE_MAX);
        return 0;
    }
    memcpy(c->objects[oi].digest, dg, 32);
    c->objects[oi].has_digest = true;
    return 0;
}

/* metadata's member value is complete (or skipped): nothing to do but for
 * "name", which must be a non-empty string. */
static void meta_name_value(pass *s, nf_jtype t, size_t len)
{
    /* a non-empty raw string unescapes to at least one byte */
    bool ok = t == NF_J_STRING && len > 0;
    if (!ok)
        nf_diag_add(&s->m_name_d, NF_C_SCHEMA, "/metadata/name",
                    "metadata name must be a non-empty string");
}

static void meta_finish(pass *s)
{
    nf_diags *d = &s->sd[D_METADATA];
    nf_diags_move(d, &s->m_name_d);
    nf_diags_move(d, &s->m_unk_d);
    if (s->int_obj && !s->sha_obj)
        nf_diag_add(d, NF_C_INTEGRITY, "/metadata/integrity/sha256",
                    "integrity needs a sha256 object");
    nf_diags_move(d, &s->m_sha_d);
}

/* A /bindings member name: its record is made now and entered in the map,
 * which tells a repeated name (NF_JSCAN_DUPLICATE: the scanner reports it). */
static int binding_name(pass *s, size_t start, size_t len, bool esc)
{
    nf_catalog *c = s->x.c;
    s->cur_dup = false;
    const char *name = pass_name(s, start, len, esc);
    if (!name || !grow_vec((void **)&c->bindings, &s->cap_binds, c->n_bindings + 1,
                           sizeof *c->bindings))
        return pass_oom(s);
    nf_named_binding *nb = &c->bindings[c->n_bindings];
    memset(nb, 0, sizeof *nb);
    nb->name = nf_arena_strndup(c->arena, name, s->scratch_len);
    nb->component = SIZE_MAX;
    nb->b.obj = SIZE_MAX;
    if (!nb->name)
        return pass_oom(s);
    size_t prev = nf_catalog_index_add_binding(c, c->n_bindings);
    if (prev == SIZE_MAX - 1)
        return pass_oom(s);
    if (prev != SIZE_MAX) {
        s->cur_dup = true;
        return NF_JSCAN_DUPLICATE;
    }
    s->cur_binding = c->n_bindings++;
    return 0;
}

/* A metadata.integrity.sha256 member name, the objects read: its object
 * (a bit per object tells a repeat), or a name of none (kept exactly). */
static int digest_name(pass *s)
{
    nf_catalog *c = s->x.c;
    s->dkey_obj = SIZE_MAX;
    const char *k = s->text + s->key_start;
    size_t n = s->key_len;
    if (s->key_esc) {
        if (!pass_name(s, s->key_start, s->key_len, true))
            return pass_oom(s);
        k = s->scratch;
        n = s->scratch_len;
    }
    size_t oi = nf_catalog_index_find_object(c, k, n, &c->ix->hint_digest);
    if (oi == SIZE_MAX) {
        size_t prev = nf_strmap_add(&s->ghost_keys, k, n, 0);
        if (prev == SIZE_MAX - 1)
            return pass_oom(s);
        return prev != SIZE_MAX ? NF_JSCAN_DUPLICATE : 0;
    }
    if (s->dig_seen[oi / 8] & (1u << (oi % 8)))
        return NF_JSCAN_DUPLICATE;
    s->dig_seen[oi / 8] |= (uint8_t)(1u << (oi % 8));
    s->dkey_obj = oi;
    return 0;
}

/* ---- events ---- */

static int ev_open(void *ctx, bool obj, size_t off)
{
    pass *s = ctx;
    size_t d = s->depth++; /* the parent's depth; 0 for the root */
    if (s->skip) {
        s->skip++;
        return 0;
    }
    if (s->in_rec) {
        tb_open(&s->t, obj, off, s->rec_ctx);
        return s->t.oom ? pass_oom(s) : 0;
    }
    if (d == 0) {
        if (!obj) {
            s->root_bad = true;
            s->root_type = NF_J_ARRAY;
            s->skip = 1;
        }
        return 0;
    }
    if (d == 1) {
        /* the value of a root member */
        s->sec_start = off;
        s->sec_container = false;
        if (s->sec == S_UNKNOWN) {
            s->skip = 1;
        } else if (s->sec == S_PROVENANCE) {
            if (!obj)
                sec_type_error(s, NF_J_ARRAY);
            s->skip = 1;
            s->skip_prov = obj;
        } else if (obj == sec_is_array(s->sec)) {
            sec_type_error(s, obj ? NF_J_OBJECT : NF_J_ARRAY);
            s->skip = 1;
        } else {
            s->sec_container = true;
            s->n_rec = 0;
            if (s->sec == S_METADATA) {
                s->x.c->has_metadata = true;
                s->mstate = M_NONE;
            }
            /* the bindings map finds repeated names: no second table */
            if (s->sec == S_BINDINGS)
                return NF_JSCAN_OWN_NAMES;
        }
        return 0;
    }
    if (s->sec == S_METADATA) {
        if (d == 2 && s->m_integrity && obj) {
            s->mstate = M_INTEGRITY;
            s->int_obj = true;
            return 0;
        }
        if (d == 2 && s->m_integrity) {
            nf_diag_add(&s->m_unk_d, NF_C_INTEGRITY, "/metadata/integrity",
                        "integrity must be an object");
            s->m_integrity = false;
        } else if (d == 2 && s->m_name) {
            meta_name_value(s, obj ? NF_J_OBJECT : NF_J_ARRAY, 0);
        } else if (d == 3 && s->mstate == M_INTEGRITY && s->int_sha && obj) {
            s->sha_obj = true;
            s->mstate = M_SHA;
            /* with the objects read, a digest's name is found among them:
             * they tell repeats too (a bit each), no second table */
            nf_catalog *c = s->x.c;
            free(s->dig_seen);
            s->dig_seen = NULL;
            s->sha_own = s->sec_done[S_OBJECTS] &&
                         (s->dig_seen = calloc(c->n_objects / 8 + 1, 1)) != NULL;
            return s->sha_own ? NF_JSCAN_OWN_NAMES : 0;
        } else if (d == 4 && s->mstate == M_SHA) {
            if (digest_member(s, NULL, 0))
                return 1;
        }
        s->skip = 1;
        return 0;
    }
    if (d == 2) {
        start_record(s);
        tb_open(&s->t, obj, off, s->rec_ctx);
        return s->t.oom ? pass_oom(s) : 0;
    }
    s->skip = 1;
    return 0;
}

static void root_close(pass *s)
{
    static const char *const required[] = {"components", "objects", "bindings", "uses",
                                           "files", NULL};
    static const char *const required_m[] = {"components", "objects", "bindings", "uses",
                                             NULL};
    static const int req_sec[] = {S_COMPONENTS, S_OBJECTS, S_BINDINGS, S_USES, S_FILES};
    const char *const *rq = s->x.mode == NF_CAT_MANIFEST ? required_m : required;
    for (size_t i = 0; rq[i]; i++) {
        if (s->sec_done[req_sec[i]])
            continue;
        char *p = ptr_key("", rq[i]);
        nf_diag_add(&s->sd[D_ROOT], NF_C_SCHEMA, p, "the catalog lacks required member \"%s\"",
                    rq[i]);
        free(p);
    }
}

static void section_close(pass *s, size_t end)
{
    nf_catalog *c = s->x.c;
    nf_diags *d = sec_diags(s, s->sec);
    switch (s->sec) {
    case S_FILES:
        if (s->n_rec == 0) {
            nf_diag_add(d, NF_C_SCHEMA, "/files", "files must not be empty");
        } else {
            c->has_files = s->fs.sum_ok;
            c->payload_bytes = s->fs.sum_ok ? s->fs.sum : UINT64_MAX;
        }
        break;
    case S_COMPONENTS:
        if (s->n_rec == 0)
            nf_diag_add(d, NF_C_SCHEMA, "/components", "components must not be empty");
        break;
    case S_OBJECTS:
        if (s->n_rec == 0)
            nf_diag_add(d, NF_C_SCHEMA, "/objects", "objects must not be empty");
        break;
    case S_METADATA:
        c->metadata_text = s->text + s->sec_start;
        c->metadata_len = end - s->sec_start;
        meta_finish(s);
        break;
    default:
        break;
    }
    s->sec_container = false;
}

static int ev_close(void *ctx, size_t end)
{
    pass *s = ctx;
    size_t d = --s->depth; /* the closed container's parent */
    if (s->skip) {
        if (--s->skip == 0 && s->skip_prov) {
            s->skip_prov = false;
            s->x.c->provenance_text = s->text + s->sec_start;
            s->x.c->provenance_len = end - s->sec_start;
            s->x.c->has_provenance = true;
        }
        return 0;
    }
    if (s->in_rec) {
        tb_close(&s->t, end);
        if (s->t.oom)
            return pass_oom(s);
        return s->t.done ? finish_record(s) : 0;
    }
    if (d == 0) {
        if (!s->root_bad)
            root_close(s);
        return 0;
    }
    if (d == 1) {
        section_close(s, end);
        return 0;
    }
    if (s->sec == S_METADATA) {
        if (d == 3 && s->mstate == M_SHA) {
            s->mstate = M_INTEGRITY;
        } else if (d == 2 && s->mstate == M_INTEGRITY) {
            s->mstate = M_NONE;
            s->m_integrity = false;
        }
        if (d == 3)
            s->sha_own = false;
    }
    return 0;
}

static int ev_key(void *ctx, size_t start, size_t len, bool esc)
{
    pass *s = ctx;
    if (s->skip)
        return 0;
    if (s->in_rec) {
        tb_key(&s->t, start, len, esc);
        return s->t.oom ? pass_oom(s) : 0;
    }
    size_t d = s->depth;
    if (d == 1) {
        const char *name = pass_name(s, start, len, esc);
        if (!name)
            return pass_oom(s);
        s->sec = S_UNKNOWN;
        for (int k = 1; k < S_COUNT_; k++)
            if (!strcmp(name, sec_names[k]))
                s->sec = k;
        if (s->sec != S_UNKNOWN && s->sec_done[s->sec]) {
            /* a repeated section (the scanner reports duplicate-member):
             * its value is skipped, so the records of the first stay whole
             * and owned (red-team A6: the second "objects" overwrote the
             * first's records and leaked their sources) */
            s->sec = S_UNKNOWN;
        } else if (s->sec == S_UNKNOWN) {
            char *p = nf_ptr_join("", s->scratch, s->scratch_len);
            nf_diag_add(&s->sd[D_ROOT], NF_C_SCHEMA, p, "unknown member \"%s\" in the catalog",
                        name);
            free(p);
        } else {
            s->sec_done[s->sec] = true;
        }
        return 0;
    }
    if (d == 2 && s->sec_container && s->sec == S_BINDINGS) {
        int r = binding_name(s, start, len, esc);
        if (r != 0 && r != NF_JSCAN_DUPLICATE)
            return r;
        s->key_start = start;
        s->key_len = len;
        s->key_esc = esc;
        return r;
    }
    if (d == 2 && s->sec_container) {
        s->key_start = start;
        s->key_len = len;
        s->key_esc = esc;
        if (s->sec == S_METADATA) {
            const char *name = pass_name(s, start, len, esc);
            if (!name)
                return pass_oom(s);
            s->m_integrity = !strcmp(name, "integrity");
            s->m_name = !strcmp(name, "name");
            if (s->m_integrity) {
                s->x.c->has_integrity = true;
                s->int_obj = s->int_sha = s->sha_obj = false;
            }
        }
        return 0;
    }
    if (s->sec == S_METADATA && d == 3 && s->mstate == M_INTEGRITY) {
        const char *name = pass_name(s, start, len, esc);
        if (!name)
            return pass_oom(s);
        if (strcmp(name, "sha256") == 0) {
            s->int_sha = true;
        } else {
            char *p = ptr_key("/metadata/integrity", name);
            nf_diag_add(&s->m_unk_d, NF_C_INTEGRITY, p, "unknown member \"%s\" in integrity",
                        name);
            free(p);
        }
        return 0;
    }
    if (s->sec == S_METADATA && d == 4 && s->mstate == M_SHA) {
        s->key_start = start;
        s->key_len = len;
        s->key_esc = esc;
        if (s->sha_own)
            return digest_name(s);
    }
    return 0;
}

static int ev_scalar(void *ctx, nf_jscalar kind, size_t start, size_t len)
{
    pass *s = ctx;
    if (s->skip)
        return 0;
    if (s->in_rec) {
        tb_scalar(&s->t, kind, start, len, s->rec_ctx);
        if (s->t.oom)
            return pass_oom(s);
        return s->t.done ? finish_record(s) : 0;
    }
    size_t d = s->depth;
    nf_jtype t = scalar_type(kind);
    if (d == 0) {
        s->root_bad = true;
        s->root_type = t;
        return 0;
    }
    if (d == 1) {
        if (s->sec != S_UNKNOWN)
            sec_type_error(s, t);
        return 0;
    }
    if (s->sec == S_METADATA) {
        if (d == 2 && s->m_integrity) {
            nf_diag_add(&s->m_unk_d, NF_C_INTEGRITY, "/metadata/integrity",
                        "integrity must be an object");
            s->m_integrity = false;
        } else if (d == 2 && s->m_name) {
            meta_name_value(s, t, len);
        } else if (d == 4 && s->mstate == M_SHA) {
            if (t != NF_J_STRING)
                return digest_member(s, NULL, 0);
            if (kind == NF_JS_STRING)
                return digest_member(s, s->text + start, len);
            /* escapes: unescape into a copy (the name needs the scratch) */
            char *v = malloc(len + 1);
            if (!v)
                return pass_oom(s);
            size_t n = nf_junescape(s->text + start, len, v);
            int rc = digest_member(s, v, n);
            free(v);
            return rc;
        }
        return 0;
    }
    if (d == 2 && s->sec_container) {
        start_record(s);
        tb_scalar(&s->t, kind, start, len, s->rec_ctx);
        return finish_record(s);
    }
    return 0;
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
    bool have_prev = false, sorted = true;
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
            sorted = false;
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
    /* in order already (what writers write): by offset, then index */
    if (!sorted)
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


/* ---- references (spec 11.1 item 4) ---- */

/* Resolve the references of b (those the parser could not resolve as it
 * read: objects after the binding in the text) without building any
 * pointer; false when a problem needs reporting. */
static bool binding_clean(const nf_catalog *c, nf_binding *b)
{
    bool ok = true;
    if (b->object) {
        if (b->obj == SIZE_MAX)
            b->obj = nf_catalog_find(c, b->object);
        return b->obj != SIZE_MAX && c->objects[b->obj].kind == NF_OBJ_TENSOR;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < b->n_parts; i++) {
        nf_part *pt = &b->parts[i];
        if (pt->end > pt->begin && !nf_add_u64(sum, pt->end - pt->begin, &sum))
            ok = false;
        if (!pt->object)
            continue;
        if (pt->obj == SIZE_MAX)
            pt->obj = nf_catalog_find(c, pt->object);
        if (pt->obj == SIZE_MAX || c->objects[pt->obj].kind != NF_OBJ_TENSOR) {
            ok = false;
            continue;
        }
        const nf_object *o = &c->objects[pt->obj];
        uint64_t el;
        if (o->enc_status != NF_ENC_INVALID && nf_shape_elements(o->dims, o->rank, &el) &&
            pt->end > el && pt->end > pt->begin)
            ok = false;
    }
    return ok;
}

static void resolve_binding(pctx *x, nf_binding *b, const char *ptr)
{
    nf_catalog *c = x->c;
    if (b->object) {
        if (b->obj == SIZE_MAX)
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
        if (pt->obj == SIZE_MAX)
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
    /* every sum is a U64 (spec 1): so is a binding's element count, the sum
     * of its parts (red-team A7: 4 x 2^62 + 256 wrapped to 256) */
    uint64_t sum = 0;
    bool over = false;
    for (size_t i = 0; i < b->n_parts && !over; i++)
        if (b->parts[i].end > b->parts[i].begin)
            over = !nf_add_u64(sum, b->parts[i].end - b->parts[i].begin, &sum);
    if (over) {
        char *p = ptr_key(ptr, "parts");
        diag_at(x, NF_C_RANGE, p, "the parts cover more than 2^64-1 elements (spec 1: sums stay within U64)");
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
            if (r->obj == SIZE_MAX)
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
        if (binding_clean(c, &c->bindings[i].b))
            continue;
        char *p = ptr_key("/bindings", c->bindings[i].name ? c->bindings[i].name : "");
        resolve_binding(x, &c->bindings[i].b, p);
        free(p);
    }
    for (size_t i = 0; i < c->n_uses; i++) {
        nf_use *u = &c->uses[i];
        /* the index resolved each use's binding */
        if (u->parameter && u->binding == SIZE_MAX) {
            char *p = elem_ptr("/uses", i, "parameter");
            diag_at(x, NF_C_REFERENCE, p, "no binding \"%s\"", u->parameter);
            free(p);
        }
        for (size_t j = 0; j < u->n_aux; j++) {
            if (binding_clean(c, &u->aux[j].b))
                continue;
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

/* A catalog that failed the scan, read from an entry: is the fault the
 * header's json_bytes? Yes when the text ends inside the value (cut), or
 * when the value is whole and the first byte after it, past whitespace, is
 * a zero byte (the fill: a writer puts nothing else there, and JSON text
 * never holds one). Then the scan's fatal record, the last in d, is
 * dropped for the header's (the duplicates found before it stay). Other
 * bytes after the value stay `json` (garbage after the value). */
static bool json_bytes_fault(const char *text, size_t len, size_t value_end, bool cut,
                             nf_diags *d)
{
    bool fault = cut;
    if (!cut && value_end != SIZE_MAX && value_end < len) {
        size_t i = value_end;
        while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                           text[i] == '\r'))
            i++;
        fault = i < len && text[i] == 0;
    }
    if (fault && d->dropped) {
        d->dropped--; /* past the record cap: the last one was not stored */
    } else if (fault && d->n) {
        nf_diag *r = &d->v[--d->n];
        free(r->pointer);
        free(r->file);
        free(r->message);
    }
    return fault;
}

static void shrink(void **v, size_t n, size_t size)
{
    if (*v && n) {
        void *nv = realloc(*v, n * size);
        if (nv)
            *v = nv;
    }
}

nf_catalog *nf_catalog_parse_owned(char *text, size_t len, nf_cat_mode mode,
                                   const char *entry_name, nf_diags *d)
{
    nf_catalog *c = calloc(1, sizeof *c);
    if (c) {
        c->text = text;
        c->text_len = len;
        c->arena = nf_arena_new();
        c->ix = calloc(1, sizeof *c->ix);
    }
    pass *s = calloc(1, sizeof *s);
    if (!c || !c->arena || !c->ix || !s || !nf_ixmap_init(&c->ix->objects, 0) ||
        !nf_ixmap_init(&c->ix->bindings, 0) || !nf_ixmap_init(&c->ix->uses, 0)) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        free(s);
        if (c)
            nf_catalog_free(c);
        else
            free(text);
        return NULL;
    }
    s->x = (pctx){c, &s->sd[D_ROOT], mode, entry_name};
    s->out = d;
    s->text = text ? text : "";
    s->t.text = s->text;
    s->fs.sum_ok = true;
    pass_diags_init(s, d);
    size_t value_end = SIZE_MAX;
    bool cut = false;
    nf_jscan_sink sink = {s, ev_open, ev_close, ev_key, ev_scalar, &value_end, &cut};
    /* an entry's catalog is json_bytes long: its findings wait, so that
     * a text cut short, or run on into the zero fill, is blamed on the
     * header's length rather than on a pointer deep inside */
    nf_diags scan_d = NF_DIAGS_INIT;
    scan_d.file = d->file;
    scan_d.limit = d->limit;
    bool entry = mode == NF_CAT_ARTIFACT;
    bool ok = nf_jscan_ex(text, len, 0, entry ? &scan_d : d, NULL, &sink);
    if (entry && !ok && !s->t.oom && json_bytes_fault(text, len, value_end, cut, &scan_d))
        nf_diag_add(&scan_d, NF_C_HEADER, "", cut ? "json_bytes ends the catalog inside its "
                    "JSON value (after %zu bytes): the header's length is too small"
                    : "json_bytes runs past the catalog's JSON value (%zu bytes) into zero "
                    "bytes: the header's length is too large",
                    cut ? len : value_end);
    nf_diags_move(d, &scan_d);
    nf_diags_free(&scan_d);
    if (ok && s->root_bad) {
        nf_diag_add(d, NF_C_SCHEMA, "", "the catalog must be %s %s, not %s",
                    article(NF_J_OBJECT), nf_jtype_name(NF_J_OBJECT),
                    nf_jtype_name(s->root_type));
        ok = false;
    }
    if (!ok) {
        pass_free(s);
        free(s);
        nf_catalog_free(c);
        return NULL;
    }
    /* digests read before their objects */
    for (size_t i = 0; i < s->n_pend; i++) {
        pend_digest *pd = &s->pend[i];
        size_t oi = nf_catalog_find(c, pd->id);
        if (oi == SIZE_MAX || !pd->ok) {
            digest_diag(s, pd->id, oi == SIZE_MAX);
            continue;
        }
        memcpy(c->objects[oi].digest, pd->digest, 32);
        c->objects[oi].has_digest = true;
    }
    nf_diags_move(&s->sd[D_METADATA], &s->m_sha_d);
    shrink((void **)&c->files, c->n_files, sizeof *c->files);
    shrink((void **)&c->components, c->n_components, sizeof *c->components);
    shrink((void **)&c->bindings, c->n_bindings, sizeof *c->bindings);
    shrink((void **)&c->uses, c->n_uses, sizeof *c->uses);
    if (c->n_objects) {
        shrink((void **)&c->objects, c->n_objects, sizeof *c->objects);
        c->objects_cap = c->n_objects;
    }
    s->x.d = &s->sd[D_POST];
    /* unknown resource encodings are reported when interpreted (DESIGN 13) */
    check_ranges(&s->x, c->has_files ? c->payload_bytes : UINT64_MAX);
    if (!nf_catalog_index_build(c))
        nf_diag_add(&s->sd[D_POST], NF_C_IO, "", "out of memory");
    check_references(&s->x);
    for (int i = 0; i < D_COUNT_; i++)
        nf_diags_move(d, &s->sd[i]);
    pass_free(s);
    free(s);
    return c;
}

void nf_catalog_free(nf_catalog *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_objects; i++) {
        nf_object *o = &c->objects[i];
        nf_source_free(o->source);
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
    pctx x = {c, d, NF_CAT_MANIFEST, NULL};
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
