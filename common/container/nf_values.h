/* nf_values.h — a tensor's logical values as f32, read from sources in
 * other encodings: the decode half of the packer's transcoding
 * (ninfer-pack(1) MANIFEST). A value source is a sequence of pieces whose
 * elements, joined in order, are the target object's elements in C order:
 *   - raw little-endian elements in a file (the dtypes of ninfer-pack(1):
 *     bf16 f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64), optionally a slice of
 *     whole rows;
 *   - a decoded object (an existing artifact's, or a GGUF tensor held in
 *     memory; any format nf_codec decodes), optionally a slice of rows;
 *   - inline numbers.
 * Every piece may undo a row permutation (llama.cpp's q/k rope
 * order, Qwen3.5's v-head tiling of rows), undo the v-head tiling of the
 * columns, and map each value (x - 1, log(-x)): the source transforms of
 * ninfer-pack(1) MANIFEST.
 * Reading is by element range, so a packer can encode in row blocks with
 * memory bounded by the block (and one decoded source object).
 */
#ifndef NF_VALUES_H
#define NF_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_codec.h"
#include "nf_io.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    NF_DT_BF16, NF_DT_F16, NF_DT_F32, NF_DT_F64, NF_DT_I8, NF_DT_I16, NF_DT_I32,
    NF_DT_I64, NF_DT_U8, NF_DT_U16, NF_DT_U32, NF_DT_U64, NF_DT_COUNT_
} nf_dtype;

/* Manifest dtype names ("bf16", "f32", ...) and safetensors names ("BF16",
 * "F32", ...) to nf_dtype; -1 when unknown. */
int nf_dtype_from_name(const char *name);
/* Bytes per element of a dtype. */
unsigned nf_dtype_bytes(nf_dtype dt);

typedef enum { NF_PIECE_RAW, NF_PIECE_OBJECT, NF_PIECE_VALUES } nf_piece_kind;

typedef struct {
    nf_piece_kind kind;
    uint64_t elements;     /* elements this piece contributes */
    /* raw: a source tensor of src_rows x src_cols elements at fd:offset, or
       at ref:offset when ref is not NULL (a lazily opened file, nf_io.h) */
    int fd;
    nf_fdref *ref;
    const char *path;      /* for messages */
    uint64_t offset;
    nf_dtype dtype;
    uint64_t src_rows, src_cols;
    uint64_t row0;         /* first (unpermuted) source row taken */
    /* object: an encoded object held in memory (owned by the caller), of
       src_rows x src_cols elements (its rows and cols) */
    const nf_tensor_enc *te;
    const uint8_t *obj;
    uint64_t obj_bytes;
    uint64_t elem0;        /* added to row0 * src_cols: the first source
                              element (0 when rows and transforms are used) */
    /* values */
    const double *values;
    /* transforms (ninfer-pack(1) MANIFEST), applied in this order:
       logical row l (l >= row0) reads source row rowperm(l), logical column
       c reads source column colperm(c), then the value is mapped */
    uint64_t heads;        /* > 0: undo llama.cpp's rope permutation with this
                              many heads (rows per head = src_rows / heads) */
    bool vt_rows, vt_cols; /* undo the v-heads tiling of rows [vt_off, vt_off +
                              vt_v*vt_hd), or of every column (vt_v*vt_hd ==
                              src_cols): stored (j*Hk + g)*hd + d holds logical
                              (g*r + j)*hd + d */
    uint64_t vt_k, vt_v, vt_hd, vt_off;
    int map;               /* nf_value_map of nf_catalog.h: 0 none, 1 x - 1,
                              2 log(-x) (computed in double, rounded once) */
} nf_piece;

typedef struct {
    nf_piece *v;
    size_t n, cap;
    uint64_t elements;
} nf_values;

/* Append a piece (copied). False on allocation failure. */
bool nf_values_add(nf_values *vs, const nf_piece *p);
void nf_values_free(nf_values *vs);

/* The source row that logical row l of piece p reads: its row unpermute
 * (heads, vt_rows) undone, the identity without one. l < src_rows. */
uint64_t nf_piece_src_row(const nf_piece *p, uint64_t l);

/* Read elements [e0, e1) of the joined pieces into out as f32.
 * Returns 0, or -errno for a read error (-ENODATA: the file ended early),
 * or a negative NF_CODEC_E* for a decode error. Thread-safe (pread). */
int nf_values_read(const nf_values *vs, uint64_t e0, uint64_t e1, float *out);

#ifdef __cplusplus
}
#endif
#endif
