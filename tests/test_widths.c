/* CPU: the same bits whatever the pass width (tests/widths_common.h): prompts of 600 tokens in
 * passes of 1, 7, 8, 9, 64 and 512 columns on a small synthetic llama (Q4_1 attention, Q4_K
 * FFN; Q8_0 / Q5_K) and a small Mixture-of-Experts model (its experts in slices of 8). */
#include "test.h"
#include "widths_common.h"

static void widths(const char *name, int moe, int ta, int tf) {
    char path[256], err[512];
    snprintf(path, sizeof path, "/tmp/strata-widths-%d-%s.gguf", (int)getpid(), name);
    REQUIRE(wid_synth(path, moe, ta, tf, err, sizeof err) == 0, "synth: %s", err);
    strata_model *m = wid_load(path, STRATA_DEVICE_CPU);
    REQUIRE(m != NULL, "load");
    const int V = strata_n_vocab(m);
    size_t n = (size_t)(1 + WID_STEPS) * V;
    float *ref = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
    CHECK(wid_run(m, wid_widths[0], ref) == 0);
    for (int i = 1; i < WID_NW; i++) {
        /* quick mode (the sanitizer run): passes of 1, 9 and 512 columns only */
        if (t_quick() && wid_widths[i] != 9 && wid_widths[i] != 512) continue;
        memset(got, 0, n * sizeof(float));
        CHECKF(wid_run(m, wid_widths[i], got) == 0, "%s: width %d failed", name, wid_widths[i]);
        CHECKF(!memcmp(ref, got, n * sizeof(float)), "%s: passes of %d columns give other logits than passes of 1",
               name, wid_widths[i]);
    }
    /* the values are real: finite, not constant */
    int finite = 1;
    for (size_t j = 0; j < n; j++) finite &= ref[j] == ref[j] && ref[j] - ref[j] == 0.0f;
    CHECK(finite && ref[0] != ref[1]);
    free(ref); free(got);
    strata_model_free(m);
    unlink(path);
}

/* The last layer's FFN runs on the columns that get logits alone (backend keep_cols): the
 * logits of columns from .. T-1 are those of a pass that computes every column's, and a pass
 * that needs none leaves the same KV rows for the next step. */
static void last_ffn_pruned(const char *name, int moe, int ta, int tf) {
    char path[256], err[512];
    snprintf(path, sizeof path, "/tmp/strata-prune-%d-%s.gguf", (int)getpid(), name);
    REQUIRE(wid_synth(path, moe, ta, tf, err, sizeof err) == 0, "synth: %s", err);
    strata_model *m = wid_load(path, STRATA_DEVICE_CPU);
    REQUIRE(m != NULL, "load");
    const int V = strata_n_vocab(m), T = 40;
    int32_t ids[40], next = 5;
    for (int i = 0; i < T; i++) ids[i] = (int32_t)(3 + (i * 7919) % (V - 3));
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 256;
    strata_session *a = strata_session_new(m, &sp, err, sizeof err), *b = strata_session_new(m, &sp, err, sizeof err);
    REQUIRE(a && b, "sessions");
    float *all = malloc(sizeof(float) * (size_t)T * V), *step = malloc(sizeof(float) * (size_t)V);
    CHECK(session_forward(a, ids, T, 0) == 0);                  /* every column's logits */
    memcpy(all, session_logits(a), sizeof(float) * (size_t)T * V);
    for (int from = 1; from < T; from += 13) {
        strata_session_reset(b);
        CHECK(session_forward(b, ids, T, from) == 0);
        CHECKF(!memcmp(all + (size_t)from * V, session_logits(b), sizeof(float) * (size_t)(T - from) * V),
               "%s: the logits of columns %d..%d differ when only they are asked for", name, from, T - 1);
    }
    CHECK(session_forward(a, &next, 1, 0) == 0);
    memcpy(step, session_logits(a), sizeof(float) * (size_t)V);
    strata_session_reset(b);
    CHECK(session_forward(b, ids, T, T) == 0);                  /* no logits */
    {   /* ...but every column's layers: a caller may run the head itself (CUDA's verify graph) */
        fwd_seq sq = { b->be->kv, 0, T };
        fwd_batch fb = { T, 1, &sq };
        CHECK(b->be->ops->head(b->be, &fb, 0) == 0);
        CHECKF(!memcmp(all, b->be->ops->logits(b->be), sizeof(float) * (size_t)T * V),
               "%s: the head after a pass without logits (from = T) differs", name);
    }
    CHECK(session_forward(b, &next, 1, 0) == 0);
    CHECKF(!memcmp(step, session_logits(b), sizeof(float) * (size_t)V), "%s: the step after a pass without logits", name);
    CHECK(all[0] != all[1] && step[0] == step[0]);
    free(all); free(step);
    strata_session_free(a); strata_session_free(b);
    strata_model_free(m);
    unlink(path);
}

int main(void) {
    last_ffn_pruned("q41-q4k", 0, TYPE_Q4_1, TYPE_Q4_K);
    last_ffn_pruned("moe", 1, TYPE_Q4_K, TYPE_Q4_0);
    widths("q41-q4k", 0, TYPE_Q4_1, TYPE_Q4_K);
    if (t_quick()) fprintf(stderr, "test_widths: quick mode: widths 1, 9, 512; the Q8_0/Q5_K model left out\n");
    else widths("q80-q5k", 0, TYPE_Q8_0, TYPE_Q5_K);
    widths("moe", 1, TYPE_Q4_K, TYPE_Q4_0);
    TEST_DONE();
}
