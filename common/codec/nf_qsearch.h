/* nf_qsearch.h — internal to the library (nf_codec.c): the arithmetic of
 * the q-format scale search (ninfer-formats(7) Formats), written once in
 * scalar code (the definition) and in AVX2 / AVX-512 with the same operations
 * lane by lane, so every ISA gives the same numbers bit for bit (t_codec
 * checks it).
 *
 * A group is n <= 128 f32 values x (finite), zero-padded to L = n rounded
 * up to 8 (the padding adds exactly 0); codes lie in [qmin, qmax]; a
 * candidate scale is an FP16 word sb with s = fp16(sb) finite.
 */
#ifndef NF_QSEARCH_H
#define NF_QSEARCH_H

#include <stdint.h>
#include "nf_codec.h"

/* For ranking candidates: with inv = 1/s in f32 (0 for s = 0), per element
 * t = clamp(x * inv, qmin, qmax), c = (t + 1.5*2^23) - 1.5*2^23 (nearest
 * even), d = x - c*s, all in f32 without FMA, d*d summed in eight f32 lane
 * sums (lane j: the elements i % 8 == j, in order), combined as
 * ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) in f64. Evaluates the
 * nc candidates sb[0..nc) into err[0..nc). */
void nf_qs_fast(const float *x, unsigned L, int qmin, int qmax, const uint16_t *sb,
                unsigned nc, double *err, nf_isa isa);

/* The exact evaluation: codes c = the nearest even integer to the real
 * quotient x/s, clamped to the range (one whose nearest even integer is
 * outside it saturates and counts in *sat: beyond qmax + 1/2, or at it when
 * qmax is odd; likewise below qmin), c = 0 for s = 0; the squared
 * error sum of (x - f32(c*s))^2 in f64, in eight lane sums (lane j: i % 8
 * == j, in order) combined as in nf_qs_fast. The quotient is formed as
 * x * (1/s) in f64 and taken as x/s exactly where that product lies within
 * 2^-30 of a half-integer (the quotient of an f32 value by an FP16 scale,
 * 11 significant bits, is a half-integer or at least 2^-25 away from one;
 * the product is within 2^-45 of it), so the codes are those of the
 * division. codes[0..n), *sat incremented (sat may be NULL). */
double nf_qs_exact(const float *x, unsigned n, int qmin, int qmax, uint16_t sb, int *codes,
                   uint64_t *sat, nf_isa isa);

/* The least-squares refit of a candidate: with the codes c of nf_qs_fast
 * (the ranking evaluation) for sb, *cx = sum c*x in f64 in eight lane sums
 * combined as above, *cc = sum c*c exactly. */
void nf_qs_refit(const float *x, unsigned L, int qmin, int qmax, uint16_t sb, double *cx,
                 int64_t *cc, nf_isa isa);

/* nf_qs_fast's error of one candidate and, in the same pass, its refit
 * sums (as nf_qs_refit): *err, *cx, *cc. */
void nf_qs_fast_refit(const float *x, unsigned L, int qmin, int qmax, uint16_t sb, double *err,
                      double *cx, int64_t *cc, nf_isa isa);

/* Whether every value of x[0..K) is finite. */
bool nf_qs_finite(const float *x, uint64_t K, nf_isa isa);

/* The sum of squares of a row, a group at a time: adds x[i]^2 (in f64) to
 * l[i % 8] for i in [0, n), in i order. Called for a row's groups in order
 * (each starting at a multiple of 8), it gives the row's eight lane sums
 * (lane j: the columns k % 8 == j, in k order); nf_qs_combine8 combines
 * them. */
void nf_qs_sq8(const float *x, unsigned n, double *l, nf_isa isa);

/* ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) in f64. */
double nf_qs_combine8(const double *l);

/* The grid of candidate scales: out[i] = FP16 of the f32 rounding of the
 * f64 quotient m / d[i] (round to nearest even both times), an infinite
 * one saturating at +-65504 (0x7bff | sign). n <= 32. */
void nf_qs_grid(double m, const double *d, unsigned n, uint16_t *out, nf_isa isa);

/* The largest magnitude of x[0..n) and the first element that has it. */
float nf_qs_amax(const float *x, unsigned n, float *first, nf_isa isa);

#endif
