/* t_codec.c — the codec contract (DESIGN 7, 7.4, 8, 13) through nf_codec.h.
 *
 * Encoded objects are built here byte by byte with writers that follow the
 * DESIGN 8 packing rule directly (not the codec's code), so hand-computed
 * vectors check packing, plane positions and values together. Then:
 * padding, the nvfp4 scale swizzle, divisors, the per-group error bound,
 * the encoder against the absmax baseline, hostile encodings through the
 * validator, and every SIMD path against the scalar reference, bit for bit,
 * on random bytes (every code and scale pattern, NaN scales included). */
#include "nf_codec.h"
#include "nf_qsearch.h"
#include "nf_fp.h"
#include "nf_test.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ---- test-side layout writers (DESIGN 8) ---- */

typedef struct {
    nf_tensor_enc t;
    uint8_t *obj;
} tobj;

static tobj mk(nf_format f, uint64_t n, uint64_t k, uint64_t div)
{
    tobj o;
    uint64_t d[2] = {n, k};
    const char *why = NULL;
    nf_enc_status st = nf_tensor_enc_init(&o.t, f, nf_format_default_layout(f), d, 2, div, &why);
    if (st != NF_ENC_OK) {
        printf("# mk %s [%llu,%llu]: %s\n", nf_format_name(f), (unsigned long long)n,
               (unsigned long long)k, why ? why : "?");
        exit(2);
    }
    o.obj = calloc(1, o.t.enc.encoded_bytes);
    return o;
}

static uint8_t *prow(tobj *o, unsigned p, uint64_t n)
{
    return o->obj + o->t.enc.plane[p].offset + n * o->t.enc.plane[p].row_bytes;
}

/* code k of row n occupies bits [(k*w) % 8, ...) of byte floor(k*w/8) */
static void put_bits(uint8_t *row, uint64_t k, unsigned w, unsigned v)
{
    uint64_t bit = k * w;
    unsigned mask = ((1u << w) - 1) << (bit % 8);
    row[bit / 8] = (uint8_t)((row[bit / 8] & ~mask) | ((v << (bit % 8)) & mask));
}
static unsigned get_bits_t(const uint8_t *row, uint64_t k, unsigned w)
{
    uint64_t bit = k * w;
    return (row[bit / 8] >> (bit % 8)) & ((1u << w) - 1);
}

/* row_split: raw code (base bits low, bits 4.. in the high plane) */
static void rs_put(tobj *o, uint64_t n, uint64_t k, unsigned raw)
{
    nf_rowsplit_info ri = nf_rowsplit_info_of(o->t.format);
    put_bits(prow(o, 0, n), k, ri.base_bits, raw & ((1u << ri.base_bits) - 1));
    if (ri.high_bits)
        put_bits(prow(o, 1, n), k, ri.high_bits, raw >> 4);
}
static unsigned rs_get(tobj *o, uint64_t n, uint64_t k)
{
    nf_rowsplit_info ri = nf_rowsplit_info_of(o->t.format);
    unsigned raw = get_bits_t(prow(o, 0, n), k, ri.base_bits);
    if (ri.high_bits)
        raw |= get_bits_t(prow(o, 1, n), k, ri.high_bits) << 4;
    return raw;
}
static void rs_scale(tobj *o, uint64_t n, uint64_t g, uint16_t bits)
{
    uint8_t *p = prow(o, o->t.enc.nplanes - 1, n) + 2 * g;
    p[0] = (uint8_t)bits;
    p[1] = (uint8_t)(bits >> 8);
}
static uint16_t rs_scale_get(tobj *o, uint64_t n, uint64_t g)
{
    uint8_t *p = prow(o, o->t.enc.nplanes - 1, n) + 2 * g;
    return (uint16_t)(p[0] | p[1] << 8);
}
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
/* DESIGN 8 swizzle, written out independently of the library */
static uint64_t swz(uint64_t n, uint64_t c, uint64_t K)
{
    uint64_t tile = (n / 128) * (K / 64) + c / 4;
    return tile * 512 + (n % 32) * 16 + ((n % 128) / 32) * 4 + c % 4;
}

static float dec1(tobj *o, uint64_t n, uint64_t k)
{
    float v = -12345.0f;
    int rc = nf_decode_elems_f32(&o->t, o->obj, o->t.enc.encoded_bytes,
                                 n * o->t.cols + k, n * o->t.cols + k + 1, &v);
    if (rc)
        printf("# decode error %d\n", rc);
    return v;
}

static bool same(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return nf_f32_bits(a) == nf_f32_bits(b);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double urand(void) { return (double)(rnd() >> 11) * 0x1p-53; }
static float grand(void)
{
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2 * log(u)) * cos(2 * M_PI * v));
}

/* ---- hand-computed vectors ---- */

static void vec_q4(void)
{
    tobj o = mk(NF_FMT_Q4_G64_FP16, 2, 128, 1);
    prow(&o, 0, 0)[0] = 0x87;          /* k0 = 7 (low nibble), k1 = 0x8 = -8 */
    rs_put(&o, 0, 2, 0xf);             /* -1 */
    rs_put(&o, 0, 64, 3);
    rs_put(&o, 1, 5, 5);
    rs_scale(&o, 0, 0, 0x3800);        /* 0.5 */
    rs_scale(&o, 0, 1, 0xc000);        /* -2.0 */
    rs_scale(&o, 1, 0, 0x3c00);        /* 1.0 */
    /* 7*0.5 = 3.5; -8*0.5 = -4; -1*0.5 = -0.5; 3*-2 = -6; row 1: 5*1 = 5 */
    CHECK(dec1(&o, 0, 0) == 3.5f, "q4 (0,0): code 7 * 0.5 = 3.5");
    CHECK(dec1(&o, 0, 1) == -4.0f, "q4 (0,1): high nibble 0x8 = -8 -> -4");
    CHECK(dec1(&o, 0, 2) == -0.5f, "q4 (0,2): 0xf = -1 -> -0.5");
    CHECK(dec1(&o, 0, 64) == -6.0f, "q4 (0,64): 3 * -2.0 = -6");
    CHECK(dec1(&o, 1, 5) == 5.0f, "q4 (1,5): 5 * 1.0");
    CHECK(dec1(&o, 1, 4) == 0.0f, "q4 (1,4): code 0");
    CHECK_EQ_U64(o.t.enc.plane[1].offset, 256, "q4 [2,128]: scales at 256 (base 128 bytes)");
    float row[128];
    nf_decode_rows_f32(&o.t, o.obj, o.t.enc.encoded_bytes, 0, 1, row);
    CHECK(row[0] == 3.5f && row[1] == -4.0f && row[64] == -6.0f && row[65] == -0.0f,
          "q4 whole row 0 agrees");
    free(o.obj);
}

static void vec_q5_q6(void)
{
    tobj o = mk(NF_FMT_Q5_G64_FP16, 1, 128, 1);
    rs_scale(&o, 0, 0, 0x3c00);
    rs_put(&o, 0, 0, 0x1f); /* -1 */
    rs_put(&o, 0, 1, 0x10); /* -16 */
    rs_put(&o, 0, 2, 0x0f); /* 15 */
    rs_put(&o, 0, 9, 0x11); /* -15 */
    CHECK(prow(&o, 1, 0)[0] == 0x03 && prow(&o, 1, 0)[1] == 0x02,
          "q5 high plane: bit k at bit k%%8 of byte k/8");
    CHECK(prow(&o, 0, 0)[0] == 0x0f && prow(&o, 0, 0)[1] == 0x0f,
          "q5 base plane holds the low 4 bits");
    CHECK(dec1(&o, 0, 0) == -1.0f && dec1(&o, 0, 1) == -16.0f && dec1(&o, 0, 2) == 15.0f &&
          dec1(&o, 0, 9) == -15.0f, "q5 codes -1, -16, 15, -15");
    free(o.obj);

    o = mk(NF_FMT_Q6_G64_FP16, 1, 200, 1);
    rs_scale(&o, 0, 0, 0x4000); /* 2.0 */
    rs_scale(&o, 0, 3, 0x3400); /* 0.25 */
    rs_put(&o, 0, 0, 0x20);     /* -32 */
    rs_put(&o, 0, 1, 0x3f);     /* -1 */
    rs_put(&o, 0, 2, 0x1f);     /* 31 */
    rs_put(&o, 0, 3, 0x2a);     /* -22 */
    rs_put(&o, 0, 199, 0x15);   /* 21 */
    /* high bits: k0 10, k1 11, k2 01, k3 10 -> 0b10011110 = 0x9e */
    CHECK(prow(&o, 1, 0)[0] == 0x9e, "q6 high plane: 2 bits per code, LSB first (0x%02x)",
          prow(&o, 1, 0)[0]);
    CHECK(dec1(&o, 0, 0) == -64.0f && dec1(&o, 0, 1) == -2.0f && dec1(&o, 0, 2) == 62.0f &&
          dec1(&o, 0, 3) == -44.0f, "q6 codes -32, -1, 31, -22 times 2");
    CHECK(dec1(&o, 0, 199) == 5.25f, "q6 (0,199): 21 * 0.25 in group 3");
    free(o.obj);
}

