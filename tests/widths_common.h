/* Batch invariance across pass widths (issue 17): a prompt of N tokens evaluated in passes of
 * W columns (W = 1, 7, 8, 9, 64, 512: the matvec, its slices, the wide matmul) must leave the
 * same bits: the logits after the prompt, and the logits of greedy steps after it (which read
 * the KV rows the wide passes wrote). Used by tests/test_widths.c (CPU) and
 * tests/gpu/test_gpu_widths.c (GPU, and GPU against CPU). */
#ifndef STRATA_WIDTHS_COMMON_H
#define STRATA_WIDTHS_COMMON_H
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/quant.h"

#define WID_N 600        /* prompt tokens: one pass of 512 and a partial one */
#define WID_STEPS 4      /* greedy steps after the prompt */
static const int wid_widths[] = { 1, 7, 8, 9, 64, 512 };
#define WID_NW ((int)(sizeof wid_widths / sizeof wid_widths[0]))

static strata_model *wid_load(const char *path, strata_device dev) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = dev;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load %s: %s\n", path, err); return NULL; }
    return m;
}

/* the KV cache of wid_run's sessions (a test may set STRATA_KV_INT8) */
static int wid_kv_type = STRATA_KV_F16;

/* logits [(1 + WID_STEPS) * V]: after the prompt in passes of w, then after each greedy step */
static int wid_run(strata_model *m, int w, float *out) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024;
    sp.kv_type = wid_kv_type;
    char err[512];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "session: %s\n", err); return -1; }
    const int V = strata_n_vocab(m);
    int32_t ids[WID_N];
    for (int i = 0; i < WID_N; i++) ids[i] = (int32_t)(3 + (i * 7919 + (i * i) % 101) % (V - 3));
    int rc = 0;
    for (int i = 0; i < WID_N && !rc; i += w) {
        int T = WID_N - i < w ? WID_N - i : w;
        rc = session_forward(s, ids + i, T, i + T == WID_N ? T - 1 : T);
    }
    for (int k = 0; k <= WID_STEPS && !rc; k++) {
        const float *lg = session_logits(s);
        memcpy(out + (size_t)k * V, lg, (size_t)V * sizeof(float));
        if (k == WID_STEPS) break;
        int32_t best = 0;
        for (int j = 1; j < V; j++) if (lg[j] > lg[best]) best = j;
        rc = session_forward(s, &best, 1, 0);
    }
    strata_session_free(s);
    return rc;
}

/* a small llama (formats given) or qwen3moe written to path */
static int wid_synth(const char *path, int moe, int type_attn, int type_ffn, char *err, size_t errlen) {
    synth_params p;
    synth_default_params(&p, moe ? ARCH_QWEN3MOE : ARCH_LLAMA);
    p.n_layers = 3; p.n_vocab = 3000; p.n_embd = 512; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64; p.n_ff = 1024;
    if (moe) { p.n_experts = 16; p.n_experts_used = 4; p.n_ff_exp = 256; p.type_experts = type_ffn; }
    if (moe == 2) p.n_embd = 1024;   /* an F32 router of a width the CUDA routing kernels read themselves */
    p.type_attn = type_attn; p.type_ffn = type_ffn; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.n_ctx = 2048;
    p.tokenizer_path = "builtin"; p.seed = 11; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    return synth_write(&p, path, err, errlen);
}
#endif
