/* The attention of a wide pass (a prompt chunk of one sequence), query tiles sharing K and V.
 *
 * The canonical order (src/model/attn_order.h, docs/KERNELS.md "Attention order"), per query:
 * s_p = (sum over d in order of the rounded products q[d] k_p[d]) * scale over the query's
 * positions [first, last]; M = their maximum; per chunk c of 256 positions from `first`: m_c,
 * e_p = expf(s_p - m_c) (the host libm's bits), l_c = their sum in position order, r_c = 1 / l_c;
 * w_c = l_c expf(m_c - M), L = sum w_c, a_c = w_c / L; o[d] = 0 + u_0[d] a_0 + u_1[d] a_1 + ...
 * with u_c[d] = 0 + (e_p r_c) v_p[d] + ... in position order. What changes is who does it: a
 * CTA takes AQ_QT consecutive columns (queries) of one head, so each K and V tile is loaded
 * once for all of them; the scores of a position for the AQ_QT queries are AQ_QT chains side by
 * side in one thread, the chunk maxima a warp per query, the sums one thread per (query,
 * chunk), the V chains one per (query, d), which close a chunk's u into o at its end. Every
 * query's value is computed by the same operations as in ops.cu's attn_kernel (its chunk path) and the
 * CPU, so the bits are the same (tests/gpu/test_gpu_widths: prompts in passes of 9..512
 * columns against the CPU).
 * Used for passes of more than 8 columns whose queries see at most AQ_NMAX positions
 * (the scores live in shared memory); other passes take the one-query kernel. The cache is f16
 * or int8 blocks (KV8: ops_dev.cuh's kv_val / kv8_scores, the values d * (float)q). */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "formats.cuh"
#include "act_quant.cuh"
#include "expf_host.cuh"

EXPF_DEVICE_STATE
PDL_TU_STATE(attn_prompt)
int cuda_attnp_expf_init(const expf_table *t, int mode) { return expf_device_set(t, mode); }
#include "ops_dev.cuh"
#include "model/attn_order.h"
extern "C" {
#include "core/env.h"
}

#define AQ_QT 8          /* queries per CTA (ATTX_THREADS / 32 warps: one per query for the reductions) */
#define AQ_NMAX 2048     /* positions a CTA's queries span at most */
#define AQ_MAXCH (AQ_NMAX / ATTN_CHUNK + 1)   /* chunks of one query at most */
static_assert(ATTX_THREADS / 32 == AQ_QT, "one warp per query");

/* NC: 0 the loops below for any head_dim and window; 2 or 4 (STRATA_CUDA_ATTN_QVEC, head_dim
 * 64 or 128, no window cutting a query's start: the host checks) the scores four d a step and a
 * thread's NC V chains (one d, queries q0, q0 + 256 / head_dim, ...) position after position.
 * A separate instance, so that the general one keeps its registers (64: four CTAs a SM). */