static void vec_q8_q2_t2(void)
{
    tobj o = mk(NF_FMT_Q8_G32_FP16, 1, 64, 1);
    rs_scale(&o, 0, 0, 0x3c00);
    rs_scale(&o, 0, 1, 0x3800);
    prow(&o, 0, 0)[0] = 0x7f;  /* 127 */
    prow(&o, 0, 0)[1] = 0x81;  /* -127 */
    prow(&o, 0, 0)[2] = 0x80;  /* -128: invalid, decodes by its bits */
    prow(&o, 0, 0)[40] = 0x03; /* 3 * 0.5 */
    CHECK(dec1(&o, 0, 0) == 127.0f && dec1(&o, 0, 1) == -127.0f, "q8 127, -127");
    CHECK(dec1(&o, 0, 2) == -128.0f, "q8 -128 decodes to -128*s (DESIGN 13)");
    CHECK(dec1(&o, 0, 40) == 1.5f, "q8 (0,40): group 1 scale 0.5");
    free(o.obj);

    o = mk(NF_FMT_Q2_G64_FP16, 1, 128, 1);
    rs_scale(&o, 0, 0, 0xbc00); /* -1.0: sign free */
    prow(&o, 0, 0)[0] = 0xe4;   /* u0=0, u1=1, u2=2, u3=3 */
    CHECK(dec1(&o, 0, 0) == 1.0f && dec1(&o, 0, 1) == -0.0f && dec1(&o, 0, 2) == -1.0f &&
          dec1(&o, 0, 3) == -2.0f, "q2 (u-1)*s with s=-1: 1, 0, -1, -2");
    CHECK(signbit(dec1(&o, 0, 1)), "q2 u=1 with negative scale is -0.0 (0 * -1 in FP32)");
    free(o.obj);

    o = mk(NF_FMT_T2_G128_FP16, 1, 256, 1);
    rs_scale(&o, 0, 0, 0x4200); /* 3.0 */
    rs_scale(&o, 0, 1, 0x3c00);
    prow(&o, 0, 0)[0] = 0xe4;   /* 00, 01, 10, 11 */
    prow(&o, 0, 0)[32] = 0x03;  /* k=128: 11 -> -1 in group 1 */
    CHECK(dec1(&o, 0, 0) == 0.0f && dec1(&o, 0, 1) == 3.0f && dec1(&o, 0, 3) == -3.0f,
          "t2 00 -> 0, 01 -> 1, 11 -> -1");
    CHECK(dec1(&o, 0, 2) == -6.0f, "t2 10 (invalid) decodes to -2*s (DESIGN 13)");
    CHECK(dec1(&o, 0, 128) == -1.0f, "t2 (0,128) group 1");
    free(o.obj);
}

static void vec_fp8(void)
{
    tobj o = mk(NF_FMT_FP8_E4M3FN_ROW_BF16, 2, 5, 1);
    uint8_t *c = prow(&o, 0, 0);
    c[0] = 0x38; c[1] = 0x7e; c[2] = 0xb8; c[3] = 0x01; c[4] = 0x7f;
    prow(&o, 0, 1)[2] = 0x40; /* 2.0 */
    uint8_t *r = o.obj + o.t.enc.plane[1].offset;
    put16(r, 0x4000);         /* row 0: 2.0 */
    put16(r + 2, 0x3f00);     /* row 1: 0.5 */
    CHECK_EQ_U64(o.t.enc.plane[1].offset, 256, "fp8 [2,5]: row scales at 256");
    CHECK(dec1(&o, 0, 0) == 2.0f, "fp8 0x38 (1.0) * 2 = 2");
    CHECK(dec1(&o, 0, 1) == 896.0f, "fp8 0x7e (448) * 2 = 896");
    CHECK(dec1(&o, 0, 2) == -2.0f, "fp8 0xb8 (-1) * 2");
    CHECK(dec1(&o, 0, 3) == 0x1p-8f, "fp8 0x01 (2^-9) * 2 = 2^-8");
    CHECK(isnan(dec1(&o, 0, 4)), "fp8 0x7f decodes to NaN");
    CHECK(dec1(&o, 1, 2) == 1.0f, "fp8 row 1: 0x40 (2.0) * 0.5");
    free(o.obj);
}

static void vec_nvfp4(void)
{
    /* swizzle: the DESIGN formula and the numbers of the brief */
    CHECK_EQ_U64(nf_nvfp4_scale_index(5, 2, 128), 82, "swizzle K=128 row 5 block 2 -> 82");
    CHECK_EQ_U64(nf_nvfp4_scale_index(5, 5, 128), 593, "swizzle K=128 row 5 block 5 -> 593");
    CHECK_EQ_U64(nf_nvfp4_scale_index(37, 1, 128), 85, "swizzle (37,1): 5*16 + 1*4 + 1 = 85");
    CHECK_EQ_U64(nf_nvfp4_scale_index(130, 0, 128), 1056, "swizzle (130,0): tile 2 -> 1024 + 2*16");
    CHECK_EQ_U64(nf_nvfp4_scale_index(255, 7, 128), 2047, "swizzle (255,7): last byte");
    {
        /* a bijection onto [0, N*K/16) for N=256, K=192 */
        uint64_t N = 256, K = 192, tot = N * K / 16;
        unsigned char *seen = calloc(1, tot);
        uint64_t bad = 0;
        for (uint64_t n = 0; n < N; n++)
            for (uint64_t c = 0; c < K / 16; c++) {
                uint64_t i = nf_nvfp4_scale_index(n, c, K);
                if (i >= tot || seen[i]++ || i != swz(n, c, K))
                    bad++;
            }
        CHECK(bad == 0, "swizzle is a bijection onto the block-scales plane ([256,192])");
        free(seen);
    }

    tobj o = mk(NF_FMT_NVFP4, 128, 128, 1);
    uint8_t *bs = o.obj + o.t.enc.plane[1].offset;
    put32(o.obj + o.t.enc.plane[2].offset, nf_f32_bits(2.0f)); /* w = 2 */
    bs[82] = 0x38;  /* row 5, block 2: 1.0 */
    bs[593] = 0x40; /* row 5, block 5: 2.0 */
    put_bits(prow(&o, 0, 5), 33, 4, 0x7);  /* 6.0 */
    put_bits(prow(&o, 0, 5), 34, 4, 0xb);  /* -1.5 */
    put_bits(prow(&o, 0, 5), 81, 4, 0x5);  /* 3.0 */
    CHECK(prow(&o, 0, 5)[16] == 0x70 && prow(&o, 0, 5)[17] == 0x0b,
          "nvfp4 codes: even k low nibble (k=33 high nibble of byte 16)");
    /* (6 * 1) / 2 = 3; (-1.5 * 1) / 2 = -0.75; (3 * 2) / 2 = 3 */
    CHECK(dec1(&o, 5, 33) == 3.0f, "nvfp4 (5,33): (6*1.0)/2 = 3 via scale byte 82");
    CHECK(dec1(&o, 5, 34) == -0.75f, "nvfp4 (5,34): (-1.5*1.0)/2");
    CHECK(dec1(&o, 5, 81) == 3.0f, "nvfp4 (5,81): (3*2.0)/2 = 3 via scale byte 593");
    CHECK(dec1(&o, 4, 33) == 0.0f, "nvfp4 (4,33): zero scale");
    free(o.obj);

    /* divisors 2: rows [0,128) use w[0], rows [128,256) use w[1] */
    o = mk(NF_FMT_NVFP4, 256, 64, 2);
    bs = o.obj + o.t.enc.plane[1].offset;
    put32(o.obj + o.t.enc.plane[2].offset, nf_f32_bits(1.0f));
    put32(o.obj + o.t.enc.plane[2].offset + 4, nf_f32_bits(4.0f));
    for (uint64_t n = 127; n <= 128; n++) {
        bs[swz(n, 0, 64)] = 0x48; /* 4.0 */
        put_bits(prow(&o, 0, n), 0, 4, 0x6); /* 4.0 */
    }
    CHECK(dec1(&o, 127, 0) == 16.0f, "nvfp4 divisors 2: row 127 uses w[0]=1 -> 16");
    CHECK(dec1(&o, 128, 0) == 4.0f, "nvfp4 divisors 2: row 128 uses w[1]=4 -> 4");
    CHECK_EQ_U64(o.t.enc.plane[2].bytes, 8, "two divisors: 8 bytes");
    free(o.obj);

    /* (e2m1 * b) / w in that order: b*e2m1 = 6*448 = 2688, / 3 = 896
     * exactly; a FP32 path dividing first would give 6*(448/3) rounded */
    o = mk(NF_FMT_NVFP4, 128, 64, 1);
    o.obj[o.t.enc.plane[1].offset + swz(0, 0, 64)] = 0x7e;
    put_bits(prow(&o, 0, 0), 0, 4, 0x7);
    put32(o.obj + o.t.enc.plane[2].offset, nf_f32_bits(0.1f));
    float want = (6.0f * 448.0f) / 0.1f;
    CHECK(dec1(&o, 0, 0) == want, "nvfp4 computes (e2m1*b)/w in FP32 in that order");
    free(o.obj);
}

