/* nf_split.h — reshard or merge an artifact (spec 2.3, 11.4; ninfer-split(1)).
 *
 * The logical payload is copied unchanged; only the files table, the file
 * set and the artifact_id change, so objects, bindings, uses and digests
 * carry over. From files, payload bytes move with the kernel's copy path
 * (copy_file_range) unless something must be hashed; from a stream they are
 * read once, carried digests are checked as they pass and missing ones are
 * computed.
 */
#ifndef NF_SPLIT_H
#define NF_SPLIT_H

#include "nf_artifact.h"
#include "nf_diag.h"
#include "nf_writer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Write src anew as o says (files at o->out, or a stream on standard
 * output; o->dry_run: only the plan, handed to the caller). o->verify: also
 * hash every object copied from files and check carried digests. Digests
 * missing from src are computed for file outputs (not for streams, whose
 * catalog precedes the payload) unless o->no_digests. An output naming one
 * of src's files (standard output too) is `usage` before anything is
 * written. Progress goes to o->progress; nothing is printed. Returns 0 or
 * -1 with diagnostics; on failure nothing is published. */
int nf_split(nf_artifact *src, const nf_out_opts *o, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
