/* R4 rows (src/quant/r4.h) in the T = 1 expert kernels (STRATA_CUDA_MOE_R4, moe.cu's DF_R4): the
 * IQ2_XXS / IQ3_XXS experts' copy with one 4-bit code a weight, code = (negative << 3) | index of
 * the magnitude in the format's 8 levels.
 *
 * A sub-block of 32 weights is 16 code bytes (one 16-byte load) against 32 activation bytes. Each
 * 32-bit code word holds 8 weights, nibble n = weight n; its low and high 16 bits are prmt selectors
 * for 4 weights each over the 8 level bytes {lo, hi}. prmt's selector nibble is 3 index bits and a
 * "replicate the sign" bit: with the code as the selector a negative weight's byte becomes the sign
 * of a level byte, 0 (levels are below 128), and with the sign bits flipped (code ^ 0x8888) a
 * positive weight's does. So
 *     pos = prmt(lo, hi, code)            the positive weights' magnitudes, 0 elsewhere
 *     neg = prmt(lo, hi, code ^ 0x8888)   the negative weights' magnitudes, 0 elsewhere
 *     sum = dp4a(pos, a) - dp4a(neg, a)   (exact integers)
 * 11 instructions a code word by a count of the source (two shifts, a xor, 4 prmt, 4 dp4a) where the grid decode of a
 * 4-weight word took ~31. The block partial is the format's (coop_final's operations): the same
 * integers S, so the same p_b, the same lane order, the same bits (tests: test_r4 on the CPU,
 * test_gpu_variants's R4 parity on the GPU). */
#ifndef STRATA_R4_CUH
#define STRATA_R4_CUH
#include "cuda_common.cuh"
#include "formats.cuh"

template <int FMT> struct r4_fmt { enum { ok = 0 }; };
/* levels {4, 12, 20, 28 | 36, 44, 52, 62} and {8, 25, 43}: r4_levels (src/quant/r4.c), little-endian words */
template <> struct r4_fmt<TYPE_IQ3_XXS> {
    enum { ok = 1 };
    static constexpr uint32_t lo = 0x1c140c04u, hi = 0x3e342c24u;
    static __device__ __forceinline__ float k() { return 0.25f; }
};
template <> struct r4_fmt<TYPE_IQ2_XXS> {
    enum { ok = 1 };
    static constexpr uint32_t lo = 0x002b1908u, hi = 0u;
    static __device__ __forceinline__ float k() { return 0.125f; }
};

static __device__ __forceinline__ uint32_t r4_prmt(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t d;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));   /* the generic form: the replicate bit kept */
    return d;
}

/* sum_i w_i a_i over a sub-block: 16 code bytes q against the 8 activation words a */
template <int FMT>
static __device__ __forceinline__ int r4_sub(const uint4 q, const int *a) {
    const uint32_t w[4] = { q.x, q.y, q.z, q.w };
    int sp = 0, sn = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t c = w[i], cx = c ^ 0x88888888u;
        sp = __dp4a((int)r4_prmt(r4_fmt<FMT>::lo, r4_fmt<FMT>::hi, c), a[2 * i], sp);
        sn = __dp4a((int)r4_prmt(r4_fmt<FMT>::lo, r4_fmt<FMT>::hi, cx), a[2 * i], sn);
        sp = __dp4a((int)r4_prmt(r4_fmt<FMT>::lo, r4_fmt<FMT>::hi, c >> 16), a[2 * i + 1], sp);
        sn = __dp4a((int)r4_prmt(r4_fmt<FMT>::lo, r4_fmt<FMT>::hi, cx >> 16), a[2 * i + 1], sn);
    }
    return sp - sn;
}

/* lane k's share of super-block b of an R4 row of nb blocks: m_k * (sub-block k's sum) against act_q8_K block ab */
template <int FMT>
static __device__ __forceinline__ int r4_part(const uint8_t *__restrict__ row, int nb, int b, int k, const int *a) {
    const uint4 q = *(const uint4 *)(row + 128 * b + 16 * k);
    return (int)row[128 * nb + 8 * b + k] * r4_sub<FMT>(q, a);
}
static __device__ __forceinline__ void r4_act(const uint8_t *__restrict__ ab, int k, int *a) {
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = ld_i32(ab + 4 + 32 * k + 4 * i);   /* act_q8_K: d, then qs */
}
/* p_b from the block's integer sum S, the block's d and the activation block's d (coop_final's IQ expression) */
template <int FMT>
static __device__ __forceinline__ float r4_p(int S, float dw, float ad) {
    return __fmul_rn(__fmul_rn(__int2float_rn(S), r4_fmt<FMT>::k()), __fmul_rn(dw, ad));
}
static __device__ __forceinline__ float r4_d(const uint8_t *__restrict__ row, int nb, int b) { return h2f(ld_u16(row + 136 * nb + 2 * b)); }

