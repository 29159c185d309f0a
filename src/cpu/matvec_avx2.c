/* AVX2 matvec kernels for the float, legacy and K-quant formats (compiled with
 * -mavx2 -mfma -mf16c; chosen at run time by src/cpu/matvec.c).
 *
 * Every kernel reproduces its format's reference dot bit for bit (docs/KERNELS.md):
 *  - block integer sums are exact int32 (maddubs/madd; any order gives the same integer),
 *  - the block partial uses the reference's float operations in the reference's order
 *    (mul then add, never fused),
 *  - partials go to lane b % 32: eight consecutive blocks form one 8-float vector, and
 *    block group g = b / 8 lands in accumulator vector g % 4 (lanes 8(g%4) .. 8(g%4)+7),
 *  - the 32 lanes combine by the canonical chain (STRATA_CANON=serial, the default: 8 rows side
 *    by side, canon_park4 / canon_chain8 in matmul_avx2.h) or, with STRATA_CANON=tree, by the
 *    16-8-4-2-1 tree (canon_tree4).
 * Shape: rows outer, the 8 blocks of a group decoded once, then every column inner, so
 * weights are read once for all T columns and column c's bits never depend on T.
 * T is a compile-time constant inside the kernels (one instantiation per T = 1..8), so the
 * accumulators of small T live in registers. */
#include "kernels.h"
#include "matvec.h"
#include "../quant/quant.h"
#include "../quant/ref.h"
#include "../quant/iq_tables.h"
#include "matmul_avx2.h"
#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* ---- shared helpers (canon_tree4: matmul_avx2.h) ----------------------------------- */

/* v[k] = sum of the 8 int32 of s[k], k = 0..7 (exact integers: order is free) */
ALWAYS_INLINE __m256i hsum8x8_epi32(const __m256i s[8]) {
    __m256i t0 = _mm256_hadd_epi32(s[0], s[1]), t1 = _mm256_hadd_epi32(s[2], s[3]);
    __m256i t2 = _mm256_hadd_epi32(s[4], s[5]), t3 = _mm256_hadd_epi32(s[6], s[7]);
    __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
    /* u0 = [s0 s1 s2 s3 (lanes 0-3) | s0 s1 s2 s3 (lanes 4-7)], u1 likewise for s4..s7 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20),
                            _mm256_permute2x128_si256(u0, u1, 0x31));
}

/* 8 int32 partial sums of unsigned w (0..255, products must fit int16 pairs) times int8 a */
ALWAYS_INLINE __m256i dot_u8_i8(__m256i w, __m256i a) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), _mm256_set1_epi16(1));
}
/* signed w times signed a (a never -128): |w| * (a with w's sign) */
ALWAYS_INLINE __m256i dot_i8_i8(__m256i wabs, __m256i w, __m256i a) {
    return dot_u8_i8(wabs, _mm256_sign_epi8(a, w));
}

ALWAYS_INLINE uint32_t ld32u(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
ALWAYS_INLINE uint16_t ld16u(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* 16 packed nibbles -> 32 bytes: low nibbles first (weights 0..15), then high (16..31) */
ALWAYS_INLINE __m256i nibbles32(const uint8_t *qs) {
    /* both 128-bit halves hold the 16 bytes; the high half shifts right by 4 (per 64-bit
     * lane, so no bits cross a byte that the mask keeps) */
    __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi64(raw, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes, byte j = 0xFF if bit j is set */
ALWAYS_INLINE __m256i bits32_mask(uint32_t x) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)x), shuf);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* The low / high halves of 8 32-bit words as IEEE halves -> 8 floats (exact) */
ALWAYS_INLINE __m256 halves_lo_to_f32(__m256i g) {
    const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                        0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    __m256i p = _mm256_permute4x64_epi64(_mm256_shuffle_epi8(g, sh), 0x08);
    return _mm256_cvtph_ps(_mm256_castsi256_si128(p));
}
ALWAYS_INLINE __m256 halves_hi_to_f32(__m256i g) {
    return halves_lo_to_f32(_mm256_srli_epi32(g, 16));
}
/* ---- activation quantization (bits of src/quant/act.c) ------------------------------- */

/* 8 floats -> 8 int32 codes: v = x * id, clamp with NaN -> -127 (max_ps returns its second
 * operand when the first is NaN), round half to even (cvtps in the default mode). */
ALWAYS_INLINE __m256i act_codes8(const float *x, __m256 id) {
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), id);
    v = _mm256_max_ps(v, _mm256_set1_ps(-127.0f));
    v = _mm256_min_ps(v, _mm256_set1_ps(127.0f));
    return _mm256_cvtps_epi32(v);
}
/* Quantize one block of `blck` (multiple of 32) values; returns d; *sum = sum of codes;
 * sum16 (optional) gets the sums per 16 values. */
static float act_block_avx2(const float *x, int blck, int8_t *q, int32_t *sum, int16_t *sum16) {
    const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    /* max_ps(|x|, m): a NaN |x| returns m, so NaN is skipped as in the scalar `a > amax` */
    for (int i = 0; i < blck; i += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), absmask), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    float amax = _mm_cvtss_f32(h);
    float d = amax / 127.0f;
    float idf = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 id = _mm256_set1_ps(idf);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i total = _mm256_setzero_si256();
    for (int i = 0; i < blck; i += 32) {
        __m256i i0 = act_codes8(x + i, id), i1 = act_codes8(x + i + 8, id);
        __m256i i2 = act_codes8(x + i + 16, id), i3 = act_codes8(x + i + 24, id);
        __m256i s01 = _mm256_add_epi32(i0, i1), s23 = _mm256_add_epi32(i2, i3);
        if (sum16) {
            __m256i t = _mm256_hadd_epi32(s01, s23);    /* [s01 pairs, s23 pairs | ...] */
            t = _mm256_hadd_epi32(t, t);                /* [s01 lo4, s23 lo4, .. | s01 hi4, s23 hi4, ..] */
            int32_t v[8]; _mm256_storeu_si256((__m256i *)v, t);
            sum16[i / 16] = (int16_t)(v[0] + v[4]);
            sum16[i / 16 + 1] = (int16_t)(v[1] + v[5]);
        }
        total = _mm256_add_epi32(total, _mm256_add_epi32(s01, s23));
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        _mm256_storeu_si256((__m256i *)(q + i), _mm256_permutevar8x32_epi32(p, perm));
    }
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(total), _mm256_extracti128_si256(total, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    *sum = _mm_cvtsi128_si32(t);
    return d;
}

void act_quantize_row_avx2(int f, const float *x, void *dst, int64_t n) {
    int32_t sum;
    switch (f) {
    case ACT_Q8_0: {
        act_q8_0 *b = dst;
        for (int64_t i = 0; i < n / 32; i++) b[i].d = act_block_avx2(x + i * 32, 32, b[i].qs, &sum, NULL);
        break;
    }
    case ACT_Q8_1: {
        act_q8_1 *b = dst;
        for (int64_t i = 0; i < n / 32; i++) {
            b[i].d = act_block_avx2(x + i * 32, 32, b[i].qs, &sum, NULL);
            b[i].s = b[i].d * (float)sum;
        }
        break;
    }
    case ACT_Q8_2: {
        act_q8_2 *b = dst;
        for (int64_t i = 0; i < n / 64; i++) {
            b[i].d = act_block_avx2(x + i * 64, 64, b[i].qs, &sum, NULL);
            b[i].s = b[i].d * (float)sum;
        }
        break;
    }
    case ACT_Q8_K: {
        act_q8_K *b = dst;
        for (int64_t i = 0; i < n / QK_K; i++) b[i].d = act_block_avx2(x + i * QK_K, QK_K, b[i].qs, &sum, b[i].bsums);
        break;
    }
    default:
        act_quantize_row((act_format)f, x, dst, n);
        break;
    }
}

/* ---- float weights (ACT_F32): per-element lanes -------------------------------------- */

