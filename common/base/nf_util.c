/* nf_util.c — size parsing, hex, random bytes, path helpers. */
#include "nf_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

bool nf_parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        if (!nf_mul_u64(v, 10, &v) || !nf_add_u64(v, (uint64_t)(*s - '0'), &v))
            return false;
    }
    *out = v;
    return true;
}

const char *nf_size_parse(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    if (!s || !*s)
        return "empty";
    if (*p == '-')
        return "negative";
    if (*p < '0' || *p > '9')
        return "not a number (a byte count, optionally with a suffix)";
    for (; *p >= '0' && *p <= '9'; p++)
        if (!nf_mul_u64(v, 10, &v) || !nf_add_u64(v, (uint64_t)(*p - '0'), &v))
            return "too large (over 2^64 - 1 bytes)";
    if (!*p) {
        *out = v;
        return NULL;
    }
    unsigned power;
    switch (*p) {
    case 'k': case 'K': power = 1; break;
    case 'm': case 'M': power = 2; break;
    case 'g': case 'G': power = 3; break;
    case 't': case 'T': power = 4; break;
    default:
        return *p == '.' ? "not a whole number" : "unknown suffix (K M G T, KiB MiB GiB TiB, "
                                                  "KB MB GB TB)";
    }
    p++;
    /* K and KiB: powers of 1024; KB: powers of 1000 (as coreutils reads them) */
    uint64_t base = 1024;
    if (p[0] == 'i' && p[1] == 'B')
        p += 2;
    else if (p[0] == 'B')
        p++, base = 1000;
    if (*p)
        return "unknown suffix (K M G T, KiB MiB GiB TiB, KB MB GB TB)";
    for (unsigned k = 0; k < power; k++)
        if (!nf_mul_u64(v, base, &v))
            return "too large (over 2^64 - 1 bytes)";
    *out = v;
    return NULL;
}

bool nf_parse_size(const char *s, uint64_t *out)
{
    return nf_size_parse(s, out) == NULL;
}

void nf_hex(const unsigned char *raw, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[raw[i] >> 4];
        out[2 * i + 1] = d[raw[i] & 15];
    }
    out[2 * n] = 0;
}

int nf_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

const char *nf_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

char *nf_dirname_dup(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return strdup(".");
    if (s == path)
        return strdup("/");
    return strndup(path, (size_t)(s - path));
}

char *nf_path_join(const char *dir, const char *name)
{
    char *p = NULL;
    size_t dl = strlen(dir);
    if (!dl)
        return strdup(name);
    if (asprintf(&p, "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", name) < 0)
        return NULL;
    return p;
}

char *nf_path_relative(const char *target, const char *base)
{
    /* the longest common prefix that ends at a component boundary */
    size_t common = 0, i = 0;
    for (;; i++) {
        char a = target[i], b = base[i];
        if ((a == '/' || !a) && (b == '/' || !b))
            common = i;
        if (!a || !b || a != b)
            break;
    }
    const char *rest = target + common;
    while (*rest == '/')
        rest++;
    size_t ups = 0;
    for (const char *q = base + common; *q; q++)
        if (*q != '/' && (q[-1] == '/' || q == base + common))
            ups++;
    nf_text t = {0};
    for (size_t k = 0; k < ups; k++)
        nf_text_puts(&t, k ? "/.." : "..");
    if (*rest) {
        if (ups)
            nf_text_puts(&t, "/");
        nf_text_puts(&t, rest);
    }
    if (!ups && !*rest)
        nf_text_puts(&t, ".");
    return nf_text_take(&t, NULL);
}

size_t nf_utf8_invalid_at(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!k || k > n - i)
            return i;
        unsigned cp = c & (0x7fu >> k);
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (p[i + j] & 0x3fu);
        }
        static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += k;
    }
    return n;
}

void nf_text_put(nf_text *t, const void *s, size_t n)
{
    if (t->oom)
        return;
    if (n >= SIZE_MAX / 2 - t->n) {
        t->oom = true;
        return;
    }
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 128;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *q = realloc(t->p, cap);
        if (!q) {
            t->oom = true;
            return;
        }
        t->p = q, t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = 0;
}

void nf_text_puts(nf_text *t, const char *s)
{
    nf_text_put(t, s, strlen(s));
}

char *nf_text_take(nf_text *t, size_t *len)
{
    char *p = t->oom ? NULL : t->p ? t->p : strdup("");
    if (t->oom)
        free(t->p);
    if (len)
        *len = p ? t->n : 0;
    *t = (nf_text){0};
    return p;
}

double nf_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
