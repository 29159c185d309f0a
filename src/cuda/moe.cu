/* Mixture-of-Experts FFN on the GPU (qwen3moe), bit-identical to src/cpu/moe.c.
 *
 * Everything after the router matvec runs from device memory, so the whole MoE block is
 * captured in the decode graph (no host round trip for the routing):
 *
 *   moe_route_kernel    one CTA: per token (one warp each) softmax over the X router logits
 *                       in the CPU's order (max, e = expf(l - max) with the libm bits, sum in
 *                       expert order, p = e / sum), top-k by p (ties: lower index), weights
 *                       renormalized by their rank-order sum; then the (token, rank) pairs
 *                       grouped by expert exactly as moe.c's counting sort (experts ascending,
 *                       tokens ascending inside a group) and each pair's activation row
 *                       gathered, so a group's columns are contiguous.
 *                       STRATA_CUDA_ROUTE=parallel: the per-token part with the values in
 *                       registers and top-k by warp-wide reductions (moe_route_token_par,
 *                       same bits; off until measured).
 *   moe_gate_up_kernel  grid (rows of F / MV_WARPS, group): the warp of row r reads gate and
 *                       up row r of the group's expert once for all its columns (row_dot:
 *                       the same canonical dot as the matvec kernels) and writes
 *                       h = silu(g) * u (moe.c's silu_mul) per pair.
 *   act quantization    h rows into the down weight's activation format (cuda_act_quantize).
 *   moe_down_kernel     grid (row slices of E): the slice's rows for every group, y[pair] =
 *                       down_e h[pair]; STRATA_CUDA_MOE_FAST bit 2: then the combine below for
 *                       the slice's rows in the same CTA.
 *   moe_combine_kernel  out[t] = sum over ranks r = 0..k-1 of w[t][r] * y[pair(t, r)], from
 *                       0.0f, product rounded then added (moe.c's combine); optionally the
 *                       residual add x += out as its epilogue.
 *
 * Group slots: the grids span T * k groups (the most there can be); CTAs past the number of
 * groups written by the router exit at once. Device layout of `groups`: [0] = number of
 * groups, then (expert, first pair, pairs, source row) per group; the source row is x's row
 * of the group's first token when its tokens are consecutive (every group at T = 1: no
 * gather), else -1 and the rows were gathered into act_pairs. */
#include "cuda_internal.h"
#include "matvec_row.cuh"
#include "expf_host.cuh"
#include <math.h>

EXPF_DEVICE_STATE
PDL_TU_STATE(moe)
PF_TU_STATE(moe)
CANON_TU_STATE(moe)
int cuda_moe_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
#include "ops_dev.cuh"
#include "r4.cuh"
extern "C" {
#include "quant/r4.h"
}

IQ_TABLES_INIT_FN(cuda_moe_tables_init, "moe")

#define ROUTE_THREADS 512
#define DOWN_R 2   /* rows per warp of the cooperative down kernel */
#define ROUTE_MAX_PAIRS (CUDA_MOE_COLS * CUDA_MOE_MAX_K)

/* ---- router: softmax, top-k, renormalization, grouping, gather ------------------------------ */
/* One token's routing by the calling warp: its X logits l into p (X floats of shared memory,
 * overwritten), softmax in the CPU's order, top-k, renormalized weights. Lane 0 writes the k
 * experts to sel[r] and their probabilities to w[r] (w: read back by lane 0), the weights to
 * wts[r]. Logits are read with __ldcg: in the fused kernel other CTAs wrote them. */
static __device__ __forceinline__ void moe_route_token(float *p, const float *__restrict__ l, int X, int k, int lane,
                                                       int *sel, float *w, float *__restrict__ wts) {
    /* logits into shared memory, then the max (order-free) */
    for (int e = lane; e < X; e += 32) p[e] = __ldcg(l + e);
    __syncwarp();
    float mx = p[0];
    for (int e = lane; e < X; e += 32)
        if (p[e] > mx) mx = p[e];
    for (int o = 16; o; o >>= 1) {
        float v = __shfl_xor_sync(0xffffffffu, mx, o);
        if (v > mx) mx = v;
    }
    for (int e = lane; e < X; e += 32) p[e] = expf_ref(__fsub_rn(p[e], mx));
    __syncwarp();
    float sum = 0.0f;
    if (lane == 0)
        for (int e = 0; e < X; e++) sum = __fadd_rn(sum, p[e]);   /* expert order, as the CPU */
    sum = __shfl_sync(0xffffffffu, sum, 0);
    for (int e = lane; e < X; e += 32) p[e] = __fdiv_rn(p[e], sum);
    __syncwarp();
    /* top-k: taken experts are marked -1 (every probability is >= 0) */
    for (int r = 0; r < k; r++) {
        int bi = -1;
        float bv = 0.0f;
        for (int e = lane; e < X; e += 32) {
            float v = p[e];
            if (v < 0.0f) continue;
            if (bi < 0 || v > bv) { bi = e; bv = v; }
        }
        for (int o = 16; o; o >>= 1) {
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            float ov = __shfl_xor_sync(0xffffffffu, bv, o);
            if (oi >= 0 && (bi < 0 || ov > bv || (ov == bv && oi < bi))) { bi = oi; bv = ov; }
        }
        if (lane == 0) {
            sel[r] = bi;
            w[r] = bv;
            p[bi] = -1.0f;
        }
        __syncwarp();
    }
    if (lane == 0) {
        float ssel = 0.0f;
        for (int r = 0; r < k; r++) ssel = __fadd_rn(ssel, w[r]);
        for (int r = 0; r < k; r++) wts[r] = __fdiv_rn(w[r], ssel);
    }
}

/* STRATA_CUDA_ROUTE=parallel (PAR = 1 below): token t's softmax and top-k by one warp with the
 * X <= 32 * RP_MAX values in the lanes' registers (expert e in lane e % 32, slot e / 32): the
 * same max (each lane from l[0], strict >, then the xor tree), the same expf_ref and division,
 * the denominator summed in expert order from 0.0f (every lane runs the one chain, the values
 * brought by shuffles), top-k by a warp-wide max of the probability bits (non-negative floats
 * order as unsigned integers) and a min over the indices holding it (ties: lower index), the
 * renormalization sum in rank order. So for finite logits the bits of the serial scans. */
#define RP_MAX 8
static __device__ __forceinline__ void moe_route_token_par(const float *__restrict__ l, int X, int k, int *sel, float *sw,
                                                           float *__restrict__ wts) {
    const int lane = threadIdx.x & 31;
    float v[RP_MAX];
#pragma unroll
    for (int i = 0; i < RP_MAX; i++) v[i] = lane + 32 * i < X ? __ldcg(l + lane + 32 * i) : 0.0f;
    float mx = __shfl_sync(FULL_MASK, v[0], 0);
#pragma unroll
    for (int i = 0; i < RP_MAX; i++)
        if (lane + 32 * i < X && v[i] > mx) mx = v[i];
    for (int o = 16; o; o >>= 1) {
        float ov = __shfl_xor_sync(FULL_MASK, mx, o);
        if (ov > mx) mx = ov;
    }
#pragma unroll
    for (int i = 0; i < RP_MAX; i++)
        if (lane + 32 * i < X) v[i] = expf_ref(__fsub_rn(v[i], mx));
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < RP_MAX; i++) {
        if (32 * i >= X) break;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            float x = __shfl_sync(FULL_MASK, v[i], j);
            if (32 * i + j < X) sum = __fadd_rn(sum, x);   /* expert order, as the CPU */
        }
    }
    unsigned avail = 0;   /* slot i holds an untaken expert */
#pragma unroll
    for (int i = 0; i < RP_MAX; i++)
        if (lane + 32 * i < X) { v[i] = __fdiv_rn(v[i], sum); avail |= 1u << i; }
    float ssel = 0.0f;
    for (int r = 0; r < k; r++) {
        unsigned bb = 0;
        int bi = 0x7FFFFFFF;
#pragma unroll
        for (int i = 0; i < RP_MAX; i++) {   /* the lane's best: largest, then lowest index */
            unsigned b = __float_as_uint(v[i]);
            if (((avail >> i) & 1) && (bi == 0x7FFFFFFF || b > bb)) { bb = b; bi = lane + 32 * i; }
        }
        const unsigned best = __reduce_max_sync(FULL_MASK, bi != 0x7FFFFFFF ? bb : 0u);
        const int e = (int)__reduce_min_sync(FULL_MASK, (unsigned)(bi != 0x7FFFFFFF && bb == best ? bi : 0x7FFFFFFF));
        if ((e & 31) == lane) avail &= ~(1u << (e >> 5));
        const float w = __uint_as_float(best);
        ssel = __fadd_rn(ssel, w);   /* rank order, as the CPU */
        if (lane == 0) { sel[r] = e; sw[r] = w; }
    }
    __syncwarp();
    for (int r = lane; r < k; r += 32) wts[r] = __fdiv_rn(sw[r], ssel);
}

/* The routing of T tokens by the calling CTA (any multiple of 32 threads); s_p: T * X floats of
 * shared memory. */
template <int PAR>
static __device__ __forceinline__ void moe_route_body(float *s_p, const float *__restrict__ logits, int X, int k, int T,
                                                      const uint8_t *__restrict__ act_x, size_t as,
                                                      uint8_t *__restrict__ act_pairs, int *__restrict__ groups,
                                                      int *__restrict__ pair_of, float *__restrict__ wts) {
    __shared__ int s_sel[ROUTE_MAX_PAIRS];
    __shared__ float s_w[ROUTE_MAX_PAIRS];
    __shared__ int s_tok[ROUTE_MAX_PAIRS];               /* grouped position -> token */
    __shared__ int s_first[ROUTE_MAX_PAIRS];             /* first pair of its expert */
    __shared__ int s_gather[ROUTE_MAX_PAIRS];            /* grouped position whose row is gathered */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int t = warp; t < T; t += nw) {
        if constexpr (PAR != 0) {
            if (X <= 32 * RP_MAX) {
                moe_route_token_par(logits + (size_t)t * X, X, k, s_sel + t * k, s_w + t * k, wts + t * k);
                continue;
            }
        }
        moe_route_token(s_p + (size_t)t * X, logits + (size_t)t * X, X, k, lane, s_sel + t * k, s_w + t * k, wts + t * k);
    }
    __syncthreads();
    /* Grouping, moe.c's counting sort computed per pair (P <= 512, O(P) each): pair q = (t, r)
     * in token-major order goes to position #{sel < e} + #{earlier pairs with expert e}; the
     * first pair of each expert opens group #{distinct experts < e}. */
    const int P = T * k;
    for (int q = threadIdx.x; q < P; q += blockDim.x) {   /* is q the first pair of its expert? */
        int first = 1;
        for (int i = 0; i < q && first; i++) first = s_sel[i] != s_sel[q];
        s_first[q] = first;
    }
    __syncthreads();
    for (int q = threadIdx.x; q < P; q += blockDim.x) {
        const int e = s_sel[q];
        int below = 0, before = 0, n = 0, distinct_below = 0, t0 = -1, consecutive = 1;
        for (int j = 0; j < P; j++) {
            int f = s_sel[j];
            below += f < e;
            before += j < q && f == e;
            distinct_below += f < e && s_first[j];
            if (f == e) {           /* the group's tokens in order: consecutive ones are read in place */
                if (t0 < 0) t0 = j / k;
                consecutive &= j / k == t0 + n;
                n++;
            }
        }
        const int pos = below + before;
        pair_of[q] = pos;
        s_tok[pos] = q / k;
        s_gather[pos] = !consecutive;
        if (before == 0) {
            int *gr = groups + 1 + MOE_GROUP_INTS * distinct_below;
            gr[0] = e; gr[1] = below; gr[2] = n;
            gr[3] = consecutive ? t0 : -1;   /* x's row of the first token, or -1: gathered rows */
        }
    }
    if (threadIdx.x == 0) {
        int ng = 0;
        for (int j = 0; j < P; j++) ng += s_first[j];
        groups[0] = ng;
    }
    __syncthreads();
    /* gather the rows of the groups whose tokens are not consecutive (never at T = 1): pair q
     * gets its token's activation row (rows are whole 4-byte words) */
    const int words = (int)(as / 4);
    for (int i = threadIdx.x; i < P * words; i += blockDim.x) {
        int q = i / words, j = i % words;
        if (s_gather[q])
            ((uint32_t *)(act_pairs + (size_t)q * as))[j] = ((const uint32_t *)(act_x + (size_t)s_tok[q] * as))[j];
    }
}

