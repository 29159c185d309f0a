/* Speculative decoding: the suffix drafter against a brute-force longest-match reference,
 * the sampled acceptance rule checked statistically, KV rollback bit-identical, and greedy
 * ids identical with --spec 0, 1, 4, 7 on SmolLM2 (default path and reference mode). */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "spec/spec.h"
#include "spec/suffix.h"
#include "engine/engine.h"

/* ---- drafter vs brute force ------------------------------------------------------------ */
/* Longest suffix of s[0..n) that also ends earlier; first (earliest-ending) occurrence. */
static int brute_match(const int32_t *s, int n, int *first_end) {
    *first_end = -1;
    for (int len = n - 1; len >= 1; len--) {
        for (int e = len - 1; e < n - 1; e++) {          /* occurrence ending at e < n-1 */
            if (!memcmp(s + e - len + 1, s + n - len, (size_t)len * sizeof(int32_t))) { *first_end = e; return len; }
        }
    }
    return 0;
}

static uint64_t rng_state = 0x1234567;
static uint32_t rnd(void) { rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull; return (uint32_t)(rng_state >> 33); }

static void test_suffix_vs_brute(void) {
    int mismatches = 0, checks = 0, drafts_ok = 1;
    for (int trial = 0; trial < 200; trial++) {
        int alpha = 2 + (int)(rnd() % 5), n = 1 + (int)(rnd() % 120);
        int32_t s[128];
        suffix_drafter *d = suffix_drafter_new();
        for (int i = 0; i < n; i++) {
            s[i] = (int32_t)(rnd() % (uint32_t)alpha) * 1000 + 7;   /* sparse ids */
            suffix_drafter_push(d, s[i]);
            int fe_b, fe_s;
            int lb = brute_match(s, i + 1, &fe_b), ls = suffix_drafter_match(d, &fe_s);
            checks++;
            if (lb != ls || (lb && fe_b != fe_s)) {
                if (mismatches++ < 5) fprintf(stderr, "trial %d len %d: brute (%d, %d) automaton (%d, %d)\n", trial, i + 1, lb, fe_b, ls, fe_s);
            }
            int32_t out[8];
            int nd = suffix_drafter_draft(d, 1, 7, out);
            for (int k = 0; k < nd; k++)
                if (out[k] != s[fe_b + 1 + k]) drafts_ok = 0;
            if (lb == 0 && nd != 0) drafts_ok = 0;
        }
        suffix_drafter_free(d);
    }
    CHECKF(mismatches == 0, "%d of %d prefixes disagree", mismatches, checks);
    CHECK(drafts_ok);
    /* min_match: a single-token match proposes nothing at min_match 2 */
    suffix_drafter *d = suffix_drafter_new();
    int32_t seq[] = { 5, 6, 7, 9, 5 };
    for (int i = 0; i < 5; i++) suffix_drafter_push(d, seq[i]);
    int32_t out[8];
    CHECK_EQ_INT(suffix_drafter_draft(d, 2, 7, out), 0);
    CHECK_EQ_INT(suffix_drafter_draft(d, 1, 7, out), 4);
    CHECK_EQ_INT(out[0], 6);
    CHECK_EQ_INT(out[3], 5);
    suffix_drafter_free(d);
}

/* ---- sampled acceptance: output distribution equals p ------------------------------------ */
static double urand(void) { return (double)(rnd() >> 7) / (double)(1u << 24); }   /* rnd() has 31 bits */

static void test_acceptance_statistics(void) {
    enum { V = 6, N = 200000 };
    const float p[V] = { 0.05f, 0.30f, 0.10f, 0.25f, 0.20f, 0.10f };
    const float q[V] = { 0.40f, 0.10f, 0.10f, 0.10f, 0.20f, 0.10f };
    /* deterministic drafter proposing token 0 (q one-hot), and a draft distribution q */
    for (int mode = 0; mode < 2; mode++) {
        long count[V] = { 0 };
        long accepted = 0;
        for (int i = 0; i < N; i++) {
            int32_t d = mode == 0 ? 0 : spec_draw(q, V, urand());
            int32_t rep;
            int ok = spec_accept_sampled(p, mode == 0 ? NULL : q, V, d, urand(), urand(), &rep);
            accepted += ok;
            count[ok ? d : rep]++;
        }
        double chi2 = 0;
        for (int k = 0; k < V; k++) {
            double e = (double)N * p[k];
            chi2 += (count[k] - e) * (count[k] - e) / e;
        }
        /* 5 degrees of freedom: P(chi2 > 20.5) = 0.001 */
        CHECKF(chi2 < 20.5, "mode %d chi2 %.2f", mode, chi2);
        /* acceptance rate = sum min(p, q) */
        double expect = 0;
        for (int k = 0; k < V; k++) expect += mode == 0 ? (k == 0 ? p[0] : 0) : (p[k] < q[k] ? p[k] : q[k]);
        double rate = (double)accepted / N;
        CHECKF(fabs(rate - expect) < 0.005, "mode %d acceptance %.4f expected %.4f", mode, rate, expect);
    }
}

/* ---- model-level tests --------------------------------------------------------------- */
typedef struct { int32_t ids[256]; int n; } collected;
static int collect(int32_t id, void *u) { collected *c = u; if (c->n < 256) c->ids[c->n++] = id; return 0; }

static int gen_ids(strata_model *m, const char *prompt, int spec, int n_gen, collected *out, strata_stats *st) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 512;
    sp.spec_draft = spec;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) return -1;
    int32_t ids[512];
    int n = strata_tokenize(m, prompt, strlen(prompt), 1, 1, ids, 512);
    out->n = 0;
    int r = strata_generate(s, ids, n, n_gen, collect, out);
    if (st) strata_session_get_stats(s, st);
    strata_session_free(s);
    return r;
}

