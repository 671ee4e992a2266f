/* nf_source_resolve.c — a manifest source to exact bytes or to values, for
 * the packer (DESIGN 5, 7.4): the inputs opened once each, and one bytes
 * and one values function per source kind (the table at the end). */
#include "nf_source.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_digest.h"
#include "nf_gguf.h"
#include "nf_safetensors.h"
#include "nf_source_int.h"
#include "nf_strmap.h"
#include "nf_util.h"

/* One input, opened once; its descriptor is kept in the set's pool, which
 * closes the least recently used and reopens them as needed (DESIGN 3: any
 * number of sources within a small ulimit -n; red-team C3). */
typedef struct {
    char *path;
    nf_fdref *ref;       /* raw, safetensors and GGUF files */
    uint64_t size;       /* their size when opened */
    nf_safetensors *st;
    nf_gguf *gg;
    nf_artifact *a;
} input;

struct nf_source_inputs {
    const char *base;
    nf_diags *d;
    bool allow_nonfinite;
    input *in;
    size_t n_in, cap_in;
    nf_strmap in_by_path; /* resolved path -> index into in */
    nf_fdpool *fds;       /* the inputs' descriptors */
};

/* A values resolution in progress: the values and what they hold. */
struct nf_src_rv {
    nf_values *v;
    nf_source_held *held;
};

nf_source_inputs *nf_source_inputs_new(const char *base, bool allow_nonfinite, nf_diags *d)
{
    nf_source_inputs *p = calloc(1, sizeof *p);
    if (p) {
        p->base = base;
        p->d = d;
        p->allow_nonfinite = allow_nonfinite;
        p->in_by_path = (nf_strmap)NF_STRMAP_INIT;
        p->fds = nf_fdpool_new(0);
        if (!p->fds) {
            free(p);
            p = NULL;
        }
    }
    return p;
}

void nf_source_inputs_free(nf_source_inputs *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_in; i++) {
        nf_safetensors_free(p->in[i].st);
        nf_gguf_free(p->in[i].gg);
        nf_artifact_close(p->in[i].a);
        free(p->in[i].path);
    }
    free(p->in);
    nf_strmap_free(&p->in_by_path);
    nf_fdpool_free(p->fds);
    free(p);
}

const char **nf_source_inputs_files(const nf_source_inputs *p, size_t *n)
{
    size_t ni = 0, cap = p->n_in + 1;
    for (size_t i = 0; i < p->n_in; i++)
        if (p->in[i].a)
            cap += nf_artifact_catalog(p->in[i].a)->n_files;
    const char **v = calloc(cap, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < p->n_in; i++) {
        if (p->in[i].a)
            for (size_t k = 0; k < nf_artifact_catalog(p->in[i].a)->n_files; k++)
                v[ni++] = nf_artifact_file_path(p->in[i].a, k);
        else
            v[ni++] = p->in[i].path;
    }
    *n = ni;
    return v;
}

/* Make sure a descriptor or two can be opened: when none can, ask every
 * descriptor cache to close its idle ones (nf_fd_reclaim). */
static void fd_headroom(void)
{
    int a = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int b = a >= 0 ? open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    bool short_of = b < 0 && (errno == EMFILE || errno == ENFILE);
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    if (short_of)
        nf_fd_reclaim(NULL);
}

/* ---- segments ---- */

void nf_source_segs_free(nf_source_segs *s)
{
    free(s->v);
    free(s->mem);
    memset(s, 0, sizeof *s);
}

static bool segs_add(nf_source_segs *s, nf_source_seg g)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 4;
        nf_source_seg *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return false;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = g;
    s->total += g.len;
    return true;
}

static bool segs_push(nf_source_segs *s, nf_fdref *ref, uint64_t off, uint64_t len,
                      const char *path)
{
    return segs_add(s, (nf_source_seg){ref, off, len, path, NULL, NULL, 0, false});
}

/* The same for bytes of values of a declared dtype (nf_source_seg.values). */
static bool segs_push_values(nf_source_segs *s, nf_fdref *ref, uint64_t off, uint64_t len,
                             const char *path)
{
    if (!segs_push(s, ref, off, len, path))
        return false;
    s->v[s->n - 1].values = true;
    return true;
}

void nf_source_digest_error(nf_diags *d, const char *path, size_t index, const nf_object *so,
                            const char *got)
{
    char ptr[64], want[65];
    snprintf(ptr, sizeof ptr, "/objects/%zu", index);
    nf_object_digest_hex(so, want);
    nf_diag_addf(d, NF_C_DIGEST, path, ptr,
                 "source object \"%s\": sha256 %s, its artifact's metadata.integrity says %s",
                 so->id, got, want);
}

/* Check buf[0..n) against the carried digest of source object so. */
static int check_source_digest(nf_diags *d, const char *path, size_t index,
                               const nf_object *so, const void *buf, size_t n)
{
    if (!so->has_digest)
        return 0;
    nf_sha256 *h = nf_sha256_new();
    if (!h) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    char got[65], want[65];
    nf_sha256_update(h, buf, n);
    nf_sha256_final(h, got);
    nf_object_digest_hex(so, want);
    if (strcmp(got, want) == 0)
        return 0;
    nf_source_digest_error(d, path, index, so, got);
    return -1;
}

