/* AVX2 matvec kernels of the IQ codebook formats (compiled with -mavx2 -mfma -mf16c;
 * src/cpu/matvec.c picks them at run time). Bits equal the reference dots of
 * src/quant/ref_iq.c (formula and canonical order: docs/KERNELS.md, "IQ formats").
 *
 * Per 256-weight super-block the weights are decoded ONCE into 8 chunks of 32:
 *   mag[k]  32 x u8   |w8|          (grid magnitude; for IQ1 |8 grid +- 1|; for IQ4 |kv|)
 *   sgn[k]  32 x i8   sign carrier  (+1 / -1 bytes, or w8 itself: only its sign is used)
 *   m16[k]  16 x i16  integer multiplier of each pair of weights (per-16 scale codes)
 * and then, for each of the T columns,
 *   isum = sum_k hsum32( madd_epi16( maddubs(mag[k], sign_epi8(q8[k], sgn[k])), m16[k] ) )
 * = sum_i m[i/16] * w8[i] * q8[i] exactly (activation codes are in [-127, 127], so
 * sign_epi8 never overflows; |pair sums| <= 2 * 127 * 127 fit int16 without saturation).
 * Eight consecutive blocks b0..b0+7 (b0 % 8 == 0) form one float vector
 *   p = ((float)isum * k) * (dw * da)
 * that is added to the canonical lanes (b0 % 32) .. +7: the same adds as lane b % 32 of the
 * reference, one block at a time. Missing blocks of a last partial group add +0.0 (exact).
 * IQ4_NL (32-weight blocks, act_q8_0) is the exception: its T <= 8 kernel is the 32-weight block
 * skeleton of matvec_avx2.c (Q4_0's layout, the values looked up by pshufb, per-call activation
 * scales; 2026-12-05, 1024 x 4096, one thread: 305 -> 143 us a call at T = 1, 773 -> 423 at
 * T = 4, 1440 -> 737 at T = 8 against this file's former row kernel, checksums equal), handed out here. */
#include <immintrin.h>
#include <string.h>
#include "kernels.h"
#include "matmul_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"
#include "core/util.h"

#define AI static inline __attribute__((always_inline))
#define MAXT 8   /* MATVEC_MAX_COLS */

AI uint64_t ld64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }
AI uint32_t ld32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
AI uint16_t ld16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* 32 sign bits (bit i: weight i negative) -> 32 bytes of +1 / -1 */
AI __m256i signs_from_bits(uint32_t bits) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                          2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    v = _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
    return _mm256_or_si256(v, _mm256_set1_epi8(1));
}

