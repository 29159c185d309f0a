/* IQ codebook formats on the GPU: block partials with the bits of src/quant/ref_iq.c.
 *
 * The reference turns a super-block into int8 weights w8[256] and a multiplier m per 16
 * weights, then p_b = ((float)isum * k) * (h(d) * a.d), isum = sum_j m_j * sum_{i in j}
 * w8_i * a.qs_i (docs/KERNELS.md, IQ section). Here a group of 8 weights is decoded into two
 * int8x4 words (iq_group8), sub-block j of 16 weights is groups 2j and 2j+1, and the integer
 * sums use __dp4a (exact). Codebooks are copied once into device memory (iq_tables_upload)
 * from the generated host tables (src/quant/iq_tables.c).
 * Every .cu that includes this header has its own copy of the tables (static __device__):
 * each fills its copy once through a function IQ_TABLES_INIT_FN defines (matvec.cu:
 * cuda_tables_init; moe.cu). */
#ifndef STRATA_IQ_BLOCKS_CUH
#define STRATA_IQ_BLOCKS_CUH
#include "cuda_common.cuh"
#include "formats.cuh"
#include "quant/decode_fast.h"

static __device__ __align__(8) uint8_t d_iq2xxs_grid[256][8];
static __device__ __align__(8) uint8_t d_iq2xs_grid[512][8];
static __device__ __align__(8) uint8_t d_iq2s_grid[1024][8];
static __device__ __align__(4) uint8_t d_iq3xxs_grid[256][4];
static __device__ __align__(4) uint8_t d_iq3s_grid[512][4];
static __device__ __align__(8) int8_t d_iq1s_grid[2048][8];
static __device__ uint8_t d_ksigns[128];
static __device__ int8_t d_kvalues_iq4nl[16];
/* the sign-mask tables of src/quant/decode_fast.h (the STRATA_IQ_DECODE_FAST kernels) */
static __device__ uint64_t d_ksm[128];
static __device__ uint64_t d_bsm[256];

/* Copy the host codebooks into this translation unit's device tables; 0 / -1. */
static inline int iq_tables_upload(void) {
    uint64_t ksm[128], bsm[256];
    df_sign_tables_fill(ksigns_iq2xs, ksm, bsm);
    return cudaMemcpyToSymbol(d_ksm, ksm, sizeof ksm) != cudaSuccess ||
           cudaMemcpyToSymbol(d_bsm, bsm, sizeof bsm) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq2xxs_grid, iq2xxs_grid, sizeof d_iq2xxs_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq2xs_grid, iq2xs_grid, sizeof d_iq2xs_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq2s_grid, iq2s_grid, sizeof d_iq2s_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq3xxs_grid, iq3xxs_grid, sizeof d_iq3xxs_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq3s_grid, iq3s_grid, sizeof d_iq3s_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_iq1s_grid, iq1s_grid, sizeof d_iq1s_grid) != cudaSuccess ||
           cudaMemcpyToSymbol(d_ksigns, ksigns_iq2xs, sizeof d_ksigns) != cudaSuccess ||
           cudaMemcpyToSymbol(d_kvalues_iq4nl, kvalues_iq4nl, sizeof d_kvalues_iq4nl) != cudaSuccess ? -1 : 0;
}

/* int NAME(void): this translation unit's codebooks filled once (0), or -1 with the error
 * recorded as "IQ codebook upload (WHAT)" */
#define IQ_TABLES_INIT_FN(NAME, WHAT)                                                               \
    int NAME(void) {                                                                                \
        static int done = 0;                                                                        \
        if (done) return 0;                                                                         \
        if (iq_tables_upload()) {                                                                   \
            cuda_record_error("IQ codebook upload (" WHAT ")", cudaGetLastError(), __FILE__, __LINE__); \
            return -1;                                                                              \
        }                                                                                           \
        done = 1;                                                                                   \
        return 0;                                                                                   \
    }

/* bytes 0xFF where sign bit set (bits 0..3 of s -> bytes 0..3) */
static __device__ __forceinline__ uint32_t sign_mask4(uint32_t s) { return spread4(s & 15) * 0xFFu; }
/* negate the bytes of w selected by the 4 sign bits s */
static __device__ __forceinline__ uint32_t apply_signs4(uint32_t w, uint32_t s) {
    uint32_t m = sign_mask4(s);
    return __vsub4(w ^ m, m);
}
static __device__ __forceinline__ uint32_t grid8_lo(const uint8_t *row) { return ld_u32(row); }
static __device__ __forceinline__ uint32_t grid8_hi(const uint8_t *row) { return ld_u32(row + 4); }
/* kvalues_iq4nl of the codes in bits 0-3 of each byte: lut16's byte permutes (formats.cuh; the same bytes
 * as the table d_kvalues_iq4nl, which four global reads a word took before) */
