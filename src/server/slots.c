/* Slots, queue and the decode thread of the server.
 *
 * One decode thread owns all sessions. Each iteration it (1) drops cancelled jobs, (2) moves
 * queued jobs into idle slots, (3) runs slots_step_all() without the lock: a prompt chunk for
 * each slot still reading its prompt, one batched pass for all decoding slots, and one sampled
 * token per slot, (4) publishes the results to the jobs under the lock. A client that disconnects sets
 * job->cancelled and loses its slot at the next iteration, i.e. within one decode step.
 *
 * slots_step_all is the one place that touches the engine per step: decoding slots advance
 * together through strata_sessions_step (their tokens are columns of one matvec). */
#include "server/server.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "core/util.h"
#include "core/env.h"
#include "grammar/grammar_model.h"
#include "server/openai.h"

/* ---- jobs ------------------------------------------------------------------------------------ */
srv_job *job_new(gen_request *r, const int32_t *prompt, int n_prompt) {
    srv_job *j = st_calloc(1, sizeof *j);
    if (!j) return NULL;
    j->prompt = st_malloc((size_t)n_prompt * sizeof(int32_t));
    if (!j->prompt) { st_free(j); return NULL; }
    memcpy(j->prompt, prompt, (size_t)n_prompt * sizeof(int32_t));
    j->n_prompt = n_prompt;
    j->kind = r->kind;
    j->max_tokens = r->max_tokens;
    j->sampler = r->sampler;
    j->has_seed = r->has_seed;
    for (int i = 0; i < r->n_stops; i++) { j->stops[i] = r->stops[i]; r->stops[i] = NULL; }
    j->n_stops = r->n_stops;
    r->n_stops = 0;
    j->logprobs = r->logprobs;
    j->top_logprobs = r->top_logprobs;
    j->grammar = r->grammar;
    r->grammar = NULL;
    j->state = JOB_QUEUED;
    sbuf_init(&j->text);
    pthread_cond_init(&j->cv, NULL);
    j->refs = 1;
    j->t_submit = now_seconds();
    return j;
}

static void job_destroy(srv_job *j) {
    st_free(j->prompt);
    for (int i = 0; i < j->n_stops; i++) st_free(j->stops[i]);
    sbuf_free(&j->text);
    json_decref(j->lp);
    grammar_free(j->grammar);
    pthread_cond_destroy(&j->cv);
    st_free(j);
}

/* caller holds s->mu */
static void job_unref_locked(srv_job *j) { if (--j->refs == 0) job_destroy(j); }

void job_release(srv_sched *s, srv_job *j) {
    if (!j) return;
    pthread_mutex_lock(&s->mu);
    job_unref_locked(j);
    pthread_mutex_unlock(&s->mu);
}

/* ---- one step of one slot (no lock held: touches only the slot and its session) -------------- */
static void slot_end(srv_slot *sl, const char *finish) {
    if (!sl->filter.stopped) {
        char tail[16];
        int n = strata_detok_flush(&sl->detok, tail, sizeof tail);
        if (n > 0) stop_filter_push(&sl->filter, tail, (size_t)n, &sl->staged_text);
        stop_filter_flush(&sl->filter, &sl->staged_text);
    }
    sl->finish = finish;
}

/* log-softmax of the chosen token and the top-n alternatives, from the raw logits
 * (temperature 1, before any truncation): what the model believes, as OpenAI reports it. */
static json_t *logprob_entry(const strata_model *m, const float *logits, int n_vocab, int32_t chosen, int n_top) {
    float mx = -INFINITY;
    for (int i = 0; i < n_vocab; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - mx);
    float lse = mx + (float)log(sum);
    int32_t top_id[GEN_MAX_TOP_LOGPROBS];
    float top_lp[GEN_MAX_TOP_LOGPROBS];
    int k = 0;
    if (n_top > GEN_MAX_TOP_LOGPROBS) n_top = GEN_MAX_TOP_LOGPROBS;
    for (int i = 0; i < n_vocab && n_top > 0; i++) {   /* insertion into a sorted list of n_top */
        float v = logits[i];
        if (k == n_top && v <= top_lp[k - 1]) continue;
        int p = k < n_top ? k++ : k - 1;
        while (p > 0 && top_lp[p - 1] < v) { top_lp[p] = top_lp[p - 1]; top_id[p] = top_id[p - 1]; p--; }
        top_lp[p] = v; top_id[p] = i;
    }
    const char *txt[GEN_MAX_TOP_LOGPROBS];
    size_t len[GEN_MAX_TOP_LOGPROBS];
    for (int i = 0; i < k; i++) {
        top_lp[i] -= lse;
        txt[i] = strata_token_text(m, top_id[i], &len[i]);
        if (!txt[i]) { txt[i] = ""; len[i] = 0; }
    }
    size_t cl = 0;
    const char *ct = strata_token_text(m, chosen, &cl);
    return oai_logprob_entry(ct ? ct : "", ct ? cl : 0, logits[chosen] - lse, k, txt, len, top_lp);
}

