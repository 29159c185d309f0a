/* Engine API: several sessions stepped together in one pass (strata_sessions_step) give the
 * same logits bits as each session stepped alone; rewind + re-eval reproduces the bits, and so
 * does a prefix copied from another session (strata_session_copy_prefix); the
 * speculative step (strata_sessions_step_spec) gives the ids plain steps give. */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "model/backend.h"   /* FWD_MAX_LOGITS: the columns of one pass of strata_sessions_step_spec */
#include "grammar/grammar_model.h"
#include "small_model.h"

/* Quick mode (tests/test.h: the sanitizer run, where this binary was the largest, 521 s of CPU,
 * 400 of them in the two prefill parts): test_step_prefill and test_step_prefill_multi run on
 * tests/small_model.h's synthetic llama instead of SmolLM2, with every check. What they test is
 * the pass geometry (FWD_MAX_T = 512 columns, FWD_MAX_LOGITS = 64 logits rows: constants of the
 * engine, not of the model) and that each session gets its solo bits. `make test` runs them on
 * SmolLM2. */
static int quick;

static strata_session *new_session(strata_model *m) {
    char err[256];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 128;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "%s\n", err);
    return s;
}

static void test_batched_step(strata_model *m) {
    const int32_t prompts[5][6] = {
        { 1, 4093, 198, 1780, 314, 260 }, { 504, 3458, 282, 4649, 314, 253 }, { 33, 44, 55, 66, 77, 88 },
        { 1, 9690, 198, 2683, 359, 253 }, { 19161, 253, 1890, 1977, 563, 253 },
    };
    const int lens[5] = { 6, 3, 5, 2, 6 };   /* different positions per session */
    const int V = strata_n_vocab(m);
    strata_session *solo[5], *batch[5];
    for (int i = 0; i < 5; i++) {
        solo[i] = new_session(m); batch[i] = new_session(m);
        CHECK(solo[i] && batch[i]);
        if (!solo[i] || !batch[i]) return;
        strata_session_eval(solo[i], prompts[i], lens[i]);
        strata_session_eval(batch[i], prompts[i], lens[i]);
    }
    int same = 1;
    for (int step = 0; step < 4; step++) {
        int32_t next[5];
        for (int i = 0; i < 5; i++) {
            const float *l = strata_session_logits(solo[i]);
            int32_t best = 0;
            for (int v = 1; v < V; v++) if (l[v] > l[best]) best = v;
            next[i] = best;
            strata_session_eval(solo[i], &next[i], 1);
        }
        CHECK(strata_sessions_step(batch, next, 5) == 0);
        for (int i = 0; i < 5; i++) {
            CHECK_EQ_INT(strata_session_pos(batch[i]), strata_session_pos(solo[i]));
            if (memcmp(strata_session_logits(batch[i]), strata_session_logits(solo[i]), (size_t)V * sizeof(float))) same = 0;
        }
    }
    CHECKF(same, "batched step logits differ from solo steps");
    /* the same session twice in one step is refused, and nothing changes */
    strata_session *dup[2] = { batch[0], batch[0] };
    int32_t two[2] = { 5, 6 };
    int pos = strata_session_pos(batch[0]);
    CHECK(strata_sessions_step(dup, two, 2) == -1);
    CHECK_EQ_INT(strata_session_pos(batch[0]), pos);
    int32_t bad = -3;
    CHECK(strata_sessions_step(batch, &bad, 1) == -1);
    for (int i = 0; i < 5; i++) { strata_session_free(solo[i]); strata_session_free(batch[i]); }
}

static void test_rewind_reeval(strata_model *m) {
    const int V = strata_n_vocab(m);
    strata_session *s = new_session(m);
    if (!s) { CHECK(0); return; }
    int32_t ids[10] = { 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47 };
    CHECK(strata_session_eval(s, ids, 10) == 0);
    float *first = malloc((size_t)V * sizeof(float));
    memcpy(first, strata_session_logits(s), (size_t)V * sizeof(float));
    CHECK(strata_session_rewind(s, 4) == 0);
    CHECK(strata_session_logits(s) == NULL);
    CHECK(strata_session_eval(s, ids + 4, 6) == 0);
    CHECK(!memcmp(first, strata_session_logits(s), (size_t)V * sizeof(float)));
    CHECK(strata_session_rewind(s, 11) == -1);
    CHECK(strata_session_rewind(s, -1) == -1);
    /* token by token equals one eval of the whole prompt */
    strata_session_reset(s);
    for (int i = 0; i < 10; i++) strata_session_eval(s, &ids[i], 1);
    CHECK(!memcmp(first, strata_session_logits(s), (size_t)V * sizeof(float)));
    free(first);
    strata_session_free(s);
}

