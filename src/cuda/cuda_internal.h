/* Internal declarations shared by the CUDA translation units (C++ linkage, never included
 * from C). The C interface is cuda_backend.h. */
#ifndef STRATA_CUDA_INTERNAL_H
#define STRATA_CUDA_INTERNAL_H
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>
#define restrict __restrict__
extern "C" {
#include "quant/quant.h"
#include "quant/iq_tables.h"
#include "cuda_backend.h"
}
#undef restrict

/* A matvec launch over up to MV_GROUP_MAX weights of one format and one n_in that read the
 * same activations: rows [row_start[i], row_start[i+1]) are weight i's. With swiglu set, the
 * group is a gate/up pair (n = 2, equal n_out) and swiglu_out gets silu(g) * u. */
#define MV_GROUP_MAX 4
typedef struct mv_group {
    int n;
    const uint8_t *W[MV_GROUP_MAX];
    float *y[MV_GROUP_MAX];          /* [T][n_out[i]] */
    float *add_to[MV_GROUP_MAX];     /* NULL, or residual [T][n_out[i]] += y */
    int64_t n_out[MV_GROUP_MAX];
    int row_start[MV_GROUP_MAX + 1];
    size_t row_bytes;
    int swiglu;
    float *swiglu_out;               /* [T][n_out[0]] */
    float *ws;                       /* NULL, or the matmul's split partials (mm.cu): ws_floats */
    size_t ws_floats;
} mv_group;

/* matvec.cu */
int    cuda_type_info(int type, int *blck, int *act_fmt, int *bsize);
size_t cuda_act_row_bytes(int act, int64_t n);
int    cuda_matvec_group(int type, const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st);
int    cuda_tables_init(void);   /* IQ codebooks into device memory (once) */
/* mm.cu: the tensor-core matmul of passes of more than 8 columns, the matvec's bits (a group
 * without swiglu; formats with 32-value scale blocks); STRATA_CUDA_MM=0 turns it off */
int    cuda_mm_supported(int type, int64_t n_in);
int    cuda_mm_min_cols(void);
#define CUDA_MM_WS_FLOATS ((size_t)8 << 20)   /* a backend's split-matmul partials: 32 MiB (the serial
                                                 order's split keeps nl <= 32 lane values an output:
                                                 64 columns of 4,096 rows) */
#define CUDA_MM_WS_TREE_FLOATS ((size_t)2 << 20) /* the tree's split within 8 MiB of them, as measured */
int    cuda_mm_group(int type, const mv_group *g, int64_t n_in, const void *act, int T, cudaStream_t st);
int    cuda_mm_tables_init(void);   /* mm.cu's IQ codebooks into device memory (once) */
/* the grouped matmul of MoE wide passes: for each tile of `tiles` ([0] the count, then (group,
 * first column) pairs; grid bound max_tiles) group gi of `groups` (MOE_GROUP_INTS layout) has
 * rows act + (first pair + c) * as (c < pairs), expert e = its first int; y[(first pair + c)
 * * n_out + r] = W_e[r] . act row: the matvec's bits */
int    cuda_mm_grouped(int type, const void *W, size_t expert_bytes, size_t row_bytes, int n_out, int64_t n_in,
                       const void *act, const int *groups, const int *tiles, int max_tiles, float *y, cudaStream_t st);
/* a gate/up + SwiGLU group at T = 1 that also writes h quantized into act_h (32-value blocks:
 * the formats ..._ok accepts); act_h must not be act */
int    cuda_matvec_swiglu_q32_ok(int type, int act_h_fmt, int64_t n_out);
int    cuda_matvec_swiglu_q32(int type, const mv_group *g, int64_t n_in, const void *act, void *act_h, int act_h_fmt,
                              cudaStream_t st);
/* the T = 1 matvec kernel for one weight of `type` at W with rows of row_bytes: 8 (8 lanes
 * per super-block) or 0 (one lane per block): the choice cuda_matvec_group makes */
int    cuda_matvec_coop_for(int type, const void *W, size_t row_bytes);
/* what cuda_matvec_set_coop asked for: 0 (one lane per super-block), 8, or -1 (defaults) */
int    cuda_matvec_coop_setting(void);