float f32_dot_canon_avx2(const float *w, const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(w + k + 8), _mm256_loadu_ps(x + k + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(w + k + 16), _mm256_loadu_ps(x + k + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(w + k + 24), _mm256_loadu_ps(x + k + 24)));
    }
    if (k < n) {   /* tail: missing elements add +0.0, which leaves a lane unchanged */
        float tw[32] = { 0 }, tx[32] = { 0 };
        for (int64_t i = k; i < n; i++) { tw[i - k] = w[i]; tx[i - k] = x[i]; }
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(tw), _mm256_loadu_ps(tx)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(tw + 8), _mm256_loadu_ps(tx + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(tw + 16), _mm256_loadu_ps(tx + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(tw + 24), _mm256_loadu_ps(tx + 24)));
    }
    return canon_tree4(a0, a1, a2, a3);
}

enum { FW_F32, FW_F16, FW_BF16 };

/* 8 weights of a float row as f32 */
ALWAYS_INLINE __m256 load_w8(const void *w, int64_t k, const int fmt) {
    if (fmt == FW_F32) return _mm256_loadu_ps((const float *)w + k);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + k));
    if (fmt == FW_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
ALWAYS_INLINE float load_w1(const void *w, int64_t k, const int fmt) {
    if (fmt == FW_F32) return ((const float *)w)[k];
    uint16_t h = ((const uint16_t *)w)[k];
    if (fmt == FW_F16) return _cvtsh_ss(h);
    uint32_t b = (uint32_t)h << 16; float f; memcpy(&f, &b, 4); return f;
}

/* One float row against one column: the four lane vectors (lanes 0-7, 8-15, 16-23, 24-31) */
ALWAYS_INLINE void float_lanes(const void *w, const float *x, int64_t n, __m256 a[4], const int fmt) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(load_w8(w, k, fmt), _mm256_loadu_ps(x + k)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(load_w8(w, k + 8, fmt), _mm256_loadu_ps(x + k + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(load_w8(w, k + 16, fmt), _mm256_loadu_ps(x + k + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(load_w8(w, k + 24, fmt), _mm256_loadu_ps(x + k + 24)));
    }
    if (k < n) {
        float tw[32] = { 0 }, tx[32] = { 0 };
        for (int64_t i = k; i < n; i++) { tw[i - k] = load_w1(w, i, fmt); tx[i - k] = x[i]; }
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(_mm256_loadu_ps(tw), _mm256_loadu_ps(tx)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(_mm256_loadu_ps(tw + 8), _mm256_loadu_ps(tx + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(_mm256_loadu_ps(tw + 16), _mm256_loadu_ps(tx + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(_mm256_loadu_ps(tw + 24), _mm256_loadu_ps(tx + 24)));
    }
    a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
}

/* Float rows: a row is at most a few tens of KB, so columns loop inside a row and reread the
 * row from L1/L2 (DRAM traffic stays one pass over W). STRATA_CANON=serial: rows in groups of
 * CANON_ROWS, their chains side by side (canon_chain8, matmul_avx2.h). */
ALWAYS_INLINE void float_rows(const void *W, size_t row_bytes, int64_t n, const void *act,
                              size_t act_stride, const int T, float *y, int64_t n_out,
                              int64_t r0, int64_t r1, const int fmt, const int ser) {
    if (!ser) {
        for (int64_t r = r0; r < r1; r++) {
            const void *w = (const char *)W + (size_t)r * row_bytes;
            for (int c = 0; c < T; c++) {
                const float *x = (const float *)((const char *)act + (size_t)c * act_stride);
                __m256 a[4];
                float_lanes(w, x, n, a, fmt);
                y[(size_t)c * (size_t)n_out + (size_t)r] = canon_tree4(a[0], a[1], a[2], a[3]);
            }
        }
        return;
    }
    CANON_SERIAL_ROWS(r0, r1, T, n, y, n_out,
                      for (int c = 0; c < T; c++)
                          float_lanes((const char *)W + (size_t)r_ * row_bytes,
                                      (const float *)((const char *)act + (size_t)c * act_stride), n, acc_[c], fmt));
}

/* ---- 32-weight (and Q2_0's 64-weight) block formats ------------------------------------
 * One skeleton; `fmt` is a compile-time constant picking the decode and the partial.
 * Codes enter maddubs unsigned where the format allows it: Q4_0, Q5_0 and Q2_0 store
 * code + offset (8, 16, 1), so their exact block sum is sum(u * a) - offset * sum(a), with
 * sum(a) per block computed once per call. Q8_0, IQ4_NL and MXFP4 (in the wide kernels'
 * decode) are signed: |w| * sign(a, w). FB_MXFP4U is MXFP4 for the T <= 8 kernels: its values
 * -12..12 enter unsigned as value + 12 (0..24, the table shifted), the block sum
 * sum((v + 12) * a) - 12 * sum(a): the same integer as the signed form's, so the same bits, with
 * no abs and no sign per block and column, and four maddubs lanes still within int16
 * (4 * 2 * 24 * 127 = 24,384). */
enum { FB_Q4_0, FB_Q4_1, FB_Q5_0, FB_Q5_1, FB_Q8_0, FB_MXFP4, FB_Q2_0, FB_IQ4_NL, FB_MXFP4U,
       FB_Q8_0V, FB_IQ4_NLV };

#define FB_BSIZE(f) ((f) == FB_Q4_0 ? 18 : (f) == FB_Q4_1 ? 20 : (f) == FB_Q5_0 ? 22 : \
                     (f) == FB_Q5_1 ? 24 : (f) == FB_Q8_0 || (f) == FB_Q8_0V ? 34 : (f) == FB_MXFP4 || (f) == FB_MXFP4U ? 17 : 18)
#define FB_ASIZE(f) ((f) == FB_Q4_1 || (f) == FB_Q5_1 ? (int)sizeof(act_q8_1) : \
                     (f) == FB_Q2_0 ? (int)sizeof(act_q8_2) : (int)sizeof(act_q8_0))
#define FB_AQS(f)   ((f) == FB_Q4_1 || (f) == FB_Q5_1 || (f) == FB_Q2_0 ? 8 : 4)  /* offset of qs */
#define FB_HAS_MIN(f) ((f) == FB_Q4_1 || (f) == FB_Q5_1)                     /* w = q*d + m */
#define FB_SIGNED(f) ((f) == FB_Q8_0 || (f) == FB_MXFP4 || (f) == FB_IQ4_NL)  /* sign trick */
#define FB_OFFSET(f) ((f) == FB_Q4_0 ? 8 : (f) == FB_Q5_0 ? 16 : (f) == FB_Q2_0 ? 1 : (f) == FB_MXFP4U ? 12 : \
                      FB_DP(f) ? 128 : 0)
#define FB_VPB(f)   ((f) == FB_Q2_0 ? 2 : 1)   /* 32-byte vectors per block */
#define FB_DP(f)    ((f) == FB_Q8_0V || (f) == FB_IQ4_NLV)   /* vpdpbusd twins (AVX-VNNI) */
#define FB_D16(f)   ((f) == FB_IQ4_NL || (f) == FB_IQ4_NLV)   /* a group's d by word blends (fb_group) */
/* maddubs lanes small enough that four of them still fit int16 (4 * 2 * 31 * 127 < 32768):
 * every format but Q8_0 and IQ4_NL, whose products reach 128 * 127 and 127 * 127. */
#define FB_SUM16(f) ((f) != FB_Q8_0 && (f) != FB_IQ4_NL && !FB_DP(f))

/* Decode weight block `b` into VPB vectors of int8 codes: unsigned codes (Q4_0, Q5_0,
 * Q2_0, MXFP4U with their offset still in; Q8_0V, IQ4_NLV: value + 128), q (Q4_1, Q5_1), signed
 * values (Q8_0, IQ4_NL, MXFP4). */
ALWAYS_INLINE void fb_decode(const uint8_t *b, __m256i *w, const int fmt) {
    if (fmt == FB_Q4_0) {
        w[0] = nibbles32(b + 2);
    } else if (fmt == FB_Q4_1) {
        w[0] = nibbles32(b + 4);
    } else if (fmt == FB_Q5_0 || fmt == FB_Q5_1) {
        const int off = fmt == FB_Q5_0 ? 2 : 4;
        uint32_t qh; memcpy(&qh, b + off, 4);
        __m256i hi = _mm256_and_si256(bits32_mask(qh), _mm256_set1_epi8(0x10));
        w[0] = _mm256_or_si256(nibbles32(b + off + 4), hi);
    } else if (fmt == FB_Q8_0 || fmt == FB_Q8_0V) {
        w[0] = _mm256_loadu_si256((const __m256i *)(b + 2));
        if (fmt == FB_Q8_0V) w[0] = _mm256_xor_si256(w[0], _mm256_set1_epi8((char)0x80));   /* q + 128 */
    } else if (fmt == FB_IQ4_NL || fmt == FB_IQ4_NLV) {   /* the 16 values of kvalues_iq4nl by nibble, Q4_0's layout */
        __m256i kv = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)kvalues_iq4nl));
        if (fmt == FB_IQ4_NLV) kv = _mm256_xor_si256(kv, _mm256_set1_epi8((char)0x80));   /* the table + 128 */
        w[0] = _mm256_shuffle_epi8(kv, nibbles32(b + 2));
    } else if (fmt == FB_MXFP4) {
        const __m256i kv = _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
                                            0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
        w[0] = _mm256_shuffle_epi8(kv, nibbles32(b + 1));
    } else if (fmt == FB_MXFP4U) {   /* value + 12 */
        const __m256i kv = _mm256_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
                                            12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
        w[0] = _mm256_shuffle_epi8(kv, nibbles32(b + 1));
    } else { /* FB_Q2_0: weight j's code at (qs[j/4] >> 2(j%4)) & 3 */
        const __m256i rep0 = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                              4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
        const __m256i rep1 = _mm256_add_epi8(rep0, _mm256_set1_epi8(8));
        /* byte t needs a right shift of 2 (t % 4): two blend stages (shift 2 where t%4 odd,
         * shift 4 where t%4 >= 2); bits a 16-bit shift drags in from the neighbour byte land
         * above bit 1 and are masked off */
        const __m256i odd = _mm256_set1_epi32((int)0xFF00FF00u), two = _mm256_set1_epi32((int)0xFFFF0000u);
        __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(b + 2)));
        for (int v = 0; v < 2; v++) {
            __m256i x = _mm256_shuffle_epi8(raw, v ? rep1 : rep0);
            x = _mm256_blendv_epi8(x, _mm256_srli_epi16(x, 2), odd);
            x = _mm256_blendv_epi8(x, _mm256_srli_epi16(x, 4), two);
            w[v] = _mm256_and_si256(x, _mm256_set1_epi8(3));
        }
    }
}