/* A prefix copied from another session's KV cache (the server's cross-slot prefix cache) gives
 * the bits of a cold prefill: the rest of the prompt and the tokens after it. */
static void test_copy_prefix(strata_model *m) {
    const int V = strata_n_vocab(m);
    const int32_t p[20] = { 1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 504, 3458, 282, 4649, 314, 253,
                            33, 44, 55, 66 };
    strata_session *a = new_session(m), *b = new_session(m), *c = new_session(m);
    if (!a || !b || !c) { CHECK(0); goto out; }
    /* a: the first 14 tokens and 3 of its own after them; c: the whole prompt cold */
    int32_t own[3] = { 77, 88, 99 };
    CHECK(strata_session_eval(a, p, 14) == 0 && strata_session_eval(a, own, 3) == 0);
    CHECK(strata_session_eval(c, p, 20) == 0);
    CHECK(strata_session_eval(b, own, 3) == 0);   /* b holds something else first */
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, 14), 0);
    CHECK_EQ_INT(strata_session_pos(b), 14);
    CHECK(strata_session_logits(b) == NULL);
    CHECK(!memcmp(strata_session_history(b), p, 14 * sizeof(int32_t)));
    CHECK(strata_session_eval(b, p + 14, 6) == 0);
    CHECKF(!memcmp(strata_session_logits(b), strata_session_logits(c), (size_t)V * sizeof(float)),
           "logits after a copied prefix differ from a cold prefill");
    int same = 1;
    for (int i = 0; i < 8; i++) {   /* greedy continuation: the same ids and logits */
        int32_t tb = strata_session_sample(b), tc = strata_session_sample(c);
        if (tb != tc) same = 0;
        strata_session_eval(b, &tb, 1);
        strata_session_eval(c, &tc, 1);
        if (memcmp(strata_session_logits(b), strata_session_logits(c), (size_t)V * sizeof(float))) same = 0;
    }
    CHECKF(same, "continuation after a copied prefix differs");
    /* refused, and the destination unchanged: beyond the source's position, itself, negative */
    int pos = strata_session_pos(b);
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, 18), -1);
    CHECK_EQ_INT(strata_session_copy_prefix(b, b, 4), -1);
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, -1), -1);
    CHECK_EQ_INT(strata_session_pos(b), pos);
    /* an int8 cache takes no f16 rows */
    {
        char err[256];
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 128;
        sp.kv_type = STRATA_KV_INT8;
        strata_session *q = strata_session_new(m, &sp, err, sizeof err);
        if (q) {
            CHECK_EQ_INT(strata_session_copy_prefix(q, a, 4), -1);
            CHECK_EQ_INT(strata_session_pos(q), 0);
            strata_session_free(q);
        }
    }
    /* copying 0 positions is a reset */
    CHECK_EQ_INT(strata_session_copy_prefix(b, a, 0), 0);
    CHECK_EQ_INT(strata_session_pos(b), 0);
out:
    strata_session_free(a); strata_session_free(b); strata_session_free(c);
}

/* A prompt read in chunks inside other sessions' decode passes (the server's per-step budget):
 * every session's logits are those it gets alone. */
