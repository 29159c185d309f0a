/* Internal definitions of the engine objects behind include/strata.h. */
#ifndef STRATA_ENGINE_H
#define STRATA_ENGINE_H
#include "strata.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/forward.h"
#include "sample/sample.h"
#include "cpu/threadpool.h"
#include "spec/window.h"

struct tokenizer;
struct suffix_drafter;

struct strata_model {
    gguf_file *gguf;
    struct tokenizer *tok;
    hparams hp;
    model_weights w;
    threadpool *tp;
    int n_threads;
    int exact;
    int device;              /* STRATA_DEVICE_CPU or STRATA_DEVICE_CUDA (weights uploaded) */
    int vocab_only;
    char *chat_template;     /* NULL when absent */
    char *name;
    double t_load;
    spec_costs spec_prior;   /* verify costs timed by the first speculating session (spec_prior_ok) */
    int spec_prior_ok;
};

struct strata_session {
    strata_model *m;
    backend *be;             /* the session's backend: its KV cache, activations and logits */
    sampler smp;
    strata_session_params p;
    int n_ctx;
    int pos;                 /* tokens in the KV cache */
    int32_t *history;        /* [n_ctx] ids at each position */
    float *last_logits;      /* [n_vocab] logits of the last evaluated token */
    int have_logits;
    strata_stats st;
    /* speculative decoding */
    struct suffix_drafter *sfx;   /* suffix drafter over prompt + output (spec_draft > 0) */
    strata_session *draft;       /* draft-model session, or NULL */
    float *probs;                /* [n_vocab] sampler distribution scratch */
    /* history[0..sfx_n) is in sfx (-1: rebuild it) */
    int sfx_n;
    spec_ctl spec;               /* cost model and acceptance rates: the draft window's choice */
    /* the mask's prepare hook (strata_session_set_logits_mask_prepare) and whether it overlaps */
    strata_logits_mask_prepare mask_prepare;
    int mask_overlap, mask_device;
};

/* Evaluate T <= FWD_MAX_T tokens; logits of tokens logits_from.. are left in session_logits(s). */
int session_forward(strata_session *s, const int32_t *ids, int T, int logits_from);
const float *session_logits(strata_session *s);
#endif
