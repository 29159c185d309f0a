/* Cooperative super-block partials for the 256-weight formats (K-quants and IQ codebooks).
 *
 * Why: with one lane per super-block (matvec.cu's per-lane path) a 4096-wide row has only 16
 * blocks, so half the warp idles and each busy lane walks 256 weights serially: 10-20% of the
 * H200's bandwidth. Here 8 (or 4: TPB below) lanes share one super-block:
 *
 *   lane l of the warp: group g = l / 8 (block b = base + g, base = 0, 4, 8, ...),
 *                       part  k = l % 8 (32 of the 256 weights, layout-dependent, below).
 *
 * Each part forms its share of the block's exact integer sums (S = sum_s scale_s * dot_s,
 * M = sum_s min_s * bsum_s); the 8 shares are added with xor shuffles (integers: any order is
 * exact), and the block partial p_b follows with the SAME float formula as quant_blocks.cuh /
 * iq_blocks.cuh (so the same bits as the CPU reference). p_b is then shuffled to lane b % 32,
 * which adds it to its running sum in increasing b: the canonical lane order of
 * docs/KERNELS.md is unchanged, and warp_canon_finish ends the row as before.
 *
 * Part k -> weights (sub-blocks of 16 are numbered s = 0..15, of 32 are j = 0..7):
 *   Q4_K/Q5_K  j = k/2, h = k%2: the 16 qs bytes [32j + 16h, +16) (one 16-byte load) hold
 *              weights 16h.. of 32-sub-block 2j (low nibbles) and 2j+1 (high nibbles).
 *   Q6_K       half = k/4, q = k%4: ql bytes [64 half + 16q, +16), qh [32 half + 16(q%2), +16):
 *              sub-blocks 8 half + q (low nibbles) and 8 half + 4 + q (high nibbles).
 *   Q2_K/Q3_K  chunk c = k/2 (half = c/2, r = c%2): qs bytes [32 half + 16 r, +16) hold four
 *              crumbs per byte; this part takes crumbs 2(k%2) and 2(k%2)+1, i.e. sub-blocks
 *              8 half + 2 crumb + r.
 *   IQ         16-weight sub-blocks 2k and 2k+1 (iq_group8 / iq_mult of iq_blocks.cuh).
 * Activation reads are 4-byte (act_q8_K blocks are 4-aligned only: sizeof_i(act_q8_K) % 16 != 0). */
#ifndef STRATA_KQUANT_COOP_CUH
#define STRATA_KQUANT_COOP_CUH
#include "quant_blocks.cuh"
#include "iq_blocks.cuh"

/* ok: the format has a cooperative path; has_m: its partial has a min term (M). Block bytes
 * are wfmt<FMT>::bsize (formats.cuh). */
template <int FMT> struct coop_fmt { enum { ok = 0, has_m = 0 }; };
template <> struct coop_fmt<TYPE_Q2_K> { enum { ok = 1, has_m = 1 }; };
template <> struct coop_fmt<TYPE_Q3_K> { enum { ok = 1, has_m = 0 }; };
template <> struct coop_fmt<TYPE_Q4_K> { enum { ok = 1, has_m = 1 }; };
template <> struct coop_fmt<TYPE_Q5_K> { enum { ok = 1, has_m = 1 }; };
template <> struct coop_fmt<TYPE_Q6_K> { enum { ok = 1, has_m = 0 }; };
#define COOP_IQ(F) template <> struct coop_fmt<F> { enum { ok = 1, has_m = 0 }; };
COOP_IQ(TYPE_IQ2_XXS) COOP_IQ(TYPE_IQ2_XS) COOP_IQ(TYPE_IQ2_S) COOP_IQ(TYPE_IQ3_XXS) COOP_IQ(TYPE_IQ3_S)
COOP_IQ(TYPE_IQ1_S) COOP_IQ(TYPE_IQ1_M) COOP_IQ(TYPE_IQ4_XS)
#undef COOP_IQ
/* Q4_K / Q5_K: d | dmin | scales[12] are the block's first 16 bytes (one uint4 load) */
static_assert(offsetof_i(block_q4_K, scales) == 4 && offsetof_i(block_q4_K, qs) == 16 &&
              offsetof_i(block_q5_K, scales) == 4 &&
              offsetof_i(block_q5_K, qh) == 16, "Q4_K / Q5_K header: 16 bytes");

