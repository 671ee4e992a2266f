/* nf_kernels.cuh — decode-to-bf16 and GEMV kernels for every format/layout
 * (ninfer-formats(7), ninfer-run(1)), for Hopper (sm_90; PTX kept for newer
 * GPUs). Included by nf_device.cu only.
 *
 * The arithmetic lives in nf_kindex.h, shared with the host so that
 * t_cudamath checks it without a GPU; this file adds what only a GPU has:
 * vector loads, warp shuffles, shared memory and the launch code.
 *
 * GEMV y = W x (A16: x converted once from bf16 to f32, zero past K;
 * accumulation in f32). Plans (nf_k_gemv_plan): a block holds row groups of
 * W warps; a group owns R consecutive rows; lane l of the group's warp s
 * takes chunks s*32 + l + i*32*W of each row. A chunk is one 16-byte load of
 * the first plane per lane, so a warp reads 512 contiguous bytes of a row
 * per step (for row_split: whole 128-column blocks, 4 lanes per block for
 * q4..q6, 8 for q8, 2 for q2/t2), plus the chunk's high-plane word(s) and
 * its one group scale (two lanes share a q4 scale: one 2-byte load each,
 * the warp's 32 bytes in one sector) or its two nvfp4 block scales (one
 * 16-bit load: blocks 2j and 2j+1 are adjacent in the 128x4 tile). Each
 * lane issues U = 2 chunks x R rows of loads before it uses any. Codes are
 * decoded by magic-number floats (one LOP3 and one FADD per code, no tables,
 * nothing indexed at run time), fp8 by cvt.rn.f16x2.e4m3x2, E2M1 by placing
 * its bits into an FP16; products code * x are exact and the scale is
 * applied once per chunk. Reduction: xor butterfly, then the W warps in
 * order through shared memory (deterministic: the same bits every run).
 *
 * Error bound against nf_gemv_ref (scalar decode, double dot, rounded once),
 * u = 2^-24, to first order, barring overflow and underflow (|w x| >= 2^-126
 * or 0), the same form for every format:
 *   |y_dev - y_ref| <= D u sum_k |w_nk x_k| + u |y_ref|,
 *   D = C + 7 (class combine) + 1 (scale) + ceil(nch / (32 W)) (chunks per
 *       lane) + 5 (shuffles) + W - 1 (warps) + 1 (fp8 r, nvfp4 w) + 1
 *     <= C + ceil(nch / 32) + 22,
 * because every product code * x is exact (at most 8 + 8 significant bits;
 * fp32/int32: one rounding, counted in C) and each term then passes through
 * at most D roundings of sums. The +1: nvfp4's reference rounds every
 * (e2m1 * b) / w, the kernel divides each row sum by w once; for the other
 * formats the decoded value c * s (19 bits) and e4m3 * r (12 bits) are
 * exact, so the kernel and the reference multiply the same numbers. Not a
 * bf16 rounding of the weights anywhere. The per-element kernel (rows not
 * 16-byte aligned: contiguous K * esize % 16 != 0, fp8 K % 16 != 0) decodes
 * each element exactly as the reference: D = ceil(K / 32) + 5. t_device
 * checks D = C + ceil(nch / 32) + ceil(K / 32) + 24, which covers both. The
 * result depends on nothing but the plan (no atomics, fixed reduction order):
 * t_device also checks it bit for bit against nf_k_gemv_emulate.
 *
 * Decode to bf16: each element's f32 value exactly as nf_decode_rows_f32
 * (the word decoders' exact codes, then the one IEEE product/quotient of
 * ninfer-formats(7) Formats with x86 NaN results), rounded by nf_k_to_bf16:
 * bit for bit nf_decode_rows_bf16 (bf16 objects: the words copied).
 */
#ifndef NF_KERNELS_CUH
#define NF_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include "nf_kindex.h"

