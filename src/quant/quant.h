/* The quantization library: one table row per GGUF weight format.
 * Reference functions are plain C and define the bits every fast kernel must reproduce
 * (canonical accumulation order: docs/KERNELS.md). */
#ifndef STRATA_QUANT_H
#define STRATA_QUANT_H
#include <stddef.h>
#include <stdint.h>
#include "blocks.h"
#include "formats.h"   /* the per-format property table and act_format */

typedef struct quant_traits {
    const char *name;          /* "Q4_K" as ggml/gguf name it */
    strata_type type;          /* ggml type id */
    int blck;                  /* weights per block */
    int bsize;                 /* bytes per block */
    act_format act;            /* activation format the dot pairs with */
    /* dequantize n weights (n % blck == 0) */
    void (*dequant_row)(const void *restrict src, float *restrict dst, int64_t n);
    /* quantize n floats, round to nearest (NULL: not supported) */
    void (*quant_row)(const float *restrict src, void *restrict dst, int64_t n);
    /* dot of one weight row with an activation row in `act` format, canonical order */
    float (*dot_ref)(const void *restrict w, const void *restrict a, int64_t n);
} quant_traits;

/* Row for a type id; NULL for ids that are unknown or not weight formats. */
const quant_traits *quant_traits_get(int type);
const char *quant_type_name(int type);          /* "?" when unknown */
int quant_type_from_name(const char *name);     /* -1 when unknown (case-insensitive) */
/* Bytes of a row of n weights; 0 if n is not a multiple of the block size. */
size_t quant_row_bytes(int type, int64_t n);

/* Activation rows. */
int    act_blck(act_format f);
size_t act_row_bytes(act_format f, int64_t n);
void   act_quantize_row(act_format f, const float *restrict x, void *restrict dst, int64_t n);
#endif