/* v[k] = sum of the 16 int16 of m[k] (each |lane| small enough that 4 of them fit int16):
 * two int16 horizontal-add levels, then one madd, instead of 8 madds and 7 int32 hadds. */
ALWAYS_INLINE __m256i hsum8x16_epi16(const __m256i m[8]) {
    __m256i u01 = _mm256_hadd_epi16(m[0], m[1]), u23 = _mm256_hadd_epi16(m[2], m[3]);
    __m256i u45 = _mm256_hadd_epi16(m[4], m[5]), u67 = _mm256_hadd_epi16(m[6], m[7]);
    const __m256i ones = _mm256_set1_epi16(1);
    /* x0 = [m0 m1 m2 m3 (low 128 halves) | m0 m1 m2 m3 (high halves)], x1 likewise m4..m7 */
    __m256i x0 = _mm256_madd_epi16(_mm256_hadd_epi16(u01, u23), ones);
    __m256i x1 = _mm256_madd_epi16(_mm256_hadd_epi16(u45, u67), ones);
    return _mm256_add_epi32(_mm256_permute2x128_si256(x0, x1, 0x20),
                            _mm256_permute2x128_si256(x0, x1, 0x31));
}

/* One group of up to 8 blocks (nk; 8 is a compile-time constant on the hot path) of one row,
 * for all T columns: decode the weights once, then per column 8 exact block sums, one
 * vector of 8 partials, added to accumulator vector `lane` (= group index % 4).
 * dA/sA/nA: per-call copies of the activation d, s and integer sum per block (NULL: read
 * them from the blocks). */
