/* The CPU attention's variants give the same bits (docs/KERNELS.md "CPU attention order").
 * STRATA_CPU_ATTN=auto runs a decode step (one token) grouped by KV head (attn_dec_* in
 * src/cpu/backend_cpu.c: each K/V row converted once per step, 32 positions' scores side by
 * side from a transposed block, the V sums 32 d per task); heads runs a task per (token, head)
 * (the path prompts take); scalar one position at a time. Backends with the same cache
 * contents are stepped at depths from 1 to beyond 4096 and their attention outputs compared
 * with memcmp: f16 and int8 caches, SmolLM2's head shape (9 heads of 64, 3 KV heads) and
 * Gemma 3's (4 heads of 256, 1 KV head) with its sliding-window ring (window 512), at one
 * and three threads; test_detects shows the comparison can fail. */
#include "test.h"
#include <stdint.h>
#include "model/backend.h"
#include "model/model.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"
#include "core/util.h"
#include "core/env.h"
#include <unistd.h>
#include "strata.h"

typedef struct { int H, KVH, HD, window; const char *name; } shape;

static uint32_t rng = 12345u;
static float frand(void) {   /* xorshift in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static backend *make_be(const shape *s, int n_ctx, int kv_int8, threadpool *tp, const char *mode) {
    static model_weights mw;
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_heads = s->H; hp.n_kv_heads = s->KVH; hp.head_dim = s->HD;
    hp.n_embd = s->H * s->HD; hp.n_ff = 64; hp.n_vocab = 16; hp.n_ctx_train = n_ctx; hp.n_rot = s->HD;
    hp.rope_base = hp.rope_base_local = 1e4f; hp.rope_scale = 1; hp.rms_eps = 1e-5f; hp.embd_scale = 1;
    hp.attn_scale = 1.0f / sqrtf((float)s->HD);
    /* two layers: with a window, layer 0 is a sliding-window ring and layer 1 global */
    hp.n_layers = 2;
    if (s->window) { hp.sliding_window = s->window; hp.sliding_pattern = 2; }
    setenv("STRATA_CPU_ATTN", mode, 1);
    env_reset_cache();
    char err[256];
    backend *be = backend_cpu_new(&hp, &mw, n_ctx, tp, 0, kv_int8, err, sizeof err);
    if (!be) fprintf(stderr, "%s\n", err);
    unsetenv("STRATA_CPU_ATTN");
    env_reset_cache();
    return be;
}

/* Fills positions [from, to) of every layer of the backends with the same random K/V rows
 * (passes of up to 256 tokens, window 8: the attention they compute is not looked at). */
static void fill(backend **be, int n_be, const shape *s, int from, int to, float *q, float *k, float *v, float *o) {
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    for (int p = from; p < to; p += 256) {
        int T = to - p < 256 ? to - p : 256;
        for (int i = 0; i < T * KD; i++) { k[i] = frand(); v[i] = frand(); }
        for (int i = 0; i < T * QD; i++) q[i] = frand();
        for (int l = 0; l < 2; l++)
            for (int b = 0; b < n_be; b++) backend_cpu_attention(be[b], be[b]->kv, l, q, k, v, T, p, 0.125f, 8, o);
    }
}

/* One decode step at position pos on each backend (the same q, k, v; the layer's window), the
 * outputs compared with the first backend's. Returns how many differ. */
static int step(backend **be, int n_be, const shape *s, int layer, int pos, float *q, float *k, float *v, float **o,
                float scale) {
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    for (int i = 0; i < QD; i++) q[i] = frand() * 3.0f;   /* a spread of scores: the softmax is not flat */
    for (int i = 0; i < KD; i++) { k[i] = frand(); v[i] = frand(); }
    const int window = layer == 0 ? s->window : 0;
    int bad = 0;
    for (int b = 0; b < n_be; b++) {
        backend_cpu_attention(be[b], be[b]->kv, layer, q, k, v, 1, pos, scale, window, o[b]);
        if (b > 0 && memcmp(o[0], o[b], sizeof(float) * (size_t)QD)) bad++;
    }
    return bad;
}

