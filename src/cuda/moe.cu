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
 *   moe_gate_up_kernel  grid (rows of F / MV_WARPS, group): the warp of row r reads gate and
 *                       up row r of the group's expert once for all its columns (row_dot:
 *                       the same canonical dot as the matvec kernels) and writes
 *                       h = silu(g) * u (moe.c's silu_mul) per pair.
 *   act quantization    h rows into the down weight's activation format (cuda_act_quantize).
 *   moe_down_kernel     grid (rows of E / MV_WARPS, group): y[pair] = down_e h[pair].
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
int cuda_moe_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
#include "ops_dev.cuh"

IQ_TABLES_INIT_FN(cuda_moe_tables_init, "moe")

#define ROUTE_THREADS 512
#define DOWN_R 2   /* rows per warp of the cooperative down kernel */
#define ROUTE_MAX_PAIRS (CUDA_MOE_COLS * CUDA_MOE_MAX_K)

/* ---- router: softmax, top-k, renormalization, grouping, gather ------------------------------ */
/* The routing of T tokens by the calling CTA (any multiple of 32 threads); s_p: T * X floats of
 * shared memory. Logits are read with __ldcg: in the fused kernel other CTAs wrote them. */
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
        float *p = s_p + (size_t)t * X;
        const float *l = logits + (size_t)t * X;
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
                s_sel[t * k + r] = bi;
                s_w[t * k + r] = bv;
                p[bi] = -1.0f;
            }
            __syncwarp();
        }
        if (lane == 0) {
            float ssel = 0.0f;
            for (int r = 0; r < k; r++) ssel = __fadd_rn(ssel, s_w[t * k + r]);
            for (int r = 0; r < k; r++) wts[t * k + r] = __fdiv_rn(s_w[t * k + r], ssel);
        }
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

__global__ void __launch_bounds__(ROUTE_THREADS)
moe_route_kernel(const float *__restrict__ logits, int X, int k, int T, const uint8_t *__restrict__ act_x, size_t as,
                 uint8_t *__restrict__ act_pairs, int *__restrict__ groups, int *__restrict__ pair_of,
                 float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ float s_p[];                       /* [T][X] probabilities */
    moe_route_body(s_p, logits, X, k, T, act_x, as, act_pairs, groups, pair_of, wts);
}

/* An F32 router of rows of E = 32 * NPL and the routing in one launch: warp w of CTA b computes
 * logits row 8 b + w for the T tokens (lane l loads its NPL weights w[l + 32 i] at once, then
 * sums w * x in the canonical per-element order: the bits of the matvec kernels' F32 path);
 * the last CTA to finish (atomic counter, reset by it for the next launch) routes. */
#define ROUTER_WARPS 8
template <int NPL, int TM>
__global__ void __launch_bounds__(ROUTER_WARPS * 32)
moe_router_route_kernel(const float *__restrict__ W, const float *__restrict__ x, float *__restrict__ logits,
                        unsigned *__restrict__ counter, int X, int k, int T, const uint8_t *__restrict__ act_x,
                        size_t as, uint8_t *__restrict__ act_pairs, int *__restrict__ groups,
                        int *__restrict__ pair_of, float *__restrict__ wts) {
    PDL_WAIT();
    extern __shared__ float s_p[];
    const int E = NPL * 32, lane = threadIdx.x & 31;
    const int row = blockIdx.x * ROUTER_WARPS + (threadIdx.x >> 5);
    if (row < X) {
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
            acc = warp_canon_finish(acc);
            if (lane == 0) logits[(size_t)t * X + row] = acc;
        }
    }
    if (!last_cta_arrived(counter)) return;
    moe_route_body(s_p, logits, X, k, T, act_x, as, act_pairs, groups, pair_of, wts);
    if (threadIdx.x == 0) *counter = 0;
}

