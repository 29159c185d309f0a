/* The wide CPU matmul core (T > MATVEC_MAX_COLS columns), included by src/cpu/matvec_avx2.c
 * and src/cpu/matvec_iq_avx2.c, which add their formats' block decoders (docs/KERNELS.md,
 * section 7).
 *
 * Shape: rows are taken MM_ROWS = 8 at a time (a strip). A strip is decoded ONCE into int8
 * codes laid out "quad-interleaved": for the 4 weights k = 4q .. 4q+3 of a block, one 32-byte
 * vector holds those 4 codes of each of the 8 rows (row r in bytes 4r .. 4r+3). Next to the
 * codes the strip keeps, per block, the 8 rows' integer multipliers (per 16 or 32 weights),
 * the K-quants' bsums factors and the float scales. Every column then runs against the
 * decoded strip (MM_NC columns at a time, so each code vector is loaded once for MM_NC
 * columns): a column's 4 activation codes are broadcast to all 8 rows, and
 *   maddubs(codes, broadcast)  -> per row, two int16 pair sums of that quad
 * accumulates over the quads of a sub-block in int16 (as many as provably fit), then
 *   madd(s16, multiplier)      -> per row, int32 multiplier * sum
 * The block's int32 sum is therefore per row EXACTLY the reference's integer sum (integer
 * arithmetic, any order). The float partial p_b is formed per row with the reference's
 * operations in the reference's order (docs/KERNELS.md section 4) and added to lane b % 32
 * (one float vector per lane, rows in the SIMD lanes); the 16-8-4-2-1 tree over the 32 lane
 * vectors is then 31 vertical adds. So each output has the canonical bits, the same as the
 * T <= 8 kernels, for every T, thread count and strip split: batch invariance holds.
 *
 * Saturation: maddubs saturates a PAIR sum to int16; pair sums are at most 2 * U * 127 where U
 * is the largest unsigned code (or |signed code|); MM_FLUSHQ quads are added in int16 only
 * while FLUSHQ * 2 * U * 127 <= 32767. Activation codes are in [-127, 127] (docs/KERNELS.md
 * section 2), so sign_epi8 never overflows. */
#ifndef STRATA_CPU_MATMUL_AVX2_H
#define STRATA_CPU_MATMUL_AVX2_H
#include "../quant/quant_canon.h"
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kernels.h"
#include "../quant/blocks.h"
#include "transpose_avx2.h"

#define MM_AI static inline __attribute__((always_inline))

/* Canonical 32-lane tree over 4 vectors holding lanes 0-7, 8-15, 16-23, 24-31 (the T <= 8 AVX2
 * kernels of matvec_avx2.c and matvec_iq_avx2.c). */
MM_AI float canon_tree4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    if (canon_serial) {   /* the serial order (default; STRATA_CANON=tree: the tree below): the chain over lanes 0..31 */
        float t[32];
        _mm256_storeu_ps(t, a0); _mm256_storeu_ps(t + 8, a1); _mm256_storeu_ps(t + 16, a2); _mm256_storeu_ps(t + 24, a3);
        float r = t[0];
        for (int i = 1; i < 32; i++) r = r + t[i];
        return r;
    }
    a0 = _mm256_add_ps(a0, a2);                 /* s = 16: lane i += lane i + 16 */
    a1 = _mm256_add_ps(a1, a3);
    a0 = _mm256_add_ps(a0, a1);                 /* s = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1)); /* s = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));     /* s = 2: lanes 0,1 += lanes 2,3 */
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1)); /* s = 1 */
    return _mm_cvtss_f32(v);
}

/* STRATA_CANON=serial finish of the T <= 8 kernels, rows side by side (canon_tree4's serial
 * branch chains one row's 32 lanes in scalar adds; this runs 8 rows' chains in the SIMD lanes).
 * A group of up to CANON_ROWS consecutive rows parks each row's four lane vectors per column in
 * its slot (canon_park4); canon_chain8 then transposes (avx2_transpose8) each 8 x 8 block of
 * (row, lane) so that vector j holds lane j of the 8 rows, and chains r = v0; r = r + v1; ...
 * with vertical adds:
 * per row the adds of canon_finish's chain, in its order. The chain stops early for a row of
 * nl < 32 blocks or elements: the lanes past nl are +0.0, and +0.0 added to a chain that is never
 * -0.0 (every lane starts at +0.0) changes no bit, so leaving those adds out (or some of them in)
 * gives the same result. The tree path does not use this (canon_tree4). */
