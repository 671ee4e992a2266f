/* nf_safetensors.c — a careful safetensors header reader. */
#include "nf_safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_io.h"
#include "nf_json.h"
#include "nf_strmap.h"
#include "nf_util.h"

static const struct {
    const char *name;
    unsigned bytes;
} dtypes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2},
    {"U16", 2},  {"F16", 2}, {"BF16", 2}, {"I32", 4},    {"U32", 4},     {"F32", 4},
    {"F64", 8},  {"I64", 8}, {"U64", 8},
};

unsigned nf_st_dtype_bytes(const char *dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
        if (strcmp(dtypes[i].name, dtype) == 0)
            return dtypes[i].bytes;
    return 0;
}

static int by_offset(const void *a, const void *b, void *ctx)
{
    const nf_st_tensor *t = ctx;
    uint64_t x = t[*(const size_t *)a].offset, y = t[*(const size_t *)b].offset;
    return x < y ? -1 : x > y;
}

void nf_safetensors_free(nf_safetensors *st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n_tensors; i++)
        free(st->tensors[i].name);
    free(st->tensors);
    nf_strmap_free(&st->index);
    free(st->path);
    free(st);
}

/* ---- the header, read in one scanner pass ---------------------------------
 * No json-c tree: a header of 74,000 tensors would cost it ~100 MB. The
 * scanner (nf_jscan_ex) checks the text and hands each entry's fields to
 * the state below, which keeps one entry at a time. */

enum { F_OTHER, F_DTYPE, F_SHAPE, F_OFFSETS };

typedef struct {
    const char *text;
    nf_safetensors *st;
    nf_diags *d;
    uint64_t data_len;
    size_t depth;
    size_t skip;         /* inside a value no field reads */
    bool root_obj;       /* the root is an object */
    bool root_seen;
    bool oom;
    /* the entry being read (depth 1 member) */
    char *name;          /* unescaped (the scanner refuses names with U+0000) */
    size_t name_cap;
    bool is_meta;        /* "__metadata__" */
    bool entry_obj;      /* its value is an object */
    size_t members;
    int field;           /* the member being read */
    bool dtype_str;      /* dtype is a string */
    char dtype[16];
    size_t dtype_len;
    bool shape_arr, offs_arr;
    size_t n_shape, n_offs;
    uint64_t shape[NF_MAX_RANK], offs[2];
    size_t shape_bad;    /* first element that is no U64 + 1, 0 none */
    bool offs_bad;
    size_t cap;
    bool in_meta;        /* reading __metadata__'s members */
    char *mkey;          /* the __metadata__ member being read */
    size_t mkey_cap;
} stscan;

/* __metadata__ is a string -> string map: a value of another type */
static void st_meta_value(stscan *x, nf_jtype t)
{
    if (t == NF_J_STRING)
        return;
    char *mp = nf_ptr_join("/__metadata__", x->mkey ? x->mkey : "", x->mkey ? strlen(x->mkey) : 0);
    nf_diag_add(x->d, NF_C_SCHEMA, mp ? mp : "/__metadata__",
                "__metadata__ values are strings, not %s", nf_jtype_name(t));
    free(mp);
}

static bool st_name(stscan *x, size_t start, size_t len, bool esc)
{
    if (len + 1 > x->name_cap) {
        char *nn = realloc(x->name, len + 1);
        if (!nn)
            return false;
        x->name = nn;
        x->name_cap = len + 1;
    }
    size_t n = esc ? nf_junescape(x->text + start, len, x->name) : len;
    if (!esc)
        memcpy(x->name, x->text + start, len);
    x->name[n] = 0;
    return true;
}

/* A U64 literal (kind from the scanner): false when it is none. */
static bool st_u64(stscan *x, nf_jscalar kind, size_t start, size_t len, uint64_t *out)
{
    if (kind != NF_JS_INT)
        return false; /* fraction, exponent, negative, not a number (big ones: the caller) */
    const char *p = x->text + start, *e = p + len;
    if (*p == '-')
        p++;
    uint64_t u = 0;
    for (; p < e; p++)
        u = u * 10 + (uint64_t)(*p - '0');
    *out = u;
    return true;
}

