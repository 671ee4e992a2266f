/* nf_kindex_gguf.h — the gguf_* block formats (ninfer-formats(7), gguf_rows_v1)
 * for the CUDA kernels, written once for the device and the host
 * (included by nf_kindex.h), so that t_cudamath_gguf checks on the CPU
 * everything the GPU would compute.
 *
 * nf_kg_elem decodes one element of a block exactly as nf_gguf_elem (the
 * CPU reference, nf_codec_gguf.c): the same f32 operations in the same
 * order, and x86's NaN results (nf_k_mul / nf_kg_add / nf_kg_sub apply the
 * SSE rules: a NaN operand comes back quieted, the first when both are;
 * an invalid operation gives 0xffc00000), so decode-to-bf16 matches
 * nf_decode_rows_bf16 of the scalar path bit for bit, NaNs included.
 * Blocks are read byte by byte (a gguf row stride is only 2-aligned for
 * some formats, 1 for mxfp4).
 *
 * The "unit" GEMV (nf_kernels.cuh, nf_gemv_gguf_kernel): one warp per
 * row, lane l takes the 32-column units u = l, l + 32, ... of its row (unit
 * u: columns [32u, 32u + 32), inside one block of 32 or one sub-block of a
 * 256-block; gguf_f16 32 halves), decodes a unit's 32 weights with
 * nf_kg_unit (nf_kg_elem's values, the unit's scales computed once) and adds
 * w * x into its f32 accumulator with one FMA per column, in column order;
 * the 32 lane sums are reduced by the xor butterfly. Its
 * error against nf_gemv_ref is at most (32 ceil(units / 32) + 5) u sum |w
 * x| + u |y| (u = 2^-24, barring overflow), which t_device's bound covers;
 * nf_kg_gemv_emulate gives its result bit for bit on the host.
 */
#ifndef NF_KINDEX_GGUF_H
#define NF_KINDEX_GGUF_H

/* (included by nf_kindex.h after its helpers: NF_KFN, nf_k_float, nf_k_fp16,
 * nf_k_mul, nf_k_nan_rule_, nf_k_fma, nf_k_ld16/32, nf_kgeom) */

NF_KFN int nf_kg_is_gguf(int32_t f)
{
    return f >= NF_FMT_GGUF_F16 && f <= NF_FMT_GGUF_IQ4_XS;
}

/* elements and bytes per block (nf_gguf_info_of, device-side) */
NF_KFN uint32_t nf_kg_qk(int32_t f)
{
    switch (f) {
    case NF_FMT_GGUF_F16: return 1;
    case NF_FMT_GGUF_Q2_K:
    case NF_FMT_GGUF_Q3_K:
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K:
    case NF_FMT_GGUF_Q6_K:
    case NF_FMT_GGUF_IQ4_XS: return 256;
    default: return nf_kg_is_gguf(f) ? 32 : 0;
    }
}

NF_KFN uint32_t nf_kg_bytes(int32_t f)
{
    switch (f) {
    case NF_FMT_GGUF_F16: return 2;
    case NF_FMT_GGUF_Q8_0: return 34;
    case NF_FMT_GGUF_Q4_0: return 18;
    case NF_FMT_GGUF_Q4_1: return 20;
    case NF_FMT_GGUF_Q5_0: return 22;
    case NF_FMT_GGUF_Q5_1: return 24;
    case NF_FMT_GGUF_IQ4_NL: return 18;
    case NF_FMT_GGUF_MXFP4: return 17;
    case NF_FMT_GGUF_Q2_K: return 84;
    case NF_FMT_GGUF_Q3_K: return 110;
    case NF_FMT_GGUF_Q4_K: return 144;
    case NF_FMT_GGUF_Q5_K: return 176;
    case NF_FMT_GGUF_Q6_K: return 210;
    case NF_FMT_GGUF_IQ4_XS: return 136;
    default: return 0;
    }
}

