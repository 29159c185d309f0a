/* CUDA matvec for every weight format, T = 1..8 columns, bit-identical to the CPU reference.
 *
 *   y[c * n_out + r] = W[r] . x_c
 *
 * Activation quantization (act_quantize_kernel): src/quant/act.c's formula, one warp per
 * activation block: amax by a max-reduction (order-free), d = amax / 127, id = 1 / d,
 * q = __float2int_rn(clamp(x * id)) (round half to even = nearbyintf), int sums exact.
 *
 * Matvec (matvec_kernel): one warp per row. Lane l walks the blocks b = l, l + 32, ... of the
 * row, decodes each weight block once and forms its partial against every column
 * (quant_blocks.cuh), adding it into that column's lane accumulator: acc = acc + p_b, which
 * IS the canonical lane b % 32. The shuffle-down tree 16, 8, 4, 2, 1 then gives the bits of
 * canon_finish. Float formats (F32/F16/BF16) use the per-element order: lane k % 32 gets
 * w[k] * x[k] (rounded product, then add).
 *
 * A launch covers a "group" of up to MV_GROUP_MAX weights of one format sharing the input
 * (q, k and v; gate and up): their rows are concatenated, so one launch replaces three.
 * Epilogues (fusions that keep every bit): add_to[r] += y[r] (residual add) and, for a
 * gate/up pair, out[r] = silu(g[r]) * u[r] (SwiGLU, the CPU formula). */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "quant_blocks.cuh"
#include "iq_blocks.cuh"
#include "act_quant.cuh"
#include "kquant_coop.cuh"
#include "matvec_row.cuh"
#include "kq_row.cuh"
#include "q6p_cuda.h"
extern "C" {
#include "core/env.h"
}
#include "expf_host.cuh"

EXPF_DEVICE_STATE
PDL_TU_STATE(matvec)
PF_TU_STATE(matvec)
CANON_TU_STATE(matvec)
int cuda_matvec_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
#include "ops_dev.cuh"

/* ---- activation quantization ------------------------------------------------------------ */

/* One warp per activation block (act_quant.cuh has the formula). */
template <int B>
__global__ void act_quantize_kernel(const float *__restrict__ x, int64_t n, int T, uint8_t *__restrict__ dst, int fmt) {
    PDL_WAIT();
    int64_t nb = n / B;
    int64_t gw = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;   /* global warp = (t, block) */
    if (gw >= nb * T) return;
    int t = (int)(gw / nb);
    int64_t bi = gw % nb;
    size_t bsz = act_block_bytes_dev(fmt);
    act_quant_block<B>(x + (size_t)t * n + bi * B, dst + ((size_t)t * (size_t)nb + (size_t)bi) * bsz, fmt);
}

extern "C" int cuda_act_quantize(int act, const float *x, int64_t n, int T, void *dst, void *stream) {
    if (act == ACT_F32) {
        return CU_CHECK(cudaMemcpyAsync(dst, x, (size_t)n * T * sizeof(float), cudaMemcpyDeviceToDevice, (cudaStream_t)stream));
    }
    if (act < ACT_Q8_0 || act > ACT_Q8_K) return -1;
    const int B = act_blck_q(act);
    if (n % B) return -1;
    int64_t warps = n / B * T;
    int threads = 128;
    unsigned blocks = (unsigned)((warps * 32 + threads - 1) / threads);
    cudaStream_t st = (cudaStream_t)stream;
    /* the kernel per block length: act_q8_0 / act_q8_1, act_q8_2, act_q8_K */
#define AQ(A) klaunch(act_quantize_kernel<afmt<A>::blck>, blocks, threads, 0, st, x, n, T, (uint8_t *)dst, act)
    if (B == afmt<ACT_Q8_0>::blck) AQ(ACT_Q8_0);
    else if (B == afmt<ACT_Q8_2>::blck) AQ(ACT_Q8_2);
    else AQ(ACT_Q8_K);
#undef AQ
    return CU_LAUNCHED();
}

/* ---- matvec --------------------------------------------------------------------------- */

/* lane 0 of the warp stores row r of group weight wi (and the residual add) */
template <int TM>
static __device__ __forceinline__ void store_row(const mv_group &g, int wi, int r, int T, const float *acc) {
    int64_t no = g.n_out[wi];
    float *y = g.y[wi], *add = g.add_to[wi];
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        y[t * no + r] = acc[t];
        if (add) add[t * no + r] = __fadd_rn(add[t * no + r], acc[t]);
    }
}
template <int TM>
static __device__ __forceinline__ void store_swiglu(const mv_group &g, int row, int T, const float *ga, const float *ua) {
    int64_t no = g.n_out[0];
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        float gv = ga[t], uv = ua[t];
        g.y[0][t * no + row] = gv;
        g.y[1][t * no + row] = uv;
        g.swiglu_out[t * no + row] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-gv))), uv);
    }
}
static __device__ __forceinline__ int group_weight(const mv_group &g, int row) {
    int wi = 0;
    while (wi + 1 < g.n && row >= g.row_start[wi + 1]) wi++;
    return wi;
}

/* COOP: 0 one lane per block; 8: 8 lanes per super-block (kquant_coop.cuh). Two rows per warp
 * (row_dot_coop's R = 2) measured 0-20% slower than one on the H200 (docs/BENCHMARKS.md,
 * CUDA): the kernel is bound by instructions, not by loads in flight, so it is not built. */