ALWAYS_INLINE void fb_group(const uint8_t *wb, const uint8_t *act, size_t act_stride,
                            const float *dA, const float *sA, const int32_t *nA, int64_t nb,
                            int64_t g0, const int nk, __m256 acc[][4], const int lane,
                            const int T, const int fmt) {
    const int BS = FB_BSIZE(fmt), AS = FB_ASIZE(fmt), VPB = FB_VPB(fmt);
    __m256i wv[8][2], wa[8][2];
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        if (k < nk) fb_decode(wb + (size_t)k * (size_t)BS, wv[k], fmt);
        else for (int v = 0; v < VPB; v++) wv[k][v] = _mm256_setzero_si256();   /* tail: zero codes */
        /* |w| kept for the columns when there are several; at T = 1 it is formed at its one use, so
         * the 8 blocks' |w| never sit in registers beside their w (16 of them: the spills of the
         * signed formats' T = 1 instances) */
        if (FB_SIGNED(fmt) && T > 1) wa[k][0] = _mm256_sign_epi8(wv[k][0], wv[k][0]);
    }
    /* weight scales of the 8 blocks from the leading 32-bit word of each block (d, and m for
     * Q4_1/Q5_1; MXFP4: e in the low byte); a tail group's missing blocks get zero scales */
    /* lanes k < nk (all lanes on the hot path): a tail group masks its gathers and loads,
     * so it never touches memory past the row and its missing lanes are zero */
    const __m256i lmask = _mm256_cmpgt_epi32(_mm256_set1_epi32(nk), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    __m256 dw, mw = _mm256_setzero_ps();
    {
        const __m256i idx = _mm256_setr_epi32(0, BS, 2 * BS, 3 * BS, 4 * BS, 5 * BS, 6 * BS, 7 * BS);
        /* a whole group's words by eight scalar loads: faster than the gather on the dev
         * machine's Zen 4 (Q4_0 T = 1 129 -> 100 us, Q8_0 250 -> 156 on 1024 x 4096); Q5_1
         * takes its d and m as sixteen 16-bit loads straight into two F16C conversions (the
         * 32-bit words then split measured slower, 162 -> 197 us; these 155 -> 111 for Q4_1,
         * which now gathers them from whole vectors, as IQ4_NL its d: the branches below).
         * Keep this one-expression form: the same loads written as an if / else chain compiled
         * to slower code (Q8_0 150 -> 190-290 us at T = 1). */
        __m256i g = (FB_HAS_MIN(fmt) || FB_D16(fmt)) && nk == 8 ? _mm256_setzero_si256()   /* unused: the words below */
                  : nk == 8 && !FB_HAS_MIN(fmt)
                        ? _mm256_setr_epi32((int)ld32u(wb), (int)ld32u(wb + BS), (int)ld32u(wb + 2 * BS), (int)ld32u(wb + 3 * BS),
                                            (int)ld32u(wb + 4 * BS), (int)ld32u(wb + 5 * BS), (int)ld32u(wb + 6 * BS),
                                            (int)ld32u(wb + 7 * BS))
                  : nk == 8 ? _mm256_i32gather_epi32((const int *)wb, idx, 1)
                            : _mm256_mask_i32gather_epi32(_mm256_setzero_si256(), (const int *)wb, idx, lmask, 1);
        if (fmt == FB_Q4_1 && nk == 8) {
            /* Q4_1's 20-byte blocks: block k's (d, m) word is dword 5k of the group's 160 bytes,
             * i.e. dword (5k) % 8 = 0, 5, 2, 7, 4, 1, 6, 3 of the group's 32-byte vector 5k / 8 =
             * 0, 0, 1, 1, 2, 3, 3, 4: eight distinct dwords, so four blends put each where the
             * vector's lane says and one permute orders them (5 loads, 4 blends, 1 permute in
             * place of sixteen 16-bit loads and their inserts); then the words' halves as the
             * other formats take them (a form with one shuffle for both halves measured even:
             * 2048 x 8192 497 / 511 us, 576 x 1536 42.1 / 42.1) */
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)wb), v1 = _mm256_loadu_si256((const __m256i *)(wb + 32));
            const __m256i v2 = _mm256_loadu_si256((const __m256i *)(wb + 64)), v3 = _mm256_loadu_si256((const __m256i *)(wb + 96));
            const __m256i v4 = _mm256_loadu_si256((const __m256i *)(wb + 128));
            __m256i b = _mm256_blend_epi32(v0, v1, 0x84);   /* dwords 2, 7 from v1 */
            b = _mm256_blend_epi32(b, v2, 0x10);            /* 4 from v2 */
            b = _mm256_blend_epi32(b, v3, 0x42);            /* 1, 6 from v3 */
            b = _mm256_blend_epi32(b, v4, 0x08);            /* 3 from v4 */
            b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 5, 2, 7, 4, 1, 6, 3));
            dw = halves_lo_to_f32(b);
            mw = halves_hi_to_f32(b);
        } else if (FB_D16(fmt) && nk == 8) {
            /* IQ4_NL's 18-byte blocks: block k's d is 16-bit word 9k of the group's
             * first 128 bytes, word 9k % 16 = 0, 9, 2, 11, 4, 13, 6, 15 of 32-byte vector k / 2:
             * position k of lane k % 2 in each, so three word blends gather them (even blocks in
             * the low lane, odd in the high), one byte shuffle packs each lane's four, and an
             * unpack interleaves them (4 loads and 6 operations in place of eight 32-bit loads,
             * their inserts, a shuffle and a permute). bench mmvq T = 1, min of 10 alternations:
             * IQ4_NL 2048 x 8192 712 -> 678 us, 576 x 1536 52.4 -> 49.7; Q4_0 and Q2_0 (the same
             * block layout) measured even or slower (Q4_0 547.6 -> 560.0), so they keep the loads */
            const __m256i v0 = _mm256_loadu_si256((const __m256i *)wb), v1 = _mm256_loadu_si256((const __m256i *)(wb + 32));
            const __m256i v2 = _mm256_loadu_si256((const __m256i *)(wb + 64)), v3 = _mm256_loadu_si256((const __m256i *)(wb + 96));
            __m256i b = _mm256_blend_epi16(v0, v1, 0x0C);
            b = _mm256_blend_epi16(b, v2, 0x30);
            b = _mm256_blend_epi16(b, v3, 0xC0);
            const __m256i sh = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                                2, 3, 6, 7, 10, 11, 14, 15, -1, -1, -1, -1, -1, -1, -1, -1);
            b = _mm256_shuffle_epi8(b, sh);
            dw = _mm256_cvtph_ps(_mm_unpacklo_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
        } else if (FB_HAS_MIN(fmt) && nk == 8) {
            /* d and m of the 8 blocks as halves straight from the blocks (scalar loads) */
            dw = _mm256_cvtph_ps(_mm_setr_epi16((short)ld16u(wb), (short)ld16u(wb + BS), (short)ld16u(wb + 2 * BS),
                                                (short)ld16u(wb + 3 * BS), (short)ld16u(wb + 4 * BS), (short)ld16u(wb + 5 * BS),
                                                (short)ld16u(wb + 6 * BS), (short)ld16u(wb + 7 * BS)));
            mw = _mm256_cvtph_ps(_mm_setr_epi16((short)ld16u(wb + 2), (short)ld16u(wb + BS + 2), (short)ld16u(wb + 2 * BS + 2),
                                                (short)ld16u(wb + 3 * BS + 2), (short)ld16u(wb + 4 * BS + 2),
                                                (short)ld16u(wb + 5 * BS + 2), (short)ld16u(wb + 6 * BS + 2),
                                                (short)ld16u(wb + 7 * BS + 2)));
        } else if (fmt == FB_MXFP4 || fmt == FB_MXFP4U) {
            __m256i e = _mm256_and_si256(g, _mm256_set1_epi32(0xFF));
            /* 2^(e-128): e < 2 is the subnormal 0x00200000 << e, else (e - 1) << 23 */
            __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
            __m256i nrm = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
            dw = _mm256_castsi256_ps(_mm256_and_si256(lmask,
                     _mm256_blendv_epi8(nrm, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e))));
        } else {
            dw = halves_lo_to_f32(g);
            if (FB_HAS_MIN(fmt)) mw = halves_hi_to_f32(g);
        }
    }
    for (int c = 0; c < T; c++) {
        const uint8_t *ab = act + (size_t)c * act_stride + (size_t)g0 * (size_t)AS;
        __m256i m[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            if (k >= nk) { m[k] = _mm256_setzero_si256(); continue; }
            const uint8_t *aq = ab + (size_t)k * (size_t)AS + FB_AQS(fmt);
            __m256i a0 = _mm256_loadu_si256((const __m256i *)aq);
            if (FB_DP(fmt)) { m[k] = _mm256_setzero_si256(); MM_DPBUSD(m[k], wv[k][0], a0); }
            else if (FB_SIGNED(fmt))
                m[k] = _mm256_maddubs_epi16(T > 1 ? wa[k][0] : _mm256_sign_epi8(wv[k][0], wv[k][0]), _mm256_sign_epi8(a0, wv[k][0]));
            else m[k] = _mm256_maddubs_epi16(wv[k][0], a0);
            if (VPB == 2)
                m[k] = _mm256_add_epi16(m[k], _mm256_maddubs_epi16(wv[k][1], _mm256_loadu_si256((const __m256i *)(aq + 32))));
        }
        __m256i isum;
        if (FB_SUM16(fmt)) isum = hsum8x16_epi16(m);
        else {
            __m256i s[8];
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) s[k] = FB_DP(fmt) ? m[k] : _mm256_madd_epi16(m[k], _mm256_set1_epi16(1));
            isum = hsum8x8_epi32(s);
        }
        __m256 da, sa = _mm256_setzero_ps();
        if (dA) {
            if (nk == 8) {
                da = _mm256_loadu_ps(dA + c * nb + g0);
                if (FB_HAS_MIN(fmt)) sa = _mm256_loadu_ps(sA + c * nb + g0);
            } else {
                da = _mm256_maskload_ps(dA + c * nb + g0, lmask);
                if (FB_HAS_MIN(fmt)) sa = _mm256_maskload_ps(sA + c * nb + g0, lmask);
            }
            if (FB_OFFSET(fmt)) {
                const int *na = (const int *)(nA + c * nb + g0);
                __m256i n = nk == 8 ? _mm256_loadu_si256((const __m256i *)na) : _mm256_maskload_epi32(na, lmask);
                isum = _mm256_sub_epi32(isum, FB_OFFSET(fmt) == 128 ? _mm256_slli_epi32(n, 7)
                                                  : _mm256_mullo_epi32(n, _mm256_set1_epi32(FB_OFFSET(fmt))));
            }
        } else {
            float das[8] = { 0 }, sas[8] = { 0 };
            int32_t nas[8] = { 0 };
            for (int k = 0; k < nk; k++) {
                const uint8_t *a = ab + (size_t)k * (size_t)AS;
                memcpy(&das[k], a, 4);
                if (FB_HAS_MIN(fmt)) memcpy(&sas[k], a + 4, 4);
                if (FB_OFFSET(fmt))
                    for (int j = 0; j < 32 * VPB; j++) nas[k] += (int8_t)a[FB_AQS(fmt) + j];
            }
            da = _mm256_loadu_ps(das); sa = _mm256_loadu_ps(sas);
            if (FB_OFFSET(fmt))
                isum = _mm256_sub_epi32(isum, _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)nas),
                                                                 _mm256_set1_epi32(FB_OFFSET(fmt))));
        }
        __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, da));
        if (FB_HAS_MIN(fmt)) p = _mm256_add_ps(p, _mm256_mul_ps(mw, sa));
        acc[c][lane] = _mm256_add_ps(acc[c][lane], p);
    }
}

