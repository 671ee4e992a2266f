/* nf_digest.h — SHA-256 digests of objects and files (DESIGN section 9),
 * the one module that calls OpenSSL.
 */
#ifndef NF_DIGEST_H
#define NF_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_diag.h"

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

/* Digest the encoded bytes of every object i with want[i] (want NULL:
 * all) through range reads (spec 11.2), on `threads` threads (0: the
 * number of online CPUs), largest objects first. out[i] receives 64 hex +
 * NUL. progress, when not NULL, is called from one thread with bytes done
 * and total. Returns 0 or -1 with diagnostics (read errors name the file). */
typedef void (*nf_progress_fn)(void *ctx, uint64_t done, uint64_t total);
int nf_digest_objects(nf_artifact *a, const bool *want, char (*out)[65], unsigned threads,
                      nf_progress_fn progress, void *pctx, nf_diags *d);

/* Digests of objects over a payload read in order (streams, copies):
 * feed consecutive chunks [pos, pos+n) with pos increasing from 0; each
 * wanted object's digest is final once its last byte passed. Objects must
 * be sorted by offset and not overlap (a validated catalog). out must hold
 * c->n_objects entries; entries of objects not wanted or not complete stay
 * "". Returns NULL on allocation failure. */
typedef struct nf_seqhash nf_seqhash;
nf_seqhash *nf_seqhash_new(const nf_catalog *c, const bool *want, char (*out)[65]);
int nf_seqhash_feed(nf_seqhash *h, uint64_t pos, const void *buf, size_t n);
void nf_seqhash_free(nf_seqhash *h);

/* SHA-256 of a whole file, read with large sequential reads. Returns 0, or
 * -errno. */
int nf_digest_file(const char *path, char hex[65]);

#ifdef __cplusplus
}
#endif
#endif
