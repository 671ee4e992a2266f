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
 *
 * More checks (all before any allocation that a count or length drives):
 * every count and string length is capped against the bytes left in the
 * file (a truncated file is `header`, never a huge allocation), and
 * against this reader's limits NF_GGUF_MAX_KV and NF_GGUF_MAX_TENSORS
 * (`unsupported`: a sparse or padded file can make a count that fits the
 * file yet costs gigabytes of records); key and
 * tensor names are at most NF_GGUF_MAX_NAME bytes without NUL; arrays nest
 * at most NF_GGUF_MAX_DEPTH deep (`range`); general.alignment is an
 * integer power of two up to NF_GGUF_MAX_ALIGNMENT (`schema`); tensor
 * infos have 1..4 dimensions, each 1..2^63-1, with an element count inside
 * 2^63-1 (`range`), ne[0] a multiple of the type's block (`schema`), an
 * offset that is a multiple of the alignment (`alignment`), data inside the
 * file (`bounds`) and no two tensors sharing bytes (`overlap`). Version 1,
 * versions above 3 and big-endian files are `unsupported`.
 *
 * Sizes (the block bytes of ggml-common.h): F32 4, F16 2,
 * BF16 2 bytes per element; Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24, Q8_0 34,
 * Q8_1 36, IQ4_NL 18, MXFP4 17 bytes per 32; NVFP4 36 and Q2_0 18 per 64;
 * Q1_0 18 per 128; Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210, Q8_K
 * 292, IQ4_XS 136, IQ2_XXS 66, IQ2_XS 74, IQ2_S 82, IQ3_XXS 98, IQ3_S 110,
 * IQ1_S 50, IQ1_M 56, TQ1_0 54, TQ2_0 66 bytes per 256; I8/I16/I32/I64/F64
 * 1/2/4/8/8 bytes per element. Every type id of ggml.h (0-3, 6-30, 34, 35,
 * 39-42) is known, so every tensor's data is bounds-checked; ids ggml
 * removed (4, 5, 31-33, 36-38) and others are `unsupported`. Which types
 * the toolkit can decode is nf_layout's nf_format_of_ggml_type.
 *
 * Thread safety: a handle may be read from several threads (pread only).
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