static char *resolve(const nf_source_inputs *p, const char *path)
{
    /* an artifact at a URL is read where it is (nf_artifact.h) */
    return path[0] == '/' || nf_is_url(path) ? strdup(path) : nf_path_join(p->base, path);
}

/* The input at rel for a source of kind (file, safetensors, artifact,
 * gguf), opened on first use; NULL with a diagnostic (none when the path was
 * opened before as another kind). */
static input *get_input(nf_source_inputs *p, const char *rel, nf_src_kind kind, const char *ptr)
{
    char *path = resolve(p, rel);
    if (!path)
        return NULL;
    /* each input opened once, found by its path in O(1) (74k sources) */
    size_t known = nf_strmap_get(&p->in_by_path, path, strlen(path));
    if (known != SIZE_MAX) {
        free(path);
        input *in = &p->in[known];
        if ((kind == NF_SRC_SAFETENSORS && !in->st) || (kind == NF_SRC_ARTIFACT && !in->a) ||
            (kind == NF_SRC_GGUF && !in->gg))
            return NULL;
        return in;
    }
    if (p->n_in == p->cap_in) {
        size_t nc = p->cap_in ? p->cap_in * 2 : 8;
        input *nv = realloc(p->in, nc * sizeof *nv);
        if (!nv) {
            free(path);
            return NULL;
        }
        p->in = nv;
        p->cap_in = nc;
    }
    input in = {path, NULL, 0, NULL, NULL, NULL};
    /* a descriptor or two for the opening: when the process has none left,
     * the caches (these sources, the source artifacts) give theirs */
    fd_headroom();
    if (kind == NF_SRC_ARTIFACT) {
        nf_open_opts oo = {0};
        nf_diags tmp = NF_DIAGS_INIT;
        tmp.file = path;
        in.a = nf_artifact_open(path, &oo, &tmp);
        if (in.a && nf_diags_exit(&tmp)) {
            nf_artifact_close(in.a);
            in.a = NULL;
        }
        nf_diags_move(p->d, &tmp);
        nf_diags_free(&tmp);
        if (!in.a) {
            nf_diag_add(p->d, NF_C_IO, ptr, "cannot use artifact source \"%s\"", rel);
            free(path);
            return NULL;
        }
    } else {
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
            nf_diag_add(p->d, NF_C_IO, ptr, "cannot read source \"%s\": %s", rel,
                        fd < 0 ? strerror(errno) : "not a regular file");
            if (fd >= 0)
                close(fd);
            free(path);
            return NULL;
        }
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        in.size = (uint64_t)sb.st_size;
        in.ref = nf_fdpool_add(p->fds, path, fd);
        if (!in.ref) {
            nf_diag_add(p->d, NF_C_IO, ptr, "out of memory");
            free(path);
            return NULL;
        }
        if (kind == NF_SRC_SAFETENSORS || kind == NF_SRC_GGUF) {
            if (kind == NF_SRC_SAFETENSORS)
                in.st = nf_safetensors_open(path, p->d);
            else
                in.gg = nf_gguf_open(path, p->d);
            if (!in.st && !in.gg) {
                free(path);
                return NULL; /* in.ref stays in the pool, unused */
            }
        }
    }
    if (nf_strmap_add(&p->in_by_path, in.path, strlen(in.path), p->n_in) == SIZE_MAX - 1) {
        nf_diag_add(p->d, NF_C_IO, ptr, "out of memory");
        nf_safetensors_free(in.st);
        nf_gguf_free(in.gg);
        nf_artifact_close(in.a);
        free(path);
        return NULL;
    }
    p->in[p->n_in] = in;
    return &p->in[p->n_in++];
}


/* dtype of a source that needs no transcoding into format f, or NULL. */
static bool dtype_matches(const char *dtype, nf_format f)
{
    return (f == NF_FMT_BF16 && (!strcmp(dtype, "bf16") || !strcmp(dtype, "BF16"))) ||
           (f == NF_FMT_FP32 && (!strcmp(dtype, "f32") || !strcmp(dtype, "F32"))) ||
           (f == NF_FMT_INT32 && (!strcmp(dtype, "i32") || !strcmp(dtype, "I32")));
}