template <int PAR>
__global__ void __launch_bounds__(ROUTE_THREADS)
moe_route_kernel(const float *__restrict__ logits, int X, int k, int T, const uint8_t *__restrict__ act_x, size_t as,
                 uint8_t *__restrict__ act_pairs, int *__restrict__ groups, int *__restrict__ pair_of,
                 float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ float s_p[];                       /* [T][X] probabilities */
    moe_route_body<PAR>(s_p, logits, X, k, T, act_x, as, act_pairs, groups, pair_of, wts);
}

/* Router logits row `row` (< X) of an F32 router of rows of E = 32 * NPL for tokens 0 .. T - 1
 * (at most TM): lane l loads its NPL weights w[l + 32 i] at once, then sums w * x in the
 * canonical per-element order (the bits of the matvec kernels' F32 path); one warp. */
template <int NPL, int TM, int WARPS>
static __device__ __forceinline__ void router_row(const float *__restrict__ W, const float *__restrict__ x,
                                                  float *__restrict__ logits, int X, int T, int row, int lane) {
    const int E = NPL * 32;
    const float *wr = W + (size_t)row * E;
    float w[NPL];
#pragma unroll
    for (int i = 0; i < NPL; i++) w[i] = wr[lane + 32 * i];
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const float *xt = x + (size_t)t * E;
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NPL; i++) acc = __fadd_rn(acc, __fmul_rn(w[i], xt[lane + 32 * i]));
        acc = warp_canon_finish<WARPS>(acc);
        if (lane == 0) logits[(size_t)t * X + row] = acc;
    }
}

/* An F32 router of rows of E = 32 * NPL and the routing in one launch: warp w of CTA b computes
 * logits row 8 b + w for the T tokens (router_row);
 * the last CTA to finish (atomic counter, reset by it for the next launch) routes. */
#define ROUTER_WARPS 8
template <int NPL, int TM, int PAR>
__global__ void __launch_bounds__(ROUTER_WARPS * 32)
moe_router_route_kernel(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ logits,
                        unsigned *__restrict__ counter, int X, int k, int T, const uint8_t *__restrict__ act_x,
                        size_t as, uint8_t *__restrict__ act_pairs, int *__restrict__ groups,
                        int *__restrict__ pair_of, float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ float s_p[];
    const int row = blockIdx.x * ROUTER_WARPS + (threadIdx.x >> 5);
    if (row < X) router_row<NPL, TM, ROUTER_WARPS>(W, x, logits, X, T, row, threadIdx.x & 31);
    if (!last_cta_arrived(counter)) return;
    moe_route_body<PAR>(s_p, logits, X, k, T, act_x, as, act_pairs, groups, pair_of, wts);
    if (threadIdx.x == 0) *counter = 0;
}

/* STRATA_CUDA_MOE_FAST bit 1 (CUDA_MOE_FAST_ROUTE1): one token's routing (T = 1, decode) by a
 * whole CTA instead of one warp's scans, with the same bits: the max is order-free (-0 / +0
 * either way gives the same differences, see KERNELS.md); e = expf_ref(l - max) per expert in
 * parallel; the denominator is still one __fadd_rn chain in expert order from 0.0f (thread 0,
 * the values read four at a time); p = e / sum; expert i's rank = #{j : p_j > p_i or (p_j == p_i
 * and j < i)} (the serial top-k's order: largest first, ties to the lower index), computed by
 * every expert's thread at once, so the experts of ranks 0..k-1 are the serial scans' picks in
 * their order; the renormalization sum in rank order. At T = 1 the grouping is one group per
 * expert, in expert order, each reading x's row 0 (moe_route_body's result for T = 1).
 * s_e, s_p: X floats of shared memory each. */
template <int SPLIT4 = 0>
static __device__ __forceinline__ void moe_route1_body(float *s_e, float *s_p, const float *__restrict__ logits, int X, int k,
                                                       int *__restrict__ groups, int *__restrict__ pair_of,
                                                       float *__restrict__ wts) {
    __shared__ float s_red[32];
    __shared__ float s_sum;
    __shared__ int s_sel[CUDA_MOE_MAX_K];
    __shared__ float s_w[CUDA_MOE_MAX_K];
    const int tid = threadIdx.x, nt = blockDim.x, lane = tid & 31, nw = nt >> 5;
    float mx = -INFINITY;
    for (int e = tid; e < X; e += nt) {
        const float v = __ldcg(logits + e);
        s_e[e] = v;
        if (v > mx) mx = v;
    }
    for (int o = 16; o; o >>= 1) {
        const float v = __shfl_xor_sync(FULL_MASK, mx, o);
        if (v > mx) mx = v;
    }
    if (lane == 0) s_red[tid >> 5] = mx;
    __syncthreads();
    mx = s_red[0];
    for (int w = 1; w < nw; w++)
        if (s_red[w] > mx) mx = s_red[w];
    for (int e = tid; e < X; e += nt) s_e[e] = expf_ref(__fsub_rn(s_e[e], mx));
    __syncthreads();
    if (tid == 0) {   /* expert order, as the CPU */
        float sum = 0.0f;
        int e = 0;
#pragma unroll 8
        for (; e + 4 <= X; e += 4) {
            const float4 q = *(const float4 *)(s_e + e);
            sum = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(sum, q.x), q.y), q.z), q.w);
        }
        for (; e < X; e++) sum = __fadd_rn(sum, s_e[e]);
        s_sum = sum;
    }
    __syncthreads();
    const float sum = s_sum;
    for (int e = tid; e < X; e += nt) s_p[e] = __fdiv_rn(s_e[e], sum);
    __syncthreads();
    if constexpr (SPLIT4) {   /* nt >= 4 X: four threads an expert, each a fourth of the j (the counts add exactly) */
        for (int base = 0; base < X; base += nt / 4) {
            const int e = base + (tid >> 2), q = tid & 3;
            const float pe = e < X ? s_p[e] : 0.0f;
            int rank = 0;
            if (e < X)
#pragma unroll 8
                for (int j = q; j < X; j += 4) {
                    const float pj = s_p[j];
                    rank += (pj > pe) | ((pj == pe) & (j < e));
                }
            rank += __shfl_xor_sync(FULL_MASK, rank, 1);
            rank += __shfl_xor_sync(FULL_MASK, rank, 2);
            if (e < X && q == 0 && rank < k) { s_sel[rank] = e; s_w[rank] = pe; }
        }
    } else
    for (int e = tid; e < X; e += nt) {
        const float pe = s_p[e];
        int rank = 0, j = 0;
#pragma unroll 4
        for (; j + 4 <= X; j += 4) {
            const float4 q = *(const float4 *)(s_p + j);
            rank += (q.x > pe) | ((q.x == pe) & (j < e));
            rank += (q.y > pe) | ((q.y == pe) & (j + 1 < e));
            rank += (q.z > pe) | ((q.z == pe) & (j + 2 < e));
            rank += (q.w > pe) | ((q.w == pe) & (j + 3 < e));
        }
        for (; j < X; j++) rank += (s_p[j] > pe) | ((s_p[j] == pe) & (j < e));
        if (rank < k) { s_sel[rank] = e; s_w[rank] = pe; }
    }
    __syncthreads();
    if (tid < k) {
        const int e = s_sel[tid];
        int below = 0;
        for (int r = 0; r < k; r++) below += s_sel[r] < e;
        float ssel = 0.0f;
        for (int r = 0; r < k; r++) ssel = __fadd_rn(ssel, s_w[r]);   /* rank order, as the CPU */
        wts[tid] = __fdiv_rn(s_w[tid], ssel);
        pair_of[tid] = below;
        int *gr = groups + 1 + MOE_GROUP_INTS * below;
        gr[0] = e; gr[1] = below; gr[2] = 1; gr[3] = 0;
    }
    if (tid == 0) groups[0] = k;
}

