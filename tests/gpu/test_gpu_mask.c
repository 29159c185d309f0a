/* Greedy decoding under a token mask with the step kept on the device (issue 22, the engine's
 * STRATA_MASK_DEVICE: the forward graph, then an argmax that skips the tokens the mask forbids,
 * the bits computed on the host while the graph runs): the same ids as the host path (an eager
 * pass, the logits on the host, masked there), every id allowed by its step's mask, and the
 * counters say which way each step went. The mask changes every step: a quarter of the
 * vocabulary, one forced token, only the upper half. */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "model/synth.h"
#include "quant/blocks.h"
#include "cuda/cuda_backend.h"

typedef struct {
    const strata_model *m;
    int V, k;                    /* k: tokens taken so far (the mask's state) */
    uint8_t *bits;
    int32_t ids[128];
    int n, bad;
} mask_run;

static int allowed(const mask_run *r, int k, int i) {
    if (strata_token_is_eog(r->m, i)) return 0;
    if (k % 16 == 5) return i == (k * 37 + 11) % r->V;
    if (k % 16 == 9) return i >= r->V / 2 && i % 3 == 0;
    uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)k * 40503u;
    return (h >> 7) % 4 == 0;
}

static const uint8_t *mask_bits(void *u) {
    mask_run *r = u;
    memset(r->bits, 0, ((size_t)r->V + 7) / 8);
    for (int i = 0; i < r->V; i++) if (allowed(r, r->k, i)) r->bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    return r->bits;
}

static void mask_logits(float *logits, int n, void *u) {
    const uint8_t *b = mask_bits(u);
    for (int i = 0; i < n; i++) if (!(b[i >> 3] >> (i & 7) & 1)) logits[i] = -INFINITY;
}

static int on_token(int32_t id, void *u) {
    mask_run *r = u;
    if (!allowed(r, r->k, id)) r->bad++;
    if (r->n < 128) r->ids[r->n++] = id;
    r->k++;
    return 0;
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    const char *path = "/tmp/strata-gpu-mask.gguf";
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 4; p.n_embd = 512; p.n_ff = 1024; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64;
    p.n_vocab = 5000; p.n_ctx = 512;
    p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.seed = 11;
    p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { fprintf(stderr, "synth: %s\n", err); CHECK(0); TEST_DONE(); }
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CUDA;
    strata_model *m = NULL;
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load: %s\n", err); CHECK(0); unlink(path); TEST_DONE(); }
    enum { N = 96 };
    const int modes[3] = { 0, STRATA_MASK_DEVICE, STRATA_MASK_DEVICE | STRATA_MASK_OVERLAP };
    mask_run runs[3];
    int32_t prompt[8];
    for (int i = 0; i < 8; i++) prompt[i] = 100 + 313 * i;
    for (int r = 0; r < 3; r++) {
        mask_run *mr = &runs[r];
        memset(mr, 0, sizeof *mr);
        mr->m = m;
        mr->V = strata_n_vocab(m);
        mr->bits = calloc(((size_t)mr->V + 7) / 8, 1);
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 256;
        sp.sampler.temperature = 0;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        CHECK(s && mr->bits);
        if (!s || !mr->bits) continue;
        strata_session_set_logits_mask(s, mask_logits, mr);
        strata_session_set_logits_mask_prepare(s, mask_bits, modes[r]);
        int n = strata_generate(s, prompt, 8, N, on_token, mr);
        strata_stats st;
        strata_session_get_stats(s, &st);
        CHECK_EQ_INT(n, N);
        CHECK_EQ_INT(mr->bad, 0);
        CHECK_EQ_INT((int)st.n_mask_device, modes[r] & STRATA_MASK_DEVICE ? N - 1 : 0);
        CHECK_EQ_INT((int)st.n_mask_overlap, 0);
        strata_session_free(s);
    }
    for (int r = 1; r < 3; r++) {
        CHECK_EQ_INT(runs[r].n, runs[0].n);
        int first = -1;
        for (int i = 0; i < runs[0].n && i < runs[r].n; i++) if (runs[r].ids[i] != runs[0].ids[i]) { first = i; break; }
        CHECKF(first < 0, "mode %d: token %d differs from the host path (%d vs %d)", modes[r], first,
               first < 0 ? 0 : runs[r].ids[first], first < 0 ? 0 : runs[0].ids[first]);
    }
    for (int r = 0; r < 3; r++) free(runs[r].bits);
    strata_model_free(m);
    unlink(path);
    TEST_DONE();
}
