/* Model: hyperparameters and weights bound from a GGUF file by an architecture table row,
 * and the one forward pass (forward.c) written against the backend interface (backend.h). */
#ifndef STRATA_MODEL_H
#define STRATA_MODEL_H
#include <stdint.h>
#include "gguf/gguf.h"

typedef enum { ARCH_LLAMA = 0, ARCH_QWEN3MOE, ARCH_GEMMA3, ARCH_COUNT } arch_id;

/* A 2-D (or 3-D for experts) weight: n_out rows of n_in values, GGUF order (ne0 = n_in). */
typedef struct weight {
    const void *data;       /* host bytes (inside the mmap) */
    void *dev;              /* backend copy (CUDA), NULL on the CPU */
    void *dev_r4;           /* CUDA: a repacked copy for the one-column kernels, else NULL: IQ2_XXS / IQ3_XXS experts' R4
                               rows (STRATA_CUDA_MOE_R4, src/quant/r4.h), a Q6_K output head's planes
                               (STRATA_Q6_PLANAR, src/quant/q6p.h) */
    int type;               /* strata_type */
    int64_t n_in, n_out;    /* per expert for 3-D tensors */
    int64_t n_expert;       /* 1 for 2-D */
    uint64_t nbytes;
} weight;

typedef struct layer_weights {
    weight attn_norm, wq, wk, wv, wo;
    weight q_norm, k_norm;                  /* per-head QK RMSNorm (qwen3, gemma3) */
    weight post_attn_norm, post_ffn_norm;   /* gemma3 sandwich norms */
    weight ffn_norm, gate, up, down;        /* dense FFN */
    weight gate_inp, gate_exps, up_exps, down_exps;  /* MoE */
    int sliding;                            /* gemma3: sliding-window layer */
} layer_weights;

typedef struct hparams {
    arch_id arch;
    int n_layers, n_embd, n_heads, n_kv_heads, head_dim, n_ff, n_vocab, n_ctx_train;
    int n_rot;                   /* rotated dims per head */
    float rope_base, rope_base_local, rope_scale;   /* rope_scale: linear position divisor (1 = none) */
    float rms_eps;
    int n_experts, n_experts_used, n_ff_exp;
    int sliding_window, sliding_pattern;
    float attn_scale;            /* multiplier for q·k */
    float embd_scale;            /* gemma: sqrt(n_embd); else 1 */
    int ffn_gelu;                /* gated FFN activation: 0 SiLU (SwiGLU), 1 GELU-tanh (gemma) */
    int rope_neox;               /* RoPE pairs (i, i + n_rot/2) (qwen3moe, gemma3) instead of (2i, 2i+1) (llama's GGUF layout) */
} hparams;

typedef struct model_weights {
    weight tok_embd, output_norm, output;   /* output aliases tok_embd when tied */
    layer_weights *layers;
} model_weights;

/* Whether layer l attends over a sliding window (Gemma 3: all but every pattern-th layer). */
static inline int hparams_layer_sliding(const hparams *hp, int l) {
    return hp->sliding_pattern > 0 && hp->sliding_window > 0 && ((l + 1) % hp->sliding_pattern) != 0;
}

/* Bind hyperparameters and weights; 0 or -1 with err. */
int  model_bind(const gguf_file *f, hparams *hp, model_weights *w, char *err, size_t errlen);
void model_weights_free(model_weights *w);
const char *arch_name(arch_id a);
uint64_t model_weight_bytes_per_token(const hparams *hp, const model_weights *w);
#endif
