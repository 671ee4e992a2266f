/* nf-mkckpt — write a small, deterministic Hugging Face–layout Llama
 * checkpoint for the tests (DESIGN section 12: fixtures are generated at test
 * time by small C tools).
 *
 *   nf-mkckpt [--seed N] [--layers L] DIR
 *
 * Writes into DIR (created if missing, parents included): config.json,
 * model.safetensors, tokenizer.json, tokenizer_config.json and
 * generation_config.json. The same seed and layer count give byte-identical
 * files. Weights are BF16 (normal-ish values of standard deviation about 0.02,
 * rounded to nearest even), the RMSNorm weights F32 near 1.0, so both dtypes
 * occur. Every file is written to a temporary name in DIR and renamed only
 * after all of them were written; on any failure (or SIGINT/SIGTERM/SIGHUP)
 * the temporaries are removed and nothing new is left in DIR.
 *
 * Standalone: libc (and the header-only helpers of nf_util.h) only, so a bug
 * in the library cannot hide in the fixtures it is tested with.
 *
 * Exit status: 0 ok, 2 usage, 3 I/O or system error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "nf_util.h"

#define PROG "nf-mkckpt"

/* Model shape: the defaults make the small test model; the options make
 * larger, Llama-shaped ones for the benchmarks (scripts/bench-quant.sh). */
static uint64_t HIDDEN = 256, INTER = 688, N_HEADS = 8, N_KV_HEADS = 4, VOCAB = 2048;
#define HEAD_DIM (HIDDEN / N_HEADS)
#define KV_DIM (N_KV_HEADS * HEAD_DIM)
#define MAX_LAYERS 64
#define MAX_DIM 65536
static int g_f16; /* weights F16 instead of BF16 (--dtype f16) */

static const char usage_text[] =
    "usage: " PROG " [--seed N] [--layers L] DIR\n"
    "Write a small deterministic Hugging Face Llama checkpoint into DIR\n"
    "(created if missing): config.json, model.safetensors, tokenizer.json,\n"
    "tokenizer_config.json, generation_config.json.\n"
    "\n"
    "  --seed N     PRNG seed, decimal U64 (default 0); same seed, same bytes\n"
    "  --layers L   num_hidden_layers, 1..64 (default 2)\n"
    "  --hidden H, --intermediate I, --heads A, --kv-heads B, --vocab V\n"
    "               the shape (defaults 256, 688, 8, 4, 2048; each 1..65536,\n"
    "               H a multiple of A, A of B)\n"
    "  --dtype bf16|f16  the weights' dtype (default bf16)\n"
    "  -h, --help   show this help\n"
    "\n"
    "Model: by default hidden 256, intermediate 688, 8 heads, 4 KV heads,\n"
    "vocab 2048; weights BF16, norms F32. Exit: 0 ok, 2 usage, 3 I/O error.\n";

/* ---- temporaries, removed on failure or signal ------------------------ */

#define N_FILES 5
static char *tmp_paths[N_FILES];
static char *final_paths[N_FILES]; /* for messages */
static volatile sig_atomic_t tmp_live[N_FILES];

static void remove_temps(void)
{
    for (int i = 0; i < N_FILES; i++)
        if (tmp_live[i] && tmp_paths[i]) {
            unlink(tmp_paths[i]);
            tmp_live[i] = 0;
        }
}

static void on_signal(int sig)
{
    for (int i = 0; i < N_FILES; i++)
        if (tmp_live[i] && tmp_paths[i])
            unlink(tmp_paths[i]); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

static void die_io(const char *what, const char *path, int err)
{
    remove_temps();
    fprintf(stderr, PROG ": %s: %s: %s\n", path, what, strerror(err));
    exit(3);
}

static void die_oom(void)
{
    remove_temps();
    fprintf(stderr, PROG ": out of memory\n");
    exit(3);
}

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs(PROG ": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try --help)\n", stderr);
    exit(2);
}

