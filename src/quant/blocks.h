/* Block layouts of every GGUF weight format, declared once for C and CUDA.
 * Facts of the GGUF format (ggml type ids as stored in files). Every struct has a
 * static size check: a layout change that moves a byte fails to compile.
 * Scales marked "fp16" are IEEE half bit patterns (uint16_t). */
#ifndef STRATA_BLOCKS_H
#define STRATA_BLOCKS_H
#include <stdint.h>

#ifdef __cplusplus
#define STRATA_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define STRATA_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* ggml type ids as stored in GGUF files */
typedef enum {
    TYPE_F32 = 0, TYPE_F16 = 1, TYPE_Q4_0 = 2, TYPE_Q4_1 = 3,
    TYPE_Q5_0 = 6, TYPE_Q5_1 = 7, TYPE_Q8_0 = 8, TYPE_Q8_1 = 9,
    TYPE_Q2_K = 10, TYPE_Q3_K = 11, TYPE_Q4_K = 12, TYPE_Q5_K = 13, TYPE_Q6_K = 14, TYPE_Q8_K = 15,
    TYPE_IQ2_XXS = 16, TYPE_IQ2_XS = 17, TYPE_IQ3_XXS = 18, TYPE_IQ1_S = 19, TYPE_IQ4_NL = 20,
    TYPE_IQ3_S = 21, TYPE_IQ2_S = 22, TYPE_IQ4_XS = 23,
    TYPE_I8 = 24, TYPE_I16 = 25, TYPE_I32 = 26, TYPE_I64 = 27, TYPE_F64 = 28,
    TYPE_IQ1_M = 29, TYPE_BF16 = 30, TYPE_MXFP4 = 39,
    TYPE_Q2_0 = 42,  /* strata: 64 weights, fp16 d, 2-bit codes c -> (c - 1) * d */
    TYPE_COUNT = 43
} strata_type;

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK4_NL 32
#define QK_MXFP4 32
#define QK2_0 64
#define QK_K 256
#define K_SCALE_SIZE 12

/* ---- legacy 32-weight blocks ---------------------------------------------------- */
typedef struct { uint16_t d; uint8_t qs[QK4_0 / 2]; } block_q4_0;              /* w = (q - 8) * d; low nibbles = weights 0..15, high = 16..31 */
STRATA_STATIC_ASSERT(sizeof(block_q4_0) == 2 + QK4_0 / 2, "block_q4_0 size");
typedef struct { uint16_t d, m; uint8_t qs[QK4_1 / 2]; } block_q4_1;           /* w = q * d + m */
STRATA_STATIC_ASSERT(sizeof(block_q4_1) == 4 + QK4_1 / 2, "block_q4_1 size");
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK5_0 / 2]; } block_q5_0; /* 5th bit j in qh bit j; w = (q - 16) * d */
STRATA_STATIC_ASSERT(sizeof(block_q5_0) == 2 + 4 + QK5_0 / 2, "block_q5_0 size");
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK5_1 / 2]; } block_q5_1; /* w = q * d + m */
STRATA_STATIC_ASSERT(sizeof(block_q5_1) == 4 + 4 + QK5_1 / 2, "block_q5_1 size");
typedef struct { uint16_t d; int8_t qs[QK8_0]; } block_q8_0;                   /* w = q * d */
STRATA_STATIC_ASSERT(sizeof(block_q8_0) == 2 + QK8_0, "block_q8_0 size");
typedef struct { uint16_t d, s; int8_t qs[QK8_1]; } block_q8_1;                /* ggml's (unused as weights) */
STRATA_STATIC_ASSERT(sizeof(block_q8_1) == 4 + QK8_1, "block_q8_1 size");

/* ---- Q2_0 (strata): 64 weights, codes packed four per byte from the low bits up ----- */
typedef struct { uint16_t d; uint8_t qs[QK2_0 / 4]; } block_q2_0;              /* weight i: code (qs[i/4] >> 2*(i%4)) & 3, w = (c - 1) * d */
STRATA_STATIC_ASSERT(sizeof(block_q2_0) == 2 + QK2_0 / 4, "block_q2_0 size");

/* ---- MXFP4 / IQ4_NL -------------------------------------------------------------- */
typedef struct { uint8_t e; uint8_t qs[QK_MXFP4 / 2]; } block_mxfp4;           /* e8m0 shared exponent, fp4 e2m1 codes */
STRATA_STATIC_ASSERT(sizeof(block_mxfp4) == 1 + QK_MXFP4 / 2, "block_mxfp4 size");
typedef struct { uint16_t d; uint8_t qs[QK4_NL / 2]; } block_iq4_nl;
STRATA_STATIC_ASSERT(sizeof(block_iq4_nl) == 2 + QK4_NL / 2, "block_iq4_nl size");

