/* t_layout.c — names, allowed (format, layout, shape) triples, planes and
 * encoded sizes of DESIGN section 8 / spec 6.2 and 12.3. Every expected
 * size is worked out by hand in the comment beside it. */
#include "nf_layout.h"
#include "nf_test.h"

#define U64(x) ((uint64_t)(x))
#define P2(n) (U64(1) << (n))

static nf_enc_status enc(nf_format f, nf_layout l, const uint64_t *d,
                         unsigned r, uint64_t div, nf_encoding *e)
{
    const char *why = "unset";
    nf_enc_status st = nf_encoding_compute(f, l, d, r, div, e, &why);
    /* why is a message on every failure and NULL on success */
    if ((st == NF_ENC_OK) != (why == NULL))
        CHECK(0, "why is set exactly on failure (status %d)", (int)st);
    return st;
}

/* Size of a format in its default layout, or ~0 when not OK. */
static uint64_t size2(nf_format f, uint64_t n, uint64_t k)
{
    uint64_t d[2] = {n, k};
    nf_encoding e;
    if (enc(f, nf_format_default_layout(f), d, 2, 1, &e) != NF_ENC_OK)
        return ~U64(0);
    return e.encoded_bytes;
}

static void names(void)
{
    for (int i = 0; i < NF_FMT_COUNT_; i++) {
        const char *n = nf_format_name((nf_format)i);
        CHECK(n && nf_format_from_name(n, strlen(n)) == i,
              "format %d name round trip (%s)", i, n ? n : "?");
    }
    for (int i = 0; i < NF_LAY_COUNT_; i++) {
        const char *n = nf_layout_name((nf_layout)i);
        CHECK(n && nf_layout_from_name(n, strlen(n)) == i,
              "layout %d name round trip (%s)", i, n ? n : "?");
    }
    CHECK_STR(nf_format_name(NF_FMT_Q4_G64_FP16), "q4_g64_fp16", "q4 name");
    CHECK_STR(nf_format_name(NF_FMT_FP8_E4M3FN_ROW_BF16),
              "fp8_e4m3fn_row_bf16", "fp8 name");
    CHECK_STR(nf_layout_name(NF_LAY_BLOCK_SCALE_K16_M128X4_V1),
              "block_scale_k16_m128x4_v1", "block scale name");
    CHECK(nf_format_name(NF_FMT_UNKNOWN) == NULL, "unknown format has no name");
    CHECK(nf_format_name(NF_FMT_COUNT_) == NULL, "format past the end has no name");
    CHECK(nf_layout_name(NF_LAY_UNKNOWN) == NULL, "unknown layout has no name");
    CHECK(nf_layout_name(NF_LAY_COUNT_) == NULL, "layout past the end has no name");
    CHECK(nf_format_from_name("bf16\0", 5) == NF_FMT_UNKNOWN, "NUL inside name");
    CHECK(nf_format_from_name("bf1", 3) == NF_FMT_UNKNOWN, "prefix of a name");
    CHECK(nf_format_from_name("bf16x", 4) == NF_FMT_BF16, "explicit length");
    CHECK(nf_format_from_name("BF16", 4) == NF_FMT_UNKNOWN, "case matters");
    CHECK(nf_format_from_name("", 0) == NF_FMT_UNKNOWN, "empty format name");
    CHECK(nf_layout_from_name("row_split_k128_v2", 17) == NF_LAY_UNKNOWN,
          "unknown layout version");
    CHECK(nf_layout_from_name("raw_bytes_v1", 12) == NF_LAY_RAW_BYTES_V1,
          "raw_bytes_v1 is known");

    CHECK(nf_format_default_layout(NF_FMT_BF16) == NF_LAY_CONTIGUOUS_LE_V1, "bf16 layout");
    CHECK(nf_format_default_layout(NF_FMT_INT32) == NF_LAY_CONTIGUOUS_LE_V1, "int32 layout");
    CHECK(nf_format_default_layout(NF_FMT_T2_G128_FP16) == NF_LAY_ROW_SPLIT_K128_V1, "t2 layout");
    CHECK(nf_format_default_layout(NF_FMT_NVFP4) == NF_LAY_BLOCK_SCALE_K16_M128X4_V1, "nvfp4 layout");
    CHECK(nf_format_default_layout(NF_FMT_FP8_E4M3FN_ROW_BF16) == NF_LAY_ROW_SCALE_V1, "fp8 layout");
    CHECK(nf_format_default_layout(NF_FMT_UNKNOWN) == NF_LAY_UNKNOWN, "unknown has no layout");

    nf_rowsplit_info r = nf_rowsplit_info_of(NF_FMT_Q6_G64_FP16);
    CHECK(r.group == 64 && r.base_bits == 4 && r.high_bits == 2 && r.code_bits == 6, "q6 info");
    r = nf_rowsplit_info_of(NF_FMT_Q5_G64_FP16);
    CHECK(r.group == 64 && r.base_bits == 4 && r.high_bits == 1 && r.code_bits == 5, "q5 info");
    r = nf_rowsplit_info_of(NF_FMT_Q8_G32_FP16);
    CHECK(r.group == 32 && r.base_bits == 8 && r.high_bits == 0 && r.code_bits == 8, "q8 info");
    r = nf_rowsplit_info_of(NF_FMT_T2_G128_FP16);
    CHECK(r.group == 128 && r.base_bits == 2 && r.code_bits == 2, "t2 info");
    r = nf_rowsplit_info_of(NF_FMT_Q2_G64_FP16);
    CHECK(r.group == 64 && r.base_bits == 2 && r.code_bits == 2, "q2 info");
    r = nf_rowsplit_info_of(NF_FMT_NVFP4);
    CHECK(r.group == 0 && r.base_bits == 0 && r.code_bits == 0, "nvfp4 has no rowsplit info");
    CHECK(nf_format_elem_bytes(NF_FMT_BF16) == 2 && nf_format_elem_bytes(NF_FMT_FP32) == 4 &&
          nf_format_elem_bytes(NF_FMT_INT32) == 4 && nf_format_elem_bytes(NF_FMT_Q4_G64_FP16) == 0,
          "element bytes");
}