/* R rows of nb super-blocks against one act_q8_K column by row_dot_coop's walk at TPB 8 (one column, no M term):
 * group g = lane / 8 takes block base + g, lane k = lane % 8 its sub-block k; the 8 shares' xor sum, p_b, p_b to
 * lane b % 32 in block order, the canonical finish: acc[r] in lane 0 is row r's canonical dot. The rows share the
 * activation words. blk: the rows' bytes (r4_rows): act(b, k, a) lane k's 8 activation words of block b,
 * part(r, b, k, a) lane k's integer share of row r's block b, dw(r, b) the block's d, ad(b) the activation block's d. */
template <int R, class B>
static __device__ __forceinline__ void r4_step(const B &blk, int base, int nb, float *acc) {
    const int lane = threadIdx.x & 31, g = lane >> 3, k = lane & 7, b = base + g;
    int S[R];
    float p[R];
#pragma unroll
    for (int r = 0; r < R; r++) { S[r] = 0; p[r] = 0.0f; }
    if (b < nb) {
        int a[8];
        blk.act(b, k, a);
#pragma unroll
        for (int r = 0; r < R; r++) S[r] = blk.part(r, b, k, a);
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int o = 4; o >= 1; o >>= 1) S[r] += __shfl_xor_sync(FULL_MASK, S[r], o);
    if (b < nb) {
        const float ad = blk.ad(b);
#pragma unroll
        for (int r = 0; r < R; r++) p[r] = r4_p<B::fmt>(S[r], blk.dw(r, b), ad);
    }
    const int gs = lane - (base & 31);
    const bool mine = gs >= 0 && gs < 4 && base + gs < nb;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const float v = __shfl_sync(FULL_MASK, p[r], (gs & 3) * 8);
        if (mine) acc[r] = __fadd_rn(acc[r], v);
    }
}
template <int R, int WARPS, class B>
static __device__ __forceinline__ void r4_walk(int nb, const B &blk, float *acc) {
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
#pragma unroll 2
    for (int base = 0; base < nb; base += 4) r4_step<R>(blk, base, nb, acc);
    warp_canon_finish_n<R, WARPS>(acc, nb);
}
/* the rows w[0..R) in global memory against the act_q8_K row act */
template <int FMT, int R>
struct r4_rows {
    static constexpr int fmt = FMT;
    const uint8_t *const *w;
    int nb;
    const uint8_t *x;   /* the act_q8_K row */
    __device__ __forceinline__ void act(int b, int k, int *a) const { r4_act(x + (size_t)b * sizeof_i(act_q8_K), k, a); }
    __device__ __forceinline__ int part(int r, int b, int k, const int *a) const { return r4_part<FMT>(w[r], nb, b, k, a); }
    __device__ __forceinline__ float dw(int r, int b) const { return r4_d(w[r], nb, b); }
    __device__ __forceinline__ float ad(int b) const { return ld_f32(x + (size_t)b * sizeof_i(act_q8_K)); }
};
template <int FMT, int R, int WARPS>
static __device__ __forceinline__ void r4_rows_dot(const uint8_t *const *w, int nb, const uint8_t *__restrict__ act, float *acc) {
    const r4_rows<FMT, R> blk = { w, nb, act };
    r4_walk<R, WARPS>(nb, blk, acc);
}

/* The down kernel's 4 rows a warp on the R4 copy (grp4_walk, kquant_coop.cuh): row g of the 4 at base + g
 * row_bytes by lane group g, lane k on sub-block k of every super-block of its row. */
template <int FMT>
struct r4_grp {
    const uint8_t *row, *act;
    int nb;
    __device__ __forceinline__ int part(int b, int k) const {
        int a[8];
        r4_act(act + (size_t)b * sizeof_i(act_q8_K), k, a);
        return r4_part<FMT>(row, nb, b, k, a);
    }
    __device__ __forceinline__ float fin(int b, int S) const {
        return r4_p<FMT>(S, r4_d(row, nb, b), ld_f32(act + (size_t)b * sizeof_i(act_q8_K)));
    }
};
template <int FMT, int WARPS>
static __device__ __forceinline__ void r4_grp_dot(const uint8_t *__restrict__ base, size_t row_bytes, int nb,
                                                  const uint8_t *__restrict__ act, float (*acc)[1]) {
    const r4_grp<FMT> blk = { base + (size_t)((threadIdx.x & 31) >> 3) * row_bytes, act, nb };
    grp4_walk<WARPS>(nb, blk, acc);
}
#endif
