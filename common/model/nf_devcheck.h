/* nf_devcheck.h — a device kernel's results checked against the CPU
 * reference on sampled rows (ninfer-bench(1)): what the CUDA benchmark and the
 * device tests compare after timing a large shape, kept host-side so that
 * it is tested without a GPU (on the CPU kernels' outputs).
 *
 * Non-finite results compare by class: where the reference is NaN the
 * result must be NaN, where it is +-Inf the result must be the same
 * infinity; a finite reference with a non-finite result fails.
 */
#ifndef NF_DEVCHECK_H
#define NF_DEVCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nf_codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows a check samples out of N: the first 64, the last 64 (where
 * index arithmetic overflows first), and up to max - 128 rows spread
 * evenly between them, each nudged by a fixed pseudo-random offset so that
 * the sample does not fall on one residue of any block size. rows[] gets
 * them sorted and distinct; returns how many (min(N, max)). max >= 128. */
size_t nf_devcheck_sample_rows(uint64_t N, uint64_t *rows, size_t max);

typedef struct {
    uint64_t rows;      /* rows compared */
    uint64_t bad;       /* rows (GEMV) or elements (decode) that failed */
    uint64_t worst_row; /* the row of the largest err / bound (the first bad one
                           when a non-finite value failed) */
    double max_err;     /* that row's |y - ref| (NaN for a NaN mismatch); decode:
                           the number of elements whose bf16 bits differ */
    double bound;       /* that row's bound (decode: 0) */
    bool ok;            /* bad == 0 */
} nf_devcheck_result;

/* GEMV: compare y[rows[i]] (y holds all t->rows results) with the
 * reference y_ref = W x (nf_gemv_ref_rows over the rows' own range, x the
 * t->cols bf16 activations) within units * 2^-24 * sum_k |w_nk x_k| +
 * 2^-24 |y_ref| + 2^-140, units the kernel's documented count of roundings
 * (nf_kernels.cuh). obj holds the encoded object (t->enc.encoded_bytes).
 * Returns 0 (the verdict in *r), or a negative NF_CODEC_E* error. */
int nf_devcheck_gemv(const nf_tensor_enc *t, const uint8_t *obj, const uint16_t *x,
                     const float *y, const uint64_t *rows, size_t n, double units,
                     nf_devcheck_result *r);

/* Decode: got holds rows [r0, r1) decoded to bf16 ((r1 - r0) * cols
 * words); they must equal nf_decode_rows_bf16 bit for bit. Returns 0 or a
 * negative NF_CODEC_E* error. */
int nf_devcheck_decode(const nf_tensor_enc *t, const uint8_t *obj, uint64_t r0, uint64_t r1,
                       const uint16_t *got, nf_devcheck_result *r);

/* One result against its reference and bound, by the rule above: true when
 * it passes; *err receives |y - ref| (NaN where a non-finite pair fails). */
bool nf_devcheck_value(double y, double ref, double bound, double *err);

#ifdef __cplusplus
}
#endif
#endif
