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

nf_safetensors *nf_safetensors_open(const char *path, nf_diags *d)
{
    nf_diags local = NF_DIAGS_INIT;
    local.file = path;
    nf_safetensors *st = calloc(1, sizeof *st);
    char *text = NULL;
    nf_jdoc *doc = NULL;
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
    doc = nf_jdoc_parse(text, tl, 0, &local);
    if (!doc)
        goto fail;
    nf_jval *root = nf_jdoc_root(doc);
    if (nf_jtype_of(root) != NF_J_OBJECT) {
        nf_diag_add(&local, NF_C_SCHEMA, "", "header must be a JSON object");
        goto fail;
    }
    /* json-c cuts member names at U+0000: "x\u0000a" and "x\u0000b" would
     * both be tensor "x", and a lookup of "x" would find one of them */
    size_t dl;
    const char *dt_text = nf_jdoc_text(doc, &dl);
    char *nulp = NULL;
    if (nf_jname_has_nul(doc, nf_jspan_root(dt_text, dl), "", &nulp)) {
        nf_diag_add(&local, NF_C_SCHEMA, nulp ? nulp : "", "a tensor name contains U+0000");
        free(nulp);
        goto fail;
    }
    const nf_jscan_result *sr = nf_jdoc_scan(doc);
    for (size_t i = 0; i < sr->n_bigint; i++)
        nf_diag_add(&local, NF_C_RANGE, sr->bigint_ptrs[i], "integer above 2^64-1");
    if (sr->n_bigint)
        goto fail;
    size_t n = nf_jobj_len(root);
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (!st->tensors) {
        nf_diag_add(&local, NF_C_IO, "", "out of memory");
        goto fail;
    }
    uint64_t data_len = st->file_size - st->data_start;
    nf_jiter it = nf_jobj_iter(root);
    const char *name;
    nf_jval *v;
    while (nf_jobj_next(&it, &name, &v)) {
        char *ptr = nf_ptr_join("", name, strlen(name));
        if (strcmp(name, "__metadata__") == 0) {
            if (nf_jtype_of(v) != NF_J_OBJECT)
                nf_diag_add(&local, NF_C_SCHEMA, ptr, "__metadata__ must be an object");
            /* the format's metadata is a string -> string map */
            nf_jiter mi = nf_jobj_iter(v);
            const char *mk;
            nf_jval *mv;
            while (nf_jobj_next(&mi, &mk, &mv))
                if (nf_jtype_of(mv) != NF_J_STRING) {
                    char *mp = nf_ptr_join(ptr, mk, strlen(mk));
                    nf_diag_add(&local, NF_C_SCHEMA, mp ? mp : ptr,
                                "__metadata__ values are strings, not %s",
                                nf_jtype_name(nf_jtype_of(mv)));
                    free(mp);
                }
            free(ptr);
            continue;
        }
        nf_st_tensor *t = &st->tensors[st->n_tensors];
        nf_jval *dt = nf_jobj_get(v, "dtype"), *sh = nf_jobj_get(v, "shape"),
                *of = nf_jobj_get(v, "data_offsets");
        const char *dts = nf_jstr(dt, NULL);
        if (nf_jtype_of(v) != NF_J_OBJECT || nf_jobj_len(v) != 3 || !dts ||
            nf_jtype_of(sh) != NF_J_ARRAY || nf_jtype_of(of) != NF_J_ARRAY ||
            nf_jarr_len(of) != 2) {
            nf_diag_add(&local, NF_C_SCHEMA, ptr,
                        "a tensor entry is {\"dtype\", \"shape\", \"data_offsets\": [BEGIN, END]}");
            free(ptr);
            continue;
        }
        t->elem_bytes = nf_st_dtype_bytes(dts);
        if (!t->elem_bytes || strlen(dts) >= sizeof t->dtype) {
            nf_diag_add(&local, NF_C_UNSUPPORTED, ptr, "unknown dtype \"%s\"", dts);
            free(ptr);
            continue;
        }
        strcpy(t->dtype, dts);
        size_t rank = nf_jarr_len(sh);
        bool ok = rank <= NF_MAX_RANK;
        if (!ok)
            nf_diag_add(&local, NF_C_SCHEMA, ptr, "rank %zu is over %d", rank, NF_MAX_RANK);
        uint64_t el = 1;
        for (size_t k = 0; ok && k < rank; k++) {
            uint64_t dim;
            if (nf_jval_u64(doc, nf_jarr_get(sh, k), NULL, &dim) != NF_JU64_OK) {
                nf_diag_add(&local, NF_C_SCHEMA, ptr, "shape[%zu] is not a U64", k);
                ok = false;
            } else {
                t->dims[k] = dim;
                if (!nf_mul_u64(el, dim, &el)) {
                    nf_diag_add(&local, NF_C_RANGE, ptr, "element count overflows U64");
                    ok = false;
                }
            }
        }
        uint64_t b = 0, e = 0, nb = 0;
        if (ok && (nf_jval_u64(doc, nf_jarr_get(of, 0), NULL, &b) != NF_JU64_OK ||
                   nf_jval_u64(doc, nf_jarr_get(of, 1), NULL, &e) != NF_JU64_OK)) {
            nf_diag_add(&local, NF_C_SCHEMA, ptr, "data_offsets must be two U64 integers");
            ok = false;
        }
        if (ok && (e < b || e > data_len)) {
            nf_diag_add(&local, NF_C_BOUNDS, ptr,
                        "data_offsets [%llu, %llu) outside the %llu-byte data region",
                        (unsigned long long)b, (unsigned long long)e,
                        (unsigned long long)data_len);
            ok = false;
        }
        if (ok && (!nf_mul_u64(el, t->elem_bytes, &nb) || nb != e - b)) {
            nf_diag_add(&local, NF_C_SIZE, ptr, "%llu bytes for %llu %s elements",
                        (unsigned long long)(e - b), (unsigned long long)el, dts);
            ok = false;
        }
        free(ptr);
        if (!ok)
            continue;
        t->rank = (unsigned)rank;
        t->elements = el;
        t->offset = st->data_start + b;
        t->bytes = e - b;
        t->name = strdup(name);
        st->n_tensors++;
    }
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
    nf_jdoc_free(doc);
    free(text);
    close(fd);
    nf_diags_free(&local);
    return st;
fail:
    nf_diags_move(d, &local);
    nf_diags_free(&local);
    nf_jdoc_free(doc);
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
