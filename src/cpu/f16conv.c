#include "f16conv.h"
#include "core/util.h"
#include "quant/blocks.h"

void f16_to_f32_row_scalar(const uint16_t *src, float *dst, int n) {
    for (int i = 0; i < n; i++) dst[i] = fp16_to_f32(src[i]);
}

void q8_to_f32_row_scalar(const void *blocks, float *dst, int n) {
    const act_q8_0 *b = blocks;
    for (int j = 0; j < n / 32; j++)
        for (int i = 0; i < 32; i++) dst[32 * j + i] = b[j].d * (float)b[j].qs[i];
}

q8_row_fn q8_to_f32_row_get(void) {
    return cpu_has_avx2_fma() ? q8_to_f32_row_avx2 : q8_to_f32_row_scalar;
}

f16_row_fn f16_to_f32_row_get(void) {
    return cpu_has_avx2_fma() ? f16_to_f32_row_f16c : f16_to_f32_row_scalar;
}
