/* t_cudamath.c — the host-checkable half of the CUDA kernels: everything in
 * cuda/nf_kindex.h (the decoders, NaN rules, nvfp4 swizzle split, chunk
 * addressing, word decoders, chunk dots, the launch plan and the emulated
 * GEMV schedule) checked on the CPU against nf_codec / nf_gemv_ref, with no
 * GPU. The device kernels call these same functions; tests/gpu/t_device.c
 * then checks the device against them bit for bit. */
#include "nf_codec.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_test.h"
#include "../../cuda/nf_kindex.h"

#include <math.h>
#include <stdlib.h>

static uint64_t rs = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}
static uint32_t r32(void) { return (uint32_t)(rnd() >> 16); }

static int same_bits(float a, float b) { return nf_k_bits(a) == nf_k_bits(b); }

/* ---- scalar decoders ---- */
static void t_decoders(void)
{
    unsigned bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        bad += !same_bits(nf_k_fp16(h), nf_fp16_to_f32((uint16_t)h));
        bad += !same_bits(nf_k_bf16(h), nf_bf16_to_f32((uint16_t)h));
    }
    CHECK(bad == 0, "fp16 and bf16 decode match nf_fp.h for all 65536 codes (%u bad)", bad);
    bad = 0;
    for (uint32_t c = 0; c < 256; c++)
        bad += !same_bits(nf_k_e4m3(c), nf_e4m3_to_f32((uint8_t)c));
    CHECK(bad == 0, "e4m3 decode matches nf_fp.h for all 256 codes");
    bad = 0;
    for (uint32_t c = 0; c < 16; c++)
        bad += !same_bits(nf_k_e2m1(c), nf_e2m1_to_f32((uint8_t)c));
    CHECK(bad == 0, "e2m1 arithmetic decode matches the table for all 16 codes");
    bad = 0;
    for (unsigned i = 0; i < 2000000; i++) {
        uint32_t u = i < 1000 ? (i < 500 ? 0x7f800000u + i : 0xff7fff00u + i) : r32();
        float f = nf_k_float(u);
        bad += nf_k_to_bf16(f) != nf_f32_to_bf16(f);
    }
    CHECK(bad == 0, "f32 -> bf16 (RNE, NaN rule) matches nf_f32_to_bf16 on 2M patterns");
}

/* ---- the x86 NaN rule of nf_k_mul / nf_k_div ---- */
static float pick_special(void)
{
    static const uint32_t sp[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff812345u,
                                  0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,
                                  0x3f800000u, 0x00000001u, 0x7f7fffffu, 0xc0490fdbu};
    uint32_t r = r32();
    return (r & 3) ? nf_k_float(r32()) : nf_k_float(sp[(r >> 2) % (sizeof sp / sizeof *sp)]);
}
static void t_nan_rule(void)
{
#if defined(__x86_64__)
    unsigned bad = 0;
    for (unsigned i = 0; i < 500000; i++) {
        volatile float a = pick_special(), b = pick_special();
        volatile float m = a * b, d = a / b;
        bad += !same_bits(nf_k_mul(a, b), m) || !same_bits(nf_k_div(a, b), d);
    }
    CHECK(bad == 0, "nf_k_mul/nf_k_div give the x86 results, NaNs included (%u bad)", bad);
#else
    SKIP("not x86", "nf_k_mul/nf_k_div NaN rule against the native FPU");
#endif
}

