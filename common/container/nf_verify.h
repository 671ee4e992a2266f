/* nf_verify.h — what ninfer-verify checks, as one library call (spec 11.1,
 * 11.2; ninfer-verify(1)): the entry and catalog (done by nf_artifact_open),
 * every file's header, length and fill, formats this build does not know,
 * the object digests of metadata.integrity, and with `deep` every tensor's
 * codes (ninfer-formats(7) Formats). Diagnostics only: nothing printed.
 */
#ifndef NF_VERIFY_H
#define NF_VERIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_util.h" /* nf_progress_fn */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* NULL: the whole artifact. "C[,C...]": only what these components
     * need (spec 4.2, 11.1: a partial download): the entry, the files that
     * hold their objects and those objects' digests; targets come along
     * (mtp brings text). Unknown IDs are `component` diagnostics. */
    const char *component;
    bool no_digests;      /* skip object digests: structure only */
    /* also the SHA-256 of every file checked (all, or the selection's), in
     * the same read as the object digests: one read of each file
     * (nf_verify_result.file_sha; of a URL artifact, from the bytes as they
     * arrive, nothing written to disk). Not for streams. */
    bool file_digests;
    /* no digest checked (none in metadata.integrity for what is selected)
     * is an `integrity` diagnostic (exit 1); digests left unchecked by a
     * missing or broken file add nothing (that file's diagnostic fails
     * the run) */
    bool require_digests;
    bool deep;            /* also nf_codec_validate every tensor (files only) */
    unsigned threads;     /* hashing threads; 0 = every CPU */
    /* hashing progress, called with (progress_ctx, bytes hashed, total) from
     * the hashing threads (rate-limit it yourself); NULL for none */
    nf_progress_fn progress;
    void *progress_ctx;
} nf_verify_opts;

/* One digest that did not match (a `digest` diagnostic): which diagnostic
 * of d and which object (index into the catalog's objects). */
typedef struct {
    size_t diag;
    size_t object;
} nf_verify_mismatch;

typedef struct {
    size_t digests_checked;  /* digests computed and compared (equal or not) */
    /* objects whose digest should have been checked and was not (a file
     * missing or broken, a range error, a stream cut short), in catalog
     * order: indices into the catalog's objects */
    size_t *unchecked, n_unchecked;
    nf_verify_mismatch *mismatch;
    size_t n_mismatch;
    /* [n_files] the files checked (every one, or those the selection
     * needs, the entry always); NULL for a stream */
    bool *files;
    size_t n_files;
    /* [n_files] with file_digests: each checked file's SHA-256 (64 hex),
     * "" where it was not computed (the file missing or broken); else NULL */
    char (*file_sha)[65];
    /* with a component selection: [n_components] the components checked
     * (targets included) and [n_objects] the objects they need; else NULL */
    bool *components, *objects;
} nf_verify_result;

/* Verify the artifact a (opened by nf_artifact_open with check_fill, or by
 * nf_artifact_open_stream: a stream is read to its end once, hashing as it
 * passes; files are not checked, `deep` is ignored). A URL artifact's
 * digests are computed as its ranges arrive (nf_scan: the files the
 * selection needs, fetched in parallel, nothing written to disk). Adds every finding to
 * d (file, JSON Pointer, code, message: ninfer-verify(1) DIAGNOSTICS) and
 * fills r (zeroed first; free it with nf_verify_result_free). Returns
 * nf_diags_exit(d): 0 valid, 1 a rule broken, 3 I/O, 4 unsupported. Out of
 * memory is an `io` diagnostic. */
int nf_verify(nf_artifact *a, const nf_verify_opts *o, nf_verify_result *r, nf_diags *d);

void nf_verify_result_free(nf_verify_result *r);

/* Where the bytes of object o lie (spec 11.2's mapping of the logical
 * payload to files): up to max segments {file index, offset in that file,
 * bytes}, in order. Returns how many segments there are (which may exceed
 * max: only max are written). Not for streams. (nf_segment: nf_artifact.h) */
size_t nf_object_segments(const nf_artifact *a, const nf_object *o, nf_segment *seg, size_t max);

/* Where object o's bytes lie, for a message: "; its bytes: FILE bytes
 * [off, +n), ..." (up to 8 segments, then "and N more"), cut to fit
 * text[0..tn). Returns the path of the one file holding all of them, or
 * NULL when they span several (the entry path is then the one to name).
 * Not for streams. */
const char *nf_object_segments_text(const nf_artifact *a, const nf_object *o, char *text,
                                    size_t tn);

#ifdef __cplusplus
}
#endif
#endif
