/* nf_device.cu — the CUDA backend of nf_device.h (DESIGN 11): device
 * initialisation, the device-to-device peak, benchmarks timed with events
 * over weights rotated through more memory than L2, the load path (pinned
 * staging buffers, two streams, reads overlapping copies) and the GEMV and
 * decode entry points over resident objects. The kernels are in
 * nf_kernels.cuh, their arithmetic in nf_kindex.h.
 *
 * Not thread-safe: one device, one set of process-wide state, as the
 * commands use it. Nothing here prints: problems are diagnostics. Environment (for experiments and tests; all optional):
 *   NF_CUDA_DEVICE=i        device index (default 0)
 *   NF_CUDA_R=1|2|4         rows per warp group of the GEMV kernels
 *   NF_CUDA_W=1|2|4|8       warps per row group (split-K inside a block)
 *   NF_CUDA_KERNEL=scalar   the per-element GEMV kernel for every format
 *   NF_CUDA_STAGE_BYTES=n   load path staging buffer size (default 64 MiB)
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_device.h"
#include "nf_kernels.cuh"

extern "C" {
double nf_now(void);
}

struct nf_dbuf {
    void *ptr;
    uint64_t bytes;
};

static struct {
    int ready;
    int dev;
    cudaDeviceProp prop;
    cudaStream_t s;
    double peak;
} G;

/* ---- helpers ---------------------------------------------------------------- */

static unsigned env_u(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long x = strtoul(v, &end, 10);
    return *end ? dflt : (unsigned)x;
}

static nf_kplan plan_for(const nf_kgeom *g, uint64_t nrows)
{
    const char *k = getenv("NF_CUDA_KERNEL");
    return nf_k_gemv_plan(g, nrows, env_u("NF_CUDA_R", 0), env_u("NF_CUDA_W", 0),
                          k && !strcmp(k, "scalar"));
}

/* Initialise once; on failure leave why (one line) and return -1. */
static int dev_init(char *why, size_t n)
{
    if (G.ready)
        return 0;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        snprintf(why, n, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return -1;
    }
    int dev = (int)env_u("NF_CUDA_DEVICE", 0);
    if (dev >= count) {
        snprintf(why, n, "no CUDA device %d (%d found)", dev, count);
        return -1;
    }
    e = cudaGetDeviceProperties(&G.prop, dev);
    if (e != cudaSuccess) {
        snprintf(why, n, "no CUDA device (%s)", cudaGetErrorString(e));
        return -1;
    }
    if (G.prop.major < 9) {
        snprintf(why, n,
                 "%.128s has compute capability %d.%d; this build holds sm_90 code and "
                 "compute_90 PTX (9.0 and newer)",
                 G.prop.name, G.prop.major, G.prop.minor);
        return -1;
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess || (e = cudaFree(0)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&G.s, cudaStreamNonBlocking)) != cudaSuccess) {
        snprintf(why, n, "cannot initialise CUDA device %d (%s)", dev, cudaGetErrorString(e));
        return -1;
    }
    G.dev = dev;
    G.ready = 1;
    return 0;
}

static int need_dev(nf_diags *d)
{
    char why[256];
    if (dev_init(why, sizeof why) == 0)
        return 0;
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "%s", why);
    return -1;
}

/* Record a CUDA failure as an `io` diagnostic; returns -1 (0 on success). */
static int ck(cudaError_t e, const char *what, nf_diags *d)
{
    if (e == cudaSuccess)
        return 0;
    nf_diag_add(d, NF_C_IO, "", "cuda: %s: %s", what, cudaGetErrorString(e));
    return -1;
}

