/* CUDA ops other than matvec: embedding, RMSNorm (+ fused activation quantization), RoPE,
 * KV-cache store, attention (chunks of the sequence in parallel), SwiGLU, residual add, greedy argmax.
 *
 * Agreement with the CPU backend (src/cpu/backend_cpu.c), op by op:
 *   embed     bit-identical (same dequantization formula, rounded operations)
 *   rmsnorm   sum of squares in double (order differs: tree, not sequential), then the CPU's
 *             float formula; equal bits except when the double sums round apart (rare)
 *   rope      bit-identical: cos/sin come from a host table made with the CPU's cosf/sinf
 *   kv store  bit-identical (f32 -> f16 round to nearest even; or the int8 cache's act_q8_0
 *             blocks: the CPU's act_quantize_row bytes)
 *   attention bit-identical: the canonical chunked order (src/model/attn_order.h), chunks in parallel
 *   swiglu    CUDA expf (<= 2 ulp) vs glibc expf: within 1e-6 relative
 *   add       bit-identical */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "formats.cuh"
#include "act_quant.cuh"
#include "expf_host.cuh"

EXPF_DEVICE_STATE
int cuda_ops_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
#include "ops_dev.cuh"
#include "model/attn_order.h"
extern "C" {
#include "core/env.h"
}
#include <float.h>

/* programmatic dependent launch (cuda_common.cuh's klaunch): off until the backend turns it on */
static int g_pdl = 0, g_pdl_early = -1, g_pdl_mode = 0, g_pdl_max_T = 8;
static int *d_pdl_vals;   /* { 0, 1 }: the sources of the stream-ordered constant copies */
PDL_TU_STATE(ops)
PF_TU_STATE(ops)
static void pdl_early_all(int e) {
    cuda_pdl_early_ops(e); cuda_pdl_early_matvec(e); cuda_pdl_early_mm(e); cuda_pdl_early_moe(e);
    cuda_pdl_early_attn_prompt(e); cuda_pdl_early_attn_tc(e);
}
void cuda_set_pdl(int mode, int max_T) {
    g_pdl = mode ? 1 : 0;
    g_pdl_mode = mode;
    g_pdl_max_T = max_T;
    if (mode == 2 && !d_pdl_vals) {
        static const int v[2] = { 0, 1 };
        if (cudaMalloc((void **)&d_pdl_vals, sizeof v) != cudaSuccess ||
            cudaMemcpy(d_pdl_vals, v, sizeof v, cudaMemcpyHostToDevice) != cudaSuccess) {
            cudaGetLastError();
            if (d_pdl_vals) cudaFree(d_pdl_vals);
            d_pdl_vals = NULL;
            g_pdl_mode = 1;   /* no copies possible: plain "on" */
        }
    }
    /* every file's constant (backend creation); either value gives the same bits, so a kernel of
     * another backend that reads it meanwhile is only faster or slower. Early mode keeps the
     * value its passes set (cuda_pdl_pass). */
    const int e = g_pdl_mode == 2;
    if (e && g_pdl_early >= 0) return;
    if (e == g_pdl_early) return;
    g_pdl_early = e;
    pdl_early_all(e);
}
void cuda_pdl_pass(int T, cudaStream_t st) {
    if (g_pdl_mode != 2) return;
    const int e = T <= g_pdl_max_T;
    if (e == g_pdl_early) return;
    g_pdl_early = e;   /* either value gives the same bits; a kernel reads it before its wait */
    cuda_pdl_early_ops_async(d_pdl_vals + e, st); cuda_pdl_early_matvec_async(d_pdl_vals + e, st);
    cuda_pdl_early_mm_async(d_pdl_vals + e, st); cuda_pdl_early_moe_async(d_pdl_vals + e, st);
    cuda_pdl_early_attn_prompt_async(d_pdl_vals + e, st); cuda_pdl_early_attn_tc_async(d_pdl_vals + e, st);
}
int cuda_pdl_on(void) { return g_pdl; }

/* ---- embedding: element dequantization, the reference formula of each format ------------ */
static __device__ __forceinline__ float dq_elem(const uint8_t *row, int type, int64_t j) {
    switch (type) {
    case TYPE_F32: return ((const float *)row)[j];
    case TYPE_F16: return h2f(((const uint16_t *)row)[j]);
    case TYPE_BF16: return bf2f(((const uint16_t *)row)[j]);
    case TYPE_Q4_0: {
        const int qs = offsetof_i(block_q4_0, qs);
        const uint8_t *b = row + (j / QK4_0) * sizeof_i(block_q4_0); int k = (int)(j % QK4_0);
        int q = k < 16 ? (b[qs + k] & 15) : (b[qs + k - 16] >> 4);
        return __fmul_rn(h2f(ld_u16(b)), (float)(q - 8));
    }
    case TYPE_Q4_1: {
        const int qs = offsetof_i(block_q4_1, qs);
        const uint8_t *b = row + (j / QK4_1) * sizeof_i(block_q4_1); int k = (int)(j % QK4_1);
        int q = k < 16 ? (b[qs + k] & 15) : (b[qs + k - 16] >> 4);
        return __fadd_rn(__fmul_rn(h2f(ld_u16(b)), (float)q), h2f(ld_u16(b + offsetof_i(block_q4_1, m))));
    }
    case TYPE_Q5_0: {
        const int qs = offsetof_i(block_q5_0, qs);
        const uint8_t *b = row + (j / QK5_0) * sizeof_i(block_q5_0); int k = (int)(j % QK5_0);
        uint32_t qh = ld_u32_a2(b + offsetof_i(block_q5_0, qh));
        int q = (k < 16 ? (b[qs + k] & 15) : (b[qs + k - 16] >> 4)) | (int)((qh >> k) & 1) << 4;
        return __fmul_rn(h2f(ld_u16(b)), (float)(q - 16));
    }
    case TYPE_Q5_1: {
        const int qs = offsetof_i(block_q5_1, qs);
        const uint8_t *b = row + (j / QK5_1) * sizeof_i(block_q5_1); int k = (int)(j % QK5_1);
        uint32_t qh = ld_u32(b + offsetof_i(block_q5_1, qh));
        int q = (k < 16 ? (b[qs + k] & 15) : (b[qs + k - 16] >> 4)) | (int)((qh >> k) & 1) << 4;
        return __fadd_rn(__fmul_rn(h2f(ld_u16(b)), (float)q), h2f(ld_u16(b + offsetof_i(block_q5_1, m))));
    }
    case TYPE_Q8_0: {
        const uint8_t *b = row + (j / QK8_0) * sizeof_i(block_q8_0);
        return __fmul_rn((float)(int8_t)b[offsetof_i(block_q8_0, qs) + j % QK8_0], h2f(ld_u16(b)));
    }
    case TYPE_Q2_0: {
        const uint8_t *b = row + (j / QK2_0) * sizeof_i(block_q2_0); int k = (int)(j % QK2_0);
        int c = (b[offsetof_i(block_q2_0, qs) + k / 4] >> (2 * (k % 4))) & 3;
        return __fmul_rn((float)(c - 1), h2f(ld_u16(b)));
    }
    case TYPE_Q2_K: {
        const uint8_t *b = row + (j / QK_K) * sizeof_i(block_q2_K); int k = (int)(j % QK_K);
        int q = (b[offsetof_i(block_q2_K, qs) + 32 * (k / 128) + k % 32] >> (2 * ((k % 128) / 32))) & 3;
        int sc = b[offsetof_i(block_q2_K, scales) + k / 16];
        float dl = __fmul_rn(h2f(ld_u16(b + offsetof_i(block_q2_K, d))), (float)(sc & 15)),
              ml = __fmul_rn(h2f(ld_u16(b + offsetof_i(block_q2_K, dmin))), (float)(sc >> 4));
        return __fsub_rn(__fmul_rn(dl, (float)q), ml);
    }
    case TYPE_Q3_K: {
        const uint8_t *b = row + (j / QK_K) * sizeof_i(block_q3_K); int k = (int)(j % QK_K);
        int lo = (b[offsetof_i(block_q3_K, qs) + 32 * (k / 128) + k % 32] >> (2 * ((k % 128) / 32))) & 3;
        int hb = (b[offsetof_i(block_q3_K, hmask) + k % 32] >> (k / 32)) & 1;
        int q = lo - (hb ? 0 : 4), i = k / 16;
        const uint8_t *s = b + offsetof_i(block_q3_K, scales);
        int sl = i < 8 ? s[i] & 0x0F : s[i - 8] >> 4, sh = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        return __fmul_rn(__fmul_rn(h2f(ld_u16(b + offsetof_i(block_q3_K, d))), (float)((sl | sh << 4) - 32)), (float)q);
    }
    case TYPE_Q4_K: case TYPE_Q5_K: {
        int q5 = type == TYPE_Q5_K;
        const uint8_t *b = row + (j / QK_K) * (q5 ? sizeof_i(block_q5_K) : sizeof_i(block_q4_K));
        int k = (int)(j % QK_K);
        const uint8_t *qs = b + (q5 ? offsetof_i(block_q5_K, qs) : offsetof_i(block_q4_K, qs));
        int q = (qs[32 * (k / 64) + k % 32] >> (4 * ((k % 64) / 32))) & 15;
        if (q5) q |= ((b[offsetof_i(block_q5_K, qh) + k % 32] >> (k / 32)) & 1) << 4;
        int s = k / 32, sc, m;
        const uint8_t *p = b + offsetof_i(block_q4_K, scales);   /* Q5_K's too (quant_blocks.cuh) */
        if (s < 4) { sc = p[s] & 63; m = p[s + 4] & 63; }
        else { sc = (p[s + 4] & 15) | (p[s - 4] >> 6) << 4; m = (p[s + 4] >> 4) | (p[s] >> 6) << 4; }
        float ds = __fmul_rn(h2f(ld_u16(b)), (float)sc),
              dm = __fmul_rn(h2f(ld_u16(b + offsetof_i(block_q4_K, dmin))), (float)m);
        return __fsub_rn(__fmul_rn(ds, (float)q), dm);
    }
    case TYPE_Q6_K: {
        const uint8_t *b = row + (j / QK_K) * sizeof_i(block_q6_K); int k = (int)(j % QK_K);
        int lo = (b[offsetof_i(block_q6_K, ql) + 64 * (k / 128) + k % 64] >> (4 * ((k % 128) / 64))) & 15;
        int hi = (b[offsetof_i(block_q6_K, qh) + 32 * (k / 128) + k % 32] >> (2 * ((k % 128) / 32))) & 3;
        return __fmul_rn(__fmul_rn(h2f(ld_u16(b + offsetof_i(block_q6_K, d))),
                                   (float)(int8_t)b[offsetof_i(block_q6_K, scales) + k / 16]),
                         (float)((lo | hi << 4) - 32));
    }
    case TYPE_MXFP4: {
        const int qs = offsetof_i(block_mxfp4, qs);
        const uint8_t *b = row + (j / QK_MXFP4) * sizeof_i(block_mxfp4); int k = (int)(j % QK_MXFP4);
        uint32_t c = k < 16 ? (b[qs + k] & 15) : (b[qs + k - 16] >> 4);
        int m = (int)(c & 7), v = m < 4 ? m : (m < 6 ? (m - 2) * 2 : (m - 4) * 4);
        uint32_t e = b[offsetof_i(block_mxfp4, e)];
        float d = __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
        return __fmul_rn(d, (float)((c & 8) ? -v : v));
    }
    }
    return 0.0f;
}