/* The backends: scalar and heads at one thread, auto at one and three threads. */
static void run_shape(const shape *s, int kv_int8, const int *depths, int n_depths) {
    const int n_ctx = depths[n_depths - 1] + 8;
    threadpool *tp1 = threadpool_create(1), *tp3 = threadpool_create(3);
    const char *names[4] = { "scalar", "heads", "auto/1", "auto/3" };
    backend *be[4] = { make_be(s, n_ctx, kv_int8, tp1, "scalar"), make_be(s, n_ctx, kv_int8, tp1, "heads"),
                       make_be(s, n_ctx, kv_int8, tp1, "auto"), make_be(s, n_ctx, kv_int8, tp3, "auto") };
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    float *q = malloc(sizeof(float) * 256 * QD), *k = malloc(sizeof(float) * 256 * KD);
    float *v = malloc(sizeof(float) * 256 * KD), *ow = malloc(sizeof(float) * 256 * QD);
    float *o[4];
    for (int b = 0; b < 4; b++) o[b] = malloc(sizeof(float) * QD);
    REQUIRE(be[0] && be[1] && be[2] && be[3] && q && k && v && ow && o[0] && o[1] && o[2] && o[3], "allocation");
    if (be[0] && be[1] && be[2] && be[3] && q && k && v && ow && o[0] && o[1] && o[2] && o[3]) {
        int at = 0;
        for (int di = 0; di < n_depths; di++) {
            const int pos = depths[di];
            fill(be, 4, s, at, pos, q, k, v, ow);
            int bad = 0, nz = 0;
            for (int l = 0; l < 2; l++) bad += step(be, 4, s, l, pos, q, k, v, o, 1.0f / sqrtf((float)s->HD));
            for (int i = 0; i < QD; i++) nz += o[0][i] != 0.0f;
            CHECKF(bad == 0 && nz > QD / 2, "%s, %s cache: a decode step at depth %d: %d of 6 outputs differ from %s's "
                   "(%d of %d values non-zero)", s->name, kv_int8 ? "int8" : "f16", pos, bad, names[0], nz, QD);
            at = pos + 1;
        }
    }
    for (int b = 0; b < 4; b++) { if (be[b]) be[b]->ops->free(be[b]); free(o[b]); }
    free(q); free(k); free(v); free(ow);
    threadpool_free(tp1); threadpool_free(tp3);
}

static const int depths_smol[] = { 0, 1, 7, 31, 63, 64, 65, 95, 255, 256, 257, 511, 1000, 2049, 4095, 4096, 4100, 6001 };
static const int depths_gemma[] = { 3, 64, 200, 511, 512, 513, 600, 777, 1100, 4500 };

static void test_smollm2_shape(void) {
    shape s = { 9, 3, 64, 0, "SmolLM2 shape" };
    for (int kv8 = 0; kv8 <= 1; kv8++) run_shape(&s, kv8, depths_smol, (int)(sizeof depths_smol / sizeof depths_smol[0]));
}

static void test_gemma_shape(void) {   /* layer 0: a ring of window + 9 slots, wrapped several times */
    shape s = { 4, 1, 256, 512, "Gemma 3 shape" };
    for (int kv8 = 0; kv8 <= 1; kv8++) run_shape(&s, kv8, depths_gemma, (int)(sizeof depths_gemma / sizeof depths_gemma[0]));
}

/* The comparison can fail: the grouped path with the scale perturbed by one ulp differs. */
static void test_detects(void) {
    shape s = { 9, 3, 64, 0, "SmolLM2 shape" };
    threadpool *tp = threadpool_create(1);
    backend *be[2] = { make_be(&s, 600, 0, tp, "heads"), make_be(&s, 600, 0, tp, "auto") };
    float *q = malloc(sizeof(float) * 256 * 576), *k = malloc(sizeof(float) * 256 * 192), *v = malloc(sizeof(float) * 256 * 192);
    float *ow = malloc(sizeof(float) * 256 * 576), *o0 = malloc(sizeof(float) * 576), *o1 = malloc(sizeof(float) * 576);
    REQUIRE(be[0] && be[1] && q && k && v && ow && o0 && o1, "allocation");
    if (be[0] && be[1] && q && k && v && ow && o0 && o1) {
        fill(be, 2, &s, 0, 500, q, k, v, ow);
        for (int i = 0; i < 576; i++) q[i] = frand() * 3.0f;
        for (int i = 0; i < 192; i++) { k[i] = frand(); v[i] = frand(); }
        backend_cpu_attention(be[0], be[0]->kv, 1, q, k, v, 1, 500, 0.125f, 0, o0);
        backend_cpu_attention(be[1], be[1]->kv, 1, q, k, v, 1, 500, 0.125f, 0, o1);
        CHECKF(!memcmp(o0, o1, sizeof(float) * 576), "the same step differs");
        backend_cpu_attention(be[1], be[1]->kv, 1, q, k, v, 1, 500, nextafterf(0.125f, 1.0f), 0, o1);
        CHECKF(memcmp(o0, o1, sizeof(float) * 576) != 0, "a scale one ulp off gives the same bits: the check cannot fail");
    }
    for (int b = 0; b < 2; b++) if (be[b]) be[b]->ops->free(be[b]);
    free(q); free(k); free(v); free(ow); free(o0); free(o1);
    threadpool_free(tp);
}

