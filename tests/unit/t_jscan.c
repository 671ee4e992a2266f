/* t_jscan.c — the strict JSON pre-pass (common/json/nf_jscan.h).
 *
 * Every scan runs over an exactly-sized heap copy of its text, never
 * NUL-terminated, so that AddressSanitizer catches any read past the end. */
#include "nf_jscan.h"
#include "nf_test.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */

typedef struct {
    bool ok;
    nf_diags d;
    nf_jscan_result r;
} scan_t;

static char *copy_exact(const char *s, size_t n)
{
    char *b = malloc(n ? n : 1);
    if (!b) {
        perror("malloc");
        exit(2);
    }
    if (n)
        memcpy(b, s, n);
    return b;
}

static void scan_n(scan_t *t, const char *s, size_t n, unsigned depth)
{
    char *b = copy_exact(s, n);
    memset(t, 0, sizeof *t);
    t->ok = nf_jscan(b, n, depth, &t->d, &t->r);
    free(b);
}

static void scan_done(scan_t *t)
{
    nf_jscan_result_free(&t->r);
    nf_diags_free(&t->d);
}

/* A printable label for texts that hold control or non-ASCII bytes. */
static const char *label(const char *s, size_t n)
{
    static char buf[4][96];
    static int k;
    char *o = buf[k++ & 3];
    size_t j = 0;
    for (size_t i = 0; i < n && j < 80; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F)
            o[j++] = (char)c;
        else
            j += (size_t)snprintf(o + j, 96 - j, "\\x%02X", c);
    }
    if (j >= 80)
        strcpy(o + 80, "...");
    else
        o[j] = 0;
    return o;
}

static void dump(const scan_t *t)
{
    for (size_t i = 0; i < t->d.n; i++)
        printf("#   record: %s: %s: %s\n", nf_code_name(t->d.v[i].code),
               t->d.v[i].pointer, t->d.v[i].message);
}

static void ok_n(const char *s, size_t n)
{
    scan_t t;
    scan_n(&t, s, n, 0);
    CHECK(t.ok && t.d.n == 0 && t.r.error_offset == SIZE_MAX, "valid: %s",
          label(s, n));
    if (!t.ok)
        dump(&t);
    scan_done(&t);
}

static void ok(const char *s)
{
    ok_n(s, strlen(s));
}

/* One fatal record with this code (and pointer, when given). */
static void bad_n(const char *s, size_t n, nf_code code, const char *ptr)
{
    scan_t t;
    scan_n(&t, s, n, 0);
    bool good = !t.ok && t.d.n == 1 && nf_diags_count(&t.d, code) == 1 &&
                t.r.error_offset != SIZE_MAX && t.r.error_offset <= n &&
                (!ptr || strcmp(t.d.v[0].pointer, ptr) == 0);
    CHECK(good, "%s: %s%s%s", nf_code_name(code), label(s, n), ptr ? " at " : "",
          ptr ? ptr : "");
    if (!good)
        dump(&t);
    scan_done(&t);
}

static void bad(const char *s, nf_code code)
{
    bad_n(s, strlen(s), code, NULL);
}

static void bad_ptr(const char *s, nf_code code, const char *ptr)
{
    bad_n(s, strlen(s), code, ptr);
}

/* Exact fatal message and offset. */
static void bad_msg(const char *s, nf_code code, size_t off, const char *msg)
{
    scan_t t;
    scan_n(&t, s, strlen(s), 0);
    CHECK(!t.ok && nf_diags_count(&t.d, code) == 1, "%s: %s", nf_code_name(code),
          label(s, strlen(s)));
    CHECK_EQ_U64(t.r.error_offset, off, "error offset of %s", label(s, strlen(s)));
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL, msg, "message for %s", label(s, strlen(s)));
    scan_done(&t);
}

/* A growable string for generated documents. */
typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (b->n + n + 1 > nc)
            nc *= 2;
        b->p = realloc(b->p, nc);
        if (!b->p) {
            perror("realloc");
            exit(2);
        }
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void sb_fmt(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    sb_put(b, tmp, (size_t)n);
}

static void sb_rep(sbuf *b, const char *s, size_t times)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < times; i++)
        sb_put(b, s, n);
}

/* ------------------------------------------------------------------------ */

static void test_valid(void)
{
    ok("{}");
    ok("[]");
    ok("0");
    ok("-0");
    ok("-0.0");
    ok("123");
    ok("-123");
    ok("1e3");
    ok("256.0");
    ok("1E-2");
    ok("-1.5E+10");
    ok("0e0");
    ok("1.25e-7");
    ok("\"\"");
    ok("\"str\"");
    ok("true");
    ok("false");
    ok("null");
    ok(" \t\n\r{\"a\":[1,2,{\"b\":null}]} \n\r\t");
    ok("[1,\"two\",true,false,null,{},[],-3.5e2,{\"k\":[[]]}]");
    ok("{\"\":1}");
    ok("{\"a\":1,\"b\":2,\"c\":{\"a\":1,\"b\":2}}");
    ok("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u00E9\\u20AC\"");
    ok("\"\\uD83D\\uDE00\"");
    ok("\"\\udbff\\udfff\"");
    ok("\"\\u0000\"");
    ok("\"\\uFFFF\\uE000\\uD7FF\"");
    ok("\"\xEF\xBB\xBF in a string is fine\"");
    ok("{ \"a\" : [ 1 , 2 ] , \"b\" : { } }");
    ok("[18446744073709551615, -18446744073709551616, 1e400, 0.1]");
    ok("\"a string with more than sixteen ordinary bytes, then a quote\"");
    ok("\"\x7F delete is not a control character\"");
    /* raw text without a final newline and with one */
    ok("{\"header\":{\"version\":1},\"objects\":[{\"id\":\"w\",\"offset\":0,"
       "\"bytes\":4096,\"shape\":[32,64],\"format\":\"f16\"}]}\n");
}

