/* nf_jscan.c — the strict linear pre-pass over catalog JSON (nf_jscan.h).
 *
 * The scanner is a goto-driven state machine over an explicit stack, so
 * nesting costs one stack entry and never a C call frame; hostile depth
 * stops at max_depth + 1 after reading that many bytes. Every read is
 * guarded by `end`, and wide loads happen only when that many bytes remain.
 */
#include "nf_jscan.h"

#include "nf_strmap.h"
#include "nf_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__SSE2__) && !defined(NF_JSCAN_NO_SIMD)
#include <emmintrin.h>
#define NF_JSCAN_SSE2 1
#else
#define NF_JSCAN_SSE2 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NF_JSCAN_LE 1
#else
#define NF_JSCAN_LE 0
#endif

typedef unsigned char uchar;

/* ------------------------------------------------------------------------ */
/* Small helpers shared by the scanner and the span functions.              */

/* A big table probed at random: ask for huge pages (where the kernel gives
 * them on request), one TLB entry per 2 MiB instead of per 4 KiB. Only
 * advice: nothing changes when it is refused. */
void nf_advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (n < 2 * huge)
        return;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(huge - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

static inline bool is_ws(uchar c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline bool is_digit(uchar c)
{
    return (unsigned)(c - '0') < 10;
}

static inline const uchar *skip_ws(const uchar *p, const uchar *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

static unsigned hexval(uchar c)
{
    if (is_digit(c))
        return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return 16;
}

static bool hex4(const uchar *p, const uchar *end, unsigned *out)
{
    if (end - p < 4)
        return false;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned h = hexval(p[i]);
        if (h > 15)
            return false;
        v = v << 4 | h;
    }
    *out = v;
    return true;
}

/* Fewer than four bytes left at p, all hex digits: an escape cut short. */
static bool hex_prefix(const uchar *p, const uchar *end)
{
    if (end - p >= 4)
        return false;
    for (; p < end; p++)
        if (hexval(*p) > 15)
            return false;
    return true;
}

static size_t utf8_put(unsigned cp, uchar *o)
{
    if (cp < 0x80) {
        o[0] = (uchar)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uchar)(0xC0 | cp >> 6);
        o[1] = (uchar)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uchar)(0xE0 | cp >> 12);
        o[1] = (uchar)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uchar)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uchar)(0xF0 | cp >> 18);
    o[1] = (uchar)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (uchar)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (uchar)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decode one unit of the raw (still escaped) string content r[0..n) at *i
 * into out (1..4 bytes). Text nf_jscan accepted is always well formed; on
 * anything else this still stays inside r[0..n) and yields some bytes. */
static size_t jdecode(const uchar *r, size_t n, size_t *i, uchar out[4])
{
    uchar c = r[*i];
    if (c != '\\' || *i + 1 >= n) {
        (*i)++;
        out[0] = c;
        return 1;
    }
    c = r[*i + 1];
    switch (c) {
    case 'b': out[0] = '\b'; break;
    case 'f': out[0] = '\f'; break;
    case 'n': out[0] = '\n'; break;
    case 'r': out[0] = '\r'; break;
    case 't': out[0] = '\t'; break;
    case 'u': {
        unsigned u, lo;
        if (!hex4(r + *i + 2, r + n, &u)) {
            out[0] = '\\';
            (*i)++;
            return 1;
        }
        *i += 6;
        if (u >= 0xD800 && u < 0xDC00 && *i + 1 < n && r[*i] == '\\' &&
            r[*i + 1] == 'u' && hex4(r + *i + 2, r + n, &lo) &&
            lo >= 0xDC00 && lo < 0xE000) {
            *i += 6;
            u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        }
        return utf8_put(u, out);
    }
    default: out[0] = c; break; /* \" \\ \/ */
    }
    *i += 2;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* SipHash-1-3 with a per-scan random key: member names come from the
 * internet, and an unkeyed hash would let a catalog pick names that all
 * land in one probe chain and make duplicate detection quadratic. */

static uint64_t siphash13(const uchar *in, size_t len, uint64_t k0, uint64_t k1)
{
    const uint64_t key[2] = {k0, k1};
    return nf_siphash13(in, len, key); /* nf_strmap.h: the one SipHash */
}

/* ------------------------------------------------------------------------ */
/* Scanner state.                                                           */

typedef struct {
    size_t key_start, key_len; /* raw span of the current member name */
    size_t index;              /* array: the element being scanned */
    size_t name_base;          /* object: first entry of its names */
    size_t arena_base;         /* object: arena length when it opened */
    unsigned char is_obj, has_key, key_esc;
    unsigned char hashed;      /* object: its names are in the table */
    unsigned char own_names;   /* object: the sink finds its duplicate names */
} nf_jlevel;

/* A member name of an open object. Names without escapes point into the
 * text; unescaped copies live in the arena (offsets, since it moves).
 * 16 bytes: an object of millions of members costs 16 bytes a name here
 * plus its slot; the hash of a hashed object's names is recomputed when
 * the table grows or the object closes rather than stored. */
typedef struct {
    uint64_t off;  /* top bit: in the arena */
    uint32_t len;
    uint32_t word; /* first 4 bytes, zero padded: a cheap first compare */
} nf_jname;

/* Objects up to this many members are checked by a linear compare: most
 * catalog objects are small, and hashing each name would cost more than
 * comparing it with its few siblings. Bigger ones move into the table. */
#define NF_LINEAR_MAX 8

/* The slot keeps part of the hash so that probing a huge object touches
 * only the slot array, not an entry per probe (one cache miss, not two).
 * A name's home slot is the top bits of its tag, so the table can grow and
 * shrink from the slots alone: no name is rehashed or read for it, and a
 * rebuild walks both tables in order (a 14.7M-member object spent a third
 * of its time rehashing names into random slots). */
typedef struct {
    uint32_t tag; /* hash >> 32 */
    uint32_t idx; /* entry index + 1; 0 empty */
} nf_jslot;

#define NF_IN_ARENA ((uint64_t)1 << 63)
#define NF_SHOW_MAX 200 /* bytes of a name quoted in a message */

typedef struct {
    const uchar *text, *end;
    nf_diags *d;
    nf_jscan_result *res;
    size_t problems;
    const nf_jscan_sink *sink;

    nf_jlevel *lv;
    size_t depth, lv_cap, max_depth;
    nf_jlevel lv_inline[NF_JSON_MAX_DEPTH];

    nf_jname *names;
    size_t n_names, names_cap, n_hashed;
    nf_jslot *slots; /* linear probing */
    size_t slot_mask;
    unsigned slot_bits; /* slot_mask + 1 == 2^slot_bits, at most 2^32 */
    uchar *arena;
    size_t arena_len, arena_cap;
    uint64_t k0, k1;
    bool keyed;

    /* Pointer strings kept in records cost memory; without a cap a long
     * path repeated by millions of big integers or duplicates would make
     * the result quadratic in the text. */
    size_t ptr_budget;
} nf_jscanner;

/* Growable byte buffer for pointers and messages. */
typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} nf_jbuf;