static void test_step_prefill(strata_model *m) {
    const int V = strata_n_vocab(m);
    enum { PN = 532 };
    static int32_t prompt[PN];
    for (int i = 0; i < PN; i++) prompt[i] = 300 + 37 * i;
    char err[256];
    strata_session_params lp = strata_session_default_params();
    lp.n_ctx = 640;
    const int32_t starts[3][3] = { { 1, 4093, 198 }, { 504, 3458, 282 }, { 33, 44, 55 } };
    strata_session *p = strata_session_new(m, &lp, err, sizeof err), *ref = strata_session_new(m, &lp, err, sizeof err);
    strata_session *d[3], *solo[3];
    int ok = p && ref;
    for (int i = 0; i < 3; i++) {
        d[i] = new_session(m); solo[i] = new_session(m);
        ok = ok && d[i] && solo[i];
        if (ok) { strata_session_eval(d[i], starts[i], 3); strata_session_eval(solo[i], starts[i], 3); }
    }
    if (!ok) { CHECK(0); goto out; }
    CHECK(strata_session_eval(ref, prompt, PN) == 0);
    /* chunks of 7 (one pass with one decoding session), 520 (a full pass of 509 + 3, then 11
     * alone: no head), then 5 with the prompt's logits */
    const int chunk[3] = { 7, 520, 5 }, nd[3] = { 1, 3, 2 };
    int at = 0, same = 1;
    for (int c = 0; c < 3; c++) {
        int32_t next[3];
        for (int i = 0; i < nd[c]; i++) {
            next[i] = strata_session_sample(solo[i]);
            strata_session_eval(solo[i], &next[i], 1);
        }
        CHECK(strata_sessions_step_prefill(d, next, nd[c], p, prompt + at, chunk[c], at + chunk[c] == PN) == 0);
        at += chunk[c];
        CHECK_EQ_INT(strata_session_pos(p), at);
        CHECK((strata_session_logits(p) != NULL) == (at == PN));
        for (int i = 0; i < nd[c]; i++)
            if (strata_session_pos(d[i]) != strata_session_pos(solo[i]) ||
                memcmp(strata_session_logits(d[i]), strata_session_logits(solo[i]), (size_t)V * sizeof(float)))
                same = 0;
    }
    CHECKF(same, "decoding sessions' logits differ beside a prompt chunk");
    CHECKF(!memcmp(strata_session_logits(p), strata_session_logits(ref), (size_t)V * sizeof(float)),
           "a prompt read in chunks beside decoding sessions gives other logits than read alone");
    CHECK(!memcmp(strata_session_history(p), prompt, sizeof prompt));
    /* refused, nothing moved: the prompt session among the decoding ones, a bad id, no tokens */
    int32_t one = 5, bad = -1;
    int pos = strata_session_pos(d[0]);
    strata_session *self[1] = { p };
    CHECK(strata_sessions_step_prefill(self, &one, 1, p, prompt, 2, 0) == -1);
    CHECK(strata_sessions_step_prefill(d, &one, 1, p, &bad, 1, 0) == -1);
    CHECK(strata_sessions_step_prefill(d, &one, 1, p, prompt, 0, 0) == -1);
    CHECK_EQ_INT(strata_session_pos(d[0]), pos);
    CHECK_EQ_INT(strata_session_pos(p), PN);
out:
    strata_session_free(p); strata_session_free(ref);
    for (int i = 0; i < 3; i++) { strata_session_free(d[i]); strata_session_free(solo[i]); }
}

/* Several prompts' chunks in the same decode passes (strata_sessions_step_prefill_multi): two
 * prompts ending in one pass (two logits rows ahead of the decoding ones), a chunk that spills
 * into a second pass, a prompt ending alone; every session's logits are those it gets alone. */
