/* nf_fp.h — the small floating-point encodings of ninfer-formats(7) Formats
 * (spec 6.1), converted to and from IEEE binary32, written once for every
 * codec, command and test.
 *
 *   FP16     IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
 *   BF16     the top 16 bits of a binary32: 1 sign, 8 exponent, 7 mantissa.
 *   E4M3FN   1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities;
 *            S.1111.111 (0x7f, 0xff) is NaN; largest finite magnitude 448
 *            (0x7e); smallest subnormal 2^-9.
 *   E2M1     a 4-bit code: bit 3 sign, bits 2..1 exponent, bit 0 mantissa;
 *            magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6; no NaN or infinity.
 *
 * Decoding (x_to_f32) is exact for every code point: each of these values is
 * a binary32 value. NaN codes decode to a NaN of the same sign (FP16/BF16
 * keep their payload bits; E4M3 gives the quiet NaN 0x7fc00000 | sign).
 *
 * Encoding (f32_to_x) rounds to nearest, ties to even (the code whose
 * lowest bit is 0), computed with integer arithmetic only, so the result
 * does not depend on the FPU rounding mode:
 *   FP16, BF16: IEEE overflow: magnitudes that round past the largest finite
 *     value give +-infinity; NaN gives a quiet NaN of the same sign.
 *   E4M3FN: saturating: every magnitude >= 448, infinity included, gives
 *     +-448 (0x7e/0xfe); NaN gives 0x7f | sign.
 *   E2M1: saturating at +-6; NaN gives +0 (code 0): E2M1 has no NaN, and the
 *     encoders reject non-finite input before they get here.
 * Signed zero keeps its sign in every direction.
 *
 * All functions are static inline and pure; include this header anywhere
 * (C or C++/CUDA host code).
 */
#ifndef NF_FP_H
#define NF_FP_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The bit pattern of a binary32 and back (no aliasing games). */
static inline uint32_t nf_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float nf_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Internal: round mant * 2^-shift to the nearest integer, ties to even
 * (shift >= 1, mant < 2^24); the subnormal results below use it. */
static inline uint32_t nf_fp_rne_shift_(uint32_t mant, unsigned shift)
{
    if (shift > 25)
        return 0;
    uint32_t q = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

/* ---- FP16 -------------------------------------------------------------- */

/* FP16 code -> f32, exact (the q-format group scale s, ninfer-formats(7)
 * Formats). */
static inline float nf_fp16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return nf_f32_from_bits(s | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 0x1p-24f; /* exact: m < 2^10 */
        return s ? -v : v;
    }
    return nf_f32_from_bits(s | ((e + 112) << 23) | (m << 13));
}

/* f32 -> FP16, round to nearest even; overflow -> +-inf; NaN -> quiet NaN
 * (ninfer-formats(7) Formats: encoders round scales to FP16 first). */
