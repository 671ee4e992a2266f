/* t_cudamath_gguf.c — the host-checkable half of the CUDA kernels of the
 * gguf_* formats (cuda/nf_kindex_gguf.h), with no GPU: the device's element
 * decoder against the CPU reference nf_gguf_elem bit for bit (NaN results
 * included, on blocks with NaN and infinite scales), the geometry and the
 * launch plan of gguf_rows_v1 objects, the per-element decode to bf16 the
 * flat kernel performs against nf_decode_rows_bf16, and the emulated GEMV
 * schedules (unit kernel and per-element kernel) against nf_gemv_ref within
 * the bounds nf_kindex_gguf.h and nf_kernels.cuh state. t_device then
 * checks the device against the same emulation bit for bit. */
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_test.h"
#include "../../cuda/nf_kindex.h"

#include <math.h>
#include <stdlib.h>

static uint64_t rs = 0x13198a2e03707344ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static const nf_format ALL[] = {
    NF_FMT_GGUF_F16,  NF_FMT_GGUF_Q8_0,   NF_FMT_GGUF_Q4_0,  NF_FMT_GGUF_Q4_1, NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q5_1, NF_FMT_GGUF_IQ4_NL, NF_FMT_GGUF_MXFP4, NF_FMT_GGUF_Q2_K, NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K, NF_FMT_GGUF_Q5_K,   NF_FMT_GGUF_Q6_K,  NF_FMT_GGUF_IQ4_XS,
};
#define NFMT (sizeof ALL / sizeof *ALL)

static const uint16_t SPECIAL[] = {0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfe03, 0x0000, 0x8000,
                                   0x0001, 0x7bff, 0x3c00};

/* blocks of random bytes whose f16 fields are often special */
static void hostile(nf_format f, uint8_t *p, uint64_t nb)
{
    nf_gguf_info gi = nf_gguf_info_of(f);
    for (uint64_t i = 0; i < nb * gi.block_bytes; i++)
        p[i] = (uint8_t)rnd();
    for (uint64_t i = 0; i < nb && gi.qk > 1; i++) {
        uint8_t *b = p + i * gi.block_bytes;
        for (unsigned o = 0; o + 1 < gi.block_bytes; o += 2)
            if (rnd() % 4 == 0) {
                uint16_t h = SPECIAL[rnd() % (sizeof SPECIAL / sizeof *SPECIAL)];
                b[o] = (uint8_t)h;
                b[o + 1] = (uint8_t)(h >> 8);
            }
    }
}

static void elems(void)
{
    for (size_t fi = 0; fi < NFMT; fi++) {
        nf_format f = ALL[fi];
        nf_gguf_info gi = nf_gguf_info_of(f);
        CHECK(nf_kg_is_gguf(f) && nf_kg_qk(f) == gi.qk && nf_kg_bytes(f) == gi.block_bytes,
              "%s: device block geometry %u/%u", nf_format_name(f), nf_kg_qk(f), nf_kg_bytes(f));
        uint64_t nb = gi.qk == 1 ? 65536 : 400;
        uint8_t *p = malloc(nb * gi.block_bytes);
        if (gi.qk == 1)
            for (unsigned h = 0; h < 65536; h++) {
                p[2 * h] = (uint8_t)h;
                p[2 * h + 1] = (uint8_t)(h >> 8);
            }
        else
            hostile(f, p, nb);
        uint64_t bad = 0, nan_only = 0;
        for (uint64_t i = 0; i < nb; i++)
            for (unsigned e = 0; e < gi.qk; e++) {
                const uint8_t *b = p + i * gi.block_bytes;
                float a = nf_kg_elem(f, b, e), r = nf_gguf_elem(f, b, e);
                if (nf_k_bits(a) != nf_k_bits(r)) {
                    if (isnan(a) && isnan(r))
                        nan_only++;
                    else if (!bad++)
                        printf("#   block %llu elem %u: 0x%08x want 0x%08x\n",
                               (unsigned long long)i, e, nf_k_bits(a), nf_k_bits(r));
                }
            }
        uint64_t ubad = 0;
        for (uint64_t i = 0; gi.qk > 1 && i < nb; i++)
            for (unsigned sub = 0; sub < gi.qk / 32; sub++) {
                float v[32];
                const uint8_t *b = p + i * gi.block_bytes;
                nf_kg_unit(f, b, sub, v);
                for (unsigned q = 0; q < 32; q++)
                    ubad += nf_k_bits(v[q]) != nf_k_bits(nf_gguf_elem(f, b, 32 * sub + q));
            }
        CHECK(ubad == 0, "%s: nf_kg_unit (scales once per unit) equals nf_gguf_elem bit for bit "
              "(%llu differ)", nf_format_name(f), (unsigned long long)ubad);
        CHECK(bad == 0 && nan_only == 0,
              "%s: nf_kg_elem equals nf_gguf_elem bit for bit on %llu hostile blocks "
              "(%llu differ, %llu only in the NaN payload)",
              nf_format_name(f), (unsigned long long)nb, (unsigned long long)bad,
              (unsigned long long)nan_only);
        uint64_t g = 0;
        for (uint32_t n = 0; n < 16; n++)
            g += nf_kg_kv_iq4nl(n) != (int32_t[]){-127, -104, -83, -65, -49, -35, -22, -10,
                                                  1, 13, 25, 38, 53, 69, 89, 113}[n];
        if (fi == 0)
            CHECK(g == 0, "kvalues_iq4nl by switch");
        free(p);
    }
}

