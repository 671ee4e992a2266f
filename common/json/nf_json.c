/* nf_json.c — strict parse (nf_jscan first, then json-c) and the builder.
 * json-c represents JSON null as a NULL pointer; this module keeps that
 * convention (nf_jtype_of(NULL) is NF_J_NULL). */
#include "nf_json.h"

#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_util.h"

struct nf_jdoc {
    char *text;
    size_t len;
    json_object *root;
    nf_jscan_result scan;
    bool borrowed; /* text is the caller's (nf_jdoc_parse_scanned) */
};

static nf_jdoc *jdoc_parse(const char *text, size_t len, unsigned max_depth, bool scanned,
                           nf_diags *d);

nf_jdoc *nf_jdoc_parse(const char *text, size_t len, unsigned max_depth,
                       nf_diags *d)
{
    return jdoc_parse(text, len, max_depth, false, d);
}

nf_jdoc *nf_jdoc_parse_scanned(const char *text, size_t len, unsigned max_depth,
                               nf_diags *d)
{
    return jdoc_parse(text, len, max_depth, true, d);
}

static nf_jdoc *jdoc_parse(const char *text, size_t len, unsigned max_depth, bool scanned,
                           nf_diags *d)
{
    if (!max_depth)
        max_depth = NF_JSON_MAX_DEPTH;
    nf_jdoc *doc = calloc(1, sizeof *doc);
    if (!doc) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    /* json-c's tree costs, measured (json-c 0.16, malloc'ed bytes): a
     * scalar value 64 plus 8 for its array slot, an object member about 180
     * with its value, an array about 150 and an object about 790 (each
     * starts with a 16-entry hash table), whatever their text. A catalog of
     * tiny values ([0,0,...], or [{"k":0},...] at 36x) would cost many
     * times its size. Estimate the tree from the structural characters and
     * refuse one that would need more than NF_JSON_MEM_FACTOR x its size
     * (a real catalog needs about 10x), or more than NF_JSON_MAX_TREE
     * whatever its size (DESIGN 3: never gigabytes). Before the strict scan,
     * which itself takes a few times the text. */
    uint64_t tokens = 0, est = 0;
    size_t deep_at = SIZE_MAX; /* the first bracket nested past max_depth */
    unsigned depth = 0;
    /* a small scanned member (a source) cannot cost much: no estimate */
    for (size_t i = 0; !(scanned && len < (64u << 10)) && i < len; i++) {
        char ch = text[i];
        if (ch == '"') {
            for (i++; i < len && text[i] != '"'; i++)
                if (text[i] == '\\')
                    i++;
        } else if (ch == ',' || ch == ':') {
            tokens++;
            est += 100;
        } else if (ch == '[' || ch == '{') {
            tokens++;
            est += ch == '[' ? 160 : 800;
            if (++depth > max_depth && deep_at == SIZE_MAX)
                deep_at = i;
        } else if ((ch == ']' || ch == '}') && depth) {
            depth--;
        }
    }
    if (est > (uint64_t)len * NF_JSON_MEM_FACTOR + (64u << 20) || est > NF_JSON_MAX_TREE) {
        /* when it is also too deep, say so: the scan stops at that bracket */
        if (deep_at != SIZE_MAX && !nf_jscan(text, deep_at + 1, max_depth, d, NULL)) {
            nf_jdoc_free(doc);
            return NULL;
        }
        nf_diag_add(d, NF_C_JSON, "",
                    "%llu JSON values in %zu bytes would take about %llu MiB to parse, more than "
                    "%d times the text or %llu MiB; refused",
                    (unsigned long long)tokens, len, (unsigned long long)(est >> 20),
                    NF_JSON_MEM_FACTOR, (unsigned long long)(NF_JSON_MAX_TREE >> 20));
        nf_jdoc_free(doc);
        return NULL;
    }
    if (scanned) {
        /* a span of a text the scanner accepted, without big integers: no
         * second scan, no copy */
        doc->scan.error_offset = SIZE_MAX;
        doc->text = (char *)text;
        doc->borrowed = true;
        doc->len = len;
    } else {
        if (!nf_jscan(text, len, max_depth, d, &doc->scan)) {
            nf_jdoc_free(doc);
            return NULL;
        }
        doc->text = malloc(len + 1);
        if (!doc->text) {
            nf_diag_add(d, NF_C_IO, "", "out of memory for %zu bytes of JSON", len);
            nf_jdoc_free(doc);
            return NULL;
        }
        memcpy(doc->text, text, len);
        doc->text[len] = 0;
        doc->len = len;
    }

    json_tokener *tok = json_tokener_new_ex((int)max_depth + 2);
    if (!tok) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        nf_jdoc_free(doc);
        return NULL;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *root = NULL;
    enum json_tokener_error err = json_tokener_continue;
    size_t off = 0;
    do {
        size_t chunk = len - off > (1u << 30) ? (1u << 30) : len - off;
        root = json_tokener_parse_ex(tok, doc->text + off, (int)chunk);
        err = json_tokener_get_error(tok);
        off += chunk;
    } while (err == json_tokener_continue && off < len);
    if (err == json_tokener_continue) {
        /* a bare number at the very end needs a terminator */
        root = json_tokener_parse_ex(tok, "", 1);
        err = json_tokener_get_error(tok);
    }
    if (err != json_tokener_success) {
        nf_diag_add(d, NF_C_JSON, "", "json-c: %s", json_tokener_error_desc(err));
        json_tokener_free(tok);
        nf_jdoc_free(doc);
        return NULL;
    }
    json_tokener_free(tok);
    doc->root = root;
    return doc;
}