static int values_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_source_segs *out)
{
    uint64_t el;
    unsigned eb = nf_format_elem_bytes(o->format);
    if (!eb || o->layout != NF_LAY_CONTIGUOUS_LE_V1) {
        nf_diag_add(p->d, NF_C_UNSUPPORTED, s->pointer,
                    "inline values into %s/%s are transcoded, not copied", o->format_name,
                    o->layout_name);
        return -1;
    }
    if (!nf_shape_elements(o->dims, o->rank, &el) || el != s->n_values) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer, "%zu values for %llu elements", s->n_values,
                    (unsigned long long)el);
        return -1;
    }
    out->mem = malloc(el * eb + 1);
    if (!out->mem)
        return -1;
    bool allow = p->allow_nonfinite;
    for (size_t i = 0; i < s->n_values; i++) {
        double v = s->values[i];
        unsigned char *q = out->mem + i * eb;
        /* DESIGN 7.4: NaN/Inf (1e400 reads as Inf) and values that round to
         * Inf are errors naming the element, unless --allow-nonfinite */
        if (o->format != NF_FMT_INT32 && !allow && !isfinite(v)) {
            char *ep = NULL;
            if (asprintf(&ep, "%s/values/%zu", s->pointer ? s->pointer : "", i) < 0)
                ep = NULL;
            nf_diag_add(p->d, NF_C_RANGE, ep ? ep : s->pointer,
                        "object \"%s\": value %zu is %s, not finite (--allow-nonfinite keeps it)",
                        o->id, i, v != v ? "NaN" : v > 0 ? "+Inf" : "-Inf");
            free(ep);
            return -1;
        }
        if (o->format == NF_FMT_INT32) {
            if (v != floor(v) || v < -2147483648.0 || v > 2147483647.0) {
                nf_diag_add(p->d, NF_C_RANGE, s->pointer, "value %g is not an int32", v);
                return -1;
            }
            int32_t x = (int32_t)v;
            memcpy(q, &x, 4);
        } else {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            bool over = isfinite(v) && (!isfinite(f) || (o->format == NF_FMT_BF16 &&
                                                         (u & 0x7fffffffu) >= 0x7f7f8000u));
            if (over && !allow) {
                char *ep = NULL;
                if (asprintf(&ep, "%s/values/%zu", s->pointer ? s->pointer : "", i) < 0)
                    ep = NULL;
                nf_diag_add(p->d, NF_C_RANGE, ep ? ep : s->pointer,
                            "object \"%s\": value %zu (%.17g) rounds to infinity in %s "
                            "(--allow-nonfinite keeps it as infinity)",
                            o->id, i, v, o->format == NF_FMT_BF16 ? "bf16" : "fp32");
                free(ep);
                return -1;
            }
            if (o->format == NF_FMT_FP32) {
                memcpy(q, &u, 4);
            } else {
                /* bf16: round to nearest even (NaN kept quiet) */
                uint16_t b = (f != f) ? (uint16_t)((u >> 16) | 0x40)
                                      : (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
                memcpy(q, &b, 2);
            }
        }
    }
    segs_push(out, NULL, 0, el * eb, NULL);
    return 0;
}

static int piece_transforms(nf_source_inputs *p, const nf_source *s, nf_piece *pc, uint64_t src_rows,
                            uint64_t src_cols);

/* A GGUF tensor already in object o's encoding (F32 -> fp32, BF16 -> bf16
 * in contiguous_le_v1; a gguf_* type, F16 included, in gguf_rows_v1), as
 * byte segments: its rows (a vector: its elements) [r0, r1) in order, each
 * from the source row its unpermute names, so a row unpermute of gguf_*
 * bytes is a lossless row copy (DESIGN 5; GGUF.md 3.3). Only the shape's K
 * is checked here (the caller checks the total against the object).
 * Returns 0, 1 when the source needs transcoding (another encoding, a map
 * or a column unpermute), or -1 with a diagnostic. */
static int gguf_copy(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_source_segs *out)
{
    input *in = get_input(p, s->path, NF_SRC_GGUF, s->pointer);
    if (!in)
        return -1;
    const nf_gguf_tensor *t = nf_gguf_find_tensor(in->gg, s->name);
    if (!t) {
        nf_diag_add(p->d, NF_C_REFERENCE, s->pointer, "\"%s\" has no tensor \"%s\"", s->path,
                    s->name);
        return -1;
    }
    bool same = (t->type == NF_GGML_F32 && o->format == NF_FMT_FP32 &&
                 o->layout == NF_LAY_CONTIGUOUS_LE_V1) ||
                (t->type == NF_GGML_BF16 && o->format == NF_FMT_BF16 &&
                 o->layout == NF_LAY_CONTIGUOUS_LE_V1) ||
                (nf_format_of_ggml_type(t->type) == o->format && o->format != NF_FMT_UNKNOWN &&
                 o->layout == NF_LAY_GGUF_ROWS_V1);
    if (!same || s->map || (s->has_unpermute && s->unpermute_columns))
        return 1;
    uint64_t rows = t->n_dims == 1 ? t->elements : t->elements / t->ne[0];
    uint64_t cols = t->elements / rows, rb = t->bytes / rows; /* whole blocks per row */
    if (o->rank >= 2 && t->n_dims >= 2 && o->dims[o->rank - 1] != cols) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer, "GGUF tensor \"%s\" has rows of %llu; the object's "
                    "have %llu", s->name, (unsigned long long)cols,
                    (unsigned long long)o->dims[o->rank - 1]);
        return -1;
    }
    nf_piece pc;
    memset(&pc, 0, sizeof pc);
    if (piece_transforms(p, s, &pc, rows, cols) < 0)
        return -1;
    uint64_t r0 = pc.row0, r1 = r0 + pc.elements / cols;
    if (!s->has_unpermute)
        return segs_push_values(out, in->ref, t->offset + r0 * rb, (r1 - r0) * rb, in->path) ? 0
                                                                                           : -1;
    for (uint64_t l = r0; l < r1;) { /* runs of consecutive source rows */
        uint64_t a = nf_piece_src_row(&pc, l), n = 1;
        while (l + n < r1 && nf_piece_src_row(&pc, l + n) == a + n)
            n++;
        if (!segs_push_values(out, in->ref, t->offset + a * rb, n * rb, in->path))
            return -1;
        l += n;
    }
    return 0;
}


