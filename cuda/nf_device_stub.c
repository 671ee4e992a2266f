/* nf_device_stub.c — the device backend of a build without CUDA. */
#include "nf_device.h"
#include "nf_diag.h"

extern const char *nf_prog;

bool nf_device_built(void) { return false; }

int nf_device_init(FILE *err)
{
    fprintf(err, "%s: unsupported: built without CUDA (rebuild where nvcc is installed)\n",
            nf_prog);
    return NF_EXIT_UNSUPPORTED;
}

double nf_device_peak_gbps(void) { return 0; }

int nf_device_bench(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                    unsigned warmup, unsigned iters, const char *name)
{
    (void)op, (void)t, (void)obj, (void)warmup, (void)iters, (void)name;
    return NF_EXIT_UNSUPPORTED;
}
