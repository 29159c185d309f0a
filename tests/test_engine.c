/* Engine API: several sessions stepped together in one pass (strata_sessions_step) give the
 * same logits bits as each session stepped alone; rewind + re-eval reproduces the bits. */
#include "test.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"

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

int main(void) {
    const char *path = getenv("STRATA_MODEL");
    if (!path || access(path, R_OK)) SKIP_ALL("STRATA_MODEL not set or unreadable");
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    strata_model *m;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); CHECK(0); TEST_DONE(); }
    RUN_ARG(test_batched_step, m);
    RUN_ARG(test_rewind_reeval, m);
    strata_model_free(m);
    TEST_DONE();
}