static __device__ __forceinline__ uint32_t kv4(uint32_t nibbles_in_bytes) { return lut16<LUT_IQ4NL>(nibbles_in_bytes); }
/* IQ1: bytes 8 * grid + delta (grid values -1, 0, 1) */
static __device__ __forceinline__ void iq1_words(const int8_t *gr, int delta, uint32_t *w0, uint32_t *w1) {
    *w0 = pack4(8 * gr[0] + delta, 8 * gr[1] + delta, 8 * gr[2] + delta, 8 * gr[3] + delta);
    *w1 = pack4(8 * gr[4] + delta, 8 * gr[5] + delta, 8 * gr[6] + delta, 8 * gr[7] + delta);
}

/* The IQ formats with a block partial here (ok) and the reference's k (a power of two); block
 * bytes are wfmt<FMT>::bsize (formats.cuh), field offsets those of src/quant/blocks.h. */
template <int FMT> struct iq_fmt { enum { ok = 0 }; };
template <> struct iq_fmt<TYPE_IQ2_XXS> { enum { ok = 1 }; static __device__ float k() { return 0.125f; } };
template <> struct iq_fmt<TYPE_IQ2_XS>  { enum { ok = 1 }; static __device__ float k() { return 0.125f; } };
template <> struct iq_fmt<TYPE_IQ2_S>   { enum { ok = 1 }; static __device__ float k() { return 0.125f; } };
template <> struct iq_fmt<TYPE_IQ3_XXS> { enum { ok = 1 }; static __device__ float k() { return 0.25f; } };
template <> struct iq_fmt<TYPE_IQ3_S>   { enum { ok = 1 }; static __device__ float k() { return 1.0f; } };
template <> struct iq_fmt<TYPE_IQ1_S>   { enum { ok = 1 }; static __device__ float k() { return 0.125f; } };
template <> struct iq_fmt<TYPE_IQ1_M>   { enum { ok = 1 }; static __device__ float k() { return 0.125f; } };
template <> struct iq_fmt<TYPE_IQ4_XS>  { enum { ok = 1 }; static __device__ float k() { return 1.0f; } };
static_assert(offsetof_i(block_iq2_xxs, d) == 0 && offsetof_i(block_iq2_xs, d) == 0 &&
              offsetof_i(block_iq2_s, d) == 0 && offsetof_i(block_iq3_xxs, d) == 0 &&
              offsetof_i(block_iq3_s, d) == 0 && offsetof_i(block_iq1_s, d) == 0 && offsetof_i(block_iq4_xs, d) == 0 &&
              offsetof_i(block_iq4_nl, d) == 0, "fp16 d first (IQ1_M: in the scales)");

/* ---- per format: d, multiplier of sub-block j (16 weights), group g (8 weights) ---------- */
template <int FMT> static __device__ __forceinline__ float iq_d(const uint8_t *blk) {
    if (FMT == TYPE_IQ1_M) {
        uint32_t s01 = ld_u32_a2(blk + offsetof_i(block_iq1_m, scales)),
                 s23 = ld_u32_a2(blk + (offsetof_i(block_iq1_m, scales) + 4));
        uint32_t sc0 = s01 & 0xFFFF, sc1 = s01 >> 16, sc2 = s23 & 0xFFFF, sc3 = s23 >> 16;
        return h2f((uint16_t)((sc0 >> 12) | ((sc1 >> 8) & 0x00f0) | ((sc2 >> 4) & 0x0f00) | (sc3 & 0xf000)));
    }
    return h2f(ld_u16(blk));
}