/* T = 1 routing of logits computed by an earlier launch (a quantized or wide router) */
__global__ void __launch_bounds__(256)
moe_route1_kernel(const float *__restrict__ logits, int X, int k, int *__restrict__ groups, int *__restrict__ pair_of,
                  float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ __align__(16) float s_ep[];   /* [2][X] */
    moe_route1_body(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
}

/* The F32 router and the T = 1 routing in one launch: ROUTER1_WARPS rows per CTA (so X /
 * ROUTER1_WARPS CTAs load the router: 32 for 128 experts, where moe_router_route_kernel has
 * 16), each row by one warp with moe_router_route_kernel's operations; the last CTA routes
 * with the whole CTA (moe_route1_body). */
#define ROUTER1_WARPS 4
template <int NPL>
__global__ void __launch_bounds__(ROUTER1_WARPS * 32)
moe_router_route1_kernel(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ logits,
                         unsigned *__restrict__ counter, int X, int k, int *__restrict__ groups, int *__restrict__ pair_of,
                         float *__restrict__ wts) {
    extern __shared__ __align__(16) float s_ep[];   /* [2][X] */
    const int row = blockIdx.x * ROUTER1_WARPS + (threadIdx.x >> 5);
    if ((c_prefetch & CUDA_PF_ROWS) && row < X)   /* the router row (E = 32 NPL floats) before the wait */
        l2_prefetch_lines(W + (size_t)row * 32 * NPL, (size_t)32 * NPL * sizeof(float), threadIdx.x & 31, 32);
    PDL_WAIT();
    if (row < X) router_row<NPL, 1, ROUTER1_WARPS>(W, x, logits, X, 1, row, threadIdx.x & 31);
    if (!last_cta_arrived(counter)) return;
    moe_route1_body(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
    if (threadIdx.x == 0) *counter = 0;
}

/* STRATA_CUDA_MOE_FAST bit 16 (CUDA_MOE_FAST_ROUTER_CTA), T = 1: the F32 router with a CTA of
 * ROUTER_CTA_THREADS per row (X CTAs: 128 for 128 experts, where moe_router_route1_kernel has 32
 * of 4 rows). The CTA's threads form the row's E products w_e * x_e (each __fmul_rn alone,
 * router_row's values) into shared memory, four consecutive values a load (one load of w and
 * one of x a thread at E = 2048, where router_row's lanes load 64 of each); warp 0 then adds lane
 * l's products l, l + 32, ... in order from 0.0f (router_row's chain) and ends with
 * warp_canon_finish: the same logit bits. The last CTA routes with moe_route1_body's steps, the
 * ranks by four threads an expert (SPLIT4). s_ep: max(2 X', E) floats (X' = X rounded up to 4). */
#define ROUTER_CTA_THREADS 512
template <int NPL>
__global__ void __launch_bounds__(ROUTER_CTA_THREADS)
moe_router_cta_kernel(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ logits,
                      unsigned *__restrict__ counter, int X, int k, int *__restrict__ groups, int *__restrict__ pair_of,
                      float *__restrict__ wts) {
    extern __shared__ __align__(16) float s_ep[];
    constexpr int E = 32 * NPL;
    const int row = blockIdx.x;
    const float *wr = W + (size_t)row * E;
    if (c_prefetch & CUDA_PF_ROWS)   /* the router row before the wait */
        l2_prefetch_lines(wr, (size_t)E * sizeof(float), threadIdx.x, blockDim.x);
    PDL_WAIT();
    for (int i = threadIdx.x; i < E / 4; i += ROUTER_CTA_THREADS) {
        const int e = 4 * i;
        const float4 w4 = *(const float4 *)(wr + e), x4 = *(const float4 *)(x + e);
        *(float4 *)(s_ep + e) = make_float4(__fmul_rn(w4.x, x4.x), __fmul_rn(w4.y, x4.y), __fmul_rn(w4.z, x4.z),
                                            __fmul_rn(w4.w, x4.w));
    }
    __syncthreads();
    if (threadIdx.x < 32) {
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NPL; i++) acc = __fadd_rn(acc, s_ep[threadIdx.x + 32 * i]);
        acc = warp_canon_finish<1>(acc);   /* warp 0 alone */
        if (threadIdx.x == 0) logits[row] = acc;
    }
    if (!last_cta_arrived(counter)) return;
    if (X <= ROUTER_CTA_THREADS / 4) moe_route1_body<1>(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
    else moe_route1_body(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
    if (threadIdx.x == 0) *counter = 0;
}

/* STRATA_CUDA_MOE_FAST bit 256 (CUDA_MOE_FAST_NORM), T = 1, an F32 router of width 1,024 / 2,048
 * whose ffn norm would quantize x to Q8_K (rmsnorm_q256_kernel): the ffn RMSNorm inside
 * moe_router_cta_kernel, computed by every CTA, so the norm launch is gone. Threads 0 .. E / 8 - 1
 * play rmsnorm_q256_kernel's threads (8 consecutive values each, the double sum of squares, the
 * warps' xor trees, rms_inv_parts over E / 256 warp parts, y = (x * inv) * w_norm): the same y. Each
 * thread then forms its 8 router products w_e * y_e into shared memory (router_row's values;
 * moe_router_cta_kernel's chain and routing after it). CTA b < E / 256 also writes super-block b of
 * y and its Q8_K block (warp b, act_quant_block_regs from its registers, as the norm kernel's warp
 * b does). The router row and the norm weights are loaded into registers before the wait. */
template <int NPL>
__global__ void __launch_bounds__(ROUTER_CTA_THREADS)
moe_norm_router_kernel(const float *__restrict__ W, const float *__restrict__ xres, const float *__restrict__ wn, float eps,
                       float *__restrict__ y, uint8_t *__restrict__ act, float *__restrict__ logits,
                       unsigned *__restrict__ counter, int X, int k, int *__restrict__ groups, int *__restrict__ pair_of,
                       float *__restrict__ wts) {
    extern __shared__ __align__(16) float s_ep[];
    __shared__ double part[32];
    __shared__ float inv_s;
    constexpr int E = 32 * NPL, NT = E / 8;
    const int row = blockIdx.x, tid = threadIdx.x;
    float wv[8], nv[8], v[8];
    if (tid < NT) {   /* the router row's and the norm's 8 weights: independent of the kernel before */
        const float4 *w4 = (const float4 *)(W + (size_t)row * E + (size_t)tid * 8);
        const float4 a = w4[0], b = w4[1];
        wv[0] = a.x; wv[1] = a.y; wv[2] = a.z; wv[3] = a.w; wv[4] = b.x; wv[5] = b.y; wv[6] = b.z; wv[7] = b.w;
#pragma unroll
        for (int i = 0; i < 8; i++) nv[i] = wn[(size_t)tid * 8 + i];   /* w_norm: 4-byte aligned only */
    }
    PDL_WAIT();
    if (tid < NT) norm8_squares(v, xres + (size_t)tid * 8, part, tid);   /* rmsnorm_q256_kernel's threads (norm_dev.cuh) */
    __syncthreads();
    if (tid == 0) inv_s = rms_inv_parts(part, NT / 32, E, eps);
    __syncthreads();
    if (tid < NT) {
        norm8_apply(v, inv_s, nv);
        float *pe = s_ep + (size_t)tid * 8;
        *(float4 *)pe = make_float4(__fmul_rn(wv[0], v[0]), __fmul_rn(wv[1], v[1]), __fmul_rn(wv[2], v[2]), __fmul_rn(wv[3], v[3]));
        *(float4 *)(pe + 4) = make_float4(__fmul_rn(wv[4], v[4]), __fmul_rn(wv[5], v[5]), __fmul_rn(wv[6], v[6]),
                                          __fmul_rn(wv[7], v[7]));
        if ((tid >> 5) == row) {   /* CTA b: super-block b of y and its Q8_K block */
            float4 *yr = (float4 *)(y + (size_t)tid * 8);
            yr[0] = make_float4(v[0], v[1], v[2], v[3]);
            yr[1] = make_float4(v[4], v[5], v[6], v[7]);
            act_quant_block_regs<256>(v, act + (size_t)row * sizeof_i(act_q8_K), ACT_Q8_K);
        }
    }
    __syncthreads();
    if (tid < 32) {
        float acc = 0.0f;
#pragma unroll
        for (int i = 0; i < NPL; i++) acc = __fadd_rn(acc, s_ep[tid + 32 * i]);
        acc = warp_canon_finish<1>(acc);   /* warp 0 alone */
        if (tid == 0) logits[row] = acc;
    }
    if (!last_cta_arrived(counter)) return;
    if (X <= ROUTER_CTA_THREADS / 4) moe_route1_body<1>(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
    else moe_route1_body(s_ep, s_ep + ((X + 3) & ~3), logits, X, k, groups, pair_of, wts);
    if (tid == 0) *counter = 0;
}

/* ---- grouped expert matvecs ------------------------------------------------------------------ */
/* STRATA_CUDA_MOE_FAST bit 2 (CUDA_MOE_FAST_COMBINE): the combine inside the down kernel; out
 * == NULL: not there (cuda_moe_combine runs after it). */
typedef struct moe_comb {
    const int *pair_of;             /* the routing: k per token, T tokens */
    const float *wts;
    int k, T;
    float *out, *add_to;
    /* CUDA_MOE_FAST_NEXTNORM (T = 1, add_to set, E % 256 == 0, E <= 8 * DN_WARPS * 32): the next
     * layer's attention RMSNorm of add_to by the launch's last CTA (moe_down_next_norm) into nn_y
     * and its act_q8_K row nn_act; nn_w NULL: not here */
    const float *nn_w;
    float *nn_y;
    uint8_t *nn_act;
    float nn_eps;
    unsigned *nn_counter;   /* zeroed, left zeroed (the last CTA resets it) */
} moe_comb;

/* CUDA_MOE_FAST_HQ (T = 1): once the CTAs of one 256-row block of pair `start`'s h have written their
 * rows (256 / MV_WARPS CTAs; the launcher checked F % 256 == 0, so no warp left early), the last of
 * them to arrive (last_of_n_arrived on that block's counter) quantizes the block into act_q8_K
 * with warp 0: lane l the values 8 l .. 8 l + 7, read through L2 (other CTAs wrote them), by
 * act_quant_block_regs<256>, the code act_quantize_kernel runs on the same block (its amax and integer
 * sums do not depend on which lane holds which value): the same bytes; h's quantization launch is gone. */
static __device__ __noinline__ void moe_gate_up_hq(const float *h, int F, int start, uint8_t *act, unsigned *cnt, int gi) {
    const int blk = (int)(blockIdx.x * MV_WARPS) / 256, nblk = F / 256;
    unsigned *c = cnt + gi * nblk + blk;
    if (!last_of_n_arrived(c, 256 / MV_WARPS) || threadIdx.x >= 32) return;
    const int lane = threadIdx.x;
    const float4 *hb = (const float4 *)(h + (size_t)start * F + (size_t)blk * 256 + 8 * lane);
    const float4 a = __ldcg(hb), b = __ldcg(hb + 1);
    const float v[8] = { a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w };
    act_quant_block_regs<256>(v, act + ((size_t)start * nblk + blk) * sizeof_i(act_q8_K), ACT_Q8_K);
    if (lane == 0) *c = 0;
}

/* DF_PAIR (bits 1024 / 4096): 12 CTAs an SM, so the T = 1 grid (192 x 8 CTAs of 4 warps) is one wave on
 * 132 SMs (its 48 registers unbounded allowed 10); not the lane path's pairs (bit 8192: 47-64 registers, unbounded);
 * with DF_R4 (STRATA_CUDA_MOE_R4 = 1) too; R4 alone (= 2) unbounded: 69 registers, 7 CTAs an SM, 1.7 waves */
template <int FMT, int TM, int COOP, int V>
__global__ void __launch_bounds__(MV_WARPS * 32, (V & DF_PAIR) != 0 && COOP != 0 ? 12 : 1)
moe_gate_up_kernel(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t expert_bytes, size_t row_bytes,
                   int F, int64_t n_in, int nb, const uint8_t *__restrict__ act_x, const uint8_t *__restrict__ act, size_t as,
                   const int *__restrict__ groups, float *__restrict__ h, const uint8_t *__restrict__ pf_down, size_t pf_eb,
                   int ngk, uint8_t *__restrict__ hq_act, unsigned *__restrict__ hq_cnt) {
    if constexpr ((V & DF_SMEM) != 0) df_smem_fill<FMT>();   /* constant tables: before the wait */
    PDL_WAIT();
    const int gi = blockIdx.y;
    if (ngk <= 0 && gi >= groups[0]) return;   /* ngk > 0: the grid's gridDim.y groups all exist (bit 32) */
    const int *gr = groups + 1 + MOE_GROUP_INTS * gi;
    const int e = gr[0], start = gr[1], n = gr[2], src = gr[3];
    if (pf_down && (c_prefetch & CUDA_PF_DOWN)) {   /* the CTA's slice of expert e's down matrix into L2, for the down launch */
        const size_t a = pf_eb * blockIdx.x / gridDim.x, b = pf_eb * (blockIdx.x + 1) / gridDim.x;
        l2_prefetch_lines(pf_down + (size_t)e * pf_eb + a, b - a, threadIdx.x, blockDim.x);
    }
    const int row = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= F) return;
    const uint8_t *a = src >= 0 ? act_x + (size_t)src * as : act + (size_t)start * as;
    const size_t off = (size_t)e * expert_bytes + (size_t)row * row_bytes;
    float ga[TM], ua[TM];
    if constexpr ((V & DF_R4) != 0) {   /* STRATA_CUDA_MOE_R4: Wg / Wu are the R4 copies (r4.cuh), T = 1 */
        static_assert(TM == 1 && r4_fmt<FMT>::ok, "R4: IQ2_XXS / IQ3_XXS at T = 1");
        float acc[2];
        const uint8_t *w2[2] = { Wg + off, Wu + off };
        r4_rows_dot<FMT, 2, MV_WARPS>(w2, nb, a, acc);
        ga[0] = acc[0];
        ua[0] = acc[1];
    } else if constexpr (COOP != 0) {
        /* gate row and up row in one pass (R = 2: each row keeps its own lane sums, so the
         * bits are those of two separate dots) */
        float acc[2][TM];
        const uint8_t *w2[2] = { Wg + off, Wu + off };
        row_dot_coop<FMT, TM, 8, 2, V, MV_WARPS>(w2, nb, a, as, n, acc);
#pragma unroll
        for (int t = 0; t < TM; t++) { ga[t] = acc[0][t]; ua[t] = acc[1][t]; }
    } else if constexpr (lane_words<FMT>::ok && TM == 1 && (V & DF_PAIR) != 0) {   /* bit 8192: both rows' blocks, one activation load */
        float acc[2];
        const uint8_t *w2[2] = { Wg + off, Wu + off };
        row_dot_rows_lane<FMT, 2, MV_WARPS>(w2, nb, a, acc);
        ga[0] = acc[0];
        ua[0] = acc[1];
    } else {
        row_dot<FMT, TM, COOP, V>(Wg + off, n_in, nb, a, as, n, ga);
        row_dot<FMT, TM, COOP, V>(Wu + off, n_in, nb, a, as, n, ua);
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= n) break;
            float gv = ga[t], uv = ua[t];
            h[(size_t)(start + t) * F + row] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-gv))), uv);
        }
    }
    if (TM == 1 && hq_act) moe_gate_up_hq(h, F, start, hq_act, hq_cnt, gi);
}