/* ---- a growable byte buffer ------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t extra)
{
    if (b->cap - b->len > extra)
        return;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len <= extra) {
        if (cap > SIZE_MAX / 2)
            die_oom();
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        die_oom();
    b->p = p;
    b->cap = cap;
}

static void buf_add(buf_t *b, const void *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_puts(buf_t *b, const char *s) { buf_add(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3)))
static void buf_printf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    char *s;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        die_oom();
    buf_add(b, s, (size_t)n);
    free(s);
}

/* Append s as a JSON string literal (quotes included). s is UTF-8. */
static void buf_json_str(buf_t *b, const char *s)
{
    buf_add(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        switch (*q) {
        case '"': buf_puts(b, "\\\""); break;
        case '\\': buf_puts(b, "\\\\"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\r': buf_puts(b, "\\r"); break;
        case '\t': buf_puts(b, "\\t"); break;
        default:
            if (*q < 0x20)
                buf_printf(b, "\\u%04x", *q);
            else
                buf_add(b, q, 1);
        }
    }
    buf_add(b, "\"", 1);
}

/* ---- output files ------------------------------------------------------ */

static void write_all(int fd, const void *p, size_t n, const char *path)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die_io("write", path, errno);
        }
        if (w == 0)
            die_io("write", path, EIO);
        c += w;
        n -= (size_t)w;
    }
}

static mode_t file_mode(void)
{
    mode_t m = umask(0);
    umask(m);
    return 0666 & ~m;
}

/* Create temporary number slot for final name `name` in dir; returns fd. */
static int open_temp(int slot, const char *dir, const char *name)
{
    buf_t b = {0}, f = {0};
    buf_printf(&b, "%s/.%s.tmpXXXXXX", dir, name);
    buf_printf(&f, "%s/%s", dir, name);
    tmp_paths[slot] = b.p;
    final_paths[slot] = f.p;
    int fd = mkstemp(b.p);
    if (fd < 0)
        die_io("cannot create a temporary file beside it", f.p, errno);
    tmp_live[slot] = 1;
    if (fchmod(fd, file_mode()) != 0)
        die_io("chmod", f.p, errno);
    return fd;
}

/* No fsync: these are throwaway test fixtures; close() still reports
 * deferred write errors. */
static void close_temp(int fd, int slot)
{
    if (close(fd) != 0)
        die_io("close", final_paths[slot], errno);
}

static uint64_t total_bytes;

static void write_text_file(int slot, const char *dir, const char *name, const buf_t *b)
{
    int fd = open_temp(slot, dir, name);
    write_all(fd, b->p, b->len, final_paths[slot]);
    close_temp(fd, slot);
    total_bytes += b->len;
}

static void mkdir_p(const char *path)
{
    char *p = strdup(path);
    if (!p)
        die_oom();
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0777) != 0 && errno != EEXIST)
                die_io("cannot create directory", p, errno);
            *s = c;
            if (c == '\0')
                break;
        }
    }
    struct stat st;
    if (stat(p, &st) != 0)
        die_io("stat", p, errno);
    if (!S_ISDIR(st.st_mode))
        die_io("not a directory", p, ENOTDIR);
    free(p);
}

/* ---- deterministic values ---------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* An approximately standard normal deviate: the sum of four 16-bit uniforms
 * (Irwin–Hall), centred and scaled. Integer work plus one IEEE division, so
 * every machine gives the same bits. */
static double normalish(uint64_t *s)
{
    uint64_t r = splitmix64(s);
    uint64_t sum = (r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
    /* mean 4 * 65535/2; sd sqrt(4 * (65536^2 - 1) / 12) */
    return ((double)sum - 131070.0) / 37837.2263;
}

static uint64_t name_seed(uint64_t seed, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    uint64_t s = seed ^ h;
    splitmix64(&s);
    return s;
}

/* f32 -> IEEE binary16, round to nearest even (|f| small and normal here:
 * the weights are about 0.02 * N(0,1); subnormal halves are handled). */
static uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sgn = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x477ff000u)
        return (uint16_t)(sgn | 0x7c00u);
    if (a >= 0x38800000u) {
        uint32_t r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return (uint16_t)(sgn | (r >> 13));
    }
    if (a < 0x33000000u) /* below half the smallest subnormal: 0 */
        return sgn;
    uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e;
    uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return (uint16_t)(sgn | q);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    /* values here are finite; round to nearest, ties to even */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- the tensor list ------------------------------------------------- */

typedef struct {
    char name[80];
    int is_f32;
    int rank;
    uint64_t shape[2];
    uint64_t begin, end;
} tensor_t;

static int add_tensor(tensor_t *t, int n, const char *name, int is_f32, uint64_t d0, uint64_t d1)
{
    tensor_t *x = &t[n];
    snprintf(x->name, sizeof x->name, "%s", name);
    x->is_f32 = is_f32;
    x->rank = d1 ? 2 : 1;
    x->shape[0] = d0;
    x->shape[1] = d1;
    return n + 1;
}

