/* nf-mkarch — write a tiny deterministic Hugging Face checkpoint of one
 * architecture family for the binder and import tests (DESIGN 12: fixtures
 * are generated at test time by small C tools).
 *
 *   nf-mkarch --arch FAMILY [--mtp] [--tied] [--language-model] [--dtype T]
 *             [--vocab V] [--layers L] [--experts E] [--seed N] [--grid T] DIR
 *
 * FAMILY: llama, qwen2, qwen3, qwen3moe, qwen3next, qwen3_5, qwen3_5moe (a
 * flat Qwen3_5MoeForConditionalGeneration config with model_type
 * qwen3_5_moe_text and no decoder_sparse_step, as the real one in
 * ../shared/realdata/qwen3.5-moe-frontend), spec121 (the spec's small
 * Qwen3.5 Text example of 12.1: H=128, I=256, Nq=Nkv=1, D=128, one
 * full-attention layer, vocab 248320, four frontend resources).
 * Writes config.json, model.safetensors (weights in --dtype: bf16, f32 or
 * f16; vectors F32 unless --dtype f16), tokenizer.json,
 * tokenizer_config.json, chat_template.jinja and generation_config.json.
 * --mtp adds Qwen3-Next / Qwen3.5 mtp.* tensors; --language-model writes a
 * multimodal config (text_config) and prefixes tensor names with
 * model.language_model. (Qwen3.5). --layers L and --experts E change the
 * layer count and (MoE families) the expert count; a hybrid family given
 * --layers puts full attention on every 4th layer (3, 7, ...), as
 * Qwen3-Next-80B and Qwen3.5 do (`--arch qwen3next --layers 48 --experts 512`
 * has Qwen3-Next-80B's 74,391 tensors, with tiny hidden sizes; the
 * catalog benchmark, scripts/bench-catalog.sh, uses it). --grid q8_0|q4_0
 * puts every matrix's values on a grid that ggml's reference quantizer of
 * that type represents exactly, whatever 8-column-aligned column order a
 * converter gives a row (q8_0: k/256, |k| <= 127, with +-127/256 at every
 * 8th column; q4_0: k/16, -8 <= k <= 7, with -8/16 at every 8th column), so
 * a quantized GGUF of the checkpoint decodes to its values bit for bit.
 *
 * The tensor names and shapes are written here from the Hugging Face
 * modelling code, independently of the binder (common/model/arch/), so the tests
 * check the binder against a second reading. Standalone: libc and the
 * header-only nf_fp.h / nf_util.h.
 *
 * Exit status: 0 ok, 2 usage, 3 I/O error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_fp.h"
#include "nf_util.h"

#define PROG "nf-mkarch"

typedef struct {
    char name[160];
    unsigned rank;
    uint64_t dims[3];
    bool vector; /* 1-D: F32 unless --dtype f16 */
} tensor;

static tensor *T;
static size_t nT, capT;