/* ggml tensor types (values as in ggml.h). */
enum {
    NF_GGML_F32 = 0,
    NF_GGML_F16 = 1,
    NF_GGML_Q4_0 = 2,
    NF_GGML_Q4_1 = 3,
    NF_GGML_Q5_0 = 6,
    NF_GGML_Q5_1 = 7,
    NF_GGML_Q8_0 = 8,
    NF_GGML_Q8_1 = 9,
    NF_GGML_Q2_K = 10,
    NF_GGML_Q3_K = 11,
    NF_GGML_Q4_K = 12,
    NF_GGML_Q5_K = 13,
    NF_GGML_Q6_K = 14,
    NF_GGML_Q8_K = 15,
    NF_GGML_IQ2_XXS = 16,
    NF_GGML_IQ2_XS = 17,
    NF_GGML_IQ3_XXS = 18,
    NF_GGML_IQ1_S = 19,
    NF_GGML_IQ4_NL = 20,
    NF_GGML_IQ3_S = 21,
    NF_GGML_IQ2_S = 22,
    NF_GGML_IQ4_XS = 23,
    NF_GGML_I8 = 24,
    NF_GGML_I16 = 25,
    NF_GGML_I32 = 26,
    NF_GGML_I64 = 27,
    NF_GGML_F64 = 28,
    NF_GGML_IQ1_M = 29,
    NF_GGML_BF16 = 30,
    NF_GGML_TQ1_0 = 34,
    NF_GGML_TQ2_0 = 35,
    NF_GGML_MXFP4 = 39,
    NF_GGML_NVFP4 = 40,
    NF_GGML_Q1_0 = 41,
    NF_GGML_Q2_0 = 42,
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

#define NF_GGUF_MAX_NAME 65536u          /* key / tensor name cap, bytes */
#define NF_GGUF_MAX_DEPTH 8              /* array nesting cap */
#define NF_GGUF_MAX_KV (1u << 20)        /* key/values (real files: < 100) */
#define NF_GGUF_MAX_TENSORS (1u << 22)   /* tensor infos (frontier MoE: ~10^5) */
#define NF_GGUF_MAX_ALIGNMENT (1u << 30) /* general.alignment cap, bytes */

/* Open and check the GGUF at path (reads the header region only; tensor
 * data is not read). NULL with diagnostics on any problem. */
nf_gguf *nf_gguf_open(const char *path, nf_diags *d);
void nf_gguf_free(nf_gguf *g);

/* Parse a GGUF's bytes [0, data offset) held in buf[0..n) (what an import
 * keeps as its resource gguf.prefix): header, key/values and tensor infos
 * with every check of nf_gguf_open that does not need the tensor data
 * (offsets are checked for alignment and overflow only, made absolute as
 * usual). name names it in diagnostics. buf must outlive the handle (it is
 * not copied); values (nf_gguf_kv_*) are read from it; nf_gguf_read_tensor
 * gives -ERANGE. NULL with diagnostics. */
nf_gguf *nf_gguf_open_prefix(const void *buf, size_t n, const char *name, nf_diags *d);

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
/* A BOOL kv's value; false when the kv has another type. */
bool nf_gguf_kv_bool(const nf_gguf *g, const nf_gguf_kv *kv, bool *out);

/* The value of any kv as one JSON value, malloc'ed, NUL-terminated (*len,
 * when not NULL, gets its length): integers as integers, F32/F64 as the
 * shortest decimal that reads back to the same value and always with a
 * fraction or exponent ("1.0"), BOOL as true/false, strings as JSON
 * strings (control characters escaped), arrays (nested too) as arrays.
 * Nothing is changed on the way: a NaN or infinite float is refused
 * (range: JSON has neither, and null would read as "not set"), and so is a
 * string that is not UTF-8 (utf8: GGUF strings are UTF-8, and a byte-level
 * vocabulary must not lose a token to U+FFFD). Returns NULL then, or on a
 * read error (io) or allocation failure, with one diagnostic in d (when d
 * is not NULL) naming g's path, the pointer "/kv/<key>" and, inside an
 * array, the element. */
char *nf_gguf_kv_json(const nf_gguf *g, const nf_gguf_kv *kv, size_t *len, nf_diags *d);

/* Name of a value type ("u32", "string", "array", ...; "unknown"). */
const char *nf_gguf_vtype_name(nf_gguf_vtype t);

/* Block geometry of a ggml type: block_elems elements take block_bytes
 * bytes (F32: 1 and 4; Q4_0: 32 and 18; IQ2_XXS: 256 and 66). False for
 * unknown type ids (see above). */
bool nf_ggml_type_size(uint32_t type, uint64_t *block_elems, uint64_t *block_bytes);

/* Read n bytes at absolute offset off of the GGUF file into buf. Returns 0,
 * -ERANGE when [off, off+n) is not inside the file, or -errno (-EIO for a
 * file that shrank). */
int nf_gguf_pread(const nf_gguf *g, void *buf, size_t n, uint64_t off);

/* Read bytes [off, off+n) of tensor t's data (the raw ggml encoding) into
 * buf. Returns 0, -ERANGE outside the tensor's `bytes`, or -errno. */
int nf_gguf_read_tensor(const nf_gguf *g, const nf_gguf_tensor *t, uint64_t off, void *buf,
                        size_t n);

/* One sequential pass over the file (large reads): the SHA-256 of the whole
 * file into file_hex and of each tensor's data bytes [offset, offset+bytes)
 * into tensor_hex[i] (n_tensors entries, in g->tensors' order: what
 * llama-gguf-hash --sha256 prints per tensor). *nonzero_gap gets the
 * offset of the first nonzero byte of the data section outside every
 * tensor (alignment padding, the tail), or UINT64_MAX when there is none.
 * Returns 0 or -errno (-EBADF for a handle of nf_gguf_open_prefix). */
int nf_gguf_hash(const nf_gguf *g, char file_hex[65], char (*tensor_hex)[65],
                 uint64_t *nonzero_gap);

/* The tensor's shape in Hugging Face / C order: dims[k] = ne[n_dims-1-k]
 * for k < n_dims (a ggml [ne0=K, ne1=N] matrix is [N, K]). */
void nf_gguf_hf_dims(const nf_gguf_tensor *t, uint64_t dims[4]);

#ifdef __cplusplus
}
#endif
#endif