/* One row's four lane vectors per column (acc[c][0..3]: lanes 0-7 .. 24-31) */
ALWAYS_INLINE void fb_row(const uint8_t *wr, const uint8_t *a8, size_t act_stride, const float *pd,
                          const float *sA, const int32_t *nA, int64_t nb, __m256 acc[][4],
                          const int T, const int fmt) {
    const int BS = FB_BSIZE(fmt);
    const int64_t nfull = nb / 32 * 32;   /* blocks in whole rounds of 4 groups */
    for (int c = 0; c < T; c++)
        for (int v = 0; v < 4; v++) acc[c][v] = _mm256_setzero_ps();
    /* rounds of 32 blocks: group l of a round is accumulator l (a constant) */
    for (int64_t g0 = 0; g0 < nfull; g0 += 32) {
        fb_group(wr + (size_t)g0 * BS, a8, act_stride, pd, sA, nA, nb, g0, 8, acc, 0, T, fmt);
        fb_group(wr + (size_t)(g0 + 8) * BS, a8, act_stride, pd, sA, nA, nb, g0 + 8, 8, acc, 1, T, fmt);
        fb_group(wr + (size_t)(g0 + 16) * BS, a8, act_stride, pd, sA, nA, nb, g0 + 16, 8, acc, 2, T, fmt);
        fb_group(wr + (size_t)(g0 + 24) * BS, a8, act_stride, pd, sA, nA, nb, g0 + 24, 8, acc, 3, T, fmt);
    }
    for (int64_t g0 = nfull; g0 < nb; g0 += 8) {
        const int lane = (int)((g0 / 8) & 3);
        if (nb - g0 >= 8) fb_group(wr + (size_t)g0 * BS, a8, act_stride, pd, sA, nA, nb, g0, 8, acc, lane, T, fmt);
        else fb_group(wr + (size_t)g0 * BS, a8, act_stride, pd, sA, nA, nb, g0, (int)(nb - g0), acc, lane, T, fmt);
    }
}

/* Per-call copies of the activation block scales (d, s) and integer code sums of all T
 * columns, so a group of 8 blocks loads each with one vector load per column. When
 * T * blocks exceeds the cap, the groups read them from the blocks instead. */
#define ACT_SCALE_CAP 8192

ALWAYS_INLINE void fb_rows(const void *W, size_t row_bytes, int64_t n_in, const void *act,
                           size_t act_stride, const int T, float *y, int64_t n_out,
                           int64_t r0, int64_t r1, const int fmt, const int ser) {
    const int AS = FB_ASIZE(fmt), VPB = FB_VPB(fmt);
    const int64_t nb = n_in / (32 * VPB);
    float dA[ACT_SCALE_CAP], sA[FB_HAS_MIN(fmt) ? ACT_SCALE_CAP : 1];
    int32_t nA[FB_OFFSET(fmt) ? ACT_SCALE_CAP : 1];
    const int pre = (int64_t)T * nb <= ACT_SCALE_CAP;
    if (pre)
        for (int c = 0; c < T; c++)
            for (int64_t b = 0; b < nb; b++) {
                const uint8_t *ab = (const uint8_t *)act + (size_t)c * act_stride + (size_t)b * (size_t)AS;
                memcpy(&dA[c * nb + b], ab, 4);
                if (FB_HAS_MIN(fmt)) memcpy(&sA[c * nb + b], ab + 4, 4);
                if (FB_OFFSET(fmt)) {
                    int32_t n = 0;
                    for (int j = 0; j < 32 * VPB; j++) n += (int8_t)ab[FB_AQS(fmt) + j];
                    nA[c * nb + b] = n;
                }
            }
    const float *pd = pre ? dA : NULL;
    const uint8_t *a8 = (const uint8_t *)act;
    if (!ser) {
        for (int64_t r = r0; r < r1; r++) {
            __m256 acc[MATVEC_MAX_COLS][4];
            fb_row((const uint8_t *)W + (size_t)r * row_bytes, a8, act_stride, pd, sA, nA, nb, acc, T, fmt);
            for (int c = 0; c < T; c++)
                y[(size_t)c * (size_t)n_out + (size_t)r] = canon_tree4(acc[c][0], acc[c][1], acc[c][2], acc[c][3]);
        }
        return;
    }
    /* STRATA_CANON=serial: CANON_ROWS rows' chains side by side */
    CANON_SERIAL_ROWS(r0, r1, T, nb, y, n_out,
                      fb_row((const uint8_t *)W + (size_t)r_ * row_bytes, a8, act_stride, pd, sA, nA, nb, acc_, T, fmt));
}

/* ---- K-quants: 256-weight super-blocks, act_q8_K ------------------------------------------
 * A super-block decodes to 8 vectors of 32 unsigned codes (vector v = weights 32v..32v+31),
 * 8 vectors of int16 sub-block scales matching maddubs' 16 pair sums (lanes 0-7 cover
 * weights 32v..32v+15, lanes 8-15 cover 32v+16..32v+31) and one vector of 16 int16 factors
 * for the activation's bsums (per 16 values):
 *   S = sum_v madd(maddubs(q_v, a_v), scl_v)                    (exact int32)
 *   Q2_K, Q4_K, Q5_K: M = madd(bsums, min16): p = (float)S*(d*a.d) - (float)M*(dmin*a.d)
 *   Q3_K, Q6_K: codes are stored with an offset o (4, 32): q - o = code, so
 *               S += madd(bsums, -o*sc16) and p = (float)S*(d*a.d)
 * The integers equal the reference's S and M exactly, so the partials are the same bits. */
enum { KQ_Q2_K, KQ_Q3_K, KQ_Q4_K, KQ_Q5_K, KQ_Q6_K };
#define KQ_BSIZE(f) ((f) == KQ_Q2_K ? 84 : (f) == KQ_Q3_K ? 110 : (f) == KQ_Q4_K ? 144 : (f) == KQ_Q5_K ? 176 : 210)
#define KQ_HAS_MIN(f) ((f) == KQ_Q2_K || (f) == KQ_Q4_K || (f) == KQ_Q5_K)

/* Per super-block: the int16 scale vectors, the bsums factors and the float scales. */
typedef struct { __m256i scl[8], f16; float d, dmin; } kq_scales;

/* The 8 scale vectors of a super-block whose 16 scales are int16 lanes of y (scale i in lane
 * i): scl[v] has scale 2v in lanes 0-7 and scale 2v+1 in lanes 8-15. One pshufb per vector, on
 * y's low 128 bits broadcast (v < 4) or its high ones (v >= 4). */
ALWAYS_INLINE void kq_pairs_from16(__m256i y, __m256i *scl) {
    const __m256i lo = _mm256_permute2x128_si256(y, y, 0x00), hi = _mm256_permute2x128_si256(y, y, 0x11);
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++) {
        const int j = (2 * v) & 7;   /* scale 2v's int16 lane inside its 128-bit half */
        const __m256i ctl = _mm256_set_m128i(_mm_set1_epi16((short)((2 * j + 3) << 8 | (2 * j + 2))),
                                             _mm_set1_epi16((short)((2 * j + 1) << 8 | (2 * j))));
        scl[v] = _mm256_shuffle_epi8(v < 4 ? lo : hi, ctl);
    }
}

/* Q4_K/Q5_K: 8 6-bit scales and mins from 12 bytes (32-bit word arithmetic, the layout of
 * kq_unpack_scale_min in src/quant/ref_kquants.c) */
ALWAYS_INLINE void kq_scale_min_bytes(const uint8_t *s12, uint64_t *sc8, uint64_t *m8) {
    uint32_t w0, w1, w2;
    memcpy(&w0, s12, 4); memcpy(&w1, s12 + 4, 4); memcpy(&w2, s12 + 8, 4);
    uint32_t sc_lo = w0 & 0x3f3f3f3fu, m_lo = w1 & 0x3f3f3f3fu;
    uint32_t sc_hi = (w2 & 0x0f0f0f0fu) | ((w0 >> 6) & 0x03030303u) << 4;
    uint32_t m_hi = ((w2 >> 4) & 0x0f0f0f0fu) | ((w1 >> 6) & 0x03030303u) << 4;
    *sc8 = (uint64_t)sc_lo | (uint64_t)sc_hi << 32;
    *m8 = (uint64_t)m_lo | (uint64_t)m_hi << 32;
}

