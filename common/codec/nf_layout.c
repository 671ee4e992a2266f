/* nf_layout.c — format/layout names and the layout contract (DESIGN 8,
 * spec 6.2): planes, plane offsets and the encoded size.
 *
 * Every product and sum goes through the nf_util helpers: a shape comes
 * from a catalog, so nothing here may wrap.
 */
#include "nf_layout.h"
#include "nf_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const fmt_names[NF_FMT_COUNT_] = {
    [NF_FMT_BF16] = "bf16",
    [NF_FMT_FP32] = "fp32",
    [NF_FMT_INT32] = "int32",
    [NF_FMT_Q2_G64_FP16] = "q2_g64_fp16",
    [NF_FMT_Q4_G64_FP16] = "q4_g64_fp16",
    [NF_FMT_Q5_G64_FP16] = "q5_g64_fp16",
    [NF_FMT_Q6_G64_FP16] = "q6_g64_fp16",
    [NF_FMT_Q8_G32_FP16] = "q8_g32_fp16",
    [NF_FMT_T2_G128_FP16] = "t2_g128_fp16",
    [NF_FMT_NVFP4] = "nvfp4",
    [NF_FMT_FP8_E4M3FN_ROW_BF16] = "fp8_e4m3fn_row_bf16",
    [NF_FMT_GGUF_F16] = "gguf_f16",
    [NF_FMT_GGUF_Q8_0] = "gguf_q8_0",
    [NF_FMT_GGUF_Q4_0] = "gguf_q4_0",
    [NF_FMT_GGUF_Q4_1] = "gguf_q4_1",
    [NF_FMT_GGUF_Q5_0] = "gguf_q5_0",
    [NF_FMT_GGUF_Q5_1] = "gguf_q5_1",
    [NF_FMT_GGUF_IQ4_NL] = "gguf_iq4_nl",
    [NF_FMT_GGUF_MXFP4] = "gguf_mxfp4",
    [NF_FMT_GGUF_Q2_K] = "gguf_q2_k",
    [NF_FMT_GGUF_Q3_K] = "gguf_q3_k",
    [NF_FMT_GGUF_Q4_K] = "gguf_q4_k",
    [NF_FMT_GGUF_Q5_K] = "gguf_q5_k",
    [NF_FMT_GGUF_Q6_K] = "gguf_q6_k",
    [NF_FMT_GGUF_IQ4_XS] = "gguf_iq4_xs",
};

/* ggml type, elements and bytes per block of each gguf_* format (GGUF.md
 * 2.2, 2.3; ggml.h's GGML_TYPE_* ids). */
static const nf_gguf_info gguf_infos[NF_FMT_COUNT_] = {
    [NF_FMT_GGUF_F16] = {1, 1, 2},
    [NF_FMT_GGUF_Q8_0] = {8, 32, 34},
    [NF_FMT_GGUF_Q4_0] = {2, 32, 18},
    [NF_FMT_GGUF_Q4_1] = {3, 32, 20},
    [NF_FMT_GGUF_Q5_0] = {6, 32, 22},
    [NF_FMT_GGUF_Q5_1] = {7, 32, 24},
    [NF_FMT_GGUF_IQ4_NL] = {20, 32, 18},
    [NF_FMT_GGUF_MXFP4] = {39, 32, 17},
    [NF_FMT_GGUF_Q2_K] = {10, 256, 84},
    [NF_FMT_GGUF_Q3_K] = {11, 256, 110},
    [NF_FMT_GGUF_Q4_K] = {12, 256, 144},
    [NF_FMT_GGUF_Q5_K] = {13, 256, 176},
    [NF_FMT_GGUF_Q6_K] = {14, 256, 210},
    [NF_FMT_GGUF_IQ4_XS] = {23, 256, 136},
};

/* The later wave (DESIGN 7.5): names reserved, never decoded. */
static const struct {
    uint32_t ggml_type;
    const char *name;
} gguf_reserved[] = {
    {16, "gguf_iq2_xxs"}, {17, "gguf_iq2_xs"}, {18, "gguf_iq3_xxs"}, {19, "gguf_iq1_s"},
    {21, "gguf_iq3_s"},   {22, "gguf_iq2_s"},  {29, "gguf_iq1_m"},   {34, "gguf_tq1_0"},
    {35, "gguf_tq2_0"},   {40, "gguf_nvfp4"},  {41, "gguf_q1_0"},    {42, "gguf_q2_0"},
};

