/* The forward pass: T = 1..FWD_MAX_T token columns through every layer, written against the
 * block-level backend interface (src/model/backend.h). */
#ifndef STRATA_FORWARD_H
#define STRATA_FORWARD_H
#include "model.h"
#include "backend.h"

/* Run the batch's columns (ids[t], t < b->T) through the model on backend be; logits of
 * columns logits_from .. T-1 are left in be->ops->logits(be), rows 0 .. T-1-logits_from.
 * 0, or -1 on bad arguments or a device failure. Batch invariance: a column's logits do not
 * depend on T, on the other sequences, or on how a prompt is chunked. */
int forward_batch(backend *be, const hparams *hp, const int32_t *ids, const fwd_batch *b, int logits_from);
/* As forward_batch, but every column's next token is the argmax of its logits, picked by the
 * backend (head_argmax: on the GPU only the ids come back) into picks[0..T). */
int forward_batch_picks(backend *be, const hparams *hp, const int32_t *ids, const fwd_batch *b, int32_t *picks);
/* One sequence: T tokens at positions pos0.. of be's own KV cache. */
int forward(backend *be, const hparams *hp, const int32_t *ids, int T, int pos0, int logits_from);
#endif
