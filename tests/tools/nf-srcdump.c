/* nf-srcdump — print one checkpoint tensor's values as little-endian f32 on
 * stdout, for tests that compare `ninfer-bind --extract` with the source
 * (DESIGN 12).
 *
 *   nf-srcdump [--rows B:E] [--unpermute HEADS] FILE TENSOR
 *   nf-srcdump --list FILE.gguf
 *
 * FILE is a .safetensors or .gguf file; the tensor must be F32, F16 or BF16
 * (widened exactly). --rows takes whole rows [B, E) of the outer dimension
 * (C order; a GGUF [ne0, ne1] matrix has ne1 rows). --unpermute HEADS
 * reorders the rows the way Hugging Face's convert_hf_to_gguf.py permuted
 * them for llama q/k, backwards: within each head of R = rows/HEADS rows,
 * llama.cpp row 2i+t holds Hugging Face row t*(R/2)+i. It is written here
 * as the forward permutation, independently of the packer.
 * --list prints one line per tensor of a GGUF, in file order: name, ggml
 * type id, the absolute offset of its data and its size in bytes (from its
 * own table of the F32/F16/BF16 and first-wave block types' sizes; other
 * types print bytes 0), for tests that hash the tensors' bytes.
 *
 * Standalone: libc and the header-only nf_fp.h / nf_util.h, with its own
 * minimal safetensors and GGUF header walkers (no library code under test).
 * Exit status: 0 ok, 1 the tensor is absent or of another type, 2 usage,
 * 3 I/O error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_fp.h"
#include "nf_util.h"

#define PROG "nf-srcdump"

typedef struct {
    uint64_t offset, rows, cols;
    int type; /* 0 f32, 1 f16, 2 bf16 */
} tinfo;

static int rd(FILE *f, void *p, size_t n)
{
    return fread(p, 1, n, f) == n ? 0 : -1;
}

static uint64_t u64(FILE *f, int *err)
{
    unsigned char b[8];
    if (rd(f, b, 8)) {
        *err = 1;
        return 0;
    }
    return nf_load_le64(b);
}

