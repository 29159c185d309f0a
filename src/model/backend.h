/* The backend interface: the units of the forward pass that a device runs, at block level.
 *
 * forward() (src/model/forward.c) is embed -> per layer attn_block, ffn_block -> head. Each
 * block takes a batch descriptor: T token columns, grouped into sequences; sequence s owns
 * columns [t0, t0 + n) at positions pos0 .. pos0 + n - 1 of its own KV cache. A backend owns
 * everything a pass touches besides the weights: the activation buffers (sized once by
 * fwd_buffer_sizes for the widest pass seen), its KV cache, and the logits. A session has one
 * backend; a pass over several sessions runs on one of them and reaches the others' KV caches
 * through their handles (fwd_seq.kv).
 *
 * The CPU backend (src/cpu/backend_cpu.c) is the reference: each block is written there with
 * the plain primitives (RMSNorm, matvec, RoPE, attention, SwiGLU, add) in the model's order.
 * The CUDA backend (src/cuda/backend_cuda.cu) writes each block as its launch sequence, with
 * its fused kernels chosen in the open; both give the same bits (docs/KERNELS.md). */
#ifndef STRATA_BACKEND_H
#define STRATA_BACKEND_H
#include <stddef.h>
#include <stdint.h>
#include "model.h"

/* The widest pass (prompt chunks, batched decode); a head call returns logits for at most
 * FWD_MAX_LOGITS of its columns (T - from); a backend's buffers grow to the widest pass it
 * has seen (fwd_buffer_sizes), so a session that only decodes keeps the small set. */
#define FWD_MAX_T 512
#define FWD_MAX_LOGITS 64
/* The columns a backend allocates for at creation (decode, speculative verify windows). */
#define FWD_INIT_T 8

typedef struct backend backend;

/* One sequence of a pass: its KV cache (backend_kv() of the session that owns it), its n
 * columns at positions pos0 .. pos0 + n - 1. */
typedef struct fwd_seq { void *kv; int pos0, n; } fwd_seq;
typedef struct fwd_batch {
    int T;                  /* columns, 1..FWD_MAX_T; the sequences' n sum to T */
    int n_seq;
    const fwd_seq *seq;
} fwd_batch;

/* A draw on the device (decode_step): NULL for greedy argmax, else the sampler's parameters,
 * its RNG state (advanced as the CPU sampler advances it) and the token history [0, pos). */
struct strata_sampler_params;
typedef struct backend_sampling {
    const struct strata_sampler_params *p;
    uint64_t *rng;
    const int32_t *history;
} backend_sampling;

