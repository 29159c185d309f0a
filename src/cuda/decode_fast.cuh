/* The decode variants of issue 20 on the GPU (docs/KERNELS.md, "Decode variants"): block
 * partials and cooperative parts built from src/quant/decode_fast.h (the functions
 * tests/test_decode_fast.c checks exhaustively against the reference decodes on the CPU).
 * They form the same int8 weights and integer multipliers as quant_blocks.cuh / iq_blocks.cuh /
 * kquant_coop.cuh, pair them with the same activation bytes and keep every float operation of
 * those files, so a variant changes instructions, never bits.
 *
 * A kernel template's V parameter is the variant bit it was built with (0: the default code,
 * unchanged); dec_v<FMT, COOP>() is the bit that applies to a format on a path:
 *   CUDA_DEC_IQ2      IQ2_XXS IQ2_XS IQ2_S (cooperative path)
 *   CUDA_DEC_IQ3      IQ3_XXS IQ3_S (cooperative path)
 *   CUDA_DEC_IQ4      IQ4_XS (cooperative path), IQ4_NL (lane path)
 *   CUDA_DEC_Q2_WORD  Q2_0 (lane path)
 *   CUDA_DEC_Q6_SWAR  Q6_K (cooperative path)
 * IQ1_S / IQ1_M and the one-lane path of the 256-weight formats have no variant (V = 0). */
#ifndef STRATA_DECODE_FAST_CUH
#define STRATA_DECODE_FAST_CUH
#include "cuda_internal.h"
#include "quant_blocks.cuh"
#include "iq_blocks.cuh"
/* included by kquant_coop.cuh after its dot16 (the activation side of every part) */

template <int FMT> struct dec_bit {
    static constexpr int v = (FMT == TYPE_IQ2_XXS || FMT == TYPE_IQ2_XS || FMT == TYPE_IQ2_S) ? CUDA_DEC_IQ2
                           : (FMT == TYPE_IQ3_XXS || FMT == TYPE_IQ3_S) ? CUDA_DEC_IQ3
                           : (FMT == TYPE_IQ4_XS || FMT == TYPE_IQ4_NL) ? CUDA_DEC_IQ4
                           : FMT == TYPE_Q2_0 ? CUDA_DEC_Q2_WORD
                           : FMT == TYPE_Q6_K ? CUDA_DEC_Q6_SWAR : 0;
};
/* the variant bit of format FMT on the kernel path COOP (8: cooperative, 0: one lane per block) */
template <int FMT, int COOP> constexpr int dec_v() {
    return (FMT == TYPE_IQ4_NL || FMT == TYPE_Q2_0) ? (COOP == 0 ? dec_bit<FMT>::v : 0)
                                                    : (COOP != 0 ? dec_bit<FMT>::v : 0);
}

/* is variant bit V (dec_v's) on for a pass of T columns? The switches' bits (cuda_matvec_decode),
 * except that STRATA_Q6_SWAR applies to passes of one column only: on the H200 its Q6_K matvec at
 * T = 1 took 0.79x the time and at T = 8 1.02x (2026-12-03, docs/BENCHMARKS.md) */
template <int V> static inline bool dec_on(int T) {
    return V != 0 && (cuda_matvec_decode() & V) && (V != CUDA_DEC_Q6_SWAR || T == 1);
}

/* this translation unit's device codebooks as decode_fast.h's table set */
static __device__ __forceinline__ df_tables df_dev_tables(void) {
    df_tables t;
    t.iq2xxs = d_iq2xxs_grid; t.iq2xs = d_iq2xs_grid; t.iq2s = d_iq2s_grid;
    t.iq3xxs = d_iq3xxs_grid; t.iq3s = d_iq3s_grid;
    t.ksm = d_ksm; t.bsm = d_bsm;
    return t;
}

/* DF_SMEM in a kernel's V (STRATA_CUDA_MOE_FAST bit 32, the grouped MoE kernels at T = 1): the
 * IQ3_XXS codebook and the sign masks in shared memory, copied by each CTA before its
 * dependent-launch wait (df_smem_fill), so a part's twelve lookups are 32-bit shared loads instead
 * of global loads through 64-bit addresses (the gate/up kernel's SASS, 2026-12-03: each lookup an
 * IADD3 + IMAD.X pair beside its shift and mask, and 52 % of the stalls on global loads). Same
 * values, same bits. */