/* Everything a launch needs (passed by value: kernel parameter space). */
struct nf_kargs {
    const uint8_t *obj;  /* the encoded object on the device */
    nf_kgeom g;
    const float *x;      /* GEMV: nch * C f32 activations, zero past K */
    float *y;            /* GEMV: nrows outputs, y[i] = row n0 + i */
    uint16_t *out;       /* decode: bf16 output */
    uint64_t n0, nrows;  /* the row range [n0, n0 + nrows) */
    uint64_t ring;       /* decode: output row (chunk kernel) or element (flat
                            kernel) index mask; ~0 writes everything in place,
                            a small mask reuses a small buffer (benchmarks) */
    uint32_t W;          /* warps per row group */
};

/* Compile-time facts per format (must agree with nf_k_chunk_cols; the
 * launchers check). */
template <int F> struct nf_kfmt {
    static constexpr int C = F == NF_FMT_BF16 ? 8
                             : (F == NF_FMT_FP32 || F == NF_FMT_INT32) ? 4
                             : (F == NF_FMT_Q2_G64_FP16 || F == NF_FMT_T2_G128_FP16) ? 64
                             : (F == NF_FMT_Q8_G32_FP16 || F == NF_FMT_FP8_E4M3FN_ROW_BF16) ? 16
                             : 32;
    static constexpr int G = F == NF_FMT_Q8_G32_FP16 ? 32
                             : F == NF_FMT_T2_G128_FP16 ? 128
                             : (F == NF_FMT_Q2_G64_FP16 || F == NF_FMT_Q4_G64_FP16 ||
                                F == NF_FMT_Q5_G64_FP16 || F == NF_FMT_Q6_G64_FP16) ? 64
                             : 0;
};

/* ============================== kernels =================================== */

/* 16 bytes of a weight stream: read once, so kept out of L1 (x lives there) */
__device__ __forceinline__ uint4 nf_ld_stream(const uint8_t *p)
{
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

/* One row's plane pointers and its per-row scale. */
struct nf_krow {
    const uint8_t *c, *h, *s;
    float rs; /* fp8: bf16(r[n]); nvfp4: w[n / slice]; else 1 */
};

template <int F>
__device__ __forceinline__ nf_krow nf_krow_at(const nf_kargs &a, uint64_t n)
{
    nf_krow r;
    r.c = a.obj + a.g.o_codes + n * a.g.rb_codes;
    r.h = a.obj + a.g.o_high + n * a.g.rb_high;
    r.s = a.obj + a.g.o_scale +
          (F == NF_FMT_NVFP4 ? nf_nvfp4_scale_row_part(n, a.g.cols) : n * a.g.rb_scale);
    r.rs = (F == NF_FMT_FP8_E4M3FN_ROW_BF16 || F == NF_FMT_NVFP4) ? nf_k_rscale(a.obj, &a.g, n)
                                                                   : 1.0f;
    return r;
}

/* Chunk jj of a row: what nf_k_load_host reads, with vector loads. */
template <int F>
__device__ __forceinline__ nf_kraw nf_kload(const nf_krow &r, uint32_t jj)
{
    constexpr int C = nf_kfmt<F>::C, G = nf_kfmt<F>::G;
    nf_kraw x;
    uint4 b = nf_ld_stream(r.c + 16ull * jj);
    x.w[0] = b.x;
    x.w[1] = b.y;
    x.w[2] = b.z;
    x.w[3] = b.w;
    x.h[0] = x.h[1] = 0;
    x.s = 0;
    if (F == NF_FMT_Q5_G64_FP16)
        x.h[0] = __ldg(reinterpret_cast<const unsigned *>(r.h + 4ull * jj));
    if (F == NF_FMT_Q6_G64_FP16) {
        uint2 h = __ldg(reinterpret_cast<const uint2 *>(r.h + 8ull * jj));
        x.h[0] = h.x;
        x.h[1] = h.y;
    }
    if (G)
        x.s = __ldg(reinterpret_cast<const unsigned short *>(r.s + 2ull * ((uint64_t)jj * C / (G ? G : 1))));
    if (F == NF_FMT_NVFP4)
        x.s = __ldg(reinterpret_cast<const unsigned short *>(r.s + nf_nvfp4_scale_col_part(2ull * jj)));
    return x;
}

/* GEMV over 16-byte chunks (rows 16-byte aligned). */
template <int F, int R>
__global__ void __launch_bounds__(256) nf_gemv_chunk_kernel(const nf_kargs a)
{
    constexpr int C = nf_kfmt<F>::C, U = NF_KPLAN_U;
    __shared__ float red[8][R];
    const uint32_t W = a.W;
    uint32_t lane, warp, sub;
    uint64_t first;
    nf_k_role(W, R, blockDim.x, blockIdx.x, threadIdx.x, &lane, &warp, &sub, &first);
    const bool live = first < a.nrows;
    nf_krow rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        uint64_t i = first + r;
        rows[r] = nf_krow_at<F>(a, a.n0 + (i < a.nrows ? i : a.nrows - 1));
    }
    float acc[R];
#pragma unroll
    for (int r = 0; r < R; r++)
        acc[r] = 0.0f;
    const uint32_t nch = (uint32_t)a.g.nch, step = 32u * W;
    for (uint32_t j = sub * 32u + lane; live && j < nch; j += step * U) {
        nf_kraw raw[U][R];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t jj = j + u * step;
#pragma unroll
            for (int r = 0; r < R; r++)
                if (jj < nch)
                    raw[u][r] = nf_kload<F>(rows[r], jj);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const uint32_t jj = j + u * step;
            if (jj < nch) {
                float xs[C];
                const float4 *xp = reinterpret_cast<const float4 *>(a.x) + (uint64_t)jj * (C / 4);
#pragma unroll
                for (int q = 0; q < C / 4; q++) {
                    float4 t = __ldg(xp + q);
                    xs[4 * q] = t.x;
                    xs[4 * q + 1] = t.y;
                    xs[4 * q + 2] = t.z;
                    xs[4 * q + 3] = t.w;
                }
#pragma unroll
                for (int r = 0; r < R; r++)
                    acc[r] = nf_k_dot(F, &raw[u][r], xs, acc[r]);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int off = 16; off; off >>= 1)
            acc[r] = __fadd_rn(acc[r], __shfl_xor_sync(0xffffffffu, acc[r], off));
    if (W > 1) {
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < R; r++)
                red[warp][r] = acc[r];
        __syncthreads();
        if (sub == 0 && lane == 0)
#pragma unroll
            for (int r = 0; r < R; r++) {
                float s = red[warp][r];
                for (uint32_t t = 1; t < W; t++)
                    s = __fadd_rn(s, red[warp + t][r]);
                acc[r] = s;
            }
    }
    if (sub == 0 && lane == 0 && live)
#pragma unroll
        for (int r = 0; r < R; r++)
            if (first + r < a.nrows)
                a.y[first + r] = nf_k_finish(F, acc[r], rows[r].rs);
}