/* multipliers: lanes 0..7 (weights 0..15 of the chunk) lo, lanes 8..15 hi */
AI __m256i mult2(int lo, int hi) {
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

AI __m256i grid8x4(const uint8_t (*g)[8], unsigned i0, unsigned i1, unsigned i2, unsigned i3) {
    return _mm256_set_epi64x((long long)ld64(g[i3]), (long long)ld64(g[i2]), (long long)ld64(g[i1]), (long long)ld64(g[i0]));
}

/* ---- per-format decoders: chunk k (weights 32k .. 32k+31) -> mag / sgn / m16 ---------- */

AI void dec_iq2_xxs(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq2_xxs *b = (const block_iq2_xxs *)blk;
    const uint8_t *q = (const uint8_t *)b->qs;
    uint32_t a0 = ld32(q + 8 * k), a1 = ld32(q + 8 * k + 4);
    *mag = grid8x4(iq2xxs_grid, a0 & 255, (a0 >> 8) & 255, (a0 >> 16) & 255, a0 >> 24);
    *sgn = _mm256_set_epi64x((long long)ld64(ksigns_iq2xs_pm1[(a1 >> 21) & 127]), (long long)ld64(ksigns_iq2xs_pm1[(a1 >> 14) & 127]),
                               (long long)ld64(ksigns_iq2xs_pm1[(a1 >> 7) & 127]), (long long)ld64(ksigns_iq2xs_pm1[a1 & 127]));
    *m16 = _mm256_set1_epi16((short)(2 * (a1 >> 28) + 1));
}

AI void dec_iq2_xs(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq2_xs *b = (const block_iq2_xs *)blk;
    const uint16_t *q = b->qs + 4 * k;
    *mag = grid8x4(iq2xs_grid, q[0] & 511, q[1] & 511, q[2] & 511, q[3] & 511);
    *sgn = _mm256_set_epi64x((long long)ld64(ksigns_iq2xs_pm1[q[3] >> 9]), (long long)ld64(ksigns_iq2xs_pm1[q[2] >> 9]),
                               (long long)ld64(ksigns_iq2xs_pm1[q[1] >> 9]), (long long)ld64(ksigns_iq2xs_pm1[q[0] >> 9]));
    *m16 = mult2(2 * (b->scales[k] & 15) + 1, 2 * (b->scales[k] >> 4) + 1);
}

AI void dec_iq2_s(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq2_s *b = (const block_iq2_s *)blk;
    const uint8_t *q = b->qs + 4 * k;
    unsigned h = b->qh[k];
    *mag = grid8x4(iq2s_grid, q[0] | ((h << 8) & 0x300), q[1] | ((h << 6) & 0x300),
                     q[2] | ((h << 4) & 0x300), q[3] | ((h << 2) & 0x300));
    *sgn = signs_from_bits(ld32(b->qs + 32 + 4 * k));
    *m16 = mult2(2 * (b->scales[k] & 15) + 1, 2 * (b->scales[k] >> 4) + 1);
}

AI void dec_iq3_xxs(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq3_xxs *b = (const block_iq3_xxs *)blk;
    const uint8_t *q = b->qs + 8 * k;
    uint32_t a = ld32(b->qs + 64 + 4 * k);
    *mag = _mm256_set_epi32((int)ld32(iq3xxs_grid[q[7]]), (int)ld32(iq3xxs_grid[q[6]]), (int)ld32(iq3xxs_grid[q[5]]), (int)ld32(iq3xxs_grid[q[4]]),
                              (int)ld32(iq3xxs_grid[q[3]]), (int)ld32(iq3xxs_grid[q[2]]), (int)ld32(iq3xxs_grid[q[1]]), (int)ld32(iq3xxs_grid[q[0]]));
    *sgn = _mm256_set_epi64x((long long)ld64(ksigns_iq2xs_pm1[(a >> 21) & 127]), (long long)ld64(ksigns_iq2xs_pm1[(a >> 14) & 127]),
                               (long long)ld64(ksigns_iq2xs_pm1[(a >> 7) & 127]), (long long)ld64(ksigns_iq2xs_pm1[a & 127]));
    *m16 = _mm256_set1_epi16((short)(2 * (a >> 28) + 1));
}

AI void dec_iq3_s(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq3_s *b = (const block_iq3_s *)blk;
    const uint8_t *q = b->qs + 8 * k;
    unsigned h = b->qh[k];
#define IQ3S_IDX(i) (int)ld32(iq3s_grid[q[i] | (((h >> (i)) & 1u) << 8)])
    *mag = _mm256_set_epi32(IQ3S_IDX(7), IQ3S_IDX(6), IQ3S_IDX(5), IQ3S_IDX(4),
                              IQ3S_IDX(3), IQ3S_IDX(2), IQ3S_IDX(1), IQ3S_IDX(0));
#undef IQ3S_IDX
    *sgn = signs_from_bits(ld32(b->signs + 4 * k));
    unsigned ls = (b->scales[k / 2] >> (4 * (k & 1))) & 15;
    *m16 = _mm256_set1_epi16((short)(2 * ls + 1));
}

/* IQ1: w8 = 8 * grid + delta, grid in {-1, 0, 1}, delta = +-1 per group (bytes of dl) */
AI void iq1_w8(__m256i g, __m256i dl, __m256i *mag, __m256i *sgn) {
    /* 8 g in one op: sign_epi8(8, g) is 8, 0 or -8 for g = 1, 0, -1 */
    __m256i w = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), g), dl);
    *mag = _mm256_abs_epi8(w);
    *sgn = w;
}
/* 8 bytes of +1, or of -1 (0xff) when neg != 0; branch-free (random bits mispredict) */
#define IQ1_DELTA(neg) ((long long)(0x0101010101010101ull * (1u + 0xfeu * ((neg) != 0))))

/* IQ1_S chunk k's 32 grid values g (-1, 0, 1) and its qh word h (index bits, ls, delta sign) */
AI __m256i iq1_s_grid(const uint8_t *blk, int k, unsigned *hp) {
    const block_iq1_s *b = (const block_iq1_s *)blk;
    const uint8_t *q = b->qs + 4 * k;
    const unsigned h = b->qh[k];
    *hp = h;
    return grid8x4((const uint8_t (*)[8])iq1s_grid, q[0] | ((h << 8) & 0x700), q[1] | ((h << 5) & 0x700),
                   q[2] | ((h << 2) & 0x700), q[3] | ((h >> 1) & 0x700));
}

AI void dec_iq1_s(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    unsigned h;
    const __m256i g = iq1_s_grid(blk, k, &h);
    iq1_w8(g, _mm256_set1_epi64x(IQ1_DELTA(h & 0x8000)), mag, sgn);
    *m16 = _mm256_set1_epi16((short)(2 * ((h >> 12) & 7) + 1));
}

/* IQ1_S for the T <= 8 kernel: unsigned codes u = g + 1 (0, 1, 2) and the multiplier 8 m (m = 2 ls
 * + 1), with the per-block bsums factors of g_iq1_s taking the rest back out exactly:
 *   sum_k m_k sum_i (8 g_i + delta_k) q_i = sum_k 8 m_k sum_i u_i q_i + sum_k m_k (delta_k - 8) sum_i q_i
 * (no abs per chunk and no sign per chunk and column; sgn is not used) */
AI void dec_iq1_s_u(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    unsigned h;
    const __m256i g = iq1_s_grid(blk, k, &h);
    *mag = _mm256_add_epi8(g, _mm256_set1_epi8(1));
    *sgn = g;
    *m16 = _mm256_set1_epi16((short)(8 * (2 * ((h >> 12) & 7) + 1)));
}
/* the bsums factors of dec_iq1_s_u: lane j (weights 16 j .. 16 j + 15, chunk j / 2) m (delta - 8),
 * m = 2 ls + 1 (1..15), delta - 8 = -7 or -9 (qh bit 15 clear or set): |g| <= 135 */
