/* The MoE harness of the GPU tests (test_gpu_moe.c, test_gpu_variants.c): a synthetic qwen3moe
 * file, models and sessions on either device, and one layer's FFN block (RMSNorm, the MoE FFN,
 * the residual add) on a session's backend with the residual stream set and read through
 * backend_cpu_x / backend_cuda_x_io. */
#ifndef STRATA_TESTS_MOE_HARNESS_H
#define STRATA_TESTS_MOE_HARNESS_H
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "cuda/cuda_backend.h"
#include "cpu/backend_cpu.h"

/* qwen3moe: `dim` wide (heads of 64), `experts` of ffn 256, `used` per token */
static int moe_h_ff = 256;   /* the experts' ffn width of the next moe_synth (768: rows of 3 super-blocks) */
static int moe_synth(const char *path, int layers, int type_experts, int type_attn, int type_out, int vocab, int dim,
                     int experts, int used, uint64_t seed) {
    synth_params p;
    synth_default_params(&p, ARCH_QWEN3MOE);
    p.n_layers = layers; p.n_embd = dim; p.n_heads = dim / 64; p.n_kv_heads = 2; p.head_dim = 64;
    p.n_experts = experts; p.n_experts_used = used; p.n_ff_exp = moe_h_ff; p.n_vocab = vocab; p.n_ctx = 1024;
    p.type_attn = type_attn; p.type_experts = type_experts; p.type_output = type_out; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.seed = seed;
    p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { fprintf(stderr, "synth %s: %s\n", path, err); return -1; }
    return 0;
}

static strata_model *moe_load(const char *path, strata_device dev) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = dev;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load %s: %s\n", path, err); return NULL; }
    return m;
}
/* the sessions' context and moe_model_compare's prompt length (a test may deepen both: a prompt
 * past 256 positions puts the decode steps on the attention's chunk path) */
static int moe_n_ctx = 256, moe_prompt_len = 24;
static strata_session *moe_session(strata_model *m) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = moe_n_ctx;
    char err[512];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}

/* out = x + ffn_block(x) of layer 0 */
static int moe_ffn_gpu(strata_session *sg, const float *x, int T, float *out) {
    backend *be = sg->be;
    fwd_seq q = { be->kv, 0, T };
    fwd_batch b = { T, 1, &q };
    if (backend_cuda_x_io(be, (float *)x, T, 1)) return -1;
    be->ops->ffn_block(be, 0, &b);
    return backend_cuda_x_io(be, out, T, 0);
}
static void moe_ffn_cpu(strata_session *sc, const float *x, int T, float *out) {
    backend *be = sc->be;
    fwd_seq q = { be->kv, 0, T };
    fwd_batch b = { T, 1, &q };
    float *bx = backend_cpu_x(be);
    memcpy(bx, x, sizeof(float) * (size_t)T * sc->m->hp.n_embd);
    be->ops->ffn_block(be, 0, &b);
    memcpy(out, bx, sizeof(float) * (size_t)T * sc->m->hp.n_embd);
}
typedef struct { int32_t ids[128]; int n; } moe_tok_list;
static int moe_collect(int32_t id, void *user) {
    moe_tok_list *l = user;
    if (l->n < 128) l->ids[l->n++] = id;
    return 0;
}
/* The GPU model mg against the CPU model mc of one file: teacher-forced logits (a moe_prompt_len-token prompt
 * in 8-token passes, then 16 tokens one at a time: *steps = how many were bit-identical) and
 * free-running greedy ids (48 after the prompt; the GPU's decode step is its captured graph:
 * *n_cpu, *n_gpu ids, *equal = the common prefix); -1 when a session or an evaluation failed */
static int moe_model_compare(strata_model *mc, strata_model *mg, int *steps, int *equal, int *n_cpu, int *n_gpu) {
    int V = strata_n_vocab(mc);
    static int32_t prompt[1024];
    const int np = moe_prompt_len < 1024 ? moe_prompt_len : 1024;
    for (int i = 0; i < np; i++) prompt[i] = (int32_t)((i * 131 + 7) % V);
    strata_session *sc = moe_session(mc), *sg = moe_session(mg);
    int same = sc && sg && strata_session_eval(sc, prompt, np) == 0 && strata_session_eval(sg, prompt, np) == 0;
    *steps = 0;
    for (int s = 0; same && s < 16; s++) {
        const float *lc = strata_session_logits(sc), *lg = strata_session_logits(sg);
        if (memcmp(lc, lg, sizeof(float) * (size_t)V)) break;
        int32_t a = 0;
        for (int i = 1; i < V; i++) if (lc[i] > lc[a]) a = i;
        (*steps)++;
        if (strata_session_eval(sc, &a, 1) || strata_session_eval(sg, &a, 1)) same = 0;
    }
    int rc = sc && sg && same ? 0 : -1;
    strata_session_free(sc); strata_session_free(sg);
    sc = moe_session(mc); sg = moe_session(mg);
    moe_tok_list tc = { .n = 0 }, tg = { .n = 0 };
    if (sc && sg) {
        strata_generate(sc, prompt, np, 48, moe_collect, &tc);
        strata_generate(sg, prompt, np, 48, moe_collect, &tg);
    } else rc = -1;
    int d = 0;
    while (d < tc.n && d < tg.n && tc.ids[d] == tg.ids[d]) d++;
    *equal = d; *n_cpu = tc.n; *n_gpu = tg.n;
    strata_session_free(sc); strata_session_free(sg);
    return rc;
}
#endif
