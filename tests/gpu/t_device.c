/* t_device.c — the CUDA backend against the CPU reference (TAP), for
 * scripts/gpu-check.sh on a machine with a GPU. Without a CUDA build or
 * without a device it prints one skipped test and exits 0, so `make test`
 * stays green anywhere.
 *
 *   t_device [--only LIST] [--quick]   the checks (LIST: format names and
 *                                      "misc", comma-separated; default all)
 *   t_device --probe                   the device, its copy peak and SM clock
 *                                      (exit 4 with the reason when none)
 *   t_device --list                    the formats with device kernels
 *
 * Every test line starts with its kind in brackets, [load], [decode],
 * [gemv], [large], [misc] or [probe], and names its object ID, FORMAT-NxK
 * (FORMAT-raw-NxK for random bytes); "# format F" starts each format's
 * checks, so a sanitizer's report can be placed (scripts/gpu-check.sh runs
 * one process per format: a fault that poisons the CUDA context then
 * hides nothing else). --quick leaves out the large shapes.
 *
 * What it checks, for every format/layout and odd shapes (K not a multiple
 * of 128, N not a multiple of any block; nvfp4 with 1-3 divisors; the
 * gguf_* formats of DESIGN 7.5 with one and several blocks per row, their
 * GEMV on the unit kernel of nf_kindex_gguf.h):
 *   - the load path: one artifact of two files (objects spanning the
 *     part boundary) loaded with 64 KiB staging pieces on two workers (many
 *     double-buffer turns), every object's SHA-256 checked on the way,
 *     every object's device bytes decoded back;
 *   - decode to bf16 == nf_decode_rows_bf16 bit for bit, whole objects and
 *     row ranges, on valid objects and on random bytes (every code
 *     pattern, NaN and infinite scales: the x86 NaN results included);
 *   - GEMV within the documented bound of nf_gemv_ref (nf_kernels.cuh)
 *     and bit for bit equal to nf_k_gemv_emulate under the same plan
 *     (deterministic reduction; a race or a wrong index shows here), for
 *     the default plan, R = 4 / W = 8, R = 1 / W = 2 and the per-element
 *     kernel, whole objects and row ranges;
 *   - large shapes (8259x5120, nvfp4 8192x5120; and objects past 2 GiB:
 *     bf16 151936x7168, fp8 151936x14336 with more than 2^31 elements, q4
 *     151936x5120): decode of row blocks at the start, middle and end bit
 *     for bit, GEMV of every row with sampled rows (the last 64 included)
 *     within the bound and bit for bit the emulation (nf_devcheck.h);
 *   - misc: nf_device_bench_samples runs and checks, the peak is
 *     plausible, bad calls are refused with a diagnostic (the backend
 *     prints nothing), a flipped byte in the artifact is a `digest` failure
 *     of nf_device_load naming the object.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nf_artifact.h"
#include "nf_cli.h"
#include "nf_codec.h"
#include "nf_codec_gguf.h"
#include "nf_devcheck.h"
#include "nf_device.h"
#include "nf_digest.h"
#include "nf_fp.h"
#include "nf_gemv.h"
#include "nf_util.h"
#include "../unit/nf_test.h"
#include "../../cuda/nf_kindex.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint32_t r32(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 16);
}

/* ---- test objects ---- */

typedef struct {
    char id[64];
    nf_tensor_enc t;
    nf_kgeom g;
    uint8_t *obj;
    uint64_t offset; /* in the artifact payload */
    int valid;       /* finite scales etc.: GEMV is checked */
    size_t idx;      /* catalog index */
    nf_dbuf *dev;
} tobj;

static uint16_t fin16(int bf16)
{
    for (;;) {
        uint16_t h = (uint16_t)r32();
        float f = bf16 ? nf_bf16_to_f32(h) : nf_fp16_to_f32(h);
        if (isfinite(f) && fabsf(f) < 64 && (f == 0 || fabsf(f) > 1e-6f))
            return h;
    }
}

/* 8 random bytes at a time (the large objects: gigabytes) */
static void fill_random(uint8_t *p, uint64_t n)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = ((uint64_t)r32() << 32) ^ r32();
        memcpy(p + i, &v, 8);
    }
    for (; i < n; i++)
        p[i] = (uint8_t)r32();
}

/* valid = 2: a valid object filled fast (huge objects): bf16 words with an
 * exponent in [2^-8, 2^0), e4m3 codes without NaN; other formats as 1 */