AI __m256i g_iq1_s(const uint8_t *blk) {
    const block_iq1_s *b = (const block_iq1_s *)blk;
    const __m128i h = _mm_loadu_si128((const __m128i *)b->qh);
    const __m128i ls = _mm_and_si128(_mm_srli_epi16(h, 12), _mm_set1_epi16(7));
    const __m128i m = _mm_add_epi16(_mm_add_epi16(ls, ls), _mm_set1_epi16(1));
    const __m128i dm = _mm_sub_epi16(_mm_set1_epi16(-7), _mm_add_epi16(_mm_srli_epi16(h, 15), _mm_srli_epi16(h, 15)));
    const __m128i g8 = _mm_mullo_epi16(m, dm);
    return _mm256_set_m128i(_mm_unpackhi_epi16(g8, g8), _mm_unpacklo_epi16(g8, g8));
}

AI void dec_iq1_m(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq1_m *b = (const block_iq1_m *)blk;
    const uint8_t *q = b->qs + 4 * k;
    unsigned h0 = b->qh[2 * k], h1 = b->qh[2 * k + 1];
    __m256i g = grid8x4((const uint8_t (*)[8])iq1s_grid, q[0] | ((h0 << 8) & 0x700), q[1] | ((h0 << 4) & 0x700),
                        q[2] | ((h1 << 8) & 0x700), q[3] | ((h1 << 4) & 0x700));
    /* the four groups' deltas by vector ops (was four scalar selects and 64-bit inserts): bytes
     * 0-7 from bit 3 of h0, 8-15 bit 7 of h0, 16-23 bit 3 of h1, 24-31 bit 7 of h1; a set bit is
     * -1 (0xff | 1), a clear one +1 */
    const __m256i hb = _mm256_shuffle_epi8(_mm256_set1_epi16((short)(h0 | h1 << 8)),
                                           _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1));
    const __m256i bit = _mm256_setr_epi8(8, 8, 8, 8, 8, 8, 8, 8, -128, -128, -128, -128, -128, -128, -128, -128,
                                         8, 8, 8, 8, 8, 8, 8, 8, -128, -128, -128, -128, -128, -128, -128, -128);
    const __m256i dl = _mm256_or_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hb, bit), bit), _mm256_set1_epi8(1));
    iq1_w8(g, dl, mag, sgn);
    unsigned s = (unsigned)ld16(b->scales + 2 * (k / 2)) >> (6 * (k & 1));
    *m16 = mult2(2 * (s & 7) + 1, 2 * ((s >> 3) & 7) + 1);
}

AI __m256i iq4_w8(const uint8_t *q16) {
    const __m256i kv = _mm256_broadcastsi128_si256(_mm_load_si128((const __m128i *)kvalues_iq4nl));
    __m128i q = _mm_loadu_si128((const __m128i *)q16);
    __m128i lo = _mm_and_si128(q, _mm_set1_epi8(15)), hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(15));
    return _mm256_shuffle_epi8(kv, _mm256_set_m128i(hi, lo));
}

AI void dec_iq4_xs(const uint8_t *blk, int k, __m256i *mag, __m256i *sgn, __m256i *m16) {
    const block_iq4_xs *b = (const block_iq4_xs *)blk;
    __m256i w = iq4_w8(b->qs + 16 * k);
    *mag = _mm256_abs_epi8(w);
    *sgn = w;
    int ls = (int)(((b->scales_l[k / 2] >> (4 * (k & 1))) & 15) | (((b->scales_h >> (2 * k)) & 3) << 4));
    *m16 = _mm256_set1_epi16((short)(ls - 32));
}

/* fp16 d of a block as float. _cvtsh_ss is exact for every non-NaN half (a signalling NaN
 * comes back quiet, where fp16_to_f32 keeps the payload: the result is NaN either way). */