/* moe.cu: the Mixture-of-Experts FFN after the router matvec (see the file's comment). All
 * pointers are device memory; P = T * k pairs. */
#define CUDA_MOE_MAX_K CUDA_MOE_MAX_EXPERTS_USED
#define CUDA_MOE_COLS 8    /* tokens per cuda_moe_block call (a wider pass runs in slices) */
#define CUDA_MOE_MAX_X CUDA_MOE_MAX_EXPERTS
#define MOE_GROUP_INTS 4   /* expert, first pair, pairs, source row */
#define CUDA_MOE_WIDE_MAX_T 512   /* tokens of a cuda_moe_experts_wide call (FWD_MAX_T) */
#define CUDA_MM_BN 64   /* columns of a tile of mm.cu's matmul (the wide MoE path lists its tiles in these) */
typedef struct cuda_moe {
    int X, k, T;                    /* experts, experts per token, tokens */
    int64_t E, F;                   /* model width, expert FFN width */
    int type_gu, type_down;         /* gate and up share one format */
    const void *gate, *up, *down;   /* expert 0 of [X][F][E], [X][F][E], [X][E][F] */
    const void *gate_r4, *up_r4, *down_r4;   /* their R4 copies (STRATA_CUDA_MOE_R4, src/quant/r4.h) or NULL */
    const float *logits;            /* [T][X] router logits (computed here when router_f32 is set) */
    const float *router_f32;        /* NULL, or an F32 router [X][E] fused with the routing
                                       (cuda_moe_router_fusable); then x_f32 = the f32 rows */
    const float *x_f32;
    unsigned *counter;              /* the fused kernel's last-CTA counter (zeroed, left zeroed) */
    const void *act_x;              /* T rows of x in type_gu's activation format */
    void *act_pairs;                /* [P] rows, same format (gathered by expert) */
    int *groups;                    /* 1 + MOE_GROUP_INTS P ints */
    int *pair_of;                   /* [T][k] -> grouped pair */
    float *wts;                     /* [T][k] renormalized weights */
    float *h;                       /* [P][F] */
    void *act_h;                    /* [P] rows of F in type_down's activation format */
    float *y;                       /* [P][E] */
    float *out;                     /* [T][E] */
    int max_groups;                 /* grid bound on groups: 0 = P (the decode kernels' slices);
                                       the wide chunks of cuda_moe_experts_wide set their own */
    /* CUDA_MOE_FAST_NORM (T = 1, cuda_moe_norm_fusable): the ffn RMSNorm inside the router launch:
       x_f32 (y) and act_x's Q8_K row are then written by it from norm_x, norm_w, norm_eps */
    const float *norm_x, *norm_w;
    float norm_eps;
    /* CUDA_MOE_FAST_NEXTNORM (T = 1, cuda_moe_next_norm_ok): the next layer's attention RMSNorm of
       add_to inside the down launch (its last CTA), into nn_y and nn_act's Q8_K row; nn_w NULL: not
       asked. counter[1] is its arrival counter. */
    const float *nn_w;
    float *nn_y;
    void *nn_act;
    float nn_eps;
    /* CUDA_MOE_FAST_HQ: set by cuda_moe_block alone (T = 1, act_q8_K rows of F % 256 == 0): the gate/up
       launch quantizes h into these rows (act_h) itself; counter[2 ..] its arrival counters */
    void *hq_act;
} cuda_moe;
/* the MoE counters: [0] the router launch's, [1] the down launch's next norm, then CUDA_MOE_MAX_K x
   (8192 / 256) for the gate/up launch's h blocks (CUDA_MOE_FAST_HQ) */
#define CUDA_MOE_COUNTERS (2 + CUDA_MOE_MAX_K * 32)
/* can the T = 1 down launch of a model of width E take the next attention norm (bits 2 and
   16777216 of STRATA_CUDA_MOE_FAST on, E % 256 == 0, E <= 2,048, x / y 16-byte aligned)? */
int cuda_moe_next_norm_ok(int64_t E, const void *x, const void *y);
/* can the T = 1 router launch take the ffn norm (CUDA_MOE_FAST_NORM on, an F32 router of width
   1,024 / 2,048 that cuda_moe_router_fusable takes, X >= E / 256, activations Q8_K, x / y / router
   16-byte aligned)? */