/* ---- exact bytes (nf_source_bytes), one function per kind ----
 * Each returns 0, 1 (decode and re-encode instead) or -1 (diagnosed). */

static int file_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                      nf_source_segs *out)
{
    bool tensor = o->kind == NF_OBJ_TENSOR;
    input *in = get_input(p, s->path, NF_SRC_FILE, s->pointer);
    if (!in)
        return -1;
    if (tensor && s->dtype &&
        (!dtype_matches(s->dtype, o->format) || o->layout != NF_LAY_CONTIGUOUS_LE_V1))
        return 1;
    uint64_t size = in->size;
    if (s->offset > size) {
        nf_diag_add(p->d, NF_C_BOUNDS, s->pointer, "offset %llu is past the end of \"%s\"",
                    (unsigned long long)s->offset, s->path);
        return -1;
    }
    uint64_t len = tensor || o->has_bytes ? o->bytes : size - s->offset;
    if (len > size - s->offset) {
        nf_diag_add(p->d, NF_C_BOUNDS, s->pointer,
                    "\"%s\" has %llu bytes from offset %llu; the object needs %llu", s->path,
                    (unsigned long long)(size - s->offset), (unsigned long long)s->offset,
                    (unsigned long long)len);
        return -1;
    }
    if (len == 0) {
        nf_diag_add(p->d, NF_C_RANGE, s->pointer, "source \"%s\" is empty", s->path);
        return -1;
    }
    return (s->dtype ? segs_push_values : segs_push)(out, in->ref, s->offset, len, in->path)
               ? 0 : -1;
}

/* The safetensors tensor of s in p, or NULL (with a reference diagnostic
 * when the file opened). *inp: its input. */
static const nf_st_tensor *st_tensor(nf_source_inputs *p, const nf_source *s, input **inp)
{
    input *in = *inp = get_input(p, s->path, NF_SRC_SAFETENSORS, s->pointer);
    const nf_st_tensor *t = in ? nf_safetensors_find(in->st, s->name) : NULL;
    if (in && !t)
        nf_diag_add(p->d, NF_C_REFERENCE, s->pointer, "\"%s\" has no tensor \"%s\"", s->path,
                    s->name);
    return t;
}

static int safetensors_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                             nf_source_segs *out)
{
    bool tensor = o->kind == NF_OBJ_TENSOR;
    input *in;
    const nf_st_tensor *t = st_tensor(p, s, &in);
    if (!t)
        return -1;
    uint64_t off = t->offset, len = t->bytes;
    if (s->has_rows) {
        if (t->rank != 2 || s->rows[1] > t->dims[0]) {
            nf_diag_add(p->d, NF_C_RANGE, s->pointer, "rows [%llu, %llu) outside tensor \"%s\"",
                        (unsigned long long)s->rows[0], (unsigned long long)s->rows[1],
                        s->name);
            return -1;
        }
        uint64_t rb = t->dims[1] * t->elem_bytes; /* no overflow: within t->bytes */
        off += s->rows[0] * rb;
        len = (s->rows[1] - s->rows[0]) * rb;
    }
    if (tensor && (!dtype_matches(t->dtype, o->format) || o->layout != NF_LAY_CONTIGUOUS_LE_V1))
        return 1;
    if (tensor && len != o->bytes) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer,
                    "tensor \"%s\" holds %llu bytes; the object's shape needs %llu", s->name,
                    (unsigned long long)len, (unsigned long long)o->bytes);
        return -1;
    }
    if (len == 0) {
        nf_diag_add(p->d, NF_C_RANGE, s->pointer, "tensor \"%s\" is empty", s->name);
        return -1;
    }
    return segs_push_values(out, in->ref, off, len, in->path) ? 0 : -1;
}

static int gguf_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                      nf_source_segs *out)
{
    int r = gguf_copy(p, o, s, out);
    if (r == 0 && out->total != o->bytes) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer,
                    "GGUF tensor \"%s\" gives %llu bytes; the object's shape needs %llu", s->name,
                    (unsigned long long)out->total, (unsigned long long)o->bytes);
        return -1;
    }
    return r;
}

/* The object of an artifact source, or SIZE_MAX (with a reference
 * diagnostic when the artifact opened); tensor: it must be a tensor.
 * *inp: its input. */
static size_t artifact_object(nf_source_inputs *p, const nf_source *s, bool tensor, input **inp)
{
    input *in = *inp = get_input(p, s->path, NF_SRC_ARTIFACT, s->pointer);
    if (!in)
        return SIZE_MAX;
    const nf_catalog *c = nf_artifact_catalog(in->a);
    size_t i = nf_catalog_find(c, s->name);
    if (i == SIZE_MAX || (tensor && c->objects[i].kind != NF_OBJ_TENSOR)) {
        nf_diag_add(p->d, NF_C_REFERENCE, s->pointer, tensor ? "\"%s\" has no tensor object \"%s\""
                    : "\"%s\" has no object \"%s\"", s->path, s->name);
        return SIZE_MAX;
    }
    return i;
}

