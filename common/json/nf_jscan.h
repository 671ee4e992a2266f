/* nf_jscan.h — one strict pass over JSON text before any tree is built.
 *
 * json-c accepts more than RFC 8259 (NaN, comments in some modes), keeps the
 * last of duplicate member names silently and saturates integers outside
 * int64/uint64. This scanner runs first, in time linear in the text and
 * memory a small multiple of it, and enforces ninfer(5) JSON rules:
 *   - RFC 8259 syntax exactly: one value, optional surrounding whitespace
 *     (space, tab, LF, CR), no byte-order mark, no trailing bytes, literals
 *     true/false/null only, numbers  -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?,
 *     no raw control characters (< 0x20) inside strings, escapes \" \\ \/ \b
 *     \f \n \r \t \uXXXX only;                                  -> NF_C_JSON
 *   - valid UTF-8 everywhere (no overlongs, no surrogates encoded in UTF-8,
 *     nothing above U+10FFFF), and \u escapes that form valid scalars (a
 *     high surrogate escape must be followed by a low one and a low one never
 *     stands alone);                                            -> NF_C_UTF8
 *   - nesting depth (arrays + objects) at most max_depth (the root value's
 *     container is depth 1);                                    -> NF_C_DEPTH
 *   - member names unique within each object, compared after unescaping
 *     ("off\u0073et" equals "offset");              -> NF_C_DUPLICATE_MEMBER
 *   - no member name holds U+0000 ("a\u0000b"): json-c keys, like every C
 *     string, would end there, so that a reader of the open members saw
 *     "hidden_size\u0000x" as "hidden_size" (ninfer(5))   -> NF_C_SCHEMA
 * and records the JSON Pointers of integer literals (no fraction, no
 * exponent) whose value is above 2^64-1, so that U64 fields can be reported
 * as `range` although json-c saturates them.
 */
#ifndef NF_JSCAN_H
#define NF_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NF_JSON_MAX_DEPTH 64

typedef struct {
    /* JSON Pointers (RFC 6901, '~' and '/' escaped) of integer literals
     * above 2^64-1, in text order. Owned; freed by nf_jscan_result_free. */
    char **bigint_ptrs;
    size_t n_bigint;
    /* Byte offset of the first fatal error (syntax, utf8, depth, a member
     * name with U+0000), or SIZE_MAX when there was none. */
    size_t error_offset;
    /* The byte offset just after the root value, once the scan got there
     * (whatever follows it), else SIZE_MAX. */
    size_t value_end;
    /* The fatal error is the text's end: what came before it is the start
     * of a valid value, cut short (an unterminated string, "tru", a
     * missing closing bracket). A reader of a length-prefixed text (an
     * entry's json_bytes) can blame the length. */
    bool truncated;
} nf_jscan_result;

/* Scan text[0..len). Problems are appended to d (with the JSON Pointer of
 * the place where the error was found, as far as the scan got, and the byte
 * offset in the message). Syntax, UTF-8, depth errors and a member name
 * holding U+0000 (its own pointer, the U+0000 shown as '?') stop the scan
 * (one record); duplicate members do not: every duplicate is reported (the
 * pointer is the duplicated member's own, e.g. "/objects/3/offset"; the
 * message gives the name as written) and the scan goes on. Running out of memory is `io`; an absurd number of
 * big integers whose pointers would exceed 8x the text is `range`. Returns
 * true when the text is acceptable (no record added). res is overwritten
 * (free a previous result first).
 * max_depth 0 means NF_JSON_MAX_DEPTH. res may be NULL. Memory: O(len) in
 * the worst case (names of one huge object), freed before return except
 * for res. Never reads outside text[0..len); text need not be
 * NUL-terminated. */
bool nf_jscan(const char *text, size_t len, unsigned max_depth,
              nf_diags *d, nf_jscan_result *res);

/* Events of one scan, in text order, for a reader that builds its own
 * records in the same pass (the catalog). Offsets are byte
 * offsets into the text. open: a container starts at off ('{' or '[');
 * close: the innermost open container ends, end is the offset after its
 * bracket; key: a member name, start/len span its raw bytes inside the
 * quotes, esc tells whether they hold a backslash; scalar: a value, for
 * strings the raw bytes inside the quotes, for numbers and literals the
 * literal's text. A callback returns 0 to go on; anything else stops the
 * scan, which then returns false without a record of its own (the sink
 * reports why). Events stop at the first fatal error; the caller must not
 * trust what it built unless nf_jscan_ex returns true. */
