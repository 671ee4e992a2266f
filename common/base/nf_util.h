/* nf_util.h — overflow-checked U64 arithmetic, size parsing, small helpers.
 *
 * Spec section 1 requires that every product, prefix sum, offset addition and
 * alignment result stays inside U64 (0..2^64-1). Every arithmetic step on a
 * number that came from a catalog, a header or a command line goes through
 * these helpers; a false return means "the exact result does not fit".
 */
#ifndef NF_UTIL_H
#define NF_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Progress of long work: `done` of `total` bytes (called from one thread,
 * often: rate-limit in the callback). */
typedef void (*nf_progress_fn)(void *ctx, uint64_t done, uint64_t total);

#define NF_VERSION "0.2.1"

/* *r = a + b. Returns false (and leaves *r unspecified) on U64 overflow. */
static inline bool nf_add_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_add_overflow(a, b, r);
}

/* *r = a * b. Returns false on U64 overflow. */
static inline bool nf_mul_u64(uint64_t a, uint64_t b, uint64_t *r)
{
    return !__builtin_mul_overflow(a, b, r);
}

/* *r = align_up(x, a) = ceil_div(x, a) * a (spec section 1), a > 0.
 * Returns false when a == 0 or the result exceeds U64. */
static inline bool nf_align_up_u64(uint64_t x, uint64_t a, uint64_t *r)
{
    if (a == 0)
        return false;
    uint64_t rem = x % a;
    if (rem == 0) {
        *r = x;
        return true;
    }
    return nf_add_u64(x, a - rem, r);
}

/* ceil(a / b) for b > 0; never overflows. */
static inline uint64_t nf_ceil_div_u64(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

/* Parse a byte count as coreutils reads one: a plain decimal U64, or a
 * decimal followed by K M G T or KiB MiB GiB TiB (powers of 1024; the
 * letter in either case) or KB MB GB TB (powers of 1000). No sign, no
 * spaces, no fraction, no empty string. Returns NULL with *out set, or
 * why not ("empty", "negative", "unknown suffix (...)", "too large ...",
 * ...), a static string; *out is then unchanged. */
const char *nf_size_parse(const char *s, uint64_t *out);
/* nf_size_parse(s, out) == NULL. */
bool nf_parse_size(const char *s, uint64_t *out);

/* Parse a plain decimal U64 (no sign, no suffix). False on bad text/overflow. */
bool nf_parse_u64(const char *s, uint64_t *out);

/* Write the 32 lowercase hex characters of 16 raw bytes plus a NUL into
 * out[33] (spec 2.1: artifact_id printed form). Also works for any n: out
 * must hold 2*n+1 bytes. */
void nf_hex(const unsigned char *raw, size_t n, char *out);

/* Little-endian load/store of a U64 (header integers, spec 3.1). */
static inline uint64_t nf_load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static inline void nf_store_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Fill buf with n bytes from the OS random source (getrandom(2)).
 * Returns 0, or -errno. */
int nf_random_bytes(void *buf, size_t n);

/* The last path component of path (no allocation; points into path). */
const char *nf_basename(const char *path);

/* Duplicate the directory part of path ("." when there is none).
 * Returns NULL on allocation failure. */
char *nf_dirname_dup(const char *path);

/* Join dir and name with one '/'; an empty dir is the current directory
 * (name alone, never "/name"). Returns a malloc'ed string or NULL. */
char *nf_path_join(const char *dir, const char *name);

/* target as a path relative to the directory base, both absolute and
 * without "." or ".." components (as realpath gives them): "x/y",
 * "../x", "." when they are the same. Returns a malloc'ed string or NULL. */
char *nf_path_relative(const char *target, const char *base);

/* The offset of the first byte of s[0..n) where valid UTF-8 stops (RFC
 * 3629: no overlong forms, no surrogates, nothing past U+10FFFF; a
 * sequence cut short by the end counts as invalid), or n when all n bytes
 * are valid UTF-8. A JSON text can hold only valid UTF-8 (RFC 8259 8.1):
 * the manifest and catalog writers refuse a file name for which this is
 * not n (the name cannot be written down exactly). */
size_t nf_utf8_invalid_at(const char *s, size_t n);

/* Seconds on the monotonic clock (CLOCK_MONOTONIC), for durations. */
double nf_now(void);

/* A growing NUL-terminated text (the library builds text; its callers
 * write it). Start from {0}. After an allocation failure `oom` is set and
 * nothing more is appended. */
typedef struct {
    char *p;
    size_t n, cap;
    bool oom;
} nf_text;
void nf_text_put(nf_text *t, const void *s, size_t n);
void nf_text_puts(nf_text *t, const char *s);
/* The text, malloc'ed ("" when nothing was appended), with its length in
 * *len when len is not NULL; NULL when out of memory. t is emptied. */
char *nf_text_take(nf_text *t, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
