/* CUDA backend: the C interface to the .cu files of src/cuda (CUDA written in a C style).
 *
 * The forward pass (src/model/forward.c) is written once against the block interface of
 * src/model/backend.h; this backend implements the blocks on the GPU with buffers it owns in
 * device memory. Data never travels between host and device except token ids in, logits
 * (eager passes) or one token id (the decode step's graph) out.
 *
 * Weights are uploaded once per model (cuda_weights_upload sets weight.dev); the KV cache
 * (f16, or int8 blocks as the CPU's --kv int8) lives in device memory, one per session/backend.
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
    int table_pdl;          /* the table's programmatic dependent launch: 0 off, 1 on, 2 early (Hopper) */
    int table_decode;       /* the table's decode variants (CUDA_DEC_* bits) */
    int table_attn_tc;      /* the table's attention order: 1 the tensor-core order (attn_tc.cu), 0 the CPU's */
    const char *why;        /* the table row's reason */
} cuda_device_class;
const cuda_device_class *cuda_device_class_get(void);   /* NULL: no device */
/* The variants a backend created now uses: the table's unless a switch overrides
 * (STRATA_CUDA_MATVEC, STRATA_CUDA_ATTN). *_from: "table" or the switch's name. */
typedef struct cuda_variants {
    int matvec_coop;        /* 8: 8 lanes per super-block; 0: one lane per block */
    int attn_serial;        /* 0: the attention's chunks in parallel; 1: one CTA per head walks them (same bits) */
    int pdl;                /* programmatic dependent launch: 0 off, 1 on, 2 early (same bits) */
    int pdl_early_T;        /* early: for passes of at most this many columns (STRATA_CUDA_PDL_EARLY_T) */
    int decode;             /* decode variants (CUDA_DEC_* bits, same bits; issue 20): the table's by default */
    int route_parallel;     /* MoE routing: 0 one warp's serial scans (default), 1 STRATA_CUDA_ROUTE=parallel */
    int moe_fast;           /* STRATA_CUDA_MOE_FAST: CUDA_MOE_FAST_* bits */
    int moe_r4;             /* STRATA_CUDA_MOE_R4: 1 (2: gate/up unbounded) the T = 1 expert kernels on the R4 copies the upload made (same bits) */
    int prefetch;           /* STRATA_CUDA_PREFETCH: CUDA_PF_* bits (L2 prefetches of weights; same bits) */
    int mv_split;           /* STRATA_CUDA_MV_SPLIT: rows of at least this many super-blocks over several warps at T = 1 (0: none; same bits) */
    int mv_kq;              /* STRATA_CUDA_MV_KQ: 0, 1 (matvec_kqp_kernel: Q4_K / Q5_K / Q6_K), 4 / 8 (matvec_kq1_kernel: Q4_K / Q5_K) at T = 1 (same bits) */
    int mv_kqi;             /* STRATA_CUDA_MV_KQI: mv_kq's settings for IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S rows (same bits) */
    int norm_warp;          /* STRATA_CUDA_NORM_WARP: the per-head q/k RMSNorms a warp a row (same bits) */
    int attn_tc;            /* STRATA_CUDA_ATTN_TC: 1 the tensor-core attention order (NOT the CPU's bits), 0 the CPU's */
    const char *matvec_from, *attn_from, *pdl_from, *decode_from, *attn_tc_from;
} cuda_variants;
/* The decode variants (src/cuda/decode_fast.cuh, docs/KERNELS.md "Decode variants"): the same
 * integers with other instructions, so the same bits; the device table turns on those that
 * measured faster there (STRATA_IQ_DECODE_FAST / STRATA_Q2_WORD_EXPAND / STRATA_Q6_SWAR =
 * auto), a switch set to 1 / 0 forces its formats on / off. */