static void st_entry_done(stscan *x)
{
    nf_diags *d = x->d;
    const char *name = x->name;
    char *ptr = NULL;
#define PTR() (ptr ? ptr : (ptr = nf_ptr_join("", name, strlen(name))))
    if (x->is_meta) {
        if (!x->entry_obj)
            nf_diag_add(d, NF_C_SCHEMA, PTR(), "__metadata__ must be an object");
        free(ptr);
        return;
    }
    if (!x->entry_obj || x->members != 3 || !x->dtype_str || !x->shape_arr || !x->offs_arr ||
        x->n_offs != 2) {
        nf_diag_add(d, NF_C_SCHEMA, PTR(),
                    "a tensor entry is {\"dtype\", \"shape\", \"data_offsets\": [BEGIN, END]}");
        free(ptr);
        return;
    }
    nf_st_tensor t;
    memset(&t, 0, sizeof t);
    char dts[16];
    memcpy(dts, x->dtype, x->dtype_len < sizeof dts ? x->dtype_len : sizeof dts - 1);
    dts[x->dtype_len < sizeof dts ? x->dtype_len : sizeof dts - 1] = 0;
    /* the full string: "F32\u0000x" is no F32 */
    t.elem_bytes = x->dtype_len < sizeof x->dtype && !memchr(x->dtype, 0, x->dtype_len)
                       ? nf_st_dtype_bytes(dts)
                       : 0;
    if (!t.elem_bytes || x->dtype_len >= sizeof t.dtype) {
        if (x->dtype_len < sizeof x->dtype && memchr(x->dtype, 0, x->dtype_len))
            nf_diag_add(d, NF_C_SCHEMA, PTR(), "dtype \"%s\\u0000...\" holds U+0000", dts);
        else
            nf_diag_add(d, NF_C_UNSUPPORTED, PTR(), "unknown dtype \"%s\"", dts);
        free(ptr);
        return;
    }
    strcpy(t.dtype, dts);
    size_t rank = x->n_shape;
    bool ok = rank <= NF_MAX_RANK;
    if (!ok)
        nf_diag_add(d, NF_C_SCHEMA, PTR(), "rank %zu is over %d", rank, NF_MAX_RANK);
    uint64_t el = 1;
    for (size_t k = 0; ok && k < rank; k++) {
        if (x->shape_bad == k + 1) {
            nf_diag_add(d, NF_C_SCHEMA, PTR(), "shape[%zu] is not a U64", k);
            ok = false;
        } else {
            t.dims[k] = x->shape[k];
            if (!nf_mul_u64(el, x->shape[k], &el)) {
                nf_diag_add(d, NF_C_RANGE, PTR(), "element count overflows U64");
                ok = false;
            }
        }
    }
    uint64_t b = x->offs[0], e = x->offs[1], nb = 0;
    if (ok && x->offs_bad) {
        nf_diag_add(d, NF_C_SCHEMA, PTR(), "data_offsets must be two U64 integers");
        ok = false;
    }
    if (ok && (e < b || e > x->data_len)) {
        nf_diag_add(d, NF_C_BOUNDS, PTR(),
                    "data_offsets [%llu, %llu) outside the %llu-byte data region",
                    (unsigned long long)b, (unsigned long long)e,
                    (unsigned long long)x->data_len);
        ok = false;
    }
    if (ok && (!nf_mul_u64(el, t.elem_bytes, &nb) || nb != e - b)) {
        nf_diag_add(d, NF_C_SIZE, PTR(), "%llu bytes for %llu %s elements",
                    (unsigned long long)(e - b), (unsigned long long)el, dts);
        ok = false;
    }
#undef PTR
    free(ptr);
    if (!ok)
        return;
    if (x->st->n_tensors == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 64;
        nf_st_tensor *nv = nc <= SIZE_MAX / sizeof *nv ? realloc(x->st->tensors, nc * sizeof *nv)
                                                       : NULL;
        if (!nv) {
            x->oom = true;
            return;
        }
        x->st->tensors = nv;
        x->cap = nc;
    }
    t.rank = (unsigned)rank;
    t.elements = el;
    t.offset = x->st->data_start + b;
    t.bytes = e - b;
    t.name = strdup(name);
    if (!t.name) {
        x->oom = true;
        return;
    }
    x->st->tensors[x->st->n_tensors++] = t;
}