#define CANON_ROWS 8
#define CANON_COLS 8   /* MATVEC_MAX_COLS */
typedef struct { _Alignas(32) float v[CANON_COLS][CANON_ROWS][CANON_LANES]; } canon_park;

MM_AI void canon_park4(canon_park *p, int c, int i, __m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    float *d = p->v[c][i];
    _mm256_store_ps(d, a0); _mm256_store_ps(d + 8, a1); _mm256_store_ps(d + 16, a2); _mm256_store_ps(d + 24, a3);
}

/* The chains of the nr (1..8) rows parked in slots 0..nr-1, T columns: y[c * n_out + i] for
 * i < nr (y points at the group's first row). Slots nr..7 are zeroed first (their results are
 * dropped; zero keeps stale or unset floats out of the adds). The chain stops after the last
 * lane vector that holds a lane < nl; the lanes after nl inside it are added (+0.0, which leaves a
 * chain that is never -0.0 unchanged), so every loop has constant bounds and x stays in
 * registers. */
MM_AI void canon_chain8(canon_park *p, const int T, int nr, int64_t nl, float *y, int64_t n_out) {
    const int nv = nl >= CANON_LANES ? 4 : nl <= 8 ? 1 : (int)(nl + 7) / 8;   /* lane vectors chained */
    for (int c = 0; c < T; c++) {
        if (nr < CANON_ROWS)
            for (int i = nr; i < CANON_ROWS; i++)
                for (int v = 0; v < 4; v++) _mm256_store_ps(p->v[c][i] + 8 * v, _mm256_setzero_ps());
        __m256 r = _mm256_setzero_ps();
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) {
            if (v >= nv) break;
            __m256 s[8], x[8];   /* s[i]: lanes 8v .. 8v+7 of slot i -> x[j]: lane 8v + j of slots 0..7 */
#pragma GCC unroll 8
            for (int i = 0; i < CANON_ROWS; i++) s[i] = _mm256_load_ps(p->v[c][i] + 8 * v);
            avx2_transpose8(s, x);
            r = v == 0 ? x[0] : _mm256_add_ps(r, x[0]);
#pragma GCC unroll 8
            for (int j = 1; j < 8; j++) r = _mm256_add_ps(r, x[j]);
        }
        float *yc = y + (size_t)c * (size_t)n_out;
        if (nr == CANON_ROWS) _mm256_storeu_ps(yc, r);
        else {
            float t[8];
            _mm256_storeu_ps(t, r);
            for (int i = 0; i < nr; i++) yc[i] = t[i];
        }
    }
}

/* The serial finish's row loop of the T <= 8 kernels: rows [r0, r1) in groups of CANON_ROWS;
 * ROW_ACC, a statement, fills acc_[c][0..3] (column c's four lane vectors, c < T) of row r_; each
 * row's vectors are parked, then the group's chains run (canon_chain8, nl lanes) into y. */
#define CANON_SERIAL_ROWS(r0, r1, T, nl, y, n_out, ROW_ACC)                                                 \
    do {                                                                                                     \
        canon_park park_;                                                                                    \
        for (int64_t rb_ = (r0); rb_ < (r1); rb_ += CANON_ROWS) {                                            \
            const int nr_ = (r1) - rb_ < CANON_ROWS ? (int)((r1) - rb_) : CANON_ROWS;                        \
            for (int i_ = 0; i_ < nr_; i_++) {                                                               \
                const int64_t r_ = rb_ + i_;                                                                 \
                __m256 acc_[CANON_COLS][4];                                                                  \
                ROW_ACC;                                                                                     \
                for (int c_ = 0; c_ < (T); c_++)                                                             \
                    canon_park4(&park_, c_, i_, acc_[c_][0], acc_[c_][1], acc_[c_][2], acc_[c_][3]);         \
            }                                                                                                \
            canon_chain8(&park_, (T), nr_, (nl), (y) + rb_, (n_out));                                        \
        }                                                                                                    \
    } while (0)

