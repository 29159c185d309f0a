/* The kq matvec steps of matvec.cu's one-column kernels (matvec_kq1 / kqp / kqs): a row's weight words
 * loaded a step ahead of their decode, the activation row (and for the IQ formats the codebook and sign
 * masks) in shared memory. (moe.cu's grouped gate/up took them in a variant measured slower and deleted:
 * docs/KERNELS.md, "Variants deleted".) Included by .cu files only. */
#ifndef STRATA_KQ_ROW_CUH
#define STRATA_KQ_ROW_CUH
#include "matvec_row.cuh"
#include "decode_fast.cuh"
extern "C" {
#include "quant/q6p.h"
}

/* STRATA_CUDA_MV_KQ (cuda_matvec_set_kq): Q4_K / Q5_K (and, in matvec_kqp_kernel, Q6_K) rows at T = 1
 * without the cooperative kernel's per-step latency chain. Why (docs/BENCHMARKS.md, 2026-12-05 19:31 session, ncu of
 * matvec_kernel<Q4_K, 1, 8>): 198 warp instructions a step of 4 blocks, every step's loads issued
 * only after the step before had finished (its `if (b < nb)` regions), long scoreboard the top
 * stall. Here:
 *   - the CTA copies the activation row (nb act_q8_K blocks) into shared memory once, split by
 *     field (qs 16-byte aligned, d, bsums), so a part reads its 32 activation bytes with two
 *     16-byte shared loads instead of eight 4-byte global loads and 64-bit address arithmetic;
 *   - a warp loads the weights of STEPS steps (G = 32 / TPB blocks each) before it computes any,
 *     block indices clamped to the row (no branch around a load), so STEPS x G blocks of the row
 *     are in flight at once;
 *   - the block's 6-bit scales and mins come from the header words by masks (no branch per part);
 *     with TPB = 4 a lane's first part is always a low sub-block pair and its second a high one.
 * The sums are the cooperative kernel's: S and M are exact integers however the parts are split
 * (xor shuffles over the TPB lanes), p_b is coop_final's formula on the same d, dmin (the header's
 * first word) and activation d, and p_b goes to lane b % 32 in increasing b, then
 * warp_canon_finish: row_dot_coop's bits (test_gpu_matvec compares both with the CPU reference).
 *
 * IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S (STRATA_CUDA_MV_KQI):
 * 8 lanes a block, lane k the 32 weights of the cooperative part k (sub-blocks 2k, 2k + 1: coop_part_fast's
 * df_iq2xxs_part / df_iq3xxs_part / df_iq2xs_part / df_iq3s_part). The blocks' bytes are 2-aligned only
 * (66 / 98 / 74 / 110-byte blocks), so a lane loads the aligned words around its runs (the grid indices,
 * the signs words, the word holding d; a 16-bit load for a run's last half, so no byte past the block is
 * read) and joins them by funnel shifts at decode time; the codebook and sign masks are copied into shared
 * memory before the dependent-launch wait. The part's integer sum is m0 S_2k + m1 S_2k+1 (coop's), the
 * block's sum by xor shuffles, then bp_iq_k's float formula: the cooperative kernel's bits. */
/* KQ_Q6P: Q6_K rows in planes (src/quant/q6p.h: ql | qh | scales | d of the row's blocks, each plane
 * 16-byte aligned; STRATA_Q6_PLANAR's copy of the output head), a tag of matvec_kqp_kernel alone (no
 * strata_type has this number) */