static void test_syntax(void)
{
    bad("", NF_C_JSON);
    bad("   \n\t ", NF_C_JSON);
    bad("\xEF\xBB\xBF{}", NF_C_JSON);
    bad("\xEF\xBB\xBF", NF_C_JSON);
    bad("NaN", NF_C_JSON);
    bad("Infinity", NF_C_JSON);
    bad("-Infinity", NF_C_JSON);
    bad_ptr("[NaN]", NF_C_JSON, "/0");
    bad_ptr("{\"a\":Infinity}", NF_C_JSON, "/a");
    bad("nan", NF_C_JSON);
    bad("{} x", NF_C_JSON);
    bad("1 2", NF_C_JSON);
    bad("[1]]", NF_C_JSON);
    bad("{\"a\":1}}", NF_C_JSON);
    bad("{}{}", NF_C_JSON);
    bad("0256", NF_C_JSON);
    bad("00", NF_C_JSON);
    bad("-01", NF_C_JSON);
    bad("[01]", NF_C_JSON);
    bad("-", NF_C_JSON);
    bad("[-]", NF_C_JSON);
    bad("--1", NF_C_JSON);
    bad("1.", NF_C_JSON);
    bad("1.e5", NF_C_JSON);
    bad("[1.]", NF_C_JSON);
    bad(".5", NF_C_JSON);
    bad("[.5]", NF_C_JSON);
    bad("+1", NF_C_JSON);
    bad("1e", NF_C_JSON);
    bad("1e+", NF_C_JSON);
    bad("1E-x", NF_C_JSON);
    bad("0x10", NF_C_JSON);
    bad("1_000", NF_C_JSON);
    bad("tru", NF_C_JSON);
    bad("nul", NF_C_JSON);
    bad("True", NF_C_JSON);
    bad("truex", NF_C_JSON);
    bad("[true false]", NF_C_JSON);
    bad("[", NF_C_JSON);
    bad("{", NF_C_JSON);
    bad("]", NF_C_JSON);
    bad("}", NF_C_JSON);
    bad("{\"a\":", NF_C_JSON);
    bad("{\"a\"", NF_C_JSON);
    bad("{\"a\" 1}", NF_C_JSON);
    bad("{a:1}", NF_C_JSON);
    bad("{'a':1}", NF_C_JSON);
    bad("'a'", NF_C_JSON);
    bad("[1,]", NF_C_JSON);
    bad("[,1]", NF_C_JSON);
    bad("{\"a\":1,}", NF_C_JSON);
    bad("{,}", NF_C_JSON);
    bad("[1 2]", NF_C_JSON);
    bad("{\"a\":1 \"b\":2}", NF_C_JSON);
    bad("{\"a\":1:2}", NF_C_JSON);
    bad("[1;2]", NF_C_JSON);
    bad("// comment\n{}", NF_C_JSON);
    bad("{} // comment", NF_C_JSON);
    bad("\"abc", NF_C_JSON);
    bad("\"abc\\", NF_C_JSON);
    bad("\"abc\\\"", NF_C_JSON);
    bad("\"a\x01" "b\"", NF_C_JSON);
    bad("\"a\nb\"", NF_C_JSON);
    bad("\"a\tb\"", NF_C_JSON);
    bad("\"\x1F\"", NF_C_JSON);
    bad_n("\"a\0b\"", 5, NF_C_JSON, "");
    bad_n("[1,\0]", 5, NF_C_JSON, "/1");
    bad_n("{}\0", 3, NF_C_JSON, "");
    bad("\"\\x\"", NF_C_JSON);
    bad("\"\\a\"", NF_C_JSON);
    bad("\"\\U0041\"", NF_C_JSON);
    bad("\"\\'\"", NF_C_JSON);
    bad("\"\\u12\"", NF_C_JSON);
    bad("\"\\u12G4\"", NF_C_JSON);
    bad("\"\\u\"", NF_C_JSON);
    bad("\"\\u004", NF_C_JSON);
    bad("\"\\uD800\\u12\"", NF_C_JSON);
    bad("\x01", NF_C_JSON);
    bad("\xC3\xA9", NF_C_JSON); /* valid UTF-8, but not a value */
    bad("{\"a\":1}\xC3\xA9", NF_C_JSON);

    /* pointers name where the scan was */
    bad_ptr("[1, 0256]", NF_C_JSON, "/1");
    bad_ptr("{\"a\":{\"b\":[0, 01]}}", NF_C_JSON, "/a/b/1");
    bad_ptr("{\"a\":{\"b\":1,}}", NF_C_JSON, "/a");
    bad_ptr("{\"a\":[1,]}", NF_C_JSON, "/a/1");
    bad_ptr("{\"a\":[1 2]}", NF_C_JSON, "/a/0");
    bad_ptr("{\"a\":\"x\ny\"}", NF_C_JSON, "/a");
    bad_ptr("{\"a\\u00e9b\":tru}", NF_C_JSON, "/a\xC3\xA9" "b");

    /* exact messages and offsets */
    bad_msg("[1, 0256]", NF_C_JSON, 4, "invalid number at byte 4: leading zero");
    bad_msg("{\"a\": 1.}", NF_C_JSON, 6, "invalid number at byte 6: no digit after '.'");
    bad_msg("[-]", NF_C_JSON, 1, "invalid number at byte 1: no digit after '-'");
    bad_msg("[+1]", NF_C_JSON, 1, "invalid number at byte 1: leading '+'");
    bad_msg("[.5]", NF_C_JSON, 1, "invalid number at byte 1: no digit before '.'");
    bad_msg("[1e]", NF_C_JSON, 1, "invalid number at byte 1: no digit in the exponent");
    bad_msg("  NaN", NF_C_JSON, 2, "invalid literal at byte 2: NaN is not json");
    bad_msg("[-Infinity]", NF_C_JSON, 1, "invalid literal at byte 1: -Infinity is not json");
    bad_msg("{} x", NF_C_JSON, 3, "garbage after the value at byte 3");
    bad_msg("", NF_C_JSON, 0, "empty input at byte 0: no json value");
    bad_msg("\xEF\xBB\xBF{}", NF_C_JSON, 0,
            "byte-order mark at byte 0 (json text must not start with one)");
    bad_msg("[\"ab\x01\"]", NF_C_JSON, 4, "control character 0x01 in string at byte 4");
    bad_msg("[\"ab\\q\"]", NF_C_JSON, 4, "invalid escape \\q in string at byte 4");
    bad_msg("[\"abc", NF_C_JSON, 1, "unterminated string starting at byte 1");
    bad_msg("[1,]", NF_C_JSON, 3, "unexpected ']' at byte 3, expected a value");
    bad_msg("[1", NF_C_JSON, 2, "unexpected end of input at byte 2, expected ',' or ']'");
    bad_msg("{\"a\" 1}", NF_C_JSON, 5, "unexpected '1' at byte 5, expected ':'");
}

static void test_not_terminated(void)
{
    /* prefixes of valid texts, scanned from exact-size copies */
    ok_n("123", 2);
    ok_n("[1]xxxx", 3);
    bad_n("\"abc\"", 4, NF_C_JSON, "");
    bad_n("true", 3, NF_C_JSON, "");
    bad_n("1.5", 2, NF_C_JSON, "");
    bad_n("1e5", 2, NF_C_JSON, "");
    bad_n("-1", 1, NF_C_JSON, "");
    bad_n("\"\\u0041\"", 6, NF_C_JSON, "");
    bad_n("\"\\uD83D\\uDE00\"", 9, NF_C_JSON, "");
    bad_n("\"\\uD83D\\uDE00\"", 7, NF_C_UTF8, "");
    bad_n("\"\\uD83D\\uDE00\"", 10, NF_C_JSON, "");
    bad_n("\"\\", 2, NF_C_JSON, "");
    bad_n("{\"a\":1}", 6, NF_C_JSON, "/a");
    bad_n("\xEF\xBB", 2, NF_C_UTF8, "");
    /* long strings exercise the wide loads close to the end */
    sbuf b = {0};
    for (size_t n = 0; n < 40; n++) {
        b.n = 0;
        sb_str(&b, "\"");
        sb_rep(&b, "x", n);
        sb_str(&b, "\"");
        scan_t t;
        scan_n(&t, b.p, b.n, 0);
        bool a = t.ok;
        scan_done(&t);
        scan_n(&t, b.p, b.n - 1, 0);
        bool c = !t.ok && nf_diags_count(&t.d, NF_C_JSON) == 1;
        scan_done(&t);
        /* a bad byte at each position of the last wide load */
        b.p[b.n - 2 < 1 ? 1 : b.n - 2] = '\x01';
        scan_n(&t, b.p, b.n, 0);
        bool e = n == 0 || (!t.ok && nf_diags_count(&t.d, NF_C_JSON) == 1);
        scan_done(&t);
        CHECK(a && c && e, "string of %zu plain bytes: whole ok, cut and corrupted fail", n);
    }
    free(b.p);
}