template <int KV8, int NC>
__global__ void __launch_bounds__(ATTX_THREADS)
attn_qtile_kernel(const float *q, const void *kc, const void *vc, int T, int n_heads, int n_kv_heads,
                  int head_dim, int pos0, float scale, int window, float *outp, uint8_t *act, size_t act_row_bytes,
                  int act_fmt) {
    PDL_WAIT();
    extern __shared__ uint32_t dyn[];
    __shared__ int fq[AQ_QT], lq[AQ_QT];
    __shared__ float mxs[AQ_QT];
    __shared__ float cm[AQ_QT][AQ_MAXCH], cr[AQ_QT][AQ_MAXCH], ca[AQ_QT][AQ_MAXCH];   /* per chunk: m_c, l_c -> r_c, a_c */
    const int h = blockIdx.x, t0 = blockIdx.y * AQ_QT;
    const int nq = T - t0 < AQ_QT ? T - t0 : AQ_QT;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const int W = kv_head_words(head_dim, KV8), RS = kv_tile_rs(head_dim, KV8), row_words = n_kv_heads * W;
    if (tid < AQ_QT) {
        int last = pos0 + t0 + (tid < nq ? tid : nq - 1);
        lq[tid] = last;
        fq[tid] = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    }
    __syncthreads();
    const int P0 = fq[0], P1 = lq[nq - 1], n = P1 - P0 + 1;
    uint32_t *tile = dyn;
    const uint16_t *tile_h = (const uint16_t *)tile;
    float *qs = (float *)(dyn + attn_tile_words(head_dim));   /* [AQ_QT][head_dim] (after a tile of either format) */
    float *sc = qs + AQ_QT * head_dim;                         /* [AQ_QT][n]: scores, then e */
    for (int i = tid; i < AQ_QT * head_dim; i += ATTX_THREADS) {
        int qq = i / head_dim, d = i % head_dim;
        qs[i] = qq < nq ? q[((size_t)(t0 + qq) * n_heads + h) * head_dim + d] : 0.0f;
    }
    const uint32_t *kbase = (const uint32_t *)kc + (size_t)P0 * row_words + (size_t)kvh * W;
    const uint32_t *vbase = (const uint32_t *)vc + (size_t)P0 * row_words + (size_t)kvh * W;
    /* scores: thread i <- position P0 + p0 + i, the AQ_QT queries side by side */
    for (int p0 = 0; p0 < n; p0 += ATT_TILE) {
        const int nr = n - p0 < ATT_TILE ? n - p0 : ATT_TILE;
        attn_tile_load(tile, kbase, p0, nr, n, W, RS, row_words, NULL);
        if (tid < nr) {
            const int p = P0 + p0 + tid;
            float s[AQ_QT];
#pragma unroll
            for (int qq = 0; qq < AQ_QT; qq++) s[qq] = 0.0f;
            if (KV8) kv8_scores<AQ_QT>(tile + (size_t)tid * RS, qs, head_dim, s);
            else if (NC > 0) {   /* four d a step: two K words, the queries' q as float4 (same adds, same order) */
                const uint32_t *kr = tile + (size_t)tid * RS;
#pragma unroll 2
                for (int d = 0; d < head_dim; d += 4) {
                    const uint32_t w0 = kr[d >> 1], w1 = kr[(d >> 1) + 1];
                    const float k0 = h2f((uint16_t)w0), k1 = h2f((uint16_t)(w0 >> 16)), k2 = h2f((uint16_t)w1),
                                k3 = h2f((uint16_t)(w1 >> 16));
#pragma unroll
                    for (int qq = 0; qq < AQ_QT; qq++) {
                        const float4 a = *(const float4 *)(qs + qq * head_dim + d);
                        s[qq] = __fadd_rn(s[qq], __fmul_rn(a.x, k0)); s[qq] = __fadd_rn(s[qq], __fmul_rn(a.y, k1));
                        s[qq] = __fadd_rn(s[qq], __fmul_rn(a.z, k2)); s[qq] = __fadd_rn(s[qq], __fmul_rn(a.w, k3));
                    }
                }
            } else {
                const uint16_t *kr = tile_h + (size_t)tid * 2 * RS;
#pragma unroll 4
                for (int d = 0; d < head_dim; d++) {
                    const float kv = h2f(kr[d]);
#pragma unroll
                    for (int qq = 0; qq < AQ_QT; qq++) s[qq] = __fadd_rn(s[qq], __fmul_rn(qs[qq * head_dim + d], kv));
                }
            }
#pragma unroll
            for (int qq = 0; qq < AQ_QT; qq++)
                if (qq < nq && p >= fq[qq] && p <= lq[qq]) sc[(size_t)qq * n + p0 + tid] = __fmul_rn(s[qq], scale);
        }
    }
    __syncthreads();
    /* the maximum of each query's scores: warp qq */
    if (warp < nq) {
        float m = -INFINITY;
        for (int p = fq[warp] + lane; p <= lq[warp]; p += 32) m = fmaxf(m, sc[(size_t)warp * n + (p - P0)]);
#pragma unroll
        for (int o = 16; o >= 1; o >>= 1) m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, o));
        if (lane == 0) mxs[warp] = m;
    }
    __syncthreads();
    /* each chunk's maximum m_c: warp qq, chunk after chunk */
    if (warp < nq) {
        for (int c0 = fq[warp], ci = 0; c0 <= lq[warp]; c0 += ATTN_CHUNK, ci++) {
            const int c1 = lq[warp] - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : lq[warp];
            float m = -INFINITY;
            for (int p = c0 + lane; p <= c1; p += 32) m = fmaxf(m, sc[(size_t)warp * n + (p - P0)]);
#pragma unroll
            for (int o = 16; o >= 1; o >>= 1) m = fmaxf(m, __shfl_xor_sync(FULL_MASK, m, o));
            if (lane == 0) cm[warp][ci] = m;
        }
    }
    __syncthreads();
    for (int i = tid; i < nq * n; i += ATTX_THREADS) {   /* e_p = expf(s_p - m_c) */
        const int qq = i / n, p = P0 + i % n;
        if (p >= fq[qq] && p <= lq[qq]) sc[i] = expf_ref(__fsub_rn(sc[i], cm[qq][(p - fq[qq]) / ATTN_CHUNK]));
    }
    __syncthreads();
    if (tid < AQ_QT * AQ_MAXCH) {   /* l_c in position order and r_c = 1 / l_c: one thread per (query, chunk) */
        const int qq = tid / AQ_MAXCH, ci = tid % AQ_MAXCH, c0 = qq < nq ? fq[qq] + ci * ATTN_CHUNK : 0;
        if (qq < nq && c0 <= lq[qq]) {
            const int c1 = lq[qq] - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : lq[qq];
            const float *e = sc + (size_t)qq * n - P0;
            float l = 0.0f;
#pragma unroll 8
            for (int p = c0; p <= c1; p++) l = __fadd_rn(l, e[p]);
            cr[qq][ci] = l;
        }
    }
    __syncthreads();
    if (tid < nq) {   /* w_c = l_c expf(m_c - M), L in chunk order, a_c = w_c / L; r_c = 1 / l_c */
        const int nch = ATTN_N_CHUNKS(lq[tid] - fq[tid] + 1);
        float L = 0.0f;
        for (int ci = 0; ci < nch; ci++) {
            ca[tid][ci] = __fmul_rn(cr[tid][ci], expf_ref(__fsub_rn(cm[tid][ci], mxs[tid])));
            L = __fadd_rn(L, ca[tid][ci]);
        }
        for (int ci = 0; ci < nch; ci++) { ca[tid][ci] = __fdiv_rn(ca[tid][ci], L); cr[tid][ci] = __fdiv_rn(1.0f, cr[tid][ci]); }
    }
    __syncthreads();
    /* u_c[d] = u + (e_p r_c) v_p[d] in position order, closed into o[d] = o + u_c[d] a_c at the
     * chunk's end: chain (query, d) = tid + 256 k */
    if constexpr (NC > 0) {
        /* the queries' chunks all start at P0, so a tile is one chunk of every query; e_p r_c in
         * place of e_p once per (query, position); chain k of the thread: query q0 + k qstep */
        for (int i = tid; i < nq * n; i += ATTX_THREADS) {
            const int qq = i / n, pr = i % n;
            if (pr <= lq[qq] - P0) sc[i] = __fmul_rn(sc[i], cr[qq][pr / ATTN_CHUNK]);
        }
        const int d = tid % head_dim, q0 = tid / head_dim, qstep = ATTX_THREADS / head_dim;
        float o[NC], u[NC];
#pragma unroll
        for (int k = 0; k < NC; k++) { o[k] = 0.0f; u[k] = 0.0f; }
        for (int p0 = 0; p0 < n; p0 += ATT_TILE) {
            const int nr = n - p0 < ATT_TILE ? n - p0 : ATT_TILE;
            attn_tile_load(tile, vbase, p0, nr, n, W, RS, row_words, NULL);   /* its barriers also order the e r pass */
            int hmin = p0 + nr - 1;
#pragma unroll
            for (int k = 0; k < NC; k++) {
                const int qq = q0 + k * qstep;
                if (qq >= nq) { hmin = p0 - 1; continue; }   /* a short last tile: the rest per chain below */
                const int hi = lq[qq] - P0;
                if (hi >= p0 && p0 > 0) {   /* the query's next chunk starts here: close the last */
                    o[k] = __fadd_rn(o[k], __fmul_rn(u[k], ca[qq][p0 / ATTN_CHUNK - 1]));
                    u[k] = 0.0f;
                }
                if (hi < hmin) hmin = hi;
            }
            const float *e0 = sc + (size_t)q0 * n;
            const size_t es = (size_t)qstep * n;
#pragma unroll 4
            for (int i = p0; i <= hmin; i++) {   /* positions every chain of the thread has */
                const float vv = kv_val<KV8>(tile + (size_t)(i - p0) * RS, d);
#pragma unroll
                for (int k = 0; k < NC; k++) u[k] = __fadd_rn(u[k], __fmul_rn(e0[k * es + i], vv));
            }
#pragma unroll
            for (int k = 0; k < NC; k++) {   /* the later queries' last positions */
                const int qq = q0 + k * qstep;
                if (qq >= nq) continue;
                const int hi = lq[qq] - P0 < p0 + nr - 1 ? lq[qq] - P0 : p0 + nr - 1;
                for (int i = hmin + 1 > p0 ? hmin + 1 : p0; i <= hi; i++)
                    u[k] = __fadd_rn(u[k], __fmul_rn(e0[k * es + i], kv_val<KV8>(tile + (size_t)(i - p0) * RS, d)));
            }
        }
#pragma unroll
        for (int k = 0; k < NC; k++) {   /* the last chunk, then out */
            const int qq = q0 + k * qstep;
            if (qq >= nq) continue;
            o[k] = __fadd_rn(o[k], __fmul_rn(u[k], ca[qq][(lq[qq] - P0) / ATTN_CHUNK]));
            outp[((size_t)(t0 + qq) * n_heads + h) * head_dim + d] = o[k];
        }
    } else {
        constexpr int KP = AQ_QT * ATT_MAX_HD / ATTX_THREADS;
        float o[KP], u[KP];
        int cix[KP];
#pragma unroll
        for (int k = 0; k < KP; k++) { o[k] = 0.0f; u[k] = 0.0f; cix[k] = 0; }
        for (int p0 = 0; p0 < n; p0 += ATT_TILE) {
            const int nr = n - p0 < ATT_TILE ? n - p0 : ATT_TILE;
            attn_tile_load(tile, vbase, p0, nr, n, W, RS, row_words, NULL);
#pragma unroll
            for (int k = 0; k < KP; k++) {
                const int j = tid + k * ATTX_THREADS;
                if (j >= nq * head_dim) break;
                const int qq = j / head_dim, d = j % head_dim;
                int lo = fq[qq] - P0, hi = lq[qq] - P0;
                if (lo < p0) lo = p0;
                if (hi > p0 + nr - 1) hi = p0 + nr - 1;
                const float *e = sc + (size_t)qq * n;
                float acc = u[k], oo = o[k];
                int ci = cix[k];
                float r = cr[qq][ci];
                /* runs of positions inside one chunk, so that the inner loop is the plain chain of
                 * before (the branch's first version tested every position for a chunk start: the
                 * suspect of its prompt slowdown on the H200, not profiled); a run starting on a
                 * chunk boundary closes the previous chunk first */
                const int f0 = fq[qq] - P0;
                for (int i = lo; i <= hi;) {
                    const int rel = (i - f0) % ATTN_CHUNK;
                    if (i > f0 && rel == 0) {   /* a chunk starts: close the last */
                        oo = __fadd_rn(oo, __fmul_rn(acc, ca[qq][ci]));
                        acc = 0.0f;
                        r = cr[qq][++ci];
                    }
                    const int end = i + (ATTN_CHUNK - rel) - 1 < hi ? i + (ATTN_CHUNK - rel) - 1 : hi;
#pragma unroll 8
                    for (; i <= end; i++)
                        acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(e[i], r), kv_val<KV8>(tile + (size_t)(i - p0) * RS, d)));
                }
                u[k] = acc; o[k] = oo; cix[k] = ci;
            }
        }