#define KQ_Q6P 1006
/* the formats with kq steps; TPB, lanes a block (Q6_K and the IQ formats 8: one part a lane) */
template <int FMT> struct kq_fmt {
    enum {
        iq = FMT == TYPE_IQ2_XXS || FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ2_XS || FMT == TYPE_IQ3_S,
        ok = FMT == TYPE_Q4_K || FMT == TYPE_Q5_K || FMT == TYPE_Q6_K || FMT == KQ_Q6P || iq,
        tpb = FMT == TYPE_Q4_K || FMT == TYPE_Q5_K ? 4 : 8
    };
};
/* a block's bytes in a row (KQ_Q6P: none, its planes are addressed by the row's block count) */
template <int FMT> static __host__ __device__ constexpr int kq_bsize() {
    if constexpr (FMT == KQ_Q6P) return 0;
    else return wfmt<FMT>::bsize;
}
#define MV_KQ_MAXNB 160      /* nb * 292 bytes of shared memory under 48 KiB */
#define MV_KQ_MAXNB_IQ 144   /* the same with the IQ tables (at most 6 KiB) */
/* shared memory: the activation row by fields (qs nb x 64 words, 16-byte aligned; d nb floats; bsums
 * nb x 8 words, not copied for the IQ formats), then (IQ) the sign masks in 2 KiB (d_ksm's 128 x 8 bytes,
 * IQ3_S d_bsm's 256 x 8) and the grid (IQ3_XXS 256 words, IQ2_XXS 256 x 8 bytes, IQ2_XS 512 x 8, IQ3_S
 * 512 words) */
struct kq_smem {
    uint32_t *sq;
    float *sd;
    uint32_t *sb;
    uint64_t *tk;
    uint32_t *tg;
};
static __host__ __device__ __forceinline__ size_t kq_tab_off(int nb) { return ((size_t)nb * 292 + 15) & ~(size_t)15; }
template <int FMT> static __host__ __device__ __forceinline__ size_t kq_shm_bytes(int nb) {
    constexpr size_t grid = FMT == TYPE_IQ3_XXS ? 1024 : FMT == TYPE_IQ2_XS ? 4096 : 2048;
    return kq_fmt<FMT>::iq ? kq_tab_off(nb) + 2048 + grid : (size_t)nb * 292;
}
static __device__ __forceinline__ kq_smem kq_smem_of(uint8_t *sm, int nb) {
    kq_smem s;
    s.sq = (uint32_t *)sm;
    s.sd = (float *)(sm + (size_t)nb * 256);
    s.sb = (uint32_t *)(sm + (size_t)nb * 260);
    s.tk = (uint64_t *)(sm + kq_tab_off(nb));
    s.tg = (uint32_t *)(sm + kq_tab_off(nb) + 2048);
    return s;
}
/* the IQ tables into shared memory (constant: before the dependent-launch wait; the barrier after the
 * activation copy orders them) */
template <int FMT, int SA = 0> static __device__ __forceinline__ void kq_tab_fill(const kq_smem &s) {
    if constexpr (kq_fmt<FMT>::iq) {
        if constexpr (SA) {   /* the sign masks by ALU (df_signs8's alu): no table */
        } else if constexpr (FMT == TYPE_IQ3_S)
            for (int i = threadIdx.x; i < 256; i += blockDim.x) s.tk[i] = d_bsm[i];
        else
            for (int i = threadIdx.x; i < 128; i += blockDim.x) s.tk[i] = d_ksm[i];
        constexpr int words = FMT == TYPE_IQ3_XXS ? 256 : FMT == TYPE_IQ2_XS ? 1024 : 512;
        const uint32_t *g = FMT == TYPE_IQ3_XXS ? (const uint32_t *)d_iq3xxs_grid
                          : FMT == TYPE_IQ2_XXS ? (const uint32_t *)d_iq2xxs_grid
                          : FMT == TYPE_IQ2_XS  ? (const uint32_t *)d_iq2xs_grid : (const uint32_t *)d_iq3s_grid;
        for (int i = threadIdx.x; i < words; i += blockDim.x) s.tg[i] = g[i];
    }
}
/* a one-wave grid's walk over `rows` rows: warp gw takes rows gw, gw + nw, ..., my_rows of them;
 * row(rl) clamps to its last (the lookahead past the end loads that row again) */