static void test_utf8(void)
{
    /* valid: 2, 3 and 4 bytes, the edges of each range */
    ok("\"\xC2\x80\"");
    ok("\"\xC3\xA9\"");
    ok("\"\xDF\xBF\"");
    ok("\"\xE0\xA0\x80\"");
    ok("\"\xE2\x82\xAC\"");
    ok("\"\xED\x9F\xBF\"");
    ok("\"\xEE\x80\x80\"");
    ok("\"\xEF\xBF\xBF\"");
    ok("\"\xF0\x90\x80\x80\"");
    ok("\"\xF0\x9F\x98\x80\"");
    ok("\"\xF4\x8F\xBF\xBF\"");
    ok("{\"\xE5\x90\x8D\xE5\x89\x8D\":\"\xE4\xB8\xAD\xE6\x96\x87\xE4\xB8\xAD\xE6\x96\x87"
       "\xE4\xB8\xAD\xE6\x96\x87\xE4\xB8\xAD\xE6\x96\x87\"}");

    /* overlongs */
    bad("\"\xC0\x80\"", NF_C_UTF8);
    bad("\"\xC1\xBF\"", NF_C_UTF8);
    bad("\"\xE0\x80\x80\"", NF_C_UTF8);
    bad("\"\xE0\x9F\xBF\"", NF_C_UTF8);
    bad("\"\xF0\x80\x80\x80\"", NF_C_UTF8);
    bad("\"\xF0\x8F\xBF\xBF\"", NF_C_UTF8);
    /* surrogates encoded in UTF-8 */
    bad("\"\xED\xA0\x80\"", NF_C_UTF8);
    bad("\"\xED\xBF\xBF\"", NF_C_UTF8);
    bad("\"\xED\xA0\xBD\xED\xB8\x80\"", NF_C_UTF8);
    /* above U+10FFFF */
    bad("\"\xF4\x90\x80\x80\"", NF_C_UTF8);
    bad("\"\xF5\x80\x80\x80\"", NF_C_UTF8);
    bad("\"\xF7\xBF\xBF\xBF\"", NF_C_UTF8);
    /* never valid */
    bad("\"\xF8\x88\x80\x80\x80\"", NF_C_UTF8);
    bad("\"\xFE\"", NF_C_UTF8);
    bad("\"\xFF\"", NF_C_UTF8);
    /* stray continuation bytes */
    bad("\"\x80\"", NF_C_UTF8);
    bad("\"a\xBF" "b\"", NF_C_UTF8);
    bad("\"\xC3\xA9\xA9\"", NF_C_UTF8);
    /* truncated, in the middle and at the end of the text */
    bad("\"\xC3\"", NF_C_UTF8);
    bad("\"\xE2\x82\"", NF_C_UTF8);
    bad("\"\xE2\x82" "A\"", NF_C_UTF8);
    bad("\"\xF0\x9F\x98\"", NF_C_UTF8);
    bad("\"\xC3", NF_C_UTF8);
    bad("\"\xE2\x82", NF_C_UTF8);
    bad("\"\xF0\x9F\x98", NF_C_UTF8);
    bad("\"\xF0", NF_C_UTF8);
    /* outside strings */
    bad("[\xFF]", NF_C_UTF8);
    bad("1\xC0", NF_C_UTF8);
    bad_ptr("{\"a\":[1,\x80]}", NF_C_UTF8, "/a/1");
    bad_ptr("{\"k\":\"ok\",\"b\":\"x\xED\xA0\x80\"}", NF_C_UTF8, "/b");
    /* in a member name */
    bad_ptr("{\"a\":{\"\xC0\xAF\":1}}", NF_C_UTF8, "/a");

    bad_msg("[\"ab\xC0\x80\"]", NF_C_UTF8, 4, "invalid utf-8 at byte 4: overlong encoding");
    bad_msg("\"\xED\xA0\x80\"", NF_C_UTF8, 1,
            "invalid utf-8 at byte 1: surrogate encoded in utf-8");
    bad_msg("\"\xF4\x90\x80\x80\"", NF_C_UTF8, 1,
            "invalid utf-8 at byte 1: code point above U+10FFFF");
    bad_msg("\"x\x80\"", NF_C_UTF8, 2, "invalid utf-8 at byte 2: unexpected continuation byte");
    bad_msg("\"\xE2\x82", NF_C_UTF8, 1,
            "invalid utf-8 at byte 1: truncated sequence at end of text");

    /* lone surrogate escapes */
    bad("\"\\uD800\"", NF_C_UTF8);
    bad("\"\\uDBFF\"", NF_C_UTF8);
    bad("\"\\udbff\"", NF_C_UTF8);
    bad("\"\\uDC00\"", NF_C_UTF8);
    bad("\"\\uDFFF\"", NF_C_UTF8);
    bad("\"\\uD800\\u0041\"", NF_C_UTF8);
    bad("\"\\uD800\\uD800\"", NF_C_UTF8);
    bad("\"\\uD800x\"", NF_C_UTF8);
    bad("\"\\uD800\\n\"", NF_C_UTF8);
    bad("\"\\uDE00\\uD83D\"", NF_C_UTF8);
    bad("\"\\uD83D\\uDE00\\uDE00\"", NF_C_UTF8);
    bad("\"\\uD800", NF_C_UTF8);
    bad_ptr("{\"a\":[\"\\uDC00\"]}", NF_C_UTF8, "/a/0");
    bad_ptr("{\"\\uD800\":1}", NF_C_UTF8, "");
    bad_msg("[\"ab\\uD800\"]", NF_C_UTF8, 4,
            "lone surrogate escape \\uD800 at byte 4 (high surrogate not followed by a low one)");
    bad_msg("[\"\\udc01\"]", NF_C_UTF8, 2,
            "lone surrogate escape \\uDC01 at byte 2 (low surrogate without a high one)");
    ok("[\"\\uD83D\\uDE00\", \"\\uD800\\uDC00\", \"\\uDBFF\\uDFFF\"]");
}

static void test_depth(void)
{
    sbuf b = {0};
    scan_t t;

    sb_rep(&b, "[", 64);
    sb_rep(&b, "]", 64);
    ok_n(b.p, b.n);

    b.n = 0;
    sb_rep(&b, "[", 65);
    sb_rep(&b, "]", 65);
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DEPTH) == 1,
          "65 nested arrays: depth");
    CHECK_EQ_U64(t.r.error_offset, 64, "depth error at the 65th '['");
    {
        sbuf want = {0};
        sb_rep(&want, "/0", 64);
        CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, want.p, "depth pointer of 65 arrays");
        free(want.p);
    }
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL, "nesting deeper than 64 at byte 64",
              "depth message");
    scan_done(&t);

    b.n = 0;
    sb_rep(&b, "{\"a\":", 63);
    sb_str(&b, "{}");
    sb_rep(&b, "}", 63);
    ok_n(b.p, b.n);

    b.n = 0;
    sb_rep(&b, "{\"a\":", 64);
    sb_str(&b, "1");
    sb_rep(&b, "}", 64);
    ok_n(b.p, b.n);

    b.n = 0;
    sb_rep(&b, "{\"a\":", 64);
    sb_str(&b, "{}");
    sb_rep(&b, "}", 64);
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DEPTH) == 1,
          "65 nested objects: depth");
    {
        sbuf want = {0};
        sb_rep(&want, "/a", 64);
        CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, want.p, "depth pointer of 65 objects");
        free(want.p);
    }
    scan_done(&t);

    /* mixed: 32 arrays holding 33 objects */
    b.n = 0;
    sb_rep(&b, "[{\"x\":", 32);
    sb_str(&b, "{\"y\":[]}");
    sb_rep(&b, "}]", 32);
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DEPTH) == 1, "65 mixed levels: depth");
    scan_done(&t);

    /* an explicit max_depth */
    scan_n(&t, "[[1]]", 5, 2);
    CHECK(t.ok, "max_depth 2 allows [[1]]");
    scan_done(&t);
    scan_n(&t, "[[[1]]]", 7, 2);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DEPTH) == 1 && t.r.error_offset == 2,
          "max_depth 2 refuses [[[1]]]");
    scan_done(&t);
    scan_n(&t, "1", 1, 1);
    CHECK(t.ok, "max_depth 1: a scalar root");
    scan_done(&t);
    scan_n(&t, "[]", 2, 1);
    CHECK(t.ok, "max_depth 1: [] is depth 1");
    scan_done(&t);

    /* above the inline stack: the stack grows on the heap */
    b.n = 0;
    sb_rep(&b, "[{\"k\":", 150);
    sb_str(&b, "18446744073709551616");
    sb_rep(&b, "}]", 150);
    scan_n(&t, b.p, b.n, 300);
    CHECK(t.ok && t.r.n_bigint == 1, "300 levels under max_depth 300");
    {
        sbuf want = {0};
        sb_rep(&want, "/0/k", 150);
        CHECK_STR(t.r.n_bigint ? t.r.bigint_ptrs[0] : NULL, want.p,
                  "bigint pointer 300 levels deep");
        free(want.p);
    }
    scan_done(&t);
    scan_n(&t, b.p, b.n, 299);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DEPTH) == 1, "300 levels over max_depth 299");
    scan_done(&t);

    /* hostile depth fails at once */
    b.n = 0;
    sb_rep(&b, "[", 100000);
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DEPTH) == 1 &&
          t.r.error_offset == 64, "100,000 '[' fail with depth at byte 64");
    scan_done(&t);
    b.n = 0;
    sb_rep(&b, "{\"\":", 100000);
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DEPTH) == 1 && t.r.error_offset == 64 * 4,
          "100,000 '{\"\":' fail with depth");
    scan_done(&t);

    /* and a legitimately deep text costs no recursion */
    b.n = 0;
    sb_rep(&b, "[", 1000000);
    sb_rep(&b, "]", 1000000);
    scan_n(&t, b.p, b.n, 2000000);
    CHECK(t.ok, "1,000,000 nested arrays under max_depth 2,000,000");
    scan_done(&t);
    b.n = 0;
    sb_rep(&b, "{\"a\":", 300000);
    sb_str(&b, "0");
    sb_rep(&b, "}", 300000);
    scan_n(&t, b.p, b.n, 300000);
    CHECK(t.ok, "300,000 nested objects under max_depth 300,000");
    scan_done(&t);
    free(b.p);
}