void nf_jdoc_free(nf_jdoc *doc)
{
    if (!doc)
        return;
    json_object_put(doc->root);
    nf_jscan_result_free(&doc->scan);
    if (!doc->borrowed)
        free(doc->text);
    free(doc);
}

nf_jval *nf_jdoc_root(const nf_jdoc *doc)
{
    return doc->root;
}

const char *nf_jdoc_text(const nf_jdoc *doc, size_t *len)
{
    if (len)
        *len = doc->len;
    return doc->text;
}

const nf_jscan_result *nf_jdoc_scan(const nf_jdoc *doc)
{
    return &doc->scan;
}

nf_jtype nf_jtype_of(const nf_jval *v)
{
    switch (json_object_get_type(v)) {
    case json_type_null: return NF_J_NULL;
    case json_type_boolean: return NF_J_BOOL;
    case json_type_int: return NF_J_INT;
    case json_type_double: return NF_J_DOUBLE;
    case json_type_string: return NF_J_STRING;
    case json_type_array: return NF_J_ARRAY;
    case json_type_object: return NF_J_OBJECT;
    }
    return NF_J_NULL;
}

const char *nf_jtype_name(nf_jtype t)
{
    static const char *const n[] = {"null", "boolean", "integer", "number",
                                    "string", "array", "object"};
    return (unsigned)t < sizeof n / sizeof *n ? n[t] : "value";
}

size_t nf_jarr_len(const nf_jval *v)
{
    return json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
}

nf_jval *nf_jarr_get(const nf_jval *v, size_t i)
{
    return json_object_array_get_idx(v, i);
}

nf_jval *nf_jobj_get(const nf_jval *v, const char *name)
{
    json_object *m = NULL;
    if (!json_object_is_type(v, json_type_object))
        return NULL;
    json_object_object_get_ex(v, name, &m);
    return m;
}

bool nf_jobj_has(const nf_jval *v, const char *name)
{
    return json_object_is_type(v, json_type_object) &&
           json_object_object_get_ex(v, name, NULL);
}

size_t nf_jobj_len(const nf_jval *v)
{
    return json_object_is_type(v, json_type_object) ? (size_t)json_object_object_length(v) : 0;
}

void nf_jobj_foreach(const nf_jval *v, nf_jobj_fn fn, void *ctx)
{
    if (!json_object_is_type(v, json_type_object))
        return;
    json_object_object_foreach((json_object *)v, key, val) {
        if (!fn(ctx, key, val))
            return;
    }
}

