/* t_gguf.c — the GGUF reader (nf_gguf.h) over the real files of
 * ../shared/realdata (F32, F16, quantized, vocabulary-only), over GGUFs
 * built here with every value type, and over truncated and corrupted copies:
 * every prefix and every single-byte corruption of a real header must give a
 * diagnostic or a consistent result, never a crash or a huge allocation
 * (the address space is capped below what a hostile count would ask for). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nf_gguf.h"
#include "nf_io.h"
#include "nf_json.h"
#include "nf_safetensors.h"
#include "nf_realdata.h"
#include "nf_test.h"
#include "nf_cli.h" /* nf_diags_print */

#if defined(__SANITIZE_ADDRESS__)
#define NF_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NF_ASAN 1
#endif
#endif

static char tmpdir[] = "/tmp/t_gguf.XXXXXX";

/* ---- a GGUF builder -------------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void u8(buf_t *b, uint8_t v) { put(b, &v, 1); }
static void u32(buf_t *b, uint32_t v)
{
    unsigned char x[4] = {v, v >> 8, v >> 16, v >> 24};
    put(b, x, 4);
}
static void u64(buf_t *b, uint64_t v)
{
    unsigned char x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    put(b, x, 8);
}
static void str(buf_t *b, const char *s)
{
    u64(b, strlen(s));
    put(b, s, strlen(s));
}
static void key(buf_t *b, const char *k, uint32_t type)
{
    str(b, k);
    u32(b, type);
}
static void pad_to(buf_t *b, size_t align)
{
    while (b->n % align)
        u8(b, 0);
}

static const char *write_file(const char *name, const void *p, size_t n)
{
    static char path[4][512];
    static int k;
    char *out = path[k++ % 4];
    snprintf(out, 512, "%s/%s", tmpdir, name);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || nf_write_all(fd, p, n) != 0)
        abort();
    close(fd);
    return out;
}

/* Open and return the exit status the diagnostics imply (0 when open
 * succeeded); *code gets the first diagnostic's code. */
static int try_open(const char *path, nf_code *code, nf_gguf **keep)
{
    nf_diags d = NF_DIAGS_INIT;
    d.file = path;
    nf_gguf *g = nf_gguf_open(path, &d);
    int rc = g ? 0 : nf_diags_exit(&d);
    if (code)
        *code = d.n ? d.v[0].code : NF_C_COUNT_;
    if (g && d.n)
        rc = -1; /* success must come without findings */
    if (!g && !d.n)
        rc = -2; /* failure must say why */
    for (size_t i = 0; i < d.n; i++)
        if (strstr(d.v[i].message, "out of memory"))
            rc = -3;
    if (keep)
        *keep = g;
    else
        nf_gguf_free(g);
    nf_diags_free(&d);
    return rc;
}

/* A small valid v3 GGUF: every value type, a nested array, alignment 64,
 * a BF16 [3,64] tensor and an F32 [5] tensor. */
static buf_t build_small(void)
{
    buf_t b = {0};
    put(&b, "GGUF", 4);
    u32(&b, 3);
    u64(&b, 2);  /* tensors */
    u64(&b, 17); /* kv */
    key(&b, "general.architecture", NF_GGUF_STRING); str(&b, "llama");
    key(&b, "general.alignment", NF_GGUF_U32); u32(&b, 64);
    key(&b, "t.u8", NF_GGUF_U8); u8(&b, 200);
    key(&b, "t.i8", NF_GGUF_I8); u8(&b, 0xfe);
    key(&b, "t.u16", NF_GGUF_U16); u8(&b, 0x34); u8(&b, 0x12);
    key(&b, "t.i16", NF_GGUF_I16); u8(&b, 0xff); u8(&b, 0xff);
    key(&b, "t.u32", NF_GGUF_U32); u32(&b, 4000000000u);
    key(&b, "t.i32", NF_GGUF_I32); u32(&b, (uint32_t)-7);
    key(&b, "t.f32", NF_GGUF_F32); { float f = 0.1f; uint32_t w; memcpy(&w, &f, 4); u32(&b, w); }
    key(&b, "t.bool", NF_GGUF_BOOL); u8(&b, 1);
    key(&b, "t.u64", NF_GGUF_U64); u64(&b, UINT64_MAX);
    key(&b, "t.i64", NF_GGUF_I64); u64(&b, (uint64_t)INT64_MIN);
    key(&b, "t.f64", NF_GGUF_F64); { double f = 10000.0; uint64_t w; memcpy(&w, &f, 8); u64(&b, w); }
    /* [["a", "b\"\x01"], [], ["\u00e9"]] : array of arrays of strings */
    key(&b, "t.nested", NF_GGUF_ARRAY); u32(&b, NF_GGUF_ARRAY); u64(&b, 3);
    u32(&b, NF_GGUF_STRING); u64(&b, 2); str(&b, "a"); str(&b, "b\"\x01");
    u32(&b, NF_GGUF_STRING); u64(&b, 0);
    u32(&b, NF_GGUF_STRING); u64(&b, 1); str(&b, "\xc3\xa9");
    key(&b, "t.floats", NF_GGUF_ARRAY); u32(&b, NF_GGUF_F32); u64(&b, 2);
    { float f[2] = {1.0f, -INFINITY}; uint32_t w; memcpy(&w, &f[0], 4); u32(&b, w); memcpy(&w, &f[1], 4); u32(&b, w); }
    /* a string that is not UTF-8 (0xff) as element 1 */
    key(&b, "t.bytes", NF_GGUF_ARRAY); u32(&b, NF_GGUF_STRING); u64(&b, 2);
    str(&b, "ok"); str(&b, "a\xff");
    key(&b, "t.nan", NF_GGUF_F64); { double f = NAN; uint64_t w; memcpy(&w, &f, 8); u64(&b, w); }
    /* tensors */
    str(&b, "w"); u32(&b, 2); u64(&b, 64); u64(&b, 3); u32(&b, NF_GGML_BF16); u64(&b, 0);
    str(&b, "v"); u32(&b, 1); u64(&b, 5); u32(&b, NF_GGML_F32); u64(&b, 384);
    pad_to(&b, 64);
    for (int i = 0; i < 384 + 20; i++)
        u8(&b, (uint8_t)i);
    return b;
}