/* GCC re-associates the int16 accumulation chains of mm_tile into trees whose temporaries spill
 * (integer adds: any order is the same value, so this only changes register pressure) */
/* An empty asm on a register accumulator: the add happens here, in this register (without it
 * GCC hoists the maddubs of all quads and spills them before adding) */
#define MM_PIN(v) __asm__("" : "+x"(v))
/* acc (8 x int32) += per dword lane the 4 products u8 (u) x s8 (s): AVX-VNNI's vpdpbusd, the VEX
 * form (no AVX-512), by inline asm so that the generic inline code needs no target attribute;
 * run only where the CPU reports AVX-VNNI (cpu_has_avx_vnni) */
#define MM_DPBUSD(acc, u, s) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s))
#if defined(__GNUC__) && !defined(__clang__)
#define MM_NOREASSOC __attribute__((optimize("no-tree-reassoc")))
#else
#define MM_NOREASSOC
#endif
#define MM_ROWS 8
#define MM_NC 4

enum {
    MM_Q4_0, MM_Q4_1, MM_Q5_0, MM_Q5_1, MM_Q8_0, MM_MXFP4, MM_Q2_0, MM_IQ4_NL,   /* small blocks */
    MM_Q2_K, MM_Q3_K, MM_Q4_K, MM_Q5_K, MM_Q6_K,                                 /* K-quants */
    MM_IQ2_XXS, MM_IQ2_XS, MM_IQ2_S, MM_IQ3_XXS, MM_IQ3_S, MM_IQ1_S, MM_IQ1_M, MM_IQ4_XS
};
#define MM_IS_K(f)   ((f) >= MM_Q2_K && (f) <= MM_Q6_K)
#define MM_IS_IQK(f) ((f) >= MM_IQ2_XXS)
/* IQ1_S / IQ1_M, IQ3_S, IQ2_* and IQ3_XXS: their codes w8 (IQ1: 8 grid +- 1, -9..9; IQ3_S: +-1..15;
 * IQ2: +-{8, 25, 43}; IQ3_XXS: +-4..62) enter unsigned as w8 + o (o = MM_IQOFF: 9, 15, 43, 62;
 * codes 0..18, 0..30, 0..86, 0..124),
 * and the bsums term sum_j (-o m_j) bsum_j (MM_KSUM 2, g_j = -o m_j) takes the offset back out
 * exactly: S = sum_j m_j (sum (w8 + o) a) - o sum_j m_j bsum_j = sum_j m_j sum w8 a, the signed
 * form's integer (2026-12-05, 05:48 session: no abs and no sign per quad; IQ1 and IQ3_S keep a
 * flush every 4 quads, 4 x 2 x 30 x 127 < 32768; IQ2 and IQ3_XXS flush every quad, 2 x 124 x 127 <
 * 32768) */
#define MM_IQOFF(f)  ((f) == MM_IQ1_S || (f) == MM_IQ1_M ? 9 : (f) == MM_IQ3_S ? 15 : \
                      (f) == MM_IQ2_XXS || (f) == MM_IQ2_XS || (f) == MM_IQ2_S ? 43 : (f) == MM_IQ3_XXS ? 62 : 0)
#define MM_B(f)      ((f) == MM_Q2_0 ? 64 : (f) <= MM_IQ4_NL ? 32 : 256)      /* weights per block */
#define MM_QPB(f)    (MM_B(f) / 4)                                            /* quads per block */
#define MM_MULT(f)   (MM_IS_K(f) || MM_IS_IQK(f))                             /* multipliers per 16/32 */
#define MM_SUBQ(f)   (!MM_MULT(f) ? MM_QPB(f) : ((f) == MM_Q4_K || (f) == MM_Q5_K) ? 8 : 4)
#define MM_NSUB(f)   (MM_QPB(f) / MM_SUBQ(f))
/* largest code magnitude U, then quads per int16 flush (a power of two dividing SUBQ) */
/* (an offset format's o is its largest |w8|, so its largest code is 2 o) */
#define MM_U(f)      (MM_IQOFF(f) ? 2 * MM_IQOFF(f) : \
                      (f) == MM_Q4_0 || (f) == MM_Q4_1 || (f) == MM_Q4_K ? 15 : \
                      (f) == MM_Q5_0 || (f) == MM_Q5_1 || (f) == MM_Q5_K ? 31 : \
                      (f) == MM_Q8_0 ? 128 : (f) == MM_MXFP4 ? 12 : (f) == MM_Q2_0 ? 2 : \
                      (f) == MM_Q2_K ? 3 : (f) == MM_Q3_K ? 7 : (f) == MM_Q6_K ? 63 : 127)