static void spec_vectors(void)
{
    nf_encoding e;
    uint64_t a[2] = {7168, 5120}, p[2] = {14336, 5120};

    /* q4 [7168,5120]: Kp=5120; base 7168*2560 = 18,350,080 (= 71680*256);
     * scales 7168*80*2 = 1,146,880; total 19,496,960. */
    CHECK(enc(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, a, 2, 1, &e) == NF_ENC_OK, "q4 A ok");
    CHECK_EQ_U64(e.encoded_bytes, 19496960, "spec 12.3 q4 [7168,5120]");
    CHECK(e.nplanes == 2, "q4 has 2 planes");
    CHECK_STR(e.plane[0].name, "base", "q4 plane 0 name");
    CHECK_STR(e.plane[1].name, "scales", "q4 plane 1 name");
    CHECK_EQ_U64(e.plane[1].offset, 18350080, "q4 scales offset");
    CHECK_EQ_U64(e.plane[0].row_bytes, 2560, "q4 base row bytes");
    CHECK_EQ_U64(e.plane[1].row_bytes, 160, "q4 scales row bytes");
    CHECK_EQ_U64(e.plane[1].rows, 7168, "q4 scales rows");
    CHECK_EQ_U64(e.elements, 36700160, "q4 elements");

    /* q5: base 18,350,080; high 7168*640 = 4,587,520 -> 22,937,600
     * (= 89600*256); scales 1,146,880 -> 24,084,480. */
    CHECK(enc(NF_FMT_Q5_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, a, 2, 1, &e) == NF_ENC_OK, "q5 B ok");
    CHECK_EQ_U64(e.encoded_bytes, 24084480, "spec 12.3 q5 [7168,5120]");
    CHECK(e.nplanes == 3, "q5 has 3 planes");
    CHECK_STR(e.plane[1].name, "high", "q5 plane 1 name");
    CHECK_EQ_U64(e.plane[1].offset, 18350080, "q5 high offset");
    CHECK_EQ_U64(e.plane[1].row_bytes, 640, "q5 high row bytes");
    CHECK_EQ_U64(e.plane[2].offset, 22937600, "q5 scales offset");

    /* fp8 [14336,5120]: codes 73,400,320 (= 286720*256); row scales
     * 14336*2 = 28,672 -> 73,428,992. */
    CHECK(enc(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_ROW_SCALE_V1, p, 2, 1, &e) == NF_ENC_OK, "fp8 P ok");
    CHECK_EQ_U64(e.encoded_bytes, 73428992, "spec 12.3 fp8 [14336,5120]");
    CHECK_STR(e.plane[0].name, "codes", "fp8 plane 0 name");
    CHECK_STR(e.plane[1].name, "row_scales", "fp8 plane 1 name");
    CHECK_EQ_U64(e.plane[1].offset, 73400320, "fp8 row scales offset");
    CHECK_EQ_U64(e.plane[0].row_bytes, 5120, "fp8 codes row bytes");

    /* nvfp4 [14336,5120]: codes 14336*2560 = 36,700,160; block scales
     * 14336*320 = 4,587,520 -> 41,287,680; one divisor 4 -> 41,287,684. */
    CHECK(enc(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, p, 2, 1, &e) == NF_ENC_OK, "nvfp4 P ok");
    CHECK_EQ_U64(e.encoded_bytes, 41287684, "spec 12.3 nvfp4 [14336,5120]");
    CHECK(e.nplanes == 3, "nvfp4 has 3 planes");
    CHECK_STR(e.plane[0].name, "codes", "nvfp4 plane 0");
    CHECK_STR(e.plane[1].name, "block_scales", "nvfp4 plane 1");
    CHECK_STR(e.plane[2].name, "divisors", "nvfp4 plane 2");
    CHECK_EQ_U64(e.plane[1].offset, 36700160, "nvfp4 block scales offset");
    CHECK_EQ_U64(e.plane[2].offset, 41287680, "nvfp4 divisors offset");
    CHECK_EQ_U64(e.plane[1].row_bytes, 0, "block scales are not per-row");
}

