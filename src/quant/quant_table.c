/* THE quantization table: one row per weight format (src/quant/quant.h).
 * Adding a format = one row here + its reference functions + (optionally) a fast kernel
 * returned by src/cpu/kernels.h's getters. Nothing else switches on the type. */
#include "quant.h"
#include "ref.h"
#include "ref_iq.h"
#include <strings.h>


#define ROW(NAME, TYPE, BLCK, BSIZE, ACT, fn) \
    [TYPE] = { NAME, TYPE, BLCK, BSIZE, ACT, fn##_dequant_row_ref, fn##_quant_row_ref, fn##_dot_ref }

static const quant_traits quant_table[TYPE_COUNT] = {
    /* name       type          weights  bytes per block          activation */
    ROW("F32",     TYPE_F32,     1,       4,                       ACT_F32,  f32),
    ROW("F16",     TYPE_F16,     1,       2,                       ACT_F32,  f16),
    ROW("BF16",    TYPE_BF16,    1,       2,                       ACT_F32,  bf16),
    ROW("Q4_0",    TYPE_Q4_0,    QK4_0,   sizeof(block_q4_0),      ACT_Q8_0, q4_0),
    ROW("Q4_1",    TYPE_Q4_1,    QK4_1,   sizeof(block_q4_1),      ACT_Q8_1, q4_1),
    ROW("Q5_0",    TYPE_Q5_0,    QK5_0,   sizeof(block_q5_0),      ACT_Q8_0, q5_0),
    ROW("Q5_1",    TYPE_Q5_1,    QK5_1,   sizeof(block_q5_1),      ACT_Q8_1, q5_1),
    ROW("Q8_0",    TYPE_Q8_0,    QK8_0,   sizeof(block_q8_0),      ACT_Q8_0, q8_0),
    ROW("Q2_0",    TYPE_Q2_0,    QK2_0,   sizeof(block_q2_0),      ACT_Q8_2, q2_0),
    ROW("MXFP4",   TYPE_MXFP4,   QK_MXFP4, sizeof(block_mxfp4),    ACT_Q8_0, mxfp4),
    ROW("Q2_K",    TYPE_Q2_K,    QK_K,    sizeof(block_q2_K),      ACT_Q8_K, q2_K),
    ROW("Q3_K",    TYPE_Q3_K,    QK_K,    sizeof(block_q3_K),      ACT_Q8_K, q3_K),
    ROW("Q4_K",    TYPE_Q4_K,    QK_K,    sizeof(block_q4_K),      ACT_Q8_K, q4_K),
    ROW("Q5_K",    TYPE_Q5_K,    QK_K,    sizeof(block_q5_K),      ACT_Q8_K, q5_K),
    ROW("Q6_K",    TYPE_Q6_K,    QK_K,    sizeof(block_q6_K),      ACT_Q8_K, q6_K),
    ROW("IQ2_XXS", TYPE_IQ2_XXS, QK_K,    sizeof(block_iq2_xxs),   ACT_Q8_K, iq2_xxs),
    ROW("IQ2_XS",  TYPE_IQ2_XS,  QK_K,    sizeof(block_iq2_xs),    ACT_Q8_K, iq2_xs),
    ROW("IQ2_S",   TYPE_IQ2_S,   QK_K,    sizeof(block_iq2_s),     ACT_Q8_K, iq2_s),
    ROW("IQ3_XXS", TYPE_IQ3_XXS, QK_K,    sizeof(block_iq3_xxs),   ACT_Q8_K, iq3_xxs),
    ROW("IQ3_S",   TYPE_IQ3_S,   QK_K,    sizeof(block_iq3_s),     ACT_Q8_K, iq3_s),
    ROW("IQ1_S",   TYPE_IQ1_S,   QK_K,    sizeof(block_iq1_s),     ACT_Q8_K, iq1_s),
    ROW("IQ1_M",   TYPE_IQ1_M,   QK_K,    sizeof(block_iq1_m),     ACT_Q8_K, iq1_m),
    ROW("IQ4_NL",  TYPE_IQ4_NL,  QK4_NL,  sizeof(block_iq4_nl),    ACT_Q8_0, iq4_nl),
    ROW("IQ4_XS",  TYPE_IQ4_XS,  QK_K,    sizeof(block_iq4_xs),    ACT_Q8_K, iq4_xs),
};

const quant_traits *quant_traits_get(int type) {
    if (type < 0 || type >= TYPE_COUNT) return NULL;
    const quant_traits *t = &quant_table[type];
    /* empty slots (non-weight ids) and rows whose family is not in this build */
    if (!t->name || !t->dequant_row || !t->dot_ref) return NULL;
    return t;
}

const char *quant_type_name(int type) {
    const quant_traits *t = quant_traits_get(type);
    if (t) return t->name;
    if (type >= 0 && type < TYPE_COUNT && quant_table[type].name) return quant_table[type].name;
    return "?";
}

int quant_type_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TYPE_COUNT; i++)
        if (quant_table[i].name && !strcasecmp(quant_table[i].name, name)) return i;
    return -1;
}

size_t quant_row_bytes(int type, int64_t n) {
    if (type < 0 || type >= TYPE_COUNT || !quant_table[type].name) return 0;
    const quant_traits *t = &quant_table[type];
    if (n < 0 || n % t->blck) return 0;
    return (size_t)(n / t->blck) * (size_t)t->bsize;
}