template <int FMT, int TM, int COOP, int V>
__global__ void __launch_bounds__(MV_WARPS * 32)
matvec_kernel(mv_group g, int64_t n_in, int nb, const uint8_t *__restrict__ act, size_t as, int T) {
    int row = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (c_prefetch & CUDA_PF_ROWS) {   /* the weights do not depend on the kernel before */
        if (g.swiglu) {
            if (row < g.n_out[0]) {
                l2_prefetch_lines(g.W[0] + (size_t)row * g.row_bytes, g.row_bytes, lane, 32);
                l2_prefetch_lines(g.W[1] + (size_t)row * g.row_bytes, g.row_bytes, lane, 32);
            }
        } else if (row < g.row_start[g.n]) {
            const int wi = group_weight(g, row);
            l2_prefetch_lines(g.W[wi] + (size_t)(row - g.row_start[wi]) * g.row_bytes, g.row_bytes, lane, 32);
        }
    }
    PDL_WAIT();
    if (g.swiglu) {
        /* gate/up pair: row r of W0 and of W1, then out[r] = silu(g) * u */
        if (row >= g.n_out[0]) return;
        float ga[TM], ua[TM];
        row_dot<FMT, TM, COOP, V>(g.W[0] + (size_t)row * g.row_bytes, n_in, nb, act, as, T, ga);
        row_dot<FMT, TM, COOP, V>(g.W[1] + (size_t)row * g.row_bytes, n_in, nb, act, as, T, ua);
        if (lane == 0) store_swiglu<TM>(g, row, T, ga, ua);
        return;
    }
    if (row >= g.row_start[g.n]) return;
    int wi = group_weight(g, row);
    int r = row - g.row_start[wi];
    float acc[TM];
    row_dot<FMT, TM, COOP, V>(g.W[wi] + (size_t)r * g.row_bytes, n_in, nb, act, as, T, acc);
    if (lane == 0) store_row<TM>(g, wi, r, T, acc);
}

/* STRATA_CUDA_MV_SPLIT: a row of the cooperative kernel at T = 1 split over W warps (2 or 4)
 * of a 4-warp CTA (4 / W rows per CTA), where the row takes more than one step of G blocks:
 * each warp computes the block partials of its steps into shared memory (row_parts_coop), then
 * the row's first warp adds them into the lanes in block order and finishes the warp tree, so
 * the result is row_dot_coop's bit for bit; the row's loads are in flight on W warps at once
 * (for 2,048 rows of 4,096 Q4_K weights: 2,048 CTAs of 4 warps instead of 512). */
#define MV_SPLIT_MAXNB 64
template <int FMT, int V>
__global__ void __launch_bounds__(MV_WARPS * 32)
matvec_split_kernel(mv_group g, int nb, const uint8_t *__restrict__ act, int W) {
    __shared__ float sp[MV_WARPS][MV_SPLIT_MAXNB];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int rl = warp / W, part = warp % W, row = blockIdx.x * (MV_WARPS / W) + rl;
    const int live = row < g.row_start[g.n];
    if ((c_prefetch & CUDA_PF_ROWS) && live) {   /* the row's lines over its W warps */
        const int wi = group_weight(g, row);
        l2_prefetch_lines(g.W[wi] + (size_t)(row - g.row_start[wi]) * g.row_bytes, g.row_bytes, part * 32 + lane, 32 * W);
    }
    PDL_WAIT();
    int wi = 0, r = 0;
    if (live) {
        wi = group_weight(g, row);
        r = row - g.row_start[wi];
        row_parts_coop<FMT, 8, V>(g.W[wi] + (size_t)r * g.row_bytes, nb, act, part, W, sp[rl]);
    }
    __syncthreads();
    if (live && part == 0) {
        float acc = 0.0f;
        for (int b = lane; b < nb; b += 32) acc = __fadd_rn(acc, sp[rl][b]);
        acc = warp_canon_finish<MV_WARPS>(acc, nb);
        if (lane == 0) store_row<1>(g, wi, r, 1, &acc);
    }
}

/* A group's rows (or a gate/up pair's: row r of both, then store_swiglu's values) */
template <int FMT, int TPB, int STEPS, int SA = 0>
__global__ void __launch_bounds__(MV_WARPS * 32)
matvec_kq1_kernel(mv_group g, int nb, const uint8_t *__restrict__ act) {
    static_assert(kq_fmt<FMT>::ok && FMT != TYPE_Q6_K, "Q4_K / Q5_K / the kq IQ formats");
    static_assert(TPB == 4 || TPB == 8, "4 or 8 lanes a block");
    static_assert(!kq_fmt<FMT>::iq || TPB == 8, "the IQ formats: 8 lanes a block");
    extern __shared__ __align__(16) uint8_t kq_sm[];
    const kq_smem s = kq_smem_of(kq_sm, nb);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = blockIdx.x * MV_WARPS + warp;
    const bool live = row < (g.swiglu ? (int)g.n_out[0] : g.row_start[g.n]);
    int wi = 0, r = row;
    if (live && !g.swiglu) { wi = group_weight(g, row); r = row - g.row_start[wi]; }
    if ((c_prefetch & CUDA_PF_ROWS) && live) {
        l2_prefetch_lines(g.W[wi] + (size_t)r * g.row_bytes, g.row_bytes, lane, 32);
        if (g.swiglu) l2_prefetch_lines(g.W[1] + (size_t)r * g.row_bytes, g.row_bytes, lane, 32);
    }
    kq_tab_fill<FMT, SA>(s);
    PDL_WAIT();
    kq_act_copy<FMT, MV_WARPS * 32>(act, nb, s);
    __syncthreads();
    if (!live) return;
    if (g.swiglu) {
        float ga = kq1_row<FMT, TPB, STEPS, SA>(g.W[0] + (size_t)r * g.row_bytes, nb, s);
        float ua = kq1_row<FMT, TPB, STEPS, SA>(g.W[1] + (size_t)r * g.row_bytes, nb, s);
        if (lane == 0) store_swiglu<1>(g, r, 1, &ga, &ua);
        return;
    }
    float acc = kq1_row<FMT, TPB, STEPS, SA>(g.W[wi] + (size_t)r * g.row_bytes, nb, s);
    if (lane == 0) store_row<1>(g, wi, r, 1, &acc);
}