static void vec_contig(void)
{
    uint64_t d[2] = {2, 3};
    nf_tensor_enc t;
    nf_tensor_enc_init(&t, NF_FMT_INT32, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, NULL);
    uint8_t b[24];
    int32_t iv[6] = {0, -5, 16777217, INT32_MIN, INT32_MAX, 7};
    for (int i = 0; i < 6; i++)
        put32(b + 4 * i, (uint32_t)iv[i]);
    float f[20];
    CHECK(nf_decode_rows_f32(&t, b, 24, 0, 2, f) == 0, "int32 decode ok");
    CHECK(f[1] == -5.0f && f[2] == 16777216.0f && f[3] == -2147483648.0f &&
          f[4] == 2147483648.0f, "int32 -> (float) RNE: 16777217 -> 16777216, INT32_MAX -> 2^31");
    CHECK(nf_decode_elems_f32(&t, b, 24, 5, 6, f) == 0 && f[0] == 7.0f, "int32 element 5");

    nf_tensor_enc_init(&t, NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d, 0, 1, NULL);
    put16(b, 0xc0a0); /* -5.0 */
    CHECK(nf_decode_elems_f32(&t, b, 2, 0, 1, f) == 0 && f[0] == -5.0f, "bf16 scalar -5");
    CHECK(t.rows == 1 && t.cols == 1, "scalar: one row of one element");
    uint64_t d3[3] = {2, 2, 5};
    nf_tensor_enc_init(&t, NF_FMT_FP32, NF_LAY_CONTIGUOUS_LE_V1, d3, 3, 1, NULL);
    uint8_t fb[80];
    for (int i = 0; i < 20; i++)
        put32(fb + 4 * i, nf_f32_bits((float)i * 0.25f));
    CHECK(t.rows == 2 && t.cols == 10, "fp32 [2,2,5]: 2 rows of 10");
    CHECK(nf_decode_rows_f32(&t, fb, 80, 1, 2, f) == 0 && f[0] == 2.5f && f[5] == 3.75f,
          "fp32 row 1");
    uint16_t h[3];
    CHECK(nf_decode_elems_bf16(&t, fb, 80, 3, 6, h) == 0 && h[0] == nf_f32_to_bf16(0.75f),
          "fp32 -> bf16 output");
}

/* ---- padding ---- */

static float *rand_vals(uint64_t n, double scale)
{
    float *x = malloc(n * sizeof *x);
    for (uint64_t i = 0; i < n; i++)
        x[i] = (float)(grand() * scale);
    return x;
}

static const nf_format QF[6] = {NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16,
                                NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16};

static void padding(void)
{
    uint64_t Ks[3] = {100, 50, 1};
    for (int fi = 0; fi < 6; fi++)
        for (int ki = 0; ki < 3; ki++) {
            nf_format f = QF[fi];
            uint64_t K = Ks[ki], N = 3;
            tobj o = mk(f, N, K, 1);
            memset(o.obj, 0xa5, o.t.enc.encoded_bytes); /* encoder must overwrite all */
            float *x = rand_vals(N * K, 1.0);
            int rc = nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, NULL, NULL);
            nf_rowsplit_info ri = nf_rowsplit_info_of(f);
            uint64_t Kp = 128 * ((K + 127) / 128);
            unsigned zraw = f == NF_FMT_Q2_G64_FP16 ? 1 : 0;
            uint64_t badc = 0, bads = 0;
            for (uint64_t n = 0; n < N; n++) {
                for (uint64_t k = K; k < Kp; k++)
                    badc += rs_get(&o, n, k) != zraw;
                for (uint64_t g = (K + ri.group - 1) / ri.group; g < Kp / ri.group; g++)
                    bads += rs_scale_get(&o, n, g) != 0x0000;
            }
            nf_codec_check ck;
            int nv = nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
            CHECK(rc == 0 && badc == 0 && bads == 0 && nv == 0,
                  "%s [3,%llu]: padding codes are the zero code, padding groups +0.0, "
                  "gaps zero, validates (rc %d, %llu codes, %llu scales, %d rules)",
                  nf_format_name(f), (unsigned long long)K, rc, (unsigned long long)badc,
                  (unsigned long long)bads, nv);
            float *y = malloc(N * K * sizeof *y);
            nf_decode_rows_f32(&o.t, o.obj, o.t.enc.encoded_bytes, 0, N, y);
            double err = 0;
            for (uint64_t i = 0; i < N * K; i++)
                err += fabs((double)x[i] - y[i]);
            CHECK(err / (N * K) < (f == NF_FMT_T2_G128_FP16 || f == NF_FMT_Q2_G64_FP16 ? 0.6 : 0.2),
                  "%s [3,%llu]: decode of K columns is close (mean abs err %.4f)",
                  nf_format_name(f), (unsigned long long)K, err / (N * K));
            free(x);
            free(y);
            free(o.obj);
        }
    /* fp8 with K not a multiple of anything: no padding, row scales after an
     * aligned gap */
    tobj o = mk(NF_FMT_FP8_E4M3FN_ROW_BF16, 3, 100, 1);
    memset(o.obj, 0xa5, o.t.enc.encoded_bytes);
    float *x = rand_vals(300, 3.0);
    nf_codec_check ck;
    CHECK(nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, NULL, NULL) == 0 &&
          nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0,
          "fp8 [3,100]: encoder zeroes the gap, validates");
    free(x);
    free(o.obj);
}

/* ---- encoder: error bound, baseline, DESIGN 7.4 defaults ---- */

