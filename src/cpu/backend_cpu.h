/* The CPU backend's primitives: the ops its blocks are written with (src/cpu/backend_cpu.c).
 * They are the reference each device's kernels are compared with (tests/gpu/test_gpu_ops.c). */
#ifndef STRATA_BACKEND_CPU_H
#define STRATA_BACKEND_CPU_H
#include <stdint.h>
#include "model/backend.h"

/* x[t][n_in] = dequant(te row ids[t]) * scale */
void cpu_embed(const weight *te, const int32_t *ids, int T, float *x, float scale);
/* rows of n: y = x / rms(x) * g (sum of squares in double, in order) */
void cpu_rmsnorm(const float *x, const float *g, float *y, int rows, int n, float eps);
/* inv[i] = base^(-2i / n_rot), i < n_rot / 2 */
void cpu_rope_inv_freq(float base, int n_rot, float *inv);
/* rotate the first n_rot dims of each head of T tokens at positions pos0.. (NEOX pairs when neox) */
void cpu_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, const float *inv, float scale);
void cpu_swiglu(const float *gate, const float *up, float *out, int n);   /* silu(g) * u */
void cpu_geglu(const float *gate, const float *up, float *out, int n);    /* gelu_tanh(g) * u */
void cpu_add(float *x, const float *y, int n);                            /* x += y */
/* Store k, v of T tokens at positions pos0.. into the KV cache kv (a backend's be->kv), then
 * out[t][h] = softmax(q[t][h] . K[0..pos0+t] * scale) V over the window (window > 0). */
void backend_cpu_attention(backend *be, void *kv, int layer, const float *q, const float *k, const float *v, int T,
                           int pos0, float scale, int window, float *out);
/* The backend's residual stream x (FWD_MAX_T rows of n_embd): tests set it before a block and
 * read it after. */
float *backend_cpu_x(backend *be);
#endif