AI float dw_d0(const uint8_t *blk) { return _cvtsh_ss(ld16(blk)); }   /* d is the first field */
AI float dw_iq1_m(const uint8_t *blk) {
    const block_iq1_m *b = (const block_iq1_m *)blk;
    uint16_t sc[4];
    for (int w = 0; w < 4; w++) sc[w] = ld16(b->scales + 2 * w);
    return _cvtsh_ss((unsigned short)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
}
#define dw_iq2_xxs dw_d0
#define dw_iq2_xs  dw_d0
#define dw_iq2_s   dw_d0
#define dw_iq3_xxs dw_d0
#define dw_iq3_s   dw_d0
#define dw_iq1_s   dw_d0
#define dw_iq4_xs  dw_d0

/* ---- shared pieces (canon_tree4: matmul_avx2.h) ----------------------------------- */

typedef void (*iq_dec_fn)(const uint8_t *, int, __m256i *, __m256i *, __m256i *);
typedef float (*iq_d_fn)(const uint8_t *);
/* Optional: a block's 8 chunk multipliers at once (the decoder's m16 of chunk k in m16[k]),
 * where forming them per chunk costs more than the chunk's dot at T = 1. NULL: the decoder's. */
typedef void (*iq_mult_fn)(const uint8_t *, __m256i *);
/* Optional: the decoder gives unsigned codes (mag, no sign carrier) and this returns the block's
 * 16 int16 factors of the activation's bsums that complete the integer sum (IQ1_S). NULL: signed
 * codes (mag, sgn). */
typedef __m256i (*iq_g_fn)(const uint8_t *);

/* 8 int16 values (lane k of x) -> m16[k] = value k in all 16 lanes */
AI void spread8(__m128i x, __m256i *m16) {
    const __m256i y = _mm256_broadcastsi128_si256(x);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) m16[k] = _mm256_shuffle_epi8(y, _mm256_set1_epi16((short)((2 * k + 1) << 8 | (2 * k))));
}
/* 16 int16 values (lane j of y) -> m16[k] = value 2k in lanes 0-7, value 2k+1 in lanes 8-15 (mult2) */
AI void spread16(__m256i y, __m256i *m16) {
    const __m256i lo = _mm256_permute2x128_si256(y, y, 0x00), hi = _mm256_permute2x128_si256(y, y, 0x11);
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) {
        const int j = (2 * k) & 7;
        m16[k] = _mm256_shuffle_epi8(k < 4 ? lo : hi,
                                     _mm256_set_m128i(_mm_set1_epi16((short)((2 * j + 3) << 8 | (2 * j + 2))),
                                                      _mm_set1_epi16((short)((2 * j + 1) << 8 | (2 * j)))));
    }
}
/* 2 f + 1 for int16 lanes f */
AI __m256i odd16(__m256i f) { return _mm256_add_epi16(_mm256_add_epi16(f, f), _mm256_set1_epi16(1)); }
AI __m128i odd16x(__m128i f) { return _mm_add_epi16(_mm_add_epi16(f, f), _mm_set1_epi16(1)); }

/* IQ2_XS, IQ2_S: chunk k's multipliers 2 (scales[k] & 15) + 1 (lo) and 2 (scales[k] >> 4) + 1 (hi) */
AI void mult_nib16(const uint8_t *sc8, __m256i *m16) {
    const __m128i x = _mm_loadl_epi64((const __m128i *)sc8), m4 = _mm_set1_epi8(15);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
    spread16(odd16(_mm256_cvtepu8_epi16(n)), m16);
}
AI void mult_iq2_xs_(const uint8_t *blk, __m256i *m16) { mult_nib16(((const block_iq2_xs *)blk)->scales, m16); }
AI void mult_iq2_s_(const uint8_t *blk, __m256i *m16) { mult_nib16(((const block_iq2_s *)blk)->scales, m16); }
/* IQ3_S: chunk k's 2 ((scales[k / 2] >> 4 (k & 1)) & 15) + 1 */
AI void mult_iq3_s_(const uint8_t *blk, __m256i *m16) {
    const block_iq3_s *b = (const block_iq3_s *)blk;
    const __m128i x = _mm_cvtsi32_si128((int)ld32(b->scales)), m4 = _mm_set1_epi8(15);
    const __m128i n = _mm_unpacklo_epi8(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
    spread8(odd16x(_mm_cvtepu8_epi16(n)), m16);
}
/* IQ1_M: the 16 3-bit fields of the four scale words (field j: word j / 4, bits 3 (j % 4)), field
 * 2k for chunk k's first 16 weights and 2k + 1 for its second: each word spread to 4 lanes, the
 * field moved to the top by a multiply (the low 16 bits of w * 2^(13 - 3r)) and shifted down */
AI void mult_iq1_m_(const uint8_t *blk, __m256i *m16) {
    const block_iq1_m *b = (const block_iq1_m *)blk;
    const __m256i w = _mm256_broadcastsi128_si256(_mm_loadl_epi64((const __m128i *)b->scales));
    const __m256i rep = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,
                                         4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
    const __m256i mul = _mm256_setr_epi16(8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16, 8192, 1024, 128, 16);
    spread16(odd16(_mm256_srli_epi16(_mm256_mullo_epi16(_mm256_shuffle_epi8(w, rep), mul), 13)), m16);
}

/* IQ4_XS: ls_k = (scales_l nibble k) | (2 bits k of scales_h) << 4, multiplier ls_k - 32, for
 * the 8 chunks in one vector, then one pshufb per chunk to spread it over the 16 lanes */
AI void mult_iq4_xs(const uint8_t *blk, __m256i *m16) {
    const block_iq4_xs *b = (const block_iq4_xs *)blk;
    const __m128i x = _mm_cvtsi32_si128((int)ld32(b->scales_l)), m4 = _mm_set1_epi8(15);
    const __m128i l8 = _mm_unpacklo_epi8(_mm_and_si128(x, m4), _mm_and_si128(_mm_srli_epi16(x, 4), m4));
    const __m256i h32 = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)ld16(&b->scales_h)),
                                                           _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                         _mm256_set1_epi32(3));
    const __m256i m32 = _mm256_sub_epi32(_mm256_or_si256(_mm256_cvtepu8_epi32(l8), _mm256_slli_epi32(h32, 4)),
                                         _mm256_set1_epi32(32));
    spread8(_mm_packs_epi32(_mm256_castsi256_si128(m32), _mm256_extracti128_si256(m32, 1)), m16);
}

