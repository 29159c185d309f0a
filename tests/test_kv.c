/* The int8 KV cache (STRATA_KV_INT8, CPU backend): rows stored as act_q8_0 blocks (int8 + an
 * f32 scale per 32 values).
 *   - storage: each stored row decodes to the value written within half a quantization step
 *     (|x - d q| <= d / 2), 36 bytes per 32 values;
 *   - invariance: the prompt in 8-token passes == token by token (logits memcmp), and a
 *     speculative session gives the ids of a plain one — quantization is per row, so nothing
 *     depends on how tokens are batched;
 *   - quality against the f16 cache on SmolLM2 (teacher-forced on the f16 greedy ids of three
 *     prompts): mean KL(f16 || int8) and top-1 agreement within measured budgets;
 *   - refusals: reference mode (f32 cache) and an unknown type are clean errors. */
#include "test.h"
#include "small_model.h"
#include "golden_common.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "quant/quant.h"
#include "cpu/f16conv.h"
#include "core/util.h"
#include "core/env.h"

#define KV_KL_MEAN_MAX 8e-3   /* measured 3.76e-3 (SmolLM2 Q4_1, 2026-11-30): about 2x */

typedef struct { int32_t ids[256]; int n; } tok_list;
static int collect(int32_t id, void *user) {
    tok_list *l = user;
    if (l->n < 256) l->ids[l->n++] = id;
    return 0;
}

static strata_session *new_session(strata_model *m, int kv, int spec) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 256;
    sp.kv_type = kv;
    sp.spec_draft = spec;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "%s\n", err);
    return s;
}

static const char *prompts[3] = {
    "The capital of France is",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea, there lived an old fisherman who",
};

static int tokenize(strata_model *m, const char *text, int32_t *ids, int cap) {
    int n = strata_tokenize(m, text, strlen(text), 1, 0, ids, cap);
    return n > cap ? cap : n;
}

static void test_storage(strata_model *m) {
    strata_session *s = new_session(m, STRATA_KV_INT8, 0);
    CHECK(s != NULL);
    if (!s) return;
    int32_t ids[64];
    int n = tokenize(m, prompts[2], ids, 64);
    CHECK(n > 8 && strata_session_eval(s, ids, n) == 0);
    size_t bpp = 0;
    const hparams *hp = &m->hp;
    const size_t kv_dim = (size_t)hp->n_kv_heads * hp->head_dim;
    const uint8_t *K = backend_cpu_kv_layer(s->be, 0, 0, &bpp);
    CHECK_EQ_INT(bpp, kv_dim / 32 * 36);
    /* every stored block: the scale is amax / 127 and the codes are in [-127, 127]; decoding
     * a block's largest code gives back a value of magnitude amax within half a step */
    int ok = 1, nonzero = 0;
    for (int p = 0; p < n; p++) {
        const act_q8_0 *b = (const act_q8_0 *)(K + (size_t)p * bpp);
        for (size_t j = 0; j < kv_dim / 32; j++) {
            int amax = 0;
            for (int i = 0; i < 32; i++) { int a = b[j].qs[i] < 0 ? -b[j].qs[i] : b[j].qs[i]; if (a > amax) amax = a; }
            if (!(b[j].d >= 0.0f) || amax > 127 || (b[j].d > 0.0f && amax != 127)) ok = 0;
            nonzero += b[j].d > 0.0f;
        }
    }
    CHECKF(ok, "stored K blocks are not amax/127-scaled int8");
    CHECK(nonzero > 0);
    strata_session_free(s);
}