/* Through a real model: a prompt of 56 tokens, then decode steps from position 56 to 79 (the
 * grouped path from 63 on), in sessions made under STRATA_CPU_ATTN=heads and auto: the logits
 * of every step equal bit for bit (f16 and int8 caches; heads == scalar: the shapes above and
 * tests/test_kv.c). */
static void test_model(const char *path) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { REQUIRE(0, "%s: %s", path, err); return; }
    const int V = strata_n_vocab(m);
    const char *text = "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
                       "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
                       "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
                       "of despair, we had everything before us, we had nothing before us, we were all going direct to "
                       "Heaven, we were all going direct the other way; in short, the period was so far like the "
                       "present period, that some of its noisiest authorities insisted on its being received.";
    int32_t ids[160];
    int n = strata_tokenize(m, text, strlen(text), 1, 0, ids, 160);
    REQUIRE(n >= 80, "%d tokens", n);
    for (int kv = STRATA_KV_F16; n >= 80 && kv <= STRATA_KV_INT8; kv++) {
        const char *modes[2] = { "heads", "auto" };
        strata_session *ss[2];
        for (int i = 0; i < 2; i++) {
            setenv("STRATA_CPU_ATTN", modes[i], 1); env_reset_cache();
            strata_session_params sp = strata_session_default_params();
            sp.n_ctx = 128; sp.kv_type = kv;
            ss[i] = strata_session_new(m, &sp, err, sizeof err);
            unsetenv("STRATA_CPU_ATTN"); env_reset_cache();
        }
        REQUIRE(ss[0] && ss[1], "sessions: %s", err);
        int same = 0, steps = 0;
        if (ss[0] && ss[1]) {
            int ok = 1;
            for (int i = 0; i < 2; i++) ok &= strata_session_eval(ss[i], ids, 56) == 0;
            for (int p = 56; ok && p < 80; p++) {
                for (int i = 0; i < 2; i++) ok &= strata_session_eval(ss[i], &ids[p], 1) == 0;
                same += ok && !memcmp(strata_session_logits(ss[0]), strata_session_logits(ss[1]), sizeof(float) * (size_t)V);
                steps++;
            }
        }
        CHECKF(steps == 24 && same == steps, "%s, %s cache: decode steps with equal logits (heads, auto): %d of %d", path,
               kv == STRATA_KV_INT8 ? "int8" : "f16", same, steps);
        for (int i = 0; i < 2; i++) strata_session_free(ss[i]);
    }
    strata_model_free(m);
}

int main(void) {
    if (!cpu_has_avx2_fma()) SKIP_ALL("avx2", "the AVX2 attention paths need AVX2/FMA/F16C");
    RUN(test_smollm2_shape);
    RUN(test_gemma_shape);
    RUN(test_detects);
    const char *path = getenv("STRATA_MODEL"), *gemma = getenv("STRATA_GEMMA_MODEL");
    if (path && !access(path, R_OK)) RUN_ARG(test_model, path);
    else SKIP("model", "STRATA_MODEL not set or unreadable");
    if (gemma && !access(gemma, R_OK)) RUN_ARG(test_model, gemma);
    else SKIP("gemma-model", "STRATA_GEMMA_MODEL not set or unreadable");
    TEST_DONE();
}