/* grid: E / RPC row slices (RPC = DOWN_R rows for the cooperative formats, else 1); CTA of
 * DN_WARPS warps: warp w computes the slice's rows for groups w, w + DN_WARPS, ... (at T = 1:
 * one expert per warp), y[pair][row] = down_e h[pair] (the matvec's row dot); with cb.out the
 * CTA then combines its rows: out[t][i] = 0.0f + w * y in rank order (moe_combine_kernel's
 * operations, y read from shared memory), + the residual add. */
#define DN_WARPS 8
#define DN_GROUPS 2   /* groups per warp of the wide chunks' down launch */
#define DN_MAX_PAIRS (CUDA_MOE_COLS * CUDA_MOE_MAX_K)
/* CUDA_MOE_FAST_NEXTNORM: once every CTA has combined its rows into x (cb.add_to, one token), the
 * last CTA to arrive (last_cta_arrived: the router launch's pattern) runs rmsnorm_q256_kernel on the
 * whole row: threads 0 .. E / 8 - 1 play its threads (norm8_squares' 8 values, read through L2 since
 * other CTAs wrote them; the double sums, the warps' xor trees, rms_inv_parts over E / 256 warp
 * parts, y = (x * inv) * w), write y and warp b's act_q8_K block b from its registers. The same
 * operations as that kernel at n / 8 threads, so the same bits; the next layer's norm launch is gone. */
/* (the fields by value: a reference to the kernel's moe_comb parameter put an 80-byte copy of it on every
 * down instance's stack, ptxas -v) */
static __device__ __noinline__ void moe_down_next_norm(const float *x, const float *nw, float *ny, uint8_t *nact, float eps,
                                                       unsigned *counter, int E) {
    if (!last_cta_arrived(counter)) return;
    __shared__ double part[DN_WARPS];
    __shared__ float inv_s;
    const int tid = threadIdx.x, nt = E / 8;
    float v[8];
    if (tid < nt) norm8_squares_cg(v, x + (size_t)tid * 8, part, tid);
    __syncthreads();
    if (tid == 0) {
        inv_s = rms_inv_parts(part, nt / 32, E, eps);
        *counter = 0;
    }
    __syncthreads();
    if (tid >= nt) return;
    float wv[8];
#pragma unroll
    for (int k = 0; k < 8; k++) wv[k] = nw[(size_t)tid * 8 + k];   /* 4-byte aligned only */
    norm8_apply(v, inv_s, wv);
    float4 *yr = (float4 *)(ny + (size_t)tid * 8);
    yr[0] = make_float4(v[0], v[1], v[2], v[3]);
    yr[1] = make_float4(v[4], v[5], v[6], v[7]);
    act_quant_block_regs<256>(v, nact + (size_t)(tid >> 5) * sizeof_i(act_q8_K), ACT_Q8_K);
}

/* DR: rows per warp of the cooperative formats (DOWN_R, or 4 at T = 1: CUDA_MOE_FAST_DOWN4) */
/* DF_PAIR (bit 2048; on the lane path bit 32768): 4 CTAs an SM (64 registers), so the T = 1 grid of E / 4
 * CTAs stays one wave on 132 SMs (unbounded the 4 rows' words side by side took 75 registers: 3 CTAs an SM) */
template <int FMT, int TM, int COOP, int V, int DR = DOWN_R>
__global__ void __launch_bounds__(DN_WARPS * 32, (V & (DF_PAIR | DF_GRP | DF_R4)) != 0 ? 4 : 1)
moe_down_kernel(const uint8_t *__restrict__ Wd, size_t expert_bytes, size_t row_bytes, int E, int64_t n_in, int nb,
                const uint8_t *__restrict__ act, size_t as, const int *__restrict__ groups, float *__restrict__ y, moe_comb cb,
                int ngk) {
    if constexpr ((V & DF_SMEM) != 0) df_smem_fill<FMT>();   /* constant tables: before the wait */
    PDL_WAIT();
    /* rows a warp: DR for the cooperative formats and the lane path's rows (DF_PAIR with COOP 0: bit 32768), else 1 */
    constexpr int RPC = COOP != 0 || (V & DF_PAIR) != 0 ? DR : 1;
    __shared__ float s_y[DN_MAX_PAIRS][RPC];
    const int ng = ngk > 0 ? ngk : groups[0], warp = threadIdx.x >> 5, r0 = blockIdx.x * RPC;
    /* gridDim.y > 1 (the wide chunks, no combine here): CTA row y takes groups y DN_WARPS + w, ... */
    for (int gi = blockIdx.y * DN_WARPS + warp; gi < ng; gi += DN_WARPS * gridDim.y) {
        const int *gr = groups + 1 + MOE_GROUP_INTS * gi;
        const int e = gr[0], start = gr[1], n = gr[2];
        const uint8_t *a = act + (size_t)start * as;
        float acc[RPC][TM];
        if constexpr ((V & DF_R4) != 0) {   /* STRATA_CUDA_MOE_R4: Wd is the R4 copy (r4.cuh), T = 1, 4 rows a warp */
            static_assert(TM == 1 && RPC == 4 && r4_fmt<FMT>::ok, "R4: IQ2_XXS / IQ3_XXS at T = 1, 4 rows a warp");
            r4_grp_dot<FMT, DN_WARPS>(Wd + (size_t)e * expert_bytes + (size_t)r0 * row_bytes, row_bytes, nb, a, acc);
        } else if constexpr (COOP != 0 && (V & DF_GRP) != 0 && TM == 1 && RPC == 4) {
            /* bit 262144: row g by lane group g (the launcher checked 4 rows a warp) */
            row_dot_grp<FMT, V, DN_WARPS>(Wd + (size_t)e * expert_bytes + (size_t)r0 * row_bytes, row_bytes, nb, a, acc);
        } else if constexpr (COOP != 0) {
            const uint8_t *wr[RPC];
#pragma unroll
            for (int r = 0; r < RPC; r++) wr[r] = Wd + (size_t)e * expert_bytes + (size_t)(r0 + r) * row_bytes;
            row_dot_coop<FMT, TM, 8, RPC, V, DN_WARPS>(wr, nb, a, as, n, acc);
        } else if constexpr ((V & DF_PAIR) != 0) {
            /* bit 32768 (T = 1, the lane path): block b of the warp's RPC rows by lane b % 32, the block's
             * activation words loaded once (row_dot_rows_lane: each row's bits are row_dot's) */
            static_assert(lane_words<FMT>::ok && TM == 1, "the lane path's down rows: T = 1, Q4_0 / Q8_0 / IQ4_NL / Q2_0");
            const uint8_t *wr[RPC];
#pragma unroll
            for (int r = 0; r < RPC; r++) wr[r] = Wd + (size_t)e * expert_bytes + (size_t)(r0 + r) * row_bytes;
            row_dot_rows_lane<FMT, RPC, DN_WARPS>(wr, nb, a, &acc[0][0]);   /* TM 1: acc[r][0] is element r */
        } else
            row_dot<FMT, TM, COOP, V, DN_WARPS>(Wd + (size_t)e * expert_bytes + (size_t)r0 * row_bytes, n_in, nb, a, as, n, acc[0]);
        if ((threadIdx.x & 31) == 0) {
#pragma unroll
            for (int r = 0; r < RPC; r++)
#pragma unroll
                for (int t = 0; t < TM; t++) {
                    if (t >= n) break;
                    y[(size_t)(start + t) * E + r0 + r] = acc[r][t];
                    if (cb.out) s_y[start + t][r] = acc[r][t];
                }
        }
    }
    if (!cb.out) return;
    __syncthreads();
    const int k = cb.k;
    for (int idx = threadIdx.x; idx < cb.T * RPC; idx += blockDim.x) {
        const int t = idx / RPC, r = idx % RPC, i = r0 + r;
        float o = 0.0f;
        for (int j = 0; j < k; j++) o = __fadd_rn(o, __fmul_rn(cb.wts[t * k + j], s_y[cb.pair_of[t * k + j]][r]));
        cb.out[(size_t)t * E + i] = o;
        if (cb.add_to) cb.add_to[(size_t)t * E + i] = __fadd_rn(cb.add_to[(size_t)t * E + i], o);
    }
    if (cb.nn_w) moe_down_next_norm(cb.add_to, cb.nn_w, cb.nn_y, cb.nn_act, cb.nn_eps, cb.nn_counter, E);
}

/* out[t][i] = sum_r w[t][r] * y[pair(t, r)][i] in rank order from 0.0f; add_to += out */
__global__ void moe_combine_kernel(const float *__restrict__ y, const int *__restrict__ pair_of,
                                   const float *__restrict__ wts, int k, int E, float *__restrict__ out,
                                   float *__restrict__ add_to) {
    PDL_WAIT();
    const int t = blockIdx.y;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= E) return;
    float o = 0.0f;
    for (int r = 0; r < k; r++)
        o = __fadd_rn(o, __fmul_rn(wts[t * k + r], y[(size_t)pair_of[t * k + r] * E + i]));
    out[(size_t)t * E + i] = o;
    if (add_to) add_to[(size_t)t * E + i] = __fadd_rn(add_to[(size_t)t * E + i], o);
}

/* ---- launches ----------------------------------------------------------------------------------- */
/* The cooperative 256-weight kernel unless cuda_matvec_set_coop(0) asked for the one-lane one;
 * Q4_K / Q5_K's 16-byte loads need 16-byte aligned rows and experts (as in matvec.cu). */
template <int FMT>
static int moe_coop(const uint8_t *const *W, int nW, size_t row_bytes, size_t expert_bytes) {
    if (!coop_fmt<FMT>::ok || cuda_matvec_coop_setting() == 0) return 0;
    if (FMT == TYPE_Q4_K || FMT == TYPE_Q5_K) {
        if (row_bytes % 16 || expert_bytes % 16) return 0;
        for (int i = 0; i < nW; i++)
            if ((uintptr_t)W[i] % 16) return 0;
    }
    return 8;
}

/* STRATA_CUDA_MOE_FAST: CUDA_MOE_FAST_* bits (cuda_backend.h), all same bits */
static int moe_fast = CUDA_MOE_FAST_DEFAULT;
extern "C" void cuda_moe_set_fast(int bits) { moe_fast = bits & CUDA_MOE_FAST_ALL; }
/* STRATA_CUDA_TWICE bits 1, 8, 16 (an instrument): the T = 1 gate/up launch twice (it writes h from
 * the groups, the weights and the activation alone: the second launch writes the first's values),
 * h's quantization (h -> act_h), the router + routing launch (its last CTA resets the counter) */
static int moe_twice = 0;
extern "C" void cuda_moe_set_twice(int bits) { moe_twice = bits; }

/* STRATA_CUDA_MOE_FAST bit 32 (CUDA_MOE_FAST_NGK): at T = 1 (the slices' launches) one token
 * picks k distinct experts, so the routing writes exactly k groups (groups[0] = k, the grids'
 * gridDim.y): the expert kernels take the count from the launch and read a group's record right
 * after the dependent-launch wait instead of after a load of groups[0] (one L2 round trip less
 * on each warp's chain). 0: read groups[0]. Same groups, same bits. */
static int moe_ngk(const cuda_moe *m) {
    return m->T == 1 && m->max_groups <= 0 && (moe_fast & CUDA_MOE_FAST_NGK) ? m->k : 0;
}

/* STRATA_CUDA_MOE_R4 (r4.cuh, src/quant/r4.h): the T = 1 expert kernels on the experts' R4 copies, where the
 * upload made them (IQ2_XXS / IQ3_XXS experts; cuda_weights_upload). Same bits. The launch count is for the
 * tests (a parity check that never launched an R4 kernel proves nothing). */