static void test_step_prefill_multi(strata_model *m) {
    const int V = strata_n_vocab(m);
    enum { NP = 3, MAXP = 700 };
    static int32_t prompt[NP][MAXP];
    const int len[NP] = { 9, 40, 700 };
    for (int j = 0; j < NP; j++)
        for (int i = 0; i < len[j]; i++) prompt[j][i] = 200 + 53 * i + 11 * j;
    char err[256];
    strata_session_params lp = strata_session_default_params();
    lp.n_ctx = 768;
    strata_session *p[NP], *ref[NP], *d[2], *solo[2];
    const int32_t starts[2][3] = { { 1, 4093, 198 }, { 504, 3458, 282 } };
    int ok = 1;
    for (int j = 0; j < NP; j++) {
        p[j] = strata_session_new(m, &lp, err, sizeof err);
        ref[j] = strata_session_new(m, &lp, err, sizeof err);
        ok = ok && p[j] && ref[j] && strata_session_eval(ref[j], prompt[j], len[j]) == 0;
    }
    for (int i = 0; i < 2; i++) {
        d[i] = new_session(m); solo[i] = new_session(m);
        ok = ok && d[i] && solo[i];
        if (ok) { strata_session_eval(d[i], starts[i], 3); strata_session_eval(solo[i], starts[i], 3); }
    }
    if (!ok) { CHECK(0); goto out; }
    /* step 1: prompts 0 and 1 whole (both end: two logits rows) and 100 of prompt 2; step 2:
     * 560 of prompt 2 (510 columns beside the 2 decoding ones, then 50 alone); step 3: its last 40 */
    const int chunks[3][NP] = { { 9, 40, 100 }, { 0, 0, 560 }, { 0, 0, 40 } };
    int at[NP] = { 0, 0, 0 }, same = 1;
    for (int st = 0; st < 3; st++) {
        strata_session *ps[NP];
        const int32_t *pids[NP];
        int pns[NP], want[NP], np = 0;
        for (int j = 0; j < NP; j++) {
            if (!chunks[st][j]) continue;
            ps[np] = p[j]; pids[np] = prompt[j] + at[j]; pns[np] = chunks[st][j];
            want[np] = at[j] + chunks[st][j] == len[j];
            np++;
        }
        int32_t next[2];
        for (int i = 0; i < 2; i++) {
            next[i] = strata_session_sample(solo[i]);
            strata_session_eval(solo[i], &next[i], 1);
        }
        CHECK(strata_sessions_step_prefill_multi(d, next, 2, ps, pids, pns, want, np) == 0);
        for (int j = 0; j < NP; j++) {
            at[j] += chunks[st][j];
            CHECK_EQ_INT(strata_session_pos(p[j]), at[j]);
        }
        for (int i = 0; i < 2; i++)
            if (strata_session_pos(d[i]) != strata_session_pos(solo[i]) ||
                memcmp(strata_session_logits(d[i]), strata_session_logits(solo[i]), (size_t)V * sizeof(float)))
                same = 0;
    }
    CHECKF(same, "decoding sessions' logits differ beside several prompts' chunks");
    for (int j = 0; j < NP; j++) {
        CHECKF(strata_session_logits(p[j]) &&
               !memcmp(strata_session_logits(p[j]), strata_session_logits(ref[j]), (size_t)V * sizeof(float)),
               "prompt %d read beside other prompts and decoding sessions gives other logits than read alone", j);
        CHECK(!memcmp(strata_session_history(p[j]), prompt[j], (size_t)len[j] * sizeof(int32_t)));
    }
    /* 63 decoding sessions leave one logits row in the first pass: of three prompts ending in the
     * same call, the first ends there, the others go in without their last token, which ends them
     * in a second pass (with nothing else decoding); all logits still those of each alone */
    {
        enum { ND = 63 };
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 32;
        strata_session *dd[ND], *ds[ND], *q[3], *qr[3];
        int32_t nx[ND];
        const int qlen[3] = { 3, 4, 5 };
        int ok2 = 1, same2 = 1;
        for (int i = 0; i < ND; i++) {
            dd[i] = strata_session_new(m, &sp, err, sizeof err);
            ds[i] = strata_session_new(m, &sp, err, sizeof err);
            const int32_t t0 = 100 + 7 * i;
            ok2 = ok2 && dd[i] && ds[i] && !strata_session_eval(dd[i], &t0, 1) && !strata_session_eval(ds[i], &t0, 1);
        }
        for (int j = 0; j < 3; j++) {
            q[j] = strata_session_new(m, &sp, err, sizeof err);
            qr[j] = strata_session_new(m, &sp, err, sizeof err);
            ok2 = ok2 && q[j] && qr[j] && !strata_session_eval(qr[j], prompt[j], qlen[j]);
        }
        if (ok2) {
            for (int i = 0; i < ND; i++) {
                nx[i] = strata_session_sample(ds[i]);
                strata_session_eval(ds[i], &nx[i], 1);
            }
            const int32_t *qp[3] = { prompt[0], prompt[1], prompt[2] };
            const int qw[3] = { 1, 1, 1 };
            CHECK(strata_sessions_step_prefill_multi(dd, nx, ND, q, qp, qlen, qw, 3) == 0);
            for (int i = 0; i < ND; i++)
                if (memcmp(strata_session_logits(dd[i]), strata_session_logits(ds[i]), (size_t)V * sizeof(float))) same2 = 0;
            for (int j = 0; j < 3; j++)
                if (strata_session_pos(q[j]) != qlen[j] || !strata_session_logits(q[j]) ||
                    memcmp(strata_session_logits(q[j]), strata_session_logits(qr[j]), (size_t)V * sizeof(float)))
                    same2 = 0;
        }
        CHECKF(ok2 && same2, "63 decoding sessions and three prompts ending in one call: logits differ from each alone");
        for (int i = 0; i < ND; i++) { strata_session_free(dd[i]); strata_session_free(ds[i]); }
        for (int j = 0; j < 3; j++) { strata_session_free(q[j]); strata_session_free(qr[j]); }
    }
    /* refused, nothing moved: the same prompt session twice, a prompt session among the decoding ones */
    {
        strata_session *twice[2] = { p[0], p[0] };
        const int32_t *tp[2] = { prompt[0], prompt[0] };
        int tn[2] = { 1, 1 }, tw[2] = { 0, 0 };
        int32_t one = 5;
        CHECK(strata_sessions_step_prefill_multi(d, &one, 1, twice, tp, tn, tw, 2) == -1);
        strata_session *among[1] = { p[0] };
        CHECK(strata_sessions_step_prefill_multi(among, &one, 1, p, tp, tn, tw, 1) == -1);
        CHECK_EQ_INT(strata_session_pos(p[0]), len[0]);
        CHECK_EQ_INT(strata_session_pos(p[1]), len[1]);
    }
out:
    for (int j = 0; j < NP; j++) { strata_session_free(p[j]); strata_session_free(ref[j]); }
    for (int i = 0; i < 2; i++) { strata_session_free(d[i]); strata_session_free(solo[i]); }
}

