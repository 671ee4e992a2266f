/* nf_artifact.c — entry/part opening, header checks and range reads, over
 * the byte source of nf_rfile.h (local files or HTTP range requests). */
#include "nf_artifact.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_http.h"
#include "nf_util.h"

const unsigned char NF_ENTRY_MAGIC[8] = {0x4e, 0x49, 0x4e, 0x46, 0x45, 0x52, 0x00, 0x03};
const unsigned char NF_PART_MAGIC[8] = {0x4e, 0x49, 0x4e, 0x50, 0x52, 0x54, 0x00, 0x03};

enum { F_UNOPENED = 0, F_GOOD, F_FAILED };

#define HEAD_BYTES (64u << 10)  /* a URL's first request: the header and small catalogs */
#define MERGE_GAP (1u << 20)    /* remote ranges closer than this are fetched as one */

struct nf_artifact {
    char *path, *dir;  /* the entry as given; a URL without query and credentials */
    char *url;         /* a URL entry as given (requests go there); NULL for files */
    nf_header h;
    char *json;       /* the catalog text without its trailing spaces */
    size_t json_len;
    uint64_t json_pad; /* spaces after it: json_len + json_pad == json_bytes */
    nf_catalog *cat;
    nf_open_opts opts;
    /* files */
    size_t n_files;
    char **file_paths;      /* names for messages (URLs without query) */
    char **file_urls;       /* a URL artifact's request URLs */
    unsigned char *fstate;  /* F_GOOD: checked (open or not) */
    nf_rfile **rf;          /* each file's byte source, once opened */
    nf_fdpool *pool;        /* local files' descriptors (nf_fd_cap() open at most) */
    nf_http *http;          /* remote files' client */
    bool own_http;
    unsigned char *head;    /* a URL entry's first bytes, kept */
    size_t head_len;
    bool emfile_said;       /* "too many open files" reported once */
    pthread_mutex_t lock;
    /* stream */
    nf_input *in;
    nf_input *own_in;       /* a URL read whole: the stream this artifact made */
    uint64_t spos;
};

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

static nf_artifact *artifact_new(const char *path, const nf_open_opts *o)
{
    nf_artifact *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    bool url = nf_is_url(path);
    a->path = url ? nf_url_display(path) : strdup(path);
    a->url = url ? strdup(path) : NULL;
    a->dir = nf_dirname_dup(a->path ? a->path : "");
    if (o)
        a->opts = *o;
    if (!a->opts.max_json_bytes)
        a->opts.max_json_bytes = NF_DEFAULT_MAX_JSON;
    pthread_mutex_init(&a->lock, NULL);
    a->pool = nf_fdpool_new(0); /* open part files kept per artifact */
    if (!a->path || !a->dir || !a->pool || (url && !a->url)) {
        nf_artifact_close(a);
        return NULL;
    }
    return a;
}

/* The files' names and, for a URL artifact, their URLs: each part beside
 * the entry (ninfer(5): its last path segment replaced, percent-encoded),
 * or the --urls list. */
static int file_names(nf_artifact *a, nf_diags *d)
{
    nf_catalog *c = a->cat;
    if (a->url && a->opts.urls && a->opts.n_urls != a->n_files) {
        nf_diag_add(d, NF_C_USAGE, "/files",
                    "--urls gives %zu URL%s, but the catalog lists %zu file%s (one URL per "
                    "file, the entry first)", a->opts.n_urls, a->opts.n_urls == 1 ? "" : "s",
                    a->n_files, a->n_files == 1 ? "" : "s");
        return -1;
    }
    for (size_t i = 0; i < a->n_files; i++) {
        if (i > 0 && !c->files[i].path)
            continue; /* invalid path already reported */
        if (a->url) {
            a->file_urls[i] = i == 0 ? strdup(a->url)
                              : a->opts.urls ? strdup(a->opts.urls[i])
                                             : nf_url_sibling(a->url, c->files[i].path);
            a->file_paths[i] = a->file_urls[i] ? nf_url_display(a->file_urls[i]) : NULL;
        } else {
            /* an entry named without a directory keeps its parts' names bare */
            a->file_paths[i] = i == 0 ? strdup(a->path)
                               : strchr(a->path, '/') ? nf_path_join(a->dir, c->files[i].path)
                                                      : strdup(c->files[i].path);
        }
        if (!a->file_paths[i]) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            return -1;
        }
    }
    return 0;
}

