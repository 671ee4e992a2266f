/* t_fp.c — FP16, BF16, E4M3FN and E2M1 conversions (nf_fp.h, DESIGN 7 and
 * 12): decode checked on every code point against a definition written
 * from the format parameters with ldexp; round trips on every code point;
 * encode from f32 checked against a nearest-code search (ties to the even
 * code) on a dense sample of f32 bit patterns plus every midpoint between
 * neighbouring codes and its two f32 neighbours. `t_fp --all` checks all
 * 2^32 f32 patterns instead of the sample (minutes; the long target). */
#include "nf_fp.h"
#include "nf_test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#ifdef __x86_64__
#include <cpuid.h>
#include <immintrin.h>
#endif

typedef struct {
    const char *name;
    unsigned bits;     /* code width */
    unsigned ebits, mbits;
    int bias;
    unsigned sign;     /* the sign bit of a code */
    bool ieee_special; /* all-ones exponent: inf/NaN (FP16, BF16) */
    bool fn_nan;       /* only S.1111.111 is NaN (E4M3FN) */
    bool saturate;     /* encode saturates at the largest finite value */
    unsigned maxcode;  /* largest finite positive code */
    float (*dec)(unsigned c);
    unsigned (*enc)(float f);
    /* positive codes 0..top in value order (top: inf code or maxcode) */
    double *val;
    unsigned top;
} fmt_t;

static float d16(unsigned c) { return nf_fp16_to_f32((uint16_t)c); }
static float db16(unsigned c) { return nf_bf16_to_f32((uint16_t)c); }
static float d8(unsigned c) { return nf_e4m3_to_f32((uint8_t)c); }
static float d4(unsigned c) { return nf_e2m1_to_f32((uint8_t)c); }
static unsigned e16(float f) { return nf_f32_to_fp16(f); }
static unsigned eb16(float f) { return nf_f32_to_bf16(f); }
static unsigned e8(float f) { return nf_f32_to_e4m3(f); }
static unsigned e4(float f) { return nf_f32_to_e2m1(f); }

static fmt_t F[4] = {
    {"fp16", 16, 5, 10, 15, 0x8000, true, false, false, 0x7bff, d16, e16, NULL, 0},
    {"bf16", 16, 8, 7, 127, 0x8000, true, false, false, 0x7f7f, db16, eb16, NULL, 0},
    {"e4m3", 8, 4, 3, 7, 0x80, false, true, true, 0x7e, d8, e8, NULL, 0},
    {"e2m1", 4, 2, 1, 1, 0x8, false, false, true, 0x7, d4, e4, NULL, 0},
};

/* The value of a code from the format's parameters alone. NaN for NaN
 * codes, +-INFINITY for infinities. */
