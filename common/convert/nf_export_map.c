/* nf_export_map.c — the inverse of the importer's value maps, and the test
 * of whether a mapped tensor comes back bit for bit. */
#include "nf_export.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_gguf.h"

void nf_export_unmap(nf_value_map map, float *v, uint64_t n)
{
    if (map == NF_VMAP_MINUS_ONE)
        for (uint64_t i = 0; i < n; i++)
            v[i] = v[i] + 1.0f;
    else if (map == NF_VMAP_LOG_NEG)
        for (uint64_t i = 0; i < n; i++)
            v[i] = -expf(v[i]);
}

bool nf_export_to_ggml_float(uint32_t ggml_type, const float *v, uint64_t n, void *out)
{
    unsigned char *o = out;
    switch (ggml_type) {
    case NF_GGML_F32:
        memcpy(o, v, (size_t)n * 4);
        return true;
    case NF_GGML_F16:
    case NF_GGML_BF16:
        for (uint64_t i = 0; i < n; i++) {
            uint16_t h = ggml_type == NF_GGML_F16 ? nf_f32_to_fp16(v[i]) : nf_f32_to_bf16(v[i]);
            memcpy(o + 2 * i, &h, 2);
        }
        return true;
    default:
        return false;
    }
}

/* A ggml float element as f32 (as nf_values decodes it). */
static float ggml_float(uint32_t type, const unsigned char *p)
{
    uint16_t h;
    float f;
    switch (type) {
    case NF_GGML_F32: memcpy(&f, p, 4); return f;
    case NF_GGML_F16: memcpy(&h, p, 2); return nf_fp16_to_f32(h);
    default: memcpy(&h, p, 2); return nf_bf16_to_f32(h);
    }
}

bool nf_export_map_exact(uint32_t ggml_type, nf_value_map map, nf_format obj, const void *raw,
                         uint64_t n)
{
    if ((ggml_type != NF_GGML_F32 && ggml_type != NF_GGML_F16 && ggml_type != NF_GGML_BF16) ||
        (obj != NF_FMT_FP32 && obj != NF_FMT_BF16))
        return false;
    unsigned eb = ggml_type == NF_GGML_F32 ? 4 : 2;
    const unsigned char *p = raw;
    unsigned char back[4];
    for (uint64_t i = 0; i < n; i++) {
        float v = ggml_float(ggml_type, p + i * eb);
        /* the importer's map (nf_values), rounded to the object's format */
        v = map == NF_VMAP_MINUS_ONE ? v - 1.0f
          : map == NF_VMAP_LOG_NEG ? (float)log(-(double)v) : v;
        if (obj == NF_FMT_BF16)
            v = nf_bf16_to_f32(nf_f32_to_bf16(v));
        nf_export_unmap(map, &v, 1);
        nf_export_to_ggml_float(ggml_type, &v, 1, back);
        if (memcmp(back, p + i * eb, eb) != 0)
            return false;
    }
    return true;
}
