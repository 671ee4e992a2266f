/* nf_diag.c — diagnostic records and the exit-status ranking (DESIGN 3). */
#include "nf_diag.h"
#include "nf_util.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *const code_names[NF_C_COUNT_] = {
    [NF_C_HEADER] = "header",
    [NF_C_MAGIC] = "magic",
    [NF_C_UTF8] = "utf8",
    [NF_C_JSON] = "json",
    [NF_C_DUPLICATE_MEMBER] = "duplicate-member",
    [NF_C_DEPTH] = "depth",
    [NF_C_SCHEMA] = "schema",
    [NF_C_RANGE] = "range",
    [NF_C_FILES] = "files",
    [NF_C_LENGTH] = "length",
    [NF_C_INCOMPLETE] = "incomplete",
    [NF_C_FILL] = "fill",
    [NF_C_PART_MISSING] = "part-missing",
    [NF_C_PART_HEADER] = "part-header",
    [NF_C_ARTIFACT_ID] = "artifact-id",
    [NF_C_DUPLICATE_ID] = "duplicate-id",
    [NF_C_ORDER] = "order",
    [NF_C_OVERLAP] = "overlap",
    [NF_C_BOUNDS] = "bounds",
    [NF_C_ALIGNMENT] = "alignment",
    [NF_C_SIZE] = "size",
    [NF_C_ENCODING] = "encoding",
    [NF_C_REFERENCE] = "reference",
    [NF_C_PART_RANGE] = "part-range",
    [NF_C_DUPLICATE_USE] = "duplicate-use",
    [NF_C_INTEGRITY] = "integrity",
    [NF_C_DIGEST] = "digest",
    [NF_C_CODES] = "codes",
    [NF_C_COVERAGE] = "coverage",
    [NF_C_UNKNOWN_PARAMETER] = "unknown-parameter",
    [NF_C_AUXILIARY] = "auxiliary",
    [NF_C_COMPONENT_MISSING] = "component-missing",
    [NF_C_TARGET] = "target",
    [NF_C_ZSTD] = "zstd",
    [NF_C_UNSUPPORTED] = "unsupported",
    [NF_C_IO] = "io",
    [NF_C_USAGE] = "usage",
};

const char *nf_code_name(nf_code c)
{
    if ((unsigned)c >= NF_C_COUNT_ || !code_names[c])
        return "unknown";
    return code_names[c];
}

int nf_code_exit(nf_code c)
{
    switch (c) {
    case NF_C_PART_MISSING:
    case NF_C_IO:
        return NF_EXIT_IO;
    case NF_C_UNSUPPORTED:
        return NF_EXIT_UNSUPPORTED;
    case NF_C_USAGE:
        return NF_EXIT_USAGE;
    default:
        return NF_EXIT_RULE;
    }
}

static int rank(int e)
{
    switch (e) {
    case NF_EXIT_USAGE: return 5;
    case NF_EXIT_RULE: return 4;
    case NF_EXIT_IO: return 3;
    case NF_EXIT_UNSUPPORTED: return 2;
    case NF_EXIT_OK: return 0;
    default: return 1;
    }
}

int nf_exit_combine(int a, int b)
{
    return rank(a) >= rank(b) ? a : b;
}


static size_t capped_len(const char *s, size_t n)
{
    if (n <= NF_DIAG_MAX_TEXT)
        return n;
    n = NF_DIAG_MAX_TEXT - 3;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static char *dupn(const char *s)
{
    if (!s)
        s = "";
    size_t n = strlen(s), k = capped_len(s, n);
    char *r = malloc(k + (k < n ? 4 : 1));
    if (!r)
        return NULL;
    memcpy(r, s, k);
    if (k < n)
        memcpy(r + k, "...", 3), k += 3;
    r[k] = 0;
    return r;
}

static void add_record(nf_diags *d, nf_code code, const char *file,
                       const char *pointer, const char *fmt, va_list ap)
{
    d->worst = nf_exit_combine(d->worst, nf_code_exit(code));
    size_t limit = d->limit ? d->limit : 1000;
    if (d->n >= limit) {
        d->dropped++;
        return;
    }
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 16;
        nf_diag *nv = realloc(d->v, nc * sizeof *nv);
        if (!nv) {
            d->dropped++;
            return;
        }
        d->v = nv;
        d->cap = nc;
    }
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    nf_diag *r = &d->v[d->n];
    r->code = code;
    r->pointer = dupn(pointer);
    r->file = dupn(file ? file : d->file);
    if (msg && strlen(msg) > NF_DIAG_MAX_TEXT) {
        char *m = dupn(msg);
        free(msg);
        msg = m;
    }
    r->message = msg ? msg : strdup("(out of memory)");
    if (!r->pointer || !r->file || !r->message) {
        free(r->pointer);
        free(r->file);
        free(r->message);
        d->dropped++;
        return;
    }
    d->n++;
}

void nf_diag_vadd(nf_diags *d, nf_code code, const char *pointer,
                  const char *fmt, va_list ap)
{
    add_record(d, code, NULL, pointer, fmt, ap);
}

void nf_diag_add(nf_diags *d, nf_code code, const char *pointer,
                 const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_record(d, code, NULL, pointer, fmt, ap);
    va_end(ap);
}

