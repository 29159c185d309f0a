/* CUDA backend: the C interface to the .cu files of src/cuda (CUDA written in a C style).
 *
 * The forward pass (src/model/forward.c) stays written once against backend_ops; this
 * backend implements the same table on the GPU. fwd_state's activation buffers stay host
 * allocations: backend_cuda_bind_fwd registers them, and every op translates a host
 * pointer inside a registered range to the same offset in its device mirror. Data never
 * travels between host and device except token ids in, logits (eager mode) or one token id
 * (greedy graph decode) out.
 *
 * Weights are uploaded once per model (cuda_weights_upload sets weight.dev); the KV cache
 * (f16, like the CPU's) lives in device memory, one per session/backend.
 *
 * Bit-exactness: cuda_matvec gives the bits of the CPU reference (quant_traits.dot_ref) for
 * every format it supports: activations quantized on the GPU with src/quant/act.c's formula,
 * the same exact integer block sums, the canonical float order of docs/KERNELS.md (block b
 * into warp lane b % 32, shuffle-down tree 16, 8, 4, 2, 1), no FMA contraction. */
#ifndef STRATA_CUDA_BACKEND_H
#define STRATA_CUDA_BACKEND_H
#include <stddef.h>
#include <stdint.h>
#include "model/backend.h"
#include "model/forward.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device ----------------------------------------------------------------------- */
/* Number of usable CUDA devices (0 when there is no driver or GPU; never aborts). */
int cuda_device_count(void);
/* One line describing device 0: name, compute capability, SMs, memory, L2. */
int cuda_device_describe(char *out, size_t cap);
int cuda_sm_count(void);   /* multiprocessors of device 0 (0: none) */
/* How SwiGLU / attention compute expf on the GPU ("libm bits (FMA variant)", ...). */
const char *cuda_expf_mode(void);
/* Most experts the CUDA MoE router handles (cuda_internal.h's CUDA_MOE_MAX_X). */
#define CUDA_MOE_MAX_EXPERTS 1024
/* Most experts per token it handles (cuda_internal.h's CUDA_MOE_MAX_K). */
#define CUDA_MOE_MAX_EXPERTS_USED 64
/* Is there a CUDA matvec for this weight type? */
int cuda_type_supported(int type);

/* ---- device classification (device_class.cu) --------------------------------------- */
/* Device 0 read once: what it is and the generation's row of the variant table. */
typedef struct cuda_device_class {
    char name[96];
    int major, minor, sms;
    size_t mem_bytes;
    int l2_bytes;
    const char *gen;        /* "hopper", "blackwell", "pre-hopper" */
    int supported;          /* this build's code runs on it (sm_90 code + compute_90 PTX) */
    int table_coop;         /* the table's matvec kernel of the 256-weight formats: 8 or 0 */
    int table_pdl;          /* the table's programmatic dependent launch: 1 from sm_90 */
    const char *why;        /* the table row's reason */
} cuda_device_class;
const cuda_device_class *cuda_device_class_get(void);   /* NULL: no device */
/* The variants a backend created now uses: the table's unless a switch overrides
 * (STRATA_CUDA_MATVEC, STRATA_CUDA_ATTN). *_from: "table" or the switch's name. */
typedef struct cuda_variants {
    int matvec_coop;        /* 8: 8 lanes per super-block; 0: one lane per block */
    int attn_split;         /* 0: exact (the CPU's order); 1: split-KV (opt-in, other bits) */
    int pdl;                /* programmatic dependent launch of the backend's kernels (same bits) */
    const char *matvec_from, *attn_from, *pdl_from;
} cuda_variants;
void cuda_device_choose(cuda_variants *v);
/* "NVIDIA H200, sm_90, 132 SMs, ...; class hopper; matvec ...: coop8 (table); attention: exact (table)" */
int cuda_device_class_describe(char *out, size_t cap);

/* ---- device allocation fault injection (dev_alloc.cu; issue 9) ------------------------ */
/* Fail the k-th device (or pinned host) allocation of weight upload / backend creation from
 * now (0: off), as st_alloc_fail_after does for host allocations. */
void cuda_alloc_fail_after(long k);
long cuda_alloc_fail_pending(void);   /* 0: the armed failure happened (or none armed) */
long cuda_alloc_live(void);           /* blocks allocated through the wrapper, not yet freed */
int  cuda_mem_free(size_t *free_bytes, size_t *total_bytes);   /* cudaMemGetInfo; 0 / -1 */

/* ---- weights ---------------------------------------------------------------------- */
/* Upload every bound weight of the model (weight.dev). progress(fraction, user) is called as
 * bytes arrive. Out of memory names the tensor that did not fit and the totals. 0 / -1. */
int  cuda_weights_upload(const hparams *hp, model_weights *w, void (*progress)(float, void *), void *user,
                         char *err, size_t errlen);
void cuda_weights_free(const hparams *hp, model_weights *w);

