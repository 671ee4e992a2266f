/* nf_writer.h — the artifact writer (spec 2.1, 2.3, 3, 11.4; ninfer-split(1)).
 *
 * Planning: nf_plan_make serializes the catalog and computes the files
 * table with the spec 2.3 capacity formulas, reserving JSON space with
 * trailing whitespace so the table is settled before any payload moves.
 *
 * Writing to files (ninfer-split(1): Publication, What is replaced or removed):
 * every file is first a temporary in the target's directory
 * (".NAME.tmp-PID-XXXXXX"), created with the umask's mode; temporaries are
 * removed on failure, on nf_writer_abort and on every catchable signal
 * whose default action ends the process (SIGINT, SIGTERM, SIGHUP, SIGPIPE,
 * SIGQUIT, SIGUSR1/2, SIGALRM, SIGXCPU, SIGVTALRM, SIGPROF, SIGABRT, the
 * real-time signals, ...; not SIGXFSZ, which writers ignore so that an
 * over-large file is EFBIG), however many there are, and the signal is then
 * re-raised with its default action; a signal whose disposition is not the
 * default when the first writer opens is left alone. Threads that run while
 * a writer is open must block asynchronous signals (pack's encoding pool
 * does). Only a few temporaries are open at a
 * time (least recently used ones are closed and reopened by name), so any
 * part count works within a small `ulimit -n`. Publication is serialized by
 * an exclusive flock(2) on the target's directory: under it the writer
 * checks again that the entry is absent (or, with `force`, is the one it
 * set out to replace), blocks catchable signals, publishes the parts, then
 * the entry with renameat2(RENAME_NOREPLACE) (link+unlink where that is
 * missing), and removes the surplus of a replaced set. Of two writers
 * racing for one target the second fails with `io` (exit 3) and leaves
 * nothing of its own.
 *
 * What may be replaced or removed: the entry path only when it is a regular
 * file and `force` is given; a file at one of the new part names only when
 * it is a regular file carrying the part magic that no other entry owns: a
 * leftover (with a warning), or with `force` a part of the set being
 * replaced. An entry (a regular file in the target's directory with the
 * entry magic, any name but the target's own; its 32-byte header read
 * alone, O_NONBLOCK) owns every part carrying its artifact_id (spec 2.1: a
 * renamed entry still reads), and so does a symlink there to an entry
 * elsewhere (a reader looks for the parts beside the path it was given),
 * unless it leads to the target itself; a symlink to anything but a
 * regular file is never opened. A regular file there whose header cannot
 * be read, or that holds the entry magic but is shorter than 32 bytes (a
 * download cut short), counts as owning. Ownership costs one pass over the
 * directory per check, only when a part is in the way or to be removed.
 * After publication: the old set's parts that prove to be its own (part
 * magic, the old artifact_id, the part_index the old files table gives
 * them) at this entry's own part names ("<entry>.part-N": a part named
 * after another entry is kept, with a warning, since a copy of an entry
 * shares its parts; so is one another entry beside it shares), and
 * leftovers ("<entry>.part-N" with the part magic that no entry owns, when
 * there was no entry; each with a warning). Never an input, never a
 * symlink, device, FIFO or directory, never a file outside the target's
 * directory.
 *
 * Replacing (`force`): under the lock the old entry, then each file in the
 * way of a new part, moves aside to ".<name>.old-<pid>"; the new set is
 * published; then the surplus, the moved files and last the old entry are
 * removed. A failure in between removes the new parts and puts everything
 * back. After SIGKILL or a crash mid-publication, the next writer of the
 * same target (at open, under the lock) puts a dead process's moved files
 * back when no entry was published, or removes them and the rest of the
 * old set when one was, with warnings.
 *
 * Writing to a stream (ninfer(5) The stream form): the single-file form, in
 * order. A caller that meets a broken rule mid-payload aborts the writer: the
 * stream is cut short (a zstd frame is left unfinished), and a reader reports
 * `length`.
 */
#ifndef NF_WRITER_H
#define NF_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_catalog.h"
#include "nf_diag.h"
#include "nf_io.h"
#include "nf_util.h" /* nf_progress_fn */

