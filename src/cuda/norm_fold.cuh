/* STRATA_CUDA_NORM_FOLD: the RMSNorm + activation quantization of a decode step's row computed
 * by every CTA of the launch that reads it (the q/k/v matvec, the gate/up matvecs, the MoE
 * router, the output head), instead of by a one-CTA launch before it. Each CTA gets the row's
 * activation blocks in its shared memory; CTA 0 also writes y and the blocks to global memory
 * for the launches after it. The operations and their order are those of the launch it
 * replaces (ops.cu), so the bits are the same:
 *   act_q8_K (n % 256 == 0): rmsnorm_q256_kernel's: n / 8 threads, thread u holds x[8u .. 8u+7]
 *     (its part of activation block u / 32), its double sum of squares in that order, the warp
 *     tree (xor 16 .. 1), warp partials added in warp order (rms_inv_parts);
 *   act_q8_0 / act_q8_1 (n % 32 == 0, n <= 8192): rmsnorm_q32_kernel's: 1024 threads, thread u
 *     holds x[u + 1024 k], k < 8 (while < n), its double sum in k order, the warp tree, 32
 *     partials in warp order.
 * Those kernels' warps are "virtual" here: real warp w of the CTA's NT / 32 computes virtual
 * warps w, w + NT / 32, ..., each with that warp's lanes and values, so every partial is the
 * same double. y = (x * inv) * w[i] and each block by act_quant_block_regs, lane l holding the
 * same values as in those kernels. Include after ops_dev.cuh (rms_inv_parts). */
#ifndef STRATA_NORM_FOLD_CUH
#define STRATA_NORM_FOLD_CUH
#include "cuda_common.cuh"
#include "act_quant.cuh"

#define NF_MAX_N 8192

/* the formats a fold serves, and the dynamic shared memory it needs (x's row, then the blocks) */
static __host__ __device__ __forceinline__ int nf_fmt_ok(int fmt, int64_t n) {
    if (fmt == ACT_Q8_K) return n > 0 && n % 256 == 0 && n <= NF_MAX_N;
    return (fmt == ACT_Q8_0 || fmt == ACT_Q8_1) && n > 0 && n % 32 == 0 && n <= NF_MAX_N;
}
static __host__ __device__ __forceinline__ size_t nf_act_offset(int64_t n) { return ((size_t)n * 4 + 15) & ~(size_t)15; }
static __host__ __forceinline__ size_t nf_smem_bytes(int fmt, int64_t n) {
    return nf_act_offset(n) + (((size_t)(n / (fmt == ACT_Q8_K ? 256 : 32)) * act_block_bytes_dev(fmt) + 15) & ~(size_t)15);
}

/* By every thread of the CTA (NT threads, NT % 32 == 0, NT <= 1024). dyn: nf_smem_bytes of
 * shared memory, 16-byte aligned: on return dyn holds y (f32, n values) and, from
 * nf_act_offset(n), the row's activation blocks. act_g / y_g: NULL, or where this CTA also
 * writes the blocks / y. Ends with a CTA barrier. */
template <int NT>
static __device__ __forceinline__ void norm_fold_row(const float *__restrict__ x, const float *__restrict__ w, int n,
                                                     float eps, int fmt, uint8_t *dyn, uint8_t *act_g, float *y_g) {
    constexpr int NW = NT / 32;
    __shared__ double nf_part[32];
    __shared__ float nf_inv;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    float *xs = (float *)dyn;
    uint8_t *act_s = dyn + nf_act_offset(n);
    const size_t bb = act_block_bytes_dev(fmt);
    if (fmt == ACT_Q8_K) {
        const int nvw = n / 256;   /* rmsnorm_q256_kernel's warps: one per block */
        for (int vw = warp; vw < nvw; vw += NW) {
            const int u = vw * 32 + lane;
            const float4 a = ((const float4 *)x)[2 * u], b = ((const float4 *)x)[2 * u + 1];
            const float v[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
            double ss = 0;
#pragma unroll
            for (int k = 0; k < 8; k++) { double d = v[k]; ss += d * d; }
#pragma unroll
            for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
            if (lane == 0) nf_part[vw] = ss;
            ((float4 *)xs)[2 * u] = a;
            ((float4 *)xs)[2 * u + 1] = b;
        }
        __syncthreads();
        if (tid == 0) nf_inv = rms_inv_parts(nf_part, nvw, n, eps);
        __syncthreads();
        const float inv = nf_inv;
        for (int vw = warp; vw < nvw; vw += NW) {
            const int u = vw * 32 + lane;
            const float4 a = ((const float4 *)xs)[2 * u], b = ((const float4 *)xs)[2 * u + 1];
            float v[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = __fmul_rn(__fmul_rn(v[k], inv), w[8 * u + k]);
            ((float4 *)xs)[2 * u] = make_float4(v[0], v[1], v[2], v[3]);
            ((float4 *)xs)[2 * u + 1] = make_float4(v[4], v[5], v[6], v[7]);
            if (y_g) {
                ((float4 *)y_g)[2 * u] = make_float4(v[0], v[1], v[2], v[3]);
                ((float4 *)y_g)[2 * u + 1] = make_float4(v[4], v[5], v[6], v[7]);
            }
            act_quant_block_regs<256>(v, act_s + (size_t)vw * bb, ACT_Q8_K);
        }
    } else {
        for (int vw = warp; vw < 32; vw += NW) {   /* rmsnorm_q32_kernel's 32 warps */
            const int u = vw * 32 + lane;
            double ss = 0;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const int i = u + k * 1024;
                if (i < n) { const float xv = x[i]; double d = xv; ss += d * d; xs[i] = xv; }
            }
#pragma unroll
            for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
            if (lane == 0) nf_part[vw] = ss;
        }
        __syncthreads();
        if (tid == 0) nf_inv = rms_inv_parts(nf_part, 32, n, eps);
        __syncthreads();
        const float inv = nf_inv;
        for (int vw = warp; vw < 32; vw += NW)
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const int base = k * 1024 + vw * 32;   /* the virtual warp's block k */
                if (base >= n) break;                  /* whole warp: n % 32 == 0 */
                const int i = base + lane;
                float yv = __fmul_rn(__fmul_rn(xs[i], inv), w[i]);
                xs[i] = yv;
                if (y_g) y_g[i] = yv;
                act_quant_block_regs<32>(&yv, act_s + (size_t)(base / 32) * bb, fmt);
            }
    }
    __syncthreads();
    if (act_g) {   /* the blocks for the launches after this one (rows of 4-byte multiples) */
        const int words = (int)((size_t)(n / (fmt == ACT_Q8_K ? 256 : 32)) * bb / 4);
        for (int i = tid; i < words; i += NT) ((uint32_t *)act_g)[i] = ((const uint32_t *)act_s)[i];
    }
}
#endif
