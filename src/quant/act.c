/* Activation quantization: f32 rows -> int8 blocks with float scales (src/quant/blocks.h).
 *
 * One formula for every activation format, chosen so CUDA reproduces it exactly
 * (docs/KERNELS.md, "Activation quantization"). For each block of B values x[0..B):
 *   amax = max |x[i]|                  (fabsf, ordinary comparisons: NaN is skipped)
 *   d    = amax / 127.0f
 *   id   = d != 0 ? 1.0f / d : 0.0f
 *   q[i] = (int)nearbyintf(clamp(x[i] * id, -127, 127))   round half to even (the default
 *          rounding mode; CUDA __float2int_rn), clamp = fminf(fmaxf(v, -127), 127) (NaN: -127)
 * src/cpu/matvec_avx2.c has an AVX2 twin (act_quantize_row_avx2) with the same bits.
 *   act_q8_1 / act_q8_2:  s = d * (float)sum(q)
 *   act_q8_K:             bsums[j] = sum of q[16j .. 16j+15]
 * ACT_F32 rows are copied unchanged. */
#include "quant.h"
#include <math.h>
#include <string.h>

/* values and bytes per block: the rows of src/quant/formats.h */
int act_blck(act_format f) {
    switch (f) {
#define BLCK_OF(F, B, BYTES) case F: return B;
    STRATA_ACT_FORMATS(BLCK_OF)
#undef BLCK_OF
    default: return 0;
    }
}

static size_t act_block_bytes(act_format f) {
    switch (f) {
#define BYTES_OF(F, B, BYTES) case F: return BYTES;
    STRATA_ACT_FORMATS(BYTES_OF)
#undef BYTES_OF
    default: return 0;
    }
}

size_t act_row_bytes(act_format f, int64_t n) {
    int b = act_blck(f);
    if (b <= 0 || n < 0 || n % b) return 0;
    return (size_t)(n / b) * act_block_bytes(f);
}

/* Quantize one block of `blck` values to int8 codes; returns d, writes the code sum.
 * The clamp is written as comparisons so NaN maps to -127 exactly as fminf(fmaxf(NaN, -127),
 * 127) would, without a libm call; rounding to nearest even uses the 1.5 * 2^23 trick,
 * exact for |v| <= 127 (the same value nearbyintf gives in the default rounding mode). */
static float act_block_q8(const float *x, int blck, int8_t *q, int32_t *sum) {
    float amax = 0.0f;
    for (int i = 0; i < blck; i++) {
        float a = fabsf(x[i]);
        if (a > amax) amax = a;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32_t s = 0;
    for (int i = 0; i < blck; i++) {
        float v = x[i] * id;
        v = v > -127.0f ? v : -127.0f;
        v = v < 127.0f ? v : 127.0f;
        float t = v + 12582912.0f;   /* no -ffast-math: the compiler keeps both adds */
        q[i] = (int8_t)(int)(t - 12582912.0f);
        s += q[i];
    }
    *sum = s;
    return d;
}

void act_quantize_row(act_format f, const float *restrict x, void *restrict dst, int64_t n) {
    int32_t sum;
    switch (f) {
    case ACT_F32:
        memcpy(dst, x, (size_t)n * sizeof(float));
        break;
    case ACT_Q8_0: {
        act_q8_0 *b = dst;
        for (int64_t i = 0; i < n / 32; i++) b[i].d = act_block_q8(x + i * 32, 32, b[i].qs, &sum);
        break;
    }
    case ACT_Q8_1: {
        act_q8_1 *b = dst;
        for (int64_t i = 0; i < n / 32; i++) {
            b[i].d = act_block_q8(x + i * 32, 32, b[i].qs, &sum);
            b[i].s = b[i].d * (float)sum;
        }
        break;
    }
    case ACT_Q8_2: {
        act_q8_2 *b = dst;
        for (int64_t i = 0; i < n / 64; i++) {
            b[i].d = act_block_q8(x + i * 64, 64, b[i].qs, &sum);
            b[i].s = b[i].d * (float)sum;
        }
        break;
    }
    case ACT_Q8_K: {
        act_q8_K *b = dst;
        for (int64_t i = 0; i < n / QK_K; i++) {
            b[i].d = act_block_q8(x + i * QK_K, QK_K, b[i].qs, &sum);
            for (int j = 0; j < QK_K / 16; j++) {
                int32_t s = 0;
                for (int k = 0; k < 16; k++) s += b[i].qs[16 * j + k];
                b[i].bsums[j] = (int16_t)s;
            }
        }
        break;
    }
    default:
        break;
    }
}
