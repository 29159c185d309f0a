/* Per-format properties on the CUDA side, expanded from THE table src/quant/formats.h (the
 * one src/quant/quant_table.c expands for the CPU); block layouts (sizeof, offsetof) come from
 * src/quant/blocks.h. No block size is written anywhere else in src/cuda.
 *
 *   wfmt<FMT>   weight format FMT's row at compile time: blck (weights per block), bsize
 *               (bytes per block), act (activation format); ok = 0 for ids without a row
 *   afmt<ACT>   activation format ACT's row: blck (values per block), bytes (per block)
 *   act_blck_q / act_block_bytes_dev: the same for an activation format known at run time
 *   sizeof_i / offsetof_i: sizeof / offsetof of a blocks.h struct as an int constant
 *
 * Kernels built per format are dispatched by expanding STRATA_WEIGHT_FORMATS (matvec.cu,
 * moe.cu): a new row there is a new case everywhere, and block_partials (matvec_row.cuh)
 * stops the build with a static_assert until the format has its block partial. */
#ifndef STRATA_FORMATS_CUH
#define STRATA_FORMATS_CUH
#include <stddef.h>
#include "cuda_common.cuh"
extern "C" {
#include "quant/formats.h"
}

/* sizeof / offsetof of a block struct as int constants: they stand where the kernels' address
 * arithmetic was written with int literals, so the code is the literal's */
#define sizeof_i(T) ((int)sizeof(T))
#define offsetof_i(T, f) ((int)offsetof(T, f))

template <int FMT> struct wfmt { static constexpr int ok = 0; };
#define WFMT_ROW(NAME, TYPE, fn, BLCK, BSIZE, ACT)                                                  \
    template <> struct wfmt<TYPE> {                                                                  \
        static constexpr int ok = 1, blck = BLCK, bsize = (int)(BSIZE), act = ACT;                  \
    };
STRATA_WEIGHT_FORMATS(WFMT_ROW)
#undef WFMT_ROW

template <int ACT> struct afmt;
#define AFMT_ROW(F, B, BYTES)                                                                        \
    template <> struct afmt<F> {                                                                     \
        static constexpr int blck = B;                                                               \
        static constexpr int bytes = (int)(BYTES);                                                   \
    };
STRATA_ACT_FORMATS(AFMT_ROW)
#undef AFMT_ROW

/* A quantized activation format known at run time (a kernel argument: act_q8_0 .. act_q8_K;
 * the kernels never quantize to ACT_F32). act_q8_0 and act_q8_1 blocks both hold 32 values. */
static_assert(afmt<ACT_Q8_0>::blck == afmt<ACT_Q8_1>::blck, "act_q8_0 / act_q8_1 value counts");
static __host__ __device__ __forceinline__ int act_blck_q(int fmt) {
    return fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::blck : fmt == ACT_Q8_K ? afmt<ACT_Q8_K>::blck : afmt<ACT_Q8_0>::blck;
}
static __host__ __device__ __forceinline__ size_t act_block_bytes_dev(int fmt) {
    return fmt == ACT_Q8_0 ? afmt<ACT_Q8_0>::bytes
         : fmt == ACT_Q8_1 ? afmt<ACT_Q8_1>::bytes
         : fmt == ACT_Q8_2 ? afmt<ACT_Q8_2>::bytes : afmt<ACT_Q8_K>::bytes;
}
/* Four 4-bit codes to four int8 values of a 16-entry table by byte permutes (the matmul's store_w, the
 * matvec's kv4 / bp_mxfp4): byte k of the result is entry n_k of t (entry e = byte e % 4 of word t[e / 4]), n_k the code in
 * bits 0-3 of x's byte k (its bits 4-7 ignored). Two 8-entry permutes give entries n & 7 and 8 + (n & 7);
 * the code's bit 3, replicated over its byte by a sign permute, picks one: nine instructions a word,
 * where four table reads from global memory (IQ4_NL) or four branchy e2m1 decodes (MXFP4, ~60 a word in
 * ncu's count, 2026-12-05) took more. The same bytes. */
template <uint32_t T0, uint32_t T1, uint32_t T2, uint32_t T3>
static __device__ __forceinline__ uint32_t lut16(uint32_t x) {
    const uint32_t x7 = x & 0x07070707u, c = x7 | (x7 >> 4);   /* bytes 0, 2: n0 | n1 << 4, n2 | n3 << 4 */
    uint32_t sel, a, b, m;
    asm("prmt.b32 %0, %1, 0, 0x0020;" : "=r"(sel) : "r"(c));   /* nibble k: n_k & 7 (msb clear: plain selects) */
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(a) : "r"(T0), "r"(T1), "r"(sel));
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(b) : "r"(T2), "r"(T3), "r"(sel));
    asm("prmt.b32 %0, %1, 0, 0xBA98;" : "=r"(m) : "r"((x & 0x08080808u) << 4));   /* byte k: 0xFF where n_k >= 8 */
    return (b & m) | (a & ~m);
}
/* kvalues_iq4nl (src/quant/iq_tables.c) and MXFP4's doubled e2m1 values (docs/KERNELS.md section 4) as
 * table words */
#define LUT_IQ4NL 0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u
#define LUT_MXFP4 0x03020100u, 0x0C080604u, 0xFDFEFF00u, 0xF4F8FAFCu

#endif