/* After the catalog is parsed: the files table drives everything else. */
static int setup_files(nf_artifact *a, nf_diags *d)
{
    nf_catalog *c = a->cat;
    if (!c->has_files || c->n_files == 0)
        return -1;
    a->n_files = c->n_files;
    a->file_paths = calloc(a->n_files, sizeof *a->file_paths);
    a->file_urls = calloc(a->n_files, sizeof *a->file_urls);
    a->fstate = calloc(a->n_files, 1);
    nf_rfile **rf = calloc(a->n_files, sizeof *rf);
    if (!a->file_paths || !a->file_urls || !a->fstate || !rf) {
        free(rf);
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    rf[0] = a->rf ? a->rf[0] : NULL; /* the entry, opened already */
    free(a->rf);
    a->rf = rf;
    for (size_t i = 1; i < a->n_files; i++)
        if (!c->files[i].path)
            a->fstate[i] = F_FAILED; /* invalid path already reported */
    if (file_names(a, d) < 0)
        return -1;
    if (!nf_add_u64(a->h.entry_payload_start, c->files[0].payload_bytes, &a->h.entry_file_bytes)) {
        nf_diag_add(d, NF_C_RANGE, "/files/0/payload_bytes", "entry file size overflows U64");
        return -1;
    }
    return 0;
}

/* Where read_catalog takes its bytes: n bytes (fewer only at the end), or
 * -1 with errno (or the source's own error). */
typedef ssize_t (*pull_fn)(void *ctx, void *buf, size_t n);

typedef struct {
    nf_rfile *f;
    uint64_t pos;
    nf_rerr e;
} pread_src;

static ssize_t pull_pread(void *vc, void *buf, size_t n)
{
    pread_src *c = vc;
    ssize_t r = nf_rfile_pread(c->f, buf, n, c->pos, &c->e);
    if (r < 0) {
        errno = EIO;
        return -1;
    }
    c->pos += (uint64_t)r;
    return r;
}

static ssize_t pull_input(void *vc, void *buf, size_t n) { return nf_input_read(vc, buf, n); }

/* A URL entry's bytes after its first request: the rest of what is kept,
 * then one more request, streamed. */
typedef struct {
    const unsigned char *head;
    size_t head_len, head_pos;
    nf_rstream *rs;
    const unsigned char *cur;
    size_t cur_len;
    nf_rerr e;
} remote_src;

static ssize_t pull_remote(void *vc, void *buf, size_t n)
{
    remote_src *c = vc;
    size_t got = 0;
    unsigned char *o = buf;
    while (got < n) {
        if (c->head_pos < c->head_len) {
            size_t k = c->head_len - c->head_pos;
            if (k > n - got)
                k = n - got;
            memcpy(o + got, c->head + c->head_pos, k);
            c->head_pos += k;
            got += k;
            continue;
        }
        if (!c->cur_len) {
            size_t piece;
            uint64_t off;
            const void *p;
            int r = c->rs ? nf_rstream_next(c->rs, &piece, &off, &p, &c->cur_len, &c->e) : 0;
            if (r < 0) {
                errno = EIO;
                return -1;
            }
            if (r == 0)
                break;
            c->cur = p;
        }
        size_t k = c->cur_len > n - got ? n - got : c->cur_len;
        memcpy(o + got, c->cur, k);
        c->cur += k;
        c->cur_len -= k;
        got += k;
    }
    return (ssize_t)got;
}

/* Read the json_bytes of catalog text in chunks from pull, keeping the text
 * without its trailing spaces: the padding a writer reserves costs no
 * memory, so the catalog cap bounds what a catalog costs however it is
 * padded (issue 11: a zstd stream of 8 KB whose catalog is 250 MiB of
 * spaces). Returns 0, 1 when the input ended early (got bytes), or -1 on a
 * read error (errno / the source's fault). */
static int read_catalog(nf_artifact *a, pull_fn pull, void *pctx, uint64_t *got)
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
        ssize_t r = pull(pctx, buf, want);
        if (r < 0) {
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

static int check_fill_bytes(nf_artifact *a, size_t i, const unsigned char *buf, size_t n,
                            uint64_t from, nf_diags *d);

/* The entry, opened: header, catalog, length (and fill with check_fill).
 * pull reads from byte 32 on. Returns 0 or -1 (a is closed by the caller). */
static int read_entry(nf_artifact *a, const unsigned char raw[32], uint64_t size, pull_fn pull,
                      void *pctx, const char **err, nf_diags *d)
{
    if (nf_header_parse(raw, size, a->opts.max_json_bytes, &a->h, d) < 0)
        return -1;
    uint64_t got = 0;
    int cr = read_catalog(a, pull, pctx, &got);
    if (cr != 0) {
        if (cr < 0)
            nf_diag_add(d, NF_C_IO, "", "%s the %llu-byte catalog: %s",
                        errno == ENOMEM ? "out of memory for" : "cannot read",
                        (unsigned long long)a->h.json_bytes,
                        errno == ENOMEM || !err || !*err ? strerror(errno) : *err);
        else
            nf_diag_add(d, NF_C_LENGTH, "", "file shrank while reading the catalog");
        return -1;
    }
    /* the catalog keeps the text (its spans point into it) */
    a->cat = nf_catalog_parse_owned(a->json, a->json_len, NF_CAT_ARTIFACT, nf_basename(a->path),
                                    d);
    a->json = NULL;
    if (!a->cat || setup_files(a, d) < 0)
        return -1;
    a->fstate[0] = F_GOOD;
    if (size != a->h.entry_file_bytes) {
        /* shorter: an interrupted download (re-fetch it); longer: length */
        nf_diag_add(d, size < a->h.entry_file_bytes ? NF_C_INCOMPLETE : NF_C_LENGTH, "",
                    "entry is %llu bytes; header and files[0] say %llu",
                    (unsigned long long)size, (unsigned long long)a->h.entry_file_bytes);
        a->fstate[0] = F_FAILED;
    }
    if (a->opts.check_fill) {
        /* the fill follows the catalog in what pull gives */
        uint64_t n = a->h.entry_payload_start - a->h.metadata_end;
        unsigned char buf[NF_PAGE];
        ssize_t r = pull(pctx, buf, (size_t)n);
        if (r < 0 || (uint64_t)r != n)
            nf_diag_add(d, NF_C_INCOMPLETE, "", "file ends inside its fill");
        else
            check_fill_bytes(a, 0, buf, (size_t)n, a->h.metadata_end, d);
    }
    return 0;
}

static nf_artifact *open_local(nf_artifact *a, nf_diags *d)
{
    nf_rerr e;
    a->rf = calloc(1, sizeof *a->rf);
    if (!a->rf) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        nf_artifact_close(a);
        return NULL;
    }
    a->rf[0] = nf_rfile_open(a->path, a->pool, NULL, false, &e);
    if (!a->rf[0]) {
        nf_diag_add(d, NF_C_IO, "", "cannot open: %s",
                    e.kind == NF_RE_MISSING ? strerror(ENOENT) : e.msg);
        nf_artifact_close(a);
        return NULL;
    }
    unsigned char raw[32];
    ssize_t r = nf_rfile_pread(a->rf[0], raw, 32, 0, &e);
    if (r < 0) {
        nf_diag_add(d, NF_C_IO, "", "%s", e.msg);
        nf_artifact_close(a);
        return NULL;
    }
    if (r < 32) {
        nf_diag_add(d, NF_C_HEADER, "", "short file: %zd bytes, the header needs 32", r);
        nf_artifact_close(a);
        return NULL;
    }
    uint64_t size = 0;
    nf_rfile_size(a->rf[0], &size);
    pread_src src = {a->rf[0], 32, {0}};
    const char *err = NULL;
    if (read_entry(a, raw, size, pull_pread, &src, &err, d) < 0) {
        nf_artifact_close(a);
        return NULL;
    }
    return a;
}

/* An open failure of a URL file: io naming what the server said. */
static void remote_open_error(nf_diags *d, const char *file, const char *ptr, size_t i,
                              const nf_rerr *e)
{
    if (i == 0)
        nf_diag_addf(d, NF_C_IO, file, "", "cannot read: %s", e->msg);
    else if (e->kind == NF_RE_MISSING)
        nf_diag_addf(d, NF_C_PART_MISSING, file, ptr, "part %zu is missing (%s)", i, e->msg);
    else
        nf_diag_addf(d, NF_C_IO, file, ptr, "cannot read part %zu: %s", i, e->msg);
}

/* A server that does not serve ranges: the entry whole, in order, as a
 * stream (the payload read with nf_artifact_stream_read). */
static nf_artifact *open_whole(nf_artifact *a, nf_diags *d)
{
    nf_input *in = nf_rfile_open_whole(a->rf[0]);
    nf_artifact *b = in ? nf_artifact_open_stream(in, a->path, &a->opts, d) : NULL;
    if (!in) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
    } else if (!b) {
        nf_input_close(in);
        nf_diag_add(d, NF_C_IO, "", "the server does not serve byte ranges: the entry was read "
                    "whole, in order, as a stream");
    }
    if (b) {
        /* b reads what a opened: the stream, its file and its client */
        b->own_in = in;
        b->rf[0] = a->rf[0];
        a->rf[0] = NULL;
        b->http = a->http;
        b->own_http = a->own_http;
        a->own_http = false;
    }
    nf_artifact_close(a);
    return b;
}