#define MM_FIT(f)    (32767 / (2 * MM_U(f) * 127))
#define MM_FLUSHQ(f) (MM_FIT(f) >= 16 && MM_SUBQ(f) >= 16 ? 16 : MM_FIT(f) >= 8 && MM_SUBQ(f) >= 8 ? 8 : \
                      MM_FIT(f) >= 4 ? 4 : MM_FIT(f) >= 2 ? 2 : 1)
#define MM_SIGNED(f) ((f) == MM_Q8_0 || (f) == MM_MXFP4 || (f) == MM_IQ4_NL || (MM_IS_IQK(f) && !MM_IQOFF(f)))
/* The formats whose AVX-VNNI twin is used: signed (or, IQ2_* and IQ3_XXS, offset) codes flushed from int16
 * every 1 or 2 quads (Q8_0, IQ4_NL, IQ4_XS, IQ2_*, IQ3_XXS), where vpdpbusd replaces maddubs + a
 * madd per quad or two (IQ2_* and IQ3_XXS as offset codes since 2026-12-05, 05:48: one vpdpbusd
 * a quad, no sign; -4 to -8 % against their signed twin). Measured (bench mmvq 4096 x 1024, 256 columns, one thread, two rounds, 2026-12-05, an AMD
 * Zen 5 core): these 4-17 % faster with vpdpbusd; MXFP4, IQ3_S, IQ1_S, IQ1_M (flushes every 4-8
 * quads) within 2 %; the unsigned formats (Q4_0 .. Q6_K, Q2_0: maddubs + add, one madd per 4-16
 * quads) 5-15 % SLOWER, one vpdpbusd a cycle against two maddubs. */
#define MM_VNNI_USE(f) ((MM_SIGNED(f) || MM_IQOFF(f)) && MM_FLUSHQ(f) <= 2)
#define MM_OFFSET(f) ((f) == MM_Q4_0 ? 8 : (f) == MM_Q5_0 ? 16 : (f) == MM_Q2_0 ? 1 : 0)
/* K-quants' bsums term: 1 = the min term M (subtracted in float), 2 = added to S */
#define MM_KSUM(f)   ((f) == MM_Q2_K || (f) == MM_Q4_K || (f) == MM_Q5_K ? 1 : (f) == MM_Q3_K || (f) == MM_Q6_K || MM_IQOFF(f) ? 2 : 0)
/* float family: 0 S*(dw*da); 1 + (mw*sa); 2 - (M*(dmin*da)); 3 (S*k)*(dw*da) */
#define MM_FL(f)     ((f) == MM_Q4_1 || (f) == MM_Q5_1 ? 1 : MM_KSUM(f) == 1 ? 2 : MM_IS_IQK(f) ? 3 : 0)
#define MM_KF(f)     ((f) == MM_IQ3_XXS ? 0.25f : (f) == MM_IQ3_S || (f) == MM_IQ4_XS ? 1.0f : 0.125f)
/* activation block: bytes, offset of qs, offset of bsums (act_q8_K) */
#define MM_AS(f)     ((f) == MM_Q4_1 || (f) == MM_Q5_1 ? (int)sizeof(act_q8_1) : (f) == MM_Q2_0 ? (int)sizeof(act_q8_2) : \
                      MM_B(f) == 32 ? (int)sizeof(act_q8_0) : (int)sizeof(act_q8_K))
#define MM_AQS(f)    ((f) == MM_Q4_1 || (f) == MM_Q5_1 || (f) == MM_Q2_0 ? 8 : 4)
#define MM_ABS(f)    ((int)offsetof(act_q8_K, bsums))

/* Per-strip decoded weights (pointers into a worker's scratch). */
typedef struct {
    uint8_t *codes;   /* [nb][QPB][32]        quad-interleaved codes */
    int16_t *mult;    /* [nb][NSUB][16]       multiplier of row r in int16 lanes 2r, 2r+1 */
    int16_t *g;       /* [nb][8][16]          bsums factors: lanes 2r, 2r+1 = g_2i, g_2i+1 of row r */
    float *dw, *d2;   /* [nb][8]              d and (m | dmin) per row */
} mm_strip;

