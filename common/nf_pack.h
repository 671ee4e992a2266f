/* nf_pack.h — build an artifact from a manifest (DESIGN 5; spec 11.4).
 *
 * Each object's `source` is resolved to the exact encoded bytes of the
 * object: byte ranges of files (raw files, safetensors tensors, objects of
 * existing artifacts) or bytes made from inline values. Sources already in
 * the object's encoding are copied (BF16 -> bf16, F32 -> fp32, I32 -> int32,
 * identical format/layout/shape from an artifact, any bytes into a
 * resource); a source whose encoding differs is `unsupported` until the
 * codecs can transcode it. Objects are laid out in array order, written
 * through the crash-safe writer, and their SHA-256 digests recorded in
 * metadata.integrity (DESIGN 9).
 */
#ifndef NF_PACK_H
#define NF_PACK_H

#include <stddef.h>
#include "nf_cli.h"
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pack the manifest text[0..len). base_dir resolves relative source paths
 * (the manifest's directory, or "." for stdin). Output and options as wc
 * says. Returns 0 or -1 with diagnostics (schema/reference/size for bad
 * sources, unsupported for transcoding, io for unreadable sources). */
int nf_pack(const char *text, size_t len, const char *base_dir, const nf_writer_cli *wc,
            nf_diags *d);

#ifdef __cplusplus
}
#endif
#endif