static int geom_of(const nf_tensor_enc *t, nf_kgeom *g)
{
    return nf_kgeom_init(g, t->format, t->layout, t->rows, t->cols, t->divisors, &t->enc);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the median etc. of sorted samples (the interpolation of ninfer-bench) */
static double pct(const double *s, unsigned n, double q)
{
    double idx = q * (n - 1);
    unsigned lo = (unsigned)idx;
    return lo + 1 < n ? s[lo] + (s[lo + 1] - s[lo]) * (idx - lo) : s[lo];
}

/* ---- the C interface ---------------------------------------------------------- */

bool nf_device_built(void) { return true; }

int nf_device_init(nf_diags *d)
{
    return need_dev(d) ? NF_EXIT_UNSUPPORTED : 0;
}

double nf_device_peak_gbps(void)
{
    if (!G.ready)
        return 0;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    size_t bytes = (size_t)1 << 30;
    if ((size_t)G.prop.l2CacheSize * 8 > bytes)
        bytes = (size_t)G.prop.l2CacheSize * 8;
    if (bytes > fr / 4)
        bytes = fr / 4 & ~(size_t)0xfffff;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double best = 0;
    if (bytes && cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
        cudaMemsetAsync(a, 0x5a, bytes, G.s) == cudaSuccess &&
        cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess) {
        float best_ms = 1e30f;
        int ok = 1;
        for (int i = 0; ok && i < 12; i++) {
            ok = cudaEventRecord(e0, G.s) == cudaSuccess &&
                 cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, G.s) == cudaSuccess &&
                 cudaEventRecord(e1, G.s) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess;
            float ms = 0;
            if (ok && i >= 2 && cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms < best_ms)
                best_ms = ms; /* the first two are warm-up */
        }
        if (ok && best_ms < 1e30f && best_ms > 0)
            best = 2.0 * (double)bytes / (best_ms * 1e-3) / 1e9;
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(a);
    cudaFree(b);
    cudaGetLastError(); /* clear a failed allocation */
    G.peak = best;
    return best;
}

/* Time op over obj: s[0..iters) receives seconds per launch (unsorted).
 * Errors are diagnostics (file: name); returns an exit status. */
static int bench_run(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                     unsigned warmup, unsigned iters, const char *name, double *s, nf_diags *d)
{
    if (need_dev(d))
        return NF_EXIT_UNSUPPORTED;
    int gemv = !strcmp(op, "gemv");
    if (!gemv && strcmp(op, "decode")) {
        nf_diag_addf(d, NF_C_UNSUPPORTED, name, "", "--op %s has no CUDA kernel (gemv, decode)",
                     op);
        return NF_EXIT_UNSUPPORTED;
    }
    nf_kgeom g;
    if (!t || !obj || geom_of(t, &g)) {
        nf_diag_addf(d, NF_C_UNSUPPORTED, name, "", "no CUDA kernel for %s/%s",
                     t ? nf_format_name(t->format) : "?", t ? nf_layout_name(t->layout) : "?");
        return NF_EXIT_UNSUPPORTED;
    }
    uint64_t eb = t->enc.encoded_bytes, rows = t->rows, K = t->cols;
    size_t fr = 0, tot = 0;
    cudaMemGetInfo(&fr, &tot);
    /* copies rotated so that each launch reads memory no launch touched for
     * at least 4x L2 bytes: nothing is timed from cache */
    uint64_t want = (uint64_t)G.prop.l2CacheSize * 4;
    if (want < (256ull << 20))
        want = 256ull << 20;
    uint64_t copies = eb ? (want + eb - 1) / eb : 1;
    if (copies < 2)
        copies = 2;
    if (copies > 64)
        copies = 64;
    while (copies > 1 && copies * eb > fr / 2)
        copies--;
    nf_kplan p = plan_for(&g, rows);
    uint64_t padded = g.nch * g.C;
    uint64_t ring = 16, outn = ring * K > 65536 ? ring * K : 65536;
    uint8_t **w = (uint8_t **)calloc(copies, sizeof *w);
    uint16_t *xh = (uint16_t *)malloc((K ? K : 1) * sizeof *xh);
    uint16_t *dx = NULL, *dout = NULL;
    float *dxf = NULL, *dy = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    cudaError_t e = cudaSuccess;
    const char *what = "allocation";
    int ex = 0;
    if (!w || !xh) {
        nf_diag_addf(d, NF_C_IO, name, "", "out of memory");
        ex = NF_EXIT_IO;
        goto done;
    }
    for (uint64_t k = 0; k < K; k++)
        xh[k] = (uint16_t)(0x3f80 ^ (k & 0x807f)); /* as the CPU bench: +-1.x */
    for (uint64_t c = 0; c < copies && e == cudaSuccess; c++)
        e = cudaMalloc((void **)&w[c], eb ? eb : 1);
    if (e == cudaSuccess && (e = cudaMalloc((void **)&dx, (K ? K : 1) * 2)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dxf, (padded ? padded : 1) * 4)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dy, (rows ? rows : 1) * 4)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dout, outn * 2)) == cudaSuccess) {
        what = "upload";
        e = cudaMemcpy(w[0], obj, eb, cudaMemcpyHostToDevice);
        for (uint64_t c = 1; c < copies && e == cudaSuccess; c++)
            e = cudaMemcpy(w[c], w[0], eb, cudaMemcpyDeviceToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(dx, xh, K * 2, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = nf_launch_x(dx, K, dxf, padded, G.s);
    }
    if (e == cudaSuccess) {
        /* one graph: a launch over each copy in turn */
        what = "graph capture";
        e = cudaStreamBeginCapture(G.s, cudaStreamCaptureModeThreadLocal);
        for (uint64_t c = 0; c < copies && e == cudaSuccess; c++) {
            nf_kargs a;
            memset(&a, 0, sizeof a);
            a.obj = w[c];
            a.g = g;
            a.x = dxf;
            a.y = dy;
            a.out = dout;
            a.n0 = 0;
            a.nrows = rows;
            a.W = p.W;
            a.ring = (g.esize || !g.vec) ? 65535 : ring - 1;
            e = gemv ? nf_launch_gemv(a, p, G.s) : nf_launch_decode(a, G.s);
        }
        cudaError_t e2 = cudaStreamEndCapture(G.s, &graph);
        if (e == cudaSuccess)
            e = e2;
        if (e == cudaSuccess)
            e = cudaGraphInstantiate(&exec, graph, 0);
    }
    if (e == cudaSuccess && (e = cudaEventCreate(&e0)) == cudaSuccess)
        e = cudaEventCreate(&e1);
    if (e == cudaSuccess)
        what = gemv ? "gemv" : "decode";
    for (unsigned i = 0; e == cudaSuccess && i < (warmup ? warmup : 1); i++)
        e = cudaGraphLaunch(exec, G.s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(G.s);
    for (unsigned i = 0; e == cudaSuccess && i < iters; i++) {
        float ms = 0;
        if ((e = cudaEventRecord(e0, G.s)) == cudaSuccess &&
            (e = cudaGraphLaunch(exec, G.s)) == cudaSuccess &&
            (e = cudaEventRecord(e1, G.s)) == cudaSuccess &&
            (e = cudaEventSynchronize(e1)) == cudaSuccess &&
            (e = cudaEventElapsedTime(&ms, e0, e1)) == cudaSuccess)
            s[i] = (double)ms * 1e-3 / (double)copies;
    }
    if (e != cudaSuccess) {
        nf_diag_addf(d, NF_C_IO, name, "", "cuda: %s: %s", what, cudaGetErrorString(e));
        ex = NF_EXIT_IO;
    }
done:
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    for (uint64_t c = 0; w && c < copies; c++)
        cudaFree(w[c]);
    cudaFree(dx);
    cudaFree(dxf);
    cudaFree(dy);
    cudaFree(dout);
    cudaGetLastError();
    free(w);
    free(xh);
    return ex;
}

int nf_device_bench_samples(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                            unsigned warmup, unsigned iters, const char *name, double *samples_s,
                            nf_diags *d)
{
    return bench_run(op, t, obj, warmup, iters ? iters : 1, name, samples_s, d);
}

/* ---- the load path ------------------------------------------------------------ */

int nf_device_load(nf_artifact *a, const size_t *objs, size_t n, nf_dbuf **out,
                   nf_load_stats *st, nf_diags *d)
{
    if (st)
        memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (need_dev(d))
        return -1;
    const nf_catalog *c = nf_artifact_catalog(a);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c || objs[i] >= c->n_objects) {
            nf_diag_add(d, NF_C_REFERENCE, "", "object index %zu outside the catalog", objs[i]);
            return -1;
        }
        const nf_object *o = &c->objects[objs[i]];
        total += o->bytes;
    }
    uint64_t stage = env_u("NF_CUDA_STAGE_BYTES", 64u << 20);
    if (stage < 4096)
        stage = 4096;
    if (stage > total)
        stage = total ? total : 1;
    uint8_t *buf[2] = {NULL, NULL};
    cudaStream_t s[2] = {NULL, NULL};
    cudaEvent_t ev[2] = {NULL, NULL};
    int rc = -1;
    double t0 = nf_now();
    if (ck(cudaHostAlloc((void **)&buf[0], stage, cudaHostAllocDefault), "pinned staging buffer", d) ||
        ck(cudaHostAlloc((void **)&buf[1], stage, cudaHostAllocDefault), "pinned staging buffer", d))
        goto done;
    for (int b = 0; b < 2; b++)
        if (ck(cudaStreamCreateWithFlags(&s[b], cudaStreamNonBlocking), "stream", d) ||
            ck(cudaEventCreateWithFlags(&ev[b], cudaEventDisableTiming), "event", d))
            goto done;
    for (size_t i = 0; i < n; i++) {
        const nf_object *o = &c->objects[objs[i]];
        nf_dbuf *db = (nf_dbuf *)calloc(1, sizeof *db);
        if (!db) {
            nf_diag_add(d, NF_C_IO, "", "out of memory");
            goto done;
        }
        out[i] = db;
        db->bytes = o->bytes;
        if (cudaMalloc(&db->ptr, o->bytes ? o->bytes : 1) != cudaSuccess) {
            cudaGetLastError();
            db->ptr = NULL;
            nf_diag_add(d, NF_C_IO, "", "cuda: device allocation of %llu bytes for object \"%s\" failed",
                        (unsigned long long)o->bytes, o->id ? o->id : "?");
            goto done;
        }
    }
    /* piece p goes through buffer p % 2 on stream p % 2: while the copy of
     * piece p runs, piece p + 1 is read into the other buffer */
    {
        unsigned piece = 0;
        for (size_t i = 0; i < n; i++) {
            const nf_object *o = &c->objects[objs[i]];
            for (uint64_t off = 0; off < o->bytes; off += stage, piece++) {
                int b = piece & 1;
                uint64_t len = o->bytes - off < stage ? o->bytes - off : stage;
                if (ck(cudaEventSynchronize(ev[b]), "staging copy", d))
                    goto done;
                if (nf_artifact_read(a, o->offset + off, buf[b], len, d))
                    goto done;
                if (ck(cudaMemcpyAsync((uint8_t *)out[i]->ptr + off, buf[b], len,
                                       cudaMemcpyHostToDevice, s[b]), "copy to device", d) ||
                    ck(cudaEventRecord(ev[b], s[b]), "event", d))
                    goto done;
            }
        }
    }
    if (ck(cudaStreamSynchronize(s[0]), "copy to device", d) ||
        ck(cudaStreamSynchronize(s[1]), "copy to device", d))
        goto done;
    rc = 0;
    if (st) {
        st->bytes = total;
        st->read_s = nf_now() - t0;
        st->parents = (unsigned)n;
    }
done:
    for (int b = 0; b < 2; b++) {
        if (s[b]) {
            cudaStreamSynchronize(s[b]);
            cudaStreamDestroy(s[b]);
        }
        if (ev[b])
            cudaEventDestroy(ev[b]);
        if (buf[b])
            cudaFreeHost(buf[b]);
    }
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            nf_device_free(out[i]);
            out[i] = NULL;
        }
    }
    cudaGetLastError();
    return rc;
}