ALWAYS_INLINE void kq_prep(const uint8_t *blk, kq_scales *o, const int fmt) {
    if (fmt == KQ_Q2_K) {
        const block_q2_K *b = (const block_q2_K *)blk;
        __m128i sc = _mm_loadu_si128((const __m128i *)b->scales);
        kq_pairs_from16(_mm256_cvtepu8_epi16(_mm_and_si128(sc, _mm_set1_epi8(15))), o->scl);
        o->f16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), _mm_set1_epi8(15)));
        o->d = _cvtsh_ss(b->d); o->dmin = _cvtsh_ss(b->dmin);
    } else if (fmt == KQ_Q3_K) {
        const block_q3_K *b = (const block_q3_K *)blk;
        uint32_t a0, a1, a2;
        memcpy(&a0, b->scales, 4); memcpy(&a1, b->scales + 4, 4); memcpy(&a2, b->scales + 8, 4);
        /* scale i: low nibble from byte i % 8 (>> 4 for i >= 8), high 2 bits from byte
         * 8 + i % 4 >> 2 (i / 4); as 4 x 4 bytes: */
        uint32_t s0 = (a0 & 0x0f0f0f0fu) | (a2 & 0x03030303u) << 4;
        uint32_t s1 = (a1 & 0x0f0f0f0fu) | ((a2 >> 2) & 0x03030303u) << 4;
        uint32_t s2 = ((a0 >> 4) & 0x0f0f0f0fu) | ((a2 >> 4) & 0x03030303u) << 4;
        uint32_t s3 = ((a1 >> 4) & 0x0f0f0f0fu) | ((a2 >> 6) & 0x03030303u) << 4;
        __m128i u = _mm_sub_epi8(_mm_setr_epi32((int)s0, (int)s1, (int)s2, (int)s3), _mm_set1_epi8(32));
        __m256i y = _mm256_cvtepi8_epi16(u);                         /* scales - 32 */
        kq_pairs_from16(y, o->scl);
        o->f16 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(y, 2));   /* -4 * sc */
        o->d = _cvtsh_ss(b->d); o->dmin = 0.0f;
    } else if (fmt == KQ_Q4_K || fmt == KQ_Q5_K) {
        uint64_t sc8, m8;
        kq_scale_min_bytes(blk + 4, &sc8, &m8);   /* d, dmin, scales[12] lead both layouts */
        /* scale v (6 bits, unsigned) into all 16 int16 lanes: one pshufb of the 8 bytes per v
         * (byte v into each even byte, zero into each odd one) */
        const __m256i sb = _mm256_set1_epi64x((long long)sc8);
#pragma GCC unroll 8
        for (int v = 0; v < 8; v++)
            o->scl[v] = _mm256_shuffle_epi8(sb, _mm256_set1_epi16((short)(0x8000 | v)));
        __m128i mb = _mm_cvtsi64_si128((long long)m8);
        o->f16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mb, mb));    /* m0 m0 m1 m1 .. m7 m7 */
        uint16_t dd[2]; memcpy(dd, blk, 4);
        o->d = _cvtsh_ss(dd[0]); o->dmin = _cvtsh_ss(dd[1]);
    } else { /* KQ_Q6_K */
        const block_q6_K *b = (const block_q6_K *)blk;
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
        kq_pairs_from16(sc16, o->scl);
        o->f16 = _mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32));
        o->d = _cvtsh_ss(b->d); o->dmin = 0.0f;
    }
}

/* Codes of weights 32v .. 32v+31 (unsigned; Q3_K: code + 4, Q6_K: code + 32) */
ALWAYS_INLINE __m256i kq_codes(const uint8_t *blk, const int v, const int fmt) {
    const __m256i m2 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    if (fmt == KQ_Q2_K || fmt == KQ_Q3_K) {
        const uint8_t *qs = fmt == KQ_Q2_K ? ((const block_q2_K *)blk)->qs : ((const block_q3_K *)blk)->qs;
        __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * (v / 4)));
        __m256i q = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * (v % 4)), m2);
        if (fmt == KQ_Q2_K) return q;
        __m256i hm = _mm256_loadu_si256((const __m256i *)((const block_q3_K *)blk)->hmask);
        return _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, v), one), 2));
    } else if (fmt == KQ_Q4_K || fmt == KQ_Q5_K) {
        const uint8_t *qs = fmt == KQ_Q4_K ? ((const block_q4_K *)blk)->qs : ((const block_q5_K *)blk)->qs;
        __m256i raw = _mm256_loadu_si256((const __m256i *)(qs + 32 * (v / 2)));
        __m256i q = _mm256_and_si256(v % 2 ? _mm256_srli_epi16(raw, 4) : raw, m4);
        if (fmt == KQ_Q4_K) return q;
        __m256i hb = _mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh);
        return _mm256_or_si256(q, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, v), one), 4));
    } else {
        const block_q6_K *b = (const block_q6_K *)blk;
        const int h = v / 4, s = v % 4;
        __m256i l = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32 * (s & 1)));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        __m256i lo = _mm256_and_si256(s < 2 ? l : _mm256_srli_epi16(l, 4), m4);
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * s), m2);
        return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
    }
}

/* One super-block of one row against T columns: S (and M) vectors of 8 int32 each, stored
 * at S[c * 8 + k]. Codes are decoded once per 32 weights and used by every column. */
ALWAYS_INLINE void kq_block(const uint8_t *blk, const uint8_t *act, size_t act_stride, int64_t bi,
                            const int T, __m256i *S, __m256i *M, int k, float *ds, float *dms,
                            float *das, const int fmt) {
    kq_scales sc;
    kq_prep(blk, &sc, fmt);
    ds[k] = sc.d; dms[k] = sc.dmin;
    __m256i s[MATVEC_MAX_COLS];
#pragma GCC unroll 8
    for (int c = 0; c < T; c++) s[c] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++) {
        const __m256i q = kq_codes(blk, v, fmt);
#pragma GCC unroll 8
        for (int c = 0; c < T; c++) {
            const act_q8_K *a = (const act_q8_K *)(act + (size_t)c * act_stride) + bi;
            __m256i av = _mm256_loadu_si256((const __m256i *)(a->qs + 32 * v));
            s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(_mm256_maddubs_epi16(q, av), sc.scl[v]));
        }
    }
    for (int c = 0; c < T; c++) {
        const act_q8_K *a = (const act_q8_K *)(act + (size_t)c * act_stride) + bi;
        __m256i bm = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)a->bsums), sc.f16);
        if (KQ_HAS_MIN(fmt)) { S[c * 8 + k] = s[c]; M[c * 8 + k] = bm; }
        else S[c * 8 + k] = _mm256_add_epi32(s[c], bm);
        das[c * 8 + k] = a->d;
    }
}

/* One row's four lane vectors per column (acc[c][0..3]: lanes 0-7 .. 24-31) */
ALWAYS_INLINE void kq_row(const uint8_t *wr, const uint8_t *a8, size_t act_stride, int64_t nb,
                          __m256 acc[][4], const int T, const int fmt) {
    const int BS = KQ_BSIZE(fmt);
    for (int c = 0; c < T; c++)
        for (int v = 0; v < 4; v++) acc[c][v] = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < nb; g0 += 8) {
        const int nk = nb - g0 < 8 ? (int)(nb - g0) : 8;
        __m256i S[MATVEC_MAX_COLS * 8], M[KQ_HAS_MIN(fmt) ? MATVEC_MAX_COLS * 8 : 1];
        float ds[8] = { 0 }, dms[8] = { 0 }, das[MATVEC_MAX_COLS * 8];
        for (int k = 0; k < nk; k++)
            kq_block(wr + (size_t)(g0 + k) * (size_t)BS, a8, act_stride, g0 + k, T, S, M, k, ds, dms, das, fmt);
        for (int k = nk; k < 8; k++)   /* tail group: zero partials */
            for (int c = 0; c < T; c++) {
                S[c * 8 + k] = _mm256_setzero_si256();
                if (KQ_HAS_MIN(fmt)) M[c * 8 + k] = _mm256_setzero_si256();
                das[c * 8 + k] = 0.0f;
            }
        const __m256 dw = _mm256_loadu_ps(ds), dmw = _mm256_loadu_ps(dms);
        const int lane = (int)((g0 / 8) & 3);
        for (int c = 0; c < T; c++) {
            const __m256 da = _mm256_loadu_ps(das + c * 8);
            __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(hsum8x8_epi32(S + c * 8)), _mm256_mul_ps(dw, da));
            if (KQ_HAS_MIN(fmt))
                p = _mm256_sub_ps(p, _mm256_mul_ps(_mm256_cvtepi32_ps(hsum8x8_epi32(M + c * 8)), _mm256_mul_ps(dmw, da)));
            acc[c][lane] = _mm256_add_ps(acc[c][lane], p);
        }
    }
}