MM_AI size_t mm_strip_bytes(int64_t nb, const int f) {
    return (size_t)nb * ((size_t)MM_QPB(f) * 32 + (MM_MULT(f) ? (size_t)MM_NSUB(f) * 32 : 0) +
                         (MM_KSUM(f) ? 8 * 32 : 0) + 2 * 8 * sizeof(float)) + 64;
}

MM_AI void mm_strip_at(void *scratch, int64_t nb, mm_strip *s, const int f) {
    uint8_t *p = (uint8_t *)(((uintptr_t)scratch + 31) & ~(uintptr_t)31);
    s->codes = p; p += (size_t)nb * MM_QPB(f) * 32;
    s->mult = (int16_t *)p; if (MM_MULT(f)) p += (size_t)nb * MM_NSUB(f) * 32;
    s->g = (int16_t *)p; if (MM_KSUM(f)) p += (size_t)nb * 8 * 32;
    s->dw = (float *)p; p += (size_t)nb * 8 * sizeof(float);
    s->d2 = (float *)p;
}

/* 8 rows' vectors of 32 consecutive codes -> 8 quad vectors (an 8x8 transpose of dwords):
 * out[q] holds dword q of row r in dword lane r. */
MM_AI void mm_pack8(const __m256i v[8], uint8_t *out) {
    __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    __m256i t4 = _mm256_unpacklo_epi32(v[4], v[5]), t5 = _mm256_unpackhi_epi32(v[4], v[5]);
    __m256i t6 = _mm256_unpacklo_epi32(v[6], v[7]), t7 = _mm256_unpackhi_epi32(v[6], v[7]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    __m256i *o = (__m256i *)out;
    _mm256_store_si256(o + 0, _mm256_permute2x128_si256(u0, u4, 0x20));
    _mm256_store_si256(o + 1, _mm256_permute2x128_si256(u1, u5, 0x20));
    _mm256_store_si256(o + 2, _mm256_permute2x128_si256(u2, u6, 0x20));
    _mm256_store_si256(o + 3, _mm256_permute2x128_si256(u3, u7, 0x20));
    _mm256_store_si256(o + 4, _mm256_permute2x128_si256(u0, u4, 0x31));
    _mm256_store_si256(o + 5, _mm256_permute2x128_si256(u1, u5, 0x31));
    _mm256_store_si256(o + 6, _mm256_permute2x128_si256(u2, u6, 0x31));
    _mm256_store_si256(o + 7, _mm256_permute2x128_si256(u3, u7, 0x31));
}

/* One block of the 8 rows, decoded per row by the format file, stored into the strip.
 * cv[r][ch]: row r's codes of weights 32ch .. 32ch+31; m[r][j]: multiplier of sub-block j;
 * g[r][16]: bsums factors; dw[r], d2[r]. */
typedef struct {
    __m256i cv[MM_ROWS][8];
    int16_t m[MM_ROWS][16];
    int16_t g[MM_ROWS][16];
    float dw[MM_ROWS], d2[MM_ROWS];
} mm_blockdec;

MM_AI void mm_store_block(const mm_blockdec *d, const mm_strip *s, int64_t b, const int f) {
    const int nch = MM_B(f) / 32;
    for (int ch = 0; ch < nch; ch++) {
        __m256i v[8];
        for (int r = 0; r < 8; r++) v[r] = d->cv[r][ch];
        mm_pack8(v, s->codes + ((size_t)b * MM_QPB(f) + (size_t)ch * 8) * 32);
    }
    if (MM_MULT(f))
        for (int j = 0; j < MM_NSUB(f); j++) {
            int16_t *o = s->mult + ((size_t)b * MM_NSUB(f) + (size_t)j) * 16;
            for (int r = 0; r < 8; r++) o[2 * r] = o[2 * r + 1] = d->m[r][j];
        }
    if (MM_KSUM(f))
        for (int i = 0; i < 8; i++) {
            int16_t *o = s->g + ((size_t)b * 8 + (size_t)i) * 16;
            for (int r = 0; r < 8; r++) { o[2 * r] = d->g[r][2 * i]; o[2 * r + 1] = d->g[r][2 * i + 1]; }
        }
    memcpy(s->dw + (size_t)b * 8, d->dw, sizeof d->dw);
    memcpy(s->d2 + (size_t)b * 8, d->d2, sizeof d->d2);
}

MM_AI __m256i mm_bcast32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return _mm256_set1_epi32(v); }
MM_AI float mm_ldf(const uint8_t *p) { float v; memcpy(&v, p, 4); return v; }