static void qr(nf_format f, int *qmin, int *qmax)
{
    switch (f) {
    case NF_FMT_Q2_G64_FP16: *qmin = -1; *qmax = 2; break;
    case NF_FMT_Q4_G64_FP16: *qmin = -8; *qmax = 7; break;
    case NF_FMT_Q5_G64_FP16: *qmin = -16; *qmax = 15; break;
    case NF_FMT_Q6_G64_FP16: *qmin = -32; *qmax = 31; break;
    case NF_FMT_Q8_G32_FP16: *qmin = -127; *qmax = 127; break;
    default: *qmin = -1; *qmax = 1; break;
    }
}
static int sgn_code(nf_format f, unsigned raw)
{
    nf_rowsplit_info ri = nf_rowsplit_info_of(f);
    if (f == NF_FMT_Q2_G64_FP16)
        return (int)raw - 1;
    int half = 1 << (ri.code_bits - 1);
    return (int)(raw ^ (unsigned)half) - half;
}

/* The absmax baseline of DESIGN 7.4, written here from the text: s =
 * fp16(amax/qmax) (q2: fp16(m/2), m the largest-magnitude element), codes
 * nearest-even to x/s, clamped. Returns its squared error. */
static double baseline_err(nf_format f, const float *x, unsigned n)
{
    int qmin, qmax;
    qr(f, &qmin, &qmax);
    float amax = 0, m = 0;
    for (unsigned i = 0; i < n; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            m = x[i];
        }
    if (amax == 0)
        return 0;
    float s = nf_fp16_to_f32(nf_f32_to_fp16(f == NF_FMT_Q2_G64_FP16 ? (float)((double)m / 2)
                                                               : (float)((double)amax / qmax)));
    double e = 0;
    for (unsigned i = 0; i < n; i++) {
        double t = (double)x[i] / s, c = rint(t);
        if (c > qmax) c = qmax;
        if (c < qmin) c = qmin;
        double d = (double)x[i] - (double)((float)c * s);
        e += d * d;
    }
    return e;
}

static void encoder_q(void)
{
    const uint64_t N = 16, K = 333; /* odd K: partial groups and padding */
    for (int fi = 0; fi < 6; fi++) {
        nf_format f = QF[fi];
        nf_rowsplit_info ri = nf_rowsplit_info_of(f);
        int qmin, qmax;
        qr(f, &qmin, &qmax);
        float *x = malloc(N * K * sizeof *x);
        for (uint64_t i = 0; i < N * K; i++) {
            double v = grand();
            if (rnd() % 50 == 0)
                v *= 8; /* outliers */
            x[i] = (float)(v * (1 + (i / K) % 4)); /* rows of different scale */
        }
        for (uint64_t k = 0; k < K; k++)
            x[3 * K + k] = 0.0f;                      /* an all-zero row */
        for (uint64_t k = 0; k < K; k++)
            x[4 * K + k] = (float)(-0.25 * (double)(k % 7)); /* negative dominated */
        x[5 * K] = 1e7f; /* FP16 scale overflow: 1e7/qmax and 1e7/|qmin| > 65504 */
        for (uint64_t k = 0; k < K; k++)
            x[6 * K + k] = 1e-6f * (float)(k % 5);    /* subnormal FP16 scales */

        tobj o = mk(f, N, K, 1), ob = mk(f, N, K, 1);
        nf_encode_stats st = {0}, stb = {0};
        nf_encode_opts absmax = NF_ENCODE_OPTS_INIT;
        absmax.absmax_only = true;
        int rc = nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, NULL, &st);
        int rcb = nf_encode_f32(&ob.t, x, ob.obj, ob.t.enc.encoded_bytes, &absmax, &stb);
        float *y = malloc(N * K * sizeof *y), *yb = malloc(N * K * sizeof *y);
        nf_decode_rows_f32(&o.t, o.obj, o.t.enc.encoded_bytes, 0, N, y);
        nf_decode_rows_f32(&ob.t, ob.obj, ob.t.enc.encoded_bytes, 0, N, yb);

        uint64_t bound_bad = 0, in_range = 0, worse = 0, base_mismatch = 0, zero_bad = 0;
        double sse = 0, sse_b = 0, sse_ref = 0;
        for (uint64_t n = 0; n < N; n++)
            for (uint64_t g = 0; g * ri.group < K; g++) {
                uint64_t k0 = g * ri.group;
                unsigned nv = (unsigned)(K - k0 < ri.group ? K - k0 : ri.group);
                const float *xg = x + n * K + k0;
                float s = nf_fp16_to_f32(rs_scale_get(&o, n, g));
                double e = 0, eb = 0;
                bool allzero = true;
                for (unsigned i = 0; i < nv; i++) {
                    double d = (double)xg[i] - y[n * K + k0 + i];
                    double db = (double)xg[i] - yb[n * K + k0 + i];
                    e += d * d;
                    eb += db * db;
                    allzero &= xg[i] == 0.0f;
                    /* |x - c*s| <= |s|/2 for x inside the range of the scale */
                    if (s != 0) {
                        double t = (double)xg[i] / s;
                        if (t >= qmin - 0.5 && t <= qmax + 0.5) {
                            in_range++;
                            int c = sgn_code(f, rs_get(&o, n, k0 + i));
                            if (fabs((double)xg[i] - (double)c * s) > fabs((double)s) / 2)
                                bound_bad++;
                        }
                    }
                }
                if (allzero && rs_scale_get(&o, n, g) != 0x0000)
                    zero_bad++;
                double ref = baseline_err(f, xg, nv);
                if (e > ref * (1 + 1e-12) + 1e-30)
                    worse++;
                if (fabs(eb - ref) > ref * 1e-12 + 1e-30)
                    base_mismatch++;
                sse_ref += e; /* all groups, for stats.sse */
                if (n != 5) { /* the 1e7 outlier row would swamp the totals */
                    sse += e;
                    sse_b += eb;
                }
            }
        const char *nm = nf_format_name(f);
        CHECK(rc == 0 && rcb == 0, "%s: encode ok", nm);
        CHECK(bound_bad == 0 && in_range > N * K / 2,
              "%s: |x - c*s| <= |s|/2 for all %llu in-range values", nm, (unsigned long long)in_range);
        CHECK(worse == 0, "%s: per group never worse than the absmax baseline (%llu worse)", nm,
              (unsigned long long)worse);
        CHECK(base_mismatch == 0, "%s: absmax_only reproduces the DESIGN 7.4 baseline", nm);
        CHECK(sse <= sse_b, "%s: total squared error %.4g <= baseline %.4g (%.1f%% less)", nm, sse,
              sse_b, 100 * (1 - sse / sse_b));
        CHECK(zero_bad == 0, "%s: all-zero groups get scale +0.0", nm);
        CHECK(fabs(st.sse - sse_ref) <= 1e-9 * sse_ref,
              "%s: stats.sse matches the decode (%.6g vs %.6g)", nm, st.sse, sse_ref);
        CHECK(st.elements == N * K, "%s: stats.elements", nm);
        nf_codec_check ck;
        CHECK(nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0,
              "%s: encoder output validates (no q8 -128, no t2 0b10, finite scales)", nm);
        CHECK(rs_scale_get(&o, 5, 0) == 0x7bff || rs_scale_get(&o, 5, 0) == 0xfbff,
              "%s: FP16 scale overflow saturates at 65504 (got 0x%04x)", nm, rs_scale_get(&o, 5, 0));
        /* encoding in pieces gives the same bytes */
        tobj p = mk(f, N, K, 1);
        nf_encode_rows_f32(&p.t, x, 0, 5, p.obj, p.t.enc.encoded_bytes, NULL, NULL);
        nf_encode_rows_f32(&p.t, x + 5 * K, 5, N, p.obj, p.t.enc.encoded_bytes, NULL, NULL);
        CHECK(memcmp(p.obj, o.obj, o.t.enc.encoded_bytes) == 0, "%s: row-range encode in pieces", nm);
        free(p.obj);
        free(x); free(y); free(yb); free(o.obj); free(ob.obj);
    }

    /* q2 baseline sign: the largest magnitude lands on code 3 */
    tobj o = mk(NF_FMT_Q2_G64_FP16, 1, 64, 1);
    float x[64] = {0};
    x[0] = -3.0f; x[1] = 1.5f; x[2] = 0.0f;
    nf_encode_opts ab = NF_ENCODE_OPTS_INIT;
    ab.absmax_only = true;
    nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, &ab, NULL);
    CHECK(rs_scale_get(&o, 0, 0) == 0xbe00 && rs_get(&o, 0, 0) == 3 && rs_get(&o, 0, 1) == 0 &&
          rs_get(&o, 0, 2) == 1, "q2 absmax: s = m/2 = -1.5, -3 -> u=3, 1.5 -> u=0, 0 -> u=1");
    free(o.obj);
}