/* One generated token: stream it and check the finish conditions; 1 when the job ended.
 * logits: the distribution tok came from (for logprobs; NULL for accepted drafts, which only
 * requests without logprobs get). */
static int slot_take(srv_sched *s, srv_slot *sl, int32_t tok, const float *logits) {
    srv_job *j = sl->job;
    if (sl->gm && grammar_match_token(sl->gm, tok) != 0) {
        snprintf(sl->error, sizeof sl->error, "the sampled token %d is outside the grammar", tok);
        slot_end(sl, NULL);
        return 1;
    }
    if (strata_token_is_eog(s->model, tok)) { slot_end(sl, "stop"); return 1; }
    if (j->logprobs && logits) {
        json_t *e = logprob_entry(s->model, logits, strata_n_vocab(s->model), tok, j->top_logprobs);
        if (!sl->staged_lp) sl->staged_lp = json_array();
        json_array_append_new(sl->staged_lp, e);
    }
    sl->n_gen++;
    char piece[256];
    int n = strata_detok_push(s->model, &sl->detok, tok, piece, sizeof piece);
    if (n > 0 && stop_filter_push(&sl->filter, piece, (size_t)n, &sl->staged_text)) { slot_end(sl, "stop"); return 1; }
    if (j->max_tokens > 0 && sl->n_gen >= j->max_tokens) { slot_end(sl, "length"); return 1; }
    sl->next_token = tok;
    return 0;
}

/* The slot's session holds fresh logits: take the drafts this step kept (speculation), then
 * sample the next token from the logits after them (or take the one the engine chose on the
 * device: greedy on the GPU, where the logits stay there). */
static void slot_after_eval(srv_sched *s, srv_slot *sl) {
    for (int a = 0; a < sl->n_accepted; a++)
        if (slot_take(s, sl, sl->accepted[a], NULL)) return;
    sl->n_accepted = 0;
    if (sl->picked >= 0) { slot_take(s, sl, sl->picked, NULL); return; }
    const float *logits = strata_session_logits(sl->sess);
    int32_t tok = strata_session_sample(sl->sess);
    if (tok < 0 || !logits) { snprintf(sl->error, sizeof sl->error, "sampling failed"); slot_end(sl, NULL); return; }
    slot_take(s, sl, tok, logits);
}

/* Drafts this slot may add after its next token: speculation on for the job, and no more
 * than the tokens it may still produce after the one this step samples. -1: the job needs the
 * logits on the host (logprobs), so the engine must not pick its token on the device. */
static int slot_max_draft(const srv_slot *sl) {
    const srv_job *j = sl->job;
    if (j->logprobs || j->grammar) return -1;   /* grammar: every token through the host-side mask */
    if (!j->spec) return 0;
    int k = STRATA_MAX_DRAFT;
    if (j->max_tokens > 0 && j->max_tokens - sl->n_gen - 1 < k) k = j->max_tokens - sl->n_gen - 1;
    return k > 0 ? k : 0;
}

/* A slot still reading its prompt: one chunk per step, so the other slots keep streaming while
 * a long prompt is read; batch invariance makes the result the same as one pass over it. */
