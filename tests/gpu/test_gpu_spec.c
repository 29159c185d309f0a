/* Speculative decoding on CUDA: greedy token ids identical with --spec 0, 1, 4 and 7 on a
 * synthetic SmolLM2-shape model (and equal to the CPU's), on prompts that repeat themselves so
 * the suffix drafter drafts; prints decode tok/s per setting (the H200 speed-up).
 * The verify window as a graph (verify_step, issue 24): its ids equal the host's argmax of the
 * eager pass's logits for T = 1..8 at positions up to 810 (past 256: several attention chunks),
 * each width captured once and replayed at every other position (and with STRATA_CUDA_GRAPH=0,
 * its kernels one by one); strata_generate with windows through it gives --spec 0's ids over
 * 300 tokens, every window a replay (the counters), and STRATA_CUDA_VERIFY_GRAPH=0 none. */
#include "test.h"
#include "gpu_order.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "core/env.h"
#include "core/util.h"
#include "cuda/cuda_backend.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/blocks.h"

typedef struct { int32_t ids[512]; int n; } collected;
static int collect(int32_t id, void *u) { collected *c = u; if (c->n < 512) c->ids[c->n++] = id; return 0; }

static strata_model *load(const char *path, strata_device dev) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = dev;
    strata_model *m; char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); return NULL; }
    return m;
}

static double gen(strata_model *m, const int32_t *prompt, int n_prompt, int spec, int n_gen, collected *out, strata_stats *st) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024; sp.spec_draft = spec;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "%s\n", err); return -1; }
    out->n = 0;
    double t0 = now_seconds();
    strata_generate(s, prompt, n_prompt, n_gen, collect, out);
    double t = now_seconds() - t0;
    strata_session_get_stats(s, st);
    strata_session_free(s);
    return t;
}

static int32_t host_argmax(const float *x, int n) { int32_t b = 0; for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i; return b; }

/* verify_step's ids against the host argmax of forward()'s logits (the eager verify) on the
 * same cache, T = 1..8 at positions inside and past the first attention chunks. */
