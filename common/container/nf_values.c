/* nf_values.c — f32 views of raw, encoded and inline sources. */
#include "nf_values.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_io.h"

static const struct {
    const char *a, *b;
    unsigned bytes;
} dts[NF_DT_COUNT_] = {
    [NF_DT_BF16] = {"bf16", "BF16", 2}, [NF_DT_F16] = {"f16", "F16", 2},
    [NF_DT_F32] = {"f32", "F32", 4},    [NF_DT_F64] = {"f64", "F64", 8},
    [NF_DT_I8] = {"i8", "I8", 1},       [NF_DT_I16] = {"i16", "I16", 2},
    [NF_DT_I32] = {"i32", "I32", 4},    [NF_DT_I64] = {"i64", "I64", 8},
    [NF_DT_U8] = {"u8", "U8", 1},       [NF_DT_U16] = {"u16", "U16", 2},
    [NF_DT_U32] = {"u32", "U32", 4},    [NF_DT_U64] = {"u64", "U64", 8},
};

int nf_dtype_from_name(const char *name)
{
    for (int i = 0; i < NF_DT_COUNT_; i++)
        if (!strcmp(name, dts[i].a) || !strcmp(name, dts[i].b))
            return i;
    return -1;
}

unsigned nf_dtype_bytes(nf_dtype dt)
{
    return (unsigned)dt < NF_DT_COUNT_ ? dts[dt].bytes : 0;
}

bool nf_values_add(nf_values *vs, const nf_piece *p)
{
    if (vs->n == vs->cap) {
        size_t nc = vs->cap ? vs->cap * 2 : 4;
        nf_piece *nv = realloc(vs->v, nc * sizeof *nv);
        if (!nv)
            return false;
        vs->v = nv;
        vs->cap = nc;
    }
    vs->v[vs->n++] = *p;
    vs->elements += p->elements;
    return true;
}

void nf_values_free(nf_values *vs)
{
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
/* F16 -> f32 eight at a time (vcvtph2ps: exact, as nf_fp16_to_f32). */
__attribute__((target("avx,f16c"))) static void f16_rows(const unsigned char *in, uint64_t n,
                                                         float *out)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + 2 * i))));
    for (; i < n; i++) {
        uint16_t v;
        memcpy(&v, in + 2 * i, 2);
        out[i] = nf_fp16_to_f32(v);
    }
}

static bool have_f16c(void)
{
    static _Atomic int known = -1; /* CPUID once (slow in a VM) */
    int v = atomic_load_explicit(&known, memory_order_relaxed);
    if (v < 0) {
        unsigned a, b, c, d;
        v = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 28)) && (c & (1u << 29)); /* AVX, F16C */
        atomic_store_explicit(&known, v, memory_order_relaxed);
    }
    return v > 0;
}
#endif

static void convert(nf_dtype dt, const unsigned char *in, uint64_t n, float *out)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (dt == NF_DT_F16 && have_f16c()) {
        f16_rows(in, n, out);
        return;
    }
#endif
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *p = in + i * dts[dt].bytes;
        switch (dt) {
        case NF_DT_BF16: { uint16_t v; memcpy(&v, p, 2); out[i] = nf_bf16_to_f32(v); break; }
        case NF_DT_F16: { uint16_t v; memcpy(&v, p, 2); out[i] = nf_fp16_to_f32(v); break; }
        case NF_DT_F32: memcpy(&out[i], p, 4); break;
        case NF_DT_F64: { double v; memcpy(&v, p, 8); out[i] = (float)v; break; }
        case NF_DT_I8: out[i] = (float)(int8_t)p[0]; break;
        case NF_DT_I16: { int16_t v; memcpy(&v, p, 2); out[i] = (float)v; break; }
        case NF_DT_I32: { int32_t v; memcpy(&v, p, 4); out[i] = (float)v; break; }
        case NF_DT_I64: { int64_t v; memcpy(&v, p, 8); out[i] = (float)v; break; }
        case NF_DT_U8: out[i] = (float)p[0]; break;
        case NF_DT_U16: { uint16_t v; memcpy(&v, p, 2); out[i] = (float)v; break; }
        case NF_DT_U32: { uint32_t v; memcpy(&v, p, 4); out[i] = (float)v; break; }
        case NF_DT_U64: { uint64_t v; memcpy(&v, p, 8); out[i] = (float)v; break; }
        default: out[i] = 0; break;
        }
    }
}

/* v-heads tiling (GGUF.md 3.3): the stored index of logical index l of a
 * tiled span of Hv heads of hd (r = Hv/Hk): logical (g*r + j)*hd + d is
 * stored at (j*Hk + g)*hd + d. */