static void slot_prefill(srv_sched *s, srv_slot *sl) {
    srv_job *j = sl->job;
    int n = j->n_prompt - sl->prefill_pos;
    if (n > SRV_PREFILL_CHUNK) n = SRV_PREFILL_CHUNK;
    if (strata_session_eval(sl->sess, j->prompt + sl->prefill_pos, n)) {
        snprintf(sl->error, sizeof sl->error, "the prompt (%d tokens) could not be evaluated (context %d)",
                 j->n_prompt, s->n_ctx);
        slot_end(sl, NULL);
        return;
    }
    sl->prefill_pos += n;
    if (sl->prefill_pos < j->n_prompt) return;
    sl->phase = SLOT_DECODE;
    slot_after_eval(s, sl);
}

/* One decode step for every active slot: prompts advance by a chunk each; all decoding slots'
 * tokens go through ONE batched pass (strata_sessions_step_spec: the tokens are columns of the
 * same matvecs, so the weights are read once for all of them, and each slot's logits are the bits
 * a solo step would give). Greedy slots of a server with --spec also carry drafts in the columns
 * the pass has spare; the drafts the model agrees with come out as extra tokens of this step. */
/* Grammar slots: the next mask depends only on the token already taken, so it is computed on a
 * helper thread while the step's forward pass runs (on the GPU the decode thread only waits;
 * the engine does not sample, so nothing else touches the matchers meanwhile). */
typedef struct { grammar_match **gm; int n; } mask_job;
static void *mask_worker(void *arg) {
    mask_job *mj = arg;
    for (int i = 0; i < mj->n; i++) (void)grammar_match_prepare(mj->gm[i]);
    return NULL;
}

