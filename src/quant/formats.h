/* THE per-format property table: one row per weight format and one per activation format,
 * written once and expanded by every side that needs it (X-macros):
 *   src/quant/quant_table.c  the CPU's quant_traits rows (+ the reference functions)
 *   src/quant/act.c          act_blck / act_row_bytes
 *   src/cuda/formats.cuh     compile-time traits of the kernels (wfmt<FMT>, afmt<ACT>), the
 *                            host-side type info and the per-format kernel dispatch
 * Adding a weight format = one row here + its layout in blocks.h + its reference functions
 * (src/quant/ref_*.c) + its kernels (src/cpu, src/cuda: the CUDA build stops with a
 * static_assert until the format has a block partial). Plain C with no functions: included by
 * C and by nvcc. */
#ifndef STRATA_FORMATS_H
#define STRATA_FORMATS_H
#include "blocks.h"

/* Activation formats (int8 blocks with float scales); one per weight family. */
typedef enum { ACT_F32 = 0, ACT_Q8_0, ACT_Q8_1, ACT_Q8_2, ACT_Q8_K, ACT_COUNT } act_format;

/* X(format, values per block, bytes per block) */
#define STRATA_ACT_FORMATS(X)          \
    X(ACT_F32,  1,    sizeof(float))   \
    X(ACT_Q8_0, 32,   sizeof(act_q8_0)) \
    X(ACT_Q8_1, 32,   sizeof(act_q8_1)) \
    X(ACT_Q8_2, 64,   sizeof(act_q8_2)) \
    X(ACT_Q8_K, QK_K, sizeof(act_q8_K))

/* X(name, type id, reference-function prefix, weights per block, bytes per block, activation
 * format the dot pairs with). Row order is the dispatch order of the kernels built per format. */
#define STRATA_WEIGHT_FORMATS(X)                                                 \
    X("F32",     TYPE_F32,     f32,     1,        sizeof(float),         ACT_F32)  \
    X("F16",     TYPE_F16,     f16,     1,        sizeof(uint16_t),      ACT_F32)  \
    X("BF16",    TYPE_BF16,    bf16,    1,        sizeof(uint16_t),      ACT_F32)  \
    X("Q4_0",    TYPE_Q4_0,    q4_0,    QK4_0,    sizeof(block_q4_0),    ACT_Q8_0) \
    X("Q4_1",    TYPE_Q4_1,    q4_1,    QK4_1,    sizeof(block_q4_1),    ACT_Q8_1) \
    X("Q5_0",    TYPE_Q5_0,    q5_0,    QK5_0,    sizeof(block_q5_0),    ACT_Q8_0) \
    X("Q5_1",    TYPE_Q5_1,    q5_1,    QK5_1,    sizeof(block_q5_1),    ACT_Q8_1) \
    X("Q8_0",    TYPE_Q8_0,    q8_0,    QK8_0,    sizeof(block_q8_0),    ACT_Q8_0) \
    X("Q2_0",    TYPE_Q2_0,    q2_0,    QK2_0,    sizeof(block_q2_0),    ACT_Q8_2) \
    X("MXFP4",   TYPE_MXFP4,   mxfp4,   QK_MXFP4, sizeof(block_mxfp4),   ACT_Q8_0) \
    X("Q2_K",    TYPE_Q2_K,    q2_K,    QK_K,     sizeof(block_q2_K),    ACT_Q8_K) \
    X("Q3_K",    TYPE_Q3_K,    q3_K,    QK_K,     sizeof(block_q3_K),    ACT_Q8_K) \
    X("Q4_K",    TYPE_Q4_K,    q4_K,    QK_K,     sizeof(block_q4_K),    ACT_Q8_K) \
    X("Q5_K",    TYPE_Q5_K,    q5_K,    QK_K,     sizeof(block_q5_K),    ACT_Q8_K) \
    X("Q6_K",    TYPE_Q6_K,    q6_K,    QK_K,     sizeof(block_q6_K),    ACT_Q8_K) \
    X("IQ2_XXS", TYPE_IQ2_XXS, iq2_xxs, QK_K,     sizeof(block_iq2_xxs), ACT_Q8_K) \
    X("IQ2_XS",  TYPE_IQ2_XS,  iq2_xs,  QK_K,     sizeof(block_iq2_xs),  ACT_Q8_K) \
    X("IQ2_S",   TYPE_IQ2_S,   iq2_s,   QK_K,     sizeof(block_iq2_s),   ACT_Q8_K) \
    X("IQ3_XXS", TYPE_IQ3_XXS, iq3_xxs, QK_K,     sizeof(block_iq3_xxs), ACT_Q8_K) \
    X("IQ3_S",   TYPE_IQ3_S,   iq3_s,   QK_K,     sizeof(block_iq3_s),   ACT_Q8_K) \
    X("IQ1_S",   TYPE_IQ1_S,   iq1_s,   QK_K,     sizeof(block_iq1_s),   ACT_Q8_K) \
    X("IQ1_M",   TYPE_IQ1_M,   iq1_m,   QK_K,     sizeof(block_iq1_m),   ACT_Q8_K) \
    X("IQ4_NL",  TYPE_IQ4_NL,  iq4_nl,  QK4_NL,   sizeof(block_iq4_nl),  ACT_Q8_0) \
    X("IQ4_XS",  TYPE_IQ4_XS,  iq4_xs,  QK_K,     sizeof(block_iq4_xs),  ACT_Q8_K)
#endif
