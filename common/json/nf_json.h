/* nf_json.h — the one module that calls json-c.
 *
 * Reading: nf_jdoc_parse runs the strict pre-scan of nf_jscan.h (syntax,
 * UTF-8, depth, duplicate members, big integers) and only then lets json-c
 * build a tree, so a hostile catalog costs a small multiple of its size and
 * json-c's leniencies (NaN, last-duplicate-wins, saturating integers) never
 * reach the caller. Values are opaque nf_jval pointers owned by the document.
 *
 * Writing: a small builder over json-c's tree and serializer. A "raw" value
 * is spliced into the output byte for byte; writers use it for config,
 * metadata and provenance so numbers keep the text they were read with
 * (ninfer(5) JSON rules).
 */
#ifndef NF_JSON_H
#define NF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"
#include "nf_jscan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_jdoc nf_jdoc;
typedef struct json_object nf_jval;

typedef enum {
    NF_J_NULL,
    NF_J_BOOL,
    NF_J_INT,    /* an integer literal (no fraction, no exponent) */
    NF_J_DOUBLE, /* any other number: 1.0, 1e3 */
    NF_J_STRING,
    NF_J_ARRAY,
    NF_J_OBJECT,
} nf_jtype;

/* Memory budget of a parsed document, as a multiple of its text. */
#define NF_JSON_MEM_FACTOR 16
/* ... and in bytes, whatever the text's size. */
#define NF_JSON_MAX_TREE (1ull << 30)

/* Parse text[0..len) (copied; the caller keeps its buffer). For the small
 * documents and single members read with json-c (a component's config, a
 * manifest source, a recipe, a checkpoint's config.json): a catalog is
 * never parsed this way (nf_catalog.h reads it in one scanner pass, at a
 * cost bounded by construction), so the guard below applies to one member
 * alone. Runs nf_jscan
 * with max_depth (0: NF_JSON_MAX_DEPTH) and appends its findings to d; on
 * any finding returns NULL. A text whose tree would need more than
 * NF_JSON_MEM_FACTOR times its size (+64 MiB), or more than NF_JSON_MAX_TREE
 * bytes, is refused with `json`
 * before json-c sees it. Returns NULL with a `json` record if json-c still
 * refuses, or an `io` record on allocation failure. */
nf_jdoc *nf_jdoc_parse(const char *text, size_t len, unsigned max_depth,
                       nf_diags *d);

/* The same for text[0..len) that is part of a document nf_jscan accepted
 * (a member's span: the catalog's manifest sources) and holds no integer
 * above 2^64-1: no second scan and no copy (the text must outlive the
 * document; nf_jdoc_text gives it back), the cost guard as above. */
nf_jdoc *nf_jdoc_parse_scanned(const char *text, size_t len, unsigned max_depth,
                               nf_diags *d);
void nf_jdoc_free(nf_jdoc *doc);

nf_jval *nf_jdoc_root(const nf_jdoc *doc);
/* The document's text (as parsed) and its length in bytes. */
const char *nf_jdoc_text(const nf_jdoc *doc, size_t *len);
/* The pre-scan's result (big-integer pointers). */
const nf_jscan_result *nf_jdoc_scan(const nf_jdoc *doc);

nf_jtype nf_jtype_of(const nf_jval *v);
/* Type name for messages: "null", "boolean", "integer", "number", "string",
 * "array", "object". */
const char *nf_jtype_name(nf_jtype t);

/* Arrays. */
size_t nf_jarr_len(const nf_jval *v);
nf_jval *nf_jarr_get(const nf_jval *v, size_t i);

/* Objects: member by name (NULL when absent), member count, iteration in
 * document order (stops early when fn returns false). A parsed document's
 * names hold no U+0000 (the pre-scan refuses them: json-c would cut them
 * there), so C-string names are exact. */
nf_jval *nf_jobj_get(const nf_jval *v, const char *name);
bool nf_jobj_has(const nf_jval *v, const char *name);
size_t nf_jobj_len(const nf_jval *v);
typedef bool (*nf_jobj_fn)(void *ctx, const char *name, nf_jval *val);
void nf_jobj_foreach(const nf_jval *v, nf_jobj_fn fn, void *ctx);

/* Iteration without callbacks, in document order:
 *   nf_jiter it = nf_jobj_iter(obj); const char *k; nf_jval *m;
 *   while (nf_jobj_next(&it, &k, &m)) ...
 * A non-object iterates as empty. */
typedef struct {
    const void *pos, *end;
} nf_jiter;
nf_jiter nf_jobj_iter(const nf_jval *obj);
bool nf_jobj_next(nf_jiter *it, const char **name, nf_jval **val);

