/* nf_stream.h — an artifact written out as the stream form (ninfer(5) The
 * stream form; spec 3.1, 11.2, 11.4): the entry header, the catalog, the
 * fill to the payload, then the logical payload, as ninfer-cat writes it to a
 * pipe; and payload ranges of an artifact copied to an output.
 *
 * Errors: each call returns 0 or -1. On -1, *out_err is the errno of a
 * failed write to out (the caller names its output in the message), or 0
 * when the failure is the artifact's, told in d (io, length, bounds,
 * part-missing...). Nothing is printed.
 */
#ifndef NF_STREAM_H
#define NF_STREAM_H

#include <stdint.h>

#include "nf_artifact.h"
#include "nf_io.h"
#include "nf_writer.h" /* nf_write_opts */

#ifdef __cplusplus
extern "C" {
#endif

/* Copy logical payload [off, off+len) of a to out. A file artifact checks
 * every file the range needs first (nothing is written when one fails) and
 * copies with nf_output_copy_from (sendfile when out is plain); a stream is
 * read in order, skipping to off (the range must not start before what was
 * read already). [off, off+len) must lie in the payload (`bounds`). */
int nf_stream_write_range(nf_artifact *a, uint64_t off, uint64_t len, nf_output *out,
                          int *out_err, nf_diags *d);

/* The whole artifact as a stream (ninfer(5)). One file: byte for byte (its
 * header, the stored catalog and its trailing spaces, fill, payload), the
 * artifact_id too unless wo gives one (NF_ID_GIVEN). Parts: a new
 * single-file framing of the same catalog without them (a new file set, so
 * a new artifact_id, spec 11.4: random, or as wo says: NF_ID_REPRODUCIBLE
 * derives it from the catalog, which needs every object's digest,
 * nf_write_id_check; digests carry over). wo may be NULL (random). */
int nf_stream_write(nf_artifact *a, const nf_write_opts *wo, nf_output *out, int *out_err,
                    nf_diags *d);

/* Streams: read what is left of the payload and check that the stream ends
 * there (`length` for a short or long stream; a corrupt or unfinished zstd
 * frame is found here too). A no-op for file artifacts. Returns 0 or -1. */
int nf_stream_drain(nf_artifact *a, nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