static void test_duplicates(void)
{
    scan_t t;

    scan_n(&t, "{\"a\":1,\"a\":2}", 13, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1,
          "plain duplicate");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/a", "duplicate pointer");
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL, "duplicate member \"a\"", "duplicate message");
    CHECK(t.r.error_offset == SIZE_MAX, "a duplicate is not fatal");
    scan_done(&t);

    const char *esc = "{\"offset\":1,\"off\\u0073et\":2}";
    scan_n(&t, esc, strlen(esc), 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1,
          "duplicate after unescaping");
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL,
              "duplicate member \"offset\" (written \"off\\u0073et\")",
              "escaped duplicate message");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/offset", "escaped duplicate pointer");
    scan_done(&t);

    const char *nested = "{\"objects\":[{\"id\":\"x\",\"offset\":0},{\"id\":\"y\"},{\"id\":\"z\"},"
                         "{\"id\":\"w\",\"offset\":1,\"bytes\":2,\"offset\":3}],\"id\":1}";
    scan_n(&t, nested, strlen(nested), 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1,
          "duplicate in a nested object");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/objects/3/offset", "nested duplicate pointer");
    scan_done(&t);

    ok("[{\"a\":1},{\"a\":2},{\"a\":{\"a\":{\"a\":3}}}]");
    ok("{\"a\":{\"b\":1},\"b\":2}");
    ok("{\"a\":{\"a\":1}}");
    ok("{\"a\":1,\"A\":2,\"a \":3,\" a\":4}");
    /* a member name holding U+0000 is schema, wherever it is (json-c, like
     * any reader of C strings, would cut "a\u0000b" to "a") */
    bad_ptr("{\"\\u0000\":1,\"\":2}", NF_C_SCHEMA, "/?");
    bad_ptr("{\"a\\u0000b\":1}", NF_C_SCHEMA, "/a?b");
    bad_ptr("{\"x\":[0,{\"y\":{\"hidden_size\\u0000x\":1}}]}", NF_C_SCHEMA,
            "/x/1/y/hidden_size?x");
    bad_ptr("{\"a\":{\"b\":2},\"c\\u0000\":3}", NF_C_SCHEMA, "/c?");
    bad_msg("{\"a\\u0000b\":1}", NF_C_SCHEMA, 1,
            "member name \"a\\u0000b\" at byte 1 holds U+0000, which no member name may hold");
    /* ... but not a name holding an escaped backslash before "u0000", nor a
     * string value holding U+0000 (values are compared with their length) */
    ok("{\"a\\\\u0000\":1,\"\\\\\\\\u0000\":2}");
    ok("{\"a\":\"x\\u0000y\",\"b\":[\"\\u0000\"]}");
    ok("{\"\\u00e9\":1,\"e\\u0301\":2}"); /* no normalisation */

    scan_n(&t, "{\"a\":1,\"b\":2,\"a\":3,\"b\":4}", 25, 0);
    CHECK(!t.ok && t.d.n == 2 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 2,
          "two duplicates, both reported");
    CHECK_STR(t.d.n > 1 ? t.d.v[1].pointer : NULL, "/b", "second duplicate pointer");
    scan_done(&t);

    scan_n(&t, "{\"a\":1,\"a\":2,\"a\":3}", 19, 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 2,
          "a name three times: two duplicates");
    scan_done(&t);

    scan_n(&t, "{\"a\":1,\"a\":2,}", 14, 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1 &&
          nf_diags_count(&t.d, NF_C_JSON) == 1 && t.r.error_offset == 13,
          "scan goes on after a duplicate and finds the syntax error");
    scan_done(&t);

    scan_n(&t, "[{\"a\":1,\"a\":2},{\"b\":1,\"b\":2}]", 29, 0);
    CHECK(!t.ok && t.d.n == 2 && t.d.n == 2 && strcmp(t.d.v[0].pointer, "/0/a") == 0 &&
          strcmp(t.d.v[1].pointer, "/1/b") == 0, "duplicates in sibling objects");
    scan_done(&t);

    const char *z = "{\"\\u0000\":1,\"\\u0000\":2}";
    scan_n(&t, z, strlen(z), 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_SCHEMA) == 1 &&
              t.r.error_offset == 1,
          "a U+0000 name stops the scan before its repeat");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/?", "U+0000 shown as nf_ptr_join does");
    scan_done(&t);

    const char *tilde = "{\"a/b\":{\"c~d\":{\"x\":1,\"x\":2}}}";
    scan_n(&t, tilde, strlen(tilde), 0);
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/a~1b/c~0d/x", "pointer escapes ~ and /");
    {
        char *a = nf_ptr_join("", "a/b", 3), *b2 = nf_ptr_join(a, "c~d", 3),
             *c = nf_ptr_join(b2, "x", 1);
        CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, c, "same pointer as nf_ptr_join");
        free(a);
        free(b2);
        free(c);
    }
    scan_done(&t);

    const char *slash = "{\"a/b\":1,\"a\\/b\":2}";
    scan_n(&t, slash, strlen(slash), 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1, "\\/ equals /");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/a~1b", "escaped slash pointer");
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL, "duplicate member \"a/b\" (written \"a\\/b\")",
              "escaped slash message");
    scan_done(&t);

    const char *quote = "{\"a\\\"b\":1,\"a\\\"b\":2}";
    scan_n(&t, quote, strlen(quote), 0);
    CHECK_STR(t.d.n ? t.d.v[0].message : NULL, "duplicate member \"a\\\"b\"",
              "quote in a duplicate name");
    scan_done(&t);

    const char *emoji = "{\"\\uD83D\\uDE00\":1,\"\xF0\x9F\x98\x80\":2}";
    scan_n(&t, emoji, strlen(emoji), 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1,
          "surrogate-pair escape equals its UTF-8");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/\xF0\x9F\x98\x80", "emoji pointer");
    scan_done(&t);

    const char *u = "{\"\\u00e9\":1,\"\xC3\xA9\":2,\"\\u00E9\":3}";
    scan_n(&t, u, strlen(u), 0);
    CHECK(!t.ok && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 2,
          "\\u00e9, UTF-8 e-acute and \\u00E9 are one name");
    scan_done(&t);

    ok("{\"\":{\"\":{\"\":1}}}");
    scan_n(&t, "{\"\":{\"\":1,\"\":2}}", 16, 0);
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "//", "empty names in a pointer");
    scan_done(&t);

    /* a long name is cut in the message, not in the pointer */
    {
        sbuf b = {0};
        sb_str(&b, "{\"");
        sb_rep(&b, "n", 500);
        sb_str(&b, "\":1,\"");
        sb_rep(&b, "n", 500);
        sb_str(&b, "\":2}");
        scan_n(&t, b.p, b.n, 0);
        CHECK(t.d.n == 1 && strlen(t.d.v[0].pointer) == 501 &&
              strlen(t.d.v[0].message) < 300 && strstr(t.d.v[0].message, "...\""),
              "500-byte duplicate name: full pointer, shortened message");
        scan_done(&t);
        free(b.p);
    }
}

