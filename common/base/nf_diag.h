/* nf_diag.h — diagnostics: one record per problem, a stable code, a JSON
 * Pointer into the catalog, and the exit-status ranking (ninfer-verify(1)
 * EXIT STATUS).
 *
 * The library never prints and never exits: every function that can find a
 * problem appends records to an nf_diags list owned by the caller, and the
 * command prints them and maps them to an exit status.
 */
#ifndef NF_DIAG_H
#define NF_DIAG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The codes that ninfer-verify(1) DIAGNOSTICS lists (a diagnostic names
 * exactly one). The class of each code decides the exit status:
 * NF_EXIT_RULE (1) for broken rules, NF_EXIT_IO (3) for I/O and system
 * errors, NF_EXIT_UNSUPPORTED (4). */
typedef enum {
    NF_C_HEADER,           /* short file, json_bytes 0 / past EOF / overflowing */
    NF_C_MAGIC,
    NF_C_UTF8,
    NF_C_JSON,             /* syntax, NaN, BOM, garbage after the value */
    NF_C_DUPLICATE_MEMBER,
    NF_C_DEPTH,
    NF_C_SCHEMA,           /* missing/unknown/wrong-type field, bad enum, bad ID */
    NF_C_RANGE,            /* outside U64, zero where positive required, overflow */
    NF_C_FILES,            /* spec 3.3 */
    NF_C_LENGTH,           /* a file's length differs from its header and table */
    NF_C_INCOMPLETE,       /* a file shorter than its header and table say */
    NF_C_FILL,
    NF_C_PART_MISSING,     /* exit 3 */
    NF_C_PART_HEADER,
    NF_C_ARTIFACT_ID,
    NF_C_DUPLICATE_ID,
    NF_C_ORDER,
    NF_C_OVERLAP,
    NF_C_BOUNDS,
    NF_C_ALIGNMENT,
    NF_C_SIZE,
    NF_C_ENCODING,
    NF_C_REFERENCE,
    NF_C_PART_RANGE,
    NF_C_DUPLICATE_USE,
    NF_C_INTEGRITY,
    NF_C_DIGEST,
    NF_C_CODES,
    NF_C_COVERAGE,
    NF_C_UNKNOWN_PARAMETER,
    NF_C_AUXILIARY,
    NF_C_COMPONENT_MISSING,
    NF_C_TARGET,
    NF_C_ZSTD,             /* a corrupt zstd frame (one that ends early: length) */
    NF_C_UNSUPPORTED,      /* exit 4 */
    NF_C_IO,               /* exit 3 */
    NF_C_USAGE,            /* exit 2 */
    NF_C_COUNT_
} nf_code;

/* Exit statuses (ninfer-verify(1) EXIT STATUS). */
enum {
    NF_EXIT_OK = 0,
    NF_EXIT_RULE = 1,
    NF_EXIT_USAGE = 2,
    NF_EXIT_IO = 3,
    NF_EXIT_UNSUPPORTED = 4,
};

/* The code's stable spelling ("part-missing", ...). Never NULL. */
const char *nf_code_name(nf_code c);

/* The exit status a single diagnostic with this code implies (1, 2, 3 or 4). */
int nf_code_exit(nf_code c);

/* Combine two exit statuses by their ranking (ninfer-verify(1) EXIT STATUS):
 * 1 beats 3 beats 4 beats 0 (2, usage, beats everything). */
int nf_exit_combine(int a, int b);

typedef struct {
    nf_code code;
    char *pointer; /* RFC 6901 JSON Pointer into the catalog; "" when none */
    char *file;    /* file the problem was found in (entry or part path) */
    char *message; /* human text, lowercase, no full stop */
} nf_diag;

/* A growable list of diagnostics. Zero-initialise with NF_DIAGS_INIT.
 * `limit` caps the number of stored records (0 = the default 1000) so a
 * hostile catalog with millions of faults costs bounded memory; `dropped`
 * counts what was not stored, and `worst` still ranks every record. */
typedef struct {
    nf_diag *v;
    size_t n, cap, limit, dropped;
    int worst;            /* nf_exit_combine over all records added */
    const char *file;     /* default file for records added without one */
} nf_diags;

#define NF_DIAGS_INIT {0}

/* Append a record. pointer may be NULL (stored as ""). Formats message with
 * printf rules. Pointer, file and message are each cut to 4 KiB (ending in
 * "...", at a UTF-8 boundary) so hostile names cost bounded memory. On
 * allocation failure the record is counted in `dropped`. */
void nf_diag_add(nf_diags *d, nf_code code, const char *pointer,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void nf_diag_vadd(nf_diags *d, nf_code code, const char *pointer,
                  const char *fmt, va_list ap);
/* The same with an explicit file (a part's path). */
void nf_diag_addf(nf_diags *d, nf_code code, const char *file,
                  const char *pointer, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Number of stored records with the given code (dropped ones are only
 * counted in `dropped`, without their codes). */
size_t nf_diags_count(const nf_diags *d, nf_code code);

/* Status implied by all records: 0 when empty, else nf_exit_combine's
 * ranking. */
int nf_diags_exit(const nf_diags *d);

/* Record i of d as one line of text, the form every command prints:
 *   "<prog>: <file>: <pointer>: <code>: <message>"
 * (file and pointer parts left out when empty), without a newline; with
 * i == d->n and d->dropped, the closing "<prog>: <file>: N more problems
 * not shown". File, pointer and message are escaped as nf_text_escape
 * does. Returns malloc'ed text, or NULL for i past those lines or when
 * out of memory. The library builds text; the caller writes it. */
char *nf_diag_line(const nf_diags *d, size_t i, const char *prog);

/* s with C0 control characters (tab and newline included), DEL, C1
 * controls (U+0080..U+009F) and bytes that are not valid UTF-8 written as
 * \xHH, so that names taken from a hostile artifact can neither split a
 * diagnostic line nor drive a terminal; valid UTF-8 otherwise unchanged.
 * Returns malloc'ed text or NULL when out of memory. */
char *nf_text_escape(const char *s);

/* nf_text_escape, and every byte of s that is in the ASCII string also
 * written as \xHH too: a field of a text listing that no name can split
 * or forge (ninfer-bind's list: also "\\,\"", so "a,b" prints a\x2cb and
 * a name holding "\x09" cannot pass for an escaped tab). Returns
 * malloc'ed text or NULL when out of memory. */
char *nf_text_escape_also(const char *s, const char *also);

/* Move all records of src to the end of dst (src becomes empty). */
void nf_diags_move(nf_diags *dst, nf_diags *src);

void nf_diags_clear(nf_diags *d);
void nf_diags_free(nf_diags *d);

/* A pointer, file or message longer than this (one that quotes a hostile
 * 50 MB name, say) is cut at a UTF-8 boundary and ends in "...": a full
 * list of records stays a few MB, never gigabytes. A record's
 * text depends only on its first NF_DIAG_MAX_TEXT + 1 bytes, so a builder
 * may stop there. */
#define NF_DIAG_MAX_TEXT 4096

/* Build a JSON Pointer by appending one reference token to base, escaping
 * '~' as "~0" and '/' as "~1" (RFC 6901). tok_len bytes of tok are used
 * (tokens may contain NUL). Returns malloc'ed text or NULL. */
char *nf_ptr_join(const char *base, const char *tok, size_t tok_len);
/* The same with an array index. */
char *nf_ptr_index(const char *base, size_t index);

#ifdef __cplusplus
}
#endif
#endif