#pragma unroll
        for (int k = 0; k < KP; k++) {   /* the last chunk */
            const int j = tid + k * ATTX_THREADS;
            if (j >= nq * head_dim) break;
            o[k] = __fadd_rn(o[k], __fmul_rn(u[k], ca[j / head_dim][cix[k]]));
        }
#pragma unroll
        for (int k = 0; k < KP; k++) {
            const int j = tid + k * ATTX_THREADS;
            if (j >= nq * head_dim) break;
            const int qq = j / head_dim, d = j % head_dim;
            outp[((size_t)(t0 + qq) * n_heads + h) * head_dim + d] = o[k];
        }
    }
    if (act) {   /* this head's blocks of the queries' wo activation rows (as attn_kernel) */
        __syncthreads();
        const int B = act_fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : afmt<ACT_Q8_0>::blck;
        const size_t bb = act_block_bytes_dev(act_fmt);
        const int per = head_dim / B;
        for (int j = warp; j < nq * per; j += ATTX_THREADS / 32) {
            const int qq = j / per, jb = j % per, t = t0 + qq;
            const float *orow = outp + ((size_t)t * n_heads + h) * head_dim;
            const size_t bi = ((size_t)h * head_dim) / B + jb;
            if (B == 32) act_quant_block<32>(orow + jb * B, act + (size_t)t * act_row_bytes + bi * bb, act_fmt);
            else act_quant_block<64>(orow + jb * B, act + (size_t)t * act_row_bytes + bi * bb, act_fmt);
        }
    }
}