/* Speculative steps of several sessions (the server's decode path): greedy sessions that draft
 * produce exactly the ids plain greedy steps produce; a sampling session in the same batch draws
 * what it draws alone with the same seed and never drafts; the drafts of one step never exceed the
 * columns the passes have spare (8 per pass); repetitive text gets drafts accepted. */
#define SPEC_N 40
/* tokens per session: SPEC_N, or SPEC_N_QUICK in quick mode (tests/test.h: the sanitizer run, where
 * this test was the longest of all, 243 s of CPU, 12 of its 21 s of -O2 CPU in this part); every
 * path (drafts kept and rejected, the shared budget, the sampling session) still runs */
#define SPEC_N_QUICK 24
static int spec_n = SPEC_N;
static int greedy_reference(strata_model *m, const int32_t *prompt, int n, int32_t *out) {
    strata_session *s = new_session(m);
    if (!s || strata_session_eval(s, prompt, n)) { strata_session_free(s); return -1; }
    for (int i = 0; i < spec_n; i++) {
        out[i] = strata_session_sample(s);
        if (strata_session_eval(s, &out[i], 1)) { strata_session_free(s); return -1; }
    }
    strata_session_free(s);
    return 0;
}

static void test_spec_step(strata_model *m) {
    const char *texts[3] = {   /* passages to quote (input-grounded): drafts get accepted */
        "<|im_start|>user\nHere is a passage: \"The Industrial Revolution began in Great Britain in the late "
        "eighteenth century and spread to Europe and North America. It changed how goods were made.\" Repeat the "
        "passage word for word.<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nThe quick brown fox jumps over the lazy dog near the river bank every morning.\n"
        "Repeat the sentence above exactly.<|im_end|>\n<|im_start|>assistant\n",
        "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    };
    int32_t prompt[3][128], ref[3][SPEC_N];
    int np[3];
    for (int i = 0; i < 3; i++) {
        np[i] = strata_tokenize(m, texts[i], strlen(texts[i]), 1, 1, prompt[i], 128);
        CHECK(np[i] > 8 && np[i] <= 128);
        CHECK(greedy_reference(m, prompt[i], np[i], ref[i]) == 0);
    }
    /* n_sess = 1: a lone session may draft 7; n_sess = 4: three greedy sessions and one sampling
     * session share 4 spare columns */
    for (int n_sess = 1; n_sess <= 4; n_sess += 3) {
        char err[256];
        strata_session *ss[4], *solo = NULL;
        /* a session that accepts drafts runs ahead of one that does not: up to 8 tokens a step */
        int32_t got[4][8 * SPEC_N + 8], next[4];
        int n_got[4] = { 0 };
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 512;
        sp.spec_draft = 7;
        for (int i = 0; i < n_sess; i++) {
            if (i == 3) {   /* sampling: temperature 0.8, seed 11 */
                sp.sampler.temperature = 0.8f; sp.sampler.seed = 11;
            }
            ss[i] = strata_session_new(m, &sp, err, sizeof err);
            CHECK(ss[i] != NULL);
            if (!ss[i]) return;
            CHECK(strata_session_eval(ss[i], prompt[i % 3], np[i % 3]) == 0);
            next[i] = strata_session_sample(ss[i]);
        }
        if (n_sess == 4) {   /* the sampling session's reference: plain steps, same seed */
            strata_session_params sq = sp;
            sq.spec_draft = 0;
            solo = strata_session_new(m, &sq, err, sizeof err);
            CHECK(solo && strata_session_eval(solo, prompt[0], np[0]) == 0);
        }
        int budget_ok = 1, done = 0;
        long drafted_before = 0;
        while (!done) {
            int maxd[4], nacc[4];
            int32_t acc[4 * STRATA_MAX_DRAFT], picked[4];
            for (int i = 0; i < n_sess; i++) { got[i][n_got[i]++] = next[i]; maxd[i] = STRATA_MAX_DRAFT; }
            if (strata_sessions_step_spec(ss, next, maxd, n_sess, acc, nacc, picked) != 0) { CHECK(0); break; }
            long drafted = 0;
            for (int i = 0; i < n_sess; i++) {
                strata_stats st;
                strata_session_get_stats(ss[i], &st);
                drafted += st.n_drafted;
                for (int a = 0; a < nacc[i]; a++) got[i][n_got[i]++] = acc[i * STRATA_MAX_DRAFT + a];
                CHECK_EQ_INT(picked[i], -1);   /* the CPU leaves the pick to the caller */
                next[i] = strata_session_sample(ss[i]);
                CHECK_EQ_INT(strata_session_history(ss[i])[strata_session_pos(ss[i]) - 1], got[i][n_got[i] - 1]);
            }
            /* one pass of up to FWD_MAX_LOGITS columns: each session drafts at most
             * STRATA_MAX_DRAFT, and never more than the columns the pass has spare */
            int cap = n_sess * STRATA_MAX_DRAFT < FWD_MAX_LOGITS - n_sess ? n_sess * STRATA_MAX_DRAFT : FWD_MAX_LOGITS - n_sess;
            if (drafted - drafted_before > cap) budget_ok = 0;
            drafted_before = drafted;
            done = 1;
            for (int i = 0; i < n_sess; i++) if (n_got[i] < spec_n) done = 0;
        }
        CHECKF(budget_ok, "a step drafted more tokens than the pass has spare columns");
        long acc_total = 0;
        for (int i = 0; i < n_sess && i < 3; i++) {
            int first = -1;
            for (int t = spec_n - 1; t >= 0; t--) if (got[i][t] != ref[i][t]) first = t;
            CHECKF(first < 0, "speculative ids differ from greedy (session %d of %d) from token %d", i, n_sess, first);
            strata_stats st;
            strata_session_get_stats(ss[i], &st);
            CHECK(st.n_accepted <= st.n_drafted);
            acc_total += st.n_accepted;
        }
        fprintf(stderr, "spec step, %d sessions: %ld drafts accepted\n", n_sess, acc_total);
        CHECKF(acc_total >= 10, "passages to quote: only %ld drafts accepted (%d sessions)", acc_total, n_sess);
        if (n_sess == 4) {
            strata_stats st;
            strata_session_get_stats(ss[3], &st);
            CHECK_EQ_INT(st.n_drafted, 0);   /* sampling sessions never draft */
            int same = 1;
            for (int t = 0; t < spec_n && solo; t++) {
                int32_t id = strata_session_sample(solo);
                if (id != got[3][t]) same = 0;
                strata_session_eval(solo, &id, 1);
            }
            CHECKF(same, "a sampling session in a speculative batch draws differently from alone");
        }
        for (int i = 0; i < n_sess; i++) strata_session_free(ss[i]);
        strata_session_free(solo);
    }
}

/* A grammar's next mask prepared on a helper thread during the forward pass (issue 22): the same
 * tokens as without, every step after the first overlapped, and each prepared mask used (masks
 * computed + served from the cache = tokens: none computed twice). */
typedef struct { grammar_match *gm; int32_t ids[64]; int n, bad; } gram_run;
static int gram_on_token(int32_t id, void *u) {
    gram_run *r = u;
    if (r->n < 64) r->ids[r->n++] = id;
    if (grammar_match_token(r->gm, id)) r->bad++;
    return 0;
}
static void test_mask_overlap(strata_model *m) {
    const char *schema = "{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"minItems\":3,\"maxItems\":3,"
                         "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":20},"
                         "\"year\":{\"type\":\"integer\"}},\"required\":[\"name\",\"year\"]}}},\"required\":[\"items\"]}";
    char err[256];
    grammar *g = grammar_from_options(NULL, schema, 0, err, sizeof err);
    grammar_vocab *v = grammar_vocab_for_model(m);
    CHECK(g && v);
    if (!g || !v) { grammar_free(g); grammar_vocab_free(v); return; }
    const char *text = "Three famous scientists and their birth years as JSON:";
    int32_t prompt[64];
    int np = strata_tokenize(m, text, strlen(text), 1, 0, prompt, 64);
    CHECK(np > 1);
    gram_run run[2];
    enum { N = 40 };
    for (int ov = 0; ov < 2; ov++) {
        gram_run *r = &run[ov];
        memset(r, 0, sizeof *r);
        r->gm = grammar_match_new(g, v);
        strata_session *s = new_session(m);
        CHECK(r->gm && s);
        if (!r->gm || !s) { grammar_match_free(r->gm); if (s) strata_session_free(s); continue; }
        strata_sampler_params sp = strata_sampler_default_params();
        sp.temperature = 0;
        strata_session_set_sampler(s, &sp);
        strata_session_set_logits_mask(s, grammar_logits_mask, r->gm);
        strata_session_set_logits_mask_prepare(s, grammar_logits_mask_prepare, ov);
        int n = strata_generate(s, prompt, np, N, gram_on_token, r);
        strata_stats st;
        strata_session_get_stats(s, &st);
        long computed, cached;
        grammar_match_stats(r->gm, &computed, &cached, NULL);
        CHECK_EQ_INT(n, N);
        CHECK_EQ_INT(r->bad, 0);
        CHECK_EQ_INT((int)st.n_mask_overlap, ov ? N - 1 : 0);
        CHECKF(computed + cached == N, "overlap %d: masks computed %ld + cached %ld != %d tokens", ov, computed, cached, N);
        strata_session_free(s);
        grammar_match_free(r->gm);
    }
    CHECK_EQ_INT(run[0].n, run[1].n);
    CHECK(!memcmp(run[0].ids, run[1].ids, sizeof run[0].ids));
    grammar_vocab_free(v);
    grammar_free(g);
}

