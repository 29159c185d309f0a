/* A small synthetic llama for quick mode (tests/test.h, the sanitizer run): the parts of a test
 * that compare the engine with itself (batched against solo, chunked against whole, one kernel
 * variant against another) run on it instead of SmolLM2, with every check; the optimized
 * `make test` runs them on SmolLM2. It has SmolLM2's formats and widths where the kernels care
 * (Q4_1 layers, a Q8_0 output and embedding of SmolLM2's 49,152-id vocabulary, grouped-query
 * attention 3:1 with heads of 64, ffn wider than the model) and 2 layers of width 192: about a
 * thirteenth of SmolLM2's work per token. Its tokenizer is copied from tokenizer_path (SmolLM2:
 * the same ids for the same text). Used by tests/test_engine.c and tests/test_kv.c. */
#ifndef STRATA_SMALL_MODEL_H
#define STRATA_SMALL_MODEL_H
#include <stdio.h>
#include <unistd.h>
#include "strata.h"
#include "model/synth.h"
#include "quant/blocks.h"

static strata_model *small_model(const char *tokenizer_path) {
    synth_params sp;
    synth_default_params(&sp, ARCH_LLAMA);
    sp.n_layers = 2; sp.n_embd = 192; sp.n_ff = 512; sp.n_heads = 3; sp.n_kv_heads = 1; sp.head_dim = 64;
    sp.n_ctx = 1024;
    sp.type_attn = TYPE_Q4_1; sp.type_ffn = TYPE_Q4_1; sp.type_output = TYPE_Q8_0; sp.type_embd = TYPE_Q8_0;
    sp.tokenizer_path = tokenizer_path;
    char path[64], err[256] = "";
    snprintf(path, sizeof path, "/tmp/strata-small-model-%d.gguf", (int)getpid());
    strata_model *m = NULL;
    if (synth_write(&sp, path, err, sizeof err) == 0) {
        strata_model_params mp = strata_model_default_params();
        mp.path = path;
        mp.device = STRATA_DEVICE_CPU;
        if (strata_model_load(&mp, &m, err, sizeof err)) m = NULL;
    }
    if (!m) fprintf(stderr, "small model: %s\n", err);
    unlink(path);
    return m;
}
#endif