/* sum of dp4a of 4 weight words against 16 activation bytes at a (4-aligned) */
static __device__ __forceinline__ int dot16(const uint32_t *w, const uint8_t *a) {
    int s = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) s = __dp4a((int)w[i], ld_i32(a + 4 * i), s);
    return s;
}
static __device__ __forceinline__ int bsum16(const uint8_t *a, int i) {
    return (int)*(const int16_t *)(a + offsetof_i(act_q8_K, bsums) + 2 * i);
}
/* the decode variants' parts (they use dot16 above) */
#include "decode_fast.cuh"

/* Part k's integer shares S[t], M[t] of super-block blk against activation blocks a0 + t*as. */
template <int FMT, int TM>
static __device__ __forceinline__ void coop_part(const uint8_t *__restrict__ blk, int k, const uint8_t *__restrict__ a0,
                                                 size_t as, int T, int *S, int *M) {
    if constexpr (FMT == TYPE_Q4_K || FMT == TYPE_Q5_K) {
        const int Q5 = FMT == TYPE_Q5_K, qoff = Q5 ? (int)offsetof_i(block_q5_K, qs) : (int)offsetof_i(block_q4_K, qs);
        int j = k >> 1, h = k & 1;
        uint4 qv = *(const uint4 *)(blk + qoff + 32 * j + 16 * h);
        uint32_t w[4] = { qv.x, qv.y, qv.z, qv.w }, lo[4], hi[4];
        uint32_t hb[4] = { 0, 0, 0, 0 };
        if (Q5) {
            uint4 hv = *(const uint4 *)(blk + offsetof_i(block_q5_K, qh) + 16 * h);
            hb[0] = hv.x; hb[1] = hv.y; hb[2] = hv.z; hb[3] = hv.w;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            lo[i] = w[i] & 0x0F0F0F0Fu;
            hi[i] = (w[i] >> 4) & 0x0F0F0F0Fu;
            if (Q5) {
                lo[i] |= ((hb[i] >> (2 * j)) & 0x01010101u) << 4;
                hi[i] |= ((hb[i] >> (2 * j + 1)) & 0x01010101u) << 4;
            }
        }
        /* d | dmin | scales[12] in one 16-byte load; 6-bit scale/min of 32-sub-blocks 2j, 2j+1
         * (kq_scale_min's bit layout): j < 2 (sub-blocks 0..3): sc = s[i] & 63, m = s[i+4] & 63;
         * else (4..7): sc = s[i+4] & 15 | (s[i-4] >> 6) << 4, m = s[i+4] >> 4 | (s[i] >> 6) << 4 */
        uint4 hd = *(const uint4 *)blk;
        int scA, mA, scB, mB;
        if (j < 2) {
            uint32_t lo4 = hd.y >> (16 * j), mn4 = hd.z >> (16 * j);   /* bytes s[2j], s[2j+1] / s[2j+4], s[2j+5] */
            scA = lo4 & 63; scB = (lo4 >> 8) & 63;
            mA = mn4 & 63; mB = (mn4 >> 8) & 63;
        } else {
            int sh = 16 * (j - 2);
            uint32_t s4 = hd.y >> sh, s0 = hd.z >> sh, s8 = hd.w >> sh;   /* s[i-4], s[i], s[i+4] for i = 2j, 2j+1 */
            scA = (s8 & 15) | ((s4 >> 6) & 3) << 4;        scB = ((s8 >> 8) & 15) | ((s4 >> 14) & 3) << 4;
            mA = ((s8 >> 4) & 15) | ((s0 >> 6) & 3) << 4;  mB = ((s8 >> 12) & 15) | ((s0 >> 14) & 3) << 4;
        }
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = scA * dot16(lo, a + offsetof_i(act_q8_K, qs) + 64 * j + 16 * h) +
                   scB * dot16(hi, a + (offsetof_i(act_q8_K, qs) + 32) + 64 * j + 16 * h);
            M[t] = mA * bsum16(a, 4 * j + h) + mB * bsum16(a, 4 * j + 2 + h);
        }
    } else if constexpr (FMT == TYPE_Q6_K) {
        int half = k >> 2, q = k & 3;
        int sA = 8 * half + q, sB = sA + 4, hs = 2 * (q >> 1);
        const uint8_t *ql = blk + offsetof_i(block_q6_K, ql) + 64 * half + 16 * q;
        const uint8_t *qh = blk + offsetof_i(block_q6_K, qh) + 32 * half + 16 * (q & 1);
        uint32_t wa[4], wb[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            uint32_t l = ld_u32_a2(ql + 4 * i), hh = ld_u32_a2(qh + 4 * i);
            wa[i] = __vsub4((l & 0x0F0F0F0Fu) | ((hh >> hs) & 0x03030303u) << 4, 0x20202020u);
            wb[i] = __vsub4(((l >> 4) & 0x0F0F0F0Fu) | ((hh >> (hs + 4)) & 0x03030303u) << 4, 0x20202020u);
        }
        int scA = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sA],
            scB = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sB];
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = scA * dot16(wa, a + offsetof_i(act_q8_K, qs) + 16 * sA) +
                   scB * dot16(wb, a + offsetof_i(act_q8_K, qs) + 16 * sB);
        }
    } else if constexpr (FMT == TYPE_Q2_K || FMT == TYPE_Q3_K) {
        const int Q3 = FMT == TYPE_Q3_K;
        int c = k >> 1, half = c >> 1, r = c & 1, cr0 = 2 * (k & 1);
        const uint8_t *qs = blk + (Q3 ? offsetof_i(block_q3_K, qs) : offsetof_i(block_q2_K, qs)) + 32 * half + 16 * r;
        uint32_t w[4], hm[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            w[i] = Q3 ? ld_u32_a2(qs + 4 * i) : ld_u32(qs + 4 * i);
            hm[i] = Q3 ? ld_u32_a2(blk + offsetof_i(block_q3_K, hmask) + 16 * r + 4 * i) : 0;
        }
        uint32_t wa[4], wb[4];
        int sA = 8 * half + 2 * cr0 + r, sB = sA + 2;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            wa[i] = (w[i] >> (2 * cr0)) & 0x03030303u;
            wb[i] = (w[i] >> (2 * cr0 + 2)) & 0x03030303u;
            if (Q3) {
                wa[i] = __vsub4(wa[i] | ((hm[i] >> (sA / 2)) & 0x01010101u) << 2, 0x04040404u);
                wb[i] = __vsub4(wb[i] | ((hm[i] >> (sB / 2)) & 0x01010101u) << 2, 0x04040404u);
            }
        }
        int scA, scB, mA = 0, mB = 0;
        if (Q3) {
            const uint8_t *scb = blk + offsetof_i(block_q3_K, scales);
            int loA = sA < 8 ? scb[sA] & 0x0F : scb[sA - 8] >> 4, hiA = (scb[8 + sA % 4] >> (2 * (sA / 4))) & 3;
            int loB = sB < 8 ? scb[sB] & 0x0F : scb[sB - 8] >> 4, hiB = (scb[8 + sB % 4] >> (2 * (sB / 4))) & 3;
            scA = (loA | hiA << 4) - 32; scB = (loB | hiB << 4) - 32;
        } else {
            const uint8_t *sc2 = blk + offsetof_i(block_q2_K, scales);
            scA = sc2[sA] & 15; mA = sc2[sA] >> 4;
            scB = sc2[sB] & 15; mB = sc2[sB] >> 4;
        }
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = scA * dot16(wa, a + offsetof_i(act_q8_K, qs) + 16 * sA) +
                   scB * dot16(wb, a + offsetof_i(act_q8_K, qs) + 16 * sB);
            if (!Q3) M[t] = mA * bsum16(a, sA) + mB * bsum16(a, sB);
        }
    } else {
        /* IQ: 16-weight sub-blocks j = 2k, 2k + 1 */
        uint32_t w[2][4];
        int m[2];
#pragma unroll
        for (int u = 0; u < 2; u++) {
            int j = 2 * k + u;
            iq_group8<FMT>(blk, 2 * j, &w[u][0], &w[u][1]);
            iq_group8<FMT>(blk, 2 * j + 1, &w[u][2], &w[u][3]);
            m[u] = iq_mult<FMT>(blk, j);
        }
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = m[0] * dot16(w[0], a + offsetof_i(act_q8_K, qs) + 32 * k) +
                   m[1] * dot16(w[1], a + (offsetof_i(act_q8_K, qs) + 16) + 32 * k);
        }
    }
}