static int build_tensors(tensor_t *t, int layers)
{
    int n = 0;
    char nm[80];
    n = add_tensor(t, n, "model.embed_tokens.weight", 0, VOCAB, HIDDEN);
    for (int i = 0; i < layers; i++) {
#define L(suffix, f32, a, b)                                              \
        do {                                                              \
            snprintf(nm, sizeof nm, "model.layers.%d.%s", i, suffix);     \
            n = add_tensor(t, n, nm, f32, a, b);                          \
        } while (0)
        L("input_layernorm.weight", 1, HIDDEN, 0);
        L("self_attn.q_proj.weight", 0, HIDDEN, HIDDEN);
        L("self_attn.k_proj.weight", 0, KV_DIM, HIDDEN);
        L("self_attn.v_proj.weight", 0, KV_DIM, HIDDEN);
        L("self_attn.o_proj.weight", 0, HIDDEN, HIDDEN);
        L("post_attention_layernorm.weight", 1, HIDDEN, 0);
        L("mlp.gate_proj.weight", 0, INTER, HIDDEN);
        L("mlp.up_proj.weight", 0, INTER, HIDDEN);
        L("mlp.down_proj.weight", 0, HIDDEN, INTER);
#undef L
    }
    n = add_tensor(t, n, "model.norm.weight", 1, HIDDEN, 0);
    n = add_tensor(t, n, "lm_head.weight", 0, VOCAB, HIDDEN);
    return n;
}

static void write_safetensors(int slot, const char *dir, uint64_t seed, int layers)
{
    tensor_t *t = calloc((size_t)(9 * layers + 3), sizeof *t);
    if (!t)
        die_oom();
    int nt = build_tensors(t, layers);

    uint64_t off = 0, maxbytes = 0;
    for (int i = 0; i < nt; i++) {
        uint64_t elems = t[i].shape[0] * (t[i].rank == 2 ? t[i].shape[1] : 1);
        uint64_t bytes = elems * (t[i].is_f32 ? 4 : 2);
        off = (off + 7) & ~(uint64_t)7;
        t[i].begin = off;
        t[i].end = off + bytes;
        off = t[i].end;
        if (bytes > maxbytes)
            maxbytes = bytes;
    }

    buf_t h = {0};
    buf_puts(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < nt; i++) {
        buf_printf(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%llu", t[i].name,
                   t[i].is_f32 ? "F32" : g_f16 ? "F16" : "BF16", (unsigned long long)t[i].shape[0]);
        if (t[i].rank == 2)
            buf_printf(&h, ",%llu", (unsigned long long)t[i].shape[1]);
        buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)t[i].begin,
                   (unsigned long long)t[i].end);
    }
    buf_puts(&h, "}");
    while (h.len % 8 != 0) /* data starts at 8 + N: keep it 8-aligned */
        buf_puts(&h, " ");

    int fd = open_temp(slot, dir, "model.safetensors");
    const char *path = final_paths[slot];
    unsigned char len8[8];
    nf_store_le64(len8, h.len);
    write_all(fd, len8, 8, path);
    write_all(fd, h.p, h.len, path);

    unsigned char *data = malloc(maxbytes + 8);
    if (!data)
        die_oom();
    uint64_t pos = 0;
    static const unsigned char zeros[8];
    for (int i = 0; i < nt; i++) {
        if (t[i].begin > pos)
            write_all(fd, zeros, (size_t)(t[i].begin - pos), path);
        uint64_t s = name_seed(seed, t[i].name);
        uint64_t elems = (t[i].end - t[i].begin) / (t[i].is_f32 ? 4 : 2);
        for (uint64_t e = 0; e < elems; e++) {
            if (t[i].is_f32) {
                float f = (float)(1.0 + 0.01 * normalish(&s));
                uint32_t u;
                memcpy(&u, &f, 4);
                for (int k = 0; k < 4; k++)
                    data[4 * e + k] = (unsigned char)(u >> (8 * k));
            } else {
                float f = (float)(0.02 * normalish(&s));
                uint16_t v = g_f16 ? f32_to_f16(f) : f32_to_bf16(f);
                data[2 * e] = (unsigned char)v;
                data[2 * e + 1] = (unsigned char)(v >> 8);
            }
        }
        write_all(fd, data, (size_t)(t[i].end - t[i].begin), path);
        pos = t[i].end;
    }
    close_temp(fd, slot);
    total_bytes += 8 + h.len + pos;
    free(data);
    free(h.p);
    free(t);
}

