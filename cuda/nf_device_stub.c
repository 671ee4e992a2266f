/* nf_device_stub.c — the device backend of a build without CUDA. */
#include <string.h>

#include "nf_device.h"
#include "nf_diag.h"

bool nf_device_built(void) { return false; }

int nf_device_init(nf_diags *d)
{
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA (rebuild where nvcc is installed)");
    return NF_EXIT_UNSUPPORTED;
}

int nf_device_query(nf_device_info *info, nf_diags *d)
{
    memset(info, 0, sizeof *info);
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA");
    return -1;
}

double nf_device_peak_gbps(void) { return 0; }

double nf_device_sm_mhz(void) { return 0; }

int nf_device_bench_samples(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                            unsigned warmup, unsigned iters, bool check, const char *name,
                            double *samples_s, nf_device_bench_info *info, nf_diags *d)
{
    (void)op, (void)t, (void)obj, (void)warmup, (void)iters, (void)check, (void)samples_s;
    if (info)
        memset(info, 0, sizeof *info);
    nf_diag_addf(d, NF_C_UNSUPPORTED, name, "", "built without CUDA");
    return NF_EXIT_UNSUPPORTED;
}

int nf_device_load(nf_artifact *a, const size_t *objs, size_t n, unsigned threads,
                   bool no_digests, nf_dbuf **out, nf_load_stats *st, nf_diags *d)
{
    (void)a, (void)objs, (void)threads, (void)no_digests;
    for (size_t i = 0; i < n; i++)
        out[i] = NULL;
    if (st)
        memset(st, 0, sizeof *st);
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA");
    return -1;
}

int nf_device_upload(const void *host, uint64_t n, nf_dbuf **out, nf_diags *d)
{
    (void)host, (void)n;
    *out = NULL;
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA");
    return -1;
}

void nf_device_free(nf_dbuf *b) { (void)b; }

int nf_device_gemv(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                   const uint16_t *x, float *y, unsigned iters, double *ms, nf_diags *d)
{
    (void)t, (void)w, (void)r0, (void)r1, (void)x, (void)y, (void)iters, (void)ms;
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA");
    return -1;
}

int nf_device_decode_bf16(const nf_tensor_enc *t, const nf_dbuf *w, uint64_t r0, uint64_t r1,
                          uint16_t *out, nf_diags *d)
{
    (void)t, (void)w, (void)r0, (void)r1, (void)out;
    nf_diag_add(d, NF_C_UNSUPPORTED, "", "built without CUDA");
    return -1;
}