/* GEMV one element at a time (any format, any alignment): one warp per row,
 * lanes striding over the columns, each element decoded as the reference. */
__global__ void __launch_bounds__(128) nf_gemv_elem_kernel(const nf_kargs a)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t i = (uint64_t)blockIdx.x * (blockDim.x / 32u) + (threadIdx.x >> 5);
    if (i >= a.nrows)
        return; /* the whole warp */
    const uint64_t n = a.n0 + i;
    float acc = 0.0f;
    for (uint64_t k = lane; k < a.g.cols; k += 32)
        acc = nf_k_fma(nf_k_elem(a.obj, &a.g, n, k), __ldg(a.x + k), acc);
#pragma unroll
    for (int off = 16; off; off >>= 1)
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0)
        a.y[i] = acc;
}

/* GEMV of gguf_rows_v1 objects (nf_kindex_gguf.h): one warp per row, lane l
 * over the 32-column units l, l + 32, ... of its row, each unit's weights
 * decoded as the reference (nf_kg_unit) and FMA'd in column order. */
__global__ void __launch_bounds__(128) nf_gemv_gguf_kernel(const nf_kargs a)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint64_t i = (uint64_t)blockIdx.x * (blockDim.x / 32u) + (threadIdx.x >> 5);
    if (i >= a.nrows)
        return; /* the whole warp */
    const uint64_t n = a.n0 + i;
    float acc = 0.0f;
    for (uint64_t u = lane; u < a.g.nch; u += 32)
        acc = nf_kg_unit_dot(a.obj, &a.g, n, u, a.x, acc);