static void slots_step_all(srv_sched *s, srv_slot **active, int n_active) {
    strata_session **batch = st_malloc((size_t)n_active * sizeof *batch);
    int32_t *toks = st_malloc((size_t)n_active * sizeof *toks);
    srv_slot **bslot = st_malloc((size_t)n_active * sizeof *bslot);
    int *max_draft = st_malloc((size_t)n_active * sizeof *max_draft);
    int32_t *acc = st_malloc((size_t)n_active * STRATA_MAX_DRAFT * sizeof *acc);
    int *n_acc = st_malloc((size_t)n_active * sizeof *n_acc);
    int32_t *picked = st_malloc((size_t)n_active * sizeof *picked);
    int *pos0 = st_malloc((size_t)n_active * sizeof *pos0);
    int nb = 0, npw = 0;
    /* the prompts waiting to be read: inside the decode passes the oldest go first */
    srv_slot **pw = st_malloc((size_t)n_active * sizeof *pw);
    srv_slot *pf = NULL;   /* non-NULL: this step reads prompts inside the decode passes */
    for (int i = 0; i < n_active; i++) {
        srv_slot *sl = active[i];
        sl->n_accepted = 0;
        sl->picked = -1;
        if (sl->phase == SLOT_PREFILL) {
            if (!pf || sl->job->t_start < pf->job->t_start) pf = sl;
            if (pw) {   /* insertion by age */
                int k = npw++;
                while (k > 0 && pw[k - 1]->job->t_start > sl->job->t_start) { pw[k] = pw[k - 1]; k--; }
                pw[k] = sl;
            }
            continue;
        }
        if (strata_session_pos(sl->sess) >= strata_session_n_ctx(sl->sess)) { slot_end(sl, "length"); continue; }
        sl->n_steps++;
        if (!batch || !toks || !bslot || !max_draft || !acc || !n_acc || !picked || !pos0) {   /* out of memory: step this slot alone */
            if (strata_session_eval(sl->sess, &sl->next_token, 1)) slot_end(sl, "length");
            else slot_after_eval(s, sl);
            continue;
        }
        batch[nb] = sl->sess; toks[nb] = sl->next_token; bslot[nb] = sl; max_draft[nb] = slot_max_draft(sl);
        pos0[nb] = strata_session_pos(sl->sess);
        nb++;
    }
    /* prompts: with nobody decoding, they share passes of the step's budget (at least
     * SRV_PREFILL_CHUNK tokens); else they ride in the decode passes, as many tokens as the step's budget leaves after
     * the decoding slots' columns (at least half the budget), the oldest prompts first (the
     * next one takes what the one before leaves, up to 63 prompts): a long prompt costs the
     * streams one budget's worth of columns per token, not a chunk */
    enum { MAX_PW = 63 };
    srv_slot *pfs[MAX_PW];
    strata_session *pss[MAX_PW];
    const int32_t *pids[MAX_PW];
    int pns[MAX_PW], pwant[MAX_PW], ppos0[MAX_PW], np = 0;
    if (nb == 0 && !pw) {   /* out of memory: each prompt a chunk on its own passes */
        for (int i = 0; i < n_active; i++)
            if (active[i]->phase == SLOT_PREFILL) slot_prefill(s, active[i]);
        pf = NULL;
    } else if (pf) {
        /* nobody decoding: the prompts share passes of the step's budget (at least a chunk),
         * the oldest first; a burst of prompts goes through wide passes, not one per slot */
        int budget = nb == 0 ? (s->step_tokens > SRV_PREFILL_CHUNK ? s->step_tokens : SRV_PREFILL_CHUNK) : s->step_tokens - nb;
        if (nb > 0 && budget < (s->step_tokens + 1) / 2) budget = (s->step_tokens + 1) / 2;
        srv_slot *only[1] = { pf };
        const int own = pw != NULL;
        if (!own) { pw = only; npw = 1; }   /* out of memory: the oldest alone */
        for (int k = 0; k < npw && np < MAX_PW && budget > 0; k++) {
            srv_slot *sl = pw[k];
            const srv_job *j = sl->job;
            int n = j->n_prompt - sl->prefill_pos;
            if (n > budget) n = budget;
            if (n < 1) continue;
            pfs[np] = sl; pss[np] = sl->sess; pids[np] = j->prompt + sl->prefill_pos; pns[np] = n;
            pwant[np] = sl->prefill_pos + n == j->n_prompt;
            ppos0[np] = strata_session_pos(sl->sess);
            budget -= n;
            np++;
        }
        if (!own) pw = NULL;   /* it pointed at `only`, not at memory of ours */
        pf = np > 0 ? pfs[0] : NULL;
    }
    mask_job mj = { NULL, 0 };
    pthread_t helper;
    int helper_on = 0;
    if (s->overlap_masks && nb > 0 && (mj.gm = st_malloc((size_t)nb * sizeof *mj.gm))) {
        for (int i = 0; i < nb; i++) if (bslot[i]->gm) mj.gm[mj.n++] = bslot[i]->gm;
        helper_on = mj.n > 0 && pthread_create(&helper, NULL, mask_worker, &mj) == 0;
    }
    int step_rc = 0;
    const double t_step = now_seconds();
    if (pf) {
        step_rc = strata_sessions_step_prefill_multi(batch, toks, nb, pss, pids, pns, pwant, np);
        for (int i = 0; i < nb; i++) { n_acc[i] = 0; picked[i] = -1; }
    } else if (nb > 0)
        step_rc = strata_sessions_step_spec(batch, toks, max_draft, nb, acc, n_acc, picked);
    if (env_bool(ENV_SERVER_TRACE)) {   /* measurement: how the step was made up and what it cost */
        int ptok = 0, pend = 0;
        for (int k = 0; pf && k < np; k++) { ptok += pns[k]; pend += pwant[k]; }
        fprintf(stderr, "strata: step %.3f decoding %d prompts %d (%d tokens, %d end) %.2f ms%s\n", t_step, nb,
                pf ? np : 0, ptok, pend, (now_seconds() - t_step) * 1e3, step_rc ? " (refused)" : "");
    }
    if (helper_on) pthread_join(helper, NULL);
    st_free(mj.gm);
    for (int k = 0; pf && k < np; k++) {   /* each prompt's tokens that went in (all, unless a pass failed midway) */
        srv_slot *sl = pfs[k];
        int moved = strata_session_pos(sl->sess) - ppos0[k];
        if (step_rc != 0 && moved == 0) slot_prefill(s, sl);   /* refused (maybe for another slot): alone */
        else {
            sl->prefill_pos += moved;
            if (sl->prefill_pos == sl->job->n_prompt) {
                if (step_rc != 0 && !strata_session_logits(sl->sess)) {
                    snprintf(sl->error, sizeof sl->error, "the prompt's last pass failed");
                    slot_end(sl, NULL);
                } else {
                    sl->phase = SLOT_DECODE;
                    slot_after_eval(s, sl);
                }
            }
        }
    }
    if (nb > 0 && step_rc != 0) {
        /* refused (or a device pass failed midway): the sessions that did not move are stepped
         * one by one, so only a bad slot ends */
        for (int i = 0; i < nb; i++) {
            if (strata_session_pos(bslot[i]->sess) != pos0[i]) continue;   /* it stepped */
            n_acc[i] = 0;
            picked[i] = -1;
            if (strata_session_eval(bslot[i]->sess, &toks[i], 1)) { slot_end(bslot[i], "length"); bslot[i] = NULL; }
        }
    }
    for (int i = 0; i < nb; i++) {
        if (!bslot[i]) continue;
        bslot[i]->n_accepted = n_acc[i];
        bslot[i]->picked = picked[i];
        memcpy(bslot[i]->accepted, acc + (size_t)i * STRATA_MAX_DRAFT, (size_t)n_acc[i] * sizeof(int32_t));
        slot_after_eval(s, bslot[i]);
    }
    st_free(batch); st_free(toks); st_free(bslot); st_free(max_draft); st_free(acc); st_free(n_acc);
    st_free(picked); st_free(pos0); st_free(pw);
}