/* Small objects compare names linearly, bigger ones move into the hash
 * table: duplicates must be found on both sides of the switch. */
static void test_name_modes(void)
{
    sbuf b = {0};
    scan_t t;
    int fails = 0;

    for (int n = 1; n <= 20; n++) {
        for (int dup = -1; dup < n; dup++) {
            b.n = 0;
            sb_str(&b, "{");
            for (int i = 0; i < n; i++)
                sb_fmt(&b, "%s\"name_%d_long_enough\":%d", i ? "," : "", i, i);
            if (dup >= 0)
                sb_fmt(&b, ",\"name_%d_long_\\u0065nough\":0", dup);
            sb_str(&b, ",\"tail\":{\"name_0_long_enough\":1}}");
            scan_n(&t, b.p, b.n, 0);
            bool good = dup < 0 ? t.ok && t.d.n == 0
                                : !t.ok && t.d.n == 1 &&
                                      nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1;
            if (!good) {
                fails++;
                printf("# n %d dup %d\n", n, dup);
                dump(&t);
            }
            scan_done(&t);
        }
    }
    CHECK(fails == 0, "objects of 1..20 members, a duplicate of each member");

    ok("{\"abcdefgh1\":1,\"abcdefgh2\":2,\"abcdefgh\":3,\"abcdefg\":4,"
       "\"abcdefg\\u0001\":5,\"abcdefgh\\u0001\":6}");
    {
        const char *lp = "{\"abcdefghijk\":1,\"abcdefghijk\":2}";
        scan_n(&t, lp, strlen(lp), 0);
    }
    CHECK(!t.ok && t.d.n == 1 && strcmp(t.d.v[0].pointer, "/abcdefghijk") == 0,
          "duplicate name longer than the compared prefix");
    scan_done(&t);

    /* outer hashed, inner grows the table, outer goes on */
    b.n = 0;
    sb_str(&b, "{");
    for (int i = 0; i < 10; i++)
        sb_fmt(&b, "\"o%d\":%d,", i, i);
    sb_str(&b, "\"mid\":{");
    for (int i = 0; i < 12; i++)
        sb_fmt(&b, "\"m%d\":%d,", i, i);
    sb_str(&b, "\"in\":{");
    for (int i = 0; i < 3000; i++)
        sb_fmt(&b, "%s\"o%d\":%d", i ? "," : "", i, i);
    sb_str(&b, "},\"o1\":0,\"m12\":0,\"m3\":0},\"m3\":0,\"o10\":0,\"o3\":0,\"in\":0}");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 2 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 2,
          "three hashed levels across a rehash: exactly the two duplicates");
    CHECK(t.d.n == 2 && strcmp(t.d.v[0].pointer, "/mid/m3") == 0 &&
          strcmp(t.d.v[1].pointer, "/o3") == 0, "their pointers");
    scan_done(&t);

    /* many medium objects switching into the table and out again */
    b.n = 0;
    sb_str(&b, "[");
    for (int o = 0; o < 2000; o++) {
        sb_str(&b, o ? ",{" : "{");
        for (int i = 0; i < 9 + o % 5; i++)
            sb_fmt(&b, "%s\"f%d\":{\"f%d\":0,\"g\":[{\"f%d\":1}]}", i ? "," : "", i, i, i);
        sb_str(&b, "}");
    }
    sb_str(&b, ",{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
               "\"i\":9,\"e\":0}]");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && strcmp(t.d.v[0].pointer, "/2000/e") == 0,
          "2000 objects in and out of the table, then one duplicate");
    scan_done(&t);
    free(b.p);
}

/* Random nested objects against a brute-force count: every object keeps
 * its names (the same few dozen across levels, so enclosing objects share
 * names with inner ones), sizes cross the linear/table switch, inner
 * objects big enough to clear the table by a sweep or a rebuild close while
 * enclosing ones stay in it, and small ones delete name by name. Each
 * duplicate must be found at its pointer, in text order, and no other. */
typedef struct {
    sbuf text;
    sbuf want; /* expected pointers, one per line */
    uint64_t rng;
    size_t budget; /* members left to write */
} rnd_doc;

static unsigned rnd(rnd_doc *r, unsigned n)
{
    r->rng = r->rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((r->rng >> 33) % n);
}

static void rnd_object(rnd_doc *r, const char *ptr, unsigned depth)
{
    /* size: mostly small, some past the linear switch, a few big */
    unsigned k = rnd(r, 10), n = k < 5 ? rnd(r, 8) : k < 9 ? 8 + rnd(r, 40) : 200 + rnd(r, 2000);
    if (n > r->budget)
        n = (unsigned)r->budget;
    r->budget -= n;
    unsigned pool = n < 8 ? 12 : n * 10; /* some repeats */
    char **seen = calloc(n ? n : 1, sizeof *seen);
    sb_str(&r->text, "{");
    for (unsigned i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%u", rnd(r, pool));
        bool dup = false;
        for (unsigned j = 0; j < i && !dup; j++)
            dup = !strcmp(seen[j], name);
        seen[i] = strdup(name);
        sb_fmt(&r->text, "%s\"%s\":", i ? "," : "", name);
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", ptr, name);
        if (dup) {
            sb_str(&r->want, child);
            sb_str(&r->want, "\n");
        }
        if (depth < 4 && r->budget && rnd(r, 6) == 0)
            rnd_object(r, child, depth + 1);
        else
            sb_str(&r->text, "0");
    }
    /* a big object then repeats every third name it had: each is found
     * after its inner objects came and went through the table */
    for (unsigned i = 0; n >= 200 && i < n; i += 3) {
        sb_fmt(&r->text, ",\"%s\":1", seen[i]);
        char child[4096];
        snprintf(child, sizeof child, "%s/%s", ptr, seen[i]);
        sb_str(&r->want, child);
        sb_str(&r->want, "\n");
    }
    sb_str(&r->text, "}");
    for (unsigned i = 0; i < n; i++)
        free(seen[i]);
    free(seen);
}