static int moe_r4 = 0;
static unsigned long moe_r4_count = 0;
extern "C" void cuda_moe_set_r4(int on) { moe_r4 = on == 2 ? 2 : on ? 1 : 0; }
extern "C" int cuda_moe_r4(void) { return moe_r4; }
extern "C" unsigned long cuda_moe_r4_launches(void) { return moe_r4_count; }
/* CUDA_MOE_FAST_NEXTNORM: down launches that carried the next norm (for the tests, as the R4 count) */
static unsigned long moe_nn_count = 0;
extern "C" unsigned long cuda_moe_next_norm_launches(void) { return moe_nn_count; }
/* CUDA_MOE_FAST_HQ: gate/up launches that quantized h themselves (for the tests) */
static unsigned long moe_hq_count = 0;
extern "C" unsigned long cuda_moe_hq_launches(void) { return moe_hq_count; }
static bool moe_r4_gu(const cuda_moe *m) {
    return moe_r4 && m->T == 1 && m->max_groups <= 0 && m->gate_r4 && m->up_r4;   /* copies exist for the R4 formats alone */
}
/* the down launch's R4 path: 4 rows a warp (moe_down_rows: CUDA_MOE_FAST_DOWN4, E a multiple of 4) */
static int moe_down_rows(const cuda_moe *m, int64_t n_out);
static bool moe_r4_down(const cuda_moe *m) {
    return moe_r4 && m->T == 1 && m->max_groups <= 0 && m->down_r4 && moe_down_rows(m, m->E) == 4;
}

/* the down matrices' bytes per expert for the gate/up launch's L2 prefetch (0: none; *pfd their first byte): the R4
 * copy's when the down launch takes it */
static size_t moe_pf_down(const cuda_moe *m, const uint8_t **pfd) {
    int db, dbs;
    const bool dr4 = moe_r4_down(m);
    const size_t ebd = dr4 ? r4_row_bytes(m->F) * (size_t)m->E
                       : !cuda_type_info(m->type_down, &db, NULL, &dbs) && m->F % db == 0
                           ? (size_t)(m->F / db) * (size_t)dbs * (size_t)m->E : 0;
    *pfd = ebd ? (const uint8_t *)(dr4 ? m->down_r4 : m->down) : NULL;
    return ebd;
}

template <int FMT, int COOP, int V>
static void launch_gate_up_v(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, cudaStream_t st) {
    constexpr bool R4 = (V & DF_R4) != 0;
    const uint8_t *g = (const uint8_t *)(R4 ? m->gate_r4 : m->gate), *u = (const uint8_t *)(R4 ? m->up_r4 : m->up);
    const uint8_t *a = (const uint8_t *)m->act_pairs, *ax = (const uint8_t *)m->act_x;
    int F = (int)m->F;
    const uint8_t *pfd;
    const size_t ebd = moe_pf_down(m, &pfd);
    const int ngk = moe_ngk(m);
    uint8_t *hq = m->T == 1 ? (uint8_t *)m->hq_act : NULL;   /* CUDA_MOE_FAST_HQ: cuda_moe_block set it */
#define GU(TM) klaunch(moe_gate_up_kernel<FMT, TM, COOP, V>, grid, MV_WARPS * 32, 0, st, g, u, eb, rb, F, m->E, nb, ax, a, as, m->groups, m->h, pfd, ebd, ngk, \
                       hq, m->counter + 2)
    if constexpr (R4) GU(1);   /* T = 1 alone (moe_r4_gu) */
    else if (m->T == 1) GU(1); else if (m->T == 2) GU(2); else if (m->T <= 4) GU(4); else GU(8);
#undef GU
}

/* the cooperative down kernel's rows per warp: 4 at T = 1 with CUDA_MOE_FAST_DOWN4 (slices of
 * one CTA row, E a multiple of 4), else DOWN_R */
static int moe_down_rows(const cuda_moe *m, int64_t n_out) {
    return m->T == 1 && m->max_groups <= 0 && (moe_fast & CUDA_MOE_FAST_DOWN4) && n_out % 4 == 0 ? 4 : DOWN_R;
}
/* CUDA_MOE_FAST_DLANE: the lane path's T = 1 down rows a warp (bpn_lane's formats with their decode variant
 * where they have one): 4 for Q4_0 / Q8_0 with CUDA_MOE_FAST_DOWN4, else 2 (Q2_0's 16 words a row);
 * 1 (off) otherwise */
template <int FMT>
static int moe_down_lane_rows(const cuda_moe *m, int64_t n_out) {
    if constexpr (!lane_words<FMT>::ok) return 1;
    else {
        constexpr int V = dec_v<FMT, 0>();
        if (m->T != 1 || m->max_groups > 0 || !(moe_fast & CUDA_MOE_FAST_DLANE) || !(V == 0 || dec_on<V>(1))) return 1;
        /* IQ4_NL's 4-row instance spilled 48 bytes under the 64-register bound (ptxas -v): 2 rows */
        const int r = lane_words<FMT>::n == 8 && FMT != TYPE_IQ4_NL && (moe_fast & CUDA_MOE_FAST_DOWN4) ? 4 : 2;
        return n_out % r == 0 ? r : 1;
    }
}
/* dr: a warp's down rows, evaluated once in moe_matvecs (the grid's E / dr CTAs): moe_down_rows on the cooperative
 * path, moe_down_lane_rows on the lane path */
template <int FMT, int COOP, int V>
static void launch_down_v(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, const moe_comb &cb,
                          int dr, cudaStream_t st) {
    const uint8_t *d = (const uint8_t *)((V & DF_R4) != 0 ? m->down_r4 : m->down), *a = (const uint8_t *)m->act_h;
    int E = (int)m->E;
    const int ngk = moe_ngk(m);
#define DN(TM, DR) klaunch(moe_down_kernel<FMT, TM, COOP, V, DR>, grid, DN_WARPS * 32, 0, st, d, eb, rb, E, m->F, nb, a, as, m->groups, m->y, cb, ngk)
    if constexpr ((V & DF_R4) != 0) DN(1, 4);   /* T = 1, 4 rows a warp alone (moe_r4_down) */
    else if constexpr (COOP == 0 && (V & DF_PAIR) != 0) {   /* bit 32768: T = 1 alone (moe_down_lane_rows) */
        if (dr == 4) DN(1, 4);
        else DN(1, 2);
    } else if (m->T == 1) {
        if constexpr (COOP != 0)
            if (dr == 4) { DN(1, 4); return; }
        DN(1, DOWN_R);
    } else if (m->T == 2) DN(2, DOWN_R); else if (m->T <= 4) DN(4, DOWN_R); else DN(8, DOWN_R);
#undef DN
}

/* the formats CUDA_MOE_FAST_PAIRX extends bits 1024 / 2048 to: the 8-word parts of coop_rows_fast with
 * their default fast decode (the tables from global memory, the signs by table) */
static constexpr bool moe_pairx_fmt(int f) {
    return f == TYPE_IQ4_XS || f == TYPE_IQ2_XS || f == TYPE_IQ2_S || f == TYPE_IQ3_S;
}
/* the format's decode variant (decode_fast.cuh) when cuda_matvec_set_decode asked for it */
template <int FMT, int COOP>
static void launch_gate_up(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, cudaStream_t st) {
    constexpr int V = dec_v<FMT, COOP>();
    if constexpr ((FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ2_XXS) && COOP != 0)   /* CUDA_MOE_FAST_SALU: the signs by ALU */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_SALU) && (cuda_matvec_decode() & V)) {
            const bool pair = (moe_fast & CUDA_MOE_FAST_PAIR) != 0;   /* the two rows' parts side by side */
            if (FMT == TYPE_IQ3_XXS && (moe_fast & CUDA_MOE_FAST_SMEM)) {
                if (pair) launch_gate_up_v<FMT, COOP, V | DF_SMEM | DF_SALU | DF_PAIR>(m, grid, eb, rb, nb, as, st);
                else launch_gate_up_v<FMT, COOP, V | DF_SMEM | DF_SALU>(m, grid, eb, rb, nb, as, st);
            } else if (pair) launch_gate_up_v<FMT, COOP, V | DF_SALU | DF_PAIR>(m, grid, eb, rb, nb, as, st);
            else launch_gate_up_v<FMT, COOP, V | DF_SALU>(m, grid, eb, rb, nb, as, st);
            return;
        }
    if constexpr (FMT == TYPE_IQ3_XXS && COOP != 0)   /* CUDA_MOE_FAST_SMEM: the tables in shared memory */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_SMEM) && (cuda_matvec_decode() & V)) {
            launch_gate_up_v<FMT, COOP, V | DF_SMEM>(m, grid, eb, rb, nb, as, st);
            return;
        }
    if constexpr (lane_words<FMT>::ok && COOP == 0)   /* CUDA_MOE_FAST_PAIRQ2: the lane path's gate/up pair */
        /* Q2_0 and IQ4_NL with their decode variant on (the words of bp_q2_0_word / bp_iq4_nl_fast), Q4_0 and Q8_0 */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_PAIRQ2) && (V == 0 || dec_on<V>(1))) {
            launch_gate_up_v<FMT, COOP, V | DF_PAIR>(m, grid, eb, rb, nb, as, st);
            return;
        }
    if constexpr (moe_pairx_fmt(FMT) && COOP != 0)   /* CUDA_MOE_FAST_PAIRX: bit 1024's pairing for these formats */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_PAIRX) && (moe_fast & CUDA_MOE_FAST_PAIR) && (cuda_matvec_decode() & V)) {
            launch_gate_up_v<FMT, COOP, V | DF_PAIR>(m, grid, eb, rb, nb, as, st);
            return;
        }
    if (dec_on<V>(m->T)) launch_gate_up_v<FMT, COOP, V>(m, grid, eb, rb, nb, as, st);
    else launch_gate_up_v<FMT, COOP, 0>(m, grid, eb, rb, nb, as, st);
}
template <int FMT, int COOP>
static void launch_down(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, const moe_comb &cb,
                        int dr, cudaStream_t st) {
    constexpr int V = dec_v<FMT, COOP>();
    if constexpr ((FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ2_XXS) && COOP != 0)   /* CUDA_MOE_FAST_SALU: the signs by ALU */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_SALU) && (cuda_matvec_decode() & V)) {
            const bool rows = (moe_fast & CUDA_MOE_FAST_DROWS) != 0;   /* a warp's rows' parts side by side (4 with bit 4, else 2) */
            const bool smem = FMT == TYPE_IQ3_XXS && (moe_fast & CUDA_MOE_FAST_SMEM);   /* the grid in shared memory */
            if ((moe_fast & CUDA_MOE_FAST_GRP) && dr == 4) {   /* a row a lane group */
                if (smem) launch_down_v<FMT, COOP, V | DF_SMEM | DF_SALU | DF_GRP>(m, grid, eb, rb, nb, as, cb, dr, st);
                else launch_down_v<FMT, COOP, V | DF_SALU | DF_GRP>(m, grid, eb, rb, nb, as, cb, dr, st);
            } else if (smem) {
                if (rows) launch_down_v<FMT, COOP, V | DF_SMEM | DF_SALU | DF_PAIR>(m, grid, eb, rb, nb, as, cb, dr, st);
                else launch_down_v<FMT, COOP, V | DF_SMEM | DF_SALU>(m, grid, eb, rb, nb, as, cb, dr, st);
            } else if (rows) launch_down_v<FMT, COOP, V | DF_SALU | DF_PAIR>(m, grid, eb, rb, nb, as, cb, dr, st);
            else launch_down_v<FMT, COOP, V | DF_SALU>(m, grid, eb, rb, nb, as, cb, dr, st);
            return;
        }
    if constexpr (FMT == TYPE_IQ3_XXS && COOP != 0)
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_SMEM) && (cuda_matvec_decode() & V)) {
            launch_down_v<FMT, COOP, V | DF_SMEM>(m, grid, eb, rb, nb, as, cb, dr, st);
            return;
        }
    if constexpr (lane_words<FMT>::ok && COOP == 0)   /* CUDA_MOE_FAST_DLANE: the lane path's rows side by side */
        if (dr > 1) {   /* the grid has E / dr CTAs (moe_matvecs) */
            launch_down_v<FMT, COOP, V | DF_PAIR>(m, grid, eb, rb, nb, as, cb, dr, st);
            return;
        }
    if constexpr (moe_pairx_fmt(FMT) && COOP != 0)   /* CUDA_MOE_FAST_PAIRX: bit 2048's rows for these formats */
        if (m->T == 1 && (moe_fast & CUDA_MOE_FAST_PAIRX) && (moe_fast & CUDA_MOE_FAST_DROWS) && (cuda_matvec_decode() & V)) {
            launch_down_v<FMT, COOP, V | DF_PAIR>(m, grid, eb, rb, nb, as, cb, dr, st);
            return;
        }
    if (dec_on<V>(m->T)) launch_down_v<FMT, COOP, V>(m, grid, eb, rb, nb, as, cb, dr, st);
    else launch_down_v<FMT, COOP, 0>(m, grid, eb, rb, nb, as, cb, dr, st);
}

