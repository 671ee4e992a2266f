/* nf_gguf.c — a careful GGUF reader (versions 2 and 3, little-endian).
 *
 * The header region is parsed through a small buffered reader over pread:
 * nothing is allocated from a count or a length before that count or length
 * has been checked against the bytes left in the file, so a truncated or
 * hostile file costs at most a small multiple of its real size. Values are
 * not kept; their offsets are, and the accessors read them back on demand.
 */
#include "nf_gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_digest.h"
#include "nf_io.h"
#include "nf_util.h"

/* ---- ggml types ------------------------------------------------------------ */

static const struct {
    uint32_t type;
    const char *name;
    uint32_t block;  /* elements per block */
    uint32_t bytes;  /* bytes per block */
} ggml_types[] = {
    /* GGUF.md 2.2-2.5 (ggml-common.h's block structs at d99724f2): every
     * type id that ggml.h defines, so that any GGUF parses and its data is
     * bounds-checked; ids 4, 5, 31-33, 36-38 were removed from ggml */
    {0, "F32", 1, 4},         {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},       {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},    {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},   {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},          {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},         {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},        {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},     {40, "NVFP4", 64, 36},
    {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
};

static int type_index(uint32_t type)
{
    for (size_t i = 0; i < sizeof ggml_types / sizeof *ggml_types; i++)
        if (ggml_types[i].type == type)
            return (int)i;
    return -1;
}

const char *nf_ggml_type_name(uint32_t type, char buf[32])
{
    int i = type_index(type);
    if (i >= 0)
        return ggml_types[i].name;
    snprintf(buf, 32, "type %" PRIu32, type);
    return buf;
}

bool nf_ggml_type_size(uint32_t type, uint64_t *block_elems, uint64_t *block_bytes)
{
    int i = type_index(type);
    if (i < 0 || ggml_types[i].block == 0)
        return false;
    *block_elems = ggml_types[i].block;
    *block_bytes = ggml_types[i].bytes;
    return true;
}

/* ---- value types ----------------------------------------------------------- */

static unsigned vtype_size(uint32_t t) /* scalar bytes; 0 for string/array/unknown */
{
    switch (t) {
    case NF_GGUF_U8: case NF_GGUF_I8: case NF_GGUF_BOOL: return 1;
    case NF_GGUF_U16: case NF_GGUF_I16: return 2;
    case NF_GGUF_U32: case NF_GGUF_I32: case NF_GGUF_F32: return 4;
    case NF_GGUF_U64: case NF_GGUF_I64: case NF_GGUF_F64: return 8;
    default: return 0;
    }
}

static bool vtype_known(uint32_t t)
{
    return t <= NF_GGUF_F64;
}

const char *nf_gguf_vtype_name(nf_gguf_vtype t)
{
    static const char *const names[] = {"u8",  "i8",     "u16",   "i16", "u32",
                                        "i32", "f32",    "bool",  "string", "array",
                                        "u64", "i64",    "f64"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "unknown";
}

/* ---- the buffered reader --------------------------------------------------- */

#define RD_BUF (64u << 10)

typedef struct {
    int fd;
    const unsigned char *mem; /* a prefix held in memory (nf_gguf_open_prefix): fd unused */
    uint64_t size;      /* file size */
    uint64_t pos;       /* next byte to consume */
    unsigned char *buf;
    uint64_t buf_off;   /* file offset of buf[0] */
    size_t buf_len;
    bool eof;           /* a read ran past the end of the file */
    bool ioerr;
    int err;
} rd_t;

/* Make [pos, pos+n) available in buf (n <= RD_BUF). */
static const unsigned char *rd_need(rd_t *r, size_t n)
{
    if (r->eof || r->ioerr)
        return NULL;
    if (n > r->size || r->pos > r->size - n) {
        r->eof = true;
        return NULL;
    }
    if (r->mem)
        return r->mem + r->pos;
    if (r->pos >= r->buf_off && r->pos + n <= r->buf_off + r->buf_len)
        return r->buf + (r->pos - r->buf_off);
    uint64_t want = r->size - r->pos;
    if (want > RD_BUF)
        want = RD_BUF;
    ssize_t got = nf_pread_full(r->fd, r->buf, (size_t)want, r->pos);
    if (got < 0) {
        r->ioerr = true;
        r->err = (int)-got;
        return NULL;
    }
    r->buf_off = r->pos;
    r->buf_len = (size_t)got;
    if ((size_t)got < n) { /* the file shrank under us */
        r->eof = true;
        return NULL;
    }
    return r->buf;
}

static bool rd_u32(rd_t *r, uint32_t *v)
{
    const unsigned char *p = rd_need(r, 4);
    if (!p)
        return false;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    r->pos += 4;
    return true;
}

static bool rd_u64(rd_t *r, uint64_t *v)
{
    const unsigned char *p = rd_need(r, 8);
    if (!p)
        return false;
    *v = nf_load_le64(p);
    r->pos += 8;
    return true;
}

static bool rd_skip(rd_t *r, uint64_t n)
{
    if (r->eof || r->ioerr)
        return false;
    if (n > r->size - r->pos) {
        r->eof = true;
        return false;
    }
    r->pos += n;
    return true;
}

static bool rd_copy(rd_t *r, void *dst, uint64_t n)
{
    unsigned char *d = dst;
    while (n) {
        size_t k = n > RD_BUF ? RD_BUF : (size_t)n;
        const unsigned char *p = rd_need(r, k);
        if (!p)
            return false;
        memcpy(d, p, k);
        r->pos += k;
        d += k;
        n -= k;
    }
    return true;
}

/* ---- the handle ------------------------------------------------------------ */

typedef struct {
    int fd;
    const unsigned char *mem; /* nf_gguf_open_prefix: the caller's bytes */
    bool prefix_only;         /* the bytes end where the data section starts */
    size_t *kv_sorted;  /* kv indices sorted by key */
    size_t *t_sorted;   /* tensor indices sorted by name */
} gguf_priv;


static int kv_cmp(const void *a, const void *b, void *ctx)
{
    const nf_gguf *g = ctx;
    return strcmp(g->kv[*(const size_t *)a].key, g->kv[*(const size_t *)b].key);
}

static int t_cmp(const void *a, const void *b, void *ctx)
{
    const nf_gguf *g = ctx;
    return strcmp(g->tensors[*(const size_t *)a].name, g->tensors[*(const size_t *)b].name);
}

static int t_off_cmp(const void *a, const void *b, void *ctx)
{
    const nf_gguf *g = ctx;
    uint64_t x = g->tensors[*(const size_t *)a].offset, y = g->tensors[*(const size_t *)b].offset;
    return x < y ? -1 : x > y;
}

void nf_gguf_free(nf_gguf *g)
{
    if (!g)
        return;
    gguf_priv *p = g->priv;
    if (p) {
        if (p->fd >= 0)
            close(p->fd);
        free(p->kv_sorted);
        free(p->t_sorted);
        free(p);
    }
    for (size_t i = 0; i < g->n_kv; i++)
        free(g->kv[i].key);
    for (size_t i = 0; i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->kv);
    free(g->tensors);
    free(g->path);
    free(g);
}

/* Report a failed read: past the end of the file (header) or I/O. */
static void rd_fail(rd_t *r, nf_diags *d, const char *ptr, const char *what)
{
    if (r->ioerr)
        nf_diag_add(d, NF_C_IO, ptr, "cannot read %s: %s", what, strerror(r->err));
    else
        nf_diag_add(d, NF_C_HEADER, ptr, "file truncated: %s runs past the end of the %" PRIu64
                    "-byte file", what, r->size);
}

/* Read a GGUF string's length and check it against the bytes left and cap. */
static bool read_str_len(rd_t *r, nf_diags *d, const char *ptr, const char *what,
                         uint64_t cap, uint64_t *len)
{
    if (!rd_u64(r, len)) {
        rd_fail(r, d, ptr, what);
        return false;
    }
    if (*len > r->size - r->pos) {
        nf_diag_add(d, NF_C_HEADER, ptr, "file truncated: %s of %" PRIu64
                    " bytes runs past the end of the file", what, *len);
        return false;
    }
    if (*len > cap) {
        nf_diag_add(d, NF_C_RANGE, ptr, "%s of %" PRIu64 " bytes is over the %" PRIu64
                    "-byte cap", what, *len, cap);
        return false;
    }
    return true;
}

/* Read a key or a tensor name into a malloc'ed C string (no NUL inside). */
static char *read_name(rd_t *r, nf_diags *d, const char *ptr, const char *what)
{
    uint64_t len;
    if (!read_str_len(r, d, ptr, what, NF_GGUF_MAX_NAME, &len))
        return NULL;
    char *s = malloc((size_t)len + 1);
    if (!s) {
        nf_diag_add(d, NF_C_IO, ptr, "out of memory");
        return NULL;
    }
    if (!rd_copy(r, s, len)) {
        rd_fail(r, d, ptr, what);
        free(s);
        return NULL;
    }
    s[len] = 0;
    if (strlen(s) != len) {
        nf_diag_add(d, NF_C_SCHEMA, ptr, "%s contains a NUL byte", what);
        free(s);
        return NULL;
    }
    /* GGUF strings are UTF-8 (GGUF.md 2.3); names reach JSON (manifest
     * sources, the config, pointers) and must be written exactly */
    size_t bad = nf_utf8_invalid_at(s, (size_t)len);
    if (bad != len) {
        nf_diag_add(d, NF_C_UTF8, ptr, "%s is not valid UTF-8 (byte %zu)", what, bad);
        free(s);
        return NULL;
    }
    return s;
}

/* Skip one value of type t (depth: array nesting so far). */
static bool skip_value(rd_t *r, nf_diags *d, const char *ptr, uint32_t t, unsigned depth)
{
    if (!vtype_known(t)) {
        nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "unknown value type %" PRIu32, t);
        return false;
    }
    if (t == NF_GGUF_STRING) {
        uint64_t len;
        return read_str_len(r, d, ptr, "string", UINT64_MAX, &len) &&
               (rd_skip(r, len) || (rd_fail(r, d, ptr, "string"), false));
    }
    if (t != NF_GGUF_ARRAY) {
        if (!rd_skip(r, vtype_size(t))) {
            rd_fail(r, d, ptr, "value");
            return false;
        }
        return true;
    }
    if (depth >= NF_GGUF_MAX_DEPTH) {
        nf_diag_add(d, NF_C_RANGE, ptr, "arrays nested deeper than %d", NF_GGUF_MAX_DEPTH);
        return false;
    }
    uint32_t et;
    uint64_t n;
    if (!rd_u32(r, &et) || !rd_u64(r, &n)) {
        rd_fail(r, d, ptr, "array header");
        return false;
    }
    if (!vtype_known(et)) {
        nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "unknown array element type %" PRIu32, et);
        return false;
    }
    /* every element takes at least one byte (strings 8, arrays 12) */
    uint64_t min = et == NF_GGUF_STRING ? 8 : et == NF_GGUF_ARRAY ? 12 : vtype_size(et), total;
    if (!nf_mul_u64(n, min, &total) || total > r->size - r->pos) {
        nf_diag_add(d, NF_C_HEADER, ptr, "file truncated: an array of %" PRIu64
                    " %s elements does not fit in the rest of the file", n,
                    nf_gguf_vtype_name((nf_gguf_vtype)et));
        return false;
    }
    if (et != NF_GGUF_STRING && et != NF_GGUF_ARRAY)
        return rd_skip(r, total) || (rd_fail(r, d, ptr, "array"), false);
    for (uint64_t i = 0; i < n; i++)
        if (!skip_value(r, d, ptr, et, depth + 1))
            return false;
    return true;
}

