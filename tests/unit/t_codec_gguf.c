/* t_codec_gguf.c — the gguf_* codecs (DESIGN 7.5, gguf_rows_v1 of DESIGN 8)
 * against gguf-py's gguf.quants.dequantize.
 *
 * gguf_golden.h (generated at development time by gen-gguf-golden.py, which
 * says how) holds, per format, SHA-256 digests of gguf-py's decode of three
 * block sets that this file rebuilds byte for byte (random blocks, edge
 * scales, counting codes) and a few explicit values. Every decode path the
 * CPU has (scalar, AVX2, AVX-512) must reproduce them. Then: the public
 * decode API on partial rows and odd element ranges against the
 * per-element reference, bf16 decode, --deep validation findings, and the
 * refusal to encode into a gguf format. */
#include "nf_binder.h"
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_digest.h"
#include "nf_fp.h"
#include "nf_test.h"

#include <math.h>
#include <stdlib.h>

#include "gguf_golden.h"

/* ---- the block sets of gen-gguf-golden.py ---- */

typedef struct {
    uint64_t s;
    uint8_t buf[8];
    unsigned have;
} sm64;

static uint64_t sm_next(sm64 *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void sm_bytes(sm64 *r, uint8_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!r->have) {
            uint64_t v = sm_next(r);
            for (int k = 0; k < 8; k++)
                r->buf[k] = (uint8_t)(v >> (8 * k));
            r->have = 8;
        }
        out[i] = r->buf[8 - r->have--];
    }
}

/* byte offsets of the f16 fields (d first), as the generator's table */
static unsigned fields_of(nf_format f, int out[2])
{
    out[0] = out[1] = -1;
    switch (f) {
    case NF_FMT_GGUF_Q4_1:
    case NF_FMT_GGUF_Q5_1:
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: out[0] = 0; out[1] = 2; return 2;
    case NF_FMT_GGUF_Q2_K: out[0] = 80; out[1] = 82; return 2;
    case NF_FMT_GGUF_Q3_K: out[0] = 108; return 1;
    case NF_FMT_GGUF_Q6_K: out[0] = 208; return 1;
    case NF_FMT_GGUF_MXFP4: return 0;
    default: out[0] = 0; return 1;
    }
}

static void put16(uint8_t *b, int off, uint16_t v)
{
    b[off] = (uint8_t)v;
    b[off + 1] = (uint8_t)(v >> 8);
}

enum { SET_RAND, SET_EDGE, SET_SEQ };

/* The set's blocks (malloc'ed) and their count. */
static uint8_t *make_set(nf_format f, int kind, unsigned *nb_out)
{
    nf_gguf_info gi = nf_gguf_info_of(f);
    unsigned B = gi.block_bytes, nb;
    int fl[2];
    unsigned nf = fields_of(f, fl);
    if (kind == SET_SEQ)
        nb = GG_SEQ_BLOCKS;
    else if (kind == SET_EDGE)
        nb = f == NF_FMT_GGUF_MXFP4 ? GG_N_EDGE_E : GG_N_EDGES;
    else
        nb = gi.qk == 32 ? GG_RAND_BLOCKS_32 : GG_RAND_BLOCKS_256;
    uint8_t *out = calloc(nb, B);
    *nb_out = nb;
    if (kind == SET_SEQ) {
        unsigned c = 0;
        for (unsigned i = 0; i < nb; i++) {
            uint8_t *b = out + i * B;
            for (unsigned j = 0; j < B; j++) {
                bool skip = f == NF_FMT_GGUF_MXFP4 ? j == 0 : false;
                for (unsigned q = 0; q < nf; q++)
                    skip |= (int)j == fl[q] || (int)j == fl[q] + 1;
                if (!skip)
                    b[j] = (uint8_t)c++;
            }
            if (f == NF_FMT_GGUF_MXFP4)
                b[0] = 127;
            for (unsigned q = 0; q < nf; q++)
                put16(b, fl[q], q == 0 ? 0x3c00 : 0xbc00);
        }
        return out;
    }
    sm64 r = {gi.ggml_type * 1000ull + (kind == SET_RAND ? 1 : 2), {0}, 0};
    for (unsigned i = 0; i < nb; i++) {
        uint8_t *b = out + i * B;
        sm_bytes(&r, b, B);
        for (unsigned q = 0; q < nf; q++) {
            if (kind == SET_RAND) {
                uint16_t h = (uint16_t)(b[fl[q]] | b[fl[q] + 1] << 8);
                if ((h & 0x7c00) == 0x7c00)
                    h &= (uint16_t)~0x4000;
                put16(b, fl[q], h);
            } else {
                put16(b, fl[q], q == 0 ? gg_edges[i % GG_N_EDGES]
                                       : gg_edges[(5 * i + 3) % GG_N_EDGES]);
            }
        }
        if (kind == SET_EDGE && f == NF_FMT_GGUF_MXFP4)
            b[0] = gg_edge_e[i % GG_N_EDGE_E];
    }
    return out;
}

