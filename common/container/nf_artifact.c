/* nf_artifact.c — entry/part opening, header checks and range reads. */
#include "nf_artifact.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_util.h"

const unsigned char NF_ENTRY_MAGIC[8] = {0x4e, 0x49, 0x4e, 0x46, 0x45, 0x52, 0x00, 0x03};
const unsigned char NF_PART_MAGIC[8] = {0x4e, 0x49, 0x4e, 0x50, 0x52, 0x54, 0x00, 0x03};

enum { F_UNOPENED = 0, F_GOOD, F_FAILED };

/* An open file: part files are opened when a read needs them and closed
 * again, least recently used first, when more than `cap` are open and none
 * of them is in use (pinned by a read in progress). */
typedef struct {
    int fd;          /* -1: free */
    size_t file;
    unsigned pins;
    uint64_t used;
} fslot;

struct nf_artifact {
    char *path, *dir;
    nf_header h;
    char *json;       /* the catalog text without its trailing spaces */
    size_t json_len;
    uint64_t json_pad; /* spaces after it: json_len + json_pad == json_bytes */
    nf_catalog *cat;
    nf_open_opts opts;
    /* files */
    size_t n_files;
    char **file_paths;
    unsigned char *fstate;  /* F_GOOD: checked (open or not) */
    fslot *slots;
    size_t n_slots, cap;    /* slots in use, soft limit of open files */
    uint64_t tick;
    bool emfile_said;       /* "too many open files" reported once */
    int rec_slot;           /* nf_fd_reclaimer_add, once a part is open */
    pthread_mutex_t lock;
    pthread_cond_t unpinned; /* a pin was released */
    /* stream */
    nf_input *in;
    uint64_t spos;
};

/* Open a path for reading without blocking on FIFOs, and insist on a
 * regular file. Returns fd or -errno (-EINVAL: not a regular file). */
static int open_regular(const char *path, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *size = (uint64_t)st.st_size;
    return fd;
}

static int check_fill_fd(nf_artifact *a, size_t i, int fd, nf_diags *d);

/* The entry's fill buf[0..n) begins with JSON whitespace and holds nothing
 * else but zeros after it: the catalog's padding runs on past json_bytes,
 * which is too small (a fault of the header, not of the fill). */
static bool fill_is_padding(const unsigned char *buf, size_t n)
{
    size_t k = 0;
    while (k < n && (buf[k] == ' ' || buf[k] == '\t' || buf[k] == '\n' || buf[k] == '\r'))
        k++;
    if (k == 0)
        return false;
    for (; k < n; k++)
        if (buf[k])
            return false;
    return true;
}

/* The record of the entry's fill buf[0..n) at file offset from, whose byte
 * k is the first nonzero one. */
static void entry_fill_fault(nf_diags *d, const char *file, const unsigned char *buf, size_t n,
                             size_t k, uint64_t from)
{
    if (fill_is_padding(buf, n))
        nf_diag_addf(d, NF_C_HEADER, file, "",
                     "json_bytes ends the catalog inside its trailing whitespace (it goes on "
                     "after byte %llu): the header's length is too small",
                     (unsigned long long)from);
    else
        nf_diag_addf(d, NF_C_FILL, file, "", "nonzero fill byte at offset %llu",
                     (unsigned long long)(from + k));
}

static const char *open_error(int e)
{
    if (e == -EINVAL)
        return "not a regular file (a FIFO, socket or device)";
    if (e == -EISDIR)
        return "is a directory";
    return strerror(-e);
}

/* What a file that is no artifact most likely is, said as a next step for a
 * newcomer (a GGUF or a checkpoint given to verify, a compressed stream
 * given as a path, a manifest given where an artifact goes); "" else. */
