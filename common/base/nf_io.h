/* nf_io.h — byte streams in and out (ninfer(5) The stream form), the one
 * module that calls zstd.
 *
 * An input wraps a file descriptor; a zstd frame at its start (magic
 * 28 b5 2f fd) is detected and decompressed transparently. An output wraps
 * a file descriptor and optionally compresses what is written to it.
 * Errors carry errno-style codes; messages are left to the caller.
 */
#ifndef NF_IO_H
#define NF_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nf_input nf_input;

/* Wrap fd (not closed by nf_input_close unless own_fd). Peeks at the first
 * bytes to detect zstd. Returns NULL on allocation failure. */
nf_input *nf_input_open_fd(int fd, bool own_fd);

/* The same over a read function (a whole file received over HTTP,
 * nf_rfile.h): rd gives up to n bytes into buf, 0 at the end, -1 on an error,
 * whose text err (when not NULL) gives for nf_input_error; close_fn (when not
 * NULL) is called by nf_input_close, or here when out of memory. */
typedef ssize_t (*nf_read_fn)(void *ctx, void *buf, size_t n);
nf_input *nf_input_open_fn(nf_read_fn rd, const char *(*err)(void *ctx), void (*close_fn)(void *ctx),
                           void *ctx);

/* Read exactly n bytes unless the stream ends first. Returns the number of
 * bytes read (< n only at the end of the stream), or -1 with errno set
 * (the read's errno, or EBADMSG for a fault in zstd data, whose kind
 * nf_input_fault() gives and whose detail nf_input_error() names). */
ssize_t nf_input_read(nf_input *in, void *buf, size_t n);

/* What the last failed nf_input_read met (ninfer(5) The stream form;
 * the codes of ninfer-verify(1) DIAGNOSTICS): NF_IN_IO a read
 * error (exit 3); NF_IN_CORRUPT a corrupt zstd frame (`zstd`, exit 1);
 * NF_IN_TRUNCATED a zstd stream that ends inside a frame and
 * NF_IN_TRAILING bytes after the last frame that are no frame (both
 * `length`, exit 1). */
typedef enum {
    NF_IN_OK = 0, NF_IN_IO, NF_IN_CORRUPT, NF_IN_TRUNCATED, NF_IN_TRAILING,
    NF_IN_WINDOW, /* a frame whose window is over the decoder's 128 MiB (zstd
                     --long=28..31): `unsupported` (exit 4); nf_input_error
                     says how large it is */
} nf_in_fault;
nf_in_fault nf_input_fault(const nf_input *in);

/* Skip n bytes (reading them). Returns bytes skipped or -1. */
ssize_t nf_input_skip(nf_input *in, uint64_t n);

/* Bytes delivered so far (decompressed bytes for zstd input). */
uint64_t nf_input_pos(const nf_input *in);
bool nf_input_is_zstd(const nf_input *in);
/* Text of the last decompression error (or a read function's error), or NULL. */
const char *nf_input_error(const nf_input *in);
void nf_input_close(nf_input *in);

typedef struct nf_output nf_output;

/* Wrap fd for writing; zstd_level 0 writes plain bytes, 1..22 compresses
 * (negative levels are zstd's fast levels). Returns NULL on failure. */
nf_output *nf_output_open_fd(int fd, int zstd_level, bool own_fd);
/* Write all n bytes. Returns 0, or -errno (EPIPE, ENOSPC, EIO...). */
int nf_output_write(nf_output *out, const void *buf, size_t n);
/* Flush compressed data (ends the zstd frame). Returns 0 or -errno. */
int nf_output_finish(nf_output *out);
uint64_t nf_output_pos(const nf_output *out); /* uncompressed bytes written */
void nf_output_close(nf_output *out);

/* Copy len bytes of in_fd, from offset off, to out: when out is not
 * compressed, the kernel copies into a regular file whose position is at
 * the same offset within a page as off (copy_file_range(2)) and into a pipe
 * or socket (sendfile(2)); otherwise, and compressed, through a buffer;
 * out's position advances by len either way. Returns 0;
 * -errno when writing (or allocating) failed; NF_COPY_READ when reading
 * in_fd failed; NF_COPY_SHORT when in_fd ended first. */
enum { NF_COPY_READ = 1, NF_COPY_SHORT = 2 };
int nf_output_copy_from(nf_output *out, int in_fd, uint64_t off, uint64_t len);

/* Write all of buf to fd at the current position / at off, retrying short
 * writes and EINTR. Return 0 or -errno. */