/* ---- nvfp4 swizzle ---- */
static void t_swizzle(void)
{
    CHECK_EQ_U64(nf_nvfp4_scale_index(5, 2, 128), 82, "DESIGN 8 vector (5,2) K=128 -> 82");
    CHECK_EQ_U64(nf_nvfp4_scale_index(5, 5, 128), 593, "DESIGN 8 vector (5,5) K=128 -> 593");
    unsigned bad = 0, badpair = 0;
    static const uint64_t Ks[] = {64, 128, 192, 4160, 5120};
    for (unsigned ki = 0; ki < 5; ki++) {
        uint64_t K = Ks[ki];
        for (uint64_t n = 0; n < 512; n++)
            for (uint64_t c = 0; c < K / 16; c++) {
                /* DESIGN 8's formula, written out */
                uint64_t want = ((n / 128) * (K / 64) + c / 4) * 512 + (n % 32) * 16 +
                                ((n % 128) / 32) * 4 + c % 4;
                bad += nf_nvfp4_scale_row_part(n, K) + nf_nvfp4_scale_col_part(c) != want ||
                       nf_nvfp4_scale_index(n, c, K) != want;
                if (c % 2 == 0)
                    badpair += nf_nvfp4_scale_index(n, c + 1, K) != nf_nvfp4_scale_index(n, c, K) + 1;
            }
    }
    CHECK(bad == 0, "row part + column part == nf_nvfp4_scale_index == DESIGN 8 (n < 512, 5 K values)");
    CHECK(badpair == 0, "blocks 2j and 2j+1 of a chunk are adjacent bytes (one 16-bit load)");
    /* the tile covers the plane exactly once */
    uint64_t N = 256, K = 192;
    unsigned char *seen = calloc(N * K / 16, 1);
    unsigned dup = 0, out = 0;
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t c = 0; c < K / 16; c++) {
            uint64_t i = nf_nvfp4_scale_index(n, c, K);
            if (i >= N * K / 16)
                out++;
            else
                dup += seen[i]++ != 0;
        }
    CHECK(dup == 0 && out == 0, "256x192: every block scale index in the plane, none twice");
    free(seen);
}

/* ---- word decoders against the DESIGN 7 code values ---- */
static int code_q(int bits, uint32_t raw) /* two's complement */
{
    int half = 1 << (bits - 1);
    return (int)(raw ^ (uint32_t)half) - half;
}

static void t_words(void)
{
    unsigned bad = 0;
    for (unsigned i = 0; i < 200000; i++) {
        uint32_t w = i < 65536 ? i * 0x10001u : r32();
        float v[16];
        nf_k_q4_word(w, v);
        for (int p = 0; p < 8; p++)
            bad += v[p] != (float)code_q(4, (w >> (4 * p)) & 15) * (float)(1u << (4 * (p & 3)));
        nf_k_q8_word(w, v);
        for (int q = 0; q < 4; q++)
            bad += v[q] != (float)(int8_t)(w >> (8 * q)) * ((q & 1) ? 256.0f : 1.0f);
        nf_k_2bit_word(w, 0, v);
        for (int p = 0; p < 16; p++)
            bad += v[p] != (float)((int)((w >> (2 * p)) & 3) - 1) * (float)(1u << (2 * (p & 7)));
        nf_k_2bit_word(w, 1, v);
        for (int p = 0; p < 16; p++)
            bad += v[p] != (float)code_q(2, (w >> (2 * p)) & 3) * (float)(1u << (2 * (p & 7)));
        nf_k_nvfp4_word(w, v);
        for (int p = 0; p < 8; p++)
            bad += !same_bits(v[p] * 0x1p14f, nf_e2m1_to_f32((uint8_t)((w >> (4 * p)) & 15)));
    }
    CHECK(bad == 0, "q4, q8, q2, t2, nvfp4 word decoders: exact codes times their class (%u bad)",
          bad);
    bad = 0;
    for (unsigned i = 0; i < 64; i++) {
        uint32_t w = i < 2 ? (i ? 0xffffffffu : 0u) : r32();
        for (uint32_t hb = 0; hb < 256; hb++) {
            float v[8];
            nf_k_q5_word(w, hb, v);
            for (int p = 0; p < 8; p++) {
                uint32_t raw = ((w >> (4 * p)) & 15) | ((hb >> p) & 1) << 4;
                bad += v[p] != (float)code_q(5, raw) * (((p >> 1) & 1) ? 256.0f : 1.0f);
            }
        }
    }
    for (unsigned i = 0; i < 8; i++) {
        uint32_t w = i < 2 ? (i ? 0xffffffffu : 0u) : r32();
        for (uint32_t hb = 0; hb < 65536; hb++) {
            float v[8];
            nf_k_q6_word(w, hb, v);
            for (int p = 0; p < 8; p++) {
                uint32_t raw = ((w >> (4 * p)) & 15) | ((hb >> (2 * p)) & 3) << 4;
                bad += v[p] != (float)code_q(6, raw) * (((p >> 1) & 1) ? 256.0f : 1.0f);
            }
        }
    }
    CHECK(bad == 0, "q5 (all 256 high bytes) and q6 (all 65536 high words) decoders (%u bad)", bad);
}

/* ---- objects ---- */
static const nf_format all_fmts[] = {
    NF_FMT_BF16, NF_FMT_FP32, NF_FMT_INT32, NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16,
    NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16,
    NF_FMT_NVFP4, NF_FMT_FP8_E4M3FN_ROW_BF16};