#define CUDA_DEC_IQ2     1   /* STRATA_IQ_DECODE_FAST: IQ2_XXS, IQ2_XS, IQ2_S */
#define CUDA_DEC_Q2_WORD 2   /* STRATA_Q2_WORD_EXPAND: Q2_0 */
#define CUDA_DEC_Q6_SWAR 4   /* STRATA_Q6_SWAR: Q6_K */
#define CUDA_DEC_IQ3     8   /* STRATA_IQ_DECODE_FAST: IQ3_XXS, IQ3_S */
#define CUDA_DEC_IQ4     16  /* STRATA_IQ_DECODE_FAST: IQ4_XS, IQ4_NL */
#define CUDA_DEC_IQ_FAST (CUDA_DEC_IQ2 | CUDA_DEC_IQ3 | CUDA_DEC_IQ4)
#define CUDA_DEC_ALL     (CUDA_DEC_IQ_FAST | CUDA_DEC_Q2_WORD | CUDA_DEC_Q6_SWAR)
void cuda_device_choose(cuda_variants *v);
/* Make v the process's kernel variants (matvec kernel, dependent launch, decode variants,
 * routing): what a backend does at creation; tests and benchmarks call it after changing a
 * switch (setenv, env_reset_cache, cuda_device_choose). Kernels already captured in a CUDA
 * graph keep the variant they were captured with. */
void cuda_variants_apply(const cuda_variants *v);
void cuda_canon_apply(void);   /* STRATA_CANON (canon_serial) into the kernels' device constants (tests that change it) */
void cuda_matvec_set_decode(int bits);   /* CUDA_DEC_* bits for the matvec and MoE kernels */
int  cuda_matvec_decode(void);
void cuda_moe_set_route(int parallel);
/* STRATA_CUDA_MOE_FAST (issue 20; every bit keeps the bits): */
#define CUDA_MOE_FAST_ROUTE1  1   /* T = 1: the F32 router over X / 4 CTAs, the routing by a whole CTA */
#define CUDA_MOE_FAST_COMBINE 2   /* the combine (+ residual) in the down kernel, each CTA its row slice */
#define CUDA_MOE_FAST_DOWN4   4   /* T = 1, cooperative formats: down rows 4 per warp (E / 4 CTAs, one wave) instead of 2 */
#define CUDA_MOE_FAST_SMEM    8   /* T = 1, IQ3_XXS experts with the fast decode: codebook and sign masks in shared memory */
#define CUDA_MOE_FAST_ROUTER_CTA 16   /* T = 1, F32 router: a CTA per router row (X CTAs), its products formed by all its threads */
#define CUDA_MOE_FAST_NGK     32  /* T = 1: the expert kernels take the group count (k) from the launch, not from groups[0] */
#define CUDA_MOE_FAST_GROUP   64  /* passes of 9+ tokens: the grouping's stable positions by warps over ranges of pairs */
#define CUDA_MOE_FAST_WIDE    128 /* passes of 9+ tokens: the wide router's 4 tokens a chunk finished side by side, the
                                   * grouping's records by a warp's scan instead of thread 0's loop over the experts */