static const char *prompts[] = {
    /* input-grounded: code to repeat with a few edits */
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    /* a passage to quote from */
    "<|im_start|>user\nThe quick brown fox jumps over the lazy dog near the river bank every morning.\n"
    "Repeat the sentence above exactly.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a small village,",
    "<|im_start|>user\nList the days of the week, one per line.<|im_end|>\n<|im_start|>assistant\n",
};

static void test_greedy_identical(strata_model *m, const char *label, int n_gen) {
    long drafted = 0, accepted = 0;
    /* quick mode (tests/test.h): the two input-grounded prompts, where drafts are accepted */
    size_t n_prompts = t_quick() ? 2 : sizeof prompts / sizeof prompts[0];
    for (size_t p = 0; p < n_prompts; p++) {
        collected base, other;
        CHECK(gen_ids(m, prompts[p], 0, n_gen, &base, NULL) > 0);
        const int specs[] = { 1, 4, 7 };
        for (int k = 0; k < 3; k++) {
            strata_stats st;
            gen_ids(m, prompts[p], specs[k], n_gen, &other, &st);
            drafted += st.n_drafted; accepted += st.n_accepted;
            int same = other.n == base.n && !memcmp(other.ids, base.ids, (size_t)base.n * sizeof(int32_t));
            CHECKF(same, "%s prompt %zu --spec %d: ids differ (n %d vs %d)", label, p, specs[k], other.n, base.n);
        }
    }
    fprintf(stderr, "%s: drafted %ld accepted %ld\n", label, drafted, accepted);
    CHECK(accepted > 0);   /* the input-grounded prompts must actually exercise verification */
}

/* After a window with rejected drafts is rolled back, the KV cache equals one that never saw them. */
static void test_rollback_bits(strata_model *m) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 64;
    strata_session *a = strata_session_new(m, &sp, err, sizeof err), *b = strata_session_new(m, &sp, err, sizeof err);
    int32_t prompt[] = { 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47 };
    strata_session_eval(a, prompt, 10);
    strata_session_eval(b, prompt, 10);
    int32_t win[5] = { 2, 198, 1, 520, 9531 };     /* token 2 kept, the rest "rejected" */
    CHECK(session_forward(a, win, 5, 0) == 0);
    CHECK(strata_session_rewind(a, 11) == 0);
    strata_session_eval(b, win, 1);
    int32_t next[2] = { 33, 44 };
    strata_session_eval(a, next, 2);
    strata_session_eval(b, next, 2);
    CHECK_EQ_INT(strata_session_pos(a), strata_session_pos(b));
    int same = 1;
    for (int l = 0; l < m->hp.n_layers; l++)
        for (int which = 0; which < 2; which++) {
            size_t bpp;
            const void *ka = backend_cpu_kv_layer(a->be, l, which, &bpp), *kb = backend_cpu_kv_layer(b->be, l, which, &bpp);
            if (memcmp(ka, kb, bpp * (size_t)strata_session_pos(a))) same = 0;
        }
    CHECK(same);
    CHECK(!memcmp(strata_session_logits(a), strata_session_logits(b), (size_t)strata_n_vocab(m) * sizeof(float)));
    strata_session_free(a);
    strata_session_free(b);
}

/* A draft model (here the model itself, the extreme of a good drafter): ids identical to
 * --spec 0, nearly every draft accepted; a vocabulary mismatch is refused. */
static void test_draft_model(strata_model *m) {
    const char *prompt = prompts[2];
    collected base, other;
    CHECK(gen_ids(m, prompt, 0, 24, &base, NULL) > 0);
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 512;
    sp.spec_draft = 4;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    CHECK(s != NULL);
    if (!s) return;
    CHECK(strata_session_set_draft_model(s, m, err, sizeof err) == 0);
    int32_t ids[512];
    int n = strata_tokenize(m, prompt, strlen(prompt), 1, 1, ids, 512);
    other.n = 0;
    strata_generate(s, ids, n, 24, collect, &other);
    strata_stats st;
    strata_session_get_stats(s, &st);
    CHECKF(other.n == base.n && !memcmp(other.ids, base.ids, (size_t)base.n * sizeof(int32_t)),
           "draft-model ids differ from --spec 0");
    CHECKF(st.n_drafted > 0 && st.n_accepted * 10 >= st.n_drafted * 9, "drafted %ld accepted %ld", st.n_drafted,
           st.n_accepted);
    fprintf(stderr, "draft model (self): drafted %ld accepted %ld windows %ld\n", st.n_drafted, st.n_accepted, st.n_windows);
    strata_session_free(s);
}

int main(void) {
    RUN(test_suffix_vs_brute);
    RUN(test_acceptance_statistics);
    const char *path = getenv("STRATA_MODEL");
    if (!path || access(path, R_OK)) {
        SKIP("model", "model tests: STRATA_MODEL not set or unreadable");
        TEST_DONE();
    }
    if (t_quick()) fprintf(stderr, "quick mode (STRATA_TEST_QUICK): greedy_identical on prompts 0-1 of %zu\n",
                           sizeof prompts / sizeof prompts[0]);
    for (int exact = 0; exact < 2; exact++) {
        strata_model_params mp = strata_model_default_params();
        mp.path = path;
        mp.exact = exact;
        strata_model *m;
        char err[256];
        if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); CHECK(0); break; }
        t_current = exact ? "greedy_identical_exact" : "greedy_identical_default";
        test_greedy_identical(m, t_current, exact ? 24 : 40);
        if (!exact) { t_current = "rollback_bits"; test_rollback_bits(m); }
        if (!exact) { t_current = "draft_model"; test_draft_model(m); }
        strata_model_free(m);
    }
    TEST_DONE();
}
