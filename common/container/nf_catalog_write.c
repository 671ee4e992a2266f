/* nf_catalog_write.c — catalog serialization (nf_catalog_serialize) and
 * provenance editing. */
#include "nf_catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_catalog_int.h"
#include "nf_json.h"
#include "nf_source.h"
#include "nf_util.h"

/* ---- serialization ----------------------------------------------------------
 * A writer straight to text, in the form json-c writes (the catalogs and
 * manifests written before this writer existed, and what tests and users
 * compare against, stay byte for byte the same): compact, or pretty with
 * two-space indents, "name": value, empty containers as "{\n<indent>}";
 * strings escaped as json_escape_str does with NOSLASHESCAPE (\" \\ \b \f
 * \n \r \t, other controls as \u00xx, everything else as it is); open
 * members (config, metadata values, provenance, sources) copied verbatim.
 * Two passes: the first counts, the second writes into a buffer of exactly
 * that size, so the memory is the output text and nothing else. */

typedef struct {
    char *p;      /* NULL: counting */
    size_t n, cap;
    bool pretty;
    bool bad;     /* the second pass ran past the first's count (a bug) */
} wr;

static inline void w_put(wr *w, const char *s, size_t n)
{
    if (w->p) {
        if (n > w->cap - w->n) {
            w->bad = true;
            return;
        }
        memcpy(w->p + w->n, s, n);
    }
    w->n += n;
}

static inline void w_c(wr *w, char ch)
{
    w_put(w, &ch, 1);
}