void nf_device_free(nf_dbuf *b)
{
    if (!b)
        return;
    if (b->ptr)
        cudaFree(b->ptr);
    free(b);
}

/* ---- kernels on resident objects ------------------------------------------------- */

static int check_call(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                      nf_kgeom *g, nf_diags *d)
{
    if (need_dev(d))
        return -1;
    if (!t || !w || geom_of(t, g)) {
        nf_diag_add(d, NF_C_UNSUPPORTED, "", "no CUDA kernel for %s/%s",
                    t ? nf_format_name(t->format) : "?", t ? nf_layout_name(t->layout) : "?");
        return -1;
    }
    if (w->bytes < t->enc.encoded_bytes) {
        nf_diag_add(d, NF_C_SIZE, "", "device object holds %llu bytes, the encoding needs %llu",
                    (unsigned long long)w->bytes, (unsigned long long)t->enc.encoded_bytes);
        return -1;
    }
    if (r0 > r1 || r1 > t->rows) {
        nf_diag_add(d, NF_C_RANGE, "", "rows [%llu, %llu) outside [0, %llu)",
                    (unsigned long long)r0, (unsigned long long)r1, (unsigned long long)t->rows);
        return -1;
    }
    return 0;
}

int nf_device_gemv(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                   const uint16_t *x, float *y, unsigned iters, double *ms, nf_diags *d)
{
    nf_kgeom g;
    if (ms)
        *ms = 0;
    if (check_call(t, w, r0, r1, &g, d))
        return -1;
    uint64_t rows = r1 - r0, K = g.cols, padded = g.nch * g.C;
    if (!rows)
        return 0;
    nf_kplan p = plan_for(&g, rows);
    uint16_t *dx = NULL;
    float *dxf = NULL, *dy = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double *s = NULL;
    int rc = -1;
    if (!iters)
        iters = 1;
    nf_kargs a;
    memset(&a, 0, sizeof a);
    if (ck(cudaMalloc((void **)&dx, K * 2), "allocation", d) ||
        ck(cudaMalloc((void **)&dxf, padded * 4), "allocation", d) ||
        ck(cudaMalloc((void **)&dy, rows * 4), "allocation", d) ||
        ck(cudaMemcpyAsync(dx, x, K * 2, cudaMemcpyHostToDevice, G.s), "copy x", d) ||
        ck(nf_launch_x(dx, K, dxf, padded, G.s), "convert x", d) ||
        ck(cudaEventCreate(&e0), "event", d) || ck(cudaEventCreate(&e1), "event", d))
        goto done;
    s = (double *)calloc(iters, sizeof *s);
    if (!s) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        goto done;
    }
    a.obj = (const uint8_t *)w->ptr;
    a.g = g;
    a.x = dxf;
    a.y = dy;
    a.n0 = r0;
    a.nrows = rows;
    a.W = p.W;
    a.ring = ~0ull;
    if (ck(nf_launch_gemv(a, p, G.s), "gemv", d)) /* warm-up */
        goto done;
    for (unsigned i = 0; i < iters; i++) {
        float t_ms = 0;
        if (ck(cudaEventRecord(e0, G.s), "event", d) || ck(nf_launch_gemv(a, p, G.s), "gemv", d) ||
            ck(cudaEventRecord(e1, G.s), "event", d) ||
            ck(cudaEventSynchronize(e1), "gemv", d) ||
            ck(cudaEventElapsedTime(&t_ms, e0, e1), "event", d))
            goto done;
        s[i] = t_ms;
    }
    if (ck(cudaMemcpy(y, dy, rows * 4, cudaMemcpyDeviceToHost), "copy y", d))
        goto done;
    qsort(s, iters, sizeof *s, cmp_d);
    if (ms)
        *ms = pct(s, iters, 0.5);
    rc = 0;
