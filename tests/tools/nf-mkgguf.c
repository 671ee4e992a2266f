/* nf-mkgguf — convert a tiny Hugging Face checkpoint written by nf-mkarch
 * into a GGUF v3 file the way llama.cpp's converter lays one out, for the
 * import tests (DESIGN 12; GGUF.md 3.3 and 4):
 *
 *   nf-mkgguf [--alignment A] [--no-tokenizer] [--legacy-ssm-in]
 *             [--fuse-gate-up-exps] [--type q8_0|q4_0 [--only SUBSTR]
 *             [--type-id N]] [--kv-u32 KEY=N]... [--kv-str KEY=TEXT]...
 *             [--trailing-one SUBSTR] [--rename GGUF_NAME=NEW] [--extra NAME]
 *             CHECKPOINT_DIR OUT.gguf
 *
 * Families: llama, qwen2, qwen3, qwen3moe (plain tensors; llama's attn_q /
 * attn_k rows permuted into llama.cpp's rope order: within each head of R
 * rows, GGUF row 2i+t holds Hugging Face row t*R/2+i) and the hybrids
 * qwen3next, qwen35, qwen35moe, as llama.cpp's Qwen3NextModel /
 * _LinearAttentionVReorderBase write them: in_proj_qkvz split into
 * attn_qkv = [all q; all k; all v] and attn_gate = z (or kept whole as
 * the legacy ssm_in with --legacy-ssm-in), in_proj_ba as ssm_ba; Qwen3.5's
 * value heads tiled (stored (j*Hk + g)*hd + d <- source (g*r + j)*hd + d)
 * on the v rows of attn_qkv, attn_gate, ssm_beta, ssm_alpha, the v channels
 * of ssm_conv1d, ssm_dt.bias, ssm_a and the columns of ssm_out; every norm
 * but linear_attn.norm stored w + 1 (in f32; an f16 source in f16), ssm_a
 * = -exp(A_log), conv1d squeezed; norms, vectors, routers, conv1d, ssm_a
 * and ssm_dt.bias in F32; MTP layers at blk.L+j with blk.L.nextn.* and
 * block_count L + 1. MoE experts are stacked into [E, rows, cols] banks
 * (with --fuse-gate-up-exps, ffn_gate_up_exps: per expert gate rows then
 * up rows). Other tensors keep their dtype (F32, F16, BF16).
 *
 * --type quantizes, with ggml's reference quantizers (quantize_row_q8_0_ref,
 * quantize_row_q4_0_ref), every tensor that stays at the output type, is
 * 2-D or an expert bank and has rows of a multiple of 32 — or, with --only,
 * just the tensors whose GGUF name contains SUBSTR; general.file_type
 * (7 Q8_0 / 2 Q4_0) and general.quantization_version 2 are written.
 * --type-id N labels the quantized tensors with ggml type N instead (a
 * hostile file: the bytes stay Q8_0/Q4_0 blocks).
 *
 * Key/values: general.*, the architecture's geometry (the hybrids': ssm.*,
 * full_attention_interval from layer_types, expert_*, nextn_predict_layers),
 * general.alignment, and (unless --no-tokenizer) a small tokenizer with
 * every value type of GGUF (tabs, quotes, negative numbers, -0.0), a chat
 * template and an embedded tokenizer.huggingface.json.
 *
 * --kv-u32 adds a u32 key/value (after the others; e.g. split.count for a
 * hostile file), --kv-str a string one (TEXT may be empty); --rename
 * writes tensor GGUF_NAME under NEW (any length: a hostile file); --extra
 * adds a tensor NAME no architecture binds (a copy of model.norm.weight in
 * F32, where llama.cpp puts rope_freqs.weight); --trailing-one writes the tensors whose name contains
 * SUBSTR with one more dimension of 1 (ne = [.., .., 1]: the same bytes).
 *
 * Written here independently of the library (its own JSON scraping, GGUF
 * writer and quantizers; the header-only nf_fp.h and nf_util.h only).
 * Exit status: 0 ok, 1 a checkpoint it cannot convert, 2 usage, 3 I/O.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_util.h"

#define PROG "nf-mkgguf"
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q8_0 8
#define T_BF16 30

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)sz + 1);
    if (!p || fread(p, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(p);
        return NULL;
    }
    fclose(f);
    p[sz] = 0;
    *n = (size_t)sz;
    return p;
}

/* "key": NUMBER in a config text (first occurrence), or def. */
static uint64_t num(const char *cfg, const char *key, uint64_t def)
{
    char k[128];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(cfg, k);
    if (!p)
        return def;
    p += strlen(k);
    while (*p == ' ')
        p++;
    return *p >= '0' && *p <= '9' ? strtoull(p, NULL, 10) : def;
}

/* ---- the safetensors file ------------------------------------------------------ */

typedef struct {
    char name[192];
    unsigned rank;
    uint64_t dims[3];
    uint32_t type;       /* ggml: 0 F32, 1 F16, 30 BF16 */
    unsigned eb;
    uint64_t off;        /* offset in the safetensors file */
} st_t;

static st_t *S;
static size_t nS;
static FILE *in;