#pragma unroll
    for (int off = 16; off; off >>= 1)
        acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, acc, off));
    if (lane == 0)
        a.y[i] = acc;
}

__device__ __forceinline__ uint32_t nf_pack_bf16(float lo, float hi)
{
    return nf_k_to_bf16(lo) | nf_k_to_bf16(hi) << 16;
}

/* Decode to bf16, one chunk per thread (row_split, nvfp4, fp8 with K % 16
 * == 0). 16-byte stores when K % 8 == 0. */
template <int F>
__global__ void __launch_bounds__(256) nf_decode_chunk_kernel(const nf_kargs a)
{
    constexpr int C = nf_kfmt<F>::C;
    const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t nch = a.g.nch, K = a.g.cols;
    if (t >= a.nrows * nch)
        return;
    const uint64_t i = t / nch, jj = t % nch, k0 = jj * C;
    const nf_krow row = nf_krow_at<F>(a, a.n0 + i);
    const nf_kraw raw = nf_kload<F>(row, (uint32_t)jj);
    float v[C];
    nf_k_decode_chunk(F, &raw, row.rs, v);
    uint16_t *o = a.out + (i & a.ring) * K + k0;
    if (K % 8 == 0 && k0 + C <= K) {
#pragma unroll
        for (int q = 0; q < C / 8; q++) {
            uint4 p;
            p.x = nf_pack_bf16(v[8 * q], v[8 * q + 1]);
            p.y = nf_pack_bf16(v[8 * q + 2], v[8 * q + 3]);
            p.z = nf_pack_bf16(v[8 * q + 4], v[8 * q + 5]);
            p.w = nf_pack_bf16(v[8 * q + 6], v[8 * q + 7]);
            reinterpret_cast<uint4 *>(o)[q] = p;
        }
    } else {
#pragma unroll
        for (int e = 0; e < C; e++)
            if (k0 + e < K)
                o[e] = (uint16_t)nf_k_to_bf16(v[e]);
    }
}

/* Decode to bf16 over the flat element range of the row range, 8 elements
 * per thread (contiguous formats, and fp8 whose rows are not 16-byte
 * aligned). bf16 words are copied. */
__global__ void __launch_bounds__(256) nf_decode_flat_kernel(const nf_kargs a)
{
    const uint64_t K = a.g.cols, total = a.nrows * K;
    const uint64_t e = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (e >= total)
        return;
    const uint64_t e0 = a.n0 * K + e; /* element index in the object */
    const int m = total - e < 8 ? (int)(total - e) : 8;
    uint32_t w[8];
    const int32_t f = a.g.format;
    const uint8_t *src = a.obj + a.g.o_codes + e0 * a.g.esize;
    if (m == 8 && a.g.esize && ((uintptr_t)src & 15) == 0) {
        uint4 b = nf_ld_stream(src);
        if (f == NF_FMT_BF16) {
            w[0] = b.x & 0xffffu, w[1] = b.x >> 16, w[2] = b.y & 0xffffu, w[3] = b.y >> 16;
            w[4] = b.z & 0xffffu, w[5] = b.z >> 16, w[6] = b.w & 0xffffu, w[7] = b.w >> 16;
        } else {
            uint4 c = nf_ld_stream(src + 16);
            const uint32_t u[8] = {b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
#pragma unroll
            for (int q = 0; q < 8; q++)
                w[q] = nf_k_to_bf16(f == NF_FMT_INT32 ? (float)(int32_t)u[q] : __uint_as_float(u[q]));
        }
    } else {
#pragma unroll
        for (int q = 0; q < 8; q++) {
            w[q] = 0;
            if (q < m) {
                uint64_t ee = e0 + q;
                if (f == NF_FMT_BF16)
                    w[q] = nf_k_ld16(src + 2 * q);
                else if (a.g.esize) /* fp32, int32: row 0, column = flat index */
                    w[q] = nf_k_to_bf16(nf_k_elem(a.obj, &a.g, 0, ee));
                else
                    w[q] = nf_k_to_bf16(nf_k_elem(a.obj, &a.g, ee / K, ee % K));
            }
        }
    }
    uint16_t *o = a.out + (e & a.ring);
    if (m == 8 && ((uintptr_t)o & 15) == 0) {
        uint4 p;
        p.x = w[0] | w[1] << 16;
        p.y = w[2] | w[3] << 16;
        p.z = w[4] | w[5] << 16;
        p.w = w[6] | w[7] << 16;
        *reinterpret_cast<uint4 *>(o) = p;
    } else {
        for (int q = 0; q < m; q++)
            o[q] = (uint16_t)w[q];
    }
}

/* x: bf16 -> f32, zero from K to the padded length */
__global__ void nf_x_f32_kernel(const uint16_t *x, uint64_t K, float *xf, uint64_t padded)
{
    const uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < padded)
        xf[i] = i < K ? nf_k_bf16(x[i]) : 0.0f;
}