static void add(bool vector, unsigned rank, uint64_t a, uint64_t b, uint64_t c, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void add(bool vector, unsigned rank, uint64_t a, uint64_t b, uint64_t c, const char *fmt, ...)
{
    if (nT == capT) {
        capT = capT ? capT * 2 : 256;
        T = realloc(T, capT * sizeof *T);
        if (!T) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(3);
        }
    }
    tensor *t = &T[nT++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->rank = rank;
    t->dims[0] = a;
    t->dims[1] = b;
    t->dims[2] = c;
    t->vector = vector;
}
#define W(a, b, ...) add(false, 2, a, b, 0, __VA_ARGS__)
#define V(a, ...) add(true, 1, a, 0, 0, __VA_ARGS__)

typedef struct {
    const char *arch;
    uint64_t H, I, L, Nq, Nkv, D, V;
    bool qkv_bias, qk_norm, gated, tied;
    uint64_t E, Im, Is;          /* MoE */
    uint64_t mlp_only;           /* a dense layer index among MoE ones, or ~0 */
    uint64_t Hk, Hv, Dk, Dv, K;  /* linear attention */
    bool split;                  /* Qwen3.5 in_proj_qkv/z/b/a */
    bool no_sparse_step;         /* leave decoder_sparse_step out (HF default 1) */
    const char *layer_kinds;     /* 'f' full / 'l' linear per layer */
} fam;

static void attention(const fam *f, const char *p)
{
    uint64_t Q = f->Nq * f->D, KV = f->Nkv * f->D;
    W(f->gated ? 2 * Q : Q, f->H, "%s.self_attn.q_proj.weight", p);
    W(KV, f->H, "%s.self_attn.k_proj.weight", p);
    W(KV, f->H, "%s.self_attn.v_proj.weight", p);
    W(f->H, Q, "%s.self_attn.o_proj.weight", p);
    if (f->qkv_bias) {
        V(Q, "%s.self_attn.q_proj.bias", p);
        V(KV, "%s.self_attn.k_proj.bias", p);
        V(KV, "%s.self_attn.v_proj.bias", p);
    }
    if (f->qk_norm) {
        V(f->D, "%s.self_attn.q_norm.weight", p);
        V(f->D, "%s.self_attn.k_norm.weight", p);
    }
}

static void linear(const fam *f, const char *p)
{
    uint64_t KW = f->Hk * f->Dk, VW = f->Hv * f->Dv, C = 2 * KW + VW;
    if (f->split) {
        W(C, f->H, "%s.linear_attn.in_proj_qkv.weight", p);
        W(VW, f->H, "%s.linear_attn.in_proj_z.weight", p);
        W(f->Hv, f->H, "%s.linear_attn.in_proj_b.weight", p);
        W(f->Hv, f->H, "%s.linear_attn.in_proj_a.weight", p);
    } else {
        W(C + VW, f->H, "%s.linear_attn.in_proj_qkvz.weight", p);
        W(2 * f->Hv, f->H, "%s.linear_attn.in_proj_ba.weight", p);
    }
    add(false, 3, C, 1, f->K, "%s.linear_attn.conv1d.weight", p);
    V(f->Hv, "%s.linear_attn.dt_bias", p);
    V(f->Hv, "%s.linear_attn.A_log", p);
    V(f->Dv, "%s.linear_attn.norm.weight", p);
    W(f->H, VW, "%s.linear_attn.out_proj.weight", p);
}

static void mlp(const fam *f, const char *p, bool moe)
{
    if (!moe) {
        W(f->I, f->H, "%s.mlp.gate_proj.weight", p);
        W(f->I, f->H, "%s.mlp.up_proj.weight", p);
        W(f->H, f->I, "%s.mlp.down_proj.weight", p);
        return;
    }
    W(f->E, f->H, "%s.mlp.gate.weight", p);
    for (uint64_t e = 0; e < f->E; e++) {
        W(f->Im, f->H, "%s.mlp.experts.%llu.gate_proj.weight", p, (unsigned long long)e);
        W(f->Im, f->H, "%s.mlp.experts.%llu.up_proj.weight", p, (unsigned long long)e);
        W(f->H, f->Im, "%s.mlp.experts.%llu.down_proj.weight", p, (unsigned long long)e);
    }
    if (f->Is) {
        W(f->Is, f->H, "%s.mlp.shared_expert.gate_proj.weight", p);
        W(f->Is, f->H, "%s.mlp.shared_expert.up_proj.weight", p);
        W(f->H, f->Is, "%s.mlp.shared_expert.down_proj.weight", p);
        W(1, f->H, "%s.mlp.shared_expert_gate.weight", p);
    }
}

static void layer(const fam *f, const char *p, bool full, bool moe)
{
    V(f->H, "%s.input_layernorm.weight", p);
    if (full)
        attention(f, p);
    else
        linear(f, p);
    V(f->H, "%s.post_attention_layernorm.weight", p);
    mlp(f, p, moe);
}

/* ---- output ---------------------------------------------------------------------- */

static uint64_t rng;
static float next_val(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) & 0xffff) / 65536.0f - 0.5f; /* [-0.5, 0.5) */
}

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