static void other_sizes(void)
{
    /* q2 [7168,5120]: base 7168*1280 = 9,175,040 (= 35840*256);
     * scales 7168*80*2 = 1,146,880 -> 10,321,920. */
    CHECK_EQ_U64(size2(NF_FMT_Q2_G64_FP16, 7168, 5120), 10321920, "q2 [7168,5120]");
    /* t2: base 9,175,040; scales 7168*40*2 = 573,440 -> 9,748,480. */
    CHECK_EQ_U64(size2(NF_FMT_T2_G128_FP16, 7168, 5120), 9748480, "t2 [7168,5120]");
    /* q6: base 18,350,080; high 7168*1280 = 9,175,040 -> 27,525,120
     * (= 107520*256); scales 1,146,880 -> 28,672,000. */
    CHECK_EQ_U64(size2(NF_FMT_Q6_G64_FP16, 7168, 5120), 28672000, "q6 [7168,5120]");
    /* q8: base 7168*5120 = 36,700,160; scales 7168*160*2 = 2,293,760
     * -> 38,993,920. */
    CHECK_EQ_U64(size2(NF_FMT_Q8_G32_FP16, 7168, 5120), 38993920, "q8 [7168,5120]");

    /* K=100 -> Kp=128. */
    /* q4 [3,100]: base 3*64 = 192 -> 256; scales 3*2*2 = 12 -> 268. */
    CHECK_EQ_U64(size2(NF_FMT_Q4_G64_FP16, 3, 100), 268, "q4 [3,100]");
    /* q5 [3,100]: base 192 -> 256; high 3*16 = 48 -> 304 -> 512;
     * scales 12 -> 524. */
    CHECK_EQ_U64(size2(NF_FMT_Q5_G64_FP16, 3, 100), 524, "q5 [3,100]");
    /* q6 [3,100]: base 192 -> 256; high 3*32 = 96 -> 352 -> 512;
     * scales 12 -> 524. */
    CHECK_EQ_U64(size2(NF_FMT_Q6_G64_FP16, 3, 100), 524, "q6 [3,100]");
    /* q8 [3,100]: base 3*128 = 384 -> 512; scales 3*4*2 = 24 -> 536. */
    CHECK_EQ_U64(size2(NF_FMT_Q8_G32_FP16, 3, 100), 536, "q8 [3,100]");
    /* q2 [3,100]: base 3*32 = 96 -> 256; scales 3*2*2 = 12 -> 268. */
    CHECK_EQ_U64(size2(NF_FMT_Q2_G64_FP16, 3, 100), 268, "q2 [3,100]");
    /* t2 [3,100]: base 96 -> 256; scales 3*1*2 = 6 -> 262. */
    CHECK_EQ_U64(size2(NF_FMT_T2_G128_FP16, 3, 100), 262, "t2 [3,100]");
    /* q4 [1,1]: Kp=128; base 64 -> 256; scales 4 -> 260. */
    CHECK_EQ_U64(size2(NF_FMT_Q4_G64_FP16, 1, 1), 260, "q4 [1,1]");
    /* q4 [1,129]: Kp=256; base 128 -> 256; scales 4*2 = 8 -> 264. */
    CHECK_EQ_U64(size2(NF_FMT_Q4_G64_FP16, 1, 129), 264, "q4 [1,129]");
    /* q8 [5,256]: base 5*256 = 1280 (already aligned); scales 5*8*2 = 80
     * -> 1360. */
    CHECK_EQ_U64(size2(NF_FMT_Q8_G32_FP16, 5, 256), 1360, "q8 [5,256]");
    /* q6 [1,128]: base 64 -> 256; high 32 -> 288 -> 512; scales 4 -> 516. */
    CHECK_EQ_U64(size2(NF_FMT_Q6_G64_FP16, 1, 128), 516, "q6 [1,128]");
    /* fp8 [3,100]: codes 300 -> 512; row scales 6 -> 518. */
    CHECK_EQ_U64(size2(NF_FMT_FP8_E4M3FN_ROW_BF16, 3, 100), 518, "fp8 [3,100]");
    /* fp8 [1,1]: codes 1 -> 256; row scales 2 -> 258. */
    CHECK_EQ_U64(size2(NF_FMT_FP8_E4M3FN_ROW_BF16, 1, 1), 258, "fp8 [1,1]");
    /* nvfp4 [128,64]: codes 128*32 = 4096; block scales 128*4 = 512
     * -> 4608; divisor 4 -> 4612. */
    CHECK_EQ_U64(size2(NF_FMT_NVFP4, 128, 64), 4612, "nvfp4 [128,64]");

    nf_encoding e;
    uint64_t d[16];
    /* nvfp4 [256,128] divisors 4: codes 256*64 = 16384; block scales
     * 256*8 = 2048 -> 18432; divisors 4*4 = 16 -> 18448. */
    d[0] = 256; d[1] = 128;
    CHECK(enc(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 4, &e) == NF_ENC_OK,
          "nvfp4 divisors 4 ok");
    CHECK_EQ_U64(e.encoded_bytes, 18448, "nvfp4 [256,128] divisors 4");
    CHECK_EQ_U64(e.plane[2].bytes, 16, "nvfp4 divisors plane bytes");
    /* nvfp4 [256,64] divisors 2: 8192 + 1024 = 9216; + 8 -> 9224. */
    d[0] = 256; d[1] = 64;
    CHECK(enc(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 2, &e) == NF_ENC_OK &&
          e.encoded_bytes == 9224, "nvfp4 [256,64] divisors 2 -> 9224");
    /* nvfp4 [384,64] divisors 3 (N/3 = 128): 12288 + 1536 = 13824; + 12
     * -> 13836. */
    d[0] = 384;
    CHECK(enc(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 3, &e) == NF_ENC_OK &&
          e.encoded_bytes == 13836, "nvfp4 [384,64] divisors 3 -> 13836");

    /* Contiguous formats. */
    /* bf16 [7168,5120]: 36,700,160 * 2 = 73,400,320. */
    CHECK_EQ_U64(size2(NF_FMT_BF16, 7168, 5120), 73400320, "bf16 [7168,5120]");
    /* int32 [3,5]: 15 * 4 = 60. */
    CHECK_EQ_U64(size2(NF_FMT_INT32, 3, 5), 60, "int32 [3,5]");
    /* fp32 [3,5,7]: 105 * 4 = 420. */
    d[0] = 3; d[1] = 5; d[2] = 7;
    CHECK(enc(NF_FMT_FP32, NF_LAY_CONTIGUOUS_LE_V1, d, 3, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 420 && e.elements == 105, "fp32 [3,5,7] -> 420");
    CHECK_STR(e.plane[0].name, "data", "contiguous plane name");
    CHECK(e.nplanes == 1 && e.plane[0].offset == 0 && e.plane[0].rows == 3 &&
          e.plane[0].row_bytes == 140, "fp32 [3,5,7] plane: 3 rows of 140 bytes");
    /* scalars: one element. */
    CHECK(enc(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d, 0, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 2 && e.elements == 1, "bf16 scalar -> 2");
    CHECK(enc(NF_FMT_FP32, NF_LAY_CONTIGUOUS_LE_V1, NULL, 0, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 4, "fp32 scalar -> 4");
    CHECK(enc(NF_FMT_INT32, NF_LAY_CONTIGUOUS_LE_V1, NULL, 0, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 4, "int32 scalar -> 4");
    /* rank 16, every dim 2: 2^16 * 4 = 262,144. */
    for (int i = 0; i < 16; i++)
        d[i] = 2;
    CHECK(enc(NF_FMT_FP32, NF_LAY_CONTIGUOUS_LE_V1, d, 16, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 262144, "fp32 rank 16 of 2s -> 262144");
    /* rank 16, [1 x15, 3] bf16: 3 * 2 = 6. */
    for (int i = 0; i < 15; i++)
        d[i] = 1;
    d[15] = 3;
    CHECK(enc(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d, 16, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == 6, "bf16 rank 16 [1..1,3] -> 6");
    /* largest bf16 that fits: [2^63-1] -> 2^64-2 bytes. */
    d[0] = P2(63) - 1;
    CHECK(enc(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, d, 1, 1, &e) == NF_ENC_OK &&
          e.encoded_bytes == ~U64(0) - 1, "bf16 [2^63-1] -> 2^64-2");
}

static void invalid(void)
{
    nf_encoding e;
    uint64_t d[17] = {128, 64, 2};
    const char *why = NULL;

#define INV(f, l, r, div, what) \
    CHECK(enc(f, l, d, r, div, &e) == NF_ENC_INVALID, "invalid: %s", what)

    INV(NF_FMT_Q4_G64_FP16, NF_LAY_CONTIGUOUS_LE_V1, 2, 1, "q4 with contiguous_le_v1");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_RAW_BYTES_V1, 2, 1, "q4 with raw_bytes_v1");
    INV(NF_FMT_BF16, NF_LAY_RAW_BYTES_V1, 2, 1, "bf16 with raw_bytes_v1");
    INV(NF_FMT_UNKNOWN, NF_LAY_RAW_BYTES_V1, 2, 1, "unknown format with raw_bytes_v1");
    INV(NF_FMT_BF16, NF_LAY_ROW_SPLIT_K128_V1, 2, 1, "bf16 with row_split");
    INV(NF_FMT_FP32, NF_LAY_ROW_SCALE_V1, 2, 1, "fp32 with row_scale");
    INV(NF_FMT_NVFP4, NF_LAY_ROW_SPLIT_K128_V1, 2, 1, "nvfp4 with row_split");
    INV(NF_FMT_NVFP4, NF_LAY_CONTIGUOUS_LE_V1, 2, 1, "nvfp4 with contiguous");
    INV(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 1, "fp8 with block_scale");
    INV(NF_FMT_Q8_G32_FP16, NF_LAY_ROW_SCALE_V1, 2, 1, "q8 with row_scale");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 3, 1, "row_split rank 3");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 1, 1, "row_split rank 1");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 0, 1, "row_split rank 0");
    INV(NF_FMT_UNKNOWN, NF_LAY_ROW_SPLIT_K128_V1, 3, 1, "unknown format, row_split rank 3");
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 3, 1, "block_scale rank 3");
    INV(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_ROW_SCALE_V1, 1, 1, "row_scale rank 1");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 2, 0, "divisors 0");
    INV(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 2, 0, "divisors 0 on bf16");
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 2, 2, "divisors 2 on q4");
    INV(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 2, 2, "divisors 2 on bf16");
    INV(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_ROW_SCALE_V1, 2, 2, "divisors 2 on fp8");
    INV(NF_FMT_UNKNOWN, NF_LAY_CONTIGUOUS_LE_V1, 2, 2, "divisors 2 on unknown format");
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 3, "nvfp4 N=128 divisors 3");
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 256, "nvfp4 N=128 divisors 256");
    CHECK(enc(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 128, &e) == NF_ENC_OK,
          "nvfp4 N=128 divisors 128 is allowed");
    d[0] = 100;
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 1, "nvfp4 N=100");
    nf_encoding_compute(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, d, 2, 1, &e, &why);
    CHECK_STR(why, "nvfp4 needs N % 128 == 0, got N=100", "nvfp4 N message");
    d[0] = 128; d[1] = 100;
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 1, "nvfp4 K=100");
    d[1] = 32;
    INV(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 2, 1, "nvfp4 K=32");
    d[0] = 0; d[1] = 64;
    INV(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 2, 1, "N = 0");
    INV(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 2, 1, "bf16 dim 0");
    INV(NF_FMT_UNKNOWN, NF_LAY_UNKNOWN, 2, 1, "unknown names with dim 0");
    d[0] = 4; d[1] = 0;
    INV(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_ROW_SCALE_V1, 2, 1, "K = 0");
    for (int i = 0; i < 17; i++)
        d[i] = 1;
    INV(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 17, 1, "rank 17");
    nf_encoding_compute(NF_FMT_Q4_G64_FP16, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, &e, &why);
    CHECK(why && strstr(why, "q4_g64_fp16") && strstr(why, "contiguous_le_v1"),
          "mismatch message names both (%s)", why ? why : "null");