typedef struct backend_ops {
    const char *name;
    /* x[t] = tok_embd[ids[t]] * embd_scale */
    void (*embed)(backend *be, const int32_t *ids, const fwd_batch *b);
    /* x[t] += wo attention(rope(q), rope(k), v) of rmsnorm(x[t]) (q/k norms, post-norm when the
     * layer has them); k and v of every column are stored into its sequence's KV cache first */
    void (*attn_block)(backend *be, int layer, const fwd_batch *b);
    /* x[t] += down(act(gate xn) * up xn), xn = rmsnorm(x[t]); or the layer's MoE FFN */
    void (*ffn_block)(backend *be, int layer, const fwd_batch *b);
    /* logits of columns from .. T-1 (T - from <= FWD_MAX_LOGITS) = output(rmsnorm(x[t])),
     * readable through logits(); 0, or -1 when the device failed (the message went to stderr) */
    int (*head)(backend *be, const fwd_batch *b, int from);
    /* the last head's rows, n_vocab floats each, in host memory */
    const float *(*logits)(backend *be);
    /* Optional (NULL: head + logits, argmax on the host): the head of columns from .. T-1 with
     * only each row's argmax (lowest index among equal maxima, as sample_argmax) coming back
     * into ids; the logits stay on the device. 0 / -1. */
    int (*head_argmax)(backend *be, const fwd_batch *b, int from, int32_t *ids);
    /* Optional (NULL: the caller runs forward() and samples on the host). One decode step on
     * the device: token id at position pos of the backend's own KV cache through the model,
     * then the next token drawn there (argmax, or the sampler); only the id returns. -1 on
     * error. The step's logits are not readable afterwards. */
    int32_t (*decode_step)(backend *be, int32_t id, int pos, const backend_sampling *smp);
    /* How many positions a session may roll back and still find every row it needs
     * (sliding-window layers keep a ring); 1 << 30 when unbounded. */
    int (*max_rewind)(const backend *be);
    void (*free)(backend *be);
    /* Optional (NULL: the caller evaluates the prefix instead). Positions 0 .. n-1 of src's KV
     * cache copied into dst's own, on the device, byte for byte (a prompt that starts with
     * tokens another session already holds: a system prompt, earlier turns). dst and src are
     * backends of the same kind, model and cache format; src still keeps those rows (the
     * caller checks src's position - n <= max_rewind(src)). 0 / -1. */
    int (*kv_copy)(backend *dst, const backend *src, int n);
    /* Optional (NULL: f16 K and V rows of every layer for every position; the CPU and CUDA
     * backends say what their cache holds: f16, f32 or int8 rows, CUDA without a ring).
     * The bytes the KV cache holds; *per_pos: the bytes of one position in every layer (K and
     * V). A sliding-window layer's ring makes the total less than per_pos * n_ctx. */
    size_t (*kv_bytes)(const backend *be, size_t *per_pos);
    /* Optional (NULL: the caller runs forward() and takes each row's argmax on the host). A
     * greedy verify window on the device: ids[0..T) (T = 1..FWD_INIT_T) at positions pos ..
     * pos + T - 1 of the backend's own KV cache through the model (every column's K and V
     * stored, as forward() stores them), then out_ids[t] = the argmax of column t's logits
     * (the lowest id among equal maxima, as sample_argmax); only the ids come back (CUDA: one
     * graph per width, captured at its first use, replayed at any position). The logits are
     * not readable afterwards. 0; 1 when this call also captured the width's graph (its time
     * is not a verify's: the cost model leaves it out); -1 on error. */
    int (*verify_step)(backend *be, const int32_t *ids, int T, int pos, int32_t *out_ids);
    /* Optional (NULL: the caller evaluates and masks on the host). A greedy decode step under a
     * mask: as decode_step without a sampler, but the argmax takes only the tokens whose bit is
     * set in mask(user) (n_vocab bits, LSB first in each byte; called on the host while the
     * device runs the forward pass; NULL from it fails the step). -1 on error. */
    int32_t (*decode_step_masked)(backend *be, int32_t id, int pos, const uint8_t *(*mask)(void *), void *user);
    /* Optional (NULL: every call returns with its work done, as the CPU's). Wait until the
     * work launched so far is done: a pass that returned no logits may still be writing KV
     * rows of other sessions, whose own backends run on other streams (CUDA). */
    void (*sync)(backend *be);
    /* Optional (NULL: the last layer's FFN runs on every column). The residual rows x[from .. T)
     * moved to x[0 .. T - from) (other rows undefined afterwards): forward() calls it after the
     * last layer's attention when only columns from .. T-1 need logits (0 < from < T), so that
     * layer's FFN and the head run on those columns alone (the others' last FFN feeds nothing:
     * their K and V are stored by then). A column's bits do not depend on the pass width, so the logits are
     * the same. */
    void (*keep_cols)(backend *be, int from, int T);
} backend_ops;

struct backend {
    const backend_ops *ops;
    void *impl;
    void *kv;                   /* this backend's own KV cache: the handle fwd_seq.kv takes */
};

/* The activation buffers every backend allocates for T columns, in floats, from one formula
 * (logits: min(T, FWD_MAX_LOGITS) rows). */
typedef struct fwd_sizes {
    size_t x, xb, q, k, v, att, hb, hb2, moe_out, logits;
} fwd_sizes;
void fwd_buffer_sizes(const hparams *hp, int T, fwd_sizes *s);

/* CPU backend: KV cache of n_ctx positions (f16, or f32 in exact mode; int8 rows with a
 * scale per 32 values when kv_int8 is set: src/cpu/backend_cpu.c). */
backend *backend_cpu_new(const hparams *hp, const model_weights *w, int n_ctx, void *threadpool, int exact, int kv_int8,
                         char *err, size_t errlen);
/* The K (which = 0) or V (1) cache of a layer, and the bytes of one position's row (tests). */
const void *backend_cpu_kv_layer(const backend *be, int layer, int which, size_t *bytes_per_pos);

/* ---- devices (src/model/devices.c: the one place that knows which backends were built) ---- */
enum { BACKEND_DEVICE_CPU = 0, BACKEND_DEVICE_CUDA = 1 };
/* Choose the device for a model: requested is -1 auto, else BACKEND_DEVICE_* (strata_device's
 * values). On a GPU
 * the weights are uploaded here (progress callback). Returns BACKEND_DEVICE_*, or -1 with a
 * message (a --device cuda that cannot be honoured, out of GPU memory). */
int  backend_device_pick(int requested, const hparams *hp, model_weights *w, int exact,
                         void (*progress)(float, void *), void *user, char *err, size_t errlen);
/* Could this build run on a GPU at all ("" when yes; else why not, for --device cuda errors)? */
const char *backend_gpu_unbuilt(void);
/* Release what backend_device_pick put on the device (the weights' device copies). */
void backend_device_release(int device, const hparams *hp, model_weights *w);
/* A session's backend on that device. */
backend *backend_new(int device, const hparams *hp, const model_weights *w, int n_ctx, void *threadpool, int exact,
                     int kv_int8, char *err, size_t errlen);
/* One line describing the GPU and the kernel variants chosen for it; -1 when there is none. */
int  backend_gpu_describe(char *out, size_t cap);
#endif