int cuda_embed_supported(int type) {
    switch (type) {
    case TYPE_F32: case TYPE_F16: case TYPE_BF16: case TYPE_Q4_0: case TYPE_Q4_1: case TYPE_Q5_0: case TYPE_Q5_1:
    case TYPE_Q8_0: case TYPE_Q2_0: case TYPE_Q2_K: case TYPE_Q3_K: case TYPE_Q4_K: case TYPE_Q5_K: case TYPE_Q6_K:
    case TYPE_MXFP4:
        return 1;
    }
    return 0;
}

__global__ void embed_kernel(const uint8_t *W, int type, size_t row_bytes, int64_t n, const int32_t *ids, float *x, float scale) {
    PDL_WAIT();
    int t = blockIdx.y;
    int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float v = dq_elem(W + (size_t)ids[t] * row_bytes, type, j);
    if (scale != 1.0f) v = __fmul_rn(v, scale);
    x[(size_t)t * n + j] = v;
}

int cuda_embed(const void *W, int type, int64_t n, const int32_t *d_ids, int T, float *x, float scale, cudaStream_t st) {
    int blck, af, bs;
    if (!cuda_embed_supported(type) || cuda_type_info(type, &blck, &af, &bs)) return -1;
    size_t row_bytes = (size_t)(n / blck) * (size_t)bs;
    dim3 grid((unsigned)((n + 255) / 256), (unsigned)T);
    klaunch(embed_kernel, grid, 256, 0, st, (const uint8_t *)W, type, row_bytes, n, d_ids, x, scale);
    return CU_LAUNCHED();
}

/* ---- RMSNorm: one CTA per row ------------------------------------------------------------ */
#define NORM_THREADS 256
#define NORM_THREADS_FUSED 1024   /* one warp per activation block of a 1024-wide row: one round */
/* One row of RMSNorm by the calling CTA (+ its activation blocks when act != NULL). */
static __device__ __forceinline__ void rmsnorm_row(const float *__restrict__ xr, const float *__restrict__ w, float *yr, int n,
                                                   float eps, uint8_t *act, int act_fmt, const float *w0 = nullptr) {
    __shared__ double part[32];
    __shared__ float inv_s;
    double ss = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) { double v = xr[i]; ss += v * v; }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x == 0) inv_s = rms_inv_parts(part, (int)(blockDim.x >> 5), n, eps);
    __syncthreads();
    float inv = inv_s;
    for (int i = threadIdx.x; i < n; i += blockDim.x)   /* w0: w[threadIdx.x], loaded before the wait */
        yr[i] = __fmul_rn(__fmul_rn(xr[i], inv), w0 && i == (int)threadIdx.x ? *w0 : w[i]);
    if (act) {
        __syncthreads();   /* this CTA's y row is written and visible to its threads */
        act_quant_row_cta(yr, n, act, act_fmt);
    }
}

__global__ void rmsnorm_kernel(const float *__restrict__ x, const float *__restrict__ w, float *y, int n, float eps,
                               uint8_t *act, size_t act_row_bytes, int act_fmt) {
    PDL_WAIT();
    int r = blockIdx.x;
    rmsnorm_row(x + (size_t)r * n, w, y + (size_t)r * n, n, eps, act ? act + (size_t)r * act_row_bytes : NULL, act_fmt);
}

/* Two independent RMSNorms of rows of n in one launch (q's and k's per-head norms): CTA r
 * < rows1 does row r of the first, the rest the second; each row as rmsnorm_kernel. */
__global__ void rmsnorm2_kernel(const float *__restrict__ x1, const float *__restrict__ w1, float *y1, int rows1,
                                const float *__restrict__ x2, const float *__restrict__ w2, float *y2, int n, float eps) {
    int r = blockIdx.x;
    /* STRATA_CUDA_PREFETCH bit 4: the thread's first weight into a register before the wait (the
     * norm weights are the model's, never written by a kernel); the same value, so the same bits */
    const float *wr = r < rows1 ? w1 : w2;
    float w0 = 0.0f;
    const bool early = (c_prefetch & CUDA_PF_NORMW) && (int)threadIdx.x < n;
    if (early) w0 = wr[threadIdx.x];
    PDL_WAIT();
    if (r < rows1) rmsnorm_row(x1 + (size_t)r * n, w1, y1 + (size_t)r * n, n, eps, NULL, 0, early ? &w0 : nullptr);
    else rmsnorm_row(x2 + (size_t)(r - rows1) * n, w2, y2 + (size_t)(r - rows1) * n, n, eps, NULL, 0, early ? &w0 : nullptr);
}

/* rmsnorm2_kernel's rows (n <= 256) a warp each, NORM_WARP_ROWS rows a CTA: norm_row_warp
 * (norm_dev.cuh: rmsnorm_row's operations at 256 threads, the eight warps' butterflies side by side
 * in one warp), which the tensor-core decode launch also runs for the q / k head norms
 * (STRATA_CUDA_ATTN_TC_DEC bit 512). The same operations in the same order: the same bits
 * (test_gpu_ops). */
#define NORM_WARP_ROWS 8
__global__ void __launch_bounds__(NORM_WARP_ROWS * 32)
rmsnorm2_warp_kernel(const float *__restrict__ x1, const float *__restrict__ w1, float *y1, int rows1,
                     const float *__restrict__ x2, const float *__restrict__ w2, float *y2, int rows, int n, float eps) {
    const int lane = threadIdx.x & 31, r = blockIdx.x * NORM_WARP_ROWS + (threadIdx.x >> 5);
    const bool first = r < rows1;
    const float *wr = first ? w1 : w2;
    float wv[8];
    const bool early = (c_prefetch & CUDA_PF_NORMW) && r < rows;   /* as rmsnorm2_kernel: the weights before the wait */
    if (early)
#pragma unroll
        for (int i = 0; i < 8; i++) wv[i] = 32 * i + lane < n ? wr[32 * i + lane] : 0.0f;
    PDL_WAIT();
    if (r >= rows) return;
    const float *xr = first ? x1 + (size_t)r * n : x2 + (size_t)(r - rows1) * n;
    float *yr = first ? y1 + (size_t)r * n : y2 + (size_t)(r - rows1) * n;
    norm_row_warp(xr, wr, early ? wv : NULL, yr, n, eps, lane);
}

/* STRATA_CUDA_NORM_WARP: 1 rmsnorm2_warp_kernel where n <= 256, 0 (default) a CTA a row */
static int norm_warp = 0;
void cuda_ops_set_norm_warp(int on) { norm_warp = on ? 1 : 0; }

int cuda_rmsnorm2(const float *x1, const float *w1, float *y1, int rows1, const float *x2, const float *w2, float *y2,
                  int rows2, int n, float eps, cudaStream_t st) {
    static_assert(NORM_THREADS == 256, "rmsnorm2_warp_kernel mirrors rmsnorm_row at 256 threads");
    if (norm_warp && n <= 256) {
        const int rows = rows1 + rows2;
        klaunch(rmsnorm2_warp_kernel, (unsigned)((rows + NORM_WARP_ROWS - 1) / NORM_WARP_ROWS), NORM_WARP_ROWS * 32, 0, st,
                x1, w1, y1, rows1, x2, w2, y2, rows, n, eps);
        return CU_LAUNCHED();
    }
    klaunch(rmsnorm2_kernel, rows1 + rows2, NORM_THREADS, 0, st, x1, w1, y1, rows1, x2, w2, y2, n, eps);
    return CU_LAUNCHED();
}

/* Fused RMSNorm + quantization for 32-value activation blocks (act_q8_0 / act_q8_1), n <= 8192,
 * n % 32 == 0: thread i keeps elements i + 1024 k in registers, so warp w holds exactly the
 * activation blocks w + 32 k and quantizes them without reading y back. Same operations and
 * order as rmsnorm_kernel + act_quant_block<32>. */
#define NORM_REG_K 8
__global__ void __launch_bounds__(1024)
rmsnorm_q32_kernel(const float *__restrict__ x, const float *__restrict__ w, float *y, int n, float eps, uint8_t *act,
                   size_t act_row_bytes, int act_fmt) {
    int r = blockIdx.x, tid = threadIdx.x;
    /* STRATA_CUDA_PREFETCH bit 4: the thread's weights into registers before the wait (the same values) */
    const bool early = (c_prefetch & CUDA_PF_NORMW) != 0;
    float wv[NORM_REG_K];
#pragma unroll
    for (int k = 0; k < NORM_REG_K; k++) {
        const int i = tid + k * 1024;
        wv[k] = early && i < n ? w[i] : 0.0f;
    }
    PDL_WAIT();
    __shared__ double part[32];
    __shared__ float inv_s;
    const float *xr = x + (size_t)r * n;
    float *yr = y + (size_t)r * n;
    float xv[NORM_REG_K];
    double ss = 0;
#pragma unroll
    for (int k = 0; k < NORM_REG_K; k++) {
        int i = tid + k * 1024;
        xv[k] = i < n ? xr[i] : 0.0f;
        if (i < n) { double v = xv[k]; ss += v * v; }
    }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
    if ((tid & 31) == 0) part[tid >> 5] = ss;
    __syncthreads();
    if (tid == 0) inv_s = rms_inv_parts(part, 32, n, eps);
    __syncthreads();
    float inv = inv_s;
    uint8_t *arow = act + (size_t)r * act_row_bytes;
    size_t bb = act_block_bytes_dev(act_fmt);
#pragma unroll
    for (int k = 0; k < NORM_REG_K; k++) {
        int base = k * 1024 + (tid & ~31);   /* first element of this warp's block */
        if (base >= n) break;                /* whole warp: n % 32 == 0 */
        float yv = __fmul_rn(__fmul_rn(xv[k], inv), early ? wv[k] : w[base + (tid & 31)]);
        yr[base + (tid & 31)] = yv;
        act_quant_block_regs<32>(&yv, arow + (size_t)(base / 32) * bb, act_fmt);
    }
}

/* Fused RMSNorm + act_q8_K quantization (256-value blocks), n % 256 == 0, n <= 8192: n / 8
 * threads, lane l of warp w holds the 8 values w * 256 + 8 l .. + 7, i.e. exactly its part
 * of activation block w (act_quant_block_regs<256>'s layout), so the block is quantized from
 * registers. The norm is rmsnorm_kernel's formula (double sum of squares, 1 / sqrt). */
__global__ void __launch_bounds__(1024)
rmsnorm_q256_kernel(const float *__restrict__ x, const float *__restrict__ w, float *y, int n, float eps, uint8_t *act,
                    size_t act_row_bytes) {
    /* STRATA_CUDA_PREFETCH bit 4: the thread's 8 weights into registers before the wait (the same values) */
    const bool early = (c_prefetch & CUDA_PF_NORMW) != 0;
    float we[8];
#pragma unroll
    for (int k = 0; k < 8; k++) we[k] = early ? w[(size_t)threadIdx.x * 8 + k] : 0.0f;   /* w: 4-byte aligned only */
    PDL_WAIT();
    __shared__ double part[32];
    __shared__ float inv_s;
    const int r = blockIdx.x, tid = threadIdx.x, nw = blockDim.x >> 5;
    float v[8];
    norm8_squares(v, x + (size_t)r * n + (size_t)tid * 8, part, tid);   /* norm_dev.cuh */
    __syncthreads();
    if (tid == 0) inv_s = rms_inv_parts(part, nw, n, eps);
    __syncthreads();
    const float *wr = w + (size_t)tid * 8;
    float wv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) wv[k] = early ? we[k] : wr[k];
    norm8_apply(v, inv_s, wv);
    float4 *yr = (float4 *)(y + (size_t)r * n + (size_t)tid * 8);
    yr[0] = make_float4(v[0], v[1], v[2], v[3]);
    yr[1] = make_float4(v[4], v[5], v[6], v[7]);
    act_quant_block_regs<256>(v, act + (size_t)r * act_row_bytes + (size_t)(tid >> 5) * sizeof_i(act_q8_K), ACT_Q8_K);
}