static void jb_reserve(nf_jbuf *b, size_t more)
{
    if (b->oom)
        return;
    if (more > SIZE_MAX / 2 - b->n) {
        b->oom = true;
        return;
    }
    if (b->n + more + 1 <= b->cap)
        return;
    size_t nc = b->cap ? b->cap : 64;
    while (nc < b->n + more + 1)
        nc *= 2;
    char *np = realloc(b->p, nc);
    if (!np) {
        b->oom = true;
        return;
    }
    b->p = np;
    b->cap = nc;
}

static void jb_putc(nf_jbuf *b, char c)
{
    jb_reserve(b, 1);
    if (!b->oom)
        b->p[b->n++] = c;
}

static void jb_puts(nf_jbuf *b, const char *s, size_t n)
{
    jb_reserve(b, n);
    if (!b->oom) {
        memcpy(b->p + b->n, s, n);
        b->n += n;
    }
}

/* NUL-terminated result, or NULL (and the buffer freed) on failure. */
static char *jb_finish(nf_jbuf *b)
{
    jb_reserve(b, 0);
    if (b->oom) {
        free(b->p);
        return NULL;
    }
    if (!b->p)
        return strdup("");
    b->p[b->n] = 0;
    return b->p;
}

/* One reference-token byte, escaped exactly as nf_ptr_join does. */
static void jb_ptr_byte(nf_jbuf *b, uchar c)
{
    if (c == '~')
        jb_puts(b, "~0", 2);
    else if (c == '/')
        jb_puts(b, "~1", 2);
    else if (c == 0)
        jb_putc(b, '?');
    else
        jb_putc(b, (char)c);
}

/* The JSON Pointer of where the scan is. Built in one pass rather than by
 * repeated nf_ptr_join, which would copy the prefix once per level. */
static char *build_ptr(const nf_jscanner *s)
{
    nf_jbuf b = {0};
    for (size_t k = 0; k < s->depth; k++) {
        const nf_jlevel *l = &s->lv[k];
        if (!l->is_obj) {
            char num[32];
            int n = snprintf(num, sizeof num, "/%zu", l->index);
            jb_puts(&b, num, (size_t)n);
            continue;
        }
        if (!l->has_key)
            break;
        const uchar *r = s->text + l->key_start;
        jb_putc(&b, '/');
        jb_reserve(&b, l->key_len);
        if (!l->key_esc) {
            for (size_t i = 0; i < l->key_len; i++)
                jb_ptr_byte(&b, r[i]);
        } else {
            uchar u[4];
            for (size_t i = 0; i < l->key_len;) {
                size_t m = jdecode(r, l->key_len, &i, u);
                for (size_t j = 0; j < m; j++)
                    jb_ptr_byte(&b, u[j]);
            }
        }
    }
    return jb_finish(&b);
}

static bool diag_full(const nf_diags *d)
{
    return d->n >= (d->limit ? d->limit : 1000);
}

/* A pointer for a record that may repeat, or NULL when over budget. */
static char *budget_ptr(nf_jscanner *s)
{
    if (s->ptr_budget == 0)
        return NULL;
    char *p = build_ptr(s);
    if (!p)
        return NULL;
    size_t n = strlen(p) + 1;
    if (n > s->ptr_budget) {
        free(p);
        s->ptr_budget = 0;
        return NULL;
    }
    s->ptr_budget -= n;
    return p;
}

__attribute__((format(printf, 4, 5)))
static void fail_at(nf_jscanner *s, nf_code code, size_t off, const char *fmt,
                    ...)
{
    s->problems++;
    if (s->res)
        s->res->error_offset = off;
    if (!s->d)
        return;
    char *ptr = diag_full(s->d) ? NULL : build_ptr(s);
    va_list ap;
    va_start(ap, fmt);
    nf_diag_vadd(s->d, code, ptr, fmt, ap);
    va_end(ap);
    free(ptr);
}

static size_t off_of(const nf_jscanner *s, const uchar *p)
{
    return (size_t)(p - s->text);
}

/* The fatal error just recorded is the text ending: what came so far is
 * the start of a valid value (nf_jscan_result.truncated). */
static void mark_end(nf_jscanner *s)
{
    if (s->res)
        s->res->truncated = true;
    if (s->sink && s->sink->truncated)
        *s->sink->truncated = true;
}

static void fail_oom(nf_jscanner *s, const uchar *p)
{
    fail_at(s, NF_C_IO, off_of(s, p), "out of memory scanning json at byte %zu",
            off_of(s, p));
}

/* ------------------------------------------------------------------------ */
/* UTF-8 (Unicode 15, table 3-7).                                           */

/* Length of the valid sequence at q (q[0] >= 0x80), or NULL reason. */
static size_t utf8_len(const uchar *q, const uchar *end, const char **why)
{
    uchar c = q[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0xC0) {
        *why = "unexpected continuation byte";
        return 0;
    }
    if (c < 0xC2) {
        *why = "overlong encoding";
        return 0;
    }
    if (c < 0xE0) {
        n = 2;
    } else if (c < 0xF0) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        *why = c < 0xF8 ? "code point above U+10FFFF" : "invalid byte";
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if (q + i >= end) {
            *why = "truncated sequence at end of text";
            return 0;
        }
        uchar t = q[i];
        if (t < 0x80 || t > 0xBF) {
            *why = "truncated sequence (missing continuation byte)";
            return 0;
        }
        if (i == 1 && t < lo) {
            *why = "overlong encoding";
            return 0;
        }
        if (i == 1 && t > hi) {
            *why = c == 0xED ? "surrogate encoded in utf-8"
                             : "code point above U+10FFFF";
            return 0;
        }
    }
    return n;
}

static size_t utf8_check(nf_jscanner *s, const uchar *q)
{
    const char *why = NULL;
    size_t n = utf8_len(q, s->end, &why);
    if (!n) {
        fail_at(s, NF_C_UTF8, off_of(s, q), "invalid utf-8 at byte %zu: %s",
                off_of(s, q), why);
        if (strcmp(why, "truncated sequence at end of text") == 0)
            mark_end(s);
    }
    return n;
}