/* ---- config files -------------------------------------------------------- */

static void make_config(buf_t *b, int layers)
{
    buf_printf(b,
               "{\n"
               "  \"architectures\": [\n"
               "    \"LlamaForCausalLM\"\n"
               "  ],\n"
               "  \"bos_token_id\": 1,\n"
               "  \"eos_token_id\": 2,\n"
               "  \"hidden_act\": \"silu\",\n"
               "  \"hidden_size\": %d,\n"
               "  \"intermediate_size\": %d,\n"
               "  \"max_position_embeddings\": 512,\n"
               "  \"model_type\": \"llama\",\n"
               "  \"num_attention_heads\": %d,\n"
               "  \"num_hidden_layers\": %d,\n"
               "  \"num_key_value_heads\": %d,\n"
               "  \"rms_norm_eps\": 1e-05,\n"
               "  \"rope_theta\": 10000.0,\n"
               "  \"tie_word_embeddings\": false,\n"
               "  \"torch_dtype\": \"%s\",\n"
               "  \"vocab_size\": %d\n"
               "}\n",
               (int)HIDDEN, (int)INTER, (int)N_HEADS, layers, (int)N_KV_HEADS,
               g_f16 ? "float16" : "bfloat16", (int)VOCAB);
}

static void make_generation_config(buf_t *b)
{
    buf_puts(b, "{\n"
                "  \"bos_token_id\": 1,\n"
                "  \"eos_token_id\": 2,\n"
                "  \"do_sample\": true,\n"
                "  \"temperature\": 0.7\n"
                "}\n");
}

/* A short Llama-2-style chat template: newlines, single and double quotes,
 * a backslash, so the JSON escaping is exercised. */
static const char chat_template[] =
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == \"system\" %}<<SYS>>\n{{ message['content'] | trim }}\n<</SYS>>\n\n"
    "{% elif message['role'] == \"user\" %}[INST] {{ message['content'] | trim }} [/INST]"
    "{% else %} {{ message['content'] | trim }} {{ eos_token }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '\\n' }}{% endif %}";

static void make_tokenizer_config(buf_t *b)
{
    buf_puts(b, "{\n"
                "  \"add_bos_token\": true,\n"
                "  \"add_eos_token\": false,\n"
                "  \"added_tokens_decoder\": {\n");
    static const char *const sp[3] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3; i++)
        buf_printf(b,
                   "    \"%d\": {\n"
                   "      \"content\": \"%s\",\n"
                   "      \"lstrip\": false,\n"
                   "      \"normalized\": false,\n"
                   "      \"rstrip\": false,\n"
                   "      \"single_word\": false,\n"
                   "      \"special\": true\n"
                   "    }%s\n",
                   i, sp[i], i < 2 ? "," : "");
    buf_puts(b, "  },\n"
                "  \"bos_token\": \"<s>\",\n"
                "  \"chat_template\": ");
    buf_json_str(b, chat_template);
    buf_puts(b, ",\n"
                "  \"clean_up_tokenization_spaces\": false,\n"
                "  \"eos_token\": \"</s>\",\n"
                "  \"model_max_length\": 512,\n"
                "  \"pad_token\": null,\n"
                "  \"tokenizer_class\": \"LlamaTokenizerFast\",\n"
                "  \"unk_token\": \"<unk>\"\n"
                "}\n");
}

/* ---- tokenizer.json: byte-level BPE ---------------------------------- */

typedef struct {
    char **tok;
    int n, cap;
} vocab_t;

static int vocab_find(const vocab_t *v, const char *s)
{
    for (int i = 0; i < v->n; i++)
        if (strcmp(v->tok[i], s) == 0)
            return i;
    return -1;
}

static int vocab_add(vocab_t *v, const char *s)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 512;
        char **p = realloc(v->tok, (size_t)cap * sizeof *p);
        if (!p)
            die_oom();
        v->tok = p;
        v->cap = cap;
    }
    v->tok[v->n] = strdup(s);
    if (!v->tok[v->n])
        die_oom();
    return v->n++;
}

/* GPT-2 bytes_to_unicode: printable Latin-1 bytes map to themselves, the
 * rest to U+0100 upwards, in byte order. Writes UTF-8 (1 or 2 bytes). */
static void byte_char(int byte, char out[3])
{
    int cp;
    if ((byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255)) {
        cp = byte;
    } else {
        int k = 0;
        for (int b = 0; b < byte; b++)
            if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)))
                k++;
        cp = 256 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = '\0';
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = '\0';
    }
}