typedef struct {
    nf_tensor_enc t;
    nf_kgeom g;
    uint8_t *obj;
} tobj;

static int mk(tobj *o, nf_format f, uint64_t N, uint64_t K, bool valid)
{
    uint64_t d[2] = {N, K};
    if (nf_tensor_enc_init(&o->t, f, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL))
        return -1;
    if (nf_kgeom_init(&o->g, f, NF_LAY_GGUF_ROWS_V1, N, K, 1, &o->t.enc))
        return -1;
    nf_gguf_info gi = nf_gguf_info_of(f);
    o->obj = malloc(o->t.enc.encoded_bytes);
    if (valid)
        nf_gguf_random_blocks(f, rnd(), o->obj, N * K / gi.qk);
    else
        hostile(f, o->obj, N * K / gi.qk);
    return 0;
}

static void geometry(void)
{
    for (size_t fi = 0; fi < NFMT; fi++) {
        nf_format f = ALL[fi];
        nf_gguf_info gi = nf_gguf_info_of(f);
        uint64_t K = gi.qk == 1 ? 77 : 3 * gi.qk;
        tobj o;
        CHECK(mk(&o, f, 5, K, true) == 0, "%s [5,%llu]: geometry", nf_format_name(f),
              (unsigned long long)K);
        CHECK(o.g.gq == gi.qk && o.g.gb == gi.block_bytes && o.g.C == 32 && o.g.vec == 0 &&
                  o.g.nch == (K + 31) / 32 && o.g.rb_codes == K / gi.qk * gi.block_bytes &&
                  o.g.o_codes == 0 && o.g.esize == 0,
              "%s: gq %u gb %u C 32, %llu units of 32 columns, row stride %llu", nf_format_name(f),
              o.g.gq, o.g.gb, (unsigned long long)o.g.nch, (unsigned long long)o.g.rb_codes);
        nf_kplan p = nf_k_gemv_plan(&o.g, 5, 0, 0, 0), ps = nf_k_gemv_plan(&o.g, 5, 0, 0, 1);
        CHECK(p.scalar == 2 && p.threads == 128 && p.blocks == 2 && ps.scalar == 1,
              "%s: the unit plan (one warp per row, 4 rows a block); forced: per-element",
              nf_format_name(f));
        free(o.obj);
    }
    nf_kgeom g;
    nf_tensor_enc t;
    uint64_t d[2] = {2, 256};
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q4_K, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL);
    CHECK(nf_kgeom_init(&g, NF_FMT_GGUF_Q4_K, NF_LAY_ROW_SPLIT_K128_V1, 2, 256, 1, &t.enc) == -1,
          "a gguf format with another layout has no kernel");
}

