/* nf_safetensors.h — the safetensors header, read with the same care as our
 * own catalog: an 8-byte little-endian header length capped before any
 * allocation, the strict JSON pre-scan, U64 shapes and offsets with
 * overflow-checked products, every tensor inside the data region, byte
 * length equal to elements x dtype size, no two tensors overlapping.
 *
 * Problems are diagnostics whose file is the safetensors path and whose
 * pointer points into its JSON header ("/model.embed_tokens.weight/shape").
 */
#ifndef NF_SAFETENSORS_H
#define NF_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_diag.h"
#include "nf_layout.h"
#include "nf_strmap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NF_ST_MAX_HEADER (100ull << 20) /* header cap, bytes */

typedef struct {
    char *name;
    char dtype[8];             /* "BF16", "F32", ... as written */
    unsigned elem_bytes;       /* bytes per element of dtype */
    unsigned rank;
    uint64_t dims[NF_MAX_RANK];
    uint64_t elements;
    uint64_t offset;           /* absolute byte offset in the file */
    uint64_t bytes;            /* data_offsets end - begin */
} nf_st_tensor;

typedef struct {
    char *path;
    nf_st_tensor *tensors;     /* in header order */
    size_t n_tensors;
    uint64_t data_start;       /* 8 + header length */
    uint64_t file_size;
    nf_strmap index;           /* tensor name -> index */
} nf_safetensors;

/* Read and check the header of the file at path. Returns NULL with
 * diagnostics (io: unreadable; header: too short or header length past the
 * file or over the cap; json/utf8/duplicate-member/depth: header text;
 * schema: fields; range/bounds/overlap/size: offsets and sizes). */
nf_safetensors *nf_safetensors_open(const char *path, nf_diags *d);
void nf_safetensors_free(nf_safetensors *st);

/* The tensor with this name, or NULL. */
const nf_st_tensor *nf_safetensors_find(const nf_safetensors *st, const char *name);

/* Bytes per element of a safetensors dtype name ("F32" -> 4), 0 if unknown. */
unsigned nf_st_dtype_bytes(const char *dtype);

#ifdef __cplusplus
}
#endif
#endif