/* NC columns (act rows ac[c]) against a decoded strip of nb blocks: y[c * n_out + r0 + r] for
 * r < nrows. asum[c * nba + b]: integer sum of column c's activation block b (OFFSET formats). */
MM_AI void mm_tile(const mm_strip *s, int64_t nb, const uint8_t *const *ac, const int32_t *const *asum,
                   const int NC, float *y, int64_t n_out, int64_t r0, int nrows, const int f, const int vnni) {
    const int QPB = MM_QPB(f), SUBQ = MM_SUBQ(f), NSUB = MM_NSUB(f), FQ = MM_FLUSHQ(f), AS = MM_AS(f);
    __m256 lanes[MM_NC][32];
    const int nl = nb < 32 ? (int)nb : 32;   /* lanes that receive partials; the others stay +0.0 */
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *cb = s->codes + (size_t)b * (size_t)QPB * 32;
        const uint8_t *ab[MM_NC];
        for (int c = 0; c < NC; c++) ab[c] = ac[c] + (size_t)b * (size_t)AS;
        __m256i S[MM_NC];
        for (int c = 0; c < NC; c++) S[c] = _mm256_setzero_si256();
        if (vnni) {
            /* AVX-VNNI: vpdpbusd adds the quad's 4 products per row straight into int32 (no
             * int16 stage, so no flushes); a sub-block's sum times its multiplier in int32 */
#pragma GCC unroll 16
            for (int j = 0; j < NSUB; j++) {
                __m256i acc[MM_NC];
                for (int c = 0; c < NC; c++) acc[c] = _mm256_setzero_si256();
#pragma GCC unroll 16
                for (int q = 0; q < SUBQ; q++) {
                    const int qi = j * SUBQ + q;
                    const __m256i w = _mm256_load_si256((const __m256i *)(cb + (size_t)qi * 32));
                    const __m256i wa = MM_SIGNED(f) ? _mm256_abs_epi8(w) : w;
#pragma GCC unroll 4
                    for (int c = 0; c < NC; c++) {
                        __m256i a = mm_bcast32(ab[c] + MM_AQS(f) + qi * 4);
                        if (MM_SIGNED(f)) a = _mm256_sign_epi8(a, w);
                        MM_DPBUSD(acc[c], wa, a);
                    }
                }
                if (MM_MULT(f)) {
                    /* lanes 2r, 2r+1 hold row r's multiplier: the high copy, sign-extended */
                    const __m256i m32 = _mm256_srai_epi32(_mm256_load_si256((const __m256i *)(s->mult + ((size_t)b * NSUB + j) * 16)), 16);
#pragma GCC unroll 4
                    for (int c = 0; c < NC; c++) S[c] = _mm256_add_epi32(S[c], _mm256_mullo_epi32(acc[c], m32));
                } else
                    for (int c = 0; c < NC; c++) S[c] = _mm256_add_epi32(S[c], acc[c]);
            }
        } else
#pragma GCC unroll 16
        for (int j = 0; j < NSUB; j++) {
            const __m256i mv = MM_MULT(f) ? _mm256_load_si256((const __m256i *)(s->mult + ((size_t)b * NSUB + j) * 16))
                                          : _mm256_set1_epi16(1);
#pragma GCC unroll 16
            for (int f0 = 0; f0 < SUBQ; f0 += FQ) {
                __m256i s16[MM_NC];
#pragma GCC unroll 16
                for (int q = 0; q < FQ; q++) {
                    const int qi = j * SUBQ + f0 + q;
                    const __m256i w = _mm256_load_si256((const __m256i *)(cb + (size_t)qi * 32));
                    const __m256i wa = MM_SIGNED(f) ? _mm256_abs_epi8(w) : w;
#pragma GCC unroll 4
                    for (int c = 0; c < NC; c++) {
                        __m256i a = mm_bcast32(ab[c] + MM_AQS(f) + qi * 4);
                        if (MM_SIGNED(f)) a = _mm256_sign_epi8(a, w);
                        const __m256i p = _mm256_maddubs_epi16(wa, a);
                        s16[c] = q == 0 ? p : _mm256_add_epi16(s16[c], p);
                        MM_PIN(s16[c]);
                    }
                }
#pragma GCC unroll 4
                for (int c = 0; c < NC; c++) {
                    S[c] = _mm256_add_epi32(S[c], _mm256_madd_epi16(s16[c], mv));
                    MM_PIN(S[c]);
                }
            }
        }
        __m256i M[MM_NC];
        if (MM_OFFSET(f))
            for (int c = 0; c < NC; c++) S[c] = _mm256_sub_epi32(S[c], _mm256_set1_epi32(MM_OFFSET(f) * asum[c][b]));
        if (MM_KSUM(f))
            for (int c = 0; c < NC; c++) {
                __m256i k = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++)
                    k = _mm256_add_epi32(k, _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(s->g + ((size_t)b * 8 + i) * 16)),
                                                              mm_bcast32(ab[c] + MM_ABS(f) + 4 * i)));
                if (MM_KSUM(f) == 2) S[c] = _mm256_add_epi32(S[c], k);
                else M[c] = k;
            }
        const __m256 dw = _mm256_load_ps(s->dw + (size_t)b * 8);
        const __m256 d2 = MM_FL(f) == 1 || MM_FL(f) == 2 ? _mm256_load_ps(s->d2 + (size_t)b * 8) : dw;
        const int l = (int)(b & 31);
        for (int c = 0; c < NC; c++) {
            const __m256 da = _mm256_set1_ps(mm_ldf(ab[c]));
            __m256 p;
            if (MM_FL(f) == 3)
                p = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(S[c]), _mm256_set1_ps(MM_KF(f))), _mm256_mul_ps(dw, da));
            else
                p = _mm256_mul_ps(_mm256_cvtepi32_ps(S[c]), _mm256_mul_ps(dw, da));
            if (MM_FL(f) == 1) p = _mm256_add_ps(p, _mm256_mul_ps(d2, _mm256_set1_ps(mm_ldf(ab[c] + 4))));
            if (MM_FL(f) == 2) p = _mm256_sub_ps(p, _mm256_mul_ps(_mm256_cvtepi32_ps(M[c]), _mm256_mul_ps(d2, da)));
            /* a lane starts at +0.0: its first partial is added to +0.0 (so -0.0 becomes +0.0) */
            lanes[c][l] = _mm256_add_ps(b < 32 ? _mm256_setzero_ps() : lanes[c][l], p);
        }
    }
    /* The 16-8-4-2-1 tree. A lane never holds -0.0 (it starts at +0.0 and a sum is -0.0 only
     * when both addends are), so adding an untouched +0.0 lane changes no bit: the adds whose
     * right operand is an untouched lane are skipped (n = lanes that may be nonzero). */
    for (int c = 0; c < NC; c++) {
        __m256 *a = lanes[c];
        int n = nl;
        if (canon_serial) {   /* STRATA_CANON=serial: the chain over the lanes (untouched ones are +0.0: skipped) */
            for (int i = 1; i < n; i++) a[0] = _mm256_add_ps(a[0], a[i]);
        } else
            for (int st = 16; st >= 1; st >>= 1) {
                for (int i = 0; i < st && i + st < n; i++) a[i] = _mm256_add_ps(a[i], a[i + st]);
                if (n > st) n = st;
            }
        if (n == 0) a[0] = _mm256_setzero_ps();
        float *yc = y + (size_t)c * (size_t)n_out + (size_t)r0;
        if (nrows == MM_ROWS) _mm256_storeu_ps(yc, a[0]);
        else {
            float t[8];
            _mm256_storeu_ps(t, a[0]);
            for (int r = 0; r < nrows; r++) yc[r] = t[r];
        }
    }
}

