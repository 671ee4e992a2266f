/* nf_gguf.h — a careful GGUF reader (llama.cpp's container, versions 2 and
 * 3): header, key/values, tensor infos and alignment, with every count,
 * length, dimension product and offset capped and overflow-checked before
 * use, and every tensor's data inside the file.
 *
 * Problems are diagnostics whose file is the GGUF path and whose pointer
 * names the place ("/kv/tokenizer.ggml.tokens", "/tensors/3"), with codes
 * header (magic, version, truncated header), range (counts or sizes past
 * caps or U64), bounds (data outside the file), schema (bad value types),
 * duplicate-member (a key or tensor name twice) and unsupported (a value
 * or tensor type this reader does not know).
 */
#ifndef NF_GGUF_H
#define NF_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ggml tensor types used by the importer (values as in ggml.h). */
enum {
    NF_GGML_F32 = 0,
    NF_GGML_F16 = 1,
    NF_GGML_Q4_0 = 2,
    NF_GGML_Q4_1 = 3,
    NF_GGML_Q5_0 = 6,
    NF_GGML_Q5_1 = 7,
    NF_GGML_Q8_0 = 8,
    NF_GGML_BF16 = 30,
};

/* GGUF metadata value types (as in the GGUF spec). */
typedef enum {
    NF_GGUF_U8 = 0, NF_GGUF_I8 = 1, NF_GGUF_U16 = 2, NF_GGUF_I16 = 3,
    NF_GGUF_U32 = 4, NF_GGUF_I32 = 5, NF_GGUF_F32 = 6, NF_GGUF_BOOL = 7,
    NF_GGUF_STRING = 8, NF_GGUF_ARRAY = 9, NF_GGUF_U64 = 10, NF_GGUF_I64 = 11,
    NF_GGUF_F64 = 12,
} nf_gguf_vtype;

typedef struct {
    char *key;
    nf_gguf_vtype type;
    nf_gguf_vtype elem_type;  /* arrays: element type */
    uint64_t n_elems;         /* arrays: element count */
    uint64_t value_offset;    /* byte offset of the value in the file */
    uint64_t value_bytes;     /* its encoded length in bytes */
} nf_gguf_kv;

typedef struct {
    char *name;
    uint32_t type;            /* ggml type */
    unsigned n_dims;          /* 1..4 */
    uint64_t ne[4];           /* ggml order: ne[0] varies fastest */
    uint64_t elements;
    uint64_t offset;          /* absolute byte offset of the data in the file */
    uint64_t bytes;           /* data bytes for this type and shape */
} nf_gguf_tensor;

typedef struct {
    char *path;
    uint32_t version;
    uint64_t alignment;       /* general.alignment, default 32 */
    uint64_t data_start;      /* absolute offset of the tensor data section */
    uint64_t file_size;
    nf_gguf_kv *kv;
    size_t n_kv;
    nf_gguf_tensor *tensors;
    size_t n_tensors;
    void *priv;               /* the reader's own state (mapped/read header) */
} nf_gguf;

/* Open and check the GGUF at path (reads the header region only; tensor
 * data is not read). NULL with diagnostics on any problem. */
nf_gguf *nf_gguf_open(const char *path, nf_diags *d);
void nf_gguf_free(nf_gguf *g);

/* Lookups by exact name; NULL when absent. */
const nf_gguf_tensor *nf_gguf_find_tensor(const nf_gguf *g, const char *name);
const nf_gguf_kv *nf_gguf_find_kv(const nf_gguf *g, const char *key);

/* Name of a ggml type ("F32", "Q4_0", ...; "type 123" for unknown ones in
 * the static buffer buf of 32 bytes). */
const char *nf_ggml_type_name(uint32_t type, char buf[32]);

/* Scalar values: false when the kv has another type. Strings are returned
 * as malloc'ed copies (may contain NUL: *len gives the length). */
bool nf_gguf_kv_u64(const nf_gguf *g, const nf_gguf_kv *kv, uint64_t *out); /* any unsigned/signed>=0 int */
bool nf_gguf_kv_f64(const nf_gguf *g, const nf_gguf_kv *kv, double *out);   /* any number */
char *nf_gguf_kv_string(const nf_gguf *g, const nf_gguf_kv *kv, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
