/* The per-row dot of the matvec kernels (matvec.cu, moe.cu): block partials of every
 * format and the canonical accumulation (docs/KERNELS.md). Included by .cu files only. */
#ifndef STRATA_MATVEC_ROW_CUH
#define STRATA_MATVEC_ROW_CUH
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "formats.cuh"
#include "quant_blocks.cuh"
#include "iq_blocks.cuh"
#include "kquant_coop.cuh"

#define MV_WARPS 4   /* rows per CTA */

/* The block partial of weight format FMT (a row of src/quant/formats.h whose blocks hold more
 * than one weight; F32 / F16 / BF16 take row_dot's per-element path). A row without one stops
 * the build here: has_block_partial lists the formats of the chain below (and bp_iq's). */
template <int FMT> struct has_block_partial {
    enum { v = FMT == TYPE_Q4_0 || FMT == TYPE_Q4_1 || FMT == TYPE_Q5_0 || FMT == TYPE_Q5_1 || FMT == TYPE_Q8_0 ||
               FMT == TYPE_Q2_0 || FMT == TYPE_MXFP4 || FMT == TYPE_Q2_K || FMT == TYPE_Q3_K || FMT == TYPE_Q4_K ||
               FMT == TYPE_Q5_K || FMT == TYPE_Q6_K || FMT == TYPE_IQ4_NL || iq_fmt<FMT>::ok };
};
template <int FMT, int TM, int V = 0> static __device__ __forceinline__ void block_partials(BP_ARGS) {
    static_assert(!wfmt<FMT>::ok || wfmt<FMT>::blck == 1 || has_block_partial<FMT>::v,
                  "a weight format of src/quant/formats.h without a CUDA block partial: add its bp_<fmt> "
                  "(quant_blocks.cuh / iq_blocks.cuh) and its branch here");
    if constexpr (V != 0 && FMT == TYPE_Q2_0) { bp_q2_0_word<TM>(wr, b, act, as, T, p); return; }   /* decode variants */
    if constexpr (V != 0 && FMT == TYPE_IQ4_NL) { bp_iq4_nl_fast<TM>(wr, b, act, as, T, p); return; }
    if (FMT == TYPE_Q4_0) bp_q4_0<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q4_1) bp_q4_1<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q5_0) bp_q5_0<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q5_1) bp_q5_1<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q8_0) bp_q8_0<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q2_0) bp_q2_0<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_MXFP4) bp_mxfp4<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q2_K) bp_q2_K<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q3_K) bp_q3_K<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q4_K) bp_q45_K<TM, 0>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q5_K) bp_q45_K<TM, 1>(wr, b, act, as, T, p);
    else if (FMT == TYPE_Q6_K) bp_q6_K<TM>(wr, b, act, as, T, p);
    else bp_iq<FMT, TM>(wr, b, act, as, T, p);
}

/* Dot of one row against T columns; lane 0 returns the canonical result per column.
 * COOP != 0: 8 lanes per 256-weight super-block (kquant_coop.cuh); 0: one lane per block.
 * V: a decode variant's bit (decode_fast.cuh: dec_v<FMT, COOP>()), 0 the default decode. */
template <int FMT, int TM, int COOP, int V = 0, int WARPS = MV_WARPS>
static __device__ __forceinline__ void row_dot(const uint8_t *__restrict__ wr, int64_t n_in, int nb,
                                               const uint8_t *__restrict__ act, size_t as, int T, float *acc) {
    if constexpr (COOP != 0) {
        float a1[1][TM];
        const uint8_t *w1[1] = { wr };
        row_dot_coop<FMT, TM, 8, 1, V, WARPS>(w1, nb, act, as, T, a1);
#pragma unroll
        for (int t = 0; t < TM; t++) acc[t] = a1[0][t];
        return;
    }
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int t = 0; t < TM; t++) acc[t] = 0.0f;
    if (FMT == TYPE_F32 || FMT == TYPE_F16 || FMT == TYPE_BF16) {
        const float *x = (const float *)act;   /* T f32 columns, stride as bytes */
#pragma unroll 8
        for (int64_t k = lane; k < n_in; k += 32) {
            float w = FMT == TYPE_F32 ? ((const float *)wr)[k]
                    : FMT == TYPE_F16 ? h2f(((const uint16_t *)wr)[k]) : bf2f(((const uint16_t *)wr)[k]);
#pragma unroll
            for (int t = 0; t < TM; t++)
                if (t < T) acc[t] = __fadd_rn(acc[t], __fmul_rn(w, ((const float *)((const uint8_t *)x + t * as))[k]));
        }
    } else {
        for (int b = lane; b < nb; b += 32) {
            float p[TM];
            block_partials<FMT, TM, V>(wr, b, act, as, T, p);
#pragma unroll
            for (int t = 0; t < TM; t++)
                if (t < T) acc[t] = __fadd_rn(acc[t], p[t]);
        }
    }
    warp_canon_finish_n<TM, WARPS>(acc, nb);
}

/* R rows against one column on the lane path (Q2_0 with its word expansion, Q4_0, Q8_0, IQ4_NL with its fast
 * decode): lane b % 32 takes block b of every row (bpn_lane: the block's activation words loaded once), each
 * row's partials added in row_dot's order into its own lane value and the R finished side by side
 * (warp_canon_finish_n<R>): each row's bits are row_dot's. STRATA_CUDA_MOE_FAST bit 8192: the T = 1 gate/up
 * pair (R = 2, w = the gate's and the up's row); bit 32768: the T = 1 down kernel's R consecutive rows. */
template <int FMT, int R, int WARPS = MV_WARPS>
static __device__ __forceinline__ void row_dot_rows_lane(const uint8_t *const *w, int nb, const uint8_t *__restrict__ act,
                                                         float *acc) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int r = 0; r < R; r++) acc[r] = 0.0f;
    for (int b = lane; b < nb; b += 32) {
        float p[R];
        bpn_lane<FMT, R>(w, b, act, p);
#pragma unroll
        for (int r = 0; r < R; r++) acc[r] = __fadd_rn(acc[r], p[r]);
    }
    warp_canon_finish_n<R, WARPS>(acc, nb);
}

#endif