int cuda_rmsnorm(const float *x, const float *w, float *y, int rows, int n, float eps, cudaStream_t st) {
    klaunch(rmsnorm_kernel, rows, NORM_THREADS, 0, st, x, w, y, n, eps, (uint8_t *)NULL, (size_t)0, 0);
    return CU_LAUNCHED();
}

int cuda_rmsnorm_quant(const float *x, const float *w, float *y, int rows, int n, float eps, void *act, int act_fmt,
                       cudaStream_t st) {
    if (act_fmt == ACT_Q8_K && n % 256 == 0 && n <= 8192 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0)
        klaunch(rmsnorm_q256_kernel, rows, n / 8, 0, st, x, w, y, n, eps, (uint8_t *)act, cuda_act_row_bytes(act_fmt, n));
    else if ((act_fmt == ACT_Q8_0 || act_fmt == ACT_Q8_1) && n % 32 == 0 && n <= NORM_REG_K * 1024)
        klaunch(rmsnorm_q32_kernel, rows, 1024, 0, st, x, w, y, n, eps, (uint8_t *)act, cuda_act_row_bytes(act_fmt, n), act_fmt);
    else
        klaunch(rmsnorm_kernel, rows, NORM_THREADS_FUSED, 0, st, x, w, y, n, eps, (uint8_t *)act, cuda_act_row_bytes(act_fmt, n), act_fmt);
    return CU_LAUNCHED();
}

/* ---- RoPE (ops_dev.cuh's rope_pair) ------------------------------------------------------ */

__global__ void rope_kernel(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos,
                            const float *cs) {
    PDL_WAIT();
    int half = n_rot / 2;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * n_heads * half) return;
    int i = idx % half, h = (idx / half) % n_heads, t = idx / (half * n_heads);
    int pos = (d_pos ? d_pos[0] : pos0) + t;
    float c = cs[((size_t)pos * half + i) * 2], s = cs[((size_t)pos * half + i) * 2 + 1];
    float *v = x + ((size_t)t * n_heads + h) * head_dim;
    float a, b; int ia, ib;
    rope_pair(v, i, n_rot, neox, c, s, &a, &b, &ia, &ib);
    v[ia] = a; v[ib] = b;
}

int cuda_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos,
              const float *cos_sin, cudaStream_t st) {
    int n = T * n_heads * (n_rot / 2);
    if (n <= 0) return 0;
    klaunch(rope_kernel, (n + 255) / 256, 256, 0, st, x, T, n_heads, head_dim, n_rot, neox, pos0, d_pos, cos_sin);
    return CU_LAUNCHED();
}

/* ---- KV store: f32 rows of kv_dim at positions pos.. -> f16 cache ------------------------ */
__global__ void kv_store_kernel(const float *k, const float *v, uint16_t *kc, uint16_t *vc, int T, int kv_dim, int pos0,
                                const int *d_pos) {
    PDL_WAIT();
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= T * kv_dim) return;
    int t = idx / kv_dim, i = idx % kv_dim;
    size_t off = (size_t)((d_pos ? d_pos[0] : pos0) + t) * kv_dim + i;
    kc[off] = __half_as_ushort(__float2half_rn(k[idx]));
    vc[off] = __half_as_ushort(__float2half_rn(v[idx]));
}

/* ... -> int8 cache: a warp per block of 32 values (K's blocks of the T rows, then V's),
 * act_quant_block_regs: the CPU's act_quantize_row(ACT_Q8_0) bytes */
__global__ void kv_store_q8_kernel(const float *k, const float *v, uint8_t *kc, uint8_t *vc, int T, int kv_dim, int pos0,
                                   const int *d_pos) {
    PDL_WAIT();
    const int wi = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31, nb = kv_dim / 32;
    if (wi >= 2 * T * nb) return;   /* whole warps */
    const int isv = wi >= T * nb, r = isv ? wi - T * nb : wi, t = r / nb, b = r % nb;
    const size_t pos = (size_t)((d_pos ? d_pos[0] : pos0) + t);
    float x = (isv ? v : k)[(size_t)t * kv_dim + (size_t)b * 32 + lane];
    act_quant_block_regs<32>(&x, (isv ? vc : kc) + (pos * nb + b) * sizeof_i(act_q8_0), ACT_Q8_0);
}

int cuda_kv_store(const float *k, const float *v, void *kc, void *vc, int kv8, int T, int kv_dim, int pos0,
                  const int *d_pos, cudaStream_t st) {
    if (kv8) {
        if (kv_dim % 32) return -1;
        const int n = 2 * T * (kv_dim / 32) * 32;
        klaunch(kv_store_q8_kernel, (n + 255) / 256, 256, 0, st, k, v, (uint8_t *)kc, (uint8_t *)vc, T, kv_dim, pos0, d_pos);
        return CU_LAUNCHED();
    }
    int n = T * kv_dim;
    klaunch(kv_store_kernel, (n + 255) / 256, 256, 0, st, k, v, (uint16_t *)kc, (uint16_t *)vc, T, kv_dim, pos0, d_pos);
    return CU_LAUNCHED();
}

/* Fused: RoPE of q (in place) and k (in place and into the f16 cache), v into the cache.
 * The same operations as rope_kernel + kv_store_kernel, one launch. */
/* Column t's position and KV cache: pos0 + t in the one cache (a single sequence), or the
 * column table's entries (several sequences in one launch: cuda_cols). */
__device__ __forceinline__ int col_pos(const cuda_cols &c, int p0, int t) { return c.pos ? c.pos[t] : p0 + t; }
__device__ __forceinline__ void *col_k(const cuda_cols &c, void *kc, int t) { return c.kc ? c.kc[t] : kc; }
__device__ __forceinline__ void *col_v(const cuda_cols &c, void *vc, int t) { return c.vc ? c.vc[t] : vc; }

/* q's pair idx (pairs of the T columns' heads in order) rotated in place */
__device__ __forceinline__ void rope_q_pair(float *q, int idx, int n_heads, int head_dim, int n_rot, int neox, int p0,
                                            const float *cs_q, const cuda_cols &cols) {
    const int half = n_rot / 2, i = idx % half, h = (idx / half) % n_heads, t = idx / (half * n_heads);
    const float *cs = cs_q + ((size_t)col_pos(cols, p0, t) * half + i) * 2;
    float *vv = q + ((size_t)t * n_heads + h) * head_dim;
    float a, b; int ia, ib;
    rope_pair(vv, i, n_rot, neox, cs[0], cs[1], &a, &b, &ia, &ib);
    vv[ia] = a; vv[ib] = b;
}

__global__ void rope_qk_store_kernel(float *q, float *k, const float *v, void *kc, void *vc, int T, int n_heads,
                                     int n_kv_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos,
                                     const float *cs_q, const float *cs_k, cuda_cols cols) {
    PDL_WAIT();
    int half = n_rot / 2, kv_dim = n_kv_heads * head_dim;
    int nq = T * n_heads * half, nk = T * n_kv_heads * half, nv = T * kv_dim;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int p0 = d_pos ? d_pos[0] : pos0;
    if (idx < nq) {
        rope_q_pair(q, idx, n_heads, head_dim, n_rot, neox, p0, cs_q, cols);
        return;
    }
    idx -= nq;
    if (idx < nk) {
        int i = idx % half, h = (idx / half) % n_kv_heads, t = idx / (half * n_kv_heads);
        const int pt = col_pos(cols, p0, t);
        const float *cs = cs_k + ((size_t)pt * half + i) * 2;
        float *vv = k + ((size_t)t * n_kv_heads + h) * head_dim;
        float a, b; int ia, ib;
        rope_pair(vv, i, n_rot, neox, cs[0], cs[1], &a, &b, &ia, &ib);
        vv[ia] = a; vv[ib] = b;
        uint16_t *kr = (uint16_t *)col_k(cols, kc, t) + (size_t)pt * kv_dim + (size_t)h * head_dim;
        kr[ia] = __half_as_ushort(__float2half_rn(a));
        kr[ib] = __half_as_ushort(__float2half_rn(b));
        return;
    }
    idx -= nk;
    if (idx < nv) {
        int t = idx / kv_dim, i = idx % kv_dim;
        ((uint16_t *)col_v(cols, vc, t))[(size_t)col_pos(cols, p0, t) * kv_dim + i] = __half_as_ushort(__float2half_rn(v[idx]));
        return;
    }
    /* k dims past n_rot are not rotated: stored as they are */
    idx -= nv;
    int rest = head_dim - n_rot;
    if (rest > 0 && idx < T * n_kv_heads * rest) {
        int j = n_rot + idx % rest, h = (idx / rest) % n_kv_heads, t = idx / (rest * n_kv_heads);
        ((uint16_t *)col_k(cols, kc, t))[(size_t)col_pos(cols, p0, t) * kv_dim + (size_t)h * head_dim + j] =
            __half_as_ushort(__float2half_rn(k[((size_t)t * n_kv_heads + h) * head_dim + j]));
    }
}

/* The same for an int8 cache: q rotated as above (a thread per pair), then a warp per (token,
 * KV head) for k (rotated in place: every lane reads its values and their pairs' before any
 * is written, rope_elem; each block of 32 quantized: act_quant_block_regs) and one for v. */
__global__ void rope_qk_store_q8_kernel(float *q, float *k, const float *v, void *kc, void *vc, int T, int n_heads,
                                        int n_kv_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos,
                                        const float *cs_q, const float *cs_k, cuda_cols cols) {
    PDL_WAIT();
    const int half = n_rot / 2, nq = T * n_heads * half, nq32 = (nq + 31) & ~31;
    const int idx = blockIdx.x * blockDim.x + threadIdx.x;
    const int p0 = d_pos ? d_pos[0] : pos0;
    if (idx < nq32) {
        if (idx < nq) rope_q_pair(q, idx, n_heads, head_dim, n_rot, neox, p0, cs_q, cols);
        return;
    }
    const int wi = (idx - nq32) >> 5, lane = idx & 31;   /* warps: nq32 is a multiple of 32 */
    if (wi >= 2 * T * n_kv_heads) return;
    const int isv = wi >= T * n_kv_heads, th = isv ? wi - T * n_kv_heads : wi, t = th / n_kv_heads, h = th % n_kv_heads;
    const int pt = col_pos(cols, p0, t), nb = head_dim / 32, hw = nb * KV_Q8_WORDS;
    uint32_t *row = (uint32_t *)(isv ? col_v(cols, vc, t) : col_k(cols, kc, t)) + ((size_t)pt * n_kv_heads + h) * hw;
    float x[ATT_MAX_HD / 32];
    if (!isv) {
        float *kr = k + ((size_t)t * n_kv_heads + h) * head_dim;
        const float *cs = cs_k + (size_t)pt * half * 2;
#pragma unroll
        for (int m = 0; m < ATT_MAX_HD / 32; m++)
            if (m < nb) x[m] = rope_elem(kr, 32 * m + lane, n_rot, neox, cs);
        __syncwarp();
#pragma unroll
        for (int m = 0; m < ATT_MAX_HD / 32; m++)
            if (m < nb) kr[32 * m + lane] = x[m];
    } else {
        const float *vr = v + ((size_t)t * n_kv_heads + h) * head_dim;
#pragma unroll
        for (int m = 0; m < ATT_MAX_HD / 32; m++)
            if (m < nb) x[m] = vr[32 * m + lane];
    }
#pragma unroll
    for (int m = 0; m < ATT_MAX_HD / 32; m++)
        if (m < nb) act_quant_block_regs<32>(&x[m], (uint8_t *)(row + m * KV_Q8_WORDS), ACT_Q8_0);
}