static int artifact_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                          nf_source_segs *out)
{
    input *in;
    size_t i = artifact_object(p, s, false, &in);
    if (i == SIZE_MAX)
        return -1;
    const nf_catalog *c = nf_artifact_catalog(in->a);
    const nf_object *so = &c->objects[i];
    if (o->kind == NF_OBJ_TENSOR) {
        bool same = so->kind == NF_OBJ_TENSOR && so->format == o->format &&
                    so->layout == o->layout && so->rank == o->rank &&
                    so->divisors == o->divisors && so->format != NF_FMT_UNKNOWN &&
                    memcmp(so->dims, o->dims, o->rank * sizeof *o->dims) == 0;
        if (!same)
            return 1;
    }
    /* the files it lies in must be there and belong to the artifact */
    bool *need = calloc(c->n_files ? c->n_files : 1, sizeof *need);
    if (!need)
        return -1;
    nf_artifact_files_touched(in->a, so->offset, so->bytes, need);
    int bad = 0;
    for (size_t f = 0; f < c->n_files; f++)
        if (need[f] && nf_artifact_file_check(in->a, f, p->d) < 0)
            bad = -1;
    free(need);
    if (bad)
        return -1;
    return segs_add(out, (nf_source_seg){NULL, so->offset, so->bytes, in->path, in->a,
                                         so->has_digest ? so : NULL, i, false})
               ? 0
               : -1;
}

static int values_kind_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                             nf_source_segs *out)
{
    if (!nf_format_elem_bytes(o->format) || o->layout != NF_LAY_CONTIGUOUS_LE_V1)
        return 1;
    return values_bytes(p, o, s, out);
}

/* One safetensors item of a concat: its rows, checked as raw rows of the
 * object's format and K. */
static int concat_st_rows(nf_source_inputs *p, const nf_object *o, const nf_source *it,
                          nf_source_segs *out)
{
    input *in;
    const nf_st_tensor *t = st_tensor(p, it, &in);
    if (!t)
        return -1;
    if (!dtype_matches(t->dtype, o->format))
        return 1;
    if (t->rank != 2 || o->rank != 2 || t->dims[1] != o->dims[1]) {
        nf_diag_add(p->d, NF_C_SIZE, it->pointer, "concat item \"%s\" must be rank-2 with K=%llu",
                    it->name, (unsigned long long)o->dims[1]);
        return -1;
    }
    uint64_t rb = t->dims[1] * t->elem_bytes, r0 = 0, r1 = t->dims[0];
    if (it->has_rows) {
        if (it->rows[1] > t->dims[0]) {
            nf_diag_add(p->d, NF_C_RANGE, it->pointer, "rows outside tensor \"%s\"", it->name);
            return -1;
        }
        r0 = it->rows[0];
        r1 = it->rows[1];
    }
    return segs_push_values(out, in->ref, t->offset + r0 * rb, (r1 - r0) * rb, in->path) ? 0
                                                                                       : -1;
}

static int concat_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                        nf_source_segs *out)
{
    for (size_t k = 0; k < s->n_items; k++) {
        const nf_source *it = &s->items[k];
        int rr;
        if (it->kind == NF_SRC_GGUF) { /* rows of GGUF bytes (gguf_copy) */
            rr = gguf_copy(p, o, it, out);
        } else if (o->layout != NF_LAY_CONTIGUOUS_LE_V1 ||
                   (it->kind != NF_SRC_SAFETENSORS && it->kind != NF_SRC_ARTIFACT) ||
                   it->has_unpermute || it->map) {
            rr = 1;
        } else if (it->kind == NF_SRC_SAFETENSORS) {
            rr = concat_st_rows(p, o, it, out);
        } else {
            nf_source_segs part = {0};
            rr = nf_source_bytes(p, o, it, &part);
            for (size_t q = 0; rr == 0 && q < part.n; q++)
                segs_add(out, part.v[q]);
            free(part.v);
        }
        if (rr != 0)
            return rr;
    }
    if (out->total != o->bytes) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer,
                    "concat gives %llu bytes; the object's shape needs %llu",
                    (unsigned long long)out->total, (unsigned long long)o->bytes);
        return -1;
    }
    return 0;
}

int nf_source_bytes(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                    nf_source_segs *out)
{
    if ((s->has_unpermute || s->map) && o->kind == NF_OBJ_TENSOR && s->kind != NF_SRC_GGUF)
        return 1; /* GGUF: whole-row unpermutes of its bytes are copies (gguf_copy) */
    if (s->kind <= NF_SRC_NONE || s->kind > NF_SRC_CONCAT)
        return -1;
    const nf_src_kind_info *k = &nf_src_kinds[s->kind];
    if (o->kind != NF_OBJ_TENSOR && k->tensor_only) {
        nf_diag_add(p->d, NF_C_SCHEMA, s->pointer, "a resource takes bytes, not %s",
                    k->tensor_only);
        return -1;
    }
    return k->bytes(p, o, s, out);
}

/* ---- what values hold ---- */

static bool held_add(nf_source_held *h, uint8_t *obj, nf_tensor_enc *te)
{
    uint8_t **no = realloc(h->owned, (h->n + 1) * sizeof *no);
    nf_tensor_enc **nt = no ? realloc(h->tes, (h->n + 1) * sizeof *nt) : NULL;
    if (no)
        h->owned = no;
    if (!nt)
        return false;
    h->tes = nt;
    h->owned[h->n] = obj;
    h->tes[h->n++] = te;
    return true;
}