int cuda_moe_norm_fusable(int router_type, int64_t E, int X, int act_fmt, const void *x, const void *y, const void *router);

/* The MoE block after the router input: (router +) routing, grouped gate/up, grouped down, the
 * combine into out (+ add_to), STRATA_CUDA_MOE_FAST's launches (the same bits) */
int cuda_moe_block(const cuda_moe *m, float *add_to, cudaStream_t st);
/* Wide passes (STRATA_CUDA_MOE_MM): all T tokens routed at once and each expert's pairs through
 * the grouped tensor-core matmul (mm.cu), the same bits as cuda_moe_block over slices. Uses
 * of m: X, k, T, E, F, types, weights, logits ([T][X], computed by the caller), act_x, and
 * the buffers below; groups and pair_of / wts as cuda_moe's (cuda_moe_combine follows). */
typedef struct cuda_moe_wide {
    cuda_moe m;                     /* h: gate outputs then h in place; act_pairs/act_h/y: [P] rows */
    float *hu;                      /* [P][F] up outputs */
    int *sel;                       /* [T][k] experts chosen */
    int *tiles;                     /* 1 + 2 cuda_moe_wide_max_tiles + P ints (the tile list, then
                                       the token of each grouped position); tiles of 64 columns */
    int router_tg;                  /* tokens per CTA of the wide F32 router: 1..16, 0 auto
                                       (STRATA_CUDA_MOE_ROUTER_TG) */
    int mv;                         /* 2, 4 or 8: each expert's pairs in chunks of at most mv through
                                       the grouped decode kernels (STRATA_CUDA_MOE_MV; any format,
                                       no tiles); 0: the grouped tensor-core matmul */
} cuda_moe_wide;
int cuda_moe_wide_ok(int type_gu, int type_down, int64_t E, int64_t F);   /* both on tensor cores */
int cuda_moe_wide_max_tiles(int P, int X);
/* groups the wide path writes: X (whole groups), or the chunks of at most mv pairs */
static inline int cuda_moe_wide_max_groups(int P, int X, int mv) {
    int g = mv ? P / mv + (X < P ? X : P) : X;
    return g < P ? g : P;
}
int cuda_moe_experts_wide(const cuda_moe_wide *w, cudaStream_t st);
static inline int cuda_moe_router_fusable(int router_type, int64_t E) { return router_type == TYPE_F32 && (E == 2048 || E == 1024); }
int cuda_moe_combine(const cuda_moe *m, float *add_to, cudaStream_t st);   /* out (+ residual) */
int cuda_moe_tables_init(void);

/* ops.cu: element-wise ops, norms, RoPE, attention, argmax, embedding */
int cuda_embed(const void *W, int type, int64_t n_embd, const int32_t *d_ids, int T, float *x, float scale, cudaStream_t st);
int cuda_embed_supported(int type);
/* rows of n: y = x / rms(x) * w; when act_fmt >= 0 also quantizes y rows (n per row, one row
 * per token: rows == T) into act (fused norm + activation quantization). */
int cuda_rmsnorm(const float *x, const float *w, float *y, int rows, int n, float eps, cudaStream_t st);
/* two row sets of n in one launch (same bits as two cuda_rmsnorm calls) */
int cuda_rmsnorm2(const float *x1, const float *w1, float *y1, int rows1, const float *x2, const float *w2, float *y2,
                  int rows2, int n, float eps, cudaStream_t st);
/* STRATA_CUDA_NORM_WARP: cuda_rmsnorm2 a warp a row where n <= 256 (1) or a CTA a row (0, default) */
void cuda_ops_set_norm_warp(int on);
int cuda_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos,
              const float *cos_sin, cudaStream_t st);
/* KV caches: kc / vc point to a layer's rows of n_ctx positions, f16 values (kv8 = 0: kv_dim
 * halves a row) or int8 blocks (kv8 = 1: act_q8_0, kv_dim / 32 blocks of 36 bytes a row, the
 * CPU's int8 cache byte for byte; head_dim % 32 == 0). Every kernel below that writes or
 * reads a cache takes kv8. */
