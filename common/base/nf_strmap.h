/* nf_strmap.h — a string -> index map (open addressing), for tensor names
 * in safetensors files and names in the importer (the catalog keeps its
 * own compact maps over its records, nf_catalog.h). Keys are byte strings
 * with an explicit length (they may hold NUL) and are copied. The hash is
 * SipHash-1-3 under a random per-map key, so names chosen by a hostile
 * file cannot pile into one probe chain. Expected O(1) per operation;
 * memory about 3 words per slot plus the keys.
 */
#ifndef NF_STRMAP_H
#define NF_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_strmap {
    char **key;
    size_t *klen, *val;
    size_t cap, n;
    uint64_t hkey[2]; /* drawn when the map first grows */
} nf_strmap;

#define NF_STRMAP_INIT {0}

/* The value stored for key[0..len), or SIZE_MAX when absent. */
size_t nf_strmap_get(const nf_strmap *m, const char *key, size_t len);

/* Insert key[0..len) -> val unless the key is present. Returns SIZE_MAX
 * after inserting, the existing value when present (nothing changes), or
 * SIZE_MAX - 1 when out of memory. */
size_t nf_strmap_add(nf_strmap *m, const char *key, size_t len, size_t val);

/* Insert or replace. False when out of memory. */
bool nf_strmap_set(nf_strmap *m, const char *key, size_t len, size_t val);

/* Free the keys and tables; the map is empty again. */
void nf_strmap_free(nf_strmap *m);

/* SipHash-1-3 (Aumasson and Bernstein's SipHash with one compression and
 * three finalization rounds) of p[0..n) under the 128-bit key. */
uint64_t nf_siphash13(const void *p, size_t n, const uint64_t key[2]);

/* A random 128-bit hash key from the OS random source (a clock-based one
 * when that fails: still a working key, only less resistant to chosen
 * input). */
void nf_hash_key(uint64_t key[2]);

#ifdef __cplusplus
}
#endif
#endif