/* String bytes and length (may contain NUL). NULL for non-strings, and,
 * when len is NULL, for a string that holds U+0000: a C string would end
 * there, and string values are compared with their full length (ninfer(5)),
 * so "A16Only\u0000x" is no "A16Only". */
const char *nf_jstr(const nf_jval *v, size_t *len);
bool nf_jbool(const nf_jval *v);
double nf_jdouble(const nf_jval *v);

/* Read a U64 field (ninfer(5) JSON rules): v must be an integer literal in
 * 0..2^64-1 ("-0" reads as 0). `pointer` is v's JSON Pointer, used to
 * recognise the big integers json-c saturated. Returns NF_JU64_OK or why
 * not. */
typedef enum {
    NF_JU64_OK = 0,
    NF_JU64_NOT_INTEGER, /* not a number, or 1.0 / 1e3 -> `schema` */
    NF_JU64_NEGATIVE,    /* -> `range` */
    NF_JU64_TOO_BIG,     /* above 2^64-1 -> `range` */
} nf_ju64_status;
nf_ju64_status nf_jval_u64(const nf_jdoc *doc, const nf_jval *v,
                           const char *pointer, uint64_t *out);

/* Raw spans of the parsed text (see nf_jspan_*): the span of the value at
 * `path`, a NULL-terminated list of member names walked from the root.
 * Returns false when a step is missing or not an object. */
bool nf_jdoc_span(const nf_jdoc *doc, const char *const *path, nf_span *out);

/* --- Builder --------------------------------------------------------------
 * Every constructor returns NULL on allocation failure; nf_jobj_set and
 * nf_jarr_push take ownership of val (also on failure) and return false on
 * failure. nf_jval_free releases a tree built here (not a document's). */
nf_jval *nf_jnew_object(void);
nf_jval *nf_jnew_array(void);
nf_jval *nf_jnew_string(const char *s);
nf_jval *nf_jnew_string_len(const char *s, size_t len);
nf_jval *nf_jnew_u64(uint64_t v);
nf_jval *nf_jnew_i64(int64_t v);
nf_jval *nf_jnew_double(double v);
nf_jval *nf_jnew_bool(bool v);
nf_jval *nf_jnew_null(void);
/* A value serialized as text[0..len) verbatim; the text must be one valid
 * JSON value (callers pass spans of documents that passed nf_jscan). */
nf_jval *nf_jnew_raw(const char *text, size_t len);
bool nf_jobj_set(nf_jval *obj, const char *name, nf_jval *val);
bool nf_jobj_set_len(nf_jval *obj, const char *name, size_t name_len,
                     nf_jval *val);
bool nf_jarr_push(nf_jval *arr, nf_jval *val);
/* Freeze a finished object or array: returns a value that serializes as v
 * did (compact, and pretty at whatever level it is placed) but is kept as
 * its compact text, a small fraction of json-c's tree (builders of large
 * documents, the importer's manifest, freeze each record when it is done).
 * Takes v's reference (the tree is freed once no other reference holds
 * it); v is returned as it is when it holds a raw value (nf_jnew_raw text
 * is printed verbatim, never re-indented), is not a container, or memory
 * runs out. A frozen value is opaque: nf_jobj_get and friends see a
 * string. */
nf_jval *nf_jval_freeze(nf_jval *v);
/* Take a reference so one value can sit in two trees. */
nf_jval *nf_jval_ref(nf_jval *v);
void nf_jval_free(nf_jval *v);

/* Serialize: compact (no whitespace) or pretty (two-space indent). Slashes
 * are not escaped; non-ASCII stays UTF-8. Returns a malloc'ed NUL-terminated
 * string and its length, or NULL on allocation failure. */
char *nf_jval_to_text(nf_jval *v, bool pretty, size_t *len);

/* Write a JSON string literal (with quotes) for s[0..len) into a malloc'ed
 * buffer; NULL on allocation failure. */
char *nf_json_quote(const char *s, size_t len);

/* The JSON string literal (with quotes) of s[0..n) with json-c's escapes
 * and no slash escapes (\" \\ \b \f \n \r \t, other controls as \u00xx,
 * every other byte as it is), as nf_jval_to_text writes a string of valid
 * UTF-8: written into dst[0..cap) when it fits (else nothing is written;
 * dst may be NULL to count). Returns its length in bytes. Writers of
 * json-c-form text without json-c (the catalog serializer, nf_source)
 * share it. */
size_t nf_json_escape(const char *s, size_t n, char *dst, size_t cap);

/* A frozen value (nf_jval_freeze) made from text[0..len), which must be
 * one object or array in json-c's compact form (nf_jval_to_text(v, false)
 * of some v): it serializes exactly as that v would, compact or pretty at
 * its level. The text is copied. NULL when out of memory. */
nf_jval *nf_jnew_frozen(const char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
