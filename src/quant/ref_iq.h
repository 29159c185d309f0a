/* Reference functions of the IQ codebook formats (implemented in src/quant/ref_iq.c).
 * The quantization table (src/quant/quant_table.c) names these in its IQ rows.
 * Pairing with activation formats (src/quant/blocks.h):
 *   iq4_nl                      -> ACT_Q8_0 (32-weight blocks, act_q8_0)
 *   every other IQ type here    -> ACT_Q8_K (256-weight super-blocks, act_q8_K)
 * dequant_row / quant_row take n weights, n a multiple of the block size.
 * dot_ref follows the canonical accumulation order of docs/KERNELS.md
 * (block partial p_b into lane b % 32, then the fixed 16-8-4-2-1 tree; see quant_canon.h). */
#ifndef STRATA_REF_IQ_H
#define STRATA_REF_IQ_H
#include <stdint.h>

#define STRATA_IQ_REF_DECL(X) \
    void X##_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n); \
    void X##_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n); \
    float X##_dot_ref(const void *restrict w, const void *restrict a, int64_t n);

STRATA_IQ_REF_DECL(iq2_xxs)
STRATA_IQ_REF_DECL(iq2_xs)
STRATA_IQ_REF_DECL(iq2_s)
STRATA_IQ_REF_DECL(iq3_xxs)
STRATA_IQ_REF_DECL(iq3_s)
STRATA_IQ_REF_DECL(iq1_s)
STRATA_IQ_REF_DECL(iq1_m)
STRATA_IQ_REF_DECL(iq4_nl)
STRATA_IQ_REF_DECL(iq4_xs)
#undef STRATA_IQ_REF_DECL

/* The integer decode the dots use, for one super-block of a 256-weight IQ type: w8[256] (grid
 * value * sign; IQ1: 8 * grid + delta; IQ4_XS: codebook value) and the multiplier m[j] of each
 * 16 weights; returns fp16(d) as a float (NAN for a type without one). */
float iq_decode_ref(int type, const void *blk, int8_t w8[256], int16_t m[16]);
#endif
