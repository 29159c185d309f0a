/* The one forward pass, top to bottom, at the level of the model's blocks. What each block
 * does, op by op, is written once in the CPU backend (src/cpu/backend_cpu.c, the reference);
 * quantization and fusion are the backends' business. */
#include <string.h>
#include "forward.h"
#include "core/env.h"

void fwd_buffer_sizes(const hparams *hp, int T, fwd_sizes *s) {
    size_t t = (size_t)T, E = (size_t)hp->n_embd, Q = (size_t)hp->n_heads * hp->head_dim;
    size_t KV = (size_t)hp->n_kv_heads * hp->head_dim;
    size_t F = (size_t)(hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp);
    if (!F) F = 1;
    s->x = t * E;                        /* residual stream */
    s->xb = t * (E > Q ? E : Q);         /* normed input / block output */
    s->q = t * Q;
    s->k = t * KV;
    s->v = t * KV;
    s->att = t * Q;                      /* attention output */
    s->hb = t * F;                       /* gate (then the FFN's hidden rows) */
    s->hb2 = t * F;                      /* up */
    s->moe_out = hp->n_experts > 0 ? t * E : 0;
    s->logits = (t < FWD_MAX_LOGITS ? t : FWD_MAX_LOGITS) * (size_t)hp->n_vocab;
}

static int forward_run(backend *be, const hparams *hp, const int32_t *ids, const fwd_batch *b, int logits_from,
                       int32_t *picks) {
    const backend_ops *op = be->ops;
    int T = 0;
    if (b->n_seq < 1) return -1;
    for (int s = 0; s < b->n_seq; s++) {
        if (b->seq[s].n < 1 || b->seq[s].pos0 < 0 || !b->seq[s].kv) return -1;
        T += b->seq[s].n;
    }
    if (T != b->T || T > FWD_MAX_T || logits_from < 0 || logits_from > T) return -1;
    if (T - logits_from > FWD_MAX_LOGITS || (picks && T > FWD_MAX_LOGITS)) return -1;
    for (int t = 0; t < T; t++)
        if (ids[t] < 0 || ids[t] >= hp->n_vocab) return -1;

    op->embed(be, ids, b);                  /* x[T][n_embd] */
    for (int l = 0; l < hp->n_layers; l++) {
        op->attn_block(be, l, b);           /* x += attention(norm(x)) */
        if (l == hp->n_layers - 1 && !picks && logits_from > 0 && logits_from < T && op->keep_cols &&
            strcmp(env_str(ENV_LAST_FFN), "all")) {
            /* the last FFN feeds only the head: it runs on the columns that get logits. A pass
             * with logits_from == T keeps every column's layers: its caller may run a head of
             * its own on them (CUDA's verify graph: forward(T, from = T), then head_argmax) */
            const int n = T - logits_from;
            fwd_seq s1 = { b->seq[b->n_seq - 1].kv, 0, n };   /* the FFN and the head read T alone */
            fwd_batch b1 = { n, 1, &s1 };
            op->keep_cols(be, logits_from, T);
            op->ffn_block(be, l, &b1);
            return op->head(be, &b1, 0);
        }
        op->ffn_block(be, l, b);            /* x += ffn(norm(x)), dense or Mixture-of-Experts */
    }
    if (picks) return op->head_argmax(be, b, 0, picks);        /* next = argmax output(norm(x)) */
    if (logits_from < T) return op->head(be, b, logits_from);   /* logits = output(norm(x)) */
    return 0;
}

int forward_batch(backend *be, const hparams *hp, const int32_t *ids, const fwd_batch *b, int logits_from) {
    return forward_run(be, hp, ids, b, logits_from, NULL);
}

int forward_batch_picks(backend *be, const hparams *hp, const int32_t *ids, const fwd_batch *b, int32_t *picks) {
    if (!be->ops->head_argmax || !picks) return -1;
    return forward_run(be, hp, ids, b, 0, picks);
}

int forward(backend *be, const hparams *hp, const int32_t *ids, int T, int pos0, int logits_from) {
    fwd_seq s = { be->kv, pos0, T };
    fwd_batch b = { T, 1, &s };
    return forward_batch(be, hp, ids, &b, logits_from);
}