static void test_random_duplicates(void)
{
    int fails = 0;
    for (unsigned seed = 1; seed <= 60; seed++) {
        rnd_doc r = {{0}, {0}, seed, 20000};
        sb_str(&r.want, "");
        rnd_object(&r, "", 0);
        scan_t t;
        scan_n(&t, r.text.p, r.text.n, 0);
        sbuf got = {0};
        sb_str(&got, "");
        for (size_t i = 0; i < t.d.n; i++) {
            if (t.d.v[i].code != NF_C_DUPLICATE_MEMBER)
                sb_str(&got, "(other)");
            sb_str(&got, t.d.v[i].pointer);
            sb_str(&got, "\n");
        }
        /* the records are capped (1000): the first ones stored, the rest counted */
        size_t lines = 0, cut = 0;
        for (size_t i = 0; i < r.want.n; i++)
            if (r.want.p[i] == '\n' && ++lines == t.d.n)
                cut = i + 1;
        size_t total = 0;
        for (size_t i = 0; i < r.want.n; i++)
            total += r.want.p[i] == '\n';
        if (t.d.n < total)
            r.want.p[cut] = 0;
        if (strcmp(got.p, r.want.p) != 0 || t.d.n + t.d.dropped != total) {
            fails++;
            printf("# seed %u: %zu bytes, want\n%s# got\n%s", seed, r.text.n, r.want.p, got.p);
        }
        scan_done(&t);
        free(got.p);
        free(r.text.p);
        free(r.want.p);
    }
    CHECK(fails == 0, "60 random nested documents: every duplicate at its pointer, no other");
    /* the table grows (64 -> 128 slots) while an inner object's names are
     * in it (31 outer + 14 inner), the inner object leaves name by name, the outer one repeats every name: the deletions
     * must keep the outer names' probe chains whole (the table's hash key
     * is random per scan, so each try places the names anew) */
    fails = 0;
    sbuf b = {0};
    sb_str(&b, "{");
    for (int i = 0; i < 30; i++)
        sb_fmt(&b, "\"o%d\":0,", i);
    sb_str(&b, "\"in\":{");
    for (int i = 0; i < 14; i++)
        sb_fmt(&b, "%s\"i%d\":0", i ? "," : "", i);
    sb_str(&b, "}");
    for (int i = 0; i < 30; i++)
        sb_fmt(&b, ",\"o%d\":1", i);
    sb_str(&b, "}");
    for (int rep = 0; rep < 300; rep++) {
        scan_t t;
        scan_n(&t, b.p, b.n, 0);
        bool ok = t.d.n == 30;
        for (size_t i = 0; ok && i < 30; i++) {
            char want[16];
            snprintf(want, sizeof want, "/o%zu", i);
            ok = !strcmp(t.d.v[i].pointer, want);
        }
        fails += !ok;
        scan_done(&t);
    }
    free(b.p);
    CHECK(fails == 0, "300 scans: 30 repeated names after an inner object grew the table and left");
}

/* Many names: the shared table grows, rehashes and pops back exactly. */
static void test_many_names(void)
{
    sbuf b = {0};
    scan_t t;

    sb_str(&b, "{\"o0\":1,\"in\":{");
    for (int i = 0; i < 5000; i++)
        sb_fmt(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
    sb_str(&b, "},\"k5\":1,\"o1\":2,\"in2\":{\"k5\":0,\"o0\":0},\"o0\":3}");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 1,
          "outer duplicate found after an inner object grew the table");
    CHECK_STR(t.d.n ? t.d.v[0].pointer : NULL, "/o0", "its pointer");
    scan_done(&t);

    b.n = 0;
    sb_str(&b, "[");
    for (int o = 0; o < 50; o++) {
        sb_str(&b, o ? ",{" : "{");
        for (int i = 0; i < 1000; i++)
            sb_fmt(&b, "%s\"name%d\":{\"name%d\":%d}", i ? "," : "", i, i, o);
        sb_str(&b, "}");
    }
    sb_str(&b, "]");
    ok_n(b.p, b.n);

    b.n = 0;
    sb_str(&b, "{");
    for (int i = 0; i < 100000; i++)
        sb_fmt(&b, "%s\"k%d\":%d", i ? "," : "", i, i);
    sb_str(&b, ",\"k99999\":0,\"k0\":0,\"k\\u0035\":0}");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 3 && nf_diags_count(&t.d, NF_C_DUPLICATE_MEMBER) == 3,
          "100,000 members, three duplicates at the end");
    CHECK_STR(t.d.n == 3 ? t.d.v[2].pointer : NULL, "/k5", "escaped late duplicate");
    scan_done(&t);

    /* names with a long common prefix, escaped and not */
    b.n = 0;
    sb_str(&b, "{");
    for (int i = 0; i < 20000; i++) {
        sb_str(&b, i ? ",\"" : "\"");
        sb_rep(&b, i & 1 ? "\\u0061" : "a", 64);
        sb_fmt(&b, "%d\":0", i);
    }
    sb_str(&b, "}");
    ok_n(b.p, b.n);

    /* a flood of duplicates: every one counted, records capped */
    b.n = 0;
    sb_str(&b, "{\"a\":0");
    sb_rep(&b, ",\"a\":0", 1000000);
    sb_str(&b, "}");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1000 && t.d.dropped == 999000 && t.r.error_offset == SIZE_MAX,
          "1,000,000 duplicates: 1000 stored, the rest counted as dropped");
    scan_done(&t);

    /* a caller's limit */
    b.n = 0;
    sb_str(&b, "{\"a\":0");
    sb_rep(&b, ",\"a\":0", 100);
    sb_str(&b, "}");
    memset(&t, 0, sizeof t);
    t.d.limit = 5;
    {
        char *c = copy_exact(b.p, b.n);
        t.ok = nf_jscan(c, b.n, 0, &t.d, &t.r);
        free(c);
    }
    CHECK(!t.ok && t.d.n == 5 && t.d.dropped == 95, "diags limit 5: 5 stored, 95 dropped");
    scan_done(&t);
    free(b.p);
}

