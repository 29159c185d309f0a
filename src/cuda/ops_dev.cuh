/* Device bodies of the op kernels (ops.cu, moe.cu): the RoPE pair, the norm's partial-sum
 * order, the last-CTA handshake, and one (token, head) of the exact attention. Include after
 * EXPF_DEVICE_STATE (expf_ref). */
#ifndef STRATA_OPS_DEV_CUH
#define STRATA_OPS_DEV_CUH
#include "cuda_common.cuh"
#include "act_quant.cuh"
#include "cuda_internal.h"
#include "rope_dev.cuh"   /* rope_pair, rope_elem, the int8 rows (KV_Q8_WORDS, kv8_rows) */
#include "norm_dev.cuh"   /* rms_inv_parts, norm_row_warp */

/* Called by every thread of every CTA of a launch after its global stores: nonzero in the
 * launch's last CTA to arrive, which then sees every CTA's stores (a zeroed counter it must
 * reset). Thread 0 alone arrives, by one acquire-release atomic at GPU scope: the CTA barrier
 * before it orders the CTA's stores before the release (release is cumulative), and the barrier
 * after it orders the last CTA's acquire before every thread's later reads (the arrive / wait
 * pattern of a grid barrier: barrier, one thread's release and acquire, barrier). Until
 * 2026-12-05 (15:40 session) thread 0 ran fence.sc + a relaxed atomic and every thread of the
 * last CTA another fence.sc. */
static __device__ __forceinline__ int last_of_n_arrived(unsigned *counter, unsigned n) {
    __shared__ int s_last;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned old;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
        s_last = old == n - 1;
    }
    __syncthreads();
    return s_last;
}
/* the launch's CTAs of one grid row arrive together (n = gridDim.x); last_of_n_arrived serves a group of
 * n CTAs with a counter of their own (the MoE gate/up launch's 256-row blocks of h, CUDA_MOE_FAST_HQ) */
static __device__ __forceinline__ int last_cta_arrived(unsigned *counter) { return last_of_n_arrived(counter, gridDim.x); }

/* One head's RoPE and its KV head's cache rows at one position, by the calling CTA (the
 * operations of rope_qk_store_kernel): q rotated into qr, k rotated and v as the cache holds
 * them into kl / vl (all shared memory: f16 words, or with KV8 act_q8_0 blocks by kv8_rows),
 * then, when kc_row / vc_row are given (one CTA per KV group), stored there. The caller passes
 * kl / vl to attn_exact_head as the row of that position, so no CTA reads back a row another
 * CTA of the same launch writes. csq / csk: the position's [n_rot/2][cos, sin] of q's and k's
 * tables. Ends with the CTA synchronized. */
template <int KV8>
static __device__ __forceinline__ void rope_head_kv(const float *qs, const float *ks, const float *vs, const float *csq,
                                                    const float *csk, int n_rot, int neox, int head_dim, float *qr,
                                                    uint16_t *kl, uint16_t *vl, void *kc_row, void *vc_row) {
    const int half = n_rot / 2;
    for (int i = threadIdx.x; i < half; i += blockDim.x) {
        float o1, o2;
        int ia, ib;
        rope_pair(qs, i, n_rot, neox, csq[2 * i], csq[2 * i + 1], &o1, &o2, &ia, &ib);
        qr[ia] = o1; qr[ib] = o2;
        if (KV8) continue;
        rope_pair(ks, i, n_rot, neox, csk[2 * i], csk[2 * i + 1], &o1, &o2, &ia, &ib);
        kl[ia] = __half_as_ushort(__float2half_rn(o1));
        kl[ib] = __half_as_ushort(__float2half_rn(o2));
    }
    for (int j = n_rot + threadIdx.x; j < head_dim; j += blockDim.x) {
        qr[j] = qs[j];
        if (!KV8) kl[j] = __half_as_ushort(__float2half_rn(ks[j]));
    }
    if (KV8) kv8_rows(ks, vs, csk, n_rot, neox, head_dim, (uint32_t *)kl, (uint32_t *)vl);
    else
        for (int j = threadIdx.x; j < head_dim; j += blockDim.x) vl[j] = __half_as_ushort(__float2half_rn(vs[j]));
    __syncthreads();
    if (!kc_row) return;
    const int words = kv_head_words(head_dim, KV8);   /* the rows as 32-bit words, either format */
    for (int j = threadIdx.x; j < words; j += blockDim.x) {
        ((uint32_t *)kc_row)[j] = ((const uint32_t *)kl)[j];
        ((uint32_t *)vc_row)[j] = ((const uint32_t *)vl)[j];
    }
}