static void test_verify_ids(strata_model *m) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    REQUIRE(s != NULL, "%s", err);
    if (!s) return;
    backend *be = s->be;
    const int V = m->hp.n_vocab;
    REQUIRE(be->ops->verify_step != NULL, "the CUDA backend has verify_step");
    if (!be->ops->verify_step) { strata_session_free(s); return; }
    static int32_t pr[820];
    for (int i = 0; i < 820; i++) pr[i] = (int32_t)((7 + i * 131) % V);
    REQUIRE(strata_session_eval(s, pr, 820) == 0, "prompt of 820");   /* the buffers grow here, before any capture */
    static const int poss[] = { 3, 100, 250, 255, 256, 300, 511, 700, 810 };
    const int NP = (int)(sizeof poss / sizeof poss[0]);
    long cap0, rep0, eag0, cap1, rep1, eag1;
    backend_cuda_verify_counts(be, &cap0, &rep0, &eag0);
    long calls = 0;
    for (int pi = 0; pi < NP; pi++)
        for (int T = 1; T <= 8; T++) {
            const int pos = poss[pi];
            int32_t win[8], got[8], again[8], ref[8];
            for (int t = 0; t < T; t++) win[t] = (int32_t)((pos * 31 + t * 977 + 5) % V);
            int r = be->ops->verify_step(be, win, T, pos, got);
            calls++;
            REQUIRE(r >= 0, "verify_step T %d pos %d", T, pos);
            REQUIRE(forward(be, &m->hp, win, T, pos, 0) == 0, "eager forward T %d pos %d", T, pos);
            const float *lg = be->ops->logits(be);
            for (int t = 0; t < T; t++) ref[t] = host_argmax(lg + (size_t)t * V, V);
            int same = r >= 0 && !memcmp(got, ref, (size_t)T * sizeof(int32_t));
            CHECKF(same, "T %d pos %d: verify_step ids differ from the eager logits' argmax (column 0: %d vs %d)", T, pos,
                   got[0], ref[0]);
            /* replayed again on the rows the eager pass stored: the same ids */
            r = be->ops->verify_step(be, win, T, pos, again);
            calls++;
            CHECKF(r == 0 && !memcmp(again, ref, (size_t)T * sizeof(int32_t)), "T %d pos %d: a second replay differs", T, pos);
        }
    backend_cuda_verify_counts(be, &cap1, &rep1, &eag1);
    /* a graph per width and position class (the first chunk of 256 positions, past it) */
    CHECKF(cap1 - cap0 == 16, "one capture per width and class: %ld", cap1 - cap0);
    CHECKF(rep1 - rep0 == calls && eag1 == eag0, "every window a graph replay: %ld replays, %ld eager, %ld calls", rep1 - rep0,
           eag1 - eag0, calls);
    /* STRATA_CUDA_GRAPH=0: the same kernels one by one (reading the window from device memory) */
    setenv("STRATA_CUDA_GRAPH", "0", 1);
    env_reset_cache();
    for (int T = 2; T <= 8; T += 3) {
        const int pos = 600 + T;
        int32_t win[8], got[8], ref[8];
        for (int t = 0; t < T; t++) win[t] = (int32_t)((pos * 17 + t * 1231 + 9) % V);
        int r = be->ops->verify_step(be, win, T, pos, got);
        REQUIRE(r >= 0 && forward(be, &m->hp, win, T, pos, 0) == 0, "T %d pos %d without graphs", T, pos);
        const float *lg = be->ops->logits(be);
        for (int t = 0; t < T; t++) ref[t] = host_argmax(lg + (size_t)t * V, V);
        CHECKF(r >= 0 && !memcmp(got, ref, (size_t)T * sizeof(int32_t)), "STRATA_CUDA_GRAPH=0 T %d pos %d: ids differ", T, pos);
    }
    long cap2, rep2, eag2;
    backend_cuda_verify_counts(be, &cap2, &rep2, &eag2);
    CHECKF(eag2 - eag1 == 3 && rep2 == rep1 && cap2 == cap1, "STRATA_CUDA_GRAPH=0: %ld eager windows", eag2 - eag1);
    unsetenv("STRATA_CUDA_GRAPH");
    env_reset_cache();
    fprintf(stderr, "verify_step: %ld windows at %d positions, %ld captures, %ld replays\n", calls, NP, cap1 - cap0, rep1 - rep0);
    strata_session_free(s);
}

/* strata_generate with every drafted window verified (STRATA_SPEC_WINDOW=fixed): the ids of
 * --spec 0 over 300 tokens, each window one replay of its width's graph; the switch off: the
 * eager verify (no replay), the same ids. */
