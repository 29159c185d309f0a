/* f16 -> f32 rows with F16C (vcvtph2ps): the same values as fp16_to_f32, 8 at a time. */
#include <immintrin.h>
#include <stdint.h>
#include "f16conv.h"
#include "core/util.h"
#include "quant/blocks.h"

void q8_to_f32_row_avx2(const void *blocks, float *dst, int n) {
    const act_q8_0 *b = blocks;
    for (int j = 0; j < n / 32; j++) {
        const __m256 d = _mm256_set1_ps(b[j].d);
        for (int k = 0; k < 32; k += 8) {
            __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b[j].qs + k)));
            _mm256_storeu_ps(dst + 32 * j + k, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
        }
    }
}

void f16_to_f32_row_f16c(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = fp16_to_f32(src[i]);
}