/* a + b and a - b with the x86 NaN results (as nf_k_mul) */
NF_KFN float nf_kg_add(float a, float b)
{
#ifdef __CUDA_ARCH__
    return nf_k_nan_rule_(a, b, __fadd_rn(a, b));
#else
    return nf_k_nan_rule_(a, b, a + b);
#endif
}
NF_KFN float nf_kg_sub(float a, float b)
{
#ifdef __CUDA_ARCH__
    return nf_k_nan_rule_(a, b, __fsub_rn(a, b));
#else
    return nf_k_nan_rule_(a, b, a - b);
#endif
}

/* kvalues_iq4nl / kvalues_mxfp4 by arithmetic-free switch (no run-time
 * indexed local array: a switch on a register compiles to selects) */
NF_KFN int32_t nf_kg_kv_iq4nl(uint32_t n)
{
    switch (n & 15u) {
    case 0: return -127; case 1: return -104; case 2: return -83; case 3: return -65;
    case 4: return -49;  case 5: return -35;  case 6: return -22; case 7: return -10;
    case 8: return 1;    case 9: return 13;   case 10: return 25; case 11: return 38;
    case 12: return 53;  case 13: return 69;  case 14: return 89; default: return 113;
    }
}
NF_KFN int32_t nf_kg_kv_fp4(uint32_t n)
{
    /* 2 * E2M1: magnitudes 0 1 2 3 4 6 8 12, bit 3 the sign */
    uint32_t m = n & 7u;
    int32_t v = m < 4 ? (int32_t)m : m == 4 ? 4 : m == 5 ? 6 : m == 6 ? 8 : 12;
    return (n & 8u) ? -v : v;
}

NF_KFN float nf_kg_e8m0_half(uint32_t x)
{
    return nf_k_float(x < 2 ? 0x00200000u << x : (x - 1u) << 23);
}

NF_KFN uint32_t nf_kg_nib16(const uint8_t *q, uint32_t e)
{
    return e < 16 ? q[e] & 15u : (uint32_t)q[e - 16] >> 4;
}

NF_KFN float nf_kg_h(const uint8_t *p) { return nf_k_fp16(nf_k_ld16(p)); }