/* A byte where a value or punctuation was expected. Invalid UTF-8 there is
 * reported as such: it is the more precise of the two faults. */
static void unexpected(nf_jscanner *s, const uchar *p, const char *expected)
{
    size_t off = off_of(s, p);
    if (p >= s->end) {
        fail_at(s, NF_C_JSON, off, "unexpected end of input at byte %zu, expected %s",
                off, expected);
        mark_end(s);
        return;
    }
    uchar c = *p;
    if (c >= 0x80) {
        if (utf8_check(s, p))
            fail_at(s, NF_C_JSON, off,
                    "unexpected non-ascii character at byte %zu, expected %s",
                    off, expected);
        return;
    }
    if (c > 0x20 && c < 0x7F)
        fail_at(s, NF_C_JSON, off, "unexpected '%c' at byte %zu, expected %s", c,
                off, expected);
    else
        fail_at(s, NF_C_JSON, off, "unexpected byte 0x%02x at byte %zu, expected %s",
                c, off, expected);
}

/* ------------------------------------------------------------------------ */
/* Strings.                                                                 */

/* Bytes that need a look inside a string: quote, backslash, controls and
 * non-ASCII; anything else passes in bulk. */
static inline bool str_plain(uchar c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

#if !NF_JSCAN_SSE2 && NF_JSCAN_LE
/* Bit 7 of each byte set for "special" bytes; the lowest set bit is exact
 * (borrows only run upwards from a byte that really matched). */
static inline uint64_t swar_special(uint64_t v)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    uint64_t xq = v ^ (ones * '"'), xb = v ^ (ones * '\\');
    uint64_t m = ((xq - ones) & ~xq) | ((xb - ones) & ~xb) |
                 ((v - ones * 0x20) & ~v) | v;
    return m & high;
}
#endif

/* Skip plain string bytes from q; returns the first special byte or end. */
static inline const uchar *skip_plain(const uchar *q, const uchar *end)
{
#if NF_JSCAN_SSE2
    const __m128i quote = _mm_set1_epi8('"'), bsl = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end - q >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
        /* signed compare: bytes >= 0x80 are negative, so "< 0x20" also
         * catches every non-ASCII byte */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                              _mm_cmpeq_epi8(v, bsl)),
                                 _mm_cmplt_epi8(v, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return q + __builtin_ctz(bits);
        q += 16;
    }
#elif NF_JSCAN_LE
    while (end - q >= 8) {
        uint64_t v;
        memcpy(&v, q, 8);
        uint64_t m = swar_special(v);
        if (m)
            return q + (__builtin_ctzll(m) >> 3);
        q += 8;
    }
#endif
    while (q < end && str_plain(*q))
        q++;
    return q;
}

/* Does the raw (still escaped) string content r[0..n) of accepted text
 * hold U+0000? Only the escape \u0000 can put it there (a raw NUL is a
 * control character, refused): escapes are walked as pairs, so "\\u0000"
 * (an escaped backslash, then "u0000") holds none. */
static bool raw_holds_nul(const uchar *r, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++) {
        if (r[i] != '\\')
            continue;
        unsigned u;
        if (r[i + 1] == 'u' && hex4(r + i + 2, r + n, &u) && u == 0)
            return true;
        i++; /* the escaped character */
    }
    return false;
}

/* Validate the string starting at p ('"'); returns the byte after the
 * closing quote, or NULL after reporting. *esc tells whether it holds a
 * backslash (names without one are compared in place). */
static const uchar *scan_string(nf_jscanner *s, const uchar *p, bool *esc)
{
    const uchar *end = s->end, *q = p + 1;
    bool e = false;
    for (;;) {
        q = skip_plain(q, end);
        if (q >= end) {
            fail_at(s, NF_C_JSON, off_of(s, p),
                    "unterminated string starting at byte %zu", off_of(s, p));
            mark_end(s);
            return NULL;
        }
        uchar c = *q;
        if (c == '"') {
            *esc = e;
            return q + 1;
        }
        if (c >= 0x80) {
            do {
                size_t n = utf8_check(s, q);
                if (!n)
                    return NULL;
                q += n;
            } while (q < end && *q >= 0x80);
            continue;
        }
        if (c < 0x20) {
            fail_at(s, NF_C_JSON, off_of(s, q),
                    "control character 0x%02x in string at byte %zu", c,
                    off_of(s, q));
            return NULL;
        }
        /* backslash */
        e = true;
        if (end - q < 2) {
            fail_at(s, NF_C_JSON, off_of(s, p),
                    "unterminated string starting at byte %zu", off_of(s, p));
            mark_end(s);
            return NULL;
        }
        switch (q[1]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n':
        case 'r': case 't':
            q += 2;
            continue;
        case 'u':
            break;
        default:
            if (q[1] >= 0x21 && q[1] < 0x7F)
                fail_at(s, NF_C_JSON, off_of(s, q),
                        "invalid escape \\%c in string at byte %zu", q[1],
                        off_of(s, q));
            else
                fail_at(s, NF_C_JSON, off_of(s, q),
                        "invalid escape (backslash before byte 0x%02x) in string at byte %zu",
                        q[1], off_of(s, q));
            return NULL;
        }
        unsigned u, lo;
        if (!hex4(q + 2, end, &u)) {
            fail_at(s, NF_C_JSON, off_of(s, q),
                    "invalid \\u escape in string at byte %zu (four hex digits expected)",
                    off_of(s, q));
            if (hex_prefix(q + 2, end))
                mark_end(s);
            return NULL;
        }
        if (u >= 0xDC00 && u < 0xE000) {
            fail_at(s, NF_C_UTF8, off_of(s, q),
                    "lone surrogate escape \\u%04X at byte %zu (low surrogate without a high one)",
                    u, off_of(s, q));
            return NULL;
        }
        if (u >= 0xD800 && u < 0xDC00) {
            const uchar *r = q + 6;
            if (end - r >= 2 && r[0] == '\\' && r[1] == 'u') {
                if (!hex4(r + 2, end, &lo)) {
                    fail_at(s, NF_C_JSON, off_of(s, r),
                            "invalid \\u escape in string at byte %zu (four hex digits expected)",
                            off_of(s, r));
                    if (hex_prefix(r + 2, end))
                        mark_end(s);
                    return NULL;
                }
                if (lo >= 0xDC00 && lo < 0xE000) {
                    q = r + 6;
                    continue;
                }
            }
            fail_at(s, NF_C_UTF8, off_of(s, q),
                    "lone surrogate escape \\u%04X at byte %zu (high surrogate not followed by a low one)",
                    u, off_of(s, q));
            if (r >= end || (r + 1 >= end && r[0] == '\\'))
                mark_end(s); /* the low half may have been cut off */
            return NULL;
        }
        q += 6;
    }
}