#define NFMT (sizeof all_fmts / sizeof *all_fmts)

typedef struct {
    nf_tensor_enc t;
    nf_kgeom g;
    uint8_t *obj;
} tobj;

/* a finite random value of moderate size, as bits of the given width */
static uint16_t fin16(int bf16)
{
    for (;;) {
        uint16_t h = (uint16_t)r32();
        float f = bf16 ? nf_bf16_to_f32(h) : nf_fp16_to_f32(h);
        if (isfinite(f) && fabsf(f) < 64 && (f == 0 || fabsf(f) > 1e-6f))
            return h;
    }
}

/* Random bytes everywhere (every code pattern, padding included); with
 * `valid`, scales/divisors/fp8 codes/contiguous values made finite. */
static int mkobj(tobj *o, nf_format f, uint64_t N, uint64_t K, uint64_t div, int valid)
{
    uint64_t d[2] = {N, K};
    if (nf_tensor_enc_init(&o->t, f, nf_format_default_layout(f), d, 2, div, NULL) != NF_ENC_OK)
        return -1;
    if (nf_kgeom_init(&o->g, f, o->t.layout, o->t.rows, o->t.cols, div, &o->t.enc))
        return -1;
    uint64_t eb = o->t.enc.encoded_bytes;
    o->obj = malloc(eb);
    for (uint64_t i = 0; i < eb; i++)
        o->obj[i] = (uint8_t)r32();
    if (!valid)
        return 0;
    const nf_plane *p = o->t.enc.plane;
    uint64_t el = N * K;
    switch (f) {
    case NF_FMT_BF16:
        for (uint64_t e = 0; e < el; e++) {
            uint16_t h = fin16(1);
            memcpy(o->obj + 2 * e, &h, 2);
        }
        break;
    case NF_FMT_FP32:
        for (uint64_t e = 0; e < el; e++) {
            float v = (float)((int32_t)r32() % 100000) * 1e-4f;
            memcpy(o->obj + 4 * e, &v, 4);
        }
        break;
    case NF_FMT_INT32:
        for (uint64_t e = 0; e < el; e++) {
            int32_t v = (int32_t)r32() >> (r32() % 24); /* big ones round */
            memcpy(o->obj + 4 * e, &v, 4);
        }
        break;
    case NF_FMT_NVFP4:
        for (uint64_t i = 0; i < p[1].bytes; i++)
            if (nf_e4m3_is_nan(o->obj[p[1].offset + i]))
                o->obj[p[1].offset + i] = 0x38;
        for (uint64_t i = 0; i < div; i++) {
            float w = 0.25f + (float)(r32() % 1000) / 100.0f;
            memcpy(o->obj + p[2].offset + 4 * i, &w, 4);
        }
        break;
    case NF_FMT_FP8_E4M3FN_ROW_BF16:
        for (uint64_t i = 0; i < el; i++)
            if (nf_e4m3_is_nan(o->obj[i]))
                o->obj[i] = 0x7e;
        for (uint64_t n = 0; n < N; n++) {
            uint16_t h = fin16(1);
            memcpy(o->obj + p[1].offset + 2 * n, &h, 2);
        }
        break;
    default: { /* row_split: finite scales, including in the padding */
        const nf_plane *sp = &p[o->t.enc.nplanes - 1];
        for (uint64_t i = 0; i < sp->bytes / 2; i++) {
            uint16_t h = fin16(0);
            memcpy(o->obj + sp->offset + 2 * i, &h, 2);
        }
        break;
    }
    }
    return 0;
}

static void rand_x(uint16_t *x, float *xf, uint64_t K, uint64_t padded)
{
    for (uint64_t k = 0; k < K; k++) {
        x[k] = fin16(1);
        xf[k] = nf_bf16_to_f32(x[k]);
    }
    for (uint64_t k = K; k < padded; k++)
        xf[k] = 0;
}