/* decode to bf16 as the flat kernel does (nf_k_elem per element, then
 * nf_k_to_bf16) against nf_decode_rows_bf16 on the scalar path */
static void decode(void)
{
    nf_codec_set_isa(NF_ISA_SCALAR);
    for (size_t fi = 0; fi < NFMT; fi++) {
        nf_format f = ALL[fi];
        nf_gguf_info gi = nf_gguf_info_of(f);
        for (int valid = 0; valid < 2; valid++) {
            tobj o;
            uint64_t N = 7, K = gi.qk == 1 ? 41 : 2 * gi.qk;
            mk(&o, f, N, K, valid);
            uint16_t *ref = malloc(N * K * 2);
            nf_decode_rows_bf16(&o.t, o.obj, o.t.enc.encoded_bytes, 0, N, ref);
            uint64_t bad = 0;
            for (uint64_t e = 0; e < N * K; e++)
                bad += nf_k_to_bf16(nf_k_elem(o.obj, &o.g, e / K, e % K)) != ref[e];
            CHECK(bad == 0, "%s %s: the flat kernel's decode to bf16 equals nf_decode_rows_bf16 "
                  "(%llu differ)", nf_format_name(f), valid ? "random" : "hostile",
                  (unsigned long long)bad);
            free(ref);
            free(o.obj);
        }
    }
    nf_codec_set_isa(NF_ISA_AUTO);
}

/* the emulated device GEMV (unit and per-element plans) within the bound */
static void gemv(void)
{
    for (size_t fi = 0; fi < NFMT; fi++) {
        nf_format f = ALL[fi];
        nf_gguf_info gi = nf_gguf_info_of(f);
        tobj o;
        uint64_t N = 9, K = gi.qk == 1 ? 1000 : (gi.qk == 32 ? 70 : 9) * gi.qk;
        mk(&o, f, N, K, true);
        uint64_t pad = o.g.nch * o.g.C;
        uint16_t *x = malloc(K * 2);
        float *xf = calloc(pad, 4), *ref = malloc(N * 4), *y = malloc(N * 4), *row = malloc(K * 4);
        for (uint64_t k = 0; k < K; k++) {
            x[k] = nf_f32_to_bf16((float)((int)(rnd() % 2001) - 1000) / 64.0f);
            xf[k] = nf_bf16_to_f32(x[k]);
        }
        nf_gemv_ref(&o.t, o.obj, o.t.enc.encoded_bytes, x, ref);
        for (int forced = 0; forced < 2; forced++) {
            nf_kplan p = nf_k_gemv_plan(&o.g, N, 0, 0, forced);
            nf_k_gemv_emulate(o.obj, &o.g, &p, 0, N, xf, y);
            double D = p.scalar == 2 ? 32.0 * (double)((o.g.nch + 31) / 32) + 5
                                     : (double)((K + 31) / 32) + 5;
            uint64_t out = 0;
            double worst = 0;
            for (uint64_t n = 0; n < N; n++) {
                nf_decode_rows_f32(&o.t, o.obj, o.t.enc.encoded_bytes, n, n + 1, row);
                double mag = 0;
                for (uint64_t k = 0; k < K; k++)
                    mag += fabs((double)row[k] * xf[k]);
                double err = fabs((double)y[n] - ref[n]);
                if (!(err <= D * 0x1p-24 * mag + 0x1p-24 * fabs(ref[n]) + 0x1p-140))
                    out++;
                if (mag > 0 && err / (0x1p-24 * mag) > worst)
                    worst = err / (0x1p-24 * mag);
            }
            CHECK(out == 0, "%s [%llu,%llu]: the emulated %s GEMV is within %.0f u sum|wx| of "
                  "nf_gemv_ref (worst %.1f)", nf_format_name(f), (unsigned long long)N,
                  (unsigned long long)K, p.scalar == 2 ? "unit" : "per-element", D, worst);
        }
        free(x);
        free(xf);
        free(ref);
        free(y);
        free(row);
        free(o.obj);
    }
}

int main(void)
{
    elems();
    geometry();
    decode();
    gemv();
    return nf_test_done();
}