/* STRATA_CUDA_MV_KQ = 1: the same steps in a grid of about one wave (launch_fmt's estimate: 8 CTAs on
 * every SM, fewer where the activation row's shared memory allows fewer), each warp taking rows gw,
 * gw + NW, ... (NW the grid's warps: kq_walk) and each CTA copying the activation row once for all its
 * rows; the warp loads step c + 1's weights (the next step of its row, or the first of its next row)
 * before it computes step c, so a step's loads are in flight while the one before is computed, across
 * rows too. TPB = 4 (Q4_K / Q5_K; a step is 8 blocks) or 8 (Q6_K, the kq IQ formats: 4 blocks, so that
 * two steps' raw words fit the registers). A gate/up pair's row is two rows of steps (W[0]'s, then
 * W[1]'s) and stores store_swiglu's values. Same per-row operations as kq1_row. */
template <int FMT, int SA = 0>
__global__ void __launch_bounds__(MV_WARPS * 32)
matvec_kqp_kernel(mv_group g, int nb, const uint8_t *__restrict__ act) {
    constexpr int TPB = kq_fmt<FMT>::tpb, G = 32 / TPB;
    extern __shared__ __align__(16) uint8_t kq_sm[];
    const kq_smem s = kq_smem_of(kq_sm, nb);
    const int lane = threadIdx.x & 31;
    const kq_walk wk = kq_walk_of(g.swiglu ? (int)g.n_out[0] : g.row_start[g.n]);
    const int nit = (nb + G - 1) / G, mats = g.swiglu ? 2 : 1;
    /* a step's row pointer: the walk's row rl, matrix m */
    auto row_ptr = [&](int rl, int m) -> const uint8_t * {
        const int row = wk.row(rl);
        if (g.swiglu) return g.W[m] + (size_t)row * g.row_bytes;
        const int wi = group_weight(g, row);
        return g.W[wi] + (size_t)(row - g.row_start[wi]) * g.row_bytes;
    };
    kq_tab_fill<FMT, SA>(s);
    PDL_WAIT();
    kq_step<FMT, TPB> cur, nxt;
    const uint8_t *wp = row_ptr(0, 0);   /* the row of the step being computed */
    if (wk.my_rows > 0) kq_load<FMT, TPB>(cur, wp, 0, nb);
    kq_act_copy<FMT, MV_WARPS * 32>(act, nb, s);
    __syncthreads();
    float acc = 0.0f, ga = 0.0f;
    int rl = 0, m = 0, it = 0;   /* the step being computed: the walk's row rl, matrix m, blocks from G it */
    while (rl < wk.my_rows) {
        int nrl = rl, nm = m, ni = it + 1;   /* the next step */
        if (ni == nit) { ni = 0; if (++nm == mats) { nm = 0; nrl++; } }
        const uint8_t *np = ni == 0 ? row_ptr(nrl, nm) : wp;   /* a row's pointer once, at its first step */
        kq_load<FMT, TPB>(nxt, np, G * ni, nb);   /* past the last step: the last row again */
        kq_step_add<FMT, TPB, SA>(cur, G * it, nb, s, acc);
        if (it == nit - 1) {
            const float v = warp_canon_finish<MV_WARPS>(acc, nb);
            acc = 0.0f;
            const int row = wk.gw + rl * wk.nw;
            if (g.swiglu) {
                if (m == 0) ga = v;
                else if (lane == 0) { float gv = ga, uv = v; store_swiglu<1>(g, row, 1, &gv, &uv); }
            } else if (lane == 0) {
                const int wi = group_weight(g, row);
                store_row<1>(g, wi, row - g.row_start[wi], 1, &v);
            }
        }
        cur = nxt;
        wp = np;
        rl = nrl; m = nm; it = ni;
    }
}

/* STRATA_CUDA_MV_KQ = 2: matvec_kqp_kernel's grid and lookahead, with a gate/up pair's two rows taken as
 * one row of paired steps (kq_pairs). Plain rows (no pair) take matvec_kqp_kernel. */
template <int FMT, int SA = 0>
__global__ void __launch_bounds__(MV_WARPS * 32)
matvec_kqs_kernel(mv_group g, int nb, const uint8_t *__restrict__ act) {
    extern __shared__ __align__(16) uint8_t kq_sm[];
    const kq_smem s = kq_smem_of(kq_sm, nb);
    const kq_walk wk = kq_walk_of((int)g.n_out[0]);
    kq_tab_fill<FMT, SA>(s);
    PDL_WAIT();
    kq_pairs<FMT, SA>(g.W[0], g.W[1], nb, s, wk.my_rows, act,
                  [&](int rl) -> size_t { return (size_t)wk.row(rl) * g.row_bytes; },
                  [&](int rl, float gv, float uv) {
                      if ((threadIdx.x & 31) == 0) store_swiglu<1>(g, wk.gw + rl * wk.nw, 1, &gv, &uv);
                  });
}