static uint64_t vt_src(const nf_piece *p, uint64_t l)
{
    uint64_t r = p->vt_v / p->vt_k, head = l / p->vt_hd, d = l % p->vt_hd;
    return ((head % r) * p->vt_k + head / r) * p->vt_hd + d;
}

/* Source row holding logical row l (rope permutation undone: Hugging Face
 * row h*hd + t*(hd/2) + i is llama.cpp's row h*hd + 2*i + t; v-head tiling
 * undone on its span of rows). */
uint64_t nf_piece_src_row(const nf_piece *p, uint64_t l)
{
    if (p->heads) {
        uint64_t hd = p->src_rows / p->heads, h = l / hd, w = l % hd, half = hd / 2;
        uint64_t t = w / half, i = w % half;
        return h * hd + 2 * i + t;
    }
    if (p->vt_rows && l >= p->vt_off && l - p->vt_off < p->vt_v * p->vt_hd)
        return p->vt_off + vt_src(p, l - p->vt_off);
    return l;
}

/* Source elements [a, b) (C order over src_rows x src_cols), untransformed. */
static int read_base(const nf_piece *p, uint64_t a, uint64_t b, float *out)
{
    if (p->kind == NF_PIECE_OBJECT)
        return nf_decode_elems_f32(p->te, p->obj, p->obj_bytes, a, b, out);
    if (p->kind == NF_PIECE_VALUES) {
        for (uint64_t k = a; k < b; k++)
            out[k - a] = (float)p->values[k];
        return 0;
    }
    unsigned eb = dts[p->dtype].bytes;
    unsigned char buf[1 << 16];
    uint64_t per = sizeof buf / eb;
    while (a < b) {
        uint64_t n = b - a > per ? per : b - a;
        ssize_t r = p->ref ? nf_fdref_pread(p->ref, buf, (size_t)(n * eb), p->offset + a * eb)
                           : nf_pread_full(p->fd, buf, (size_t)(n * eb), p->offset + a * eb);
        if (r < 0)
            return (int)r;
        if ((uint64_t)r != n * eb)
            return -ENODATA;
        convert(p->dtype, buf, n, out);
        out += n;
        a += n;
    }
    return 0;
}

static void map_values(int map, float *v, uint64_t n)
{
    if (map == 1)
        for (uint64_t i = 0; i < n; i++)
            v[i] = v[i] - 1.0f;
    else if (map == 2)
        for (uint64_t i = 0; i < n; i++)
            v[i] = (float)log(-(double)v[i]);
}

/* Elements [a, b) of a piece (relative to the piece), with its transforms. */
static int read_piece(const nf_piece *p, uint64_t a, uint64_t b, float *out)
{
    uint64_t cols = p->src_cols, base = p->elem0 + p->row0 * cols;
    int rc = 0;
    if (!p->heads && !p->vt_rows && !p->vt_cols) {
        rc = read_base(p, base + a, base + b, out);
    } else {
        float *row = NULL;
        if (p->vt_cols && !(row = malloc((size_t)cols * sizeof *row)))
            return NF_CODEC_ENOMEM;
        for (uint64_t e = a; e < b && !rc;) {
            uint64_t l = p->row0 + e / cols, c = e % cols;
            uint64_t n = cols - c < b - e ? cols - c : b - e;
            uint64_t s = nf_piece_src_row(p, l) * cols;
            if (p->vt_cols) {
                rc = read_base(p, s, s + cols, row);
                for (uint64_t k = 0; !rc && k < n; k++)
                    out[e - a + k] = row[vt_src(p, c + k)];
            } else {
                rc = read_base(p, s + c, s + c + n, out + (e - a));
            }
            e += n;
        }
        free(row);
    }
    if (!rc)
        map_values(p->map, out, b - a);
    return rc;
}

int nf_values_read(const nf_values *vs, uint64_t e0, uint64_t e1, float *out)
{
    uint64_t start = 0;
    for (size_t i = 0; i < vs->n && e0 < e1; i++) {
        const nf_piece *p = &vs->v[i];
        uint64_t end = start + p->elements;
        if (e0 < end) {
            uint64_t a = e0 - start, b = (e1 < end ? e1 : end) - start;
            int rc = 0;
            switch (p->kind) {
            case NF_PIECE_RAW:
            case NF_PIECE_OBJECT:
            case NF_PIECE_VALUES:
                rc = read_piece(p, a, b, out);
                break;
            }
            if (rc)
                return rc;
            out += b - a;
            e0 = start + b;
        }
        start = end;
    }
    return e0 < e1 ? -ERANGE : 0;
}