nf_jiter nf_jobj_iter(const nf_jval *obj)
{
    nf_jiter it = {NULL, NULL};
    if (!json_object_is_type(obj, json_type_object))
        return it;
    struct json_object_iterator b = json_object_iter_begin((json_object *)obj);
    struct json_object_iterator e = json_object_iter_end(obj);
    it.pos = b.opaque_;
    it.end = e.opaque_;
    return it;
}

bool nf_jobj_next(nf_jiter *it, const char **name, nf_jval **val)
{
    struct json_object_iterator p = {it->pos}, e = {it->end};
    if (!it->pos || json_object_iter_equal(&p, &e))
        return false;
    *name = json_object_iter_peek_name(&p);
    *val = json_object_iter_peek_value(&p);
    json_object_iter_next(&p);
    it->pos = p.opaque_;
    return true;
}

const char *nf_jstr(const nf_jval *v, size_t *len)
{
    if (!json_object_is_type(v, json_type_string))
        return NULL;
    size_t n = (size_t)json_object_get_string_len(v);
    const char *s = json_object_get_string((json_object *)v);
    if (len) {
        *len = n;
        return s;
    }
    /* a caller without the length would read it cut at its first U+0000:
     * "q8_g32_fp16\u0000junk" must not pass for q8_g32_fp16 */
    return memchr(s, 0, n) ? NULL : s;
}

bool nf_jbool(const nf_jval *v)
{
    return json_object_get_boolean(v);
}

double nf_jdouble(const nf_jval *v)
{
    return json_object_get_double(v);
}

nf_ju64_status nf_jval_u64(const nf_jdoc *doc, const nf_jval *v,
                           const char *pointer, uint64_t *out)
{
    if (!json_object_is_type(v, json_type_int))
        return NF_JU64_NOT_INTEGER;
    if (doc && pointer && nf_jscan_is_bigint(&doc->scan, pointer))
        return NF_JU64_TOO_BIG;
    if (json_object_get_int64(v) < 0)
        return NF_JU64_NEGATIVE;
    *out = json_object_get_uint64(v);
    return NF_JU64_OK;
}

bool nf_jdoc_span(const nf_jdoc *doc, const char *const *path, nf_span *out)
{
    nf_span s = nf_jspan_root(doc->text, doc->len);
    for (; *path; path++)
        if (!nf_jspan_member(doc->text, s, *path, strlen(*path), &s))
            return false;
    *out = s;
    return true;
}

/* --- builder --- */

nf_jval *nf_jnew_object(void) { return json_object_new_object(); }
nf_jval *nf_jnew_array(void) { return json_object_new_array(); }
nf_jval *nf_jnew_string(const char *s) { return json_object_new_string(s); }
nf_jval *nf_jnew_string_len(const char *s, size_t len)
{
    if (len > INT_MAX)
        return NULL;
    return json_object_new_string_len(s, (int)len);
}
nf_jval *nf_jnew_u64(uint64_t v) { return json_object_new_uint64(v); }
nf_jval *nf_jnew_i64(int64_t v) { return json_object_new_int64(v); }
nf_jval *nf_jnew_double(double v) { return json_object_new_double(v); }
nf_jval *nf_jnew_bool(bool v) { return json_object_new_boolean(v); }
nf_jval *nf_jnew_null(void) { return NULL; }

nf_jval *nf_jnew_raw(const char *text, size_t len)
{
    json_object *o = json_object_new_string("");
    char *copy = strndup(text, len);
    if (!o || !copy) {
        json_object_put(o);
        free(copy);
        return NULL;
    }
    json_object_set_serializer(o, json_object_userdata_to_json_string, copy,
                               json_object_free_userdata);
    return o;
}

bool nf_jobj_set(nf_jval *obj, const char *name, nf_jval *val)
{
    if (json_object_object_add(obj, name, val) != 0) {
        json_object_put(val);
        return false;
    }
    return true;
}

bool nf_jobj_set_len(nf_jval *obj, const char *name, size_t name_len,
                     nf_jval *val)
{
    char *k = strndup(name, name_len);
    if (!k) {
        json_object_put(val);
        return false;
    }
    bool ok = nf_jobj_set(obj, k, val);
    free(k);
    return ok;
}