#undef INV
}

static void unsupported(void)
{
    nf_encoding e;
    uint64_t d[2] = {128, 64};
    CHECK(enc(NF_FMT_UNKNOWN, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, &e) == NF_ENC_UNSUPPORTED,
          "unknown format, contiguous: unsupported");
    CHECK(enc(NF_FMT_UNKNOWN, NF_LAY_ROW_SPLIT_K128_V1, d, 2, 1, &e) == NF_ENC_UNSUPPORTED,
          "unknown format, row_split rank 2: unsupported");
    CHECK(enc(NF_FMT_Q4_G64_FP16, NF_LAY_UNKNOWN, d, 2, 1, &e) == NF_ENC_UNSUPPORTED,
          "q4, unknown layout: unsupported");
    CHECK(enc(NF_FMT_BF16, NF_LAY_UNKNOWN, d, 1, 1, &e) == NF_ENC_UNSUPPORTED,
          "bf16, unknown layout: unsupported");
    CHECK(enc(NF_FMT_UNKNOWN, NF_LAY_UNKNOWN, d, 2, 1, &e) == NF_ENC_UNSUPPORTED,
          "both unknown: unsupported");
    CHECK(enc((nf_format)NF_FMT_COUNT_, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, &e) ==
          NF_ENC_UNSUPPORTED, "format value out of range: unsupported");
}

