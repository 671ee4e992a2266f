/* nf_digest.h — SHA-256 of bytes and of whole files, the one module that
 * calls OpenSSL (object digests over an artifact: nf_objhash.h).
 */
#ifndef NF_DIGEST_H
#define NF_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_sha256 nf_sha256;
/* Incremental SHA-256. nf_sha256_final writes 64 lowercase hex + NUL into
 * hex[65] and frees the context. NULL on allocation failure. */
nf_sha256 *nf_sha256_new(void);
void nf_sha256_update(nf_sha256 *s, const void *buf, size_t n);
void nf_sha256_final(nf_sha256 *s, char hex[65]);
void nf_sha256_free(nf_sha256 *s);

/* SHA-256 of a whole file, read with large sequential reads. Returns 0, or
 * -errno. */
int nf_digest_file(const char *path, char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