int cuda_rope_qk_store_cols(float *q, float *k, const float *v, void *kc, void *vc, int kv8, int T, int n_heads,
                            int n_kv_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos, const float *cs_q,
                            const float *cs_k, const cuda_cols *cols, cudaStream_t st) {
    int half = n_rot / 2;
    cuda_cols none = { NULL, NULL, NULL };
    if (kv8) {
        if (head_dim % 32 || head_dim > ATT_MAX_HD) return -1;
        const int n = ((T * n_heads * half + 31) & ~31) + 2 * T * n_kv_heads * 32;
        klaunch(rope_qk_store_q8_kernel, (n + 255) / 256, 256, 0, st, q, k, v, kc, vc, T, n_heads, n_kv_heads, head_dim, n_rot,
                neox, pos0, d_pos, cs_q, cs_k, cols ? *cols : none);
        return CU_LAUNCHED();
    }
    int n = T * n_heads * half + T * n_kv_heads * half + T * n_kv_heads * head_dim + T * n_kv_heads * (head_dim - n_rot);
    klaunch(rope_qk_store_kernel, (n + 255) / 256, 256, 0, st, q, k, v, kc, vc, T, n_heads, n_kv_heads, head_dim, n_rot, neox,
                                                          pos0, d_pos, cs_q, cs_k, cols ? *cols : none);
    return CU_LAUNCHED();
}
int cuda_rope_qk_store(float *q, float *k, const float *v, void *kc, void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                       int head_dim, int n_rot, int neox, int pos0, const int *d_pos, const float *cs_q, const float *cs_k,
                       cudaStream_t st) {
    return cuda_rope_qk_store_cols(q, k, v, kc, vc, kv8, T, n_heads, n_kv_heads, head_dim, n_rot, neox, pos0, d_pos, cs_q,
                                   cs_k, NULL, st);
}

/* ---- attention: the canonical chunked order, bit-identical to src/cpu/backend_cpu.c ---------
 * src/model/attn_order.h, docs/KERNELS.md "Attention order": the positions [first, last] of a
 * token are cut into chunks of ATTN_CHUNK (256) from `first`; each chunk is reduced alone and
 * the chunks are merged in chunk order. One kernel, attn_kernel<GS>, grid (nx, n_heads / GS, T);
 * each CTA reads its column's position (from device memory in graph mode) and takes one of two
 * paths, so the choice is made per token on the device:
 *
 * One chunk (the token attends to <= 256 positions): the exact path, the kernel of before
 * (attn_exact_head, ops_dev.cuh): CTA x < GS takes head y*GS + x alone, CTAs x >= GS exit at
 * once. With one chunk the chunked order is the sequential one (a_0 = l_0 / l_0 = 1 and
 * o = 0 + u_0 * 1 = u_0), so this path gives the order's bits by construction, and short
 * contexts keep the speed and the code of the one-head-per-CTA kernel: no merge, no partials.
 *
 * Several chunks: the CTA (x, y, t) takes heads y*GS .. y*GS + GS - 1 of column t (GS heads of
 * one KV group, so a K/V tile serves them all) and chunks x, x + nxe, x + 2 nxe, ... of them
 * (nxe = min(nxc, the token's chunks); CTAs x >= nxe exit at once), one at a time:
 *   K and V tiles (cp.async; the V rows load while the scores are computed when two tiles fit)
 *   -> thread i: the GS scores of position i (the dot over head_dim in d order, products
 *   rounded, then added, times scale) -> per head the max m_c (exact, any order) ->
 *   e_i = expf_ref(s_i - m_c) -> thread g sums head g's l_c = e_0 + e_1 + ... in order,
 *   r_c = 1 / l_c -> chains u[g][d] = u + (e_i r_c) v_i[d] in position order, one per (head, d).
 * Each chunk's (m_c, l_c, u_c) goes to `part` ([T][n_heads][nch_cap][2 + head_dim] floats), and
 * the last of the nxe CTAs of the column's head group to arrive (a counter per (t, y), reset by
 * it) merges: M = max m_c, w_c = l_c expf_ref(m_c - M), L = sum w_c in chunk order,
 * a_c = w_c / L, out[d] = 0 + u_0[d] a_0 + u_1[d] a_1 + ... in chunk order; then, when asked, it
 * quantizes the heads' output into the activation blocks the next matvec reads. nxc does not
 * change any bits (a chunk's result is the same whichever CTA reduces it): min(chunks, enough
 * CTAs to fill the GPU), or 1 (STRATA_CUDA_ATTN=serial). In graph mode nxc spans the cache's
 * chunks, so a captured graph holds for every position; the CTAs past a token's chunks exit.
 * GS: the largest divisor of the GQA group with GS <= 4 and GS * head_dim <= 256, so that the
 * GS heads' V chains are one per thread (the chain over 256 positions is the latency; a second
 * round of chains per thread would double it) and the scores GS chains side by side per thread.
 * The T = 1 RoPE and KV store are folded in (rf): exact path, each CTA its head (rope_head_kv);
 * chunk path, every CTA rotates its heads' q, the CTA holding the last chunk rotates the
 * position's k and converts v itself (kl / vl: the tile's last row), and the group's first
 * head group stores them in the cache. */
#define ATTC_MAXG 4                     /* heads per CTA of the chunk path */
static_assert(ATT_TILE == ATTN_CHUNK && ATTX_THREADS == ATTN_CHUNK, "one thread per position of a chunk");

/* heads per CTA of the chunk path (chains: GS * head_dim <= lim; at most cap) */
static int attn_heads_per_cta(int n_heads, int n_kv_heads, int head_dim, int lim, int cap) {
    int G = n_heads / n_kv_heads, best = 1;
    for (int g = 1; g <= G && g <= ATTC_MAXG && g <= cap; g++)
        if (G % g == 0 && g * head_dim <= lim) best = g;
    return best;
}

int cuda_attention_uses_scratch(int max_last, int window) {
    int span = window > 0 && window < max_last + 1 ? window : max_last + 1;
    return span > ATTN_CHUNK;
}

size_t cuda_attention_scratch_floats(int T, int n_heads, int head_dim, int n_ctx) {
    return (size_t)T * n_heads * ATTN_N_CHUNKS(n_ctx) * (head_dim + 2);
}

/* The activation blocks of nh heads' outputs (orow: head h0's row; B divides head_dim) in row t
 * of the next matvec's input, a warp per block */
static __device__ __forceinline__ void attn_quant_heads(const float *orow, int h0, int nh, int head_dim, uint8_t *act, int t,
                                                        size_t act_row_bytes, int act_fmt) {
    const int B = act_fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : afmt<ACT_Q8_0>::blck;
    const size_t bb = act_block_bytes_dev(act_fmt);
    for (int j = threadIdx.x >> 5; j < nh * head_dim / B; j += ATTX_THREADS / 32) {
        const size_t bi = ((size_t)h0 * head_dim) / B + j;
        if (B == 32) act_quant_block<32>(orow + j * B, act + (size_t)t * act_row_bytes + bi * bb, act_fmt);
        else act_quant_block<64>(orow + j * B, act + (size_t)t * act_row_bytes + bi * bb, act_fmt);
    }
}

/* The one-chunk path: head h of column t, the exact kernel of before (ops_dev.cuh), then the
 * head's output quantized for wo when asked. dyn: a tile, then the <= 256 scores. */
template <int KV8>
static __device__ __forceinline__ void attn_one_chunk(const float *q, void *kc, void *vc, int h, int t, int last,
                                                      int n_heads, int n_kv_heads, int head_dim, float scale, int window,
                                                      float *outp, uint8_t *act, size_t act_row_bytes, int act_fmt,
                                                      const cuda_rope_fold &rf, uint32_t *dyn, float *qr, uint16_t *kl,
                                                      uint16_t *vl, int vpre) {
    float *orow = outp + ((size_t)t * n_heads + h) * head_dim;
    const float *qh = q + ((size_t)t * n_heads + h) * head_dim;
    const uint32_t *k_last = NULL, *v_last = NULL;
    if (rf.k) {   /* T = 1: this head's RoPE, its KV head's rows of the position (ops_dev.cuh) */
        const int grp = n_heads / n_kv_heads, kvh = h / grp, half = rf.n_rot / 2;
        const int hw = kv_head_words(head_dim, KV8);
        const size_t off = (size_t)last * n_kv_heads * hw + (size_t)kvh * hw;   /* words */
        rope_head_kv<KV8>(qh, rf.k + (size_t)kvh * head_dim, rf.v + (size_t)kvh * head_dim, rf.cs_q + (size_t)last * half * 2,
                          rf.cs_k + (size_t)last * half * 2, rf.n_rot, rf.neox, head_dim, qr, kl, vl,
                          h % grp == 0 ? (uint32_t *)kc + off : NULL, (uint32_t *)vc + off);
        qh = qr; k_last = (const uint32_t *)kl; v_last = (const uint32_t *)vl;
    }
    /* one tile: a span of <= 256 positions is one tile (a second would only cost shared memory) */
    attn_exact_head<KV8>(qh, kc, vc, h, n_heads, n_kv_heads, head_dim, last, scale, window, NULL, orow, dyn, k_last, v_last,
                         vpre ? 2 : 0);
    if (act) {
        __syncthreads();
        attn_quant_heads(orow, h, 1, head_dim, act, t, act_row_bytes, act_fmt);
    }
}

/* ---- the chunk path of an f16 cache in 16-byte pieces (STRATA_CUDA_ATTN_TILES=3, default) ----
 * The same operations in the same order as the scalar chunk path below (so the same bits), with
 * fewer instructions per value: the chunk's K rows and the first half of its V rows are copied
 * by 16-byte cp.async (piece j of tile row r stored at piece j ^ (r & 7), so the eight rows a
 * quarter-warp reads hit eight different bank groups); a score thread reads its K row eight
 * values at a time and its heads' q four at a time (broadcast); the V chains run in pairs
 * (thread (g, d/2) owns d and d + 1 of head g) over e_i r_c precomputed once per position; the
 * second half of the V rows is copied into the K tile's place as soon as the scores are done,
 * so it arrives while l_c is summed and the first half's chains run. Shared memory 1.5 tiles
 * (head_dim 128: 96 KB, two CTAs per SM) instead of two padded ones. head_dim 64, 128 or 256
 * (a power of two: a row's pieces are indexed by shifts, and the swizzle needs eight of them),
 * GS * head_dim <= 512 (a pair of chains per thread). */
#define ATTV_HALF (ATTN_CHUNK / 2)
/* rows r0 .. r0 + nrows - 1 of chunk p0 (positions from base's row 0, row_words apart) into
 * tile rows 0 .. nrows - 1 (P 16-byte pieces a row, lp = log2 P), swizzled; the range's last
 * row (n - 1) from last_row (shared memory) when given; one commit group */
static __device__ __forceinline__ void vtile_issue(uint4 *tile, const uint32_t *base, int p0, int r0, int nrows, int n, int lp,
                                                   int row_words, const uint4 *last_row) {
    const int P = 1 << lp;
    for (int idx = threadIdx.x; idx < nrows << lp; idx += ATTX_THREADS) {
        const int r = idx >> lp, j = idx & (P - 1), pr = p0 + r0 + r;
        uint4 *dst = tile + (r << lp) + (j ^ (r & 7));
        if (last_row && pr == n - 1) *dst = last_row[j];
        else cp_async16(dst, base + (size_t)pr * row_words + j * 4);
    }
    cp_async_commit();
}
static __device__ __forceinline__ void cp_async_wait_n(int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (n == 0) asm volatile("cp.async.wait_group 0;" ::: "memory");
    else asm volatile("cp.async.wait_group 1;" ::: "memory");
#endif
}
/* v values of head row word dp (d = 2 dp, 2 dp + 1) of tile row r (HW = head_dim / 2 words a row) */
static __device__ __forceinline__ uint32_t vtile_word(const uint32_t *tile, int r, int dp, int HW) {
    return tile[r * HW + ((((dp >> 2) ^ (r & 7)) << 2) | (dp & 3))];
}