/* 8 vectors of 8 int32 -> one vector whose lane j is the total of s[j] (exact) */
AI __m256i reduce8_i32(const __m256i *s) {
    __m256i h01 = _mm256_hadd_epi32(s[0], s[1]), h23 = _mm256_hadd_epi32(s[2], s[3]);
    __m256i h45 = _mm256_hadd_epi32(s[4], s[5]), h67 = _mm256_hadd_epi32(s[6], s[7]);
    __m256i h0123 = _mm256_hadd_epi32(h01, h23), h4567 = _mm256_hadd_epi32(h45, h67);
    /* h0123 = [s0 s1 s2 s3 (low halves) | s0 s1 s2 s3 (high halves)], same for h4567 */
    return _mm256_add_epi32(_mm256_permute2x128_si256(h0123, h4567, 0x20),
                            _mm256_permute2x128_si256(h0123, h4567, 0x31));
}

/* One row of a QK_K format for a compile-time T: decode each block once, dot it with the T
 * columns; per column and block an int32x8 partial, reduced eight blocks at a time into the
 * row's four lane vectors per column (acc[c][0..3]: lanes 0-7 .. 24-31). */
AI void row_qk(iq_dec_fn dec, iq_d_fn dfn, iq_mult_fn mfn, iq_g_fn gfn, const int unr, size_t bsize, __m256 kv, const int T, const uint8_t *wrow,
               const act_q8_K *const *ac, int64_t nb, __m256 acc[][4]) {
    for (int c = 0; c < T; c++) for (int l = 0; l < 4; l++) acc[c][l] = _mm256_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        __m256i sv[MAXT][8];
        _Alignas(32) float dw[8];
        int nblk = nb - b0 < 8 ? (int)(nb - b0) : 8;
        for (int j = 0; j < 8; j++) {
            if (j >= nblk) {
                dw[j] = 0.0f;
                for (int c = 0; c < T; c++) sv[c][j] = _mm256_setzero_si256();
                continue;
            }
            const uint8_t *blk = wrow + (size_t)(b0 + j) * bsize;
            dw[j] = dfn(blk);
            /* chunk outer, columns inner: the decoded chunk stays in registers and each
             * column keeps one int32x8 accumulator */
            /* the block's multipliers at once where measured faster (1024 x 4096, one thread,
             * us a call: IQ4_XS T = 1 252 -> 195, T = 2 263 -> 244, T = 8 1178 -> 1059; IQ1_M 449
             * -> 370, 493 -> 428, 1330 -> 1241; IQ2_S 288 -> 253 at T = 1, IQ2_XS 303 -> 272, IQ3_S
             * 399 -> 384; IQ4_XS at T = 3..7 2-5 % slower, so they keep the decoder's per chunk) */
            const int use_m = mfn && (T <= 2 || T == 8);
            __m256i s[MAXT], mb[8];
            if (use_m) mfn(blk, mb);
#pragma GCC unroll 8
            for (int c = 0; c < T; c++) s[c] = _mm256_setzero_si256();
            /* chunk ch against the T columns; the chunk loop unrolled where measured faster (unr:
             * 1024 x 4096, one thread, us a call, rolled -> unrolled: T = 1 IQ1_M 322 -> 265, IQ1_S
             * 281 -> 248, IQ2_XS 283 -> 244, IQ2_S 261 -> 237, IQ3_S 384 -> 362, IQ4_XS 199 -> 167;
             * IQ2_XXS and IQ3_XXS 3-5 % slower at T = 4 and 8, so they keep the rolled loop) */
#define IQ_CHUNK(ch)                                                                                  \
            do {                                                                                      \
                __m256i mag, sgn, m16;                                                                \
                dec(blk, ch, &mag, &sgn, &m16);                                                       \
                if (use_m) m16 = mb[ch];                                                              \
                /* unrolled: GCC left this loop rolled at T = 3..7 for IQ2_XS (the accumulators in    \
                 * memory: 1,530-1,790 us at T = 3..7 against 1,210 at T = 8) */                     \
                _Pragma("GCC unroll 8")                                                               \
                for (int c = 0; c < T; c++) {                                                         \
                    __m256i q = _mm256_loadu_si256((const __m256i *)(ac[c][b0 + j].qs + 32 * ch));   \
                    __m256i p = gfn ? _mm256_maddubs_epi16(mag, q)                                    \
                                    : _mm256_maddubs_epi16(mag, _mm256_sign_epi8(q, sgn));            \
                    s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(p, m16));                         \
                }                                                                                     \
            } while (0)
            if (unr) {
#pragma GCC unroll 8
                for (int ch = 0; ch < 8; ch++) IQ_CHUNK(ch);
            } else
                for (int ch = 0; ch < 8; ch++) IQ_CHUNK(ch);
#undef IQ_CHUNK
            if (gfn) {
                const __m256i g16 = gfn(blk);
#pragma GCC unroll 8
                for (int c = 0; c < T; c++)
                    s[c] = _mm256_add_epi32(s[c], _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)ac[c][b0 + j].bsums), g16));
            }
