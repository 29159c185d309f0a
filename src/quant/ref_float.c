/* Reference functions of the float weight formats F32, F16, BF16.
 * They pair with ACT_F32: the activation row stays f32 and the dot is the canonical
 * per-element order (lane k % 32 gets the rounded product w[k] * x[k]; no FMA). */
#include "ref.h"
#include "quant_canon.h"
#include "../core/util.h"
#include <string.h>

float f32_dot_canon_ref(const float *w, const float *x, int64_t n) {
    canon_acc acc; canon_init(&acc);
    for (int64_t k = 0; k < n; k++) canon_add(&acc, k, w[k] * x[k]);
    return canon_finish(&acc);
}

void f32_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
void f32_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
float f32_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    return f32_dot_canon_ref((const float *)w, (const float *)a, n);
}

void f16_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t k = 0; k < n; k++) dst[k] = fp16_to_f32(h[k]);
}
void f16_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t k = 0; k < n; k++) h[k] = f32_to_fp16(src[k]);
}
float f16_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const uint16_t *h = w; const float *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t k = 0; k < n; k++) canon_add(&acc, k, fp16_to_f32(h[k]) * x[k]);
    return canon_finish(&acc);
}

void bf16_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t k = 0; k < n; k++) dst[k] = bf16_to_f32(h[k]);
}
void bf16_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t k = 0; k < n; k++) h[k] = f32_to_bf16(src[k]);
}
float bf16_dot_ref(const void *restrict w, const void *restrict a, int64_t n) {
    const uint16_t *h = w; const float *x = a;
    canon_acc acc; canon_init(&acc);
    for (int64_t k = 0; k < n; k++) canon_add(&acc, k, bf16_to_f32(h[k]) * x[k]);
    return canon_finish(&acc);
}
