/* Reference functions of the float, legacy and K-quant formats (one family per file:
 * ref_float.c, ref_legacy.c, ref_kquants.c; the IQ family is in ref_iq.h).
 * Naming: <type>_dequant_row_ref, <type>_quant_row_ref, <type>_dot_ref.
 * n is the number of weights (a multiple of the block size). dot_ref's activation row `a`
 * has the format named by the quantization table (src/quant/quant_table.c); its float
 * accumulation follows the canonical order (quant_canon.h, docs/KERNELS.md). */
#ifndef STRATA_QUANT_REF_H
#define STRATA_QUANT_REF_H
#include <stdint.h>
#include "blocks.h"

#define STRATA_REF_DECL(X) \
    void X##_dequant_row_ref(const void *restrict src, float *restrict dst, int64_t n); \
    void X##_quant_row_ref(const float *restrict src, void *restrict dst, int64_t n); \
    float X##_dot_ref(const void *restrict w, const void *restrict a, int64_t n);

/* float weights; the activation row is f32 (ACT_F32) */
STRATA_REF_DECL(f32)
STRATA_REF_DECL(f16)
STRATA_REF_DECL(bf16)
/* legacy 32-weight blocks (Q2_0: 64) */
STRATA_REF_DECL(q4_0)
STRATA_REF_DECL(q4_1)
STRATA_REF_DECL(q5_0)
STRATA_REF_DECL(q5_1)
STRATA_REF_DECL(q8_0)
STRATA_REF_DECL(q2_0)
STRATA_REF_DECL(mxfp4)
/* K-quants, 256-weight super-blocks, paired with act_q8_K */
STRATA_REF_DECL(q2_K)
STRATA_REF_DECL(q3_K)
STRATA_REF_DECL(q4_K)
STRATA_REF_DECL(q5_K)
STRATA_REF_DECL(q6_K)
#undef STRATA_REF_DECL

/* Float dot in the canonical per-element order: lane k % 32 += w[k] * x[k]. */
float f32_dot_canon_ref(const float *w, const float *x, int64_t n);

/* MXFP4: e2m1 code -> doubled value (facts of the format), and the e8m0 scale halved:
 * 2^(e - 128) as a float (e = 0 gives the subnormal 2^-128). */
extern const int8_t mxfp4_kvalues[16];
float mxfp4_e8m0_half(uint8_t e);

/* The integer codes the dots use (what src/quant/decode_fast.h's faster decodes must equal):
 * Q2_0 block -> q[64] = code - 1; Q6_K block -> q[256] = code - 32 (weight order). */
void q2_0_unpack_ref(const void *blk, int8_t q[QK2_0]);
void q6_K_unpack_ref(const void *blk, int8_t q[QK_K]);
#endif