/* ---- geometry, element decode and chunk decode against nf_codec ---- */
static void t_decode_paths(void)
{
    static const uint64_t shapes[][2] = {{3, 200}, {5, 129}, {2, 4100}, {1, 1}, {4, 128}};
    nf_codec_set_isa(NF_ISA_SCALAR);
    for (unsigned fi = 0; fi < NFMT; fi++) {
        nf_format f = all_fmts[fi];
        unsigned bad_e = 0, bad_c = 0, cases = 0;
        for (unsigned si = 0; si < 7; si++) {
            uint64_t N, K, div = 1;
            if (f == NF_FMT_NVFP4) {
                static const uint64_t nv[][3] = {{128, 64, 1}, {256, 192, 2}, {384, 320, 3},
                                                 {128, 4160, 1}, {256, 128, 4}, {128, 128, 1},
                                                 {384, 64, 1}};
                N = nv[si][0], K = nv[si][1], div = nv[si][2];
            } else {
                if (si >= 5)
                    continue;
                N = shapes[si][0], K = shapes[si][1];
            }
            tobj o;
            if (mkobj(&o, f, N, K, div, 0)) {
                CHECK(0, "%s %llux%llu: object", nf_format_name(f), (unsigned long long)N,
                      (unsigned long long)K);
                continue;
            }
            cases++;
            uint64_t el = N * K;
            float *ref = malloc(el * sizeof *ref);
            uint16_t *refb = malloc(el * sizeof *refb);
            nf_decode_rows_f32(&o.t, o.obj, o.t.enc.encoded_bytes, 0, N, ref);
            nf_decode_rows_bf16(&o.t, o.obj, o.t.enc.encoded_bytes, 0, N, refb);
            for (uint64_t n = 0; n < N; n++)
                for (uint64_t k = 0; k < K; k++)
                    bad_e += !same_bits(nf_k_elem(o.obj, &o.g, n, k), ref[n * K + k]);
            /* the decode kernel's chunk path (row formats with aligned rows) */
            if (o.t.layout != NF_LAY_CONTIGUOUS_LE_V1 && o.g.vec) {
                for (uint64_t n = 0; n < N; n++)
                    for (uint64_t j = 0; j < o.g.nch; j++) {
                        float v[64];
                        nf_kraw raw = nf_k_load_host(o.obj, &o.g, n, j);
                        nf_k_decode_chunk(f, &raw, nf_k_rscale(o.obj, &o.g, n), v);
                        for (uint64_t i = 0; i < o.g.C && j * o.g.C + i < K; i++)
                            bad_c += nf_k_to_bf16(v[i]) != refb[n * K + j * o.g.C + i];
                    }
            }
            free(ref);
            free(refb);
            free(o.obj);
        }
        CHECK(bad_e == 0 && bad_c == 0 && cases > 0,
              "%s: element and chunk decode == nf_codec bit for bit on random bytes, NaNs "
              "included (%u / %u bad)",
              nf_format_name(f), bad_e, bad_c);
    }
    nf_codec_set_isa(NF_ISA_AUTO);
}

/* ---- geometry: plane strides and chunk addressing ---- */
static void t_geometry(void)
{
    unsigned bad = 0;
    for (unsigned fi = 0; fi < NFMT; fi++) {
        nf_format f = all_fmts[fi];
        for (uint64_t K = 1; K <= 700; K += 37) {
            uint64_t N = f == NF_FMT_NVFP4 ? 128 : 3, KK = f == NF_FMT_NVFP4 ? 64 * (K / 64 + 1) : K;
            uint64_t d[2] = {N, KK};
            nf_tensor_enc t;
            nf_kgeom g;
            if (nf_tensor_enc_init(&t, f, nf_format_default_layout(f), d, 2, 1, NULL) ||
                nf_kgeom_init(&g, f, t.layout, N, KK, 1, &t.enc)) {
                bad++;
                continue;
            }
            /* the last chunk holds column K-1; each chunk's 16 bytes and
             * high bits lie inside their row */
            bad += g.nch * g.C < KK || (g.nch - 1) * g.C >= KK;
            if (g.vec)
                bad += (g.o_codes + g.rb_codes) % 16 != 0 ||
                       nf_k_chunk_codes(g.nch - 1) + 16 > g.rb_codes;
            if (g.high_bits)
                bad += nf_k_chunk_high(&g, g.nch - 1) + g.C * g.high_bits / 8 > g.rb_high ||
                       g.rb_high % 16 != 0 || g.o_high % 16 != 0;
            if (g.G)
                bad += 2 * nf_k_chunk_group(&g, g.nch - 1) + 2 > g.rb_scale ||
                       g.G % g.C != 0;
            if (f == NF_FMT_FP8_E4M3FN_ROW_BF16)
                bad += g.vec != (KK % 16 == 0);
            if (f == NF_FMT_BF16)
                bad += g.vec != (KK % 8 == 0);
        }
    }
    CHECK(bad == 0, "chunks cover K and stay inside their plane rows; vec iff rows 16-aligned");
}

