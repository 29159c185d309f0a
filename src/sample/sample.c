#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "sample.h"
#include "core/util.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t xoshiro_next(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3]; s[2] ^= t; s[3] = rotl(s[3], 45);
    return r;
}
double sampler_uniform(sampler *s) { return (double)(xoshiro_next(s->rng) >> 11) * 0x1.0p-53; }

void sampler_set_params(sampler *s, const strata_sampler_params *p) {
    s->p = *p;
    uint64_t x = p->seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

int sampler_init(sampler *s, const strata_sampler_params *p, int n_vocab) {
    memset(s, 0, sizeof *s);
    s->n_vocab = n_vocab;
    s->logits = st_malloc((size_t)n_vocab * sizeof(float));
    s->cand = st_malloc((size_t)n_vocab * sizeof(int32_t));
    s->probs = st_malloc((size_t)n_vocab * sizeof(float));
    if (!s->logits || !s->cand || !s->probs) { sampler_free(s); return -1; }
    sampler_set_params(s, p);
    return 0;
}

void sampler_free(sampler *s) {
    st_free(s->logits); st_free(s->cand); st_free(s->probs);
    s->logits = NULL; s->cand = NULL; s->probs = NULL;
}

int32_t sample_argmax(const float *logits, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

/* sort candidates by logit descending, ties by id ascending (deterministic) */
static const float *sort_keys;
static int cand_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (sort_keys[x] != sort_keys[y]) return sort_keys[x] > sort_keys[y] ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void apply_penalty(sampler *s, const int32_t *hist, int n_hist) {
    if (s->p.repeat_penalty == 1.0f || s->p.repeat_penalty <= 0 || !hist) return;
    int start = s->p.repeat_last_n > 0 && n_hist > s->p.repeat_last_n ? n_hist - s->p.repeat_last_n : 0;
    for (int i = start; i < n_hist; i++) {
        int32_t id = hist[i];
        if (id < 0 || id >= s->n_vocab) continue;
        /* penalize each distinct token once: skip if seen earlier in the window */
        int seen = 0;
        for (int j = start; j < i && !seen; j++) seen = hist[j] == id;
        if (seen) continue;
        float *l = &s->logits[id];
        *l = *l > 0 ? *l / s->p.repeat_penalty : *l * s->p.repeat_penalty;
    }
}

int32_t sampler_dist(sampler *s, const float *logits, const int32_t *hist, int n_hist, float *probs) {
    int n = s->n_vocab;
    memcpy(s->logits, logits, (size_t)n * sizeof(float));
    apply_penalty(s, hist, n_hist);
    if (s->mask) s->mask(s->logits, n, s->mask_user);
    int32_t top = sample_argmax(s->logits, n);
    memset(probs, 0, (size_t)n * sizeof(float));
    if (s->p.temperature <= 0) { probs[top] = 1.0f; return top; }

    /* candidate set: top-k (or all), sorted by logit */
    int nc = 0;
    float mx = s->logits[top];
    /* tokens whose probability is below 1e-9 of the best can't change top-p/min-p results
     * beyond float precision; dropping them first keeps the sort short */
    float floor_logit = mx - 20.7f * s->p.temperature;
    for (int i = 0; i < n; i++)
        if (s->logits[i] >= floor_logit) s->cand[nc++] = i;
    sort_keys = s->logits;
    qsort(s->cand, (size_t)nc, sizeof(int32_t), cand_cmp);
    if (s->p.top_k > 0 && nc > s->p.top_k) nc = s->p.top_k;

    double sum = 0;
    for (int i = 0; i < nc; i++) {
        double e = exp((double)(s->logits[s->cand[i]] - mx) / s->p.temperature);
        probs[s->cand[i]] = (float)e;
        sum += e;
    }
    /* min-p: drop tokens whose probability is below min_p * p(best) */
    int keep = nc;
    if (s->p.min_p > 0) {
        float thr = s->p.min_p * probs[s->cand[0]];
        for (int i = 1; i < keep; i++)
            if (probs[s->cand[i]] < thr) { keep = i; break; }
    }
    /* top-p: smallest prefix with cumulative probability >= top_p */
    if (s->p.top_p > 0 && s->p.top_p < 1) {
        double tot = 0;
        for (int i = 0; i < keep; i++) tot += probs[s->cand[i]];
        double cum = 0;
        for (int i = 0; i < keep; i++) {
            cum += probs[s->cand[i]];
            if (cum >= s->p.top_p * tot) { keep = i + 1; break; }
        }
    }
    sum = 0;
    for (int i = 0; i < keep; i++) sum += probs[s->cand[i]];
    for (int i = keep; i < nc; i++) probs[s->cand[i]] = 0;
    for (int i = 0; i < keep; i++) probs[s->cand[i]] = (float)(probs[s->cand[i]] / sum);
    return top;
}

int32_t sampler_sample(sampler *s, const float *logits, const int32_t *hist, int n_hist) {
    if (s->p.temperature <= 0 && !s->mask) {
        if (s->p.repeat_penalty == 1.0f || !hist) return sample_argmax(logits, s->n_vocab);
    }
    float *probs = s->probs;
    int32_t top = sampler_dist(s, logits, hist, n_hist, probs);
    int32_t pick = top;
    if (s->p.temperature > 0) {
        double u = sampler_uniform(s), cum = 0;
        /* walk candidates in sorted order (cand holds them) so the draw is deterministic */
        for (int i = 0; i < s->n_vocab; i++) {
            int32_t id = s->cand[i];
            if (probs[id] <= 0) break;
            cum += probs[id];
            pick = id;
            if (u < cum) break;
        }
    }
    return pick;
}