/* A buffer of `bytes` and an encoding struct (*te) for a decoded-from
 * object of source s, held by r; NULL with an io diagnostic naming what. */
static uint8_t *held_alloc(nf_source_inputs *p, const nf_source *s, nf_src_rv *r, uint64_t bytes,
                           const char *what, nf_tensor_enc **te)
{
    *te = calloc(1, sizeof **te);
    uint8_t *buf = *te && bytes <= SIZE_MAX ? malloc(bytes ? (size_t)bytes : 1) : NULL;
    if (!*te || !buf || !held_add(r->held, buf, *te)) {
        free(*te);
        free(buf);
        nf_diag_add(p->d, NF_C_IO, s->pointer, "out of memory for %s \"%s\"", what, s->name);
        return NULL;
    }
    return buf;
}

void nf_source_held_free(nf_source_held *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->owned[i]);
        free(h->tes[i]);
    }
    free(h->owned);
    free(h->tes);
    memset(h, 0, sizeof *h);
}

/* The rows slice and the transforms of source s (DESIGN 5) on a piece over
 * a source tensor of src_rows x src_cols elements. */
static int piece_transforms(nf_source_inputs *p, const nf_source *s, nf_piece *pc, uint64_t src_rows,
                            uint64_t src_cols)
{
    uint64_t r0 = 0, r1 = src_rows;
    if (s->has_rows) {
        if (s->rows[1] > src_rows) {
            nf_diag_add(p->d, NF_C_RANGE, s->pointer, "rows [%llu, %llu) outside the source's %llu rows",
                        (unsigned long long)s->rows[0], (unsigned long long)s->rows[1],
                        (unsigned long long)src_rows);
            return -1;
        }
        r0 = s->rows[0];
        r1 = s->rows[1];
    }
    if (s->unpermute == NF_UNPERMUTE_LLAMA_ROPE) {
        uint64_t h = s->unpermute_heads;
        if (src_rows % h || (src_rows / h) % 2) {
            nf_diag_add(p->d, NF_C_RANGE, s->pointer,
                        "unpermute: %llu rows do not split into %llu heads of an even size",
                        (unsigned long long)src_rows, (unsigned long long)h);
            return -1;
        }
        pc->heads = h;
    } else if (s->unpermute == NF_UNPERMUTE_V_HEADS_TILED) {
        uint64_t w = s->v_heads * s->head_dim; /* no overflow: checked when parsed */
        if (s->unpermute_columns ? w != src_cols : w > src_rows || s->unpermute_offset > src_rows - w) {
            nf_diag_add(p->d, NF_C_RANGE, s->pointer,
                        "unpermute v-heads-tiled: %llu heads of %llu%s do not fit the source's "
                        "%llu %s", (unsigned long long)s->v_heads, (unsigned long long)s->head_dim,
                        s->unpermute_columns ? "" : " rows from the offset",
                        (unsigned long long)(s->unpermute_columns ? src_cols : src_rows),
                        s->unpermute_columns ? "columns (they must be all of them)" : "rows");
            return -1;
        }
        pc->vt_rows = !s->unpermute_columns;
        pc->vt_cols = s->unpermute_columns;
        pc->vt_k = s->k_heads;
        pc->vt_v = s->v_heads;
        pc->vt_hd = s->head_dim;
        pc->vt_off = s->unpermute_offset;
    }
    pc->map = (int)s->map;
    pc->src_rows = src_rows;
    pc->src_cols = src_cols;
    pc->row0 = r0;
    pc->elements = (r1 - r0) * src_cols;
    return 0;
}

/* A raw piece over a source tensor of src_rows x src_cols elements, with
 * the source's rows and transforms applied. */
static int raw_piece(nf_source_inputs *p, const nf_source *s, nf_piece *pc, uint64_t src_rows,
                     uint64_t src_cols, uint64_t size)
{
    if (piece_transforms(p, s, pc, src_rows, src_cols) < 0)
        return -1;
    uint64_t need;
    if (!nf_mul_u64(src_rows, src_cols, &need) || !nf_mul_u64(need, nf_dtype_bytes(pc->dtype), &need) ||
        !nf_add_u64(need, pc->offset, &need) || need > size) {
        nf_diag_add(p->d, NF_C_BOUNDS, s->pointer, "source \"%s\" is shorter than its %llux%llu %s elements",
                    s->path, (unsigned long long)src_rows, (unsigned long long)src_cols,
                    s->dtype ? s->dtype : "");
        return -1;
    }
    pc->kind = NF_PIECE_RAW;
    return 0;
}

/* A block-quantized GGUF tensor as values (DESIGN 7.5: transcoding from a
 * gguf_* format decodes, then encodes as usual): its bytes are read into
 * memory and decoded as the object [rows, ne[0]] of its gguf_* format. */
