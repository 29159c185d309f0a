/* The prefix cache on the GPU (issue 18): a prefix copied from another session's KV cache
 * (strata_session_copy_prefix: the CUDA backend's kv_copy, device to device) gives the bits of a
 * cold prefill, then the same greedy continuation; and the CPU's bits. Model: synthetic. */
#include "test.h"
#include "gpu_order.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "cuda/cuda_backend.h"

static strata_model *load(const char *path, strata_device dev) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = dev;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load: %s\n", err); return NULL; }
    return m;
}
static strata_session *session(strata_model *m) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 256;
    char err[512];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    const char *path = "/tmp/strata-gpu-prefix.gguf";
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 4; p.n_vocab = 4000; p.n_embd = 512; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64;
    p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.seed = 7; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    REQUIRE(synth_write(&p, path, err, sizeof err) == 0, "synth: %s", err);
    strata_model *mg = load(path, STRATA_DEVICE_CUDA), *mc = load(path, STRATA_DEVICE_CPU);
    REQUIRE(mg && mc, "load");
    const int V = strata_n_vocab(mg);
    int32_t pr[60];
    for (int i = 0; i < 60; i++) pr[i] = (int32_t)(3 + (i * 613 + 17) % (V - 3));
    strata_session *a = session(mg), *b = session(mg), *c = session(mg), *cc = session(mc);
    REQUIRE(a && b && c && cc, "sessions");
    int32_t own[5] = { 11, 22, 33, 44, 55 };
    /* a: 40 prompt tokens (a wide pass) and 5 of its own; c (GPU) and cc (CPU): all 60 cold */
    CHECK(strata_session_eval(a, pr, 40) == 0 && strata_session_eval(a, own, 5) == 0);
    CHECK(strata_session_eval(c, pr, 60) == 0 && strata_session_eval(cc, pr, 60) == 0);
    CHECK(strata_session_eval(b, own, 5) == 0);   /* b holds something else first */
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, 40), 0);
    CHECK_EQ_INT(strata_session_pos(b), 40);
    CHECK(strata_session_eval(b, pr + 40, 20) == 0);
    CHECKF(!memcmp(strata_session_logits(b), strata_session_logits(c), (size_t)V * sizeof(float)),
           "GPU: logits after a copied prefix differ from a cold prefill");
    CHECKF(!memcmp(strata_session_logits(b), strata_session_logits(cc), (size_t)V * sizeof(float)),
           "GPU logits after a copied prefix differ from the CPU's cold prefill");
    int same = 1;
    for (int i = 0; i < 8; i++) {
        int32_t tb = strata_session_sample(b), tc = strata_session_sample(cc);
        if (tb != tc) same = 0;
        if (strata_session_eval(b, &tb, 1) || strata_session_eval(cc, &tc, 1)) same = 0;
        const float *lb = strata_session_logits(b), *lc = strata_session_logits(cc);
        if (!lb || !lc || memcmp(lb, lc, (size_t)V * sizeof(float))) same = 0;
    }
    CHECKF(same, "continuation after a copied prefix differs from the CPU's");
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, 46), -1);   /* beyond the source's position */
    strata_session_free(a); strata_session_free(b); strata_session_free(c); strata_session_free(cc);
    strata_model_free(mg); strata_model_free(mc);
    TEST_DONE();
}