/* ---- scheduler (s->mu held) -------------------------------------------------------------------- */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Tokens at the start of the prompt that the slot's KV cache already holds (a chat that
 * continues, a shared system prompt). At least one prompt token is always evaluated, for logits. */
static int slot_common_prefix(const srv_slot *sl, const srv_job *j) {
    const int32_t *h = strata_session_history(sl->sess);
    int pos = strata_session_pos(sl->sess), n = 0;
    if (!h) return 0;
    while (n < pos && n < j->n_prompt - 1 && h[n] == j->prompt[n]) n++;
    return n;
}

/* The slot's grammar matcher goes, and with it the session's mask. */
static void slot_grammar_reset(srv_slot *sl) {
    if (!sl->gm) return;
    strata_session_set_logits_mask(sl->sess, NULL, NULL);
    grammar_match_free(sl->gm);
    sl->gm = NULL;
}

static void slot_assign(srv_sched *s, srv_slot *sl, srv_job *j) {
    /* keep the common prefix: the contract of batch invariance makes its KV rows the same
     * bits a fresh prefill would compute, so output does not depend on what ran before */
    int keep = slot_common_prefix(sl, j);
    /* another slot (busy or idle) holding a longer prefix of the prompt gives its KV rows: a
     * copy on the device instead of a prefill (the system prompt of a chat whose slot is busy) */
    srv_slot *donor = NULL;
    int dn = keep;
    for (int i = 0; i < s->n_slots; i++) {
        if (&s->slots[i] == sl) continue;
        int n = slot_common_prefix(&s->slots[i], j);
        if (n > dn) { dn = n; donor = &s->slots[i]; }
    }
    if (donor && strata_session_copy_prefix(sl->sess, donor->sess, dn) == 0) { j->n_cached = dn; j->n_copied = dn; }
    else if (keep > 0 && strata_session_rewind(sl->sess, keep) == 0) j->n_cached = keep;
    else { strata_session_reset(sl->sess); j->n_cached = 0; }
    sl->prefill_pos = j->n_cached;
    sl->job = j;
    sl->phase = SLOT_PREFILL;
    sl->n_gen = 0;
    sl->n_steps = 0;
    sl->n_accepted = 0;
    strata_stats st;
    strata_session_get_stats(sl->sess, &st);   /* the session counts drafts across jobs */
    sl->base_drafted = st.n_drafted;
    sl->base_accepted = st.n_accepted;
    /* speculation keeps outputs identical only for greedy requests; logprobs would need every
     * verified row's distribution, which accepted drafts do not carry */
    j->spec = s->spec > 0 && j->sampler.temperature <= 0 && !j->logprobs && !j->grammar;
    slot_grammar_reset(sl);
    if (j->grammar) {
        if (!s->gvocab) s->gvocab = grammar_vocab_for_model(s->model);
        sl->gm = s->gvocab ? grammar_match_new(j->grammar, s->gvocab) : NULL;
        if (!sl->gm) snprintf(sl->error, sizeof sl->error, "out of memory for the grammar");
        else strata_session_set_logits_mask(sl->sess, grammar_logits_mask, sl->gm);
    }
    sl->finish = NULL;
    if (!j->grammar || sl->gm) sl->error[0] = 0;
    sbuf_clear(&sl->staged_text);
    strata_sampler_params sp = j->sampler;
    if (!j->has_seed) sp.seed = splitmix64(&s->seed_state);   /* the request had no seed */
    strata_session_set_sampler(sl->sess, &sp);
    strata_detok_init(&sl->detok);
    stop_filter_init(&sl->filter, j->stops, j->n_stops);
    j->state = JOB_RUNNING;
    j->t_start = now_seconds();
}

