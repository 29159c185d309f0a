/* The persistent decode step: every layer of a dense llama-style model at T = 1 in ONE kernel
 * launch, with grid-wide barriers between the stages instead of ~9 launches per layer.
 *
 * The graph step (backend_cuda.cu) runs, per layer: norm+quantize, q/k/v matvec, rope+KV
 * store, attention, wo+residual, norm+quantize, gate/up+SwiGLU, quantize, down+residual: nine
 * small kernels whose own latency (a few µs each) is the decode time on a small model. Here
 * one CTA per SM slot stays resident for all layers and walks five stages per layer:
 *
 *   A  every CTA normalizes x and quantizes it into its shared memory (redundantly: x is a
 *      few KB); the grid's warps take the q/k/v rows
 *   B  one CTA per head: RoPE of q and of its KV head's k, the f16 rows of the position
 *      (stored into the cache by the group's first head; the others use their own copy for
 *      the current row), then the exact attention (ops_dev.cuh, the op kernel's body)
 *   C  every CTA quantizes the attention output; warps take wo's rows: x1 = x + wo . att
 *   D  as A with the FFN norm; warps take gate/up row pairs: h = silu(g) * u
 *   E  every CTA quantizes h; warps take down's rows: x2 = x1 + down . h
 *
 * Bits: every value is computed by the same device code and order as the graph path's
 * kernels: row_dot (matvec_row.cuh), act_quant_block (act_quant.cuh), rope_pair and
 * attn_exact_head (ops_dev.cuh), the SwiGLU and residual formulas of matvec.cu's epilogues.
 * The norm's one free choice, the order of its double sum of squares, is the fused norm
 * kernels' (ops.cu): 1024 virtual threads strided (rmsnorm_q32_kernel / rmsnorm_kernel with
 * act_quant_row_cta) or n/8 virtual threads of 8 consecutive values (rmsnorm_q256_kernel),
 * emulated with 256 threads (virtual thread v = thread v % 256, pass v / 256; its warp tree
 * is the same lanes, its partial the same slot). tests/gpu/test_gpu_e2e.c compares the logits
 * of persistent steps with the CPU's bit for bit.
 *
 * Coherence: a kernel's loads may go through the non-coherent L1 path, so nothing written in
 * this launch is read at an address that was read earlier in the launch: each layer has its
 * own q, k, v, attention-output, h and x buffers (x_l versions), and the KV row of the current
 * position is not read back from the cache. The barrier is a counter + generation pair in
 * device memory (arrive with atomicAdd after __threadfence, the last arriver resets the count
 * and bumps the generation); the kernel is launched as a cooperative kernel, so the runtime
 * refuses a grid whose CTAs cannot all be resident (an error, never a hang); the grid is
 * sized from the occupancy query (cuda_persist_occupancy). */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "act_quant.cuh"
#include "matvec_row.cuh"
#include "expf_host.cuh"

EXPF_DEVICE_STATE
int cuda_persist_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
/* this file's copy of the IQ codebooks (iq_blocks.cuh: one per .cu), filled once */
IQ_TABLES_INIT_FN(cuda_persist_tables_init, "persist")
#include "ops_dev.cuh"

#define PT PERSIST_THREADS
#define PW (PT / 32)

/* ---- grid barrier ---------------------------------------------------------------------------
 * bar[0]: arrivals, bar[32]: generation (separate 128-byte lines: the pollers' reads do not
 * queue behind the arrivals' atomics). Thread 0 of each CTA reads the generation, makes its
 * CTA's writes visible (__threadfence) and arrives; the last arriver resets the count and
 * bumps the generation; the others poll it (acquire loads with a short back-off). */
#define BAR_GEN 32
static __device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
/* Optional stage timing (bench_gpu persist; cuda_persist_trace): per barrier, the latest
 * arrival over all CTAs (atomicMax of %globaltimer), and CTA 0 adds, per stage kind, the time
 * from its previous barrier exit to that latest arrival (work) and from there to its own exit
 * (barrier latency). */
