/* nf_strmap.c — open addressing with linear probing, load <= 1/2; and
 * the keyed hash the library's name maps share. */
#include "nf_strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nf_util.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                        \
    do {                                                                \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);       \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                          \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                          \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);       \
    } while (0)

uint64_t nf_siphash13(const void *p, size_t len, const uint64_t key[2])
{
    const unsigned char *in = p;
    uint64_t k0 = key[0], k1 = key[1];
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    uint64_t b = (uint64_t)len << 56, m;
    const unsigned char *stop = in + (len & ~(size_t)7);
    for (; in != stop; in += 8) {
        m = nf_load_le64(in);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    m = 0;
    for (size_t k = 0; k < (len & 7); k++)
        m |= (uint64_t)in[k] << (8 * k);
    b |= m;
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

void nf_hash_key(uint64_t key[2])
{
    if (nf_random_bytes(key, 2 * sizeof *key) == 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key[0] = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)key;
    key[1] = (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts;
}

static uint64_t hash(const nf_strmap *m, const char *s, size_t n)
{
    return nf_siphash13(s, n, m->hkey);
}

static size_t find(const nf_strmap *m, const char *key, size_t len)
{
    size_t j = hash(m, key, len) & (m->cap - 1);
    while (m->key[j] && !(m->klen[j] == len && memcmp(m->key[j], key, len) == 0))
        j = (j + 1) & (m->cap - 1);
    return j;
}

static bool grow(nf_strmap *m)
{
    nf_strmap n = {0};
    if (!m->cap)
        nf_hash_key(m->hkey);
    n.hkey[0] = m->hkey[0];
    n.hkey[1] = m->hkey[1];
    n.cap = m->cap ? m->cap * 2 : 16;
    n.key = calloc(n.cap, sizeof *n.key);
    n.klen = calloc(n.cap, sizeof *n.klen);
    n.val = calloc(n.cap, sizeof *n.val);
    if (!n.key || !n.klen || !n.val) {
        free(n.key);
        free(n.klen);
        free(n.val);
        return false;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i])
            continue;
        size_t j = find(&n, m->key[i], m->klen[i]);
        n.key[j] = m->key[i];
        n.klen[j] = m->klen[i];
        n.val[j] = m->val[i];
    }
    n.n = m->n;
    free(m->key);
    free(m->klen);
    free(m->val);
    *m = n;
    return true;
}

size_t nf_strmap_get(const nf_strmap *m, const char *key, size_t len)
{
    if (!m || !m->cap)
        return SIZE_MAX;
    size_t j = find(m, key, len);
    return m->key[j] ? m->val[j] : SIZE_MAX;
}

/* The slot for key, made room for; SIZE_MAX when out of memory. */
static size_t slot(nf_strmap *m, const char *key, size_t len)
{
    if ((m->n + 1) * 2 > m->cap && !grow(m))
        return SIZE_MAX;
    return find(m, key, len);
}

static bool store(nf_strmap *m, size_t j, const char *key, size_t len, size_t val)
{
    char *k = malloc(len + 1);
    if (!k)
        return false;
    memcpy(k, key, len);
    k[len] = 0;
    m->key[j] = k;
    m->klen[j] = len;
    m->val[j] = val;
    m->n++;
    return true;
}

size_t nf_strmap_add(nf_strmap *m, const char *key, size_t len, size_t val)
{
    size_t j = slot(m, key, len);
    if (j == SIZE_MAX)
        return SIZE_MAX - 1;
    if (m->key[j])
        return m->val[j];
    return store(m, j, key, len, val) ? SIZE_MAX : SIZE_MAX - 1;
}

bool nf_strmap_set(nf_strmap *m, const char *key, size_t len, size_t val)
{
    size_t j = slot(m, key, len);
    if (j == SIZE_MAX)
        return false;
    if (m->key[j]) {
        m->val[j] = val;
        return true;
    }
    return store(m, j, key, len, val);
}

void nf_strmap_free(nf_strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->key[i]);
    free(m->key);
    free(m->klen);
    free(m->val);
    memset(m, 0, sizeof *m);
}