#ifdef __cplusplus
extern "C" {
#endif

/* A warning (not an error: the write goes on) about path: what a writer
 * replaced or removed, or left in place, beside the files it writes. */
typedef void (*nf_warn_fn)(void *ctx, const char *path, const char *msg);

/* How a writer chooses the artifact_id (spec 2.1; ninfer(5), "Reproducible
 * output"): drawn at random (the spec's recommendation), derived from the
 * catalog (nf_catalog_artifact_id: same inputs and options, same bytes),
 * or given. */
enum { NF_ID_RANDOM = 0, NF_ID_REPRODUCIBLE, NF_ID_GIVEN };

typedef struct {
    uint64_t max_file_bytes; /* split limit in bytes (0: one file, spec 2.3) */
    uint64_t json_bytes;     /* exact JSON reservation (0: as needed) */
    bool force;              /* replace an existing entry */
    bool sync;               /* fdatasync files before publishing */
    nf_warn_fn warn;         /* NULL: warnings are dropped (the library prints nothing) */
    void *warn_ctx;
    int id_mode;             /* NF_ID_RANDOM, NF_ID_REPRODUCIBLE, NF_ID_GIVEN */
    unsigned char id[16];    /* NF_ID_GIVEN: the artifact_id */
    /* NF_ID_REPRODUCIBLE asked for by the environment (SOURCE_DATE_EPOCH),
     * not the user: where it cannot be had, a warning and a random id
     * instead of a usage error (nf_write_id_check) */
    bool id_best_effort;
} nf_write_opts;

/* The reproducible artifact_id of a catalog: the first 16 bytes of the
 * SHA-256 of the json_bytes bytes that follow the entry header (the
 * catalog text json[0..len), digests included, then json_bytes - len
 * spaces), so that it changes with any byte of the payload the digests
 * cover and with nothing else. */
void nf_catalog_artifact_id(const char *json, size_t len, uint64_t json_bytes,
                            unsigned char id[16]);

/* Before a writer opens: NF_ID_REPRODUCIBLE needs a catalog whose every
 * object carries its digest (digests_missing == 0: a stream from ninfer-pack
 * carries none), or the id would not cover the payload. Otherwise: with
 * id_best_effort, a warning (about out, the output, through o->warn) and
 * NF_ID_RANDOM in *o; without, `usage` and -1. Returns 0 or -1. */
int nf_write_id_check(nf_write_opts *o, size_t digests_missing, const char *what,
                      const char *out, nf_diags *d);

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

/* Where and how nf_split and nf_pack write a whole artifact (ninfer-split(1),
 * ninfer-pack(1)). */
typedef struct {
    nf_write_opts w;         /* limits, force, sync, warnings */
    const char *out;         /* the entry path; NULL or "-": a stream on
                                standard output (descriptor 1) */
    int zstd;                /* a stream's zstd level (0: plain) */
    bool no_digests;         /* no metadata.integrity */
    bool verify;             /* split: hash objects copied from files too */
    bool text_stdout;        /* the caller prints text on standard output (a
                                --report table, a --dry-run plan): refused,
                                as a stream is, when standard output is a
                                file read (nf_stdout_check), before anything
                                is written */
    nf_plan *dry_run;        /* non-NULL: plan only, write nothing; the plan
                                (files table, reservation) is moved here for
                                the caller to show and nf_plan_free */
    nf_progress_fn progress; /* NULL: none */
    void *progress_ctx;
} nf_out_opts;

typedef struct nf_writer nf_writer;

/* Begin writing files for target (the entry path). inputs: paths of files
 * being read (entry and parts of sources, manifests; "-" is standard input,
 * for a file redirected to it); an output path naming
 * one of them (through a symlink or a hard link too) is refused (`usage`,
 * exit 2) before anything is written, and so is an entry or part path that
 * is a directory, FIFO, device, socket or symlink (`usage`). An existing
 * entry without o->force is refused (`io`), with it a part at the entry
 * path that another entry beside it owns (or may own), and so is a regular file
 * without the part magic at one of the new part names, or a part there
 * that another entry beside it owns (or may own: a file whose header cannot
 * be read). What a writer of this target killed mid-publication left aside
 * is put back or removed first (see above). A missing output directory is
 * created. The checks are made again under the directory lock when the set
 * is published (nf_writer_finish). Cost: one stat per input and per planned
 * file (inputs are sorted once), and one pass over the directory when a part
 * is in the way. Not thread-safe: one thread drives a writer. */
nf_writer *nf_writer_open_files(const char *target, const nf_plan *plan,
                                const nf_write_opts *o, const char *const *inputs,
                                size_t n_inputs, nf_diags *d);

/* Begin writing a stream to out (header, final JSON, fill). o (NULL: a
 * random id) chooses the artifact_id; the other options are ignored. */
nf_writer *nf_writer_open_stream(nf_output *out, const nf_plan *plan, const nf_write_opts *o,
                                 nf_diags *d);

/* Write payload bytes at logical offset off. Streams need off >= the
 * current position (gaps are written as zeros). Returns 0 or -1 (`io`;
 * `io` also when more files are needed at once than the process may open). */
int nf_writer_write(nf_writer *w, uint64_t off, const void *buf, size_t n, nf_diags *d);

/* Copy n bytes from src_fd at src_off to logical offset off with the
 * kernel's copy path (copy_file_range; pread/pwrite fallback). Files only.
 * Returns 0 or -1. */
int nf_writer_copy(nf_writer *w, uint64_t off, int src_fd, uint64_t src_off, uint64_t n,
                   nf_diags *d);

/* Finish: (files) write the final catalog text json[0..len) (len must be
 * <= the reservation; padded with spaces), the headers (with
 * NF_ID_REPRODUCIBLE the id derived from that text first), sync, then
 * publish under the directory lock with catchable signals blocked (see
 * above): the old entry and what is in the way moved aside, the parts,
 * then the entry, then the surplus and what was moved aside removed. A
 * signal that arrives meanwhile takes effect once the set is complete.
 * (streams) pad the payload to its end and flush. Returns 0 or -1; on -1
 * nothing is published (`io` when another writer published the target
 * meanwhile), what was moved aside is back and temporaries are gone. The
 * writer is freed either way. */
int nf_writer_finish(nf_writer *w, const char *json, size_t len, nf_diags *d);

/* nf_writer_finish with the catalog c serialized against the writer's own
 * files table (files), with metadata.integrity when digests is true; a
 * stream writer's catalog was written when it opened. The same publication
 * rules and result; the writer is freed either way. */
int nf_writer_finish_catalog(nf_writer *w, const nf_catalog *c, bool digests, nf_diags *d);

/* Abandon: remove temporaries, free. */
void nf_writer_abort(nf_writer *w);

/* The writer's artifact_id (16 raw bytes; with NF_ID_REPRODUCIBLE for
 * files, final only once the catalog is, in nf_writer_finish). */
const unsigned char *nf_writer_artifact_id(const nf_writer *w);

/* A set whose files the caller writes itself, byte for byte as they are to
 * be published (ninfer-fetch: a download keeps its artifact_id), and
 * publishes through the writer's rules: names[0..n) are the file names
 * (names[0] unused: the entry is target; names[i] part file names beside
 * it). The checks of nf_writer_open_files (an existing entry without
 * o->force, files in the way of the part names) are made now, and a
 * missing output directory is made; no temporary is made and no signal
 * handler removes the caller's files. NULL with a diagnostic. */
nf_writer *nf_writer_open_adopt(const char *target, char *const *names, size_t n,
                                const unsigned char id[16], const nf_write_opts *o, nf_diags *d);

/* Publish tmp[0..n) (the caller's finished, synced files, on target's file
 * system) as nf_writer_finish publishes: under the directory lock with
 * catchable signals held back, the checks made again, parts first, then
 * the entry (never replacing one it did not check), then the replaced
 * set's surplus (with o->force, the old entry and what is in the way move
 * aside first and go once the new set is in place). On failure the parts
 * already moved are moved back to their tmp paths and what was moved aside
 * is put back; the caller's files are never removed. Frees w. Returns 0 or
 * -1 with a diagnostic. */
int nf_writer_publish_adopted(nf_writer *w, char *const *tmp, nf_diags *d);


/* ---- single-file outputs (outputs that are not regular files) --------------
 *
 * For outputs that are one file (ninfer-import -o, ninfer-quant -o, the
 * importer's side files): a path that is, or is a symlink to, a character
 * device, FIFO or socket is written through (-o /dev/null, -o /dev/stdout);
 * a path naming the file standard output already writes to is written
 * through standard output; a directory is refused (`usage`); an existing
 * regular file is refused without `force` (`io`) and with it replaced
 * atomically (a temporary beside the file the path resolves to, renamed over
 * it: a symlink stays a symlink); a missing file is created the same way,
 * missing directories first, and published with RENAME_NOREPLACE (`io` when
 * something appeared there meanwhile). A path naming an input (inputs[],
 * compared by device and inode; "-" is standard input) is refused (`usage`),
 * with or without force. Diagnostics name the
 * path. */

/* Standard output against the inputs (the same comparison, "-" too):
 * when it is a regular file that is one of them (`>> input`, `1<> input`),
 * `usage` naming "(stdout)" and -1, before anything is written (exit 2);
 * else 0 (a pipe, terminal or device is never an input). */
int nf_stdout_check(const char *const *inputs, size_t n_inputs, nf_diags *d);

/* Check path as nf_write_file would, writing nothing (so a command can
 * refuse before doing its work). Returns 0 or -1 with a diagnostic. */
int nf_output_file_check(const char *path, bool force, const char *const *inputs,
                         size_t n_inputs, nf_diags *d);

/* Write buf[0..n) to path by the rules above. Returns 0 or -1 with a
 * diagnostic; on -1 no file is left behind (a write-through target may hold
 * what was written before the error). */
int nf_write_file(const char *path, const void *buf, size_t n, bool force,
                  const char *const *inputs, size_t n_inputs, nf_diags *d);

/* The same output written piece by piece (a file larger than memory: an
 * export). nf_file_out_open decides as nf_write_file does (path NULL:
 * standard output, checked against the inputs by nf_stdout_check) and gives
 * a descriptor: a temporary beside the target (nf_file_out_regular: pwrite
 * and copy_file_range work at any offset), or the target itself when it is
 * written through (a device, FIFO, socket, standard output: write in order).
 * The temporary is removed by nf_file_out_abort, by a failed
 * nf_file_out_finish and on every catchable signal (as the artifact
 * writer's are); nf_file_out_finish (sync: fdatasync first) publishes it
 * (RENAME_NOREPLACE, or over the file --force replaces) and frees the
 * handle either way. At most four are open at once. Diagnostics name the
 * path ("(stdout)" for standard output). */
typedef struct nf_file_out nf_file_out;
#define NF_STDOUT_PATH "(stdout)"
nf_file_out *nf_file_out_open(const char *path, bool force, const char *const *inputs,
                              size_t n_inputs, nf_diags *d);
int nf_file_out_fd(const nf_file_out *f);
bool nf_file_out_regular(const nf_file_out *f);
const char *nf_file_out_name(const nf_file_out *f);
int nf_file_out_finish(nf_file_out *f, bool sync, nf_diags *d);
void nf_file_out_abort(nf_file_out *f);

/* ---- directory outputs (a directory as a whole; ninfer-export(1) Outputs) ---
 *
 * A directory written as one output (ninfer-export --safetensors): the
 * target must be absent or an empty directory; one with entries is kept
 * (`io`) unless force, which replaces it as a whole (the old tree removed
 * after the new one is in place); a path that is a regular file, symlink,
 * device or FIFO is refused (`usage`), and so is '.', '..', '/', and a
 * directory holding one of the inputs. Files are made in a temporary
 * directory beside the target (".NAME.tmp-PID-XXXXXX", missing parents
 * made), removed with them on failure, abort or any catchable signal;
 * nf_dir_out_finish renames it into place under the parent's lock
 * (RENAME_NOREPLACE when absent; over an empty directory with rename(2),
 * which fails when it is no longer empty; RENAME_EXCHANGE with force) and
 * frees the handle either way. One directory output at a time. */
typedef struct nf_dir_out nf_dir_out;
nf_dir_out *nf_dir_out_open(const char *dir, bool force, const char *const *inputs,
                            size_t n_inputs, nf_diags *d);
/* Create the file `name` in it (write only; the caller closes the
 * descriptor). name must be a safe file name (nf_safe_file_name), else
 * `schema`. Returns the descriptor or -1 with a diagnostic. */
int nf_dir_out_create(nf_dir_out *o, const char *name, nf_diags *d);
int nf_dir_out_finish(nf_dir_out *o, bool sync, nf_diags *d);
void nf_dir_out_abort(nf_dir_out *o);

/* Is s[0..len) a name a file can have in one directory: not empty, no '/',
 * no U+0000, not "." or ".."? */
bool nf_safe_file_name(const char *s, size_t len);

#ifdef __cplusplus
}
#endif
#endif