static const char *const words[] = {
    "the", "and", "of", "to", "in", "is", "that", "for", "it", "with", "as", "was",
    "on", "be", "at", "by", "this", "have", "from", "or", "one", "had", "not", "but",
    "what", "all", "were", "when", "we", "there", "can", "an", "your", "which", "their",
    "said", "if", "do", "will", "each", "about", "how", "up", "out", "them", "then",
    "she", "many", "some", "so", "these", "would", "other", "into", "has", "more",
    "time", "could", "first", "been", "people", "made", "over", "down", "only",
    "little", "very", "after", "where", "know", "model", "token", "hello", "world",
    "once", "upon", "story", "happy", "played", "friend",
};

static void make_tokenizer(buf_t *b)
{
    vocab_t v = {0};
    vocab_add(&v, "<unk>");
    vocab_add(&v, "<s>");
    vocab_add(&v, "</s>");
    char bc[256][3];
    for (int i = 0; i < 256; i++) {
        byte_char(i, bc[i]);
        vocab_add(&v, bc[i]);
    }
    /* Merges build each word left to right, with and without the byte-level
     * space marker (byte 0x20 -> U+0120); every merge joins two tokens that
     * are already in the vocabulary and adds its result. */
    buf_t merges = {0};
    int nmerges = 0;
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        for (int spaced = 1; spaced >= 0; spaced--) {
            char cur[64], next[64];
            const char *word = words[w];
            size_t i = 0;
            if (spaced) {
                snprintf(cur, sizeof cur, "%s", bc[' ']);
            } else {
                snprintf(cur, sizeof cur, "%s", bc[(unsigned char)word[0]]);
                i = 1;
            }
            for (; word[i]; i++) {
                const char *piece = bc[(unsigned char)word[i]];
                size_t cl = strlen(cur), pl = strlen(piece);
                if (cl + pl >= sizeof next) /* words are short; cannot happen */
                    break;
                memcpy(next, cur, cl);
                memcpy(next + cl, piece, pl + 1);
                if (vocab_find(&v, next) < 0) {
                    vocab_add(&v, next);
                    buf_puts(&merges, nmerges ? ",\n      " : "\n      ");
                    buf_t m = {0};
                    buf_printf(&m, "%s %s", cur, piece);
                    buf_json_str(&merges, m.p);
                    free(m.p);
                    nmerges++;
                }
                memcpy(cur, next, strlen(next) + 1);
            }
        }
    }

    buf_puts(b, "{\n"
                "  \"version\": \"1.0\",\n"
                "  \"truncation\": null,\n"
                "  \"padding\": null,\n"
                "  \"added_tokens\": [\n");
    for (int i = 0; i < 3; i++)
        buf_printf(b,
                   "    {\n"
                   "      \"id\": %d,\n"
                   "      \"content\": \"%s\",\n"
                   "      \"single_word\": false,\n"
                   "      \"lstrip\": false,\n"
                   "      \"rstrip\": false,\n"
                   "      \"normalized\": false,\n"
                   "      \"special\": true\n"
                   "    }%s\n",
                   i, v.tok[i], i < 2 ? "," : "");
    buf_puts(b, "  ],\n"
                "  \"normalizer\": null,\n"
                "  \"pre_tokenizer\": {\n"
                "    \"type\": \"ByteLevel\",\n"
                "    \"add_prefix_space\": false,\n"
                "    \"trim_offsets\": true,\n"
                "    \"use_regex\": true\n"
                "  },\n"
                "  \"post_processor\": null,\n"
                "  \"decoder\": {\n"
                "    \"type\": \"ByteLevel\",\n"
                "    \"add_prefix_space\": true,\n"
                "    \"trim_offsets\": true,\n"
                "    \"use_regex\": true\n"
                "  },\n"
                "  \"model\": {\n"
                "    \"type\": \"BPE\",\n"
                "    \"dropout\": null,\n"
                "    \"unk_token\": \"<unk>\",\n"
                "    \"continuing_subword_prefix\": null,\n"
                "    \"end_of_word_suffix\": null,\n"
                "    \"fuse_unk\": false,\n"
                "    \"byte_fallback\": false,\n"
                "    \"vocab\": {");
    for (int i = 0; i < v.n; i++) {
        buf_puts(b, i ? ",\n      " : "\n      ");
        buf_json_str(b, v.tok[i]);
        buf_printf(b, ": %d", i);
    }
    buf_puts(b, "\n    },\n"
                "    \"merges\": [");
    buf_add(b, merges.p, merges.len);
    buf_puts(b, "\n    ]\n"
                "  }\n"
                "}\n");
    free(merges.p);
    for (int i = 0; i < v.n; i++)
        free(v.tok[i]);
    free(v.tok);
}