/* Publish one slot's step results to its job; frees the slot when the job ended. */
static void slot_publish(srv_sched *s, srv_slot *sl) {
    srv_job *j = sl->job;
    if (!j) return;
    if (sl->staged_text.len) sbuf_append(&j->text, sl->staged_text.p, sl->staged_text.len);
    sbuf_clear(&sl->staged_text);
    if (sl->staged_lp) {
        if (!j->lp) j->lp = json_array();
        json_array_extend(j->lp, sl->staged_lp);
        json_decref(sl->staged_lp);
        sl->staged_lp = NULL;
    }
    if (sl->phase == SLOT_DECODE && !j->t_prompt_done) {
        j->t_prompt_done = now_seconds();
        s->counters.prompt_tokens += (unsigned long long)(j->n_prompt - j->n_cached);
        s->counters.cached_tokens += (unsigned long long)j->n_cached;
        s->counters.copied_tokens += (unsigned long long)j->n_copied;
        s->counters.prompt_seconds += j->t_prompt_done - j->t_start;
    }
    s->counters.generated_tokens += (unsigned long long)(sl->n_gen - j->n_gen);
    j->n_gen = sl->n_gen;
    strata_stats st;
    strata_session_get_stats(sl->sess, &st);
    long drafted = st.n_drafted - sl->base_drafted, accepted = st.n_accepted - sl->base_accepted;
    s->counters.decode_steps += (unsigned long long)(sl->n_steps - j->n_steps);
    s->counters.spec_drafted += (unsigned long long)(drafted - j->n_drafted);
    s->counters.spec_accepted += (unsigned long long)(accepted - j->n_accepted);
    j->n_steps = sl->n_steps;
    j->n_drafted = drafted;
    j->n_accepted = accepted;
    int ended = sl->finish || sl->error[0] || j->cancelled;
    if (ended) {
        j->t_end = now_seconds();
        if (!j->t_prompt_done) j->t_prompt_done = j->t_end;
        s->counters.decode_seconds += j->t_end - j->t_prompt_done;
        if (j->cancelled) { s->counters.cancelled++; j->finish = sl->finish ? sl->finish : "stop"; }
        else if (sl->error[0]) { s->counters.failed++; memcpy(j->error, sl->error, sizeof j->error); j->finish = NULL; }
        else { s->counters.completed++; j->finish = sl->finish; }
        j->state = JOB_DONE;
        stop_filter_free(&sl->filter);
        slot_grammar_reset(sl);
        sl->job = NULL;
        sl->phase = SLOT_IDLE;
        pthread_cond_broadcast(&j->cv);
        job_unref_locked(j);
        return;
    }
    pthread_cond_broadcast(&j->cv);
}

static void *decode_main(void *arg) {
    srv_sched *s = arg;
    pthread_setname_np(pthread_self(), "strata-decode");
    srv_slot **active = st_calloc((size_t)s->n_slots, sizeof *active);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && active) {
        /* drop cancelled jobs */
        for (int i = 0; i < s->n_slots; i++)
            if (s->slots[i].job && s->slots[i].job->cancelled) slot_publish(s, &s->slots[i]);
        /* fill idle slots from the queue in FIFO order; each job goes to the idle slot whose
         * cache shares the longest prefix with its prompt */
        while (s->q_len) {
            srv_job *j = s->queue[s->q_head];
            srv_slot *best = NULL;
            int best_n = -1;
            for (int i = 0; i < s->n_slots; i++) {
                if (s->slots[i].job) continue;
                int n = slot_common_prefix(&s->slots[i], j);
                if (n > best_n) { best_n = n; best = &s->slots[i]; }
            }
            if (!best) break;
            s->q_head = (s->q_head + 1) % s->q_alloc;
            s->q_len--;
            slot_assign(s, best, j);
        }
        int n_active = 0;
        for (int i = 0; i < s->n_slots; i++) if (s->slots[i].job) active[n_active++] = &s->slots[i];
        if (!n_active) { pthread_cond_wait(&s->wake, &s->mu); continue; }
        pthread_mutex_unlock(&s->mu);
        double t0 = now_seconds();
        slots_step_all(s, active, n_active);
        double t1 = now_seconds();
        pthread_mutex_lock(&s->mu);
        s->counters.busy_seconds += t1 - t0;
        for (int i = 0; i < n_active; i++) slot_publish(s, active[i]);
    }
    pthread_mutex_unlock(&s->mu);
    st_free(active);
    return NULL;
}