/* The positions one CTA's queries span at most in a pass of T columns at pos0 (0: no bound). */
static int qtile_span(int T, int pos0, int window) {
    int n = pos0 + T;
    if (window > 0 && window + AQ_QT - 1 < n) n = window + AQ_QT - 1;
    return n;
}

static size_t qtile_smem(int T, int head_dim, int pos0, int window) {
    return attn_tile_words(head_dim) * 4 + (size_t)AQ_QT * head_dim * 4 + (size_t)AQ_QT * qtile_span(T, pos0, window) * 4;
}
#define AQ_SMEM_MAX (160 * 1024)

int cuda_attention_qtile_ok(int T, int head_dim, int pos0, int window) {
    return T > 8 && head_dim <= ATT_MAX_HD && head_dim % 2 == 0 && qtile_span(T, pos0, window) <= AQ_NMAX &&
           qtile_smem(T, head_dim, pos0, window) <= AQ_SMEM_MAX;
}

/* STRATA_CUDA_ATTN_QVEC (read once): the instances of NC 2 / 4 where they apply */
static int aq_qvec = -1;
extern "C" void cuda_attention_qvec_set(int on) { aq_qvec = on ? 1 : 0; }

int cuda_attention_qtile(const float *q, const void *kc, const void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                         int head_dim, int pos0, float scale, int window, float *out, void *act, int act_fmt,
                         cudaStream_t st) {
    if (!cuda_attention_qtile_ok(T, head_dim, pos0, window) || (kv8 && head_dim % 32)) return -1;
    static int attr = 0;
    if (!attr) {
        if (CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<0, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<1, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<0, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<1, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<0, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)) ||
            CU_CHECK(cudaFuncSetAttribute(attn_qtile_kernel<1, 4>, cudaFuncAttributeMaxDynamicSharedMemorySize, AQ_SMEM_MAX)))
            return -1;
        attr = 1;
    }
    const size_t smem = qtile_smem(T, head_dim, pos0, window);
    const size_t arb = act ? cuda_act_row_bytes(act_fmt, (int64_t)n_heads * head_dim) : 0;
    dim3 g((unsigned)n_heads, (unsigned)((T + AQ_QT - 1) / AQ_QT));
    if (aq_qvec < 0) aq_qvec = env_int(ENV_CUDA_ATTN_QVEC) != 0;
    /* every query's chunks start at P0 = 0: no window cuts a start in this pass */
    const int nc = aq_qvec && (window <= 0 || pos0 + T <= window) ? (head_dim == 64 ? 2 : head_dim == 128 ? 4 : 0) : 0;
    void (*kern)(const float *, const void *, const void *, int, int, int, int, int, float, int, float *, uint8_t *, size_t,
                 int) = nc == 2 ? (kv8 ? attn_qtile_kernel<1, 2> : attn_qtile_kernel<0, 2>)
                      : nc == 4 ? (kv8 ? attn_qtile_kernel<1, 4> : attn_qtile_kernel<0, 4>)
                                : (kv8 ? attn_qtile_kernel<1, 0> : attn_qtile_kernel<0, 0>);
    klaunch(kern, g, ATTX_THREADS, smem, st, q, kc, vc, T, n_heads, n_kv_heads, head_dim, pos0, scale, window, out,
            (uint8_t *)act, arb, act_fmt);
    return CU_LAUNCHED();
}
