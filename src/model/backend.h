/* The backend interface the forward pass is written against. A backend owns activation
 * buffers and the KV cache and implements each op; the CPU backend (src/cpu/backend_cpu.c)
 * is the reference, CUDA implements the same table. Shapes are given per op; T is the
 * number of token columns in the pass (1..8), rows of activations are contiguous per token. */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H
#include <stdint.h>
#include "model.h"

#define FWD_MAX_T 8

typedef struct backend backend;

typedef struct backend_ops {
    const char *name;
    /* x[t][n_embd] = tok_embd[ids[t]] * scale */
    void (*embed)(backend *be, const weight *tok_embd, const int32_t *ids, int T, float *x, float scale);
    /* y[t][n] = x[t][n] / rms(x[t]) * w   (rows of n; T*rows_per_t rows in all; w has n values) */
    void (*rmsnorm)(backend *be, const float *x, const weight *w, float *y, int rows, int n, float eps);
    /* y[t][n_out] = W x[t] for t < T (weights read once for all columns) */
    void (*matvec)(backend *be, const weight *W, const float *x, int T, float *y);
    /* rotate adjacent pairs of the first n_rot dims of each head; position of token t = pos0 + t */
    void (*rope)(backend *be, float *x, int T, int n_heads, int head_dim, int n_rot, int pos0, float base, float scale);
    /* Store k, v of the T tokens at positions pos0.. into layer's cache, then for each token t and
     * head h: out[t][h] = softmax(q[t][h] . K[0..pos0+t] * scale) V, over the window if window > 0. */
    void (*attention)(backend *be, int layer, const float *q, const float *k, const float *v, int T, int pos0,
                      float scale, int window, float *out);
    /* out[i] = silu(gate[i]) * up[i] for T*n values */
    void (*swiglu)(backend *be, const float *gate, const float *up, float *out, int n);
    /* x[i] += y[i] */
    void (*add)(backend *be, float *x, const float *y, int n);
    /* out[i] = gelu_tanh(gate[i]) * up[i] for T*n values (gemma's gated FFN) */
    void (*geglu)(backend *be, const float *gate, const float *up, float *out, int n);
    /* Mixture-of-Experts FFN (qwen3moe): out[t][n_embd] = sum over the k experts the router
     * picks for x[t] (softmax, top-k, renormalized) of weight * down(silu(gate x) * up x),
     * summed in rank order. x: normed input [T][n_embd]; out must not alias x. NULL: the
     * backend has no MoE (forward refuses MoE models). src/cpu/moe.h has the formulas. */
    void (*moe_ffn)(backend *be, const layer_weights *L, int k, const float *x, int T, float *out);
} backend_ops;

struct backend {
    const backend_ops *ops;
    void *impl;
};

/* CPU backend: KV cache of n_ctx positions (f16, or f32 in exact mode; int8 rows with a
 * scale per 32 values when kv_int8 is set: src/cpu/backend_cpu.c). */
backend *backend_cpu_new(const hparams *hp, int n_ctx, void *threadpool, int exact, int kv_int8, char *err, size_t errlen);
void backend_cpu_free(backend *be);
/* How many positions a session may roll back and still find every row it needs: sliding
 * layers keep a ring of window + slack positions; unbounded (1 << 30) without them. */
int backend_cpu_max_rewind(const backend *be);
const void *backend_cpu_kv_layer(const backend *be, int layer, int which, size_t *bytes_per_pos);
#endif
