/* nf_device.cu — the CUDA backend of nf_device.h (DESIGN 11): device
 * initialisation, the device-to-device peak, benchmarks timed with events
 * (warm-up by time, an L2 flush before each sample, weights rotated) and
 * checked against the CPU reference afterwards, the load path (threads
 * reading and hashing into pinned staging buffers, copies overlapping
 * reads) and the GEMV and decode entry points over resident objects. The
 * kernels are in nf_kernels.cuh, their arithmetic in nf_kindex.h.
 *
 * Every transfer runs on a non-blocking stream the backend owns (G.s, or
 * a load worker's own), never on the legacy stream: nothing orders the
 * legacy stream with a non-blocking one, so a plain cudaMemcpy could race
 * the kernels. Work is synchronized before a graph is captured.
 *
 * Not thread-safe: one device, one set of process-wide state, as the
 * commands use it (the load's workers use their own streams and buffers).
 * Nothing here prints: problems are diagnostics. Environment (for
 * experiments and tests; all optional):
 *   NF_CUDA_DEVICE=i        device index (default 0)
 *   NF_CUDA_R=1|2|4         rows per warp group of the GEMV kernels
 *   NF_CUDA_W=1|2|4|8       warps per row group (split-K inside a block)
 *   NF_CUDA_KERNEL=scalar   the per-element GEMV kernel for every format
 *   NF_CUDA_STAGE_BYTES=n   load path staging buffer size per buffer
 *                           (default 64 MiB / workers, at least 4 MiB)
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nf_device.h"
#include "nf_devcheck.h"
#include "nf_gemv.h"
#include "nf_load.h"
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
    /* the L2 flush: a zeroed buffer of 2x L2 read through before each timed
     * launch; sink the flush kernel's never-taken store */
    void *flush;
    uint64_t flush_bytes;
    uint32_t *sink;
    /* the peak copies: two buffers of pbytes, kept for the process */
    void *pa, *pb;
    uint64_t pbytes;
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

/* Why cudaGetDeviceCount failed, in the user's terms: no driver at all,
 * a driver older than this build's runtime, or no device. */