struct kq_walk {
    int nw, gw, my_rows, last;
    __device__ __forceinline__ int row(int rl) const {
        const int r = gw + rl * nw;
        return r < last ? r : last;
    }
};
static __device__ __forceinline__ kq_walk kq_walk_of(int rows) {
    kq_walk w;
    w.nw = gridDim.x * MV_WARPS;
    w.gw = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    w.my_rows = w.gw < rows ? (rows - 1 - w.gw) / w.nw + 1 : 0;
    w.last = w.gw + (w.my_rows > 0 ? w.my_rows - 1 : 0) * w.nw;
    return w;
}
static __device__ __forceinline__ int kq_dot16(uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint4 a) {
    return __dp4a((int)w3, (int)a.w, __dp4a((int)w2, (int)a.z, __dp4a((int)w1, (int)a.y, __dp4a((int)w0, (int)a.x, 0))));
}
/* One step's weights (G = 32 / TPB blocks of a row, this lane's parts): the block header (d | dmin |
 * scales), the lane's qs words and (Q5_K) its qh words */
template <int FMT, int TPB> struct kq_step {
    uint4 hd, qv[8 / TPB], hv;
};
/* Q6_K (TPB = 8, matvec_kqp_kernel only): part k's ql and qh runs (16 bytes each, at a block
 * offset that is 0 or 2 mod 4: 210-byte blocks) as the five aligned words from the one at or below
 * each, joined by funnel shifts once they have arrived (decode_fast.h's df_ld128_a2 in two halves: the
 * loads here, the join in kq_step_p, so a step's words are in flight during the step before); the
 * part's two scale bytes; d */
template <int TPB> struct kq_step<TYPE_Q6_K, TPB> {
    uint32_t x[5], y[5];
    int scA, scB;
    uint32_t d, mis;
};
/* KQ_Q6P (TPB = 8): part k's 16 ql bytes and 16 qh bytes as one 16-byte load each, its block's 8
 * scales of its half (bytes 8 (k / 4) .. + 7: sA and sA + 4 among them) as one 8-byte load, d */
template <int TPB> struct kq_step<KQ_Q6P, TPB> {
    uint4 l, h;
    uint2 sc;
    uint32_t d;
};
/* IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S (TPB = 8): the aligned words around the lane's run of 8 bytes at
 * 2 + 8k (the grid indices; IQ2_XXS's with its signs | scale word: x[0..2], the last a 16-bit load),
 * IQ3_XXS's signs | scale run and IQ3_S's sign bytes (y[0..1]), the word holding d; IQ2_XS's scale byte,
 * IQ3_S's qh byte and scale byte; mis = 2 where the runs start 2 bytes into a word (the join's shift;
 * every run of these blocks sits at 2 mod 4 from the block's start) */
