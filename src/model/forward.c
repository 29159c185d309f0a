/* The one forward pass, top to bottom. Quantization is invisible here: matvec hides it.
 * Architecture differences are data (hparams, which weights are bound), not copies. */
#include <stdio.h>
#include <string.h>
#include "forward.h"
#include "core/util.h"

int fwd_init(fwd_state *s, const hparams *hp, const model_weights *w, backend *be, int n_ctx, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    s->hp = hp; s->w = w; s->be = be; s->n_ctx = n_ctx;
    size_t T = FWD_MAX_T, E = (size_t)hp->n_embd, Q = (size_t)hp->n_heads * hp->head_dim;
    size_t KV = (size_t)hp->n_kv_heads * hp->head_dim;
    size_t F = (size_t)(hp->n_ff > hp->n_ff_exp ? hp->n_ff : hp->n_ff_exp);
    s->x = st_malloc(T * E * sizeof(float));
    s->xb = st_malloc(T * (E > Q ? E : Q) * sizeof(float));
    s->q = st_malloc(T * Q * sizeof(float));
    s->k = st_malloc(T * KV * sizeof(float));
    s->v = st_malloc(T * KV * sizeof(float));
    s->att = st_malloc(T * Q * sizeof(float));
    s->hb = st_malloc(T * (F ? F : 1) * sizeof(float));
    s->hb2 = st_malloc(T * (F ? F : 1) * sizeof(float));
    s->logits = st_malloc(T * (size_t)hp->n_vocab * sizeof(float));
    if (hp->n_experts > 0) {
        if (!be->ops->moe_ffn) {
            snprintf(err, errlen, "the %s backend has no Mixture-of-Experts FFN (%s model): use the CPU", be->ops->name,
                     arch_name(hp->arch));
            fwd_free(s);
            return -1;
        }
        s->moe_out = st_malloc(T * E * sizeof(float));
    }
    if (!s->x || !s->xb || !s->q || !s->k || !s->v || !s->att || !s->hb || !s->hb2 || !s->logits ||
        (hp->n_experts > 0 && !s->moe_out)) {
        snprintf(err, errlen, "out of memory allocating activations");
        fwd_free(s);
        return -1;
    }
    return 0;
}

void fwd_free(fwd_state *s) {
    st_free(s->x); st_free(s->xb); st_free(s->q); st_free(s->k); st_free(s->v);
    st_free(s->att); st_free(s->hb); st_free(s->hb2); st_free(s->logits); st_free(s->moe_out);
    memset(s, 0, sizeof *s);
}

int forward(fwd_state *s, const int32_t *ids, int T, int pos0, int logits_from) {
    fwd_group g = { s->be, pos0, T };
    return forward_groups(s, ids, &g, 1, logits_from);
}

int forward_groups(fwd_state *s, const int32_t *ids, const fwd_group *groups, int n_groups, int logits_from) {
    const hparams *hp = s->hp;
    const model_weights *w = s->w;
    const backend_ops *op = s->be->ops;
    backend *be = s->be;
    int T = 0;
    for (int g = 0; g < n_groups; g++) {
        if (groups[g].n < 1 || groups[g].pos0 < 0 || groups[g].pos0 + groups[g].n > s->n_ctx) return -1;
        T += groups[g].n;
    }
    if (n_groups < 1 || T > FWD_MAX_T || logits_from < 0 || logits_from > T) return -1;
    for (int t = 0; t < T; t++)
        if (ids[t] < 0 || ids[t] >= hp->n_vocab) return -1;
    const int E = hp->n_embd, H = hp->n_heads, KVH = hp->n_kv_heads, HD = hp->head_dim;

    /* x[T][E] = embedding rows (gemma scales by sqrt(E)) */
    op->embed(be, &w->tok_embd, ids, T, s->x, hp->embd_scale);

    for (int l = 0; l < hp->n_layers; l++) {
        const layer_weights *L = &w->layers[l];
        /* ---- attention block ---- */
        op->rmsnorm(be, s->x, &L->attn_norm, s->xb, T, E, hp->rms_eps);
        op->matvec(be, &L->wq, s->xb, T, s->q);            /* q[T][H*HD]   */
        op->matvec(be, &L->wk, s->xb, T, s->k);            /* k[T][KVH*HD] */
        op->matvec(be, &L->wv, s->xb, T, s->v);            /* v[T][KVH*HD] */
        if (L->q_norm.data) op->rmsnorm(be, s->q, &L->q_norm, s->q, T * H, HD, hp->rms_eps);
        if (L->k_norm.data) op->rmsnorm(be, s->k, &L->k_norm, s->k, T * KVH, HD, hp->rms_eps);
        float base = L->sliding ? hp->rope_base_local : hp->rope_base;
        /* positions and KV caches are per group (one group per session) */
        for (int g = 0, t0 = 0; g < n_groups; t0 += groups[g].n, g++) {
            const fwd_group *G = &groups[g];
            size_t qo = (size_t)t0 * H * HD, ko = (size_t)t0 * KVH * HD;
            op->rope(be, s->q + qo, G->n, H, HD, hp->n_rot, G->pos0, base, hp->rope_scale);
            op->rope(be, s->k + ko, G->n, KVH, HD, hp->n_rot, G->pos0, base, hp->rope_scale);
            G->be->ops->attention(G->be, l, s->q + qo, s->k + ko, s->v + ko, G->n, G->pos0, hp->attn_scale,
                                  L->sliding ? hp->sliding_window : 0, s->att + qo);
        }
        op->matvec(be, &L->wo, s->att, T, s->xb);          /* xb[T][E] */
        if (L->post_attn_norm.data) op->rmsnorm(be, s->xb, &L->post_attn_norm, s->xb, T, E, hp->rms_eps);
        op->add(be, s->x, s->xb, T * E);

        /* ---- feed-forward block ---- */
        op->rmsnorm(be, s->x, &L->ffn_norm, s->xb, T, E, hp->rms_eps);
        float *ffn_out = s->xb;                             /* [T][E] */
        if (L->gate_inp.data) {                             /* Mixture-of-Experts: router + k experts */
            op->moe_ffn(be, L, hp->n_experts_used, s->xb, T, s->moe_out);
            ffn_out = s->moe_out;
        } else {
            op->matvec(be, &L->gate, s->xb, T, s->hb);         /* hb[T][F]  */
            op->matvec(be, &L->up, s->xb, T, s->hb2);          /* hb2[T][F] */
            if (hp->ffn_gelu) op->geglu(be, s->hb, s->hb2, s->hb, T * hp->n_ff);
            else op->swiglu(be, s->hb, s->hb2, s->hb, T * hp->n_ff);
            op->matvec(be, &L->down, s->hb, T, s->xb);         /* xb[T][E]  */
        }
        if (L->post_ffn_norm.data) op->rmsnorm(be, ffn_out, &L->post_ffn_norm, ffn_out, T, E, hp->rms_eps);
        op->add(be, s->x, ffn_out, T * E);
    }

    /* ---- output head for the requested tokens ---- */
    int n_out = T - logits_from;
    if (n_out > 0) {
        op->rmsnorm(be, s->x + (size_t)logits_from * E, &w->output_norm, s->xb, n_out, E, hp->rms_eps);
        op->matvec(be, &w->output, s->xb, n_out, s->logits);
    }
    return 0;
}