/* gate/up + SwiGLU at T = 1 with h's activation quantization folded in, for down weights that
 * read 32-value blocks (act_q8_0 / act_q8_1): 32 warps per CTA, warp w takes row
 * 32 * blockIdx.x + w (store_swiglu's values), then warp 0 quantizes the CTA's 32 h values as
 * one block (act_quant_block_regs: act_quantize_kernel's bits). One launch instead of two. */
template <int FMT>
__global__ void __launch_bounds__(1024)
matvec_swiglu_q32_kernel(mv_group g, int64_t n_in, int nb, const uint8_t *__restrict__ act, uint8_t *__restrict__ act_h,
                         int fmt_h) {
    __shared__ float hs[32];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, row = blockIdx.x * 32 + w;
    if (c_prefetch & CUDA_PF_ROWS) {
        l2_prefetch_lines(g.W[0] + (size_t)row * g.row_bytes, g.row_bytes, lane, 32);
        l2_prefetch_lines(g.W[1] + (size_t)row * g.row_bytes, g.row_bytes, lane, 32);
    }
    PDL_WAIT();
    float ga[1], ua[1];
    row_dot<FMT, 1, 0, 0, 32>(g.W[0] + (size_t)row * g.row_bytes, n_in, nb, act, 0, 1, ga);
    row_dot<FMT, 1, 0, 0, 32>(g.W[1] + (size_t)row * g.row_bytes, n_in, nb, act, 0, 1, ua);
    if (lane == 0) {
        store_swiglu<1>(g, row, 1, ga, ua);
        hs[w] = __fmul_rn(__fdiv_rn(ga[0], __fadd_rn(1.0f, expf_ref(-ga[0]))), ua[0]);   /* store_swiglu's h */
    }
    __syncthreads();
    if (w == 0) {
        float v = hs[lane];
        act_quant_block_regs<32>(&v, act_h + (size_t)blockIdx.x * act_block_bytes_dev(fmt_h), fmt_h);
    }
}

/* the formats this kernel is built for (32-weight blocks) */
#define SWIGLU_Q32_FORMATS(X) X(TYPE_Q4_0) X(TYPE_Q4_1) X(TYPE_Q5_0) X(TYPE_Q5_1) X(TYPE_Q8_0)

int cuda_matvec_swiglu_q32_ok(int type, int act_h_fmt, int64_t n_out) {
    int fmt_ok = 0;
    switch (type) {
#define SQ_OK(F) case F: static_assert(wfmt<F>::blck == 32, "32-weight blocks"); fmt_ok = 1; break;
    SWIGLU_Q32_FORMATS(SQ_OK)
#undef SQ_OK
    }
    return fmt_ok && (act_h_fmt == ACT_Q8_0 || act_h_fmt == ACT_Q8_1) && n_out % 32 == 0 && n_out > 0;
}

int cuda_matvec_swiglu_q32(int type, const mv_group *g, int64_t n_in, const void *act, void *act_h, int act_h_fmt,
                           cudaStream_t st) {
    int blck, af, bs;
    if (!g->swiglu || !cuda_matvec_swiglu_q32_ok(type, act_h_fmt, g->n_out[0]) || cuda_type_info(type, &blck, &af, &bs) ||
        n_in % blck)
        return -1;
    const int nb = (int)(n_in / blck);
    const unsigned blocks = (unsigned)(g->n_out[0] / 32);
    const uint8_t *a = (const uint8_t *)act;
    uint8_t *ah = (uint8_t *)act_h;
    switch (type) {
#define SQ_LAUNCH(F) \
    case F: klaunch(matvec_swiglu_q32_kernel<F>, blocks, 1024, 0, st, *g, n_in, nb, a, ah, act_h_fmt); break;
    SWIGLU_Q32_FORMATS(SQ_LAUNCH)
#undef SQ_LAUNCH
    }
    return CU_LAUNCHED();
}

/* Kernel of the 256-weight formats: 8 (8 lanes per super-block), 0 (the first kernel, one
 * lane per super-block: kept for comparison in tests and benchmarks), or -1: each format's
 * default (coop_default). Q4_K /
 * Q5_K's cooperative parts use 16-byte loads: every weight of the group and the row stride
 * must be 16-byte aligned, else the one-lane path runs. */
static int mv_coop = -1;
extern "C" void cuda_matvec_set_coop(int v) { mv_coop = v == 0 || v == 8 ? v : -1; }
int cuda_matvec_coop_setting(void) { return mv_coop; }

/* The decode variants (CUDA_DEC_* bits, decode_fast.cuh) of the matvec and MoE kernels: 0
 * (every default decode) unless cuda_variants_apply / a test asked for some. */
static int mv_decode = 0;
extern "C" void cuda_matvec_set_decode(int bits) { mv_decode = bits & CUDA_DEC_ALL; }
extern "C" int cuda_matvec_decode(void) { return mv_decode; }

static int coop_default(int fmt, int T) {
    (void)fmt; (void)T;
    return 8;
}

