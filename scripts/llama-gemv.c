/* llama-gemv.c — development-time only (never part of ninfer's build): the
 * batch-1 GEMV of llama.cpp's CPU backend (ggml_mul_mat of an [N,K] weight
 * by one column, its own kernels: vec_dot with the activations quantized
 * to q8 as ggml does), timed the way ninfer-bench times ours: weights
 * rotated through copies that together exceed --rotate bytes (cold) or one
 * copy in cache (hot), a persistent ggml thread pool, a warm-up, then the
 * 10th-percentile time of the timed runs.
 *
 * Built by scripts/bench-kernels.sh when LLAMA_CPP names a llama.cpp tree
 * with a build (its ggml/include and build/bin):
 *   cc -O2 -I$LLAMA_CPP/ggml/include scripts/llama-gemv.c -L$LLAMA_CPP/build/bin \
 *      -lggml -lggml-base -lggml-cpu -Wl,-rpath,$LLAMA_CPP/build/bin -lm -pthread -o llama-gemv
 *
 * usage: llama-gemv TYPE NxK THREADS ITERS cold|hot [ROTATE_BYTES]
 * TYPE: a ggml type name (q4_0, q4_K, q5_0, q6_K, q8_0, bf16, f16, nvfp4,
 * ...); THREADS a count or a comma list (the weights are made once, on
 * every CPU, then timed at each count in turn). Prints one line a count:
 * "type N K threads bytes p10_us gbps".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ggml.h"
#include "ggml-cpu.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ggml's quantization of rows [r0, r1), the rows split among threads */
typedef struct {
    enum ggml_type type;
    const float *src;
    void *dst;
    long long N, K, r0, r1;
} qjob;

static void *quantize_rows(void *a)
{
    qjob *j = a;
    ggml_quantize_chunk(j->type, j->src, j->dst, j->r0 * j->K, j->r1 - j->r0, j->K, NULL);
    return NULL;
}

