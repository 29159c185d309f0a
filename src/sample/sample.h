/* Token sampling: greedy, temperature, top-k, top-p, min-p, repetition penalty, seeded RNG.
 *
 * The chain, in order (tests/test_sample.c checks it against an independent reference):
 * 1. Repetition penalty, llama.cpp's definition (its "penalty_repeat"), not HF's: the window is
 *    the last repeat_last_n tokens of the history (<= 0: the whole history; the history holds
 *    the prompt too), and each DISTINCT id in the window is penalized once, however often it
 *    occurs: logit > 0 -> logit / penalty, else logit * penalty. HF's
 *    RepetitionPenaltyLogitsProcessor penalizes the same way (once per distinct id) but over the
 *    whole sequence with no window: ours equals HF's only with repeat_last_n <= 0 (or a window
 *    that holds the whole sequence). No frequency or presence penalty.
 * 2. temperature <= 0: the argmax of the penalized logits (ties: lowest id); done.
 * 3. Candidates sorted by penalized logit descending (ties: lower id first), cut to top_k
 *    (0: off); p_i = exp((l_i - l_max) / temperature) over them (tokens below l_max - 20.7 T,
 *    p < 1e-9 p_max, are left out first).
 * 4. min-p (0: off): the first candidate i >= 1 with p_i < min_p * p_max and all after it go.
 * 5. top-p (>= 1 or <= 0: off): of what min-p kept, the shortest prefix whose mass reaches
 *    top_p times the kept mass. (Unlike llama.cpp, temperature applies before min-p / top-p,
 *    as in HF; unlike HF, min-p comes before top-p.)
 * 6. Renormalize; draw with u from xoshiro256** walking the sorted candidates. */
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
