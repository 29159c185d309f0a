/* Block partials p_b of every weight format on the GPU: the same exact int32 block sums and
 * the same float formula as the reference dots (src/quant/ref_*.c, docs/KERNELS.md section 4).
 *
 *   bp_<fmt><TM>(wr, b, act, as, T, p):  p[t] = partial of weight block b of row wr against
 *   block b of activation row t (at act + t * as), for t < T (TM >= T is the unrolled bound).
 *
 * Integer sums use __dp4a over 4 int8 lanes (exact, any order). Weight codes are unpacked
 * into int8x4 words with the layouts of src/quant/blocks.h; the unpack comments give the
 * byte/bit positions. Alignment: a row starts at r * row_bytes of a 256-byte aligned buffer,
 * so a block is aligned to gcd(block size, row bytes): Q4_1/Q5_1/Q2_K/Q4_K/Q5_K blocks to 4,
 * Q4_0/Q5_0/Q8_0/Q2_0/Q3_K/Q6_K to 2, MXFP4 to 1; loads use that width. */
#ifndef STRATA_QUANT_BLOCKS_CUH
#define STRATA_QUANT_BLOCKS_CUH
#include "cuda_common.cuh"
#include "formats.cuh"

/* Block strides and field offsets are sizeof / offsetof of src/quant/blocks.h's structs (the
 * weight's and the activation's). Where one load or one code path spans fields, the layout
 * it relies on is asserted here (the activation blocks' in act_quant.cuh). */
static_assert(offsetof_i(block_q4_0, d) == 0 && offsetof_i(block_q5_0, d) == 0 && offsetof_i(block_q8_0, d) == 0 &&
              offsetof_i(block_q2_0, d) == 0, "fp16 d first");
static_assert(offsetof_i(block_q4_1, d) == 0 && offsetof_i(block_q4_1, m) == 2 && offsetof_i(block_q5_1, d) == 0 &&
              offsetof_i(block_q5_1, m) == 2, "d | m read as one 32-bit word");
static_assert(offsetof_i(block_q2_K, dmin) == offsetof_i(block_q2_K, d) + 2, "Q2_K d | dmin read as one 32-bit word");
static_assert(offsetof_i(block_q4_K, d) == 0 && offsetof_i(block_q4_K, dmin) == 2 && offsetof_i(block_q5_K, d) == 0 &&
              offsetof_i(block_q5_K, dmin) == 2, "Q4_K / Q5_K d | dmin read as one 32-bit word");
static_assert(offsetof_i(block_q5_K, scales) == offsetof_i(block_q4_K, scales), "Q4_K / Q5_K share the scale unpack");

/* expand 4 bits (x & 15) into bit 0 of 4 bytes */
static __device__ __forceinline__ uint32_t spread4(uint32_t x) {
    return (x & 1) | (x & 2) << 7 | (x & 4) << 14 | (x & 8) << 21;
}
/* the 4 2-bit fields of a byte into 4 bytes */
static __device__ __forceinline__ uint32_t crumbs4(uint32_t v) {
    return (v & 3) | ((v >> 2) & 3) << 8 | ((v >> 4) & 3) << 16 | ((v >> 6) & 3) << 24;
}
static __device__ __forceinline__ uint32_t pack4(int a, int b, int c, int d) {
    return (uint32_t)(a & 255) | (uint32_t)(b & 255) << 8 | (uint32_t)(c & 255) << 16 | (uint32_t)(d & 255) << 24;
}
static __device__ __forceinline__ float mxfp4_e8m0_half_dev(uint32_t e) {
    return __uint_as_float(e < 2 ? 0x00200000u << e : (e - 1) << 23);
}

#define BP_ARGS const uint8_t *__restrict__ wr, int b, const uint8_t *__restrict__ act, size_t as, int T, float *p