static void st_entry_begin(stscan *x)
{
    x->is_meta = strcmp(x->name, "__metadata__") == 0;
    x->entry_obj = false;
    x->members = 0;
    x->field = F_OTHER;
    x->dtype_str = x->shape_arr = x->offs_arr = x->offs_bad = false;
    x->dtype_len = x->n_shape = x->n_offs = x->shape_bad = 0;
}

static int st_open(void *ctx, bool obj, size_t off)
{
    stscan *x = ctx;
    (void)off;
    size_t d = x->depth++;
    if (x->skip) {
        x->skip++;
        return 0;
    }
    if (d == 0) {
        x->root_seen = true;
        x->root_obj = obj;
        if (!obj)
            x->skip = 1;
        return 0;
    }
    if (d == 1) {
        st_entry_begin(x);
        x->entry_obj = obj;
        if (!obj)
            x->skip = 1; /* a tensor entry must be an object */
        x->in_meta = obj && x->is_meta;
        return 0;
    }
    if (d == 2 && x->in_meta) {
        st_meta_value(x, obj ? NF_J_OBJECT : NF_J_ARRAY);
        x->skip = 1;
        return 0;
    }
    if (d == 2) {
        if (x->field == F_SHAPE && !obj)
            x->shape_arr = true;
        else if (x->field == F_OFFSETS && !obj)
            x->offs_arr = true;
        else
            x->skip = 1;
        if (x->field == F_DTYPE)
            x->dtype_str = false;
        return 0;
    }
    /* an element that is a container: no U64 */
    if (x->field == F_SHAPE) {
        if (x->n_shape < NF_MAX_RANK && !x->shape_bad)
            x->shape_bad = x->n_shape + 1;
        x->n_shape++;
    } else if (x->field == F_OFFSETS) {
        x->offs_bad = true;
        x->n_offs++;
    }
    x->skip = 1;
    return 0;
}

static int st_close(void *ctx, size_t end)
{
    stscan *x = ctx;
    (void)end;
    size_t d = --x->depth;
    if (x->skip) {
        if (--x->skip == 0 && d == 1)
            st_entry_done(x);
        return x->oom;
    }
    if (d == 1) {
        x->in_meta = false;
        st_entry_done(x);
    }
    return x->oom;
}

static int st_key(void *ctx, size_t start, size_t len, bool esc)
{
    stscan *x = ctx;
    if (x->skip)
        return 0;
    if (x->depth == 1) {
        return st_name(x, start, len, esc) ? 0 : (x->oom = true);
    }
    if (x->depth == 2 && x->in_meta) {
        if (len + 1 > x->mkey_cap) {
            char *nk = realloc(x->mkey, len + 1);
            if (!nk)
                return x->oom = true;
            x->mkey = nk;
            x->mkey_cap = len + 1;
        }
        size_t n = esc ? nf_junescape(x->text + start, len, x->mkey) : len;
        if (!esc)
            memcpy(x->mkey, x->text + start, len);
        x->mkey[n] = 0;
        return 0;
    }
    if (x->depth == 2) {
        x->members++;
        char buf[16];
        size_t n = len < sizeof buf ? (esc ? nf_junescape(x->text + start, len, buf) : len) : 0;
        if (!esc && n)
            memcpy(buf, x->text + start, n);
        const char *z = n ? memchr(buf, 0, n) : NULL;
        if (z)
            n = (size_t)(z - buf);
        x->field = n == 5 && !memcmp(buf, "dtype", 5)          ? F_DTYPE
                   : n == 5 && !memcmp(buf, "shape", 5)        ? F_SHAPE
                   : n == 12 && !memcmp(buf, "data_offsets", 12) ? F_OFFSETS
                                                                 : F_OTHER;
    }
    return 0;
}