/* ---- main -------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        if (!nf_mul_u64(v, 10, &v) || !nf_add_u64(v, (uint64_t)(*s - '0'), &v))
            return 0;
    }
    *out = v;
    return 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"seed", required_argument, NULL, 's'},
        {"layers", required_argument, NULL, 'l'},
        {"hidden", required_argument, NULL, 'H'},
        {"intermediate", required_argument, NULL, 'I'},
        {"heads", required_argument, NULL, 'A'},
        {"kv-heads", required_argument, NULL, 'B'},
        {"vocab", required_argument, NULL, 'V'},
        {"dtype", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    uint64_t seed = 0, layers = 2, v = 0;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (!parse_u64(optarg, &seed))
                usage_error("--seed: '%s' is not a decimal U64", optarg);
            break;
        case 'l':
            if (!parse_u64(optarg, &layers) || layers < 1 || layers > MAX_LAYERS)
                usage_error("--layers: '%s' is not an integer in 1..%d", optarg, MAX_LAYERS);
            break;
        case 'H':
        case 'I':
        case 'A':
        case 'B':
        case 'V':
            if (!parse_u64(optarg, &v) || v < 1 || v > MAX_DIM)
                usage_error("--%s: '%s' is not an integer in 1..%d",
                            c == 'H' ? "hidden" : c == 'I' ? "intermediate" : c == 'A' ? "heads"
                            : c == 'B' ? "kv-heads" : "vocab", optarg, MAX_DIM);
            *(c == 'H' ? &HIDDEN : c == 'I' ? &INTER : c == 'A' ? &N_HEADS
              : c == 'B' ? &N_KV_HEADS : &VOCAB) = v;
            break;
        case 'd':
            if (strcmp(optarg, "bf16") && strcmp(optarg, "f16"))
                usage_error("--dtype: '%s' is not bf16 or f16", optarg);
            g_f16 = !strcmp(optarg, "f16");
            break;
        case 'h':
            fputs(usage_text, stdout);
            return 0;
        default:
            usage_error("unknown option or missing argument: '%s'", argv[optind - 1]);
        }
    }
    if (HIDDEN % N_HEADS || N_HEADS % N_KV_HEADS)
        usage_error("--hidden must be a multiple of --heads, --heads of --kv-heads");
    if (argc - optind != 1)
        usage_error(argc - optind ? "exactly one DIR expected" : "missing DIR");
    if (!*argv[optind])
        usage_error("DIR is empty");
    char *dir = strdup(argv[optind]);
    if (!dir)
        die_oom();
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
        dir[n - 1] = '\0';

    install_signals();
    mkdir_p(dir);

    static const char *const names[N_FILES] = {
        "config.json", "model.safetensors", "tokenizer.json",
        "tokenizer_config.json", "generation_config.json",
    };
    buf_t b = {0};
    make_config(&b, (int)layers);
    write_text_file(0, dir, names[0], &b);
    write_safetensors(1, dir, seed, (int)layers);
    b.len = 0;
    make_tokenizer(&b);
    write_text_file(2, dir, names[2], &b);
    b.len = 0;
    make_tokenizer_config(&b);
    write_text_file(3, dir, names[3], &b);
    b.len = 0;
    make_generation_config(&b);
    write_text_file(4, dir, names[4], &b);
    free(b.p);

    /* Publish only when every file was written. */
    for (int i = 0; i < N_FILES; i++) {
        if (rename(tmp_paths[i], final_paths[i]) != 0) {
            int e = errno;
            for (int j = 0; j < i; j++) /* withdraw the ones already renamed */
                unlink(final_paths[j]);
            die_io("cannot rename into place", final_paths[i], e);
        }
        tmp_live[i] = 0;
    }
    fprintf(stderr, PROG ": wrote %s/{config.json,model.safetensors,tokenizer.json,"
                    "tokenizer_config.json,generation_config.json} (5 files, %llu bytes, "
                    "%d layers, seed %llu)\n",
            dir, (unsigned long long)total_bytes, (int)layers, (unsigned long long)seed);
    for (int i = 0; i < N_FILES; i++) {
        free(tmp_paths[i]);
        free(final_paths[i]);
    }
    free(dir);
    return 0;
}