/* ---- K-quants (256-weight super-blocks) ---------------------------------------- */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } block_q2_K;
STRATA_STATIC_ASSERT(sizeof(block_q2_K) == 2 * 2 + QK_K / 16 + QK_K / 4, "block_q2_K size");
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } block_q3_K;
STRATA_STATIC_ASSERT(sizeof(block_q3_K) == 2 + QK_K / 4 + QK_K / 8 + 12, "block_q3_K size");
typedef struct { uint16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qs[QK_K / 2]; } block_q4_K;
STRATA_STATIC_ASSERT(sizeof(block_q4_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2, "block_q4_K size");
typedef struct { uint16_t d, dmin; uint8_t scales[K_SCALE_SIZE]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
STRATA_STATIC_ASSERT(sizeof(block_q5_K) == 2 * 2 + K_SCALE_SIZE + QK_K / 2 + QK_K / 8, "block_q5_K size");
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K;
STRATA_STATIC_ASSERT(sizeof(block_q6_K) == 2 + QK_K / 16 + 3 * QK_K / 4, "block_q6_K size");
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K;   /* ggml's Q8_K (id 15) */
STRATA_STATIC_ASSERT(sizeof(block_q8_K) == 4 + QK_K + QK_K / 16 * 2, "block_q8_K size");

/* ---- IQ codebook formats --------------------------------------------------------- */
typedef struct { uint16_t d; uint16_t qs[QK_K / 8]; } block_iq2_xxs;
STRATA_STATIC_ASSERT(sizeof(block_iq2_xxs) == 2 + QK_K / 8 * 2, "block_iq2_xxs size");
typedef struct { uint16_t d; uint16_t qs[QK_K / 8]; uint8_t scales[QK_K / 32]; } block_iq2_xs;
STRATA_STATIC_ASSERT(sizeof(block_iq2_xs) == 2 + QK_K / 8 * 2 + QK_K / 32, "block_iq2_xs size");
typedef struct { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t scales[QK_K / 32]; } block_iq2_s;
STRATA_STATIC_ASSERT(sizeof(block_iq2_s) == 2 + QK_K / 4 + QK_K / 16, "block_iq2_s size");
typedef struct { uint16_t d; uint8_t qs[3 * QK_K / 8]; } block_iq3_xxs;
STRATA_STATIC_ASSERT(sizeof(block_iq3_xxs) == 2 + 3 * (QK_K / 8), "block_iq3_xxs size");
typedef struct { uint16_t d; uint8_t qs[QK_K / 4]; uint8_t qh[QK_K / 32]; uint8_t signs[QK_K / 8]; uint8_t scales[QK_K / 64]; } block_iq3_s;
STRATA_STATIC_ASSERT(sizeof(block_iq3_s) == 2 + 13 * (QK_K / 32) + QK_K / 64, "block_iq3_s size");
typedef struct { uint16_t d; uint8_t qs[QK_K / 8]; uint16_t qh[QK_K / 32]; } block_iq1_s;
STRATA_STATIC_ASSERT(sizeof(block_iq1_s) == 2 + QK_K / 8 + QK_K / 16, "block_iq1_s size");
typedef struct { uint8_t qs[QK_K / 8]; uint8_t qh[QK_K / 16]; uint8_t scales[QK_K / 32]; } block_iq1_m; /* fp16 d spread over scales' top nibbles */
STRATA_STATIC_ASSERT(sizeof(block_iq1_m) == QK_K / 8 + QK_K / 16 + QK_K / 32, "block_iq1_m size");
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[QK_K / 64]; uint8_t qs[QK_K / 2]; } block_iq4_xs;
STRATA_STATIC_ASSERT(sizeof(block_iq4_xs) == 2 + 2 + QK_K / 64 + QK_K / 2, "block_iq4_xs size");

/* ---- activation blocks (strata's own, float scales; never stored in files) ----------
 * act_q8_0: paired with Q4_0, Q5_0, Q8_0, IQ4_NL, MXFP4         (32 values)
 * act_q8_1: paired with Q4_1, Q5_1 (s = d * sum(qs): the min term) (32 values)
 * act_q8_2: paired with Q2_0 (64 values; s = d * sum(qs) for the -1 offset)
 * act_q8_K: paired with every K-quant and IQ format (256 values; bsums per 16)  */
typedef struct { float d; int8_t qs[32]; } act_q8_0;
typedef struct { float d; float s; int8_t qs[32]; } act_q8_1;
typedef struct { float d; float s; int8_t qs[64]; } act_q8_2;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } act_q8_K;
STRATA_STATIC_ASSERT(sizeof(act_q8_0) == 36, "act_q8_0 size");
STRATA_STATIC_ASSERT(sizeof(act_q8_1) == 40, "act_q8_1 size");
STRATA_STATIC_ASSERT(sizeof(act_q8_2) == 72, "act_q8_2 size");
STRATA_STATIC_ASSERT(sizeof(act_q8_K) == 4 + QK_K + QK_K / 8, "act_q8_K size");
#endif