static __device__ __forceinline__ unsigned long long gtimer(void) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
    return t;
}
struct ptrace_ctx { unsigned long long *tr; int slot; unsigned long long last; };
#define TRACE_KINDS 5
static __device__ __forceinline__ void grid_sync(unsigned *bar, ptrace_ctx *tc = NULL, int kind = 0) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned g = ld_acquire(bar + BAR_GEN);   /* cannot move before this CTA has arrived */
        if (tc && tc->tr) atomicMax(tc->tr + 2 * TRACE_KINDS + 1 + tc->slot, gtimer());
        __threadfence();
        if (atomicAdd(bar, 1u) == gridDim.x - 1) {
            atomicExch(bar, 0u);
            __threadfence();
            atomicAdd(bar + BAR_GEN, 1u);
        } else {
            while (ld_acquire(bar + BAR_GEN) == g) __nanosleep(20);
        }
        __threadfence();
        if (tc && tc->tr && blockIdx.x == 0) {
            unsigned long long now = gtimer(), *arr = tc->tr + 2 * TRACE_KINDS + 1 + tc->slot;
            unsigned long long la = *(volatile unsigned long long *)arr;
            tc->tr[2 * kind] += la - tc->last;
            tc->tr[2 * kind + 1] += now - la;
            *arr = 0;
            tc->last = now;
        }
        if (tc) tc->slot++;
    }
    __syncthreads();
}

/* L2 prefetch of rows r0, r0 + stride, ... below R (rb bytes each): lanes take 128-byte
 * lines. Fire and forget: the weights of the later stages stream in while the grid works and
 * waits. */
static __device__ __forceinline__ void prefetch_rows(const uint8_t *W, size_t rb, int r0, int R, int stride) {
    const int lane = threadIdx.x & 31;
    for (int r = r0; r < R; r += stride) {
        const uint8_t *p = W + (size_t)r * rb;
        for (size_t off = (size_t)lane * 128; off < rb; off += 32 * 128)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
    }
}

/* ---- one row's dot, the format chosen at run time (T = 1) ------------------------------------ */
#define PERSIST_FMTS(X)                                                                                     \
    X(TYPE_F32) X(TYPE_F16) X(TYPE_BF16) X(TYPE_Q4_0) X(TYPE_Q4_1) X(TYPE_Q5_0) X(TYPE_Q5_1) X(TYPE_Q8_0)     \
    X(TYPE_Q2_0) X(TYPE_MXFP4) X(TYPE_Q2_K) X(TYPE_Q3_K) X(TYPE_Q4_K) X(TYPE_Q5_K) X(TYPE_Q6_K)               \
    X(TYPE_IQ2_XXS) X(TYPE_IQ2_XS) X(TYPE_IQ2_S) X(TYPE_IQ3_XXS) X(TYPE_IQ3_S) X(TYPE_IQ1_S) X(TYPE_IQ1_M)   \
    X(TYPE_IQ4_NL) X(TYPE_IQ4_XS)

/* lane 0 returns the canonical dot of row wr against act (matvec_kernel's row_dot) */
static __device__ __noinline__ float pdot(int fmt, int coop, const uint8_t *wr, int64_t n_in, int nb, const uint8_t *act) {
    float acc[1] = { 0.0f };
    switch (fmt) {
#define PD(F)                                                                                     \
    case F:                                                                                       \
        if (coop_fmt<F>::ok && coop) row_dot<F, 1, coop_fmt<F>::ok * 8>(wr, n_in, nb, act, 0, 1, acc); \
        else row_dot<F, 1, 0>(wr, n_in, nb, act, 0, 1, acc);                                      \
        break;
        PERSIST_FMTS(PD)
#undef PD
    }
    return acc[0];
}

int cuda_persist_type_ok(int type) {
    switch (type) {
#define PC(F) case F: return 1;
        PERSIST_FMTS(PC)
#undef PC
    }
    return 0;
}

/* ---- activations into this CTA's shared memory --------------------------------------------- */
static __device__ __forceinline__ int act_block_len(int fmt) { return fmt == ACT_Q8_2 ? 64 : fmt == ACT_Q8_K ? 256 : 32; }