#define DF_SMEM 0x100
/* DF_SALU in a kernel's V (STRATA_CUDA_MOE_FAST bit 512, the grouped MoE kernels at T = 1, IQ2_XXS /
 * IQ3_XXS): the ksigns sign masks by ALU (df_ksign_bits, df_nib_bytes: a parity and a multiply)
 * instead of a 64-bit table load per 8 weights (shared memory with DF_SMEM, else global). Same
 * values, same bits (test_decode_fast checks the forms against the tables on all 128 indices). */
#define DF_SALU 0x200
/* DF_PAIR in a kernel's V (STRATA_CUDA_MOE_FAST bit 1024, the T = 1 gate/up kernel; bit 2048, the T = 1
 * down kernel's 4 rows a warp; IQ2_XXS / IQ3_XXS with DF_SALU, and with bit 4096 IQ4_XS / IQ2_XS / IQ2_S /
 * IQ3_S): a lane's parts of its rows decoded side by side and their activation words loaded once for all
 * (coop_rows_fast) instead of a coop_part_fast per row. Integer sums: the same S. On the lane path (Q2_0,
 * Q4_0, Q8_0, IQ4_NL) it selects bpn_lane's blocks of several rows: the gate/up pair (bit 8192), the down
 * kernel's rows (bit 32768). */
#define DF_PAIR 0x400
/* DF_GRP in a kernel's V (STRATA_CUDA_MOE_FAST bit 262144, the T = 1 down kernel with 4 rows a warp, IQ2_XXS /
 * IQ3_XXS with DF_SALU): row g by lane group g, lane k on part k of every super-block of its row (row_dot_grp,
 * kquant_coop.cuh) instead of block b of every row by group b. Same bits. */
#define DF_GRP 0x1000
/* DF_R4 in a kernel's V (STRATA_CUDA_MOE_R4, the T = 1 gate/up kernel and the down kernel at 4 rows a warp,
 * IQ2_XXS / IQ3_XXS): the weights are the experts' R4 copy (src/quant/r4.h; r4.cuh's r4_rows_dot / r4_grp_dot),
 * the kernel's expert and row bytes the copy's. Same integer sums, same bits. */
#define DF_R4 0x2000
static __device__ __forceinline__ uint32_t *df_s_grid3(void) { __shared__ uint32_t g[256]; return g; }
static __device__ __forceinline__ uint64_t *df_s_ksm(void) { __shared__ uint64_t k[128]; return k; }
template <int FMT> static __device__ __forceinline__ void df_smem_fill(void) {
    if constexpr (FMT == TYPE_IQ3_XXS) {
        uint32_t *g = df_s_grid3();
        uint64_t *k = df_s_ksm();
        for (int i = threadIdx.x; i < 256; i += blockDim.x) g[i] = *(const uint32_t *)d_iq3xxs_grid[i];
        for (int i = threadIdx.x; i < 128; i += blockDim.x) k[i] = d_ksm[i];
        __syncthreads();
    }
}
static __device__ __forceinline__ df_tables df_smem_tables(void) {
    df_tables t = df_dev_tables();
    t.iq3xxs = (const uint8_t (*)[4])df_s_grid3();
    t.ksm = df_s_ksm();
    return t;
}

/* The lane-path formats whose block partial is ((float)S) (d_w d_a) with S the dot of the block's int8 words
 * against the activation block's words in order (Q4_0, Q8_0, IQ4_NL's fast decode: 8 words against act_q8_0;
 * Q2_0's word expansion: 16 against act_q8_2), as words: w[j] pairs with activation word j. The same words
 * bp_q4_0 / bp_q8_0 / bp_iq4_nl_fast / bp_q2_0_word form (integer sums: any order, the same S). */
