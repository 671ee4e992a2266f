/* nf_catalog_int.h — private to the catalog's files (nf_catalog.c parses,
 * nf_catalog_index.c holds the arena and the lookups, nf_catalog_write.c
 * serializes). Not installed, not for other modules.
 */
#ifndef NF_CATALOG_INT_H
#define NF_CATALOG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_strmap.h"

/* ---- arena: the catalog's strings, shapes, parts, auxiliaries ----------
 * A bump allocator over a list of chunks; nothing is freed before the
 * whole arena. Chunks grow geometrically (64 KiB to 4 MiB), so its slack
 * is a small fraction of what it holds. */
typedef struct nf_arena nf_arena;
nf_arena *nf_arena_new(void);
void nf_arena_free(nf_arena *a);
/* n bytes aligned to 8 (uninitialized); NULL when out of memory. */
void *nf_arena_alloc(nf_arena *a, size_t n);
/* s[0..n) and a NUL. */
char *nf_arena_strndup(nf_arena *a, const char *s, size_t n);
/* Bytes held in chunks (for memory accounting in tests). */
size_t nf_arena_bytes(const nf_arena *a);

/* ---- keyed hash maps of record indices ----------------------------------
 * Slots hold (tag, index + 1), 8 bytes; keys are not stored: the owner
 * compares a candidate record with the key (eq). The tag is 32 bits of a
 * keyed SipHash-1-3 (nf_strmap.h) and also decides the slot, so growing
 * needs no key. Load stays at most 0.7. */
typedef struct {
    uint32_t tag, idx; /* idx: record index + 1, 0 = empty */
} nf_ixslot;

/* Does record idx have the key k[0..n)? */
typedef bool (*nf_ixeq_fn)(const void *ctx, size_t idx, const char *k, size_t n);

typedef struct {
    nf_ixslot *s;
    size_t mask, n;
    uint64_t key[2];
} nf_ixmap;

/* Reserve room for n entries. False when out of memory or beyond 2^32 - 2
 * entries. */
bool nf_ixmap_init(nf_ixmap *m, size_t n);
void nf_ixmap_free(nf_ixmap *m);
uint32_t nf_ixmap_tag(const nf_ixmap *m, const char *k, size_t n);
/* The index stored for key k (tag from nf_ixmap_tag), or SIZE_MAX. */
size_t nf_ixmap_get(const nf_ixmap *m, uint32_t tag, nf_ixeq_fn eq, const void *ctx,
                    const char *k, size_t n);
/* Insert idx under key k unless it is there: returns SIZE_MAX after
 * inserting, the existing index when present, SIZE_MAX - 1 when out of
 * memory (the map grows as needed). */
size_t nf_ixmap_add(nf_ixmap *m, uint32_t tag, nf_ixeq_fn eq, const void *ctx,
                    const char *k, size_t n, size_t idx);

/* ---- the catalog's index ------------------------------------------------ */
struct nf_catalog_index {
    nf_ixmap objects;     /* object ID -> index */
    nf_ixmap bindings;    /* binding name -> index */
    nf_ixmap components;  /* component ID -> index */
    nf_ixmap uses;        /* parameter \0 input -> use index */
    size_t *use_start;    /* n_bindings + 1 offsets into use_list */
    size_t *use_list;     /* use indices grouped by binding */
    size_t n_use_list;
    size_t proposal_owner; /* the text component, or SIZE_MAX */
    /* interned short strings (formats, layouts, inputs, roles, policies) */
    nf_ixmap intern;
    char **istr;
    size_t n_istr, cap_istr;
    char *last;           /* the string interned last */
    char *kbuf;           /* scratch for use keys */
    size_t kcap;
    /* lookups of the parse: where the next one likely lands (writers put
     * bindings, uses and digests in the order of what they refer to) */
    size_t hint_ref, hint_digest, hint_param;
    size_t dup_objects, dup_bindings; /* duplicates seen: hints are off */
};

/* Add record i to its map (the parser does so as it reads, to find
 * duplicates): SIZE_MAX when added, the earlier record's index when the
 * key is taken, SIZE_MAX - 1 when out of memory. */
size_t nf_catalog_index_add_object(nf_catalog *c, size_t i);
/* Look up an object (binding) by the key k[0..n), trying index *hint
 * first (exact: hints are not used once a duplicate was seen); moves the
 * hint past what was found. SIZE_MAX when absent. */
size_t nf_catalog_index_find_object(nf_catalog *c, const char *k, size_t n, size_t *hint);
size_t nf_catalog_index_find_binding(nf_catalog *c, const char *k, size_t n, size_t *hint);
/* The maps' key comparisons (for lookups with a key that is not a C string). */
bool nf_catalog_index_obj_eq(const void *c, size_t i, const char *k, size_t n);
bool nf_catalog_index_bind_eq(const void *c, size_t i, const char *k, size_t n);
size_t nf_catalog_index_add_binding(nf_catalog *c, size_t i);
size_t nf_catalog_index_add_use(nf_catalog *c, size_t i);

/* Complete the index of a parsed catalog: the maps the parser did not fill
 * (duplicates keep the first record), components, owners, targets, each
 * use's binding and the use lists. Reports nothing; false when out of
 * memory. */
bool nf_catalog_index_build(nf_catalog *c);
void nf_catalog_index_free(nf_catalog *c);
/* An interned copy of s[0..n) (equal strings share one copy); NULL when out
 * of memory. */
char *nf_catalog_intern(nf_catalog *c, const char *s, size_t n);

/* json-c's compact text (JSON_C_TO_STRING_PLAIN, no slash escapes) of
 * the value text[0..len), which nf_jscan accepted, without json-c: a
 * malloc'ed NUL-terminated copy and its length, or NULL when the value is
 * one json-c would rewrite in ways this does not follow (an integer above
 * 2^64-1, a member name holding U+0000) or out of memory: then ask json-c. */
char *nf_json_c_compact(const char *text, size_t len, size_t *out_len);

#endif
