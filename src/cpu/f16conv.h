/* f16 -> f32 row conversion, chosen once: F16C when the CPU has it, else the scalar
 * fp16_to_f32. Both give identical values (the conversion is exact). */
#ifndef STRATA_F16CONV_H
#define STRATA_F16CONV_H
#include <stdint.h>
void f16_to_f32_row_f16c(const uint16_t *src, float *dst, int n);
void f16_to_f32_row_scalar(const uint16_t *src, float *dst, int n);
typedef void (*f16_row_fn)(const uint16_t *src, float *dst, int n);
f16_row_fn f16_to_f32_row_get(void);
/* int8 KV rows (act_q8_0 blocks: f32 d + 32 int8) -> f32: v = d * (float)q, one rounded
 * product per value (AVX2 or scalar: same values). n % 32 == 0. */
void q8_to_f32_row_avx2(const void *blocks, float *dst, int n);
void q8_to_f32_row_scalar(const void *blocks, float *dst, int n);
typedef void (*q8_row_fn)(const void *blocks, float *dst, int n);
q8_row_fn q8_to_f32_row_get(void);
#endif
