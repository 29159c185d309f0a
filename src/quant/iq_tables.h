/* GENERATED FILE, do not edit. Made by `python3 tools/gen_iq_tables.py` from the `gguf` Python package
 * version 0.19.0 (gguf.quants: each class's init_grid() grid, IQ2_XXS.ksigns,
 * IQ4_NL.kvalues). Regenerate with the same command; --check verifies. */
/* IQ codebooks: facts of the GGUF format.
 * Grid row i is the 8 (or 4) values that grid index i stands for, in weight order;
 * rows are 8-byte (4-byte) aligned so a row loads as one uint64 (uint32). */
#ifndef STRATA_IQ_TABLES_H
#define STRATA_IQ_TABLES_H
#include <stdint.h>

#define IQ2XXS_GRID_N 256  /* IQ2_XXS: 256 entries of 8, magnitudes {8, 25, 43} */
extern const uint8_t iq2xxs_grid[256][8];
#define IQ2XS_GRID_N 512  /* IQ2_XS: 512 entries of 8, magnitudes {8, 25, 43} */
extern const uint8_t iq2xs_grid[512][8];
#define IQ2S_GRID_N 1024  /* IQ2_S: 1024 entries of 8, magnitudes {8, 25, 43} */
extern const uint8_t iq2s_grid[1024][8];
#define IQ3XXS_GRID_N 256  /* IQ3_XXS: 256 entries of 4, magnitudes {4, 12, ..., 52, 62} */
extern const uint8_t iq3xxs_grid[256][4];
#define IQ3S_GRID_N 512  /* IQ3_S: 512 entries of 4, magnitudes {1, 3, ..., 15} */
extern const uint8_t iq3s_grid[512][4];
#define IQ1S_GRID_N 2048  /* IQ1_S: 2048 entries of 8, values {-1, 0, 1} (IQ1_S and IQ1_M) */
extern const int8_t iq1s_grid[2048][8];
/* 7-bit sign index -> 8 sign bits (bit j set: weight j negative); bit 7 makes the
 * number of set bits even (IQ2_XXS, IQ2_XS, IQ3_XXS). */
extern const uint8_t ksigns_iq2xs[128];
/* Derived from ksigns_iq2xs: 8 bytes of +1 / -1 per sign index (for _mm256_sign_epi8). */
extern const int8_t ksigns_iq2xs_pm1[128][8];
/* IQ4_NL / IQ4_XS: 4-bit code -> int8 value. */
extern const int8_t kvalues_iq4nl[16];
#endif