/* y_s[0..n) (shared, written by this CTA) -> act_s in fmt (ACT_F32: the caller reads y_s) */
static __device__ __forceinline__ void quant_smem(const float *y_s, int n, int fmt, uint8_t *act_s) {
    if (fmt == ACT_F32) return;
    int warp = threadIdx.x >> 5, B = act_block_len(fmt);
    size_t bb = act_block_bytes_dev(fmt);
    for (int bi = warp; bi < n / B; bi += PW) {
        if (B == 32) act_quant_block<32>(y_s + bi * 32, act_s + bi * bb, fmt);
        else if (B == 64) act_quant_block<64>(y_s + bi * 64, act_s + bi * bb, fmt);
        else act_quant_block<256>(y_s + bi * 256, act_s + bi * bb, fmt);
    }
}

/* y_s = x / rms(x) * w, then act_s. The double sum of squares in the order of the fused norm
 * kernel the graph path launches for this act format (see the file's comment). */
static __device__ __forceinline__ void norm_smem(const float *x, const float *w, int n, float eps, int fmt, float *y_s,
                                                 uint8_t *act_s) {
    __shared__ double part[32];
    __shared__ float inv_s;
    const int tid = threadIdx.x, lane = tid & 31;
    /* rmsnorm_q256_kernel: n/8 threads of 8 consecutive values; the other fused kernels: 1024
     * threads strided; an f32 matvec input (no quantization): cuda_rmsnorm, 256 strided */
    const int k256 = fmt == ACT_Q8_K && n <= 8192;
    const int VT = k256 ? n / 8 : fmt == ACT_F32 ? 256 : 1024, nparts = VT / 32;
    for (int v0 = 0; v0 < VT; v0 += PT) {
        int v = v0 + tid;
        if (v0 + (tid & ~31) >= VT) break;         /* whole warps (VT % 32 == 0) */
        double ss = 0;
        if (k256) {
#pragma unroll
            for (int k = 0; k < 8; k++) { double d = x[8 * v + k]; ss += d * d; }
        } else {
            for (int i = v; i < n; i += VT) { double d = x[i]; ss += d * d; }
        }
#pragma unroll
        for (int s = 16; s >= 1; s >>= 1) ss += __shfl_xor_sync(FULL_MASK, ss, s);
        if (lane == 0) part[v >> 5] = ss;
    }
    __syncthreads();
    if (tid == 0) inv_s = rms_inv_parts(part, nparts, n, eps);
    __syncthreads();
    float inv = inv_s;
    for (int i = tid; i < n; i += PT) y_s[i] = __fmul_rn(__fmul_rn(x[i], inv), w[i]);
    __syncthreads();
    quant_smem(y_s, n, fmt, act_s);
    __syncthreads();
}

/* x (global, written by other CTAs before the barrier) -> y_s -> act_s */
static __device__ __forceinline__ void load_quant_smem(const float *x, int n, int fmt, float *y_s, uint8_t *act_s) {
    for (int i = threadIdx.x; i < n; i += PT) y_s[i] = x[i];
    __syncthreads();
    quant_smem(y_s, n, fmt, act_s);
    __syncthreads();
}