/* ------------------------------------------------------------------------ */
/* Numbers.                                                                 */

static bool record_bigint(nf_jscanner *s, const uchar *p)
{
    nf_jscan_result *r = s->res;
    if (!r)
        return true;
    char *ptr = budget_ptr(s);
    if (!ptr) {
        if (s->ptr_budget == 0)
            fail_at(s, NF_C_RANGE, off_of(s, p),
                    "integer above 2^64-1 at byte %zu: too many to record", off_of(s, p));
        else
            fail_oom(s, p);
        return false;
    }
    /* grow at powers of two */
    if ((r->n_bigint & (r->n_bigint - 1)) == 0) {
        size_t nc = r->n_bigint ? r->n_bigint * 2 : 4;
        char **nv = realloc(r->bigint_ptrs, nc * sizeof *nv);
        if (!nv) {
            free(ptr);
            fail_oom(s, p);
            return false;
        }
        r->bigint_ptrs = nv;
    }
    r->bigint_ptrs[r->n_bigint++] = ptr;
    return true;
}

static const uchar *scan_number(nf_jscanner *s, const uchar *p, unsigned *kind)
{
    const uchar *end = s->end, *q = p, *ds;
    bool neg = false, is_int = true;
    size_t off = off_of(s, p);
    if (*q == '-') {
        neg = true;
        q++;
        if (q < end && *q == 'I') {
            fail_at(s, NF_C_JSON, off,
                    "invalid literal at byte %zu: -Infinity is not json", off);
            return NULL;
        }
        if (q == end || !is_digit(*q)) {
            fail_at(s, NF_C_JSON, off,
                    "invalid number at byte %zu: no digit after '-'", off);
            if (q == end)
                mark_end(s);
            return NULL;
        }
    }
    ds = q;
    if (*q == '0') {
        q++;
        if (q < end && is_digit(*q)) {
            fail_at(s, NF_C_JSON, off,
                    "invalid number at byte %zu: leading zero", off);
            return NULL;
        }
    } else {
        while (q < end && is_digit(*q))
            q++;
    }
    size_t nd = (size_t)(q - ds);
    if (q < end && *q == '.') {
        q++;
        if (q == end || !is_digit(*q)) {
            fail_at(s, NF_C_JSON, off,
                    "invalid number at byte %zu: no digit after '.'", off);
            if (q == end)
                mark_end(s);
            return NULL;
        }
        while (q < end && is_digit(*q))
            q++;
        is_int = false;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < end && (*q == '+' || *q == '-'))
            q++;
        if (q == end || !is_digit(*q)) {
            fail_at(s, NF_C_JSON, off,
                    "invalid number at byte %zu: no digit in the exponent", off);
            if (q == end)
                mark_end(s);
            return NULL;
        }
        while (q < end && is_digit(*q))
            q++;
        is_int = false;
    }
    /* no leading zeros, so digit count and then text order decide */
    bool big = !neg && is_int && nd >= 20 &&
               (nd > 20 || memcmp(ds, "18446744073709551615", 20) > 0);
    if (big && !record_bigint(s, p))
        return NULL;
    *kind = !is_int ? NF_JS_NUMBER
            : big   ? NF_JS_BIGINT
            : neg && !(nd == 1 && *ds == '0') ? NF_JS_NEGINT
                                              : NF_JS_INT;
    return q;
}

/* ------------------------------------------------------------------------ */
/* Member names of open objects.                                            */

static const uchar *name_bytes(const nf_jscanner *s, const nf_jname *e)
{
    return e->off & NF_IN_ARENA ? s->arena + (size_t)(e->off & ~NF_IN_ARENA)
                                : s->text + (size_t)e->off;
}

/* The hash of name k of the object open at depth (its level index + 1):
 * the depth is part of the key, so the same name open at many depths
 * (allowed when max_depth is large) does not share a probe chain. */
static uint64_t name_hash(const nf_jscanner *s, size_t k, size_t depth)
{
    const nf_jname *e = &s->names[k];
    return siphash13(name_bytes(s, e), e->len, s->k0 ^ depth, s->k1);
}

static void name_key(nf_jscanner *s)
{
    uint64_t k[2];
    if (nf_random_bytes(k, sizeof k) != 0) {
        /* still a working table, only less resistant to chosen names */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)s;
        k[1] = (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts;
    }
    s->k0 = k[0];
    s->k1 = k[1];
    s->keyed = true;
}

/* The home slot of a tag (the table has 2^slot_bits slots, at most 2^32). */
static size_t slot_home(const nf_jscanner *s, uint32_t tag)
{
    return s->slot_bits ? (size_t)(tag >> (32 - s->slot_bits)) : 0;
}

static nf_jslot *slot_of(nf_jscanner *s, uint64_t h, size_t idx)
{
    size_t i = slot_home(s, (uint32_t)(h >> 32));
    while (s->slots[i].idx != idx + 1)
        i = (i + 1) & s->slot_mask;
    return &s->slots[i];
}

/* Enter a slot's (tag, idx) at the first free slot from its home. */
static void slot_put_tag(nf_jslot *slots, size_t mask, size_t home, nf_jslot e)
{
    size_t i = home;
    while (slots[i].idx)
        i = (i + 1) & mask;
    slots[i] = e;
}

/* Remove the entry in slot i, shifting back the entries after it whose
 * probe path crossed it (linear probing needs no tombstones). */
static void slot_delete(nf_jscanner *s, size_t i)
{
    size_t j = i, mask = s->slot_mask;
    for (;;) {
        s->slots[i].idx = 0;
        for (;;) {
            j = (j + 1) & mask;
            if (!s->slots[j].idx)
                return;
            size_t h = slot_home(s, s->slots[j].tag);
            /* movable when the hole i lies on its path h .. j (cyclic) */
            if (i <= j ? (h <= i || h > j) : (h <= i && h > j))
                break;
        }
        s->slots[i] = s->slots[j];
        i = j;
    }
}

/* Move the entries of index below `keep` (slot idx <= keep) into a fresh
 * table of 2^bits slots, walking the old one in order (homes keep their
 * order, so the new table fills in order too). False when there is no
 * memory (the table is unchanged). */