static void quantize_par(enum ggml_type type, const float *src, void *dst, long long N, long long K)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    qjob j[64];
    pthread_t th[64];
    ggml_quantize_init(type);
    for (long i = 0; i < n; i++) {
        j[i] = (qjob){type, src, dst, N, K, N * i / n, N * (i + 1) / n};
        if (i && pthread_create(&th[i], NULL, quantize_rows, &j[i]))
            quantize_rows(&j[i]), j[i].r0 = -1;
    }
    quantize_rows(&j[0]);
    for (long i = 1; i < n; i++)
        if (j[i].r0 >= 0)
            pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: llama-gemv TYPE NxK THREADS ITERS cold|hot [ROTATE_BYTES]\n");
        return 2;
    }
    enum ggml_type type = GGML_TYPE_COUNT;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        const char *n = ggml_type_name((enum ggml_type)t);
        if (n && !strcasecmp(n, argv[1]) && ggml_blck_size((enum ggml_type)t) > 0 &&
            ggml_type_size((enum ggml_type)t) > 0)
            type = (enum ggml_type)t;
    }
    long long N = 0, K = 0;
    if (type == GGML_TYPE_COUNT || sscanf(argv[2], "%lldx%lld", &N, &K) != 2 || N <= 0 || K <= 0) {
        fprintf(stderr, "llama-gemv: bad type '%s' or shape '%s'\n", argv[1], argv[2]);
        return 2;
    }
    int tlist[16], nt = 0, iters = atoi(argv[4]);
    for (char *save = NULL, *tok = strtok_r(argv[3], ",", &save); tok && nt < 16; tok = strtok_r(NULL, ",", &save))
        if ((tlist[nt] = atoi(tok)) > 0)
            nt++;
    if (!nt || iters <= 0) {
        fprintf(stderr, "llama-gemv: bad threads '%s' or iters '%s'\n", argv[3], argv[4]);
        return 2;
    }
    int cold = strcmp(argv[5], "hot") != 0;
    double rotate = argc > 6 ? atof(argv[6]) : 256.0 * 1048576;
    if (K % ggml_blck_size(type)) {
        fprintf(stderr, "llama-gemv: K %% %lld != 0 for %s\n", (long long)ggml_blck_size(type), argv[1]);
        return 2;
    }
    size_t wbytes = ggml_row_size(type, K) * (size_t)N;
    int copies = cold ? (int)(rotate / (double)wbytes) + 1 : 1;
    if (copies > 4096)
        copies = 4096;
    size_t mem = (size_t)copies * (wbytes + 4096) + (size_t)copies * (K * 4 + N * 4 + 8192) +
                 (size_t)copies * ggml_graph_overhead() + (64u << 20);
    struct ggml_init_params ip = {mem, NULL, false};
    struct ggml_context *ctx = ggml_init(ip);
    if (!ctx) {
        fprintf(stderr, "llama-gemv: out of memory (%zu bytes)\n", mem);
        return 3;
    }
    /* the weights: Gaussian-like values quantized by ggml itself */
    float *src = malloc((size_t)N * K * sizeof *src);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (long long i = 0; i < N * K; i++) {
        float a = 0;
        for (int j = 0; j < 4; j++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            a += (float)(s >> 40) / (float)(1u << 24) - 0.5f;
        }
        src[i] = a * 0.035f;
    }
    struct ggml_tensor *x = ggml_new_tensor_1d(ctx, GGML_TYPE_F32, K);
    for (long long k = 0; k < K; k++)
        ((float *)x->data)[k] = (float)((k * 7919) % 1000) / 500.0f - 1.0f;
    struct ggml_tensor **w = calloc((size_t)copies, sizeof *w);
    struct ggml_cgraph **g = calloc((size_t)copies, sizeof *g);
    for (int c = 0; c < copies; c++) {
        w[c] = ggml_new_tensor_2d(ctx, type, K, N);
        if (c == 0) {
            if (type == GGML_TYPE_F32)
                memcpy(w[0]->data, src, (size_t)N * K * 4);
            else
                quantize_par(type, src, w[0]->data, N, K);
        } else {
            memcpy(w[c]->data, w[0]->data, wbytes);
        }
        struct ggml_tensor *y = ggml_mul_mat(ctx, w[c], x);
        g[c] = ggml_new_graph(ctx);
        ggml_build_forward_expand(g[c], y);
    }
    free(src);
    for (int ti = 0; ti < nt; ti++) {
        int threads = tlist[ti];
        struct ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        struct ggml_threadpool *tp = ggml_threadpool_new(&tpp);
        struct ggml_cplan plan = ggml_graph_plan(g[0], threads, tp);
        void *work = plan.work_size ? malloc(plan.work_size) : NULL;
        double *t = calloc((size_t)iters, sizeof *t);
        int warm = 3;
        for (int i = 0; i < warm + iters; i++) {
            int c = i % copies;
            struct ggml_cplan p = ggml_graph_plan(g[c], threads, tp);
            p.work_data = work;
            double t0 = now();
            ggml_graph_compute(g[c], &p);
            double dt = now() - t0;
            if (i >= warm)
                t[i - warm] = dt;
        }
        qsort(t, (size_t)iters, sizeof *t, cmp_d);
        double idx = 0.1 * (iters - 1);
        int lo = (int)idx;
        double p10 = lo + 1 < iters ? t[lo] + (t[lo + 1] - t[lo]) * (idx - lo) : t[lo];
        printf("%s %lld %lld %d %zu %.3f %.3f\n", ggml_type_name(type), N, K, threads, wbytes, p10 * 1e6,
               (double)wbytes / p10 / 1e9);
        fflush(stdout);
        ggml_threadpool_free(tp);
        free(work);
        free(t);
    }
    free(w);
    free(g);
    ggml_free(ctx);
    return 0;
}
