/* The forward pass: T = 1..8 tokens at consecutive positions through every layer. */
#ifndef STRATA_FORWARD_H
#define STRATA_FORWARD_H
#include "model.h"
#include "backend.h"

typedef struct fwd_state {
    const hparams *hp;
    const model_weights *w;
    backend *be;
    int n_ctx;
    /* activations, FWD_MAX_T token rows each */
    float *x;        /* [T][n_embd]    residual stream */
    float *xb;       /* [T][n_embd]    normed input / block output */
    float *q;        /* [T][n_heads * head_dim] */
    float *k, *v;    /* [T][n_kv_heads * head_dim] */
    float *att;      /* [T][n_heads * head_dim] attention output */
    float *hb, *hb2; /* [T][n_ff] */
    float *moe_out;  /* [T][n_embd] Mixture-of-Experts FFN output (MoE models only) */
    float *logits;   /* [T][n_vocab] */
} fwd_state;

int  fwd_init(fwd_state *s, const hparams *hp, const model_weights *w, backend *be, int n_ctx, char *err, size_t errlen);
void fwd_free(fwd_state *s);
/* Run T tokens at positions pos0..pos0+T-1. Logits are computed for tokens
 * logits_from..T-1 into s->logits rows 0..T-1-logits_from. 0, or -1 on bad arguments. */
int  forward(fwd_state *s, const int32_t *ids, int T, int pos0, int logits_from);

/* Several sessions in one pass: group g's n tokens sit at positions pos0.. of its own
 * backend's KV cache; the token columns of all groups share every matvec (weights read
 * once). Batch invariance makes each column's result identical to a solo pass. */
typedef struct fwd_group { backend *be; int pos0, n; } fwd_group;
int  forward_groups(fwd_state *s, const int32_t *ids, const fwd_group *groups, int n_groups, int logits_from);
#endif