int sched_init(srv_sched *s, strata_model *m, int n_slots, int queue_cap, int n_ctx, int spec, int kv_type, char *err,
               size_t errlen) {
    memset(s, 0, sizeof *s);
    s->model = m;
    {
        const char *ov = env_str(ENV_GRAMMAR_OVERLAP);
        strata_model_info mi;
        strata_model_get_info(m, &mi);
        s->overlap_masks = !strcmp(ov, "auto") ? !strcmp(mi.device, "cuda") : env_bool(ENV_GRAMMAR_OVERLAP);
    }
    s->n_slots = n_slots;
    s->spec = spec;
    s->step_tokens = SRV_STEP_TOKENS;
    s->q_cap = queue_cap > 0 ? queue_cap : 0;
    s->q_alloc = s->q_cap + n_slots;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    s->seed_state = (uint64_t)time(NULL) ^ ((uint64_t)(uintptr_t)s << 16);
    s->slots = st_calloc((size_t)n_slots, sizeof *s->slots);
    s->queue = st_calloc((size_t)s->q_alloc, sizeof *s->queue);
    if (!s->slots || !s->queue) { snprintf(err, errlen, "out of memory allocating %d slots", n_slots); return -1; }
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = n_ctx;
    sp.spec_draft = spec;
    sp.kv_type = kv_type;
    for (int i = 0; i < n_slots; i++) {
        char e[256] = "";
        s->slots[i].sess = strata_session_new(m, &sp, e, sizeof e);
        if (!s->slots[i].sess) { snprintf(err, errlen, "slot %d: cannot create a session: %s", i, e); return -1; }
        sbuf_init(&s->slots[i].staged_text);
    }
    s->n_ctx = strata_session_n_ctx(s->slots[0].sess);
    if (pthread_create(&s->thread, NULL, decode_main, s)) { snprintf(err, errlen, "cannot start the decode thread"); return -1; }
    s->thread_started = 1;
    return 0;
}

void sched_set_step_tokens(srv_sched *s, int n) {
    pthread_mutex_lock(&s->mu);
    s->step_tokens = n > 0 ? n : SRV_STEP_TOKENS;
    pthread_mutex_unlock(&s->mu);
}

void sched_stop(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->mu);
    if (s->thread_started) {
        pthread_join(s->thread, NULL);
        s->thread_started = 0;
    }
    pthread_mutex_lock(&s->mu);
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        srv_slot *sl = &s->slots[i];
        if (!sl->job) continue;
        srv_job *j = sl->job;
        /* what the last step produced still reaches the client, then the error */
        if (sl->staged_text.len) sbuf_append(&j->text, sl->staged_text.p, sl->staged_text.len);
        sbuf_clear(&sl->staged_text);
        j->state = JOB_DONE;
        j->finish = NULL;
        j->t_end = now_seconds();
        snprintf(j->error, sizeof j->error, "the server is shutting down");
        pthread_cond_broadcast(&j->cv);
        stop_filter_free(&sl->filter);
        slot_grammar_reset(sl);
        sl->job = NULL;
        sl->phase = SLOT_IDLE;
        job_unref_locked(j);
    }
    while (s->queue && s->q_len) {
        srv_job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->q_alloc;
        s->q_len--;
        j->state = JOB_DONE;
        j->finish = NULL;
        snprintf(j->error, sizeof j->error, "the server is shutting down");
        pthread_cond_broadcast(&j->cv);
        job_unref_locked(j);
    }
    pthread_mutex_unlock(&s->mu);
}