static void no_device_why(cudaError_t e, char *why, size_t n)
{
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    if (e == cudaErrorInsufficientDriver && drv == 0)
        snprintf(why, n, "no NVIDIA driver (libcuda.so cannot be loaded)");
    else if (e == cudaErrorInsufficientDriver)
        snprintf(why, n,
                 "the NVIDIA driver supports CUDA %d.%d, older than this build's runtime "
                 "(CUDA %d.%d): update the driver or build with an older CUDA toolkit",
                 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
    else
        snprintf(why, n, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
}

/* Initialise once; on failure leave why (one line) and return -1. */
static int dev_init(char *why, size_t n)
{
    if (G.ready)
        return 0;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        no_device_why(e, why, n);
        cudaGetLastError();
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
    char why[320];
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

/* The flush buffer (2x L2, zeroed) and the sink, made once. */
static cudaError_t flush_ready(void)
{
    if (G.flush)
        return cudaSuccess;
    uint64_t b = ((uint64_t)G.prop.l2CacheSize * 2 + 0xfffff) & ~0xfffffull;
    if (b < (64ull << 20))
        b = 64ull << 20;
    cudaError_t e = cudaMalloc(&G.flush, b);
    if (e == cudaSuccess && (e = cudaMalloc((void **)&G.sink, 16)) == cudaSuccess &&
        (e = cudaMemsetAsync(G.flush, 0, b, G.s)) == cudaSuccess)
        e = cudaStreamSynchronize(G.s);
    if (e != cudaSuccess) {
        cudaFree(G.flush);
        cudaFree(G.sink);
        G.flush = NULL;
        G.sink = NULL;
        return e;
    }
    G.flush_bytes = b;
    return cudaSuccess;
}

static cudaError_t flush_l2(cudaStream_t s)
{
    cudaError_t e = flush_ready();
    return e != cudaSuccess ? e
                            : nf_launch_flush(G.flush, G.flush_bytes, G.sink, G.prop.multiProcessorCount, s);
}

/* The copy peak: `warm_s` seconds of untimed copies, then `n` timed ones;
 * GB/s = 2 x size / the p10 time (the statistic of the kernels). */
static double peak_measure(double warm_s, unsigned n)
{
    if (!G.ready)
        return 0;
    if (!G.pa) {
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) {
            cudaGetLastError();
            return 0;
        }
        uint64_t bytes = 1ull << 30;
        if ((uint64_t)G.prop.l2CacheSize * 8 > bytes)
            bytes = (uint64_t)G.prop.l2CacheSize * 8;
        if (bytes > fr / 4)
            bytes = fr / 4 & ~(uint64_t)0xfffff;
        if (!bytes || cudaMalloc(&G.pa, bytes) != cudaSuccess ||
            cudaMalloc(&G.pb, bytes) != cudaSuccess ||
            cudaMemsetAsync(G.pa, 0x5a, bytes, G.s) != cudaSuccess ||
            cudaMemsetAsync(G.pb, 0xa5, bytes, G.s) != cudaSuccess) {
            cudaFree(G.pa);
            cudaFree(G.pb);
            G.pa = G.pb = NULL;
            cudaGetLastError();
            return 0;
        }
        G.pbytes = bytes;
    }
    enum { MAXN = 64 };
    if (n > MAXN)
        n = MAXN;
    if (n < 1)
        n = 1;
    cudaEvent_t ev[2 * MAXN];
    unsigned made = 0;
    double best = 0;
    int ok = 1;
    while (ok && made < 2 * n)
        if ((ok = cudaEventCreate(&ev[made]) == cudaSuccess))
            made++;
    double t0 = nf_now();
    unsigned w = 0;
    do { /* warm-up: at least one copy */
        ok = ok && cudaMemcpyAsync(G.pb, G.pa, G.pbytes, cudaMemcpyDeviceToDevice, G.s) == cudaSuccess &&
             cudaStreamSynchronize(G.s) == cudaSuccess;
        w++;
    } while (ok && w < 1000 && nf_now() - t0 < warm_s);
    for (unsigned i = 0; ok && i < n; i++)
        ok = cudaEventRecord(ev[2 * i], G.s) == cudaSuccess &&
             cudaMemcpyAsync(G.pb, G.pa, G.pbytes, cudaMemcpyDeviceToDevice, G.s) == cudaSuccess &&
             cudaEventRecord(ev[2 * i + 1], G.s) == cudaSuccess;
    double ms[MAXN];
    if (ok && cudaEventSynchronize(ev[2 * n - 1]) == cudaSuccess) {
        for (unsigned i = 0; ok && i < n; i++) {
            float m = 0;
            ok = cudaEventElapsedTime(&m, ev[2 * i], ev[2 * i + 1]) == cudaSuccess && m > 0;
            ms[i] = m;
        }
        if (ok) {
            qsort(ms, n, sizeof *ms, cmp_d);
            best = 2.0 * (double)G.pbytes / (pct(ms, n, 0.1) * 1e-3) / 1e9;
        }
    }
    for (unsigned i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    cudaGetLastError();
    return best;
}

/* ---- the C interface ---------------------------------------------------------- */

bool nf_device_built(void) { return true; }

int nf_device_init(nf_diags *d)
{
    return need_dev(d) ? NF_EXIT_UNSUPPORTED : 0;
}

int nf_device_query(nf_device_info *info, nf_diags *d)
{
    memset(info, 0, sizeof *info);
    if (need_dev(d))
        return -1;
    snprintf(info->name, sizeof info->name, "%.127s", G.prop.name);
    info->cc_major = G.prop.major;
    info->cc_minor = G.prop.minor;
    info->sms = G.prop.multiProcessorCount;
    info->l2_bytes = (uint64_t)G.prop.l2CacheSize;
    cudaDeviceGetAttribute(&info->compute_mode, cudaDevAttrComputeMode, G.dev);
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    cudaDeviceGetAttribute(&info->clock_khz, cudaDevAttrClockRate, G.dev);
    size_t fr = 0, tot = 0;
    if (ck(cudaMemGetInfo(&fr, &tot), "memory info", d))
        return -1;
    info->mem_bytes = tot;
    info->mem_free = fr;
    return 0;
}

double nf_device_peak_gbps(void)
{
    return peak_measure(0.1, 20);
}

double nf_device_sm_mhz(void)
{
    if (!G.ready)
        return 0;
    unsigned long long *dv = NULL, hv[2] = {0, 0};
    double mhz = 0;
    if (cudaMalloc((void **)&dv, sizeof hv) == cudaSuccess) {
        nf_clock_kernel<<<1, 1, 0, G.s>>>(2000000ull, dv);
        if (cudaGetLastError() == cudaSuccess &&
            cudaMemcpyAsync(hv, dv, sizeof hv, cudaMemcpyDeviceToHost, G.s) == cudaSuccess &&
            cudaStreamSynchronize(G.s) == cudaSuccess && hv[1] > 0)
            mhz = (double)hv[0] / (double)hv[1] * 1e3;
    }
    cudaFree(dv);
    cudaGetLastError();
    return mhz;
}

/* Launch the graph until at least `runs` launches and `secs` seconds have
 * passed (doubling batches, at most 2 s); returns the error, *done the
 * launches and *took the seconds. */
static cudaError_t warm_up(cudaGraphExec_t exec, unsigned runs, double secs, unsigned *done,
                           double *took)
{
    cudaError_t e = cudaSuccess;
    double t0 = nf_now();
    unsigned k = 1, n = 0;
    while (e == cudaSuccess) {
        for (unsigned i = 0; e == cudaSuccess && i < k; i++)
            e = cudaGraphLaunch(exec, G.s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(G.s);
        n += k;
        double t = nf_now() - t0;
        if ((n >= runs && t >= secs) || t > 2.0)
            break;
        if (k < 256)
            k *= 2;
    }
    *done = n;
    *took = nf_now() - t0;
    return e;
}

/* The check of a decode benchmark: row blocks at the start, the middle and
 * the end, decoded again in place (the timed launches write a small ring)
 * and compared bit for bit (nf_devcheck_decode). */
static cudaError_t check_decode(const nf_tensor_enc *t, const uint8_t *obj, const nf_kgeom *g,
                                const uint8_t *dobj, nf_device_bench_info *in)
{
    uint64_t N = t->rows, K = t->cols, nr = K ? (1ull << 24) / K : 1;
    if (nr > 64)
        nr = 64;
    if (nr < 1)
        nr = 1;
    if (nr > N)
        nr = N;
    uint16_t *dchk = NULL, *h = (uint16_t *)malloc(nr * K * 2);
    cudaError_t e = h ? cudaMalloc((void **)&dchk, nr * K * 2) : (cudaError_t)cudaErrorMemoryAllocation;
    uint64_t starts[3] = {0, N / 2 >= nr / 2 ? N / 2 - nr / 2 : 0, N - nr};
    in->check = 0;
    for (int b = 0; e == cudaSuccess && b < 3; b++) {
        nf_kargs a;
        memset(&a, 0, sizeof a);
        a.obj = dobj;
        a.g = *g;
        a.n0 = starts[b];
        a.nrows = nr;
        a.out = dchk;
        a.ring = ~0ull;
        nf_devcheck_result r;
        if ((e = nf_launch_decode(a, G.s)) != cudaSuccess ||
            (e = cudaMemcpyAsync(h, dchk, nr * K * 2, cudaMemcpyDeviceToHost, G.s)) != cudaSuccess ||
            (e = cudaStreamSynchronize(G.s)) != cudaSuccess)
            break;
        if (nf_devcheck_decode(t, obj, starts[b], starts[b] + nr, h, &r) || !r.ok) {
            if (in->check == 0)
                in->worst_row = r.worst_row;
            in->check = 1;
            in->max_err += r.max_err;
        }
        in->rows_checked += r.rows;
    }
    in->bound = 0;
    cudaFree(dchk);
    free(h);
    return e;
}

/* Time op over obj: s[0..iters) receives seconds per launch (unsorted).
 * Errors are diagnostics (file: name); returns an exit status. */
static int bench_run(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                     unsigned warmup, unsigned iters, bool check, const char *name, double *s,
                     nf_device_bench_info *in, nf_diags *d)
{
    memset(in, 0, sizeof *in);
    in->check = -1;
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
    cudaError_t e = cudaMemGetInfo(&fr, &tot);
    if (e != cudaSuccess) {
        nf_diag_addf(d, NF_C_IO, name, "", "cuda: memory info: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return NF_EXIT_IO;
    }
    /* copies side by side (256-byte strides, as objects lie in a payload)
     * that together exceed 4x L2, so one sample reads 4x L2 of distinct
     * bytes; with the flush before each sample no byte is timed from L2,
     * whatever the object's size (tiny ones hit the 4096 cap, harmless
     * then: every copy is read once per sample, after the flush) */
    uint64_t stride = (eb + 255) & ~255ull;
    if (!stride)
        stride = 256;
    uint64_t want = (uint64_t)G.prop.l2CacheSize * 4;
    if (want < (256ull << 20))
        want = 256ull << 20;
    uint64_t copies = (want + stride - 1) / stride;
    if (copies < 2)
        copies = 2;
    if (copies > 4096)
        copies = 4096;
    while (copies > 1 && copies * stride > fr / 2)
        copies--;
    if (stride > fr / 2) {
        nf_diag_addf(d, NF_C_IO, name, "", "cuda: %llu bytes of weights do not fit in the %llu "
                     "bytes of free device memory", (unsigned long long)eb, (unsigned long long)fr);
        return NF_EXIT_IO;
    }
    in->copies = copies;
    nf_kplan p = plan_for(&g, rows);
    uint64_t padded = g.nch * g.C;
    uint64_t ring = 16, outn = ring * K > 65536 ? ring * K : 65536;
    uint8_t *w = NULL;
    uint16_t *xh = (uint16_t *)malloc((K ? K : 1) * sizeof *xh);
    float *yh = NULL;
    uint16_t *dx = NULL, *dout = NULL;
    float *dxf = NULL, *dy = NULL;
    enum { B = 32 };
    cudaEvent_t ev[2 * B];
    unsigned nev = 0;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    const char *what = "allocation";
    int ex = 0;
    memset(ev, 0, sizeof ev);
    if (!xh) {
        nf_diag_addf(d, NF_C_IO, name, "", "out of memory");
        ex = NF_EXIT_IO;
        goto done;
    }
    for (uint64_t k = 0; k < K; k++)
        xh[k] = (uint16_t)(0x3f80 ^ (k & 0x807f)); /* as the CPU bench: +-1.x */
    if ((e = cudaMalloc((void **)&w, copies * stride)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dx, (K ? K : 1) * 2)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dxf, (padded ? padded : 1) * 4)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dy, (rows ? rows : 1) * 4)) == cudaSuccess &&
        (e = cudaMalloc((void **)&dout, outn * 2)) == cudaSuccess &&
        (e = flush_ready()) == cudaSuccess) {
        /* every upload on G.s, in order with the kernels; the copies by
         * doubling: [0, c) to [c, 2c) */
        what = "upload";
        e = cudaMemsetAsync(w, 0, stride, G.s); /* the padding after copy 0 too */
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(w, obj, eb, cudaMemcpyHostToDevice, G.s);
        for (uint64_t c = 1; c < copies && e == cudaSuccess; c *= 2) {
            uint64_t m = copies - c < c ? copies - c : c;
            e = cudaMemcpyAsync(w + c * stride, w, m * stride, cudaMemcpyDeviceToDevice, G.s);
        }
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(dx, xh, K * 2, cudaMemcpyHostToDevice, G.s);
        if (e == cudaSuccess)
            e = nf_launch_x(dx, K, dxf, padded, G.s);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(G.s); /* before the capture */
    }
    if (e == cudaSuccess) {
        /* one graph: a launch over each copy in turn */
        what = "graph capture";
        e = cudaStreamBeginCapture(G.s, cudaStreamCaptureModeThreadLocal);
        for (uint64_t c = 0; c < copies && e == cudaSuccess; c++) {
            nf_kargs a;
            memset(&a, 0, sizeof a);
            a.obj = w + c * stride;
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
    while (e == cudaSuccess && nev < 2 * B)
        if ((e = cudaEventCreate(&ev[nev])) == cudaSuccess)
            nev++;
    if (e == cudaSuccess) {
        what = gemv ? "gemv" : "decode";
        e = warm_up(exec, warmup ? warmup : 1, 0.15, &in->warmup_runs, &in->warmup_s);
    }
    if (e == cudaSuccess)
        in->peak_before_gbps = peak_measure(0, 20);
    /* samples in batches of B: flush, event, graph, event */
    for (unsigned i0 = 0; e == cudaSuccess && i0 < iters; i0 += B) {
        unsigned nb = iters - i0 < (unsigned)B ? iters - i0 : (unsigned)B;
        for (unsigned j = 0; e == cudaSuccess && j < nb; j++)
            if ((e = flush_l2(G.s)) == cudaSuccess && (e = cudaEventRecord(ev[2 * j], G.s)) == cudaSuccess &&
                (e = cudaGraphLaunch(exec, G.s)) == cudaSuccess)
                e = cudaEventRecord(ev[2 * j + 1], G.s);
        if (e == cudaSuccess)
            e = cudaEventSynchronize(ev[2 * nb - 1]);
        for (unsigned j = 0; e == cudaSuccess && j < nb; j++) {
            float ms = 0;
            if ((e = cudaEventElapsedTime(&ms, ev[2 * j], ev[2 * j + 1])) == cudaSuccess)
                s[i0 + j] = (double)ms * 1e-3 / (double)copies;
        }
    }
    if (e == cudaSuccess) {
        in->peak_after_gbps = peak_measure(0, 20);
        in->sm_mhz = nf_device_sm_mhz();
    }
    if (e == cudaSuccess && check && gemv) {
        /* y of the last launch (the last copy's), sampled rows against the
         * CPU reference within the kernels' bound */
        what = "check";
        yh = (float *)malloc((rows ? rows : 1) * sizeof *yh);
        uint64_t *sr = (uint64_t *)malloc(256 * sizeof *sr);
        if (!yh || !sr) {
            e = cudaErrorMemoryAllocation;
        } else if ((e = cudaMemcpyAsync(yh, dy, rows * 4, cudaMemcpyDeviceToHost, G.s)) ==
                       cudaSuccess &&
                   (e = cudaStreamSynchronize(G.s)) == cudaSuccess) {
            size_t ns = nf_devcheck_sample_rows(rows, sr, 256);
            nf_devcheck_result r;
            if (nf_devcheck_gemv(t, obj, xh, yh, sr, ns, nf_k_gemv_bound_units(&g), &r) == 0) {
                in->check = r.ok ? 0 : 1;
                in->rows_checked = r.rows;
                in->max_err = r.max_err;
                in->bound = r.bound;
                in->worst_row = r.worst_row;
            } else {
                nf_diag_addf(d, NF_C_IO, name, "", "out of memory for the check");
                ex = NF_EXIT_IO;
            }
        }
        free(sr);
    } else if (e == cudaSuccess && check) {
        what = "check";
        e = check_decode(t, obj, &g, w, in);
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
    for (unsigned i = 0; i < nev; i++)
        cudaEventDestroy(ev[i]);
    cudaFree(w);
    cudaFree(dx);
    cudaFree(dxf);
    cudaFree(dy);
    cudaFree(dout);
    cudaGetLastError();
    free(xh);
    free(yh);
    return ex;
}

int nf_device_bench_samples(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                            unsigned warmup, unsigned iters, bool check, const char *name,
                            double *samples_s, nf_device_bench_info *info, nf_diags *d)
{
    nf_device_bench_info local;
    return bench_run(op, t, obj, warmup, iters ? iters : 1, check, name, samples_s,
                     info ? info : &local, d);
}

/* ---- the load path ------------------------------------------------------------ */

/* A load worker: two pinned staging buffers, its stream, an event per
 * buffer (the copy out of it done), pieces handed on so far. */
typedef struct {
    uint8_t *buf[2];
    cudaStream_t s;
    cudaEvent_t ev[2];
    unsigned long long pieces;
} load_worker;

typedef struct {
    load_worker *w;
    nf_dbuf **out;
} load_ctx;

/* nf_load_io.piece_buf: the worker's next buffer, once its last copy is done */
static uint8_t *stage_buf(void *ctx, unsigned worker, size_t k, uint64_t off, size_t n,
                          nf_diags *d)
{
    (void)k, (void)off, (void)n;
    load_worker *lw = &((load_ctx *)ctx)->w[worker];
    int b = (int)(lw->pieces & 1);
    if (ck(cudaEventSynchronize(lw->ev[b]), "staging copy", d))
        return NULL;
    return lw->buf[b];
}

/* nf_load_io.piece_done: the piece read (and hashed) goes to the device */
static int stage_done(void *ctx, unsigned worker, size_t k, uint64_t off, uint8_t *buf, size_t n,
                      nf_diags *d)
{
    load_ctx *lc = (load_ctx *)ctx;
    load_worker *lw = &lc->w[worker];
    int b = (int)(lw->pieces & 1);
    if (ck(cudaMemcpyAsync((uint8_t *)lc->out[k]->ptr + off, buf, n, cudaMemcpyHostToDevice, lw->s),
           "copy to device", d) ||
        ck(cudaEventRecord(lw->ev[b], lw->s), "event", d))
        return -1;
    lw->pieces++;
    return 0;
}

int nf_device_load(nf_artifact *a, const size_t *objs, size_t n, unsigned threads,
                   bool no_digests, nf_dbuf **out, nf_load_stats *st, nf_diags *d)
{
    nf_load_stats local;
    if (!st)
        st = &local;
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
        total += c->objects[objs[i]].bytes;
    }
    unsigned cpus = nf_cpu_count();
    nf_load_io io;
    memset(&io, 0, sizeof io);
    io.threads = threads ? threads : (cpus < 4 ? cpus : 4);
    io.no_digests = no_digests;
    unsigned nw = nf_load_workers(&io, n);
    io.threads = nw;
    uint64_t stage = env_u("NF_CUDA_STAGE_BYTES", 0);
    if (!stage) {
        stage = (64ull << 20) / nw;
        if (stage < (4ull << 20))
            stage = 4ull << 20;
    }
    if (stage < 4096)
        stage = 4096;
    if (stage > total)
        stage = total ? total : 1;
    load_worker *lw = (load_worker *)calloc(nw, sizeof *lw);
    load_ctx lc = {lw, out};
    int rc = -1;
    if (!lw) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    /* allocations first: the load's clock starts at the first read */
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
    for (unsigned k = 0; k < nw; k++)
        for (int b = 0; b < 2; b++)
            if (ck(cudaHostAlloc((void **)&lw[k].buf[b], stage, cudaHostAllocDefault),
                   "pinned staging buffer", d) ||
                (b == 0 && ck(cudaStreamCreateWithFlags(&lw[k].s, cudaStreamNonBlocking), "stream", d)) ||
                ck(cudaEventCreateWithFlags(&lw[k].ev[b], cudaEventDisableTiming), "event", d))
                goto done;
    {
        io.piece_buf = stage_buf;
        io.piece_done = stage_done;
        io.ctx = &lc;
        io.piece_bytes = stage;
        double t0 = nf_now();
        int lrc = nf_load_parents(a, objs, n, &io, st, d);
        int src = 0;
        for (unsigned k = 0; k < nw; k++)
            src |= ck(cudaStreamSynchronize(lw[k].s), "copy to device", d);
        st->read_s = nf_now() - t0;
        rc = lrc || src ? -1 : 0;
    }
done:
    for (unsigned k = 0; k < nw; k++) {
        if (lw[k].s) {
            cudaStreamSynchronize(lw[k].s);
            cudaStreamDestroy(lw[k].s);
        }
        for (int b = 0; b < 2; b++) {
            if (lw[k].ev[b])
                cudaEventDestroy(lw[k].ev[b]);
            if (lw[k].buf[b])
                cudaFreeHost(lw[k].buf[b]);
        }
    }
    free(lw);
    if (rc) {
        for (size_t i = 0; i < n; i++) {
            nf_device_free(out[i]);
            out[i] = NULL;
        }
    }
    cudaGetLastError();
    return rc;
}

int nf_device_upload(const void *host, uint64_t n, nf_dbuf **out, nf_diags *d)
{
    *out = NULL;
    if (need_dev(d))
        return -1;
    nf_dbuf *db = (nf_dbuf *)calloc(1, sizeof *db);
    if (!db) {
        nf_diag_add(d, NF_C_IO, "", "out of memory");
        return -1;
    }
    db->bytes = n;
    if (ck(cudaMalloc(&db->ptr, n ? n : 1), "allocation", d) ||
        ck(cudaMemcpyAsync(db->ptr, host, n, cudaMemcpyHostToDevice, G.s), "upload", d) ||
        ck(cudaStreamSynchronize(G.s), "upload", d)) {
        nf_device_free(db);
        cudaGetLastError();
        return -1;
    }
    *out = db;
    return 0;
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
        ck(flush_ready(), "allocation", d) ||
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
    {
        /* warm-up: at least one launch and 20 ms */
        double t0 = nf_now();
        unsigned wn = 0;
        do {
            if (ck(nf_launch_gemv(a, p, G.s), "gemv", d) ||
                ck(cudaStreamSynchronize(G.s), "gemv", d))
                goto done;
        } while (++wn < 10000 && nf_now() - t0 < 0.02);
    }
    /* each timed launch after an L2 flush outside its events: a view under
     * the L2 size would otherwise be read from cache */
    for (unsigned i = 0; i < iters; i++) {
        float t_ms = 0;
        if (ck(flush_l2(G.s), "flush", d) || ck(cudaEventRecord(e0, G.s), "event", d) ||
            ck(nf_launch_gemv(a, p, G.s), "gemv", d) || ck(cudaEventRecord(e1, G.s), "event", d) ||
            ck(cudaEventSynchronize(e1), "gemv", d) ||
            ck(cudaEventElapsedTime(&t_ms, e0, e1), "event", d))
            goto done;
        s[i] = t_ms;
    }
    if (ck(cudaMemcpyAsync(y, dy, rows * 4, cudaMemcpyDeviceToHost, G.s), "copy y", d) ||
        ck(cudaStreamSynchronize(G.s), "copy y", d))
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