void nf_diag_addf(nf_diags *d, nf_code code, const char *file,
                  const char *pointer, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add_record(d, code, file, pointer, fmt, ap);
    va_end(ap);
}

size_t nf_diags_count(const nf_diags *d, nf_code code)
{
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++)
        k += d->v[i].code == code;
    return k;
}

int nf_diags_exit(const nf_diags *d)
{
    return d->worst;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one
 * (overlong, surrogate, past U+10FFFF, cut short). */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
             : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n <= 1)
        return n;
    unsigned cp = c & (0x7f >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* s with C0/DEL/C1 controls, invalid UTF-8 and the ASCII bytes of also
 * (may be NULL) as \xHH (nf_text_escape, nf_text_escape_also) */
static void put_escaped_also(nf_text *b, const char *s, const char *also)
{
    const unsigned char *p = (const unsigned char *)s, *run = p;
    while (*p) {
        size_t n = utf8_seq(p);
        /* C0 controls, DEL, C1 controls (U+0080..U+009F) and bytes that are
         * not UTF-8 come from hostile names: never let them reach a
         * terminal or split a line */
        bool c1 = n == 2 && p[0] == 0xc2 && p[1] < 0xa0;
        if (n == 0 || (n == 1 && (*p < 0x20 || *p == 0x7f || (also && strchr(also, *p)))) ||
            c1) {
            nf_text_put(b, (const char *)run, (size_t)(p - run));
            size_t k = c1 ? 2 : 1;
            for (size_t i = 0; i < k; i++) {
                static const char hex[] = "0123456789abcdef";
                char e[4] = {'\\', 'x', hex[p[i] >> 4], hex[p[i] & 15]};
                nf_text_put(b, e, 4);
            }
            p += k;
            run = p;
        } else {
            p += n;
        }
    }
    nf_text_put(b, (const char *)run, (size_t)(p - run));
}

static void put_escaped(nf_text *b, const char *s)
{
    put_escaped_also(b, s, NULL);
}

char *nf_text_escape(const char *s)
{
    nf_text b = {0};
    put_escaped(&b, s);
    return nf_text_take(&b, NULL);
}

char *nf_text_escape_also(const char *s, const char *also)
{
    nf_text b = {0};
    put_escaped_also(&b, s, also);
    return nf_text_take(&b, NULL);
}

char *nf_diag_line(const nf_diags *d, size_t i, const char *prog)
{
    nf_text b = {0};
    if (i < d->n) {
        const nf_diag *r = &d->v[i];
        nf_text_puts(&b, prog);
        nf_text_puts(&b, ": ");
        if (r->file[0]) {
            put_escaped(&b, r->file);
            nf_text_puts(&b, ": ");
        }
        if (r->pointer[0]) {
            put_escaped(&b, r->pointer);
            nf_text_puts(&b, ": ");
        }
        nf_text_puts(&b, nf_code_name(r->code));
        nf_text_puts(&b, ": ");
        put_escaped(&b, r->message);
    } else if (i == d->n && d->dropped) {
        char more[64];
        nf_text_puts(&b, prog);
        nf_text_puts(&b, ": ");
        if (d->file) {
            put_escaped(&b, d->file);
            nf_text_puts(&b, ": ");
        }
        snprintf(more, sizeof more, "%zu more problems not shown", d->dropped);
        nf_text_puts(&b, more);
    } else {
        return NULL;
    }
    return nf_text_take(&b, NULL);
}

void nf_diags_move(nf_diags *dst, nf_diags *src)
{
    for (size_t i = 0; i < src->n; i++) {
        nf_diag *r = &src->v[i];
        nf_diag_addf(dst, r->code, r->file, r->pointer, "%s", r->message);
    }
    dst->dropped += src->dropped;
    dst->worst = nf_exit_combine(dst->worst, src->worst);
    nf_diags_clear(src);
}

void nf_diags_clear(nf_diags *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].pointer);
        free(d->v[i].file);
        free(d->v[i].message);
    }
    d->n = 0;
    d->dropped = 0;
    d->worst = 0;
}

void nf_diags_free(nf_diags *d)
{
    nf_diags_clear(d);
    free(d->v);
    d->v = NULL;
    d->cap = 0;
}

char *nf_ptr_join(const char *base, const char *tok, size_t tok_len)
{
    size_t bl = base ? strlen(base) : 0, extra = 0;
    for (size_t i = 0; i < tok_len; i++)
        extra += tok[i] == '~' || tok[i] == '/';
    if (tok_len > SIZE_MAX / 2 - bl - 2)
        return NULL;
    char *p = malloc(bl + 1 + tok_len + extra + 1), *q;
    if (!p)
        return NULL;
    memcpy(p, base ? base : "", bl);
    q = p + bl;
    *q++ = '/';
    for (size_t i = 0; i < tok_len; i++) {
        if (tok[i] == '~') {
            *q++ = '~';
            *q++ = '0';
        } else if (tok[i] == '/') {
            *q++ = '~';
            *q++ = '1';
        } else if (tok[i] == '\0') {
            /* a pointer is text: show NUL as its escape so lines stay whole */
            *q++ = '?';
        } else {
            *q++ = tok[i];
        }
    }
    *q = 0;
    return p;
}

char *nf_ptr_index(const char *base, size_t index)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%zu", base ? base : "", index) < 0)
        return NULL;
    return p;
}