static bool table_rebuild(nf_jscanner *s, unsigned bits, size_t keep)
{
    size_t nc = (size_t)1 << bits;
    nf_jslot *ns = calloc(nc, sizeof *ns);
    if (!ns)
        return false;
    nf_advise_huge(ns, nc * sizeof *ns);
    if (s->slots) {
        /* a big old table (mmap'ed: glibc maps blocks past 32 MB) gives its
         * pages back as the walk passes them, so the two tables together
         * never hold much more than the new one */
        size_t old_bytes = (s->slot_mask + 1) * sizeof *s->slots;
        const uintptr_t step = (uintptr_t)2 << 20;
        uintptr_t from = ((uintptr_t)s->slots + step - 1) & ~(step - 1);
        bool give = old_bytes >= ((size_t)64 << 20);
        for (size_t i = 0; i <= s->slot_mask; i++) {
            if (s->slots[i].idx && s->slots[i].idx <= keep)
                slot_put_tag(ns, nc - 1, (size_t)(s->slots[i].tag >> (32 - bits)), s->slots[i]);
#ifdef MADV_DONTNEED
            uintptr_t done = (uintptr_t)&s->slots[i + 1];
            if (give && done >= from + step && i < s->slot_mask) {
                uintptr_t to = done & ~(step - 1);
                madvise((void *)from, to - from, MADV_DONTNEED);
                from = to;
            }
#endif
        }
        (void)give;
        (void)from;
        free(s->slots);
    }
    s->slots = ns;
    s->slot_mask = nc - 1;
    s->slot_bits = bits;
    return true;
}

static void slot_put(nf_jscanner *s, size_t k, uint64_t h)
{
    uint32_t tag = (uint32_t)(h >> 32);
    slot_put_tag(s->slots, s->slot_mask, slot_home(s, tag), (nf_jslot){tag, (uint32_t)(k + 1)});
}

/* Make room for `more` table entries. */
static bool table_reserve(nf_jscanner *s, size_t more)
{
    /* load at most 0.7 (linear probing stays short; a table of millions
     * of names costs about 11 bytes a name) */
    size_t cap = s->slots ? s->slot_mask + 1 : 0;
    if (s->n_hashed + more <= cap / 10 * 7)
        return true;
    unsigned bits = s->slots ? s->slot_bits : 6;
    while (s->n_hashed + more > ((size_t)1 << bits) / 10 * 7) {
        /* homes come from 32-bit tags: 2^32 slots at most */
        if (bits >= 32 || ((size_t)1 << (bits + 1)) > SIZE_MAX / 2 / sizeof(nf_jslot))
            return false;
        bits++;
    }
    return table_rebuild(s, bits, SIZE_MAX);
}

/* Render name bytes for a message: quotes, backslashes and controls
 * escaped, long names cut at a character boundary. */
static void show_bytes(nf_jbuf *b, const uchar *p, size_t n, bool escape)
{
    size_t lim = n > NF_SHOW_MAX ? NF_SHOW_MAX : n;
    while (lim < n && lim > 0 && (p[lim] & 0xC0) == 0x80)
        lim--;
    for (size_t i = 0; i < lim; i++) {
        uchar c = p[i];
        if (escape && (c == '"' || c == '\\')) {
            jb_putc(b, '\\');
            jb_putc(b, (char)c);
        } else if (escape && c < 0x20) {
            char u[8];
            snprintf(u, sizeof u, "\\u%04x", c);
            jb_puts(b, u, 6);
        } else {
            jb_putc(b, (char)c);
        }
    }
    if (lim < n)
        jb_puts(b, "...", 3);
}

static void report_duplicate(nf_jscanner *s, const uchar *name, size_t len,
                             const nf_jlevel *l)
{
    s->problems++;
    if (!s->d)
        return;
    if (diag_full(s->d)) {
        /* counted as dropped without building any text */
        nf_diag_add(s->d, NF_C_DUPLICATE_MEMBER, NULL, "%s", "");
        return;
    }
    nf_jbuf shown = {0}, raw = {0};
    show_bytes(&shown, name, len, true);
    show_bytes(&raw, s->text + l->key_start, l->key_len, false);
    char *a = jb_finish(&shown), *w = jb_finish(&raw);
    char *ptr = budget_ptr(s);
    if (a && w && strcmp(a, w) != 0)
        nf_diag_add(s->d, NF_C_DUPLICATE_MEMBER, ptr,
                    "duplicate member \"%s\" (written \"%s\")", a, w);
    else
        nf_diag_add(s->d, NF_C_DUPLICATE_MEMBER, ptr, "duplicate member \"%s\"",
                    a ? a : "?");
    free(a);
    free(w);
    free(ptr);
}

/* Enter the current member name of the top object; report a duplicate.
 * False only on allocation failure (already reported). */
static bool add_name(nf_jscanner *s, const uchar *at)
{
    nf_jlevel *l = &s->lv[s->depth - 1];
    const uchar *name = s->text + l->key_start;
    size_t len = l->key_len, off = l->key_start;
    if (l->key_esc) {
        /* unescaped text is never longer than its raw form */
        if (s->arena_cap - s->arena_len < len) {
            size_t nc = s->arena_cap ? s->arena_cap : 256;
            while (nc - s->arena_len < len)
                nc *= 2;
            uchar *na = realloc(s->arena, nc);
            if (!na) {
                fail_oom(s, at);
                return false;
            }
            s->arena = na;
            s->arena_cap = nc;
        }
        uchar *o = s->arena + s->arena_len;
        size_t n = 0;
        for (size_t i = 0; i < l->key_len;)
            n += jdecode(name, l->key_len, &i, o + n);
        name = o;
        len = n;
        off = s->arena_len | NF_IN_ARENA;
    }
    if (len > UINT32_MAX) {
        fail_at(s, NF_C_JSON, off_of(s, at),
                "member name of more than 4 GiB at byte %zu", off_of(s, at));
        return false;
    }
    uint32_t word = 0;
    uint64_t h = 0;
    memcpy(&word, name, len < 4 ? len : 4);
    size_t have = s->n_names - l->name_base, slot = 0;

    if (!l->hashed && have < NF_LINEAR_MAX) {
        for (size_t k = l->name_base; k < s->n_names; k++) {
            const nf_jname *e = &s->names[k];
            if (e->word == word && e->len == len &&
                (len <= 4 || memcmp(name_bytes(s, e) + 4, name + 4, len - 4) == 0)) {
                report_duplicate(s, name, len, l);
                return true;
            }
        }
    } else {
        if (!s->keyed)
            name_key(s);
        /* 32-bit slot indices: 4e9 open names need far more text than any
         * catalog; refuse rather than wrap */
        if (s->n_names >= UINT32_MAX - 1 || !table_reserve(s, l->hashed ? 1 : have + 1)) {
            fail_oom(s, at);
            return false;
        }
        /* the depth is part of the key: the same name open at many depths
         * (allowed when max_depth is large) must not share a probe chain */
        uint64_t k0 = s->k0 ^ s->depth;
        if (!l->hashed) {
            for (size_t k = l->name_base; k < s->n_names; k++)
                slot_put(s, k, name_hash(s, k, s->depth));
            s->n_hashed += have;
            l->hashed = 1;
        }
        h = siphash13(name, len, k0, s->k1);
        uint32_t tag = (uint32_t)(h >> 32);
        size_t i = slot_home(s, tag);
        for (size_t k; (k = s->slots[i].idx) != 0; i = (i + 1) & s->slot_mask) {
            if (s->slots[i].tag != tag)
                continue;
            const nf_jname *e = &s->names[k - 1];
            /* entries below name_base belong to enclosing objects */
            if (k - 1 >= l->name_base && e->len == len &&
                memcmp(name_bytes(s, e), name, len) == 0) {
                report_duplicate(s, name, len, l);
                return true;
            }
        }
        slot = i;
    }
    if (s->n_names == s->names_cap) {
        size_t nc = s->names_cap ? s->names_cap * 2 : 32;
        nf_jname *nn = nc <= SIZE_MAX / sizeof *nn
                           ? realloc(s->names, nc * sizeof *nn) : NULL;
        if (!nn) {
            fail_oom(s, at);
            return false;
        }
        s->names = nn;
        s->names_cap = nc;
    }
    s->names[s->n_names] = (nf_jname){(uint64_t)off, (uint32_t)len, word};
    s->n_names++;
    if (l->hashed) {
        s->slots[slot].tag = (uint32_t)(h >> 32);
        s->slots[slot].idx = (uint32_t)s->n_names;
        s->n_hashed++;
    }
    if (off & NF_IN_ARENA)
        s->arena_len += len;
    return true;
}