static int mkobj(tobj *o, nf_format f, const uint64_t *dims, unsigned rank, uint64_t div,
                 int valid)
{
    memset(o, 0, sizeof *o);
    if (nf_tensor_enc_init(&o->t, f, nf_format_default_layout(f), dims, rank, div, NULL))
        return -1;
    if (nf_kgeom_init(&o->g, f, o->t.layout, o->t.rows, o->t.cols, div, &o->t.enc))
        return -1;
    o->valid = valid != 0;
    uint64_t eb = o->t.enc.encoded_bytes, el = o->t.enc.elements, N = o->t.rows;
    o->obj = malloc(eb ? eb : 1);
    if (!o->obj)
        return -1;
    fill_random(o->obj, eb);
    const nf_plane *p = o->t.enc.plane;
    if (valid == 2 && f == NF_FMT_BF16) {
        for (uint64_t e = 0; e < el; e++) {
            uint16_t h;
            memcpy(&h, o->obj + 2 * e, 2);
            h = (uint16_t)((h & 0x807f) | ((0x77u + (h >> 7 & 7)) << 7));
            memcpy(o->obj + 2 * e, &h, 2);
        }
        return 0;
    }
    if (nf_format_is_gguf(f)) { /* DESIGN 7.5: plausible blocks, or random bytes with
                                   NaN/inf in the first block's f16 fields */
        if (valid)
            nf_gguf_random_blocks(f, r32(), o->obj, el / nf_gguf_info_of(f).qk);
        else if (f != NF_FMT_GGUF_MXFP4 && eb >= 4)
            memcpy(o->obj, "\x00\x7c\x01\x7e", 4);
        return 0;
    }
    if (!valid) { /* random bytes, but with some NaN/inf scales for sure */
        if (o->t.layout == NF_LAY_ROW_SPLIT_K128_V1) {
            const nf_plane *sp = &p[o->t.enc.nplanes - 1];
            memcpy(o->obj + sp->offset, "\x00\x7c\x01\x7e", 4); /* inf, NaN */
        }
        return 0;
    }
    switch (f) {
    case NF_FMT_BF16:
        for (uint64_t e = 0; e < el; e++) {
            uint16_t h = fin16(1);
            memcpy(o->obj + 2 * e, &h, 2);
        }
        break;
    case NF_FMT_FP32:
        for (uint64_t e = 0; e < el; e++) {
            float v = (float)((int32_t)r32() % 100000) * 1e-4f;
            memcpy(o->obj + 4 * e, &v, 4);
        }
        break;
    case NF_FMT_INT32:
        for (uint64_t e = 0; e < el; e++) {
            int32_t v = (int32_t)r32() >> (r32() % 24);
            memcpy(o->obj + 4 * e, &v, 4);
        }
        break;
    case NF_FMT_NVFP4:
        for (uint64_t i = 0; i < p[1].bytes; i++)
            if (nf_e4m3_is_nan(o->obj[p[1].offset + i]))
                o->obj[p[1].offset + i] = 0x38;
        for (uint64_t i = 0; i < div; i++) {
            float w = 0.25f + (float)(r32() % 1000) / 100.0f;
            memcpy(o->obj + p[2].offset + 4 * i, &w, 4);
        }
        break;
    case NF_FMT_FP8_E4M3FN_ROW_BF16:
        for (uint64_t i = 0; i < el; i++)
            if ((o->obj[i] & 0x7f) == 0x7f) /* the e4m3fn NaN codes */
                o->obj[i] = 0x7e;
        for (uint64_t n = 0; n < N; n++) {
            uint16_t h = fin16(1);
            memcpy(o->obj + p[1].offset + 2 * n, &h, 2);
        }
        break;
    default: {
        const nf_plane *sp = &p[o->t.enc.nplanes - 1];
        for (uint64_t i = 0; i < sp->bytes / 2; i++) {
            uint16_t h = fin16(0);
            memcpy(o->obj + sp->offset + 2 * i, &h, 2);
        }
        break;
    }
    }
    return 0;
}

/* ---- the artifact: entry + one part, objects 256-aligned ---- */

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int write_all(FILE *f, const void *b, size_t n) { return fwrite(b, 1, n, f) == n ? 0 : -1; }

/* The artifact: objects 256-aligned in an entry and one part (the payload
 * split inside an object), each with its SHA-256 in metadata.integrity.
 * *seg0 receives the entry's payload bytes (the part holds the rest). */