template <int FMT>
static int moe_matvecs(const cuda_moe *m, int down, const moe_comb &cb, cudaStream_t st) {
    int blck, af, bs;
    int64_t n_in = down ? m->F : m->E, n_out = down ? m->E : m->F;
    if (cuda_type_info(FMT, &blck, &af, &bs) || n_in % blck) return -1;
    int nb = (int)(n_in / blck);
    size_t rb = (size_t)nb * (size_t)bs, eb = rb * (size_t)n_out, as = cuda_act_row_bytes(af, n_in);
    const int maxg = m->max_groups > 0 ? m->max_groups : m->T * m->k;
    dim3 grid((unsigned)((n_out + MV_WARPS - 1) / MV_WARPS), (unsigned)maxg);
    /* the down kernel: one CTA row of every group (the slices, whose combine needs all of a row's
     * pairs in one CTA), or CTA rows of DN_WARPS * DN_GROUPS groups (the wide chunks) */
    const unsigned gy = m->max_groups > 0 ? (unsigned)((maxg + DN_WARPS * DN_GROUPS - 1) / (DN_WARPS * DN_GROUPS)) : 1u;
    if (!down) {
        const uint8_t *W[2] = { (const uint8_t *)m->gate, (const uint8_t *)m->up };
        for (int rep = 0; rep < ((moe_twice & CUDA_TWICE_MOE_GU) && m->T == 1 ? 2 : 1); rep++) {
            if constexpr (r4_fmt<FMT>::ok)
                if (moe_r4_gu(m)) {   /* the R4 copies: their row and expert bytes */
                    const size_t rb4 = r4_row_bytes(n_in);
                    if (moe_r4 == 2) launch_gate_up_v<FMT, 8, DF_R4>(m, grid, rb4 * (size_t)n_out, rb4, nb, as, st);
                    else launch_gate_up_v<FMT, 8, DF_R4 | DF_PAIR>(m, grid, rb4 * (size_t)n_out, rb4, nb, as, st);   /* 12 CTAs an SM */
                    moe_r4_count++;
                    continue;
                }
            if (moe_coop<FMT>(W, 2, rb, eb)) launch_gate_up<FMT, coop_fmt<FMT>::ok * 8>(m, grid, eb, rb, nb, as, st);
            else launch_gate_up<FMT, 0>(m, grid, eb, rb, nb, as, st);
        }
    } else {   /* one CTA per row slice, every group (moe_down_kernel) */
        const uint8_t *W[1] = { (const uint8_t *)m->down };
        const int dr = moe_down_rows(m, n_out);
        if constexpr (r4_fmt<FMT>::ok)
            if (moe_r4_down(m)) {   /* the R4 copy, 4 rows a warp (E / 4 CTAs) */
                const size_t rb4 = r4_row_bytes(n_in);
                launch_down_v<FMT, 8, DF_R4>(m, dim3((unsigned)(n_out / 4), gy), rb4 * (size_t)n_out, rb4, nb, as, cb, 4, st);
                moe_r4_count++;
                return CU_LAUNCHED();
            }
        if (moe_coop<FMT>(W, 1, rb, eb) && n_out % dr == 0)
            launch_down<FMT, coop_fmt<FMT>::ok * 8>(m, dim3((unsigned)(n_out / dr), gy), eb, rb, nb, as, cb, dr, st);
        else {
            const int lr = moe_down_lane_rows<FMT>(m, n_out);
            launch_down<FMT, 0>(m, dim3((unsigned)(n_out / lr), gy), eb, rb, nb, as, cb, lr, st);
        }
    }
    return CU_LAUNCHED();
}

static int moe_dispatch(int type, const cuda_moe *m, int down, const moe_comb &cb, cudaStream_t st) {
    switch (type) {   /* every row of src/quant/formats.h */
#define F(NAME, T_, fn, BLCK, BSIZE, ACT) case T_: return moe_matvecs<T_>(m, down, cb, st);
    STRATA_WEIGHT_FORMATS(F)
#undef F
    default: return -1;
    }
}

/* STRATA_CUDA_ROUTE: 0 the serial routing scans (default), 1 moe_route_token_par */
static int moe_route_par = 0;
extern "C" void cuda_moe_set_route(int parallel) { moe_route_par = parallel ? 1 : 0; }

int cuda_moe_next_norm_ok(int64_t E, const void *x, const void *y) {
    return (moe_fast & CUDA_MOE_FAST_NEXTNORM) && (moe_fast & CUDA_MOE_FAST_COMBINE) && E % 256 == 0 &&
           E <= 8 * DN_WARPS * 32 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0;
}

int cuda_moe_norm_fusable(int router_type, int64_t E, int X, int act_fmt, const void *x, const void *y, const void *router) {
    return (moe_fast & CUDA_MOE_FAST_NORM) && (moe_fast & CUDA_MOE_FAST_ROUTE1) &&
           cuda_moe_router_fusable(router_type, E) /* F32, E 1,024 or 2,048 */ && X >= E / 256 && act_fmt == ACT_Q8_K && (uintptr_t)x % 16 == 0 &&
           (uintptr_t)y % 16 == 0 && (uintptr_t)router % 16 == 0;
}

/* T = 1 (CUDA_MOE_FAST_ROUTE1): the router and the routing by whole CTAs (with m->norm_w the ffn norm
 * before them, CUDA_MOE_FAST_NORM); -1: no kernel for E */
static int moe_route1_launch(const cuda_moe *m, cudaStream_t st) {
    const size_t shm1 = (size_t)2 * (size_t)((m->X + 3) & ~3) * sizeof(float);
    if (m->norm_w) {   /* CUDA_MOE_FAST_NORM: the ffn norm in this launch (cuda_moe_norm_fusable said yes) */
        const size_t shmc = shm1 > (size_t)m->E * sizeof(float) ? shm1 : (size_t)m->E * sizeof(float);
#define RN(NPL) klaunch(moe_norm_router_kernel<NPL>, (unsigned)m->X, ROUTER_CTA_THREADS, shmc, st, m->router_f32, m->norm_x, \
                    m->norm_w, m->norm_eps, (float *)m->x_f32, (uint8_t *)m->act_x, (float *)m->logits, m->counter, m->X, \
                    m->k, m->groups, m->pair_of, m->wts)
        if (m->E == 2048) RN(64);
        else if (m->E == 1024) RN(32);
        else return -1;
#undef RN
    } else if (m->router_f32 && (moe_fast & CUDA_MOE_FAST_ROUTER_CTA) && (uintptr_t)m->router_f32 % 16 == 0 &&
        (uintptr_t)m->x_f32 % 16 == 0) {   /* a CTA per router row (float4 loads) */
        const size_t shmc = shm1 > (size_t)m->E * sizeof(float) ? shm1 : (size_t)m->E * sizeof(float);
#define RC(NPL) klaunch(moe_router_cta_kernel<NPL>, (unsigned)m->X, ROUTER_CTA_THREADS, shmc, st, m->router_f32, m->x_f32, \
                    (float *)m->logits, m->counter, m->X, m->k, m->groups, m->pair_of, m->wts)
        if (m->E == 2048) RC(64);
        else if (m->E == 1024) RC(32);
        else return -1;
#undef RC
    } else if (m->router_f32) {
        unsigned blocks = (unsigned)((m->X + ROUTER1_WARPS - 1) / ROUTER1_WARPS);
#define R1(NPL) klaunch(moe_router_route1_kernel<NPL>, blocks, ROUTER1_WARPS * 32, shm1, st, m->router_f32, m->x_f32, \
                    (float *)m->logits, m->counter, m->X, m->k, m->groups, m->pair_of, m->wts)
        if (m->E == 2048) R1(64);
        else if (m->E == 1024) R1(32);
        else return -1;
#undef R1
    } else
        klaunch(moe_route1_kernel, 1, 256, shm1, st, m->logits, m->X, m->k, m->groups, m->pair_of, m->wts);
    return 0;
}

/* The routing, grouped gate/up, h's quantization, grouped down and the combine (+ add_to),
 * the combine inside the down kernel when CUDA_MOE_FAST_COMBINE is on. */
int cuda_moe_block(const cuda_moe *m, float *add_to, cudaStream_t st) {
    int gaf, daf;
    if (m->T < 1 || m->T > CUDA_MOE_COLS || m->k < 1 || m->k > CUDA_MOE_MAX_K || m->k > m->X || m->X > CUDA_MOE_MAX_X ||
        cuda_type_info(m->type_gu, NULL, &gaf, NULL) || cuda_type_info(m->type_down, NULL, &daf, NULL))
        return -1;
    if (cuda_moe_tables_init()) return -1;
    size_t as_x = cuda_act_row_bytes(gaf, m->E);
    if (!as_x || as_x % 4 || !cuda_act_row_bytes(daf, m->F)) return -1;
    size_t shm = (size_t)m->T * (size_t)m->X * sizeof(float);
    const int route1 = m->T == 1 && (moe_fast & CUDA_MOE_FAST_ROUTE1);
    if (route1) {   /* T = 1: the routing by a whole CTA (twice: STRATA_CUDA_TWICE bit 16, an instrument) */
        for (int rep = 0; rep < (moe_twice & CUDA_TWICE_MOE_ROUTER ? 2 : 1); rep++)
            if (moe_route1_launch(m, st)) return -1;
    } else if (m->router_f32) {   /* router + routing in one launch */
        unsigned blocks = (unsigned)((m->X + ROUTER_WARPS - 1) / ROUTER_WARPS);
#define RR(NPL, TM, P) klaunch(moe_router_route_kernel<NPL, TM, P>, blocks, ROUTER_WARPS * 32, shm, st, m->router_f32, m->x_f32, \
                            (float *)m->logits, m->counter, m->X, m->k, m->T, (const uint8_t *)m->act_x, as_x, \
                            (uint8_t *)m->act_pairs, m->groups, m->pair_of, m->wts)
#define RR_T(NPL, P) do { if (m->T == 1) RR(NPL, 1, P); else if (m->T == 2) RR(NPL, 2, P); else if (m->T <= 4) RR(NPL, 4, P); else RR(NPL, 8, P); } while (0)
        if (m->E == 2048) { if (moe_route_par) RR_T(64, 1); else RR_T(64, 0); }
        else if (m->E == 1024) { if (moe_route_par) RR_T(32, 1); else RR_T(32, 0); }
        else return -1;
#undef RR_T
#undef RR
    } else if (moe_route_par)
        klaunch(moe_route_kernel<1>, 1, ROUTE_THREADS, shm, st, m->logits, m->X, m->k, m->T, (const uint8_t *)m->act_x, as_x,
                (uint8_t *)m->act_pairs, m->groups, m->pair_of, m->wts);
    else
    klaunch(moe_route_kernel<0>, 1, ROUTE_THREADS, shm, st, m->logits, m->X, m->k, m->T, (const uint8_t *)m->act_x, as_x,
                                                    (uint8_t *)m->act_pairs, m->groups, m->pair_of, m->wts);
    if (CU_LAUNCHED()) return -1;
    moe_comb cb;
    memset(&cb, 0, sizeof cb);
    /* CUDA_MOE_FAST_HQ: h's act_q8_K rows by the gate/up launch (moe_gate_up_hq); the grid's F / MV_WARPS CTAs
     * a group, 256 / MV_WARPS a block */
    cuda_moe mg = *m;
    mg.hq_act = m->T == 1 && (moe_fast & CUDA_MOE_FAST_HQ) && daf == ACT_Q8_K && m->F % 256 == 0 &&
                m->F / 256 * m->k <= CUDA_MOE_COUNTERS - 2 && m->max_groups <= 0 && !(moe_twice & CUDA_TWICE_MOE_HQ)
                    ? m->act_h : NULL;
    if (moe_dispatch(m->type_gu, &mg, 0, cb, st)) return -1;
    if (mg.hq_act) moe_hq_count++;
    else
        for (int rep = 0; rep < ((moe_twice & CUDA_TWICE_MOE_HQ) && m->T == 1 ? 2 : 1); rep++)
            if (cuda_act_quantize(daf, m->h, m->F, m->T * m->k, m->act_h, st)) return -1;
    const int cf = (moe_fast & CUDA_MOE_FAST_COMBINE) != 0;
    if (cf) { cb.pair_of = m->pair_of; cb.wts = m->wts; cb.k = m->k; cb.T = m->T; cb.out = m->out; cb.add_to = add_to; }
    if (m->nn_w) {   /* the caller asked (cuda_moe_next_norm_ok said yes): the next norm in the down launch */
        if (!cf || !add_to || m->T != 1 || !cuda_moe_next_norm_ok(m->E, add_to, m->nn_y)) return -1;
        cb.nn_w = m->nn_w; cb.nn_y = m->nn_y; cb.nn_act = (uint8_t *)m->nn_act; cb.nn_eps = m->nn_eps;
        cb.nn_counter = m->counter + 1;
        moe_nn_count++;
    }
    if (moe_dispatch(m->type_down, m, 1, cb, st)) return -1;
    return cf ? 0 : cuda_moe_combine(m, add_to, st);
}