/* A duplicate the sink found in an object whose names it checks: reported
 * as add_name would have (the name unescaped for the message). */
static bool report_own_duplicate(nf_jscanner *s, const nf_jlevel *l, const uchar *at)
{
    const uchar *name = s->text + l->key_start;
    size_t len = l->key_len;
    uchar *tmp = NULL;
    if (l->key_esc) {
        tmp = malloc(len ? len : 1);
        if (!tmp) {
            fail_oom(s, at);
            return false;
        }
        size_t n = 0;
        for (size_t i = 0; i < l->key_len;)
            n += jdecode(name, l->key_len, &i, tmp + n);
        name = tmp;
        len = n;
    }
    report_duplicate(s, name, len, l);
    free(tmp);
    return true;
}

static void pop_names(nf_jscanner *s, const nf_jlevel *l)
{
    size_t gone = s->n_names - l->name_base;
    bool big = l->hashed && gone >= (s->slot_mask + 1) / 8;
    if (big && s->n_hashed == gone) {
        /* a big object and nothing else in the table: one sequential sweep
         * beats a cache miss per name */
        memset(s->slots, 0, (s->slot_mask + 1) * sizeof *s->slots);
    } else if (big && table_rebuild(s, s->slot_bits, l->name_base)) {
        /* the names of enclosing objects move into a fresh table, in one
         * sequential walk (amortized: fewer than 6x the names just gone) */
    } else if (l->hashed) {
        /* l was the level at index s->depth (pop has decremented it) */
        for (size_t k = s->n_names; k-- > l->name_base;)
            slot_delete(s, (size_t)(slot_of(s, name_hash(s, k, s->depth + 1), k) - s->slots));
    }
    if (l->hashed)
        s->n_hashed -= gone;
    s->n_names = l->name_base;
    s->arena_len = l->arena_base;
}

/* ------------------------------------------------------------------------ */
/* The scan.                                                                */

static bool push(nf_jscanner *s, const uchar *p, bool obj)
{
    if (s->depth >= s->max_depth) {
        fail_at(s, NF_C_DEPTH, off_of(s, p),
                "nesting deeper than %zu at byte %zu", s->max_depth, off_of(s, p));
        return false;
    }
    if (s->depth == s->lv_cap) {
        size_t nc = s->lv_cap * 2;
        if (nc > s->max_depth)
            nc = s->max_depth;
        nf_jlevel *nl = nc <= SIZE_MAX / sizeof *nl
                            ? malloc(nc * sizeof *nl) : NULL;
        if (!nl) {
            fail_oom(s, p);
            return false;
        }
        memcpy(nl, s->lv, s->depth * sizeof *nl);
        if (s->lv != s->lv_inline)
            free(s->lv);
        s->lv = nl;
        s->lv_cap = nc;
    }
    nf_jlevel *l = &s->lv[s->depth++];
    l->is_obj = obj;
    l->has_key = 0;
    l->key_esc = 0;
    l->hashed = 0;
    l->own_names = 0;
    l->index = 0;
    l->key_start = l->key_len = 0;
    l->name_base = s->n_names;
    l->arena_base = s->arena_len;
    return true;
}

static void pop(nf_jscanner *s)
{
    nf_jlevel *l = &s->lv[--s->depth];
    if (l->is_obj)
        pop_names(s, l);
}

static bool literal(nf_jscanner *s, const uchar *p, const char *word, size_t n)
{
    size_t left = (size_t)(s->end - p);
    if (left >= n && memcmp(p, word, n) == 0)
        return true;
    if (left < n && memcmp(p, word, left) == 0 && (*p == 't' || *p == 'f' || *p == 'n')) {
        size_t off = off_of(s, p);
        fail_at(s, NF_C_JSON, off, "unexpected end of input at byte %zu, inside %s", off_of(s, s->end),
                word);
        mark_end(s);
        return false;
    }
    size_t off = off_of(s, p);
    if ((size_t)(s->end - p) >= 3 && memcmp(p, "NaN", 3) == 0)
        fail_at(s, NF_C_JSON, off, "invalid literal at byte %zu: NaN is not json", off);
    else if ((size_t)(s->end - p) >= 8 && memcmp(p, "Infinity", 8) == 0)
        fail_at(s, NF_C_JSON, off,
                "invalid literal at byte %zu: Infinity is not json", off);
    else
        fail_at(s, NF_C_JSON, off,
                "invalid literal at byte %zu (true, false or null expected)", off);
    return false;
}

static void scanner_free(nf_jscanner *s)
{
    if (s->lv != s->lv_inline)
        free(s->lv);
    free(s->names);
    free(s->slots);
    free(s->arena);
}

/* Hand an event to the sink; a refusal stops the scan (the sink has said
 * why). */