/* the kernel for weights W[0..n) of format FMT with rows of row_bytes: 8 (8 lanes per
 * super-block) or 0 (one lane per block) */
template <int FMT>
static int coop_choice(const uint8_t *const *W, int n, size_t row_bytes, int T) {
    if (!coop_fmt<FMT>::ok) return 0;
    int coop = mv_coop >= 0 ? mv_coop : coop_default(FMT, T);
    if (coop && (FMT == TYPE_Q4_K || FMT == TYPE_Q5_K)) {
        if (row_bytes % 16) coop = 0;
        for (int i = 0; i < n; i++)
            if ((uintptr_t)W[i] % 16) coop = 0;
    }
    return coop;
}

int cuda_matvec_coop_for(int type, const void *W, size_t row_bytes) {
    const uint8_t *w = (const uint8_t *)W;
    switch (type) {
#define COOP_FOR(NAME, F, fn, BLCK, BSIZE, ACT) case F: return coop_choice<F>(&w, 1, row_bytes, 1);
    STRATA_WEIGHT_FORMATS(COOP_FOR)
#undef COOP_FOR
    default: return 0;
    }
}

template <int FMT, int COOP, int V>
static void launch_tm_v(const mv_group *g, int64_t n_in, int nb, const uint8_t *a, size_t as, int T, unsigned blocks, cudaStream_t st) {
    if (T == 1) klaunch(matvec_kernel<FMT, 1, COOP, V>, blocks, MV_WARPS * 32, 0, st, *g, n_in, nb, a, as, T);
    else if (T == 2) klaunch(matvec_kernel<FMT, 2, COOP, V>, blocks, MV_WARPS * 32, 0, st, *g, n_in, nb, a, as, T);
    else if (T <= 4) klaunch(matvec_kernel<FMT, 4, COOP, V>, blocks, MV_WARPS * 32, 0, st, *g, n_in, nb, a, as, T);
    else klaunch(matvec_kernel<FMT, 8, COOP, V>, blocks, MV_WARPS * 32, 0, st, *g, n_in, nb, a, as, T);
}
/* the format's decode variant when one is asked for (built only where dec_v is nonzero) */
template <int FMT, int COOP>
static void launch_tm(const mv_group *g, int64_t n_in, int nb, const uint8_t *a, size_t as, int T, unsigned blocks, cudaStream_t st) {
    constexpr int V = dec_v<FMT, COOP>();
    if (dec_on<V>(T)) launch_tm_v<FMT, COOP, V>(g, n_in, nb, a, as, T, blocks, st);
    else launch_tm_v<FMT, COOP, 0>(g, n_in, nb, a, as, T, blocks, st);
}

/* STRATA_CUDA_MV_SPLIT = N (default 24; 0 off): matvec_split_kernel for T = 1 rows of the
 * cooperative kernel of at least N super-blocks (and more than one step of 4). H200,
 * 2026-12-02: rows of 8 and 16 super-blocks (the MoE shape's q/k/v, wo, head) measured slower
 * split; the 1.5B shape's decode, whose down rows have 32, +1.5-2 % with every row split. */
static int mv_split = 24;
extern "C" void cuda_matvec_set_split(int min_blocks) { mv_split = min_blocks > 0 ? min_blocks : 0; }

/* STRATA_CUDA_MV_KQ: 0 off, 4 or 8 (lanes a block) matvec_kq1_kernel for Q4_K / Q5_K rows at T = 1,
 * 1 matvec_kqp_kernel for Q4_K / Q5_K / Q6_K rows at T = 1, 2 the same with gate/up pairs by
 * matvec_kqs_kernel, 3 the kernel by shape (launch_fmt). STRATA_CUDA_MV_KQI: the same settings for
 * IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S rows (their kq1 has 8 lanes a block: 4 reads as 8) */
static int mv_kq = 0, mv_kqi = 0, mv_kqi_salu = 0;
static unsigned long mv_kq_launches;   /* launches of the kq kernels so far (host side: a graph's capture counts once) */
/* CTAs an SM by the registers of matvec_kqp_kernel / matvec_kqs_kernel (Q4_K, Q5_K, Q6_K, IQ2_XXS, IQ3_XXS, IQ2_XS, IQ3_S),
 * read when a switch is set (the backend's creation, outside any graph capture); 8 until then */