/* ---- the kernel ------------------------------------------------------------------------------ */
__global__ void __launch_bounds__(PT) persist_kernel(persist_args a) {
    extern __shared__ __align__(16) uint32_t psm[];
    __shared__ float qr[ATT_MAX_HD];
    __shared__ __align__(16) uint16_t kl[ATT_MAX_HD], vl[ATT_MAX_HD];
    const int tid = threadIdx.x, lane = tid & 31;
    const int gw = blockIdx.x * PW + (tid >> 5), NW = gridDim.x * PW;
    const int E = a.E, H = a.H, KVH = a.KVH, HD = a.HD, Q = a.H * a.HD, KV = a.KVH * a.HD, F = a.F;
    const int half = a.n_rot / 2, grp = H / KVH;
    const int pos = a.d_pos[0];
    const float *cs = a.rope_cs + (size_t)pos * half * 2;
    /* norm / activation layout: y_s floats, then the activation blocks (16-byte aligned) */
    float *y_s = (float *)psm;
    uint8_t *act_s = (uint8_t *)(psm + ((a.n_max + 3) & ~3));
    const float *x = a.x0;
    ptrace_ctx tcx = { a.trace, 0, 0 }, *tc = &tcx;
    if (a.trace && blockIdx.x == 0 && tid == 0) { tcx.last = gtimer(); a.trace[2 * TRACE_KINDS]++; }
    for (int l = 0; l < a.n_layers; l++) {
        const persist_layer *P = &a.layers[l];
        if (a.prefetch) {   /* this warp's rows of wo, gate, up and down, and its head's K/V rows */
            prefetch_rows(P->wo, P->rb_o, gw, E, NW);
            prefetch_rows(P->gate, P->rb_gu, gw, F, NW);
            prefetch_rows(P->up, P->rb_gu, gw, F, NW);
            prefetch_rows(P->down, P->rb_down, gw, E, NW);
            for (int h = blockIdx.x; h < H; h += gridDim.x)
                if (h % grp == 0) {
                    const size_t rbk = (size_t)HD * 2;
                    const uint8_t *kb = (const uint8_t *)(P->kc + (size_t)(h / grp) * HD);
                    const uint8_t *vb = (const uint8_t *)(P->vc + (size_t)(h / grp) * HD);
                    for (int p = tid; p < pos; p += PT)
                        for (size_t off = 0; off < rbk; off += 128) {
                            asm volatile("prefetch.global.L2 [%0];" ::"l"(kb + (size_t)p * KV * 2 + off));
                            asm volatile("prefetch.global.L2 [%0];" ::"l"(vb + (size_t)p * KV * 2 + off));
                        }
                }
        }
        /* A: attention norm, q/k/v rows */
        norm_smem(x, P->attn_norm, E, a.eps, P->af_qkv, y_s, act_s);
        {
            const uint8_t *act = P->af_qkv == ACT_F32 ? (const uint8_t *)y_s : act_s;
            const int nb = (int)(E / P->blk_qkv), R = Q + 2 * KV;
            for (int row = gw; row < R; row += NW) {
                const uint8_t *W;
                float *y;
                int r;
                if (row < Q) { W = P->wq; y = P->q; r = row; }
                else if (row < Q + KV) { W = P->wk; y = P->k; r = row - Q; }
                else { W = P->wv; y = P->v; r = row - Q - KV; }
                float acc = pdot(P->t_qkv, P->c_qkv, W + (size_t)r * P->rb_qkv, E, nb, act);
                if (lane == 0) y[r] = acc;
            }
        }
        grid_sync(a.bar, tc, 0);
        /* B: RoPE, KV rows, attention, one head per CTA */
        for (int h = blockIdx.x; h < H; h += gridDim.x) {
            const int kvh = h / grp;
            const size_t off = (size_t)pos * KV + (size_t)kvh * HD;
            rope_head_kv(P->q + (size_t)h * HD, P->k + (size_t)kvh * HD, P->v + (size_t)kvh * HD, cs, cs, a.n_rot, a.neox,
                         HD, qr, kl, vl, h % grp == 0 ? P->kc + off : NULL, P->vc + off);
            attn_exact_head(qr, P->kc, P->vc, h, H, KVH, HD, pos, a.scale, 0, NULL, P->att + (size_t)h * HD, psm,
                            (const uint32_t *)kl, (const uint32_t *)vl);
            __syncthreads();
        }
        grid_sync(a.bar, tc, 1);
        /* C: wo rows + residual */
        float *x1 = P->x_mid;
        load_quant_smem(P->att, Q, P->af_o, y_s, act_s);
        {
            const uint8_t *act = P->af_o == ACT_F32 ? (const uint8_t *)y_s : act_s;
            const int nb = (int)(Q / P->blk_o);
            for (int r = gw; r < E; r += NW) {
                float acc = pdot(P->t_o, P->c_o, P->wo + (size_t)r * P->rb_o, Q, nb, act);
                if (lane == 0) x1[r] = __fadd_rn(x[r], acc);
            }
        }
        grid_sync(a.bar, tc, 2);
        /* D: FFN norm, gate/up row pairs + SwiGLU */
        norm_smem(x1, P->ffn_norm, E, a.eps, P->af_gu, y_s, act_s);
        {
            const uint8_t *act = P->af_gu == ACT_F32 ? (const uint8_t *)y_s : act_s;
            const int nb = (int)(E / P->blk_gu);
            for (int r = gw; r < F; r += NW) {
                float g = pdot(P->t_gu, P->c_gu, P->gate + (size_t)r * P->rb_gu, E, nb, act);
                float u = pdot(P->t_gu, P->c_gu, P->up + (size_t)r * P->rb_gu, E, nb, act);
                if (lane == 0) P->h[r] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf_ref(-g))), u);
            }
        }
        grid_sync(a.bar, tc, 3);
        /* E: down rows + residual */
        float *x2 = P->x_out;
        load_quant_smem(P->h, F, P->af_down, y_s, act_s);
        {
            const uint8_t *act = P->af_down == ACT_F32 ? (const uint8_t *)y_s : act_s;
            const int nb = (int)(F / P->blk_down);
            for (int r = gw; r < E; r += NW) {
                float acc = pdot(P->t_down, P->c_down, P->down + (size_t)r * P->rb_down, F, nb, act);
                if (lane == 0) x2[r] = __fadd_rn(x1[r], acc);
            }
        }
        if (l + 1 < a.n_layers) grid_sync(a.bar, tc, 4);
        x = x2;
    }
}