/* ---- nf_gguf_open's phases ------------------------------------------------- */
/* Each phase reads or checks one part of the header (GGUF.md 2.1), adds its
 * diagnostics to d and returns false when the file cannot be read further. */

/* The indices 0..n-1 sorted by cmp over g (malloc'ed; NULL: out of memory). */
static size_t *sorted_indices(const nf_gguf *g, size_t n,
                              int (*cmp)(const void *, const void *, void *))
{
    size_t *ix = malloc((n ? n : 1) * sizeof(size_t));
    if (!ix)
        return NULL;
    for (size_t i = 0; i < n; i++)
        ix[i] = i;
    qsort_r(ix, n, sizeof(size_t), cmp, (void *)g);
    return ix;
}

/* Open path as a regular file: pv->fd, g->file_size, r's fd and size. */
static bool open_file(nf_gguf *g, gguf_priv *pv, rd_t *r, const char *path, nf_diags *d)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0 || fstat(fd, &sb) < 0) {
        nf_diag_add(d, NF_C_IO, "", "cannot open: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    pv->fd = fd;
    if (!S_ISREG(sb.st_mode)) {
        nf_diag_add(d, NF_C_IO, "", "not a regular file");
        return false;
    }
    g->file_size = (uint64_t)sb.st_size;
    r->fd = fd;
    r->size = g->file_size;
    return true;
}

/* The header: magic, version, counts; the counts checked against the file
 * and the caps, and the kv/tensor arrays allocated for them. */
static bool read_preamble(nf_gguf *g, rd_t *r, nf_diags *d, uint64_t *n_kv,
                          uint64_t *n_tensors)
{
    const unsigned char *p = rd_need(r, 4);
    if (!p) {
        rd_fail(r, d, "", "the 4-byte magic");
        return false;
    }
    if (memcmp(p, "GGUF", 4) != 0) {
        nf_diag_add(d, NF_C_MAGIC, "", "not a GGUF file (magic is not \"GGUF\")");
        return false;
    }
    r->pos = 4;
    uint32_t ver;
    if (!rd_u32(r, &ver)) {
        rd_fail(r, d, "", "the version");
        return false;
    }
    g->version = ver;
    if (ver == 0x02000000u || ver == 0x03000000u) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "", "big-endian GGUF is not supported");
        return false;
    }
    if (ver == 1 || ver > 3) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "", "GGUF version %" PRIu32
                    " is not supported (versions 2 and 3 are)", ver);
        return false;
    }
    if (ver == 0) {
        nf_diag_add(d, NF_C_HEADER, "", "GGUF version 0 is not a version");
        return false;
    }
    if (!rd_u64(r, n_tensors) || !rd_u64(r, n_kv)) {
        rd_fail(r, d, "", "the tensor and key/value counts");
        return false;
    }
    /* a key/value takes at least 8+4+1 bytes, a tensor info 8+4+8+4+8 */
    uint64_t left = r->size - r->pos;
    if (*n_kv > left / 13) {
        nf_diag_add(d, NF_C_HEADER, "/kv", "file truncated: %" PRIu64
                    " key/values cannot fit in the rest of the %" PRIu64 "-byte file",
                    *n_kv, r->size);
        return false;
    }
    if (*n_tensors > left / 32) {
        nf_diag_add(d, NF_C_HEADER, "/tensors", "file truncated: %" PRIu64
                    " tensor infos cannot fit in the rest of the %" PRIu64 "-byte file",
                    *n_tensors, r->size);
        return false;
    }
    /* Each record costs ~100 bytes of memory against 13 or 32 of file, and a
     * sparse file makes any count that fits it cheap to send: cap them. */
    if (*n_kv > NF_GGUF_MAX_KV) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "/kv", "%" PRIu64 " key/values are more than"
                    " this reader takes (%u)", *n_kv, NF_GGUF_MAX_KV);
        return false;
    }
    if (*n_tensors > NF_GGUF_MAX_TENSORS) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "/tensors", "%" PRIu64 " tensors are more than"
                    " this reader takes (%u)", *n_tensors, NF_GGUF_MAX_TENSORS);
        return false;
    }
    g->kv = calloc(*n_kv ? (size_t)*n_kv : 1, sizeof *g->kv);
    g->tensors = calloc(*n_tensors ? (size_t)*n_tensors : 1, sizeof *g->tensors);
    if (!g->kv || !g->tensors) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    return true;
}