/* A chunk's scores s[g] (thread i: position i; -inf past nr) -> per head the maximum m_c (exact,
 * any order: warp shuffles, then the warps' maxima) into ms[g] and e_i = expf(s_i - m_c) into
 * es[g][i]; ends with a barrier (es complete, the K tile's readers done) */
template <int GS>
static __device__ __forceinline__ void chunk_max_exp(const float *s, int nr, float (*red)[ATTX_THREADS / 32], float *ms,
                                                     float *es) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
#pragma unroll
    for (int g = 0; g < GS; g++) {
        float mx = s[g];
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, o));
        if (lane == 0) red[g][warp] = mx;
    }
    __syncthreads();
#pragma unroll
    for (int g = 0; g < GS; g++) {
        float mx = red[g][0];
        for (int w = 1; w < ATTX_THREADS / 32; w++) mx = fmaxf(mx, red[g][w]);
        if (tid == 0) ms[g] = mx;
        if (tid < nr) es[g * ATTN_CHUNK + tid] = expf_ref(__fsub_rn(s[g], mx));
    }
    __syncthreads();
}

/* One chunk c (positions p0 .. p0 + nr - 1 of the column's range) of GS heads: writes the
 * chunk's (m_c, l_c, u_c) of each head to part. qs: the heads' q ([GS][head_dim], rotated);
 * es, red, ls, rs, ms: the kernel's shared arrays. k_last / v_last: the position's rows when
 * this launch makes them (the last chunk). */
template <int GS>
static __device__ __forceinline__ void attn_chunk_vec(const uint32_t *kbase, const uint32_t *vbase, int p0, int nr, int n,
                                                      int head_dim, int row_words, float scale, const float *qs, float *es,
                                                      float (*red)[ATTX_THREADS / 32], float *ls, float *rs, float *ms,
                                                      const uint4 *k_last, const uint4 *v_last, uint32_t *dyn, float *pp0,
                                                      size_t pp_stride) {
    const int tid = threadIdx.x;
    const int lp = 31 - __clz(head_dim >> 3), HW = head_dim >> 1;
    uint4 *kt = (uint4 *)dyn, *vt = kt + (ATTN_CHUNK << lp);
    const int n0 = nr < ATTV_HALF ? nr : ATTV_HALF;
    __syncthreads();   /* the previous chunk's readers of the tiles are done; qs, kl, vl written */
    vtile_issue(kt, kbase, p0, 0, nr, n, lp, row_words, k_last);
    vtile_issue(vt, vbase, p0, 0, n0, n, lp, row_words, v_last);
    cp_async_wait_n(1);   /* K arrived (the V half may still be in flight) */
    __syncthreads();
    float s[GS];
#pragma unroll
    for (int g = 0; g < GS; g++) s[g] = 0.0f;
    if (tid < nr) {   /* thread i <- position p0 + i: the dot over d in order, eight values a read */
        const uint4 *kr = kt + (tid << lp);
        const int sw = tid & 7;
#pragma unroll 2
        for (int j = 0; j < (1 << lp); j++) {
            const uint4 w = kr[j ^ sw];
            float k[8];
            k[0] = h2f((uint16_t)w.x); k[1] = h2f((uint16_t)(w.x >> 16));
            k[2] = h2f((uint16_t)w.y); k[3] = h2f((uint16_t)(w.y >> 16));
            k[4] = h2f((uint16_t)w.z); k[5] = h2f((uint16_t)(w.z >> 16));
            k[6] = h2f((uint16_t)w.w); k[7] = h2f((uint16_t)(w.w >> 16));
#pragma unroll
            for (int g = 0; g < GS; g++) {
                const float4 a = *(const float4 *)(qs + g * head_dim + j * 8), b = *(const float4 *)(qs + g * head_dim + j * 8 + 4);
                s[g] = __fadd_rn(s[g], __fmul_rn(a.x, k[0])); s[g] = __fadd_rn(s[g], __fmul_rn(a.y, k[1]));
                s[g] = __fadd_rn(s[g], __fmul_rn(a.z, k[2])); s[g] = __fadd_rn(s[g], __fmul_rn(a.w, k[3]));
                s[g] = __fadd_rn(s[g], __fmul_rn(b.x, k[4])); s[g] = __fadd_rn(s[g], __fmul_rn(b.y, k[5]));
                s[g] = __fadd_rn(s[g], __fmul_rn(b.z, k[6])); s[g] = __fadd_rn(s[g], __fmul_rn(b.w, k[7]));
            }
        }
#pragma unroll
        for (int g = 0; g < GS; g++) s[g] = __fmul_rn(s[g], scale);
    } else {
#pragma unroll
        for (int g = 0; g < GS; g++) s[g] = -INFINITY;
    }
    chunk_max_exp<GS>(s, nr, red, ms, es);   /* es complete; the K tile's readers done */
    if (nr > ATTV_HALF) vtile_issue(kt, vbase, p0, ATTV_HALF, nr - ATTV_HALF, n, lp, row_words, v_last);
    else cp_async_commit();   /* an empty group: wait_group 1 below still means "the first half" */
    if (tid < GS) {   /* thread g sums head g's e in position order */
        const float *e = es + tid * ATTN_CHUNK;
        float l = 0.0f;
        int i = 0;
        for (; i + 4 <= nr; i += 4) {
            const float4 v = *(const float4 *)(e + i);
            l = __fadd_rn(l, v.x); l = __fadd_rn(l, v.y); l = __fadd_rn(l, v.z); l = __fadd_rn(l, v.w);
        }
        for (; i < nr; i++) l = __fadd_rn(l, e[i]);
        ls[tid] = l;
        rs[tid] = __fdiv_rn(1.0f, l);
    }
    __syncthreads();
    for (int idx = tid; idx < GS * ATTN_CHUNK; idx += ATTX_THREADS)   /* e_i r_c, the first product of each step */
        if ((idx & (ATTN_CHUNK - 1)) < nr) es[idx] = __fmul_rn(es[idx], rs[idx / ATTN_CHUNK]);
    cp_async_wait_n(1);   /* the first half of V */
    __syncthreads();
    const int hl = lp + 2;   /* log2 (head_dim / 2) */
    const int g = tid >> hl, dp = tid & (HW - 1);
    float u0 = 0.0f, u1 = 0.0f;
    const bool chain = g < GS;
    if (chain) {
        const float *e = es + g * ATTN_CHUNK;
        const uint32_t *vw = (const uint32_t *)vt;
#pragma unroll 8
        for (int i = 0; i < n0; i++) {
            const uint32_t w = vtile_word(vw, i, dp, HW);
            const float er = e[i];
            u0 = __fadd_rn(u0, __fmul_rn(er, h2f((uint16_t)w)));
            u1 = __fadd_rn(u1, __fmul_rn(er, h2f((uint16_t)(w >> 16))));
        }
    }
    cp_async_wait_n(0);
    __syncthreads();
    if (chain) {
        const float *e = es + g * ATTN_CHUNK + ATTV_HALF;
        const uint32_t *vw = (const uint32_t *)kt;
#pragma unroll 8
        for (int i = 0; i < nr - ATTV_HALF; i++) {
            const uint32_t w = vtile_word(vw, i, dp, HW);
            const float er = e[i];
            u0 = __fadd_rn(u0, __fmul_rn(er, h2f((uint16_t)w)));
            u1 = __fadd_rn(u1, __fmul_rn(er, h2f((uint16_t)(w >> 16))));
        }
        float *pp = pp0 + (size_t)g * pp_stride;
        *(float2 *)(pp + 2 + 2 * dp) = make_float2(u0, u1);   /* the chunk's (m, l, u) for the merge */
        if (dp == 0) { pp[0] = ms[g]; pp[1] = ls[g]; }
    }
}

/* STRATA_CUDA_PREFETCH: the K and V rows of the cache this CTA reads first (the one-chunk path:
 * its head's positions; the chunk path: its first chunk) into L2, before the kernel waits for
 * the one before it. Rows first..last of the column exist (the previous steps wrote them;
 * row `last` is rewritten by this launch, its old bytes prefetched harmlessly). A hint. */
template <int GS, int KV8>
static __device__ __forceinline__ void attn_prefetch_rows(const void *kc, const void *vc, int n_heads, int n_kv_heads,
                                                          int head_dim, int last, int window, int nxc) {
    const int first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    const int n = last - first + 1, nch = ATTN_N_CHUNKS(n), x = blockIdx.x;
    int r0, nr;
    if (nch == 1) {
        if (x >= GS) return;
        r0 = first; nr = n;
    } else {
        if (x >= (nch < nxc ? nch : nxc)) return;
        r0 = first + x * ATTN_CHUNK; nr = n - x * ATTN_CHUNK < ATTN_CHUNK ? n - x * ATTN_CHUNK : ATTN_CHUNK;
    }
    const int kvh = (blockIdx.y * GS) / (n_heads / n_kv_heads), W = kv_head_words(head_dim, KV8);
    const size_t rs = (size_t)n_kv_heads * W * 4, hb = (size_t)kvh * W * 4;   /* bytes: a position's row, the head's offset */
    const int lines = (W * 4 + 127) / 128;
    for (int i = threadIdx.x; i < 2 * nr * lines; i += ATTX_THREADS) {
        const int kv = i & 1, r = (i >> 1) / lines, l = (i >> 1) % lines;
        const uint8_t *p = (const uint8_t *)(kv ? vc : kc) + (size_t)(r0 + r) * rs + hb + (size_t)l * 128;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
    }
}

/* P: which paths this instance holds (STRATA_CUDA_ATTN_PATHS, same bits): ATTP_ALL both; ATTP_EXACT
 * the one-chunk path alone (launched when no column of the launch spans more than one chunk);
 * ATTP_CHUNKS the chunk path alone (every column spans several). The kernel with both paths is
 * ~210 KB of SASS, run once per CTA: the H200 profile of the one-chunk path (32 CTAs, ~20
 * positions) showed 43 % of its warps' cycles waiting for instructions, so a launch whose path
 * the host knows takes an instance without the other. A column on a path its instance lacks
 * traps (the host's choice is wrong), it never takes another order. */
