/* nf_strmap.h — a string -> index map (open addressing, FNV-1a), the one
 * name lookup of the library: object IDs and use keys in the catalog,
 * tensor names in safetensors files, names in the importer. Keys are byte
 * strings with an explicit length (they may hold NUL) and are copied.
 * Expected O(1) per operation; memory about 3 words per slot plus the keys.
 */
#ifndef NF_STRMAP_H
#define NF_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_strmap {
    char **key;
    size_t *klen, *val;
    size_t cap, n;
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

#ifdef __cplusplus
}
#endif
#endif
