/* CPU matrix-vector products over quantized weights, for T columns at once (T = 1..8 through
 * the matvec kernels, wider passes through the wide matmul path):
 *   y[c * n_out + r] = sum_k W[r][k] * x[c * n_in + k]     r < n_out, c < T
 * W is n_out rows of n_in weights of `type` (row-major, GGUF order: ne0 = n_in).
 * Default mode quantizes x to the format's activation blocks and uses the integer dot
 * (AVX2 when available, else the reference; chosen once, STRATA_KERNEL overrides).
 * Exact mode (MATVEC_EXACT) dequantizes W rows to f32 and keeps x in f32.
 * Every mode is batch invariant: column c's bits do not depend on T. */
#ifndef STRATA_MATVEC_H
#define STRATA_MATVEC_H
#include <stdint.h>
#include "threadpool.h"
#include "../quant/quant.h"

#define MATVEC_MAX_COLS 8      /* widest pass of the matvec kernels; wider passes take the wide path */
#define MATVEC_MAX_T 65536     /* widest pass matvec accepts */

typedef enum { MATVEC_DEFAULT = 0, MATVEC_EXACT = 1 } matvec_mode;
typedef enum { MATVEC_KERNEL_AUTO = 0, MATVEC_KERNEL_REF, MATVEC_KERNEL_AVX2 } matvec_kernel;

/* Returns 0, or -1 for an unsupported type / T out of range. */
int matvec(threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out,
           const float *x, int T, float *y, matvec_mode mode);
/* Same with an explicit kernel choice (tests and benchmarks compare variants). */
int matvec_with(threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out,
                const float *x, int T, float *y, matvec_mode mode, matvec_kernel kernel);
/* Name of the kernel AUTO resolves to on this machine for this type ("avx2", "ref"). */
const char *matvec_kernel_name(int type);
#endif
