/* nf_fetch.h — download an artifact from its URL, or the files some of its
 * components need, proving every object as it arrives, resumable, and
 * published at once under the writer's rules (ninfer-fetch(1); ninfer(5)
 * Artifacts over HTTP; spec 2.1, 3, 11.1, 11.2, 11.4).
 *
 * The files are received in logical order (nf_scan: parallel range
 * requests, bounded memory) into a private resume directory beside the
 * target, ".NAME.ninfer-fetch/" (mode 0700, owned by the effective user,
 * opened with O_NOFOLLOW; anything else at that name or in it is refused,
 * never followed): one file per file of the set ("fN") and a state file
 * ("state": the URL without query, a digest of the entry's header and
 * catalog, the selection, how far the received bytes are proven, and each
 * file's length and validator). Each file is written byte for byte as it is
 * served (same artifact_id, same catalog), its header and fill checked
 * first (spec 3.1, 3.2). Every object with a digest in metadata.integrity
 * whose files are fetched is hashed as its bytes pass; received bytes count
 * (in the state file, for a later run) only once every such object before
 * them verified. A rerun fetches the entry's header and catalog again and
 * goes on only where they, and each file's length and validator, are as
 * saved (else that file, or everything, starts over). When every object
 * verifies, the set is published (nf_writer_publish_adopted: parts, then
 * the entry, under the directory lock) and the resume directory removed.
 * Nothing is printed.
 */
#ifndef NF_FETCH_H
#define NF_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_util.h"
#include "nf_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *component;  /* "C[,C...]": only the files these need (as
                               ninfer-cat --files --component lists them) */
    bool no_resume;         /* start over, whatever an earlier run left */
    bool require_digests;   /* refuse an artifact without metadata.integrity */
    bool file_digests;      /* SHA-256 of every file published, into the result */
    unsigned jobs;          /* requests at once (0: the client's) */
    nf_write_opts w;        /* force, sync, warnings (also "no digests") */
    nf_progress_fn progress; /* (ctx, bytes received or kept, bytes in all) */
    void *progress_ctx;
} nf_fetch_opts;

typedef struct {
    size_t files;            /* files published */
    uint64_t bytes;          /* bytes received in this run */
    uint64_t resumed;        /* payload bytes an earlier run had proven, kept */
    uint64_t total;          /* bytes of the files published */
    size_t digests_checked;  /* objects hashed and found as metadata.integrity says */
    char **names;            /* the files' names beside the target's entry, entry first */
    char (*sha)[65];         /* with file_digests: each file's SHA-256 */
    size_t n;                /* entries in names and sha */
} nf_fetch_result;

/* Fetch the artifact a (opened with nf_artifact_open from a URL, with
 * check_fill, and free of diagnostics) to target, the entry's path. An
 * existing entry is refused without o->w.force (before any payload is
 * fetched). Returns 0, or -1 with diagnostics: `digest` (exit 1) for an
 * object whose bytes differ, `integrity` with require_digests, the
 * reader's codes for a part's header or length, `io` for the network, the
 * disk and the resume directory; after -1 nothing is published and the
 * resume directory keeps what was proven. r is zeroed first; free it with
 * nf_fetch_result_free. */
int nf_fetch(nf_artifact *a, const char *target, const nf_fetch_opts *o, nf_fetch_result *r,
             nf_diags *d);
void nf_fetch_result_free(nf_fetch_result *r);

#ifdef __cplusplus
}
#endif
#endif
