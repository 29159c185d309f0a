/* The norms' device pieces shared by ops.cu, moe.cu and attn_tc.cu (the q / k head norms inside the
 * tensor-core decode launch): the partial sums' combine and one row a warp. */
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

/* One row of n <= 256 values by one warp, rmsnorm_row's operations at 256 threads (ops.cu,
 * rmsnorm2_warp_kernel): lane l holds x[32 i + l] (i < 8), exactly what thread 32 i + l of
 * rmsnorm_row holds; the eight warps' butterflies run side by side in one warp (the same shuffles,
 * so lane 0 ends with each warp's part), the parts meet in rms_inv_parts (zeros for the warps past
 * n: adding +0.0 changes no bit), and y = (x * inv) * w. wv: lane l's weights w[32 i + l] when
 * loaded before (NULL: read from w here). yr may be xr (a lane writes only the values it read).
 * Every lane of the warp calls it. */
static __device__ __forceinline__ void norm_row_warp(const float *xr, const float *w, const float *wv, float *yr, int n,
                                                     float eps, int lane) {
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

/* A thread of rmsnorm_q256_kernel (and of the MoE router launch that takes the ffn norm): values
 * 8 tid .. 8 tid + 7 of the row (xr8 = row + 8 tid, 16-byte aligned) into v, their squares' sum in
 * double, the warp's butterfly, lane 0's sum into part[warp]; then, after the barrier and
 * rms_inv_parts, norm8_apply. The same operations wherever called: the same bits by construction. */
static __device__ __forceinline__ void norm8_sum(const float *v, double *part, int tid) {   /* the squares' part */
    double ss = 0;
#pragma unroll
    for (int k = 0; k < 8; k++) { double d = v[k]; ss += d * d; }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
    if ((tid & 31) == 0) part[tid >> 5] = ss;
}
static __device__ __forceinline__ void norm8_squares(float *v, const float *xr8, double *part, int tid) {
    const float4 a = ((const float4 *)xr8)[0], b = ((const float4 *)xr8)[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    norm8_sum(v, part, tid);
}
/* the same with the 8 values read through L2 (__ldcg): rows other CTAs of the launch wrote
 * (the MoE down kernel's last CTA, CUDA_MOE_FAST_NEXTNORM) */
static __device__ __forceinline__ void norm8_squares_cg(float *v, const float *xr8, double *part, int tid) {
    const float4 a = __ldcg((const float4 *)xr8), b = __ldcg((const float4 *)xr8 + 1);
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w; v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    norm8_sum(v, part, tid);
}
/* y = (x * inv) * w on the thread's 8 values (w: its 8 weights) */
static __device__ __forceinline__ void norm8_apply(float *v, float inv, const float *w) {
#pragma unroll
    for (int k = 0; k < 8; k++) v[k] = __fmul_rn(__fmul_rn(v[k], inv), w[k]);
}
#endif
