/* Speculative decoding on CUDA: greedy token ids identical with --spec 0, 1, 4 and 7 on a
 * synthetic SmolLM2-shape model (and equal to the CPU's), on prompts that repeat themselves so
 * the suffix drafter drafts; prints decode tok/s per setting (the H200 speed-up). */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "core/util.h"
#include "cuda/cuda_backend.h"
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

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
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
    strata_model_free(mg);
    strata_model_free(mc);
    unlink(path);
    TEST_DONE();
}
