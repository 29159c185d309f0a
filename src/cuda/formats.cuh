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
#endif