static const char *const lay_names[NF_LAY_COUNT_] = {
    [NF_LAY_CONTIGUOUS_LE_V1] = "contiguous_le_v1",
    [NF_LAY_ROW_SPLIT_K128_V1] = "row_split_k128_v1",
    [NF_LAY_BLOCK_SCALE_K16_M128X4_V1] = "block_scale_k16_m128x4_v1",
    [NF_LAY_ROW_SCALE_V1] = "row_scale_v1",
    [NF_LAY_RAW_BYTES_V1] = "raw_bytes_v1",
    [NF_LAY_GGUF_ROWS_V1] = "gguf_rows_v1",
};

/* Exact byte comparison: the catalog string may hold NUL, so a name only
 * matches when its length is the table entry's length. */
static bool name_eq(const char *s, size_t len, const char *name)
{
    return s && strlen(name) == len && memcmp(s, name, len) == 0;
}

nf_format nf_format_from_name(const char *s, size_t len)
{
    for (int i = 0; i < NF_FMT_COUNT_; i++)
        if (name_eq(s, len, fmt_names[i]))
            return (nf_format)i;
    return NF_FMT_UNKNOWN;
}

nf_layout nf_layout_from_name(const char *s, size_t len)
{
    for (int i = 0; i < NF_LAY_COUNT_; i++)
        if (name_eq(s, len, lay_names[i]))
            return (nf_layout)i;
    return NF_LAY_UNKNOWN;
}

const char *nf_format_name(nf_format f)
{
    return (f >= 0 && f < NF_FMT_COUNT_) ? fmt_names[f] : NULL;
}

const char *nf_layout_name(nf_layout l)
{
    return (l >= 0 && l < NF_LAY_COUNT_) ? lay_names[l] : NULL;
}

bool nf_format_is_gguf(nf_format f)
{
    return f >= 0 && f < NF_FMT_COUNT_ && gguf_infos[f].qk != 0;
}

nf_gguf_info nf_gguf_info_of(nf_format f)
{
    nf_gguf_info z = {0, 0, 0};
    return nf_format_is_gguf(f) ? gguf_infos[f] : z;
}

nf_format nf_format_of_ggml_type(uint32_t ggml_type)
{
    for (int i = 0; i < NF_FMT_COUNT_; i++)
        if (gguf_infos[i].qk && gguf_infos[i].ggml_type == ggml_type)
            return (nf_format)i;
    return NF_FMT_UNKNOWN;
}

const char *nf_gguf_reserved_name(uint32_t ggml_type)
{
    for (size_t i = 0; i < sizeof gguf_reserved / sizeof *gguf_reserved; i++)
        if (gguf_reserved[i].ggml_type == ggml_type)
            return gguf_reserved[i].name;
    return NULL;
}

bool nf_format_is_reserved(const char *s, size_t len)
{
    for (size_t i = 0; i < sizeof gguf_reserved / sizeof *gguf_reserved; i++)
        if (name_eq(s, len, gguf_reserved[i].name))
            return true;
    return false;
}

const char *nf_format_reserved_note(const char *s, size_t len)
{
    return nf_format_is_reserved(s, len) ? " (a GGUF format reserved for a later wave, ninfer-formats(7))"
                                         : "";
}

nf_layout nf_format_default_layout(nf_format f)
{
    if (nf_format_is_gguf(f))
        return NF_LAY_GGUF_ROWS_V1;
    switch (f) {
    case NF_FMT_BF16:
    case NF_FMT_FP32:
    case NF_FMT_INT32:
        return NF_LAY_CONTIGUOUS_LE_V1;
    case NF_FMT_Q2_G64_FP16:
    case NF_FMT_Q4_G64_FP16:
    case NF_FMT_Q5_G64_FP16:
    case NF_FMT_Q6_G64_FP16:
    case NF_FMT_Q8_G32_FP16:
    case NF_FMT_T2_G128_FP16:
        return NF_LAY_ROW_SPLIT_K128_V1;
    case NF_FMT_NVFP4:
        return NF_LAY_BLOCK_SCALE_K16_M128X4_V1;
    case NF_FMT_FP8_E4M3FN_ROW_BF16:
        return NF_LAY_ROW_SCALE_V1;
    default:
        return NF_LAY_UNKNOWN;
    }
}