static int kq_occ[7][2] = { { 8, 8 }, { 8, 8 }, { 8, 8 }, { 8, 8 }, { 8, 8 }, { 8, 8 }, { 8, 8 } };
template <int FMT> static constexpr int kq_occ_index() {
    return FMT == TYPE_Q4_K ? 0 : FMT == TYPE_Q5_K ? 1 : FMT == TYPE_Q6_K ? 2 : FMT == TYPE_IQ2_XXS ? 3
         : FMT == TYPE_IQ3_XXS ? 4 : FMT == TYPE_IQ2_XS ? 5 : 6;
}
template <int FMT> static void kq_occ_read(void) {
    int n = 0;
    const int i = kq_occ_index<FMT>();
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_kqp_kernel<FMT>, MV_WARPS * 32, 0) == cudaSuccess && n > 0)
        kq_occ[i][0] = n;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_kqs_kernel<FMT>, MV_WARPS * 32, 0) == cudaSuccess && n > 0)
        kq_occ[i][1] = n;
    (void)cudaGetLastError();
}
static int kq_mode_ok(int mode) { return mode == 1 || mode == 2 || mode == 3 || mode == 4 || mode == 8 ? mode : 0; }
extern "C" void cuda_matvec_set_kq(int mode) {
    mv_kq = kq_mode_ok(mode);
    static int read;
    if (mv_kq && !read) {
        read = 1;
        kq_occ_read<TYPE_Q4_K>(); kq_occ_read<TYPE_Q5_K>(); kq_occ_read<TYPE_Q6_K>();
    }
}
extern "C" void cuda_matvec_set_kqi(int mode) {
    mv_kqi = kq_mode_ok(mode & 15);
    mv_kqi_salu = mv_kqi && (mode & 16);   /* bit 16: the sign masks by ALU */
    static int read;
    if (mv_kqi && !read) {
        read = 1;
        kq_occ_read<TYPE_IQ2_XXS>(); kq_occ_read<TYPE_IQ3_XXS>(); kq_occ_read<TYPE_IQ2_XS>(); kq_occ_read<TYPE_IQ3_S>();
    }
}
extern "C" int cuda_matvec_kq(void) { return mv_kq; }
extern "C" int cuda_matvec_kqi(void) { return mv_kqi | (mv_kqi_salu ? 16 : 0); }
extern "C" unsigned long cuda_matvec_kq_launches(void) { return mv_kq_launches; }
static int mv_kq_wave_cap = 0;
extern "C" void cuda_matvec_set_kq_wave(int ctas) { mv_kq_wave_cap = ctas > 0 ? ctas : 0; }
/* one wave of kqp / kqs CTAs, estimated without a runtime call (none during a graph's capture): the CTAs
 * an SM the kernel's registers allow (kq_occ, at most 8) or fewer where the shared memory allows fewer */
static unsigned kq_wave(int occ, size_t shm) {
    int per_sm = (int)((200u << 10) / (shm + 1024));
    per_sm = per_sm < 1 ? 1 : per_sm > occ ? occ : per_sm > 8 ? 8 : per_sm;
    const int sms = cuda_sm_count();
    return mv_kq_wave_cap ? (unsigned)mv_kq_wave_cap : (unsigned)(per_sm * (sms > 0 ? sms : 32));
}

template <int FMT>
static int launch_fmt(const mv_group *g, int64_t n_in, int nb, const void *act, size_t as, int T, cudaStream_t st) {
    int rows = g->swiglu ? (int)g->n_out[0] : g->row_start[g->n];
    unsigned blocks = (unsigned)((rows + MV_WARPS - 1) / MV_WARPS);
    const uint8_t *a = (const uint8_t *)act;
    const int coop = coop_choice<FMT>(g->W, g->swiglu ? 2 : g->n, g->row_bytes, T);
    if constexpr (kq_fmt<FMT>::ok) {
        constexpr int IQ = kq_fmt<FMT>::iq;
        const int mode = IQ ? mv_kqi : mv_kq;
        int aligned = 1;   /* the IQ steps read the aligned word around a block's d */
        for (int i = 0; IQ && i < (g->swiglu ? 2 : g->n); i++) aligned &= (uintptr_t)g->W[i] % 4 == 0;
        if (mode && coop == 8 && T == 1 && nb <= (IQ ? MV_KQ_MAXNB_IQ : MV_KQ_MAXNB) && (uintptr_t)act % 4 == 0 && aligned) {
            const size_t shm = kq_shm_bytes<FMT>(nb);
            const int pair_ok = (mode == 2 || mode == 3) && g->swiglu;
            const unsigned wave = kq_wave(kq_occ[kq_occ_index<FMT>()][pair_ok], shm);
            /* the kernel: 1 kqp; 2 kqs for pairs, else kqp; 4 / 8 kq1 (Q4_K / Q5_K; the IQ formats 8 lanes);
             * 3 by shape: pairs kqs, rows that give every warp of a wave more than two kqp, the rest kq1
             * with 4 lanes (the IQ formats 8; Q6_K: the cooperative kernel) */
            int kind = mode == 3 ? (pair_ok ? 2 : (size_t)rows > (size_t)wave * MV_WARPS * 2 ? 1 : 4)
                                 : pair_ok ? 2 : mode == 2 ? 1 : mode;
            if (FMT == TYPE_Q6_K && kind >= 4) kind = 0;
            /* by shape for the IQ formats (MV_KQI 3, and 19 = 3 with the signs by ALU, the default). With the ALU
             * signs: pairs kqs, plain rows kq1 at every size (14336 x 4096 kq1 20.8-24.2 us against kqp's
             * 23.6-28.8 for all four formats), IQ2_XS rows all kq1 (the 1.5B shape with IQ2_XS layers 1,069-1,078
             * tok/s cooperative -> 1,196-1,207); H100, BENCHMARKS 2026-12-06 08:15 session calls 2-4. Without
             * them IQ2_XS rows stay cooperative (their kq1 / kqp measured 12-30 % slower than it at 14336 x 4096
             * and 151936 x 2048, BENCHMARKS 2026-12-06 01:00 session call 1) */
            if (IQ && mode == 3) {
                if (mv_kqi_salu) kind = FMT == TYPE_IQ2_XS || !pair_ok ? 4 : 2;
                else if (FMT == TYPE_IQ2_XS) kind = 0;
            }
            if (kind) {
                mv_kq_launches++;
                const unsigned grid = blocks < wave ? blocks : wave;
                if (IQ && mv_kqi_salu) {   /* STRATA_CUDA_MV_KQI bit 16: the sign masks by ALU */
                    if constexpr (IQ) {
                        if (kind == 2) klaunch(matvec_kqs_kernel<FMT, 1>, grid, MV_WARPS * 32, shm, st, *g, nb, a);
                        else if (kind == 1) klaunch(matvec_kqp_kernel<FMT, 1>, grid, MV_WARPS * 32, shm, st, *g, nb, a);
                        else klaunch(matvec_kq1_kernel<FMT, 8, 2, 1>, blocks, MV_WARPS * 32, shm, st, *g, nb, a);
                    }
                } else if (kind == 2) klaunch(matvec_kqs_kernel<FMT>, grid, MV_WARPS * 32, shm, st, *g, nb, a);
                else if (kind == 1) klaunch(matvec_kqp_kernel<FMT>, grid, MV_WARPS * 32, shm, st, *g, nb, a);
                else if constexpr (IQ) klaunch(matvec_kq1_kernel<FMT, 8, 2>, blocks, MV_WARPS * 32, shm, st, *g, nb, a);
                else if constexpr (FMT != TYPE_Q6_K) {
                    if (kind == 4) klaunch(matvec_kq1_kernel<FMT, 4, 2>, blocks, MV_WARPS * 32, shm, st, *g, nb, a);
                    else klaunch(matvec_kq1_kernel<FMT, 8, 4>, blocks, MV_WARPS * 32, shm, st, *g, nb, a);
                }
                return CU_LAUNCHED();
            }
        }
    }
    if constexpr (coop_fmt<FMT>::ok) {
        if (mv_split && nb >= mv_split && coop == 8 && T == 1 && !g->swiglu && nb > 32 / 8 && nb <= MV_SPLIT_MAXNB) {
            const int W = nb > 2 * (32 / 8) ? 4 : 2;
            const unsigned sb = (unsigned)((rows + MV_WARPS / W - 1) / (MV_WARPS / W));
            constexpr int V = dec_v<FMT, coop_fmt<FMT>::ok * 8>();
            if (dec_on<V>(1)) klaunch(matvec_split_kernel<FMT, V>, sb, MV_WARPS * 32, 0, st, *g, nb, a, W);
            else klaunch(matvec_split_kernel<FMT, 0>, sb, MV_WARPS * 32, 0, st, *g, nb, a, W);
            return CU_LAUNCHED();
        }
    }
    if (coop_fmt<FMT>::ok && coop == 8) launch_tm<FMT, coop_fmt<FMT>::ok * 8>(g, n_in, nb, a, as, T, blocks, st);
    else launch_tm<FMT, 0>(g, n_in, nb, a, as, T, blocks, st);
    return CU_LAUNCHED();
}

