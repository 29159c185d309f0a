/* Sampling: greedy ties, seed reproducibility, temperature statistics, top-k / top-p / min-p
 * truncation, repetition penalty, and the whole chain against an independent reference of the
 * definition written in src/sample/sample.h (llama.cpp's repetition penalty). */
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

/* ---- the chain against an independent reference ------------------------------------------
 * The definition written in src/sample/sample.h, implemented here per token as predicates
 * (no sort, no prefix scan): penalized iff the id occurs in the window; rank = how many tokens
 * come before it (higher logit, or equal and lower id); top-k keeps rank < k; min-p keeps
 * p >= min_p * p_max; top-p keeps a token iff the min-p-kept mass ranked before it is below
 * top_p times the min-p-kept mass. Double precision throughout. */
static void reference_dist(const float *lg, int n, const int32_t *hist, int n_hist, const strata_sampler_params *p,
                           double *out, int *argmax) {
    double l[64];
    int start = p->repeat_last_n > 0 && n_hist > p->repeat_last_n ? n_hist - p->repeat_last_n : 0;
    for (int v = 0; v < n; v++) {
        int in_window = 0;
        for (int i = start; i < n_hist; i++) in_window |= hist && hist[i] == v;
        float x = lg[v];
        if (in_window && p->repeat_penalty != 1.0f && p->repeat_penalty > 0)
            x = x > 0 ? x / p->repeat_penalty : x * p->repeat_penalty;   /* float, as the library */
        l[v] = x;
    }
    int rank[64], best = 0;
    for (int v = 0; v < n; v++) {
        rank[v] = 0;
        for (int u = 0; u < n; u++) rank[v] += l[u] > l[v] || (l[u] == l[v] && u < v);
        if (rank[v] == 0) best = v;
    }
    *argmax = best;
    for (int v = 0; v < n; v++) out[v] = 0;
    if (p->temperature <= 0) { out[best] = 1; return; }
    double w[64], pmax = 1.0;   /* the best token's weight exp(0) */
    int keep[64];
    for (int v = 0; v < n; v++) {
        w[v] = exp((l[v] - l[best]) / p->temperature);
        keep[v] = (p->top_k <= 0 || rank[v] < p->top_k) && w[v] >= 1e-9;
    }
    if (p->min_p > 0)
        for (int v = 0; v < n; v++) keep[v] &= rank[v] == 0 || w[v] >= p->min_p * pmax;
    if (p->top_p > 0 && p->top_p < 1) {
        double tot = 0;
        for (int v = 0; v < n; v++) tot += keep[v] ? w[v] : 0;
        int keep2[64];
        for (int v = 0; v < n; v++) {
            double before = 0;
            for (int u = 0; u < n; u++) before += keep[u] && rank[u] < rank[v] ? w[u] : 0;
            keep2[v] = keep[v] && before < p->top_p * tot;
        }
        for (int v = 0; v < n; v++) keep[v] = keep2[v];
    }
    double z = 0;
    for (int v = 0; v < n; v++) z += keep[v] ? w[v] : 0;
    for (int v = 0; v < n; v++) out[v] = keep[v] ? w[v] / z : 0;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static double urand(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (double)(rs >> 11) * 0x1.0p-53; }

static void test_chain_vs_reference(void) {
    /* a hand case first: id 1 occurs 3 times in the window and is penalized once (3.0 / 2),
     * not once per occurrence (3.0 / 8) */
    sampler s;
    strata_sampler_params p = params(1.0f, 0, 1, 0, 2.0f);
    CHECK(sampler_init(&s, &p, V) == 0);
    float probs[64];
    const int32_t h3[4] = { 1, 1, 1, 4 };
    sampler_dist(&s, logits, h3, 4, probs);
    double z = 0;
    for (int i = 0; i < V; i++) z += exp(i == 1 || i == 4 ? 1.5 : logits[i]);
    CHECKF(fabs(probs[1] - exp(1.5) / z) < 1e-6, "p(1) %g, want %g (penalized once)", probs[1], exp(1.5) / z);
    sampler_free(&s);

    /* random cases: logits with ties, histories with repeats, every knob; one check per
     * compared distribution (and one per greedy pick) */
    enum { N = 48, CASES = 400 };
    CHECK(sampler_init(&s, &p, N) == 0);
    int bad = 0;
    for (int c = 0; c < CASES; c++) {
        float lg[N];
        for (int v = 0; v < N; v++) lg[v] = (float)((int)(urand() * 33) - 12) * 0.25f;   /* steps of 0.25: ties */
        int32_t hist[40];
        int nh = (int)(urand() * 40);
        for (int i = 0; i < nh; i++) hist[i] = (int32_t)(urand() * (urand() < 0.5 ? 6 : N));   /* small ids repeat */
        p.temperature = c % 5 == 0 ? 0.0f : (float)(0.3 + 1.5 * urand());
        p.top_k = urand() < 0.5 ? 0 : 1 + (int)(urand() * 20);
        p.top_p = urand() < 0.4 ? 1.0f : (float)(0.2 + 0.79 * urand());
        p.min_p = urand() < 0.4 ? 0.0f : (float)(0.3 * urand());
        p.repeat_penalty = urand() < 0.15 ? 1.0f : (float)(1.0 + 2.0 * urand());
        p.repeat_last_n = urand() < 0.3 ? 0 : 1 + (int)(urand() * 30);
        sampler_set_params(&s, &p);
        double ref[N];
        int ref_top;
        reference_dist(lg, N, hist, nh, &p, ref, &ref_top);
        if (p.temperature <= 0) {
            int32_t got = sampler_sample(&s, lg, hist, nh);
            CHECKF(got == ref_top, "case %d: greedy %d, reference %d", c, got, ref_top);
            bad += got != ref_top;
            continue;
        }
        int32_t top = sampler_dist(&s, lg, hist, nh, probs);
        double maxd = 0;
        int at = -1;
        for (int v = 0; v < N; v++) {
            double d = fabs(probs[v] - ref[v]);
            if ((probs[v] > 0) != (ref[v] > 0)) d = 1;   /* a different kept set */
            if (d > maxd) { maxd = d; at = v; }
        }
        CHECKF(maxd < 1e-6 && top == ref_top, "case %d (T %.3f k %d p %.3f min-p %.3f pen %.3f last %d, %d history): "
               "token %d: %g vs reference %g; argmax %d vs %d", c, p.temperature, p.top_k, p.top_p, p.min_p,
               p.repeat_penalty, p.repeat_last_n, nh, at, at >= 0 ? probs[at] : 0, at >= 0 ? ref[at] : 0, top, ref_top);
        bad += !(maxd < 1e-6 && top == ref_top);
    }
    fprintf(stderr, "sampler chain vs reference: %d cases, %d differ\n", CASES, bad);
    sampler_free(&s);
}

int main(void) {
    RUN(test_greedy_ties);
    RUN(test_temperature_statistics);
    RUN(test_seed);
    RUN(test_truncation);
    RUN(test_repetition_penalty);
    RUN(test_chain_vs_reference);
    TEST_DONE();
}