template <int FMT> struct lane_words {
    static constexpr int ok = FMT == TYPE_Q4_0 || FMT == TYPE_Q8_0 || FMT == TYPE_IQ4_NL || FMT == TYPE_Q2_0;
    static constexpr int n = FMT == TYPE_Q2_0 ? 16 : 8;
};
template <int FMT>
static __device__ __forceinline__ float lane_block_words(const uint8_t *__restrict__ blk, uint32_t *w) {
    if constexpr (FMT == TYPE_Q2_0) df_q2_0_block(blk, w);
    else if constexpr (FMT == TYPE_IQ4_NL) df_iq4nl_block(blk, w, w + 4);
    else if constexpr (FMT == TYPE_Q8_0) {
#pragma unroll
        for (int i = 0; i < 8; i++) w[i] = ld_u32_a2(blk + offsetof_i(block_q8_0, qs) + 4 * i);
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t q = ld_u32_a2(blk + offsetof_i(block_q4_0, qs) + 4 * i);
            w[i] = __vsub4(q & 0x0F0F0F0Fu, 0x08080808u);
            w[4 + i] = __vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u);
        }
    }
    return h2f(ld_u16(blk));
}
/* Block b of R rows against one column on the lane path, each decoded as its block partial decodes it, the
 * block's activation words and d loaded once for all R; p[r] is that block partial's p for row r. DF_PAIR:
 * STRATA_CUDA_MOE_FAST bit 8192 (the T = 1 gate/up kernel: R = 2, the gate's and the up's row) and bit 32768
 * (the T = 1 down kernel: R = 2 or 4 consecutive rows). */
template <int FMT, int R>
static __device__ __forceinline__ void bpn_lane(const uint8_t *const *w, int b, const uint8_t *__restrict__ act, float *p) {
    static_assert(lane_words<FMT>::ok, "bpn_lane: Q4_0, Q8_0, IQ4_NL, Q2_0");
    constexpr int N = lane_words<FMT>::n, BS = wfmt<FMT>::bsize;
    constexpr size_t AB = FMT == TYPE_Q2_0 ? sizeof_i(act_q8_2) : sizeof_i(act_q8_0);
    constexpr size_t AQ = FMT == TYPE_Q2_0 ? offsetof_i(act_q8_2, qs) : offsetof_i(act_q8_0, qs);
    uint32_t q[R][N];
    float d[R];
    int s[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        d[r] = lane_block_words<FMT>(w[r] + (size_t)b * BS, q[r]);
        s[r] = 0;
    }
    const uint8_t *a = act + (size_t)b * AB;
#pragma unroll
    for (int i = 0; i < N; i++) {
        const int av = ld_i32(a + AQ + 4 * i);
#pragma unroll
        for (int r = 0; r < R; r++) s[r] = __dp4a((int)q[r][i], av, s[r]);
    }
    const float ad = ld_f32(a);
#pragma unroll
    for (int r = 0; r < R; r++) p[r] = __fmul_rn(__int2float_rn(s[r]), __fmul_rn(d[r], ad));
}

/* Q2_0 block partial with the codes expanded word by word (bp_q2_0's sums and formula) */
template <int TM> static __device__ __forceinline__ void bp_q2_0_word(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q2_0);
    float dw = h2f(ld_u16(blk));
    uint32_t q[16];
    df_q2_0_block(blk, q);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_2);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 16; i++) s = __dp4a((int)q[i], ld_i32(a + offsetof_i(act_q8_2, qs) + 4 * i), s);
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* IQ4_NL block partial with the codebook by byte_perm (bp_iq4_nl's sums and formula) */
template <int TM> static __device__ __forceinline__ void bp_iq4_nl_fast(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_iq4_nl);
    float dw = h2f(ld_u16(blk));
    uint32_t lo[4], hi[4];
    df_iq4nl_block(blk, lo, hi);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_0);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_0, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_0, qs) + QK4_NL / 2) + 4 * i), s);
        }
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* Part k of a super-block of the formats decode_fast.h decodes into 8 words and two multipliers
 * (IQ4_XS and the IQ codebook formats): coop_part_fast's decode, shared with coop_rows_fast. */