/* One key/value at r's position into g->kv[g->n_kv++]: its key, type, array
 * header and where its value lies (the value itself is skipped). */
static bool read_kv(nf_gguf *g, rd_t *r, nf_diags *d, size_t i)
{
    char *ptr = nf_ptr_index("/kv", i);
    char *key = read_name(r, d, ptr, "key");
    free(ptr);
    if (!key)
        return false;
    nf_gguf_kv *kv = &g->kv[g->n_kv++];
    kv->key = key;
    ptr = nf_ptr_join("/kv", key, strlen(key));
    bool ok = false;
    uint32_t t;
    if (!rd_u32(r, &t)) {
        rd_fail(r, d, ptr, "the value type");
        goto out;
    }
    if (!vtype_known(t)) {
        nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "unknown value type %" PRIu32, t);
        goto out;
    }
    kv->type = (nf_gguf_vtype)t;
    if (t == NF_GGUF_ARRAY) {
        uint64_t before = r->pos;
        uint32_t et;
        if (!rd_u32(r, &et) || !rd_u64(r, &kv->n_elems)) {
            rd_fail(r, d, ptr, "array header");
            goto out;
        }
        kv->elem_type = (nf_gguf_vtype)et;
        r->pos = before;
    }
    kv->value_offset = r->pos;
    if (!skip_value(r, d, ptr, t, 0))
        goto out;
    kv->value_bytes = r->pos - kv->value_offset;
    ok = true;
out:
    free(ptr);
    return ok;
}

/* After the key/values: no key twice (every one named), then
 * general.alignment (default 32) into g->alignment. Builds pv->kv_sorted. */