static int write_artifact(const char *dir, tobj *objs, size_t n, char *entry, size_t elen,
                          uint64_t *seg0p)
{
    uint64_t off = 0;
    for (size_t i = 0; i < n; i++) {
        objs[i].offset = off;
        off += objs[i].t.enc.encoded_bytes;
        off = (off + 255) & ~255ull;
    }
    uint64_t payload = off ? off : 256, seg0 = (payload / 2 + 12345) & ~7ull;
    if (seg0 > payload)
        seg0 = payload / 2;
    uint8_t *pay = calloc(1, payload);
    for (size_t i = 0; i < n; i++)
        memcpy(pay + objs[i].offset, objs[i].obj, objs[i].t.enc.encoded_bytes);
    *seg0p = seg0;
    size_t cap = 1024 + n * 512, len = 0;
    char *cat = malloc(cap);
    len += (size_t)snprintf(cat + len, cap - len,
                            "{\"components\": {\"text\": {\"config\": {\"architectures\": "
                            "[\"TestForCausalLM\"], \"model_type\": \"test\"}}},\n \"objects\": [");
    for (size_t i = 0; i < n; i++) {
        const tobj *o = &objs[i];
        char shape[128] = "[";
        for (unsigned r = 0; r < o->t.rank; r++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%llu", r ? ", " : "",
                     (unsigned long long)o->t.dims[r]);
        strcat(shape, "]");
        char divs[48] = "";
        if (o->t.format == NF_FMT_NVFP4)
            snprintf(divs, sizeof divs, ", \"divisors\": %llu", (unsigned long long)o->t.divisors);
        len += (size_t)snprintf(cat + len, cap - len,
                                "%s\n  {\"id\": \"%s\", \"kind\": \"tensor\", \"shape\": %s, "
                                "\"format\": \"%s\", \"layout\": \"%s\", \"offset\": %llu, "
                                "\"bytes\": %llu%s}",
                                i ? "," : "", o->id, shape, nf_format_name(o->t.format),
                                nf_layout_name(o->t.layout), (unsigned long long)o->offset,
                                (unsigned long long)o->t.enc.encoded_bytes, divs);
    }
    snprintf(entry, elen, "%s/t.ninfer", dir);
    len += (size_t)snprintf(cat + len, cap - len, "],\n \"metadata\": {\"integrity\": {\"sha256\": {");
    for (size_t i = 0; i < n; i++) {
        nf_sha256 *h = nf_sha256_new();
        char hex[65] = "";
        if (h) {
            nf_sha256_update(h, objs[i].obj, objs[i].t.enc.encoded_bytes);
            nf_sha256_final(h, hex);
        }
        len += (size_t)snprintf(cat + len, cap - len, "%s\"%s\": \"%s\"", i ? ", " : "",
                                objs[i].id, hex);
    }
    len += (size_t)snprintf(cat + len, cap - len,
                            "}}},\n \"bindings\": {},\n \"uses\": [],\n \"files\": [{\"path\": null, "
                            "\"payload_bytes\": %llu}, {\"path\": \"t.ninfer.part-0001\", "
                            "\"payload_bytes\": %llu}]}\n",
                            (unsigned long long)seg0, (unsigned long long)(payload - seg0));
    static const uint8_t id[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint8_t hdr[32];
    memcpy(hdr, "NINFER\0\3", 8);
    put64(hdr + 8, len);
    memcpy(hdr + 16, id, 16);
    uint64_t start = (32 + len + 4095) & ~4095ull;
    int rc = -1;
    FILE *f = fopen(entry, "wb");
    if (f && !write_all(f, hdr, 32) && !write_all(f, cat, len)) {
        uint8_t *zero = calloc(1, 4096);
        rc = write_all(f, zero, start - 32 - len) || write_all(f, pay, seg0) ? -1 : 0;
        if (fclose(f))
            rc = -1;
        f = NULL;
        char part[512];
        snprintf(part, sizeof part, "%s/t.ninfer.part-0001", dir);
        FILE *g = rc ? NULL : fopen(part, "wb");
        if (g) {
            memcpy(hdr, "NINPRT\0\3", 8);
            put64(hdr + 8, 1);
            rc = write_all(g, hdr, 32) || write_all(g, zero, 4096 - 32) ||
                         write_all(g, pay + seg0, payload - seg0)
                     ? -1
                     : 0;
            if (fclose(g))
                rc = -1;
        } else {
            rc = -1;
        }
        free(zero);
    }
    if (f)
        fclose(f);
    free(cat);
    free(pay);
    return rc;
}

/* ---- checks ---- */

static void print_diags(nf_diags *d)
{
    for (size_t i = 0; i < d->n; i++)
        printf("#   %s: %s\n", nf_code_name(d->v[i].code), d->v[i].message);
}

static void rand_x(uint16_t *x, float *xf, uint64_t K, uint64_t padded)
{
    for (uint64_t k = 0; k < K; k++) {
        x[k] = fin16(1);
        xf[k] = nf_bf16_to_f32(x[k]);
    }
    for (uint64_t k = K; k < padded; k++)
        xf[k] = 0;
}

static int same_f(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}

/* decode [r0, r1) on the device and compare with the CPU, bit for bit */
static void check_decode(tobj *o, uint64_t r0, uint64_t r1)
{
    uint64_t K = o->t.cols, n = (r1 - r0) * K;
    uint16_t *dv = malloc((n ? n : 1) * 2), *ref = malloc((n ? n : 1) * 2);
    nf_diags d = NF_DIAGS_INIT;
    memset(dv, 0xa5, (n ? n : 1) * 2); /* poison */
    int rc = nf_device_decode_bf16(&o->t, o->dev, r0, r1, dv, &d);
    /* gguf: the device follows the scalar path's NaN results (nf_kindex_gguf.h) */
    nf_isa prev = nf_codec_isa();
    if (nf_format_is_gguf(o->t.format))
        nf_codec_set_isa(NF_ISA_SCALAR);
    nf_decode_rows_bf16(&o->t, o->obj, o->t.enc.encoded_bytes, r0, r1, ref);
    nf_codec_set_isa(prev);
    uint64_t bad = 0, first = 0;
    for (uint64_t i = 0; !rc && i < n; i++)
        if (dv[i] != ref[i] && !bad++)
            first = i;
    CHECK(rc == 0 && bad == 0, "[decode] %s: decode rows [%llu,%llu) bit for bit (%llu differ)", o->id,
          (unsigned long long)r0, (unsigned long long)r1, (unsigned long long)bad);
    if (rc)
        print_diags(&d);
    if (bad)
        printf("#   first at row %llu col %llu: got 0x%04x want 0x%04x\n",
               (unsigned long long)(r0 + first / K), (unsigned long long)(first % K), dv[first],
               ref[first]);
    nf_diags_free(&d);
    free(dv);
    free(ref);
}

struct variant {
    const char *name, *R, *W, *kernel;
};

/* GEMV of rows [r0, r1) under a plan variant: the bound against the
 * reference and bit equality with the host emulation of the same plan */
static void check_gemv(tobj *o, uint64_t r0, uint64_t r1, const struct variant *v)
{
    const nf_kgeom *g = &o->g;
    uint64_t K = o->t.cols, rows = r1 - r0, pad = g->nch * g->C;
    if (pad < K)
        pad = K;
    if (v->R)
        setenv("NF_CUDA_R", v->R, 1);
    else
        unsetenv("NF_CUDA_R");
    if (v->W)
        setenv("NF_CUDA_W", v->W, 1);
    else
        unsetenv("NF_CUDA_W");
    if (v->kernel)
        setenv("NF_CUDA_KERNEL", v->kernel, 1);
    else
        unsetenv("NF_CUDA_KERNEL");
    nf_kplan p = nf_k_gemv_plan(g, rows, v->R ? (unsigned)atoi(v->R) : 0,
                                v->W ? (unsigned)atoi(v->W) : 0, v->kernel != NULL);
    uint16_t *x = malloc(K * 2);
    float *xf = malloc(pad * 4), *y = malloc(rows * 4), *ref = malloc(o->t.rows * 4),
          *emu = malloc(rows * 4), *row = malloc(K * 4);
    rand_x(x, xf, K, pad);
    for (uint64_t i = 0; i < rows; i++)
        y[i] = nf_f32_from_bits(0x7fa5a5a5u); /* poison (a NaN) */
    nf_diags d = NF_DIAGS_INIT;
    double ms = -1;
    int rc = nf_device_gemv(&o->t, o->dev, r0, r1, x, y, 3, &ms, &d);
    nf_gemv_ref(&o->t, o->obj, o->t.enc.encoded_bytes, x, ref);
    nf_k_gemv_emulate(o->obj, g, &p, r0, rows, xf, emu);
    double D = nf_k_gemv_bound_units(g), worst = 0;
    uint64_t outb = 0, noteq = 0;
    for (uint64_t i = 0; !rc && i < rows; i++) {
        nf_decode_rows_f32(&o->t, o->obj, o->t.enc.encoded_bytes, r0 + i, r0 + i + 1, row);
        double mag = 0;
        for (uint64_t k = 0; k < K; k++)
            mag += fabs((double)row[k] * xf[k]);
        double want = ref[r0 + i], err = fabs((double)y[i] - want);
        double tol = D * 0x1p-24 * mag + 0x1p-24 * fabs(want) + 0x1p-140;
        if (!(err <= tol) && !outb++)
            printf("#   row %llu: got %.9g want %.9g (err %.3g, bound %.3g)\n",
                   (unsigned long long)(r0 + i), y[i], want, err, tol);
        if (mag > 0 && err / (0x1p-24 * mag) > worst)
            worst = err / (0x1p-24 * mag);
        if (!same_f(y[i], emu[i]) && !noteq++)
            printf("#   row %llu: got %.9g (0x%08x), emulation %.9g (0x%08x)\n",
                   (unsigned long long)(r0 + i), y[i], nf_f32_bits(y[i]), emu[i],
                   nf_f32_bits(emu[i]));
    }
    CHECK(rc == 0 && outb == 0, "[gemv] %s: gemv rows [%llu,%llu) %s (%s R=%u W=%u): within bound of "
          "nf_gemv_ref (worst %.1f units of 2^-24 sum|wx|; %.4f ms)",
          o->id, (unsigned long long)r0, (unsigned long long)r1, v->name,
          p.scalar == 2 ? "gguf unit" : p.scalar ? "per-element" : "chunk", p.R, p.W, worst, ms);
    CHECK(rc == 0 && noteq == 0, "[gemv] %s: gemv rows [%llu,%llu) %s: bit for bit the host emulation "
          "(%llu differ)", o->id, (unsigned long long)r0, (unsigned long long)r1, v->name,
          (unsigned long long)noteq);
    if (rc)
        print_diags(&d);
    nf_diags_free(&d);
    unsetenv("NF_CUDA_R");
    unsetenv("NF_CUDA_W");
    unsetenv("NF_CUDA_KERNEL");
    free(x);
    free(xf);
    free(y);
    free(ref);
    free(emu);
    free(row);
}

/* free everything, remove the artifact, print the plan */
static int finish(tobj *objs, size_t n, nf_artifact *a, const char *tdir, const char *entry,
                  size_t *idx, nf_dbuf **bufs)
{
    free(idx);
    free(bufs);
    for (size_t i = 0; i < n; i++) {
        nf_device_free(objs[i].dev);
        free(objs[i].obj);
    }
    nf_artifact_close(a);
    char path[700];
    snprintf(path, sizeof path, "%s/t.ninfer.part-0001", tdir);
    unlink(path);
    unlink(entry);
    rmdir(tdir);
    return nf_test_done();
}

/* nf_device_bench_samples: 5 samples, each positive, the median as a
 * comment; a failure has exactly one diagnostic, shown as a comment */
static int quiet_bench(const char *op, const nf_tensor_enc *t, const uint8_t *obj)
{
    double s[5] = {0};
    nf_diags d = NF_DIAGS_INIT;
    nf_device_bench_info in;
    int rc = nf_device_bench_samples(op, t, obj, 1, 5, true, "t_device", s, &in, &d);
    for (size_t i = 0; i < d.n; i++)
        printf("#   %s: %s: %s\n", d.v[i].file, nf_code_name(d.v[i].code), d.v[i].message);
    if (rc == 0 && d.n == 0) {
        for (int i = 0; i < 5; i++)
            if (!(s[i] > 0))
                rc = -1;
        if (in.check != 0 || !(in.peak_before_gbps > 0) || !(in.peak_after_gbps > 0))
            rc = -1;
        printf("#   %s %s: %.3f ms per launch, %llu copies, peaks %.0f/%.0f GB/s, SM %.0f MHz, "
               "check %d (%llu rows, worst %.3g of %.3g)\n",
               op, nf_format_name(t->format), s[2] * 1e3, (unsigned long long)in.copies,
               in.peak_before_gbps, in.peak_after_gbps, in.sm_mhz, in.check,
               (unsigned long long)in.rows_checked, in.max_err, in.bound);
    } else if (rc == 0 || d.n != 1) {
        rc = -1;
    }
    nf_diags_free(&d);
    return rc;
}

/* ---- large shapes ---- */

/* One large object: built here, uploaded, decoded in three row blocks,
 * multiplied whole and checked on sampled rows (nf_devcheck.h). */
static void check_large(nf_format f, uint64_t N, uint64_t K, uint64_t div, int valid)
{
    tobj o;
    uint64_t dims[2] = {N, K};
    double t0 = nf_now();
    int mk = mkobj(&o, f, dims, 2, div, valid);
    snprintf(o.id, sizeof o.id, "%s-%llux%llu", nf_format_name(f), (unsigned long long)N,
             (unsigned long long)K);
    nf_diags d = NF_DIAGS_INIT;
    int up = mk ? -1 : nf_device_upload(o.obj, o.t.enc.encoded_bytes, &o.dev, &d);
    CHECK(mk == 0 && up == 0, "[large] %s: %llu bytes built and uploaded (%.1f s)", o.id,
          mk ? 0ull : (unsigned long long)o.t.enc.encoded_bytes, nf_now() - t0);
    if (mk || up) {
        print_diags(&d);
        nf_diags_free(&d);
        free(o.obj);
        return;
    }
    /* decode: three blocks of up to 64 rows */
    uint64_t nr = N < 64 ? N : 64, starts[3] = {0, N / 2 - nr / 2, N - nr}, bad = 0, first = 0;
    uint16_t *buf = malloc(nr * K * 2);
    int drc = buf ? 0 : -1;
    for (int b = 0; !drc && b < 3; b++) {
        nf_devcheck_result r;
        memset(buf, 0xa5, nr * K * 2); /* poison */
        drc = nf_device_decode_bf16(&o.t, o.dev, starts[b], starts[b] + nr, buf, &d);
        if (!drc && nf_devcheck_decode(&o.t, o.obj, starts[b], starts[b] + nr, buf, &r) == 0) {
            if (r.bad && !bad)
                first = r.worst_row;
            bad += r.bad;
        } else {
            drc = -1;
        }
    }
    CHECK(drc == 0 && bad == 0, "[large] %s: decode rows [0,%llu), [%llu,%llu), [%llu,%llu) bit "
          "for bit (%llu differ%s%llu)", o.id, (unsigned long long)nr,
          (unsigned long long)starts[1], (unsigned long long)(starts[1] + nr),
          (unsigned long long)starts[2], (unsigned long long)N, (unsigned long long)bad,
          bad ? ", first in row " : "", bad ? (unsigned long long)first : 0ull);
    free(buf);
    /* gemv of every row, sampled rows checked */
    const nf_kgeom *g = &o.g;
    uint64_t pad = g->nch * g->C > K ? g->nch * g->C : K;
    uint16_t *x = malloc(K * 2);
    float *xf = malloc(pad * 4), *y = malloc(N * 4);
    uint64_t rows[256];
    size_t ns = nf_devcheck_sample_rows(N, rows, 256);
    rand_x(x, xf, K, pad);
    for (uint64_t i = 0; i < N; i++)
        y[i] = nf_f32_from_bits(0x7fa5a5a5u);
    double ms = 0;
    int grc = nf_device_gemv(&o.t, o.dev, 0, N, x, y, 3, &ms, &d);
    nf_devcheck_result r;
    memset(&r, 0, sizeof r);
    int crc = grc ? -1 : nf_devcheck_gemv(&o.t, o.obj, x, y, rows, ns, nf_k_gemv_bound_units(g), &r);
    CHECK(grc == 0 && crc == 0 && r.ok, "[large] %s: gemv of %llu rows: %llu sampled rows (the "
          "last 64 included) within bound (worst row %llu: %.3g of %.3g; %.3f ms, %.0f GB/s)",
          o.id, (unsigned long long)N, (unsigned long long)r.rows, (unsigned long long)r.worst_row,
          r.max_err, r.bound, ms, ms > 0 ? (double)o.t.enc.encoded_bytes / (ms * 1e-3) / 1e9 : 0);
    nf_kplan p = nf_k_gemv_plan(g, N, 0, 0, 0);
    uint64_t noteq = 0;
    for (size_t i = 0; !grc && i < ns; i++) {
        float e;
        nf_k_gemv_emulate(o.obj, g, &p, rows[i], 1, xf, &e);
        if (!same_f(y[rows[i]], e) && !noteq++)
            printf("#   row %llu: got %.9g (0x%08x), emulation %.9g (0x%08x)\n",
                   (unsigned long long)rows[i], y[rows[i]], nf_f32_bits(y[rows[i]]), e,
                   nf_f32_bits(e));
    }
    CHECK(grc == 0 && noteq == 0, "[large] %s: gemv sampled rows bit for bit the host emulation "
          "(%llu differ)", o.id, (unsigned long long)noteq);
    print_diags(&d);
    nf_diags_free(&d);
    free(x);
    free(xf);
    free(y);
    nf_device_free(o.dev);
    free(o.obj);
}

static void large_for(nf_format f)
{
    check_large(f, f == NF_FMT_NVFP4 ? 8192 : 8259, 5120, 1, 1);
    if (f == NF_FMT_BF16) /* 2.18 GB: byte offsets past 2^31 */
        check_large(f, 151936, 7168, 1, 2);
    if (f == NF_FMT_FP8_E4M3FN_ROW_BF16) /* 2.18 G elements: element indices past 2^31 */
        check_large(f, 151936, 14336, 1, 2);
    if (f == NF_FMT_Q4_G64_FP16) /* a vocabulary-sized head */
        check_large(f, 151936, 5120, 1, 1);
}

/* ---- options ---- */

static const char *only; /* --only: formats and "misc" */
static int quick;

static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !memcmp(p, name, n))
            return 1;
        p += len + (e != NULL);
    }
    return 0;
}