template <int FMT> static __device__ __forceinline__ int iq_mult(const uint8_t *blk, int j) {
    switch (FMT) {
    case TYPE_IQ2_XXS: return 2 * (int)(ld_u32_a2(blk + offsetof_i(block_iq2_xxs, qs) + 8 * (j / 2) + 4) >> 28) + 1;
    case TYPE_IQ2_XS:  return 2 * ((blk[offsetof_i(block_iq2_xs, scales) + j / 2] >> (4 * (j & 1))) & 15) + 1;
    case TYPE_IQ2_S:   return 2 * ((blk[offsetof_i(block_iq2_s, scales) + j / 2] >> (4 * (j & 1))) & 15) + 1;
    case TYPE_IQ3_XXS:
        return 2 * (int)(ld_u32_a2(blk + offsetof_i(block_iq3_xxs, qs) + QK_K / 4 + 4 * (j / 2)) >> 28) + 1;
    case TYPE_IQ3_S:   return 2 * ((blk[offsetof_i(block_iq3_s, scales) + j / 4] >> (4 * ((j / 2) & 1))) & 15) + 1;
    case TYPE_IQ1_S:   return 2 * ((ld_u16(blk + offsetof_i(block_iq1_s, qh) + 2 * (j / 2)) >> 12) & 7) + 1;
    case TYPE_IQ1_M:
        return 2 * ((ld_u16(blk + offsetof_i(block_iq1_m, scales) + 2 * (j / 4)) >> (3 * (j % 4))) & 7) + 1;
    case TYPE_IQ4_XS: {
        int ib = j / 2;
        int ls = ((blk[offsetof_i(block_iq4_xs, scales_l) + ib / 2] >> (4 * (ib & 1))) & 15) |
                 ((ld_u16(blk + offsetof_i(block_iq4_xs, scales_h)) >> (2 * ib)) & 3) << 4;
        return ls - 32;
    }
    }
    return 0;
}

template <int FMT> static __device__ __forceinline__ void iq_group8(const uint8_t *blk, int g, uint32_t *w0, uint32_t *w1) {
    switch (FMT) {
    case TYPE_IQ2_XXS: {
        int ib = g / 4, l = g % 4;
        uint32_t a0 = ld_u32_a2(blk + offsetof_i(block_iq2_xxs, qs) + 8 * ib),
                 a1 = ld_u32_a2(blk + offsetof_i(block_iq2_xxs, qs) + 8 * ib + 4);
        const uint8_t *row = d_iq2xxs_grid[(a0 >> 8 * l) & 255];
        uint32_t s = d_ksigns[(a1 >> 7 * l) & 127];
        *w0 = apply_signs4(grid8_lo(row), s); *w1 = apply_signs4(grid8_hi(row), s >> 4);
        return;
    }
    case TYPE_IQ2_XS: {
        uint32_t v = ld_u16(blk + offsetof_i(block_iq2_xs, qs) + 2 * g);
        const uint8_t *row = d_iq2xs_grid[v & 511];
        uint32_t s = d_ksigns[v >> 9];
        *w0 = apply_signs4(grid8_lo(row), s); *w1 = apply_signs4(grid8_hi(row), s >> 4);
        return;
    }
    case TYPE_IQ2_S: {
        uint32_t idx = blk[offsetof_i(block_iq2_s, qs) + g] |
                       (((uint32_t)blk[offsetof_i(block_iq2_s, qh) + g / 4] >> (2 * (g % 4))) & 3u) << 8;
        const uint8_t *row = d_iq2s_grid[idx];
        uint32_t s = blk[offsetof_i(block_iq2_s, qs) + QK_K / 8 + g];   /* signs: qs' second half */
        *w0 = apply_signs4(grid8_lo(row), s); *w1 = apply_signs4(grid8_hi(row), s >> 4);
        return;
    }
    case TYPE_IQ3_XXS: {
        int ib = g / 4, l = g % 4;
        const uint8_t *qs = blk + offsetof_i(block_iq3_xxs, qs);
        uint32_t a = ld_u32_a2(qs + QK_K / 4 + 4 * ib);
        uint32_t s = d_ksigns[(a >> 7 * l) & 127];
        *w0 = apply_signs4(ld_u32(d_iq3xxs_grid[qs[8 * ib + 2 * l]]), s);
        *w1 = apply_signs4(ld_u32(d_iq3xxs_grid[qs[8 * ib + 2 * l + 1]]), s >> 4);
        return;
    }
    case TYPE_IQ3_S: {
        const uint8_t *qs = blk + offsetof_i(block_iq3_s, qs), *qh = blk + offsetof_i(block_iq3_s, qh);
        const uint8_t *signs = blk + offsetof_i(block_iq3_s, signs);
        int g0 = 2 * g, g1 = 2 * g + 1;
        uint32_t i0 = qs[g0] | (((uint32_t)qh[g0 / 8] >> (g0 % 8)) & 1u) << 8;
        uint32_t i1 = qs[g1] | (((uint32_t)qh[g1 / 8] >> (g1 % 8)) & 1u) << 8;
        uint32_t s = signs[g];
        *w0 = apply_signs4(ld_u32(d_iq3s_grid[i0]), s); *w1 = apply_signs4(ld_u32(d_iq3s_grid[i1]), s >> 4);
        return;
    }
    case TYPE_IQ1_S: {
        int ib = g / 4, l = g % 4;
        uint32_t qh = ld_u16(blk + offsetof_i(block_iq1_s, qh) + 2 * ib);
        int delta = (qh & 0x8000) ? -1 : 1;
        iq1_words(d_iq1s_grid[blk[offsetof_i(block_iq1_s, qs) + 4 * ib + l] | ((qh >> 3 * l) & 7u) << 8], delta,
                  w0, w1);
        return;
    }
    case TYPE_IQ1_M: {
        uint32_t nib = (blk[offsetof_i(block_iq1_m, qh) + g / 2] >> (4 * (g & 1))) & 15;
        int delta = (nib & 8) ? -1 : 1;
        iq1_words(d_iq1s_grid[blk[offsetof_i(block_iq1_m, qs) + g] | (nib & 7u) << 8], delta, w0, w1);
        return;
    }
    case TYPE_IQ4_XS: {
        int ib = g / 4, l = g % 4;
        const uint8_t *q = blk + offsetof_i(block_iq4_xs, qs) + 16 * ib + 8 * (l & 1);
        uint32_t a = ld_u32(q), c = ld_u32(q + 4);
        int sh = l >= 2 ? 4 : 0;
        *w0 = kv4((a >> sh) & 0x0F0F0F0Fu); *w1 = kv4((c >> sh) & 0x0F0F0F0Fu);
        return;
    }
    }
    *w0 = *w1 = 0;
}

