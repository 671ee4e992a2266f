/* nf_digest.c — SHA-256 over OpenSSL's EVP (the one module that calls it). */
#include "nf_digest.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_util.h"

struct nf_sha256 {
    EVP_MD_CTX *ctx;
};

nf_sha256 *nf_sha256_new(void)
{
    nf_sha256 *s = malloc(sizeof *s);
    if (!s)
        return NULL;
    s->ctx = EVP_MD_CTX_new();
    if (!s->ctx || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(s->ctx);
        free(s);
        return NULL;
    }
    return s;
}

void nf_sha256_update(nf_sha256 *s, const void *buf, size_t n)
{
    EVP_DigestUpdate(s->ctx, buf, n);
}

void nf_sha256_final(nf_sha256 *s, char hex[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(s->ctx, md, &len);
    nf_hex(md, 32, hex);
    nf_sha256_free(s);
}

void nf_sha256_free(nf_sha256 *s)
{
    if (!s)
        return;
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

#define CHUNK (4u << 20)

int nf_digest_file(const char *path, char hex[65])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    unsigned char *buf = malloc(CHUNK);
    nf_sha256 *s = nf_sha256_new();
    if (!buf || !s) {
        free(buf);
        nf_sha256_free(s);
        close(fd);
        return -ENOMEM;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (;;) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            nf_sha256_free(s);
            close(fd);
            return -e;
        }
        if (r == 0)
            break;
        nf_sha256_update(s, buf, (size_t)r);
    }
    nf_sha256_final(s, hex);
    free(buf);
    close(fd);
    return 0;
}