int cuda_moe_combine(const cuda_moe *m, float *add_to, cudaStream_t st) {
    dim3 grid((unsigned)((m->E + 127) / 128), (unsigned)m->T);
    klaunch(moe_combine_kernel, grid, 128, 0, st, m->y, m->pair_of, m->wts, m->k, (int)m->E, m->out, add_to);
    return CU_LAUNCHED();
}

/* ---- wide passes: every token routed at once, each expert's pairs as one grouped matmul ------
 * The same bits as the slices of cuda_moe_block: each token's routing is moe_route_token; a
 * pair's gate, up and down rows are the matvec's canonical dots (mm.cu's grouped kernel); h =
 * silu(g) * u with moe_gate_up_kernel's expression; the combine is cuda_moe_combine's. Only the
 * grouping (which pairs share a launch) differs, and no result depends on it. */
#define WIDE_ROUTE_WARPS 8
#define WIDE_GROUP_THREADS 1024

/* one warp per token: sel / wts [T][k]; shared: WIDE_ROUTE_WARPS * (X + k) floats */
__global__ void __launch_bounds__(WIDE_ROUTE_WARPS * 32)
moe_topk_wide_kernel(const float *__restrict__ logits, int X, int k, int T, int *__restrict__ sel, float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ float s_wide[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int t = blockIdx.x * WIDE_ROUTE_WARPS + warp;
    if (t >= T) return;
    float *p = s_wide + (size_t)warp * (X + k);
    moe_route_token(p, logits + (size_t)t * X, X, k, lane, sel + (size_t)t * k, p + X, wts + (size_t)t * k);
}

/* Grouping, one CTA: pairs q = t k + r (token-major) sorted by expert, stable (moe.c's counting
 * sort): the groups list (expert, first pair, pairs, -1: rows gathered), pair_of[q], the token
 * of each grouped position, and the tile list of the grouped matmul (64 columns per tile); with
 * chunk > 0 instead each expert's pairs as groups of at most chunk pairs (no tiles).
 * Dynamic shared memory: P ints (the experts of the pairs); with par (CUDA_MOE_FAST_GROUP) also
 * GROUP_RW x X ints: warp w < GROUP_RW counts the experts of the pairs [w P / RW, (w + 1) P / RW)
 * (lanes of one expert in a step counted once, by __match_any_sync), the counts become each
 * (warp, expert)'s first position (the expert's start, then the warps before in order), and the
 * warp walks its pairs again in order, a pair's position its expert's next plus its rank among
 * the step's lanes of that expert: the same stable order (experts ascending, pairs ascending)
 * as the ballot loop, where every warp scanned all P pairs for each of its experts. */
#define GROUP_RW 16
__global__ void __launch_bounds__(WIDE_GROUP_THREADS)
moe_group_wide_kernel(const int *__restrict__ sel, int X, int k, int T, int chunk, int *__restrict__ groups,
                      int *__restrict__ tiles, int *__restrict__ pair_of, int *__restrict__ tok, int par) {
    PDL_WAIT();
    extern __shared__ int s_sel_w[];
    __shared__ int s_cnt[CUDA_MOE_MAX_X], s_start[CUDA_MOE_MAX_X];
    const int P = T * k, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    int *s_wc = s_sel_w + P;   /* par: [GROUP_RW][X] */
    const unsigned below = (1u << lane) - 1u;
    const int ra = warp * P / GROUP_RW, rb = (warp + 1) * P / GROUP_RW;   /* par: warp's pairs (warp < GROUP_RW) */
    for (int e = threadIdx.x; e < X; e += blockDim.x) s_cnt[e] = 0;
    const int rw = par & 1;   /* CUDA_MOE_FAST_GROUP (bit 2 of par: CUDA_MOE_FAST_WIDE's scan) */
    if (rw)
        for (int i = threadIdx.x; i < GROUP_RW * X; i += blockDim.x) s_wc[i] = 0;
    __syncthreads();
    for (int q = threadIdx.x; q < P; q += blockDim.x) {
        const int e = sel[q];
        s_sel_w[q] = e;
        if (!rw) atomicAdd(&s_cnt[e], 1);
    }
    __syncthreads();
    if (rw) {
        if (warp < GROUP_RW)
            for (int j0 = ra; j0 < rb; j0 += 32) {
                const int j = j0 + lane, e = j < rb ? s_sel_w[j] : -1;
                const unsigned m = __match_any_sync(0xffffffffu, e);
                if (e >= 0 && (m & below) == 0) s_wc[warp * X + e] += __popc(m);   /* the lowest lane of e */
                __syncwarp();
            }
        __syncthreads();
        for (int e = threadIdx.x; e < X; e += blockDim.x) {
            int n = 0;
            for (int w = 0; w < GROUP_RW; w++) n += s_wc[w * X + e];
            s_cnt[e] = n;
        }
        __syncthreads();
    }
    if (par & 2) {   /* CUDA_MOE_FAST_WIDE: warp 0, lane l the experts [l per, (l + 1) per): its pairs, groups and
                      * tiles counted, an exclusive scan across the lanes gives each lane's first position,
                      * group and tile, then the lane writes its experts' records as the serial loop below does */
        if (warp == 0) {
            const int per = (X + 31) >> 5, e0 = lane * per < X ? lane * per : X, e1 = e0 + per < X ? e0 + per : X;
            int np = 0, ngl = 0, ntl = 0;
            for (int e = e0; e < e1; e++) {
                const int n = s_cnt[e];
                np += n;
                if (n) { ngl += chunk ? (n + chunk - 1) / chunk : 1; ntl += chunk ? 0 : (n + CUDA_MM_BN - 1) / CUDA_MM_BN; }
            }
            int a = np, gsum = ngl, tsum = ntl;
#pragma unroll
            for (int s = 1; s < 32; s <<= 1) {
                const int x = __shfl_up_sync(FULL_MASK, a, s), y = __shfl_up_sync(FULL_MASK, gsum, s),
                          z = __shfl_up_sync(FULL_MASK, tsum, s);
                if (lane >= s) { a += x; gsum += y; tsum += z; }
            }
            int pos = a - np, ng = gsum - ngl, nt = tsum - ntl;
            for (int e = e0; e < e1; e++) {
                s_start[e] = pos;
                const int n = s_cnt[e];
                if (!n) continue;
                if (chunk) {
                    for (int c0 = 0; c0 < n; c0 += chunk) {
                        int *gr = groups + 1 + MOE_GROUP_INTS * ng++;
                        gr[0] = e; gr[1] = pos + c0; gr[2] = n - c0 < chunk ? n - c0 : chunk; gr[3] = -1;
                    }
                } else {
                    int *gr = groups + 1 + MOE_GROUP_INTS * ng;
                    gr[0] = e; gr[1] = pos; gr[2] = n; gr[3] = -1;
                    for (int c0 = 0; c0 < n; c0 += CUDA_MM_BN) { tiles[1 + 2 * nt] = ng; tiles[2 + 2 * nt] = c0; nt++; }
                    ng++;
                }
                pos += n;
            }
            if (lane == 31) { groups[0] = gsum; tiles[0] = tsum; }
        }
    } else if (threadIdx.x == 0) {   /* X <= CUDA_MOE_MAX_X experts, a few hundred tiles: serial */
        int pos = 0, ng = 0, nt = 0;
        for (int e = 0; e < X; e++) {
            s_start[e] = pos;
            const int n = s_cnt[e];
            if (!n) continue;
            if (chunk) {   /* the grouped decode kernels: a group per chunk of <= chunk pairs */
                for (int c0 = 0; c0 < n; c0 += chunk) {
                    int *gr = groups + 1 + MOE_GROUP_INTS * ng++;
                    gr[0] = e; gr[1] = pos + c0; gr[2] = n - c0 < chunk ? n - c0 : chunk; gr[3] = -1;
                }
                pos += n;
                continue;
            }
            int *gr = groups + 1 + MOE_GROUP_INTS * ng;
            gr[0] = e; gr[1] = pos; gr[2] = n; gr[3] = -1;
            for (int c0 = 0; c0 < n; c0 += CUDA_MM_BN) { tiles[1 + 2 * nt] = ng; tiles[2 + 2 * nt] = c0; nt++; }
            ng++;
            pos += n;
        }
        groups[0] = ng;
        tiles[0] = nt;
    }
    __syncthreads();
    if (rw) {
        for (int e = threadIdx.x; e < X; e += blockDim.x) {   /* each (warp, expert)'s first position */
            int pos = s_start[e];
            for (int w = 0; w < GROUP_RW; w++) { const int n = s_wc[w * X + e]; s_wc[w * X + e] = pos; pos += n; }
        }
        __syncthreads();
        if (warp < GROUP_RW)
            for (int j0 = ra; j0 < rb; j0 += 32) {
                const int j = j0 + lane, e = j < rb ? s_sel_w[j] : -1;
                const unsigned m = __match_any_sync(0xffffffffu, e);
                int base = 0;
                if (e >= 0) {
                    base = s_wc[warp * X + e];
                    const int pos = base + __popc(m & below);
                    pair_of[j] = pos;
                    tok[pos] = j / k;
                }
                __syncwarp();
                if (e >= 0 && (m & below) == 0) s_wc[warp * X + e] = base + __popc(m);
                __syncwarp();
            }
        return;
    }
    /* stable positions: warp w takes experts w, w + nw, ...; pairs in order, 32 at a time */
    for (int e = warp; e < X; e += nw) {
        if (!s_cnt[e]) continue;
        int base = s_start[e];
        for (int j0 = 0; j0 < P; j0 += 32) {
            const int j = j0 + lane;
            const bool mine = j < P && s_sel_w[j] == e;
            const unsigned m = __ballot_sync(0xffffffffu, mine);
            if (mine) {
                const int pos = base + __popc(m & below);
                pair_of[j] = pos;
                tok[pos] = j / k;
            }
            base += __popc(m);
        }
    }
}

/* The F32 router of a wide pass (cuda_moe_router_fusable widths): logits [T][X]. CTA (b, c):
 * rows 8 b .. 8 b + 7 (a warp each, its row's weights in registers as router_row loads them) for
 * tokens tg c .. + tg - 1 (tg <= WIDE_ROUTER_TG), the tokens' x rows brought into shared memory
 * WIDE_ROUTER_TC at a time and read by all 8 warps (a warp reading x from global memory for
 * itself measured 120 us per layer of a 512-token pass: every x row was read once per router
 * row). Each logit is router_row's: lane l sums w[l + 32 i] * x[l + 32 i] in i order from 0.0f,
 * then warp_canon_finish (the matvec's F32 bits, as every other router launch). Before it the
 * router ran as the matvec in slices of 8 columns, one launch per slice (64 per layer of a
 * 512-token pass: 45 % of the 48-layer MoE prompt's kernel time). */
#define WIDE_ROUTER_WARPS 8
#define WIDE_ROUTER_TG 16
#define WIDE_ROUTER_TC 4
template <int NPL, bool SIDE>
__global__ void __launch_bounds__(WIDE_ROUTER_WARPS * 32)
moe_router_wide_kernel(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ logits, int X, int T,
                       int tg) {
    PDL_WAIT();
    constexpr int E = NPL * 32;
    __shared__ __align__(16) float xs[WIDE_ROUTER_TC][E];
    const int lane = threadIdx.x & 31, row = blockIdx.x * WIDE_ROUTER_WARPS + (threadIdx.x >> 5);
    const int tb = blockIdx.y * tg, te = tb + tg < T ? tb + tg : T;
    float w[NPL];
    if (row < X) {
        const float *wr = W + (size_t)row * E;
#pragma unroll
        for (int i = 0; i < NPL; i++) w[i] = wr[lane + 32 * i];
    }
    for (int t0 = tb; t0 < te; t0 += WIDE_ROUTER_TC) {
        const int nt = te - t0 < WIDE_ROUTER_TC ? te - t0 : WIDE_ROUTER_TC;
        __syncthreads();   /* the previous chunk's readers are done */
        for (int i = threadIdx.x; i < nt * (E / 4); i += blockDim.x)
            ((float4 *)&xs[0][0])[i] = ((const float4 *)(x + (size_t)t0 * E))[i];
        __syncthreads();
        if (row >= X) continue;
        if constexpr (SIDE) {   /* CUDA_MOE_FAST_WIDE: the chunk's tokens side by side, one finish for all of them
                                 * (a token past nt stays +0.0: finished, never stored) */
            float acc[WIDE_ROUTER_TC];
#pragma unroll
            for (int t = 0; t < WIDE_ROUTER_TC; t++) acc[t] = 0.0f;
#pragma unroll
            for (int i = 0; i < NPL; i++)
#pragma unroll
                for (int t = 0; t < WIDE_ROUTER_TC; t++)
                    if (t < nt) acc[t] = __fadd_rn(acc[t], __fmul_rn(w[i], xs[t][lane + 32 * i]));
            warp_canon_finish_n<WIDE_ROUTER_TC, WIDE_ROUTER_WARPS>(acc);
            if (lane == 0)
#pragma unroll
                for (int t = 0; t < WIDE_ROUTER_TC; t++)
                    if (t < nt) logits[(size_t)(t0 + t) * X + row] = acc[t];
        } else {
#pragma unroll
            for (int t = 0; t < WIDE_ROUTER_TC; t++) {
                if (t >= nt) break;
                float acc = 0.0f;
#pragma unroll
                for (int i = 0; i < NPL; i++) acc = __fadd_rn(acc, __fmul_rn(w[i], xs[t][lane + 32 * i]));
                acc = warp_canon_finish<WIDE_ROUTER_WARPS>(acc);
                if (lane == 0) logits[(size_t)(t0 + t) * X + row] = acc;
            }
        }
    }
}

/* act_pairs[pos] = act_x[tok[pos]] (rows of `words` 32-bit words); grid (P) */
__global__ void moe_gather_wide_kernel(const uint32_t *__restrict__ act_x, const int *__restrict__ tok, int words,
                                       uint32_t *__restrict__ act_pairs) {
    PDL_WAIT();
    const int pos = blockIdx.x;
    const uint32_t *src = act_x + (size_t)tok[pos] * words;
    uint32_t *dst = act_pairs + (size_t)pos * words;
    for (int i = threadIdx.x; i < words; i += blockDim.x) dst[i] = src[i];
}

/* h = silu(g) * u in place over g (moe_gate_up_kernel's expression) */
__global__ void moe_silu_wide_kernel(float *__restrict__ g, const float *__restrict__ u, size_t n) {
    PDL_WAIT();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float gv = g[i], uv = u[i];
    g[i] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-gv))), uv);
}