#define CUDA_MOE_FAST_NORM    256 /* T = 1, F32 router, Q8_K activations: the ffn RMSNorm inside the router launch (every CTA) */
#define CUDA_MOE_FAST_SALU    512 /* T = 1, IQ2_XXS / IQ3_XXS experts with the fast decode: the ksigns sign masks by ALU, not a table load */
#define CUDA_MOE_FAST_PAIR    1024 /* T = 1 gate/up, IQ2_XXS / IQ3_XXS with bit 512: a lane's gate and up parts side by side, the activation words loaded once */
#define CUDA_MOE_FAST_DROWS   2048 /* T = 1 down, IQ2_XXS / IQ3_XXS with bit 512: a lane's parts of the warp's rows (4 with bit 4, else 2) side by side, the activation words loaded once */
#define CUDA_MOE_FAST_PAIRX   4096 /* T = 1, IQ4_XS / IQ2_XS / IQ2_S / IQ3_S experts with their fast decode: bits 1024 and 2048 (each as set) for them too */
#define CUDA_MOE_FAST_PAIRQ2  8192 /* T = 1 gate/up on the lane path (Q2_0 with the word expansion, IQ4_NL with its fast decode, Q4_0, Q8_0): a block of both rows, the activation words loaded once */
/* 16384: unused (the down items of the 14:24 session, measured slower, deleted 2026-12-06 17:09 session) */
#define CUDA_MOE_FAST_DLANE   32768 /* T = 1 down on the lane path (Q2_0 with the word expansion, IQ4_NL with its fast decode, Q4_0, Q8_0): a warp's 2 rows (4 with bit 4, 8-word formats) side by side, the activation words loaded once */
#define CUDA_MOE_FAST_GRP     262144 /* T = 1 down, IQ2_XXS / IQ3_XXS with bits 4 and 512: the warp's 4 rows a lane group each, lane k on part k of every super-block */
#define CUDA_MOE_FAST_NEXTNORM 16777216 /* T = 1, the combine in the down kernel (2), E % 256 == 0, E <= 2,048, the next layer's attention norm quantizing for Q8_K: that norm by the down launch's last CTA */
#define CUDA_MOE_FAST_HQ      33554432 /* T = 1, the down experts' activations act_q8_K, F % 256 == 0: h quantized by the gate/up launch (the last CTA of each 256-row block) instead of its own launch */
#define CUDA_MOE_FAST_ALL     50642943 /* every bit (16384, 65536, 131072, 524288, 1048576, 2097152, 4194304 and 8388608 unused: measured, not kept) */
#define CUDA_MOE_FAST_DEFAULT 311295 /* STRATA_CUDA_MOE_FAST's default (src/core/env_list.h): every bit */
void cuda_moe_set_fast(int bits);
/* STRATA_CUDA_MOE_R4 (moe.cu, r4.cuh): 1 (2: the gate/up instance without its launch bound) the T = 1 expert kernels
 * read the IQ2_XXS / IQ3_XXS experts' R4 copies where cuda_weights_upload made them (it does when the switch is 1 or 2
 * at upload); 0 the format's kernels; launches counted for the tests */
void cuda_moe_set_r4(int on);
int cuda_moe_r4(void);
/* STRATA_CUDA_MOE_R4 as it runs: 2, 1 (3, the staged forms deleted 2026-12-07, runs as 1) or 0 (any other value); the
 * upload makes the copies where it is not 0 (device_class.cu: the one place the values' meaning is written) */
int cuda_moe_r4_env(void);
unsigned long cuda_moe_r4_launches(void);
/* STRATA_CUDA_MOE_FAST bit 16777216: T = 1 down launches issued with the next layer's (or the head's) input norm
   inside (counted at issue, so a graph's capture counts once); for the tests */
unsigned long cuda_moe_next_norm_launches(void);
/* bit 33554432: T = 1 gate/up launches that quantized h themselves (counted at issue); for the tests */
unsigned long cuda_moe_hq_launches(void);
/* STRATA_CUDA_TWICE (an instrument, never a default): launches issued twice in a row, each kind
 * idempotent (the second writes the first's values), so the logits stay the same and a graph
 * step's time with a bit minus without it is one such launch's cost inside the step: 1 the T = 1
 * MoE gate/up launch, 2 the tensor-core order's decode launch (one-launch or chunk CTAs), 4 its
 * merge launch, 8 / 16 / 32 / 64 below */
#define CUDA_TWICE_MOE_GU 1
#define CUDA_TWICE_ATTN_DEC 2
#define CUDA_TWICE_ATTN_FOLD 4
#define CUDA_TWICE_MOE_HQ 8       /* the T = 1 MoE quantization of h */
#define CUDA_TWICE_MOE_ROUTER 16  /* the T = 1 MoE router + routing launch */
#define CUDA_TWICE_NORM 32        /* a column's RMSNorm + quantization launches (the layers' two, the head's) */
#define CUDA_TWICE_QKV 64         /* a column's q / k / v matvec launch (H100, 2026-12-05: 5.0 us in the MoE step) */
void cuda_moe_set_twice(int bits);
void cuda_attention_tc_set_twice(int bits);
void cuda_matvec_set_split(int min_blocks);
void cuda_matvec_set_kq(int mode);   /* STRATA_CUDA_MV_KQ: 0 off, 1 matvec_kqp_kernel, 2 + matvec_kqs_kernel, 3 by shape, 4 / 8 matvec_kq1_kernel (same bits) */
void cuda_matvec_set_kq_wave(int ctas);   /* tests: the kqp / kqs grid held to ctas CTAs (0: one wave), so warps take many rows */
int  cuda_matvec_kq(void);
void cuda_matvec_set_kqi(int mode);   /* STRATA_CUDA_MV_KQI: MV_KQ's settings for IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S rows (kq1: 8 lanes a block) */
int  cuda_matvec_kqi(void);
unsigned long cuda_matvec_kq_launches(void);   /* how many times the host launched a kq kernel (tests: the path ran) */
void cuda_attention_tc_dec_folds(unsigned long *norms, unsigned long *actk);   /* decode launches that took the q / k norms, that wrote act_q8_K (tests) */
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