int nf_write_all(int fd, const void *buf, size_t n);
int nf_pwrite_all(int fd, const void *buf, size_t n, uint64_t off);
/* Read exactly n bytes at off. Returns bytes read (short only at EOF) or
 * -errno. */
ssize_t nf_pread_full(int fd, void *buf, size_t n, uint64_t off);

/* ---- whole files: the one home of "read it all" (manifests, configs,
 * indexes, recipes, sums files) ---- */

/* Read fd to its end into *out (malloc'ed, one NUL after the *len bytes).
 * At most cap bytes: more is -EFBIG, and *out then holds the first bytes
 * (a regular file larger than cap is not read past its first 64 KiB), so
 * the caller can say what the file is; the caller frees *out in every
 * case. Returns 0, -EFBIG, -ENOMEM or a read's -errno (*out NULL). */
int nf_read_all(int fd, uint64_t cap, char **out, size_t *len);

/* nf_read_all of path ("-": standard input, not closed). regular: the path
 * must be a regular file (-EINVAL otherwise, found without blocking on a
 * FIFO); else a FIFO or device is read to its end too. An open failure is
 * its -errno. */
int nf_read_path(const char *path, bool regular, uint64_t cap, char **out, size_t *len);

/* ---- descriptors opened lazily, closed least recently used first ----
 *
 * Any number of input files within a small `ulimit -n` (ninfer-pack(1)). A
 * pool keeps at most `cap` of its files open; a file closed to save descriptors
 * is reopened by path when next pinned, and must then still be the file
 * first opened (device, inode, size and mtime: else -ESTALE). When open()
 * meets EMFILE/ENFILE the pool closes its own idle descriptors, then asks
 * every other registered cache (other pools, the artifact reader) to close
 * theirs, then waits for a pin held by another thread. Thread-safe. */

/* The soft limit of descriptors one cache keeps open: RLIMIT_NOFILE / 8,
 * clamped to 2..64. */
size_t nf_fd_cap(void);

/* A cache's "close your idle descriptors" hook (it must not block: take its
 * lock with trylock). nf_fd_reclaimer_add returns a slot for
 * nf_fd_reclaimer_remove (-1: out of memory, and it is not asked);
 * nf_fd_reclaim(self) calls every hook but self's. Cost: one scan of the
 * registered caches per EMFILE. */
typedef void (*nf_fd_reclaim_fn)(void *ctx);
int nf_fd_reclaimer_add(nf_fd_reclaim_fn fn, void *ctx);
void nf_fd_reclaimer_remove(int slot);
void nf_fd_reclaim(void *self);

typedef struct nf_fdpool nf_fdpool;
typedef struct nf_fdref nf_fdref;

/* A pool keeping at most cap descriptors open (0: nf_fd_cap()). NULL: out
 * of memory. nf_fdpool_free closes every descriptor and frees every ref. */
nf_fdpool *nf_fdpool_new(size_t cap);
void nf_fdpool_free(nf_fdpool *p);

/* Add the open regular file fd (the pool takes it) read from path (kept for
 * reopening; a relative path is relative to the working directory, which
 * must not change). Its identity is taken now. NULL: out of memory (fd is
 * closed). */
nf_fdref *nf_fdpool_add(nf_fdpool *p, const char *path, int fd);
/* Open path (a regular file, read only; never blocking on a FIFO) and add
 * it to p, freeing descriptors as nf_fdref_pin does when the process has
 * none left. Returns 0 with *out, or -errno (-ENOENT, -EISDIR, -EINVAL: not
 * a regular file, -EMFILE: none could be had, -ENOMEM). */
int nf_fdpool_open(nf_fdpool *p, const char *path, nf_fdref **out);
const char *nf_fdref_path(const nf_fdref *r);
uint64_t nf_fdref_size(const nf_fdref *r); /* bytes, when it was added */

/* Pin r open: the fd stays valid until nf_fdref_unpin. Returns the fd or
 * -errno (-EMFILE when no descriptor can be had, -ESTALE when the path no
 * longer names the file first opened). */
int nf_fdref_pin(nf_fdref *r);
void nf_fdref_unpin(nf_fdref *r);
/* The descriptor of a ref the caller holds pinned. */
int nf_fdref_fd(const nf_fdref *r);

/* nf_pread_full through a pin. */
ssize_t nf_fdref_pread(nf_fdref *r, void *buf, size_t n, uint64_t off);

#ifdef __cplusplus
}
#endif
#endif