static int want_fmt(nf_format f) { return !only || in_list(only, nf_format_name(f)); }
static int want_misc(void) { return !only || in_list(only, "misc"); }

/* a format has device kernels: its geometry (for a 128x256 object) exists */
static int has_kernel(nf_format f)
{
    uint64_t dims[2] = {128, 256};
    nf_tensor_enc t;
    nf_kgeom g;
    return nf_tensor_enc_init(&t, f, nf_format_default_layout(f), dims, 2, 1, NULL) == 0 &&
           nf_kgeom_init(&g, f, t.layout, t.rows, t.cols, 1, &t.enc) == 0;
}

/* --probe: what the device is, its peak and clock, as key=value comments
 * (name last: it holds blanks) and three tests. Exit 4 with the reason
 * when there is none. */
static int probe(void)
{
    nf_diags d = NF_DIAGS_INIT;
    if (nf_device_init(&d)) {
        const char *why = d.n ? d.v[0].message : "no device";
        printf("# probe: unsupported: %s\n1..0 # skip %s\n", why, why);
        nf_diags_free(&d);
        return NF_EXIT_UNSUPPORTED;
    }
    nf_device_info in;
    int q = nf_device_query(&in, &d);
    double peak = nf_device_peak_gbps(), mhz = nf_device_sm_mhz();
    printf("# probe cc=%d.%d sms=%d l2_bytes=%llu mem_bytes=%llu mem_free=%llu driver=%d.%d "
           "runtime=%d.%d compute_mode=%d rated_mhz=%d peak_gbps=%.1f sm_mhz=%.0f name=%s\n",
           in.cc_major, in.cc_minor, in.sms, (unsigned long long)in.l2_bytes,
           (unsigned long long)in.mem_bytes, (unsigned long long)in.mem_free,
           in.driver_version / 1000, in.driver_version % 1000 / 10, in.runtime_version / 1000,
           in.runtime_version % 1000 / 10, in.compute_mode, in.clock_khz / 1000, peak, mhz,
           in.name);
    CHECK(q == 0, "[probe] device %s: compute capability %d.%d, %d SMs, %llu MiB of L2, %llu of "
          "%llu MiB free", in.name, in.cc_major, in.cc_minor, in.sms,
          (unsigned long long)(in.l2_bytes >> 20), (unsigned long long)(in.mem_free >> 20),
          (unsigned long long)(in.mem_bytes >> 20));
    print_diags(&d);
    nf_diags_free(&d);
    CHECK(peak > 100 && peak < 100000, "[probe] device-to-device peak %.1f GB/s is plausible", peak);
    CHECK(mhz > 100 && mhz < 5000, "[probe] SM clock %.0f MHz measured", mhz);
    return nf_test_done();
}

