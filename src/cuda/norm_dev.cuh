/* The RMSNorm's device bodies shared by ops.cu's norm kernels and attn_tc.cu's decode launch
 * (STRATA_CUDA_ATTN_TC_DEC bit 512: the q / k head norms folded in): one order, one place. */
#ifndef STRATA_NORM_DEV_CUH
#define STRATA_NORM_DEV_CUH
#include "cuda_common.cuh"

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
#endif