#define ATTP_ALL 0
#define ATTP_EXACT 1
#define ATTP_CHUNKS 2
#define ATTP_CHUNKS_VEC 3   /* the chunk path alone, f16 cache in 16-byte pieces only (no scalar loop) */
template <int GS, int KV8, int P>
__global__ void __launch_bounds__(ATTX_THREADS)
attn_kernel(const float *q, void *kc, void *vc, int n_heads, int n_kv_heads, int head_dim, int pos0,
            const int *d_pos, float scale, int window, int nch_cap, int nxc, int two_tiles, int vpre, float *part,
            int *counters, float *outp, uint8_t *act, size_t act_row_bytes, int act_fmt, cuda_rope_fold rf, cuda_cols cols,
            int vec) {
    if ((c_prefetch & CUDA_PF_ROWS) && !cols.pos && gridDim.z == 1)   /* one column (decode): the rows it reads first */
        attn_prefetch_rows<GS, KV8>(kc, vc, n_heads, n_kv_heads, head_dim, (d_pos ? d_pos[0] : pos0) + (int)blockIdx.z, window,
                                    nxc);
    PDL_WAIT();
    extern __shared__ uint32_t dyn[];                 /* the K (and V) tile(s); the exact path's scores; the merge's m, w */
    __shared__ __align__(16) uint16_t kl[ATT_MAX_HD], vl[ATT_MAX_HD];
    __shared__ __align__(16) float qs[GS * ATT_MAX_HD];   /* [GS][head_dim] (the exact path: its head's rotated q) */
    const int tid = threadIdx.x;
    const int t = blockIdx.z, hg = blockIdx.y, h0 = hg * GS, x = blockIdx.x;
    const int last = col_pos(cols, d_pos ? d_pos[0] : pos0, t);
    const int first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    const int n = last - first + 1, nch = ATTN_N_CHUNKS(n);
    kc = col_k(cols, kc, t); vc = col_v(cols, vc, t);
    if (nch == 1) {   /* the exact path: one head per CTA */
        if constexpr (P == ATTP_CHUNKS || P == ATTP_CHUNKS_VEC) __trap();
        else if (x < GS)
            attn_one_chunk<KV8>(q, kc, vc, h0 + x, t, last, n_heads, n_kv_heads, head_dim, scale, window, outp, act, act_row_bytes,
                           act_fmt, rf, dyn, qs, kl, vl, vpre);
        return;
    }
    if constexpr (P == ATTP_EXACT) { __trap(); return; }
    const int nxe = nch < nxc ? nch : nxc;            /* CTAs reducing this token's chunks */
    if (x >= nxe) return;
    __shared__ __align__(16) float es[GS * ATTN_CHUNK];   /* [GS][ATTN_CHUNK]: e of the chunk's positions */
    __shared__ float red[GS][ATTX_THREADS / 32];
    __shared__ float ls[GS], rs[GS], ms[GS];          /* per head: l_c (or L), 1 / l_c, m_c (or M) */
    __shared__ int s_last;
    const int G = n_heads / n_kv_heads, kvh = h0 / G;
    const int W = kv_head_words(head_dim, KV8), RS = kv_tile_rs(head_dim, KV8), row_words = n_kv_heads * W;
    const int nv = GS * head_dim;                     /* chains: one per (head, d); <= ATTX_THREADS (vec: twice) */
    const int cg = tid < nv ? tid / head_dim : -1, cd = tid < nv ? tid % head_dim : 0;
    float acc = 0.0f;
    const float *qt = q + ((size_t)t * n_heads + h0) * head_dim;
    const int lastc = nch - 1;
    const int holds_last = (lastc - x) % nxe == 0;
    if (rf.k) {   /* T = 1: RoPE of the heads' q here; the position's K/V rows by the last chunk's CTA */
        const int half = rf.n_rot / 2, rest = head_dim - rf.n_rot;
        const float *csq = rf.cs_q + (size_t)last * half * 2, *csk = rf.cs_k + (size_t)last * half * 2;
        for (int idx = tid; idx < GS * half; idx += ATTX_THREADS) {
            int g = idx / half, i = idx % half, ia, ib;
            float o1, o2;
            rope_pair(qt + (size_t)g * head_dim, i, rf.n_rot, rf.neox, csq[2 * i], csq[2 * i + 1], &o1, &o2, &ia, &ib);
            qs[g * head_dim + ia] = o1; qs[g * head_dim + ib] = o2;
        }
        for (int idx = tid; idx < GS * rest; idx += ATTX_THREADS) {
            int g = idx / rest, j = rf.n_rot + idx % rest;
            qs[g * head_dim + j] = qt[(size_t)g * head_dim + j];
        }
        if (holds_last && KV8) {   /* int8 blocks (kv8_rows), stored as words */
            kv8_rows(rf.k + (size_t)kvh * head_dim, rf.v + (size_t)kvh * head_dim, csk, rf.n_rot, rf.neox, head_dim,
                     (uint32_t *)kl, (uint32_t *)vl);
            __syncthreads();
            if (h0 % G == 0) {   /* the group's first head group stores the rows */
                const size_t off = (size_t)last * row_words + (size_t)kvh * W;
                for (int j = tid; j < W; j += ATTX_THREADS) {
                    ((uint32_t *)kc)[off + j] = ((const uint32_t *)kl)[j];
                    ((uint32_t *)vc)[off + j] = ((const uint32_t *)vl)[j];
                }
            }
        } else if (holds_last) {
            const int kv_dim = n_kv_heads * head_dim;
            const float *ks = rf.k + (size_t)kvh * head_dim, *vs = rf.v + (size_t)kvh * head_dim;
            for (int i = tid; i < half; i += ATTX_THREADS) {
                float o1, o2;
                int ia, ib;
                rope_pair(ks, i, rf.n_rot, rf.neox, csk[2 * i], csk[2 * i + 1], &o1, &o2, &ia, &ib);
                kl[ia] = __half_as_ushort(__float2half_rn(o1));
                kl[ib] = __half_as_ushort(__float2half_rn(o2));
            }
            for (int j = rf.n_rot + tid; j < head_dim; j += ATTX_THREADS) kl[j] = __half_as_ushort(__float2half_rn(ks[j]));
            for (int j = tid; j < head_dim; j += ATTX_THREADS) vl[j] = __half_as_ushort(__float2half_rn(vs[j]));
            __syncthreads();
            if (h0 % G == 0) {   /* the group's first head group stores the rows */
                const size_t off = (size_t)last * kv_dim + (size_t)kvh * head_dim;
                for (int j = tid; j < head_dim; j += ATTX_THREADS) { ((uint16_t *)kc)[off + j] = kl[j]; ((uint16_t *)vc)[off + j] = vl[j]; }
            }
        }
    } else {
        for (int idx = tid; idx < nv; idx += ATTX_THREADS) qs[idx] = qt[idx];
    }
    const uint32_t *kbase = (const uint32_t *)kc + (size_t)first * row_words + (size_t)kvh * W;
    const uint32_t *vbase = (const uint32_t *)vc + (size_t)first * row_words + (size_t)kvh * W;
    uint32_t *ktile = dyn, *vtile = two_tiles ? dyn + attn_tile_words_kv(head_dim, KV8) : dyn;
    const uint16_t *kt_h = (const uint16_t *)ktile;
    /* the 16-byte path needs 16-byte aligned rows (a column's cache from a table: checked here;
     * cuda_dev_malloc'd caches always are); the scalar path below has one chain per thread, so
     * a head group sized for the 16-byte path (GS * head_dim > ATTX_THREADS) cannot fall back */
    const int vec_ok = !KV8 && vec && !(((uintptr_t)kbase | (uintptr_t)vbase) & 15);
    if (!vec_ok && nv > ATTX_THREADS) __trap();
    if constexpr (P == ATTP_CHUNKS_VEC)   /* the instance without the scalar chunk loop */
        if (!vec_ok) __trap();
    if (P == ATTP_CHUNKS_VEC || vec_ok) {
        for (int c = x; c < nch; c += nxe) {
            const int p0 = c * ATTN_CHUNK, nr = n - p0 < ATTN_CHUNK ? n - p0 : ATTN_CHUNK;
            const uint4 *k_last = rf.k && c == lastc ? (const uint4 *)kl : NULL;
            const uint4 *v_last = rf.k && c == lastc ? (const uint4 *)vl : NULL;
            attn_chunk_vec<GS>(kbase, vbase, p0, nr, n, head_dim, row_words, scale, qs, es, red, ls, rs, ms, k_last, v_last, dyn,
                               part + (((size_t)t * n_heads + h0) * nch_cap + c) * (head_dim + 2),
                               (size_t)nch_cap * (head_dim + 2));
        }
    } else if constexpr (P != ATTP_CHUNKS_VEC)
    for (int c = x; c < nch; c += nxe) {
        const int p0 = c * ATTN_CHUNK, nr = n - p0 < ATTN_CHUNK ? n - p0 : ATTN_CHUNK;
        const uint32_t *k_last = rf.k && c == lastc ? (const uint32_t *)kl : NULL;
        const uint32_t *v_last = rf.k && c == lastc ? (const uint32_t *)vl : NULL;
        __syncthreads();   /* the previous chunk's readers of the tiles are done; qs, kl, vl written */
        attn_tile_issue(ktile, kbase, p0, nr, n, W, RS, row_words, k_last);
        if (two_tiles) {   /* the V rows in flight while the scores are computed */
            attn_tile_issue(vtile, vbase, p0, nr, n, W, RS, row_words, v_last);
            cp_async_wait_prev();
        } else cp_async_wait_all();
        __syncthreads();
        /* scores: thread i <- position first + p0 + i, the GS heads side by side */
        float s[GS];
#pragma unroll
        for (int g = 0; g < GS; g++) s[g] = 0.0f;
        if (tid < nr && KV8) {
            kv8_scores<GS>(ktile + (size_t)tid * RS, qs, head_dim, s);
#pragma unroll
            for (int g = 0; g < GS; g++) s[g] = __fmul_rn(s[g], scale);
        } else if (tid < nr) {
            const uint16_t *kr = kt_h + (size_t)tid * 2 * RS;
#pragma unroll 8
            for (int d = 0; d < head_dim; d++) {
                const float kv = h2f(kr[d]);
#pragma unroll
                for (int g = 0; g < GS; g++) s[g] = __fadd_rn(s[g], __fmul_rn(qs[g * head_dim + d], kv));
            }
#pragma unroll
            for (int g = 0; g < GS; g++) s[g] = __fmul_rn(s[g], scale);
        } else {
#pragma unroll
            for (int g = 0; g < GS; g++) s[g] = -INFINITY;
        }
        chunk_max_exp<GS>(s, nr, red, ms, es);   /* es complete; the K tile's readers done */
        if (!two_tiles) attn_tile_issue(vtile, vbase, p0, nr, n, W, RS, row_words, v_last);   /* into the K tile's place */
        if (tid < GS) {   /* while the V rows arrive: thread g sums head g's e in position order */
            float l = 0.0f;
#pragma unroll 8
            for (int i = 0; i < nr; i++) l = __fadd_rn(l, es[tid * ATTN_CHUNK + i]);
            ls[tid] = l;
            rs[tid] = __fdiv_rn(1.0f, l);
        }
        cp_async_wait_all();
        __syncthreads();
        /* the chains, in position order; loads of 8 positions issued ahead of their adds */
        acc = 0.0f;
        if (cg >= 0) {
            const float r = rs[cg];
            const float *e = es + cg * ATTN_CHUNK;
#pragma unroll 8
            for (int i = 0; i < nr; i++)
                acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(e[i], r), kv_val<KV8>(vtile + (size_t)i * RS, cd)));
            float *pp = part + (((size_t)t * n_heads + h0 + cg) * nch_cap + c) * (head_dim + 2);
            pp[2 + cd] = acc;   /* the chunk's (m, l, u) for the merge */
            if (cd == 0) { pp[0] = ms[cg]; pp[1] = ls[cg]; }
        }
    }
    /* the last CTA of (t, head group) to arrive merges the chunks */
    __threadfence();
    __syncthreads();
    if (tid == 0) {
        int *cnt = counters + (size_t)t * gridDim.y + hg;
        s_last = atomicAdd(cnt, 1) == nxe - 1;
        if (s_last) *cnt = 0;
    }
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    /* the chunks' m and l of the GS heads into shared memory (the tiles': no tile is live) */
    float *mm = (float *)dyn, *ww = mm + GS * nch;
    for (int idx = tid; idx < GS * nch; idx += ATTX_THREADS) {
        const float *pp = part + (((size_t)t * n_heads + h0 + idx / nch) * nch_cap + idx % nch) * (head_dim + 2);
        mm[idx] = __ldcg(pp);
        ww[idx] = __ldcg(pp + 1);
    }
    __syncthreads();
    if (tid < GS) {   /* M: the max of the chunks' maxima */
        float M = -INFINITY;
        for (int c = 0; c < nch; c++) M = fmaxf(M, mm[tid * nch + c]);
        ms[tid] = M;
    }
    __syncthreads();
    for (int idx = tid; idx < GS * nch; idx += ATTX_THREADS)   /* w_c = l_c expf(m_c - M) */
        ww[idx] = __fmul_rn(ww[idx], expf_ref(__fsub_rn(mm[idx], ms[idx / nch])));
    __syncthreads();
    if (tid < GS) {   /* L, chunks in order */
        float L = 0.0f;
        for (int c = 0; c < nch; c++) L = __fadd_rn(L, ww[tid * nch + c]);
        ls[tid] = L;
    }
    __syncthreads();
    for (int idx = tid; idx < GS * nch; idx += ATTX_THREADS) ww[idx] = __fdiv_rn(ww[idx], ls[idx / nch]);   /* a_c */
    __syncthreads();
    float *orow = outp + ((size_t)t * n_heads + h0) * head_dim;
    for (int idx = tid; idx < nv; idx += ATTX_THREADS) {   /* chain (head g, d) */
        const int g = idx / head_dim, d = idx % head_dim;
        const float *pp = part + ((size_t)t * n_heads + h0 + g) * nch_cap * (head_dim + 2) + 2 + d;
        const float *a = ww + g * nch;
        float o = 0.0f;
        for (int c = 0; c < nch; c++) o = __fadd_rn(o, __fmul_rn(__ldcg(pp + (size_t)c * (head_dim + 2)), a[c]));
        orow[g * head_dim + d] = o;
    }
    if (act) {   /* the heads' blocks of activation row t (B divides head_dim: checked by the caller) */
        __syncthreads();
        attn_quant_heads(orow, h0, GS, head_dim, act, t, act_row_bytes, act_fmt);
    }
}