static void overflow(void)
{
    nf_encoding e;
    uint64_t d[3];
#define OVF(f, r, what) \
    CHECK(enc(f, nf_format_default_layout(f), d, r, 1, &e) == NF_ENC_OVERFLOW, \
          "overflow: %s", what)
    d[0] = P2(32); d[1] = P2(32);
    OVF(NF_FMT_BF16, 2, "bf16 [2^32,2^32] (elements 2^64)");
    d[0] = P2(62); d[1] = 4;
    OVF(NF_FMT_FP32, 2, "fp32 [2^62,4] (elements 2^64)");
    d[0] = P2(61); d[1] = 4;
    OVF(NF_FMT_FP32, 2, "fp32 [2^61,4] (elements 2^63, bytes 2^65)");
    d[0] = P2(63);
    OVF(NF_FMT_BF16, 1, "bf16 [2^63] (bytes 2^64)");
    d[0] = P2(62); d[1] = 2; d[2] = 2;
    OVF(NF_FMT_INT32, 3, "int32 [2^62,2,2] (elements 2^64)");
    d[0] = 1; d[1] = ~U64(0);
    OVF(NF_FMT_Q4_G64_FP16, 2, "q4 [1,2^64-1] (Kp overflows)");
    d[0] = P2(57); d[1] = 128;
    OVF(NF_FMT_Q8_G32_FP16, 2, "q8 [2^57,128] (base 2^64)");
    d[0] = P2(58); d[1] = 128;
    OVF(NF_FMT_Q5_G64_FP16, 2, "q5 [2^58,128] (base 2^64)");
    d[0] = P2(56) + 1; d[1] = 128;
    /* q4 base = (2^56+1)*64 fits (2^62+64); high none; scales 4 each
     * -> fits; ok. q6 base 2^62+64, high (2^56+1)*32 -> 2^61+32,
     * scales fit: fits too. */
    CHECK(size2(NF_FMT_Q6_G64_FP16, P2(56) + 1, 128) != ~U64(0), "q6 [2^56+1,128] fits");
    d[0] = P2(63); d[1] = 1;
    OVF(NF_FMT_FP8_E4M3FN_ROW_BF16, 2, "fp8 [2^63,1] (row scales 2^64)");
    d[0] = 1; d[1] = ~U64(0);
    OVF(NF_FMT_FP8_E4M3FN_ROW_BF16, 2, "fp8 [1,2^64-1] (plane alignment)");
    d[0] = P2(62); d[1] = 64;
    OVF(NF_FMT_NVFP4, 2, "nvfp4 [2^62,64] (elements 2^68)");
    d[0] = P2(32); d[1] = P2(32);
    CHECK(enc(NF_FMT_UNKNOWN, NF_LAY_CONTIGUOUS_LE_V1, d, 2, 1, &e) == NF_ENC_OVERFLOW,
          "elements overflow is reported before unsupported");
#undef OVF
}

