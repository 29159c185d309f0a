#include "f16conv.h"
#include "core/util.h"

void f16_to_f32_row_scalar(const uint16_t *src, float *dst, int n) {
    for (int i = 0; i < n; i++) dst[i] = fp16_to_f32(src[i]);
}

f16_row_fn f16_to_f32_row_get(void) {
    return cpu_has_avx2_fma() ? f16_to_f32_row_f16c : f16_to_f32_row_scalar;
}
