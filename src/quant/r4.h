/* R4: IQ2_XXS / IQ3_XXS rows re-laid at load as one 4-bit code a weight, for the CUDA T = 1 expert
 * kernels (STRATA_CUDA_MOE_R4; issue 20). Same values, same integer sums, same bits.
 *
 * Why: the T = 1 IQ3_XXS expert kernels are bound by their instruction count (~31 warp
 * instructions a 4-weight word: grid lookups, sign tables; docs/KERNELS.md), not by bytes. Both
 * formats' weights are a magnitude from a set of at most 8 (IQ3_XXS {4, 12, ..., 52, 62}, IQ2_XXS
 * {8, 25, 43}: the distinct bytes of their grids) times a sign, so a weight fits 4 bits:
 * code = (negative << 3) | index of the magnitude in r4_levels(type). A GPU lane turns 4 codes
 * into 4 signed bytes' worth of dot with two byte permutes (prmt with the sign bit as the
 * selector's replicate bit: the positive and the negative weights apart) and two dp4a.
 * Bytes: 4.31 bits a weight at rows of 2,048 (IQ3_XXS 3.06: 1.41x; IQ2_XXS 2.06: 2.09x).
 *
 * A row of n weights (nb = n / 256 super-blocks), planar:
 *   [0, 128 nb)          codes: super-block b, 32-weight sub-block j at 128 b + 16 j; byte i of
 *                        those 16 holds weight 2i (low nibble) and 2i + 1 (high nibble)
 *   [128 nb, 136 nb)     m[8 b + j] = 2 ls + 1 of sub-block j (uint8, the format's multiplier)
 *   [136 nb, 138 nb)     fp16 d of super-block b (the format's d, as stored)
 *   then zeros to r4_row_bytes(n) (a multiple of 16, so every row's codes stay 16-byte aligned)
 * The block partial is the format's: isum = sum_j m_j * sum_{i in j} w_i a_i (exact int32),
 * p_b = ((float)isum * k) * (h(d) * a.d), k = 1/4 (IQ3_XXS) or 1/8 (IQ2_XXS); the canonical
 * order of quant_canon.h over the p_b. */
#ifndef STRATA_R4_H
#define STRATA_R4_H
#include <stddef.h>
#include <stdint.h>

int r4_supported(int type);                     /* TYPE_IQ2_XXS, TYPE_IQ3_XXS */
const uint8_t *r4_levels(int type);             /* the 8 magnitudes (unused entries 0); NULL if unsupported */
float r4_k(int type);                           /* the partial's power of two */
size_t r4_row_bytes(int64_t n);                 /* n a multiple of 256 */
/* one row of n weights of `type` (its GGUF bytes) into dst (r4_row_bytes(n)); -1 if a weight's
 * magnitude is not one of r4_levels (never for a valid row) or the type is not supported */
int r4_repack_row(int type, const void *src, void *dst, int64_t n);
/* rows consecutive rows (src rows of the format's row bytes, dst rows of r4_row_bytes(n)) on up to
 * `threads` threads (<= 1: this one); 0 or -1 as r4_repack_row */
int r4_repack_rows(int type, const void *src, void *dst, int64_t rows, int64_t n, int threads);
/* the upload's all-or-none decision for a model's R4 copies (STRATA_CUDA_MOE_R4): 1 when `need` (the weights
 * plus every copy, bytes) and a reserve for the KV cache and the scratch (an eighth of the GPU's `total` bytes, at
 * least 2 GiB) fit in its `free_bytes`, else 0 (the experts keep the format's kernels) */
int r4_budget_fits(uint64_t free_bytes, uint64_t total, uint64_t need);
/* the row's dot with n values of act_q8_K blocks, in the canonical order (== the format's dot_ref) */
float r4_dot_ref(int type, const void *row, const void *act, int64_t n);
#endif