done:
    cudaStreamSynchronize(G.s);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    cudaFree(dx);
    cudaFree(dxf);
    cudaFree(dy);
    cudaGetLastError();
    free(s);
    return rc;
}

int nf_device_decode_bf16(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                          uint16_t *out, nf_diags *d)
{
    nf_kgeom g;
    if (check_call(t, w, r0, r1, &g, d))
        return -1;
    uint64_t rows = r1 - r0, el = rows * g.cols;
    if (!el)
        return 0;
    uint16_t *dout = NULL;
    int rc = -1;
    nf_kargs a;
    memset(&a, 0, sizeof a);
    a.obj = (const uint8_t *)w->ptr;
    a.g = g;
    a.n0 = r0;
    a.nrows = rows;
    a.ring = ~0ull;
    if (ck(cudaMalloc((void **)&dout, el * 2), "allocation", d))
        goto done;
    a.out = dout;
    if (ck(nf_launch_decode(a, G.s), "decode", d) ||
        ck(cudaMemcpyAsync(out, dout, el * 2, cudaMemcpyDeviceToHost, G.s), "copy out", d) ||
        ck(cudaStreamSynchronize(G.s), "decode", d))
        goto done;
    rc = 0;
done:
    cudaStreamSynchronize(G.s);
    cudaFree(dout);
    cudaGetLastError();
    return rc;
}