/* All T columns against one decoded strip, MM_NC at a time (the last 1..3 in a narrower tile). */
MM_AI void mm_columns(const mm_strip *s, int64_t nb, const void *act, size_t act_stride, const int32_t *asum,
                      int64_t nba, int T, float *y, int64_t n_out, int64_t r0, int nrows, const int f, const int vnni) {
    const uint8_t *ac[MM_NC];
    const int32_t *as[MM_NC];
    int c0 = 0;
    for (; c0 + MM_NC <= T; c0 += MM_NC) {
        for (int c = 0; c < MM_NC; c++) {
            ac[c] = (const uint8_t *)act + (size_t)(c0 + c) * act_stride;
            as[c] = asum ? asum + (size_t)(c0 + c) * (size_t)nba : NULL;
        }
        mm_tile(s, nb, ac, as, MM_NC, y + (size_t)c0 * (size_t)n_out, n_out, r0, nrows, f, vnni);
    }
    const int rest = T - c0;
    for (int c = 0; c < rest; c++) {
        ac[c] = (const uint8_t *)act + (size_t)(c0 + c) * act_stride;
        as[c] = asum ? asum + (size_t)(c0 + c) * (size_t)nba : NULL;
    }
    float *yc = y + (size_t)c0 * (size_t)n_out;
    if (rest == 3) mm_tile(s, nb, ac, as, 3, yc, n_out, r0, nrows, f, vnni);
    else if (rest == 2) mm_tile(s, nb, ac, as, 2, yc, n_out, r0, nrows, f, vnni);
    else if (rest == 1) mm_tile(s, nb, ac, as, 1, yc, n_out, r0, nrows, f, vnni);
}