/* ---- the launch plan ---- */
static void t_plan(void)
{
    unsigned bad = 0, n = 0;
    static const uint64_t Ns[] = {1, 2, 3, 7, 129, 300, 4096, 5120, 14336, 27648};
    static const uint64_t Ks[] = {64, 200, 1000, 4096, 4160, 5120, 17408};
    for (unsigned fi = 0; fi < NFMT; fi++)
        for (unsigned a = 0; a < 10; a++)
            for (unsigned b = 0; b < 7; b++)
                for (unsigned fr = 0; fr <= 4; fr++)
                    for (unsigned fw = 0; fw <= 8; fw = fw ? 2 * fw : 1) {
                        nf_format f = all_fmts[fi];
                        uint64_t N = f == NF_FMT_NVFP4 ? 128 * Ns[a] : Ns[a], K = Ks[b];
                        if (f == NF_FMT_NVFP4 && K % 64)
                            continue;
                        uint64_t d[2] = {N, K};
                        nf_tensor_enc t;
                        nf_kgeom g;
                        if (nf_tensor_enc_init(&t, f, nf_format_default_layout(f), d, 2, 1, NULL) ||
                            nf_kgeom_init(&g, f, t.layout, N, K, 1, &t.enc)) {
                            bad++;
                            continue;
                        }
                        uint64_t rows = N - N / 3; /* a row range */
                        nf_kplan p = nf_k_gemv_plan(&g, rows, fr, fw, 0);
                        n++;
                        bad += p.threads != 32 * p.W * p.gpb || p.threads > 256 || !p.threads ||
                               p.threads % 32;
                        bad += p.groups * p.R < rows || (p.groups - 1) * p.R >= rows;
                        bad += p.blocks * p.gpb < p.groups || (p.blocks - 1) * p.gpb >= p.groups;
                        bad += p.blocks > 0x7fffffffull;
                        bad += !p.scalar && (p.R != 1 && p.R != 2 && p.R != 4);
                        bad += !p.scalar && (p.W & (p.W - 1));
                        bad += p.scalar != !g.vec;
                        if (!fw && !p.scalar && p.W > 1)
                            bad += g.nch <= 32ull * (p.W / 2); /* no warp left idle */
                    }
    CHECK(bad == 0, "launch plans: %u cases, sizes cover the rows exactly, <= 256 threads", n);
}

/* ---- the kernel's thread roles cover every (row, chunk) once ---- */
static void t_roles(void)
{
    static const uint64_t Ns[] = {1, 3, 7, 129, 300};
    static const uint64_t nchs[] = {1, 5, 33, 160, 641};
    unsigned bad = 0, cases = 0;
    for (unsigned a = 0; a < 5; a++)
        for (unsigned b = 0; b < 5; b++)
            for (unsigned R = 1; R <= 4; R *= 2)
                for (unsigned W = 1; W <= 8; W *= 2) {
                    nf_kgeom g;
                    memset(&g, 0, sizeof g);
                    g.vec = 1;
                    g.nch = nchs[b];
                    uint64_t nrows = Ns[a];
                    nf_kplan p = nf_k_gemv_plan(&g, nrows, R, W, 0);
                    unsigned char *seen = calloc(nrows * g.nch, 1), *wrote = calloc(nrows, 1);
                    for (uint64_t blk = 0; blk < p.blocks; blk++)
                        for (uint32_t tid = 0; tid < p.threads; tid++) {
                            uint32_t lane, warp, sub;
                            uint64_t first;
                            nf_k_role(p.W, p.R, p.threads, blk, tid, &lane, &warp, &sub, &first);
                            bad += warp >= 8; /* the kernel's red[8][R] */
                            for (uint32_t r = 0; r < p.R; r++) {
                                uint64_t i = first + r;
                                if (i >= nrows)
                                    continue;
                                if (sub == 0 && lane == 0)
                                    wrote[i]++;
                                for (uint64_t j = sub * 32ull + lane; j < g.nch; j += 32ull * p.W)
                                    seen[i * g.nch + j]++;
                            }
                            /* the group's warps are warp - sub .. warp - sub + W - 1 */
                            bad += warp - sub + p.W > p.threads / 32;
                        }
                    for (uint64_t i = 0; i < nrows * g.nch; i++)
                        bad += seen[i] != 1;
                    for (uint64_t i = 0; i < nrows; i++)
                        bad += wrote[i] != 1;
                    free(seen);
                    free(wrote);
                    cases++;
                }
    CHECK(bad == 0, "kernel thread roles: every (row, chunk) read once, every row written once "
          "(%u plans)", cases);
}

