/* t_binder.c — the binder's view arithmetic (nf_part_spans, DESIGN 8: which
 * element ranges are zero-copy views and which byte intervals of each plane
 * a part needs), worked out by hand for every layout, and the architecture
 * table's small queries. */
#include <string.h>

#include "nf_binder.h"
#include "nf_test.h"

static unsigned spans(nf_format f, nf_layout l, uint64_t n, uint64_t k, uint64_t b, uint64_t e,
                      nf_plane_span *sp, bool *view)
{
    uint64_t dims[2] = {n, k};
    nf_tensor_enc te;
    if (nf_tensor_enc_init(&te, f, l, dims, 2, 1, NULL) != NF_ENC_OK)
        return 99;
    return nf_part_spans(&te, b, e, sp, view);
}

int main(void)
{
    nf_plane_span sp[NF_MAX_PLANES];
    bool view;

    /* contiguous bf16 [4,8]: any range is one interval: [3,11) -> bytes [6,22) */
    unsigned n = spans(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 4, 8, 3, 11, sp, &view);
    CHECK(n == 1 && view && sp[0].offset == 6 && sp[0].bytes == 16 && !strcmp(sp[0].plane, "data"),
          "contiguous: elements [3,11) are bytes [6,22), a view");
    n = spans(NF_FMT_FP32, NF_LAY_CONTIGUOUS_LE_V1, 4, 8, 0, 32, sp, &view);
    CHECK(n == 1 && view && sp[0].offset == 0 && sp[0].bytes == 128, "contiguous: the whole fp32 object");

    /* q4 [4,128]: base 64 bytes per row (rows at 0), scales 2 x 2 bytes per
     * row in the plane at align_up(256, 256) = 256. Rows [1,4) = elements
     * [128,512): base [64,256), scales [260,272). */
    n = spans(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 4, 128, 128, 512, sp, &view);
    CHECK(n == 2 && view && sp[0].offset == 64 && sp[0].bytes == 192 && sp[1].offset == 260 &&
          sp[1].bytes == 12 && !strcmp(sp[1].plane, "scales"),
          "row_split q4: whole rows [1,4) are one interval per plane");
    n = spans(NF_FMT_Q4_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 4, 128, 130, 384, sp, &view);
    CHECK(n == 2 && !view && sp[0].offset == 64 && sp[0].bytes == 128,
          "row_split q4: a range inside rows is a gather over the rows it touches");
    /* q5 [2,100]: Kp 128; base 64/row, high 16/row at 256, scales 4/row at 512 */
    n = spans(NF_FMT_Q5_G64_FP16, NF_LAY_ROW_SPLIT_K128_V1, 2, 100, 100, 200, sp, &view);
    CHECK(n == 3 && view && sp[0].offset == 64 && sp[1].offset == 256 + 16 && sp[1].bytes == 16 &&
          sp[2].offset == 512 + 4 && sp[2].bytes == 4,
          "row_split q5 with padding: row 1 is K=100 elements, planes base/high/scales");

    /* fp8 row scale [4,16]: codes 16 per row, row scales 2 per row at 256 */
    n = spans(NF_FMT_FP8_E4M3FN_ROW_BF16, NF_LAY_ROW_SCALE_V1, 4, 16, 16, 48, sp, &view);
    CHECK(n == 2 && view && sp[0].offset == 16 && sp[0].bytes == 32 && sp[1].offset == 258 &&
          sp[1].bytes == 4, "row_scale fp8: rows [1,3)");

    /* nvfp4 [256,64]: codes 32 per row; scale tiles of 512 bytes per 128
     * rows (K/64 = 1 tile column) at align_up(8192,256) = 8192; divisors at
     * align_up(9216,256) = 9216. Rows [128,256) = elements [8192,16384). */
    n = spans(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 256, 64, 8192, 16384, sp, &view);
    CHECK(n == 3 && view && sp[0].offset == 4096 && sp[0].bytes == 4096 && sp[1].offset == 8192 + 512 &&
          sp[1].bytes == 512 && sp[2].offset == 9216 && sp[2].bytes == 4,
          "nvfp4: a whole 128-row block is a codes, a scale-tile and a divisor interval");
    n = spans(NF_FMT_NVFP4, NF_LAY_BLOCK_SCALE_K16_M128X4_V1, 256, 64, 64 * 64, 16384, sp, &view);
    CHECK(n == 3 && !view && sp[0].offset == 0 && sp[0].bytes == 8192,
          "nvfp4: rows [64,256) cross a 128-row block: a gather over both blocks");

    n = spans(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 4, 8, 5, 5, sp, &view);
    CHECK(n == 0, "an empty range has no spans");
    n = spans(NF_FMT_BF16, NF_LAY_CONTIGUOUS_LE_V1, 4, 8, 0, 33, sp, &view);
    CHECK(n == 0, "a range past the object has no spans");

    CHECK(nf_arch_known("Qwen3_5ForCausalLM") && nf_arch_known("Qwen3NextMTP") &&
          !nf_arch_known("GPT2LMHeadModel") && !nf_arch_known(NULL), "known architectures");
    CHECK(!strcmp(nf_arch_target_architecture("Qwen3_5MTP"), "Qwen3_5ForCausalLM") &&
          !strcmp(nf_arch_target_architecture("Qwen3NextMTP"), "Qwen3NextForCausalLM") &&
          nf_arch_target_architecture("LlamaForCausalLM") == NULL, "targets of the MTP components");
    return nf_test_done();
}