static void w_u64(wr *w, uint64_t v)
{
    char b[24];
    size_t k = sizeof b;
    do {
        b[--k] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_put(w, b + k, sizeof b - k);
}

static void w_indent(wr *w, unsigned level)
{
    static const char sp[] = "                                                                ";
    size_t n = (size_t)level * 2;
    while (n) {
        size_t k = n < sizeof sp - 1 ? n : sizeof sp - 1;
        w_put(w, sp, k);
        n -= k;
    }
}

/* Text of a length its writer knows (nf_json_escape, nf_source_write):
 * w_at gives where it goes (NULL when counting) and the room there; w_took
 * accounts for the k bytes it took (written only when they fitted). */
static char *w_at(const wr *w, size_t *room)
{
    *room = w->p && w->n <= w->cap ? w->cap - w->n : 0;
    return w->p && w->n <= w->cap ? w->p + w->n : NULL;
}

static void w_took(wr *w, size_t k, size_t room)
{
    if (w->p && k > room)
        w->bad = true;
    w->n += k;
}

/* A JSON string literal of s[0..n) (json-c's escapes, nf_json_escape). */
static void w_str(wr *w, const char *s, size_t n)
{
    size_t room;
    char *at = w_at(w, &room);
    w_took(w, nf_json_escape(s, n, at, room), room);
}

static void w_cstr(wr *w, const char *s)
{
    w_str(w, s ? s : "", s ? strlen(s) : 0);
}

/* Containers: open, a member's name (or an element), close. `count` is
 * the children written so far. */
static void w_open(wr *w, char br)
{
    w_c(w, br);
    if (w->pretty)
        w_c(w, '\n');
}

static void w_next(wr *w, unsigned level, size_t *count)
{
    if ((*count)++) {
        w_c(w, ',');
        if (w->pretty)
            w_c(w, '\n');
    }
    if (w->pretty)
        w_indent(w, level + 1);
}

static void w_key(wr *w, unsigned level, size_t *count, const char *k, size_t n)
{
    w_next(w, level, count);
    w_str(w, k, n);
    if (w->pretty)
        w_put(w, ": ", 2);
    else
        w_c(w, ':');
}

static void w_ckey(wr *w, unsigned level, size_t *count, const char *k)
{
    w_key(w, level, count, k, strlen(k));
}

static void w_close(wr *w, unsigned level, size_t count, char br)
{
    if (w->pretty) {
        if (count)
            w_c(w, '\n');
        w_indent(w, level);
    }
    w_c(w, br);
}

/* {"object": ID} or {"parts": [{"object": ID, "range": [B, E]}, ...]} */
static void w_binding(wr *w, unsigned level, const nf_binding *b)
{
    size_t k = 0;
    w_open(w, '{');
    if (!b->parts) {
        w_ckey(w, level, &k, "object");
        w_cstr(w, b->object);
        w_close(w, level, k, '}');
        return;
    }
    w_ckey(w, level, &k, "parts");
    size_t np = 0;
    w_open(w, '[');
    for (size_t i = 0; i < b->n_parts; i++) {
        w_next(w, level + 1, &np);
        size_t pk = 0;
        w_open(w, '{');
        w_ckey(w, level + 2, &pk, "object");
        w_cstr(w, b->parts[i].object);
        w_ckey(w, level + 2, &pk, "range");
        size_t rk = 0;
        w_open(w, '[');
        w_next(w, level + 3, &rk);
        w_u64(w, b->parts[i].begin);
        w_next(w, level + 3, &rk);
        w_u64(w, b->parts[i].end);
        w_close(w, level + 3, rk, ']');
        w_close(w, level + 2, pk, '}');
    }
    w_close(w, level + 1, np, ']');
    w_close(w, level, k, '}');
}

struct meta_w {
    wr *w;
    size_t *count;
    char *buf;
    size_t cap;
    bool oom;
};

/* metadata members other than integrity, their values as written; names
 * unescaped (they hold no U+0000: the scanner refuses those) and escaped
 * again */
static bool meta_member(void *vctx, const char *text, nf_span raw_name, nf_span value)
{
    struct meta_w *m = vctx;
    if (raw_name.len + 1 > m->cap) {
        char *nb = realloc(m->buf, raw_name.len + 1);
        if (!nb) {
            m->oom = true;
            return false;
        }
        m->buf = nb;
        m->cap = raw_name.len + 1;
    }
    size_t n = nf_junescape(text + raw_name.start, raw_name.len, m->buf);
    m->buf[n] = 0;
    if (n == 9 && memcmp(m->buf, "integrity", 9) == 0)
        return true;
    w_key(m->w, 1, m->count, m->buf, n);
    w_put(m->w, text + value.start, value.len);
    return true;
}

/* One /objects element (spec 5): the manifest form has a source instead
 * of offset and bytes. */
static void w_object(wr *w, const nf_object *ob, const nf_serialize_opts *op, size_t *ok)
{
    size_t mk = 0;
    w_next(w, 1, ok);
    w_open(w, '{');
    /* a catalog with problems may lack any of these: write "" */
    w_ckey(w, 2, &mk, "id");
    w_cstr(w, ob->id);
    if (ob->kind == NF_OBJ_TENSOR) {
        w_ckey(w, 2, &mk, "kind");
        w_put(w, "\"tensor\"", 8);
        w_ckey(w, 2, &mk, "shape");
        size_t sk = 0;
        w_open(w, '[');
        for (unsigned r = 0; r < ob->rank; r++) {
            w_next(w, 3, &sk);
            w_u64(w, ob->dims[r]);
        }
        w_close(w, 3, sk, ']');
        w_ckey(w, 2, &mk, "format");
        w_cstr(w, ob->format_name);
        w_ckey(w, 2, &mk, "layout");
        w_cstr(w, ob->layout_name);
    } else {
        w_ckey(w, 2, &mk, "kind");
        w_put(w, "\"resource\"", 10);
        w_ckey(w, 2, &mk, "encoding");
        w_cstr(w, ob->encoding_name ? ob->encoding_name : "raw_bytes_v1");
    }
    if (!op->manifest) {
        w_ckey(w, 2, &mk, "offset");
        w_u64(w, ob->offset);
        w_ckey(w, 2, &mk, "bytes");
        w_u64(w, ob->bytes);
    } else if (ob->kind == NF_OBJ_RESOURCE && ob->bytes_given && !op->artifact_path) {
        w_ckey(w, 2, &mk, "bytes");
        w_u64(w, ob->bytes);
    }
    if (ob->kind == NF_OBJ_TENSOR && ob->has_divisors) {
        w_ckey(w, 2, &mk, "divisors");
        w_u64(w, ob->divisors);
    }
    if (op->manifest && !op->artifact_path && ob->source_raw) {
        w_ckey(w, 2, &mk, "source");
        w_put(w, ob->source_raw, strlen(ob->source_raw));
    } else if (op->manifest && op->artifact_path) {
        w_ckey(w, 2, &mk, "source");
        /* DESIGN 5: the source of an artifact's object (nf_source) */
        nf_source as = {.kind = NF_SRC_ARTIFACT, .path = (char *)op->artifact_path,
                        .name = ob->id};
        size_t room;
        char *at = w_at(w, &room);
        w_took(w, nf_source_write(&as, w->pretty, 3, at, room), room);
    }
    w_close(w, 2, mk, '}');
}

/* /components (spec 4.2): config, target, resources and proposal as read. */
static void w_components(wr *w, const nf_catalog *c)
{
    size_t ck = 0;
    w_open(w, '{');
    for (size_t i = 0; i < c->n_components; i++) {
        const nf_component *k = &c->components[i];
        w_ckey(w, 1, &ck, k->id ? k->id : "");
        size_t mk = 0;
        w_open(w, '{');
        w_ckey(w, 2, &mk, "config");
        if (k->config_text)
            w_put(w, k->config_text, k->config_len);
        else
            w_put(w, "{}", 2);
        if (k->target) {
            w_ckey(w, 2, &mk, "target");
            w_cstr(w, k->target);
        }
        if (k->n_resources) {
            w_ckey(w, 2, &mk, "resources");
            size_t r = 0;
            w_open(w, '{');
            for (size_t j = 0; j < k->n_resources; j++) {
                w_ckey(w, 3, &r, k->resources[j].role ? k->resources[j].role : "");
                w_cstr(w, k->resources[j].object);
            }
            w_close(w, 3, r, '}');
        }
        if (k->has_proposal) {
            w_ckey(w, 2, &mk, "proposal");
            size_t r = 0;
            w_open(w, '{');
            w_ckey(w, 3, &r, "domain");
            w_cstr(w, k->proposal_indexed ? "indexed" : "full");
            if (k->has_rows) {
                w_ckey(w, 3, &r, "rows");
                w_u64(w, k->proposal_rows);
            }
            w_close(w, 3, r, '}');
        }
        w_close(w, 2, mk, '}');
    }
    w_close(w, 1, ck, '}');
}

/* /objects in catalog order. */
static void w_objects(wr *w, const nf_catalog *c, const nf_serialize_opts *op)
{
    size_t ok = 0;
    w_open(w, '[');
    for (size_t i = 0; i < c->n_objects; i++) {
        w_object(w, &c->objects[i], op, &ok);
    }
    w_close(w, 1, ok, ']');
}

/* /bindings (spec 7.1). */
static void w_bindings(wr *w, const nf_catalog *c)
{
    size_t bk = 0;
    w_open(w, '{');
    for (size_t i = 0; i < c->n_bindings; i++) {
        w_ckey(w, 1, &bk, c->bindings[i].name ? c->bindings[i].name : "");
        w_binding(w, 2, &c->bindings[i].b);
    }
    w_close(w, 1, bk, '}');
}

/* /uses (spec 8), auxiliaries with their bindings. */
static void w_uses(wr *w, const nf_catalog *c)
{
    size_t uk = 0;
    w_open(w, '[');
    for (size_t i = 0; i < c->n_uses; i++) {
        const nf_use *u = &c->uses[i];
        size_t mk = 0;
        w_next(w, 1, &uk);
        w_open(w, '{');
        w_ckey(w, 2, &mk, "parameter");
        w_cstr(w, u->parameter);
        w_ckey(w, 2, &mk, "input");
        w_cstr(w, u->input);
        if (u->activation_policy) {
            w_ckey(w, 2, &mk, "activation_policy");
            w_cstr(w, u->activation_policy);
        }
        if (u->n_aux) {
            w_ckey(w, 2, &mk, "auxiliaries");
            size_t ak = 0;
            w_open(w, '{');
            for (size_t j = 0; j < u->n_aux; j++) {
                w_ckey(w, 3, &ak, u->aux[j].role ? u->aux[j].role : "");
                w_binding(w, 4, &u->aux[j].b);
            }
            w_close(w, 3, ak, '}');
        }
        w_close(w, 2, mk, '}');
    }
    w_close(w, 1, uk, ']');
}

/* /files (spec 3.3), from the options: a writer lays them out. */
static void w_files(wr *w, const nf_serialize_opts *op, size_t *rk)
{
    if (!op->manifest && op->files) {
        w_ckey(w, 0, rk, "files");
        size_t fk = 0;
        w_open(w, '[');
        for (size_t i = 0; i < op->n_files; i++) {
            size_t mk = 0;
            w_next(w, 1, &fk);
            w_open(w, '{');
            w_ckey(w, 2, &mk, "path");
            if (op->files[i].path)
                w_cstr(w, op->files[i].path);
            else
                w_put(w, "null", 4);
            w_ckey(w, 2, &mk, "payload_bytes");
            w_u64(w, op->files[i].payload_bytes);
            w_close(w, 2, mk, '}');
        }
        w_close(w, 1, fk, ']');
    }
}

/* /metadata (spec 10): its members as read, then integrity from the
 * objects' digests. False when out of memory. */
static bool w_metadata(wr *w, const nf_catalog *c, const nf_serialize_opts *op, size_t *rk)
{
    bool any_digest = false;
    if (op->digests && !op->manifest)
        for (size_t i = 0; i < c->n_objects && !any_digest; i++)
            any_digest = c->objects[i].has_digest;
    if (c->has_metadata || any_digest) {
        w_ckey(w, 0, rk, "metadata");
        size_t mk = 0;
        w_open(w, '{');
        if (c->metadata_text) {
            struct meta_w m = {w, &mk, NULL, 0, false};
            nf_jspan_members(c->metadata_text, nf_jspan_root(c->metadata_text, c->metadata_len),
                             meta_member, &m);
            free(m.buf);
            if (m.oom)
                return false;
        }
        if (any_digest) {
            w_ckey(w, 1, &mk, "integrity");
            size_t ik = 0, sk = 0;
            w_open(w, '{');
            w_ckey(w, 2, &ik, "sha256");
            w_open(w, '{');
            for (size_t i = 0; i < c->n_objects; i++) {
                if (!c->objects[i].has_digest)
                    continue;
                char hex[65];
                nf_object_digest_hex(&c->objects[i], hex);
                w_ckey(w, 3, &sk, c->objects[i].id ? c->objects[i].id : "");
                w_str(w, hex, 64);
            }
            w_close(w, 3, sk, '}');
            w_close(w, 2, ik, '}');
        }
        w_close(w, 1, mk, '}');
    }
    return true;
}

static bool serialize_to(wr *w, const nf_catalog *c, const nf_serialize_opts *op)
{
    size_t rk = 0;
    w_open(w, '{');
    w_ckey(w, 0, &rk, "components");
    w_components(w, c);
    w_ckey(w, 0, &rk, "objects");
    w_objects(w, c, op);
    w_ckey(w, 0, &rk, "bindings");
    w_bindings(w, c);
    w_ckey(w, 0, &rk, "uses");
    w_uses(w, c);
    w_files(w, op, &rk);
    if (!w_metadata(w, c, op, &rk))
        return false;
    if (c->provenance_text) {
        w_ckey(w, 0, &rk, "provenance");
        w_put(w, c->provenance_text, c->provenance_len);
    }
    w_close(w, 0, rk, '}');
    return !w->bad;
}

/* json-c's compact text of the value text[0..len) (accepted by nf_jscan),
 * without building json-c's tree: whitespace outside strings dropped,
 * strings with escapes unescaped and escaped again as json-c does, "-0" as
 * 0, integers below -2^63 as -2^63 (json-c saturates them). Values whose
 * text json-c would change otherwise are left to json-c: false then (an
 * integer above 2^64-1, a member name with U+0000). */
static bool compact_to(wr *w, const char *text, size_t len)
{
    const char *p = text, *end = text + len;
    char *buf = NULL;
    size_t cap = 0;
    bool ok = true;
    bool key = false; /* the next string is a member name */
    /* a stack of "in an object" flags, 64 deep as the scanner allows */
    unsigned char obj[NF_JSON_MAX_DEPTH + 2];
    size_t depth = 0;
    while (p < end && ok) {
        char ch = *p;
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
            p++;
            continue;
        }
        if (ch == '{' || ch == '[') {
            if (depth >= sizeof obj) {
                ok = false;
                break;
            }
            obj[depth++] = ch == '{';
            key = ch == '{';
            w_c(w, ch);
            p++;
            continue;
        }
        if (ch == '}' || ch == ']') {
            depth--;
            key = false;
            w_c(w, ch);
            p++;
            continue;
        }
        if (ch == ',') {
            key = depth && obj[depth - 1];
            w_c(w, ',');
            p++;
            continue;
        }
        if (ch == ':') {
            key = false;
            w_c(w, ':');
            p++;
            continue;
        }
        if (ch == '"') {
            const char *q = p + 1;
            bool esc = false;
            while (*q != '"') {
                if (*q == '\\') {
                    esc = true;
                    q++;
                }
                q++;
            }
            size_t rl = (size_t)(q - p - 1);
            if (!esc) {
                w_put(w, p, rl + 2);
            } else {
                if (rl + 1 > cap) {
                    char *nb = realloc(buf, rl + 1);
                    if (!nb) {
                        ok = false;
                        break;
                    }
                    buf = nb;
                    cap = rl + 1;
                }
                size_t n = nf_junescape(p + 1, rl, buf);
                if (key && memchr(buf, 0, n)) {
                    ok = false; /* json-c cuts the name there, and may merge two */
                    break;
                }
                w_str(w, buf, n);
            }
            p = q + 1;
            continue;
        }
        /* a number or a literal */
        const char *q = p;
        while (q < end && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\t' &&
               *q != '\n' && *q != '\r')
            q++;
        size_t n = (size_t)(q - p);
        bool integer = (ch == '-' || (ch >= '0' && ch <= '9')) && !memchr(p, '.', n) &&
                       !memchr(p, 'e', n) && !memchr(p, 'E', n);
        if (integer && n == 2 && p[0] == '-' && p[1] == '0') {
            w_c(w, '0');
        } else if (integer && ch == '-' &&
                   (n > 20 || (n == 20 && memcmp(p + 1, "9223372036854775808", 19) > 0))) {
            w_put(w, "-9223372036854775808", 20);
        } else if (integer && ch != '-' &&
                   (n > 20 || (n == 20 && memcmp(p, "18446744073709551615", 20) > 0))) {
            ok = false;
        } else {
            w_put(w, p, n);
        }
        p = q;
    }
    free(buf);
    return ok && !w->bad;
}