template <int TPB> struct kq_step<TYPE_IQ3_XXS, TPB> {
    uint32_t x[3], y[2], dw, mis;
};
template <int TPB> struct kq_step<TYPE_IQ2_XXS, TPB> {
    uint32_t x[3], dw, mis;
};
template <int TPB> struct kq_step<TYPE_IQ2_XS, TPB> {
    uint32_t x[3], dw, mis, sc;
};
template <int TPB> struct kq_step<TYPE_IQ3_S, TPB> {
    uint32_t x[3], y[2], dw, mis, qh, sc;
};
/* the step at block base of row wr: block base + lane / TPB, clamped to the row (no branch) */
template <int FMT, int TPB>
static __device__ __forceinline__ void kq_load(kq_step<FMT, TPB> &w, const uint8_t *__restrict__ wr, int base, int nb) {
    constexpr int Q5 = FMT == TYPE_Q5_K, BS = kq_bsize<FMT>(), U = 8 / TPB;
    constexpr int QOFF = Q5 ? (int)offsetof_i(block_q5_K, qs) : (int)offsetof_i(block_q4_K, qs);
    const int lane = threadIdx.x & 31, k = lane % TPB, h = k & 1;
    int b = base + lane / TPB;
    b = b < nb ? b : nb - 1;
    const uint8_t *blk = wr + (size_t)b * BS;
    if constexpr (kq_fmt<FMT>::iq) {
        /* the runs at 2 + 8k (both formats) and 2 + 64 + 4k (IQ3_XXS's signs | scale): mis is their
         * offset in a word; the block (even) starts at 2 - mis of one; a run's last half by a 16-bit load */
        const uint8_t *q = blk + 2 + 8 * k;
        const uint32_t mis = (uint32_t)(uintptr_t)q & 2u;
        const uint32_t *xq = (const uint32_t *)(q - mis);
        w.x[0] = xq[0];
        w.x[1] = xq[1];
        w.x[2] = mis ? (uint32_t)*(const uint16_t *)(xq + 2) : 0u;
        if constexpr (FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ3_S) {
            constexpr int SOFF = FMT == TYPE_IQ3_XXS ? 2 + QK_K / 4 : (int)offsetof_i(block_iq3_s, signs);
            const uint32_t *xs = (const uint32_t *)(blk + SOFF + 4 * k - mis);
            w.y[0] = xs[0];
            w.y[1] = mis ? (uint32_t)*(const uint16_t *)(xs + 1) : 0u;
        }
        if constexpr (FMT == TYPE_IQ2_XS) w.sc = blk[offsetof_i(block_iq2_xs, scales) + k];
        if constexpr (FMT == TYPE_IQ3_S) {
            w.qh = blk[offsetof_i(block_iq3_s, qh) + k];
            w.sc = blk[offsetof_i(block_iq3_s, scales) + k / 2];
        }
        w.dw = *(const uint32_t *)(blk - (mis ^ 2u));
        w.mis = mis;
        (void)U; (void)QOFF; (void)h;
    } else if constexpr (FMT == TYPE_Q6_K) {
        /* the runs end at byte 128 (ql; qh follows) and 192 (qh; the scales follow): the fifth word
         * stays in the block; a block at 2 mod 4 is not an allocation's first byte (256-aligned) */
        const int half = k >> 2, q = k & 3, sA = 8 * half + q;
        const uint32_t mis = (uint32_t)(uintptr_t)blk & 2u;
        const uint32_t *xl = (const uint32_t *)(blk - mis + offsetof_i(block_q6_K, ql) + 64 * half + 16 * q);
        const uint32_t *xh = (const uint32_t *)(blk - mis + offsetof_i(block_q6_K, qh) + 32 * half + 16 * (q & 1));
#pragma unroll
        for (int i = 0; i < 5; i++) { w.x[i] = xl[i]; w.y[i] = xh[i]; }
        w.scA = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sA];
        w.scB = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sA + 4];
        w.d = ld_u16(blk + offsetof_i(block_q6_K, d));
        w.mis = mis;
        (void)U; (void)QOFF; (void)h;
    } else if constexpr (FMT == KQ_Q6P) {
        /* the planes of a row of nb blocks (q6p.h): ql at 128 b, qh at 128 nb + 64 b, scales at 192 nb + 16 b,
         * d at 208 nb + 2 b; the row starts 16-byte aligned (q6p_row_bytes), so are the two runs */
        w.l = *(const uint4 *)(wr + q6p_part_ql(nb, b, k));
        w.h = *(const uint4 *)(wr + q6p_part_qh(nb, b, k));
        w.sc = *(const uint2 *)(wr + q6p_part_sc(nb, b, k));
        w.d = *(const uint16_t *)(wr + q6p_d(nb, b));
        (void)U; (void)QOFF; (void)h; (void)blk;
    } else {
        w.hd = *(const uint4 *)blk;
#pragma unroll
        for (int i = 0; i < U; i++) w.qv[i] = *(const uint4 *)(blk + QOFF + 32 * ((k + TPB * i) >> 1) + 16 * h);
        if (Q5) w.hv = *(const uint4 *)(blk + offsetof_i(block_q5_K, qh) + 16 * h);
        else w.hv = make_uint4(0, 0, 0, 0);
    }
}
/* the block partial p_b of this lane's block b (bc: b clamped to the row) from its group's TPB lanes:
 * the parts' exact integer sums, added over the group by xor shuffles, then coop_final's formula */