template <int GS, int KV8, int P>
static int attn_launch_p(dim3 g, size_t smem, cudaStream_t st, const float *q, void *kc, void *vc, int n_heads,
                         int n_kv_heads, int head_dim, int pos0, const int *d_pos, float scale, int window, int nch_cap, int nxc,
                         int two_tiles, int vpre, float *part, int *counters, float *out, uint8_t *act, size_t arb, int act_fmt,
                         cuda_rope_fold rf, cuda_cols cols, int vec) {
    static int attr_set = 0;
    if (!attr_set) {   /* allow more than 48 KB of dynamic shared memory (once per instance) */
        if (CU_CHECK(cudaFuncSetAttribute(attn_kernel<GS, KV8, P>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)))
            return -1;
        attr_set = 1;
    }
    klaunch(attn_kernel<GS, KV8, P>, g, ATTX_THREADS, smem, st, q, kc, vc, n_heads, n_kv_heads, head_dim, pos0, d_pos, scale,
            window, nch_cap, nxc, two_tiles, vpre, part, counters, out, act, arb, act_fmt, rf, cols, vec);
    return CU_LAUNCHED();
}
template <int GS, int KV8>
static int attn_launch(int paths, dim3 g, size_t smem, cudaStream_t st, const float *q, void *kc, void *vc, int n_heads,
                       int n_kv_heads, int head_dim, int pos0, const int *d_pos, float scale, int window, int nch_cap, int nxc,
                       int two_tiles, int vpre, float *part, int *counters, float *out, uint8_t *act, size_t arb, int act_fmt,
                       cuda_rope_fold rf, cuda_cols cols, int vec) {
#define ATTN_LP(P)                                                                                                      \
    attn_launch_p<GS, KV8, P>(g, smem, st, q, kc, vc, n_heads, n_kv_heads, head_dim, pos0, d_pos, scale, window, nch_cap, nxc, \
                              two_tiles, vpre, part, counters, out, act, arb, act_fmt, rf, cols, vec)
    if constexpr (KV8 == 0)
        if (paths == ATTP_CHUNKS_VEC) return ATTN_LP(ATTP_CHUNKS_VEC);
    return paths == ATTP_EXACT ? ATTN_LP(ATTP_EXACT) : paths >= ATTP_CHUNKS ? ATTN_LP(ATTP_CHUNKS) : ATTN_LP(ATTP_ALL);
#undef ATTN_LP
}

/* STRATA_CUDA_ATTN_TILES: 3 (default) an f16 cache's chunk path in 16-byte pieces
 * (attn_chunk_vec; other caches as 2), 2 the chunk path's K and V tiles at once where they fit
 * and the grid leaves SMs idle, 1 one tile */
static int att_two_tiles = -1, att_vpre = -1, att_paths = -1, att_gs_cap = -1, att_wave = -1;
extern "C" void cuda_attention_set_tiles(int n) { att_two_tiles = n == 1 ? 0 : n == 2 ? 1 : 3; }
/* STRATA_CUDA_ATTN_GS (T = 1 launches; same bits: a head's chains are its own whichever CTA
 * runs them): N = 1 .. ATTC_MAXG at most N heads of a KV group per chunk-path CTA; 0 (auto) the
 * fewest heads per CTA whose grid is still one wave (attn_gs_auto). Fewer heads per CTA: more
 * CTAs over the same chunks (each CTA reads its group's K/V tiles; the group's other CTAs find
 * them in L2). Wider launches keep ATTC_MAXG. */
extern "C" void cuda_attention_set_gs(int cap) { att_gs_cap = cap >= 1 && cap <= ATTC_MAXG ? cap : 0; }

/* auto: the smallest cap whose launch (nxc chunk CTAs per head group, as cuda_attention sizes
 * it) fits the SMs at the CTAs per SM that the chunk path's shared memory allows (per_cta bytes,
 * with ~8 KB of static arrays) and has at most 2.25 CTAs per SM (the grids measured faster had
 * 153 and 272 CTAs on 132 SMs; 544 was slower in one wave of 528 slots, f16, and of 660, int8:
 * 1.5B shape 917 -> 897 tok/s); none fits: ATTC_MAXG. H200 2026-12-03, decode at depth 4,096:
 * SmolLM2 shape (9 / 3 heads of 64: 51 -> 153 CTAs) 944 -> ~1,005 tok/s, the 1.5B shape (32 / 8
 * of 64: 136 -> 272 CTAs) 880 -> 935, both of 64 -> 1 head a CTA 810 (544 CTAs: past one wave);
 * the MoE shape (32 / 4 of 128, two CTAs per SM: 136 CTAs) 265, 2 heads (272) 250, 1: 210 */
/* the chunk CTAs per (column, head group): min(chunks, enough to fill the GPU with `pairs` such
 * groups in the launch); 1 when serial */
static int attn_nxc(int nch, int pairs, int sms, int serial) {
    const int fill = (4 * sms + pairs - 1) / pairs, nx = serial ? 1 : nch < fill ? nch : fill;
    return nx < 1 ? 1 : nx;
}
/* CTAs an SM holds by shared memory (Hopper's 227 KB) at per_cta bytes of dynamic shared memory
 * and ~8 KB of static arrays */
static int attn_ctas_per_sm(size_t per_cta) { return (int)((size_t)227 * 1024 / (per_cta + 8 * 1024)); }
static int attn_gs_auto(int n_heads, int n_kv_heads, int head_dim, int lim, int nch, int sms, size_t per_cta) {
    const int per_sm = attn_ctas_per_sm(per_cta);
    for (int c = 1; c <= ATTC_MAXG; c++) {
        const int g = attn_heads_per_cta(n_heads, n_kv_heads, head_dim, lim, c), groups = n_heads / g;
        const int nx = attn_nxc(nch, groups, sms, 0);
        if ((int64_t)nx * groups <= (int64_t)per_sm * sms && (int64_t)nx * groups * 4 <= (int64_t)9 * sms) return c;
    }
    return ATTC_MAXG;
}
extern "C" void cuda_attention_set_paths(int on) { att_paths = on ? 1 : 0; }