#define SINK(call)                                                          \
    do {                                                                    \
        if (s.sink && s.sink->call != 0) {                                 \
            s.problems++;                                                   \
            goto done;                                                      \
        }                                                                   \
    } while (0)

bool nf_jscan(const char *text, size_t len, unsigned max_depth, nf_diags *d,
              nf_jscan_result *res)
{
    return nf_jscan_ex(text, len, max_depth, d, res, NULL);
}

bool nf_jscan_ex(const char *text, size_t len, unsigned max_depth, nf_diags *d,
                 nf_jscan_result *res, const nf_jscan_sink *sink)
{
    nf_jscanner s;
    memset(&s, 0, sizeof s);
    s.sink = sink;
    if (!text) {
        /* NULL + 0 is undefined; give the empty-input error instead */
        text = "";
        len = 0;
    }
    s.text = (const uchar *)text;
    s.end = s.text + len;
    s.d = d;
    s.res = res;
    s.max_depth = max_depth ? max_depth : NF_JSON_MAX_DEPTH;
    s.lv = s.lv_inline;
    s.lv_cap = NF_JSON_MAX_DEPTH;
    s.ptr_budget = len > (SIZE_MAX - (16u << 20)) / 8 ? SIZE_MAX : len * 8 + (16u << 20);
    if (res) {
        res->bigint_ptrs = NULL;
        res->n_bigint = 0;
        res->error_offset = SIZE_MAX;
        res->value_end = SIZE_MAX;
        res->truncated = false;
    }
    if (sink && sink->value_end)
        *sink->value_end = SIZE_MAX;
    if (sink && sink->truncated)
        *sink->truncated = false;

    const uchar *p = s.text, *end = s.end, *q;
    bool esc;
    unsigned kind;
    nf_jlevel *top;

    if (len >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
        fail_at(&s, NF_C_JSON, 0,
                "byte-order mark at byte 0 (json text must not start with one)");
        goto done;
    }
    p = skip_ws(p, end);
    if (p == end) {
        fail_at(&s, NF_C_JSON, off_of(&s, p), "empty input at byte %zu: no json value",
                off_of(&s, p));
        goto done;
    }

value:
    p = skip_ws(p, end);
    if (p == end) {
        unexpected(&s, p, "a value");
        goto done;
    }
    switch (*p) {
    case '{':
        if (!push(&s, p, true))
            goto done;
        if (sink) {
            int r = sink->open(sink->ctx, true, off_of(&s, p));
            if (r == NF_JSCAN_OWN_NAMES)
                s.lv[s.depth - 1].own_names = 1;
            else if (r != 0) {
                s.problems++;
                goto done;
            }
        }
        p = skip_ws(p + 1, end);
        if (p < end && *p == '}') {
            pop(&s);
            p++;
            SINK(close(sink->ctx, off_of(&s, p)));
            goto after;
        }
        goto key;
    case '[':
        if (!push(&s, p, false))
            goto done;
        SINK(open(sink->ctx, false, off_of(&s, p)));
        p = skip_ws(p + 1, end);
        if (p < end && *p == ']') {
            pop(&s);
            p++;
            SINK(close(sink->ctx, off_of(&s, p)));
            goto after;
        }
        goto value;
    case '"':
        q = scan_string(&s, p, &esc);
        if (!q)
            goto done;
        SINK(scalar(sink->ctx, esc ? NF_JS_ESTRING : NF_JS_STRING, off_of(&s, p) + 1,
                    (size_t)(q - p) - 2));
        p = q;
        goto after;
    case '-': case '0': case '1': case '2': case '3': case '4':
    case '5': case '6': case '7': case '8': case '9':
        q = scan_number(&s, p, &kind);
        if (!q)
            goto done;
        SINK(scalar(sink->ctx, (nf_jscalar)kind, off_of(&s, p), (size_t)(q - p)));
        p = q;
        goto after;
    case 't':
        if (!literal(&s, p, "true", 4))
            goto done;
        SINK(scalar(sink->ctx, NF_JS_TRUE, off_of(&s, p), 4));
        p += 4;
        goto after;
    case 'f':
        if (!literal(&s, p, "false", 5))
            goto done;
        SINK(scalar(sink->ctx, NF_JS_FALSE, off_of(&s, p), 5));
        p += 5;
        goto after;
    case 'n':
        if (!literal(&s, p, "null", 4))
            goto done;
        SINK(scalar(sink->ctx, NF_JS_NULL, off_of(&s, p), 4));
        p += 4;
        goto after;
    case 'N': case 'I':
        literal(&s, p, "true", 4); /* reports NaN / Infinity */
        goto done;
    case '+':
        fail_at(&s, NF_C_JSON, off_of(&s, p),
                "invalid number at byte %zu: leading '+'", off_of(&s, p));
        goto done;
    case '.':
        fail_at(&s, NF_C_JSON, off_of(&s, p),
                "invalid number at byte %zu: no digit before '.'", off_of(&s, p));
        goto done;
    default:
        unexpected(&s, p, "a value");
        goto done;
    }

key:
    /* p: after '{' or ',' and whitespace */
    if (p == end || *p != '"') {
        unexpected(&s, p, "a member name");
        goto done;
    }
    q = scan_string(&s, p, &esc);
    if (!q)
        goto done;
    top = &s.lv[s.depth - 1];
    top->key_start = off_of(&s, p) + 1;
    top->key_len = (size_t)(q - p) - 2;
    top->key_esc = esc;
    top->has_key = 1;
    if (esc && raw_holds_nul(s.text + top->key_start, top->key_len)) {
        /* json-c keys are C strings: "a\u0000b" would be "a", and a reader
         * of the open members (config) would see another catalog than ours */
        nf_jbuf shown = {0};
        show_bytes(&shown, s.text + top->key_start, top->key_len, false);
        char *w = jb_finish(&shown);
        fail_at(&s, NF_C_SCHEMA, off_of(&s, p),
                "member name \"%s\" at byte %zu holds U+0000, which no member name may hold",
                w ? w : "?", off_of(&s, p));
        free(w);
        goto done;
    }
    if (!top->own_names && !add_name(&s, p))
        goto done;
    if (sink) {
        int r = sink->key(sink->ctx, top->key_start, top->key_len, esc);
        if (r == NF_JSCAN_DUPLICATE && top->own_names) {
            if (!report_own_duplicate(&s, top, p))
                goto done;
        } else if (r != 0) {
            s.problems++;
            goto done;
        }
    }
    p = skip_ws(q, end);
    if (p == end || *p != ':') {
        unexpected(&s, p, "':'");
        goto done;
    }
    p++;
    goto value;

after:
    if (s.depth == 0) {
        if (res)
            res->value_end = off_of(&s, p);
        if (sink && sink->value_end)
            *sink->value_end = off_of(&s, p);
        p = skip_ws(p, end);
        if (p != end) {
            if (*p >= 0x80 && !utf8_check(&s, p))
                goto done;
            fail_at(&s, NF_C_JSON, off_of(&s, p),
                    "garbage after the value at byte %zu", off_of(&s, p));
        }
        goto done;
    }
    p = skip_ws(p, end);
    top = &s.lv[s.depth - 1];
    if (p < end && *p == ',') {
        p = skip_ws(p + 1, end);
        if (top->is_obj) {
            top->has_key = 0;
            goto key;
        }
        top->index++;
        goto value;
    }
    if (p < end && *p == (top->is_obj ? '}' : ']')) {
        pop(&s);
        p++;
        SINK(close(sink->ctx, off_of(&s, p)));
        goto after;
    }
    unexpected(&s, p, top->is_obj ? "',' or '}'" : "',' or ']'");

done:
    scanner_free(&s);
    return s.problems == 0;
}