/* ---- Q4_0: 18 bytes = d (fp16) | qs[16]; w_j = lo nibble of qs[j] - 8, w_{j+16} = hi - 8 */
template <int TM> static __device__ __forceinline__ void bp_q4_0(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q4_0);
    float dw = h2f(ld_u16(blk));
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t q = ld_u32_a2(blk + offsetof_i(block_q4_0, qs) + 4 * i);
        lo[i] = __vsub4(q & 0x0F0F0F0Fu, 0x08080808u);
        hi[i] = __vsub4((q >> 4) & 0x0F0F0F0Fu, 0x08080808u);
    }
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_0);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_0, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_0, qs) + QK4_0 / 2) + 4 * i), s);
        }
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* ---- Q4_1: 20 bytes = d | m (fp16) | qs[16]; w = q * d + m, q unsigned 0..15 */
template <int TM> static __device__ __forceinline__ void bp_q4_1(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q4_1);
    uint32_t dm = ld_u32(blk);
    float dw = h2f((uint16_t)dm), mw = h2f((uint16_t)(dm >> 16));
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t q = ld_u32(blk + offsetof_i(block_q4_1, qs) + 4 * i);
        lo[i] = q & 0x0F0F0F0Fu;
        hi[i] = (q >> 4) & 0x0F0F0F0Fu;
    }
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_1);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_1, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_1, qs) + QK4_1 / 2) + 4 * i), s);
        }
        float t1 = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
        p[t] = __fadd_rn(t1, __fmul_rn(mw, ld_f32(a + offsetof_i(act_q8_1, s))));
    }
}

/* ---- Q5_0: 22 bytes = d | qh (u32 LE, bit j = bit 4 of weight j) | qs[16]; w = q - 16 */
template <int TM> static __device__ __forceinline__ void bp_q5_0(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q5_0);
    float dw = h2f(ld_u16(blk));
    uint32_t qh = ld_u32_a2(blk + offsetof_i(block_q5_0, qh));
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t q = ld_u32_a2(blk + offsetof_i(block_q5_0, qs) + 4 * i);
        lo[i] = __vsub4((q & 0x0F0F0F0Fu) | spread4(qh >> (4 * i)) << 4, 0x10101010u);
        hi[i] = __vsub4(((q >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * i)) << 4, 0x10101010u);
    }
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_0);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_0, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_0, qs) + QK5_0 / 2) + 4 * i), s);
        }
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* ---- Q5_1: 24 bytes = d | m | qh | qs[16]; w = q * d + m, q unsigned 0..31 */
template <int TM> static __device__ __forceinline__ void bp_q5_1(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q5_1);
    uint32_t dm = ld_u32(blk);
    float dw = h2f((uint16_t)dm), mw = h2f((uint16_t)(dm >> 16));
    uint32_t qh = ld_u32(blk + offsetof_i(block_q5_1, qh));
    uint32_t lo[4], hi[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t q = ld_u32(blk + offsetof_i(block_q5_1, qs) + 4 * i);
        lo[i] = (q & 0x0F0F0F0Fu) | spread4(qh >> (4 * i)) << 4;
        hi[i] = ((q >> 4) & 0x0F0F0F0Fu) | spread4(qh >> (16 + 4 * i)) << 4;
    }
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_1);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_1, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_1, qs) + QK5_1 / 2) + 4 * i), s);
        }
        float t1 = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
        p[t] = __fadd_rn(t1, __fmul_rn(mw, ld_f32(a + offsetof_i(act_q8_1, s))));
    }
}

/* ---- Q8_0: 34 bytes = d | int8 qs[32] */
template <int TM> static __device__ __forceinline__ void bp_q8_0(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q8_0);
    float dw = h2f(ld_u16(blk));
    uint32_t q[8];
#pragma unroll
    for (int i = 0; i < 8; i++) q[i] = ld_u32_a2(blk + offsetof_i(block_q8_0, qs) + 4 * i);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_0);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 8; i++) s = __dp4a((int)q[i], ld_i32(a + offsetof_i(act_q8_0, qs) + 4 * i), s);
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* ---- Q2_0 (strata): 18 bytes = d | qs[16]; weight j: (qs[j/4] >> 2(j%4)) & 3, minus 1 */
template <int TM> static __device__ __forceinline__ void bp_q2_0(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q2_0);
    float dw = h2f(ld_u16(blk));
    uint32_t q[16];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        uint32_t w = ld_u32_a2(blk + offsetof_i(block_q2_0, qs) + 4 * i);
#pragma unroll
        for (int k = 0; k < 4; k++) q[4 * i + k] = __vsub4(crumbs4((w >> (8 * k)) & 255), 0x01010101u);
    }
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