/* STRATA_Q6_PLANAR (q6p_cuda.h): the planar Q6_K head's one-column launch. matvec_kqp_kernel<KQ_Q6P> is the
 * Q6_K kqp kernel on the planes (kq_row.cuh): the same grid, walk, lookahead, parts, sums and finish. */
static int q6p_use = 1, q6p_occ = 0;
static unsigned long q6p_launches;
extern "C" int cuda_q6p_env(void) { return env_int(ENV_Q6_PLANAR) != 0; }
extern "C" void cuda_matvec_set_q6p(int on) { q6p_use = on != 0; }
extern "C" unsigned long cuda_matvec_q6p_launches(void) { return q6p_launches; }
/* the kernel's CTAs an SM (kq_wave's bound), read at the upload that makes a copy: outside any graph capture */
extern "C" void cuda_matvec_q6p_init(void) {
    int n = 0;
    if (!q6p_occ && cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, matvec_kqp_kernel<KQ_Q6P>, MV_WARPS * 32, 0) == cudaSuccess && n > 0)
        q6p_occ = n;
    (void)cudaGetLastError();
}
int cuda_matvec_q6p_group(const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st) {
    if (!q6p_use || T != 1 || g->swiglu || n_in % QK_K) return -1;
    const int nb = (int)(n_in / QK_K);
    if (nb > MV_KQ_MAXNB || (uintptr_t)act % 4 != 0 || g->row_bytes % 16 != 0) return -1;
    for (int i = 0; i < g->n; i++)
        if ((uintptr_t)g->W[i] % 16 != 0) return -1;
    const int rows = g->row_start[g->n];
    const unsigned blocks = (unsigned)((rows + MV_WARPS - 1) / MV_WARPS);
    const size_t shm = kq_shm_bytes<KQ_Q6P>(nb);
    const unsigned wave = kq_wave(q6p_occ > 0 ? q6p_occ : 8, shm), grid = blocks < wave ? blocks : wave;
    q6p_launches++;
    klaunch(matvec_kqp_kernel<KQ_Q6P>, grid, MV_WARPS * 32, shm, st, *g, nb, (const uint8_t *)act);
    return CU_LAUNCHED();
}

/* a row of src/quant/formats.h: every format there has CUDA kernels (block_partials) */
int cuda_type_info(int type, int *blck, int *act_fmt, int *bsize) {
    int b, a, s;
    switch (type) {
#define INFO(NAME, F, fn, BLCK, BSIZE, ACT) case F: b = BLCK; s = (int)(BSIZE); a = ACT; break;
    STRATA_WEIGHT_FORMATS(INFO)
#undef INFO
    default: return -1;
    }
    if (blck) *blck = b;
    if (act_fmt) *act_fmt = a;
    if (bsize) *bsize = s;
    return 0;
}

