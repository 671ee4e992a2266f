/* nf_layout.h — v3 numeric format and storage layout names (spec 6), which
 * (format, layout, shape) triples are allowed, and the layout contract of
 * DESIGN section 8: planes, plane offsets and the encoded size.
 *
 * Units: shapes and element counts are in elements; everything called
 * offset/bytes/size is in bytes. All arithmetic is overflow-checked: a shape
 * whose encoded size exceeds U64 is reported, never wrapped.
 */
#ifndef NF_LAYOUT_H
#define NF_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NF_MAX_RANK 16        /* spec 1: Shape has length 0..16 */
#define NF_TENSOR_ALIGN 256   /* spec 5.3/6.2: object alignment of tensors */
#define NF_PLANE_ALIGN 256    /* DESIGN 8: plane i starts at align_up(end, 256) */
#define NF_MAX_PLANES 3

typedef enum {
    NF_FMT_UNKNOWN = -1,
    NF_FMT_BF16 = 0,
    NF_FMT_FP32,
    NF_FMT_INT32,
    NF_FMT_Q2_G64_FP16,
    NF_FMT_Q4_G64_FP16,
    NF_FMT_Q5_G64_FP16,
    NF_FMT_Q6_G64_FP16,
    NF_FMT_Q8_G32_FP16,
    NF_FMT_T2_G128_FP16,
    NF_FMT_NVFP4,
    NF_FMT_FP8_E4M3FN_ROW_BF16,
    NF_FMT_COUNT_
} nf_format;

typedef enum {
    NF_LAY_UNKNOWN = -1,
    NF_LAY_CONTIGUOUS_LE_V1 = 0,
    NF_LAY_ROW_SPLIT_K128_V1,
    NF_LAY_BLOCK_SCALE_K16_M128X4_V1,
    NF_LAY_ROW_SCALE_V1,
    NF_LAY_RAW_BYTES_V1,   /* resources only (spec 6.2) */
    NF_LAY_COUNT_
} nf_layout;

/* Name <-> enum (spec 6: lowercase snake_case, exact byte comparison; the
 * length is explicit because catalog strings may hold NUL). Unknown names
 * give NF_FMT_UNKNOWN / NF_LAY_UNKNOWN, which is not a structural error
 * (DESIGN 13): interpreting such an object is `unsupported`. */
nf_format nf_format_from_name(const char *s, size_t len);
nf_layout nf_layout_from_name(const char *s, size_t len);
const char *nf_format_name(nf_format f);   /* NULL for unknown */
const char *nf_layout_name(nf_layout l);   /* NULL for unknown */

/* The layout a format allows (each known tensor format has exactly one). */
nf_layout nf_format_default_layout(nf_format f);

/* Static facts of a quantized format in row_split_k128_v1 (DESIGN 7/8):
 * group size G, base-plane bits, high-plane bits (0 when absent), code bits.
 * For other formats every field is 0. */
typedef struct {
    unsigned group;     /* elements per FP16 scale: 64, 32 or 128 */
    unsigned base_bits; /* 2, 4 or 8 */
    unsigned high_bits; /* 0, 1 (q5) or 2 (q6) */
    unsigned code_bits; /* base_bits + high_bits (t2/q2: 2) */
} nf_rowsplit_info;
nf_rowsplit_info nf_rowsplit_info_of(nf_format f);

/* Bytes per element of a contiguous_le_v1 format (bf16 2, fp32 4, int32 4);
 * 0 for others. */
unsigned nf_format_elem_bytes(nf_format f);

/* One plane of an encoded tensor: its offset from the object start and its
 * length, both in bytes; rows and row_bytes describe row-major planes
 * (row_bytes == 0 for planes that are not per-row, such as nvfp4's scale
 * tiles and divisors). */
typedef struct {
    const char *name;   /* "data", "base", "high", "scales", "codes",
                           "block_scales", "divisors", "row_scales" */
    uint64_t offset;
    uint64_t bytes;
    uint64_t rows;
    uint64_t row_bytes;
} nf_plane;

/* The planes of one encoded tensor and its encoded size. */
typedef struct {
    unsigned nplanes;
    nf_plane plane[NF_MAX_PLANES];
    uint64_t encoded_bytes; /* end of the last plane, no trailing fill */
    uint64_t elements;      /* elements(shape), spec 1 */
} nf_encoding;

/* Result of nf_encoding_compute. */
typedef enum {
    NF_ENC_OK = 0,
    NF_ENC_UNSUPPORTED, /* unknown format or layout name: DESIGN 13 -> `unsupported` */
    NF_ENC_INVALID,     /* known format with a layout/rank/shape/divisors it cannot
                           have -> `encoding` (DESIGN 13) */
    NF_ENC_OVERFLOW,    /* elements or bytes exceed U64 -> `range` */
} nf_enc_status;

/* Compute the planes and encoded size of a tensor (DESIGN section 8) with
 * shape dims[0..rank) (rank <= 16, every dim >= 1 as spec 1 requires),
 * format f, layout l and `divisors` (>= 1; > 1 only for nvfp4 with
 * block_scale_k16_m128x4_v1, and N % divisors == 0).
 * On NF_ENC_INVALID/OVERFLOW, why (if not NULL) receives a static or
 * thread-local message ("nvfp4 needs N % 128 == 0, got N=100"). */
nf_enc_status nf_encoding_compute(nf_format f, nf_layout l,
                                  const uint64_t *dims, unsigned rank,
                                  uint64_t divisors, nf_encoding *out,
                                  const char **why);

/* elements(shape) (spec 1): 1 for rank 0, else the product. False on overflow. */
bool nf_shape_elements(const uint64_t *dims, unsigned rank, uint64_t *out);

/* Format a shape as "7168x5120" ("scalar" for rank 0) into buf (size n). */
void nf_shape_str(const uint64_t *dims, unsigned rank, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