static bool check_kvs(nf_gguf *g, gguf_priv *pv, nf_diags *d)
{
    pv->kv_sorted = sorted_indices(g, g->n_kv, kv_cmp);
    if (!pv->kv_sorted) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    for (size_t i = 1; i < g->n_kv; i++)
        if (strcmp(g->kv[pv->kv_sorted[i]].key, g->kv[pv->kv_sorted[i - 1]].key) == 0) {
            const char *k = g->kv[pv->kv_sorted[i]].key;
            char *ptr = nf_ptr_join("/kv", k, strlen(k));
            nf_diag_add(d, NF_C_DUPLICATE_MEMBER, ptr, "key \"%s\" appears twice", k);
            free(ptr);
        }
    if (nf_diags_exit(d))
        return false;
    g->alignment = 32;
    const nf_gguf_kv *al = nf_gguf_find_kv(g, "general.alignment");
    if (al) {
        uint64_t a = 0;
        if (!nf_gguf_kv_u64(g, al, &a) || a == 0 || (a & (a - 1)) != 0 ||
            a > NF_GGUF_MAX_ALIGNMENT) {
            nf_diag_add(d, NF_C_SCHEMA, "/kv/general.alignment",
                        "general.alignment must be a power of two up to %llu",
                        (unsigned long long)NF_GGUF_MAX_ALIGNMENT);
            return false;
        }
        g->alignment = a;
    }
    return true;
}

/* The dimensions of tensor t (named at ptr): n_dims, ne[] (1 past n_dims),
 * elements; every ne in 1..2^63-1 and their product too. */
static bool read_tensor_dims(nf_gguf_tensor *t, rd_t *r, nf_diags *d, const char *ptr)
{
    uint32_t nd;
    if (!rd_u32(r, &nd)) {
        rd_fail(r, d, ptr, "the tensor info");
        return false;
    }
    if (nd < 1 || nd > 4) {
        nf_diag_add(d, NF_C_SCHEMA, ptr, "tensor \"%s\" has %" PRIu32
                    " dimensions (1 to 4 allowed)", t->name, nd);
        return false;
    }
    t->n_dims = nd;
    t->elements = 1;
    for (unsigned k = 0; k < 4; k++)
        t->ne[k] = 1;
    for (unsigned k = 0; k < nd; k++) {
        if (!rd_u64(r, &t->ne[k])) {
            rd_fail(r, d, ptr, "the tensor info");
            return false;
        }
        if (t->ne[k] == 0 || t->ne[k] > INT64_MAX) {
            nf_diag_add(d, NF_C_RANGE, ptr, "tensor \"%s\": ne[%u] = %" PRIu64
                        " is not in 1..2^63-1", t->name, k, t->ne[k]);
            return false;
        }
        if (!nf_mul_u64(t->elements, t->ne[k], &t->elements) || t->elements > INT64_MAX) {
            nf_diag_add(d, NF_C_RANGE, ptr, "tensor \"%s\": element count overflows",
                        t->name);
            return false;
        }
    }
    return true;
}

/* The type and offset of tensor t (named at ptr), and its byte size from the
 * type's block (ne[0] a whole number of blocks). */
static bool read_tensor_type(nf_gguf_tensor *t, rd_t *r, nf_diags *d, const char *ptr)
{
    if (!rd_u32(r, &t->type) || !rd_u64(r, &t->offset)) {
        rd_fail(r, d, ptr, "the tensor info");
        return false;
    }
    char tb[32];
    if (type_index(t->type) < 0) {
        nf_diag_add(d, NF_C_UNSUPPORTED, ptr, "tensor \"%s\" has unknown ggml %s",
                    t->name, nf_ggml_type_name(t->type, tb));
        return false;
    }
    uint64_t be, bb;
    if (nf_ggml_type_size(t->type, &be, &bb)) {
        if (t->ne[0] % be != 0) {
            nf_diag_add(d, NF_C_SCHEMA, ptr, "tensor \"%s\": ne[0] = %" PRIu64
                        " is not a multiple of the %s block of %" PRIu64, t->name, t->ne[0],
                        nf_ggml_type_name(t->type, tb), be);
            return false;
        }
        if (!nf_mul_u64(t->elements / be, bb, &t->bytes)) {
            nf_diag_add(d, NF_C_RANGE, ptr, "tensor \"%s\": byte size overflows", t->name);
            return false;
        }
    }
    return true;
}

/* One tensor info at r's position into g->tensors[g->n_tensors++]. */
static bool read_tensor_info(nf_gguf *g, rd_t *r, nf_diags *d, size_t i)
{
    char *ptr = nf_ptr_index("/tensors", i);
    char *name = read_name(r, d, ptr, "tensor name");
    bool ok = false;
    if (name) {
        nf_gguf_tensor *t = &g->tensors[g->n_tensors++];
        t->name = name;
        ok = read_tensor_dims(t, r, d, ptr) && read_tensor_type(t, r, d, ptr);
    }
    free(ptr);
    return ok;
}

/* After the tensor infos: no name twice (every one named). Builds
 * pv->t_sorted, which nf_gguf_find_tensor searches. */
static bool check_tensor_names(nf_gguf *g, gguf_priv *pv, nf_diags *d)
{
    pv->t_sorted = sorted_indices(g, g->n_tensors, t_cmp);
    if (!pv->t_sorted) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    for (size_t i = 1; i < g->n_tensors; i++)
        if (strcmp(g->tensors[pv->t_sorted[i]].name, g->tensors[pv->t_sorted[i - 1]].name) == 0) {
            char *ptr = nf_ptr_index("/tensors", pv->t_sorted[i]);
            nf_diag_add(d, NF_C_DUPLICATE_MEMBER, ptr, "tensor \"%s\" appears twice",
                        g->tensors[pv->t_sorted[i]].name);
            free(ptr);
        }
    return !nf_diags_exit(d);
}

/* The data section starts at the header's end (header_end) aligned up; every
 * tensor aligned and inside it (each one named); offsets made absolute. */