static const char *magic_hint(const unsigned char raw[32])
{
    if (memcmp(raw, "version https://git-lfs.github.", 31) == 0)
        return ": this is a Git LFS pointer, not the file (fetch it: git lfs pull)";
    if (memcmp(raw, "GGUF", 4) == 0)
        return ": this is a GGUF file (import it with ninfer-import, then ninfer-pack)";
    if (memcmp(raw, "\x28\xb5\x2f\xfd", 4) == 0 ||
        ((raw[0] & 0xf0) == 0x50 && memcmp(raw + 1, "\x2a\x4d\x18", 3) == 0))
        return ": this is a zstd-compressed file (a compressed stream is read from standard "
               "input: '- < FILE')";
    /* safetensors: an 8-byte little-endian header length, then the JSON */
    uint64_t hl = nf_load_le64(raw);
    if (raw[8] == '{' && hl >= 2 && hl < ((uint64_t)1 << 40))
        return ": this looks like a safetensors file (import its checkpoint with ninfer-import)";
    size_t i = 0;
    while (i < 32 && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r'))
        i++;
    if (i < 32 && raw[i] == '{')
        return ": this looks like JSON (a manifest is packed into an artifact by ninfer-pack)";
    return "";
}

int nf_header_parse(const unsigned char raw[32], uint64_t file_size, uint64_t max_json,
                    nf_header *h, nf_diags *d)
{
    if (memcmp(raw, NF_ENTRY_MAGIC, 8) != 0) {
        if (memcmp(raw, NF_PART_MAGIC, 8) == 0)
            nf_diag_add(d, NF_C_MAGIC, "", "this is a continuation part; open the entry file");
        else if (memcmp(raw, NF_ENTRY_MAGIC, 6) == 0)
            nf_diag_add(d, NF_C_MAGIC, "", "unsupported container version %u.%u", raw[6], raw[7]);
        else
            nf_diag_add(d, NF_C_MAGIC, "", "not an NInfer v3 artifact (bad magic)%s",
                        magic_hint(raw));
        return -1;
    }
    h->json_bytes = nf_load_le64(raw + 8);
    memcpy(h->artifact_id, raw + 16, 16);
    if (h->json_bytes == 0) {
        nf_diag_add(d, NF_C_HEADER, "", "json_bytes is 0");
        return -1;
    }
    if (!nf_add_u64(32, h->json_bytes, &h->metadata_end) ||
        !nf_align_up_u64(h->metadata_end, NF_PAGE, &h->entry_payload_start)) {
        nf_diag_add(d, NF_C_HEADER, "", "json_bytes %llu overflows the file offsets",
                    (unsigned long long)h->json_bytes);
        return -1;
    }
    if (file_size != UINT64_MAX && h->metadata_end > file_size) {
        nf_diag_add(d, NF_C_HEADER, "", "json_bytes %llu runs past the end of the %llu-byte file",
                    (unsigned long long)h->json_bytes, (unsigned long long)file_size);
        return -1;
    }
    if (h->json_bytes > max_json) {
        nf_diag_add(d, NF_C_HEADER, "",
                    "catalog of %llu bytes is larger than the cap of %llu bytes (--max-json-bytes)",
                    (unsigned long long)h->json_bytes, (unsigned long long)max_json);
        return -1;
    }
    return 0;
}

static void evict(nf_artifact *a, size_t keep);

/* nf_fd_reclaim's hook: another cache ran out of descriptors (never blocks). */
static void art_reclaim(void *ctx)
{
    nf_artifact *a = ctx;
    if (pthread_mutex_trylock(&a->lock) == 0) {
        evict(a, 0);
        pthread_mutex_unlock(&a->lock);
    }
}

static nf_artifact *artifact_new(const char *path, const nf_open_opts *o)
{
    nf_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->path = strdup(path);
    a->dir = nf_dirname_dup(path);
    if (o)
        a->opts = *o;
    if (!a->opts.max_json_bytes)
        a->opts.max_json_bytes = NF_DEFAULT_MAX_JSON;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->unpinned, NULL);
    a->cap = nf_fd_cap(); /* open part files kept per artifact */
    a->rec_slot = -1;
    if (!a->path || !a->dir) {
        free(a->path);
        free(a->dir);
        free(a);
        return NULL;
    }
    return a;
}

/* After the catalog is parsed: the files table drives everything else. */
static int setup_files(nf_artifact *a, nf_diags *d)
{
    nf_catalog *c = a->cat;
    if (!c->has_files || c->n_files == 0)
        return -1;
    a->n_files = c->n_files;
    a->file_paths = calloc(a->n_files, sizeof *a->file_paths);
    a->fstate = calloc(a->n_files, 1);
    if (!a->file_paths || !a->fstate) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    for (size_t i = 0; i < a->n_files; i++) {
        /* an entry named without a directory keeps its parts' names bare */
        a->file_paths[i] = i == 0 ? strdup(a->path)
                           : !c->files[i].path ? NULL
                           : strchr(a->path, '/') ? nf_path_join(a->dir, c->files[i].path)
                                                  : strdup(c->files[i].path);
        if (i > 0 && !c->files[i].path)
            a->fstate[i] = F_FAILED; /* invalid path already reported */
    }
    if (!nf_add_u64(a->h.entry_payload_start, c->files[0].payload_bytes, &a->h.entry_file_bytes)) {
        nf_diag_add(d, NF_C_RANGE, "/files/0/payload_bytes", "entry file size overflows U64");
        return -1;
    }
    return 0;
}

