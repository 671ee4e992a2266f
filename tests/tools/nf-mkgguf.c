/* nf-mkgguf — convert a tiny Hugging Face checkpoint written by nf-mkarch
 * (llama, qwen2, qwen3, qwen3moe) into a GGUF v3 file the way llama.cpp's
 * converter lays one out, for the import tests (DESIGN 12):
 *
 *   nf-mkgguf [--alignment A] [--no-tokenizer] CHECKPOINT_DIR OUT.gguf
 *
 * Tensor names follow llama.cpp (token_embd, blk.N.attn_q, ffn_gate_exps,
 * output_norm, output); llama's attn_q/attn_k rows are permuted into
 * llama.cpp's rope order (within each head of R rows, GGUF row 2i+t holds
 * Hugging Face row t*R/2+i); MoE experts are stacked into [E, rows, cols]
 * banks; dtypes stay as they are (F32, F16, BF16). Key/values: general.*,
 * the architecture's geometry, general.alignment, and (unless
 * --no-tokenizer) a small tokenizer with every value type the importer
 * turns into gguf_tokenizer.json, a chat template and an embedded
 * tokenizer.huggingface.json.
 *
 * Written here independently of the library (its own JSON scraping and
 * GGUF writer; the header-only nf_util.h only).
 * Exit status: 0 ok, 1 a checkpoint it cannot convert, 2 usage, 3 I/O.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_util.h"

#define PROG "nf-mkgguf"

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

/* "key": NUMBER in a flat config text (first occurrence), or def. */
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

typedef struct {
    char name[160];
    unsigned rank;
    uint64_t dims[3];
    uint32_t type;       /* ggml: 0 F32, 1 F16, 30 BF16 */
    unsigned eb;
    uint64_t off;        /* offset in the safetensors file */
} st_t;