/* element e of the block at b: nf_gguf_elem's formula and operation order */
NF_KFN float nf_kg_elem(int32_t f, const uint8_t *b, uint32_t e)
{
    switch (f) {
    case NF_FMT_GGUF_F16:
        return nf_kg_h(b);
    case NF_FMT_GGUF_Q8_0:
        return nf_k_mul((float)(int8_t)b[2 + e], nf_kg_h(b));
    case NF_FMT_GGUF_Q4_0:
        return nf_k_mul((float)((int32_t)nf_kg_nib16(b + 2, e) - 8), nf_kg_h(b));
    case NF_FMT_GGUF_Q4_1:
        return nf_kg_add(nf_k_mul((float)nf_kg_nib16(b + 4, e), nf_kg_h(b)), nf_kg_h(b + 2));
    case NF_FMT_GGUF_Q5_0: {
        uint32_t q = nf_kg_nib16(b + 6, e) | ((nf_k_ld32(b + 2) >> e) & 1u) << 4;
        return nf_k_mul((float)((int32_t)q - 16), nf_kg_h(b));
    }
    case NF_FMT_GGUF_Q5_1: {
        uint32_t q = nf_kg_nib16(b + 8, e) | ((nf_k_ld32(b + 4) >> e) & 1u) << 4;
        return nf_kg_add(nf_k_mul((float)q, nf_kg_h(b)), nf_kg_h(b + 2));
    }
    case NF_FMT_GGUF_IQ4_NL:
        return nf_k_mul(nf_kg_h(b), (float)nf_kg_kv_iq4nl(nf_kg_nib16(b + 2, e)));
    case NF_FMT_GGUF_MXFP4:
        return nf_k_mul((float)nf_kg_kv_fp4(nf_kg_nib16(b + 1, e)), nf_kg_e8m0_half(b[0]));
    case NF_FMT_GGUF_Q2_K: {
        uint32_t h = e / 128, r = e % 128, j = r / 32, l = r % 32;
        uint32_t q = (b[16 + 32 * h + l] >> (2 * j)) & 3u, sc = b[e / 16];
        float dl = nf_k_mul(nf_kg_h(b + 80), (float)(sc & 15u));
        float ml = nf_k_mul(nf_kg_h(b + 82), (float)(sc >> 4));
        return nf_kg_sub(nf_k_mul(dl, (float)q), ml);
    }
    case NF_FMT_GGUF_Q3_K: {
        uint32_t h = e / 128, r = e % 128, j = r / 32, l = r % 32, s = e / 16;
        const uint8_t *S = b + 96;
        int32_t low = (b[32 + 32 * h + l] >> (2 * j)) & 3;
        int32_t q = low - (((b[l] >> (4 * h + j)) & 1u) ? 0 : 4);
        uint32_t sc6 = (s < 8 ? S[s] & 15u : (uint32_t)S[s - 8] >> 4) |
                       ((S[8 + s % 4] >> (2 * (s / 4))) & 3u) << 4;
        return nf_k_mul(nf_k_mul(nf_kg_h(b + 108), (float)((int32_t)sc6 - 32)), (float)q);
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        uint32_t s = e / 32, c = e / 64, r = e % 64, sc, m;
        const uint8_t *S = b + 4;
        if (s < 4) {
            sc = S[s] & 63u;
            m = S[s + 4] & 63u;
        } else {
            sc = (S[s + 4] & 15u) | (uint32_t)(S[s - 4] >> 6) << 4;
            m = (uint32_t)(S[s + 4] >> 4) | (uint32_t)(S[s] >> 6) << 4;
        }
        const uint8_t *qs = b + (f == NF_FMT_GGUF_Q4_K ? 16 : 48);
        uint32_t byte = qs[32 * c + r % 32], q = r < 32 ? byte & 15u : byte >> 4;
        if (f == NF_FMT_GGUF_Q5_K)
            q += 16u * ((b[16 + e % 32] >> (e / 32)) & 1u);
        float a = nf_k_mul(nf_k_mul(nf_kg_h(b), (float)sc), (float)q);
        return nf_kg_sub(a, nf_k_mul(nf_kg_h(b + 2), (float)m));
    }
    case NF_FMT_GGUF_Q6_K: {
        uint32_t h = e / 128, r = e % 128, t = r / 32, l = r % 32;
        uint32_t byte = b[64 * h + l + 32 * (t & 1)];
        uint32_t low = t < 2 ? byte & 15u : byte >> 4;
        uint32_t high = (b[128 + 32 * h + l] >> (2 * t)) & 3u;
        int32_t q = (int32_t)(low | high << 4) - 32;
        return nf_k_mul(nf_k_mul(nf_kg_h(b + 208), (float)(int8_t)b[192 + e / 16]), (float)q);
    }
    case NF_FMT_GGUF_IQ4_XS: {
        uint32_t ib = e / 32, w = e % 32, byte = b[8 + 16 * ib + w % 16];
        uint32_t n = w < 16 ? byte & 15u : byte >> 4;
        uint32_t ls = ((b[4 + ib / 2] >> (4 * (ib % 2))) & 15u) |
                      ((nf_k_ld16(b + 2) >> (2 * ib)) & 3u) << 4;
        return nf_k_mul(nf_k_mul(nf_kg_h(b), (float)((int32_t)ls - 32)),
                        (float)nf_kg_kv_iq4nl(n));
    }
    default:
        return 0.0f;
    }
}

/* element k of row n of the object (g: nf_kgeom of a gguf_rows_v1 object) */
NF_KFN float nf_kg_at(const uint8_t *obj, const nf_kgeom *g, uint64_t n, uint64_t k)
{
    return nf_kg_elem(g->format, obj + g->o_codes + n * g->rb_codes + (k / g->gq) * g->gb,
                      (uint32_t)(k % g->gq));
}