/* ---- grouped expert matvecs ------------------------------------------------------------------ */
template <int FMT, int TM, int COOP>
__global__ void __launch_bounds__(MV_WARPS * 32)
moe_gate_up_kernel(const uint8_t *__restrict__ Wg, const uint8_t *__restrict__ Wu, size_t expert_bytes, size_t row_bytes,
                   int F, int64_t n_in, int nb, const uint8_t *__restrict__ act_x, const uint8_t *__restrict__ act, size_t as,
                   const int *__restrict__ groups, float *__restrict__ h) {
    PDL_WAIT();
    const int gi = blockIdx.y;
    if (gi >= groups[0]) return;
    const int *gr = groups + 1 + MOE_GROUP_INTS * gi;
    const int e = gr[0], start = gr[1], n = gr[2], src = gr[3];
    const int row = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= F) return;
    const uint8_t *a = src >= 0 ? act_x + (size_t)src * as : act + (size_t)start * as;
    const size_t off = (size_t)e * expert_bytes + (size_t)row * row_bytes;
    float ga[TM], ua[TM];
    if constexpr (COOP != 0) {
        /* gate row and up row in one pass (R = 2: each row keeps its own lane sums, so the
         * bits are those of two separate dots) */
        float acc[2][TM];
        const uint8_t *w2[2] = { Wg + off, Wu + off };
        row_dot_coop<FMT, TM, 8, 2>(w2, nb, a, as, n, acc);
#pragma unroll
        for (int t = 0; t < TM; t++) { ga[t] = acc[0][t]; ua[t] = acc[1][t]; }
    } else {
        row_dot<FMT, TM, COOP>(Wg + off, n_in, nb, a, as, n, ga);
        row_dot<FMT, TM, COOP>(Wu + off, n_in, nb, a, as, n, ua);
    }
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= n) break;
            float gv = ga[t], uv = ua[t];
            h[(size_t)(start + t) * F + row] = __fmul_rn(__fdiv_rn(gv, __fadd_rn(1.0f, expf_ref(-gv))), uv);
        }
    }
}

template <int FMT, int TM, int COOP>
__global__ void __launch_bounds__(MV_WARPS * 32)
moe_down_kernel(const uint8_t *__restrict__ Wd, size_t expert_bytes, size_t row_bytes, int E, int64_t n_in, int nb,
                const uint8_t *__restrict__ act, size_t as, const int *__restrict__ groups, float *__restrict__ y) {
    PDL_WAIT();
    const int gi = blockIdx.y;
    if (gi >= groups[0]) return;
    const int *gr = groups + 1 + MOE_GROUP_INTS * gi;
    const int e = gr[0], start = gr[1], n = gr[2];
    const uint8_t *a = act + (size_t)start * as;
    if constexpr (COOP != 0) {
        /* DOWN_R rows per warp (E % DOWN_R == 0): more loads in flight for short rows */
        const int row = (blockIdx.x * MV_WARPS + (threadIdx.x >> 5)) * DOWN_R;
        if (row >= E) return;
        float acc[DOWN_R][TM];
        const uint8_t *wr[DOWN_R];
#pragma unroll
        for (int r = 0; r < DOWN_R; r++) wr[r] = Wd + (size_t)e * expert_bytes + (size_t)(row + r) * row_bytes;
        row_dot_coop<FMT, TM, 8, DOWN_R>(wr, nb, a, as, n, acc);
        if ((threadIdx.x & 31) == 0) {
#pragma unroll
            for (int r = 0; r < DOWN_R; r++)
#pragma unroll
                for (int t = 0; t < TM; t++) {
                    if (t >= n) break;
                    y[(size_t)(start + t) * E + row + r] = acc[r][t];
                }
        }
        return;
    }
    const int row = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= E) return;
    float acc[TM];
    row_dot<FMT, TM, COOP>(Wd + (size_t)e * expert_bytes + (size_t)row * row_bytes, n_in, nb, a, as, n, acc);
    if ((threadIdx.x & 31) == 0) {
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= n) break;
            y[(size_t)(start + t) * E + row] = acc[t];
        }
    }
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

template <int FMT, int COOP>
static void launch_gate_up(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, cudaStream_t st) {
    const uint8_t *g = (const uint8_t *)m->gate, *u = (const uint8_t *)m->up, *a = (const uint8_t *)m->act_pairs;
    const uint8_t *ax = (const uint8_t *)m->act_x;
    int F = (int)m->F;
#define GU(TM) klaunch(moe_gate_up_kernel<FMT, TM, COOP>, grid, MV_WARPS * 32, 0, st, g, u, eb, rb, F, m->E, nb, ax, a, as, m->groups, m->h)
    if (m->T == 1) GU(1); else if (m->T == 2) GU(2); else if (m->T <= 4) GU(4); else GU(8);
#undef GU
}

template <int FMT, int COOP>
static void launch_down(const cuda_moe *m, dim3 grid, size_t eb, size_t rb, int nb, size_t as, cudaStream_t st) {
    const uint8_t *d = (const uint8_t *)m->down, *a = (const uint8_t *)m->act_h;
    int E = (int)m->E;
#define DN(TM) klaunch(moe_down_kernel<FMT, TM, COOP>, grid, MV_WARPS * 32, 0, st, d, eb, rb, E, m->F, nb, a, as, m->groups, m->y)
    if (m->T == 1) DN(1); else if (m->T == 2) DN(2); else if (m->T <= 4) DN(4); else DN(8);
#undef DN
}