/* Read the json_bytes of catalog text in chunks (from fd at offset 32, or
 * from the stream in), keeping the text without its trailing spaces: the
 * padding a writer reserves costs no memory, so the catalog cap bounds what
 * a catalog costs however it is padded (issue 11: a zstd stream of 8 KB
 * whose catalog is 250 MiB of spaces). Returns 0, 1 when the input ended
 * early (got bytes), or -1 on a read error (errno / the input's fault). */
static int read_catalog(nf_artifact *a, int fd, nf_input *in, uint64_t *got)
{
    const size_t chunk = 1u << 20;
    uint64_t total = a->h.json_bytes, pos = 0, spaces = 0;
    size_t len = 0, cap = 0;
    char *buf = malloc(chunk);
    if (!buf) {
        errno = ENOMEM;
        return -1;
    }
    int rc = 0;
    while (pos < total) {
        size_t want = total - pos > chunk ? chunk : (size_t)(total - pos);
        ssize_t r = in ? nf_input_read(in, buf, want) : nf_pread_full(fd, buf, want, 32 + pos);
        if (r < 0) {
            if (!in)
                errno = (int)-r;
            rc = -1;
            break;
        }
        pos += (uint64_t)r;
        size_t k = (size_t)r, e = k;
        while (e && buf[e - 1] == ' ')
            e--;
        if (e) {
            /* spaces that turned out not to be trailing, then the text */
            uint64_t need = (uint64_t)len + spaces + e;
            if (need > cap) {
                uint64_t nc = cap ? (uint64_t)cap * 2 : chunk;
                if (nc < need)
                    nc = need;
                if (nc > total)
                    nc = total;
                char *nj = realloc(a->json, (size_t)nc + 1);
                if (!nj) {
                    errno = ENOMEM;
                    rc = -1;
                    break;
                }
                a->json = nj;
                cap = (size_t)nc;
            }
            memset(a->json + len, ' ', (size_t)spaces);
            len += (size_t)spaces;
            memcpy(a->json + len, buf, e);
            len += e;
            spaces = 0;
        }
        spaces += k - e;
        if ((size_t)r < want) {
            rc = 1;
            break;
        }
    }
    free(buf);
    if (!a->json)
        a->json = malloc(1);
    else if (cap > len + 4096) {
        char *nj = realloc(a->json, len + 1);
        if (nj)
            a->json = nj;
    }
    if (!a->json) {
        errno = ENOMEM;
        return -1;
    }
    a->json[len] = 0;
    a->json_len = len;
    a->json_pad = spaces;
    *got = pos;
    return rc;
}

nf_artifact *nf_artifact_open(const char *path, const nf_open_opts *o, nf_diags *d)
{
    nf_artifact *a = artifact_new(path, o);
    if (!a) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    uint64_t size = 0;
    int fd = open_regular(path, &size);
    if (fd == -EMFILE || fd == -ENFILE) {
        nf_fd_reclaim(NULL); /* other caches' idle descriptors, then once more */
        fd = open_regular(path, &size);
    }
    if (fd < 0) {
        nf_diag_add(d, NF_C_IO, "", "cannot open: %s", open_error(fd));
        nf_artifact_close(a);
        return NULL;
    }
    unsigned char raw[32];
    ssize_t r = nf_pread_full(fd, raw, 32, 0);
    if (r < 0) {
        nf_diag_add(d, NF_C_IO, "", "read error: %s", strerror((int)-r));
        close(fd);
        nf_artifact_close(a);
        return NULL;
    }
    if (r < 32) {
        nf_diag_add(d, NF_C_HEADER, "", "short file: %zd bytes, the header needs 32", r);
        close(fd);
        nf_artifact_close(a);
        return NULL;
    }
    if (nf_header_parse(raw, size, a->opts.max_json_bytes, &a->h, d) < 0) {
        close(fd);
        nf_artifact_close(a);
        return NULL;
    }
    uint64_t got = 0;
    int cr = read_catalog(a, fd, NULL, &got);
    if (cr != 0) {
        if (cr < 0)
            nf_diag_add(d, NF_C_IO, "", "%s the %llu-byte catalog: %s",
                        errno == ENOMEM ? "out of memory for" : "cannot read",
                        (unsigned long long)a->h.json_bytes, strerror(errno));
        else
            nf_diag_add(d, NF_C_LENGTH, "", "file shrank while reading the catalog");
        close(fd);
        nf_artifact_close(a);
        return NULL;
    }
    /* the catalog keeps the text (its spans point into it) */
    a->cat = nf_catalog_parse_owned(a->json, a->json_len, NF_CAT_ARTIFACT, nf_basename(path), d);
    a->json = NULL;
    if (!a->cat || setup_files(a, d) < 0) {
        close(fd);
        nf_artifact_close(a);
        return NULL;
    }
    a->fstate[0] = F_GOOD;
    if (size != a->h.entry_file_bytes) {
        /* shorter: an interrupted download (re-fetch it); longer: length */
        nf_diag_add(d, size < a->h.entry_file_bytes ? NF_C_INCOMPLETE : NF_C_LENGTH, "",
                    "entry is %llu bytes; header and files[0] say %llu",
                    (unsigned long long)size, (unsigned long long)a->h.entry_file_bytes);
        a->fstate[0] = F_FAILED;
    }
    if (a->opts.check_fill)
        check_fill_fd(a, 0, fd, d);
    if (a->fstate[0] == F_GOOD && (a->slots = calloc(1, sizeof *a->slots)) != NULL) {
        a->slots[0] = (fslot){fd, 0, 0, ++a->tick};
        a->n_slots = 1;
        a->rec_slot = nf_fd_reclaimer_add(art_reclaim, a);
    } else {
        close(fd);
    }
    return a;
}