#pragma GCC unroll 8
            for (int c = 0; c < T; c++) sv[c][j] = s[c];
        }
        const __m256 dwv = _mm256_load_ps(dw);
        const int l = (int)((b0 / 8) & 3);
        for (int c = 0; c < T; c++) {
            _Alignas(32) float da[8];
            for (int j = 0; j < 8; j++) da[j] = j < nblk ? ac[c][b0 + j].d : 0.0f;
            __m256 p = _mm256_mul_ps(_mm256_cvtepi32_ps(reduce8_i32(sv[c])), kv);
            p = _mm256_mul_ps(p, _mm256_mul_ps(dwv, _mm256_load_ps(da)));
            acc[c][l] = _mm256_add_ps(acc[c][l], p);
        }
    }
}

/* Rows r0..r1 of a QK_K format (row_qk). STRATA_CANON=serial: rows in groups of CANON_ROWS,
 * their chains side by side (canon_chain8, matmul_avx2.h). */
AI void rows_qk(iq_dec_fn dec, iq_d_fn dfn, iq_mult_fn mfn, iq_g_fn gfn, const int unr, size_t bsize, float k, const int T,
                const void *W, size_t row_bytes, int64_t n_in, const void *act, size_t act_stride,
                float *y, int64_t n_out, int64_t r0, int64_t r1, const int ser) {
    const int64_t nb = n_in / QK_K;
    const __m256 kv = _mm256_set1_ps(k);
    const act_q8_K *ac[MAXT];
    for (int c = 0; c < T; c++) ac[c] = (const act_q8_K *)((const uint8_t *)act + (size_t)c * act_stride);
    if (!ser) {
        for (int64_t r = r0; r < r1; r++) {
            __m256 acc[MAXT][4];
            row_qk(dec, dfn, mfn, gfn, unr, bsize, kv, T, (const uint8_t *)W + (size_t)r * row_bytes, ac, nb, acc);
            for (int c = 0; c < T; c++) y[(size_t)c * (size_t)n_out + (size_t)r] = canon_tree4(acc[c][0], acc[c][1], acc[c][2], acc[c][3]);
        }
        return;
    }
    CANON_SERIAL_ROWS(r0, r1, T, nb, y, n_out,
                      row_qk(dec, dfn, mfn, gfn, unr, bsize, kv, T, (const uint8_t *)W + (size_t)r_ * row_bytes, ac, nb, acc_));
}

/* One exported function per format; T becomes a compile-time constant (1..8) so the column
 * loops unroll and the accumulators stay in registers. The STRATA_CANON=serial instantiation is
 * a function of its own (noinline), so the tree's stays the code it was (matvec_avx2.c's
 * MV_KERNEL says why). */
#define IQ_ARGS const void *W, size_t row_bytes, int64_t n_in, const void *act, size_t act_stride, \
                int T, float *y, int64_t n_out, int64_t r0, int64_t r1
/* case N of a format: the signed decoder (QK_CASE), or (QK_CASE_U, IQ1_S) the unsigned-code decoder
 * dec_X_u and its bsums factors g_X where N <= tu_X */
#define QK_CASE(X, bsz, kk, N, SER) \
    rows_qk(dec_##X, dw_##X, mult_##X, NULL, unr_##X, bsz, kk, N, W, row_bytes, n_in, act, act_stride, y, n_out, r0, r1, SER)
#define QK_CASE_U(X, bsz, kk, N, SER) \
    rows_qk((N) <= tu_##X ? dec_##X##_u : dec_##X, dw_##X, mult_##X, (N) <= tu_##X ? g_##X : NULL, unr_##X, bsz, kk, N, \
            W, row_bytes, n_in, act, act_stride, y, n_out, r0, r1, SER)
#define QK_SWITCH(CASE, X, bsz, kk, SER) do { switch (T) { \
    case 1: CASE(X, bsz, kk, 1, SER); break; \
    case 2: CASE(X, bsz, kk, 2, SER); break; \
    case 3: CASE(X, bsz, kk, 3, SER); break; \
    case 4: CASE(X, bsz, kk, 4, SER); break; \
    case 5: CASE(X, bsz, kk, 5, SER); break; \
    case 6: CASE(X, bsz, kk, 6, SER); break; \
    case 7: CASE(X, bsz, kk, 7, SER); break; \
    default: CASE(X, bsz, kk, 8, SER); break; \
    } } while (0)
/* the per-block multiplier hooks (NULL: the decoder's per chunk). IQ3_XXS and IQ1_S measured
 * slower with one (T = 1 328 -> 363 us, T = 2 343 -> 392); IQ2_XXS's words are 8 bytes apart. */
#define mult_iq2_xxs NULL
#define mult_iq2_xs  mult_iq2_xs_
#define mult_iq2_s   mult_iq2_s_
#define mult_iq3_xxs NULL
#define mult_iq3_s   mult_iq3_s_
#define mult_iq1_s   NULL
#define mult_iq1_m   mult_iq1_m_
/* IQ1_S's unsigned-code decoder and its bsums factors (row_qk's gfn) for T <= tu_iq1_s (1024 x 4096,
 * one thread, us a call, signed -> unsigned, checksums equal: T = 1 245-251 -> 206-216, T = 2
 * 299-303 -> 269-272, T = 4 438 -> 426-432, T = 8 768-791 -> 795-826: so T <= 4); the other formats
 * keep the signed codes (QK_CASE) */