template <int FMT, int TPB, int SA = 0>
static __device__ __forceinline__ float kq_step_p(const kq_step<FMT, TPB> &w, int bc, const kq_smem &s) {
    const uint32_t *sq = s.sq, *sb = s.sb;
    const float *sd = s.sd;
    constexpr int Q5 = FMT == TYPE_Q5_K, U = 8 / TPB;
    const int lane = threadIdx.x & 31, k = lane % TPB, h = k & 1;
    if constexpr (kq_fmt<FMT>::iq) {
        const uint32_t sh = 8 * w.mis;
        const uint32_t i0 = __funnelshift_r(w.x[0], w.x[1], sh), i1 = __funnelshift_r(w.x[1], w.x[2], sh);
        uint32_t v[8];
        int m, m1;
        if constexpr (FMT == TYPE_IQ3_XXS) {   /* df_iq3xxs_part: i0, i1 the 8 grid indices, a signs | scale */
            const uint32_t a = __funnelshift_r(w.y[0], w.y[1], sh);
            m = m1 = 2 * (int)(a >> 28) + 1;
#pragma unroll
            for (int l = 0; l < 4; l++) {
                const uint32_t ix = l < 2 ? i0 : i1, s2 = 16 * (l & 1);
                df_signs8(s.tg[(ix >> s2) & 255], s.tg[(ix >> (s2 + 8)) & 255], (a >> (7 * l)) & 127, SA, 0, s.tk,
                          v + 2 * l);
            }
        } else if constexpr (FMT == TYPE_IQ3_S) {   /* df_iq3s_part: index bit 8 from qh, a sign byte per 8 */
            const uint32_t a = __funnelshift_r(w.y[0], w.y[1], sh);
            m = m1 = 2 * (int)((w.sc >> (4 * (k & 1))) & 15) + 1;
#pragma unroll
            for (int l = 0; l < 4; l++) {
                const uint32_t ix = l < 2 ? i0 : i1, s2 = 16 * (l & 1);
                const uint32_t ia = ((ix >> s2) & 255) | ((w.qh >> (2 * l)) & 1) << 8;
                const uint32_t ib = ((ix >> (s2 + 8)) & 255) | ((w.qh >> (2 * l + 1)) & 1) << 8;
                df_signs8(s.tg[ia], s.tg[ib], (a >> (8 * l)) & 255, SA, 1, s.tk, v + 2 * l);
            }
        } else if constexpr (FMT == TYPE_IQ2_XS) {   /* df_iq2xs_part: 4 u16 of a 9-bit index and a 7-bit sign index */
            m = 2 * (int)(w.sc & 15) + 1;
            m1 = 2 * (int)(w.sc >> 4) + 1;
#pragma unroll
            for (int l = 0; l < 4; l++) {
                const uint32_t vv = ((l < 2 ? i0 : i1) >> (16 * (l & 1))) & 0xFFFFu;
                const uint2 gr = ((const uint2 *)s.tg)[vv & 511];
                df_signs8(gr.x, gr.y, vv >> 9, SA, 0, s.tk, v + 2 * l);
            }
        } else {   /* df_iq2xxs_part: i0 the 4 grid indices, i1 signs | scale */
            m = m1 = 2 * (int)(i1 >> 28) + 1;
#pragma unroll
            for (int l = 0; l < 4; l++) {
                const uint2 gr = ((const uint2 *)s.tg)[(i0 >> (8 * l)) & 255];
                df_signs8(gr.x, gr.y, (i1 >> (7 * l)) & 127, SA, 0, s.tk, v + 2 * l);
            }
        }
        const uint4 a0 = *(const uint4 *)(sq + bc * 64 + 8 * k), a1 = *(const uint4 *)(sq + bc * 64 + 8 * k + 4);
        int S = m * kq_dot16(v[0], v[1], v[2], v[3], a0) + m1 * kq_dot16(v[4], v[5], v[6], v[7], a1);
#pragma unroll
        for (int o = TPB / 2; o >= 1; o >>= 1) S += __shfl_xor_sync(FULL_MASK, S, o);
        const float dw = h2f((uint16_t)(w.mis ? w.dw : w.dw >> 16));
        (void)sb; (void)h;
        return __fmul_rn(__fmul_rn(__int2float_rn(S), iq_fmt<FMT>::k()), __fmul_rn(dw, sd[bc]));
    } else if constexpr (FMT == TYPE_Q6_K) {
        /* coop_part's Q6_K part k: sub-blocks sA = 8 (k / 4) + k % 4 (low nibbles) and sA + 4 (high) */
        const int half = k >> 2, q = k & 3, sA = 8 * half + q, hs = 2 * (q >> 1);
        const uint32_t sh = 8 * w.mis;
        uint32_t wa[4], wb[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t l = __funnelshift_r(w.x[i], w.x[i + 1], sh), hh = __funnelshift_r(w.y[i], w.y[i + 1], sh);
            wa[i] = __vsub4((l & 0x0F0F0F0Fu) | ((hh >> hs) & 0x03030303u) << 4, 0x20202020u);
            wb[i] = __vsub4(((l >> 4) & 0x0F0F0F0Fu) | ((hh >> (hs + 4)) & 0x03030303u) << 4, 0x20202020u);
        }
        const uint4 a0 = *(const uint4 *)(sq + bc * 64 + 4 * sA), a1 = *(const uint4 *)(sq + bc * 64 + 4 * (sA + 4));
        int S = w.scA * kq_dot16(wa[0], wa[1], wa[2], wa[3], a0) + w.scB * kq_dot16(wb[0], wb[1], wb[2], wb[3], a1);
#pragma unroll
        for (int o = TPB / 2; o >= 1; o >>= 1) S += __shfl_xor_sync(FULL_MASK, S, o);
        (void)sb; (void)h;
        return __fmul_rn(__int2float_rn(S), __fmul_rn(h2f((uint16_t)w.d), sd[bc]));
    } else if constexpr (FMT == KQ_Q6P) {
        /* the Q6_K branch's part k on aligned words: the same codes, q - 32 as (q + 0x60) ^ 0x80 per byte
         * (STRATA_Q6_SWAR's form: q + 0x60 <= 0x9F, no carry; the same bytes as __vsub4), the same sums */
        const int half = k >> 2, q = k & 3, sA = 8 * half + q, hs = 2 * (q >> 1);
        const uint32_t lw[4] = { w.l.x, w.l.y, w.l.z, w.l.w }, hw[4] = { w.h.x, w.h.y, w.h.z, w.h.w };
        uint32_t wa[4], wb[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            wa[i] = (((lw[i] & 0x0F0F0F0Fu) | ((hw[i] >> hs) & 0x03030303u) << 4) + 0x60606060u) ^ 0x80808080u;
            wb[i] = ((((lw[i] >> 4) & 0x0F0F0F0Fu) | ((hw[i] >> (hs + 4)) & 0x03030303u) << 4) + 0x60606060u) ^ 0x80808080u;
        }
        const int scA = (int)(int8_t)(w.sc.x >> (8 * q)), scB = (int)(int8_t)(w.sc.y >> (8 * q));
        const uint4 a0 = *(const uint4 *)(sq + bc * 64 + 4 * sA), a1 = *(const uint4 *)(sq + bc * 64 + 4 * (sA + 4));
        int S = scA * kq_dot16(wa[0], wa[1], wa[2], wa[3], a0) + scB * kq_dot16(wb[0], wb[1], wb[2], wb[3], a1);
#pragma unroll
        for (int o = TPB / 2; o >= 1; o >>= 1) S += __shfl_xor_sync(FULL_MASK, S, o);
        (void)sb; (void)h;
        return __fmul_rn(__int2float_rn(S), __fmul_rn(h2f((uint16_t)w.d), sd[bc]));
    } else {
        const uint32_t Y = w.hd.y, Z = w.hd.z, Wd = w.hd.w;
        /* the 6-bit scales / mins of sub-blocks 0..3 (low) and 4..7 (high), one byte each
         * (kq_scale_min's layout); part j takes sub-blocks 2j, 2j + 1 */
        const uint32_t scl = Y & 0x3f3f3f3fu, mnl = Z & 0x3f3f3f3fu;
        const uint32_t sch = (Wd & 0x0f0f0f0fu) | ((Y >> 2) & 0x30303030u),
                       mnh = ((Wd >> 4) & 0x0f0f0f0fu) | ((Z >> 2) & 0x30303030u);
        int S = 0, M = 0;
#pragma unroll
        for (int i = 0; i < U; i++) {
            const int j = (k + TPB * i) >> 1;
            const bool low = TPB == 4 ? i == 0 : j < 2;
            const uint32_t scw = low ? scl : sch, mw = low ? mnl : mnh;
            const int sh = 16 * (j & 1);
            const int scA = (scw >> sh) & 0xff, scB = (scw >> (sh + 8)) & 0xff;
            const int mA = (mw >> sh) & 0xff, mB = (mw >> (sh + 8)) & 0xff;
            const uint4 q = w.qv[i];
            uint32_t lo0 = q.x & 0x0f0f0f0fu, lo1 = q.y & 0x0f0f0f0fu, lo2 = q.z & 0x0f0f0f0fu, lo3 = q.w & 0x0f0f0f0fu;
            uint32_t hi0 = (q.x >> 4) & 0x0f0f0f0fu, hi1 = (q.y >> 4) & 0x0f0f0f0fu, hi2 = (q.z >> 4) & 0x0f0f0f0fu,
                     hi3 = (q.w >> 4) & 0x0f0f0f0fu;
            if (Q5) {
                const uint4 hb = w.hv;
                lo0 |= ((hb.x >> (2 * j)) & 0x01010101u) << 4; hi0 |= ((hb.x >> (2 * j + 1)) & 0x01010101u) << 4;
                lo1 |= ((hb.y >> (2 * j)) & 0x01010101u) << 4; hi1 |= ((hb.y >> (2 * j + 1)) & 0x01010101u) << 4;
                lo2 |= ((hb.z >> (2 * j)) & 0x01010101u) << 4; hi2 |= ((hb.z >> (2 * j + 1)) & 0x01010101u) << 4;
                lo3 |= ((hb.w >> (2 * j)) & 0x01010101u) << 4; hi3 |= ((hb.w >> (2 * j + 1)) & 0x01010101u) << 4;
            }
            const uint32_t *aq = sq + bc * 64 + 16 * j + 4 * h;   /* qs bytes 64 j + 16 h, + 32 */
            const uint4 al = *(const uint4 *)aq, ah = *(const uint4 *)(aq + 8);
            S += scA * kq_dot16(lo0, lo1, lo2, lo3, al) + scB * kq_dot16(hi0, hi1, hi2, hi3, ah);
            const int16_t *bs = (const int16_t *)(sb + bc * 8);
            M += mA * (int)bs[4 * j + h] + mB * (int)bs[4 * j + 2 + h];
        }
#pragma unroll
        for (int o = TPB / 2; o >= 1; o >>= 1) {
            S += __shfl_xor_sync(FULL_MASK, S, o);
            M += __shfl_xor_sync(FULL_MASK, M, o);
        }
        const float dw = h2f((uint16_t)w.hd.x), dmw = h2f((uint16_t)(w.hd.x >> 16)), ad = sd[bc];
        return __fsub_rn(__fmul_rn(__int2float_rn(S), __fmul_rn(dw, ad)), __fmul_rn(__int2float_rn(M), __fmul_rn(dmw, ad)));
    }
}
/* the step's block partials, each added by its lane (b % 32) into acc: row_dot_coop's operations */
template <int FMT, int TPB, int SA = 0>
static __device__ __forceinline__ void kq_step_add(const kq_step<FMT, TPB> &w, int b0, int nb, const kq_smem &s, float &acc) {
    constexpr int G = 32 / TPB;
    const int lane = threadIdx.x & 31, b = b0 + lane / TPB;
    const float p = kq_step_p<FMT, TPB, SA>(w, b < nb ? b : nb - 1, s);
    /* block b0 + gs belongs to lane (b0 % 32) + gs: row_dot_coop's hand-over */
    const int gs = lane - (b0 & 31);
    const bool mine = gs >= 0 && gs < G && b0 + gs < nb;
    const float v = __shfl_sync(FULL_MASK, p, (gs & (G - 1)) * TPB);
    if (mine) acc = __fadd_rn(acc, v);
}
/* the activation row (nb act_q8_K blocks: d | qs[256] | bsums[16], 73 words) into shared memory by
 * fields: qs nb x 64 words (16-byte aligned), d nb floats, bsums nb x 8 words; the CTA's threads */
