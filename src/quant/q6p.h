/* Q6P: Q6_K rows re-laid at load as planes, for the CUDA one-column head kernel (STRATA_Q6_PLANAR;
 * issue 20, item 3). The same bytes in another place: the same values, the same integer sums, the
 * same bits.
 *
 * Why: a Q6_K block is 210 bytes (ql[128] | qh[64] | scales[16] | d), so a row's blocks sit at
 * offsets 0 or 2 mod 4 and a lane's 16-byte runs of ql and qh come as five aligned 4-byte words each,
 * joined by funnel shifts, plus two scale bytes and d: 13 loads a lane and block (kq_row.cuh's
 * kq_load). In planes every run a lane reads is 16-byte aligned: two 16-byte loads, one 8-byte load
 * of its scales and one 2-byte load of d.
 *
 * A row of n weights (nb = n / 256 super-blocks), planar:
 *   [0, 128 nb)          ql of block b at 128 b (its 128 bytes as stored)
 *   [128 nb, 192 nb)     qh of block b at 128 nb + 64 b
 *   [192 nb, 208 nb)     scales of block b at 192 nb + 16 b
 *   [208 nb, 210 nb)     d of block b at 208 nb + 2 b (fp16, as stored)
 *   then zeros to q6p_row_bytes(n) (a multiple of 16, so every row's planes stay 16-byte aligned)
 * Every plane of a row starts at a multiple of 16 bytes from the row's start. */
#ifndef STRATA_Q6P_H
#define STRATA_Q6P_H
#include <stddef.h>
#include <stdint.h>

/* the byte offsets in a planar row of nb blocks (int: a row's bytes; host and device: the repack, the CUDA kernel and the tests
 * share them): block b's planes, and those of part k = 0..7 of it, the cooperative kernels' part (32 weights:
 * sub-blocks sA = 8 (k / 4) + k % 4 and sA + 4; its 16 ql bytes, its 16 qh bytes, the 8 scales of its half,
 * among which sA and sA + 4 are bytes k % 4 and k % 4 + 4) */
#ifdef __CUDACC__
#define Q6P_FN static __host__ __device__ __forceinline__
#else
#define Q6P_FN static inline
#endif
Q6P_FN int q6p_ql(int nb, int b) { (void)nb; return 128 * b; }
Q6P_FN int q6p_qh(int nb, int b) { return 128 * nb + 64 * b; }
Q6P_FN int q6p_sc(int nb, int b) { return 192 * nb + 16 * b; }
Q6P_FN int q6p_d(int nb, int b) { return 208 * nb + 2 * b; }
Q6P_FN int q6p_part_ql(int nb, int b, int k) { return q6p_ql(nb, b) + 64 * (k >> 2) + 16 * (k & 3); }
Q6P_FN int q6p_part_qh(int nb, int b, int k) { return q6p_qh(nb, b) + 32 * (k >> 2) + 16 * (k & 1); }
Q6P_FN int q6p_part_sc(int nb, int b, int k) { return q6p_sc(nb, b) + 8 * (k >> 2); }

size_t q6p_row_bytes(int64_t n);   /* n a multiple of 256: 210 n / 256 rounded up to 16 */
/* one Q6_K row of n weights (its GGUF bytes) into dst (q6p_row_bytes(n) bytes); -1 if n is not a
 * multiple of 256 */
int q6p_repack_row(const void *src, void *dst, int64_t n);
/* rows consecutive rows (src rows of 210 n / 256 bytes, dst rows of q6p_row_bytes(n)) */
int q6p_repack_rows(const void *src, void *dst, int64_t rows, int64_t n);
/* the inverse: a planar row back into Q6_K blocks (tests) */
int q6p_unpack_row(const void *src, void *dst, int64_t n);
#endif
