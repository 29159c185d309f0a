/* The 8 x 8 float transpose of the AVX2 kernels (attn_avx2.c's K tiles, matmul_avx2.h's serial
 * finish: lane j of 8 rows into one vector). Only moves values: no rounding anywhere. */
#ifndef STRATA_CPU_TRANSPOSE_AVX2_H
#define STRATA_CPU_TRANSPOSE_AVX2_H
#include <immintrin.h>

/* 8x8 transpose: in r[j] = row j (8 consecutive d), out c[i] lane j = row j's value i */
static inline __attribute__((always_inline)) void avx2_transpose8(const __m256 r[8], __m256 c[8]) {
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
#endif