static int gguf_blocks_piece(nf_source_inputs *p, const nf_source *s, input *in,
                             const nf_gguf_tensor *t, nf_src_rv *r)
{
    nf_format f = nf_format_of_ggml_type(t->type);
    uint64_t cols = t->ne[0], rows = cols ? t->elements / cols : 0, dims[2] = {rows, cols};
    nf_tensor_enc *te;
    uint8_t *buf = held_alloc(p, s, r, t->bytes, "GGUF tensor", &te);
    if (!buf)
        return -1;
    const char *why = NULL;
    if (!rows || nf_tensor_enc_init(te, f, NF_LAY_GGUF_ROWS_V1, dims, 2, 1, &why) != NF_ENC_OK ||
        te->enc.encoded_bytes != t->bytes) {
        nf_diag_add(p->d, NF_C_ENCODING, s->pointer, "GGUF tensor \"%s\" is not a %s matrix%s%s",
                    s->name, nf_format_name(f), why ? ": " : "", why ? why : "");
        return -1;
    }
    int rc = nf_gguf_read_tensor(in->gg, t, 0, buf, (size_t)t->bytes);
    if (rc) {
        nf_diag_add(p->d, NF_C_IO, s->pointer, "\"%s\": reading tensor \"%s\": %s", s->path,
                    s->name, strerror(-rc));
        return -1;
    }
    nf_piece pc;
    memset(&pc, 0, sizeof pc);
    pc.fd = -1;
    pc.kind = NF_PIECE_OBJECT;
    pc.te = te;
    pc.obj = buf;
    pc.obj_bytes = t->bytes;
    pc.path = in->path;
    /* rows, unpermute and map in f32 (ninfer-quant's fold of input_columns, DESIGN 10) */
    if (piece_transforms(p, s, &pc, rows, cols) < 0)
        return -1;
    return nf_values_add(r->v, &pc) ? 0 : -1;
}


/* ---- values (nf_source_values), one function per kind ----
 * target_cols: K of the object (for raw files, whose shape the manifest
 * does not give); left: elements still needed; depth: concats around. */

/* A raw piece with the source's rows and transforms (raw_piece), added. */
static int add_raw(nf_source_inputs *p, const nf_source *s, nf_piece *pc, uint64_t src_rows,
                   uint64_t src_cols, uint64_t size, nf_src_rv *r)
{
    return raw_piece(p, s, pc, src_rows, src_cols, size) || !nf_values_add(r->v, pc) ? -1 : 0;
}

static nf_piece blank_piece(void)
{
    nf_piece pc;
    memset(&pc, 0, sizeof pc);
    pc.fd = -1;
    return pc;
}

/* A safetensors or GGUF tensor of `elements` raw elements of dtype dt at
 * in's offset off, in rows of elements / rows, as a raw piece (size: the
 * file's). */
static int raw_tensor(nf_source_inputs *p, const nf_source *s, const input *in, uint64_t off,
                      nf_dtype dt, uint64_t rows, uint64_t elements, uint64_t size,
                      nf_src_rv *r)
{
    nf_piece pc = blank_piece();
    pc.ref = in->ref;
    pc.path = in->path;
    pc.offset = off;
    pc.dtype = dt;
    uint64_t cols = rows ? elements / rows : 0;
    if (!rows || !cols) {
        nf_diag_add(p->d, NF_C_RANGE, s->pointer, "tensor \"%s\" is empty", s->name);
        return -1;
    }
    return add_raw(p, s, &pc, rows, cols, size, r);
}

static int file_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                       uint64_t target_cols, uint64_t left, unsigned depth)
{
    (void)depth;
    if (!s->dtype) {
        nf_diag_add(p->d, NF_C_SCHEMA, s->pointer,
                    "a file source without dtype holds the object's encoded bytes; give "
                    "\"dtype\" to convert values");
        return -1;
    }
    input *in = get_input(p, s->path, NF_SRC_FILE, s->pointer);
    if (!in)
        return -1;
    nf_piece pc = blank_piece();
    pc.ref = in->ref;
    pc.path = in->path;
    pc.offset = s->offset;
    pc.dtype = (nf_dtype)nf_dtype_from_name(s->dtype);
    uint64_t rows = s->has_rows ? s->rows[1] : (target_cols ? left / target_cols : 1);
    if (!s->has_rows && !s->has_unpermute)
        return add_raw(p, s, &pc, 1, left, in->size, r);
    if (o->rank <= 1 && !s->has_rows) /* a vector: one element per row */
        rows = left, target_cols = 1;
    return add_raw(p, s, &pc, rows, target_cols, in->size, r);
}

static int safetensors_values(nf_source_inputs *p, const nf_object *o, const nf_source *s,
                              nf_src_rv *r, uint64_t target_cols, uint64_t left, unsigned depth)
{
    (void)o, (void)target_cols, (void)left, (void)depth;
    input *in;
    const nf_st_tensor *t = st_tensor(p, s, &in);
    if (!t)
        return -1;
    int dt = nf_dtype_from_name(t->dtype);
    if (dt < 0) {
        nf_diag_add(p->d, NF_C_UNSUPPORTED, s->pointer, "tensor \"%s\" has dtype %s, which the packer cannot read",
                    s->name, t->dtype);
        return -1;
    }
    return raw_tensor(p, s, in, t->offset, (nf_dtype)dt, t->rank ? t->dims[0] : 1, t->elements,
                      in->st->file_size, r);
}