/* ---- MXFP4: 17 bytes = e (e8m0) | qs[16]; doubled e2m1 values, halved scale */
template <int TM> static __device__ __forceinline__ void bp_mxfp4(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_mxfp4);
    float dw = mxfp4_e8m0_half_dev(blk[offsetof_i(block_mxfp4, e)]);
    uint32_t lo[4], hi[4], qw[4];
    ld_run_any<4>(qw, blk + offsetof_i(block_mxfp4, qs));   /* four words by 4 to 6 loads (cuda_common.cuh) */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t q = qw[i];
        lo[i] = lut16<LUT_MXFP4>(q);   /* each code's doubled e2m1 value by byte permutes (formats.cuh) */
        hi[i] = lut16<LUT_MXFP4>(q >> 4);
    }
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_0);
        int s = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s = __dp4a((int)lo[i], ld_i32(a + offsetof_i(act_q8_0, qs) + 4 * i), s);
            s = __dp4a((int)hi[i], ld_i32(a + (offsetof_i(act_q8_0, qs) + QK_MXFP4 / 2) + 4 * i), s);
        }
        p[t] = __fmul_rn(__int2float_rn(s), __fmul_rn(dw, ld_f32(a)));
    }
}

/* ---- K-quants: 256-weight super-blocks against act_q8_K --------------------------------
 * Per column the super-block is walked sub-block by sub-block (weights unpacked again per
 * column: the codes are cheap to rebuild and registers stay few). */

/* Q2_K: 84 bytes = scales[16] | qs[64] | d | dmin. Sub-block s (16 weights): codes
 * (qs[32(s/8) + 16(s%2) + k] >> 2((s%8)/2)) & 3; scale nibble lo, min nibble hi. */
template <int TM> static __device__ __forceinline__ void bp_q2_K(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q2_K);
    uint32_t dd = ld_u32(blk + offsetof_i(block_q2_K, d));
    float dw = h2f((uint16_t)dd), dmw = h2f((uint16_t)(dd >> 16));
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K);
        int S = 0, M = 0;
#pragma unroll 4
        for (int s = 0; s < 16; s++) {
            const uint8_t *qs = blk + offsetof_i(block_q2_K, qs) + 32 * (s / 8) + 16 * (s % 2);
            int sh = 2 * ((s % 8) / 2), sum = 0;
#pragma unroll
            for (int i = 0; i < 4; i++)
                sum = __dp4a((int)((ld_u32(qs + 4 * i) >> sh) & 0x03030303u),
                             ld_i32(a + offsetof_i(act_q8_K, qs) + 16 * s + 4 * i), sum);
            int sc = blk[offsetof_i(block_q2_K, scales) + s];
            S += (sc & 15) * sum;
            M += (sc >> 4) * (int)*(const int16_t *)(a + offsetof_i(act_q8_K, bsums) + 2 * s);
        }
        float ad = ld_f32(a);
        p[t] = __fsub_rn(__fmul_rn(__int2float_rn(S), __fmul_rn(dw, ad)), __fmul_rn(__int2float_rn(M), __fmul_rn(dmw, ad)));
    }
}

/* Q3_K: 110 bytes = hmask[32] | qs[64] | scales[12] | d. q = low 2 bits (as Q2_K) - 4 unless
 * hmask[j%32] bit j/32 is set; 16 6-bit scales minus 32 (src/quant/ref_kquants.c). */
template <int TM> static __device__ __forceinline__ void bp_q3_K(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q3_K);
    float dw = h2f(ld_u16(blk + offsetof_i(block_q3_K, d)));
    const uint8_t *scb = blk + offsetof_i(block_q3_K, scales);
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K);
        int S = 0;
#pragma unroll 4
        for (int s = 0; s < 16; s++) {
            const uint8_t *qs = blk + offsetof_i(block_q3_K, qs) + 32 * (s / 8) + 16 * (s % 2);
            const uint8_t *hm = blk + offsetof_i(block_q3_K, hmask) + 16 * (s % 2);
            int sh = 2 * ((s % 8) / 2), hb = s / 2, sum = 0;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t lo = (ld_u32_a2(qs + 4 * i) >> sh) & 0x03030303u;
                uint32_t h = (ld_u32_a2(hm + 4 * i) >> hb) & 0x01010101u;
                sum = __dp4a((int)__vsub4(lo | h << 2, 0x04040404u),
                             ld_i32(a + offsetof_i(act_q8_K, qs) + 16 * s + 4 * i), sum);
            }
            int lo = s < 8 ? scb[s] & 0x0F : scb[s - 8] >> 4;
            int hi = (scb[8 + s % 4] >> (2 * (s / 4))) & 3;
            S += ((lo | hi << 4) - 32) * sum;
        }
        p[t] = __fmul_rn(__int2float_rn(S), __fmul_rn(dw, ld_f32(a)));
    }
}

