/* AVX2 matvec kernels (compiled with -mavx2 -mfma -mf16c; chosen at run time).
 * Every kernel reproduces its format's reference dot bit for bit: exact int32 block sums,
 * the same float operations per block partial (never fused), and the canonical lane order
 * (block b into lane b % 32 = 4 vectors of 8 lanes, then the 16-8-4-2-1 tree). */
#include "kernels.h"
#include "../quant/quant.h"
#include <immintrin.h>

/* Canonical 32-lane tree over 4 vectors holding lanes 0-7, 8-15, 16-23, 24-31. */
static inline float canon_tree4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
    a0 = _mm256_add_ps(a0, a2);                 /* s = 16: lane i += lane i + 16 */
    a1 = _mm256_add_ps(a1, a3);
    a0 = _mm256_add_ps(a0, a1);                 /* s = 8 */
    __m128 v = _mm_add_ps(_mm256_castps256_ps128(a0), _mm256_extractf128_ps(a0, 1)); /* s = 4 */
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));     /* s = 2: lanes 0,1 += lanes 2,3 */
    v = _mm_add_ss(v, _mm_shuffle_ps(v, v, 1)); /* s = 1 */
    return _mm_cvtss_f32(v);
}

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

matvec_rows_fn matvec_rows_avx2(int type) {
    (void)type;
    return NULL;
}