static void test_invariance(strata_model *m) {
    const int V = strata_n_vocab(m);
    int32_t ids[96];
    int n = tokenize(m, prompts[2], ids, 96);
    strata_session *a = new_session(m, STRATA_KV_INT8, 0), *b = new_session(m, STRATA_KV_INT8, 0);
    CHECK(a && b);
    if (!a || !b) { strata_session_free(a); strata_session_free(b); return; }
    CHECK(strata_session_eval(a, ids, n) == 0);                       /* 8-token passes */
    for (int i = 0; i < n; i++) CHECK(strata_session_eval(b, ids + i, 1) == 0);   /* one by one */
    CHECKF(!memcmp(strata_session_logits(a), strata_session_logits(b), sizeof(float) * (size_t)V),
           "int8 KV: batched prompt logits != token-by-token logits");
    strata_session_free(a); strata_session_free(b);
    /* speculation (drafts verified in batched passes, rollback) keeps the greedy ids */
    int32_t q[96];
    int nq = tokenize(m, "Repeat after me: the quick brown fox jumps over the lazy dog. the quick brown fox", q, 96);
    tok_list la = { .n = 0 }, lb = { .n = 0 };
    strata_session *plain = new_session(m, STRATA_KV_INT8, 0), *spec = new_session(m, STRATA_KV_INT8, 4);
    CHECK(plain && spec);
    if (plain && spec) {
        strata_generate(plain, q, nq, 48, collect, &la);
        strata_generate(spec, q, nq, 48, collect, &lb);
        strata_stats st;
        strata_session_get_stats(spec, &st);
        CHECKF(la.n > 0 && la.n == lb.n && !memcmp(la.ids, lb.ids, sizeof(int32_t) * (size_t)la.n),
               "int8 KV: speculative greedy ids differ from plain greedy ids");
        CHECKF(st.n_accepted > 0, "no draft was accepted (the prompt repeats itself: drafts should land)");
        printf("int8 KV, speculation: %d tokens equal to plain greedy; %ld drafted, %ld accepted\n", lb.n, st.n_drafted,
               st.n_accepted);
    }
    strata_session_free(plain); strata_session_free(spec);
}

/* Teacher-forced on the f16 cache's greedy ids: per step KL(f16 || int8) of the next-token
 * distributions over the whole vocabulary and whether the argmax agrees (golden_common.h's
 * golden_compare_full / golden_argmax). */
static void test_quality(strata_model *m) {
    /* quick mode (tests/test.h, the sanitizer run): 16 teacher-forced steps per prompt, not 48 (the
     * same three prompts, the same per-step comparison and budgets) */
    const int V = strata_n_vocab(m), steps = t_quick() ? 16 : 48;
    double kl_sum = 0, kl_max = 0;
    int agree = 0, total = 0;
    for (int pi = 0; pi < 3; pi++) {
        int32_t ids[128];
        int n = tokenize(m, prompts[pi], ids, 128);
        strata_session *f = new_session(m, STRATA_KV_F16, 0), *q = new_session(m, STRATA_KV_INT8, 0);
        CHECK(f && q);
        if (!f || !q) { strata_session_free(f); strata_session_free(q); continue; }
        strata_session_eval(f, ids, n);
        strata_session_eval(q, ids, n);
        for (int s = 0; s < steps; s++) {
            const float *lf = strata_session_logits(f), *lq = strata_session_logits(q);
            double md, kl;
            golden_compare_full(V, lf, lq, &md, &kl);
            int32_t next = golden_argmax(lf, V);   /* both follow the f16 cache's greedy path */
            kl_sum += kl; if (kl > kl_max) kl_max = kl;
            agree += next == golden_argmax(lq, V); total++;
            if (strata_session_eval(f, &next, 1) || strata_session_eval(q, &next, 1)) break;
        }
        strata_session_free(f); strata_session_free(q);
    }
    double kl_mean = total ? kl_sum / total : 1;
    printf("int8 KV vs f16 KV (SmolLM2, 3 prompts x %d teacher-forced steps): mean KL %.3g, max KL %.3g, "
           "argmax agrees %d/%d\n", steps, kl_mean, kl_max, agree, total);
    /* budgets: about twice what was measured when the cache was written (docs/KERNELS.md) */
    CHECKF(total == 3 * steps, "%d steps", total);
    CHECKF(kl_mean < KV_KL_MEAN_MAX, "mean KL %g >= %g", kl_mean, KV_KL_MEAN_MAX);
    CHECKF(agree >= total * 9 / 10, "argmax agrees at %d of %d steps (< 90%%)", agree, total);
}