/* the digest check of the load path: a flipped byte in an object that lies
 * in the part file fails with `digest` naming it; --no-digests loads it */
static void check_digest_flip(const char *entry, const char *tdir, tobj *objs, size_t n,
                              const size_t *idx, uint64_t seg0)
{
    size_t i = 0;
    while (i < n && (objs[i].offset < seg0 || objs[i].t.enc.encoded_bytes < 2))
        i++;
    if (i == n) {
        SKIP("no object lies in the part file", "[misc] a flipped byte: digest");
        return;
    }
    char part[700];
    snprintf(part, sizeof part, "%s/t.ninfer.part-0001", tdir);
    FILE *f = fopen(part, "r+b");
    long at = (long)(4096 + objs[i].offset - seg0 + 1);
    int c = -1;
    if (f && fseek(f, at, SEEK_SET) == 0 && (c = fgetc(f)) != EOF && fseek(f, at, SEEK_SET) == 0)
        fputc(c ^ 1, f);
    if (f)
        fclose(f);
    nf_diags d = NF_DIAGS_INIT;
    nf_open_opts oo;
    memset(&oo, 0, sizeof oo);
    nf_artifact *a = nf_artifact_open(entry, &oo, &d);
    nf_diags_free(&d);
    nf_dbuf *b = NULL;
    nf_load_stats st;
    int rc = a ? nf_device_load(a, &idx[i], 1, 1, false, &b, &st, &d) : 0;
    int named = d.n == 1 && d.v[0].code == NF_C_DIGEST && strstr(d.v[0].message, objs[i].id);
    CHECK(c >= 0 && a && rc == -1 && named, "[misc] a flipped byte in %s: nf_device_load fails "
          "with digest naming it", objs[i].id);
    print_diags(&d);
    nf_diags_free(&d);
    nf_device_free(b);
    b = NULL;
    rc = a ? nf_device_load(a, &idx[i], 1, 1, true, &b, &st, &d) : -1;
    CHECK(rc == 0 && st.digests_skipped && st.digests_checked == 0,
          "[misc] the same with no_digests: loaded, nothing checked");
    print_diags(&d);
    nf_diags_free(&d);
    nf_device_free(b);
    nf_artifact_close(a);
}