template <int FMT, int NT>
static __device__ __forceinline__ void kq_act_copy(const uint8_t *__restrict__ act, int nb, const kq_smem &s) {
    const uint32_t *a32 = (const uint32_t *)act;
    for (int w = threadIdx.x; w < nb * 64; w += NT) s.sq[w] = a32[(w >> 6) * 73 + 1 + (w & 63)];
    for (int w = threadIdx.x; w < nb; w += NT) ((uint32_t *)s.sd)[w] = a32[w * 73];
    if constexpr (!kq_fmt<FMT>::iq)   /* the IQ formats have no mins */
        for (int w = threadIdx.x; w < nb * 8; w += NT) s.sb[w] = a32[(w >> 3) * 73 + 65 + (w & 7)];
}
/* one row's canonical dot (lane 0's value) against the activation row in shared memory: STEPS
 * steps' weights loaded, then computed */
template <int FMT, int TPB, int STEPS, int SA = 0>
static __device__ __forceinline__ float kq1_row(const uint8_t *__restrict__ wr, int nb, const kq_smem &s) {
    constexpr int G = 32 / TPB;
    float acc = 0.0f;
    for (int base = 0; base < nb; base += G * STEPS) {
        kq_step<FMT, TPB> w[STEPS];
#pragma unroll
        for (int i = 0; i < STEPS; i++) kq_load<FMT, TPB>(w[i], wr, base + i * G, nb);
#pragma unroll
        for (int i = 0; i < STEPS; i++) kq_step_add<FMT, TPB, SA>(w[i], base + i * G, nb, s, acc);
    }
    return warp_canon_finish<MV_WARPS>(acc, nb);
}