ALWAYS_INLINE void kq_rows(const void *W, size_t row_bytes, int64_t n_in, const void *act,
                           size_t act_stride, const int T, float *y, int64_t n_out,
                           int64_t r0, int64_t r1, const int fmt, const int ser) {
    const int64_t nb = n_in / QK_K;
    const uint8_t *a8 = (const uint8_t *)act;
    if (!ser) {
        for (int64_t r = r0; r < r1; r++) {
            __m256 acc[MATVEC_MAX_COLS][4];
            kq_row((const uint8_t *)W + (size_t)r * row_bytes, a8, act_stride, nb, acc, T, fmt);
            for (int c = 0; c < T; c++)
                y[(size_t)c * (size_t)n_out + (size_t)r] = canon_tree4(acc[c][0], acc[c][1], acc[c][2], acc[c][3]);
        }
        return;
    }
    /* STRATA_CANON=serial: CANON_ROWS rows' chains side by side */
    CANON_SERIAL_ROWS(r0, r1, T, nb, y, n_out,
                      kq_row((const uint8_t *)W + (size_t)r_ * row_bytes, a8, act_stride, nb, acc_, T, fmt));
}

/* ---- instantiation: one function per format, switching once on T ----------------------- */

#define KERNEL_ARGS const void *W, size_t row_bytes, int64_t n_in, const void *act, \
                    size_t act_stride, int T, float *y, int64_t n_out, int64_t r0, int64_t r1
#define T_SWITCH(BODY, FMT, SER) do { switch (T) { \
    case 1: BODY(W, row_bytes, n_in, act, act_stride, 1, y, n_out, r0, r1, FMT, SER); break; \
    case 2: BODY(W, row_bytes, n_in, act, act_stride, 2, y, n_out, r0, r1, FMT, SER); break; \
    case 3: BODY(W, row_bytes, n_in, act, act_stride, 3, y, n_out, r0, r1, FMT, SER); break; \
    case 4: BODY(W, row_bytes, n_in, act, act_stride, 4, y, n_out, r0, r1, FMT, SER); break; \
    case 5: BODY(W, row_bytes, n_in, act, act_stride, 5, y, n_out, r0, r1, FMT, SER); break; \
    case 6: BODY(W, row_bytes, n_in, act, act_stride, 6, y, n_out, r0, r1, FMT, SER); break; \
    case 7: BODY(W, row_bytes, n_in, act, act_stride, 7, y, n_out, r0, r1, FMT, SER); break; \
    default: BODY(W, row_bytes, n_in, act, act_stride, 8, y, n_out, r0, r1, FMT, SER); break; } } while (0)
/* The STRATA_CANON=serial instantiation is a function of its own (noinline): the tree's stays
 * the code it was (in one function with it, GCC compiled the tree's loops slower: Q4_1 at T = 1
 * measured +50 % us/call) */
#define MV_KERNEL(NAME, BODY, FMT) \
    static __attribute__((noinline)) void NAME##_serial(KERNEL_ARGS) { T_SWITCH(BODY, FMT, 1); } \
    static void NAME(KERNEL_ARGS) { \
        if (canon_serial) NAME##_serial(W, row_bytes, n_in, act, act_stride, T, y, n_out, r0, r1); \
        else T_SWITCH(BODY, FMT, 0); \
    }

MV_KERNEL(f32_matvec_avx2, float_rows, FW_F32)
MV_KERNEL(f16_matvec_avx2, float_rows, FW_F16)
MV_KERNEL(bf16_matvec_avx2, float_rows, FW_BF16)
MV_KERNEL(q4_0_matvec_avx2, fb_rows, FB_Q4_0)
MV_KERNEL(q4_1_matvec_avx2, fb_rows, FB_Q4_1)
MV_KERNEL(q5_0_matvec_avx2, fb_rows, FB_Q5_0)
MV_KERNEL(q5_1_matvec_avx2, fb_rows, FB_Q5_1)
MV_KERNEL(q8_0_matvec_avx2, fb_rows, FB_Q8_0)
MV_KERNEL(mxfp4_matvec_avx2, fb_rows, FB_MXFP4U)
MV_KERNEL(iq4_nl_matvec_avx2, fb_rows, FB_IQ4_NL)
MV_KERNEL(q8_0_matvec_vnni, fb_rows, FB_Q8_0V)
MV_KERNEL(iq4_nl_matvec_vnni, fb_rows, FB_IQ4_NLV)
/* IQ4_NL's T <= 8 kernel is this file's skeleton (Q4_0's blocks with signed table values);
 * matvec_rows_avx2_iq hands it out with the other IQ formats */
matvec_rows_fn matvec_rows_avx2_iq4_nl(void) { return iq4_nl_matvec_avx2; }
MV_KERNEL(q2_0_matvec_avx2, fb_rows, FB_Q2_0)
MV_KERNEL(q2_K_matvec_avx2, kq_rows, KQ_Q2_K)
MV_KERNEL(q3_K_matvec_avx2, kq_rows, KQ_Q3_K)
MV_KERNEL(q4_K_matvec_avx2, kq_rows, KQ_Q4_K)
MV_KERNEL(q5_K_matvec_avx2, kq_rows, KQ_Q5_K)
MV_KERNEL(q6_K_matvec_avx2, kq_rows, KQ_Q6_K)

/* ---- wide kernels (T > 8): block decoders for src/cpu/matmul_avx2.h ------------------------ */

ALWAYS_INLINE float mm_half(const uint8_t *p) { uint16_t h; memcpy(&h, p, 2); return _cvtsh_ss(h); }

ALWAYS_INLINE void mm_dec_fb(const uint8_t *blk, int r, mm_blockdec *d, const int fmt) {
    __m256i w[2];
    fb_decode(blk, w, fmt);
    d->cv[r][0] = w[0];
    if (FB_VPB(fmt) == 2) d->cv[r][1] = w[1];
    d->dw[r] = fmt == FB_MXFP4 ? mxfp4_e8m0_half(blk[0]) : mm_half(blk);
    d->d2[r] = FB_HAS_MIN(fmt) ? mm_half(blk + 2) : 0.0f;
}
ALWAYS_INLINE void mm_dec_kq(const uint8_t *blk, int r, mm_blockdec *d, const int fmt) {
    kq_scales sc;
    kq_prep(blk, &sc, fmt);
#pragma GCC unroll 8
    for (int v = 0; v < 8; v++) {
        d->cv[r][v] = kq_codes(blk, v, fmt);
        if (fmt == KQ_Q4_K || fmt == KQ_Q5_K) d->m[r][v] = (int16_t)_mm256_extract_epi16(sc.scl[v], 0);
        else {
            d->m[r][2 * v] = (int16_t)_mm256_extract_epi16(sc.scl[v], 0);
            d->m[r][2 * v + 1] = (int16_t)_mm256_extract_epi16(sc.scl[v], 8);
        }
    }
    _mm256_storeu_si256((__m256i *)d->g[r], sc.f16);
    d->dw[r] = sc.d;
    d->d2[r] = sc.dmin;
}
static void mm_dec_q4_0(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q4_0); }
static void mm_dec_q4_1(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q4_1); }
static void mm_dec_q5_0(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q5_0); }
static void mm_dec_q5_1(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q5_1); }
static void mm_dec_q8_0(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q8_0); }
static void mm_dec_mxfp4(const uint8_t *b, int r, mm_blockdec *d) { mm_dec_fb(b, r, d, FB_MXFP4); }
static void mm_dec_q2_0(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_fb(b, r, d, FB_Q2_0); }
static void mm_dec_q2_K(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_kq(b, r, d, KQ_Q2_K); }
static void mm_dec_q3_K(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_kq(b, r, d, KQ_Q3_K); }
static void mm_dec_q4_K(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_kq(b, r, d, KQ_Q4_K); }
static void mm_dec_q5_K(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_kq(b, r, d, KQ_Q5_K); }
static void mm_dec_q6_K(const uint8_t *b, int r, mm_blockdec *d)  { mm_dec_kq(b, r, d, KQ_Q6_K); }

