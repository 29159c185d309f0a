/* Sampling: greedy ties, seed reproducibility, temperature statistics, top-k / top-p / min-p
 * truncation, repetition penalty. */
#include "test.h"
#include <stdint.h>
#include "sample/sample.h"

enum { V = 8 };
static const float logits[V] = { 1.0f, 3.0f, 2.5f, 0.5f, 3.0f, -1.0f, 2.0f, 0.0f };

static strata_sampler_params params(float temp, int top_k, float top_p, float min_p, float rep) {
    strata_sampler_params p = { temp, top_k, top_p, min_p, rep, 64, 1234 };
    return p;
}

static void test_greedy_ties(void) {
    CHECK_EQ_INT(sample_argmax(logits, V), 1);   /* 3.0 at ids 1 and 4: lowest id wins */
    sampler s;
    strata_sampler_params p = params(0, 0, 1, 0, 1);
    CHECK(sampler_init(&s, &p, V) == 0);
    CHECK_EQ_INT(sampler_sample(&s, logits, NULL, 0), 1);
    sampler_free(&s);
}

static void test_temperature_statistics(void) {
    sampler s;
    strata_sampler_params p = params(0.7f, 0, 1, 0, 1);
    sampler_init(&s, &p, V);
    long count[V] = { 0 };
    const int N = 100000;
    for (int i = 0; i < N; i++) count[sampler_sample(&s, logits, NULL, 0)]++;
    double z = 0, e[V];
    for (int i = 0; i < V; i++) z += exp(logits[i] / 0.7);
    double chi2 = 0;
    for (int i = 0; i < V; i++) {
        e[i] = N * exp(logits[i] / 0.7) / z;
        if (e[i] > 5) chi2 += (count[i] - e[i]) * (count[i] - e[i]) / e[i];
    }
    CHECKF(chi2 < 24.3, "chi2 %.2f (7 dof, p = 0.001)", chi2);
    sampler_free(&s);
}

static void test_seed(void) {
    sampler a, b, c;
    strata_sampler_params p = params(1.0f, 0, 1, 0, 1);
    sampler_init(&a, &p, V); sampler_init(&b, &p, V);
    p.seed = 99; sampler_init(&c, &p, V);
    int same_ab = 1, same_ac = 1;
    for (int i = 0; i < 200; i++) {
        int32_t x = sampler_sample(&a, logits, NULL, 0), y = sampler_sample(&b, logits, NULL, 0), z = sampler_sample(&c, logits, NULL, 0);
        same_ab &= x == y; same_ac &= x == z;
    }
    CHECK(same_ab);
    CHECK(!same_ac);
    sampler_free(&a); sampler_free(&b); sampler_free(&c);
}

static void test_truncation(void) {
    float probs[V];
    sampler s;
    /* top-k 3: ids 1, 4 (3.0) and 2 (2.5) only */
    strata_sampler_params p = params(1.0f, 3, 1, 0, 1);
    sampler_init(&s, &p, V);
    sampler_dist(&s, logits, NULL, 0, probs);
    int kept = 0;
    for (int i = 0; i < V; i++) kept += probs[i] > 0;
    CHECK_EQ_INT(kept, 3);
    CHECK(probs[1] > 0 && probs[4] > 0 && probs[2] > 0);
    double sum = 0;
    for (int i = 0; i < V; i++) sum += probs[i];
    CHECK(fabs(sum - 1.0) < 1e-6);
    /* top-p: the two 3.0 tokens hold 0.613 of the mass, with 2.5 they hold 0.799 */
    p = params(1.0f, 0, 0.5f, 0, 1);
    sampler_set_params(&s, &p);
    sampler_dist(&s, logits, NULL, 0, probs);
    kept = 0;
    for (int i = 0; i < V; i++) kept += probs[i] > 0;
    CHECK_EQ_INT(kept, 2);
    CHECK(fabs(probs[1] - 0.5) < 1e-6 && fabs(probs[4] - 0.5) < 1e-6);
    p = params(1.0f, 0, 0.7f, 0, 1);
    sampler_set_params(&s, &p);
    sampler_dist(&s, logits, NULL, 0, probs);
    kept = 0;
    for (int i = 0; i < V; i++) kept += probs[i] > 0;
    CHECK_EQ_INT(kept, 3);
    /* min-p 0.5: p(token) >= 0.5 * p(best) <=> logit >= 3 - ln 2 = 2.307: ids 1, 4, 2 */
    p = params(1.0f, 0, 1, 0.5f, 1);
    sampler_set_params(&s, &p);
    sampler_dist(&s, logits, NULL, 0, probs);
    CHECK(probs[1] > 0 && probs[4] > 0 && probs[2] > 0 && probs[6] == 0 && probs[0] == 0);
    for (int i = 0; i < 2000; i++) {
        int32_t t = sampler_sample(&s, logits, NULL, 0);
        if (t != 1 && t != 4 && t != 2) { CHECKF(0, "min-p sampled id %d", t); break; }
    }
    sampler_free(&s);
}

static void test_repetition_penalty(void) {
    sampler s;
    strata_sampler_params p = params(0, 0, 1, 0, 2.0f);
    sampler_init(&s, &p, V);
    const int32_t hist[3] = { 1, 1, 4 };
    /* both 3.0 tokens were seen: 3.0 / 2 = 1.5 < 2.5, so id 2 wins */
    CHECK_EQ_INT(sampler_sample(&s, logits, hist, 3), 2);
    /* a negative logit is multiplied: id 5 (-1) seen goes to -2 */
    float probs[V];
    p = params(1.0f, 0, 1, 0, 2.0f);
    sampler_set_params(&s, &p);
    const int32_t h2[1] = { 5 };
    sampler_dist(&s, logits, h2, 1, probs);
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(i == 5 ? -2.0 : logits[i]);
    CHECK(fabs(probs[5] - exp(-2.0) / z) < 1e-6);
    /* repeat_last_n limits the window */
    p = params(0, 0, 1, 0, 2.0f);
    p.repeat_last_n = 1;
    sampler_set_params(&s, &p);
    CHECK_EQ_INT(sampler_sample(&s, logits, hist, 3), 1);   /* only id 4 penalized: id 1 wins */
    sampler_free(&s);
}

int main(void) {
    RUN(test_greedy_ties);
    RUN(test_temperature_statistics);
    RUN(test_seed);
    RUN(test_truncation);
    RUN(test_repetition_penalty);
    TEST_DONE();
}
