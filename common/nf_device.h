/* nf_device.h — the device backend seen from C (DESIGN 11). Implemented in
 * cuda/ by nvcc when the CUDA toolkit is present, or by a stub that reports
 * "built without CUDA" (exit 4) when it is not (`make CUDA=0` forces the
 * stub). Functions print their own one-line errors to the stream given to
 * nf_device_init, prefixed with the program name.
 */
#ifndef NF_DEVICE_H
#define NF_DEVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* True when this build has the CUDA backend (not whether a GPU exists). */
bool nf_device_built(void);

/* Find and initialise a device. Returns 0, or NF_EXIT_UNSUPPORTED (4)
 * after printing why ("built without CUDA", "no CUDA device"). */
int nf_device_init(FILE *err);

/* Peak bandwidth of the device in GB/s: a device-to-device copy of a
 * buffer larger than L2, counted as 2 x size per second (DESIGN 11). */
double nf_device_peak_gbps(void);

/* Time op ("gemv" or "decode") over the encoded object obj on the device
 * (warmup untimed runs, then iters timed with events, L2 flushed or
 * weights rotated between iterations) and print one result line like
 * ninfer-bench's CPU cases. Returns an exit status. */
int nf_device_bench(const char *op, const nf_tensor_enc *t, const uint8_t *obj,
                    unsigned warmup, unsigned iters, const char *name);

#ifdef __cplusplus
}
#endif
#endif