/* Read n 16-byte words of p through L2 (default caching: every line is
 * allocated there), so that whatever was cached before is evicted: the L2
 * flush before a timed launch. Reads leave clean lines, so the timed
 * kernel pays no write-back (a memset would leave L2 full of dirty lines).
 * The sum is stored only when it equals a value a zeroed buffer never
 * gives, so the loads cannot be dropped. */
__global__ void __launch_bounds__(256) nf_flush_kernel(const uint4 *p, uint64_t n, uint32_t *sink)
{
    uint32_t acc = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        *sink = acc;
}

/* One thread: SM cycles (clock64) over at least ns nanoseconds of the
 * global timer; out[0] cycles, out[1] nanoseconds. */
__global__ void nf_clock_kernel(uint64_t ns, unsigned long long *out)
{
    unsigned long long t0, t1;
    long long c0 = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    } while (t1 - t0 < ns);
    long long c1 = clock64();
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = t1 - t0;
}

/* ============================== launchers ================================= */

static cudaError_t nf_launch_flush(const void *buf, uint64_t bytes, uint32_t *sink, int sms,
                                   cudaStream_t s)
{
    uint64_t n = bytes / 16;
    if (!n)
        return cudaSuccess;
    unsigned blocks = (unsigned)(sms > 0 ? sms * 8 : 1024);
    nf_flush_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const uint4 *>(buf), n, sink);
    return cudaGetLastError();
}

template <int F>
static cudaError_t nf_launch_gemv_f(const nf_kargs &a, const nf_kplan &p, cudaStream_t s)
{
    if (nf_kfmt<F>::C != (int)a.g.C)
        return cudaErrorInvalidValue;
    dim3 grid((unsigned)p.blocks), block(p.threads);
    switch (p.R) {
    case 1: nf_gemv_chunk_kernel<F, 1><<<grid, block, 0, s>>>(a); break;
    case 4: nf_gemv_chunk_kernel<F, 4><<<grid, block, 0, s>>>(a); break;
    default: nf_gemv_chunk_kernel<F, 2><<<grid, block, 0, s>>>(a); break;
    }
    return cudaGetLastError();
}

/* y = W x for rows [a.n0, a.n0 + a.nrows) under plan p (nf_k_gemv_plan). */
static cudaError_t nf_launch_gemv(const nf_kargs &a, const nf_kplan &p, cudaStream_t s)
{
    if (!p.blocks || p.blocks > 0x7fffffffull || a.g.nch >= (1ull << 31))
        return cudaErrorInvalidConfiguration;
    if (p.scalar == 2) {
        nf_gemv_gguf_kernel<<<(unsigned)p.blocks, p.threads, 0, s>>>(a);
        return cudaGetLastError();
    }
    if (p.scalar) {
        nf_gemv_elem_kernel<<<(unsigned)p.blocks, p.threads, 0, s>>>(a);
        return cudaGetLastError();
    }
    switch (a.g.format) {
    case NF_FMT_BF16: return nf_launch_gemv_f<NF_FMT_BF16>(a, p, s);
    case NF_FMT_FP32: return nf_launch_gemv_f<NF_FMT_FP32>(a, p, s);
    case NF_FMT_INT32: return nf_launch_gemv_f<NF_FMT_INT32>(a, p, s);
    case NF_FMT_Q2_G64_FP16: return nf_launch_gemv_f<NF_FMT_Q2_G64_FP16>(a, p, s);
    case NF_FMT_Q4_G64_FP16: return nf_launch_gemv_f<NF_FMT_Q4_G64_FP16>(a, p, s);
    case NF_FMT_Q5_G64_FP16: return nf_launch_gemv_f<NF_FMT_Q5_G64_FP16>(a, p, s);
    case NF_FMT_Q6_G64_FP16: return nf_launch_gemv_f<NF_FMT_Q6_G64_FP16>(a, p, s);
    case NF_FMT_Q8_G32_FP16: return nf_launch_gemv_f<NF_FMT_Q8_G32_FP16>(a, p, s);
    case NF_FMT_T2_G128_FP16: return nf_launch_gemv_f<NF_FMT_T2_G128_FP16>(a, p, s);
    case NF_FMT_NVFP4: return nf_launch_gemv_f<NF_FMT_NVFP4>(a, p, s);
    case NF_FMT_FP8_E4M3FN_ROW_BF16: return nf_launch_gemv_f<NF_FMT_FP8_E4M3FN_ROW_BF16>(a, p, s);
    default: return cudaErrorInvalidValue;
    }
}