static int read_st(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char l8[8];
    if (!f || fread(l8, 1, 8, f) != 8)
        return -1;
    uint64_t hl = nf_load_le64(l8);
    char *h = malloc(hl + 1);
    if (!h || fread(h, 1, hl, f) != hl)
        return -1;
    h[hl] = 0;
    fclose(f);
    size_t cap = 0;
    for (char *p = h; (p = strstr(p, "\":{\"dtype\":\"")); p++)
        cap++;
    S = calloc(cap + 1, sizeof *S);
    for (char *p = h; S && (p = strstr(p, "\":{\"dtype\":\"")) && nS < cap; p++) {
        char *q = p;
        while (q > h && q[-1] != '"')
            q--;
        st_t *t = &S[nS++];
        snprintf(t->name, sizeof t->name, "%.*s", (int)(p - q), q);
        char *dt = p + strlen("\":{\"dtype\":\"");
        t->type = !strncmp(dt, "F32\"", 4) ? T_F32 : !strncmp(dt, "F16\"", 4) ? T_F16 : T_BF16;
        t->eb = t->type == T_F32 ? 4 : 2;
        char *s = strstr(dt, "\"shape\":[") + 9;
        while (*s != ']') {
            t->dims[t->rank++] = strtoull(s, &s, 10);
            if (*s == ',')
                s++;
        }
        char *o = strstr(s, "\"data_offsets\":[") + 16;
        t->off = 8 + hl + strtoull(o, NULL, 10);
    }
    free(h);
    return 0;
}

/* Name lookups: an open-addressing hash over S (checkpoints of 74,000
 * tensors, as Qwen3-Next-80B's, convert in linear time). */
static size_t *H, nH;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static st_t *lookup(const char *name)
{
    if (!H) {
        nH = 16;
        while (nH < 2 * nS + 2)
            nH *= 2;
        H = malloc(nH * sizeof *H);
        for (size_t i = 0; i < nH; i++)
            H[i] = SIZE_MAX;
        for (size_t i = 0; i < nS; i++) {
            size_t k = fnv(S[i].name) & (nH - 1);
            while (H[k] != SIZE_MAX)
                k = (k + 1) & (nH - 1);
            H[k] = i;
        }
    }
    for (size_t k = fnv(name) & (nH - 1); H[k] != SIZE_MAX; k = (k + 1) & (nH - 1))
        if (!strcmp(S[H[k]].name, name))
            return &S[H[k]];
    return NULL;
}

/* A tensor by its name, with or without the multimodal prefix. */
static st_t *find(const char *name)
{
    st_t *t = lookup(name);
    if (!t && !strncmp(name, "model.", 6)) {
        char alt[256];
        snprintf(alt, sizeof alt, "model.language_model.%s", name + 6);
        t = lookup(alt);
    }
    return t;
}

static uint64_t st_cols(const st_t *t)
{
    return t->rank == 1 ? t->dims[0] : t->rank == 2 ? t->dims[1] : t->dims[1] * t->dims[2];
}

/* Row r of tensor t as f32 (exact widening) into out; its raw bytes into raw. */
static int read_row(const st_t *t, uint64_t r, float *out, unsigned char *raw)
{
    uint64_t cols = st_cols(t), rb = cols * t->eb;
    if (fseeko(in, (off_t)(t->off + r * rb), SEEK_SET) || fread(raw, 1, rb, in) != rb)
        return -1;
    for (uint64_t c = 0; c < cols; c++) {
        if (t->type == T_F32) {
            uint32_t u;
            memcpy(&u, raw + 4 * c, 4);
            out[c] = nf_f32_from_bits(u);
        } else {
            uint16_t u;
            memcpy(&u, raw + 2 * c, 2);
            out[c] = t->type == T_F16 ? nf_fp16_to_f32(u) : nf_bf16_to_f32(u);
        }
    }
    return 0;
}

/* ---- the GGUF tensors ---------------------------------------------------------- */

enum { MAP_NONE, MAP_PLUS1, MAP_NEG_EXP };

typedef struct {
    char name[96];
    unsigned rank;
    uint64_t dims[3];     /* C order */
    uint32_t type;        /* the written ggml type */
    st_t **src;           /* the HF tensors stacked (experts), or one */
    size_t n_src;
    uint64_t *rowsrc;     /* per written row of one stacked source: the source
                             row; NULL: the identity */
    bool rowsrc_stride2;  /* gate_up fused: rows of src[2e] then src[2e+1] */
    uint64_t tile_k, tile_v, tile_hd; /* columns tiled (ssm_out) */
    int map;
    uint64_t off;
} gt_t;

static gt_t G[1 << 17];
static size_t nG;