static void shape_str(void)
{
    char b[64];
    uint64_t d[3] = {7168, 5120, 3};
    nf_shape_str(d, 2, b, sizeof b);
    CHECK_STR(b, "7168x5120", "shape str rank 2");
    nf_shape_str(d, 0, b, sizeof b);
    CHECK_STR(b, "scalar", "shape str scalar");
    nf_shape_str(d, 1, b, sizeof b);
    CHECK_STR(b, "7168", "shape str rank 1");
    nf_shape_str(d, 3, b, 6);
    CHECK_STR(b, "7168x", "shape str truncated to the buffer");
    uint64_t m = ~U64(0);
    nf_shape_str(&m, 1, b, sizeof b);
    CHECK_STR(b, "18446744073709551615", "shape str U64 max");
    uint64_t el = 0;
    CHECK(nf_shape_elements(d, 0, &el) && el == 1, "elements of scalar = 1");
    CHECK(nf_shape_elements(d, 3, &el) && el == U64(7168) * 5120 * 3, "elements rank 3");
}

/* gguf_rows_v1 (DESIGN 8): N * (K/QK) * B, one plane. [7168,5120]: K/256 =
 * 20, K/32 = 160. q4_k 20*144 = 2880/row -> 20,643,840; q6_k 20*210 = 4200
 * -> 30,105,600; q8_0 160*34 = 5440 -> 38,993,920 (DESIGN 8's vectors);
 * q4_0 160*18 = 2880; q5_k 20*176 = 3520 -> 25,231,360; iq4_xs 20*136 = 2720
 * and mxfp4 160*17 = 2720 -> 19,496,960 (GGUF.md 3.2). */