template <int F>
static cudaError_t nf_launch_decode_f(const nf_kargs &a, cudaStream_t s)
{
    if (nf_kfmt<F>::C != (int)a.g.C)
        return cudaErrorInvalidValue;
    uint64_t blocks = (a.nrows * a.g.nch + 255) / 256;
    if (blocks > 0x7fffffffull)
        return cudaErrorInvalidConfiguration;
    nf_decode_chunk_kernel<F><<<(unsigned)blocks, 256, 0, s>>>(a);
    return cudaGetLastError();
}

/* Decode rows [a.n0, a.n0 + a.nrows) to bf16 into a.out (row i at
 * (i & a.ring) * K, or element e at e & a.ring for the flat kernel). */
static cudaError_t nf_launch_decode(const nf_kargs &a, cudaStream_t s)
{
    if (!a.nrows || !a.g.cols)
        return cudaSuccess;
    bool flat = a.g.esize || !a.g.vec;
    if (flat) {
        uint64_t blocks = (a.nrows * a.g.cols + 8 * 256 - 1) / (8 * 256);
        if (blocks > 0x7fffffffull)
            return cudaErrorInvalidConfiguration;
        nf_decode_flat_kernel<<<(unsigned)blocks, 256, 0, s>>>(a);
        return cudaGetLastError();
    }
    switch (a.g.format) {
    case NF_FMT_Q2_G64_FP16: return nf_launch_decode_f<NF_FMT_Q2_G64_FP16>(a, s);
    case NF_FMT_Q4_G64_FP16: return nf_launch_decode_f<NF_FMT_Q4_G64_FP16>(a, s);
    case NF_FMT_Q5_G64_FP16: return nf_launch_decode_f<NF_FMT_Q5_G64_FP16>(a, s);
    case NF_FMT_Q6_G64_FP16: return nf_launch_decode_f<NF_FMT_Q6_G64_FP16>(a, s);
    case NF_FMT_Q8_G32_FP16: return nf_launch_decode_f<NF_FMT_Q8_G32_FP16>(a, s);
    case NF_FMT_T2_G128_FP16: return nf_launch_decode_f<NF_FMT_T2_G128_FP16>(a, s);
    case NF_FMT_NVFP4: return nf_launch_decode_f<NF_FMT_NVFP4>(a, s);
    case NF_FMT_FP8_E4M3FN_ROW_BF16: return nf_launch_decode_f<NF_FMT_FP8_E4M3FN_ROW_BF16>(a, s);
    default: return cudaErrorInvalidValue;
    }
}

/* x (K bf16 words on the device) -> xf (padded f32, zero past K) */
static cudaError_t nf_launch_x(const uint16_t *x, uint64_t K, float *xf, uint64_t padded,
                               cudaStream_t s)
{
    if (!padded)
        return cudaSuccess;
    uint64_t blocks = (padded + 255) / 256;
    nf_x_f32_kernel<<<(unsigned)blocks, 256, 0, s>>>(x, K, xf, padded);
    return cudaGetLastError();
}

#endif