typedef enum {
    NF_JS_STRING,  /* no escapes: the span is the string's bytes */
    NF_JS_ESTRING, /* with escapes: unescape the span */
    NF_JS_INT,     /* an integer literal in 0..2^64-1 ("-0" included) */
    NF_JS_NEGINT,  /* a negative integer literal */
    NF_JS_BIGINT,  /* an integer literal above 2^64-1 */
    NF_JS_NUMBER,  /* a number with a fraction or exponent */
    NF_JS_TRUE,
    NF_JS_FALSE,
    NF_JS_NULL,
} nf_jscalar;

/* open() of an object may return this: the sink finds duplicate member
 * names of that object itself (it keeps the names in a map of its own
 * anyway), and key() returns NF_JSCAN_DUPLICATE for a name equal (after
 * unescaping, byte for byte) to an earlier one of the same object; the
 * scanner then reports it exactly as it reports its own duplicates and
 * keeps no table of that object's names. */
#define NF_JSCAN_OWN_NAMES 2
#define NF_JSCAN_DUPLICATE 2

typedef struct {
    void *ctx;
    int (*open)(void *ctx, bool is_object, size_t off);
    int (*close)(void *ctx, size_t end);
    int (*key)(void *ctx, size_t start, size_t len, bool esc);
    int (*scalar)(void *ctx, nf_jscalar kind, size_t start, size_t len);
    /* Optional (NULL: not wanted): set as nf_jscan_result's value_end and
     * truncated are, for a reader that wants no big-integer pointers. */
    size_t *value_end;
    bool *truncated;
} nf_jscan_sink;

/* nf_jscan with events (sink may be NULL: then exactly nf_jscan). */
bool nf_jscan_ex(const char *text, size_t len, unsigned max_depth, nf_diags *d,
                 nf_jscan_result *res, const nf_jscan_sink *sink);

/* Unescape the raw string bytes r[0..n) of text nf_jscan accepted into out
 * (room for n bytes: unescaped text is never longer); returns the length. */
size_t nf_junescape(const char *r, size_t n, char *out);

void nf_jscan_result_free(nf_jscan_result *res);

/* Advise the kernel that p[0..n), a large table read at random, may use
 * huge pages (madvise MADV_HUGEPAGE on its 2 MiB-aligned interior; a hint
 * only). For the scanner's and the catalog's hash tables. */
void nf_advise_huge(void *p, size_t n);

/* True when ptr is one of res's big-integer pointers. */
bool nf_jscan_is_bigint(const nf_jscan_result *res, const char *ptr);

/* --- Raw spans in text that nf_jscan accepted ------------------------------
 * A span is [start, start+len) of text: a whole value exactly as written
 * (no surrounding whitespace). Writers splice config/metadata/provenance
 * spans into their output so numbers keep their text (ninfer(5) JSON
 * rules). */
typedef struct {
    size_t start, len;
} nf_span;

/* The span of the whole root value (leading/trailing whitespace dropped). */
nf_span nf_jspan_root(const char *text, size_t len);

/* In the object value at span obj, find the member whose unescaped name
 * equals name[0..name_len) and store its value's span in *out. Returns
 * false when obj is not an object or has no such member. */
bool nf_jspan_member(const char *text, nf_span obj, const char *name,
                     size_t name_len, nf_span *out);

/* Iterate over the members of the object at obj: call fn for each with the
 * raw (still escaped, without quotes) name span and the value span, in text
 * order; stop early when fn returns false. Returns false when obj is not an
 * object. */
typedef bool (*nf_jspan_member_fn)(void *ctx, const char *text,
                                   nf_span raw_name, nf_span value);
bool nf_jspan_members(const char *text, nf_span obj, nf_jspan_member_fn fn,
                      void *ctx);

/* Iterate over the elements of the array at arr: call fn for each with its
 * index and value span, in order; stop early when fn returns false.
 * Returns false when arr is not an array. */
typedef bool (*nf_jspan_element_fn)(void *ctx, const char *text, size_t index, nf_span value);
bool nf_jspan_elements(const char *text, nf_span arr, nf_jspan_element_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif
#endif