static void gguf(void)
{
    uint64_t a[2] = {7168, 5120};
    static const struct {
        nf_format f;
        uint64_t bytes, row;
    } v[] = {
        {NF_FMT_GGUF_Q4_K, 20643840, 2880}, {NF_FMT_GGUF_Q6_K, 30105600, 4200},
        {NF_FMT_GGUF_Q8_0, 38993920, 5440}, {NF_FMT_GGUF_Q4_0, 20643840, 2880},
        {NF_FMT_GGUF_Q5_K, 25231360, 3520}, {NF_FMT_GGUF_IQ4_XS, 19496960, 2720},
        {NF_FMT_GGUF_MXFP4, 19496960, 2720}, {NF_FMT_GGUF_F16, 73400320, 10240},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        nf_encoding e;
        CHECK(enc(v[i].f, NF_LAY_GGUF_ROWS_V1, a, 2, 1, &e) == NF_ENC_OK, "%s [7168,5120] ok",
              nf_format_name(v[i].f));
        CHECK_EQ_U64(e.encoded_bytes, v[i].bytes, "%s [7168,5120] bytes", nf_format_name(v[i].f));
        CHECK(e.nplanes == 1 && e.plane[0].offset == 0 && e.plane[0].rows == 7168 &&
                  e.plane[0].row_bytes == v[i].row && strcmp(e.plane[0].name, "data") == 0,
              "%s: one plane \"data\" of 7168 rows of %llu bytes", nf_format_name(v[i].f),
              (unsigned long long)v[i].row);
    }
    /* the other block sizes: [2,256] */
    static const struct {
        nf_format f;
        unsigned qk, b, type;
    } g[] = {
        {NF_FMT_GGUF_F16, 1, 2, 1},       {NF_FMT_GGUF_Q8_0, 32, 34, 8},
        {NF_FMT_GGUF_Q4_0, 32, 18, 2},    {NF_FMT_GGUF_Q4_1, 32, 20, 3},
        {NF_FMT_GGUF_Q5_0, 32, 22, 6},    {NF_FMT_GGUF_Q5_1, 32, 24, 7},
        {NF_FMT_GGUF_IQ4_NL, 32, 18, 20}, {NF_FMT_GGUF_MXFP4, 32, 17, 39},
        {NF_FMT_GGUF_Q2_K, 256, 84, 10},  {NF_FMT_GGUF_Q3_K, 256, 110, 11},
        {NF_FMT_GGUF_Q4_K, 256, 144, 12}, {NF_FMT_GGUF_Q5_K, 256, 176, 13},
        {NF_FMT_GGUF_Q6_K, 256, 210, 14}, {NF_FMT_GGUF_IQ4_XS, 256, 136, 23},
    };
    CHECK(sizeof g / sizeof *g == 14, "14 first-wave gguf formats");
    for (size_t i = 0; i < sizeof g / sizeof *g; i++) {
        nf_gguf_info gi = nf_gguf_info_of(g[i].f);
        const char *n = nf_format_name(g[i].f);
        CHECK(nf_format_is_gguf(g[i].f) && gi.qk == g[i].qk && gi.block_bytes == g[i].b &&
                  gi.ggml_type == g[i].type,
              "%s: QK %u, B %u, ggml type %u", n, g[i].qk, g[i].b, g[i].type);
        CHECK(nf_format_of_ggml_type(g[i].type) == g[i].f, "ggml type %u -> %s", g[i].type, n);
        CHECK(nf_format_default_layout(g[i].f) == NF_LAY_GGUF_ROWS_V1, "%s takes gguf_rows_v1", n);
        CHECK_EQ_U64(size2(g[i].f, 2, 256), 2ull * 256 / g[i].qk * g[i].b, "%s [2,256]", n);
        uint64_t k1[2] = {3, 256 + (g[i].qk > 1 ? 16 : 0)};
        nf_encoding e;
        if (g[i].qk > 1)
            CHECK(enc(g[i].f, NF_LAY_GGUF_ROWS_V1, k1, 2, 1, &e) == NF_ENC_INVALID,
                  "%s with K %% QK != 0 is encoding", n);
        uint64_t r3[3] = {2, 2, 256};
        CHECK(enc(g[i].f, NF_LAY_GGUF_ROWS_V1, r3, 3, 1, &e) == NF_ENC_INVALID &&
                  enc(g[i].f, NF_LAY_GGUF_ROWS_V1, r3 + 2, 1, 1, &e) == NF_ENC_INVALID,
              "%s: rank 3 and rank 1 are encoding", n);
        CHECK(enc(g[i].f, NF_LAY_ROW_SPLIT_K128_V1, r3 + 1, 2, 1, &e) == NF_ENC_INVALID &&
                  enc(g[i].f, NF_LAY_CONTIGUOUS_LE_V1, r3 + 1, 2, 1, &e) == NF_ENC_INVALID,
              "%s: other layouts are encoding", n);
        CHECK(enc(g[i].f, NF_LAY_GGUF_ROWS_V1, r3 + 1, 2, 2, &e) == NF_ENC_INVALID,
              "%s: divisors 2 is encoding", n);
    }
    uint64_t bad[2] = {7168, 5121};
    nf_encoding e;
    const char *why = NULL;
    CHECK(nf_encoding_compute(NF_FMT_GGUF_Q4_K, NF_LAY_GGUF_ROWS_V1, bad, 2, 1, &e, &why) ==
              NF_ENC_INVALID && why && strstr(why, "K % 256 == 0"),
          "gguf_q4_k with K = 5121 is encoding (%s)", why ? why : "?");
    CHECK(enc(NF_FMT_Q4_G64_FP16, NF_LAY_GGUF_ROWS_V1, a, 2, 1, &e) == NF_ENC_INVALID,
          "q4_g64_fp16 does not take gguf_rows_v1");
    uint64_t big[2] = {UINT64_MAX / 2, 512};
    CHECK(enc(NF_FMT_GGUF_Q6_K, NF_LAY_GGUF_ROWS_V1, big, 2, 1, &e) == NF_ENC_OVERFLOW,
          "gguf_q6_k: N*RB beyond U64 is range");

    /* the reserved later wave: unknown formats, recognised by name */
    static const char *const res[] = {"gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq2_s", "gguf_iq3_xxs",
                                      "gguf_iq3_s",   "gguf_iq1_s",  "gguf_iq1_m", "gguf_tq1_0",
                                      "gguf_tq2_0",   "gguf_nvfp4",  "gguf_q1_0",  "gguf_q2_0"};
    for (size_t i = 0; i < 12; i++) {
        CHECK(nf_format_from_name(res[i], strlen(res[i])) == NF_FMT_UNKNOWN &&
                  nf_format_is_reserved(res[i], strlen(res[i])),
              "%s is reserved and unknown to this build", res[i]);
    }
    CHECK(!nf_format_is_reserved("gguf_q4_k", 9) && !nf_format_is_reserved("gguf_iq2", 8) &&
              !nf_format_is_reserved("gguf_q2_0\0", 10),
          "only the exact reserved names are reserved");
    static const uint32_t rt[] = {16, 17, 18, 19, 21, 22, 29, 34, 35, 40, 41, 42};
    static const char *const rn[] = {"gguf_iq2_xxs", "gguf_iq2_xs", "gguf_iq3_xxs", "gguf_iq1_s",
                                     "gguf_iq3_s",   "gguf_iq2_s",  "gguf_iq1_m",   "gguf_tq1_0",
                                     "gguf_tq2_0",   "gguf_nvfp4",  "gguf_q1_0",    "gguf_q2_0"};
    for (size_t i = 0; i < 12; i++)
        CHECK(nf_format_of_ggml_type(rt[i]) == NF_FMT_UNKNOWN &&
                  nf_gguf_reserved_name(rt[i]) && !strcmp(nf_gguf_reserved_name(rt[i]), rn[i]),
              "ggml type %u is the reserved %s", rt[i], rn[i]);
    static const uint32_t none[] = {0, 9, 15, 24, 28, 30, 31, 43, 1000};
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        CHECK(nf_format_of_ggml_type(none[i]) == NF_FMT_UNKNOWN && !nf_gguf_reserved_name(none[i]),
              "ggml type %u has no gguf format", none[i]);
    CHECK(!nf_format_is_gguf(NF_FMT_BF16) && !nf_format_is_gguf(NF_FMT_UNKNOWN) &&
              nf_gguf_info_of(NF_FMT_NVFP4).qk == 0,
          "our own formats are not gguf formats");
}

