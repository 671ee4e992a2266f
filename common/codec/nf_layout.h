/* nf_layout.h — v3 numeric format and storage layout names (spec 6), which
 * (format, layout, shape) triples are allowed, and the layout contract of
 * ninfer-formats(7) Layouts: planes, plane offsets and the encoded size.
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

/* The few rules below that the CUDA kernels use too (cuda/nf_kindex.h) are
 * inline functions that nvcc compiles for host and device. */
#ifdef __CUDACC__
#define NF_LAYOUT_FN static __host__ __device__ __forceinline__
#else
#define NF_LAYOUT_FN static inline
#endif

#define NF_MAX_RANK 16        /* spec 1: Shape has length 0..16 */
#define NF_TENSOR_ALIGN 256   /* spec 5.3/6.2: object alignment of tensors */
#define NF_PLANE_ALIGN 256    /* plane i starts at align_up(end, 256) */
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
    /* ninfer-formats(7) GGUF block formats, first wave; layout gguf_rows_v1.
     * Their order is the table's; nothing depends on the values. */
    NF_FMT_GGUF_F16,
    NF_FMT_GGUF_Q8_0,
    NF_FMT_GGUF_Q4_0,
    NF_FMT_GGUF_Q4_1,
    NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q5_1,
    NF_FMT_GGUF_IQ4_NL,
    NF_FMT_GGUF_MXFP4,
    NF_FMT_GGUF_Q2_K,
    NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K,
    NF_FMT_GGUF_Q5_K,
    NF_FMT_GGUF_Q6_K,
    NF_FMT_GGUF_IQ4_XS,
    NF_FMT_COUNT_
} nf_format;

typedef enum {
    NF_LAY_UNKNOWN = -1,
    NF_LAY_CONTIGUOUS_LE_V1 = 0,
    NF_LAY_ROW_SPLIT_K128_V1,
    NF_LAY_BLOCK_SCALE_K16_M128X4_V1,
    NF_LAY_ROW_SCALE_V1,
    NF_LAY_RAW_BYTES_V1,   /* resources only (spec 6.2) */
    NF_LAY_GGUF_ROWS_V1,   /* every gguf_* format (ninfer-formats(7)) */
    NF_LAY_COUNT_
} nf_layout;

/* Name <-> enum (spec 6: lowercase snake_case, exact byte comparison; the
 * length is explicit because catalog strings may hold NUL). Unknown names
 * give NF_FMT_UNKNOWN / NF_LAY_UNKNOWN, which is not a structural error
 * (ninfer-formats(7) Layouts): interpreting such an object is
 * `unsupported`. */
nf_format nf_format_from_name(const char *s, size_t len);
nf_layout nf_layout_from_name(const char *s, size_t len);
const char *nf_format_name(nf_format f);   /* NULL for unknown */
const char *nf_layout_name(nf_layout l);   /* NULL for unknown */

/* The layout a format allows (each known tensor format has exactly one). */
nf_layout nf_format_default_layout(nf_format f);

/* Static facts of a quantized format in row_split_k128_v1 (ninfer-formats(7)
 * Layouts): group size G, base-plane bits, high-plane bits (0 when absent),
 * code bits. For other formats every field is 0. */
typedef struct {
    unsigned group;     /* elements per FP16 scale: 64, 32 or 128 */
    unsigned base_bits; /* 2, 4 or 8 */
    unsigned high_bits; /* 0, 1 (q5) or 2 (q6) */
    unsigned code_bits; /* base_bits + high_bits (t2/q2: 2) */
} nf_rowsplit_info;
nf_rowsplit_info nf_rowsplit_info_of(nf_format f);

/* ---- GGUF block formats (ninfer-formats(7), layout gguf_rows_v1) --------
 *
 * Each gguf_* format is one ggml tensor type: a block of `qk` consecutive
 * elements of one row takes `block_bytes` bytes (gguf_f16: qk 1, 2 bytes),
 * laid out exactly as ggml's block struct (ggml-common.h). */
