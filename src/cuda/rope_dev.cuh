/* RoPE's pair rotation and the int8 cache's position rows on the device, shared by ops.cu /
 * moe.cu (through ops_dev.cuh) and the tensor-core attention's decode launch (attn_tc.cu), so
 * every path rotates and quantizes with the same operations. */
#ifndef STRATA_ROPE_DEV_CUH
#define STRATA_ROPE_DEV_CUH
#include "cuda_common.cuh"
#include "act_quant.cuh"
#include "cuda_internal.h"

/* an int8 KV cache's blocks (act_q8_0): 32-bit words per block of 32 values */
#define KV_Q8_WORDS (sizeof_i(act_q8_0) / 4)   /* words per block of 32 values */
static_assert(sizeof_i(act_q8_0) == 36 && offsetof_i(act_q8_0, qs) == 4, "act_q8_0: d, then 32 int8");
/* 32-bit words of one head's K (or V) row: int8 (kv8 = 1) or f16 values */
static __host__ __device__ __forceinline__ int kv_head_words(int head_dim, int kv8) {
    return kv8 ? head_dim / 32 * KV_Q8_WORDS : head_dim / 2;
}

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

/* Element j of a head row v after RoPE: rope_pair's operations for j's pair (cs: the position's
 * [n_rot/2][cos, sin]); past n_rot, v[j] as it is. */
static __device__ __forceinline__ float rope_elem(const float *v, int j, int n_rot, int neox, const float *cs) {
    if (j >= n_rot) return v[j];
    const int half = n_rot / 2, i = neox ? (j < half ? j : j - half) : j / 2;
    const int ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float a = v[ia], b = v[ib], c = cs[2 * i], s = cs[2 * i + 1];
    return j == ia ? __fsub_rn(__fmul_rn(a, c), __fmul_rn(b, s)) : __fadd_rn(__fmul_rn(a, s), __fmul_rn(b, c));
}

/* One KV head's rows of an int8 cache at one position, by the warps of the calling CTA: k
 * rotated (rope_elem) and v, each block of 32 values quantized by one warp (lane l: value
 * 32 b + l; act_quant_block_regs: src/quant/act.c's act_q8_0 bytes) into kl / vl
 * (kv_head_words(head_dim, 1) words each, shared memory). No barrier. */
static __device__ __forceinline__ void kv8_rows(const float *ks, const float *vs, const float *csk, int n_rot, int neox,
                                                int head_dim, uint32_t *kl, uint32_t *vl) {
    const int nb = head_dim / 32, lane = threadIdx.x & 31;
    for (int b = threadIdx.x >> 5; b < 2 * nb; b += blockDim.x >> 5) {   /* warp-uniform */
        const int j = (b % nb) * 32 + lane;
        float x = b < nb ? rope_elem(ks, j, n_rot, neox, csk) : vs[j];
        act_quant_block_regs<32>(&x, (uint8_t *)((b < nb ? kl : vl) + (b % nb) * KV_Q8_WORDS), ACT_Q8_0);
    }
}

#endif