/* The row-range view rule and the nvfp4 tile size (DESIGN 8), which the
 * binder (nf_view_spans), the runner and the kernels share. */
static void views(void)
{
    CHECK(nf_rows_are_view(NF_LAY_ROW_SPLIT_K128_V1, 3, 5), "row_split: rows [3,5) are a view");
    CHECK(nf_rows_are_view(NF_LAY_GGUF_ROWS_V1, 0, 1), "gguf_rows_v1: row 0 is a view");
    CHECK(nf_rows_are_view(NF_LAY_ROW_SCALE_V1, 7, 8), "row_scale: row 7 is a view");
    CHECK(nf_rows_are_view(NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 128, 384),
          "nvfp4: rows [128,384) (two 128-row blocks) are a view");
    CHECK(!nf_rows_are_view(NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 0, 64),
          "nvfp4: rows [0,64) cut a 128-row block: not a view");
    CHECK(!nf_rows_are_view(NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 64, 128),
          "nvfp4: rows [64,128) start inside a block: not a view");
    CHECK(!nf_rows_are_view(NF_LAY_ROW_SPLIT_K128_V1, 4, 4), "an empty range is not a view");
    /* [128,5120]: 80 tiles of 128x64, 512 bytes each; the plane is N*K/16 */
    CHECK_EQ_U64(nf_nvfp4_tile_row_bytes(5120), 40960, "nvfp4 K=5120: 40960 tile bytes per 128 rows");
    CHECK_EQ_U64(nf_nvfp4_scale_index(128, 0, 5120), 40960, "row 128 starts the second tile row");
    CHECK_EQ_U64(nf_nvfp4_scale_index(127, 319, 5120), 40959, "(127, 319) is the last byte of the first");
}

int main(void)
{
    names();
    views();
    gguf();
    spec_vectors();
    other_sizes();
    invalid();
    unsupported();
    overflow();
    shape_str();
    return nf_test_done();
}