/* p[t] from the block's whole integer sums: the formulas of bp_q2_K .. bp_q6_K / bp_iq_k. */
template <int FMT, int TM>
static __device__ __forceinline__ void coop_final(const uint8_t *__restrict__ blk, const uint8_t *__restrict__ a0, size_t as,
                                                  int T, const int *S, const int *M, float *p) {
    float dw, dmw = 0.0f;
    if (FMT == TYPE_Q4_K || FMT == TYPE_Q5_K) { uint32_t dd = ld_u32(blk); dw = h2f((uint16_t)dd); dmw = h2f((uint16_t)(dd >> 16)); }
    else if (FMT == TYPE_Q2_K) {
        uint32_t dd = ld_u32(blk + offsetof_i(block_q2_K, d));
        dw = h2f((uint16_t)dd); dmw = h2f((uint16_t)(dd >> 16));
    }
    else if (FMT == TYPE_Q3_K) dw = h2f(ld_u16(blk + offsetof_i(block_q3_K, d)));
    else if (FMT == TYPE_Q6_K) dw = h2f(ld_u16(blk + offsetof_i(block_q6_K, d)));
    else dw = iq_d<FMT>(blk);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        float ad = ld_f32(a0 + t * as);
        if constexpr (coop_fmt<FMT>::has_m)
            p[t] = __fsub_rn(__fmul_rn(__int2float_rn(S[t]), __fmul_rn(dw, ad)), __fmul_rn(__int2float_rn(M[t]), __fmul_rn(dmw, ad)));
        else if constexpr (FMT == TYPE_Q3_K || FMT == TYPE_Q6_K)
            p[t] = __fmul_rn(__int2float_rn(S[t]), __fmul_rn(dw, ad));
        else
            p[t] = __fmul_rn(__fmul_rn(__int2float_rn(S[t]), iq_fmt<FMT>::k()), __fmul_rn(dw, ad));
    }
}

