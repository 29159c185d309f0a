/* Device bodies of the op kernels (ops.cu, moe.cu): the RoPE pair, the norm's partial-sum
 * order, the last-CTA handshake, and the attention's K/V tiles. Include after
 * EXPF_DEVICE_STATE (expf_ref). */
#ifndef STRATA_OPS_DEV_CUH
#define STRATA_OPS_DEV_CUH
#include "cuda_common.cuh"
#include "act_quant.cuh"
#include "cuda_internal.h"

/* RoPE, cos/sin from the host table [pos][n_rot/2][2]: pairs (2i, 2i+1) (llama's GGUF
 * layout) or, with neox, (i, i + n_rot/2). */
static __device__ __forceinline__ void rope_pair(const float *v, int i, int n_rot, int neox, float c, float s, float *oa,
                                                 float *ob, int *ia_out, int *ib_out) {
    int ia = neox ? i : 2 * i, ib = neox ? i + n_rot / 2 : 2 * i + 1;
    float a = v[ia], b = v[ib];
    *oa = __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s));
    *ob = __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
    *ia_out = ia; *ib_out = ib;
}

/* Thread 0 of a norm: 1 / sqrt(mean square + eps) from the CTA's per-warp partial sums,
 * added in slot order (the order every norm kernel here uses). */
static __device__ __forceinline__ float rms_inv_parts(const double *part, int nparts, int n, float eps) {
    double t = 0;
    for (int i = 0; i < nparts; i++) t += part[i];
    return (float)(1.0 / sqrt(t / n + (double)eps));
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

/* ---- attention tiles (ops.cu's attn_chunk_kernel: the canonical chunked order) ------------
 * 256 threads, one per position of a 256-position chunk (ATTN_CHUNK), and 256-position tiles
 * of K or V rows in dynamic shared memory (dyn): row stride head_dim + 2 halves, an odd
 * number of words, so threads reading different rows at one column hit different banks.
 * Tiles are filled with cp.async (all of a thread's copies in flight, then one wait): a plain
 * load-then-store loop waited for each load in turn. k_last / v_last: NULL, or the f16 rows of
 * position `last` (as words) to use instead of the cache's (the T = 1 attention with RoPE and
 * the KV store folded in writes them in the same launch). */
#define ATTX_THREADS 256
#define ATT_TILE 256
#ifndef ATT_MAX_HD
#define ATT_MAX_HD 256
#endif
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
static __device__ __forceinline__ void cp_async_wait_all(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

static __host__ __device__ __forceinline__ size_t attn_tile_words(int head_dim) {
    return ((size_t)ATT_TILE * (head_dim / 2 + 1) + 3) & ~(size_t)3;
}
/* rows p0 .. p0 + nr - 1 of one head's K or V cache (base: row 0 of the range; rows kv_dim
 * halves apart) into the tile, W words per row at stride RS, by cp.async; the range's last
 * row (n - 1) from last_row instead when given (a row this launch made). Between barriers:
 * the previous tile's readers are done before, the new tile is complete after (attn_tile_issue:
 * the copies alone, for a caller with work to overlap before its own wait and barrier). The
 * attention kernel itself is ops.cu's attn_chunk_kernel. */
static __device__ __forceinline__ void attn_tile_issue(uint32_t *tile, const uint16_t *base, int p0, int nr, int n, int W,
                                                       int RS, int kv_dim, const uint32_t *last_row) {
    for (int idx = threadIdx.x; idx < nr * W; idx += ATTX_THREADS) {
        int r = idx / W, w = idx % W;
        if (last_row && p0 + r == n - 1) tile[r * RS + w] = last_row[w];
        else cp_async4(&tile[r * RS + w], (const uint32_t *)(base + (size_t)(p0 + r) * kv_dim) + w);
    }
}
static __device__ __forceinline__ void attn_tile_load(uint32_t *tile, const uint16_t *base, int p0, int nr, int n, int W,
                                                      int RS, int kv_dim, const uint32_t *last_row) {
    __syncthreads();
    attn_tile_issue(tile, base, p0, nr, n, W, RS, kv_dim, last_row);
    cp_async_wait_all();
    __syncthreads();
}

#endif
