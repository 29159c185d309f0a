/* The RMSNorm's device bodies shared by ops.cu's norm kernels and attn_tc.cu's decode launch
 * (STRATA_CUDA_ATTN_TC_DEC bit 512: the q / k head norms folded in): one order, one place. */
#ifndef STRATA_NORM_DEV_CUH
#define STRATA_NORM_DEV_CUH
#include "cuda_common.cuh"
#include "act_quant.cuh"
#include "cuda_internal.h"

/* Thread 0 of a norm: 1 / sqrt(mean square + eps) from the CTA's per-warp partial sums,
 * added in slot order (the order every norm kernel here uses). */
static __device__ __forceinline__ float rms_inv_parts(const double *part, int nparts, int n, float eps) {
    double t = 0;
    for (int i = 0; i < nparts; i++) t += part[i];
    return (float)(1.0 / sqrt(t / n + (double)eps));
}

/* One row of n <= 256 by the calling warp, rmsnorm_row's operations at 256 threads: lane l holds
 * x[32 i + l] (i < 8), exactly what thread 32 i + l of the 256 holds; the eight warps'
 * butterflies run side by side in this warp (the same shuffles, so lane 0 ends with each warp's
 * part), the parts meet in rms_inv_parts as there (zeros for the warps past n: adding +0.0
 * changes no bit), and y = (x * inv) * w. wv: lane l's weights w[32 i + l] already in registers,
 * or NULL (read from w). yr may be shared memory; xr is read before any store to yr. */
static __device__ __forceinline__ void rms_row_warp(const float *xr, const float *w, const float *wv, float *yr, int n,
                                                    float eps) {
    const int lane = threadIdx.x & 31;
    float xv[8];
    double a[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int j = 32 * i + lane;
        xv[i] = j < n ? xr[j] : 0.0f;
        const double v = xv[i];
        a[i] = j < n ? v * v : 0.0;   /* rmsnorm_row: ss = 0 + v * v, or 0 without a value */
    }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1)
#pragma unroll
        for (int i = 0; i < 8; i++)
            if (32 * i < n) a[i] += __shfl_xor_sync(FULL_MASK, a[i], s);
    double part[8];
#pragma unroll
    for (int i = 0; i < 8; i++) part[i] = 32 * i < n ? __shfl_sync(FULL_MASK, a[i], 0) : 0.0;
    const float inv = rms_inv_parts(part, 8, n, eps);
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int j = 32 * i + lane;
        if (j < n) yr[j] = __fmul_rn(__fmul_rn(xv[i], inv), wv ? wv[i] : w[j]);
    }
}
/* STRATA_CUDA_NORM_FOLD: the RMSNorm + quantization launch of one row (cuda_rmsnorm_quant) done
 * instead by the last CTA of the launch before it (the residual add's), any CTA size that is a
 * multiple of 32: thread t plays the launch's threads t, t + blockDim.x, ..., so every warp of
 * the launch is one warp here (the same lanes, the same shuffles), its partial sums land in the
 * same slots and rms_inv_parts adds them in the same order, and each activation block is
 * quantized by act_quant_block_regs from the same registers' values: the launch's bits.
 * kind 1: rmsnorm_q256_kernel (n / 8 threads of 8 values), 2: rmsnorm_q32_kernel (1024 threads,
 * elements t + 1024 k). x was written by other CTAs of this launch: read through L2 (__ldcg). */
#define NORM_FOLD_Q256 1
#define NORM_FOLD_Q32 2
#define NORM_FOLD_REG_K 8   /* rmsnorm_q32_kernel's NORM_REG_K */
static __device__ __forceinline__ void rmsnorm_quant_cta(const float *x, const float *__restrict__ w, float *y, int n, float eps,
                                                         uint8_t *act, int fmt, int kind) {
    __shared__ double np[32];
    __shared__ float ninv;
    const int R = blockDim.x, lane = threadIdx.x & 31;
    const int NV = kind == NORM_FOLD_Q256 ? n / 8 : 1024;   /* the launch's threads */
    for (int vt = threadIdx.x; vt < NV; vt += R) {           /* whole warps: NV % 32 == 0 */
        if ((vt & ~31) >= n) {   /* kind 2, a warp past the row: no value, its sums stay +0.0 through the shuffles */
            if (lane == 0) np[vt >> 5] = 0.0;
            continue;
        }
        double ss = 0;
        if (kind == NORM_FOLD_Q256) {
#pragma unroll
            for (int k = 0; k < 8; k++) { double d = __ldcg(x + (size_t)vt * 8 + k); ss += d * d; }
        } else {
#pragma unroll
            for (int k = 0; k < NORM_FOLD_REG_K; k++) {
                const int i = vt + k * 1024;
                if (i < n) { double d = __ldcg(x + i); ss += d * d; }
            }
        }
#pragma unroll
        for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
        if (lane == 0) np[vt >> 5] = ss;
    }
    __syncthreads();
    if (threadIdx.x == 0) ninv = rms_inv_parts(np, NV >> 5, n, eps);
    __syncthreads();
    const float inv = ninv;
    for (int vt = threadIdx.x; vt < NV; vt += R) {
        if (kind == NORM_FOLD_Q256) {
            float v[8];
#pragma unroll
            for (int k = 0; k < 8; k++) v[k] = __fmul_rn(__fmul_rn(__ldcg(x + (size_t)vt * 8 + k), inv), w[(size_t)vt * 8 + k]);
#pragma unroll
            for (int k = 0; k < 8; k++) y[(size_t)vt * 8 + k] = v[k];
            act_quant_block_regs<256>(v, act + (size_t)(vt >> 5) * sizeof_i(act_q8_K), ACT_Q8_K);
        } else {
            const size_t bb = act_block_bytes_dev(fmt);
#pragma unroll
            for (int k = 0; k < NORM_FOLD_REG_K; k++) {
                const int base = k * 1024 + (vt & ~31);   /* the warp's block */
                if (base >= n) break;                     /* whole warp: n % 32 == 0 */
                const float yv = __fmul_rn(__fmul_rn(__ldcg(x + base + lane), inv), w[base + lane]);
                y[base + lane] = yv;
                act_quant_block_regs<32>(&yv, act + (size_t)(base / 32) * bb, fmt);
            }
        }
    }
}
/* Called by every thread of every CTA of a launch after its global stores: nonzero in the
 * launch's last CTA to arrive, which then sees every CTA's stores (a zeroed counter it must
 * reset). Only thread 0 fences: the CTA barrier orders the CTA's stores before that fence,
 * and release is cumulative. */
static __device__ __forceinline__ int last_cta_arrived(unsigned *counter) {
    __shared__ int s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        s_last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (s_last) __threadfence();
    return s_last;
}

/* The tail of a launch that carries an mv_norm (every thread of every CTA of a one-dimensional
 * grid calls it after its stores). */
static __device__ __forceinline__ void norm_fold_tail(const mv_norm &nm) {
    if (!nm.kind || !last_cta_arrived(nm.counter)) return;
    rmsnorm_quant_cta(nm.x, nm.w, nm.y, nm.n, nm.eps, nm.act, nm.fmt, nm.kind);
    if (threadIdx.x == 0) *nm.counter = 0;
}
#endif
