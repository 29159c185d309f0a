/* The GPU end-to-end tests' rig (test_gpu_e2e, test_gpu_kv8, test_gpu_sample, test_gpu_batch):
 * synthetic models written on the spot (src/model/synth.h: the same parameters give the same
 * bytes on any machine), models loaded on a device, sessions, prompt ids, greedy picks and the
 * environment switches. Nothing here counts a check: the tests' CHECKs stay in the tests. */
#ifndef STRATA_GPU_RIG_H
#define STRATA_GPU_RIG_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "strata.h"
#include "model/synth.h"
#include "core/env.h"
#include "quant/blocks.h"
#include "cuda/cuda_backend.h"

/* p's model to path with the built-in tokenizer, generated on every core: 0, or -1 (the error on
 * stderr) */
static inline int rig_synth_write(synth_params *p, const char *path) {
    p->tokenizer_path = "builtin";
    p->n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(p, path, err, sizeof err) != 0) { fprintf(stderr, "synth %s: %s\n", path, err); return -1; }
    return 0;
}

/* A model of this shape and these formats (attention, FFN or experts, output, embeddings) with a
 * 2,048-position context; qwen3moe: 8 experts, 2 of them used, each of ffn and F32 routers. */
static inline int rig_model(const char *path, arch_id arch, int layers, int dim, int ffn, int heads, int kvh, int hd,
                            int vocab, int ta, int tf, int to, int te, uint64_t seed) {
    synth_params p;
    synth_default_params(&p, arch);
    p.n_layers = layers; p.n_embd = dim; p.n_ff = ffn; p.n_heads = heads; p.n_kv_heads = kvh; p.head_dim = hd;
    p.n_vocab = vocab; p.n_ctx = 2048;
    p.type_attn = ta; p.type_output = to; p.type_embd = te;
    if (arch == ARCH_QWEN3MOE) {
        p.n_experts = 8; p.n_experts_used = 2; p.n_ff_exp = ffn; p.type_experts = tf; p.type_router = TYPE_F32;
    } else p.type_ffn = tf;
    p.seed = seed;
    return rig_synth_write(&p, path);
}

/* the model at path on dev (threads: STRATA_THREADS or all cores); NULL with the error on stderr */
static inline strata_model *rig_load(const char *path, strata_device dev) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = dev; mp.n_threads = 0;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) { fprintf(stderr, "load %s: %s\n", path, err); return NULL; }
    return m;
}

/* a session of sp's parameters; NULL with the error on stderr */
static inline strata_session *rig_session_p(strata_model *m, const strata_session_params *sp) {
    char err[512];
    strata_session *s = strata_session_new(m, sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}
/* a session of the default parameters with n_ctx positions */
static inline strata_session *rig_session(strata_model *m, int n_ctx) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = n_ctx;
    return rig_session_p(m, &sp);
}

/* the ids strata_generate emits (the first RIG_TOK_MAX) */
#define RIG_TOK_MAX 512
typedef struct { int32_t ids[RIG_TOK_MAX]; int n; } tok_list;
static inline int collect(int32_t id, void *user) {
    tok_list *l = (tok_list *)user;
    if (l->n < RIG_TOK_MAX) l->ids[l->n++] = id;
    return 0;
}

/* n prompt ids in [3, V): prompt `which` of the stream seed (each test has its own) */
static inline void rig_prompt_ids(uint64_t seed, int which, int V, int32_t *ids, int n) {
    uint64_t x = seed * (uint64_t)(which + 1);
    for (int i = 0; i < n; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        ids[i] = (int32_t)(3 + (x >> 33) % (uint64_t)(V - 3));
    }
}

/* the first of the largest logits */
static inline int argmax(const float *x, int n) { int b = 0; for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i; return b; }

/* an environment switch set (v NULL: unset), the registry's cache dropped */
static inline void set_env(const char *name, const char *v) {
    if (v) setenv(name, v, 1);
    else unsetenv(name);
    env_reset_cache();
}

/* the GPU's expf has libm's bits (expf_host.cuh): GPU-vs-CPU bits are asserted then */
static inline int rig_libm(void) { return !strncmp(cuda_expf_mode(), "libm", 4); }
#endif