/* The rows function of a format: strips of 8 rows in [r0, r1), each decoded once by DEC (a
 * macro-free callback: dec(row pointer, block index, r, &blockdec)) then run against every
 * column. r0 is a multiple of 8 (the caller splits in units of MM_ROWS). */
#define MM_ROWS_BODY(NAME, F, BSIZE, DECFN, VNNI)                                                          \
    MM_NOREASSOC static void NAME(const void *W, size_t row_bytes, int64_t n_in, const void *act, size_t act_stride,     \
                     const int32_t *asum, int T, float *y, int64_t n_out, int64_t r0, int64_t r1,           \
                     void *scratch) {                                                                      \
        const int64_t nb = n_in / MM_B(F);                                                                 \
        mm_strip s;                                                                                        \
        mm_strip_at(scratch, nb, &s, F);                                                                   \
        mm_blockdec d;                                                                                     \
        for (int64_t rs = r0; rs < r1; rs += MM_ROWS) {                                                    \
            const int nrows = r1 - rs < MM_ROWS ? (int)(r1 - rs) : MM_ROWS;                                \
            for (int64_t b = 0; b < nb; b++) {                                                             \
                for (int r = 0; r < MM_ROWS; r++) {                                                        \
                    if (r < nrows)                                                                         \
                        DECFN((const uint8_t *)W + (size_t)(rs + r) * row_bytes + (size_t)b * (BSIZE), r, &d); \
                    else {                                                                                 \
                        for (int ch = 0; ch < 8; ch++) d.cv[r][ch] = _mm256_setzero_si256();              \
                        memset(d.m[r], 0, sizeof d.m[r]); memset(d.g[r], 0, sizeof d.g[r]);               \
                        d.dw[r] = 0.0f; d.d2[r] = 0.0f;                                                    \
                    }                                                                                      \
                }                                                                                          \
                mm_store_block(&d, &s, b, F);                                                              \
            }                                                                                              \
            mm_columns(&s, nb, act, act_stride, asum, nb, T, y, n_out, rs, nrows, F, VNNI && MM_VNNI_USE(F)); \
        }                                                                                                  \
    }
/* NAME: the AVX2 kernel; NAME##_vnni: the same with vpdpbusd (AVX-VNNI CPUs), the same bits, for
 * the formats of MM_VNNI_USE (for the others it is NAME again, and the tables point at NAME) */
#define MM_DEFINE_ROWS(NAME, F, BSIZE, DECFN)                                                              \
    MM_ROWS_BODY(NAME, F, BSIZE, DECFN, 0)                                                                 \
    MM_ROWS_BODY(NAME##_vnni, F, BSIZE, DECFN, 1)                                                          \
    static size_t NAME##_scratch(int64_t n_in) { return mm_strip_bytes(n_in / MM_B(F), F); }

#endif