/* Row dot, cooperative: R rows wr[0..R) against the same columns; acc[r][t] ends (in lane 0)
 * with the canonical result of row r, column t. TPB lanes per super-block (8 or 4): a lane
 * takes the parts k, k + TPB, ... (8 / TPB of them), and G = 32 / TPB blocks of each row are
 * in flight per warp step. R = 2 keeps twice the weight loads in flight per warp (each row
 * keeps its own lane accumulators, so its bits are those of R = 1). V: a decode variant's bit
 * (decode_fast.cuh; 0: coop_part). */
template <int FMT, int TM, int TPB, int R, int V, int WARPS>
static __device__ __forceinline__ void row_dot_coop(const uint8_t *const *wr, int nb, const uint8_t *__restrict__ act,
                                                    size_t as, int T, float (*acc)[TM]) {
    const int BS = wfmt<FMT>::bsize, G = 32 / TPB, U = 8 / TPB;
    int lane = threadIdx.x & 31, g = lane / TPB, k = lane % TPB;
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < TM; t++) acc[r][t] = 0.0f;
#pragma unroll 2
    for (int base = 0; base < nb; base += G) {
        int b = base + g;
        int S[R][TM], M[R][TM];
        float p[R][TM];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < TM; t++) { S[r][t] = 0; M[r][t] = 0; p[r][t] = 0.0f; }
        if constexpr ((V & DF_PAIR) != 0 && TM == 1 && U == 1) {   /* the R rows' part, one activation load */
            if (b < nb) {
                int sr[R];
                coop_rows_fast<FMT, V & (DF_SMEM | DF_SALU), R>(wr, (size_t)b * BS, k, act + (size_t)b * sizeof_i(act_q8_K), sr);
#pragma unroll
                for (int r = 0; r < R; r++) S[r][0] += sr[r];
            }
        } else if (b < nb) {
#pragma unroll
            for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < U; i++) {
                int s2[TM], m2[TM];
#pragma unroll
                for (int t = 0; t < TM; t++) { s2[t] = 0; m2[t] = 0; }
                if constexpr (V != 0)   /* a decode variant (decode_fast.cuh): same S, no M term */
                    coop_part_fast<FMT, TM, V & (DF_SMEM | DF_SALU)>(wr[r] + (size_t)b * BS, k + TPB * i,
                                                                 act + (size_t)b * sizeof_i(act_q8_K), as, T, s2);
                else
                coop_part<FMT, TM>(wr[r] + (size_t)b * BS, k + TPB * i, act + (size_t)b * sizeof_i(act_q8_K), as, T, s2,
                                   m2);
#pragma unroll
                for (int t = 0; t < TM; t++) { S[r][t] += s2[t]; M[r][t] += m2[t]; }
            }
        }
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
#pragma unroll
            for (int o = TPB / 2; o >= 1; o >>= 1) {
                S[r][t] += __shfl_xor_sync(FULL_MASK, S[r][t], o);
                if (coop_fmt<FMT>::has_m) M[r][t] += __shfl_xor_sync(FULL_MASK, M[r][t], o);
            }
        }
        if (b < nb) {
#pragma unroll
            for (int r = 0; r < R; r++)
                coop_final<FMT, TM>(wr[r] + (size_t)b * BS, act + (size_t)b * sizeof_i(act_q8_K), as, T, S[r], M[r], p[r]);
        }
        /* block base + gs belongs to lane (base % 32) + gs: fetch it from group gs's first lane */
        int gs = lane - (base & 31);
        bool mine = gs >= 0 && gs < G && base + gs < nb;
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            float v = __shfl_sync(FULL_MASK, p[r][t], (gs & (G - 1)) * TPB);
            if (mine) acc[r][t] = __fadd_rn(acc[r][t], v);
        }
    }
    warp_canon_finish_n<R * TM, WARPS>(&acc[0][0], nb);   /* the R rows' TM columns, side by side */
}
/* The walk of the T = 1 down kernels' 4 rows a warp (row_dot_grp here; r4.cuh's r4_grp_dot on the R4 copies): row g
 * of the warp's 4 by lane group g (lanes 8g .. 8g + 7); at super-block b lane k's integer share
 * blk.part(b, k), the group's xor sum S, p(g, b) = blk.fin(b, S) in each of its lanes, and lane b % 32 of row r adds
 * p(r, b) (a shuffle from group r's first lane) in block order from 0.0f as row_dot_coop's hand-over does; the 4
 * rows finish side by side: row_dot_coop's bits. acc[r][0] in lane 0 is row r's canonical dot. */