char *nf_json_c_compact(const char *text, size_t len, size_t *out_len)
{
    /* json-c's text of a value is never longer than the value as written
     * (whitespace goes, escapes shrink or stay): one pass into len bytes */
    char *t = malloc(len + 1);
    if (!t)
        return NULL;
    wr w = {t, 0, len, false, false};
    if (!compact_to(&w, text, len)) {
        free(t);
        return NULL;
    }
    t[w.n] = 0;
    if (out_len)
        *out_len = w.n;
    return t;
}

size_t nf_catalog_serialized_len(const nf_catalog *c, const nf_serialize_opts *op)
{
    wr w = {NULL, 0, 0, op->pretty, false};
    return serialize_to(&w, c, op) ? w.n : SIZE_MAX;
}

char *nf_catalog_serialize(const nf_catalog *c, const nf_serialize_opts *op, size_t *len)
{
    size_t n = nf_catalog_serialized_len(c, op);
    if (n == SIZE_MAX || n == SIZE_MAX - 1)
        return NULL;
    char *t = malloc(n + 1);
    if (!t)
        return NULL;
    wr w = {t, 0, n, op->pretty, false};
    if (!serialize_to(&w, c, op) || w.n != n) {
        free(t);
        return NULL;
    }
    t[n] = 0;
    if (len)
        *len = n;
    return t;
}

size_t nf_catalog_serialize_to(const nf_catalog *c, const nf_serialize_opts *op, char *buf,
                               size_t cap)
{
    size_t n = nf_catalog_serialized_len(c, op);
    if (n == SIZE_MAX || n > cap)
        return SIZE_MAX;
    wr w = {buf, 0, n, op->pretty, false};
    if (!serialize_to(&w, c, op) || w.n != n)
        return SIZE_MAX;
    return n;
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
