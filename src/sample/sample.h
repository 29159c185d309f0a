/* Token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded RNG. */
#ifndef STRATA_SAMPLE_H
#define STRATA_SAMPLE_H
#include <stdint.h>
#include "strata.h"

/* Constrained sampling: called on the sampler's copy of the logits (after the repetition
 * penalty, before anything else) to set -inf on tokens that are not allowed. */
typedef void (*sampler_mask_fn)(float *logits, int n, void *user);

typedef struct sampler {
    strata_sampler_params p;
    sampler_mask_fn mask;     /* NULL: unconstrained */
    void *mask_user;
    uint64_t rng[4];          /* xoshiro256** state */
    int n_vocab;
    float *logits;            /* [n_vocab] scratch */
    int32_t *cand;            /* [n_vocab] candidate ids */
    float *probs;             /* [n_vocab] distribution scratch of sampler_sample */
} sampler;

int  sampler_init(sampler *s, const strata_sampler_params *p, int n_vocab);
void sampler_free(sampler *s);
void sampler_set_params(sampler *s, const strata_sampler_params *p);   /* reseeds */
/* Greedy argmax (ties: lowest id). */
int32_t sample_argmax(const float *logits, int n);
/* The sampler's final distribution over the vocabulary into probs[n_vocab] (zeros outside
 * the kept set). history: tokens the repetition penalty looks at. Returns the argmax id. */
int32_t sampler_dist(sampler *s, const float *logits, const int32_t *history, int n_history, float *probs);
/* Draw the next token. */
int32_t sampler_sample(sampler *s, const float *logits, const int32_t *history, int n_history);
/* Uniform double in [0, 1) from the sampler's RNG. */
double sampler_uniform(sampler *s);
#endif