int main(int argc, char **argv)
{
    nf_prog = "t_device";
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--probe"))
            return probe();
        if (!strcmp(argv[i], "--list")) {
            for (int f = 0; f < NF_FMT_COUNT_; f++)
                if (has_kernel((nf_format)f))
                    printf("%s\n", nf_format_name((nf_format)f));
            return 0;
        }
        if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: t_device [--only FORMAT,...|misc] [--quick] | --probe | --list\n");
            return 2;
        }
    }
    /* ---- the objects, grouped by format ---- */
    static const nf_format order[] = {
        NF_FMT_Q2_G64_FP16, NF_FMT_Q4_G64_FP16,  NF_FMT_Q5_G64_FP16, NF_FMT_Q6_G64_FP16,
        NF_FMT_Q8_G32_FP16, NF_FMT_T2_G128_FP16, NF_FMT_BF16,        NF_FMT_FP32,
        NF_FMT_INT32,       NF_FMT_FP8_E4M3FN_ROW_BF16, NF_FMT_NVFP4,
        NF_FMT_GGUF_F16,  NF_FMT_GGUF_Q8_0,   NF_FMT_GGUF_Q4_0,  NF_FMT_GGUF_Q4_1,
        NF_FMT_GGUF_Q5_0, NF_FMT_GGUF_Q5_1,   NF_FMT_GGUF_IQ4_NL, NF_FMT_GGUF_MXFP4,
        NF_FMT_GGUF_Q2_K, NF_FMT_GGUF_Q3_K,   NF_FMT_GGUF_Q4_K,  NF_FMT_GGUF_Q5_K,
        NF_FMT_GGUF_Q6_K, NF_FMT_GGUF_IQ4_XS};
    static const uint64_t rs_shapes[][2] = {{300, 200}, {129, 1000}, {7, 4100},
                                            {1, 1},     {64, 128},   {33, 4096}};
    static const uint64_t c_shapes[][2] = {{300, 200}, {129, 1000}, {7, 4100},
                                           {33, 77},   {16, 4096},  {1, 1}};
    static const uint64_t f8_shapes[][2] = {{300, 200}, {129, 1000}, {7, 4100},
                                            {96, 4096}, {33, 160},   {5, 2048}};
    static const uint64_t nv_shapes[][3] = {{256, 192, 2}, {384, 4160, 3}, {128, 64, 1},
                                            {128, 4096, 1}};
    static const uint64_t raw_s[2] = {129, 1000}, raw_f8[2] = {96, 4096}, raw_nv[2] = {256, 192};
    tobj objs[192];
    size_t n = 0, nvalid = 0;
    int mk_bad = 0;