static uint32_t canon(float v)
{
    return isnan(v) ? 0x7fc00000u : nf_f32_bits(v);
}

static void digest(const float *v, size_t n, char hex[65])
{
    nf_sha256 *s = nf_sha256_new();
    for (size_t i = 0; i < n; i++) {
        uint32_t u = canon(v[i]);
        uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
        nf_sha256_update(s, le, 4);
    }
    nf_sha256_final(s, hex); /* frees s */
}

static const nf_isa ISAS[] = {NF_ISA_SCALAR, NF_ISA_AVX2, NF_ISA_AVX512};

static void goldens(void)
{
    static const char *const set_names[] = {"rand", "edge", "seq"};
    size_t ng = sizeof gg_goldens / sizeof *gg_goldens;
    CHECK(ng == 13, "a golden entry for each of the 13 block formats (%zu)", ng);
    for (size_t g = 0; g < ng; g++) {
        const gg_golden *gd = &gg_goldens[g];
        nf_format f = nf_format_from_name(gd->format, strlen(gd->format));
        CHECK(nf_format_is_gguf(f), "%s is a gguf format", gd->format);
        if (!nf_format_is_gguf(f))
            continue;
        unsigned qk = nf_gguf_info_of(f).qk;
        for (int kind = 0; kind < 3; kind++) {
            unsigned nb;
            uint8_t *blk = make_set(f, kind, &nb);
            float *y = malloc((size_t)nb * qk * sizeof *y);
            float *ref = malloc((size_t)nb * qk * sizeof *ref);
            const char *want = kind == SET_RAND ? gd->rand : kind == SET_EDGE ? gd->edge : gd->seq;
            nf_gguf_decode_blocks(f, NF_ISA_SCALAR, blk, nb, ref);
            for (size_t ii = 0; ii < sizeof ISAS / sizeof *ISAS; ii++) {
                nf_isa isa = ISAS[ii];
                if (!nf_codec_isa_supported(isa)) {
                    SKIP("the CPU lacks it", "%s %s set on %s", gd->format, set_names[kind],
                         nf_isa_name(isa));
                    continue;
                }
                memset(y, 0xa5, (size_t)nb * qk * sizeof *y);
                nf_gguf_decode_blocks(f, isa, blk, nb, y);
                char hex[65];
                digest(y, (size_t)nb * qk, hex);
                CHECK_STR(hex, want, "%s %s set (%u blocks) on %s equals gguf-py's dequantize",
                          gd->format, set_names[kind], nb, nf_isa_name(isa));
                size_t bad = 0;
                for (size_t i = 0; i < (size_t)nb * qk; i++)
                    bad += canon(y[i]) != canon(ref[i]);
                CHECK(bad == 0, "%s %s set: %s equals the scalar reference bit for bit (%zu differ)",
                      gd->format, set_names[kind], nf_isa_name(isa), bad);
            }
            if (kind == SET_SEQ) {
                size_t bad = 0;
                for (int i = 0; i < 16; i++)
                    bad += canon(ref[i]) != gd->seq0[i];
                CHECK(bad == 0, "%s seq block 0, values 0..15 as gguf-py (v0 %a, v1 %a)",
                      gd->format, (double)ref[0], (double)ref[1]);
            }
            if (kind == SET_EDGE) {
                size_t bad = 0;
                for (int i = 0; i < 16; i++)
                    bad += canon(ref[3 * qk + i]) != gd->edge3[i];
                CHECK(bad == 0, "%s edge block 3, values 0..15 as gguf-py (v0 %a)", gd->format,
                      (double)ref[3 * qk]);
            }
            free(y);
            free(ref);
            free(blk);
        }
    }
    /* gguf_f16: every half */
    uint8_t *h = malloc(65536 * 2);
    float *y = malloc(65536 * sizeof *y);
    for (unsigned i = 0; i < 65536; i++)
        put16(h, (int)(2 * i), (uint16_t)i);
    for (size_t ii = 0; ii < sizeof ISAS / sizeof *ISAS; ii++) {
        if (!nf_codec_isa_supported(ISAS[ii])) {
            SKIP("the CPU lacks it", "gguf_f16 all halves on %s", nf_isa_name(ISAS[ii]));
            continue;
        }
        nf_gguf_decode_blocks(NF_FMT_GGUF_F16, ISAS[ii], h, 65536, y);
        char hex[65];
        digest(y, 65536, hex);
        CHECK_STR(hex, gg_f16_all, "gguf_f16: all 65536 halves on %s equal gguf-py's",
                  nf_isa_name(ISAS[ii]));
    }
    free(h);
    free(y);
}