/* Gemma 3 (sliding-window layers keep a ring; head_dim 256): batch invariance with int8 rows */
static void test_gemma(const char *path) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { CHECKF(0, "%s", err); return; }
    const int V = strata_n_vocab(m);
    int32_t ids[96];
    int n = tokenize(m, prompts[2], ids, 96);
    strata_session *a = new_session(m, STRATA_KV_INT8, 0), *b = new_session(m, STRATA_KV_INT8, 0);
    CHECK(a && b);
    if (a && b) {
        CHECK(strata_session_eval(a, ids, n) == 0);
        for (int i = 0; i < n; i++) CHECK(strata_session_eval(b, ids + i, 1) == 0);
        CHECKF(!memcmp(strata_session_logits(a), strata_session_logits(b), sizeof(float) * (size_t)V),
               "gemma, int8 KV: batched prompt logits != token-by-token logits");
        size_t bpp = 0;
        backend_cpu_kv_layer(a->be, 0, 1, &bpp);
        CHECK_EQ_INT(bpp, (size_t)m->hp.n_kv_heads * m->hp.head_dim / 32 * 36);
    }
    strata_session_free(a); strata_session_free(b);
    strata_model_free(m);
}

/* the AVX2 row conversion gives the scalar one's values (d * (float)q) */
static void test_row_conversion(void) {
    act_q8_0 b[8];
    uint64_t r = 0x9E3779B97F4A7C15ull;
    for (int j = 0; j < 8; j++) {
        r ^= r << 13; r ^= r >> 7; r ^= r << 17;
        b[j].d = (float)(r % 100000) * 1e-6f * (j & 1 ? 1.0f : 1e-3f);
        for (int i = 0; i < 32; i++) { r ^= r << 13; r ^= r >> 7; r ^= r << 17; b[j].qs[i] = (int8_t)((int)(r % 255) - 127); }
    }
    float a[256], s[256];
    q8_to_f32_row_scalar(b, s, 256);
    CHECK(s[0] == b[0].d * (float)b[0].qs[0] && s[255] == b[7].d * (float)b[7].qs[31]);
    if (!cpu_has_avx2_fma()) { SKIP("avx2-rows", "AVX2 row conversion: no AVX2"); return; }
    q8_to_f32_row_avx2(b, a, 256);
    CHECKF(!memcmp(a, s, sizeof a), "AVX2 and scalar int8 row conversions differ");
}

/* STRATA_CPU_ATTN: the AVX2 scores (eight positions side by side) give the scalar loop's
 * bits, for both cache types, over a prompt that ends in a partial group of eight */
static void test_attn_variants(strata_model *m) {
    const int V = strata_n_vocab(m);
    int32_t ids[160];
    int n = tokenize(m, "In the beginning the universe was created. This has made a lot of people very angry and "
                        "been widely regarded as a bad move. Many were increasingly of the opinion that they had all "
                        "made a big mistake in coming down from the trees in the first place.", ids, 160);
    CHECK(n > 40 && n % 8 != 0);
    for (int kv = STRATA_KV_F16; kv <= STRATA_KV_INT8; kv++) {
        float *ref = malloc(sizeof(float) * (size_t)V);
        setenv("STRATA_CPU_ATTN", "scalar", 1); env_reset_cache();
        strata_session *a = new_session(m, kv, 0);
        setenv("STRATA_CPU_ATTN", "auto", 1); env_reset_cache();
        strata_session *b = new_session(m, kv, 0);
        CHECK(a && b && ref);
        if (a && b && ref) {
            CHECK(strata_session_eval(a, ids, n) == 0 && strata_session_eval(b, ids, n) == 0);
            memcpy(ref, strata_session_logits(a), sizeof(float) * (size_t)V);
            CHECKF(!memcmp(ref, strata_session_logits(b), sizeof(float) * (size_t)V),
                   "kv %d: the AVX2 attention (scores, V sums) changes the logits", kv);
        }
        strata_session_free(a); strata_session_free(b); free(ref);
    }
    unsetenv("STRATA_CPU_ATTN"); env_reset_cache();
}