int main(void) {
    /* the speculative steps here test the step machinery (drafts, verification, budgets), not
     * the cost model (test_spec does): a given cost table, final (not re-timed), so a loaded
     * machine's timings cannot turn speculation off (verify passes of 2..8 columns at
     * 1.05..1.35 plain steps) */
    setenv("STRATA_SPEC_COSTS", "1.05,1.1,1.15,1.2,1.25,1.3,1.35", 0);
    if (t_quick()) {
        quick = 1;
        spec_n = SPEC_N_QUICK;
        fprintf(stderr, "quick mode (STRATA_TEST_QUICK): spec step over %d tokens per session, not %d; the two prefill "
                "parts on a 2-layer synthetic llama, not SmolLM2\n", SPEC_N_QUICK, SPEC_N);
    }
    const char *path = getenv("STRATA_MODEL");
    if (!path || access(path, R_OK)) SKIP_ALL("model", "STRATA_MODEL not set or unreadable");
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    strata_model *m;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); CHECK(0); TEST_DONE(); }
    RUN_ARG(test_batched_step, m);
    RUN_ARG(test_rewind_reeval, m);
    RUN_ARG(test_copy_prefix, m);
    strata_model *pm = quick ? small_model(path) : m;
    CHECK(pm != NULL);
    if (pm) {
        RUN_ARG(test_step_prefill, pm);
        RUN_ARG(test_step_prefill_multi, pm);
    }
    if (pm != m) strata_model_free(pm);
    RUN_ARG(test_spec_step, m);
    RUN_ARG(test_mask_overlap, m);
    strata_model_free(m);
    TEST_DONE();
}