#define tu_iq1_s 4
/* the chunk loop unrolled (row_qk) */
#define unr_iq2_xxs 0
#define unr_iq2_xs  1
#define unr_iq2_s   1
#define unr_iq3_xxs 0
#define unr_iq3_s   1
#define unr_iq1_s   1
#define unr_iq1_m   1
#define unr_iq4_xs  1
#define DEFINE_IQ_C(CASE, X, bsz, kk) \
    static __attribute__((noinline)) void X##_rows_avx2_serial(IQ_ARGS) { QK_SWITCH(CASE, X, bsz, kk, 1); } \
    static void X##_rows_avx2(IQ_ARGS) { \
        if (canon_serial) X##_rows_avx2_serial(W, row_bytes, n_in, act, act_stride, T, y, n_out, r0, r1); \
        else QK_SWITCH(CASE, X, bsz, kk, 0); \
    }
#define DEFINE_IQ(X, bsz, kk) DEFINE_IQ_C(QK_CASE, X, bsz, kk)
DEFINE_IQ(iq2_xxs, sizeof(block_iq2_xxs), 0.125f)
DEFINE_IQ(iq2_xs, sizeof(block_iq2_xs), 0.125f)
DEFINE_IQ(iq2_s, sizeof(block_iq2_s), 0.125f)
DEFINE_IQ(iq3_xxs, sizeof(block_iq3_xxs), 0.25f)
DEFINE_IQ(iq3_s, sizeof(block_iq3_s), 1.0f)
DEFINE_IQ_C(QK_CASE_U, iq1_s, sizeof(block_iq1_s), 0.125f)
DEFINE_IQ(iq1_m, sizeof(block_iq1_m), 0.125f)
DEFINE_IQ(iq4_xs, sizeof(block_iq4_xs), 1.0f)

/* ---- wide kernels (T > 8): block decoders for src/cpu/matmul_avx2.h ------------------------
 * codes = w8 (signed: sign_epi8(|w8|, carrier); IQ1 / IQ3_S / IQ2 / IQ3_XXS: w8 + 9 / 15 / 43 / 62,
 * unsigned);
 * multipliers per 16 weights. OFF: the codes w8 + OFF and the bsums factors -OFF m_j
 * (matmul_avx2.h, MM_IQOFF) */
#define MM_IQ_DEC(X, OFF)                                                                        \
    static void mm_dec_##X(const uint8_t *blk, int r, mm_blockdec *d) {                          \
        for (int ch = 0; ch < 8; ch++) {                                                        \
            __m256i mag, sgn, m16;                                                              \
            dec_##X(blk, ch, &mag, &sgn, &m16);                                                 \
            d->cv[r][ch] = _mm256_sign_epi8(mag, sgn);                                          \
            if (OFF) d->cv[r][ch] = _mm256_add_epi8(d->cv[r][ch], _mm256_set1_epi8(OFF));       \
            d->m[r][2 * ch] = (int16_t)_mm256_extract_epi16(m16, 0);                            \
            d->m[r][2 * ch + 1] = (int16_t)_mm256_extract_epi16(m16, 8);                        \
            if (OFF) {                                                                          \
                d->g[r][2 * ch] = (int16_t)(-(OFF) * d->m[r][2 * ch]);                          \
                d->g[r][2 * ch + 1] = (int16_t)(-(OFF) * d->m[r][2 * ch + 1]);                  \
            }                                                                                   \
        }                                                                                       \
        d->dw[r] = dw_##X(blk);                                                                 \
        d->d2[r] = 0.0f;                                                                        \
    }
MM_IQ_DEC(iq2_xxs, MM_IQOFF(MM_IQ2_XXS))
MM_IQ_DEC(iq2_xs, MM_IQOFF(MM_IQ2_XS))
MM_IQ_DEC(iq2_s, MM_IQOFF(MM_IQ2_S))
MM_IQ_DEC(iq3_xxs, MM_IQOFF(MM_IQ3_XXS))
MM_IQ_DEC(iq3_s, MM_IQOFF(MM_IQ3_S))
MM_IQ_DEC(iq1_s, MM_IQOFF(MM_IQ1_S))
MM_IQ_DEC(iq1_m, MM_IQOFF(MM_IQ1_M))
MM_IQ_DEC(iq4_xs, MM_IQOFF(MM_IQ4_XS))
static void mm_dec_iq4_nl(const uint8_t *blk, int r, mm_blockdec *d) {
    const block_iq4_nl *b = (const block_iq4_nl *)blk;
    d->cv[r][0] = iq4_w8(b->qs);
    d->dw[r] = _cvtsh_ss(b->d);
    d->d2[r] = 0.0f;
}
MM_DEFINE_ROWS(iq2_xxs_mm, MM_IQ2_XXS, sizeof(block_iq2_xxs), mm_dec_iq2_xxs)
MM_DEFINE_ROWS(iq2_xs_mm, MM_IQ2_XS, sizeof(block_iq2_xs), mm_dec_iq2_xs)
MM_DEFINE_ROWS(iq2_s_mm, MM_IQ2_S, sizeof(block_iq2_s), mm_dec_iq2_s)
MM_DEFINE_ROWS(iq3_xxs_mm, MM_IQ3_XXS, sizeof(block_iq3_xxs), mm_dec_iq3_xxs)
MM_DEFINE_ROWS(iq3_s_mm, MM_IQ3_S, sizeof(block_iq3_s), mm_dec_iq3_s)
MM_DEFINE_ROWS(iq1_s_mm, MM_IQ1_S, sizeof(block_iq1_s), mm_dec_iq1_s)
MM_DEFINE_ROWS(iq1_m_mm, MM_IQ1_M, sizeof(block_iq1_m), mm_dec_iq1_m)
MM_DEFINE_ROWS(iq4_xs_mm, MM_IQ4_XS, sizeof(block_iq4_xs), mm_dec_iq4_xs)
MM_DEFINE_ROWS(iq4_nl_mm, MM_IQ4_NL, sizeof(block_iq4_nl), mm_dec_iq4_nl)

