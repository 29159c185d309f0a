/* f16 -> f32 row conversion, chosen once: F16C when the CPU has it, else the scalar
 * fp16_to_f32. Both give identical values (the conversion is exact). */
#ifndef STRATA_F16CONV_H
#define STRATA_F16CONV_H
#include <stdint.h>
void f16_to_f32_row_f16c(const uint16_t *src, float *dst, int n);
void f16_to_f32_row_scalar(const uint16_t *src, float *dst, int n);
typedef void (*f16_row_fn)(const uint16_t *src, float *dst, int n);
f16_row_fn f16_to_f32_row_get(void);
#endif