static void encoder_other(void)
{
    /* fp8: r = bf16(amax/448); codes RNE(x/r) saturating */
    tobj o = mk(NF_FMT_FP8_E4M3FN_ROW_BF16, 3, 40, 1);
    float x[120];
    for (int i = 0; i < 120; i++)
        x[i] = (float)grand() * 10;
    x[7] = 100.0f;
    for (int i = 40; i < 80; i++)
        x[i] = 0.0f;
    nf_encode_stats st = {0};
    CHECK(nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, NULL, &st) == 0, "fp8 encode");
    float amax = 0;
    for (int i = 0; i < 40; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    uint8_t *rp = o.obj + o.t.enc.plane[1].offset;
    uint16_t rb = (uint16_t)(rp[0] | rp[1] << 8);
    float r = nf_bf16_to_f32(rb);
    CHECK(rb == nf_f32_to_bf16(amax / 448.0f), "fp8 row 0: r = bf16(amax/448)");
    bool codes_ok = true, bound_ok = true;
    for (int k = 0; k < 40; k++) {
        uint8_t c = prow(&o, 0, 0)[k];
        codes_ok &= c == nf_f32_to_e4m3(x[k] / r);
        float dv = dec1(&o, 0, (uint64_t)k);
        /* E4M3: half an ulp is 2^-4 relative, 2^-10 absolute below 2^-6 */
        bound_ok &= fabs((double)x[k] - dv) <= fabs((double)x[k]) / 16 + (double)r * 0x1p-10;
    }
    CHECK(codes_ok, "fp8 codes are e4m3(x/r) round to nearest even");
    CHECK(bound_ok, "fp8 error within half an E4M3 ulp of x/r, times r");
    CHECK(rp[2] == 0 && rp[3] == 0, "fp8 all-zero row: r = +0.0");
    free(o.obj);

    /* nvfp4 two-level scaling */
    o = mk(NF_FMT_NVFP4, 256, 128, 2);
    float *xv = rand_vals(256 * 128, 1.0);
    for (int i = 128 * 128; i < 256 * 128; i++)
        xv[i] = 0.0f; /* slice 1 all zero */
    xv[3 * 128 + 17] = 9.0f;
    CHECK(nf_encode_f32(&o.t, xv, o.obj, o.t.enc.encoded_bytes, NULL, NULL) == 0, "nvfp4 encode");
    float am = 0;
    for (int i = 0; i < 128 * 128; i++)
        am = fmaxf(am, fabsf(xv[i]));
    const uint8_t *wp = o.obj + o.t.enc.plane[2].offset;
    uint32_t w0 = (uint32_t)wp[0] | (uint32_t)wp[1] << 8 | (uint32_t)wp[2] << 16 | (uint32_t)wp[3] << 24;
    uint32_t w1 = (uint32_t)wp[4] | (uint32_t)wp[5] << 8 | (uint32_t)wp[6] << 16 | (uint32_t)wp[7] << 24;
    float w = nf_f32_from_bits(w0);
    CHECK(w == (448.0f * 6.0f) / am, "nvfp4 slice 0: w = 448*6/amax");
    CHECK(w1 == 0x3f800000, "nvfp4 all-zero slice: divisor 1.0");
    float bmax = 0;
    for (int i = 16; i < 32; i++)
        bmax = fmaxf(bmax, fabsf(xv[3 * 128 + i]));
    uint8_t bb = o.obj[o.t.enc.plane[1].offset + swz(3, 1, 128)];
    CHECK(bb == nf_f32_to_e4m3(bmax / 6.0f * w), "nvfp4 (3, block 1): b = e4m3(amax(block)/6*w)");
    CHECK(o.obj[o.t.enc.plane[1].offset + swz(200, 3, 128)] == 0, "nvfp4 zero block: b = 0");
    /* per element: within half an E2M1 step of the block's grid (b/w units) */
    uint64_t bad = 0;
    for (uint64_t n = 0; n < 128; n++)
        for (uint64_t k = 0; k < 128; k++) {
            float b = nf_e4m3_to_f32(o.obj[o.t.enc.plane[1].offset + swz(n, k / 16, 128)]);
            double unit = (double)b / w, xa = fabs((double)xv[n * 128 + k]) / unit;
            double half = xa <= 2 ? 0.25 : xa <= 4 ? 0.5 : 1.0;
            double slack = xa > 6 ? xa - 6 : 0; /* b rounded down: saturation */
            double d = fabs((double)xv[n * 128 + k] - dec1(&o, n, k)) / unit;
            if (d > half + slack + 1e-6)
                bad++;
        }
    CHECK(bad == 0, "nvfp4 error within half an E2M1 step (%llu bad)", (unsigned long long)bad);
    nf_codec_check ck;
    CHECK(nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0, "nvfp4 encoder output validates");
    CHECK(nf_encode_rows_f32(&o.t, xv, 0, 64, o.obj, o.t.enc.encoded_bytes, NULL, NULL) == NF_CODEC_ERANGE,
          "nvfp4 row-range encode must cover whole divisor slices");
    CHECK(nf_encode_rows_f32(&o.t, xv + 128 * 128, 128, 256, o.obj, o.t.enc.encoded_bytes, NULL, NULL) == 0,
          "nvfp4 encode of slice 1 alone");
    free(xv);
    free(o.obj);

    /* bf16 RNE and non-finite handling */
    uint64_t d1[1] = {4};
    nf_tensor_enc t;
    nf_tensor_enc_init(&t, NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d1, 1, 1, NULL);
    uint8_t b[16];
    float src[4] = {1.00390625f, 1.01171875f, -3.0f, 1e-40f};
    CHECK(nf_encode_f32(&t, src, b, 8, NULL, NULL) == 0 && b[0] == 0x80 && b[1] == 0x3f &&
          b[2] == 0x82 && b[3] == 0x3f, "bf16 encode rounds to nearest even");
    src[2] = NAN;
    CHECK(nf_encode_f32(&t, src, b, 8, NULL, NULL) == NF_CODEC_ENONFINITE, "bf16 NaN source: error");
    nf_encode_opts an = NF_ENCODE_OPTS_INIT;
    an.allow_nonfinite = true;
    float back[4];
    CHECK(nf_encode_f32(&t, src, b, 8, &an, NULL) == 0 &&
          nf_decode_elems_f32(&t, b, 8, 2, 3, back) == 0 && isnan(back[0]),
          "bf16 NaN with allow_nonfinite is kept");
    src[2] = INFINITY;
    CHECK(nf_encode_f32(&t, src, b, 8, NULL, NULL) == NF_CODEC_ENONFINITE, "bf16 Inf source: error");
    nf_tensor_enc_init(&t, NF_FMT_INT32, NF_LAY_CONTIGUOUS_LE_V1, d1, 1, 1, NULL);
    float iv[4] = {-2147483648.0f, 5.0f, -0.0f, 1.5f};
    CHECK(nf_encode_f32(&t, iv, b, 16, NULL, NULL) == NF_CODEC_EVALUE, "int32 1.5: EVALUE");
    iv[3] = 2147483648.0f;
    CHECK(nf_encode_f32(&t, iv, b, 16, NULL, NULL) == NF_CODEC_EVALUE, "int32 2^31: EVALUE");
    iv[3] = 7.0f;
    CHECK(nf_encode_f32(&t, iv, b, 16, &an, NULL) == 0 && b[3] == 0x80 && b[4] == 5,
          "int32 -2^31 and 5 encode");
    iv[3] = NAN;
    CHECK(nf_encode_f32(&t, iv, b, 16, &an, NULL) == NF_CODEC_ENONFINITE, "int32 NaN: error even when allowed");
    CHECK(nf_encode_f32(&t, iv, b, 15, NULL, NULL) == NF_CODEC_ESHORT, "encode into a short buffer: ESHORT");

    tobj q = mk(NF_FMT_Q4_G64_FP16, 2, 64, 1);
    float qx[128] = {0};
    qx[70] = INFINITY;
    CHECK(nf_encode_f32(&q.t, qx, q.obj, q.t.enc.encoded_bytes, &an, NULL) == NF_CODEC_ENONFINITE,
          "q4 Inf source: error even with allow_nonfinite");
    qx[70] = 0;
    qx[3] = NAN;
    tobj q8 = mk(NF_FMT_FP8_E4M3FN_ROW_BF16, 2, 64, 1);
    CHECK(nf_encode_f32(&q8.t, qx, q8.obj, q8.t.enc.encoded_bytes, NULL, NULL) == NF_CODEC_ENONFINITE,
          "fp8 NaN source: error");
    free(q.obj);
    free(q8.obj);
}

