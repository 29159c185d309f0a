/* Speculative verification rules (the drafters are suffix.h and a draft-model session).
 *
 * Greedy: keep the longest prefix of drafts equal to the target's argmax at each position,
 * then the target's own next token. With batch-invariant kernels the kept tokens are
 * exactly what non-speculative greedy decoding produces.
 *
 * Sampled: the standard speculative-sampling rule. A draft token d proposed with
 * probability q(d) is accepted with probability min(1, p(d) / q(d)); on rejection the
 * replacement is drawn from norm(max(0, p - q)). The output distribution equals p. */
#ifndef STRATA_SPEC_H
#define STRATA_SPEC_H
#include <stdint.h>

/* p: target distribution, q: draft distribution (NULL: deterministic drafter, q = one-hot
 * at d), n: vocabulary size, u1/u2: independent uniforms in [0,1). Returns 1 when d is
 * accepted; else 0 with *replacement drawn from the residual. */
int spec_accept_sampled(const float *p, const float *q, int n, int32_t d, double u1, double u2, int32_t *replacement);
/* Draw from a distribution (sums to ~1) with uniform u; lowest id wins ties of the walk. */
int32_t spec_draw(const float *p, int n, double u);
#endif