/* The 32 weights of unit `sub` (columns [32 sub, 32 sub + 32) of the block
 * at b; sub is 0 for the 32-blocks): nf_kg_elem's values, with each block
 * or sub-block scale computed once (the same product, so the same bits). */
NF_KFN void nf_kg_unit(int32_t f, const uint8_t *b, uint32_t sub, float v[32])
{
    const uint32_t e0 = 32 * sub;
    switch (f) {
    case NF_FMT_GGUF_Q8_0: {
        float d = nf_kg_h(b);
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_k_mul((float)(int8_t)b[2 + i], d);
        break;
    }
    case NF_FMT_GGUF_Q4_0: {
        float d = nf_kg_h(b);
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_k_mul((float)((int32_t)nf_kg_nib16(b + 2, i) - 8), d);
        break;
    }
    case NF_FMT_GGUF_Q4_1: {
        float d = nf_kg_h(b), m = nf_kg_h(b + 2);
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_kg_add(nf_k_mul((float)nf_kg_nib16(b + 4, i), d), m);
        break;
    }
    case NF_FMT_GGUF_Q5_0:
    case NF_FMT_GGUF_Q5_1: {
        int one = f == NF_FMT_GGUF_Q5_1;
        float d = nf_kg_h(b), m = one ? nf_kg_h(b + 2) : 0.0f;
        uint32_t qh = nf_k_ld32(b + (one ? 4 : 2));
        const uint8_t *qs = b + (one ? 8 : 6);
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            uint32_t q = nf_kg_nib16(qs, i) | ((qh >> i) & 1u) << 4;
            v[i] = one ? nf_kg_add(nf_k_mul((float)q, d), m) : nf_k_mul((float)((int32_t)q - 16), d);
        }
        break;
    }
    case NF_FMT_GGUF_IQ4_NL: {
        float d = nf_kg_h(b);
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_k_mul(d, (float)nf_kg_kv_iq4nl(nf_kg_nib16(b + 2, i)));
        break;
    }
    case NF_FMT_GGUF_MXFP4: {
        float h = nf_kg_e8m0_half(b[0]);
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_k_mul((float)nf_kg_kv_fp4(nf_kg_nib16(b + 1, i)), h);
        break;
    }
    case NF_FMT_GGUF_Q2_K: {
        uint32_t h = e0 / 128, j = (e0 % 128) / 32, s = e0 / 16;
        float d = nf_kg_h(b + 80), dmin = nf_kg_h(b + 82);
        float dl0 = nf_k_mul(d, (float)(b[s] & 15u)), ml0 = nf_k_mul(dmin, (float)(b[s] >> 4));
        float dl1 = nf_k_mul(d, (float)(b[s + 1] & 15u)), ml1 = nf_k_mul(dmin, (float)(b[s + 1] >> 4));
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            uint32_t q = (b[16 + 32 * h + i] >> (2 * j)) & 3u;
            v[i] = nf_kg_sub(nf_k_mul(i < 16 ? dl0 : dl1, (float)q), i < 16 ? ml0 : ml1);
        }
        break;
    }
    case NF_FMT_GGUF_Q3_K: {
        uint32_t h = e0 / 128, j = (e0 % 128) / 32, s = e0 / 16;
        const uint8_t *S = b + 96;
        float d = nf_kg_h(b + 108), dl[2];
        for (int t = 0; t < 2; t++) {
            uint32_t ss = s + (uint32_t)t;
            uint32_t sc6 = (ss < 8 ? S[ss] & 15u : (uint32_t)S[ss - 8] >> 4) |
                           ((S[8 + ss % 4] >> (2 * (ss / 4))) & 3u) << 4;
            dl[t] = nf_k_mul(d, (float)((int32_t)sc6 - 32));
        }
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            int32_t low = (b[32 + 32 * h + i] >> (2 * j)) & 3;
            int32_t q = low - (((b[i] >> (4 * h + j)) & 1u) ? 0 : 4);
            v[i] = nf_k_mul(i < 16 ? dl[0] : dl[1], (float)q);
        }
        break;
    }
    case NF_FMT_GGUF_Q4_K:
    case NF_FMT_GGUF_Q5_K: {
        uint32_t sc, m, c = sub / 2, hi = sub & 1;
        const uint8_t *S = b + 4;
        if (sub < 4) {
            sc = S[sub] & 63u;
            m = S[sub + 4] & 63u;
        } else {
            sc = (S[sub + 4] & 15u) | (uint32_t)(S[sub - 4] >> 6) << 4;
            m = (uint32_t)(S[sub + 4] >> 4) | (uint32_t)(S[sub] >> 6) << 4;
        }
        float ds = nf_k_mul(nf_kg_h(b), (float)sc), dm = nf_k_mul(nf_kg_h(b + 2), (float)m);
        int five = f == NF_FMT_GGUF_Q5_K;
        const uint8_t *qs = b + (five ? 48 : 16);
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            uint32_t byte = qs[32 * c + i], q = hi ? byte >> 4 : byte & 15u;
            if (five)
                q += 16u * ((b[16 + i] >> sub) & 1u);
            v[i] = nf_kg_sub(nf_k_mul(ds, (float)q), dm);
        }
        break;
    }
    case NF_FMT_GGUF_Q6_K: {
        uint32_t h = e0 / 128, t = (e0 % 128) / 32, s = e0 / 16;
        float d = nf_kg_h(b + 208);
        float ds0 = nf_k_mul(d, (float)(int8_t)b[192 + s]), ds1 = nf_k_mul(d, (float)(int8_t)b[193 + s]);
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            uint32_t byte = b[64 * h + i + 32 * (t & 1)];
            uint32_t low = t < 2 ? byte & 15u : byte >> 4;
            uint32_t high = (b[128 + 32 * h + i] >> (2 * t)) & 3u;
            v[i] = nf_k_mul(i < 16 ? ds0 : ds1, (float)((int32_t)(low | high << 4) - 32));
        }
        break;
    }
    case NF_FMT_GGUF_IQ4_XS: {
        uint32_t ls = ((b[4 + sub / 2] >> (4 * (sub % 2))) & 15u) |
                      ((nf_k_ld16(b + 2) >> (2 * sub)) & 3u) << 4;
        float dl = nf_k_mul(nf_kg_h(b), (float)((int32_t)ls - 32));
        NF_KUNROLL
        for (int i = 0; i < 32; i++) {
            uint32_t byte = b[8 + 16 * sub + (i % 16)];
            v[i] = nf_k_mul(dl, (float)nf_kg_kv_iq4nl(i < 16 ? byte & 15u : byte >> 4));
        }
        break;
    }
    default:
        NF_KUNROLL
        for (int i = 0; i < 32; i++)
            v[i] = nf_kg_elem(f, b, e0 + (uint32_t)i);
        break;
    }
}

/* one lane's sum over unit u of row n: FMA of each column's weight and x,
 * in column order, onto acc (columns past K are skipped: gguf_f16 only) */
NF_KFN float nf_kg_unit_dot(const uint8_t *obj, const nf_kgeom *g, uint64_t n, uint64_t u,
                            const float *x, float acc)
{
    uint64_t k0 = 32 * u, k1 = k0 + 32 < g->cols ? k0 + 32 : g->cols;
    const uint8_t *row = obj + g->o_codes + n * g->rb_codes;
    if (g->gq == 1) {
        for (uint64_t k = k0; k < k1; k++)
            acc = nf_k_fma(nf_kg_h(row + 2 * k), x[k], acc);
        return acc;
    }
    float v[32];
    nf_kg_unit(g->format, row + (k0 / g->gq) * g->gb, (uint32_t)((k0 % g->gq) / 32), v);
    NF_KUNROLL
    for (int i = 0; i < 32; i++)
        acc = nf_k_fma(v[i], x[k0 + i], acc);
    return acc;
}

#endif