/* A failed stream read as a diagnostic: a corrupt zstd frame is `zstd`, a
 * stream that ends inside a frame or carries bytes after it is `length`
 * (rules broken, exit 1); only the read itself failing is `io` (DESIGN 3). */
static void stream_fault(nf_input *in, nf_diags *d, const char *where)
{
    const char *e = nf_input_error(in);
    switch (nf_input_fault(in)) {
    case NF_IN_CORRUPT:
        nf_diag_add(d, NF_C_ZSTD, "", "corrupt zstd stream %s: %s", where, e ? e : "");
        break;
    case NF_IN_TRUNCATED:
        nf_diag_add(d, NF_C_LENGTH, "", "the zstd stream ends %s, inside a frame", where);
        break;
    case NF_IN_TRAILING:
        nf_diag_add(d, NF_C_LENGTH, "", "bytes after the end of the zstd frame, %s", where);
        break;
    case NF_IN_WINDOW:
        nf_diag_add(d, NF_C_UNSUPPORTED, "", "zstd stream %s: %s", where, e ? e : "");
        break;
    default:
        nf_diag_add(d, NF_C_IO, "", "read error %s: %s", where, strerror(errno));
        break;
    }
}

nf_artifact *nf_artifact_open_stream(nf_input *in, const char *name, const nf_open_opts *o,
                                     nf_diags *d)
{
    nf_artifact *a = artifact_new(name, o);
    if (!a) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    a->in = in;
    unsigned char raw[32];
    ssize_t r = nf_input_read(in, raw, 32);
    if (r < 0) {
        stream_fault(in, d, "in the header");
        nf_artifact_close(a);
        return NULL;
    }
    if (r < 32) {
        nf_diag_add(d, NF_C_HEADER, "", "stream ended after %zd bytes, inside the header", r);
        nf_artifact_close(a);
        return NULL;
    }
    if (nf_header_parse(raw, UINT64_MAX, a->opts.max_json_bytes, &a->h, d) < 0) {
        nf_artifact_close(a);
        return NULL;
    }
    /* the buffer grows as bytes arrive: a header that claims a large catalog
     * costs memory only for the bytes the stream really holds, and trailing
     * spaces none */
    uint64_t got = 0;
    int cr = read_catalog(a, -1, in, &got);
    if (cr < 0) {
        if (errno == ENOMEM)
            nf_diag_add(d, NF_C_IO, "", "out of memory for the %llu-byte catalog",
                        (unsigned long long)a->h.json_bytes);
        else
            stream_fault(in, d, "in the catalog");
        nf_artifact_close(a);
        return NULL;
    }
    if (cr > 0) { /* nf_input_read is short only at the end */
        nf_diag_add(d, NF_C_HEADER, "", "stream ended inside the %llu-byte catalog (after %llu)",
                    (unsigned long long)a->h.json_bytes, (unsigned long long)got);
        nf_artifact_close(a);
        return NULL;
    }
    a->cat = nf_catalog_parse_owned(a->json, a->json_len, NF_CAT_ARTIFACT, NULL, d);
    a->json = NULL;
    if (!a->cat || setup_files(a, d) < 0) {
        nf_artifact_close(a);
        return NULL;
    }
    if (a->n_files != 1) {
        nf_diag_add(d, NF_C_FILES, "/files",
                    "a stream is a single file, but the catalog lists %zu files", a->n_files);
        nf_artifact_close(a);
        return NULL;
    }
    /* skip (and check) the fill up to the payload */
    uint64_t fill = a->h.entry_payload_start - a->h.metadata_end;
    unsigned char buf[NF_PAGE];
    r = nf_input_read(in, buf, (size_t)fill);
    if (r < 0 || (uint64_t)r != fill) {
        if (r < 0)
            stream_fault(in, d, "in the fill");
        else
            nf_diag_add(d, NF_C_LENGTH, "", "stream ended inside the fill");
        nf_artifact_close(a);
        return NULL;
    }
    if (a->opts.check_fill)
        for (uint64_t i = 0; i < fill; i++)
            if (buf[i]) {
                entry_fill_fault(d, NULL, buf, (size_t)fill, (size_t)i, a->h.metadata_end);
                break;
            }
    return a;
}