/* Dynamic shared memory of the kernel: the norm/activation area or the attention's tile and
 * scores, whichever is larger. */
size_t cuda_persist_smem(int n_max, int head_dim, int n_ctx) {
    /* y_s, then activation blocks of at most 40 bytes per 32 values (act_q8_1; q8_K: 36.5) */
    size_t norm = (size_t)((n_max + 3) & ~3) * 4 + (size_t)(n_max + 31) / 32 * 40 + 64;
    size_t att = attn_tile_words(head_dim) * 4 + (size_t)n_ctx * 4;
    return norm > att ? norm : att;
}

/* CTAs per SM that can be resident (0: the kernel cannot run with this much shared memory) */
int cuda_persist_occupancy(size_t smem) {
    if (CU_CHECK(cudaFuncSetAttribute(persist_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem))) return 0;
    int n = 0;
    if (CU_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, persist_kernel, PT, smem))) return 0;
    return n;
}

static unsigned long long *g_trace;
int cuda_persist_launch(const persist_args *a0, int grid, cudaStream_t st) {
    persist_args ta = *a0, *a = &ta;
    ta.trace = g_trace;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)grid); cfg.blockDim = dim3(PT); cfg.dynamicSmemBytes = a->smem; cfg.stream = st;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeCooperative;
    at[0].val.cooperative = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    return CU_CHECK(cudaLaunchKernelEx(&cfg, persist_kernel, *a));
}

/* ---- the barrier alone (bench_gpu persist): n grid barriers per launch ----------------------- */
__global__ void __launch_bounds__(PT) barrier_kernel(unsigned *bar, int n) {
    for (int i = 0; i < n; i++) grid_sync(bar);
}
extern "C" double cuda_persist_barrier_us(int grid, int n) {
    unsigned *bar = NULL;
    if (CU_CHECK(cudaMalloc(&bar, 64 * sizeof(unsigned))) || CU_CHECK(cudaMemset(bar, 0, 64 * sizeof(unsigned)))) return -1;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    double best = -1;
    for (int rep = 0; rep < 5; rep++) {
        void *args[] = { &bar, &n };
        cudaEventRecord(e0, 0);
        if (CU_CHECK(cudaLaunchCooperativeKernel((const void *)barrier_kernel, grid, PT, args, 0, 0))) break;
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        double us = ms * 1000.0 / n;
        if (best < 0 || us < best) best = us;
    }
    cudaEventDestroy(e0); cudaEventDestroy(e1);
    cudaFree(bar);
    return best;
}

/* Stage timing for benchmarks: a zeroed device buffer the launches made after this call
 * (graphs captured after it) add into; cuda_persist_trace_read returns, per stage kind
 * (A..E), the summed work and barrier ns and the number of launches. */
extern "C" int cuda_persist_trace_enable(int max_barriers) {
    size_t n = 2 * TRACE_KINDS + 1 + (size_t)max_barriers;
    if (!g_trace && CU_CHECK(cudaMalloc(&g_trace, n * sizeof(unsigned long long)))) return -1;
    return CU_CHECK(cudaMemset(g_trace, 0, n * sizeof(unsigned long long)));
}
extern "C" int cuda_persist_trace_read(unsigned long long out[2 * TRACE_KINDS + 1]) {
    if (!g_trace) return -1;
    int rc = CU_CHECK(cudaMemcpy(out, g_trace, (2 * TRACE_KINDS + 1) * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    cudaFree(g_trace);   /* off again for the launches captured after this */
    g_trace = NULL;
    return rc;
}