/* ---- attention, the CPU's order: bit-identical to src/cpu/backend_cpu.c --------------------
 * One (token, head) per CTA of ATTX_THREADS threads. Scores in parallel over positions, each
 * the dot over head_dim in order (products rounded, then added), times scale; max;
 * e_p = expf(s_p - max) (the host libm's bits: expf_host.cuh); the sum of e_p in position
 * order by one thread; then thread d accumulates o[d] = o[d] + (e_p * inv) * v_p[d] in
 * position order. The sequential parts cost O(positions) per head.
 * 256 threads and 256-position tiles: one score chain per thread per tile (the chains over d
 * are the latency; more of them in flight, fewer tiles and barriers); the V phase uses
 * head_dim threads. Measured at 128 threads / 64-position tiles before (docs/BENCHMARKS.md).
 * Tiles are filled with cp.async (all of a thread's copies in flight, then one wait): a plain
 * load-then-store loop waited for each load in turn.
 * Since issue 19 this is the one-chunk path of ops.cu's attn_kernel (tokens attending to at
 * most ATTN_CHUNK = 256 positions), where this order is the canonical chunked order
 * (src/model/attn_order.h: one chunk, a_0 = 1); longer spans take the kernel's chunk path. */
#define ATTX_THREADS 256
#define ATT_TILE 256
#ifndef ATT_MAX_HD
#define ATT_MAX_HD 256
#endif
/* Dynamic shared memory (dyn): a tile of ATT_TILE K or V rows (row stride kv_tile_rs words:
 * f16 head_dim + 2 halves, int8 the blocks' words made odd; an odd number of words, so threads
 * reading different rows at one column hit different banks), then the scores when sc is NULL
 * (else sc: positions floats of scratch). Positions [first, last] of the cache; k_last /
 * v_last: NULL, or the rows of position `last` as the cache holds them (words) to use instead
 * of the cache's (the T = 1 attention with RoPE and the KV store folded in writes them in the
 * same launch). Writes o to orow (head_dim floats). */
/* 4-byte global -> shared copy without a register round trip (sm_80+: cp.async), so that a
 * thread's 32 loads of a tile are all in flight at once; the plain copy before sm_80 */
static __device__ __forceinline__ void cp_async4(uint32_t *dst_smem, const uint32_t *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(dst_smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(s), "l"(src) : "memory");
#else
    *dst_smem = *src;
#endif
}
/* the same for 16 bytes (both addresses 16-byte aligned; .cg: not kept in L1) */
static __device__ __forceinline__ void cp_async16(void *dst_smem, const void *src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned s = (unsigned)__cvta_generic_to_shared(dst_smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src) : "memory");
#else
    *(uint4 *)dst_smem = *(const uint4 *)src;
#endif
}
static __device__ __forceinline__ void cp_async_wait_all(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}
/* the copies issued since the last commit as one group; wait until at most one group (the
 * newest) is still in flight */