void nf_artifact_close(nf_artifact *a)
{
    if (!a)
        return;
    nf_fd_reclaimer_remove(a->rec_slot);
    for (size_t k = 0; k < a->n_slots; k++)
        if (a->slots[k].fd >= 0)
            close(a->slots[k].fd);
    free(a->slots);
    for (size_t i = 0; a->file_paths && i < a->n_files; i++)
        free(a->file_paths[i]);
    free(a->file_paths);
    free(a->fstate);
    nf_catalog_free(a->cat);
    free(a->json);
    free(a->path);
    free(a->dir);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->unpinned);
    free(a);
}

nf_catalog *nf_artifact_catalog(const nf_artifact *a) { return a->cat; }
const nf_header *nf_artifact_header(const nf_artifact *a) { return &a->h; }
const char *nf_artifact_json(const nf_artifact *a, size_t *len)
{
    return nf_catalog_text(a->cat, len);
}
uint64_t nf_artifact_json_pad(const nf_artifact *a) { return a->json_pad; }
const char *nf_artifact_path(const nf_artifact *a) { return a->path; }
bool nf_artifact_is_stream(const nf_artifact *a) { return a->in != NULL; }
const char *nf_artifact_file_path(const nf_artifact *a, size_t i)
{
    return i < a->n_files ? a->file_paths[i] : NULL;
}
uint64_t nf_artifact_file_payload_start(const nf_artifact *a, size_t i)
{
    return i == 0 ? a->h.entry_payload_start : NF_PAGE;
}

static int check_fill_fd(nf_artifact *a, size_t i, int fd, nf_diags *d)
{
    uint64_t from = i == 0 ? a->h.metadata_end : 32, to = nf_artifact_file_payload_start(a, i);
    unsigned char buf[NF_PAGE];
    size_t n = (size_t)(to - from);
    ssize_t r = nf_pread_full(fd, buf, n, from);
    if (r < 0 || (size_t)r != n) {
        nf_diag_addf(d, NF_C_INCOMPLETE, a->file_paths[i], "", "file ends inside its fill");
        return -1;
    }
    for (size_t k = 0; k < n; k++)
        if (buf[k]) {
            if (i == 0)
                entry_fill_fault(d, a->file_paths[i], buf, n, k, from);
            else
                nf_diag_addf(d, NF_C_FILL, a->file_paths[i], "",
                             "nonzero fill byte at offset %llu", (unsigned long long)(from + k));
            return -1;
        }
    return 0;
}

/* Open part i and check it (spec 3.2): magic, part_index, artifact_id and
 * length, and the fill with check_fill on its first opening. A part closed
 * to save descriptors is checked again when it is reopened (it may have
 * changed meanwhile). Returns the fd or -1 with diagnostics, or -1 with
 * *err EMFILE/ENFILE and none. Lock held. */
