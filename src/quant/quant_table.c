/* THE quantization table: one row per weight format (src/quant/quant.h), expanded from the
 * property table in src/quant/formats.h (name, id, block, bytes, activation format), which
 * the CUDA kernels expand too. Adding a format = one row there + its reference functions
 * (named by the row's prefix) + (optionally) a fast kernel returned by src/cpu/kernels.h's
 * getters. Nothing else switches on the type (src/cuda only to pick a format's kernel). */
#include "quant.h"
#include "ref.h"
#include "ref_iq.h"
#include <strings.h>


#define ROW(NAME, TYPE, fn, BLCK, BSIZE, ACT) \
    [TYPE] = { NAME, TYPE, BLCK, BSIZE, ACT, fn##_dequant_row_ref, fn##_quant_row_ref, fn##_dot_ref },

/* the rows: src/quant/formats.h (shared with the CUDA kernels) */
static const quant_traits quant_table[TYPE_COUNT] = { STRATA_WEIGHT_FORMATS(ROW) };
#undef ROW

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