typedef struct {
    uint32_t ggml_type;   /* ggml.h's GGML_TYPE_* value (F16 1, Q4_K 12, ...) */
    unsigned qk;          /* elements per block: 1, 32 or 256 */
    unsigned block_bytes; /* bytes per block: 2 .. 210 */
} nf_gguf_info;

/* True for the gguf_* formats this build decodes (the first wave). */
bool nf_format_is_gguf(nf_format f);

/* The block geometry and ggml type of a gguf_* format; all zero for any
 * other format. */
nf_gguf_info nf_gguf_info_of(nf_format f);

/* The gguf_* format bound to ggml type id `ggml_type` (GGML_TYPE_F16 ->
 * gguf_f16, GGML_TYPE_Q4_K -> gguf_q4_k, ...), or NF_FMT_UNKNOWN for ggml
 * types that have no first-wave format: F32, BF16, the integer and f64
 * types (imported as our own formats), Q8_1/Q8_K (activations only), the
 * reserved later-wave types (see nf_gguf_reserved_name) and unknown ids.
 * ninfer-formats(7) GGUF block formats. */
nf_format nf_format_of_ggml_type(uint32_t ggml_type);

/* The reserved later-wave format name of a ggml type id (IQ2_XXS 16 ->
 * "gguf_iq2_xxs", ..., NVFP4 40 -> "gguf_nvfp4", Q1_0 41, Q2_0 42), or NULL
 * when the type has none. An importer meeting such a tensor reports
 * `unsupported` naming this format. ninfer-formats(7) GGUF block formats. */
const char *nf_gguf_reserved_name(uint32_t ggml_type);

/* True when s[0..len) is a reserved later-wave gguf_* format name
 * (gguf_iq2_xxs, gguf_iq2_xs, gguf_iq2_s, gguf_iq3_xxs, gguf_iq3_s,
 * gguf_iq1_s, gguf_iq1_m, gguf_tq1_0, gguf_tq2_0, gguf_nvfp4, gguf_q1_0,
 * gguf_q2_0). nf_format_from_name gives NF_FMT_UNKNOWN for them, so every
 * interpretation of such an object is `unsupported` (exit 4), never a
 * misreading; this only lets messages say why. ninfer-formats(7) GGUF block
 * formats. */
bool nf_format_is_reserved(const char *s, size_t len);

/* For messages about an unknown format name: a parenthesized note that it
 * is a GGUF format reserved for a later wave (ninfer-formats(7) GGUF block
 * formats) when s[0..len) is reserved, else "". */
const char *nf_format_reserved_note(const char *s, size_t len);

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
    NF_ENC_UNSUPPORTED, /* unknown format or layout name -> `unsupported` */
    NF_ENC_INVALID,     /* known format with a layout/rank/shape/divisors it cannot
                           have -> `encoding` */
    NF_ENC_OVERFLOW,    /* elements or bytes exceed U64 -> `range` */
} nf_enc_status;

/* Compute the planes and encoded size of a tensor (ninfer-formats(7)
 * Layouts, Encoded sizes) with gguf_rows_v1 (every gguf_* format, rank 2
 * [N,K], K % qk == 0, else INVALID): one plane "data" of N rows of
 * (K/qk)*block_bytes bytes. Generally: with shape dims[0..rank) (rank <= 16,
 * every dim >= 1 as spec 1 requires), format f, layout l and `divisors` (>= 1;
 * > 1 only for nvfp4 with block_scale_k16_m128x4_v1, and N % divisors == 0).
 * On NF_ENC_INVALID/OVERFLOW, why (if not NULL) receives a static or
 * thread-local message ("nvfp4 needs N % 128 == 0, got N=100"). */
