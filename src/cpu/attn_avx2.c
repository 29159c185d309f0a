/* Attention scores of 8 cache positions at once (AVX2; dispatched at run time by
 * src/cpu/backend_cpu.c). Lane j of the vector is position j's score: the dot product of q
 * with its K row accumulated in d order — product rounded, then added, from 0.0f — and then
 * multiplied by scale: exactly the scalar loop's operations, so the bits do not change; the
 * eight positions' dependency chains just run side by side instead of one after another. */
#include <immintrin.h>
#include "kernels.h"

/* 8x8 transpose: in r[j] = row j (8 consecutive d), out c[i] lane j = row j's value i */
static inline void transpose8(__m256 r[8], __m256 c[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    c[0] = _mm256_permute2f128_ps(u0, u4, 0x20); c[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    c[1] = _mm256_permute2f128_ps(u1, u5, 0x20); c[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    c[2] = _mm256_permute2f128_ps(u2, u6, 0x20); c[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    c[3] = _mm256_permute2f128_ps(u3, u7, 0x20); c[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

/* o[d] = o[d] + w[i] * rows[i][d] for i = 0..n-1 in order (product rounded, then added): the
 * scalar V loop's operations, eight d at a time. hd % 8 == 0. Four blocks of eight d side by
 * side where hd allows (independent chains: the adds' latency overlaps; each d's chain is
 * unchanged). */
void attn_vacc_avx2(float *o, const float *const *rows, const float *w, int n, int hd) {
    int d0 = 0;
    for (; d0 + 32 <= hd; d0 += 32) {
        __m256 a0 = _mm256_loadu_ps(o + d0), a1 = _mm256_loadu_ps(o + d0 + 8);
        __m256 a2 = _mm256_loadu_ps(o + d0 + 16), a3 = _mm256_loadu_ps(o + d0 + 24);
        for (int i = 0; i < n; i++) {
            const __m256 wi = _mm256_set1_ps(w[i]);
            const float *r = rows[i] + d0;
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(wi, _mm256_loadu_ps(r)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(wi, _mm256_loadu_ps(r + 8)));
            a2 = _mm256_add_ps(a2, _mm256_mul_ps(wi, _mm256_loadu_ps(r + 16)));
            a3 = _mm256_add_ps(a3, _mm256_mul_ps(wi, _mm256_loadu_ps(r + 24)));
        }
        _mm256_storeu_ps(o + d0, a0); _mm256_storeu_ps(o + d0 + 8, a1);
        _mm256_storeu_ps(o + d0 + 16, a2); _mm256_storeu_ps(o + d0 + 24, a3);
    }
    for (; d0 < hd; d0 += 8) {
        __m256 acc = _mm256_loadu_ps(o + d0);
        for (int i = 0; i < n; i++) acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(w[i]), _mm256_loadu_ps(rows[i] + d0)));
        _mm256_storeu_ps(o + d0, acc);
    }
}

void attn_scores8_avx2(const float *q, const float *const *rows, int hd, float scale, float *out) {
    __m256 s = _mm256_setzero_ps();
    for (int d0 = 0; d0 < hd; d0 += 8) {
        __m256 r[8], c[8];
        for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(rows[j] + d0);
        transpose8(r, c);
        for (int i = 0; i < 8; i++) s = _mm256_add_ps(s, _mm256_mul_ps(_mm256_set1_ps(q[d0 + i]), c[i]));
    }
    _mm256_storeu_ps(out, _mm256_mul_ps(s, _mm256_set1_ps(scale)));
}

/* 32 positions: four groups of eight, their chains side by side (each position's chain is the
 * one of attn_scores8_avx2). */
void attn_scores32_avx2(const float *q, const float *const *rows, int hd, float scale, float *out) {
    __m256 s[4] = { _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps() };
    for (int d0 = 0; d0 < hd; d0 += 8) {
        __m256 c[4][8];
        for (int g = 0; g < 4; g++) {
            __m256 r[8];
            for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(rows[g * 8 + j] + d0);
            transpose8(r, c[g]);
        }
        for (int i = 0; i < 8; i++) {
            const __m256 qi = _mm256_set1_ps(q[d0 + i]);
            for (int g = 0; g < 4; g++) s[g] = _mm256_add_ps(s[g], _mm256_mul_ps(qi, c[g][i]));
        }
    }
    const __m256 sc = _mm256_set1_ps(scale);
    for (int g = 0; g < 4; g++) _mm256_storeu_ps(out + g * 8, _mm256_mul_ps(s[g], sc));
}