static uint32_t u32(FILE *f, int *err)
{
    unsigned char b[4];
    if (rd(f, b, 4)) {
        *err = 1;
        return 0;
    }
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* Skip a GGUF value of type t. */
static int skip_val(FILE *f, uint32_t t)
{
    static const int sz[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    int err = 0;
    if (t > 12)
        return -1;
    if (t == 8) {
        uint64_t n = u64(f, &err);
        return err || fseeko(f, (off_t)n, SEEK_CUR) ? -1 : 0;
    }
    if (t == 9) {
        uint32_t et = u32(f, &err);
        uint64_t n = u64(f, &err);
        if (err)
            return -1;
        if (et != 8 && et != 9 && et <= 12)
            return fseeko(f, (off_t)(n * (uint64_t)sz[et]), SEEK_CUR) ? -1 : 0;
        for (uint64_t i = 0; i < n; i++)
            if (skip_val(f, et))
                return -1;
        return 0;
    }
    return fseeko(f, sz[t], SEEK_CUR) ? -1 : 0;
}

/* Bytes of a ggml tensor of `el` elements of this type (0: not in the table). */
static uint64_t type_bytes(uint32_t type, uint64_t el)
{
    static const struct {
        uint32_t type, qk, b;
    } tb[] = {{0, 1, 4},    {1, 1, 2},    {30, 1, 2},   {2, 32, 18},  {3, 32, 20},   {6, 32, 22},
              {7, 32, 24},  {8, 32, 34},  {20, 32, 18}, {39, 32, 17}, {10, 256, 84}, {11, 256, 110},
              {12, 256, 144}, {13, 256, 176}, {14, 256, 210}, {23, 256, 136}};
    for (size_t i = 0; i < sizeof tb / sizeof *tb; i++)
        if (tb[i].type == type)
            return el / tb[i].qk * tb[i].b;
    return 0;
}

static struct {
    char name[256];
    uint32_t type;
    uint64_t offset, bytes;
} *listed;

/* Find tensor `want` (want NULL: print the list of --list). */
static int gguf_find(FILE *f, const char *want, tinfo *ti)
{
    char magic[4];
    int err = 0;
    if (rd(f, magic, 4) || memcmp(magic, "GGUF", 4))
        return -1;
    u32(f, &err);
    uint64_t nt = u64(f, &err), nkv = u64(f, &err), align = 32;
    for (uint64_t i = 0; i < nkv && !err; i++) {
        uint64_t kl = u64(f, &err);
        char key[256] = "";
        if (kl < sizeof key) {
            err |= rd(f, key, kl);
        } else {
            err |= fseeko(f, (off_t)kl, SEEK_CUR);
        }
        uint32_t t = u32(f, &err);
        if (!strcmp(key, "general.alignment") && t == 4) {
            align = u32(f, &err);
            continue;
        }
        err |= skip_val(f, t);
    }
    int found = 0;
    for (uint64_t i = 0; i < nt && !err; i++) {
        uint64_t nl = u64(f, &err);
        char name[256] = "";
        if (nl >= sizeof name)
            return -1;
        err |= rd(f, name, nl);
        uint32_t nd = u32(f, &err);
        uint64_t ne[4] = {1, 1, 1, 1};
        for (uint32_t k = 0; k < nd && k < 4; k++)
            ne[k] = u64(f, &err);
        uint32_t type = u32(f, &err);
        uint64_t off = u64(f, &err);
        if (!want) {
            if (i == 0 && !(listed = calloc(nt + 1, sizeof *listed)))
                return -1;
            uint64_t el = ne[0] * ne[1] * ne[2] * ne[3];
            snprintf(listed[i].name, sizeof listed[i].name, "%s", name);
            listed[i].type = type;
            listed[i].offset = off;
            listed[i].bytes = type_bytes(type, el);
            continue;
        }
        if (!strcmp(name, want)) {
            found = 1;
            ti->offset = off;
            ti->rows = nd ? ne[nd - 1] : 1;
            ti->cols = 1;
            for (uint32_t k = 0; k + 1 < nd; k++)
                ti->cols *= ne[k];
            ti->type = type == 0 ? 0 : type == 1 ? 1 : type == 30 ? 2 : -1;
        }
    }
    uint64_t pos = (uint64_t)ftello(f), start = (pos + align - 1) / align * align;
    if (!want && !err) {
        for (uint64_t i = 0; i < nt; i++)
            printf("%s\t%u\t%llu\t%llu\n", listed[i].name, listed[i].type,
                   (unsigned long long)(start + listed[i].offset), (unsigned long long)listed[i].bytes);
        free(listed);
        return 0;
    }
    if (err || !found)
        return -1;
    ti->offset += start;
    return 0;
}

/* A safetensors header is JSON; find "NAME":{"dtype":"X","shape":[..],"data_offsets":[b,e]}
 * by plain text search (our writers and the real files use this member order). */
static int st_find(FILE *f, const char *want, tinfo *ti)
{
    int err = 0;
    uint64_t hl = u64(f, &err);
    if (err || hl > (256u << 20))
        return -1;
    char *h = malloc(hl + 1);
    if (!h || rd(f, h, hl)) {
        free(h);
        return -1;
    }
    h[hl] = 0;
    char key[512];
    snprintf(key, sizeof key, "\"%s\":", want);
    char *p = strstr(h, key);
    if (!p) {
        snprintf(key, sizeof key, "\"%s\": ", want);
        p = strstr(h, key);
    }
    int rc = -1;
    if (p) {
        char *dt = strstr(p, "\"dtype\""), *sh = strstr(p, "\"shape\""),
             *of = strstr(p, "\"data_offsets\"");
        if (dt && sh && of) {
            dt = strchr(dt + 7, '"') + 1;
            ti->type = !strncmp(dt, "F32\"", 4) ? 0 : !strncmp(dt, "F16\"", 4) ? 1
                     : !strncmp(dt, "BF16\"", 5) ? 2 : -1;
            char *q = strchr(sh, '[') + 1;
            uint64_t dims[8];
            int nd = 0;
            while (*q != ']' && nd < 8) {
                dims[nd++] = strtoull(q, &q, 10);
                while (*q == ',' || *q == ' ')
                    q++;
            }
            ti->rows = nd ? dims[0] : 1;
            ti->cols = 1;
            for (int k = 1; k < nd; k++)
                ti->cols *= dims[k];
            q = strchr(of, '[') + 1;
            ti->offset = 8 + hl + strtoull(q, NULL, 10);
            rc = 0;
        }
    }
    free(h);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"rows", required_argument, 0, 'r'},
        {"unpermute", required_argument, 0, 'u'},
        {"list", no_argument, 0, 'l'},
        {0, 0, 0, 0},
    };
    bool list = false;
    uint64_t r0 = 0, r1 = UINT64_MAX, heads = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (c == 'r') {
            char *e;
            r0 = strtoull(optarg, &e, 10);
            if (*e != ':')
                return 2;
            r1 = strtoull(e + 1, NULL, 10);
        } else if (c == 'u') {
            heads = strtoull(optarg, NULL, 10);
        } else if (c == 'l') {
            list = true;
        } else {
            fprintf(stderr, "usage: " PROG " [--rows B:E] [--unpermute HEADS] FILE TENSOR\n");
            return 2;
        }
    }
    if (list && optind + 1 == argc) {
        FILE *f = fopen(argv[optind], "rb");
        if (!f) {
            fprintf(stderr, PROG ": %s: %s\n", argv[optind], strerror(errno));
            return 3;
        }
        int rc = gguf_find(f, NULL, NULL);
        fclose(f);
        if (rc)
            fprintf(stderr, PROG ": %s: not a GGUF this tool reads\n", argv[optind]);
        return rc ? 1 : fflush(stdout) ? 3 : 0;
    }
    if (optind + 2 != argc || list) {
        fprintf(stderr, "usage: " PROG " [--rows B:E] [--unpermute HEADS] FILE TENSOR\n");
        return 2;
    }
    const char *path = argv[optind], *name = argv[optind + 1];
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
        return 3;
    }
    tinfo ti;
    size_t pl = strlen(path);
    bool gguf = pl > 5 && !strcmp(path + pl - 5, ".gguf");
    if ((gguf ? gguf_find(f, name, &ti) : st_find(f, name, &ti)) || ti.type < 0) {
        fprintf(stderr, PROG ": %s: no F32/F16/BF16 tensor \"%s\"\n", path, name);
        return 1;
    }
    if (r1 == UINT64_MAX)
        r1 = ti.rows;
    unsigned eb = ti.type == 0 ? 4 : 2;
    /* forward: llama.cpp row of each Hugging Face row */
    uint64_t *src = malloc(ti.rows * sizeof *src);
    for (uint64_t r = 0; r < ti.rows; r++)
        src[r] = r;
    if (heads) {
        uint64_t R = ti.rows / heads, half = R / 2;
        for (uint64_t h = 0; h < heads; h++)
            for (uint64_t t = 0; t < 2; t++)
                for (uint64_t i = 0; i < half; i++)
                    src[h * R + t * half + i] = h * R + 2 * i + t;
    }
    unsigned char *row = malloc(ti.cols * eb);
    float *out = malloc(ti.cols * sizeof *out);
    for (uint64_t r = r0; r < r1 && r < ti.rows; r++) {
        if (fseeko(f, (off_t)(ti.offset + src[r] * ti.cols * eb), SEEK_SET) ||
            rd(f, row, ti.cols * eb)) {
            fprintf(stderr, PROG ": %s: short read\n", path);
            return 3;
        }
        for (uint64_t k = 0; k < ti.cols; k++) {
            if (ti.type == 0) {
                memcpy(&out[k], row + 4 * k, 4);
            } else {
                uint16_t w;
                memcpy(&w, row + 2 * k, 2);
                out[k] = ti.type == 1 ? nf_fp16_to_f32(w) : nf_bf16_to_f32(w);
            }
        }
        if (fwrite(out, sizeof *out, ti.cols, stdout) != ti.cols)
            return 3;
    }
    free(src);
    free(row);
    free(out);
    fclose(f);
    return fflush(stdout) ? 3 : 0;
}