template <int FMT, int SM>
static __device__ __forceinline__ void df_part_words(const uint8_t *__restrict__ blk, int k, uint32_t *w, int *m) {
    if constexpr (FMT == TYPE_IQ4_XS) df_iq4xs_part(blk, k, w, m);
    else {
        const df_tables tb = (SM & DF_SMEM) && FMT == TYPE_IQ3_XXS ? df_smem_tables() : df_dev_tables();
        constexpr int alu = (SM & DF_SALU) != 0;
        if constexpr (FMT == TYPE_IQ2_XXS) df_iq2xxs_part_s(blk, k, &tb, w, m, alu);
        else if constexpr (FMT == TYPE_IQ2_XS) df_iq2xs_part(blk, k, &tb, w, m);
        else if constexpr (FMT == TYPE_IQ2_S) df_iq2s_part(blk, k, &tb, w, m);
        else if constexpr (FMT == TYPE_IQ3_XXS) df_iq3xxs_part_s(blk, k, &tb, w, m, alu);
        else df_iq3s_part(blk, k, &tb, w, m);
    }
}

/* DF_PAIR: part k of R rows' super-blocks (wr[r] + off: the gate's and the up's row, R = 2, or a
 * down warp's rows, R = 4) against one column's activation block a0: each row decoded as
 * coop_part_fast decodes it, the part's 8 activation words loaded once for all R; S[r] is
 * coop_part_fast's S for row r (exact integers: m[0] * (w[0..3] . a[0..15]) + m[1] * (w[4..7] . a[16..31])) */
template <int FMT, int SM, int R>
static __device__ __forceinline__ void coop_rows_fast(const uint8_t *const *wr, size_t off, int k,
                                                      const uint8_t *__restrict__ a0, int *S) {
    static_assert(FMT != TYPE_Q6_K, "coop_rows_fast: the 8-word parts");
    uint32_t w[R][8];
    int m[R][2];
#pragma unroll
    for (int r = 0; r < R; r++) df_part_words<FMT, SM>(wr[r] + off, k, w[r], m[r]);
    const uint8_t *a = a0 + offsetof_i(act_q8_K, qs) + 32 * k;
    int av[8];
#pragma unroll
    for (int i = 0; i < 8; i++) av[i] = ld_i32(a + 4 * i);
    int s0[R], s1[R];
#pragma unroll
    for (int r = 0; r < R; r++) { s0[r] = 0; s1[r] = 0; }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int r = 0; r < R; r++) {
            s0[r] = __dp4a((int)w[r][i], av[i], s0[r]);
            s1[r] = __dp4a((int)w[r][4 + i], av[4 + i], s1[r]);
        }
#pragma unroll
    for (int r = 0; r < R; r++) S[r] = m[r][0] * s0[r] + m[r][1] * s1[r];
}

/* The cooperative part k of an IQ super-block or of a Q6_K one through decode_fast.h: the
 * integer shares S[t] of coop_part (kquant_coop.cuh) for the same weights, multipliers and
 * activation bytes. */
template <int FMT, int TM, int SM = 0>
static __device__ __forceinline__ void coop_part_fast(const uint8_t *__restrict__ blk, int k, const uint8_t *__restrict__ a0,
                                                      size_t as, int T, int *S) {
    if constexpr (FMT == TYPE_Q6_K) {
        uint32_t wa[4], wb[4];
        df_q6_K_part(blk, k, wa, wb);
        const int sA = 8 * (k >> 2) + (k & 3), sB = sA + 4;
        const int scA = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sA],
                  scB = (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + sB];
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = scA * dot16(wa, a + offsetof_i(act_q8_K, qs) + 16 * sA) +
                   scB * dot16(wb, a + offsetof_i(act_q8_K, qs) + 16 * sB);
        }
    } else {
        uint32_t w[8];
        int m[2];
        df_part_words<FMT, SM>(blk, k, w, m);
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = a0 + t * as;
            S[t] = m[0] * dot16(w, a + offsetof_i(act_q8_K, qs) + 32 * k) +
                   m[1] * dot16(w + 4, a + (offsetof_i(act_q8_K, qs) + 16) + 32 * k);
        }
    }
}
#endif