int cuda_attention(const float *q, void *kc, void *vc, int kv8, int T, int n_heads, int n_kv_heads, int head_dim, int pos0,
                   const int *d_pos, int max_last, float scale, int window, int n_ctx, float *scratch, int *counters,
                   float *out, void *act, int act_fmt, const cuda_rope_fold *rf, const cuda_cols *cols, int serial,
                   cudaStream_t st) {
    if (head_dim > ATT_MAX_HD || head_dim % 2 || n_heads % n_kv_heads || (rf && T != 1) || (rf && cols) ||
        (kv8 && head_dim % 32))
        return -1;
    cuda_cols none = { NULL, NULL, NULL };
    cuda_rope_fold no_fold = { NULL, NULL, NULL, NULL, 0, 0 };
    int sms = cuda_sm_count();   /* device_class.cu's reading */
    if (sms < 1) sms = 32;
    if (att_two_tiles < 0) {
        const long v = env_int(ENV_CUDA_ATTN_TILES);
        att_two_tiles = v == 1 ? 0 : v == 2 ? 1 : 3;
    }
    const int vec = att_two_tiles == 3 && !kv8 && head_dim >= 64 && !(head_dim & (head_dim - 1)) && head_dim <= ATT_MAX_HD;
    const int nch_cap = ATTN_N_CHUNKS(n_ctx);
    /* the most chunks a column can have: from the largest position when known (a graph of short
     * positions passes it too), else the cache's */
    int ml = max_last >= 0 ? max_last : d_pos ? n_ctx - 1 : pos0 + T - 1;
    int span = window > 0 && window < ml + 1 ? window : ml + 1;
    int nch = ATTN_N_CHUNKS(span) < nch_cap ? ATTN_N_CHUNKS(span) : nch_cap;
    if (att_gs_cap < 0) cuda_attention_set_gs((int)env_int(ENV_CUDA_ATTN_GS));
    const int lim = vec ? 2 * ATTX_THREADS : ATTX_THREADS;
    /* the chunk path's dynamic shared memory per CTA (vec: the K tile and half a V tile; else
     * two tiles), which bounds its CTAs per SM */
    const size_t chunk_cta = vec ? (size_t)(ATTN_CHUNK + ATTV_HALF) * head_dim * 2
                                 : 2 * (size_t)attn_tile_words_kv(head_dim, kv8) * 4;
    int gcap = ATTC_MAXG;
    if (T == 1 && !serial)
        gcap = att_gs_cap > 0 ? att_gs_cap : attn_gs_auto(n_heads, n_kv_heads, head_dim, lim, nch, sms, chunk_cta);
    const int gs = attn_heads_per_cta(n_heads, n_kv_heads, head_dim, lim, gcap);
    const int groups = n_heads / gs;
    int nxc = attn_nxc(nch, T * groups, sms, serial);
    if (att_wave < 0) att_wave = env_int(ENV_CUDA_ATTN_WAVE) != 0;
    if (T == 1 && !serial && att_wave) {
        /* STRATA_CUDA_ATTN_WAVE (default 1), one wave: CTAs past what the SMs hold (by the
         * chunk path's shared memory, ~8 KB of static arrays beside it) would start a whole
         * chunk's time later; fewer CTAs, each taking a second chunk, cost less (the MoE
         * shape's int8 cache at 4,097 positions: 17 x 16 = 272 CTAs on 2 x 132 slots -> 16 x
         * 16; decode 239 / 239 -> 243 / 242 tok/s, H200 2026-12-03, same binary). Which CTA
         * reduces a chunk changes no bit (STRATA_CUDA_ATTN=serial is nxc = 1). */
        const int cap = attn_ctas_per_sm(chunk_cta) * sms / groups;
        if (cap >= 1 && nxc > cap) nxc = cap;
    }
    const int nx = nxc > gs ? nxc : gs;   /* the exact path takes CTAs x < gs */
    size_t arb = act ? cuda_act_row_bytes(act_fmt, (int64_t)n_heads * head_dim) : 0;
    dim3 g((unsigned)nx, (unsigned)groups, (unsigned)T);
    /* dynamic shared memory: the exact path's tile and <= 256 scores; the chunk path's K and V
     * tiles (two where they fit, else one for both in turn); the merge's m and w (in the tiles) */
    const size_t tile = attn_tile_words_kv(head_dim, kv8) * 4, merge = (size_t)2 * gs * nch_cap * sizeof(float);
    size_t smem = tile + ATTN_CHUNK * sizeof(float);
    /* two tiles only while the grid's CTAs still fit in one wave with them (decode): main's
     * exact kernel measured a larger grid (a 4,096-token prompt) 9-25 % slower with two tiles
     * (fewer CTAs per SM), decode at 4,096 positions 5 % faster (H200, 2026-12-02). CTAs per SM
     * with two tiles: 227 KB of shared memory per SM (Hopper) over the tiles and ~8 KB of
     * static arrays (head_dim 64: 3, 128: 1) */
    const int per_sm2 = attn_ctas_per_sm(2 * tile);
    const int two_tiles = !vec && att_two_tiles && nch > 1 && 2 * tile <= 160 * 1024 &&
                          (int64_t)nxc * groups * T <= (int64_t)per_sm2 * sms;
    if (two_tiles && 2 * tile > smem) smem = 2 * tile;
    /* vec: the K tile and half a V tile (no padding: swizzled pieces) */
    const size_t vec_smem = (size_t)(ATTN_CHUNK + ATTV_HALF) * head_dim * 2;
    if (vec && nch > 1 && vec_smem > smem) smem = vec_smem;
    /* STRATA_CUDA_ATTN_VPRE (T = 1): the one-chunk path issues the V rows with the K rows (a
     * second tile, the scores after it); with vec only where no column can take the chunk path,
     * so that the chunk path's shared memory stays 1.5 tiles (two CTAs per SM at head_dim 128) */
    if (att_vpre < 0) att_vpre = env_int(ENV_CUDA_ATTN_VPRE) != 0;
    const int vpre = att_vpre && T == 1 && 2 * tile + ATTN_CHUNK * sizeof(float) <= 200 * 1024 && (!vec || nch == 1);
    if (vpre && 2 * tile + ATTN_CHUNK * sizeof(float) > smem) smem = 2 * tile + ATTN_CHUNK * sizeof(float);
    if (merge > smem) smem = merge;
    if (smem > 200 * 1024) return -1;   /* n_ctx past ~800k positions */
    const cuda_rope_fold f = rf ? *rf : no_fold;
    const cuda_cols cl = cols ? *cols : none;
    /* the instance (attn_kernel's P): the one-chunk path alone when no column spans more than a
     * chunk (nch, from the largest position); the chunk path alone when every column spans
     * several: an eager launch's first column (pos0) past the first chunk, or a one-column graph
     * recorded there (launch_step / the verify windows replay a graph of that class only at
     * such positions); else both */
    if (att_paths < 0) att_paths = env_int(ENV_CUDA_ATTN_PATHS) != 0;
    int min_last = -1;
    if (!cols && (!d_pos || T == 1)) min_last = pos0;
    const int min_span = min_last < 0 ? 0 : window > 0 && window < min_last + 1 ? window : min_last + 1;
    /* every column on the chunk path of an f16 cache from cuda_dev_malloc (16-byte aligned rows)
     * in 16-byte pieces: the instance without the scalar loop (a smaller kernel) */
    const int paths = !att_paths ? ATTP_ALL : nch == 1 ? ATTP_EXACT
                    : min_span > ATTN_CHUNK ? (vec && !cols && !kv8 ? ATTP_CHUNKS_VEC : ATTP_CHUNKS) : ATTP_ALL;
#define ATTN_LAUNCH(GS, KV8)                                                                                            \
    attn_launch<GS, KV8>(paths, g, smem, st, q, kc, vc, n_heads, n_kv_heads, head_dim, pos0, d_pos, scale, window, nch_cap, nxc,    \
                         two_tiles, vpre, scratch, counters, out, (uint8_t *)act, arb, act_fmt, f, cl, vec)
    switch (gs * 2 + (kv8 ? 1 : 0)) {
    case 2: return ATTN_LAUNCH(1, 0);
    case 3: return ATTN_LAUNCH(1, 1);
    case 4: return ATTN_LAUNCH(2, 0);
    case 5: return ATTN_LAUNCH(2, 1);
    case 6: return ATTN_LAUNCH(3, 0);
    case 7: return ATTN_LAUNCH(3, 1);
    case 9: return ATTN_LAUNCH(4, 1);
    default: return ATTN_LAUNCH(4, 0);
    }
#undef ATTN_LAUNCH
}

/* ---- element-wise -------------------------------------------------------------------------- */
__global__ void swiglu_kernel(const float *g, const float *u, float *out, int n) {
    PDL_WAIT();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float gv = g[i]; out[i] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-gv))), u[i]); }
}
int cuda_swiglu(const float *g, const float *u, float *out, int n, cudaStream_t st) {
    klaunch(swiglu_kernel, (n + 255) / 256, 256, 0, st, g, u, out, n);
    return CU_LAUNCHED();
}

/* gelu (tanh approximation) * up as g / (1 + exp(-2y)) * up: cpu_geglu's operations in its order
 * (the definition and why there), expf_ref for the CPU's expf, so the bits equal the CPU's */
__global__ void geglu_kernel(const float *g, const float *u, float *out, int n) {
    PDL_WAIT();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float gv = g[i];
    float cube = __fmul_rn(__fmul_rn(__fmul_rn(0.044715f, gv), gv), gv);
    float z = __fmul_rn(1.5957691216057308f, __fadd_rn(gv, cube));
    out[i] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-z))), u[i]);
}
int cuda_geglu(const float *g, const float *u, float *out, int n, cudaStream_t st) {
    klaunch(geglu_kernel, (n + 255) / 256, 256, 0, st, g, u, out, n);
    return CU_LAUNCHED();
}

__global__ void add_kernel(float *x, const float *y, int n) {
    PDL_WAIT();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = __fadd_rn(x[i], y[i]);
}
int cuda_add(float *x, const float *y, int n, cudaStream_t st) {
    klaunch(add_kernel, (n + 255) / 256, 256, 0, st, x, y, n);
    return CU_LAUNCHED();
}

/* ---- greedy argmax: lowest index among the maxima (sample_argmax's rule) ------------------
 * ARGMAX_CTAS CTAs each reduce a chunk to (max, lowest index); the last CTA to finish (an
 * atomic counter in `scratch`, reset by it) reduces the partials and writes the id (and, in
 * graph mode, advances the position). scratch: 2 * ARGMAX_CTAS + 1 ints, zeroed once. */
#define ARGMAX_THREADS 1024
#define ARGMAX_CTAS 48
static __device__ __forceinline__ void argmax_merge(float *bv, int *bi, float v, int i) {
    if (v > *bv || (v == *bv && i < *bi)) { *bv = v; *bi = i; }
}
__global__ void argmax_kernel(const float *x, int n, int32_t *out, int *pos_inc, int *scratch, const uint32_t *mask) {
    PDL_WAIT();
    __shared__ float sv[ARGMAX_THREADS / 32];
    __shared__ int si[ARGMAX_THREADS / 32];
    __shared__ int is_last;
    int chunk = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        float v = x[i];
        if (mask && !(mask[i >> 5] >> (i & 31) & 1u)) v = -INFINITY;   /* forbidden (masked steps) */
        if (v > best) { best = v; idx = i; }   /* strided: first max of this thread's indices */
    }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, best, s);
        int oi = __shfl_xor_sync(FULL_MASK, idx, s);
        argmax_merge(&best, &idx, ov, oi);
    }
    if ((threadIdx.x & 31) == 0) { sv[threadIdx.x >> 5] = best; si[threadIdx.x >> 5] = idx; }
    __syncthreads();
    if (threadIdx.x == 0) {
        best = sv[0]; idx = si[0];
        for (int w = 1; w < ARGMAX_THREADS / 32; w++) argmax_merge(&best, &idx, sv[w], si[w]);
        scratch[2 * blockIdx.x] = __float_as_int(best);
        scratch[2 * blockIdx.x + 1] = idx;
        __threadfence();
        int done = atomicAdd(&scratch[2 * ARGMAX_CTAS], 1);
        is_last = done == (int)gridDim.x - 1;
    }
    __syncthreads();
    if (!is_last || threadIdx.x != 0) return;
    __threadfence();
    const volatile int *vs = scratch;
    best = __int_as_float(vs[0]); idx = vs[1];
    for (int c = 1; c < (int)gridDim.x; c++) argmax_merge(&best, &idx, __int_as_float(vs[2 * c]), vs[2 * c + 1]);
    out[0] = idx == 0x7fffffff ? 0 : idx;
    if (pos_inc) pos_inc[0] += 1;
    scratch[2 * ARGMAX_CTAS] = 0;
}

size_t cuda_argmax_scratch_ints(void) { return 2 * ARGMAX_CTAS + 1; }

/* the argmax of each of `rows` rows of n floats (row r at x + r n), one CTA per row: the same
 * rule (the lowest index among the maxima; the maximum is unique and so is its lowest index,
 * whatever order the candidates meet in), one launch for a pass's rows instead of one each */
__global__ void __launch_bounds__(ARGMAX_THREADS) argmax_rows_kernel(const float *x, int n, int32_t *out) {
    PDL_WAIT();
    __shared__ float sv[ARGMAX_THREADS / 32];
    __shared__ int si[ARGMAX_THREADS / 32];
    const float *row = x + (size_t)blockIdx.x * (size_t)n;
    float best = -INFINITY;
    int idx = 0x7fffffff;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = row[i];
        if (v > best) { best = v; idx = i; }
    }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, best, s);
        int oi = __shfl_xor_sync(FULL_MASK, idx, s);
        argmax_merge(&best, &idx, ov, oi);
    }
    if ((threadIdx.x & 31) == 0) { sv[threadIdx.x >> 5] = best; si[threadIdx.x >> 5] = idx; }
    __syncthreads();
    if (threadIdx.x != 0) return;
    best = sv[0]; idx = si[0];
    for (int w = 1; w < ARGMAX_THREADS / 32; w++) argmax_merge(&best, &idx, sv[w], si[w]);
    out[blockIdx.x] = idx == 0x7fffffff ? 0 : idx;
}

int cuda_argmax_rows(const float *x, int n, int rows, int32_t *d_out, cudaStream_t st) {
    if (rows < 1) return -1;
    klaunch(argmax_rows_kernel, (unsigned)rows, ARGMAX_THREADS, 0, st, x, n, d_out);
    return CU_LAUNCHED();
}

int cuda_argmax(const float *x, int n, int32_t *d_out, int *d_pos_inc, int *scratch, cudaStream_t st) {
    klaunch(argmax_kernel, ARGMAX_CTAS, ARGMAX_THREADS, 0, st, x, n, d_out, d_pos_inc, scratch, (const uint32_t *)NULL);
    return CU_LAUNCHED();
}

int cuda_argmax_masked(const float *x, int n, const uint32_t *mask, int32_t *d_out, int *d_pos_inc, int *scratch,
                       cudaStream_t st) {
    klaunch(argmax_kernel, ARGMAX_CTAS, ARGMAX_THREADS, 0, st, x, n, d_out, d_pos_inc, scratch, mask);
    return CU_LAUNCHED();
}