static st_t *S;
static size_t nS;

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
    S = calloc(4096, sizeof *S);
    for (char *p = h; (p = strstr(p, "\":{\"dtype\":\"")); p++) {
        char *q = p;
        while (q > h && q[-1] != '"')
            q--;
        st_t *t = &S[nS++];
        snprintf(t->name, sizeof t->name, "%.*s", (int)(p - q), q);
        char *dt = p + strlen("\":{\"dtype\":\"");
        t->type = !strncmp(dt, "F32\"", 4) ? 0 : !strncmp(dt, "F16\"", 4) ? 1 : 30;
        t->eb = t->type == 0 ? 4 : 2;
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

static st_t *find(const char *name)
{
    for (size_t i = 0; i < nS; i++)
        if (!strcmp(S[i].name, name))
            return &S[i];
    return NULL;
}

/* ---- the GGUF being written ---------------------------------------------------- */

static FILE *out;
static void w(const void *p, size_t n) { fwrite(p, 1, n, out); }
static void w32(uint32_t v) { unsigned char b[4] = {v, v >> 8, v >> 16, v >> 24}; w(b, 4); }
static void w64(uint64_t v) { unsigned char b[8]; nf_store_le64(b, v); w(b, 8); }
static void wstr(const char *s) { w64(strlen(s)); w(s, strlen(s)); }
static void kv_u32(const char *k, uint32_t v) { wstr(k); w32(4); w32(v); }
static void kv_f32(const char *k, float v) { uint32_t u; memcpy(&u, &v, 4); wstr(k); w32(6); w32(u); }
static void kv_str(const char *k, const char *v) { wstr(k); w32(8); wstr(v); }
static void kv_bool(const char *k, bool v) { unsigned char b = v; wstr(k); w32(7); w(&b, 1); }

typedef struct {
    char name[96];
    unsigned rank;
    uint64_t dims[3];     /* C order */
    uint32_t type;
    unsigned eb;
    st_t *src[512];       /* the HF tensors stacked (experts), or one */
    size_t n_src;
    uint64_t permute;     /* heads, 0: none */
    uint64_t off;
} gt_t;

static gt_t G[4096];
static size_t nG;

static gt_t *add(const char *gname, st_t *t, uint64_t permute)
{
    gt_t *g = &G[nG++];
    snprintf(g->name, sizeof g->name, "%s", gname);
    g->rank = t->rank;
    memcpy(g->dims, t->dims, sizeof g->dims);
    g->type = t->type;
    g->eb = t->eb;
    g->src[0] = t;
    g->n_src = 1;
    g->permute = permute;
    return g;
}

int main(int argc, char **argv)
{
    uint64_t align = 32;
    bool tok = true;
    static const struct option lo[] = {
        {"alignment", required_argument, 0, 'a'},
        {"no-tokenizer", no_argument, 0, 'n'},
        {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 'a')
            align = strtoull(optarg, NULL, 10);
        else if (c == 'n')
            tok = false;
        else
            return 2;
    }
    if (optind + 2 != argc || !align || (align & (align - 1))) {
        fprintf(stderr, "usage: " PROG " [--alignment A] [--no-tokenizer] CHECKPOINT_DIR OUT.gguf\n");
        return 2;
    }
    char path[4096];
    size_t n;
    snprintf(path, sizeof path, "%s/config.json", argv[optind]);
    char *cfg = slurp(path, &n);
    snprintf(path, sizeof path, "%s/model.safetensors", argv[optind]);
    if (!cfg || read_st(path)) {
        fprintf(stderr, PROG ": %s: cannot read the checkpoint\n", argv[optind]);
        return 3;
    }
    const char *arch = strstr(cfg, "\"LlamaForCausalLM\"") ? "llama"
                     : strstr(cfg, "\"Qwen2ForCausalLM\"") ? "qwen2"
                     : strstr(cfg, "\"Qwen3ForCausalLM\"") ? "qwen3"
                     : strstr(cfg, "\"Qwen3MoeForCausalLM\"") ? "qwen3moe" : NULL;
    if (!arch) {
        fprintf(stderr, PROG ": only llama, qwen2, qwen3 and qwen3moe convert\n");
        return 1;
    }
    uint64_t L = num(cfg, "num_hidden_layers", 0), Nq = num(cfg, "num_attention_heads", 0);
    uint64_t Nkv = num(cfg, "num_key_value_heads", Nq), E = num(cfg, "num_experts", 0);
    bool llama = !strcmp(arch, "llama");

    /* the tensor map */
    add("token_embd.weight", find("model.embed_tokens.weight"), 0);
    static const char *const per_layer[][2] = {
        {"input_layernorm.weight", "attn_norm.weight"},
        {"self_attn.q_proj.weight", "attn_q.weight"},
        {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"},
        {"self_attn.o_proj.weight", "attn_output.weight"},
        {"self_attn.q_proj.bias", "attn_q.bias"},
        {"self_attn.k_proj.bias", "attn_k.bias"},
        {"self_attn.v_proj.bias", "attn_v.bias"},
        {"self_attn.q_norm.weight", "attn_q_norm.weight"},
        {"self_attn.k_norm.weight", "attn_k_norm.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"},
        {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"},
        {"mlp.down_proj.weight", "ffn_down.weight"},
        {"mlp.gate.weight", "ffn_gate_inp.weight"},
    };
    for (uint64_t i = 0; i < L; i++) {
        for (size_t k = 0; k < sizeof per_layer / sizeof *per_layer; k++) {
            char hf[192], gg[96];
            snprintf(hf, sizeof hf, "model.layers.%llu.%s", (unsigned long long)i, per_layer[k][0]);
            snprintf(gg, sizeof gg, "blk.%llu.%s", (unsigned long long)i, per_layer[k][1]);
            st_t *t = find(hf);
            if (t)
                add(gg, t, llama && k == 1 ? Nq : llama && k == 2 ? Nkv : 0);
        }
        static const char *const ex[][2] = {{"gate_proj", "ffn_gate_exps"},
                                            {"up_proj", "ffn_up_exps"},
                                            {"down_proj", "ffn_down_exps"}};
        for (size_t k = 0; E && k < 3; k++) {
            char hf[192], gg[96];
            snprintf(hf, sizeof hf, "model.layers.%llu.mlp.experts.0.%s.weight", (unsigned long long)i, ex[k][0]);
            st_t *t0 = find(hf);
            if (!t0)
                continue; /* a dense layer */
            snprintf(gg, sizeof gg, "blk.%llu.%s.weight", (unsigned long long)i, ex[k][1]);
            gt_t *g = add(gg, t0, 0);
            g->rank = 3;
            g->dims[0] = E;
            g->dims[1] = t0->dims[0];
            g->dims[2] = t0->dims[1];
            for (uint64_t e = 1; e < E && e < 512; e++) {
                snprintf(hf, sizeof hf, "model.layers.%llu.mlp.experts.%llu.%s.weight",
                         (unsigned long long)i, (unsigned long long)e, ex[k][0]);
                g->src[g->n_src++] = find(hf);
            }
        }
    }
    add("output_norm.weight", find("model.norm.weight"), 0);
    if (find("lm_head.weight"))
        add("output.weight", find("lm_head.weight"), 0);

    out = fopen(argv[optind + 1], "wb");
    if (!out) {
        fprintf(stderr, PROG ": %s: %s\n", argv[optind + 1], strerror(errno));
        return 3;
    }
    /* header and key/values */
    uint64_t nkv = 12 + (E ? 3 : 0) + (tok ? 9 : 0);
    w("GGUF", 4);
    w32(3);
    w64(nG);
    w64(nkv);
    char k[128];
    kv_str("general.architecture", arch);
    kv_str("general.name", "nf-mkgguf tiny");
    kv_u32("general.alignment", (uint32_t)align);
#define KV(suffix) (snprintf(k, sizeof k, "%s.%s", arch, suffix), k)
    kv_u32(KV("block_count"), (uint32_t)L);
    kv_u32(KV("context_length"), 256);
    kv_u32(KV("embedding_length"), (uint32_t)num(cfg, "hidden_size", 0));
    kv_u32(KV("feed_forward_length"), (uint32_t)num(cfg, "intermediate_size", 0));
    kv_u32(KV("attention.head_count"), (uint32_t)Nq);
    kv_u32(KV("attention.head_count_kv"), (uint32_t)Nkv);
    kv_u32(KV("attention.key_length"), (uint32_t)num(cfg, "head_dim", 0));
    kv_f32(KV("attention.layer_norm_rms_epsilon"), 1e-6f);
    kv_f32(KV("rope.freq_base"), 1000000.0f);
    if (E) {
        kv_u32(KV("expert_count"), (uint32_t)E);
        kv_u32(KV("expert_used_count"), 2);
        kv_u32(KV("expert_feed_forward_length"), (uint32_t)num(cfg, "moe_intermediate_size", 0));
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
            float f = -1.5f * (float)i;
            uint32_t u;
            memcpy(&u, &f, 4);
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
    /* tensor infos */
    uint64_t off = 0;
    for (size_t i = 0; i < nG; i++) {
        gt_t *g = &G[i];
        wstr(g->name);
        w32(g->rank);
        uint64_t el = 1;
        for (unsigned d = 0; d < g->rank; d++) {
            w64(g->dims[g->rank - 1 - d]);
            el *= g->dims[d];
        }
        w32(g->type);
        off = (off + align - 1) / align * align;
        g->off = off;
        w64(off);
        off += el * g->eb;
    }
    long pos = ftell(out);
    while (pos % (long)align)
        fputc(0, out), pos++;
    /* data */
    FILE *in = fopen(path, "rb");
    uint64_t at = 0;
    for (size_t i = 0; i < nG; i++) {
        gt_t *g = &G[i];
        while (at < g->off)
            fputc(0, out), at++;
        for (size_t s = 0; s < g->n_src; s++) {
            st_t *t = g->src[s];
            uint64_t rows = t->dims[0], cols = t->rank > 1 ? t->dims[1] : 1, rb = cols * t->eb;
            if (t->rank == 1)
                rows = 1, cols = t->dims[0], rb = cols * t->eb;
            unsigned char *row = malloc(rb);
            for (uint64_t r = 0; r < rows; r++) {
                uint64_t src = r;
                if (g->permute) { /* GGUF row r = 2i+t within its head <- HF row t*R/2+i */
                    uint64_t R = rows / g->permute, h = r / R, w2 = r % R;
                    src = h * R + (w2 % 2) * (R / 2) + w2 / 2;
                }
                fseeko(in, (off_t)(t->off + src * rb), SEEK_SET);
                if (fread(row, 1, rb, in) != rb) {
                    fprintf(stderr, PROG ": short read\n");
                    return 3;
                }
                w(row, rb);
                at += rb;
            }
            free(row);
        }
    }
    fclose(in);
    if (fclose(out) != 0) {
        fprintf(stderr, PROG ": write error\n");
        return 3;
    }
    free(cfg);
    free(S);
    return 0;
}