bool nf_jarr_push(nf_jval *arr, nf_jval *val)
{
    if (json_object_array_add(arr, val) != 0) {
        json_object_put(val);
        return false;
    }
    return true;
}

/* ---- frozen values ----
 * A finished subtree kept as its compact text (a few hundred bytes where
 * json-c's tree of it takes kilobytes) and printed as json-c would print
 * the tree: compact as it is, pretty re-indented at the level it lands on. */

/* The first byte of a frozen value's userdata (JSON text, which raw values
 * hold, never starts with it); its text follows. */
#define FROZEN_MARK '\001'

static bool has_raw(json_object *v, unsigned depth)
{
    if (depth > NF_JSON_MAX_DEPTH + 8)
        return true;
    switch (json_object_get_type(v)) {
    case json_type_string: {
        const char *ud = json_object_get_userdata(v);
        return ud && ud[0] != FROZEN_MARK; /* a frozen child freezes with its parent */
    }
    case json_type_array:
        for (size_t i = 0; i < json_object_array_length(v); i++)
            if (has_raw(json_object_array_get_idx(v, i), depth + 1))
                return true;
        return false;
    case json_type_object: {
        json_object_object_foreach(v, key, val) {
            (void)key;
            if (has_raw(val, depth + 1))
                return true;
        }
        return false;
    }
    default:
        return false;
    }
}

static void pb_indent(struct printbuf *pb, int level)
{
    for (int i = 0; i < level; i++)
        printbuf_memappend(pb, "  ", 2);
}

static int frozen_to_json(json_object *jso, struct printbuf *pb, int level, int flags)
{
    const char *t = (const char *)json_object_get_userdata(jso) + 1; /* FROZEN_MARK */
    size_t n = strlen(t);
    if (!(flags & JSON_C_TO_STRING_PRETTY)) {
        printbuf_memappend(pb, t, (int)n);
        return 0;
    }
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = t[i];
        if (ch == '"') {
            for (i++; t[i] != '"'; i++)
                if (t[i] == '\\')
                    i++;
            continue;
        }
        if (ch != '{' && ch != '[' && ch != '}' && ch != ']' && ch != ',' && ch != ':')
            continue;
        printbuf_memappend(pb, t + run, (int)(i - run));
        run = i + 1;
        if (ch == '{' || ch == '[') {
            char close = ch == '{' ? '}' : ']';
            printbuf_memappend(pb, &ch, 1);
            printbuf_memappend(pb, "\n", 1);
            if (t[i + 1] == close) {
                /* empty: "{\n" and the close at this level */
                pb_indent(pb, level);
                printbuf_memappend(pb, &close, 1);
                run = ++i + 1;
                continue;
            }
            pb_indent(pb, ++level);
        } else if (ch == '}' || ch == ']') {
            printbuf_memappend(pb, "\n", 1);
            pb_indent(pb, --level);
            printbuf_memappend(pb, &ch, 1);
        } else if (ch == ',') {
            printbuf_memappend(pb, ",\n", 2);
            pb_indent(pb, level);
        } else {
            printbuf_memappend(pb, ": ", 2);
        }
    }
    printbuf_memappend(pb, t + run, (int)(n - run));
    return 0;
}

/* A frozen value of the compact text t[0..n) (copied), or NULL. */
static json_object *frozen_of(const char *t, size_t n)
{
    char *u = malloc(n + 2);
    json_object *o = u ? json_object_new_string("") : NULL;
    if (!o) {
        free(u);
        return NULL;
    }
    u[0] = FROZEN_MARK;
    memcpy(u + 1, t, n);
    u[n + 1] = 0;
    json_object_set_serializer(o, frozen_to_json, u, json_object_free_userdata);
    return o;
}