/* ---- hostile encodings through the validator ---- */

static tobj encoded(nf_format f, uint64_t N, uint64_t K, uint64_t div)
{
    tobj o = mk(f, N, K, div);
    float *x = rand_vals(N * K, 1.0);
    nf_encode_f32(&o.t, x, o.obj, o.t.enc.encoded_bytes, NULL, NULL);
    free(x);
    return o;
}

static bool finds(tobj *o, nf_codec_rule r, uint64_t row, uint64_t idx, uint32_t val,
                  uint64_t count)
{
    nf_codec_check ck;
    int nv = nf_codec_validate(&o->t, o->obj, o->t.enc.encoded_bytes, &ck);
    const nf_codec_finding *f = &ck.first[r];
    bool ok = nv == 1 && ck.count[r] == count && f->rule == r && f->row == row &&
              f->index == idx && f->value == val;
    if (!ok) {
        char buf[200];
        nf_codec_finding_str(&o->t, f, buf, sizeof buf);
        printf("#   rules %d, count %llu, first: %s (row %llu idx %llu val 0x%x)\n", nv,
               (unsigned long long)ck.count[r], buf, (unsigned long long)f->row,
               (unsigned long long)f->index, f->value);
    }
    return ok;
}

static void hostile(void)
{
    tobj o = encoded(NF_FMT_Q4_G64_FP16, 5, 200, 1);
    nf_codec_check ck;
    CHECK(nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0, "q4 clean");
    rs_scale(&o, 3, 1, 0x7c00);
    CHECK(finds(&o, NF_CR_SCALE, 3, 1, 0x7c00, 1), "q4 Inf scale: row 3, group 1");
    rs_scale(&o, 1, 2, 0xfe00);
    CHECK(finds(&o, NF_CR_SCALE, 1, 2, 0xfe00, 2), "q4 NaN scale too: first is row 1, group 2");
    nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
    char buf[200];
    nf_codec_finding_str(&o.t, &ck.first[NF_CR_SCALE], buf, sizeof buf);
    CHECK_STR(buf, "row 1, group 2: scale 0xfe00 is not finite", "finding text");
    CHECK_EQ_U64(ck.first[NF_CR_SCALE].offset,
                 o.t.enc.plane[1].offset + 1 * o.t.enc.plane[1].row_bytes + 4, "finding offset");
    rs_scale(&o, 3, 1, 0x3c00);
    rs_scale(&o, 1, 2, 0x3c00);
    rs_put(&o, 2, 250, 1);
    CHECK(finds(&o, NF_CR_PAD_CODE, 2, 250, 1, 1), "q4 nonzero padding code (2,250)");
    rs_put(&o, 2, 250, 0);
    rs_scale(&o, 4, 3, 0x8000); /* -0.0 in group 3 = columns 192..255: not wholly padding */
    CHECK(nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0,
          "q4 K=200: group 3 (192..255) is partly real, any finite scale");
    free(o.obj);

    o = encoded(NF_FMT_Q8_G32_FP16, 4, 60, 1);
    rs_scale(&o, 1, 2, 0x8000); /* group 2 = 64..95: wholly padding */
    CHECK(finds(&o, NF_CR_PAD_SCALE, 1, 2, 0x8000, 1), "q8 K=60: padding group scale -0.0 rejected");
    rs_scale(&o, 1, 2, 0);
    prow(&o, 0, 3)[17] = 0x80;
    prow(&o, 0, 1)[100] = 0x80; /* padding: reported as pad-code, not code */
    prow(&o, 0, 2)[5] = 0x80;
    nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
    CHECK(ck.count[NF_CR_CODE] == 2 && ck.first[NF_CR_CODE].row == 2 &&
          ck.first[NF_CR_CODE].index == 5 && ck.first[NF_CR_CODE].value == 0x80 &&
          ck.count[NF_CR_PAD_CODE] == 1, "q8 -128 codes: 2 found, first (2,5); padding one separate");
    float s = nf_fp16_to_f32(rs_scale_get(&o, 2, 0));
    CHECK(dec1(&o, 2, 5) == -128.0f * s, "q8 -128 still decodes to -128*s");
    nf_codec_finding_str(&o.t, &ck.first[NF_CR_CODE], buf, sizeof buf);
    CHECK_STR(buf, "row 2, column 5: code -128 is invalid for q8_g32_fp16", "q8 finding text");
    free(o.obj);

    o = encoded(NF_FMT_T2_G128_FP16, 3, 130, 1);
    rs_put(&o, 1, 5, 2);
    CHECK(finds(&o, NF_CR_CODE, 1, 5, 2, 1), "t2 code 0b10 at (1,5)");
    CHECK(dec1(&o, 1, 5) == -2.0f * nf_fp16_to_f32(rs_scale_get(&o, 1, 0)), "t2 0b10 decodes to -2*s");
    rs_put(&o, 1, 5, 0);
    rs_put(&o, 2, 200, 2);
    CHECK(finds(&o, NF_CR_PAD_CODE, 2, 200, 2, 1), "t2 0b10 in padding is a padding finding");
    free(o.obj);

    o = encoded(NF_FMT_Q2_G64_FP16, 2, 100, 1);
    rs_put(&o, 1, 127, 0);
    CHECK(finds(&o, NF_CR_PAD_CODE, 1, 127, 0, 1), "q2 padding must be u=1: u=0 rejected");
    free(o.obj);
    o = encoded(NF_FMT_Q5_G64_FP16, 2, 100, 1);
    put_bits(prow(&o, 1, 0), 101, 1, 1); /* high bit of a padding code */
    CHECK(finds(&o, NF_CR_PAD_CODE, 0, 101, 0x10, 1), "q5 padding high bit set: code 0x10");
    free(o.obj);
    o = encoded(NF_FMT_Q6_G64_FP16, 2, 64, 1);
    rs_scale(&o, 0, 1, 0x0001); /* group 1 = 64..127 wholly padding; a subnormal */
    CHECK(finds(&o, NF_CR_PAD_SCALE, 0, 1, 1, 1), "q6 K=64: padding group scale must be +0.0");
    free(o.obj);

    o = encoded(NF_FMT_Q4_G64_FP16, 3, 100, 1);
    CHECK_EQ_U64(o.t.enc.plane[1].offset, 256, "q4 [3,100]: gap [192,256)");
    o.obj[200] = 0x11;
    nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
    CHECK(ck.count[NF_CR_GAP] == 1 && ck.first[NF_CR_GAP].offset == 200 &&
          ck.first[NF_CR_GAP].value == 0x11, "nonzero gap byte at 200");
    free(o.obj);

    o = encoded(NF_FMT_FP8_E4M3FN_ROW_BF16, 6, 20, 1);
    prow(&o, 0, 4)[9] = 0x7f;
    prow(&o, 0, 5)[0] = 0xff;
    nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
    CHECK(ck.count[NF_CR_CODE] == 2 && ck.first[NF_CR_CODE].row == 4 &&
          ck.first[NF_CR_CODE].index == 9 && ck.first[NF_CR_CODE].value == 0x7f,
          "fp8 NaN codes 0x7f/0xff: 2, first (4,9)");
    CHECK(isnan(dec1(&o, 4, 9)) && isnan(dec1(&o, 5, 0)), "fp8 NaN codes decode to NaN");
    prow(&o, 0, 4)[9] = 0;
    prow(&o, 0, 5)[0] = 0;
    put16(o.obj + o.t.enc.plane[1].offset + 2 * 3, 0xff80);
    CHECK(finds(&o, NF_CR_ROW_SCALE, 3, NF_CODEC_NONE, 0xff80, 1), "fp8 row scale -Inf at row 3");
    put16(o.obj + o.t.enc.plane[1].offset + 2 * 3, 0x7fc1);
    CHECK(finds(&o, NF_CR_ROW_SCALE, 3, NF_CODEC_NONE, 0x7fc1, 1), "fp8 row scale NaN at row 3");
    free(o.obj);

    o = encoded(NF_FMT_NVFP4, 256, 64, 2);
    uint8_t *wp = o.obj + o.t.enc.plane[2].offset;
    const float badw[4] = {0.0f, -1.0f, NAN, INFINITY};
    const char *bn[4] = {"0", "-1", "NaN", "Inf"};
    for (int i = 0; i < 4; i++) {
        put32(wp + 4, nf_f32_bits(badw[i]));
        CHECK(finds(&o, NF_CR_DIVISOR, NF_CODEC_NONE, 1, nf_f32_bits(badw[i]), 1),
              "nvfp4 divisor %s rejected (index 1)", bn[i]);
    }
    put32(wp + 4, nf_f32_bits(-0.0f));
    CHECK(finds(&o, NF_CR_DIVISOR, NF_CODEC_NONE, 1, 0x80000000u, 1), "nvfp4 divisor -0 rejected");
    put32(wp + 4, nf_f32_bits(1.0f));
    uint8_t *bs = o.obj + o.t.enc.plane[1].offset;
    bs[swz(130, 2, 64)] = 0x7f;
    CHECK(finds(&o, NF_CR_BLOCK_SCALE, 130, 2, 0x7f, 1), "nvfp4 NaN block scale at (130, block 2)");
    bs[swz(130, 2, 64)] = 0x38;
    bs[swz(7, 3, 64)] = 0xb8;
    CHECK(finds(&o, NF_CR_BLOCK_SCALE, 7, 3, 0xb8, 1), "nvfp4 negative block scale at (7, block 3)");
    nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck);
    CHECK_EQ_U64(ck.first[NF_CR_BLOCK_SCALE].offset, o.t.enc.plane[1].offset + swz(7, 3, 64),
                 "block-scale finding offset is the swizzled byte");
    bs[swz(7, 3, 64)] = 0x80;
    CHECK(nf_codec_validate(&o.t, o.obj, o.t.enc.encoded_bytes, &ck) == 0, "nvfp4 block scale -0.0 accepted");
    free(o.obj);
}