int cuda_kv_store(const float *k, const float *v, void *kc, void *vc, int kv8, int T, int kv_dim, int pos0,
                  const int *d_pos, cudaStream_t st);
/* Several sequences in one launch: column t's position pos[t] and its sequence's K/V cache of
 * the layer kc[t] / vc[t] (device arrays of T entries; the caches of one launch share a
 * format); the kernels take it by value, all NULL for one sequence at pos0 + t of kc / vc. */
typedef struct cuda_cols { const int *pos; void *const *kc; void *const *vc; } cuda_cols;
int cuda_rope_qk_store_cols(float *q, float *k, const float *v, void *kc, void *vc, int kv8, int T, int n_heads,
                            int n_kv_heads, int head_dim, int n_rot, int neox, int pos0, const int *d_pos, const float *cs_q,
                            const float *cs_k, const cuda_cols *cols, cudaStream_t st);
int cuda_rope_qk_store(float *q, float *k, const float *v, void *kc, void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                       int head_dim, int n_rot, int neox, int pos0, const int *d_pos, const float *cs_q, const float *cs_k,
                       cudaStream_t st);
/* RoPE and the KV store folded into the attention (T = 1): q and k un-rotated, v, and the
 * tables of q and k; every CTA rotates its heads' q, the one holding the last chunk its KV
 * head's k (ops.cu, attn_kernel), and the group's first head group stores the position's
 * K/V rows */
typedef struct cuda_rope_fold { const float *k, *v, *cs_q, *cs_k; int n_rot, neox; } cuda_rope_fold;
/* The canonical chunked order (src/model/attn_order.h; bit-identical to the CPU), the chunks
 * in parallel. scratch: cuda_attention_scratch_floats(T, n_heads, head_dim, n_ctx) floats;
 * counters: T * n_heads zeroed ints (left zeroed); max_last: the largest position of the
 * columns when the host knows it (the column table), else -1; act: NULL, or the activation
 * rows (format act_fmt, block size dividing head_dim) to quantize the output into; rf: NULL,
 * or (T = 1) the RoPE + KV store to fold in (kc / vc are then written); cols: NULL, or the
 * column table (several sequences); serial: one CTA walks all of a head's chunks (same bits). */
int cuda_attention(const float *q, void *kc, void *vc, int kv8, int T, int n_heads, int n_kv_heads, int head_dim, int pos0,
                   const int *d_pos, int max_last, float scale, int window, int n_ctx, float *scratch, int *counters,
                   float *out, void *act, int act_fmt, const cuda_rope_fold *rf, const cuda_cols *cols, int serial,
                   cudaStream_t st);
/* does a launch whose columns' largest position is max_last use the scratch (a column with
 * more than one chunk)? The scratch covers ATT_COLS columns: wider passes launch in slices */
int cuda_attention_uses_scratch(int max_last, int window);
/* expf with the host libm's bits (expf_host.cuh): set once per process */
struct expf_table;
int cuda_ops_expf_init(const struct expf_table *t, int mode);
int cuda_matvec_expf_init(const struct expf_table *t, int mode);
int cuda_moe_expf_init(const struct expf_table *t, int mode);
int cuda_attnp_expf_init(const struct expf_table *t, int mode);
/* attn_prompt.cu: the attention of a wide pass of one sequence in query tiles (the exact
 * order's bits); _ok says whether a pass qualifies (T > 8, the span fits shared memory) */
int cuda_attention_qtile_ok(int T, int head_dim, int pos0, int window);
int cuda_attention_qtile(const float *q, const void *kc, const void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                         int head_dim, int pos0, float scale, int window, float *out, void *act, int act_fmt,
                         cudaStream_t st);