nf_jval *nf_jval_freeze(nf_jval *v)
{
    if (!v || has_raw(v, 0))
        return v;
    json_type ty = json_object_get_type(v);
    if (ty != json_type_object && ty != json_type_array)
        return v;
    size_t n = 0;
    char *t = nf_jval_to_text(v, false, &n);
    json_object *o = t ? frozen_of(t, n) : NULL;
    free(t);
    if (!o)
        return v;
    json_object_put(v);
    return o;
}

nf_jval *nf_jnew_frozen(const char *text, size_t len)
{
    return frozen_of(text, len);
}

nf_jval *nf_jval_ref(nf_jval *v) { return json_object_get(v); }
void nf_jval_free(nf_jval *v) { json_object_put(v); }

/* json-c copies the bytes of a string as they are: a file name that is not
 * UTF-8 (a report's "file", a message quoting a path) would make the text
 * invalid JSON. Such bytes can only sit inside string literals, where they
 * become the text "\\xHH" (a backslash, x, two hex digits), as the text
 * diagnostics write them (nf_fput_text). Returns a malloc'ed copy of s. */
static char *valid_utf8_copy(const char *s, size_t n, size_t *out_n)
{
    size_t bad = 0;
    for (size_t i = nf_utf8_invalid_at(s, n); i < n; i += 1 + nf_utf8_invalid_at(s + i + 1, n - i - 1))
        bad++;
    if (bad > (SIZE_MAX - n - 1) / 4)
        return NULL;
    char *t = malloc(n + 4 * bad + 1), *o = t;
    if (!t)
        return NULL;
    size_t i = 0;
    while (i < n) {
        size_t k = nf_utf8_invalid_at(s + i, n - i);
        memcpy(o, s + i, k);
        o += k;
        i += k;
        if (i < n) {
            static const char hx[] = "0123456789abcdef";
            unsigned char c = (unsigned char)s[i++];
            *o++ = '\\', *o++ = '\\', *o++ = 'x', *o++ = hx[c >> 4], *o++ = hx[c & 15];
        }
    }
    *o = 0;
    *out_n = (size_t)(o - t);
    return t;
}

char *nf_jval_to_text(nf_jval *v, bool pretty, size_t *len)
{
    int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
                (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                        : JSON_C_TO_STRING_PLAIN);
    size_t n = 0;
    const char *s = json_object_to_json_string_length(v, flags, &n);
    if (!s)
        return NULL;
    char *copy = valid_utf8_copy(s, n, &n);
    if (!copy)
        return NULL;
    if (len)
        *len = n;
    return copy;
}

/* Bytes json-c escapes: '"', '\\' and every control character. */
static const uint8_t esc_tab[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    ['"'] = 1, ['\\'] = 1,
};

/* The escape of byte ch (esc_tab) into e: its length, 2 or 6. */
static size_t escape_of(unsigned char ch, char e[6])
{
    static const char hex[] = "0123456789abcdef";
    static const char two[256] = {['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                                  ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
    e[0] = '\\';
    if (two[ch]) {
        e[1] = two[ch];
        return 2;
    }
    memcpy(e + 1, "u00", 3);
    e[4] = hex[ch >> 4];
    e[5] = hex[ch & 15];
    return 6;
}

size_t nf_json_escape(const char *s, size_t n, char *dst, size_t cap)
{
    const unsigned char *u = (const unsigned char *)s;
    char e[6];
    size_t len = 2;
    for (size_t i = 0; i < n; i++)
        len += esc_tab[u[i]] ? escape_of(u[i], e) : 1;
    if (!dst || len > cap)
        return len;
    char *o = dst;
    *o++ = '"';
    for (size_t i = 0, run = 0;; run = ++i) {
        while (i < n && !esc_tab[u[i]])
            i++;
        memcpy(o, s + run, i - run);
        o += i - run;
        if (i == n)
            break;
        size_t el = escape_of(u[i], e);
        memcpy(o, e, el);
        o += el;
    }
    *o = '"';
    return len;
}

char *nf_json_quote(const char *s, size_t len)
{
    json_object *o = nf_jnew_string_len(s, len);
    if (!o)
        return NULL;
    char *t = nf_jval_to_text(o, false, NULL);
    json_object_put(o);
    return t;
}
