/* Synthetic models of real shapes (`strata synth`): valid GGUF files with random weights in
 * any format of the quantization library, complete metadata and a real tokenizer.
 *
 * Weights: matrices are Gaussian-like (std `weight_std`, default 0.02 as in trained models)
 * quantized by the library's quantizers; the IQ codebook formats, whose quantizers search a
 * grid and are slow, get valid blocks drawn directly (random codes, then the block scale set
 * so the block's dequantized RMS equals `weight_std`). Norm weights are 1.0 (F32).
 *
 * Determinism: every value comes from a counter-based hash of (seed, tensor index, row,
 * element), never from a sequential generator, and the Gaussian is built from integer
 * uniforms with exact float arithmetic (no libm): the same parameters give the same bytes
 * on any machine and for any thread count. */
#ifndef STRATA_SYNTH_H
#define STRATA_SYNTH_H
#include <stddef.h>
#include <stdint.h>
#include "model.h"

typedef struct synth_params {
    arch_id arch;                 /* ARCH_LLAMA, ARCH_QWEN3MOE or ARCH_GEMMA3 */
    int n_layers, n_embd, n_ff, n_heads, n_kv_heads, head_dim;
    int n_experts, n_experts_used, n_ff_exp;   /* qwen3moe */
    int n_vocab, n_ctx;
    int sliding_window;           /* gemma3: the window of its sliding layers (five of every six) */
    int type_attn;                /* attn_q/k/v/output */
    int type_ffn;                 /* dense ffn_gate/up/down (llama) */
    int type_experts;             /* ffn_gate_exps/up_exps/down_exps */
    int type_router;              /* ffn_gate_inp (F32 in real qwen3moe files) */
    int type_output, type_embd;
    float rope_base, rms_eps;
    float rope_base_local;        /* gemma3: the sliding layers' RoPE base */
    float weight_std;             /* std of every matrix's weights */
    /* tokenizer: a GGUF file whose tokenizer.* keys are copied, or NULL / "builtin" for the
     * built-in byte-level tokenizer (256 byte tokens + specials, no merges). The vocabulary
     * is padded with UNUSED tokens up to n_vocab; n_vocab smaller than it is an error. */
    const char *tokenizer_path;
    uint64_t seed;
    int n_threads;                /* generation threads (does not change a byte) */
    const char *name;             /* general.name; NULL: "strata-synth <arch>" */
} synth_params;

/* Defaults: qwen3moe -> the Qwen3-30B-A3B shape (48 layers, dim 2048, 32/4 heads of 128,
 * 128 experts top-8 of ffn 768, vocab 151936, IQ3_XXS experts, Q4_K attention/embeddings,
 * Q6_K output); llama -> the SmolLM2-135M shape (30 layers, dim 576, ffn 1536, 9/3 heads,
 * vocab 49152, Q8_0); gemma3 -> the Gemma 3 270m shape (18 layers, dim 640, 4/1 heads of
 * 256, ffn 2048, vocab 262144, window 512, Q8_0, the output tied to token_embd). Tokenizer NULL (built-in), seed 1. */
void synth_default_params(synth_params *p, arch_id arch);

/* Write the model to path. 0, or -1 with a message naming the tensor/option in err.
 * Memory: the tensors are generated in memory before the file is written (peak ~ file size). */
int synth_write(const synth_params *p, const char *path, char *err, size_t errlen);

/* Bytes the file's tensor data will take (before writing; -1 on a bad shape/type). */
int64_t synth_data_bytes(const synth_params *p, char *err, size_t errlen);

/* The generator's Gaussian: value `i` of stream `key` (mean 0, std 1, |z| <= 2*sqrt(3)).
 * Exposed for tests. */
float synth_gauss(uint64_t key, uint64_t i);
#endif