void sched_free(srv_sched *s) {
    sched_stop(s);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; s->slots && i < s->n_slots; i++) {
        srv_slot *sl = &s->slots[i];
        slot_grammar_reset(sl);
        json_decref(sl->staged_lp);
        sbuf_free(&sl->staged_text);
        if (sl->sess) strata_session_free(sl->sess);
    }
    grammar_vocab_free(s->gvocab);
    s->gvocab = NULL;
    pthread_mutex_unlock(&s->mu);
    st_free(s->slots);
    st_free(s->queue);
    s->slots = NULL;
    s->queue = NULL;
}

/* caller holds s->mu. 0: there is room for one more request; else -1 (full) or -2 (stopped)
 * with *running / *waiting set for the 429 message. */
static int sched_admit_locked(srv_sched *s, int *running, int *waiting) {
    int busy = 0;
    for (int i = 0; i < s->n_slots; i++) busy += s->slots[i].job != NULL;
    /* a job waits in the ring until the decode thread moves it into a free slot, so admitted
     * work is running (busy) + waiting (q_len) + reserved (being tokenized), bounded by slots + queue */
    if (!s->stop && busy + s->q_len + s->reserved < s->n_slots + s->q_cap) return 0;
    if (!s->stop) s->counters.rejected++;
    /* jobs in the ring that free slots will take at the decode thread's next iteration are
     * starting, not waiting; reserved requests wait too (their prompts are being read) */
    int starting = s->n_slots - busy < s->q_len ? s->n_slots - busy : s->q_len;
    if (running) *running = busy + starting;
    if (waiting) *waiting = s->q_len - starting + s->reserved;
    return s->stop ? -2 : -1;
}

int sched_reserve(srv_sched *s, int *running, int *waiting) {
    pthread_mutex_lock(&s->mu);
    int rc = sched_admit_locked(s, running, waiting);
    if (!rc) s->reserved++;
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sched_full(srv_sched *s, int *running, int *waiting) {
    pthread_mutex_lock(&s->mu);
    int rc = sched_admit_locked(s, running, waiting);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void sched_unreserve(srv_sched *s) {
    pthread_mutex_lock(&s->mu);
    s->reserved--;
    pthread_mutex_unlock(&s->mu);
}

/* caller holds s->mu: the job joins the ring */
static void sched_enqueue_locked(srv_sched *s, srv_job *j) {
    j->refs++;
    j->state = JOB_QUEUED;
    s->queue[(s->q_head + s->q_len) % s->q_alloc] = j;
    s->q_len++;
    pthread_cond_signal(&s->wake);
}

int sched_submit_reserved(srv_sched *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    s->reserved--;
    int rc = s->stop ? -2 : 0;
    if (!rc) sched_enqueue_locked(s, j);
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int sched_submit(srv_sched *s, srv_job *j, int *running, int *waiting) {
    pthread_mutex_lock(&s->mu);
    int rc = sched_admit_locked(s, running, waiting);
    if (rc) { pthread_mutex_unlock(&s->mu); return rc; }
    sched_enqueue_locked(s, j);
    pthread_mutex_unlock(&s->mu);
    return 0;
}


void sched_cancel(srv_sched *s, srv_job *j) {
    pthread_mutex_lock(&s->mu);
    j->cancelled = 1;
    if (j->state == JOB_QUEUED) {
        /* remove from the ring, keeping FIFO order of the others */
        for (int i = 0; i < s->q_len; i++) {
            int at = (s->q_head + i) % s->q_alloc;
            if (s->queue[at] != j) continue;
            for (int k = i; k + 1 < s->q_len; k++)
                s->queue[(s->q_head + k) % s->q_alloc] = s->queue[(s->q_head + k + 1) % s->q_alloc];
            s->q_len--;
            j->state = JOB_DONE;
            j->finish = "stop";
            s->counters.cancelled++;
            pthread_cond_broadcast(&j->cv);
            job_unref_locked(j);
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

void sched_snapshot(srv_sched *s, int *busy, int *queued, srv_counters *c) {
    pthread_mutex_lock(&s->mu);
    int b = 0;
    for (int i = 0; i < s->n_slots; i++) b += s->slots[i].job != NULL;
    if (busy) *busy = b;
    if (queued) *queued = s->q_len;
    if (c) *c = s->counters;
    pthread_mutex_unlock(&s->mu);
}