template <class B>
static __device__ __forceinline__ void grp4_block(const B &blk, int b, int lane, int k, float (*acc)[1]) {
    int S = blk.part(b, k);
#pragma unroll
    for (int o = 4; o >= 1; o >>= 1) S += __shfl_xor_sync(FULL_MASK, S, o);
    const float p = blk.fin(b, S);
#pragma unroll
    for (int r = 0; r < 4; r++) {
        const float v = __shfl_sync(FULL_MASK, p, 8 * r);
        if (lane == (b & 31)) acc[r][0] = __fadd_rn(acc[r][0], v);
    }
}
template <int WARPS, class B>
static __device__ __forceinline__ void grp4_walk(int nb, const B &blk, float (*acc)[1]) {
    const int lane = threadIdx.x & 31, k = lane & 7;
#pragma unroll
    for (int r = 0; r < 4; r++) acc[r][0] = 0.0f;
    for (int b = 0; b < nb; b++) grp4_block(blk, b, lane, k, acc);
    warp_canon_finish_n<4, WARPS>(&acc[0][0], nb);
}
/* DF_GRP (decode_fast.cuh; STRATA_CUDA_MOE_FAST bit 262144, the T = 1 down kernel, 4 rows a warp): grp4_walk over
 * the format's blocks, row g at base + g row_bytes, lane k on part k of every super-block (coop_part_fast), p(g, b)
 * by coop_final. All 32 lanes decode (a 768-value row is 3 super-blocks: row_dot_coop's block-b-by-group-b left
 * one group idle) and at each block the 4 groups load the same activation words. */