/* STRATA_CPU_KV_PASS: K/V rows converted once per pass (default) or per (token, head) task:
 * the same logits bit for bit, for a prompt (8-token passes) and then token by token */
static void test_kv_pass(strata_model *m) {
    const int V = strata_n_vocab(m);
    int32_t ids[96];
    int n = tokenize(m, "The quick brown fox jumps over the lazy dog, and then it runs far away into the woods "
                        "where nobody can find it again.", ids, 96);
    CHECK(n > 20);
    for (int kv = STRATA_KV_F16; kv <= STRATA_KV_INT8; kv++) {
        setenv("STRATA_CPU_KV_PASS", "0", 1); env_reset_cache();
        strata_session *a = new_session(m, kv, 0);
        unsetenv("STRATA_CPU_KV_PASS"); env_reset_cache();
        strata_session *b = new_session(m, kv, 0);
        CHECK(a && b);
        int same = 0, steps = 0;
        if (a && b && strata_session_eval(a, ids, n - 12) == 0 && strata_session_eval(b, ids, n - 12) == 0) {
            same += !memcmp(strata_session_logits(a), strata_session_logits(b), sizeof(float) * (size_t)V);
            steps++;
            for (int i = n - 12; i < n; i++) {   /* decode steps: passes of one token */
                if (strata_session_eval(a, &ids[i], 1) || strata_session_eval(b, &ids[i], 1)) break;
                same += !memcmp(strata_session_logits(a), strata_session_logits(b), sizeof(float) * (size_t)V);
                steps++;
            }
        }
        CHECKF(steps == 13 && same == steps, "kv %d: per-pass vs per-task K/V conversion: %d of %d logits equal", kv, same,
               steps);
        strata_session_free(a); strata_session_free(b);
    }
}

static void test_refusals(const char *path) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CPU; mp.exact = 1;
    strata_model *m = NULL;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { CHECKF(0, "%s", err); return; }
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 64; sp.kv_type = STRATA_KV_INT8;
    err[0] = 0;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    CHECKF(!s && strstr(err, "int8 KV"), "exact mode + int8 KV: session %p, error '%s'", (void *)s, err);
    strata_session_free(s);
    sp.kv_type = 7;
    err[0] = 0;
    s = strata_session_new(m, &sp, err, sizeof err);
    CHECKF(!s && strstr(err, "KV cache type"), "unknown KV type: error '%s'", err);
    strata_session_free(s);
    strata_model_free(m);
}

int main(void) {
    /* test_invariance asserts that drafts land: a given cost table, so that timings on a loaded
     * machine (CI builds the sanitizer suite alongside) cannot make speculation not pay */
    setenv("STRATA_SPEC_COSTS", "1.05,1.1,1.15,1.2,1.25,1.3,1.35", 0);
    const char *path = getenv("STRATA_MODEL");
    if (!path || access(path, R_OK)) SKIP_ALL("model", "STRATA_MODEL not set or unreadable");
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.device = STRATA_DEVICE_CPU;
    strata_model *m;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); CHECK(0); TEST_DONE(); }
    RUN(test_row_conversion);
    RUN_ARG(test_storage, m);
    RUN_ARG(test_invariance, m);
    RUN_ARG(test_quality, m);
    /* quick mode (tests/test.h, the sanitizer run): the two kernel-variant comparisons (bit for bit,
     * the engine against itself) on tests/small_model.h's synthetic llama, which has SmolLM2's
     * tokenizer, head size and grouping; `make test` runs them on SmolLM2 */
    strata_model *vm = t_quick() ? small_model(path) : m;
    CHECK(vm != NULL);
    if (vm) {
        RUN_ARG(test_attn_variants, vm);
        RUN_ARG(test_kv_pass, vm);
    }
    if (vm != m) strata_model_free(vm);
    strata_model_free(m);
    RUN_ARG(test_refusals, path);
    const char *gemma = getenv("STRATA_GEMMA_MODEL");
    if (gemma && !access(gemma, R_OK)) RUN_ARG(test_gemma, gemma);
    else SKIP("gemma-model", "STRATA_GEMMA_MODEL not set or unreadable");
    TEST_DONE();
}