/* ---- errors of the API ---- */

static void api_errors(void)
{
    tobj o = encoded(NF_FMT_Q4_G64_FP16, 4, 64, 1);
    float f[512];
    uint64_t eb = o.t.enc.encoded_bytes;
    CHECK(nf_decode_rows_f32(&o.t, o.obj, eb - 1, 0, 1, f) == NF_CODEC_ESHORT, "ESHORT");
    CHECK(nf_decode_rows_f32(&o.t, o.obj, eb, 0, 5, f) == NF_CODEC_ERANGE, "rows past the end");
    CHECK(nf_decode_rows_f32(&o.t, o.obj, eb, 3, 2, f) == NF_CODEC_ERANGE, "r0 > r1");
    CHECK(nf_decode_elems_f32(&o.t, o.obj, eb, 0, 257, f) == NF_CODEC_ERANGE, "elements past the end");
    CHECK(nf_decode_elems_f32(&o.t, o.obj, eb, 7, 7, NULL) == 0, "empty range ok");
    CHECK(nf_decode_elems_f32(NULL, o.obj, eb, 0, 1, f) == NF_CODEC_EINVAL, "NULL description");
    nf_tensor_enc z;
    memset(&z, 0, sizeof z);
    CHECK(nf_decode_elems_f32(&z, o.obj, eb, 0, 1, f) == NF_CODEC_EINVAL, "uninitialised description");
    CHECK(strcmp(nf_codec_strerror(NF_CODEC_ERANGE), "range outside the object") == 0, "strerror");
    CHECK(strcmp(nf_codec_rule_name(NF_CR_PAD_SCALE), "pad-scale") == 0, "rule name");
    uint64_t d[2] = {100, 64};
    CHECK(nf_tensor_enc_init(&z, NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 1, NULL) ==
          NF_ENC_INVALID && z.enc.nplanes == 0, "init reports layout errors, zeroes t");
    /* element range across rows equals the rows' decode */
    float all[256], part[100];
    nf_decode_rows_f32(&o.t, o.obj, eb, 0, 4, all);
    nf_decode_elems_f32(&o.t, o.obj, eb, 37, 137, part);
    CHECK(memcmp(all + 37, part, sizeof part) == 0, "element range [37,137) across rows");
    uint16_t hb[256];
    nf_decode_rows_bf16(&o.t, o.obj, eb, 0, 4, hb);
    bool ok = true;
    for (int i = 0; i < 256; i++)
        ok &= hb[i] == nf_f32_to_bf16(all[i]);
    CHECK(ok, "bf16 output = RNE of the f32 decode");
    free(o.obj);
}

/* ---- SIMD against scalar, bit for bit ---- */

static void simd_vs_scalar(void)
{
    const nf_format fmts[8] = {NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16,
                               NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16,
                               NF_FMT_FP8_E4M3FN_ROW_BF16, NF_FMT_BF16};
    const uint64_t Ks[] = {1, 7, 8, 15, 16, 17, 31, 33, 63, 64, 100, 127, 128, 129, 200, 255, 333, 1000};
    const nf_isa isas[2] = {NF_ISA_AVX2, NF_ISA_AVX512};
    for (int ii = 0; ii < 2; ii++) {
        if (!nf_codec_isa_supported(isas[ii])) {
            SKIP("cpu lacks it", "%s decode agrees with scalar", nf_isa_name(isas[ii]));
            continue;
        }
        for (int fi = 0; fi < 9; fi++) {
            uint64_t mism = 0, cases = 0;
            size_t nk = fi == 8 ? 4 : sizeof Ks / sizeof Ks[0];
            for (size_t ki = 0; ki < nk; ki++) {
                nf_format f = fi == 8 ? NF_FMT_NVFP4 : fmts[fi];
                uint64_t N = fi == 8 ? 256 : 5, K = fi == 8 ? 64 * (ki + 1) : Ks[ki];
                tobj o;
                if (f == NF_FMT_BF16) {
                    uint64_t d[2] = {N, K};
                    nf_tensor_enc_init(&o.t, f, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, NULL);
                    o.obj = malloc(o.t.enc.encoded_bytes);
                } else {
                    o = mk(f, N, K, fi == 8 ? 2 : 1);
                }
                uint64_t eb = o.t.enc.encoded_bytes, ne = N * K;
                for (uint64_t i = 0; i < eb; i++)
                    o.obj[i] = (uint8_t)rnd();
                if (f == NF_FMT_NVFP4) /* mostly sane divisors, one random */
                    put32(o.obj + o.t.enc.plane[2].offset, nf_f32_bits(0.37f));
                float *a = malloc(ne * sizeof *a), *b = malloc(ne * sizeof *b);
                nf_codec_set_isa(NF_ISA_SCALAR);
                nf_decode_rows_f32(&o.t, o.obj, eb, 0, N, a);
                nf_codec_set_isa(isas[ii]);
                nf_decode_rows_f32(&o.t, o.obj, eb, 0, N, b);
                for (uint64_t i = 0; i < ne; i++)
                    mism += !same(a[i], b[i]);
                cases++;
                for (int r = 0; r < 20; r++) { /* odd element ranges */
                    uint64_t e0 = rnd() % ne, e1 = e0 + rnd() % (ne - e0 + 1);
                    nf_decode_elems_f32(&o.t, o.obj, eb, e0, e1, b);
                    for (uint64_t i = e0; i < e1; i++)
                        mism += !same(a[i], b[i - e0]);
                    cases++;
                }
                free(a);
                free(b);
                free(o.obj);
            }
            CHECK(mism == 0, "%s %s decode == scalar bit for bit on random bytes (%llu cases)",
                  nf_isa_name(isas[ii]), fi == 8 ? "nvfp4" : nf_format_name(fmts[fi]),
                  (unsigned long long)cases);
        }
    }
    nf_codec_set_isa(NF_ISA_AUTO);
    CHECK(nf_codec_isa() != NF_ISA_AUTO, "auto resolves to %s", nf_isa_name(nf_codec_isa()));
}