static int st_scalar(void *ctx, nf_jscalar kind, size_t start, size_t len)
{
    stscan *x = ctx;
    if (x->skip)
        return 0;
    size_t d = x->depth;
    if (d == 0) {
        x->root_seen = true;
        x->root_obj = false;
        return 0;
    }
    if (d == 1) {
        st_entry_begin(x);
        st_entry_done(x); /* not an object */
        return x->oom;
    }
    if (d == 2 && x->in_meta) {
        st_meta_value(x, kind == NF_JS_STRING || kind == NF_JS_ESTRING ? NF_J_STRING
                         : kind == NF_JS_NUMBER                        ? NF_J_DOUBLE
                         : kind == NF_JS_TRUE || kind == NF_JS_FALSE   ? NF_J_BOOL
                         : kind == NF_JS_NULL                          ? NF_J_NULL
                                                                       : NF_J_INT);
        return 0;
    }
    if (d == 2) {
        if (x->field == F_DTYPE) {
            x->dtype_str = kind == NF_JS_STRING || kind == NF_JS_ESTRING;
            if (x->dtype_str) {
                /* no dtype is longer than 7 bytes: keep 15 for the message */
                char buf[16];
                size_t raw = len < sizeof buf - 1 ? len : sizeof buf - 1, n;
                if (kind == NF_JS_ESTRING && len < sizeof buf)
                    n = nf_junescape(x->text + start, len, buf);
                else {
                    n = raw;
                    memcpy(buf, x->text + start, n);
                }
                memcpy(x->dtype, buf, n);
                x->dtype_len = len < sizeof buf ? n : len; /* >= 16: unknown */
            }
        } else if (x->field == F_SHAPE) {
            x->shape_arr = false;
        } else if (x->field == F_OFFSETS) {
            x->offs_arr = false;
        }
        return 0;
    }
    if (d == 3 && x->field == F_SHAPE) {
        uint64_t u;
        if (x->n_shape < NF_MAX_RANK) {
            if (st_u64(x, kind, start, len, &u))
                x->shape[x->n_shape] = u;
            else if (!x->shape_bad)
                x->shape_bad = x->n_shape + 1;
        }
        x->n_shape++;
    } else if (d == 3 && x->field == F_OFFSETS) {
        uint64_t u;
        if (x->n_offs < 2 && st_u64(x, kind, start, len, &u))
            x->offs[x->n_offs] = u;
        else if (x->n_offs < 2)
            x->offs_bad = true;
        x->n_offs++;
    }
    return 0;
}