/* ---- backend ---------------------------------------------------------------------- */
backend *backend_cuda_new(const hparams *hp, const model_weights *w, int n_ctx, char *err, size_t errlen);
void backend_cuda_free(backend *be);
/* Register a host range whose device mirror the ops use; 0 / -1. */
int  backend_cuda_mirror(backend *be, void *host, size_t bytes);
/* Register all activation buffers of a forward state (sizes as fwd_init allocates them). */
int  backend_cuda_bind_fwd(backend *be, fwd_state *f, char *err, size_t errlen);
/* Copy a registered host range to / from its mirror (tests; synchronous). 0 / -1. */
int  backend_cuda_upload(backend *be, const void *host, size_t bytes);
int  backend_cuda_download(backend *be, void *host, size_t bytes);
/* Wait for the device; returns -1 (with the message) if any CUDA call has failed. */
int  backend_cuda_sync(backend *be, char *err, size_t errlen);
/* Greedy argmax of logits row `row` (already computed on the device into f->logits);
 * only the id returns. -1 on error. */
int32_t backend_cuda_argmax(backend *be, fwd_state *f, int row);
/* One greedy decode step: token `id` at position `pos` through the whole model and the
 * argmax, replayed as one CUDA graph (captured at first use; position and token read from
 * device memory). Returns the next token id, or -1 on error. STRATA_CUDA_GRAPH=0 runs the
 * same step eagerly. */
int32_t backend_cuda_decode_greedy(backend *be, fwd_state *f, int32_t id, int pos);
/* How the decode steps run: 1 the persistent kernel (persist.cu; every layer in one launch),
 * 0 not decided yet (no step so far), -1 op by op (the model or STRATA_CUDA_PERSIST). */
int backend_cuda_persist_state(backend *be);
/* how many RMSNorm epilogues (STRATA_CUDA_NORM_FOLD) this backend has launched or captured */
long backend_cuda_norm_folds(backend *be);
/* µs per grid-wide barrier of the persistent kernel over `grid` CTAs (best of 5 launches of n) */
double cuda_persist_barrier_us(int grid, int n);
/* stage timing of the persistent kernel (benchmarks): enable before the first step of a new
 * session; read (and turn off): per stage A..E the summed work ns and barrier ns, then the
 * launch count */
int cuda_persist_trace_enable(int max_barriers);
int cuda_persist_trace_read(unsigned long long out[11]);
/* One sampled decode step (sample.cu): as backend_cuda_decode_greedy, but the token is drawn
 * on the device with src/sample's rules (temperature, top-k, top-p, min-p, repetition
 * penalty over history[0..pos) + id) from the RNG state rng, which is advanced as the CPU
 * sampler's would be. The parameters, the history and the RNG state live in device memory
 * and are uploaded only when they differ from what the device holds. -1 on error. */
struct strata_sampler_params;
int32_t backend_cuda_decode_sample(backend *be, fwd_state *f, int32_t id, int pos, const struct strata_sampler_params *p,
                                   uint64_t rng[4], const int32_t *history);
/* The device sampler on device logits (tests): the token sampler_sample would pick for these
 * parameters, history and RNG state (rng is advanced the same way). -1 on error. */
int32_t cuda_sample_logits(const float *d_logits, int n_vocab, const struct strata_sampler_params *p, uint64_t rng[4],
                           const int32_t *hist, int n_hist);

/* ---- kernels for tests and benchmarks (device pointers) ------------------------------ */
/* y[c * n_out + r] = W[r] . x_c (c < T <= 8). W: n_out rows of `type`; x: T f32 columns of
 * n_in on the device. Quantizes x on the device first. 0 / -1 (unsupported type / shape). */
int cuda_matvec(const void *W, int type, int64_t n_in, int64_t n_out, const float *x, int T, float *y,
                void *stream);
/* The matvec alone over activations already quantized (act: T rows of the type's activation
 * format, as cuda_act_quantize writes them); for kernel benchmarks. */
int cuda_matvec_preq(const void *W, int type, int64_t n_in, int64_t n_out, const void *act, int T, float *y,
                     void *stream);
/* Activation format (act_format) of a weight type, -1 if unsupported. */
int cuda_type_act(int type);
/* Kernel of the 256-weight formats (K-quants, IQ codebooks): 8 = 8 lanes per super-block
 * (the default), 0 = one lane per super-block (the first kernels); anything else: each
 * format's default. Tests and benchmarks compare them; the bits are the same either way. */
void cuda_matvec_set_coop(int variant);
/* Quantize T f32 rows of n values into the activation format act (act_format); dst holds
 * T rows of act_row_bytes(act, n) bytes. */
int cuda_act_quantize(int act, const float *x, int64_t n, int T, void *dst, void *stream);
/* Device memory helpers for test programs (C cannot include cuda_runtime.h portably). */
void *cuda_malloc(size_t bytes);
void  cuda_free(void *p);
int   cuda_memcpy_h2d(void *dst, const void *src, size_t bytes);
int   cuda_memcpy_d2h(void *dst, const void *src, size_t bytes);
int   cuda_memcpy_d2d(void *dst, const void *src, size_t bytes);
int   cuda_synchronize(void);
/* Event timing for benchmarks: elapsed milliseconds of `reps` calls of fn(user). */
double cuda_time_ms(void (*fn)(void *), void *user, int reps);
const char *cuda_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