#define ADD(f, dims, rank, div, valid)                                                     \
    do {                                                                                   \
        if (mkobj(&objs[n], f, dims, rank, div, valid)) {                                  \
            mk_bad++;                                                                      \
        } else {                                                                           \
            snprintf(objs[n].id, sizeof objs[n].id, "%s%s-%llux%llu", nf_format_name(f),   \
                     (valid) ? "" : "-raw", (unsigned long long)objs[n].t.rows,            \
                     (unsigned long long)objs[n].t.cols);                                  \
            nvalid += (valid) != 0;                                                        \
            n++;                                                                           \
        }                                                                                  \
    } while (0)
    for (size_t oi = 0; oi < sizeof order / sizeof order[0]; oi++) {
        nf_format f = order[oi];
        int misc_q4 = f == NF_FMT_Q4_G64_FP16 && want_misc(); /* the bench entry's object */
        if (!want_fmt(f) && !misc_q4)
            continue;
        if (nf_format_is_gguf(f)) {
            /* a few blocks per row, one block, many rows; gguf_f16 with K not a
             * multiple of 32 */
            uint64_t qk = nf_gguf_info_of(f).qk;
            uint64_t gs[3][2] = {{37, (qk == 1 ? 77 : 5 * qk)}, {1, qk == 1 ? 32 : qk},
                                 {300, qk == 256 ? 4096 : 2048}};
            uint64_t gr[2] = {33, qk == 1 ? 200 : 4 * qk};
            for (unsigned s = 0; s < 3; s++)
                ADD(f, gs[s], 2, 1, 1);
            ADD(f, gr, 2, 1, 0); /* random bytes: NaN/inf in the f16 fields */
        } else if (f == NF_FMT_NVFP4) {
            for (unsigned s = 0; s < 4; s++)
                ADD(f, nv_shapes[s], 2, nv_shapes[s][2], 1);
            ADD(f, raw_nv, 2, 2, 0);
        } else if (f == NF_FMT_FP8_E4M3FN_ROW_BF16) {
            for (unsigned s = 0; s < 6; s++)
                ADD(f, f8_shapes[s], 2, 1, 1);
            ADD(f, raw_s, 2, 1, 0);
            ADD(f, raw_f8, 2, 1, 0);
        } else if (f == NF_FMT_BF16 || f == NF_FMT_FP32 || f == NF_FMT_INT32) {
            for (unsigned s = 0; s < 6; s++)
                ADD(f, c_shapes[s], 2, 1, 1);
            if (f == NF_FMT_BF16) {
                static const uint64_t d3[3] = {2, 3, 40};
                ADD(f, d3, 3, 1, 1); /* rank 3: 2 rows of 120 */
            }
            if (f == NF_FMT_INT32) {
                static const uint64_t d1[1] = {100};
                ADD(f, d1, 1, 1, 1); /* rank 1: 100 rows of 1 */
            }
            ADD(f, raw_s, 2, 1, 0);
        } else if (!want_fmt(f)) {
            ADD(f, rs_shapes[5], 2, 1, 1); /* misc alone: q4 33x4096 */
        } else {
            for (unsigned s = 0; s < 6; s++)
                ADD(f, rs_shapes[s], 2, 1, 1);
            ADD(f, raw_s, 2, 1, 0); /* random bytes: NaN and infinite scales */
        }
    }
    CHECK(mk_bad == 0 && n > 0, "[load] %zu test objects built (%zu valid, %zu random bytes)", n,
          nvalid, n - nvalid);
    if (!n)
        return nf_test_done();

    /* ---- the load path ---- */
    char dir[] = "/tmp/t_device.XXXXXX", entry[600];
    const char *tdir = mkdtemp(dir);
    uint64_t seg0 = 0;
    int wrc = tdir ? write_artifact(tdir, objs, n, entry, sizeof entry, &seg0) : -1;
    CHECK(wrc == 0, "[load] artifact of two files written in %s", tdir ? tdir : "(mkdtemp failed)");
    if (wrc)
        return nf_test_done();
    nf_diags d = NF_DIAGS_INIT;
    nf_open_opts oo;
    memset(&oo, 0, sizeof oo);
    nf_artifact *a = nf_artifact_open(entry, &oo, &d);
    CHECK(a != NULL, "[load] artifact opens (catalog of %zu objects)",
          a ? nf_artifact_catalog(a)->n_objects : 0);
    if (!a) {
        print_diags(&d);
        return nf_test_done();
    }
    print_diags(&d); /* rule findings, if any, are not this test's business */
    nf_diags_free(&d);
    const nf_catalog *c = nf_artifact_catalog(a);
    size_t *idx = malloc(n * sizeof *idx);
    nf_dbuf **bufs = calloc(n, sizeof *bufs);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        idx[i] = SIZE_MAX;
        for (size_t j = 0; j < c->n_objects; j++)
            if (c->objects[j].id && !strcmp(c->objects[j].id, objs[i].id))
                idx[i] = j;
        found += idx[i] != SIZE_MAX && c->objects[idx[i]].bytes == objs[i].t.enc.encoded_bytes &&
                 c->objects[idx[i]].offset == objs[i].offset && c->objects[idx[i]].has_digest;
    }
    CHECK(found == n, "[load] every test object in the catalog at its offset and size, with its "
          "digest (%zu of %zu)", found, n);
    {
        /* the bytes as the artifact reader returns them (parts included) */
        nf_diags rd = NF_DIAGS_INIT;
        size_t same = 0;
        for (size_t i = 0; i < n && found == n; i++) {
            uint64_t eb = objs[i].t.enc.encoded_bytes;
            uint8_t *b = malloc(eb ? eb : 1);
            same += nf_artifact_read(a, objs[i].offset, b, eb, &rd) == 0 &&
                    !memcmp(b, objs[i].obj, eb);
            free(b);
        }
        CHECK(same == n, "[load] nf_artifact_read returns every object's bytes across the two files");
        print_diags(&rd);
        nf_diags_free(&rd);
    }
    if (!nf_device_built()) {
        SKIP("built without CUDA", "[load] CUDA backend tests");
        return finish(objs, n, a, tdir, entry, idx, bufs);
    }
    nf_diags dd = NF_DIAGS_INIT;
    int irc = nf_device_init(&dd);
    if (irc) {
        char reason[360];
        snprintf(reason, sizeof reason, "%s", dd.n ? dd.v[0].message : "no device");
        SKIP(reason, "[load] CUDA backend tests");
        nf_diags_free(&dd);
        return finish(objs, n, a, tdir, entry, idx, bufs);
    }
    nf_diags_free(&dd);

    if (want_misc()) {
        double peak = nf_device_peak_gbps();
        CHECK(peak > 100 && peak < 100000, "[misc] device-to-device peak %.1f GB/s is plausible", peak);
    }

    setenv("NF_CUDA_STAGE_BYTES", "65536", 1);
    nf_load_stats st;
    nf_diags ld = NF_DIAGS_INIT;
    int lrc = nf_device_load(a, idx, n, 2, false, bufs, &st, &ld);
    unsetenv("NF_CUDA_STAGE_BYTES");
    uint64_t want_bytes = 0;
    for (size_t i = 0; i < n; i++)
        want_bytes += objs[i].t.enc.encoded_bytes;
    CHECK(lrc == 0 && st.parents == n && st.bytes == want_bytes && st.digests_checked == n,
          "[load] nf_device_load: %u parents, %llu bytes through 64 KiB pinned pieces on two "
          "workers, %zu digests checked, in %.3f s", st.parents, (unsigned long long)st.bytes,
          st.digests_checked, st.read_s);
    if (lrc) {
        print_diags(&ld);
        nf_diags_free(&ld);
        return finish(objs, n, a, tdir, entry, idx, bufs);
    }
    nf_diags_free(&ld);
    for (size_t i = 0; i < n; i++) {
        objs[i].idx = idx[i];
        objs[i].dev = bufs[i];
    }

    /* ---- per format: decode, gemv, the large shapes ---- */
    static const struct variant vs[] = {{"default plan", NULL, NULL, NULL},
                                        {"R=4 W=8", "4", "8", NULL},
                                        {"R=1 W=2", "1", "2", NULL},
                                        {"per-element kernel", NULL, NULL, "scalar"}};
    for (size_t oi = 0; oi < sizeof order / sizeof order[0]; oi++) {
        nf_format f = order[oi];
        if (!want_fmt(f))
            continue;
        printf("# format %s\n", nf_format_name(f));
        for (size_t i = 0; i < n; i++) {
            tobj *o = &objs[i];
            if (o->t.format != f)
                continue;
            check_decode(o, 0, o->t.rows);
            if (o->t.rows > 3)
                check_decode(o, 1, o->t.rows - 2);
            if (!o->valid)
                continue;
            for (unsigned v = 0; v < 4; v++)
                check_gemv(o, 0, o->t.rows, &vs[v]);
            if (o->t.rows > 5)
                check_gemv(o, 2, o->t.rows - 3, &vs[0]);
        }
        if (!quick)
            large_for(f);
    }

    if (want_misc()) {
        printf("# format misc\n");
        /* ---- refusals ---- */
        tobj *o = &objs[0];
        nf_diags e = NF_DIAGS_INIT;
        uint16_t x[1] = {0};
        float y[1];
        int rc = nf_device_gemv(&o->t, o->dev, 0, o->t.rows + 1, x, y, 1, NULL, &e);
        CHECK(rc == -1 && nf_diags_count(&e, NF_C_RANGE) == 1, "[misc] gemv past the last row: range");
        nf_diags_free(&e);
        nf_tensor_enc raw = o->t;
        raw.layout = NF_LAY_RAW_BYTES_V1;
        rc = nf_device_decode_bf16(&raw, o->dev, 0, 1, x, &e);
        CHECK(rc == -1 && nf_diags_count(&e, NF_C_UNSUPPORTED) == 1,
              "[misc] raw_bytes_v1 has no kernel: unsupported");
        nf_diags_free(&e);
        /* ---- the benchmark entry ---- */
        for (size_t i = 0; i < n; i++) {
            tobj *q = &objs[i];
            if (q->t.format == NF_FMT_Q4_G64_FP16 && q->t.rows == 33 && q->valid) {
                CHECK(quiet_bench("gemv", &q->t, q->obj) == 0, "[misc] nf_device_bench gemv %s", q->id);
                CHECK(quiet_bench("decode", &q->t, q->obj) == 0, "[misc] nf_device_bench decode %s",
                      q->id);
                CHECK(quiet_bench("encode", &q->t, q->obj) == NF_EXIT_UNSUPPORTED,
                      "[misc] nf_device_bench encode: unsupported (4)");
                break;
            }
        }
        check_digest_flip(entry, tdir, objs, n, idx, seg0);
    }

    return finish(objs, n, a, tdir, entry, idx, bufs);
}