nf_safetensors *nf_safetensors_open(const char *path, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = path;
    nf_safetensors *st = calloc(1, sizeof *st);
    char *text = NULL;
    stscan x;
    memset(&x, 0, sizeof x);
    nf_jscan_result sr = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (!st) {
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
        goto fail;
    }
    st->path = strdup(path);
    if (fd < 0 || fstat(fd, &sb) < 0) {
        nf_diag_add(&local, NF_C_IO, "", "cannot open: %s", strerror(errno));
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        nf_diag_add(&local, NF_C_IO, "", "not a regular file");
        goto fail;
    }
    st->file_size = (uint64_t)sb.st_size;
    unsigned char lenb[8];
    if (nf_pread_full(fd, lenb, 8, 0) != 8) {
        nf_diag_add(&local, NF_C_HEADER, "", "file shorter than the 8-byte header length");
        goto fail;
    }
    uint64_t hl = nf_load_le64(lenb);
    /* a `git clone` without `git lfs pull` leaves a pointer in its place:
     * the weights were never fetched (an I/O matter, exit 3) */
    char lfs[41];
    if (memcmp(lenb, "version ", 8) == 0 && nf_pread_full(fd, lfs, 40, 0) == 40 &&
        memcmp(lfs, "version https://git-lfs.github.com/spec/", 40) == 0) {
        nf_diag_add(&local, NF_C_IO, "",
                    "this is a Git LFS pointer, not the safetensors file (fetch the weights: "
                    "git lfs pull)");
        goto fail;
    }
    if (hl == 0 || hl > st->file_size - 8) {
        nf_diag_add(&local, NF_C_HEADER, "", "header length %llu does not fit the %llu-byte file",
                    (unsigned long long)hl, (unsigned long long)st->file_size);
        goto fail;
    }
    if (hl > NF_ST_MAX_HEADER) {
        nf_diag_add(&local, NF_C_HEADER, "", "header of %llu bytes is over the %llu-byte cap",
                    (unsigned long long)hl, (unsigned long long)NF_ST_MAX_HEADER);
        goto fail;
    }
    st->data_start = 8 + hl;
    text = malloc((size_t)hl);
    if (!text || nf_pread_full(fd, text, (size_t)hl, 8) != (ssize_t)hl) {
        nf_diag_add(&local, NF_C_IO, "", "cannot read the header");
        goto fail;
    }
    /* the format pads the header with spaces; a NUL pad is seen in the wild too */
    size_t tl = (size_t)hl;
    while (tl && (text[tl - 1] == ' ' || text[tl - 1] == 0))
        tl--;
    x.text = text;
    x.st = st;
    x.data_len = st->file_size - st->data_start;
    /* the entries' findings wait: the text's own come first, and big
     * integers make them moot */
    nf_diags entries = NF_DIAGS_INIT;
    entries.file = path;
    x.d = &entries;
    nf_jscan_sink sink = {&x, st_open, st_close, st_key, st_scalar, NULL, NULL};
    bool scanned = nf_jscan_ex(text, tl, 0, &local, &sr, &sink);
    if (x.oom)
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
    if (!scanned || x.oom) {
        nf_diags_free(&entries);
        goto fail;
    }
    if (!x.root_obj) {
        nf_diag_add(&local, NF_C_SCHEMA, "", "header must be a JSON object");
        nf_diags_free(&entries);
        goto fail;
    }
    for (size_t i = 0; i < sr.n_bigint; i++)
        nf_diag_add(&local, NF_C_RANGE, sr.bigint_ptrs[i], "integer above 2^64-1");
    if (sr.n_bigint) {
        nf_diags_free(&entries);
        goto fail;
    }
    nf_diags_move(&local, &entries);
    nf_diags_free(&entries);
    /* overlap check */
    size_t *ix = malloc((st->n_tensors ? st->n_tensors : 1) * sizeof *ix);
    if (ix) {
        for (size_t i = 0; i < st->n_tensors; i++)
            ix[i] = i;
        qsort_r(ix, st->n_tensors, sizeof *ix, by_offset, st->tensors);
        for (size_t i = 1; i < st->n_tensors; i++) {
            const nf_st_tensor *p = &st->tensors[ix[i - 1]], *q = &st->tensors[ix[i]];
            if (q->offset < p->offset + p->bytes && q->bytes && p->bytes) {
                char *ptr = nf_ptr_join("", q->name, strlen(q->name));
                nf_diag_add(&local, NF_C_OVERLAP, ptr, "data overlaps tensor \"%s\"", p->name);
                free(ptr);
            }
        }
        free(ix);
    }
    /* name index */
    for (size_t i = 0; i < st->n_tensors; i++)
        if (!nf_strmap_set(&st->index, st->tensors[i].name, strlen(st->tensors[i].name), i)) {
            nf_diag_add(&local, NF_C_IO, "", "out of memory");
            break;
        }
    if (local.n || local.dropped)
        goto fail;
    nf_jscan_result_free(&sr);
    free(x.name);
    free(x.mkey);
    free(text);
    close(fd);
    nf_diags_free(&local);
    return st;
fail:
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    nf_jscan_result_free(&sr);
    free(x.name);
    free(x.mkey);
    free(text);
    if (fd >= 0)
        close(fd);
    nf_safetensors_free(st);
    return NULL;
}

const nf_st_tensor *nf_safetensors_find(const nf_safetensors *st, const char *name)
{
    size_t i = nf_strmap_get(&st->index, name, strlen(name));
    return i == SIZE_MAX ? NULL : &st->tensors[i];
}