size_t cuda_attention_scratch_floats(int T, int n_heads, int head_dim, int n_ctx);
/* attn_tc.cu: the tensor-core attention (the default on Hopper, STRATA_CUDA_ATTN_TC; the GPU's
 * own order, not the CPU's bits; batch-invariant): _ok whether a cache qualifies (head_dim 64 or
 * 128; f16 or int8 (kv8: act_q8_0 rows, whose values enter the tiles as f16(d * q))); the rows'
 * RoPE and KV store done before it. part: cuda_attention_tc_scratch_floats
 * floats (the split launch of passes of at most 8 columns), or NULL (every pass by the loop
 * launch: the same bits); max_last: the largest position of the launch's columns (a graph's
 * bound), or -1; fold_staged: STRATA_CUDA_ATTN_TC_DEC's bits 4 and 16, the split launch's merge
 * with its loads issued at once (16 or 64 chunks' u a thread), or walking the chunks (0; same bits);
 * its bit 32: an int8 cache's codes to float without I2F (tc_q8f; same bits) */
int cuda_attention_tc_ok(int head_dim);
size_t cuda_attention_tc_scratch_floats(int n_heads, int head_dim, int n_ctx);
int cuda_attention_tc(const float *q, const void *kc, const void *vc, int kv8, int T, int n_heads, int n_kv_heads,
                      int head_dim, int pos0, const int *d_pos, int max_last, float scale, int window, int n_ctx,
                      float *part, float *out, void *act, int act_fmt, int fold_staged, cudaStream_t st);
/* its decode launches (T = 1, STRATA_CUDA_ATTN_TC_DEC): RoPE of q / k and the KV store folded
 * in (k, v: the column's rows, not rotated; cs: the RoPE table), the same bits as rope_qk_store +
 * cuda_attention_tc. Positions below 256 (max_last): one launch, the chunks merged in the CTA;
 * deeper: a CTA per chunk into part (cuda_attention_tc_scratch_floats), then the merge launch.
 * bits (STRATA_CUDA_ATTN_TC_DEC): 1 the first, 2 the second, 4 its merge's loads at once, 8 the
 * second's int8 rows copied by cp.async all at once, then converted (before the wait either way),
 * 16 the merge's u loads 64 chunks at once (bit 4's form); 512 with q_norm and k_norm given, the q / k
 * head norms inside the launch (q and k are read un-normed; NULL: they come normed, or have none);
 * 1024 act_fmt ACT_Q8_K accepted for act where the launch is not split and a CTA's heads hold whole
 * 256-value blocks (else -1);
 * _ok: groups of <= 16 heads, the bit for max_last set, and part given for the second */
int cuda_attention_tc_dec_ok(int n_heads, int n_kv_heads, int head_dim, int max_last, int bits, int have_part);
/* does a decode launch sized for max_last take the split form (a CTA per chunk, then the merge)? */
int cuda_attention_tc_dec_split(int max_last);
int cuda_attention_tc_dec(const float *q, const float *k, const float *v, void *kc, void *vc, int kv8, int n_heads,
                          int n_kv_heads, int head_dim, int pos0, const int *d_pos, int max_last, float scale,
                          int window, const float *cs, int n_rot, int neox, int n_ctx, float *part, float *out,
                          void *act, int act_fmt, const float *q_norm, const float *k_norm, float eps, int bits,
                          cudaStream_t st);
int cuda_swiglu(const float *g, const float *u, float *out, int n, cudaStream_t st);
int cuda_geglu(const float *g, const float *u, float *out, int n, cudaStream_t st);
int cuda_rmsnorm_quant(const float *x, const float *w, float *y, int rows, int n, float eps, void *act, int act_fmt,
                       cudaStream_t st);
int cuda_add(float *x, const float *y, int n, cudaStream_t st);
/* scratch: cuda_argmax_scratch_ints() zeroed ints per concurrent stream (left zeroed) */
size_t cuda_argmax_scratch_ints(void);
int cuda_argmax(const float *x, int n, int32_t *d_out, int *d_pos_inc, int *scratch, cudaStream_t st);
/* each of `rows` rows of n floats (row r at x + r n) to d_out[r], one CTA per row (same rule) */
int cuda_argmax_rows(const float *x, int n, int rows, int32_t *d_out, cudaStream_t st);
/* the same over the tokens whose bit is set in mask (n bits, LSB first; the others count as
 * -inf, as the host sampler's mask sets them) */
int cuda_argmax_masked(const float *x, int n, const uint32_t *mask, int32_t *d_out, int *d_pos_inc, int *scratch,
                       cudaStream_t st);
#endif