extern "C" int cuda_type_supported(int type) { return cuda_type_info(type, NULL, NULL, NULL) == 0; }

size_t cuda_act_row_bytes(int act, int64_t n) {
    switch (act) {
#define ROW_BYTES(F, B, BYTES) case F: return n % (B) ? 0 : (size_t)(n / (B)) * (BYTES);
    STRATA_ACT_FORMATS(ROW_BYTES)
#undef ROW_BYTES
    }
    return 0;
}

int cuda_matvec_group(int type, const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st) {
    int blck, af, bs;
    if (cuda_type_info(type, &blck, &af, &bs) != 0 || T < 1 || n_in % blck) return -1;
    int nb = (int)(n_in / blck);
    size_t as = cuda_act_row_bytes(af, n_in);
    if (T > 8) {
        /* a wide pass: the tensor-core matmul where the format has one (mm.cu: the same bits),
         * else the matvec over slices of 8 columns (a column's bits never depend on the others) */
        if (!g->swiglu && cuda_mm_supported(type, n_in) && T >= cuda_mm_min_cols())
            return cuda_mm_group(type, g, n_in, act, T, st);
        for (int t0 = 0; t0 < T; t0 += 8) {
            const int n = T - t0 < 8 ? T - t0 : 8;
            mv_group s = *g;
            for (int i = 0; i < g->n; i++) {
                s.y[i] = g->y[i] + (size_t)t0 * g->n_out[i];
                if (g->add_to[i]) s.add_to[i] = g->add_to[i] + (size_t)t0 * g->n_out[i];
            }
            if (g->swiglu) s.swiglu_out = g->swiglu_out + (size_t)t0 * g->n_out[0];
            if (cuda_matvec_group(type, &s, n_in, (const uint8_t *)act + (size_t)t0 * as, n, st)) return -1;
        }
        return 0;
    }
    switch (type) {
#define LAUNCH(NAME, F, fn, BLCK, BSIZE, ACT) case F: return launch_fmt<F>(g, n_in, nb, act, as, T, st);
    STRATA_WEIGHT_FORMATS(LAUNCH)
#undef LAUNCH
    default: return -1;
    }
}

/* ---- the standalone entry (tests, benchmarks): quantize into a private scratch, one weight */
static void *mv_scratch;
static size_t mv_scratch_cap;
static float *mv_ws;   /* the split matmul's partials of this entry's calls */

extern "C" int cuda_matvec(const void *W, int type, int64_t n_in, int64_t n_out, const float *x, int T, float *y,
                           void *stream) {
    int blck, af, bs;
    if (cuda_type_info(type, &blck, &af, &bs) != 0 || T < 1 || n_in <= 0 || n_in % blck) return -1;
    size_t need = cuda_act_row_bytes(af, n_in) * (size_t)T;
    if (need > mv_scratch_cap) {
        if (mv_scratch) cudaFree(mv_scratch);
        mv_scratch = NULL; mv_scratch_cap = 0;
        if (CU_CHECK(cudaMalloc(&mv_scratch, need))) return -1;
        mv_scratch_cap = need;
    }
    if (cuda_tables_init()) return -1;
    if (!mv_ws && CU_CHECK(cudaMalloc((void **)&mv_ws, CUDA_MM_WS_FLOATS * sizeof(float)))) return -1;
    cudaStream_t st = (cudaStream_t)stream;
    if (cuda_act_quantize(af, x, n_in, T, mv_scratch, st)) return -1;
    mv_group g;
    memset(&g, 0, sizeof g);
    g.ws = mv_ws; g.ws_floats = CUDA_MM_WS_FLOATS;
    g.n = 1; g.W[0] = (const uint8_t *)W; g.y[0] = y; g.n_out[0] = n_out;
    g.row_start[0] = 0; g.row_start[1] = (int)n_out;
    g.row_bytes = (size_t)(n_in / blck) * (size_t)bs;
    return cuda_matvec_group(type, &g, n_in, mv_scratch, T, st);
}

/* ---- IQ codebooks into device memory (once per process) ---------------------------------- */
IQ_TABLES_INIT_FN(cuda_tables_init, "matvec")

extern "C" int cuda_type_act(int type) {
    int af;
    return cuda_type_info(type, NULL, &af, NULL) == 0 ? af : -1;
}

extern "C" int cuda_matvec_preq(const void *W, int type, int64_t n_in, int64_t n_out, const void *act, int T, float *y,
                                void *stream) {
    int blck, af, bs;
    if (cuda_type_info(type, &blck, &af, &bs) != 0 || T < 1 || n_in <= 0 || n_in % blck) return -1;
    /* the IQ codebooks (once): without them the IQ formats decode against zero tables (the
     * 2026-12-01 variant bench called this first and timed IQ "off" against zero codebooks) */
    if (cuda_tables_init()) return -1;
    mv_group g;
    memset(&g, 0, sizeof g);
    g.n = 1; g.W[0] = (const uint8_t *)W; g.y[0] = y; g.n_out[0] = n_out;
    g.row_start[0] = 0; g.row_start[1] = (int)n_out;
    g.row_bytes = (size_t)(n_in / blck) * (size_t)bs;
    return cuda_matvec_group(type, &g, n_in, act, T, (cudaStream_t)stream);
}