/* The paired walk of matvec_kqs_kernel: rows of two matrices (a gate/up
 * pair) whose row rl starts at byte off(rl) of both W0 and W1; a step loads the gate's and the up's
 * weights of the same blocks, the next paired step's loads issued before the current one is computed;
 * the two rows' lane sums are finished side by side (warp_canon_finish_n<2>), each row keeping kq1_row's
 * operations and bits; store(rl, gate, up) by every lane */
template <int FMT, int SA, class OFF, class STORE>
static __device__ __forceinline__ void kq_pairs(const uint8_t *W0, const uint8_t *W1, int nb, const kq_smem &s, int my_rows,
                                                const uint8_t *act, OFF off_of, STORE store) {
    constexpr int TPB = kq_fmt<FMT>::tpb, G = 32 / TPB;
    const int nit = (nb + G - 1) / G;
    kq_step<FMT, TPB> cg, cu, ng, nu;
    size_t off = my_rows > 0 ? off_of(0) : 0;   /* a warp past the rows reads no row record */
    if (my_rows > 0) {
        kq_load<FMT, TPB>(cg, W0 + off, 0, nb);
        kq_load<FMT, TPB>(cu, W1 + off, 0, nb);
    }
    kq_act_copy<FMT, MV_WARPS * 32>(act, nb, s);
    __syncthreads();
    float acc[2] = { 0.0f, 0.0f };
    int rl = 0, it = 0;
    while (rl < my_rows) {
        int nrl = rl, ni = it + 1;
        if (ni == nit) { ni = 0; nrl++; }
        const size_t noff = ni == 0 ? off_of(nrl) : off;
        kq_load<FMT, TPB>(ng, W0 + noff, G * ni, nb);   /* past the last step: the last row again */
        kq_load<FMT, TPB>(nu, W1 + noff, G * ni, nb);
        kq_step_add<FMT, TPB, SA>(cg, G * it, nb, s, acc[0]);
        kq_step_add<FMT, TPB, SA>(cu, G * it, nb, s, acc[1]);
        if (it == nit - 1) {
            warp_canon_finish_n<2, MV_WARPS>(acc, nb);
            store(rl, acc[0], acc[1]);
            acc[0] = 0.0f; acc[1] = 0.0f;
        }
        cg = ng; cu = nu;
        off = noff;
        rl = nrl; it = ni;
    }
}

#endif