void nf_jscan_result_free(nf_jscan_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->n_bigint; i++)
        free(res->bigint_ptrs[i]);
    free(res->bigint_ptrs);
    res->bigint_ptrs = NULL;
    res->n_bigint = 0;
}

bool nf_jscan_is_bigint(const nf_jscan_result *res, const char *ptr)
{
    if (!res || !ptr)
        return false;
    for (size_t i = 0; i < res->n_bigint; i++)
        if (strcmp(res->bigint_ptrs[i], ptr) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* Spans over accepted text: iterative, and bounded by the span given.      */

static const uchar *span_skip_string(const uchar *p, const uchar *end)
{
    for (const uchar *q = p + 1; q < end; q++) {
        if (*q == '\\')
            q++;
        else if (*q == '"')
            return q + 1;
    }
    return NULL;
}

/* The end of the value at p, or NULL when it runs past end. */
static const uchar *span_skip_value(const uchar *p, const uchar *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return span_skip_string(p, end);
    if (*p == '{' || *p == '[') {
        size_t depth = 0;
        while (p < end) {
            uchar c = *p;
            if (c == '"') {
                p = span_skip_string(p, end);
                if (!p)
                    return NULL;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return NULL;
    }
    const uchar *q = p;
    while (q < end && !is_ws(*q) && *q != ',' && *q != ']' && *q != '}' && *q != ':')
        q++;
    return q > p ? q : NULL;
}

nf_span nf_jspan_root(const char *text, size_t len)
{
    nf_span sp = {0, 0};
    if (!text)
        return sp;
    const uchar *t = (const uchar *)text;
    size_t a = 0, b = len;
    while (a < b && is_ws(t[a]))
        a++;
    while (b > a && is_ws(t[b - 1]))
        b--;
    sp.start = a;
    sp.len = b - a;
    return sp;
}

static bool span_walk(const char *text, nf_span obj, nf_jspan_member_fn fn,
                      void *ctx)
{
    if (!text || obj.len < 2 || obj.len > SIZE_MAX - obj.start)
        return false;
    const uchar *t = (const uchar *)text, *p = t + obj.start,
                *end = p + obj.len;
    if (*p != '{')
        return false;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return true;
    for (;;) {
        if (p >= end || *p != '"')
            return false;
        const uchar *ne = span_skip_string(p, end);
        if (!ne)
            return false;
        nf_span name = {(size_t)(p + 1 - t), (size_t)(ne - p) - 2};
        p = skip_ws(ne, end);
        if (p >= end || *p != ':')
            return false;
        p = skip_ws(p + 1, end);
        const uchar *ve = span_skip_value(p, end);
        if (!ve)
            return false;
        nf_span val = {(size_t)(p - t), (size_t)(ve - p)};
        if (!fn(ctx, text, name, val))
            return true;
        p = skip_ws(ve, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        return p < end && *p == '}';
    }
}

bool nf_jspan_elements(const char *text, nf_span arr, nf_jspan_element_fn fn, void *ctx)
{
    if (!text || !fn || arr.len < 2 || arr.len > SIZE_MAX - arr.start)
        return false;
    const uchar *t = (const uchar *)text, *p = t + arr.start, *end = p + arr.len;
    if (*p != '[')
        return false;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']')
        return true;
    for (size_t i = 0;; i++) {
        const uchar *ve = span_skip_value(p, end);
        if (!ve)
            return false;
        if (!fn(ctx, text, i, (nf_span){(size_t)(p - t), (size_t)(ve - p)}))
            return true;
        p = skip_ws(ve, end);
        if (p < end && *p == ',') {
            p = skip_ws(p + 1, end);
            continue;
        }
        return p < end && *p == ']';
    }
}

bool nf_jspan_members(const char *text, nf_span obj, nf_jspan_member_fn fn,
                      void *ctx)
{
    if (!fn)
        return false;
    return span_walk(text, obj, fn, ctx);
}

struct nf_jspan_find {
    const uchar *name;
    size_t len;
    nf_span *out;
    bool found;
};

static bool raw_name_eq(const uchar *r, size_t rn, const uchar *name, size_t n)
{
    if (!memchr(r, '\\', rn))
        return rn == n && memcmp(r, name, n) == 0;
    size_t j = 0;
    uchar u[4];
    for (size_t i = 0; i < rn;) {
        size_t m = jdecode(r, rn, &i, u);
        if (m > n - j || memcmp(name + j, u, m) != 0)
            return false;
        j += m;
    }
    return j == n;
}

static bool find_cb(void *ctx, const char *text, nf_span raw_name, nf_span value)
{
    struct nf_jspan_find *f = ctx;
    if (!raw_name_eq((const uchar *)text + raw_name.start, raw_name.len, f->name,
                     f->len))
        return true;
    *f->out = value;
    f->found = true;
    return false;
}

bool nf_jspan_member(const char *text, nf_span obj, const char *name,
                     size_t name_len, nf_span *out)
{
    nf_span dummy;
    struct nf_jspan_find f = {(const uchar *)(name ? name : ""), name ? name_len : 0,
                              out ? out : &dummy, false};
    return span_walk(text, obj, find_cb, &f) && f.found;
}

size_t nf_junescape(const char *r, size_t n, char *out)
{
    const uchar *u = (const uchar *)r;
    uchar *o = (uchar *)out;
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (u[i] != '\\') {
            o[k++] = u[i++];
            continue;
        }
        k += jdecode(u, n, &i, o + k);
    }
    return k;
}