int cuda_moe_wide_ok(int type_gu, int type_down, int64_t E, int64_t F) {
    return cuda_mm_supported(type_gu, E) && cuda_mm_supported(type_down, F);
}

/* tiles of the grouped matmul: sum over groups of ceil(n / CUDA_MM_BN) <= P / CUDA_MM_BN + min(X, P) */
int cuda_moe_wide_max_tiles(int P, int X) { return P / CUDA_MM_BN + (X < P ? X : P) + 1; }

int cuda_moe_experts_wide(const cuda_moe_wide *w, cudaStream_t st) {
    const cuda_moe *m = &w->m;
    int gaf, daf, gblck, gbs, dblck, dbs;
    if (m->T < 1 || m->k < 1 || m->k > CUDA_MOE_MAX_K || m->k > m->X || m->X > CUDA_MOE_MAX_X ||
        (w->mv != 0 && w->mv != 2 && w->mv != 4 && w->mv != 8) ||
        cuda_type_info(m->type_gu, &gblck, &gaf, &gbs) || cuda_type_info(m->type_down, &dblck, &daf, &dbs) ||
        (!w->mv && !cuda_moe_wide_ok(m->type_gu, m->type_down, m->E, m->F)))
        return -1;
    if (cuda_moe_tables_init()) return -1;
    const int P = m->T * m->k, maxt = cuda_moe_wide_max_tiles(P, m->X);
    const size_t as_x = cuda_act_row_bytes(gaf, m->E);
    if (!as_x || as_x % 4) return -1;
    /* the router (an F32 one of a fusable width here; else the caller's matvec wrote the logits) */
    if (m->router_f32) {
        /* tokens per CTA: w->router_tg (1..16), or 0: as many CTA rows as make >= 128 CTAs (a
         * 16-token pass: 2 tokens a CTA, 128 CTAs instead of 16; the same dots either way) */
        const int gx = (m->X + WIDE_ROUTER_WARPS - 1) / WIDE_ROUTER_WARPS;
        int tg = w->router_tg;
        if (tg <= 0) {
            const int rows = (128 + gx - 1) / gx;
            tg = (m->T + rows - 1) / rows;
        }
        if (tg < 1) tg = 1;
        if (tg > WIDE_ROUTER_TG) tg = WIDE_ROUTER_TG;
        const dim3 grid((unsigned)gx, (unsigned)((m->T + tg - 1) / tg));
        const bool side = (moe_fast & CUDA_MOE_FAST_WIDE) != 0;
#define RW(NPL) klaunch(side ? moe_router_wide_kernel<NPL, true> : moe_router_wide_kernel<NPL, false>, grid, \
                        WIDE_ROUTER_WARPS * 32, 0, st, m->router_f32, m->x_f32, (float *)m->logits, m->X, m->T, tg)
        if (m->E == 2048) RW(64);
        else if (m->E == 1024) RW(32);
        else return -1;
#undef RW
        if (CU_LAUNCHED()) return -1;
    }
    /* routing */
    const size_t shm_r = (size_t)WIDE_ROUTE_WARPS * (size_t)(m->X + m->k) * sizeof(float);
    klaunch(moe_topk_wide_kernel, (unsigned)((m->T + WIDE_ROUTE_WARPS - 1) / WIDE_ROUTE_WARPS), WIDE_ROUTE_WARPS * 32,
            shm_r, st, m->logits, m->X, m->k, m->T, w->sel, m->wts);
    if (CU_LAUNCHED()) return -1;
    static int attr_done;
    /* CUDA_MOE_FAST_GROUP: the warps' counts too, where they fit a CTA's shared memory */
    const size_t shm_par = (size_t)(P + GROUP_RW * m->X) * sizeof(int);
    const int par = ((moe_fast & CUDA_MOE_FAST_GROUP) && shm_par <= 200 * 1024) | ((moe_fast & CUDA_MOE_FAST_WIDE) ? 2 : 0);
    const size_t shm_g = par & 1 ? shm_par : (size_t)P * sizeof(int);
    if (shm_g > 48 * 1024 && !attr_done) {
        if (CU_CHECK(cudaFuncSetAttribute(moe_group_wide_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024)))
            return -1;
        attr_done = 1;
    }
    int *tok = w->tiles + 1 + 2 * maxt;   /* [P] token of each grouped position (after the tile list) */
    klaunch(moe_group_wide_kernel, 1, WIDE_GROUP_THREADS, shm_g, st, (const int *)w->sel, m->X, m->k, m->T,
            w->mv, m->groups, w->tiles, m->pair_of, tok, par);
    if (CU_LAUNCHED()) return -1;
    klaunch(moe_gather_wide_kernel, (unsigned)P, 128, 0, st, (const uint32_t *)m->act_x, (const int *)tok, (int)(as_x / 4),
            (uint32_t *)m->act_pairs);
    if (CU_LAUNCHED()) return -1;
    if (w->mv) {   /* the chunks through the grouped decode kernels (h written as silu(g) * u) */
        cuda_moe mc = *m;
        mc.hq_act = NULL;
        mc.T = w->mv;   /* the kernels' column count: a chunk's pairs */
        mc.max_groups = cuda_moe_wide_max_groups(P, m->X, w->mv);
        moe_comb cb;
        memset(&cb, 0, sizeof cb);
        if (moe_dispatch(m->type_gu, &mc, 0, cb, st) || cuda_act_quantize(daf, m->h, m->F, P, m->act_h, st))
            return -1;
        return moe_dispatch(m->type_down, &mc, 1, cb, st);
    }
    /* gate and up, then h */
    const size_t grb = (size_t)(m->E / gblck) * (size_t)gbs, geb = grb * (size_t)m->F;
    if (cuda_mm_grouped(m->type_gu, m->gate, geb, grb, (int)m->F, m->E, m->act_pairs, m->groups, w->tiles, maxt, m->h, st) ||
        cuda_mm_grouped(m->type_gu, m->up, geb, grb, (int)m->F, m->E, m->act_pairs, m->groups, w->tiles, maxt, w->hu, st))
        return -1;
    const size_t nh = (size_t)P * (size_t)m->F;
    klaunch(moe_silu_wide_kernel, (unsigned)((nh + 255) / 256), 256, 0, st, m->h, (const float *)w->hu, nh);
    if (CU_LAUNCHED()) return -1;
    /* down */
    if (cuda_act_quantize(daf, m->h, m->F, P, m->act_h, st)) return -1;
    const size_t drb = (size_t)(m->F / dblck) * (size_t)dbs, deb = drb * (size_t)m->E;
    return cuda_mm_grouped(m->type_down, m->down, deb, drb, (int)m->E, m->F, m->act_h, m->groups, w->tiles, maxt, m->y, st);
}