static void test_small(void)
{
    buf_t b = build_small();
    const char *path = write_file("small.gguf", b.p, b.n);
    nf_diags d = NF_DIAGS_INIT;
    nf_gguf *g = nf_gguf_open(path, &d);
    CHECK(g && d.n == 0, "small: a GGUF with every value type opens");
    if (!g) {
        nf_diags_print(&d, "t_gguf", stdout);
        nf_diags_free(&d);
        free(b.p);
        return;
    }
    CHECK_EQ_U64(g->version, 3, "small: version");
    CHECK_EQ_U64(g->alignment, 64, "small: general.alignment");
    CHECK_EQ_U64(g->data_start % 64, 0, "small: data section aligned");
    CHECK_EQ_U64(g->n_kv, 17, "small: kv count");
    uint64_t u;
    double f;
    bool bv;
    CHECK(nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.u8"), &u) && u == 200, "small: u8");
    CHECK(!nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.i8"), &u), "small: negative i8 is no u64");
    CHECK(nf_gguf_kv_f64(g, nf_gguf_find_kv(g, "t.i8"), &f) && f == -2, "small: i8 as f64");
    CHECK(nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.u16"), &u) && u == 0x1234, "small: u16");
    CHECK(nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.u32"), &u) && u == 4000000000u, "small: u32");
    CHECK(nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.u64"), &u) && u == UINT64_MAX, "small: u64");
    CHECK(!nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.i64"), &u), "small: negative i64");
    CHECK(nf_gguf_kv_f64(g, nf_gguf_find_kv(g, "t.f32"), &f) && f == (double)0.1f, "small: f32");
    CHECK(!nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "t.f32"), &u), "small: f32 is not an integer");
    CHECK(nf_gguf_kv_bool(g, nf_gguf_find_kv(g, "t.bool"), &bv) && bv, "small: bool");
    CHECK(nf_gguf_find_kv(g, "t.absent") == NULL, "small: absent key");
    size_t len;
    char *s = nf_gguf_kv_string(g, nf_gguf_find_kv(g, "general.architecture"), &len);
    CHECK(s && len == 5 && strcmp(s, "llama") == 0, "small: string");
    free(s);
    CHECK(nf_gguf_kv_string(g, nf_gguf_find_kv(g, "t.u8"), &len) == NULL, "small: u8 is no string");
    const struct { const char *k, *json; } js[] = {
        {"t.u8", "200"}, {"t.i8", "-2"}, {"t.i16", "-1"}, {"t.i32", "-7"},
        {"t.u64", "18446744073709551615"}, {"t.i64", "-9223372036854775808"},
        {"t.f32", "0.1"}, {"t.f64", "10000.0"}, {"t.bool", "true"},
        {"t.nested", "[[\"a\",\"b\\\"\\u0001\"],[],[\"\xc3\xa9\"]]"},
    };
    for (size_t i = 0; i < sizeof js / sizeof *js; i++) {
        char *j = nf_gguf_kv_json(g, nf_gguf_find_kv(g, js[i].k), NULL, NULL);
        CHECK_STR(j, js[i].json, "small: %s as JSON", js[i].k);
        free(j);
    }
    /* nothing is changed on the way (E5): no null for a NaN/Inf, no U+FFFD */
    const struct { const char *k; nf_code code; const char *msg; } refused[] = {
        {"t.floats", NF_C_RANGE,
         "key/value \"t.floats\" (element 1) is infinite: a finite number is needed"},
        {"t.nan", NF_C_RANGE, "key/value \"t.nan\" is NaN: a finite number is needed"},
        {"t.bytes", NF_C_UTF8,
         "key/value \"t.bytes\" (element 1) is a string that is not UTF-8 (GGUF strings are UTF-8)"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        nf_diags rd = NF_DIAGS_INIT;
        size_t jl = 7;
        char *j = nf_gguf_kv_json(g, nf_gguf_find_kv(g, refused[i].k), &jl, &rd);
        char want_ptr[64];
        snprintf(want_ptr, sizeof want_ptr, "/kv/%s", refused[i].k);
        CHECK(!j && jl == 7 && rd.n == 1 && rd.v[0].code == refused[i].code &&
                  !strcmp(rd.v[0].pointer, want_ptr) && !strcmp(rd.v[0].file, path) &&
                  !strcmp(rd.v[0].message, refused[i].msg),
              "small: %s refused as %s with its pointer and element (%s)", refused[i].k,
              nf_code_name(refused[i].code), rd.n ? rd.v[0].message : "no diagnostic");
        /* without a diagnostics list: NULL all the same */
        char *j2 = nf_gguf_kv_json(g, nf_gguf_find_kv(g, refused[i].k), NULL, NULL);
        CHECK(!j2, "small: %s refused without a list too", refused[i].k);
        free(j);
        free(j2);
        nf_diags_free(&rd);
    }
    const nf_gguf_kv *nk = nf_gguf_find_kv(g, "t.nested");
    CHECK(nk && nk->type == NF_GGUF_ARRAY && nk->elem_type == NF_GGUF_ARRAY && nk->n_elems == 3,
          "small: nested array header");
    const nf_gguf_tensor *w = nf_gguf_find_tensor(g, "w"), *v = nf_gguf_find_tensor(g, "v");
    CHECK(w && w->type == NF_GGML_BF16 && w->n_dims == 2 && w->ne[0] == 64 && w->ne[1] == 3 &&
          w->elements == 192 && w->bytes == 384 && w->offset == g->data_start,
          "small: BF16 tensor info");
    uint64_t hd[4];
    if (w) {
        nf_gguf_hf_dims(w, hd);
        CHECK(hd[0] == 3 && hd[1] == 64, "small: C-order shape [3,64]");
    }
    CHECK(v && v->bytes == 20 && v->offset == g->data_start + 384, "small: F32 tensor info");
    unsigned char got[4];
    CHECK(v && nf_gguf_read_tensor(g, v, 0, got, 4) == 0 && got[0] == 128 && got[3] == 131,
          "small: tensor data read back");
    CHECK(v && nf_gguf_read_tensor(g, v, 18, got, 4) == -ERANGE, "small: read past a tensor");
    nf_gguf_free(g);
    nf_diags_free(&d);

    /* a v2 file reads the same way */
    b.p[4] = 2;
    path = write_file("small-v2.gguf", b.p, b.n);
    CHECK(try_open(path, NULL, NULL) == 0, "small: version 2 opens");
    free(b.p);
}

/* The type table (GGUF.md 2.5): every ggml id has its block size, so a GGUF
 * of any type parses and its data is bounds-checked. */
static void test_types(void)
{
    static const struct { uint32_t id; uint64_t qk, b; } ty[] = {
        {0, 1, 4},      {1, 1, 2},      {2, 32, 18},    {3, 32, 20},    {6, 32, 22},
        {7, 32, 24},    {8, 32, 34},    {9, 32, 36},    {10, 256, 84},  {11, 256, 110},
        {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {15, 256, 292}, {16, 256, 66},
        {17, 256, 74},  {18, 256, 98},  {19, 256, 50},  {20, 32, 18},   {21, 256, 110},
        {22, 256, 82},  {23, 256, 136}, {24, 1, 1},     {25, 1, 2},     {26, 1, 4},
        {27, 1, 8},     {28, 1, 8},     {29, 256, 56},  {30, 1, 2},     {34, 256, 54},
        {35, 256, 66},  {39, 32, 17},   {40, 64, 36},   {41, 128, 18},  {42, 64, 18},
    };
    size_t bad = 0;
    for (size_t i = 0; i < sizeof ty / sizeof *ty; i++) {
        uint64_t qk = 0, b = 0;
        if (!nf_ggml_type_size(ty[i].id, &qk, &b) || qk != ty[i].qk || b != ty[i].b) {
            printf("# type %u: %llu/%llu\n", ty[i].id, (unsigned long long)qk, (unsigned long long)b);
            bad++;
        }
    }
    CHECK(bad == 0, "types: all 35 ggml type ids have GGUF.md's block sizes");
    uint64_t qk, bb;
    CHECK(!nf_ggml_type_size(4, &qk, &bb) && !nf_ggml_type_size(31, &qk, &bb) &&
          !nf_ggml_type_size(38, &qk, &bb) && !nf_ggml_type_size(43, &qk, &bb),
          "types: removed and future ids are unknown");
    char tb[32];
    CHECK_STR(nf_ggml_type_name(40, tb), "NVFP4", "types: 40 is NVFP4");
    CHECK_STR(nf_ggml_type_name(42, tb), "Q2_0", "types: 42 is Q2_0");

    /* a file with an IQ2_XXS [256,2] (132 bytes) and an NVFP4 [64,3] (108)
     * tensor parses, with their byte sizes */
    buf_t b = {0};
    put(&b, "GGUF", 4);
    u32(&b, 3);
    u64(&b, 2);
    u64(&b, 0);
    str(&b, "iq"); u32(&b, 2); u64(&b, 256); u64(&b, 2); u32(&b, NF_GGML_IQ2_XXS); u64(&b, 0);
    str(&b, "nv"); u32(&b, 2); u64(&b, 64); u64(&b, 3); u32(&b, NF_GGML_NVFP4); u64(&b, 160);
    pad_to(&b, 32);
    for (int i = 0; i < 160 + 108; i++)
        u8(&b, (uint8_t)i);
    const char *path = write_file("types.gguf", b.p, b.n);
    nf_gguf *g = NULL;
    CHECK(try_open(path, NULL, &g) == 0 && g, "types: IQ2_XXS and NVFP4 tensors parse");
    const nf_gguf_tensor *t = g ? nf_gguf_find_tensor(g, "iq") : NULL;
    CHECK(t && t->bytes == 132, "types: IQ2_XXS [256,2] is 132 bytes");
    t = g ? nf_gguf_find_tensor(g, "nv") : NULL;
    CHECK(t && t->bytes == 108, "types: NVFP4 [64,3] is 108 bytes");
    nf_gguf_free(g);
    /* one byte short: the NVFP4 data runs past the end (bounds) */
    nf_code code = NF_C_COUNT_;
    path = write_file("types-short.gguf", b.p, b.n - 1);
    CHECK(try_open(path, &code, NULL) != 0 && code == NF_C_BOUNDS,
          "types: a quantized tensor past the end is bounds (%s)", nf_code_name(code));
    free(b.p);
}

/* One hostile header each: expected exit class and code. */
typedef void (*mk_fn)(buf_t *b);

static void hdr(buf_t *b, uint32_t ver, uint64_t nt, uint64_t nkv)
{
    put(b, "GGUF", 4);
    u32(b, ver);
    u64(b, nt);
    u64(b, nkv);
}
static void bad_magic(buf_t *b) { put(b, "GGUG", 4); u32(b, 3); u64(b, 0); u64(b, 0); }
static void v1(buf_t *b) { hdr(b, 1, 0, 0); }
static void v4(buf_t *b) { hdr(b, 4, 0, 0); }
static void big_endian(buf_t *b) { hdr(b, 0x03000000u, 0, 0); }
static void huge_kv(buf_t *b) { hdr(b, 3, 0, UINT64_MAX); }
static void huge_tensors(buf_t *b) { hdr(b, 3, 1ull << 60, 0); }
static void huge_key(buf_t *b) { hdr(b, 3, 0, 1); u64(b, UINT64_MAX - 3); put(b, "abcdefghijklmnop", 16); }
static void huge_string(buf_t *b)
{
    hdr(b, 3, 0, 1); key(b, "k", NF_GGUF_STRING); u64(b, 1ull << 62); put(b, "xxxxxxxx", 8);
}
static void huge_array(buf_t *b)
{
    hdr(b, 3, 0, 1); key(b, "k", NF_GGUF_ARRAY); u32(b, NF_GGUF_U64); u64(b, 1ull << 61);
    u64(b, 0);
}
static void array_overflow(buf_t *b)
{
    hdr(b, 3, 0, 1); key(b, "k", NF_GGUF_ARRAY); u32(b, NF_GGUF_U64); u64(b, UINT64_MAX / 4);
    u64(b, 0);
}
static void deep_array(buf_t *b)
{
    hdr(b, 3, 0, 1); key(b, "k", NF_GGUF_ARRAY);
    for (int i = 0; i < 12; i++) { u32(b, NF_GGUF_ARRAY); u64(b, 1); }
    u32(b, NF_GGUF_U8); u64(b, 0);
}
static void bad_vtype(buf_t *b) { hdr(b, 3, 0, 1); key(b, "k", 13); u64(b, 0); }
static void bad_elem_type(buf_t *b)
{
    hdr(b, 3, 0, 1); key(b, "k", NF_GGUF_ARRAY); u32(b, 99); u64(b, 1); u64(b, 0);
}
static void dup_key(buf_t *b)
{
    hdr(b, 3, 0, 2); key(b, "k", NF_GGUF_U8); u8(b, 1); key(b, "k", NF_GGUF_U8); u8(b, 2);
}
static void nul_key(buf_t *b) { hdr(b, 3, 0, 1); u64(b, 3); put(b, "a\0b", 3); u32(b, NF_GGUF_U8); u8(b, 1); }
static void align3(buf_t *b) { hdr(b, 3, 0, 1); key(b, "general.alignment", NF_GGUF_U32); u32(b, 3); }
static void align_str(buf_t *b) { hdr(b, 3, 0, 1); key(b, "general.alignment", NF_GGUF_STRING); str(b, "32"); }
static void tensor_file(buf_t *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type,
                        uint64_t off, size_t data)
{
    str(b, name); u32(b, nd);
    for (uint32_t i = 0; i < nd; i++)
        u64(b, ne[i]);
    u32(b, type); u64(b, off);
    (void)data;
}
static void finish(buf_t *b, size_t data)
{
    pad_to(b, 32);
    for (size_t i = 0; i < data; i++)
        u8(b, 0);
}
static void dims5(buf_t *b)
{
    uint64_t ne[5] = {1, 1, 1, 1, 1};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 5, ne, NF_GGML_F32, 0, 0); finish(b, 4);
}
static void dim0(buf_t *b)
{
    uint64_t ne[2] = {0, 4};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 2, ne, NF_GGML_F32, 0, 0); finish(b, 4);
}
static void ne_overflow(buf_t *b)
{
    uint64_t ne[4] = {1ull << 40, 1ull << 40, 1, 1};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 4, ne, NF_GGML_F32, 0, 0); finish(b, 4);
}
static void bytes_overflow(buf_t *b)
{
    uint64_t ne[2] = {1ull << 31, 1ull << 31}; /* 2^62 elements fit, 2^64 bytes do not */
    hdr(b, 3, 1, 0); tensor_file(b, "t", 2, ne, NF_GGML_F32, 0, 0); finish(b, 4);
}
static void misaligned(buf_t *b)
{
    uint64_t ne[1] = {4};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 1, ne, NF_GGML_F32, 4, 0); finish(b, 64);
}
static void past_end(buf_t *b)
{
    uint64_t ne[1] = {16};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 1, ne, NF_GGML_F32, 32, 0); finish(b, 64);
}
static void huge_offset(buf_t *b)
{
    uint64_t ne[1] = {16};
    hdr(b, 3, 1, 0); tensor_file(b, "t", 1, ne, NF_GGML_F32, UINT64_MAX - 31, 0); finish(b, 64);
}
static void overlapping(buf_t *b)
{
    uint64_t ne[1] = {16};
    hdr(b, 3, 2, 0); tensor_file(b, "a", 1, ne, NF_GGML_F32, 0, 0);
    tensor_file(b, "b", 1, ne, NF_GGML_F32, 32, 0); finish(b, 128);
}
static void dup_tensor(buf_t *b)
{
    uint64_t ne[1] = {8};
    hdr(b, 3, 2, 0); tensor_file(b, "a", 1, ne, NF_GGML_F32, 0, 0);
    tensor_file(b, "a", 1, ne, NF_GGML_F32, 32, 0); finish(b, 64);
}
static void bad_ttype(buf_t *b)
{
    uint64_t ne[1] = {8};
    hdr(b, 3, 1, 0); tensor_file(b, "a", 1, ne, 77, 0, 0); finish(b, 64);
}
static void q4_block(buf_t *b)
{
    uint64_t ne[2] = {48, 2};
    hdr(b, 3, 1, 0); tensor_file(b, "a", 2, ne, NF_GGML_Q4_0, 0, 0); finish(b, 256);
}
static void short_header(buf_t *b) { put(b, "GGUF", 4); u32(b, 3); u64(b, 0); }
static void empty(buf_t *b) { (void)b; }
static void no_data(buf_t *b)
{
    uint64_t ne[1] = {8};
    hdr(b, 3, 1, 0); tensor_file(b, "a", 1, ne, NF_GGML_F32, 0, 0); /* header ends, no data */
}

static void test_hostile(void)
{
    static const struct {
        const char *what;
        mk_fn mk;
        int exit;
        nf_code code;
    } cases[] = {
        {"bad magic", bad_magic, 1, NF_C_MAGIC},
        {"version 1", v1, 4, NF_C_UNSUPPORTED},
        {"version 4", v4, 4, NF_C_UNSUPPORTED},
        {"big-endian", big_endian, 4, NF_C_UNSUPPORTED},
        {"kv count 2^64-1", huge_kv, 1, NF_C_HEADER},
        {"tensor count 2^60", huge_tensors, 1, NF_C_HEADER},
        {"key length 2^64-4", huge_key, 1, NF_C_HEADER},
        {"string length 2^62", huge_string, 1, NF_C_HEADER},
        {"array of 2^61 u64", huge_array, 1, NF_C_HEADER},
        {"array whose byte size overflows", array_overflow, 1, NF_C_HEADER},
        {"arrays nested 13 deep", deep_array, 1, NF_C_RANGE},
        {"unknown value type", bad_vtype, 4, NF_C_UNSUPPORTED},
        {"unknown array element type", bad_elem_type, 4, NF_C_UNSUPPORTED},
        {"duplicate key", dup_key, 1, NF_C_DUPLICATE_MEMBER},
        {"NUL in a key", nul_key, 1, NF_C_SCHEMA},
        {"alignment 3", align3, 1, NF_C_SCHEMA},
        {"alignment as a string", align_str, 1, NF_C_SCHEMA},
        {"5 dimensions", dims5, 1, NF_C_SCHEMA},
        {"a zero dimension", dim0, 1, NF_C_RANGE},
        {"element count overflow", ne_overflow, 1, NF_C_RANGE},
        {"byte size overflow", bytes_overflow, 1, NF_C_RANGE},
        {"misaligned tensor offset", misaligned, 1, NF_C_ALIGNMENT},
        {"tensor data past the end", past_end, 1, NF_C_BOUNDS},
        {"tensor offset near 2^64", huge_offset, 1, NF_C_BOUNDS},
        {"overlapping tensors", overlapping, 1, NF_C_OVERLAP},
        {"duplicate tensor name", dup_tensor, 1, NF_C_DUPLICATE_MEMBER},
        {"unknown tensor type", bad_ttype, 4, NF_C_UNSUPPORTED},
        {"Q4_0 row of 48", q4_block, 1, NF_C_SCHEMA},
        {"header cut in the counts", short_header, 1, NF_C_HEADER},
        {"empty file", empty, 1, NF_C_HEADER},
        {"no data section", no_data, 1, NF_C_HEADER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf_t b = {0};
        cases[i].mk(&b);
        const char *path = write_file("hostile.gguf", b.p ? b.p : (unsigned char *)"", b.n);
        nf_code code;
        int rc = try_open(path, &code, NULL);
        CHECK(rc == cases[i].exit && code == cases[i].code, "hostile: %s -> exit %d, %s",
              cases[i].what, cases[i].exit, nf_code_name(cases[i].code));
        if (rc != cases[i].exit || code != cases[i].code)
            printf("#   got exit %d, code %s\n", rc,
                   code < NF_C_COUNT_ ? nf_code_name(code) : "(none)");
        free(b.p);
    }
    /* Sparse files: counts that fit the file's size (13 bytes a key/value,
     * 32 a tensor info) but past the reader's limits are refused before any
     * record is allocated (a 1 GiB sparse file of zeros once cost 6.8 GB). */
    static const struct {
        const char *what;
        uint64_t nt, nkv;
    } sparse[] = {
        {"key/values past NF_GGUF_MAX_KV", 0, NF_GGUF_MAX_KV + 1ull},
        {"tensors past NF_GGUF_MAX_TENSORS", NF_GGUF_MAX_TENSORS + 1ull, 0},
    };
    for (size_t i = 0; i < sizeof sparse / sizeof *sparse; i++) {
        buf_t b = {0};
        hdr(&b, 3, sparse[i].nt, sparse[i].nkv);
        const char *path = write_file("sparse.gguf", b.p, b.n);
        CHECK(truncate(path, (off_t)(24 + 32 * (sparse[i].nt + 1) + 13 * sparse[i].nkv)) == 0,
              "hostile: sparse file made");
        nf_code code;
        int rc = try_open(path, &code, NULL);
        CHECK(rc == 4 && code == NF_C_UNSUPPORTED, "hostile: %s -> exit 4, unsupported",
              sparse[i].what);
        free(b.p);
    }
    nf_code code;
    CHECK(try_open(tmpdir, &code, NULL) == 3 && code == NF_C_IO, "hostile: a directory is io");
    char missing[600];
    snprintf(missing, sizeof missing, "%s/absent.gguf", tmpdir);
    CHECK(try_open(missing, &code, NULL) == 3 && code == NF_C_IO, "hostile: a missing file is io");
}

static unsigned char *slurp(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0)
        return NULL;
    unsigned char *p = malloc((size_t)sb.st_size + 1);
    if (!p || nf_pread_full(fd, p, (size_t)sb.st_size, 0) != sb.st_size) {
        free(p);
        close(fd);
        return NULL;
    }
    close(fd);
    *n = (size_t)sb.st_size;
    return p;
}

/* Every prefix in [0, upto) and a sample of longer ones must fail cleanly;
 * every byte of [0, upto) set to 0xff, and xor'ed with 0x01, must give a
 * clean failure or a consistent success. */
static void sweep(const char *what, const unsigned char *p, size_t n, size_t upto, size_t step)
{
    char path[600];
    snprintf(path, sizeof path, "%s/sweep.gguf", tmpdir);
    int bad_prefix = 0, bad_corrupt = 0, successes = 0;
    /* prefixes, longest first, by cutting one copy shorter and shorter */
    write_file("sweep.gguf", p, n);
    int tfd = open(path, O_RDWR);
    size_t *ks = malloc((upto / step + n / 4099 + 2) * sizeof *ks), nk = 0;
    for (size_t k = 0; k < n; k += (k < upto ? step : 4099))
        ks[nk++] = k;
    while (nk-- > 0) {
        size_t k = ks[nk];
        if (ftruncate(tfd, (off_t)k) != 0)
            abort();
        nf_code code;
        int rc = try_open(path, &code, NULL);
        if (rc != 1 || (code != NF_C_HEADER && code != NF_C_BOUNDS && code != NF_C_MAGIC)) {
            if (bad_prefix++ < 3)
                printf("#   prefix %zu: exit %d code %s\n", k, rc,
                       code < NF_C_COUNT_ ? nf_code_name(code) : "(none)");
        }
    }
    free(ks);
    close(tfd);
    CHECK(bad_prefix == 0, "%s: every truncated copy fails with header/bounds", what);
    unsigned char *q = malloc(n);
    memcpy(q, p, n);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    nf_write_all(fd, q, n);
    for (size_t k = 0; k < upto; k += step) {
        for (int m = 0; m < 2; m++) {
            unsigned char c = m == 0 ? 0xff : (unsigned char)(p[k] ^ 0x01);
            nf_pwrite_all(fd, &c, 1, k);
            nf_gguf *g;
            int rc = try_open(path, NULL, &g);
            if (rc < 0 && bad_corrupt++ < 3)
                printf("#   byte %zu := %02x: inconsistent result %d\n", k, c, rc);
            if (g) {
                successes++;
                for (size_t t = 0; t < g->n_tensors; t++)
                    if (g->tensors[t].offset + g->tensors[t].bytes > g->file_size)
                        bad_corrupt++;
                /* every (small) value reads back, or is refused for what a
                 * flipped byte can make of it: a NaN/Inf, a string that is
                 * not UTF-8 */
                for (size_t i = 0; i < g->n_kv; i++) {
                    if (g->kv[i].value_bytes > 4096)
                        continue;
                    nf_diags jd = NF_DIAGS_INIT;
                    char *j = nf_gguf_kv_json(g, &g->kv[i], NULL, &jd);
                    if (!j && !(jd.n == 1 && (jd.v[0].code == NF_C_RANGE ||
                                              jd.v[0].code == NF_C_UTF8)))
                        bad_corrupt++;
                    free(j);
                    nf_diags_free(&jd);
                }
                nf_gguf_free(g);
            }
        }
        nf_pwrite_all(fd, &p[k], 1, k);
    }
    close(fd);
    free(q);
    CHECK(bad_corrupt == 0, "%s: every corrupted header byte gives a clean result (%d opened)",
          what, successes);
}

static void test_real(void)
{
    char buf[1024], buf2[1024];
    const char *f32 = nf_realdata("stories260K-gguf/stories260K-F32.gguf", buf, sizeof buf);
    if (!f32) {
        SKIP("real data absent (../shared/realdata)", "stories260K-F32.gguf");
    } else {
        nf_gguf *g;
        int rc = try_open(f32, NULL, &g);
        CHECK(rc == 0 && g, "real: stories260K-F32.gguf opens");
        if (g) {
            CHECK(g->version == 3 && g->n_tensors == 47 && g->n_kv == 17 && g->alignment == 32,
                  "real: F32 header (v3, 47 tensors, 17 kv, alignment 32)");
            const nf_gguf_tensor *e = nf_gguf_find_tensor(g, "token_embd.weight");
            CHECK(e && e->type == NF_GGML_F32 && e->ne[0] == 64 && e->ne[1] == 512 &&
                  e->bytes == 131072, "real: token_embd.weight F32 [512,64]");
            uint64_t u;
            double f;
            CHECK(nf_gguf_kv_u64(g, nf_gguf_find_kv(g, "llama.block_count"), &u) && u == 5,
                  "real: llama.block_count 5");
            CHECK(nf_gguf_kv_f64(g, nf_gguf_find_kv(g, "llama.rope.freq_base"), &f) && f == 10000,
                  "real: rope freq_base 10000");
            char *j = nf_gguf_kv_json(g, nf_gguf_find_kv(g, "llama.attention.layer_norm_rms_epsilon"), NULL, NULL);
            CHECK_STR(j, "1e-05", "real: epsilon as JSON");
            free(j);
            /* the norm equals hf-f32's (norms are not permuted) */
            const char *st = nf_realdata("stories260K/hf-f32/model.safetensors", buf2, sizeof buf2);
            nf_diags d = NF_DIAGS_INIT;
            nf_safetensors *s = st ? nf_safetensors_open(st, &d) : NULL;
            const nf_gguf_tensor *n = nf_gguf_find_tensor(g, "blk.3.ffn_norm.weight");
            const nf_st_tensor *sn = s ? nf_safetensors_find(s, "model.layers.3.post_attention_layernorm.weight") : NULL;
            if (s && n && sn && n->bytes == sn->bytes) {
                unsigned char a[256], b[256];
                int fd = open(st, O_RDONLY);
                bool same = nf_gguf_read_tensor(g, n, 0, a, 256) == 0 &&
                            nf_pread_full(fd, b, 256, sn->offset) == 256 && memcmp(a, b, 256) == 0;
                close(fd);
                CHECK(same, "real: blk.3.ffn_norm.weight equals hf-f32's post_attention_layernorm");
            } else {
                CHECK(0, "real: hf-f32 counterpart found");
            }
            nf_safetensors_free(s);
            nf_diags_free(&d);
            nf_gguf_free(g);
        }
        size_t n;
        unsigned char *p = slurp(f32, &n);
        if (p)
            sweep("real F32 header", p, n, 3488 + 64, 1);
        free(p);
    }

    static const struct { const char *file; const char *type; uint64_t embd_bytes; } q[] = {
        {"stories260K-gguf/stories260K-Q4_0.gguf", "Q4_0", 512 * 2 * 18},
        {"stories260K-gguf/stories260K-Q4_1.gguf", "Q4_1", 512 * 2 * 20},
        {"stories260K-gguf/stories260K-Q5_0.gguf", "Q5_0", 512 * 2 * 22},
        {"stories260K-gguf/stories260K-Q8_0.gguf", "Q8_0", 512 * 2 * 34},
        {"stories260K-gguf/stories260K-IQ4_NL.gguf", "IQ4_NL", 512 * 2 * 18},
    };
    for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
        const char *path = nf_realdata(q[i].file, buf, sizeof buf);
        if (!path) {
            SKIP("real data absent", "%s", q[i].file);
            continue;
        }
        nf_gguf *g;
        try_open(path, NULL, &g);
        const nf_gguf_tensor *e = g ? nf_gguf_find_tensor(g, "token_embd.weight") : NULL;
        char tb[32];
        CHECK(e && strcmp(nf_ggml_type_name(e->type, tb), q[i].type) == 0 &&
              e->bytes == q[i].embd_bytes, "real: %s token_embd is %s of %llu bytes",
              q[i].file, q[i].type, (unsigned long long)q[i].embd_bytes);
        nf_gguf_free(g);
    }

    const char *oll = nf_realdata("ollama-llama-2-tiny-random-gguf/llama-2-tiny-random.gguf", buf,
                                  sizeof buf);
    if (!oll) {
        SKIP("real data absent", "ollama tiny GGUF");
    } else {
        nf_gguf *g;
        try_open(oll, NULL, &g);
        CHECK(g && g->n_tensors == 12 && g->n_kv == 18, "real: ollama tiny: 12 tensors, 18 kv");
        size_t nf16 = 0, nf32 = 0;
        for (size_t i = 0; g && i < g->n_tensors; i++)
            nf16 += g->tensors[i].type == NF_GGML_F16, nf32 += g->tensors[i].type == NF_GGML_F32;
        CHECK(nf16 == 9 && nf32 == 3, "real: ollama tiny: 9 F16 and 3 F32 tensors");
        const nf_gguf_kv *tok = g ? nf_gguf_find_kv(g, "tokenizer.ggml.tokens") : NULL;
        CHECK(tok && tok->type == NF_GGUF_ARRAY && tok->elem_type == NF_GGUF_STRING &&
              tok->n_elems == 32000, "real: ollama tiny: 32000 tokens");
        size_t len;
        char *j = nf_gguf_kv_json(g, tok, &len, NULL);
        nf_diags d = NF_DIAGS_INIT;
        nf_jdoc *doc = j ? nf_jdoc_parse(j, len, 0, &d) : NULL;
        CHECK(doc && nf_jarr_len(nf_jdoc_root(doc)) == 32000,
              "real: ollama tiny: the token list is strict JSON with 32000 strings");
        nf_jdoc_free(doc);
        nf_diags_free(&d);
        free(j);
        nf_gguf_free(g);
        size_t n;
        unsigned char *p = slurp(oll, &n);
        if (p)
            sweep("real ollama header", p, n, 724416, 7919);
        free(p);
    }

    static const char *vocab[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf",
                                  "ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-coder.gguf"};
    for (size_t i = 0; i < 4; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "llamacpp-vocab-gguf/%s", vocab[i]);
        const char *path = nf_realdata(rel, buf, sizeof buf);
        if (!path) {
            SKIP("real data absent", "%s", vocab[i]);
            continue;
        }
        nf_gguf *g;
        try_open(path, NULL, &g);
        bool all = g != NULL;
        for (size_t k = 0; g && k < g->n_kv; k++) {
            size_t len;
            char *j = nf_gguf_kv_json(g, &g->kv[k], &len, NULL);
            nf_diags d = NF_DIAGS_INIT;
            nf_jdoc *doc = j ? nf_jdoc_parse(j, len, 0, &d) : NULL;
            all = all && doc;
            nf_jdoc_free(doc);
            nf_diags_free(&d);
            free(j);
        }
        CHECK(g && g->n_tensors == 0 && all,
              "real: %s: vocabulary only, every value is strict JSON", vocab[i]);
        if (g && i == 1) {
            size_t len;
            char *t = nf_gguf_kv_string(g, nf_gguf_find_kv(g, "tokenizer.chat_template"), &len);
            CHECK(t && len > 100 && strstr(t, "<|user|>"), "real: phi-3 has its chat template");
            free(t);
        }
        nf_gguf_free(g);
    }
}

int main(void)
{
#ifndef NF_ASAN
    /* a hostile count must never turn into a huge allocation */
    struct rlimit rl = {4ull << 30, 4ull << 30};
    setrlimit(RLIMIT_AS, &rl);
#endif
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! cannot make a temporary directory\n");
        return 1;
    }
    test_small();
    test_types();
    test_hostile();
    test_real();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmpdir);
    return nf_test_done();
}