static int write_text(const char *dir, const char *name, const char *text)
{
    return write_file(dir, name, text, strlen(text));
}

static int grid; /* 0 none, 8 q8_0, 4 q4_0 */

/* A value of the --grid: column col of a matrix row. */
static float grid_val(uint64_t col)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    uint64_t r = rng >> 40;
    if (grid == 8)
        return col % 8 == 0 ? (r & 1 ? 127.0f : -127.0f) / 256.0f
                            : (float)((int64_t)(r % 255) - 127) / 256.0f;
    return col % 8 == 0 ? -0.5f : (float)((int64_t)(r % 16) - 8) / 16.0f;
}

static int write_safetensors(const char *dir, const char *dtype)
{
    unsigned wb = !strcmp(dtype, "f32") ? 4 : 2;
    const char *wname = !strcmp(dtype, "f32") ? "F32" : !strcmp(dtype, "f16") ? "F16" : "BF16";
    bool f16 = !strcmp(dtype, "f16");
    char *hdr = NULL;
    size_t hl = 0;
    FILE *h = open_memstream(&hdr, &hl);
    fputs("{\"__metadata__\":{\"format\":\"pt\"}", h);
    uint64_t off = 0;
    for (size_t i = 0; i < nT; i++) {
        tensor *t = &T[i];
        unsigned eb = t->vector && !f16 ? 4 : wb;
        uint64_t el = 1;
        for (unsigned k = 0; k < t->rank; k++)
            el *= t->dims[k];
        fprintf(h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name,
                t->vector && !f16 ? "F32" : wname);
        for (unsigned k = 0; k < t->rank; k++)
            fprintf(h, "%s%llu", k ? "," : "", (unsigned long long)t->dims[k]);
        fprintf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                (unsigned long long)(off + el * eb));
        off += el * eb;
    }
    fputc('}', h);
    fclose(h);
    while (hl % 8)
        hdr = realloc(hdr, hl + 2), hdr[hl++] = ' ', hdr[hl] = 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        free(hdr);
        return -1;
    }
    unsigned char len[8];
    nf_store_le64(len, hl);
    fwrite(len, 1, 8, f);
    fwrite(hdr, 1, hl, f);
    free(hdr);
    unsigned char buf[1 << 16];
    size_t bn = 0;
    for (size_t i = 0; i < nT; i++) {
        tensor *t = &T[i];
        unsigned eb = t->vector && !f16 ? 4 : wb;
        uint64_t el = 1;
        for (unsigned k = 0; k < t->rank; k++)
            el *= t->dims[k];
        for (uint64_t e = 0; e < el; e++) {
            float v = grid && t->rank == 2 ? grid_val(e % t->dims[1]) : next_val();
            if (t->vector)
                v = 1.0f + v / 4;
            if (eb == 4) {
                uint32_t w = nf_f32_bits(v);
                memcpy(buf + bn, &w, 4);
            } else {
                uint16_t w = f16 ? nf_f32_to_fp16(v) : nf_f32_to_bf16(v);
                memcpy(buf + bn, &w, 2);
            }
            bn += eb;
            if (bn + 4 > sizeof buf) {
                fwrite(buf, 1, bn, f);
                bn = 0;
            }
        }
    }
    fwrite(buf, 1, bn, f);
    if (ferror(f) || fclose(f) != 0) {
        fprintf(stderr, PROG ": %s: write error\n", path);
        return -1;
    }
    return 0;
}