/* ---- the emulated GEMV schedule against nf_gemv_ref ---- */

/* |y - ref| <= D * 2^-24 * sum|w x| + 2^-24 |ref| + 2^-140 per row, D the
 * summation depth: C per chunk + chunks per lane + 5 shuffle levels + 8
 * warps + scale/class steps, or K/32 + 5 for the per-element kernel; one
 * more unit for nvfp4's rounded quotient. */
static int check_rows(const tobj *o, const float *y, const float *ref, const float *xf,
                      uint64_t n0, uint64_t nrows, double *worst)
{
    uint64_t K = o->t.cols;
    float *row = malloc(K * sizeof *row);
    double D = (double)o->g.C + (double)(o->g.nch + 31) / 32 + (double)(K + 31) / 32 + 24;
    int bad = 0;
    for (uint64_t i = 0; i < nrows; i++) {
        nf_decode_rows_f32(&o->t, o->obj, o->t.enc.encoded_bytes, n0 + i, n0 + i + 1, row);
        double mag = 0;
        for (uint64_t k = 0; k < K; k++)
            mag += fabs((double)row[k] * xf[k]);
        double err = fabs((double)y[i] - ref[i]);
        double tol = D * 0x1p-24 * mag + 0x1p-24 * fabs(ref[i]) + 0x1p-140;
        if (!(err <= tol)) {
            if (!bad)
                printf("#   row %llu: got %.9g want %.9g (err %.3g > tol %.3g)\n",
                       (unsigned long long)(n0 + i), y[i], ref[i], err, tol);
            bad++;
        }
        if (mag > 0 && err / (0x1p-24 * mag) > *worst)
            *worst = err / (0x1p-24 * mag);
    }
    free(row);
    return bad;
}

static void t_emulated_gemv(void)
{
    for (unsigned fi = 0; fi < NFMT; fi++) {
        nf_format f = all_fmts[fi];
        static const uint64_t sh[][3] = {{300, 200, 1}, {129, 1000, 1}, {7, 4100, 1},
                                         {33, 77, 1},   {9, 4096, 1},   {3, 160, 1}};
        static const uint64_t shn[][3] = {{256, 192, 2}, {384, 4160, 3}, {128, 64, 1}, {128, 128, 1}};
        unsigned bad = 0, cases = 0;
        double worst = 0;
        for (unsigned si = 0; si < 6; si++) {
            if (f == NF_FMT_NVFP4 && si >= 4)
                continue;
            const uint64_t *s = f == NF_FMT_NVFP4 ? shn[si] : sh[si];
            tobj o;
            if (mkobj(&o, f, s[0], s[1], s[2], 1)) {
                bad++;
                continue;
            }
            uint64_t N = s[0], K = s[1], pad = o.g.nch * o.g.C;
            uint16_t *x = malloc(K * 2);
            float *xf = malloc(pad * 4), *y = malloc(N * 4), *ref = malloc(N * 4);
            rand_x(x, xf, K, pad);
            nf_gemv_ref(&o.t, o.obj, o.t.enc.encoded_bytes, x, ref);
            for (unsigned v = 0; v < 6; v++) {
                /* default plan, R = 1/4, W = 1/8, the per-element kernel */
                static const unsigned fr[] = {0, 1, 4, 2, 2, 0}, fw[] = {0, 0, 0, 1, 8, 0};
                nf_kplan p = nf_k_gemv_plan(&o.g, N, fr[v], fw[v], v == 5);
                /* rows [r0, N) too: row ranges offset every address */
                uint64_t r0 = (v & 1) ? N / 3 : 0;
                nf_k_gemv_emulate(o.obj, &o.g, &p, r0, N - r0, xf, y);
                bad += check_rows(&o, y, ref + r0, xf, r0, N - r0, &worst);
                cases++;
            }
            free(x);
            free(xf);
            free(y);
            free(ref);
            free(o.obj);
        }
        CHECK(bad == 0, "%s: emulated device GEMV within the bound of nf_gemv_ref "
              "(%u plans; worst %.1f units of 2^-24 sum|wx|)", nf_format_name(f), cases, worst);
    }
}

int main(void)
{
    t_decoders();
    t_nan_rule();
    t_swizzle();
    t_words();
    t_geometry();
    t_decode_paths();
    t_plan();
    t_roles();
    t_emulated_gemv();
    return nf_test_done();
}