static void test_generate_verify_graph(strata_model *m, const int32_t *prompt, int n_prompt) {
    char err[256];
    collected base, on, off;
    long reps[2] = { 0 }, caps[2] = { 0 }, wins[2] = { 0 }, kept[2] = { 0 };
    setenv("STRATA_SPEC_WINDOW", "fixed", 1);
    env_reset_cache();
    for (int k = 0; k < 3; k++) {
        if (k == 2) { setenv("STRATA_CUDA_VERIFY_GRAPH", "0", 1); env_reset_cache(); }
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 1024; sp.spec_draft = k == 0 ? 0 : 7;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        REQUIRE(s != NULL, "%s", err);
        if (!s) break;
        collected *out = k == 0 ? &base : k == 1 ? &on : &off;
        out->n = 0;
        strata_generate(s, prompt, n_prompt, 300, collect, out);
        strata_stats st;
        strata_session_get_stats(s, &st);
        long cap, rep, eag;
        backend_cuda_verify_counts(s->be, &cap, &rep, &eag);
        if (k) { reps[k - 1] = rep; caps[k - 1] = cap; wins[k - 1] = st.n_windows; kept[k - 1] = st.n_accepted; }
        strata_session_free(s);
    }
    unsetenv("STRATA_CUDA_VERIFY_GRAPH");
    unsetenv("STRATA_SPEC_WINDOW");
    env_reset_cache();
    CHECKF(base.n == 300, "300 tokens (%d)", base.n);
    CHECKF(on.n == base.n && !memcmp(on.ids, base.ids, (size_t)base.n * sizeof(int32_t)), "graph verify: ids differ from --spec 0");
    CHECKF(off.n == base.n && !memcmp(off.ids, base.ids, (size_t)base.n * sizeof(int32_t)), "eager verify: ids differ from --spec 0");
    CHECKF(wins[0] > 0 && reps[0] == wins[0] && caps[0] >= 1 && caps[0] <= 14, "graph verify: %ld windows, %ld replays, %ld captures",
           wins[0], reps[0], caps[0]);
    CHECKF(reps[1] == 0 && wins[1] == wins[0] && kept[1] == kept[0], "STRATA_CUDA_VERIFY_GRAPH=0: %ld replays, windows %ld vs %ld",
           reps[1], wins[1], wins[0]);
    fprintf(stderr, "generate: 300 tokens, %ld windows (%ld drafts kept), %ld graph replays, %ld captures\n", wins[0], kept[0],
            reps[0], caps[0]);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    const char *path = "/tmp/strata-gpu-spec.gguf";
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 30; p.n_embd = 576; p.n_ff = 1536; p.n_heads = 9; p.n_kv_heads = 3; p.head_dim = 64;
    p.n_vocab = 49152; p.n_ctx = 2048; p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1;
    p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0; p.tokenizer_path = "builtin"; p.seed = 11;
    p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { fprintf(stderr, "synth: %s\n", err); CHECK(0); TEST_DONE(); }
    strata_model *mg = load(path, STRATA_DEVICE_CUDA), *mc = load(path, STRATA_DEVICE_CPU);
    CHECK(mg && mc);
    if (!mg || !mc) TEST_DONE();
    /* five prompts: a phrase repeated (input-grounded), a repeated phrase with edits, and plain */
    int32_t prompts[5][64];
    int lens[5];
    for (int k = 0; k < 5; k++) {
        lens[k] = 48;
        for (int i = 0; i < 48; i++) {
            int period = k < 3 ? 7 + 3 * k : 48;
            prompts[k][i] = (int32_t)(300 + (i % period) * 37 + k * 1001) % 49152;
            if (k == 1 && i % 11 == 5) prompts[k][i] = 999;   /* edits */
        }
    }
    const int specs[4] = { 0, 1, 4, 7 };
    double t_base = 0, t_spec[4] = { 0 };
    long acc4 = 0, win4 = 0;
    for (int k = 0; k < 5; k++) {
        collected base, other, cpu;
        strata_stats st;
        strata_stats cst;
        gen(mc, prompts[k], lens[k], 0, 64, &cpu, &cst);
        for (int si = 0; si < 4; si++) {
            double t = gen(mg, prompts[k], lens[k], specs[si], 64, si == 0 ? &base : &other, &st);
            t_spec[si] += t;
            if (si == 0) {
                t_base += t;
                CHECKF(base.n == cpu.n && !memcmp(base.ids, cpu.ids, (size_t)cpu.n * sizeof(int32_t)),
                       "prompt %d: GPU greedy ids differ from the CPU's", k);
                continue;
            }
            CHECKF(other.n == base.n && !memcmp(other.ids, base.ids, (size_t)base.n * sizeof(int32_t)),
                   "prompt %d --spec %d: ids differ from --spec 0", k, specs[si]);
            if (specs[si] == 4) { acc4 += st.n_accepted; win4 += st.n_windows; }
        }
    }
    fprintf(stderr, "gpu spec: 5 prompts x 64 tokens: time spec0 %.3f s, spec1 %.3f, spec4 %.3f, spec7 %.3f; "
            "speed-up spec4 %.2fx spec7 %.2fx; spec4 mean accepted per window %.2f\n",
            t_spec[0], t_spec[1], t_spec[2], t_spec[3], t_spec[0] / t_spec[2], t_spec[0] / t_spec[3],
            win4 ? (double)acc4 / win4 : 0.0);
    CHECK(win4 > 0);
    t_current = "verify_ids";
    test_verify_ids(mg);
    t_current = "generate_verify_graph";
    test_generate_verify_graph(mg, prompts[0], lens[0]);
    strata_model_free(mg);
    strata_model_free(mc);
    unlink(path);
    TEST_DONE();
}