static const char usage_text[] =
    "usage: " PROG " --arch FAMILY [--mtp] [--tied] [--language-model] [--dtype bf16|f32|f16]\n"
    "       [--vocab V] [--layers L] [--experts E] [--seed N] [--grid q8_0|q4_0] DIR\n"
    "FAMILY: llama qwen2 qwen3 qwen3moe qwen3next qwen3_5 qwen3_5moe spec121\n";

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"arch", required_argument, 0, 'a'}, {"mtp", no_argument, 0, 'm'},
        {"tied", no_argument, 0, 't'},       {"language-model", no_argument, 0, 'l'},
        {"dtype", required_argument, 0, 'd'}, {"vocab", required_argument, 0, 'v'},
        {"seed", required_argument, 0, 's'}, {"help", no_argument, 0, 'h'},
        {"layers", required_argument, 0, 'L'}, {"experts", required_argument, 0, 'E'},
        {"grid", required_argument, 0, 'g'}, {0, 0, 0, 0},
    };
    const char *arch = NULL, *dtype = "bf16";
    bool mtp = false, tied = false, lm = false;
    uint64_t seed = 1, vocab = 0, layers = 0, experts = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'a': arch = optarg; break;
        case 'm': mtp = true; break;
        case 't': tied = true; break;
        case 'l': lm = true; break;
        case 'd': dtype = optarg; break;
        case 'v':
            if (!nf_parse_u64(optarg, &vocab) || !vocab) {
                fputs(usage_text, stderr);
                return 2;
            }
            break;
        case 'L':
            if (!nf_parse_u64(optarg, &layers) || !layers || layers > 16384) {
                fputs(usage_text, stderr);
                return 2;
            }
            break;
        case 'E':
            if (!nf_parse_u64(optarg, &experts) || !experts || experts > 4096) {
                fputs(usage_text, stderr);
                return 2;
            }
            break;
        case 's':
            if (!nf_parse_u64(optarg, &seed)) {
                fputs(usage_text, stderr);
                return 2;
            }
            break;
        case 'g':
            grid = !strcmp(optarg, "q8_0") ? 8 : !strcmp(optarg, "q4_0") ? 4 : -1;
            if (grid < 0) {
                fputs(usage_text, stderr);
                return 2;
            }
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (!arch || optind + 1 != argc ||
        (strcmp(dtype, "bf16") && strcmp(dtype, "f32") && strcmp(dtype, "f16"))) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *dir = argv[optind];
    rng = seed * 0x9e3779b97f4a7c15ull + 1;
    fam f;
    memset(&f, 0, sizeof f);
    f.mlp_only = ~0ull;
    f.tied = tied;
    const char *hf_arch, *model_type;
    if (!strcmp(arch, "llama")) {
        f = (fam){.H = 64, .I = 96, .L = 2, .Nq = 4, .Nkv = 2, .D = 16, .V = 128, .tied = tied,
                  .mlp_only = ~0ull};
        hf_arch = "LlamaForCausalLM", model_type = "llama";
    } else if (!strcmp(arch, "qwen2")) {
        f = (fam){.H = 64, .I = 96, .L = 2, .Nq = 4, .Nkv = 2, .D = 16, .V = 128,
                  .qkv_bias = true, .tied = tied, .mlp_only = ~0ull};
        hf_arch = "Qwen2ForCausalLM", model_type = "qwen2";
    } else if (!strcmp(arch, "qwen3")) {
        f = (fam){.H = 64, .I = 96, .L = 2, .Nq = 4, .Nkv = 2, .D = 32, .V = 128,
                  .qk_norm = true, .tied = tied, .mlp_only = ~0ull};
        hf_arch = "Qwen3ForCausalLM", model_type = "qwen3";
    } else if (!strcmp(arch, "qwen3moe")) {
        f = (fam){.H = 64, .I = 96, .L = 3, .Nq = 4, .Nkv = 2, .D = 16, .V = 128,
                  .qk_norm = true, .tied = tied, .E = 4, .Im = 32, .mlp_only = 1};
        hf_arch = "Qwen3MoeForCausalLM", model_type = "qwen3_moe";
    } else if (!strcmp(arch, "qwen3next")) {
        f = (fam){.H = 64, .I = 96, .L = 4, .Nq = 2, .Nkv = 1, .D = 32, .V = 96, .qk_norm = true,
                  .gated = true, .tied = tied, .E = 4, .Im = 16, .Is = 24, .mlp_only = ~0ull,
                  .Hk = 2, .Hv = 4, .Dk = 16, .Dv = 8, .K = 4, .layer_kinds = "lflf"};
        hf_arch = "Qwen3NextForCausalLM", model_type = "qwen3_next";
    } else if (!strcmp(arch, "qwen3_5")) {
        f = (fam){.H = 64, .I = 96, .L = 4, .Nq = 2, .Nkv = 1, .D = 32, .V = 96, .qk_norm = true,
                  .gated = true, .tied = tied, .mlp_only = ~0ull, .Hk = 2, .Hv = 4, .Dk = 16,
                  .Dv = 8, .K = 4, .split = true, .layer_kinds = "lllf"};
        hf_arch = "Qwen3_5ForCausalLM", model_type = "qwen3_5_text";
    } else if (!strcmp(arch, "qwen3_5moe")) {
        f = (fam){.H = 64, .I = 96, .L = 4, .Nq = 2, .Nkv = 1, .D = 32, .V = 96, .qk_norm = true,
                  .gated = true, .tied = tied, .E = 4, .Im = 32, .Is = 32, .mlp_only = ~0ull,
                  .Hk = 2, .Hv = 4, .Dk = 16, .Dv = 16, .K = 4, .split = true,
                  .layer_kinds = "lllf", .no_sparse_step = true};
        hf_arch = "Qwen3_5MoeForConditionalGeneration", model_type = "qwen3_5_moe_text";
    } else if (!strcmp(arch, "spec121")) {
        f = (fam){.H = 128, .I = 256, .L = 1, .Nq = 1, .Nkv = 1, .D = 128, .V = 248320,
                  .qk_norm = true, .gated = true, .tied = tied, .mlp_only = ~0ull,
                  .split = true, .layer_kinds = "f"};
        hf_arch = "Qwen3_5ForCausalLM", model_type = "qwen3_5_text";
    } else {
        fputs(usage_text, stderr);
        return 2;
    }
    if (vocab)
        f.V = vocab;
    if (experts && !f.E) {
        fprintf(stderr, PROG ": --experts: %s has no experts\n", arch);
        return 2;
    }
    if (experts)
        f.E = experts;
    char *kinds = NULL;
    if (layers) {
        if (f.mlp_only != ~0ull && f.mlp_only >= layers)
            f.mlp_only = ~0ull;
        if (f.layer_kinds) {
            /* full attention every 4th layer (full_attention_interval 4) */
            kinds = malloc(layers + 1);
            if (!kinds)
                return 3;
            for (uint64_t i = 0; i < layers; i++)
                kinds[i] = i % 4 == 3 ? 'f' : 'l';
            kinds[layers] = 0;
            f.layer_kinds = kinds;
        }
        f.L = layers;
    }
    bool hybrid = f.layer_kinds != NULL;
    const char *mp = lm && hybrid ? "model.language_model" : "model";

    /* tensors, in Hugging Face's order */
    W(f.V, f.H, "%s.embed_tokens.weight", mp);
    for (uint64_t i = 0; i < f.L; i++) {
        char p[96];
        snprintf(p, sizeof p, "%s.layers.%llu", mp, (unsigned long long)i);
        bool full = !hybrid || f.layer_kinds[i] == 'f';
        bool moe = f.E && i != f.mlp_only;
        layer(&f, p, full, moe);
    }
    V(f.H, "%s.norm.weight", mp);
    if (!f.tied)
        W(f.V, f.H, "lm_head.weight");
    if (mtp && hybrid) {
        W(f.H, 2 * f.H, "mtp.fc.weight");
        V(f.H, "mtp.pre_fc_norm_embedding.weight");
        V(f.H, "mtp.pre_fc_norm_hidden.weight");
        layer(&f, "mtp.layers.0", true, f.E > 0);
        V(f.H, "mtp.norm.weight");
    }

    /* config */
    char *cfg = NULL;
    size_t cl = 0;
    FILE *h = open_memstream(&cfg, &cl);
    fprintf(h, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\",\n", hf_arch, model_type);
    fprintf(h, "  \"hidden_size\": %llu,\n  \"intermediate_size\": %llu,\n"
               "  \"num_hidden_layers\": %llu,\n  \"num_attention_heads\": %llu,\n"
               "  \"num_key_value_heads\": %llu,\n  \"head_dim\": %llu,\n  \"vocab_size\": %llu,\n",
            (unsigned long long)f.H, (unsigned long long)f.I, (unsigned long long)f.L,
            (unsigned long long)f.Nq, (unsigned long long)f.Nkv, (unsigned long long)f.D,
            (unsigned long long)f.V);
    if (f.E)
        fprintf(h, "  \"num_experts\": %llu,\n  \"num_experts_per_tok\": 2,\n"
                   "  \"moe_intermediate_size\": %llu,\n%s"
                   "  \"mlp_only_layers\": [%s],\n",
                (unsigned long long)f.E, (unsigned long long)f.Im,
                f.no_sparse_step ? "" : "  \"decoder_sparse_step\": 1,\n",
                f.mlp_only != ~0ull ? "1" : "");
    if (f.Is)
        fprintf(h, "  \"shared_expert_intermediate_size\": %llu,\n", (unsigned long long)f.Is);
    if (hybrid) {
        fputs("  \"layer_types\": [", h);
        for (uint64_t i = 0; i < f.L; i++)
            fprintf(h, "%s\"%s\"", i ? ", " : "",
                    f.layer_kinds[i] == 'f' ? "full_attention" : "linear_attention");
        fputs("],\n", h);
        if (f.Hk)
            fprintf(h, "  \"linear_num_key_heads\": %llu,\n  \"linear_num_value_heads\": %llu,\n"
                       "  \"linear_key_head_dim\": %llu,\n  \"linear_value_head_dim\": %llu,\n"
                       "  \"linear_conv_kernel_dim\": %llu,\n",
                    (unsigned long long)f.Hk, (unsigned long long)f.Hv, (unsigned long long)f.Dk,
                    (unsigned long long)f.Dv, (unsigned long long)f.K);
        if (mtp)
            fputs("  \"mtp_num_hidden_layers\": 1,\n", h);
    }
    fprintf(h, "  \"rms_norm_eps\": 1e-06,\n  \"rope_theta\": 1000000.0,\n"
               "  \"tie_word_embeddings\": %s\n}\n", f.tied ? "true" : "false");
    fclose(h);
    if (lm && hybrid) {
        /* a multimodal wrapper: the text part under text_config */
        char *w = NULL;
        size_t wl = 0;
        FILE *g = open_memstream(&w, &wl);
        bool moe = !strcmp(arch, "qwen3_5moe");
        fprintf(g, "{\n  \"architectures\": [\"%s\"],\n"
                   "  \"model_type\": \"%s\",\n  \"tie_word_embeddings\": %s,\n"
                   "  \"vision_config\": {\"depth\": 2},\n  \"text_config\": ",
                moe ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration",
                moe ? "qwen3_5_moe" : "qwen3_5", f.tied ? "true" : "false");
        /* the text config without architectures and tie_word_embeddings */
        char *p = strstr(cfg, "\"model_type\"");
        char *q = strstr(cfg, ",\n  \"tie_word_embeddings\"");
        fprintf(g, "{\n  %.*s\n}\n}\n", (int)(q - p), p);
        fclose(g);
        free(cfg);
        cfg = w;
    }

    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, PROG ": %s: %s\n", dir, strerror(errno));
        return 3;
    }
    int rc = write_text(dir, "config.json", cfg);
    free(cfg);
    rc = rc || write_safetensors(dir, dtype);
    rc = rc || write_text(dir, "tokenizer.json",
                          "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\", \"vocab\": {}, "
                          "\"merges\": []}}\n");
    rc = rc || write_text(dir, "tokenizer_config.json",
                          "{\"bos_token\": null, \"eos_token\": \"<|im_end|>\"}\n");
    rc = rc || write_text(dir, "chat_template.jinja",
                          "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}"
                          "<|im_end|>\n{% endfor %}");
    rc = rc || write_text(dir, "generation_config.json", "{\"eos_token_id\": [1, 2]}\n");
    free(T);
    free(kinds);
    return rc ? 3 : 0;
}