/* ---- hand-checked values (GGUF.md 2's formulas worked by hand) ---- */

static void by_hand(void)
{
    /* q4_0, d = 0.5: byte 0 = 0x3f -> e0 = (15-8)*0.5 = 3.5, e16 = (3-8)*0.5 = -2.5 */
    uint8_t q40[18] = {0x00, 0x38, 0x3f};
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q4_0, q40, 0) == 3.5f &&
          nf_gguf_elem(NF_FMT_GGUF_Q4_0, q40, 16) == -2.5f &&
          nf_gguf_elem(NF_FMT_GGUF_Q4_0, q40, 1) == -4.0f, "q4_0 by hand");
    /* q5_0, d = 1, qh bit 17 set, qs[1] = 0x20: e17 = (2 | 16) - 16 = 2; e1 = 0 - 16 */
    uint8_t q50[22] = {0x00, 0x3c, 0x00, 0x00, 0x02, 0x00, 0x00, 0x20};
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q5_0, q50, 17) == 2.0f &&
          nf_gguf_elem(NF_FMT_GGUF_Q5_0, q50, 1) == -16.0f, "q5_0 by hand");
    /* mxfp4, E = 127: 2^(E-128) * 2*E2M1 = E2M1: code 7 -> 6, code 15 -> -6 */
    uint8_t mx[17] = {127, 0x07, 0xf0};
    CHECK(nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 0) == 6.0f &&
          nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 17) == -6.0f &&
          nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 16) == 0.0f, "mxfp4 by hand");
    /* mxfp4 E = 0: 2^-128 * 12 for code 7, a denormal */
    mx[0] = 0;
    CHECK(nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 16) == 0.0f &&
          nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 0) == 0x1.8p-125f, "mxfp4 E=0 denormals");
    /* E = 255 decodes as ggml does: 2^127 * 12 overflows to -inf for code 15 */
    mx[0] = 255;
    CHECK(isinf(nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 17)) &&
          nf_gguf_elem(NF_FMT_GGUF_MXFP4, mx, 17) < 0, "mxfp4 E=255 as ggml (-inf)");
    /* q4_k: d = 1, dmin = 0.5, sub-block 0 sc = 3, m = 2; qs[0] = 0x0a:
     * e0 = 3*10 - 0.5*2 = 29; sub-block 4 (s>=4): S[8] = 0x21 -> sc = 1 | (S[0]>>6)<<4,
     * S[0] = 0x43 -> sc4 = 1 + 16 = 17, m4 = 2 | (S[4]>>6)<<4 = 2 (S[4] = 2) */
    uint8_t q4k[144] = {0x00, 0x3c, 0x00, 0x38, 0x43, 0, 0, 0, 0x02, 0, 0, 0, 0x21};
    q4k[16] = 0x0a;
    q4k[16 + 64] = 0x05; /* element 128 = sub-block 4, low nibble 5 */
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q4_K, q4k, 0) == 29.0f, "q4_k by hand, sub-block 0");
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q4_K, q4k, 128) == 17.0f * 5 - 1.0f, "q4_k by hand, sub-block 4");
    /* q6_k: d = 2, scales[0] = -3; ql[0] = 0x01, qh[0] = 0x02 -> e0 = (1 | 2<<4) - 32 = 1 */
    uint8_t q6k[210] = {0x01};
    q6k[128] = 0x02;
    q6k[192] = 0xfd;
    put16(q6k, 208, 0x4000);
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q6_K, q6k, 0) == -6.0f, "q6_k by hand");
    CHECK(nf_gguf_elem(NF_FMT_GGUF_Q6_K, q6k, 1) == 192.0f, "q6_k by hand, code 0 -> -32");
}

