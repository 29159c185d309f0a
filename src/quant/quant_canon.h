/* The canonical float accumulation order of every dot product (docs/KERNELS.md).
 * Shared by all reference dots (C) and mirrored by the AVX2 and CUDA kernels.
 *
 *   acc[0..31] = +0.0f
 *   for each block b of the row, in increasing b:  acc[b % 32] = acc[b % 32] + p_b
 *   for s = 16, 8, 4, 2, 1:  for i < s:  acc[i] = acc[i] + acc[i + s]
 *   result = acc[0]
 *
 * p_b is the block's float partial (formula per format in docs/KERNELS.md). For float
 * weights (F32/F16/BF16 with f32 x, and exact mode) the "blocks" are single elements:
 * p_k = w[k] * x[k] (product rounded to float, never fused). Lane b % 32 is a CUDA warp
 * lane and the tree is a shuffle-down reduction, so a warp reproduces the bits.
 * A lane never holds -0.0 (it starts at +0.0), so padding with +0.0 partials is exact. */
#ifndef STRATA_QUANT_CANON_H
#define STRATA_QUANT_CANON_H
#include <stdint.h>

#define CANON_LANES 32

/* The 32 lane values combine by the chain ((lane0 + lane1) + lane2) + ... + lane31 (canon_serial,
 * the default since 2026-12-04) or, with STRATA_CANON=tree, by the 16-8-4-2-1 tree; on every
 * device alike (read once at startup, src/quant/canon.c; docs/KERNELS.md section 3) */
extern int canon_serial;

typedef struct { float lane[CANON_LANES]; } canon_acc;

static inline void canon_init(canon_acc *a) {
    for (int i = 0; i < CANON_LANES; i++) a->lane[i] = 0.0f;
}
static inline void canon_add(canon_acc *a, int64_t b, float p) {
    a->lane[b & (CANON_LANES - 1)] = a->lane[b & (CANON_LANES - 1)] + p;
}
/* The chain over lanes 0..31 (default), or with STRATA_CANON=tree the fixed tree s = 16, 8, 4,
 * 2, 1. Destroys the lanes. */
static inline float canon_finish(canon_acc *a) {
    if (canon_serial) {
        float r = a->lane[0];
        for (int i = 1; i < CANON_LANES; i++) r = r + a->lane[i];
        return r;
    }
    for (int s = CANON_LANES / 2; s >= 1; s >>= 1)
        for (int i = 0; i < s; i++) a->lane[i] = a->lane[i] + a->lane[i + s];
    return a->lane[0];
}
#endif