/* Q4_K / Q5_K 6-bit scale and min of sub-block j (12 packed bytes) */
static __device__ __forceinline__ void kq_scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else { *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4; *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4; }
}

/* Q4_K: 144 bytes = d | dmin | scales[12] | qs[128]; sub-block s (32 weights):
 * (qs[32(s/2) + k] >> 4(s%2)) & 15. Q5_K: 176 bytes = d | dmin | scales | qh[32] | qs[128],
 * bit 4 from qh[k] bit s. */
template <int TM, int Q5> static __device__ __forceinline__ void bp_q45_K(BP_ARGS) {
    const int bs = Q5 ? (int)sizeof_i(block_q5_K) : (int)sizeof_i(block_q4_K);
    const int qoff = Q5 ? (int)offsetof_i(block_q5_K, qs) : (int)offsetof_i(block_q4_K, qs);
    const uint8_t *blk = wr + (size_t)b * bs;
    uint32_t dd = ld_u32(blk);
    float dw = h2f((uint16_t)dd), dmw = h2f((uint16_t)(dd >> 16));
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K);
        int S = 0, M = 0;
#pragma unroll 2
        for (int s = 0; s < 8; s++) {
            const uint8_t *qs = blk + qoff + 32 * (s / 2);
            int sh = 4 * (s % 2), sum = 0;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                uint32_t q = (ld_u32(qs + 4 * i) >> sh) & 0x0F0F0F0Fu;
                if (Q5) q |= ((ld_u32(blk + offsetof_i(block_q5_K, qh) + 4 * i) >> s) & 0x01010101u) << 4;
                sum = __dp4a((int)q, ld_i32(a + offsetof_i(act_q8_K, qs) + 32 * s + 4 * i), sum);
            }
            int sc, m;
            kq_scale_min(blk + offsetof_i(block_q4_K, scales), s, &sc, &m);
            S += sc * sum;
            M += m * ((int)*(const int16_t *)(a + offsetof_i(act_q8_K, bsums) + 4 * s) +
                      (int)*(const int16_t *)(a + (offsetof_i(act_q8_K, bsums) + 2) + 4 * s));
        }
        float ad = ld_f32(a);
        p[t] = __fsub_rn(__fmul_rn(__int2float_rn(S), __fmul_rn(dw, ad)), __fmul_rn(__int2float_rn(M), __fmul_rn(dmw, ad)));
    }
}

/* Q6_K: 210 bytes = ql[128] | qh[64] | int8 scales[16] | d. Sub-block s (16 weights):
 * lo = (ql[64(s/8) + 16(s%4) + k] >> 4((s%8)/4)) & 15, hi = (qh[32(s/8) + 16(s%2) + k] >>
 * 2((s%8)/2)) & 3, q = (lo | hi << 4) - 32. */
template <int TM> static __device__ __forceinline__ void bp_q6_K(BP_ARGS) {
    const uint8_t *blk = wr + (size_t)b * sizeof_i(block_q6_K);
    float dw = h2f(ld_u16(blk + offsetof_i(block_q6_K, d)));
#pragma unroll
    for (int t = 0; t < TM; t++) {
        if (t >= T) break;
        const uint8_t *a = act + t * as + (size_t)b * sizeof_i(act_q8_K);
        int S = 0;
#pragma unroll 4
        for (int s = 0; s < 16; s++) {
            const uint8_t *ql = blk + offsetof_i(block_q6_K, ql) + 64 * (s / 8) + 16 * (s % 4);
            const uint8_t *qh = blk + offsetof_i(block_q6_K, qh) + 32 * (s / 8) + 16 * (s % 2);
            int sl = 4 * ((s % 8) / 4), shh = 2 * ((s % 8) / 2), sum = 0;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                uint32_t q = ((ld_u32_a2(ql + 4 * i) >> sl) & 0x0F0F0F0Fu) | ((ld_u32_a2(qh + 4 * i) >> shh) & 0x03030303u) << 4;
                sum = __dp4a((int)__vsub4(q, 0x20202020u), ld_i32(a + offsetof_i(act_q8_K, qs) + 16 * s + 4 * i), sum);
            }
            S += (int)(int8_t)blk[offsetof_i(block_q6_K, scales) + s] * sum;
        }
        p[t] = __fmul_rn(__int2float_rn(S), __fmul_rn(dw, ld_f32(a)));
    }
}
#endif