/* ---- backend (the blocks of src/model/backend.h on the GPU) ---------------------------- */
/* KV cache: f16, or with kv_int8 the CPU's int8 rows (act_q8_0 blocks, byte for byte the CPU's;
 * head_dim % 32 == 0). */
backend *backend_cuda_new(const hparams *hp, const model_weights *w, int n_ctx, int kv_int8, char *err, size_t errlen);
/* The residual stream x of the pass, T rows (tests: set before a block, read after it);
 * to_device 1 writes host into x, 0 reads x into host; synchronous. 0 / -1. */
int backend_cuda_x_io(backend *be, float *host, int T, int to_device);
/* Rows p0 .. p0 + n - 1 of a layer's K (which = 0) or V (1) cache into host memory, as stored
 * (*row_bytes: one row's bytes: f16 values or act_q8_0 blocks); synchronous (tests). 0 / -1. */
int backend_cuda_kv_read(const backend *be, int layer, int which, int p0, int n, void *host, size_t *row_bytes);
/* The greedy verify windows of the backend so far (verify_step): graphs captured, graph
 * replays, windows launched one kernel at a time (STRATA_CUDA_GRAPH=0); tests. */
void backend_cuda_verify_counts(const backend *be, long *captures, long *replays, long *eager);
/* The device sampler on device logits (tests): the token sampler_sample would pick for these
 * parameters, history and RNG state (rng is advanced the same way). -1 on error. */
int32_t cuda_sample_logits(const float *d_logits, int n_vocab, const struct strata_sampler_params *p, uint64_t rng[4],
                           const int32_t *hist, int n_hist);

/* ---- the op kernels alone, on device pointers, synchronous (tests/gpu/test_gpu_ops.c
 * compares them with the CPU primitives of src/cpu/backend_cpu.h); 0 / -1 ----------------- */
int cuda_test_rmsnorm(const float *x, const float *w, float *y, int rows, int n, float eps);
/* cuda_rmsnorm2 with STRATA_CUDA_NORM_WARP's launch warp (1 a warp a row, 0 a CTA a row) */
int cuda_test_rmsnorm2(const float *x1, const float *w1, float *y1, int rows1, const float *x2, const float *w2, float *y2,
                       int rows2, int n, float eps, int warp);
int cuda_test_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, float base, float scale);
int cuda_test_add(float *x, const float *y, int n);
int cuda_test_swiglu(const float *g, const float *u, float *out, int n);
int cuda_test_geglu(const float *g, const float *u, float *out, int n);
/* KV store of T tokens at pos0 into kc / vc (f16 [n_ctx][n_kv_heads * head_dim]), then the
 * attention (the CPU's chunked order: the chunks in parallel, or serial = 1: one CTA walks them) */
int cuda_test_attention(const float *q, const float *k, const float *v, uint16_t *kc, uint16_t *vc, int T, int n_heads,
                        int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx, int serial, float *out);
/* The same with the position read from device memory (dev_pos = 1: the decode graph's launch,
 * a grid over every chunk of n_ctx) and, when partials is not NULL, how many floats of the
 * chunk partials scratch (filled with a NaN pattern first) the launch wrote: 0 when every
 * token took the one-chunk (exact) path, > 0 when one took the chunk path. */
int cuda_test_attention_ex(const float *q, const float *k, const float *v, uint16_t *kc, uint16_t *vc, int T, int n_heads,
                           int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx, int serial, int dev_pos,
                           float *out, long *partials);