static nf_artifact *open_remote(nf_artifact *a, nf_diags *d)
{
    nf_rerr e;
    if (!a->opts.http) {
        a->http = nf_http_new(NULL);
        a->own_http = true;
    } else {
        a->http = a->opts.http;
    }
    a->rf = calloc(1, sizeof *a->rf);
    a->head = malloc(HEAD_BYTES);
    if (!a->http || !a->rf || !a->head ||
        !(a->rf[0] = nf_rfile_open(a->url, NULL, a->http, true, &e))) {
        nf_diag_add(d, NF_C_IO, "", "out of memory (or no HTTP client)");
        nf_artifact_close(a);
        return NULL;
    }
    /* the first request: the header and, most often, the whole catalog */
    ssize_t r = nf_rfile_pread(a->rf[0], a->head, HEAD_BYTES, 0, &e);
    if (r < 0 && e.kind == NF_RE_NORANGE && a->opts.whole_file)
        return open_whole(a, d);
    if (r < 0) {
        remote_open_error(d, a->path, "", 0, &e);
        nf_artifact_close(a);
        return NULL;
    }
    a->head_len = (size_t)r;
    uint64_t size = 0;
    nf_rfile_size(a->rf[0], &size);
    if (r < 32) {
        nf_diag_add(d, NF_C_HEADER, "", "short file: %zd bytes, the header needs 32", r);
        nf_artifact_close(a);
        return NULL;
    }
    unsigned char raw[32];
    memcpy(raw, a->head, 32);
    /* one more request for what the first did not hold: the rest of the
     * catalog (and with check_fill the fill), streamed */
    remote_src src = {a->head, a->head_len, 32, NULL, NULL, 0, {0}};
    nf_header h;
    nf_diags tmp = NF_DIAGS_INIT;
    if (nf_header_parse(raw, size, a->opts.max_json_bytes, &h, &tmp) == 0) {
        uint64_t end = a->opts.check_fill ? h.entry_payload_start : h.metadata_end;
        if (end > size)
            end = size;
        if (end > a->head_len) {
            nf_rpiece pc = {a->rf[0], a->head_len, end - a->head_len};
            nf_rstream_opts ro = {1, 0, 1u << 20};
            if (!(src.rs = nf_rstream_new(&pc, 1, &ro))) {
                nf_diags_free(&tmp);
                nf_diag_add(d, NF_C_IO, "", "out of memory");
                nf_artifact_close(a);
                return NULL;
            }
        }
    }
    nf_diags_free(&tmp);
    const char *err = src.e.msg;
    int rc = read_entry(a, raw, size, pull_remote, &src, &err, d);
    nf_rstream_free(src.rs);
    if (rc < 0) {
        nf_artifact_close(a);
        return NULL;
    }
    /* parts: their byte sources now, their requests when a read needs them */
    for (size_t i = 1; i < a->n_files; i++) {
        if (!a->file_urls[i])
            continue;
        a->rf[i] = nf_rfile_open(a->file_urls[i], NULL, a->http,
                                 nf_url_same_origin(a->file_urls[i], a->url), &e);
        if (!a->rf[i]) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            nf_artifact_close(a);
            return NULL;
        }
    }
    return a;
}