/* ---- the public API on objects ---- */

static const nf_format ALL[] = {
    NF_FMT_GGUF_F16,  NF_FMT_GGUF_Q8_0, NF_FMT_GGUF_Q4_0,   NF_FMT_GGUF_Q4_1, NF_FMT_GGUF_Q5_0,
    NF_FMT_GGUF_Q5_1, NF_FMT_GGUF_IQ4_NL, NF_FMT_GGUF_MXFP4, NF_FMT_GGUF_Q2_K, NF_FMT_GGUF_Q3_K,
    NF_FMT_GGUF_Q4_K, NF_FMT_GGUF_Q5_K, NF_FMT_GGUF_Q6_K,   NF_FMT_GGUF_IQ4_XS,
};

static void api(void)
{
    for (size_t fi = 0; fi < sizeof ALL / sizeof *ALL; fi++) {
        nf_format f = ALL[fi];
        nf_gguf_info gi = nf_gguf_info_of(f);
        uint64_t N = 3, K = gi.qk == 1 ? 40 : 3 * gi.qk, d[2] = {N, K};
        nf_tensor_enc t;
        CHECK(nf_tensor_enc_init(&t, f, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL) == NF_ENC_OK,
              "%s [3,%llu] describes", nf_format_name(f), (unsigned long long)K);
        uint64_t RB = K / gi.qk * gi.block_bytes;
        CHECK_EQ_U64(t.enc.encoded_bytes, N * RB, "%s: one plane of N*RB bytes", nf_format_name(f));
        uint8_t *obj = malloc(t.enc.encoded_bytes);
        sm64 r = {77 + fi, {0}, 0};
        sm_bytes(&r, obj, t.enc.encoded_bytes);
        float *ref = malloc(N * K * sizeof *ref), *y = malloc(N * K * sizeof *y);
        for (uint64_t n = 0; n < N; n++)
            for (uint64_t k = 0; k < K; k++)
                ref[n * K + k] = nf_gguf_elem(f, obj + n * RB + k / gi.qk * gi.block_bytes,
                                              (unsigned)(k % gi.qk));
        for (size_t ii = 0; ii < sizeof ISAS / sizeof *ISAS; ii++) {
            if (!nf_codec_isa_supported(ISAS[ii]))
                continue;
            nf_codec_set_isa(ISAS[ii]);
            /* odd ranges: inside one block, across blocks and rows */
            uint64_t rg[][2] = {{0, N * K}, {5, 2 * K - 7}, {K + 1, K + 3}, {K - 1, 2 * K + 1}};
            size_t bad = 0;
            for (size_t q = 0; q < 4; q++) {
                uint64_t e0 = rg[q][0], e1 = rg[q][1];
                if (nf_decode_elems_f32(&t, obj, t.enc.encoded_bytes, e0, e1, y))
                    bad++;
                for (uint64_t e = e0; e < e1; e++)
                    bad += canon(y[e - e0]) != canon(ref[e]);
            }
            CHECK(bad == 0, "%s on %s: element ranges equal the per-element reference",
                  nf_format_name(f), nf_isa_name(ISAS[ii]));
            uint16_t *hb = malloc(N * K * 2);
            bad = nf_decode_rows_bf16(&t, obj, t.enc.encoded_bytes, 1, 3, hb) != 0;
            for (uint64_t e = K; e < N * K; e++)
                bad += !isnan(ref[e]) && hb[e - K] != nf_f32_to_bf16(ref[e]);
            CHECK(bad == 0, "%s on %s: rows as bf16 are the f32 values rounded",
                  nf_format_name(f), nf_isa_name(ISAS[ii]));
            free(hb);
        }
        nf_codec_set_isa(NF_ISA_AUTO);
        CHECK(nf_decode_elems_f32(&t, obj, t.enc.encoded_bytes - 1, 0, 1, y) == NF_CODEC_ESHORT,
              "%s: a short object is ESHORT", nf_format_name(f));
        CHECK(nf_decode_rows_f32(&t, obj, t.enc.encoded_bytes, 2, 4, y) == NF_CODEC_ERANGE,
              "%s: rows past the end are ERANGE", nf_format_name(f));
        float src[1] = {0};
        CHECK(nf_encode_rows_f32(&t, src, 0, 0, obj, t.enc.encoded_bytes, NULL, NULL) ==
                  NF_CODEC_EINVAL,
              "%s: the toolkit does not encode into gguf formats", nf_format_name(f));
        free(obj);
        free(ref);
        free(y);
    }
}