nf_rowsplit_info nf_rowsplit_info_of(nf_format f)
{
    nf_rowsplit_info r = {0, 0, 0, 0};
    switch (f) {
    case NF_FMT_Q2_G64_FP16: r = (nf_rowsplit_info){64, 2, 0, 2}; break;
    case NF_FMT_Q4_G64_FP16: r = (nf_rowsplit_info){64, 4, 0, 4}; break;
    case NF_FMT_Q5_G64_FP16: r = (nf_rowsplit_info){64, 4, 1, 5}; break;
    case NF_FMT_Q6_G64_FP16: r = (nf_rowsplit_info){64, 4, 2, 6}; break;
    case NF_FMT_Q8_G32_FP16: r = (nf_rowsplit_info){32, 8, 0, 8}; break;
    case NF_FMT_T2_G128_FP16: r = (nf_rowsplit_info){128, 2, 0, 2}; break;
    default: break;
    }
    return r;
}

unsigned nf_format_elem_bytes(nf_format f)
{
    switch (f) {
    case NF_FMT_BF16: return 2;
    case NF_FMT_FP32: return 4;
    case NF_FMT_INT32: return 4;
    default: return 0;
    }
}

bool nf_shape_elements(const uint64_t *dims, unsigned rank, uint64_t *out)
{
    uint64_t e = 1;
    for (unsigned i = 0; i < rank; i++)
        if (!nf_mul_u64(e, dims[i], &e))
            return false;
    *out = e;
    return true;
}