#define MM_KERNEL(NAME, F) { NAME, NAME##_scratch, 0, MM_AQS(F), MM_AS(F) }
#define MM_KERNEL_V(NAME, F) { MM_VNNI_USE(F) ? NAME##_vnni : NAME, NAME##_scratch, 0, MM_AQS(F), MM_AS(F) }
static const matmul_kernel mm_iq2_xxs = MM_KERNEL(iq2_xxs_mm, MM_IQ2_XXS), mm_iq2_xs = MM_KERNEL(iq2_xs_mm, MM_IQ2_XS),
    mm_iq2_s = MM_KERNEL(iq2_s_mm, MM_IQ2_S), mm_iq3_xxs = MM_KERNEL(iq3_xxs_mm, MM_IQ3_XXS),
    mm_iq3_s = MM_KERNEL(iq3_s_mm, MM_IQ3_S), mm_iq1_s = MM_KERNEL(iq1_s_mm, MM_IQ1_S),
    mm_iq1_m = MM_KERNEL(iq1_m_mm, MM_IQ1_M), mm_iq4_xs = MM_KERNEL(iq4_xs_mm, MM_IQ4_XS),
    mm_iq4_nl = MM_KERNEL(iq4_nl_mm, MM_IQ4_NL),
    mm_iq2_xxs_v = MM_KERNEL_V(iq2_xxs_mm, MM_IQ2_XXS),
    mm_iq2_xs_v = MM_KERNEL_V(iq2_xs_mm, MM_IQ2_XS),
    mm_iq2_s_v = MM_KERNEL_V(iq2_s_mm, MM_IQ2_S),
    mm_iq3_xxs_v = MM_KERNEL_V(iq3_xxs_mm, MM_IQ3_XXS),
    mm_iq3_s_v = MM_KERNEL_V(iq3_s_mm, MM_IQ3_S),
    mm_iq1_s_v = MM_KERNEL_V(iq1_s_mm, MM_IQ1_S),
    mm_iq1_m_v = MM_KERNEL_V(iq1_m_mm, MM_IQ1_M),
    mm_iq4_xs_v = MM_KERNEL_V(iq4_xs_mm, MM_IQ4_XS),
    mm_iq4_nl_v = MM_KERNEL_V(iq4_nl_mm, MM_IQ4_NL);

const matmul_kernel *matmul_avx2_iq(int type, int vnni) {
    switch (type) {
    case TYPE_IQ2_XXS: return vnni ? &mm_iq2_xxs_v : &mm_iq2_xxs;
    case TYPE_IQ2_XS:  return vnni ? &mm_iq2_xs_v : &mm_iq2_xs;
    case TYPE_IQ2_S:   return vnni ? &mm_iq2_s_v : &mm_iq2_s;
    case TYPE_IQ3_XXS: return vnni ? &mm_iq3_xxs_v : &mm_iq3_xxs;
    case TYPE_IQ3_S:   return vnni ? &mm_iq3_s_v : &mm_iq3_s;
    case TYPE_IQ1_S:   return vnni ? &mm_iq1_s_v : &mm_iq1_s;
    case TYPE_IQ1_M:   return vnni ? &mm_iq1_m_v : &mm_iq1_m;
    case TYPE_IQ4_NL:  return vnni ? &mm_iq4_nl_v : &mm_iq4_nl;
    case TYPE_IQ4_XS:  return vnni ? &mm_iq4_xs_v : &mm_iq4_xs;
    default:           return NULL;
    }
}

matvec_rows_fn matvec_rows_avx2_iq(int type) {
    switch (type) {
    case TYPE_IQ2_XXS: return iq2_xxs_rows_avx2;
    case TYPE_IQ2_XS:  return iq2_xs_rows_avx2;
    case TYPE_IQ2_S:   return iq2_s_rows_avx2;
    case TYPE_IQ3_XXS: return iq3_xxs_rows_avx2;
    case TYPE_IQ3_S:   return iq3_s_rows_avx2;
    case TYPE_IQ1_S:   return iq1_s_rows_avx2;
    case TYPE_IQ1_M:   return iq1_m_rows_avx2;
    case TYPE_IQ4_NL:  return matvec_rows_avx2_iq4_nl();   /* matvec_avx2.c's 32-weight skeleton */
    case TYPE_IQ4_XS:  return iq4_xs_rows_avx2;
    default:           return NULL;
    }
}