/* ---- --deep ---- */

static void deep(void)
{
    uint64_t d[2] = {4, 512};
    nf_tensor_enc t;
    nf_codec_check ck;
    char msg[256];
    /* q4_k: clean, then dmin NaN in row 2 block 1 and d inf in row 3 block 0 */
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q4_K, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL);
    uint8_t *o = calloc(1, t.enc.encoded_bytes);
    for (uint64_t b = 0; b < 8; b++)
        put16(o, (int)(b * 144), 0x3c00);
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 0, "q4_k: finite scales are valid");
    put16(o, 2 * 288 + 144 + 2, 0x7e00);
    put16(o, 3 * 288, 0x7c00);
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 1 && ck.count[NF_CR_SCALE] == 2,
          "q4_k: two non-finite fields, one rule (%llu)", (unsigned long long)ck.count[NF_CR_SCALE]);
    CHECK(ck.first[NF_CR_SCALE].row == 2 && ck.first[NF_CR_SCALE].index == 256 &&
              ck.first[NF_CR_SCALE].value == 0x7e00 &&
              ck.first[NF_CR_SCALE].offset == 2 * 288 + 144 + 2,
          "q4_k: the first finding is row 2, column 256, the dmin bits and offset");
    nf_codec_finding_str(&t, &ck.first[NF_CR_SCALE], msg, sizeof msg);
    CHECK_STR(msg, "row 2, columns 256..511: dmin 0x7e00 is not finite", "q4_k finding text");
    free(o);
    /* q4_1: m is the second field */
    uint64_t d1[2] = {1, 64};
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q4_1, NF_LAY_GGUF_ROWS_V1, d1, 2, 1, NULL);
    o = calloc(1, t.enc.encoded_bytes);
    put16(o, 20 + 2, 0xfc00);
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 1, "q4_1: -inf m found");
    nf_codec_finding_str(&t, &ck.first[NF_CR_SCALE], msg, sizeof msg);
    CHECK_STR(msg, "row 0, columns 32..63: m 0xfc00 is not finite", "q4_1 finding text");
    free(o);
    /* q6_k: d at byte 208 */
    uint64_t d6[2] = {2, 256};
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q6_K, NF_LAY_GGUF_ROWS_V1, d6, 2, 1, NULL);
    o = calloc(1, t.enc.encoded_bytes);
    put16(o, 210 + 208, 0x7c01);
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 1 &&
              ck.first[NF_CR_SCALE].row == 1 && ck.first[NF_CR_SCALE].offset == 418,
          "q6_k: a NaN d in row 1 at byte 418");
    free(o);
    /* mxfp4: E 254 fine, 255 reported */
    uint64_t dm[2] = {2, 64};
    nf_tensor_enc_init(&t, NF_FMT_GGUF_MXFP4, NF_LAY_GGUF_ROWS_V1, dm, 2, 1, NULL);
    o = calloc(1, t.enc.encoded_bytes);
    o[0] = 254;
    o[17] = 0;
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 0, "mxfp4: E 254 and 0 are valid");
    o[34 + 17] = 255;
    CHECK(nf_codec_validate(&t, o, t.enc.encoded_bytes, &ck) == 1 && ck.first[NF_CR_SCALE].row == 1 &&
              ck.first[NF_CR_SCALE].index == 32 && ck.first[NF_CR_SCALE].value == 255,
          "mxfp4: E 255 in row 1 block 1 is found");
    nf_codec_finding_str(&t, &ck.first[NF_CR_SCALE], msg, sizeof msg);
    CHECK_STR(msg, "row 1, columns 32..63: mxfp4 scale E = 0xff (e8m0 nan)", "mxfp4 finding text");
    free(o);
    /* gguf_f16: every pattern valid */
    uint64_t dh[2] = {1, 4};
    nf_tensor_enc_init(&t, NF_FMT_GGUF_F16, NF_LAY_GGUF_ROWS_V1, dh, 2, 1, NULL);
    uint8_t hh[8] = {0x00, 0x7c, 0x01, 0x7e, 0xff, 0xff, 0, 0};
    CHECK(nf_codec_validate(&t, hh, 8, &ck) == 0, "gguf_f16: NaN and inf halves are values, not findings");
}