static bool place_tensors(nf_gguf *g, uint64_t header_end, nf_diags *d)
{
    if (!nf_align_up_u64(header_end, g->alignment, &g->data_start)) {
        nf_diag_add(d, NF_C_RANGE, "", "data section offset overflows");
        return false;
    }
    const gguf_priv *pv = g->priv;
    if (pv->prefix_only) { /* no data to check the tensors against */
        for (size_t i = 0; i < g->n_tensors; i++) {
            nf_gguf_tensor *t = &g->tensors[i];
            if (t->offset % g->alignment != 0) {
                char *ptr = nf_ptr_index("/tensors", i);
                nf_diag_add(d, NF_C_ALIGNMENT, ptr, "tensor \"%s\": offset %" PRIu64
                            " is not a multiple of the alignment %" PRIu64, t->name, t->offset,
                            g->alignment);
                free(ptr);
            } else if (!nf_add_u64(t->offset, g->data_start, &t->offset) ||
                       t->offset + t->bytes < t->offset) {
                nf_diag_add(d, NF_C_RANGE, "", "tensor \"%s\": offset overflows", t->name);
            }
        }
        return !nf_diags_exit(d);
    }
    if (g->n_tensors && g->data_start > g->file_size) {
        nf_diag_add(d, NF_C_HEADER, "", "file truncated: the data section would start at %"
                    PRIu64 ", past the end of the %" PRIu64 "-byte file", g->data_start,
                    g->file_size);
        return false;
    }
    uint64_t data_len = g->data_start <= g->file_size ? g->file_size - g->data_start : 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        nf_gguf_tensor *t = &g->tensors[i];
        char *ptr = nf_ptr_index("/tensors", i);
        if (t->offset % g->alignment != 0)
            nf_diag_add(d, NF_C_ALIGNMENT, ptr, "tensor \"%s\": offset %" PRIu64
                        " is not a multiple of the alignment %" PRIu64, t->name, t->offset,
                        g->alignment);
        else if (t->offset > data_len || t->bytes > data_len - t->offset)
            nf_diag_add(d, NF_C_BOUNDS, ptr, "tensor \"%s\": data [%" PRIu64 ", +%" PRIu64
                        ") lies outside the %" PRIu64 "-byte data section", t->name, t->offset,
                        t->bytes, data_len);
        else
            t->offset += g->data_start;
        free(ptr);
    }
    return !nf_diags_exit(d);
}

/* No two tensors share bytes (offsets absolute; each pair named). */
static bool check_overlaps(nf_gguf *g, nf_diags *d)
{
    size_t *by_off = sorted_indices(g, g->n_tensors, t_off_cmp);
    if (!by_off) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return false;
    }
    for (size_t i = 1; i < g->n_tensors; i++) {
        const nf_gguf_tensor *a = &g->tensors[by_off[i - 1]], *b = &g->tensors[by_off[i]];
        if (a->bytes && b->bytes && a->offset + a->bytes > b->offset) {
            char *ptr = nf_ptr_index("/tensors", by_off[i]);
            nf_diag_add(d, NF_C_OVERLAP, ptr, "tensors \"%s\" and \"%s\" overlap",
                        a->name, b->name);
            free(ptr);
        }
    }
    free(by_off);
    return !nf_diags_exit(d);
}

/* The phases in order, over an allocated g whose file is not yet open. */
static bool read_header(nf_gguf *g, gguf_priv *pv, rd_t *r, const char *path, nf_diags *d)
{
    uint64_t n_kv, n_tensors;
    if ((!pv->mem && !open_file(g, pv, r, path, d)) || !read_preamble(g, r, d, &n_kv, &n_tensors))
        return false;
    for (uint64_t i = 0; i < n_kv; i++)
        if (!read_kv(g, r, d, (size_t)i))
            return false;
    if (!check_kvs(g, pv, d))
        return false;
    for (uint64_t i = 0; i < n_tensors; i++)
        if (!read_tensor_info(g, r, d, (size_t)i))
            return false;
    return check_tensor_names(g, pv, d) && place_tensors(g, r->pos, d) &&
           check_overlaps(g, d);
}

/* nf_gguf_open and nf_gguf_open_prefix: mem NULL reads the file at path. */
static nf_gguf *gguf_open(const char *path, const unsigned char *mem, size_t n, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = path;
    nf_gguf *g = calloc(1, sizeof *g);
    gguf_priv *pv = calloc(1, sizeof *pv);
    rd_t r = {.fd = -1, .mem = mem, .size = n};
    bool ok = false;
    if (pv) {
        pv->fd = -1;
        pv->mem = mem;
        pv->prefix_only = mem != NULL;
    }
    if (g)
        g->file_size = n;
    if (!g || !pv || !(g->path = strdup(path)) || !(r.buf = malloc(RD_BUF)))
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
    else {
        g->priv = pv;
        ok = read_header(g, pv, &r, path, &local);
    }
    free(r.buf);
    if (!ok) {
        if (!nf_diags_exit(&local))
            nf_diag_add(&local, NF_C_IO, "", "cannot read the GGUF header");
        if (g && !g->priv)
            g->priv = pv; /* freed with g */
        else if (!g)
            free(pv);
        nf_gguf_free(g);
        g = NULL;
    }
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    return g;
}

nf_gguf *nf_gguf_open(const char *path, nf_diags *d)
{
    return gguf_open(path, NULL, 0, d);
}

nf_gguf *nf_gguf_open_prefix(const void *buf, size_t n, const char *name, nf_diags *d)
{
    static const unsigned char empty[1];
    return gguf_open(name, buf ? buf : empty, buf ? n : 0, d);
}

/* ---- lookups --------------------------------------------------------------- */

