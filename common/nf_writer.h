/* nf_writer.h — the artifact writer (spec 2.1, 2.3, 3, 11.4; DESIGN 3, 4).
 *
 * Planning: nf_plan_make serializes the catalog and computes the files
 * table with the spec 2.3 capacity formulas, reserving JSON space with
 * trailing whitespace so the table is settled before any payload moves.
 *
 * Writing to files: every file is first a temporary in the target's
 * directory (".NAME.tmp-PID-XXXXXX"); continuation parts are published
 * (renamed) before the entry; an existing entry is never replaced without
 * `force`; temporaries are removed on failure, on nf_writer_abort and on
 * SIGINT/SIGTERM/SIGHUP/SIGPIPE. Writing to a stream (DESIGN 4): the
 * single-file form, in order.
 */
#ifndef NF_WRITER_H
#define NF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_diag.h"
#include "nf_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint64_t max_file_bytes; /* split limit in bytes (0: one file, spec 2.3) */
    uint64_t json_bytes;     /* exact JSON reservation (0: as needed) */
    bool force;              /* replace an existing entry */
    bool sync;               /* fdatasync files before publishing */
} nf_write_opts;

typedef struct {
    nf_file *files;          /* the files table (paths owned) */
    size_t n_files;
    uint64_t json_bytes;     /* reserved catalog bytes (header field) */
    uint64_t entry_payload_start;
    char *json;              /* serialized catalog, json_len <= json_bytes */
    size_t json_len;
} nf_plan;

#define NF_MAX_PARTS 1000000 /* continuation parts a writer will plan */

/* Compute the files table for a payload of `payload` bytes:
 * single file when eps + payload <= limit (or limit == 0), else
 * entry_capacity = floor((limit - eps)/4096)*4096 and
 * part_capacity = floor((limit - 4096)/4096)*4096 (spec 2.3), both > 0.
 * Part paths are "<entry_name>.part-NNNN" (spec 2.1). Returns 0, or -1
 * with a `usage` diagnostic when the limit cannot hold the headers or would
 * need NF_MAX_PARTS parts or more. */
int nf_plan_files(uint64_t payload, uint64_t eps, uint64_t limit, const char *entry_name,
                  nf_file **files, size_t *n_files, nf_diags *d);

/* Plan a whole artifact: objects must have offsets/bytes and
 * cat->payload_bytes must be set. digests: write metadata.integrity from the
 * objects' sha256 fields (callers that compute digests while writing put 64
 * '0' placeholders first: the final text then has the same length).
 * Returns 0 or -1 (json-bytes too small: `usage`). */
int nf_plan_make(const nf_catalog *cat, const nf_write_opts *o, const char *entry_name,
                 bool digests, nf_plan *plan, nf_diags *d);
void nf_plan_free(nf_plan *plan);

/* Serialize the files table as the catalog shows it (for --dry-run). */
char *nf_plan_files_json(const nf_plan *plan, bool pretty);

typedef struct nf_writer nf_writer;

/* Begin writing files for target (the entry path). inputs: paths of files
 * being read (entry and parts of sources); an output path naming one of
 * them is refused (`usage`) before anything is written. An existing entry
 * without o->force is refused (`io`). Leftover parts with no entry are
 * replaced (a warning goes to d as nothing; callers may print). */
nf_writer *nf_writer_open_files(const char *target, const nf_plan *plan,
                                const nf_write_opts *o, const char *const *inputs,
                                size_t n_inputs, nf_diags *d);

/* Begin writing a stream to out (header, final JSON, fill). */
nf_writer *nf_writer_open_stream(nf_output *out, const nf_plan *plan, nf_diags *d);

/* Write payload bytes at logical offset off. Streams need off >= the
 * current position (gaps are written as zeros). Returns 0 or -1 (`io`). */
int nf_writer_write(nf_writer *w, uint64_t off, const void *buf, size_t n, nf_diags *d);

/* Copy n bytes from src_fd at src_off to logical offset off with the
 * kernel's copy path (copy_file_range; pread/pwrite fallback). Files only.
 * Returns 0 or -1. */
int nf_writer_copy(nf_writer *w, uint64_t off, int src_fd, uint64_t src_off, uint64_t n,
                   nf_diags *d);

/* Finish: (files) write the final catalog text json[0..len) (len must be
 * <= the reservation; padded with spaces), the headers, sync, publish parts
 * then the entry, remove surplus parts of a replaced set. (streams) pad the
 * payload to its end and flush. Returns 0 or -1; on -1 nothing is
 * published and temporaries are gone. The writer is freed either way. */
int nf_writer_finish(nf_writer *w, const char *json, size_t len, nf_diags *d);

/* nf_writer_finish with the catalog c serialized against the writer's own
 * files table (files), with metadata.integrity when digests is true; a
 * stream writer's catalog was written when it opened. The same publication
 * rules and result; the writer is freed either way. */
int nf_writer_finish_catalog(nf_writer *w, const nf_catalog *c, bool digests, nf_diags *d);

/* Abandon: remove temporaries, free. */
void nf_writer_abort(nf_writer *w);

/* The artifact_id the writer drew (16 raw bytes). */
const unsigned char *nf_writer_artifact_id(const nf_writer *w);

/* Print (to stderr, prefixed by prog) warnings about replaced leftovers. */
void nf_writer_set_prog(const char *prog);

#ifdef __cplusplus
}
#endif
#endif