static double ref_value(const fmt_t *f, unsigned c)
{
    unsigned s = c & f->sign, mag = c & (f->sign - 1);
    unsigned e = mag >> f->mbits, m = mag & ((1u << f->mbits) - 1);
    unsigned emax = (1u << f->ebits) - 1;
    double v;
    if (f->ieee_special && e == emax)
        v = m ? NAN : INFINITY;
    else if (f->fn_nan && e == emax && m == (1u << f->mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp((double)m, 1 - f->bias - (int)f->mbits);
    else
        v = ldexp((double)((1u << f->mbits) + m), (int)e - f->bias - (int)f->mbits);
    return s ? -v : v;
}

/* Positive value table used by the encode reference: codes 0..maxcode,
 * plus for IEEE formats the infinity code with the value the exponent range
 * would give it (2^(emax+1-bias)), so that "round to nearest, ties to even"
 * reproduces IEEE overflow. */
static void build_table(fmt_t *f)
{
    f->top = f->ieee_special ? f->maxcode + 1 : f->maxcode;
    f->val = malloc((f->top + 1) * sizeof *f->val);
    for (unsigned c = 0; c <= f->maxcode; c++)
        f->val[c] = ref_value(f, c);
    if (f->ieee_special)
        f->val[f->top] = ldexp(1.0, (int)(1u << f->ebits) - 1 - f->bias);
}

/* Reference encoder: nearest code by bisection over the positive table, a
 * tie to the code with bit 0 clear, the sign copied. NaN handled by the
 * caller. */
static unsigned ref_encode(const fmt_t *f, float x)
{
    unsigned s = signbit(x) ? f->sign : 0;
    double a = fabs((double)x);
    if (a >= f->val[f->top])
        return s | f->top;
    unsigned lo = 0, hi = f->top; /* val[lo] <= a < val[hi] */
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (f->val[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    double m = (f->val[lo] + f->val[hi]) / 2; /* exact in double */
    unsigned c = a < m ? lo : a > m ? hi : ((lo & 1) ? hi : lo);
    return s | c;
}

static bool same_f32(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b) && signbit(a) == signbit(b);
    return nf_f32_bits(a) == nf_f32_bits(b);
}

static void decode_all(fmt_t *f)
{
    unsigned n = 1u << f->bits, bad = 0, first = 0;
    for (unsigned c = 0; c < n; c++) {
        double r = ref_value(f, c);
        float got = f->dec(c);
        bool ok = isnan(r) ? (isnan(got) && !signbit(got) == !(c & f->sign))
                           : ((double)got == r && !signbit(got) == !signbit(r));
        if (!ok && bad++ == 0)
            first = c;
    }
    CHECK(bad == 0, "%s: decode of all %u codes matches the definition", f->name, n);
    if (bad)
        printf("#   %u bad, first code 0x%x -> %a\n", bad, first, (double)f->dec(first));
}

static void round_trips(fmt_t *f)
{
    unsigned n = 1u << f->bits, bad = 0, bad_code = 0, first = 0;
    for (unsigned c = 0; c < n; c++) {
        float v = f->dec(c);
        unsigned c2 = f->enc(v);
        if (!same_f32(f->dec(c2), v) && bad++ == 0)
            first = c;
        if (!isnan(v) && c2 != c)
            bad_code++;
    }
    CHECK(bad == 0, "%s: decode(encode(decode(c))) == decode(c) for all codes", f->name);
    if (bad)
        printf("#   first bad 0x%x\n", first);
    CHECK(bad_code == 0, "%s: encode(decode(c)) == c for every non-NaN code", f->name);
}

/* Compare the encoder with the reference on one f32. Returns true if equal. */
static bool enc_ok(const fmt_t *f, float x)
{
    unsigned got = f->enc(x);
    if (isnan(x)) {
        if (f->fn_nan)
            return got == ((signbit(x) ? f->sign : 0) | 0x7f);
        if (f->bits == 4)
            return got == 0;
        return isnan(f->dec(got)) && !signbit(f->dec(got)) == !signbit(x);
    }
    return got == ref_encode(f, x);
}

static void encode_sample(fmt_t *f, bool all)
{
    uint64_t n = 0, bad = 0;
    uint32_t first = 0;
    uint64_t step = all ? 1 : 4093; /* prime: every exponent, varied mantissas */
    for (uint64_t u = 0; u <= 0xffffffffu; u += step) {
        float x = nf_f32_from_bits((uint32_t)u);
        n++;
        if (!enc_ok(f, x) && bad++ == 0)
            first = (uint32_t)u;
    }
    CHECK(bad == 0, "%s: encode matches nearest-even search on %llu f32 patterns",
          f->name, (unsigned long long)n);
    if (bad)
        printf("#   %llu bad; first 0x%08x: got 0x%x want 0x%x\n",
               (unsigned long long)bad, first, f->enc(nf_f32_from_bits(first)),
               ref_encode(f, nf_f32_from_bits(first)));

    /* Every midpoint between neighbours (the ties) and the f32 values on
     * either side; every code value and its neighbours; both signs. */
    n = bad = 0;
    for (unsigned c = 0; c < f->top; c++) {
        double pts[2] = {(f->val[c] + f->val[c + 1]) / 2, f->val[c]};
        for (int p = 0; p < 2; p++) {
            float m = (float)pts[p];
            if ((double)m != pts[p] || isinf(m))
                continue; /* a midpoint a binary32 cannot hold is no tie */
            float xs[3] = {nextafterf(m, 0.0f), m, nextafterf(m, INFINITY)};
            for (int i = 0; i < 3; i++)
                for (int sg = 0; sg < 2; sg++) {
                    float x = sg ? -xs[i] : xs[i];
                    n++;
                    if (!enc_ok(f, x) && bad++ == 0)
                        first = nf_f32_bits(x);
                }
        }
    }
    CHECK(bad == 0, "%s: encode of %llu midpoints, code values and neighbours",
          f->name, (unsigned long long)n);
    if (bad)
        printf("#   first bad 0x%08x: got 0x%x want 0x%x\n", first,
               f->enc(nf_f32_from_bits(first)), ref_encode(f, nf_f32_from_bits(first)));
}

static void specials(void)
{
    CHECK(nf_f32_to_fp16(65504.0f) == 0x7bff, "fp16 65504 is max");
    CHECK(nf_f32_to_fp16(65519.99f) == 0x7bff, "fp16 65519.99 rounds to max");
    CHECK(nf_f32_to_fp16(65520.0f) == 0x7c00, "fp16 65520 rounds to inf");
    CHECK(nf_f32_to_fp16(-INFINITY) == 0xfc00, "fp16 -inf");
    CHECK(nf_f32_to_fp16(0x1p-24f) == 0x0001, "fp16 smallest subnormal");
    CHECK(nf_f32_to_fp16(0x1p-25f) == 0x0000, "fp16 2^-25 ties to 0");
    CHECK(nf_f32_to_fp16(0x1.8p-25f) == 0x0001, "fp16 1.5*2^-25 rounds up");
    CHECK(nf_f32_to_fp16(-0.0f) == 0x8000, "fp16 -0");
    CHECK((nf_f32_to_fp16(NAN) & 0x7e00) == 0x7e00, "fp16 NaN is quiet");
    CHECK(nf_f32_to_bf16(1.00390625f) == 0x3f80, "bf16 1+2^-8 ties to even (1.0)");
    CHECK(nf_f32_to_bf16(1.01171875f) == 0x3f82, "bf16 1+3*2^-8 ties to even (up)");
    CHECK(nf_f32_to_bf16(3.4e38f) == 0x7f80, "bf16 overflow to inf");
    CHECK(nf_f32_to_bf16(nf_f32_from_bits(0x7f800001)) == 0x7fc0, "bf16 sNaN quieted, stays NaN");
    CHECK(nf_f32_to_e4m3(448.0f) == 0x7e, "e4m3 448");
    CHECK(nf_f32_to_e4m3(1e9f) == 0x7e, "e4m3 saturates");
    CHECK(nf_f32_to_e4m3(-INFINITY) == 0xfe, "e4m3 -inf saturates to -448");
    CHECK(nf_f32_to_e4m3(NAN) == 0x7f, "e4m3 NaN");
    CHECK(nf_f32_to_e4m3(-NAN) == 0xff, "e4m3 -NaN");
    CHECK(nf_f32_to_e4m3(0x1p-9f) == 0x01, "e4m3 smallest subnormal");
    CHECK(nf_f32_to_e4m3(0x1p-10f) == 0x00, "e4m3 2^-10 ties to 0");
    CHECK(nf_f32_to_e4m3(0x1.8p-9f) == 0x02, "e4m3 1.5*2^-9 ties to even (2)");
    CHECK(nf_f32_to_e4m3(0x1.ep-7f) == 0x08, "e4m3 15*2^-11 rounds up to 2^-6");
    CHECK(nf_e4m3_to_f32(0x7e) == 448.0f && nf_e4m3_to_f32(0x01) == 0x1p-9f &&
          isnan(nf_e4m3_to_f32(0xff)) && signbit(nf_e4m3_to_f32(0xff)), "e4m3 decode landmarks");
    CHECK(nf_e4m3_is_nan(0x7f) && nf_e4m3_is_nan(0xff) && !nf_e4m3_is_nan(0x7e), "e4m3 NaN codes");
    CHECK(nf_f32_to_e2m1(0.25f) == 0 && nf_f32_to_e2m1(0.75f) == 2 && nf_f32_to_e2m1(1.25f) == 2 &&
          nf_f32_to_e2m1(1.75f) == 4 && nf_f32_to_e2m1(2.5f) == 4 && nf_f32_to_e2m1(3.5f) == 6 &&
          nf_f32_to_e2m1(5.0f) == 6, "e2m1 ties go to the even code");
    CHECK(nf_f32_to_e2m1(100.0f) == 7 && nf_f32_to_e2m1(-INFINITY) == 15 &&
          nf_f32_to_e2m1(-0.0f) == 8 && nf_f32_to_e2m1(NAN) == 0, "e2m1 saturation, -0, NaN");
    CHECK(nf_e2m1_to_f32(0xf) == -6.0f && nf_e2m1_to_f32(0x5) == 3.0f, "e2m1 decode landmarks");
}

/* Saturation (DESIGN 7.4's counts): a value saturates when it rounds,
 * nearest even with the exponent going on, past the largest finite value.
 * The boundaries exactly, then every f32 of the binades around them
 * against rint on the grid (E4M3 steps by 32 from 256, E2M1 by 2 from 4). */
static void saturation(void)
{
    CHECK(!nf_e4m3_saturates(448.0f) && !nf_e4m3_saturates(nextafterf(448.0f, 1e9f)) &&
              !nf_e4m3_saturates(-448.0f), "e4m3: 448 and 448.00003 do not saturate");
    CHECK(!nf_e4m3_saturates(464.0f) && !nf_e4m3_saturates(-464.0f),
          "e4m3: 464, the midpoint, ties to 448 (its last bit is even)");
    CHECK(nf_e4m3_saturates(nextafterf(464.0f, 1e9f)) && nf_e4m3_saturates(-465.0f) &&
              nf_e4m3_saturates(INFINITY) && nf_e4m3_saturates(-INFINITY) &&
              !nf_e4m3_saturates(NAN), "e4m3: above 464 and infinity saturate, NaN does not");
    CHECK(!nf_e2m1_saturates(6.0f) && !nf_e2m1_saturates(nextafterf(7.0f, 0.0f)) &&
              nf_e2m1_saturates(7.0f) && nf_e2m1_saturates(-7.0f) &&
              nf_e2m1_saturates(INFINITY) && !nf_e2m1_saturates(NAN),
          "e2m1: 7, the midpoint, ties to 8 (6's last bit is odd): saturates");
    CHECK(nf_f32_to_fp16(nextafterf(65520.0f, 0.0f)) == 0x7bff && nf_f32_to_fp16(65520.0f) == 0x7c00,
          "fp16: the midpoint 65520 ties up to infinity (65504's last bit is odd)");
    uint64_t bad = 0;
    for (float f = 256.0f; f < 1024.0f; f = nextafterf(f, 2048.0f))
        bad += nf_e4m3_saturates(f) != (rintf(f / 32.0f) * 32.0f > 448.0f);
    for (float f = 4.0f; f < 16.0f; f = nextafterf(f, 32.0f))
        bad += nf_e2m1_saturates(f) != (rintf(f / 2.0f) * 2.0f > 6.0f);
    CHECK(bad == 0, "every f32 of [256, 1024) and [4, 16) agrees with rint on the grid (%llu differ)",
          (unsigned long long)bad);
}

#ifdef __x86_64__
/* A second, independent reference for FP16: the F16C instruction with
 * round-to-nearest-even. */
__attribute__((target("f16c"))) static unsigned hw_fp16(float f)
{
    return (unsigned)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}

static void f16c_agree(void)
{
    unsigned a, b, c, d;
    /* clang 14's __builtin_cpu_supports does not know "f16c": CPUID.1:ECX.29 */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29))) {
        SKIP("no F16C", "fp16 encode agrees with F16C");
        return;
    }
    uint64_t bad = 0, n = 0;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 65521) {
        float x = nf_f32_from_bits((uint32_t)u);
        n++;
        if (isnan(x))
            continue;
        if (nf_f32_to_fp16(x) != hw_fp16(x))
            bad++;
    }
    CHECK(bad == 0, "fp16 encode agrees with F16C on %llu patterns", (unsigned long long)n);
}
#endif

int main(int argc, char **argv)
{
    bool all = argc > 1 && strcmp(argv[1], "--all") == 0;
    for (int i = 0; i < 4; i++) {
        build_table(&F[i]);
        decode_all(&F[i]);
        round_trips(&F[i]);
        encode_sample(&F[i], all);
    }
    specials();
    saturation();
#ifdef __x86_64__
    f16c_agree();
#endif
    for (int i = 0; i < 4; i++)
        free(F[i].val);
    return nf_test_done();
}
