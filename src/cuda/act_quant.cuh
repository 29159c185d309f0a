/* One activation block quantized by one warp: src/quant/act.c's formula bit for bit.
 *   amax = max |x| (max is order-free; fmaxf skips NaN like the C loop's `>`),
 *   d = amax / 127, id = d != 0 ? 1 / d : 0, q = __float2int_rn(clamp(x * id, -127, 127))
 *   (round half to even = nearbyintf), s = d * (float)sum(q), bsums per 16 (act_q8_K).
 * Lane l holds values [l*V, l*V + V) of the block, V = B / 32. Layouts: src/quant/blocks.h. */
#ifndef STRATA_ACT_QUANT_CUH
#define STRATA_ACT_QUANT_CUH
#include "cuda_common.cuh"
#include "formats.cuh"

/* one code path serves the four layouts: d first; s (act_q8_1 / act_q8_2) then qs at the same
 * offsets in both; qs of act_q8_0 and act_q8_K at the same offset */
static_assert(offsetof_i(act_q8_0, d) == 0 && offsetof_i(act_q8_1, d) == 0 && offsetof_i(act_q8_2, d) == 0 &&
              offsetof_i(act_q8_K, d) == 0, "act blocks: d first");
static_assert(offsetof_i(act_q8_2, s) == offsetof_i(act_q8_1, s) &&
                  offsetof_i(act_q8_2, qs) == offsetof_i(act_q8_1, qs),
              "act_q8_1 / act_q8_2 layouts");
static_assert(offsetof_i(act_q8_K, qs) == offsetof_i(act_q8_0, qs), "act_q8_0 / act_q8_K qs offsets");

/* The block's values already in registers: lane l holds v[0..V) = values [l*V, l*V + V). */
template <int B>
static __device__ __forceinline__ void act_quant_block_regs(const float *v, uint8_t *__restrict__ blk, int fmt) {
    const int V = B / 32;
    int lane = threadIdx.x & 31;
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < V; i++) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) amax = fmaxf(amax, __shfl_xor_sync(FULL_MASK, amax, s));
    float d = __fdiv_rn(amax, 127.0f);
    float id = d != 0.0f ? __fdiv_rn(1.0f, d) : 0.0f;
    int sum = 0;
    size_t qoff = (fmt == ACT_Q8_1 || fmt == ACT_Q8_2) ? offsetof_i(act_q8_1, qs) : offsetof_i(act_q8_0, qs);
    int8_t *qs = (int8_t *)(blk + qoff);
#pragma unroll
    for (int i = 0; i < V; i++) {
        int q = __float2int_rn(fminf(fmaxf(__fmul_rn(v[i], id), -127.0f), 127.0f));
        qs[lane * V + i] = (int8_t)q;
        sum += q;
    }
    if (fmt == ACT_Q8_K) {
        /* bsums[j] = sum of q[16j .. 16j+15]: lanes 2j and 2j+1 hold those 16 (V = 8) */
        int other = __shfl_down_sync(FULL_MASK, sum, 1);
        if ((lane & 1) == 0) ((int16_t *)(blk + offsetof_i(act_q8_K, bsums)))[lane >> 1] = (int16_t)(sum + other);
    }
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, s);
    if (lane == 0) {
        *(float *)blk = d;
        if (fmt == ACT_Q8_1 || fmt == ACT_Q8_2)
            *(float *)(blk + offsetof_i(act_q8_1, s)) = __fmul_rn(d, __int2float_rn(sum));
    }
}

template <int B>
static __device__ __forceinline__ void act_quant_block(const float *__restrict__ xb, uint8_t *__restrict__ blk, int fmt) {
    const int V = B / 32;
    int lane = threadIdx.x & 31;
    float v[V];
#pragma unroll
    for (int i = 0; i < V; i++) v[i] = xb[lane * V + i];
    act_quant_block_regs<B>(v, blk, fmt);
}

/* Quantize a whole row of n values (n % B == 0) with the warps of the calling CTA. */
static __device__ __forceinline__ void act_quant_row_cta(const float *x, int64_t n, uint8_t *dst, int fmt) {
    int warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    /* act_blck_q(fmt), written out (inlined early, as the literals were: the same code) */
    int B = fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : fmt == ACT_Q8_K ? afmt<ACT_Q8_K>::blck : afmt<ACT_Q8_0>::blck;
    size_t bb = act_block_bytes_dev(fmt);
    for (int64_t bi = warp; bi < n / B; bi += nw) {
        if (B == 32) act_quant_block<32>(x + bi * 32, dst + bi * bb, fmt);
        else if (B == 64) act_quant_block<64>(x + bi * 64, dst + bi * bb, fmt);
        else act_quant_block<256>(x + bi * 256, dst + bi * bb, fmt);
    }
}
#endif