const nf_gguf_tensor *nf_gguf_find_tensor(const nf_gguf *g, const char *name)
{
    if (!g || !name || !g->priv)
        return NULL;
    const gguf_priv *p = g->priv;
    size_t lo = 0, hi = g->n_tensors;
    if (!p->t_sorted)
        return NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->tensors[p->t_sorted[mid]].name, name);
        if (c == 0)
            return &g->tensors[p->t_sorted[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const nf_gguf_kv *nf_gguf_find_kv(const nf_gguf *g, const char *key)
{
    if (!g || !key || !g->priv)
        return NULL;
    const gguf_priv *p = g->priv;
    if (!p->kv_sorted)
        return NULL;
    size_t lo = 0, hi = g->n_kv;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->kv[p->kv_sorted[mid]].key, key);
        if (c == 0)
            return &g->kv[p->kv_sorted[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- values ---------------------------------------------------------------- */

static int gfd(const nf_gguf *g)
{
    return g && g->priv ? ((const gguf_priv *)g->priv)->fd : -1;
}

int nf_gguf_pread(const nf_gguf *g, void *buf, size_t n, uint64_t off)
{
    int fd = gfd(g);
    const unsigned char *mem = g && g->priv ? ((const gguf_priv *)g->priv)->mem : NULL;
    if (fd < 0 && !mem)
        return -EBADF;
    if (off > g->file_size || n > g->file_size - off)
        return -ERANGE;
    if (mem) {
        memcpy(buf, mem + off, n);
        return 0;
    }
    ssize_t got = nf_pread_full(fd, buf, n, off);
    if (got < 0)
        return (int)got;
    return (size_t)got == n ? 0 : -EIO;
}

/* Decode a scalar of type t at p into integer/double forms. */
static bool scalar_num(uint32_t t, const unsigned char *p, bool *is_int, int64_t *iv,
                       uint64_t *uv, double *dv)
{
    uint64_t raw = 0;
    unsigned n = vtype_size(t);
    for (unsigned i = 0; i < n; i++)
        raw |= (uint64_t)p[i] << (8 * i);
    *is_int = true;
    switch (t) {
    case NF_GGUF_U8: case NF_GGUF_U16: case NF_GGUF_U32: case NF_GGUF_U64:
        *uv = raw;
        *iv = raw > INT64_MAX ? -1 : (int64_t)raw;
        *dv = (double)raw;
        return true;
    case NF_GGUF_I8: *iv = (int8_t)raw; break;
    case NF_GGUF_I16: *iv = (int16_t)raw; break;
    case NF_GGUF_I32: *iv = (int32_t)raw; break;
    case NF_GGUF_I64: *iv = (int64_t)raw; break;
    case NF_GGUF_F32: {
        uint32_t w = (uint32_t)raw;
        float f;
        memcpy(&f, &w, 4);
        *dv = f;
        *is_int = false;
        return true;
    }
    case NF_GGUF_F64: {
        double f;
        memcpy(&f, &raw, 8);
        *dv = f;
        *is_int = false;
        return true;
    }
    default:
        return false;
    }
    *uv = *iv < 0 ? 0 : (uint64_t)*iv;
    *dv = (double)*iv;
    return true;
}

bool nf_gguf_kv_u64(const nf_gguf *g, const nf_gguf_kv *kv, uint64_t *out)
{
    unsigned char b[8];
    if (!kv || kv->type == NF_GGUF_BOOL || kv->type == NF_GGUF_F32 || kv->type == NF_GGUF_F64 ||
        !vtype_size(kv->type) || nf_gguf_pread(g, b, vtype_size(kv->type), kv->value_offset))
        return false;
    bool is_int;
    int64_t iv;
    uint64_t uv;
    double dv;
    if (!scalar_num(kv->type, b, &is_int, &iv, &uv, &dv))
        return false;
    bool is_signed = kv->type == NF_GGUF_I8 || kv->type == NF_GGUF_I16 ||
                     kv->type == NF_GGUF_I32 || kv->type == NF_GGUF_I64;
    if (is_signed && iv < 0)
        return false;
    *out = uv;
    return true;
}

bool nf_gguf_kv_f64(const nf_gguf *g, const nf_gguf_kv *kv, double *out)
{
    unsigned char b[8];
    if (!kv || kv->type == NF_GGUF_BOOL || !vtype_size(kv->type) ||
        nf_gguf_pread(g, b, vtype_size(kv->type), kv->value_offset))
        return false;
    bool is_int;
    int64_t iv;
    uint64_t uv;
    return scalar_num(kv->type, b, &is_int, &iv, &uv, out);
}

bool nf_gguf_kv_bool(const nf_gguf *g, const nf_gguf_kv *kv, bool *out)
{
    unsigned char b;
    if (!kv || kv->type != NF_GGUF_BOOL || nf_gguf_pread(g, &b, 1, kv->value_offset))
        return false;
    *out = b != 0;
    return true;
}

char *nf_gguf_kv_string(const nf_gguf *g, const nf_gguf_kv *kv, size_t *len)
{
    if (!kv || kv->type != NF_GGUF_STRING || kv->value_bytes < 8)
        return NULL;
    uint64_t n = kv->value_bytes - 8;
    if (n >= SIZE_MAX)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s || nf_gguf_pread(g, s, (size_t)n, kv->value_offset + 8)) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    if (len)
        *len = (size_t)n;
    return s;
}

/* ---- values as JSON -------------------------------------------------------- */

typedef struct {
    char *s;
    size_t n, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1)
            c *= 2;
        char *t = realloc(b->s, c);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), or 0 when it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t k;
    unsigned min, cp;
    if ((c & 0xe0) == 0xc0) { k = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { k = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { k = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (k > n)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return k;
}

/* s[0..n) as a JSON string; false when it is not UTF-8 (nothing added
 * then: the caller refuses the value). */
static bool sb_json_string(sbuf *b, const unsigned char *s, size_t n)
{
    sb_put(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            static const char shortx[] = "btn\0fr"; /* \b \t \n (\v has none) \f \r */
            char e[8];
            if (c >= 8 && c <= 13 && shortx[c - 8]) {
                e[0] = '\\';
                e[1] = shortx[c - 8];
                sb_put(b, e, 2);
            } else {
                snprintf(e, sizeof e, "\\u%04x", c);
                sb_put(b, e, 6);
            }
            i++;
        } else if (c < 0x80) {
            sb_put(b, (const char *)&s[i], 1);
            i++;
        } else {
            size_t k = utf8_len(s + i, n - i);
            if (!k)
                return false;
            sb_put(b, (const char *)&s[i], k);
            i += k;
        }
    }
    sb_put(b, "\"", 1);
    return true;
}

/* Where json_value reports what it refuses: the kv and, inside an array,
 * the index of the top-level element. */
typedef struct {
    const nf_gguf *g;
    const nf_gguf_kv *kv;
    nf_diags *d;
    uint64_t elem;
    bool in_array;
} jv_ctx;

static void jv_refuse(const jv_ctx *cx, nf_code code, const char *what)
{
    if (!cx->d)
        return;
    char *ptr = nf_ptr_join("/kv", cx->kv->key, strlen(cx->kv->key));
    char at[48] = "";
    if (cx->in_array)
        snprintf(at, sizeof at, " (element %" PRIu64 ")", cx->elem);
    nf_diag_addf(cx->d, code, cx->g->path, ptr ? ptr : "", "key/value \"%s\"%s %s",
                 cx->kv->key, at, what);
    free(ptr);
}

static bool json_value(jv_ctx *cx, rd_t *r, uint32_t t, unsigned depth, sbuf *b)
{
    char tmp[64];
    if (t == NF_GGUF_STRING) {
        uint64_t len;
        if (!rd_u64(r, &len) || len > r->size - r->pos || len >= SIZE_MAX) {
            jv_refuse(cx, NF_C_IO, "cannot be read");
            return false;
        }
        unsigned char *s = malloc(len ? (size_t)len : 1);
        if (!s || !rd_copy(r, s, len)) {
            free(s);
            jv_refuse(cx, NF_C_IO, "cannot be read");
            return false;
        }
        bool ok = sb_json_string(b, s, (size_t)len);
        free(s);
        if (!ok)
            jv_refuse(cx, NF_C_UTF8, "is a string that is not UTF-8 (GGUF strings are UTF-8)");
        return ok;
    }
    if (t == NF_GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        if (depth >= NF_GGUF_MAX_DEPTH || !rd_u32(r, &et) || !rd_u64(r, &n) || !vtype_known(et)) {
            jv_refuse(cx, NF_C_IO, "cannot be read");
            return false;
        }
        sb_put(b, "[", 1);
        for (uint64_t i = 0; i < n; i++) {
            if (i)
                sb_put(b, ",", 1);
            if (depth == 0) {
                cx->in_array = true;
                cx->elem = i;
            }
            if (!json_value(cx, r, et, depth + 1, b) || b->oom)
                return false;
        }
        sb_put(b, "]", 1);
        return true;
    }
    unsigned sz = vtype_size(t);
    const unsigned char *p = rd_need(r, sz);
    if (!p) {
        jv_refuse(cx, NF_C_IO, "cannot be read");
        return false;
    }
    r->pos += sz;
    if (t == NF_GGUF_BOOL) {
        sb_str(b, p[0] ? "true" : "false");
        return true;
    }
    bool is_int;
    int64_t iv;
    uint64_t uv;
    double dv;
    if (!scalar_num(t, p, &is_int, &iv, &uv, &dv))
        return false;
    if (is_int) {
        bool is_unsigned = t == NF_GGUF_U8 || t == NF_GGUF_U16 || t == NF_GGUF_U32 ||
                           t == NF_GGUF_U64;
        if (is_unsigned)
            snprintf(tmp, sizeof tmp, "%" PRIu64, uv);
        else
            snprintf(tmp, sizeof tmp, "%" PRId64, iv);
    } else if (!isfinite(dv)) {
        /* JSON has no NaN or infinity, and null would pass for "not set" */
        jv_refuse(cx, NF_C_RANGE, isnan(dv) ? "is NaN: a finite number is needed"
                                            : "is infinite: a finite number is needed");
        return false;
    } else if (dv == floor(dv) && fabs(dv) < 1e15) {
        snprintf(tmp, sizeof tmp, "%.1f", dv); /* 10000.0, as Hugging Face configs write it */
    } else {
        /* shortest text that reads back to the same value */
        int prec = t == NF_GGUF_F32 ? 9 : 17;
        for (int pr = 1; pr <= prec; pr++) {
            snprintf(tmp, sizeof tmp, "%.*g", pr, dv);
            double back = strtod(tmp, NULL);
            if (t == NF_GGUF_F32 ? (float)back == (float)dv : back == dv)
                break;
        }
        /* keep it a JSON real number: 1 -> 1.0 */
        if (!strpbrk(tmp, ".eEn"))
            strcat(tmp, ".0");
    }
    sb_str(b, tmp);
    return true;
}

char *nf_gguf_kv_json(const nf_gguf *g, const nf_gguf_kv *kv, size_t *len, nf_diags *d)
{
    const unsigned char *mem = g && g->priv ? ((const gguf_priv *)g->priv)->mem : NULL;
    if (!g || !kv || (gfd(g) < 0 && !mem))
        return NULL;
    rd_t r = {.fd = gfd(g), .mem = mem, .size = g->file_size, .pos = kv->value_offset};
    sbuf b = {0};
    jv_ctx cx = {g, kv, d, 0, false};
    size_t before = d ? d->n + d->dropped : 0;
    r.buf = malloc(RD_BUF);
    bool ok = r.buf && json_value(&cx, &r, kv->type, 0, &b) && !b.oom && b.s;
    free(r.buf);
    if (!ok && d && d->n + d->dropped == before)
        nf_diag_addf(d, NF_C_IO, g->path, "", "out of memory");
    if (!ok) {
        free(b.s);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.s;
}

int nf_gguf_read_tensor(const nf_gguf *g, const nf_gguf_tensor *t, uint64_t off, void *buf,
                        size_t n)
{
    if (!t || off > t->bytes || n > t->bytes - off)
        return -ERANGE;
    return nf_gguf_pread(g, buf, n, t->offset + off);
}

void nf_gguf_hf_dims(const nf_gguf_tensor *t, uint64_t dims[4])
{
    for (unsigned k = 0; k < t->n_dims; k++)
        dims[k] = t->ne[t->n_dims - 1 - k];
}

/* ---- one pass over the file ------------------------------------------------ */

/* The whole file's hash runs in a thread of its own over the chunks the
 * main thread reads (and hashes per tensor): a ring of HASH_RING buffers,
 * each handed over once read and back once hashed. */
#define HASH_CHUNK (4u << 20)
#define HASH_RING 3

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned char *buf[HASH_RING];
    size_t len[HASH_RING];
    uint64_t posted, hashed; /* chunks handed over, chunks hashed */
    bool done;               /* no more chunks */
    nf_sha256 *h;
} file_hasher;

static void *file_hash_thread(void *arg)
{
    file_hasher *fh = arg;
    pthread_mutex_lock(&fh->lock);
    for (;;) {
        while (fh->hashed == fh->posted && !fh->done)
            pthread_cond_wait(&fh->cond, &fh->lock);
        if (fh->hashed == fh->posted)
            break;
        size_t k = fh->hashed % HASH_RING;
        pthread_mutex_unlock(&fh->lock);
        nf_sha256_update(fh->h, fh->buf[k], fh->len[k]);
        pthread_mutex_lock(&fh->lock);
        fh->hashed++;
        pthread_cond_broadcast(&fh->cond);
    }
    pthread_mutex_unlock(&fh->lock);
    return NULL;
}

/* Hash the tensor bytes and check the padding in chunk [pos, pos+n) of the
 * file (tensors by offset in by_off; *k the next one, *th its hash once
 * begun). Returns 0 or -ENOMEM. */
static int hash_chunk(const nf_gguf *g, const size_t *by_off, const unsigned char *buf,
                      uint64_t pos, uint64_t n, size_t *k, nf_sha256 **th, char (*tensor_hex)[65],
                      uint64_t *nonzero_gap)
{
    uint64_t end = pos + n, at = pos;
    while (at < end) {
        const nf_gguf_tensor *t = *k < g->n_tensors ? &g->tensors[by_off[*k]] : NULL;
        uint64_t tb = t ? t->offset : UINT64_MAX, te = t ? t->offset + t->bytes : UINT64_MAX;
        if (at < tb) { /* the header, or a gap of the data section */
            uint64_t stop = tb < end ? tb : end;
            if (at < g->data_start && stop > g->data_start)
                stop = g->data_start; /* the gap's part is checked on the next turn */
            for (uint64_t q = at; at >= g->data_start && q < stop; q++)
                if (buf[q - pos] && *nonzero_gap == UINT64_MAX)
                    *nonzero_gap = q;
            at = stop;
            continue;
        }
        if (!*th && !(*th = nf_sha256_new()))
            return -ENOMEM;
        uint64_t stop = te < end ? te : end;
        nf_sha256_update(*th, buf + (at - pos), (size_t)(stop - at));
        at = stop;
        if (at == te) {
            nf_sha256_final(*th, tensor_hex[by_off[*k]]);
            *th = NULL;
            (*k)++;
        }
    }
    return 0;
}

int nf_gguf_hash(const nf_gguf *g, char file_hex[65], char (*tensor_hex)[65],
                 uint64_t *nonzero_gap)
{
    int fd = gfd(g);
    if (fd < 0)
        return -EBADF;
    *nonzero_gap = UINT64_MAX;
    size_t *by_off = sorted_indices(g, g->n_tensors, t_off_cmp);
    file_hasher fh = {.h = nf_sha256_new()};
    int rc = by_off && fh.h ? 0 : -ENOMEM;
    for (int i = 0; i < HASH_RING && !rc; i++)
        if (!(fh.buf[i] = malloc(HASH_CHUNK)))
            rc = -ENOMEM;
    pthread_t tid;
    bool thread = false;
    if (!rc) {
        pthread_mutex_init(&fh.lock, NULL);
        pthread_cond_init(&fh.cond, NULL);
        thread = pthread_create(&tid, NULL, file_hash_thread, &fh) == 0;
        if (!thread) {
            pthread_mutex_destroy(&fh.lock);
            pthread_cond_destroy(&fh.cond);
            rc = -EAGAIN;
        }
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    size_t k = 0;          /* next tensor (by offset) not yet finished */
    nf_sha256 *th = NULL;  /* the hash of tensor by_off[k] once begun */
    for (uint64_t pos = 0, c = 0; !rc && pos < g->file_size; c++) {
        size_t want = g->file_size - pos < HASH_CHUNK ? (size_t)(g->file_size - pos) : HASH_CHUNK;
        size_t slot = c % HASH_RING;
        pthread_mutex_lock(&fh.lock);
        while (fh.posted - fh.hashed == HASH_RING) /* every buffer still being hashed */
            pthread_cond_wait(&fh.cond, &fh.lock);
        pthread_mutex_unlock(&fh.lock);
        ssize_t got = nf_pread_full(fd, fh.buf[slot], want, pos);
        if (got < 0 || (size_t)got != want) {
            rc = got < 0 ? (int)got : -EIO;
            break;
        }
        rc = hash_chunk(g, by_off, fh.buf[slot], pos, want, &k, &th, tensor_hex, nonzero_gap);
        pthread_mutex_lock(&fh.lock);
        fh.len[slot] = want;
        fh.posted++;
        pthread_cond_broadcast(&fh.cond);
        pthread_mutex_unlock(&fh.lock);
        pos += want;
    }
    if (thread) {
        pthread_mutex_lock(&fh.lock);
        fh.done = true;
        pthread_cond_broadcast(&fh.cond);
        pthread_mutex_unlock(&fh.lock);
        pthread_join(tid, NULL);
        pthread_mutex_destroy(&fh.lock);
        pthread_cond_destroy(&fh.cond);
    }
    /* zero-length tensors (none in a valid file) */
    for (; !rc && k < g->n_tensors; k++) {
        nf_sha256 *h = th ? th : nf_sha256_new();
        th = NULL;
        if (!h) {
            rc = -ENOMEM;
            break;
        }
        nf_sha256_final(h, tensor_hex[by_off[k]]);
    }
    if (!rc)
        nf_sha256_final(fh.h, file_hex);
    else
        nf_sha256_free(fh.h);
    nf_sha256_free(th);
    for (int i = 0; i < HASH_RING; i++)
        free(fh.buf[i]);
    free(by_off);
    return rc;
}