static void test_bigint(void)
{
    scan_t t;
    const char *s;

    s = "{\"a\":18446744073709551616}";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.d.n == 0, "a big integer is valid json");
    CHECK_EQ_U64(t.r.n_bigint, 1, "one big integer");
    CHECK_STR(t.r.n_bigint ? t.r.bigint_ptrs[0] : NULL, "/a", "its pointer");
    CHECK(nf_jscan_is_bigint(&t.r, "/a"), "nf_jscan_is_bigint finds /a");
    CHECK(!nf_jscan_is_bigint(&t.r, "/b") && !nf_jscan_is_bigint(&t.r, ""),
          "nf_jscan_is_bigint rejects others");
    scan_done(&t);

    s = "{\"a\":18446744073709551615}";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.r.n_bigint == 0 && !nf_jscan_is_bigint(&t.r, "/a"),
          "2^64-1 is not recorded");
    scan_done(&t);

    s = "{\"x\":[1,2,99999999999999999999999],\"y\":18446744073709551617}";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.r.n_bigint == 2, "two big integers");
    CHECK_STR(t.r.n_bigint > 0 ? t.r.bigint_ptrs[0] : NULL, "/x/2", "in an array");
    CHECK_STR(t.r.n_bigint > 1 ? t.r.bigint_ptrs[1] : NULL, "/y", "in text order");
    scan_done(&t);

    s = "[-18446744073709551616, 18446744073709551616.0, 18446744073709551616e0, "
        "1e30, 10000000000000000000, 9999999999999999999, 0, -0, 18446744073709551615]";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.r.n_bigint == 0, "negatives, fractions, exponents and U64 are not recorded");
    scan_done(&t);

    s = "[18446744073709551616, 100000000000000000000, 28446744073709551615, "
        "18446744073709551620, 99999999999999999999]";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.r.n_bigint == 5, "20 and 21 digit integers above 2^64-1");
    CHECK_STR(t.r.n_bigint > 4 ? t.r.bigint_ptrs[4] : NULL, "/4", "the fifth");
    scan_done(&t);

    scan_n(&t, "18446744073709551616", 20, 0);
    CHECK(t.ok && t.r.n_bigint == 1 && strcmp(t.r.bigint_ptrs[0], "") == 0,
          "a big root integer has pointer \"\"");
    scan_done(&t);

    s = "{\"a~b\":{\"c/d\":18446744073709551617,"
        "\"o\\u0066f\":[{\"\":1e99999}, 123456789012345678901234567890]}}";
    scan_n(&t, s, strlen(s), 0);
    CHECK(t.ok && t.r.n_bigint == 2, "big integers under escaped names");
    CHECK_STR(t.r.n_bigint > 0 ? t.r.bigint_ptrs[0] : NULL, "/a~0b/c~1d", "~0 and ~1");
    CHECK_STR(t.r.n_bigint > 1 ? t.r.bigint_ptrs[1] : NULL, "/a~0b/off/1", "unescaped name");
    scan_done(&t);

    /* a failing scan still leaves a result that frees cleanly */
    s = "[18446744073709551616, 01]";
    scan_n(&t, s, strlen(s), 0);
    CHECK(!t.ok && t.r.n_bigint == 1 && t.r.error_offset == 23,
          "big integer before a syntax error");
    scan_done(&t);

    CHECK(!nf_jscan_is_bigint(NULL, "/a"), "nf_jscan_is_bigint(NULL)");
    nf_jscan_result_free(NULL);
    CHECK(1, "nf_jscan_result_free(NULL)");

    /* no result: nothing is recorded and nothing leaks */
    nf_diags d = NF_DIAGS_INIT;
    CHECK(nf_jscan("[18446744073709551616]", 22, 0, &d, NULL) && d.n == 0,
          "res NULL is fine");
    nf_diags_free(&d);
    CHECK(!nf_jscan("[1,]", 4, 0, NULL, NULL), "d NULL: still false on bad text");
    CHECK(!nf_jscan("{\"a\":1,\"a\":1}", 13, 0, NULL, NULL), "d NULL: duplicate still false");
    CHECK(!nf_jscan(NULL, 0, 0, NULL, NULL), "NULL text is empty input");

    /* pointer strings are bounded: a 1 MiB name over many big integers */
    sbuf b = {0};
    sb_str(&b, "{\"");
    sb_rep(&b, "k", 1 << 20);
    sb_str(&b, "\":[0");
    sb_rep(&b, ",18446744073709551616", 100);
    sb_str(&b, "]}");
    scan_n(&t, b.p, b.n, 0);
    CHECK(!t.ok && t.d.n == 1 && nf_diags_count(&t.d, NF_C_RANGE) == 1 && t.r.n_bigint < 100,
          "too many long big-integer pointers: range, memory bounded");
    scan_done(&t);
    b.n = 0;
    sb_str(&b, "{\"");
    sb_rep(&b, "k", 1 << 20);
    sb_str(&b, "\":{\"a\":0");
    sb_rep(&b, ",\"a\":0", 100);
    sb_str(&b, "}}");
    scan_n(&t, b.p, b.n, 0);
    /* nf_diag keeps at most 4 KiB of a pointer (ending in "..."): the first
     * record holds a cut pointer, later ones none once the scanner's cap is hit */
    CHECK(!t.ok && t.d.n == 100 && strlen(t.d.v[0].pointer) <= 4096 &&
          strlen(t.d.v[0].pointer) > 4000 && strcmp(t.d.v[99].pointer, "") == 0,
          "many duplicates under a 1 MiB name: pointers cut, later ones lost");
    scan_done(&t);
    free(b.p);
}

/* ------------------------------------------------------------------------ */

static bool span_is(const char *text, nf_span sp, const char *want)
{
    return sp.len == strlen(want) && memcmp(text + sp.start, want, sp.len) == 0;
}

struct collect {
    sbuf out;
    int stop_after, calls;
};

static bool collect_cb(void *ctx, const char *text, nf_span raw_name, nf_span value)
{
    struct collect *c = ctx;
    sb_put(&c->out, text + raw_name.start, raw_name.len);
    sb_str(&c->out, "=");
    sb_put(&c->out, text + value.start, value.len);
    sb_str(&c->out, ";");
    return ++c->calls != c->stop_after;
}

/* Every proper prefix of a valid text is `truncated` (the header's length
 * can be blamed), and nothing else is; value_end says where the root
 * value ended when garbage follows it. */
static void test_truncated(void)
{
    const char *doc = "{\"a\\u00e9\": [-1.5e+3, 0, true, false, null, \"x\\\"\\ud83d\\ude00\xC3\xA9"
                      "\xF0\x9F\x98\x80\"], \"b\" : {\"c\":[[]],\"d\":12}}";
    size_t n = strlen(doc);
    size_t bad = 0;
    for (size_t k = 1; k < n; k++) {
        scan_t t;
        scan_n(&t, doc, k, 0);
        if (t.ok || !t.r.truncated || t.r.value_end != SIZE_MAX) {
            bad++;
            printf("# prefix of %zu bytes: ok %d truncated %d\n", k, t.ok, t.r.truncated);
            dump(&t);
        }
        scan_done(&t);
    }
    CHECK(bad == 0, "every one of the %zu proper prefixes is truncated", n - 1);
    scan_t t;
    scan_n(&t, doc, n, 0);
    CHECK(t.ok && !t.r.truncated && t.r.value_end == n, "the whole text: value_end is its end");
    scan_done(&t);
    static const char *const not_cut[] = {"{\"a\":x}", "{\"a\":1,}", "[1 2]", "{\"a\":01}",
                                          "[\"\\q\"]", "[\"\x01\"]", "[\xff]", "{\"\\u0000\":1}",
                                          "[\"\\ud800x\"]", "[nul ]", "[-x]"};
    bad = 0;
    for (size_t i = 0; i < sizeof not_cut / sizeof *not_cut; i++) {
        scan_n(&t, not_cut[i], strlen(not_cut[i]), 0);
        bad += t.ok || t.r.truncated;
        scan_done(&t);
    }
    CHECK(bad == 0, "other errors are not truncation");
    scan_n(&t, "{\"a\":1}  \0\0", 11, 0);
    CHECK(!t.ok && !t.r.truncated && t.r.value_end == 7 && t.r.error_offset == 9,
          "zero bytes after the value: value_end 7, the garbage at 9");
    scan_done(&t);
}

static bool element_cb(void *ctx, const char *text, size_t i, nf_span value)
{
    struct collect *c = ctx;
    char num[24];
    snprintf(num, sizeof num, "%zu=", i);
    sb_str(&c->out, num);
    sb_put(&c->out, text + value.start, value.len);
    sb_str(&c->out, ";");
    return ++c->calls != c->stop_after;
}

static void test_elements(void)
{
    const char *a = " [1, -2.5e3 ,\"x,]\\\"\" ,{\"k\":[1,2]},[],null, 100000000000000000000] ";
    size_t n = strlen(a);
    char *t = copy_exact(a, n);
    nf_span root = nf_jspan_root(t, n);
    struct collect c = {{0}, 0, 0};
    CHECK(nf_jspan_elements(t, root, element_cb, &c), "elements iteration");
    CHECK_STR(c.out.p,
              "0=1;1=-2.5e3;2=\"x,]\\\"\";3={\"k\":[1,2]};4=[];5=null;6=100000000000000000000;",
              "elements in order, each value's span");
    free(c.out.p);
    struct collect c2 = {{0}, 2, 0};
    CHECK(nf_jspan_elements(t, root, element_cb, &c2) && c2.calls == 2,
          "element iteration stops when the callback says so");
    free(c2.out.p);
    free(t);
    const char *e = "[ ]";
    t = copy_exact(e, 3);
    struct collect c3 = {{0}, 0, 0};
    CHECK(nf_jspan_elements(t, nf_jspan_root(t, 3), element_cb, &c3) && c3.calls == 0,
          "an empty array has no elements");
    free(t);
    const char *o = "{\"a\":1}";
    t = copy_exact(o, strlen(o));
    CHECK(!nf_jspan_elements(t, nf_jspan_root(t, strlen(o)), element_cb, &c3),
          "an object is not an array");
    free(t);
}