static int gguf_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                       uint64_t target_cols, uint64_t left, unsigned depth)
{
    (void)o, (void)target_cols, (void)left, (void)depth;
    input *in = get_input(p, s->path, NF_SRC_GGUF, s->pointer);
    if (!in)
        return -1;
    const nf_gguf_tensor *t = nf_gguf_find_tensor(in->gg, s->name);
    if (!t) {
        nf_diag_add(p->d, NF_C_REFERENCE, s->pointer, "\"%s\" has no tensor \"%s\"", s->path, s->name);
        return -1;
    }
    char tn[32];
    int dt = t->type == NF_GGML_F32 ? NF_DT_F32 : t->type == NF_GGML_F16 ? NF_DT_F16
           : t->type == NF_GGML_BF16 ? NF_DT_BF16 : -1;
    if (dt < 0 && nf_format_is_gguf(nf_format_of_ggml_type(t->type)))
        return gguf_blocks_piece(p, s, in, t, r);
    if (dt < 0) {
        nf_diag_add(p->d, NF_C_UNSUPPORTED, s->pointer,
                    "GGUF tensor \"%s\" is %s; quantized GGUF types are not supported yet",
                    s->name, nf_ggml_type_name(t->type, tn));
        return -1;
    }
    /* ggml's ne[0] varies fastest: the C-order outer dimension is ne[n_dims-1] */
    return raw_tensor(p, s, in, t->offset, (nf_dtype)dt, t->n_dims ? t->ne[t->n_dims - 1] : 1,
                      t->elements, in->gg->file_size, r);
}

static int artifact_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                           uint64_t target_cols, uint64_t left, unsigned depth)
{
    (void)o, (void)target_cols, (void)left, (void)depth;
    input *in;
    size_t i = artifact_object(p, s, true, &in);
    if (i == SIZE_MAX)
        return -1;
    const nf_object *so = &nf_artifact_catalog(in->a)->objects[i];
    nf_tensor_enc *te;
    uint8_t *buf = held_alloc(p, s, r, so->bytes, "object", &te);
    if (!buf)
        return -1;
    if (nf_tensor_enc_init(te, so->format, so->layout, so->dims, so->rank, so->divisors, NULL) != NF_ENC_OK) {
        nf_diag_add(p->d, NF_C_UNSUPPORTED, s->pointer, "cannot decode %s/%s", so->format_name, so->layout_name);
        return -1;
    }
    if (nf_artifact_read(in->a, so->offset, buf, so->bytes, p->d) < 0 ||
        check_source_digest(p->d, in->path, i, so, buf, so->bytes) < 0)
        return -1;
    nf_piece pc = blank_piece();
    pc.kind = NF_PIECE_OBJECT;
    pc.te = te;
    pc.obj = buf;
    pc.obj_bytes = so->bytes;
    pc.path = in->path;
    if (piece_transforms(p, s, &pc, te->rows, te->cols) < 0)
        return -1;
    return nf_values_add(r->v, &pc) ? 0 : -1;
}

static int values_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                         uint64_t target_cols, uint64_t left, unsigned depth)
{
    (void)left, (void)depth;
    nf_piece pc = blank_piece();
    pc.kind = NF_PIECE_VALUES;
    pc.values = s->values;
    /* rows of the object's K (a vector: one element per row) */
    uint64_t cols = o->rank >= 2 && target_cols ? target_cols : 1;
    if (s->n_values % cols) {
        nf_diag_add(p->d, NF_C_SIZE, s->pointer, "%zu values are not rows of %llu", s->n_values,
                    (unsigned long long)cols);
        return -1;
    }
    if (piece_transforms(p, s, &pc, s->n_values / cols, cols) < 0)
        return -1;
    return nf_values_add(r->v, &pc) ? 0 : -1;
}

static int concat_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_src_rv *r,
                         uint64_t target_cols, uint64_t left, unsigned depth)
{
    if (depth > 4)
        return -1;
    for (size_t k = 0; k < s->n_items; k++) {
        const nf_source *it = &s->items[k];
        uint64_t before = r->v->elements;
        if (it->kind <= NF_SRC_NONE || it->kind > NF_SRC_CONCAT ||
            nf_src_kinds[it->kind].values(p, o, it, r, target_cols,
                                          left > before ? left - before : 0, depth + 1) < 0)
            return -1;
    }
    return 0;
}

int nf_source_values(nf_source_inputs *p, const nf_object *o, const nf_source *s, nf_values *v,
                     nf_source_held *held)
{
    nf_src_rv r = {v, held};
    uint64_t el = o->elements, cols = o->rank >= 2 ? o->dims[o->rank - 1] : el;
    if (s->kind <= NF_SRC_NONE || s->kind > NF_SRC_CONCAT)
        return -1;
    return nf_src_kinds[s->kind].values(p, o, s, &r, cols, el, 0);
}

/* ---- the table (one row per kind, DESIGN 5) ---- */

const nf_src_kind_info nf_src_kinds[NF_SRC_CONCAT + 1] = {
    [NF_SRC_FILE] = {"file", NULL, NULL, file_bytes, file_values},
    [NF_SRC_VALUES] = {"values", NULL, "values", values_kind_bytes, values_values},
    [NF_SRC_SAFETENSORS] = {"safetensors", "tensor", NULL, safetensors_bytes,
                            safetensors_values},
    [NF_SRC_GGUF] = {"gguf", "tensor", "a GGUF tensor", gguf_bytes, gguf_values},
    [NF_SRC_ARTIFACT] = {"artifact", "object", NULL, artifact_bytes, artifact_values},
    [NF_SRC_CONCAT] = {"concat", NULL, "concat", concat_bytes, concat_values},
};