template <int FMT>
static int moe_matvecs(const cuda_moe *m, int down, cudaStream_t st) {
    int blck, af, bs;
    int64_t n_in = down ? m->F : m->E, n_out = down ? m->E : m->F;
    if (cuda_type_info(FMT, &blck, &af, &bs) || n_in % blck) return -1;
    int nb = (int)(n_in / blck);
    size_t rb = (size_t)nb * (size_t)bs, eb = rb * (size_t)n_out, as = cuda_act_row_bytes(af, n_in);
    dim3 grid((unsigned)((n_out + MV_WARPS - 1) / MV_WARPS), (unsigned)(m->T * m->k));
    if (!down) {
        const uint8_t *W[2] = { (const uint8_t *)m->gate, (const uint8_t *)m->up };
        if (moe_coop<FMT>(W, 2, rb, eb)) launch_gate_up<FMT, coop_fmt<FMT>::ok * 8>(m, grid, eb, rb, nb, as, st);
        else launch_gate_up<FMT, 0>(m, grid, eb, rb, nb, as, st);
    } else {
        const uint8_t *W[1] = { (const uint8_t *)m->down };
        if (moe_coop<FMT>(W, 1, rb, eb) && n_out % DOWN_R == 0) {
            dim3 g2((unsigned)((n_out / DOWN_R + MV_WARPS - 1) / MV_WARPS), grid.y);
            launch_down<FMT, coop_fmt<FMT>::ok * 8>(m, g2, eb, rb, nb, as, st);
        } else launch_down<FMT, 0>(m, grid, eb, rb, nb, as, st);
    }
    return CU_LAUNCHED();
}

static int moe_dispatch(int type, const cuda_moe *m, int down, cudaStream_t st) {
    switch (type) {   /* every row of src/quant/formats.h */
#define F(NAME, T_, fn, BLCK, BSIZE, ACT) case T_: return moe_matvecs<T_>(m, down, st);
    STRATA_WEIGHT_FORMATS(F)
#undef F
    default: return -1;
    }
}

int cuda_moe_experts(const cuda_moe *m, cudaStream_t st) {
    int gaf, daf;
    if (m->T < 1 || m->T > CUDA_MOE_COLS || m->k < 1 || m->k > CUDA_MOE_MAX_K || m->k > m->X || m->X > CUDA_MOE_MAX_X ||
        cuda_type_info(m->type_gu, NULL, &gaf, NULL) || cuda_type_info(m->type_down, NULL, &daf, NULL))
        return -1;
    if (cuda_moe_tables_init()) return -1;
    size_t as_x = cuda_act_row_bytes(gaf, m->E);
    if (!as_x || as_x % 4 || !cuda_act_row_bytes(daf, m->F)) return -1;
    size_t shm = (size_t)m->T * (size_t)m->X * sizeof(float);
    if (m->router_f32) {   /* router + routing in one launch */
        unsigned blocks = (unsigned)((m->X + ROUTER_WARPS - 1) / ROUTER_WARPS);
#define RR(NPL, TM) klaunch(moe_router_route_kernel<NPL, TM>, blocks, ROUTER_WARPS * 32, shm, st, m->router_f32, m->x_f32, \
                            (float *)m->logits, m->counter, m->X, m->k, m->T, (const uint8_t *)m->act_x, as_x, \
                            (uint8_t *)m->act_pairs, m->groups, m->pair_of, m->wts)
#define RR_T(NPL) do { if (m->T == 1) RR(NPL, 1); else if (m->T == 2) RR(NPL, 2); else if (m->T <= 4) RR(NPL, 4); else RR(NPL, 8); } while (0)
        if (m->E == 2048) RR_T(64);
        else if (m->E == 1024) RR_T(32);
        else return -1;
#undef RR_T
#undef RR
    } else
    klaunch(moe_route_kernel, 1, ROUTE_THREADS, shm, st, m->logits, m->X, m->k, m->T, (const uint8_t *)m->act_x, as_x,
                                                    (uint8_t *)m->act_pairs, m->groups, m->pair_of, m->wts);
    if (CU_LAUNCHED() || moe_dispatch(m->type_gu, m, 0, st)) return -1;
    if (cuda_act_quantize(daf, m->h, m->F, m->T * m->k, m->act_h, st)) return -1;
    return moe_dispatch(m->type_down, m, 1, st);
}

int cuda_moe_combine(const cuda_moe *m, float *add_to, cudaStream_t st) {
    dim3 grid((unsigned)((m->E + 127) / 128), (unsigned)m->T);
    klaunch(moe_combine_kernel, grid, 128, 0, st, m->y, m->pair_of, m->wts, m->k, (int)m->E, m->out, add_to);
    return CU_LAUNCHED();
}