static void test_spans(void)
{
    const char *w = "  \n{\"a\":1}\t\r\n ";
    char *t = copy_exact(w, strlen(w));
    nf_span root = nf_jspan_root(t, strlen(w));
    CHECK(root.start == 3 && root.len == 7, "root span drops whitespace");
    free(t);

    t = copy_exact("   ", 3);
    root = nf_jspan_root(t, 3);
    CHECK(root.len == 0, "root span of blank text is empty");
    free(t);
    root = nf_jspan_root(NULL, 0);
    CHECK(root.len == 0, "root span of NULL");

    const char *doc =
        " {\"a\": 1, \"b\" : [1, {\"c\":\"}]\\\"\"}], \"off\\u0073et\":\"x\","
        " \"d\":{\"e\":true, \"f\":{\"g\":-1.5e3}}, \"\\uD83D\\uDE00\":5,"
        " \"n\\u0001m\":6, \"n\":7, \"s\":\"a\\\\\", \"t\":null} ";
    size_t n = strlen(doc);
    t = copy_exact(doc, n);
    {
        scan_t s;
        scan_n(&s, doc, n, 0);
        CHECK(s.ok, "span document is accepted");
        scan_done(&s);
    }
    root = nf_jspan_root(t, n);
    CHECK(root.start == 1 && root.len == n - 2, "root span of the span document");
    nf_span v;
    CHECK(nf_jspan_member(t, root, "a", 1, &v) && span_is(t, v, "1"), "member a");
    CHECK(nf_jspan_member(t, root, "b", 1, &v) && span_is(t, v, "[1, {\"c\":\"}]\\\"\"}]"),
          "member b: brackets inside strings");
    CHECK(nf_jspan_member(t, root, "offset", 6, &v) && span_is(t, v, "\"x\""),
          "member found by its unescaped name");
    CHECK(!nf_jspan_member(t, root, "off\\u0073et", 11, &v), "raw spelling does not match");
    CHECK(!nf_jspan_member(t, root, "zz", 2, &v), "missing member");
    CHECK(!nf_jspan_member(t, root, "", 0, &v), "missing empty name");
    CHECK(nf_jspan_member(t, root, "\xF0\x9F\x98\x80", 4, &v) && span_is(t, v, "5"),
          "surrogate pair name matches UTF-8");
    CHECK(nf_jspan_member(t, root, "n\001m", 3, &v) && span_is(t, v, "6"), "name with U+0001");
    CHECK(nf_jspan_member(t, root, "n", 1, &v) && span_is(t, v, "7"),
          "\"n\" is not \"n\\u0001m\"");
    CHECK(nf_jspan_member(t, root, "s", 1, &v) && span_is(t, v, "\"a\\\\\""),
          "string ending in an escaped backslash");
    CHECK(nf_jspan_member(t, root, "t", 1, &v) && span_is(t, v, "null"), "last member");
    nf_span d, f;
    CHECK(nf_jspan_member(t, root, "d", 1, &d) && nf_jspan_member(t, d, "e", 1, &v) &&
          span_is(t, v, "true"), "nested lookup d/e");
    CHECK(nf_jspan_member(t, d, "f", 1, &f) && nf_jspan_member(t, f, "g", 1, &v) &&
          span_is(t, v, "-1.5e3"), "nested lookup d/f/g");
    CHECK(!nf_jspan_member(t, d, "a", 1, &v), "lookup stays inside its object");
    CHECK(nf_jspan_member(t, root, "b", 1, &v) && !nf_jspan_member(t, v, "c", 1, &f),
          "an array is not an object");
    CHECK(nf_jspan_member(t, root, "a", 1, &v) && !nf_jspan_member(t, v, "a", 1, &f),
          "a number is not an object");

    struct collect c = {{0}, 0, 0};
    CHECK(nf_jspan_members(t, root, collect_cb, &c), "members iteration");
    CHECK_STR(c.out.p,
              "a=1;b=[1, {\"c\":\"}]\\\"\"}];off\\u0073et=\"x\";"
              "d={\"e\":true, \"f\":{\"g\":-1.5e3}};"
              "\\uD83D\\uDE00=5;n\\u0001m=6;n=7;s=\"a\\\\\";t=null;",
              "members in text order, raw names");
    free(c.out.p);

    struct collect c2 = {{0}, 2, 0};
    CHECK(nf_jspan_members(t, root, collect_cb, &c2) && c2.calls == 2,
          "iteration stops when the callback says so");
    free(c2.out.p);

    struct collect c3 = {{0}, 0, 0};
    CHECK(nf_jspan_member(t, root, "b", 1, &v) && !nf_jspan_members(t, v, collect_cb, &c3) &&
          c3.calls == 0, "members of an array: false");
    free(c3.out.p);

    /* a span cut short never reads past it */
    nf_span cut = {root.start, 20};
    struct collect c4 = {{0}, 0, 0};
    CHECK(!nf_jspan_members(t, cut, collect_cb, &c4), "cut span: false");
    free(c4.out.p);
    CHECK(!nf_jspan_member(t, cut, "zz", 2, &v), "cut span: lookup false");
    nf_span past = {n - 1, SIZE_MAX};
    CHECK(!nf_jspan_member(t, past, "a", 1, &v), "span overflowing size_t: false");
    free(t);

    t = copy_exact("{}", 2);
    struct collect c5 = {{0}, 0, 0};
    CHECK(nf_jspan_members(t, (nf_span){0, 2}, collect_cb, &c5) && c5.calls == 0,
          "empty object: no calls");
    free(c5.out.p);
    CHECK(!nf_jspan_member(t, (nf_span){0, 2}, "a", 1, &v), "empty object: no member");
    free(t);

    /* exactly-sized text ending with the object */
    const char *tight = "{\"k\":[1,2],\"z\":\"q\"}";
    t = copy_exact(tight, strlen(tight));
    root = nf_jspan_root(t, strlen(tight));
    CHECK(nf_jspan_member(t, root, "z", 1, &v) && span_is(t, v, "\"q\""),
          "lookup in an exactly-sized buffer");
    CHECK(nf_jspan_member(t, root, "k", 1, &v) && span_is(t, v, "[1,2]"), "array value span");
    free(t);
}

/* ------------------------------------------------------------------------ */

static void test_big_document(void)
{
    sbuf b = {0};
    sb_str(&b, "{");
    for (int i = 0; i < 500000; i++)
        sb_fmt(&b,
               "%s\n  \"blk.%d.attn_q.weight\": {\"offset\": %lld, \"bytes\": 8388608, "
               "\"format\": \"f16\", \"shape\": [4096, 1024], \"note\": \"ok\"}",
               i ? "," : "", i, (long long)i * 8388608);
    sb_str(&b, "\n}\n");
    scan_t t;
    scan_n(&t, b.p, b.n, 0);
    CHECK(t.ok && t.d.n == 0 && t.r.n_bigint == 0, "a %zu MB object with 500,000 members",
          b.n >> 20);
    scan_done(&t);
    free(b.p);
}

int main(void)
{
    test_valid();
    test_syntax();
    test_not_terminated();
    test_utf8();
    test_depth();
    test_duplicates();
    test_random_duplicates();
    test_name_modes();
    test_many_names();
    test_bigint();
    test_spans();
    test_elements();
    test_truncated();
    test_big_document();
    return nf_test_done();
}