static __device__ __forceinline__ void cp_async_commit(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
static __device__ __forceinline__ void cp_async_wait_prev(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group 1;" ::: "memory");
#endif
}

static __host__ __device__ __forceinline__ size_t attn_tile_words(int head_dim) {
    return ((size_t)ATT_TILE * (head_dim / 2 + 1) + 3) & ~(size_t)3;
}

/* ---- KV cache formats (docs/KERNELS.md "KV cache formats"): KV8 = 0 f16 values, KV8 = 1
 * act_q8_0 blocks (f32 d, then 32 int8: the CPU's int8 cache byte for byte; head_dim % 32 == 0).
 * Kernels address a cache in 32-bit words: a head's row is kv_head_words words, a position's
 * row n_kv_heads times that; a tile row is the head's words at stride kv_tile_rs (odd: threads
 * reading one word of 32 rows hit 32 banks). An int8 value is read as d * (float)q, one
 * rounded product (the CPU's q8_to_f32_row). */
static __host__ __device__ __forceinline__ int kv_tile_rs(int head_dim, int kv8) {
    return kv8 ? kv_head_words(head_dim, 1) | 1 : head_dim / 2 + 1;
}
/* a tile's words (f16: attn_tile_words; int8 rows are 9/16 of the f16 ones) */
static __host__ __device__ __forceinline__ size_t attn_tile_words_kv(int head_dim, int kv8) {
    return kv8 ? ((size_t)ATT_TILE * kv_tile_rs(head_dim, 1) + 3) & ~(size_t)3 : attn_tile_words(head_dim);
}
/* value d of a head row (words) */
template <int KV8>
static __device__ __forceinline__ float kv_val(const uint32_t *row, int d) {
    if (KV8) {
        const uint32_t *b = row + (d >> 5) * KV_Q8_WORDS;
        return __fmul_rn(__uint_as_float(b[0]), __int2float_rn((int)((const int8_t *)(b + 1))[d & 31]));
    }
    return h2f(((const uint16_t *)row)[d]);
}
/* the four values of word x of an int8 block's codes (bytes in memory order), scale dsc */
static __device__ __forceinline__ void kv8_quad(float dsc, uint32_t x, float *o) {
#pragma unroll
    for (int k = 0; k < 4; k++) o[k] = __fmul_rn(dsc, __int2float_rn((int)(int8_t)(uint8_t)(x >> (8 * k))));
}

/* NC score chains over one int8 K row (kr: the head's blocks): s[c] = s[c] + q_c[d] * k[d], d
 * in order (q_c = qs + c * head_dim), a block's d read once, its codes four per word */
template <int NC>
static __device__ __forceinline__ void kv8_scores(const uint32_t *kr, const float *qs, int head_dim, float *s) {
    for (int b = 0; b < head_dim / 32; b++) {
        const float dsc = __uint_as_float(kr[b * KV_Q8_WORDS]);
#pragma unroll 2
        for (int w = 0; w < 8; w++) {
            float kv[4];
            kv8_quad(dsc, kr[b * KV_Q8_WORDS + 1 + w], kv);
#pragma unroll
            for (int k = 0; k < 4; k++)
#pragma unroll
                for (int c = 0; c < NC; c++) s[c] = __fadd_rn(s[c], __fmul_rn(qs[c * head_dim + b * 32 + w * 4 + k], kv[k]));
        }
    }
}

/* rows p0 .. p0 + nr - 1 of one head's K or V cache (base: row 0 of the range; rows row_words
 * words apart) into the tile, W words per row at stride RS, by cp.async; the range's last
 * row (n - 1) from last_row instead when given (a row this launch made). Between barriers:
 * the previous tile's readers are done before, the new tile is complete after. */
static __device__ __forceinline__ void attn_tile_load(uint32_t *tile, const uint32_t *base, int p0, int nr, int n, int W,
                                                      int RS, int row_words, const uint32_t *last_row) {
    __syncthreads();
    int r = threadIdx.x / W, w = threadIdx.x - r * W;   /* (row, word) of idx, stepped without a division */
    const int dr = ATTX_THREADS / W, dw = ATTX_THREADS - dr * W;
    for (int idx = threadIdx.x; idx < nr * W; idx += ATTX_THREADS) {
        if (last_row && p0 + r == n - 1) tile[r * RS + w] = last_row[w];
        else cp_async4(&tile[r * RS + w], base + (size_t)(p0 + r) * row_words + w);
        r += dr; w += dw;
        if (w >= W) { w -= W; r++; }
    }
    cp_async_wait_all();
    __syncthreads();
}

/* the copies of rows p0 .. p0 + nr - 1 into a tile, issued and committed as one group (no
 * barrier: the caller's barriers order the tile's readers and writers) */
static __device__ __forceinline__ void attn_tile_issue(uint32_t *tile, const uint32_t *base, int p0, int nr, int n, int W,
                                                       int RS, int row_words, const uint32_t *last_row) {
    int r = threadIdx.x / W, w = threadIdx.x - r * W;   /* (row, word) of idx, stepped without a division */
    const int dr = ATTX_THREADS / W, dw = ATTX_THREADS - dr * W;
    for (int idx = threadIdx.x; idx < nr * W; idx += ATTX_THREADS) {
        if (last_row && p0 + r == n - 1) tile[r * RS + w] = last_row[w];
        else cp_async4(&tile[r * RS + w], base + (size_t)(p0 + r) * row_words + w);
        r += dr; w += dw;
        if (w >= W) { w -= W; r++; }
    }
    cp_async_commit();
}

/* Tile i of a phase: with two tiles (tile2 set), tile i + 1's copies are issued before tile i
 * is read, so the loads of the next 256 rows overlap this tile's chains (same operations in
 * the same order: the bits do not change); with one, load then read as before. On return the
 * tile holding rows p0.. is complete and visible to every thread. */
static __device__ __forceinline__ const uint32_t *attn_tile_next(uint32_t *tile, uint32_t *tile2, int i, const uint32_t *base,
                                                                 int p0, int nr, int n, int W, int RS, int row_words,
                                                                 const uint32_t *last_row) {
    if (!tile2) {
        attn_tile_load(tile, base, p0, nr, n, W, RS, row_words, last_row);
        return tile;
    }
    uint32_t *cur = (i & 1) ? tile2 : tile, *nxt = (i & 1) ? tile : tile2;
    __syncthreads();                       /* tile i - 1's readers are done with nxt's rows */
    if (i == 0) attn_tile_issue(cur, base, p0, nr, n, W, RS, row_words, last_row);
    const int p1 = p0 + ATT_TILE;
    if (p1 < n) attn_tile_issue(nxt, base, p1, n - p1 < ATT_TILE ? n - p1 : ATT_TILE, n, W, RS, row_words, last_row);
    else cp_async_commit();                /* an empty group: wait_prev still means "tile i" */
    cp_async_wait_prev();
    __syncthreads();
    return cur;
}

template <int KV8>
static __device__ __forceinline__ void attn_exact_head(const float *qh, const void *kc, const void *vc, int h,
                                                       int n_heads, int n_kv_heads, int head_dim, int last, float scale,
                                                       int window, float *sc, float *orow, uint32_t *dyn,
                                                       const uint32_t *k_last, const uint32_t *v_last, int two_tiles) {
    __shared__ float qs[ATT_MAX_HD];
    __shared__ float red[ATTX_THREADS / 32];
    __shared__ float inv_s;
    const int W = kv_head_words(head_dim, KV8), RS = kv_tile_rs(head_dim, KV8);   /* words per row, row stride in words */
    const size_t tw = attn_tile_words_kv(head_dim, KV8);
    uint32_t *tile = dyn, *tile2 = two_tiles ? dyn + tw : NULL;
    if (!sc) sc = (float *)(dyn + (two_tiles ? 2 : 1) * tw);
    int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    int kvh = h / (n_heads / n_kv_heads), row_words = n_kv_heads * W;
    int first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    int n = last - first + 1;
    /* two_tiles == 2 and one tile of positions (STRATA_CUDA_ATTN_VPRE): the V rows are issued
     * into the second tile with the K rows, so they arrive while the scores are computed */
    const int vpre = two_tiles == 2 && n <= ATT_TILE;
    for (int d = tid; d < head_dim; d += ATTX_THREADS) qs[d] = qh[d];
    const uint32_t *kbase = (const uint32_t *)kc + (size_t)first * row_words + (size_t)kvh * W;
    const uint32_t *vbase = (const uint32_t *)vc + (size_t)first * row_words + (size_t)kvh * W;
    if (vpre) {
        __syncthreads();   /* qs, and the caller's kl / vl rows, written */
        attn_tile_issue(tile, kbase, 0, n, n, W, RS, row_words, k_last);
        attn_tile_issue(tile2, vbase, 0, n, n, W, RS, row_words, v_last);
        cp_async_wait_prev();
        __syncthreads();
    }
    /* scores, a tile of positions at a time: s = sum_d q[d] * k[d] in d order, times scale */
    float mx = -INFINITY;
    for (int p0 = 0, ti = 0; p0 < n; p0 += ATT_TILE, ti++) {
        int nr = n - p0 < ATT_TILE ? n - p0 : ATT_TILE;
        const uint32_t *tl = vpre ? tile : attn_tile_next(tile, tile2, ti, kbase, p0, nr, n, W, RS, row_words, k_last);
        if (tid < nr) {
            float s = 0.0f;
            if (KV8) kv8_scores<1>(tl + (size_t)tid * RS, qs, head_dim, &s);
            else {
                const uint16_t *kr = (const uint16_t *)tl + (size_t)tid * 2 * RS;
#pragma unroll 16
                for (int d = 0; d < head_dim; d++) s = __fadd_rn(s, __fmul_rn(qs[d], h2f(kr[d])));
            }
            s = __fmul_rn(s, scale);
            sc[p0 + tid] = s;
            mx = fmaxf(mx, s);
        }
    }
#pragma unroll
    for (int o = 16; o >= 1; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, o));
    if (lane == 0) red[warp] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < ATTX_THREADS / 32; w++) mx = fmaxf(mx, red[w]);
    for (int i = tid; i < n; i += ATTX_THREADS) sc[i] = expf_ref(__fsub_rn(sc[i], mx));
    __syncthreads();
    if (tid == 0) {
        float sum = 0.0f;
#pragma unroll 8
        for (int i = 0; i < n; i++) sum = __fadd_rn(sum, sc[i]);
        inv_s = __fdiv_rn(1.0f, sum);
    }
    __syncthreads();
    float inv = inv_s;
    /* o[d] = o[d] + (e_p * inv) * v_p[d] in position order, V tiles through shared memory */
    float o[ATT_MAX_HD / ATTX_THREADS];