static gt_t *add(const char *gname, st_t *t)
{
    if (!t)
        return NULL;
    if (nG == sizeof G / sizeof *G) {
        fprintf(stderr, PROG ": more than %zu tensors\n", sizeof G / sizeof *G);
        exit(1);
    }
    gt_t *g = &G[nG++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", gname);
    g->rank = t->rank;
    memcpy(g->dims, t->dims, sizeof g->dims);
    if (t->rank == 3 && t->dims[1] == 1) { /* conv1d [C, 1, k] squeezed */
        g->rank = 2;
        g->dims[1] = t->dims[2];
    }
    g->type = t->type;
    g->src = malloc(sizeof *g->src);
    if (!g->src) {
        fprintf(stderr, PROG ": out of memory\n");
        exit(3);
    }
    g->src[0] = t;
    g->n_src = 1;
    return g;
}

/* Written rows per stacked unit (an expert of a bank, else the tensor). */
static uint64_t g_rows(const gt_t *g)
{
    return g->rank == 1 ? 1 : g->rank == 2 ? g->dims[0] : g->dims[1];
}

static size_t g_units(const gt_t *g)
{
    return g->rowsrc_stride2 ? g->n_src / 2 : g->n_src;
}

static uint64_t g_cols(const gt_t *g)
{
    return g->dims[g->rank - 1];
}

/* The tiled index: stored (j*hk + g)*hd + d holds source (g*r + j)*hd + d. */
static uint64_t tiled_src(uint64_t s, uint64_t hk, uint64_t hv, uint64_t hd)
{
    uint64_t r = hv / hk, head = s / hd, d = s % hd;
    return ((head % hk) * r + head / hk) * hd + d;
}

static void f32_forced(gt_t *g)
{
    if (g)
        g->type = T_F32;
}

/* ---- quantizers (ggml's reference C code, ggml-quants.c) ----------------------- */

static void q8_0_block(const float *x, unsigned char *y)
{
    float amax = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax)
            amax = fabsf(x[j]);
    float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
    uint16_t h = nf_f32_to_fp16(d);
    memcpy(y, &h, 2);
    for (int j = 0; j < 32; j++)
        y[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
}

static void q4_0_block(const float *x, unsigned char *y)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    float d = max / -8, id = d ? 1.0f / d : 0.0f;
    uint16_t h = nf_f32_to_fp16(d);
    memcpy(y, &h, 2);
    for (int j = 0; j < 16; j++) {
        int a = (int)(int8_t)(x[j] * id + 8.5f), b = (int)(int8_t)(x[16 + j] * id + 8.5f);
        a = a > 15 ? 15 : a;
        b = b > 15 ? 15 : b;
        y[2 + j] = (unsigned char)(a | b << 4);
    }
}

static uint64_t row_bytes(uint32_t type, uint64_t cols)
{
    return type == T_F32 ? 4 * cols : type == T_Q8_0 ? cols / 32 * 34 : type == T_Q4_0 ? cols / 32 * 18
                                                                        : 2 * cols;
}

/* ---- output ------------------------------------------------------------------- */

static FILE *out;
static void w(const void *p, size_t n) { fwrite(p, 1, n, out); }
static void w32(uint32_t v) { unsigned char b[4] = {v, v >> 8, v >> 16, v >> 24}; w(b, 4); }
static void w64(uint64_t v) { unsigned char b[8]; nf_store_le64(b, v); w(b, 8); }
static void wstr(const char *s) { w64(strlen(s)); w(s, strlen(s)); }
static void kv_u32(const char *k, uint32_t v) { wstr(k); w32(4); w32(v); }
static void kv_f32(const char *k, float v) { uint32_t u; memcpy(&u, &v, 4); wstr(k); w32(6); w32(u); }
static void kv_str(const char *k, const char *v) { wstr(k); w32(8); wstr(v); }
static void kv_bool(const char *k, bool v) { unsigned char b = v; wstr(k); w32(7); w(&b, 1); }

/* Write tensor g's data. */
static int write_data(const gt_t *g)
{
    uint64_t rows = g_rows(g), cols = g_cols(g);
    size_t srcs = g_units(g);
    float *v = malloc(cols * sizeof *v), *x = malloc(cols * sizeof *x);
    unsigned char *raw = malloc(cols * 4 + 64), *o = malloc(cols * 4 + 64);
    if (!v || !x || !raw || !o)
        return -1;
    for (size_t s = 0; s < srcs; s++) {
        for (uint64_t r = 0; r < rows; r++) {
            const st_t *t = g->src[s];
            uint64_t sr = g->rowsrc ? g->rowsrc[r] : r;
            if (g->rowsrc_stride2) { /* gate rows, then up rows, of expert s */
                uint64_t half = rows / 2;
                t = g->src[2 * s + (r >= half)];
                sr = r % half;
            }
            if (read_row(t, sr, v, raw))
                return -1;
            bool same = g->type == t->type && !g->map && !g->tile_v;
            if (same) {
                w(raw, row_bytes(g->type, cols));
                continue;
            }
            for (uint64_t c = 0; c < cols; c++)
                x[c] = g->tile_v ? v[tiled_src(c, g->tile_k, g->tile_v, g->tile_hd)] : v[c];
            for (uint64_t c = 0; c < cols; c++) {
                if (g->map == MAP_PLUS1) /* f16 sources add in f16 (GGUF.md 4.2) */
                    x[c] = t->type == T_F16 ? nf_fp16_to_f32(nf_f32_to_fp16(x[c] + 1.0f))
                                            : x[c] + 1.0f;
                else if (g->map == MAP_NEG_EXP)
                    x[c] = -expf(x[c]);
            }
            if (g->type == T_Q8_0 || g->type == T_Q4_0) {
                for (uint64_t c = 0; c < cols; c += 32)
                    (g->type == T_Q8_0 ? q8_0_block : q4_0_block)(x + c,
                                                                o + c / 32 * (g->type == T_Q8_0 ? 34 : 18));
            } else {
                for (uint64_t c = 0; c < cols; c++) {
                    if (g->type == T_F32) {
                        uint32_t u = nf_f32_bits(x[c]);
                        memcpy(o + 4 * c, &u, 4);
                    } else {
                        uint16_t u = g->type == T_F16 ? nf_f32_to_fp16(x[c]) : nf_f32_to_bf16(x[c]);
                        memcpy(o + 2 * c, &u, 2);
                    }
                }
            }
            w(o, row_bytes(g->type, cols));
        }
    }
    free(v);
    free(x);
    free(raw);
    free(o);
    return 0;
}