nf_artifact *nf_artifact_open(const char *path, const nf_open_opts *o, nf_diags *d)
{
    nf_artifact *a = artifact_new(path, o);
    if (!a) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    return a->url ? open_remote(a, d) : open_local(a, d);
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
    int cr = read_catalog(a, pull_input, in, &got);
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
    nf_input_close(a->own_in); /* before the file it reads */
    for (size_t i = 0; a->rf && i < (a->n_files ? a->n_files : 1); i++)
        nf_rfile_close(a->rf[i]);
    free(a->rf);
    nf_fdpool_free(a->pool);
    if (a->own_http)
        nf_http_free(a->http);
    for (size_t i = 0; a->file_paths && i < a->n_files; i++) {
        free(a->file_paths[i]);
        free(a->file_urls ? a->file_urls[i] : NULL);
    }
    free(a->file_paths);
    free(a->file_urls);
    free(a->fstate);
    free(a->head);
    nf_catalog_free(a->cat);
    free(a->json);
    free(a->path);
    free(a->url);
    free(a->dir);
    pthread_mutex_destroy(&a->lock);
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
bool nf_artifact_is_remote(const nf_artifact *a) { return a->url && !a->in; }
const char *nf_artifact_file_path(const nf_artifact *a, size_t i)
{
    return i < a->n_files ? a->file_paths[i] : NULL;
}
bool nf_artifact_file_remote(nf_artifact *a, size_t i, uint64_t *size, char *out, size_t cap)
{
    if (!a->url || i >= a->n_files || !a->rf[i] || !nf_rfile_size(a->rf[i], size))
        return false;
    if (!nf_rfile_validator(a->rf[i], out, cap) && cap)
        out[0] = 0;
    return true;
}

uint64_t nf_artifact_file_payload_start(const nf_artifact *a, size_t i)
{
    return i == 0 ? a->h.entry_payload_start : NF_PAGE;
}

/* Nonzero fill bytes in buf, which holds file i's bytes from offset from. */
static int check_fill_bytes(nf_artifact *a, size_t i, const unsigned char *buf, size_t n,
                            uint64_t from, nf_diags *d)
{
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

/* Part i's checks (spec 3.2) on its first bytes raw[0..n) (n >= 32, and
 * the whole [0, 4096) when the fill is to be checked) and its length:
 * magic, part_index, artifact_id, length, and the fill with check_fill on
 * its first check. Returns 0 or -1 with diagnostics. */
static int check_part(nf_artifact *a, size_t i, const unsigned char *raw, size_t n, uint64_t size,
                      bool first, nf_diags *d)
{
    const char *p = a->file_paths[i];
    char *ptr = nf_ptr_index("/files", i);
    int bad = 0;
    if (n < 32) {
        nf_diag_addf(d, NF_C_PART_HEADER, p, ptr, "part header: file shorter than 32 bytes");
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
    if (!bad && first && a->opts.check_fill) {
        if (n < NF_PAGE) {
            nf_diag_addf(d, NF_C_INCOMPLETE, p, "", "file ends inside its fill");
            bad = 1;
        } else if (check_fill_bytes(a, i, raw + 32, NF_PAGE - 32, 32, d) < 0) {
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* Open part i and check it. Returns 0, or -1 with diagnostics, or -1 with
 * *emfile set and none (no descriptor to be had: not cached as a
 * failure). Lock held. */
static int open_part(nf_artifact *a, size_t i, nf_diags *d, bool *emfile)
{
    const char *p = a->file_paths[i];
    nf_rerr e;
    *emfile = false;
    if (!a->rf[i]) {
        a->rf[i] = nf_rfile_open(p, a->pool, NULL, false, &e);
        if (!a->rf[i]) {
            char *ptr = nf_ptr_index("/files", i);
            if (e.kind == NF_RE_EMFILE)
                *emfile = true;
            else if (e.kind == NF_RE_MISSING)
                nf_diag_addf(d, NF_C_PART_MISSING, p, ptr, "part %zu is missing", i);
            else
                nf_diag_addf(d, NF_C_IO, p, ptr, "cannot open part %zu: %s", i, e.msg);
            free(ptr);
            return -1;
        }
    }
    unsigned char raw[NF_PAGE];
    size_t want = a->opts.check_fill ? NF_PAGE : 32;
    ssize_t r = nf_rfile_pread(a->rf[i], raw, want, 0, &e);
    if (r < 0) {
        char *ptr = nf_ptr_index("/files", i);
        if (e.kind == NF_RE_EMFILE)
            *emfile = true;
        else if (nf_rfile_is_remote(a->rf[i]))
            remote_open_error(d, p, ptr ? ptr : "", i, &e);
        else
            nf_diag_addf(d, NF_C_IO, p, ptr, "part header: %s", e.msg);
        free(ptr);
        return -1;
    }
    uint64_t size = 0;
    nf_rfile_size(a->rf[i], &size);
    return check_part(a, i, raw, (size_t)r, size, true, d);
}

/* "too many open files", once per artifact. */
static void say_emfile(nf_artifact *a, size_t i, nf_diags *d)
{
    if (a->emfile_said)
        return;
    struct rlimit rl = {0, 0};
    getrlimit(RLIMIT_NOFILE, &rl);
    nf_diag_addf(d, NF_C_IO, a->file_paths[i], "",
                 "cannot open: too many open files (ulimit -n is %llu; the reader keeps at "
                 "most %zu of this artifact's files open)",
                 (unsigned long long)rl.rlim_cur, nf_fd_cap());
    a->emfile_said = true;
}

/* File i, checked (opening and checking it the first time), with a local
 * file's descriptor pinned in *fd until unpin (-1 for a remote file).
 * NULL with diagnostics (cached failures say nothing again). */
static nf_rfile *pin(nf_artifact *a, size_t i, int *fd, nf_diags *d)
{
    *fd = -1;
    if (a->in || i >= a->n_files)
        return NULL;
    pthread_mutex_lock(&a->lock);
    if (a->fstate[i] == F_UNOPENED) {
        bool emfile = false;
        if (open_part(a, i, d, &emfile) == 0)
            a->fstate[i] = F_GOOD;
        else if (emfile)
            say_emfile(a, i, d);
        else
            a->fstate[i] = F_FAILED;
    }
    nf_rfile *f = a->fstate[i] == F_GOOD ? a->rf[i] : NULL;
    pthread_mutex_unlock(&a->lock);
    if (!f || nf_rfile_is_remote(f))
        return f;
    nf_rerr e;
    *fd = nf_rfile_pin(f, &e);
    if (*fd >= 0)
        return f;
    pthread_mutex_lock(&a->lock);
    if (e.kind == NF_RE_EMFILE)
        say_emfile(a, i, d);
    else
        nf_diag_addf(d, e.kind == NF_RE_CHANGED ? NF_C_LENGTH : NF_C_IO, a->file_paths[i], "",
                     "%s", e.kind == NF_RE_CHANGED ? i == 0 ? "the entry changed while it was read"
                                                           : "the part changed while it was read"
                                                   : e.msg);
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static void unpin(nf_rfile *f, int fd)
{
    if (fd >= 0)
        nf_rfile_unpin(f);
}

/* File i's bytes [off, off+n) into buf: a URL entry's first bytes from
 * memory. Returns bytes read or -1 with e. */
static ssize_t file_pread(nf_artifact *a, size_t i, nf_rfile *f, void *buf, size_t n, uint64_t off,
                          nf_rerr *e)
{
    if (i == 0 && a->head && off < a->head_len && n <= a->head_len - off) {
        memcpy(buf, a->head + off, n);
        return (ssize_t)n;
    }
    return nf_rfile_pread(f, buf, n, off, e);
}

int nf_artifact_check_fill(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd;
    nf_rfile *f = pin(a, i, &fd, d);
    if (!f)
        return -1;
    uint64_t from = i == 0 ? a->h.metadata_end : 32, to = nf_artifact_file_payload_start(a, i);
    unsigned char buf[NF_PAGE];
    size_t n = (size_t)(to - from);
    nf_rerr e;
    ssize_t r = file_pread(a, i, f, buf, n, from, &e);
    unpin(f, fd);
    if (r < 0 || (size_t)r != n) {
        nf_diag_addf(d, NF_C_INCOMPLETE, a->file_paths[i], "", "file ends inside its fill");
        return -1;
    }
    return check_fill_bytes(a, i, buf, n, from, d);
}

int nf_artifact_file_check(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd;
    nf_rfile *f = pin(a, i, &fd, d);
    if (!f)
        return -1;
    unpin(f, fd);
    return 0;
}

int nf_artifact_file_fd(nf_artifact *a, size_t i, nf_diags *d)
{
    int fd;
    nf_rfile *f = pin(a, i, &fd, d);
    if (!f)
        return -1;
    unpin(f, fd);
    if (fd < 0)
        nf_diag_addf(d, NF_C_IO, a->file_paths[i], "", "a file read over HTTP has no descriptor");
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

static int bounds(const nf_artifact *a, uint64_t off, uint64_t len, nf_diags *d)
{
    uint64_t end;
    if (!nf_add_u64(off, len, &end) || end > a->cat->payload_bytes) {
        nf_diag_add(d, NF_C_BOUNDS, "", "range [%llu, +%llu) is outside the %llu-byte payload",
                    (unsigned long long)off, (unsigned long long)len,
                    (unsigned long long)a->cat->payload_bytes);
        return -1;
    }
    return 0;
}

int nf_artifact_segments(nf_artifact *a, uint64_t off, uint64_t len, nf_segment_fn fn,
                         void *ctx, nf_diags *d)
{
    if (bounds(a, off, len, d) < 0)
        return -1;
    uint64_t end = off + len;
    for (size_t i = file_for(a, off); i < a->n_files && off < end; i++) {
        const nf_file *f = &a->cat->files[i];
        uint64_t fe = f->logical_offset + f->payload_bytes;
        uint64_t b = fe < end ? fe : end;
        int fd;
        nf_rfile *src = pin(a, i, &fd, d);
        if (!src)
            return -1;
        uint64_t foff = nf_artifact_file_payload_start(a, i) + (off - f->logical_offset);
        int rc = fn(ctx, i, src, fd, foff, off - (end - len), b - off);
        unpin(src, fd);
        if (rc)
            return rc;
        off = b;
    }
    return 0;
}

/* A failed or short read of file i at foff as a diagnostic: a file that
 * changed is `length` locally (it no longer matches its header) and `io`
 * over HTTP (the server's file changed under us). */
static void read_error(nf_artifact *a, size_t i, uint64_t foff, ssize_t r, const nf_rerr *e,
                       nf_diags *d)
{
    const char *p = a->file_paths[i];
    bool remote = a->rf[i] && nf_rfile_is_remote(a->rf[i]);
    if (r >= 0)
        nf_diag_addf(d, remote ? NF_C_IO : NF_C_INCOMPLETE, p, "",
                     "file ends at %llu, inside the declared payload (it changed or is truncated)",
                     (unsigned long long)(foff + (uint64_t)r));
    else if (e->kind == NF_RE_SHORT)
        nf_diag_addf(d, remote ? NF_C_IO : NF_C_INCOMPLETE, p, "", "%s", e->msg);
    else if (remote)
        nf_diag_addf(d, NF_C_IO, p, "", "%s", e->msg);
    else if (e->kind == NF_RE_CHANGED)
        nf_diag_addf(d, NF_C_LENGTH, p, "", "%s", e->msg);
    else if (e->kind == NF_RE_EMFILE)
        say_emfile(a, i, d);
    else
        nf_diag_addf(d, NF_C_IO, p, "", "%s", e->msg);
}

struct read_ctx {
    nf_artifact *a;
    unsigned char *buf;
    nf_diags *d;
};

static int read_seg(void *vctx, size_t file, nf_rfile *src, int fd, uint64_t foff, uint64_t roff,
                    uint64_t len)
{
    struct read_ctx *c = vctx;
    (void)fd;
    nf_rerr e;
    ssize_t r = file_pread(c->a, file, src, c->buf + roff, (size_t)len, foff, &e);
    if (r < 0 || (uint64_t)r != len) {
        read_error(c->a, file, foff, r, &e, c->d);
        return -1;
    }
    return 0;
}

int nf_artifact_read(nf_artifact *a, uint64_t off, void *buf, size_t n, nf_diags *d)
{
    struct read_ctx c = {a, buf, d};
    return nf_artifact_segments(a, off, n, read_seg, &c, d) ? -1 : 0;
}

/* ---- ordered reads of logical ranges ---- */

typedef struct {
    size_t file;
    uint64_t foff, len, loff; /* a wanted file range and its logical offset */
    bool mem;                 /* served from a URL entry's first bytes */
} want;

typedef struct {
    size_t file;
    bool header;              /* starts at 0: part i's check rides along */
} piece_info;

struct nf_scan {
    nf_artifact *a;
    want *w;
    size_t nw, wi;
    uint64_t wgot;            /* bytes of w[wi] delivered */
    nf_rpiece *p;
    piece_info *pi;
    size_t np;
    nf_rstream *rs;
    size_t cur_piece;         /* the stream's bytes not yet used */
    uint64_t cur_off;
    const unsigned char *cur;
    size_t cur_len;
    unsigned char hdr[NF_PAGE]; /* a part's first bytes, for its check */
    size_t hdr_got;
    bool failed;
};

void nf_scan_free(nf_scan *s)
{
    if (!s)
        return;
    nf_rstream_free(s->rs);
    free(s->w);
    free(s->p);
    free(s->pi);
    free(s);
}

/* The wanted file ranges of logical ranges r[0..n), in order. */
static int plan_wants(nf_scan *s, const nf_range *r, size_t n, nf_diags *d)
{
    nf_artifact *a = s->a;
    size_t cap = 0;
    for (size_t k = 0; k < n; k++) {
        if (bounds(a, r[k].off, r[k].len, d) < 0)
            return -1;
        if (k && r[k].off < r[k - 1].off + r[k - 1].len) {
            nf_diag_add(d, NF_C_BOUNDS, "", "ranges out of order or overlapping");
            return -1;
        }
        uint64_t off = r[k].off, end = off + r[k].len;
        for (size_t i = file_for(a, off); i < a->n_files && off < end; i++) {
            const nf_file *f = &a->cat->files[i];
            uint64_t fe = f->logical_offset + f->payload_bytes, b = fe < end ? fe : end;
            if (s->nw == cap) {
                cap = cap ? 2 * cap : 16;
                want *nv = realloc(s->w, cap * sizeof *nv);
                if (!nv)
                    return -1;
                s->w = nv;
            }
            uint64_t foff = nf_artifact_file_payload_start(a, i) + (off - f->logical_offset);
            bool mem = i == 0 && a->head && foff + (b - off) <= a->head_len;
            s->w[s->nw++] = (want){i, foff, b - off, off, mem};
            off = b;
        }
    }
    return 0;
}

/* What the stream fetches: the wants not served from memory, a remote
 * file's ranges closer than MERGE_GAP as one, and a remote part not yet
 * checked from its byte 0 when its first want begins within MERGE_GAP of
 * its payload (its check then needs no request of its own). */
static int plan_pieces(nf_scan *s)
{
    nf_artifact *a = s->a;
    s->p = malloc((s->nw ? s->nw : 1) * sizeof *s->p);
    s->pi = malloc((s->nw ? s->nw : 1) * sizeof *s->pi);
    if (!s->p || !s->pi)
        return -1;
    size_t last_file = SIZE_MAX;
    for (size_t k = 0; k < s->nw; k++) {
        const want *w = &s->w[k];
        if (w->mem)
            continue;
        nf_rfile *f = a->rf[w->file];
        bool remote = a->url != NULL;
        if (s->np && s->pi[s->np - 1].file == w->file && remote) {
            nf_rpiece *q = &s->p[s->np - 1];
            if (w->foff - (q->off + q->len) < MERGE_GAP) {
                q->len = w->foff + w->len - q->off;
                continue;
            }
        }
        bool header = remote && w->file != last_file && w->file > 0 &&
                      a->fstate[w->file] == F_UNOPENED && w->foff < NF_PAGE + MERGE_GAP;
        last_file = w->file;
        uint64_t from = header ? 0 : w->foff;
        s->p[s->np] = (nf_rpiece){f, from, w->foff + w->len - from};
        s->pi[s->np] = (piece_info){w->file, header};
        s->np++;
    }
    return 0;
}

nf_scan *nf_scan_new(nf_artifact *a, const nf_range *r, size_t n, const nf_scan_opts *o,
                     nf_diags *d)
{
    nf_scan *s = calloc(1, sizeof *s);
    if (!s) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return NULL;
    }
    s->a = a;
    if (a->in) {
        nf_diag_add(d, NF_C_IO, "", "a stream is read in order, not by ranges");
        nf_scan_free(s);
        return NULL;
    }
    if (plan_wants(s, r, n, d) < 0 || plan_pieces(s) < 0) {
        if (!d->n)
            nf_diag_add(d, NF_C_IO, "", "out of memory");
        nf_scan_free(s);
        return NULL;
    }
    /* the files before the first byte moves: rstream's pieces need their
     * byte sources (a local part is opened here, a remote one is checked
     * here unless its check rides on its first request) */
    size_t hdr_file = SIZE_MAX;
    for (size_t k = 0; k < s->np; k++) {
        size_t i = s->pi[k].file;
        if (s->pi[k].header)
            hdr_file = i;
        if (i == hdr_file)
            continue;
        if (nf_artifact_file_check(a, i, d) < 0) {
            nf_scan_free(s);
            return NULL;
        }
        s->p[k].f = a->rf[i];
    }
    nf_rstream_opts ro = {0, 0, 0};
    if (o)
        ro = (nf_rstream_opts){o->jobs, o->chunk, o->window};
    if (!ro.jobs)
        ro.jobs = a->http ? nf_http_jobs(a->http) : 1;
    if (!(s->rs = nf_rstream_new(s->p, s->np, &ro))) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        nf_scan_free(s);
        return NULL;
    }
    return s;
}

/* The next bytes from the stream into s->cur; header bytes of a part whose
 * check rides along are taken for the check. Returns 1, 0 at the end, -1. */
static int stream_more(nf_scan *s, nf_diags *d)
{
    nf_artifact *a = s->a;
    for (;;) {
        size_t piece;
        uint64_t off;
        const void *p;
        size_t len;
        nf_rerr e;
        int r = nf_rstream_next(s->rs, &piece, &off, &p, &len, &e);
        if (r < 0) {
            size_t i = s->pi[piece].file;
            bool checking = s->pi[piece].header && a->fstate[i] == F_UNOPENED;
            uint64_t size = 0;
            if (checking && e.kind == NF_RE_SHORT && nf_rfile_size(a->rf[i], &size)) {
                /* a part shorter than its header: its check says how */
                pthread_mutex_lock(&a->lock);
                if (check_part(a, i, s->hdr, s->hdr_got, size, true, d) == 0)
                    read_error(a, i, 0, -1, &e, d);
                a->fstate[i] = F_FAILED;
                pthread_mutex_unlock(&a->lock);
            } else if (checking) {
                char *ptr = nf_ptr_index("/files", i);
                remote_open_error(d, a->file_paths[i], ptr ? ptr : "", i, &e);
                free(ptr);
                pthread_mutex_lock(&a->lock);
                a->fstate[i] = F_FAILED;
                pthread_mutex_unlock(&a->lock);
            } else {
                read_error(a, i, 0, -1, &e, d);
            }
            return -1;
        }
        if (r == 0)
            return 0;
        const unsigned char *b = p;
        if (s->pi[piece].header && off < NF_PAGE) {
            size_t i = s->pi[piece].file;
            size_t k = NF_PAGE - (size_t)off < len ? NF_PAGE - (size_t)off : len;
            memcpy(s->hdr + off, b, k);
            s->hdr_got = (size_t)off + k;
            b += k;
            len -= k;
            off += k;
            if (s->hdr_got == NF_PAGE || len || off == s->p[piece].off + s->p[piece].len) {
                uint64_t size = 0;
                nf_rfile_size(a->rf[i], &size);
                pthread_mutex_lock(&a->lock);
                int rc = a->fstate[i] == F_UNOPENED
                             ? check_part(a, i, s->hdr, s->hdr_got, size, true, d)
                             : a->fstate[i] == F_GOOD ? 0 : -1;
                a->fstate[i] = rc == 0 ? F_GOOD : F_FAILED;
                pthread_mutex_unlock(&a->lock);
                s->hdr_got = 0;
                if (rc < 0)
                    return -1;
            }
            if (!len)
                continue;
        }
        s->cur_piece = piece;
        s->cur_off = off;
        s->cur = b;
        s->cur_len = len;
        return 1;
    }
}

int nf_scan_next(nf_scan *s, size_t *file, uint64_t *off, const void **buf, size_t *len,
                 nf_diags *d)
{
    if (s->failed)
        return -1;
    while (s->wi < s->nw) {
        const want *w = &s->w[s->wi];
        if (w->mem) {
            *file = 0;
            *off = w->loff;
            *buf = s->a->head + w->foff;
            *len = (size_t)w->len;
            s->wi++;
            return 1;
        }
        if (!s->cur_len) {
            int r = stream_more(s, d);
            if (r <= 0) {
                if (r == 0)
                    nf_diag_add(d, NF_C_IO, "", "the range reads ended early");
                s->failed = true;
                return -1;
            }
        }
        uint64_t at = w->foff + s->wgot; /* the next byte wanted */
        if (s->pi[s->cur_piece].file != w->file || s->cur_off + s->cur_len <= at) {
            s->cur_len = 0; /* bytes of a merged gap */
            continue;
        }
        if (s->cur_off > at) {
            nf_diag_add(d, NF_C_IO, "", "internal error: range reads out of order");
            s->failed = true;
            return -1;
        }
        if (s->cur_off < at) {
            size_t skip = (size_t)(at - s->cur_off);
            s->cur += skip;
            s->cur_len -= skip;
            s->cur_off = at;
        }
        uint64_t left = w->len - s->wgot;
        size_t k = s->cur_len < left ? s->cur_len : (size_t)left;
        *file = w->file;
        *off = w->loff + s->wgot;
        *buf = s->cur;
        *len = k;
        s->cur += k;
        s->cur_len -= k;
        s->cur_off += k;
        s->wgot += k;
        if (s->wgot == w->len) {
            s->wi++;
            s->wgot = 0;
        }
        return 1;
    }
    return 0;
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