MM_DEFINE_ROWS(q4_0_mm, MM_Q4_0, FB_BSIZE(FB_Q4_0), mm_dec_q4_0)
MM_DEFINE_ROWS(q4_1_mm, MM_Q4_1, FB_BSIZE(FB_Q4_1), mm_dec_q4_1)
MM_DEFINE_ROWS(q5_0_mm, MM_Q5_0, FB_BSIZE(FB_Q5_0), mm_dec_q5_0)
MM_DEFINE_ROWS(q5_1_mm, MM_Q5_1, FB_BSIZE(FB_Q5_1), mm_dec_q5_1)
MM_DEFINE_ROWS(q8_0_mm, MM_Q8_0, FB_BSIZE(FB_Q8_0), mm_dec_q8_0)
MM_DEFINE_ROWS(mxfp4_mm, MM_MXFP4, FB_BSIZE(FB_MXFP4), mm_dec_mxfp4)
MM_DEFINE_ROWS(q2_0_mm, MM_Q2_0, FB_BSIZE(FB_Q2_0), mm_dec_q2_0)
MM_DEFINE_ROWS(q2_K_mm, MM_Q2_K, KQ_BSIZE(KQ_Q2_K), mm_dec_q2_K)
MM_DEFINE_ROWS(q3_K_mm, MM_Q3_K, KQ_BSIZE(KQ_Q3_K), mm_dec_q3_K)
MM_DEFINE_ROWS(q4_K_mm, MM_Q4_K, KQ_BSIZE(KQ_Q4_K), mm_dec_q4_K)
MM_DEFINE_ROWS(q5_K_mm, MM_Q5_K, KQ_BSIZE(KQ_Q5_K), mm_dec_q5_K)
MM_DEFINE_ROWS(q6_K_mm, MM_Q6_K, KQ_BSIZE(KQ_Q6_K), mm_dec_q6_K)

#define MM_KERNEL(NAME, F) { NAME, NAME##_scratch, MM_OFFSET(F) ? MM_B(F) : 0, MM_AQS(F), MM_AS(F) }
#define MM_KERNEL_V(NAME, F) { MM_VNNI_USE(F) ? NAME##_vnni : NAME, NAME##_scratch, MM_OFFSET(F) ? MM_B(F) : 0, MM_AQS(F), MM_AS(F) }
static const matmul_kernel mm_q4_0 = MM_KERNEL(q4_0_mm, MM_Q4_0), mm_q4_1 = MM_KERNEL(q4_1_mm, MM_Q4_1),
    mm_q5_0 = MM_KERNEL(q5_0_mm, MM_Q5_0), mm_q5_1 = MM_KERNEL(q5_1_mm, MM_Q5_1),
    mm_q8_0 = MM_KERNEL(q8_0_mm, MM_Q8_0), mm_mxfp4 = MM_KERNEL(mxfp4_mm, MM_MXFP4),
    mm_q2_0 = MM_KERNEL(q2_0_mm, MM_Q2_0), mm_q2_K = MM_KERNEL(q2_K_mm, MM_Q2_K),
    mm_q3_K = MM_KERNEL(q3_K_mm, MM_Q3_K), mm_q4_K = MM_KERNEL(q4_K_mm, MM_Q4_K),
    mm_q5_K = MM_KERNEL(q5_K_mm, MM_Q5_K), mm_q6_K = MM_KERNEL(q6_K_mm, MM_Q6_K),
    mm_q4_0_v = MM_KERNEL_V(q4_0_mm, MM_Q4_0),
    mm_q4_1_v = MM_KERNEL_V(q4_1_mm, MM_Q4_1),
    mm_q5_0_v = MM_KERNEL_V(q5_0_mm, MM_Q5_0),
    mm_q5_1_v = MM_KERNEL_V(q5_1_mm, MM_Q5_1),
    mm_q8_0_v = MM_KERNEL_V(q8_0_mm, MM_Q8_0),
    mm_mxfp4_v = MM_KERNEL_V(mxfp4_mm, MM_MXFP4),
    mm_q2_0_v = MM_KERNEL_V(q2_0_mm, MM_Q2_0),
    mm_q2_K_v = MM_KERNEL_V(q2_K_mm, MM_Q2_K),
    mm_q3_K_v = MM_KERNEL_V(q3_K_mm, MM_Q3_K),
    mm_q4_K_v = MM_KERNEL_V(q4_K_mm, MM_Q4_K),
    mm_q5_K_v = MM_KERNEL_V(q5_K_mm, MM_Q5_K),
    mm_q6_K_v = MM_KERNEL_V(q6_K_mm, MM_Q6_K);

const matmul_kernel *matmul_avx2(int type, int vnni) {
    switch (type) {
    case TYPE_Q4_0:  return vnni ? &mm_q4_0_v : &mm_q4_0;
    case TYPE_Q4_1:  return vnni ? &mm_q4_1_v : &mm_q4_1;
    case TYPE_Q5_0:  return vnni ? &mm_q5_0_v : &mm_q5_0;
    case TYPE_Q5_1:  return vnni ? &mm_q5_1_v : &mm_q5_1;
    case TYPE_Q8_0:  return vnni ? &mm_q8_0_v : &mm_q8_0;
    case TYPE_MXFP4: return vnni ? &mm_mxfp4_v : &mm_mxfp4;
    case TYPE_Q2_0:  return vnni ? &mm_q2_0_v : &mm_q2_0;
    case TYPE_Q2_K:  return vnni ? &mm_q2_K_v : &mm_q2_K;
    case TYPE_Q3_K:  return vnni ? &mm_q3_K_v : &mm_q3_K;
    case TYPE_Q4_K:  return vnni ? &mm_q4_K_v : &mm_q4_K;
    case TYPE_Q5_K:  return vnni ? &mm_q5_K_v : &mm_q5_K;
    case TYPE_Q6_K:  return vnni ? &mm_q6_K_v : &mm_q6_K;
    default:         return NULL;
    }
}

matvec_rows_fn matvec_rows_vnni(int type) {
    switch (type) {
    case TYPE_Q8_0:   return q8_0_matvec_vnni;
    case TYPE_IQ4_NL: return iq4_nl_matvec_vnni;
    default:          return NULL;
    }
}

matvec_rows_fn matvec_rows_avx2(int type) {
    switch (type) {
    case TYPE_F32:   return f32_matvec_avx2;
    case TYPE_F16:   return f16_matvec_avx2;
    case TYPE_BF16:  return bf16_matvec_avx2;
    case TYPE_Q4_0:  return q4_0_matvec_avx2;
    case TYPE_Q4_1:  return q4_1_matvec_avx2;
    case TYPE_Q5_0:  return q5_0_matvec_avx2;
    case TYPE_Q5_1:  return q5_1_matvec_avx2;
    case TYPE_Q8_0:  return q8_0_matvec_avx2;
    case TYPE_MXFP4: return mxfp4_matvec_avx2;
    case TYPE_Q2_0:  return q2_0_matvec_avx2;
    case TYPE_Q2_K:  return q2_K_matvec_avx2;
    case TYPE_Q3_K:  return q3_K_matvec_avx2;
    case TYPE_Q4_K:  return q4_K_matvec_avx2;
    case TYPE_Q5_K:  return q5_K_matvec_avx2;
    case TYPE_Q6_K:  return q6_K_matvec_avx2;
    default:         return NULL;
    }
}
