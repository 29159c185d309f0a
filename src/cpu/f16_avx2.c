/* f16 -> f32 rows with F16C (vcvtph2ps): the same values as fp16_to_f32, 8 at a time. */
#include <immintrin.h>
#include <stdint.h>
#include "f16conv.h"
#include "core/util.h"

void f16_to_f32_row_f16c(const uint16_t *src, float *dst, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = fp16_to_f32(src[i]);
}
