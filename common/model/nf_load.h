/* nf_load.h — the load path's reads (ninfer-run(1); spec 11.2 range reads,
 * ninfer(5) metadata.integrity): every parent object of a selection read
 * once with large range reads, on threads, and hashed (SHA-256) as it is
 * read, as an engine that trusts nothing would, so that a damaged byte is a
 * `digest` finding instead of a wrong result. Where the bytes go is the
 * caller's: into host memory, or through staging buffers to a device.
 */
#ifndef NF_LOAD_H
#define NF_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_artifact.h"
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a load did. read_s: wall seconds from the first read to the last
 * piece handed on (the caller's allocations before it are not counted). */
typedef struct {
    uint64_t bytes;          /* payload bytes read from the artifact's files */
    double read_s;
    unsigned parents;        /* parents loaded (each once) */
    size_t digests_checked;  /* parents whose SHA-256 was compared */
    size_t digests_absent;   /* parents the catalog gives no digest for */
    bool digests_skipped;    /* the caller asked for no digest check */
} nf_load_stats;

/* Where the pieces go. A parent is read in pieces of at most piece_bytes
 * (in order, by one worker): piece_buf returns the buffer piece [off,
 * off+n) of parent k (objs[k]) is read into (NULL after adding a
 * diagnostic: the load fails); after the read (and the hash) piece_done,
 * when not NULL, hands it on (0, or -1 after adding a diagnostic). Both are
 * called from worker `worker` in [0, threads) and may keep per-worker state
 * without locks (each worker is one thread); the diagnostics they add go
 * to that worker's list. */
typedef struct {
    uint8_t *(*piece_buf)(void *ctx, unsigned worker, size_t k, uint64_t off, size_t n,
                          nf_diags *d);
    int (*piece_done)(void *ctx, unsigned worker, size_t k, uint64_t off, uint8_t *buf,
                      size_t n, nf_diags *d);
    void *ctx;
    uint64_t piece_bytes;    /* 0: 4 MiB */
    unsigned threads;        /* workers: 0 = the online CPUs; at most 64 and n */
    bool no_digests;         /* read only: compare no digest (--no-digests) */
} nf_load_io;

/* The workers nf_load_parents will start for n parents under io (what
 * per-worker state must be sized for). */
unsigned nf_load_workers(const nf_load_io *io, size_t n);

/* Read parents objs[0..n) (indices into a's catalog, a file artifact, not
 * a stream) through io, largest first, each by one worker with
 * nf_artifact_read (spec 11.2). Unless io->no_digests, each parent's bytes
 * are hashed as they are read and compared with its metadata.integrity
 * digest: a mismatch is one `digest` diagnostic per parent, in objs order
 * (file: the part holding it, or the entry; pointer /objects/N; message
 * `object "ID": sha256 GOT, metadata.integrity says WANT`), and the load
 * fails after every parent was read. A parent without a digest is counted
 * in digests_absent. Returns 0, or -1 with diagnostics (read errors name
 * the file; what io's callbacks add). *st is filled either way (bytes and
 * parents: the selection's). */
int nf_load_parents(nf_artifact *a, const size_t *objs, size_t n, const nf_load_io *io,
                    nf_load_stats *st, nf_diags *d);

/* The `digest` diagnostic of nf_load_parents for object index oi whose
 * bytes hash to got (64 hex digits): for callers that hash another way (a
 * stream read in order). */
void nf_load_digest_mismatch(nf_artifact *a, size_t oi, const char *got, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