/* views and plane intervals (DESIGN 8): whole rows are one byte interval of
 * the single plane; anything else is a gather over the rows it touches */
static void views(void)
{
    uint64_t d[2] = {10, 512}, K = 512; /* gguf_q4_k: RB = 2 * 144 = 288 */
    nf_tensor_enc t;
    nf_tensor_enc_init(&t, NF_FMT_GGUF_Q4_K, NF_LAY_GGUF_ROWS_V1, d, 2, 1, NULL);
    nf_plane_span sp[NF_MAX_PLANES];
    bool view = false;
    unsigned n = nf_part_spans(&t, 2 * K, 5 * K, sp, &view);
    CHECK(n == 1 && view && !strcmp(sp[0].plane, "data") && sp[0].offset == 576 && sp[0].bytes == 864,
          "rows [2,5) of gguf_q4_k [10,512]: a view, bytes [576, 1440)");
    n = nf_part_spans(&t, 2 * K + 1, 5 * K, sp, &view);
    CHECK(n == 1 && !view && sp[0].offset == 576 && sp[0].bytes == 864,
          "a range starting inside a row: a gather over rows [2,5)");
    n = nf_part_spans(&t, 3 * K + 256, 4 * K, sp, &view);
    CHECK(n == 1 && !view && sp[0].offset == 864 && sp[0].bytes == 288,
          "a block-aligned part of one row is a gather too (as row_split_k128_v1)");
    CHECK(nf_part_spans(&t, 0, 11 * K, sp, &view) == 0, "a range past the end has no spans");
}

int main(void)
{
    views();
    goldens();
    by_hand();
    api();
    deep();
    return nf_test_done();
}