nf_enc_status nf_encoding_compute(nf_format f, nf_layout l,
                                  const uint64_t *dims, unsigned rank,
                                  uint64_t divisors, nf_encoding *out,
                                  const char **why);

/* ---- block_scale_k16_m128x4_v1: the nvfp4 scale tiles (ninfer-formats(7)) ---
 *
 * Block scale (n, c) (row n < N, 16-column block c < K/16; N % 128 == 0,
 * K % 64 == 0) is byte
 *   ((n/128)*(K/64) + c/4)*512 + (n%32)*16 + ((n%128)/32)*4 + c%4
 * of the block_scales plane: one 512-byte tile per 128 rows x 64 columns,
 * tiles of a 128-row block side by side along K. The index splits into a
 * part that depends on the row and one on the block (the kernels add the
 * row part once per row); a 128-row block's tiles are K/64*512 contiguous
 * bytes. Units: bytes from the start of the plane. No checks: the caller
 * keeps n < N and c < K/16 (nf_encoding_compute checked N and K). */
NF_LAYOUT_FN uint64_t nf_nvfp4_scale_row_part(uint64_t n, uint64_t K)
{
    return (n / 128) * (K / 64) * 512 + (n % 32) * 16 + ((n % 128) / 32) * 4;
}
NF_LAYOUT_FN uint64_t nf_nvfp4_scale_col_part(uint64_t c) { return (c / 4) * 512 + c % 4; }
NF_LAYOUT_FN uint64_t nf_nvfp4_scale_index(uint64_t n, uint64_t c, uint64_t K)
{
    return nf_nvfp4_scale_row_part(n, K) + nf_nvfp4_scale_col_part(c);
}
/* Bytes of the scale tiles of one 128-row block (K % 64 == 0). */
NF_LAYOUT_FN uint64_t nf_nvfp4_tile_row_bytes(uint64_t K) { return K / 64 * 512; }

/* ---- views (ninfer-formats(7) Element ranges and views, spec 7.3) -------- */

/* One byte interval of one plane, relative to the object's start. */
typedef struct {
    const char *plane;  /* the plane's name (nf_plane.name) */
    uint64_t offset, bytes;
} nf_plane_span;

/* Whether rows [r0, r1) (r0 < r1 <= N) of a rank-2 object of layout l are a
 * zero-copy view: any whole-row range, except in block_scale_k16_m128x4_v1
 * whole 128-row blocks (r0 % 128 == 0, r1 % 128 == 0). Contiguous objects
 * count rows of dims[0]. */
bool nf_rows_are_view(nf_layout l, uint64_t r0, uint64_t r1);

/* The byte intervals elements [begin, end) of an object (format f, layout l,
 * shape dims[0..rank), planes e from nf_encoding_compute) need, one per
 * plane (up to NF_MAX_PLANES), and whether the range is a zero-copy view:
 * in contiguous_le_v1 any range (one interval); in row_split_k128_v1,
 * row_scale_v1 and gguf_rows_v1 whole rows (an interval of each plane); in
 * block_scale_k16_m128x4_v1 whole 128-row blocks (a codes interval, a
 * scale-tile interval and all the divisors). For a range that is not a view
 * the intervals cover the whole rows (or 128-row blocks) it touches.
 * Elements count logical elements (no padding, no scales). Returns the
 * number of spans, 0 for an empty or out-of-range range or a layout other
 * than contiguous that is not rank 2. */
unsigned nf_view_spans(nf_format f, nf_layout l, const uint64_t *dims, unsigned rank,
                       const nf_encoding *e, uint64_t begin, uint64_t end, nf_plane_span *out,
                       bool *view);

/* elements(shape) (spec 1): 1 for rank 0, else the product. False on overflow. */
bool nf_shape_elements(const uint64_t *dims, unsigned rank, uint64_t *out);

/* Format a shape as "7168x5120" ("scalar" for rank 0) into buf (size n). */
void nf_shape_str(const uint64_t *dims, unsigned rank, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
