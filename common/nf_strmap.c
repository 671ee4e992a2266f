/* nf_strmap.c — open addressing with linear probing, load <= 1/2. */
#include "nf_strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static size_t find(const nf_strmap *m, const char *key, size_t len)
{
    size_t j = hash(key, len) & (m->cap - 1);
    while (m->key[j] && !(m->klen[j] == len && memcmp(m->key[j], key, len) == 0))
        j = (j + 1) & (m->cap - 1);
    return j;
}

static bool grow(nf_strmap *m)
{
    nf_strmap n = {0};
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