/* The scale search gives the same bytes and statistics on every ISA
 * (nf_qsearch: the scalar arithmetic lane for lane), on values from 2^-30
 * to 2^20 in magnitude (saturating scales, FP16-subnormal scales), with
 * zero groups, exact ties (x = (k + 1/2) * s) and odd K; and its exact
 * codes are those of the division x / s, ties to even. */
static void encoder_isa(void)
{
    static const nf_format fs[] = {NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16, NF_FMT_Q5_G64_FP16,
                                   NF_FMT_Q6_G64_FP16, NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16};
    uint64_t N = 24, K = 333;
    float *x = malloc(N * K * sizeof *x);
    uint64_t r = 0x1234567;
    for (uint64_t n = 0; n < N; n++) {
        int e = (int)(n % 12) * 5 - 30; /* row magnitudes 2^-30 .. 2^25 */
        for (uint64_t k = 0; k < K; k++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            double v = ldexp(((double)(r >> 11) * 0x1p-53 - 0.5) * 4, e);
            if (n % 5 == 1 && k < 64)
                v = 0; /* a zero group */
            if (n % 5 == 3 && k % 7 == 0) /* exact ties against s = 2^e / 8 */
                v = ldexp((double)((int)(r % 15) - 7) + 0.5, e - 3);
            x[n * K + k] = (float)v;
        }
    }
    for (unsigned fi = 0; fi < sizeof fs / sizeof *fs; fi++) {
        tobj o[3];
        nf_encode_stats st[3];
        bool ok = true;
        for (int i = 0; i < 3; i++) {
            nf_isa want = i == 0 ? NF_ISA_SCALAR : i == 1 ? NF_ISA_AVX2 : NF_ISA_AVX512;
            memset(&st[i], 0, sizeof st[i]);
            o[i] = mk(fs[fi], N, K, 1);
            if (nf_codec_set_isa(want) != want && i) { /* CPU lacks it: compare what exists */
                memcpy(o[i].obj, o[0].obj, o[0].t.enc.encoded_bytes);
                st[i] = st[0];
                continue;
            }
            ok &= nf_encode_f32(&o[i].t, x, o[i].obj, o[i].t.enc.encoded_bytes, NULL, &st[i]) == 0;
        }
        nf_codec_set_isa(NF_ISA_AUTO);
        for (int i = 1; ok && i < 3; i++)
            ok = memcmp(o[0].obj, o[i].obj, o[0].t.enc.encoded_bytes) == 0 &&
                 st[0].sse == st[i].sse && st[0].ssx == st[i].ssx &&
                 st[0].saturated == st[i].saturated;
        CHECK(ok, "%s: the scale search gives the same bytes and stats on scalar, AVX2, AVX-512 "
              "(wide magnitudes, zero groups, ties)", nf_format_name(fs[fi]));
        for (int i = 0; i < 3; i++)
            free(o[i].obj);
    }
    free(x);
    /* nf_qs_exact's codes are the division's, ties to even */
    long bad = 0;
    for (int it = 0; it < 4000; it++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        uint16_t sb = (uint16_t)(r & 0x7bff);
        float s = nf_fp16_to_f32(sb);
        if (s == 0)
            continue;
        float xs[64];
        int c[64];
        for (int i = 0; i < 64; i++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            double k = (double)((int)(r % 257) - 128) / 2; /* half-integers and integers */
            xs[i] = (float)(k * s);
            if ((double)xs[i] != k * s || !isfinite(xs[i]))
                xs[i] = (float)((double)(r >> 40) * 0x1p-20 * s); /* not exact: any value */
            else if (it % 3 != 0) /* a step off the half-integer: the f32 codes' margin */
                xs[i] = nextafterf(xs[i], (r >> 9 & 1) ? INFINITY : -INFINITY);
            if (it % 3 == 2 && i < 16) {
                /* a step of quotients near a half-integer past 256, each one the f32
                 * product x * (1/s) puts outside the margin (its error exceeds it there) */
                for (int tries = 0; tries < 64; tries++) {
                    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
                    xs[i] = (float)(((double)(r >> 42) + 0.5) * s);
                    float t = xs[i] * (1.0f / s);
                    if (isfinite(t) && fabsf(t - rintf(t)) <= 0.5f - 0x1p-13f)
                        break;
                }
            }
            else if (it % 3 == 2 && i % 5 == 0) /* quotients past 2^22 */
                xs[i] = (float)((double)xs[i] * 0x1p23);
            if (!isfinite(xs[i]))
                xs[i] = s;
        }
        /* the error sum, codes and saturation count of every ISA are the
         * scalar one's, bit for bit: q8's range, q6's, and one of +-2^22
         * where quotients past 256 keep their own codes */
        static const int rq[3][2] = {{-127, 127}, {-32, 31}, {-(1 << 22), 1 << 22}};
        static const unsigned rn[3] = {64, 57, 64};
        double e_ref[3];
        int c_ref[3][64];
        uint64_t s_ref[3];
        for (int isa = NF_ISA_SCALAR; isa <= NF_ISA_AVX512; isa++) {
            if (!nf_codec_isa_supported((nf_isa)isa))
                continue;
            for (int k = 0; k < 3; k++) {
                int cc[64];
                uint64_t sat = 0;
                double e = nf_qs_exact(xs, rn[k], rq[k][0], rq[k][1], sb, cc, &sat, (nf_isa)isa);
                if (isa == NF_ISA_SCALAR) {
                    e_ref[k] = e;
                    s_ref[k] = sat;
                    memcpy(c_ref[k], cc, sizeof cc);
                } else {
                    bad += memcmp(&e, &e_ref[k], sizeof e) != 0 || sat != s_ref[k];
                    bad += memcmp(c_ref[k], cc, rn[k] * sizeof *cc) != 0;
                }
            }
            /* q8's range, and q4's, where half-integer quotients at the ends
             * tie to a code outside (7.5 -> 8, clamped: saturated) or inside
             * (-8.5 -> -8: not saturated) */
            static const int rg[2][2] = {{-127, 127}, {-8, 7}};
            for (int k = 0; k < 2; k++) {
                uint64_t sat = 0, want = 0;
                nf_qs_exact(xs, 64, rg[k][0], rg[k][1], sb, c, &sat, (nf_isa)isa);
                for (int i = 0; i < 64; i++) {
                    double t = (double)xs[i] / (double)s, q = nearbyint(t);
                    want += q > rg[k][1] || q < rg[k][0];
                    q = q > rg[k][1] ? rg[k][1] : q < rg[k][0] ? rg[k][0] : q;
                    bad += c[i] != (int)q;
                }
                bad += sat != want;
            }
        }
    }
    CHECK(bad == 0, "nf_qs_exact: the codes of the division x / s, ties to even, and the clamped "
                    "ones counted (nearest even outside the range), on every ISA; the error sum, "
                    "codes and count of each ISA the scalar one's bit for bit (values a step off "
                    "a half-integer, quotients past 256 and 2^22, a range of +-2^22, n = 64 and 57)");
}

int main(void)
{
    vec_q4();
    vec_q5_q6();
    vec_q8_q2_t2();
    vec_fp8();
    vec_nvfp4();
    vec_contig();
    padding();
    encoder_q();
    encoder_other();
    hostile();
    api_errors();
    simd_vs_scalar();
    encoder_isa();
    return nf_test_done();
}