static inline uint16_t nf_f32_to_fp16(float f)
{
    uint32_t u = nf_f32_bits(f);
    uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(s | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 = 65504 + half an ulp: rounds to inf */
        return (uint16_t)(s | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: FP16 normal */
        uint32_t r = a - 0x38000000u; /* rebias 127 -> 15 */
        r += 0xfffu + ((r >> 13) & 1u);
        return (uint16_t)(s | (r >> 13));
    }
    uint32_t e = a >> 23;
    if (e == 0)
        return s; /* binary32 subnormals are far below 2^-25 */
    /* value = mant * 2^(e-150); in units of 2^-24: mant * 2^(e-126) */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    return (uint16_t)(s | nf_fp_rne_shift_(mant, 126 - e));
}

/* ---- BF16 -------------------------------------------------------------- */

/* BF16 code -> f32, exact (bf16 tensors, the fp8 row scale r;
 * ninfer-formats(7) Formats). */
static inline float nf_bf16_to_f32(uint16_t b)
{
    return nf_f32_from_bits((uint32_t)b << 16);
}

/* f32 -> BF16, round to nearest even; overflow -> +-inf; NaN -> quiet NaN
 * (the top payload bits kept, the quiet bit set). ninfer-formats(7) Formats. */
static inline uint16_t nf_f32_to_bf16(float f)
{
    uint32_t u = nf_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- E4M3FN ------------------------------------------------------------ */

#define NF_E4M3_MAX 448.0f

/* True for the two E4M3FN NaN codes 0x7f and 0xff (invalid fp8 codes and
 * nvfp4 block scales; ninfer-formats(7) Formats). */
static inline int nf_e4m3_is_nan(uint8_t c)
{
    return (c & 0x7fu) == 0x7fu;
}

/* E4M3FN code -> f32, exact; NaN codes -> quiet NaN with the code's sign
 * (fp8 codes, nvfp4 block scales b; ninfer-formats(7) Formats). */
static inline float nf_e4m3_to_f32(uint8_t c)
{
    uint32_t s = (uint32_t)(c & 0x80u) << 24;
    uint32_t e = (c >> 3) & 0xfu, m = c & 7u;
    if (e == 15 && m == 7)
        return nf_f32_from_bits(s | 0x7fc00000u);
    if (e == 0) {
        float v = (float)m * 0x1p-9f;
        return s ? -v : v;
    }
    return nf_f32_from_bits(s | ((e + 120) << 23) | (m << 20));
}

/* f32 -> E4M3FN, round to nearest even, saturating at +-448 (infinity too);
 * NaN -> 0x7f | sign. The encoders of ninfer-formats(7) Formats (fp8 codes,
 * nvfp4 block scales). */
static inline uint8_t nf_f32_to_e4m3(float f)
{
    uint32_t u = nf_f32_bits(f);
    uint8_t s = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint8_t)(s | 0x7fu);
    if (a >= 0x43e00000u) /* >= 448 */
        return (uint8_t)(s | 0x7eu);
    if (a >= 0x3c800000u) { /* >= 2^-6: E4M3 normal */
        uint32_t r = a - (120u << 23); /* rebias 127 -> 7 */
        r += 0x7ffffu + ((r >> 20) & 1u);
        return (uint8_t)(s | (r >> 20)); /* at most 0x7e: a < 448 */
    }
    uint32_t e = a >> 23;
    if (e == 0)
        return s;
    /* in units of 2^-9: mant * 2^(e-150+9) */
    uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    return (uint8_t)(s | nf_fp_rne_shift_(mant, 141 - e));
}

/* True when f, rounded to nearest even as if E4M3FN's exponent went on,
 * lands above 448: the value saturates (encoders count such scales and
 * codes: ninfer-pack(1) --report). 448 = 1.110b x 2^8 has an even last
 * bit, so 464, the midpoint to the next step 480, rounds down to it: only
 * |f| > 464 (an infinity too) saturates, never 448.00003, a block scale's
 * usual rounding error. NaN does not. */
static inline int nf_e4m3_saturates(float f)
{
    uint32_t a = nf_f32_bits(f) & 0x7fffffffu;
    return a > 0x43e80000u && a <= 0x7f800000u; /* 464 < |f| <= inf */
}

/* ---- E2M1 -------------------------------------------------------------- */

/* E2M1 code (low 4 bits of c) -> f32, exact (nvfp4 codes, ninfer-formats(7)
 * Formats). */
static inline float nf_e2m1_to_f32(uint8_t c)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float v = mag[c & 7u];
    return (c & 8u) ? -v : v;
}

/* f32 -> E2M1 code (0..15), round to nearest even, saturating at +-6;
 * NaN -> 0. The thresholds are the midpoints between neighbours; a tie goes
 * to the code with bit 0 clear. The encoders of ninfer-formats(7) Formats
 * (nvfp4 codes). */
static inline uint8_t nf_f32_to_e2m1(float f)
{
    uint32_t u = nf_f32_bits(f);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return 0;
    uint8_t s = (uint8_t)((u >> 28) & 8u);
    float x = nf_f32_from_bits(a);
    uint8_t c;
    if (x <= 0.25f)
        c = 0;
    else if (x < 0.75f)
        c = 1;
    else if (x <= 1.25f)
        c = 2;
    else if (x < 1.75f)
        c = 3;
    else if (x <= 2.5f)
        c = 4;
    else if (x < 3.5f)
        c = 5;
    else if (x <= 5.0f)
        c = 6;
    else
        c = 7;
    return (uint8_t)(s | c);
}

/* True when f saturates in E2M1 (as nf_e4m3_saturates): 6 = 1.1b x 2^2
 * has an odd last bit, so 7, the midpoint to the next step 8, rounds up:
 * |f| >= 7 (an infinity too) saturates. NaN does not. */
static inline int nf_e2m1_saturates(float f)
{
    uint32_t a = nf_f32_bits(f) & 0x7fffffffu;
    return a >= 0x40e00000u && a <= 0x7f800000u; /* 7 <= |f| <= inf */
}

#ifdef __cplusplus
}
#endif
#endif