static int open_part(nf_artifact *a, size_t i, bool first, nf_diags *d, int *err)
{
    const char *p = a->file_paths[i];
    uint64_t size = 0;
    int fd = open_regular(p, &size);
    *err = fd < 0 ? -fd : 0;
    if (fd == -EMFILE || fd == -ENFILE)
        return -1; /* the caller frees descriptors and retries */
    char *ptr = nf_ptr_index("/files", i);
    if (fd < 0) {
        if (fd == -ENOENT)
            nf_diag_addf(d, NF_C_PART_MISSING, p, ptr, "part %zu is missing", i);
        else
            nf_diag_addf(d, NF_C_IO, p, ptr, "cannot open part %zu: %s", i, open_error(fd));
        free(ptr);
        return -1;
    }
    unsigned char raw[32];
    ssize_t r = i == 0 ? 32 : nf_pread_full(fd, raw, 32, 0);
    int bad = 0;
    if (i == 0) {
        /* the entry, reopened: its header was parsed at open */
        uint64_t h8 = 0;
        unsigned char e[32];
        if (nf_pread_full(fd, e, 32, 0) != 32 || memcmp(e, NF_ENTRY_MAGIC, 8) != 0 ||
            (h8 = nf_load_le64(e + 8)) != a->h.json_bytes ||
            memcmp(e + 16, a->h.artifact_id, 16) != 0 || size != a->h.entry_file_bytes) {
            nf_diag_addf(d, NF_C_LENGTH, p, "", "the entry changed while it was read");
            bad = 1;
        }
    } else if (r != 32) {
        nf_diag_addf(d, r < 0 ? NF_C_IO : NF_C_PART_HEADER, p, ptr, "part header: %s",
                     r < 0 ? strerror((int)-r) : "file shorter than 32 bytes");
        bad = 1;
    } else if (memcmp(raw, NF_PART_MAGIC, 8) != 0) {
        nf_diag_addf(d, NF_C_PART_HEADER, p, ptr, "bad part magic%s",
                     memcmp(raw, NF_ENTRY_MAGIC, 8) == 0 ? " (this is an entry file)" : "");
        bad = 1;
    } else {
        uint64_t idx = nf_load_le64(raw + 8);
        if (idx != i) {
            nf_diag_addf(d, NF_C_PART_HEADER, p, ptr, "part_index is %llu, files index is %zu",
                         (unsigned long long)idx, i);
            bad = 1;
        }
        if (memcmp(raw + 16, a->h.artifact_id, 16) != 0) {
            char got[33], want[33];
            nf_hex(raw + 16, 16, got);
            nf_hex(a->h.artifact_id, 16, want);
            nf_diag_addf(d, NF_C_ARTIFACT_ID, p, ptr,
                         "part belongs to artifact %s, the entry is %s", got, want);
            bad = 1;
        }
        uint64_t want_size;
        if (!nf_add_u64(NF_PAGE, a->cat->files[i].payload_bytes, &want_size) ||
            size != want_size) {
            nf_diag_addf(d, size < want_size ? NF_C_INCOMPLETE : NF_C_LENGTH, p, ptr,
                         "part is %llu bytes; files[%zu] says %llu",
                         (unsigned long long)size, i, (unsigned long long)want_size);
            bad = 1;
        }
    }
    free(ptr);
    if (!bad && first && i > 0 && a->opts.check_fill && check_fill_fd(a, i, fd, d) < 0)
        bad = 1;
    if (bad) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Close unpinned files, least recently used first, until at most keep are
 * open. Lock held. */
static void evict(nf_artifact *a, size_t keep)
{
    for (;;) {
        size_t open_n = 0, victim = SIZE_MAX;
        for (size_t k = 0; k < a->n_slots; k++) {
            if (a->slots[k].fd < 0)
                continue;
            open_n++;
            if (!a->slots[k].pins &&
                (victim == SIZE_MAX || a->slots[k].used < a->slots[victim].used))
                victim = k;
        }
        if (open_n <= keep || victim == SIZE_MAX)
            return;
        close(a->slots[victim].fd);
        a->slots[victim].fd = -1;
    }
}

/* A free slot (growing the table when every slot is taken). Lock held. */
static fslot *free_slot(nf_artifact *a)
{
    for (size_t k = 0; k < a->n_slots; k++)
        if (a->slots[k].fd < 0)
            return &a->slots[k];
    fslot *ns = realloc(a->slots, (a->n_slots + 1) * sizeof *ns);
    if (!ns)
        return NULL;
    a->slots = ns;
    a->slots[a->n_slots].fd = -1;
    return &a->slots[a->n_slots++];
}

/* Pin file i open (opening and checking it as needed): the fd stays valid
 * until unpin. Returns the fd or -1 with diagnostics (cached failures say
 * nothing again). */
static int pin(nf_artifact *a, size_t i, nf_diags *d)
{
    if (a->in || i >= a->n_files)
        return -1;
    pthread_mutex_lock(&a->lock);
    int fd = -1;
    if (a->fstate[i] == F_FAILED)
        goto out;
    for (size_t k = 0; k < a->n_slots; k++)
        if (a->slots[k].fd >= 0 && a->slots[k].file == i) {
            a->slots[k].pins++;
            a->slots[k].used = ++a->tick;
            fd = a->slots[k].fd;
            goto out;
        }
    evict(a, a->cap - 1);
    bool first = a->fstate[i] == F_UNOPENED;
    int err = 0;
    fd = open_part(a, i, first, d, &err);
    while (fd < 0 && (err == EMFILE || err == ENFILE)) {
        /* out of descriptors: give back every unpinned one, ask the other
         * caches (artifacts, pack's sources) for theirs, and try again;
         * when other threads hold all of ours, wait for one of them */
        evict(a, 0);
        nf_fd_reclaim(a);
        fd = open_part(a, i, first, d, &err);
        bool others = false;
        for (size_t k = 0; k < a->n_slots; k++)
            others |= a->slots[k].fd >= 0 && a->slots[k].pins > 0;
        if (fd < 0 && (err == EMFILE || err == ENFILE) && others) {
            pthread_cond_wait(&a->unpinned, &a->lock);
            /* the file may have been opened meanwhile */
            for (size_t k = 0; k < a->n_slots; k++)
                if (a->slots[k].fd >= 0 && a->slots[k].file == i) {
                    a->slots[k].pins++;
                    a->slots[k].used = ++a->tick;
                    fd = a->slots[k].fd;
                    goto out;
                }
            if (a->fstate[i] == F_FAILED)
                goto out;
            first = a->fstate[i] == F_UNOPENED;
            fd = open_part(a, i, first, d, &err);
            continue;
        }
        if (fd < 0 && (err == EMFILE || err == ENFILE)) {
            /* transient: not cached as a failure, and said once */
            if (!a->emfile_said) {
                struct rlimit rl = {0, 0};
                getrlimit(RLIMIT_NOFILE, &rl);
                nf_diag_addf(d, NF_C_IO, a->file_paths[i], "",
                             "cannot open: too many open files (ulimit -n is %llu; the reader "
                             "keeps at most %zu of this artifact's files open)",
                             (unsigned long long)rl.rlim_cur, a->cap);
                a->emfile_said = true;
            }
            goto out;
        }
    }
    if (fd < 0) {
        a->fstate[i] = F_FAILED;
        goto out;
    }
    a->fstate[i] = F_GOOD;
    if (a->rec_slot < 0)
        a->rec_slot = nf_fd_reclaimer_add(art_reclaim, a);
    fslot *sl = free_slot(a);
    if (!sl) {
        close(fd);
        fd = -1;
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto out;
    }
    *sl = (fslot){fd, i, 1, ++a->tick};
out:
    pthread_mutex_unlock(&a->lock);
    return fd;
}

static void unpin(nf_artifact *a, size_t i)
{
    pthread_mutex_lock(&a->lock);
    for (size_t k = 0; k < a->n_slots; k++)
        if (a->slots[k].fd >= 0 && a->slots[k].file == i && a->slots[k].pins) {
            a->slots[k].pins--;
            break;
        }
    evict(a, a->cap);
    pthread_cond_broadcast(&a->unpinned);
    pthread_mutex_unlock(&a->lock);
}

int nf_artifact_check_fill(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd = pin(a, i, d);
    if (fd < 0)
        return -1;
    int rc = check_fill_fd(a, i, fd, d);
    unpin(a, i);
    return rc;
}

int nf_artifact_file_check(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd = pin(a, i, d);
    if (fd < 0)
        return -1;
    unpin(a, i);
    return 0;
}

int nf_artifact_file_fd(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd = pin(a, i, d);
    if (fd >= 0)
        unpin(a, i);
    return fd;
}

/* First file whose payload interval ends after off. */
static size_t file_for(const nf_artifact *a, uint64_t off)
{
    size_t lo = 0, hi = a->n_files;
    const nf_file *f = a->cat->files;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (f[mid].logical_offset + f[mid].payload_bytes <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void nf_artifact_files_touched(const nf_artifact *a, uint64_t off, uint64_t len, bool *need)
{
    if (len == 0)
        return;
    for (size_t i = file_for(a, off); i < a->n_files; i++) {
        const nf_file *f = &a->cat->files[i];
        if (f->logical_offset >= off + len)
            break;
        need[i] = true;
    }
}

bool nf_artifact_file_span(const nf_artifact *a, uint64_t off, uint64_t len, size_t *first,
                           size_t *last)
{
    uint64_t end;
    if (len == 0 || !nf_add_u64(off, len, &end))
        return false;
    size_t i = file_for(a, off), j = file_for(a, end - 1);
    if (i >= a->n_files)
        return false;
    *first = i;
    *last = j < a->n_files ? j : a->n_files - 1;
    return true;
}

int nf_artifact_segments(nf_artifact *a, uint64_t off, uint64_t len, nf_segment_fn fn,
                         void *ctx, nf_diags *d)
{
    uint64_t end;
    if (!nf_add_u64(off, len, &end) || end > a->cat->payload_bytes) {
        nf_diag_add(d, NF_C_BOUNDS, "", "range [%llu, +%llu) is outside the %llu-byte payload",
                    (unsigned long long)off, (unsigned long long)len,
                    (unsigned long long)a->cat->payload_bytes);
        return -1;
    }
    for (size_t i = file_for(a, off); i < a->n_files && off < end; i++) {
        const nf_file *f = &a->cat->files[i];
        uint64_t fe = f->logical_offset + f->payload_bytes;
        uint64_t b = fe < end ? fe : end;
        int fd = pin(a, i, d);
        if (fd < 0)
            return -1;
        uint64_t foff = nf_artifact_file_payload_start(a, i) + (off - f->logical_offset);
        int rc = fn(ctx, i, fd, foff, off - (end - len), b - off);
        unpin(a, i);
        if (rc)
            return rc;
        off = b;
    }
    return 0;
}

struct read_ctx {
    nf_artifact *a;
    unsigned char *buf;
    nf_diags *d;
};

static int read_seg(void *vctx, size_t file, int fd, uint64_t foff, uint64_t roff, uint64_t len)
{
    struct read_ctx *c = vctx;
    ssize_t r = nf_pread_full(fd, c->buf + roff, (size_t)len, foff);
    if (r < 0) {
        nf_diag_addf(c->d, NF_C_IO, c->a->file_paths[file], "", "read error at %llu: %s",
                     (unsigned long long)foff, strerror((int)-r));
        return -1;
    }
    if ((uint64_t)r != len) {
        nf_diag_addf(c->d, NF_C_INCOMPLETE, c->a->file_paths[file], "",
                     "file ends at %llu, inside the declared payload (it changed or is truncated)",
                     (unsigned long long)(foff + (uint64_t)r));
        return -1;
    }
    return 0;
}

int nf_artifact_read(nf_artifact *a, uint64_t off, void *buf, size_t n, nf_diags *d)
{
    struct read_ctx c = {a, buf, d};
    return nf_artifact_segments(a, off, n, read_seg, &c, d) ? -1 : 0;
}

ssize_t nf_artifact_stream_read(nf_artifact *a, void *buf, size_t n, nf_diags *d)
{
    uint64_t left = a->cat->payload_bytes - a->spos;
    if (n > left)
        n = (size_t)left;
    ssize_t r = nf_input_read(a->in, buf, n);
    if (r < 0) {
        char where[64];
        snprintf(where, sizeof where, "after %llu payload bytes", (unsigned long long)a->spos);
        stream_fault(a->in, d, where);
        return -1;
    }
    a->spos += (uint64_t)r;
    if ((size_t)r < n)
        nf_diag_add(d, NF_C_LENGTH, "", "stream ended after %llu of %llu payload bytes",
                    (unsigned long long)a->spos, (unsigned long long)a->cat->payload_bytes);
    return r;
}

int nf_artifact_stream_finish(nf_artifact *a, nf_diags *d)
{
    if (a->spos != a->cat->payload_bytes)
        return -1;
    unsigned char b;
    ssize_t r = nf_input_read(a->in, &b, 1);
    if (r < 0) {
        stream_fault(a->in, d, "after the payload");
        return -1;
    }
    if (r > 0) {
        nf_diag_add(d, NF_C_LENGTH, "", "stream continues past the %llu-byte payload",
                    (unsigned long long)a->cat->payload_bytes);
        return -1;
    }
    return 0;
}

uint64_t nf_artifact_stream_pos(const nf_artifact *a) { return a->spos; }

void nf_header_encode(unsigned char raw[32], size_t file_index, uint64_t json_bytes,
                      const unsigned char artifact_id[16])
{
    memcpy(raw, file_index == 0 ? NF_ENTRY_MAGIC : NF_PART_MAGIC, 8);
    nf_store_le64(raw + 8, file_index == 0 ? json_bytes : (uint64_t)file_index);
    memcpy(raw + 16, artifact_id, 16);
}