template <int FMT, int V>
struct grp_blocks {
    const uint8_t *row, *act;
    __device__ __forceinline__ int part(int b, int k) const {
        int s2[1];
        coop_part_fast<FMT, 1, V & (DF_SMEM | DF_SALU)>(row + (size_t)b * wfmt<FMT>::bsize, k, act + (size_t)b * sizeof_i(act_q8_K), 0, 1, s2);
        return s2[0];
    }
    __device__ __forceinline__ float fin(int b, int S) const {
        int M = 0;
        float p;
        coop_final<FMT, 1>(row + (size_t)b * wfmt<FMT>::bsize, act + (size_t)b * sizeof_i(act_q8_K), 0, 1, &S, &M, &p);
        return p;
    }
};
template <int FMT, int V, int WARPS>
static __device__ __forceinline__ void row_dot_grp(const uint8_t *__restrict__ base, size_t row_bytes, int nb,
                                                   const uint8_t *__restrict__ act, float (*acc)[1]) {
    const grp_blocks<FMT, V> blk = { base + (size_t)((threadIdx.x & 31) >> 3) * row_bytes, act };
    grp4_walk<WARPS>(nb, blk, acc);
}
/* The block partials of one row at T = 1 for a split row (STRATA_CUDA_MV_SPLIT, matvec.cu):
 * warp `part` of W takes the steps part, part + W, ... of row_dot_coop's loop (G = 32 / TPB
 * blocks per step) and writes each block's p (coop_final's value, row_dot_coop's operations) to
 * sp[b]; the caller adds sp[b] into lane b % 32 in block order and finishes the warp tree, which
 * is row_dot_coop's canonical result. */
template <int FMT, int TPB, int V = 0>
static __device__ __forceinline__ void row_parts_coop(const uint8_t *__restrict__ wr, int nb, const uint8_t *__restrict__ act,
                                                      int part, int W, float *sp) {
    const int BS = wfmt<FMT>::bsize, G = 32 / TPB, U = 8 / TPB;
    const int lane = threadIdx.x & 31, g = lane / TPB, k = lane % TPB;
#pragma unroll 2
    for (int base = part * G; base < nb; base += W * G) {
        const int b = base + g;
        int S[1] = { 0 }, M[1] = { 0 };
        float p[1] = { 0.0f };
        if (b < nb) {
#pragma unroll
            for (int i = 0; i < U; i++) {
                int s2[1] = { 0 }, m2[1] = { 0 };
                if constexpr (V != 0)
                    coop_part_fast<FMT, 1>(wr + (size_t)b * BS, k + TPB * i, act + (size_t)b * sizeof_i(act_q8_K), 0, 1, s2);
                else
                    coop_part<FMT, 1>(wr + (size_t)b * BS, k + TPB * i, act + (size_t)b * sizeof_i(act_q8_K), 0, 1, s2, m2);
                S[0] += s2[0]; M[0] += m2[0];
            }
        }
#pragma unroll
        for (int o = TPB / 2; o >= 1; o >>= 1) {
            S[0] += __shfl_xor_sync(FULL_MASK, S[0], o);
            if (coop_fmt<FMT>::has_m) M[0] += __shfl_xor_sync(FULL_MASK, M[0], o);
        }
        if (b < nb) {
            coop_final<FMT, 1>(wr + (size_t)b * BS, act + (size_t)b * sizeof_i(act_q8_K), 0, 1, S, M, p);
            if (k == 0) sp[b] = p[0];
        }
    }
}
#endif