#pragma unroll
    for (int j = 0; j < ATT_MAX_HD / ATTX_THREADS; j++) o[j] = 0.0f;
    if (vpre) {
        cp_async_wait_all();
        __syncthreads();
    }
    for (int p0 = 0, ti = 0; p0 < n; p0 += ATT_TILE, ti++) {
        int nr = n - p0 < ATT_TILE ? n - p0 : ATT_TILE;
        const uint32_t *tl = vpre ? tile2 : attn_tile_next(tile, tile2, ti, vbase, p0, nr, n, W, RS, row_words, v_last);
#pragma unroll
        for (int j = 0; j < ATT_MAX_HD / ATTX_THREADS; j++) {
            int d = tid + j * ATTX_THREADS;
            if (d >= head_dim) break;
            float acc = o[j];
            /* loads of 16 positions issued ahead of their (ordered) adds */
#pragma unroll 16
            for (int i = 0; i < nr; i++)
                acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(sc[p0 + i], inv), kv_val<KV8>(tl + (size_t)i * RS, d)));
            o[j] = acc;
        }
    }
#pragma unroll
    for (int j = 0; j < ATT_MAX_HD / ATTX_THREADS; j++) {
        int d = tid + j * ATTX_THREADS;
        if (d < head_dim) orow[d] = o[j];
    }
}
#endif