/* IQ4_NL: 18 bytes = d | qs[16] against act_q8_0 (as Q4_0 with the kvalues table) */
template <int TM> static __device__ __forceinline__ void bp_iq4_nl(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_iq4_nl);
    float dw = h2f(ld_u16(blk));
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t q = ld_u32_a2(blk + offsetof_i(block_iq4_nl, qs) + 4 * i);
        lo[i] = kv4(q & 0x0F0F0F0Fu);
        hi[i] = kv4((q >> 4) & 0x0F0F0F0Fu);
    }
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

template <int FMT, int TM> static __device__ __forceinline__ void bp_iq_k(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * wfmt<FMT>::bsize;
    int S[TM];
#pragma unroll
    for (int t = 0; t < TM; t++) S[t] = 0;
#pragma unroll 2
    for (int j = 0; j < 16; j++) {
        uint32_t w[4];
        iq_group8<FMT>(blk, 2 * j, &w[0], &w[1]);
        iq_group8<FMT>(blk, 2 * j + 1, &w[2], &w[3]);
        int m = iq_mult<FMT>(blk, j);
#pragma unroll
        for (int t = 0; t < TM; t++) {
            if (t >= T) break;
            const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K) + offsetof_i(act_q8_K, qs) + 16 * j;
            int s = 0;
#pragma unroll
            for (int i = 0; i < 4; i++) s = __dp4a((int)w[i], ld_i32(a + 4 * i), s);
            S[t] += m * s;
        }
    }
    float dw = iq_d<FMT>(blk);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K);
        p[t] = __fmul_rn(__fmul_rn(__int2float_rn(S[t]), iq_fmt<FMT>::k()), __fmul_rn(dw, ld_f32(a)));
    }
}

template <int FMT, int TM> static __device__ __forceinline__ void bp_iq(BP_ARGS) {
    if (FMT == TYPE_IQ4_NL) bp_iq4_nl<TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ2_XXS) bp_iq_k<TYPE_IQ2_XXS, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ2_XS) bp_iq_k<TYPE_IQ2_XS, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ2_S) bp_iq_k<TYPE_IQ2_S, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ3_XXS) bp_iq_k<TYPE_IQ3_XXS, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ3_S) bp_iq_k<TYPE_IQ3_S, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ1_S) bp_iq_k<TYPE_IQ1_S, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ1_M) bp_iq_k<TYPE_IQ1_M, TM>(wr, b, act, as, T, p);
    else if (FMT == TYPE_IQ4_XS) bp_iq_k<TYPE_IQ4_XS, TM>(wr, b, act, as, T, p);
}

#endif