/* cuda_test_attention_ex on a cache of either format: kv8 = 1, kc / vc hold n_ctx rows of
 * n_kv_heads * head_dim / 32 act_q8_0 blocks (the CPU's int8 rows; head_dim % 32 == 0) */
int cuda_test_attention_kv(const float *q, const float *k, const float *v, void *kc, void *vc, int kv8, int T, int n_heads,
                           int n_kv_heads, int head_dim, int pos0, float scale, int window, int n_ctx, int serial, int dev_pos,
                           float *out, long *partials);
int32_t cuda_test_argmax(const float *x, int n);   /* -1 on error */
int cuda_test_argmax_rows(const float *x, int n, int rows, int32_t *ids);   /* cuda_argmax_rows: 0 / -1 */

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
/* passes of more than 8 columns (mm.cu): 2 the tensor-core kernel (STRATA_CUDA_MM's default),
 * 3 its 16-warp variant, 0 the matvec in slices of 8 (tests, A/B; same bits) */
void cuda_mm_set(int mode);
void cuda_mm_split_set(int s);
void cuda_attention_set_paths(int on);   /* STRATA_CUDA_ATTN_PATHS for tests: 1 the instance of the launch's one path, 0 both paths */
void cuda_attention_set_gs(int cap);   /* STRATA_CUDA_ATTN_GS for tests: at T = 1 the most heads of a KV group per chunk-path CTA (1..4), 0 auto */
void cuda_attention_set_tiles(int n);   /* STRATA_CUDA_ATTN_TILES for tests: 3 f16 in 16-byte pieces, 2 two K/V tiles where they fit, 1 one */   /* STRATA_CUDA_MM_SPLIT for tests: -1 auto, 0 never, 2..32 that split */
void cuda_mm_ext_set(int on);   /* STRATA_CUDA_MM_EXT for tests: 1 the newer formats on tensor cores too */
void cuda_mm_pipe_set(int on);  /* STRATA_CUDA_MM_PIPE for tests: 1 the pipelined tensor-core kernel, 0 the two-tile one */
void cuda_mm_oneb_set(int on); /* STRATA_CUDA_MM_ONEB for tests: 1 the serial matmul's one float an output where rows have <= 32 blocks, 0 never, -1 the switch again */
void cuda_mm_serx_set(int on); /* STRATA_CUDA_MM_SERX for tests: 1 the serial matmul's extended instances (four blocks a step for the 32-value formats, the biased conversion, the WPRE bits in ORD 2), 0 not, -1 the switch again */
void cuda_mm_wpre_set(int bits); /* STRATA_CUDA_MM_WPRE for tests, bits: 1 the two-tile kernel's Q4_K / Q5_K / IQ3_XXS / IQ2_XXS weight loads by 16 bytes / a step ahead, 2 in the serial one-float instances (ONEB 1) its activation codes copied by warps, 4 there Q4_K / Q5_K code words by 16-byte loads, 8 the 32-value formats' activations re-laid in ORD 2 X's step order by a pre-pass (unsplit plain launches); 0 the first loads; -1 the switch's value again */
long cuda_mm_atl_count(void);      /* tests: launches that took STRATA_CUDA_MM_WPRE bit 8 (the re-laid activations) so far */
void cuda_mm_atl_min_set(int t);   /* tests: the narrowest pass that takes bit 8 (default 128, < 1 the default) */
void cuda_attention_qvec_set(int on); /* STRATA_CUDA_ATTN_QVEC for tests: 1 the query tiles' own instances for head_dim 64 / 128, 0 the general loops */
/* tests: mm.cu's grouped (MoE) matmul from host lists: groups (count, then expert, first pair,
 * pairs, source row per group), tiles (count, then group, first column per tile); act holds the
 * pairs' rows in the format's activation layout (device), y [pairs][n_out]; synchronous */
int cuda_mm_grouped_test(int type, const void *W, size_t expert_bytes, size_t row_bytes, int n_out, int64_t n_in,
                         const void *act, const int *groups, int n_groups_ints, const int *tiles, int n_tiles_ints,
                         int max_tiles, float *y);
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