void nf_shape_str(const uint64_t *dims, unsigned rank, char *buf, size_t n)
{
    if (!buf || n == 0)
        return;
    if (rank == 0) {
        snprintf(buf, n, "scalar");
        return;
    }
    size_t used = 0;
    buf[0] = 0;
    for (unsigned i = 0; i < rank && used < n; i++) {
        int w = snprintf(buf + used, n - used, "%s%llu", i ? "x" : "",
                         (unsigned long long)dims[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Messages that carry numbers live in a per-thread buffer so that `why`
 * stays valid until the next call on the same thread. */
static _Thread_local char why_buf[160];

static nf_enc_status fail(nf_enc_status st, const char **why, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));
static nf_enc_status fail(nf_enc_status st, const char **why, const char *fmt,
                          ...)
{
    if (why) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why_buf, sizeof why_buf, fmt, ap);
        va_end(ap);
        *why = why_buf;
    }
    return st;
}

static nf_enc_status fail_s(nf_enc_status st, const char **why, const char *msg)
{
    if (why)
        *why = msg;
    return st;
}

/* Append a plane after the previous one: it starts at the previous end
 * rounded up to 256 (DESIGN 8). Returns false on overflow. */
static bool add_plane(nf_encoding *e, const char *name, uint64_t rows,
                      uint64_t row_bytes, uint64_t bytes)
{
    uint64_t off = 0;
    if (e->nplanes > 0) {
        const nf_plane *p = &e->plane[e->nplanes - 1];
        uint64_t end;
        if (!nf_add_u64(p->offset, p->bytes, &end) ||
            !nf_align_up_u64(end, NF_PLANE_ALIGN, &off))
            return false;
    }
    uint64_t end;
    if (!nf_add_u64(off, bytes, &end))
        return false;
    nf_plane *p = &e->plane[e->nplanes++];
    p->name = name;
    p->offset = off;
    p->bytes = bytes;
    p->rows = rows;
    p->row_bytes = row_bytes;
    e->encoded_bytes = end;
    return true;
}

/* rows * row_bytes as one plane. */
static bool add_rows(nf_encoding *e, const char *name, uint64_t rows,
                     uint64_t row_bytes)
{
    uint64_t bytes;
    return nf_mul_u64(rows, row_bytes, &bytes) &&
           add_plane(e, name, rows, row_bytes, bytes);
}

static bool layout_needs_rank2(nf_layout l)
{
    return l == NF_LAY_ROW_SPLIT_K128_V1 || l == NF_LAY_BLOCK_SCALE_K16_M128X4_V1 ||
           l == NF_LAY_ROW_SCALE_V1 || l == NF_LAY_GGUF_ROWS_V1;
}

#define OVF(why) fail_s(NF_ENC_OVERFLOW, why, "encoded size exceeds U64")

nf_enc_status nf_encoding_compute(nf_format f, nf_layout l,
                                  const uint64_t *dims, unsigned rank,
                                  uint64_t divisors, nf_encoding *out,
                                  const char **why)
{
    nf_encoding e;
    memset(&e, 0, sizeof e);
    if (out)
        memset(out, 0, sizeof *out);

    /* Checks that hold whatever the names are (spec 1, 5.1, 6.2). */
    if (rank > NF_MAX_RANK)
        return fail(NF_ENC_INVALID, why, "rank %u exceeds 16", rank);
    for (unsigned i = 0; i < rank; i++)
        if (dims[i] == 0)
            return fail(NF_ENC_INVALID, why, "shape dimension %u is 0", i);
    if (!nf_shape_elements(dims, rank, &e.elements))
        return fail_s(NF_ENC_OVERFLOW, why, "elements(shape) exceeds U64");
    if (divisors == 0)
        return fail_s(NF_ENC_INVALID, why, "divisors must be at least 1");
    if (divisors > 1 &&
        !(f == NF_FMT_NVFP4 && l == NF_LAY_BLOCK_SCALE_K16_M128X4_V1))
        return fail(NF_ENC_INVALID, why,
                    "divisors %llu > 1 is allowed only for nvfp4 with "
                    "block_scale_k16_m128x4_v1", (unsigned long long)divisors);
    if (l == NF_LAY_RAW_BYTES_V1)
        return fail_s(NF_ENC_INVALID, why,
                      "raw_bytes_v1 is a resource encoding, not a tensor layout");
    if (layout_needs_rank2(l) && rank != 2)
        return fail(NF_ENC_INVALID, why, "layout %s needs rank 2, got rank %u",
                    lay_names[l], rank);

    /* Unknown names are not structural errors (DESIGN 13). */
    if (f < 0 || f >= NF_FMT_COUNT_)
        return fail_s(NF_ENC_UNSUPPORTED, why, "unknown format");
    if (l < 0 || l >= NF_LAY_COUNT_)
        return fail_s(NF_ENC_UNSUPPORTED, why, "unknown layout");

    if (nf_format_default_layout(f) != l)
        return fail(NF_ENC_INVALID, why,
                    "format %s does not allow layout %s (it needs %s)",
                    fmt_names[f], lay_names[l],
                    lay_names[nf_format_default_layout(f)]);

    switch (l) {
    case NF_LAY_CONTIGUOUS_LE_V1: {
        uint64_t eb = nf_format_elem_bytes(f), bytes;
        if (!nf_mul_u64(e.elements, eb, &bytes))
            return OVF(why);
        uint64_t rows = rank ? dims[0] : 1;
        if (!add_plane(&e, "data", rows, bytes / rows, bytes))
            return OVF(why);
        break;
    }
    case NF_LAY_ROW_SPLIT_K128_V1: {
        nf_rowsplit_info ri = nf_rowsplit_info_of(f);
        uint64_t N = dims[0], K = dims[1], Kp;
        if (!nf_align_up_u64(K, 128, &Kp))
            return OVF(why);
        /* Kp is a multiple of 128, so Kp/8 and Kp/G are exact. */
        if (!add_rows(&e, "base", N, Kp / 8 * ri.base_bits))
            return OVF(why);
        if (ri.high_bits && !add_rows(&e, "high", N, Kp / 8 * ri.high_bits))
            return OVF(why);
        if (!add_rows(&e, "scales", N, Kp / ri.group * 2))
            return OVF(why);
        break;
    }
    case NF_LAY_BLOCK_SCALE_K16_M128X4_V1: {
        uint64_t N = dims[0], K = dims[1], sb, db;
        if (N % 128 != 0)
            return fail(NF_ENC_INVALID, why,
                        "nvfp4 needs N %% 128 == 0, got N=%llu",
                        (unsigned long long)N);
        if (K % 64 != 0)
            return fail(NF_ENC_INVALID, why,
                        "nvfp4 needs K %% 64 == 0, got K=%llu",
                        (unsigned long long)K);
        if (N % divisors != 0)
            return fail(NF_ENC_INVALID, why,
                        "N %% divisors != 0 (N=%llu, divisors=%llu)",
                        (unsigned long long)N, (unsigned long long)divisors);
        if (!add_rows(&e, "codes", N, K / 2))
            return OVF(why);
        if (!nf_mul_u64(N, K / 16, &sb) ||
            !add_plane(&e, "block_scales", 0, 0, sb))
            return OVF(why);
        if (!nf_mul_u64(divisors, 4, &db) ||
            !add_plane(&e, "divisors", 0, 0, db))
            return OVF(why);
        break;
    }
    case NF_LAY_ROW_SCALE_V1: {
        uint64_t N = dims[0], K = dims[1];
        if (!add_rows(&e, "codes", N, K) || !add_rows(&e, "row_scales", N, 2))
            return OVF(why);
        break;
    }
    case NF_LAY_GGUF_ROWS_V1: {
        /* DESIGN 8: N rows of K/qk blocks, one plane, no padding */
        nf_gguf_info gi = gguf_infos[f];
        uint64_t N = dims[0], K = dims[1];
        if (K % gi.qk != 0)
            return fail(NF_ENC_INVALID, why,
                        "%s needs K %% %u == 0 (whole blocks of %u), got K=%llu",
                        fmt_names[f], gi.qk, gi.qk, (unsigned long long)K);
        if (!add_rows(&e, "data", N, K / gi.qk * gi.block_bytes))
            return OVF(why);
        break;
    }
    default:
        return fail_s(NF_ENC_UNSUPPORTED, why, "unknown layout");
    }
    if (out)
        *out = e;
    if (why)
        *why = NULL;
    return NF_ENC_OK;
}

/* ---- views ------------------------------------------------------------------ */

bool nf_rows_are_view(nf_layout l, uint64_t r0, uint64_t r1)
{
    if (r0 >= r1)
        return false;
    if (l == NF_LAY_BLOCK_SCALE_K16_M128X4_V1)
        return r0 % 128 == 0 && r1 % 128 == 0;
    return true;
}

unsigned nf_view_spans(nf_format f, nf_layout l, const uint64_t *dims, unsigned rank,
                       const nf_encoding *e, uint64_t begin, uint64_t end, nf_plane_span *out,
                       bool *view)
{
    if (begin >= end || end > e->elements)
        return 0;
    if (l == NF_LAY_CONTIGUOUS_LE_V1) {
        unsigned eb = nf_format_elem_bytes(f);
        out[0] = (nf_plane_span){e->plane[0].name, begin * eb, (end - begin) * eb};
        *view = true;
        return 1;
    }
    if (rank != 2 || !dims[1])
        return 0;
    uint64_t N = dims[0], K = dims[1];
    uint64_t r0 = begin / K, r1 = nf_ceil_div_u64(end, K);
    *view = begin % K == 0 && end % K == 0 && nf_rows_are_view(l, r0, r1);
    if (l == NF_LAY_BLOCK_SCALE_K16_M128X4_V1) {
        uint64_t b0 = r0 / 128, b1 = nf_ceil_div_u64(r1, 128);
        r0 = b0 * 128;
        r1 = b1 * 128 < N ? b1 * 128 : N;
        uint64_t tile = nf_nvfp4_tile_row_bytes(K);
        out[0] = (nf_plane_span){e->plane[0].name, e->plane[0].offset + r0 * (K / 2),
                                 (r1 - r0) * (K / 2)};
        out[1] = (nf_plane_span){e->plane[1].name, e->plane[1].offset + b0 * tile,
                                 (b1 - b0) * tile};
        out[2] = (nf_plane_span){e->plane[2].name, e->plane[2].offset, e->plane[2].bytes};
        return 3;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < e->nplanes; i++) {
        const nf_plane *p = &e->plane[i];
        if (p->row_bytes)
            out[n++] = (nf_plane_span){p->name, p->offset + r0 * p->row_bytes,
                                       (r1 - r0) * p->row_bytes};
        else
            out[n++] = (nf_plane_span){p->name, p->offset, p->bytes};
    }
    return n;
}
