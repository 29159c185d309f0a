/* Mixture-of-Experts feed-forward on the CPU (qwen3moe semantics, as transformers'
 * Qwen3MoeSparseMoeBlock with norm_topk_prob = true):
 *
 *   logits[t][e] = gate_inp[e] . x[t]                               e < X experts
 *   p[t]         = softmax(logits[t])                                over all X
 *   sel[t][r]    = the k experts of largest p, rank r = 0..k-1       (ties: lower index first)
 *   w[t][r]      = p[t][sel[t][r]] / sum_r' p[t][sel[t][r']]          (renormalized)
 *   h[t][r]      = silu(gate_exps[e] x[t]) * (up_exps[e] x[t])        e = sel[t][r], [F]
 *   out[t]       = sum over r = 0, 1, .., k-1 of w[t][r] * (down_exps[e] h[t][r])   [E]
 *
 * The grouped path collects the T*k (token, rank) pairs by expert so each selected expert's
 * gate/up/down rows are read once for all the tokens routed to it: one parallel pass computes
 * gate and up row chunks back to back and applies SiLU*mul, a second runs down. Each pair's
 * vectors go through the same per-column kernels as a T = 1 matvec (an expert with more than 8
 * tokens: the format's wide kernel, whose columns have the matvec's bits), and the final sum runs in
 * rank order from 0.0f, so every token's output is bit-identical to the per-token reference
 * and independent of T, of which tokens share an expert, and of the thread count. */
#ifndef STRATA_CPU_MOE_H
#define STRATA_CPU_MOE_H
#include <stdint.h>
#include "matvec.h"
#include "model/model.h"

typedef enum { MOE_AUTO = 0, MOE_GROUPED, MOE_PER_TOKEN } moe_variant;

/* Most tokens one moe_ffn call takes (a wider pass runs in slices of this many). */
#define MOE_MAX_T 512

/* Router for T tokens: logits [T][n_expert] -> sel [T][k] expert ids (rank order) and
 * w [T][k] renormalized weights. k <= n_expert. */
void moe_route(const float *logits, int n_expert, int k, int T, int32_t *sel, float *w);

/* out[T][E] = the MoE FFN of x[T][E] (x already normed; out must not alias x).
 * L: gate_inp [X][E], gate_exps/up_exps [X][F][E], down_exps [X][E][F]. k experts per token.
 * mode: MATVEC_DEFAULT (int8 activations, integer dots) or MATVEC_EXACT (f32).
 * variant AUTO reads STRATA_MOE (grouped | per-token). sel/w (optional, [T][k]) receive the
 * routing. Returns 0, or -1 on unsupported types / shapes / out of memory. */
int moe_ffn(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
            matvec_mode mode, matvec_kernel kernel, moe_variant variant, int32_t *sel, float *w);

/* Seconds spent in each phase of one moe_ffn call (benchmarks). For the per-token variant
 * gate_up holds gate, up and down together and down is 0. */
typedef struct moe_timing { double route, gate_up, down, combine; } moe_timing;
int moe_ffn_timed(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
                  matvec_mode mode, matvec_kernel kernel, moe_variant variant, int32_t *sel, float *w,
                  moe_timing *tm);
#endif