/* ---- the families --------------------------------------------------------------- */

typedef struct {
    const char *arch;
    bool llama, hybrid, tiled, legacy, gate_up;
    uint64_t L, Nq, Nkv, D, E, H;
    uint64_t Hk, Hv, Dk, Dv;
    bool *full;
} fam;

static void layer_common(const fam *f, const char *hp, const char *gp, uint64_t i)
{
    char hf[256], gg[128];
    /* in the order of llama.cpp's tensor map; norm: stored w + 1 in the hybrids */
    static const struct {
        const char *hf, *gg;
        bool norm;
    } plain[] = {
        {"input_layernorm.weight", "attn_norm.weight", true},
        {"self_attn.q_proj.weight", "attn_q.weight", false},
        {"self_attn.k_proj.weight", "attn_k.weight", false},
        {"self_attn.v_proj.weight", "attn_v.weight", false},
        {"self_attn.o_proj.weight", "attn_output.weight", false},
        {"self_attn.q_proj.bias", "attn_q.bias", false},
        {"self_attn.k_proj.bias", "attn_k.bias", false},
        {"self_attn.v_proj.bias", "attn_v.bias", false},
        {"self_attn.q_norm.weight", "attn_q_norm.weight", true},
        {"self_attn.k_norm.weight", "attn_k_norm.weight", true},
        {"post_attention_layernorm.weight", NULL, true},
        {"mlp.gate_proj.weight", "ffn_gate.weight", false},
        {"mlp.up_proj.weight", "ffn_up.weight", false},
        {"mlp.down_proj.weight", "ffn_down.weight", false},
        {"mlp.gate.weight", "ffn_gate_inp.weight", false},
        {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", false},
        {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", false},
        {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", false},
        {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", false},
    };
    for (size_t k = 0; k < sizeof plain / sizeof *plain; k++) {
        snprintf(hf, sizeof hf, "%s.%s", hp, plain[k].hf);
        snprintf(gg, sizeof gg, "%s.%s", gp,
                 plain[k].gg ? plain[k].gg : f->hybrid ? "post_attention_norm.weight" : "ffn_norm.weight");
        gt_t *g = add(gg, find(hf));
        if (!g)
            continue;
        if (f->llama && (k == 1 || k == 2)) { /* LlamaModel.permute */
            uint64_t rows = g->dims[0], heads = k == 1 ? f->Nq : f->Nkv, R = rows / heads;
            g->rowsrc = malloc(rows * sizeof *g->rowsrc);
            for (uint64_t r = 0; r < rows; r++) {
                uint64_t h = r / R, w2 = r % R;
                g->rowsrc[r] = h * R + (w2 % 2) * (R / 2) + w2 / 2;
            }
        }
        if (f->hybrid && (g->rank == 1 || strstr(plain[k].gg ? plain[k].gg : "", "ffn_gate_inp")))
            f32_forced(g);
        if (f->hybrid && plain[k].norm)
            g->map = MAP_PLUS1;
    }
    /* experts */
    static const char *const ex[][2] = {{"gate_proj", "ffn_gate_exps"},
                                        {"up_proj", "ffn_up_exps"},
                                        {"down_proj", "ffn_down_exps"}};
    for (size_t k = 0; f->E && k < 3; k++) {
        snprintf(hf, sizeof hf, "%s.mlp.experts.0.%s.weight", hp, ex[k][0]);
        st_t *t0 = find(hf);
        if (!t0)
            continue; /* a dense layer */
        if (f->gate_up && k == 1)
            continue;
        snprintf(gg, sizeof gg, "%s.%s.weight", gp, f->gate_up && k == 0 ? "ffn_gate_up_exps" : ex[k][1]);
        gt_t *g = add(gg, t0);
        g->rank = 3;
        g->dims[0] = f->E;
        g->dims[1] = t0->dims[0] * (f->gate_up && k == 0 ? 2 : 1);
        g->dims[2] = t0->dims[1];
        g->n_src = 0;
        free(g->src);
        g->src = malloc(2 * f->E * sizeof *g->src);
        if (!g->src) {
            fprintf(stderr, PROG ": out of memory\n");
            exit(3);
        }
        for (uint64_t e = 0; e < f->E; e++) {
            snprintf(hf, sizeof hf, "%s.mlp.experts.%llu.%s.weight", hp, (unsigned long long)e, ex[k][0]);
            g->src[g->n_src++] = find(hf);
            if (f->gate_up && k == 0) {
                snprintf(hf, sizeof hf, "%s.mlp.experts.%llu.up_proj.weight", hp, (unsigned long long)e);
                g->src[g->n_src++] = find(hf);
            }
        }
        g->rowsrc_stride2 = f->gate_up && k == 0;
    }
    (void)i;
}

/* The linear-attention tensors of one layer (GGUF.md 4.2). */
static void layer_linear(const fam *f, const char *hp, const char *gp)
{
    char hf[256], gg[128];
    uint64_t Hk = f->Hk, Hv = f->Hv, Dk = f->Dk, Dv = f->Dv, r = Hv / Hk;
    uint64_t KW = Hk * Dk, VW = Hv * Dv, C = 2 * KW + VW, S2 = 2 * Dk + 2 * r * Dv;
    bool tile = f->tiled && Hk != Hv;
    gt_t *g;
    if (!f->tiled) {
        snprintf(hf, sizeof hf, "%s.linear_attn.in_proj_qkvz.weight", hp);
        st_t *t = find(hf);
        if (f->legacy) {
            snprintf(gg, sizeof gg, "%s.ssm_in.weight", gp);
            add(gg, t);
        } else {
            snprintf(gg, sizeof gg, "%s.attn_qkv.weight", gp);
            g = add(gg, t);
            g->dims[0] = C;
            g->rowsrc = malloc(C * sizeof *g->rowsrc);
            for (uint64_t q = 0; q < C; q++) {
                uint64_t src;
                if (q < KW)
                    src = q / Dk * S2 + q % Dk;
                else if (q < 2 * KW)
                    src = (q - KW) / Dk * S2 + Dk + (q - KW) % Dk;
                else
                    src = (q - 2 * KW) / (r * Dv) * S2 + 2 * Dk + (q - 2 * KW) % (r * Dv);
                g->rowsrc[q] = src;
            }
            snprintf(gg, sizeof gg, "%s.attn_gate.weight", gp);
            g = add(gg, t);
            g->dims[0] = VW;
            g->rowsrc = malloc(VW * sizeof *g->rowsrc);
            for (uint64_t q = 0; q < VW; q++)
                g->rowsrc[q] = q / (r * Dv) * S2 + 2 * Dk + r * Dv + q % (r * Dv);
        }
        snprintf(hf, sizeof hf, "%s.linear_attn.in_proj_ba.weight", hp);
        snprintf(gg, sizeof gg, "%s.ssm_ba.weight", gp);
        add(gg, find(hf));
    } else {
        static const char *const sp[][2] = {{"in_proj_qkv", "attn_qkv"},
                                            {"in_proj_z", "attn_gate"},
                                            {"in_proj_b", "ssm_beta"},
                                            {"in_proj_a", "ssm_alpha"}};
        for (int k = 0; k < 4; k++) {
            snprintf(hf, sizeof hf, "%s.linear_attn.%s.weight", hp, sp[k][0]);
            snprintf(gg, sizeof gg, "%s.%s.weight", gp, sp[k][1]);
            g = add(gg, find(hf));
            if (!g || !tile)
                continue;
            uint64_t rows = g->dims[0], first = k == 0 ? 2 * KW : 0, hd = k < 2 ? Dv : 1;
            g->rowsrc = malloc(rows * sizeof *g->rowsrc);
            for (uint64_t q = 0; q < rows; q++)
                g->rowsrc[q] = q < first ? q : first + tiled_src(q - first, Hk, Hv, hd);
        }
    }
    snprintf(hf, sizeof hf, "%s.linear_attn.conv1d.weight", hp);
    snprintf(gg, sizeof gg, "%s.ssm_conv1d.weight", gp);
    g = add(gg, find(hf));
    f32_forced(g);
    if (g && tile) {
        g->rowsrc = malloc(C * sizeof *g->rowsrc);
        for (uint64_t q = 0; q < C; q++)
            g->rowsrc[q] = q < 2 * KW ? q : 2 * KW + tiled_src(q - 2 * KW, Hk, Hv, Dv);
    }
    static const char *const vec[][2] = {{"dt_bias", "ssm_dt.bias"}, {"A_log", "ssm_a"}};
    for (int k = 0; k < 2; k++) {
        snprintf(hf, sizeof hf, "%s.linear_attn.%s", hp, vec[k][0]);
        snprintf(gg, sizeof gg, "%s.%s", gp, vec[k][1]);
        g = add(gg, find(hf));
        f32_forced(g);
        if (!g)
            continue;
        g->map = k ? MAP_NEG_EXP : MAP_NONE;
        if (tile) /* a vector is one row: tile its columns */
            g->tile_k = Hk, g->tile_v = Hv, g->tile_hd = 1;
    }
    snprintf(hf, sizeof hf, "%s.linear_attn.norm.weight", hp);
    snprintf(gg, sizeof gg, "%s.ssm_norm.weight", gp);
    f32_forced(add(gg, find(hf)));
    snprintf(hf, sizeof hf, "%s.linear_attn.out_proj.weight", hp);
    snprintf(gg, sizeof gg, "%s.ssm_out.weight", gp);
    g = add(gg, find(hf));
    if (g && tile)
        g->tile_k = Hk, g->tile_v = Hv, g->tile_hd = Dv;
}

/* The index of the first full-attention layer in layer_types, + 1 (the
 * interval), checked against every layer; 0 when the pattern is not one. */
static uint64_t interval_of(const char *cfg, uint64_t L, bool *full)
{
    const char *p = strstr(cfg, "\"layer_types\"");
    if (!p)
        return 0;
    for (uint64_t i = 0; i < L; i++) {
        const char *a = strstr(p, "_attention\"");
        if (!a)
            return 0;
        full[i] = a - p >= 4 && !strncmp(a - 4, "full", 4);
        p = a + 1;
    }
    uint64_t every = 0;
    for (uint64_t i = 0; i < L && !every; i++)
        if (full[i])
            every = i + 1;
    for (uint64_t i = 0; every && i < L; i++)
        if (full[i] != ((i + 1) % every == 0))
            return 0;
    return every;
}

int main(int argc, char **argv)
{
    uint64_t align = 32;
    bool tok = true, legacy = false, gate_up = false;
    const char *qtype = NULL, *only = NULL;
    uint32_t type_id = 0;
    const char *extra_k[16], *trailing = NULL;
    uint32_t extra_v[16];
    size_t n_extra = 0, n_str = 0;
    const char *ren_from = NULL, *ren_to = NULL, *extra = NULL;
    const char *str_k[16], *str_v[16];
    static const struct option lo[] = {
        {"kv-u32", required_argument, 0, 'k'},
        {"kv-str", required_argument, 0, 's'},
        {"rename", required_argument, 0, 'r'},
        {"extra", required_argument, 0, 'x'},
        {"trailing-one", required_argument, 0, 'T'},
        {"alignment", required_argument, 0, 'a'},
        {"no-tokenizer", no_argument, 0, 'n'},
        {"legacy-ssm-in", no_argument, 0, 'l'},
        {"fuse-gate-up-exps", no_argument, 0, 'f'},
        {"type", required_argument, 0, 't'},
        {"only", required_argument, 0, 'o'},
        {"type-id", required_argument, 0, 'i'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 'a')
            align = strtoull(optarg, NULL, 10);
        else if (c == 'n')
            tok = false;
        else if (c == 'l')
            legacy = true;
        else if (c == 'f')
            gate_up = true;
        else if (c == 't')
            qtype = optarg;
        else if (c == 'o')
            only = optarg;
        else if (c == 'i')
            type_id = (uint32_t)strtoul(optarg, NULL, 10);
        else if (c == 'k' && n_extra < 16 && strchr(optarg, '=')) {
            char *eq = strchr(optarg, '=');
            *eq = 0;
            extra_k[n_extra] = optarg;
            extra_v[n_extra++] = (uint32_t)strtoul(eq + 1, NULL, 10);
        } else if (c == 's' && n_str < 16 && strchr(optarg, '=')) {
            char *eq = strchr(optarg, '=');
            *eq = 0;
            str_k[n_str] = optarg;
            str_v[n_str++] = eq + 1;
        } else if (c == 'r' && strchr(optarg, '=')) {
            char *eq = strchr(optarg, '=');
            *eq = 0;
            ren_from = optarg;
            ren_to = eq + 1;
        } else if (c == 'x') {
            extra = optarg;
        } else if (c == 'T')
            trailing = optarg;
        else
            return 2;
    }
    if (optind + 2 != argc || !align || (align & (align - 1)) ||
        (qtype && strcmp(qtype, "q8_0") && strcmp(qtype, "q4_0")) || (only && !qtype)) {
        fprintf(stderr, "usage: " PROG " [--alignment A] [--no-tokenizer] [--legacy-ssm-in]\n"
                        "       [--fuse-gate-up-exps] [--type q8_0|q4_0 [--only SUBSTR]] "
                        "CHECKPOINT_DIR OUT.gguf\n");
        return 2;
    }
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/config.json", argv[optind]);
    char *cfg = slurp(path, &n);
    snprintf(path, sizeof path, "%s/model.safetensors", argv[optind]);
    if (!cfg || read_st(path) || !(in = fopen(path, "rb"))) {
        fprintf(stderr, PROG ": %s: cannot read the checkpoint\n", argv[optind]);
        return 3;
    }
    fam f;
    memset(&f, 0, sizeof f);
    f.arch = strstr(cfg, "\"LlamaForCausalLM\"") ? "llama"
           : strstr(cfg, "\"Qwen2ForCausalLM\"") ? "qwen2"
           : strstr(cfg, "\"Qwen3ForCausalLM\"") ? "qwen3"
           : strstr(cfg, "\"Qwen3MoeForCausalLM\"") ? "qwen3moe"
           : strstr(cfg, "\"Qwen3NextForCausalLM\"") ? "qwen3next"
           : strstr(cfg, "\"Qwen3_5MoeFor") ? "qwen35moe"
           : strstr(cfg, "\"Qwen3_5For") ? "qwen35" : NULL;
    if (!f.arch) {
        fprintf(stderr, PROG ": only llama, qwen2, qwen3, qwen3moe, qwen3next, qwen35 and "
                        "qwen35moe convert\n");
        return 1;
    }
    f.L = num(cfg, "num_hidden_layers", 0);
    f.Nq = num(cfg, "num_attention_heads", 0);
    f.Nkv = num(cfg, "num_key_value_heads", f.Nq);
    f.E = num(cfg, "num_experts", 0);
    f.H = num(cfg, "hidden_size", 0);
    f.D = num(cfg, "head_dim", 0);
    f.llama = !strcmp(f.arch, "llama");
    f.hybrid = !strncmp(f.arch, "qwen3next", 9) || !strncmp(f.arch, "qwen35", 6);
    f.tiled = !strncmp(f.arch, "qwen35", 6);
    f.legacy = legacy;
    f.gate_up = gate_up;
    f.Hk = num(cfg, "linear_num_key_heads", 1);
    f.Hv = num(cfg, "linear_num_value_heads", 1);
    f.Dk = num(cfg, "linear_key_head_dim", 0);
    f.Dv = num(cfg, "linear_value_head_dim", 0);
    f.full = calloc(f.L + 1, sizeof *f.full);
    uint64_t every = 0;
    if (f.hybrid && !(every = interval_of(cfg, f.L, f.full))) {
        fprintf(stderr, PROG ": layer_types is not a full_attention_interval pattern\n");
        return 1;
    }
    bool mtp = f.hybrid && find("mtp.fc.weight");
    const char *mp = find("model.language_model.embed_tokens.weight") ? "model.language_model" : "model";

    /* the tensor map */
    add("token_embd.weight", find("model.embed_tokens.weight"));
    for (uint64_t i = 0; i < f.L + mtp; i++) {
        char hp[96], gp[32];
        if (i < f.L)
            snprintf(hp, sizeof hp, "%s.layers.%llu", mp, (unsigned long long)i);
        else
            snprintf(hp, sizeof hp, "mtp.layers.%llu", (unsigned long long)(i - f.L));
        snprintf(gp, sizeof gp, "blk.%llu", (unsigned long long)i);
        layer_common(&f, hp, gp, i);
        if (f.hybrid && i < f.L && !f.full[i])
            layer_linear(&f, hp, gp);
        if (i == f.L) {
            static const char *const nx[][2] = {{"mtp.fc.weight", "eh_proj.weight"},
                                                {"mtp.pre_fc_norm_embedding.weight", "enorm.weight"},
                                                {"mtp.pre_fc_norm_hidden.weight", "hnorm.weight"},
                                                {"mtp.norm.weight", "shared_head_norm.weight"}};
            for (int k = 0; k < 4; k++) {
                char gg[96];
                snprintf(gg, sizeof gg, "blk.%llu.nextn.%s", (unsigned long long)f.L, nx[k][1]);
                gt_t *g = add(gg, find(nx[k][0]));
                if (g && k) {
                    g->type = T_F32;
                    g->map = MAP_PLUS1;
                }
            }
        }
    }
    gt_t *on = add("output_norm.weight", find("model.norm.weight"));
    if (on && f.hybrid) {
        on->type = T_F32;
        on->map = MAP_PLUS1;
    }
    add("output.weight", find("lm_head.weight"));
    gt_t *ex = extra ? add(extra, find("model.norm.weight")) : NULL;
    if (ex)
        ex->type = T_F32;
    uint32_t ftype = 0;
    if (qtype) {
        uint32_t qt = !strcmp(qtype, "q8_0") ? T_Q8_0 : T_Q4_0;
        ftype = qt == T_Q8_0 ? 7 : 2;
        for (size_t i = 0; i < nG; i++) {
            gt_t *g = &G[i];
            if (g->type == T_F32 && g->src[0]->type != T_F32)
                continue; /* forced to F32 */
            if (g->rank < 2 || g_cols(g) % 32 || strstr(g->name, "ffn_gate_inp") ||
                strstr(g->name, "ssm_conv1d") || (only && !strstr(g->name, only)))
                continue;
            g->type = qt;
        }
    }

    out = fopen(argv[optind + 1], "wb");
    if (!out) {
        fprintf(stderr, PROG ": %s: %s\n", argv[optind + 1], strerror(errno));
        return 3;
    }
    /* header and key/values */
    uint64_t nkv = 12 + (f.E ? 3 : 0) + (tok ? 9 : 0) + (qtype ? 2 : 0) + n_extra + n_str;
    if (f.hybrid)
        nkv += 7 + (f.E && num(cfg, "shared_expert_intermediate_size", 0) ? 1 : 0) + (mtp ? 1 : 0) +
               (f.tiled ? 1 : 0);
    w("GGUF", 4);
    w32(3);
    w64(nG);
    w64(nkv);
    char k[128];
    kv_str("general.architecture", f.arch);
    kv_str("general.name", "nf-mkgguf tiny");
    kv_u32("general.alignment", (uint32_t)align);
#define KV(suffix) (snprintf(k, sizeof k, "%s.%s", f.arch, suffix), k)
    kv_u32(KV("block_count"), (uint32_t)(f.L + mtp));
    kv_u32(KV("context_length"), 256);
    kv_u32(KV("embedding_length"), (uint32_t)f.H);
    kv_u32(KV("feed_forward_length"), (uint32_t)num(cfg, "intermediate_size", 0));
    kv_u32(KV("attention.head_count"), (uint32_t)f.Nq);
    kv_u32(KV("attention.head_count_kv"), (uint32_t)f.Nkv);
    kv_u32(KV("attention.key_length"), (uint32_t)f.D);
    kv_f32(KV("attention.layer_norm_rms_epsilon"), 1e-6f);
    kv_f32(KV("rope.freq_base"), 1000000.0f);
    if (f.E) {
        kv_u32(KV("expert_count"), (uint32_t)f.E);
        kv_u32(KV("expert_used_count"), 2);
        kv_u32(KV("expert_feed_forward_length"), (uint32_t)num(cfg, "moe_intermediate_size", 0));
    }
    if (f.hybrid) {
        kv_u32(KV("full_attention_interval"), (uint32_t)every);
        kv_u32(KV("ssm.conv_kernel"), (uint32_t)num(cfg, "linear_conv_kernel_dim", 4));
        kv_u32(KV("ssm.state_size"), (uint32_t)f.Dk);
        kv_u32(KV("ssm.group_count"), (uint32_t)f.Hk);
        kv_u32(KV("ssm.time_step_rank"), (uint32_t)f.Hv);
        kv_u32(KV("ssm.inner_size"), (uint32_t)(f.Hv * f.Dv));
        kv_u32(KV("rope.dimension_count"), (uint32_t)(f.D / 4));
        if (f.E && num(cfg, "shared_expert_intermediate_size", 0))
            kv_u32(KV("expert_shared_feed_forward_length"),
                   (uint32_t)num(cfg, "shared_expert_intermediate_size", 0));
        if (mtp)
            kv_u32(KV("nextn_predict_layers"), 1);
        if (f.tiled) { /* u32[4] */
            wstr(KV("rope.dimension_sections"));
            w32(9);
            w32(4);
            w64(4);
            w32(11), w32(11), w32(10), w32(0);
        }
    }
    if (qtype) {
        kv_u32("general.file_type", ftype);
        kv_u32("general.quantization_version", 2);
    }
    if (tok) {
        uint64_t V = num(cfg, "vocab_size", 0);
        kv_str("tokenizer.ggml.model", "gpt2");
        wstr("tokenizer.ggml.tokens");
        w32(9);
        w32(8);
        w64(V);
        for (uint64_t i = 0; i < V; i++) {
            char t[32];
            snprintf(t, sizeof t, i == 7 ? "tab\t\"%llu\"" : "t%llu", (unsigned long long)i);
            wstr(t);
        }
        wstr("tokenizer.ggml.scores");
        w32(9);
        w32(6);
        w64(3);
        for (int i = 0; i < 3; i++) {
            float fl = -1.5f * (float)i;
            uint32_t u;
            memcpy(&u, &fl, 4);
            w32(u);
        }
        wstr("tokenizer.ggml.token_type");
        w32(9);
        w32(5);
        w64(2);
        w32(1);
        w32((uint32_t)-1);
        kv_u32("tokenizer.ggml.bos_token_id", 1);
        kv_u32("tokenizer.ggml.eos_token_id", 2);
        kv_bool("tokenizer.ggml.add_bos_token", true);
        kv_str("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}");
        kv_str("tokenizer.huggingface.json", "{\"version\": \"1.0\"}");
    }
    for (size_t i = 0; i < n_extra; i++)
        kv_u32(extra_k[i], extra_v[i]);
    for (size_t i = 0; i < n_str; i++)
        kv_str(str_k[i], str_v[i]);
    /* tensor infos */
    uint64_t off = 0;
    for (size_t i = 0; i < nG; i++) {
        gt_t *g = &G[i];
        wstr(ren_from && !strcmp(g->name, ren_from) ? ren_to : g->name);
        bool one = trailing && strstr(g->name, trailing);
        w32(g->rank + one);
        for (unsigned d = 0; d < g->rank; d++)
            w64(g->dims[g->rank - 1 - d]);
        if (one)
            w64(1);
        w32(type_id && (g->type == T_Q8_0 || g->type == T_Q4_0) ? type_id : g->type);
        off = (off + align - 1) / align * align;
        g->off = off;
        w64(off);
        off += g_units(g) * g_rows(g) * row_bytes(g->type, g_cols(g));
    }
    long pos = ftell(out);
    while (pos % (long)align)
        fputc(0, out), pos++;
    /* data */
    uint64_t at = 0;
    for (size_t i = 0; i < nG; i++) {
        gt_t *g = &G[i];
        while (at < g->off)
            fputc(0, out), at++;
        if (write_data(g)) {
            fprintf(stderr, PROG ": short read\n");
            return 3;
        }
        at += g_units(g) * g_rows(g) * row_bytes(g->type, g_cols(g));
    }
    fclose(in);
    if (fclose(out) != 0) {
        fprintf(stderr, PROG ": write error\n");
        return 3;
    }
    for (size_t i = 0; i < nG; i++) {
        free(G[i].rowsrc);
        free(G[i].src);
    }
    free(f.full);
    free(cfg);
    free(S);
    free(H);
    return 0;
}
