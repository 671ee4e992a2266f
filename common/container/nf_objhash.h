/* nf_objhash.h — SHA-256 of an artifact's objects (ninfer(5): the
 * metadata.integrity digests; spec 11.2 range reads), over nf_digest.h.
 */
#ifndef NF_OBJHASH_H
#define NF_OBJHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_digest.h"
#include "nf_util.h" /* nf_progress_fn */

#ifdef __cplusplus
extern "C" {
#endif

/* Digest the encoded bytes of every object i with want[i] (want NULL:
 * all) through range reads (spec 11.2), on `threads` threads (0: the
 * number of online CPUs), largest objects first. out[i] receives 64 hex +
 * NUL. progress, when not NULL, is called from one thread with bytes done
 * and total. Returns 0 or -1 with diagnostics (read errors name the file). */
int nf_digest_objects(nf_artifact *a, const bool *want, char (*out)[65], unsigned threads,
                      nf_progress_fn progress, void *pctx, nf_diags *d);

/* Whole files and their objects in one read of each file (--sums,
 * --check-sums): for each file i with files[i] (not NULL), the SHA-256 of
 * all its bytes (header, catalog, fill and payload) into fout[i], and the
 * digest of every object j with want[j] into out[j], as nf_digest_objects.
 * Files are read sequentially, several at once on `threads` threads (0:
 * online CPUs), largest first; an object is hashed by the file it starts
 * in, and the part of it that lies in later files is read again from them
 * (at most one object per file boundary). Every file an object with
 * want[j] touches must have files[i]. Entries not computed stay "".
 * progress as nf_digest_objects (bytes of files read). Returns 0 or -1
 * with diagnostics. */
int nf_digest_files_objects(nf_artifact *a, const bool *files, char (*fout)[65], const bool *want,
                            char (*out)[65], unsigned threads, nf_progress_fn progress,
                            void *pctx, nf_diags *d);

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

#ifdef __cplusplus
}
#endif
#endif
