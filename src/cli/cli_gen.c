/* Generation helpers of run and chat: streaming with stop strings, interruptible prompt
 * evaluation, stats, sessions. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli_gen.h"
#include "core/util.h"
#include "grammar/grammar_model.h"

volatile sig_atomic_t cli_interrupted;
void cli_on_sigint(int sig) { (void)sig; cli_interrupted++; }


void stream_emit(streamer *s, const char *p, size_t n) {
    if (s->len + n + 1 > s->cap) {
        size_t nc = (s->len + n + 1) * 2;
        char *t = st_realloc(s->text, nc);
        if (!t) return;
        s->text = t; s->cap = nc;
    }
    memcpy(s->text + s->len, p, n);
    s->len += n;
    s->text[s->len] = 0;
    size_t safe = s->len;
    for (int i = 0; i < s->n_stops; i++) {
        /* a match cannot start before `printed`: partial matches are held back */
        const char *hit = strstr(s->text + s->printed, s->stops[i]);
        if (hit) {
            if ((size_t)(hit - s->text) < safe) safe = (size_t)(hit - s->text);
            s->stopped = 1;
        }
    }
    if (!s->stopped) {
        /* hold back the longest suffix that is a proper prefix of a stop string */
        for (int i = 0; i < s->n_stops; i++) {
            size_t sl = strlen(s->stops[i]);
            for (size_t k = sl - 1; k > 0; k--)
                if (k <= s->len && !memcmp(s->text + s->len - k, s->stops[i], k)) {
                    if (s->len - k < safe) safe = s->len - k;
                    break;
                }
        }
    }
    if (safe > s->printed) {
        fwrite(s->text + s->printed, 1, safe - s->printed, stdout);
        fflush(stdout);
        s->printed = safe;
    }
}

/* Evaluate all of the prompt but its last token in steps of a few tokens, so that Ctrl-C stops
 * prompt processing within a step. Returns 0, 1 when cli_interrupted, -1 on failure; *secs gets the
 * time taken. The last token goes to strata_generate. */
/* The prompt in chunks, Ctrl-C checked between them: 32 tokens first, doubled (up to 512, the
 * widest pass) while a chunk takes under 50 ms, so a GPU gets its wide passes and a CPU keeps
 * answering Ctrl-C within a chunk's time. The chunking never changes a bit (batch invariance). */
int eval_prompt_interruptible(strata_session *s, const int32_t *ids, int n, double *secs) {
    int step = 32;
    double t0 = now_seconds();
    for (int i = 0; i < n;) {
        if (cli_interrupted) { *secs = now_seconds() - t0; return 1; }
        int k = n - i < step ? n - i : step;
        double c0 = now_seconds();
        if (strata_session_eval(s, ids + i, k) != 0) return -1;
        i += k;
        if (now_seconds() - c0 < 0.05 && step < 512) step *= 2;
    }
    *secs = now_seconds() - t0;
    return 0;
}

int on_token(int32_t id, void *user) {
    streamer *s = user;
    if (cli_interrupted) return 1;
    if (s->gm && grammar_match_token(s->gm, id) != 0) {
        fprintf(stderr, "strata: token %d left the grammar\n", id);
        return 1;
    }
    if (strata_token_is_eog(s->m, id)) return 0;
    char buf[4096];
    int n = strata_detok_push(s->m, &s->dt, id, buf, sizeof buf);
    if (n > 0) stream_emit(s, buf, (size_t)n);
    return s->stopped;
}

void stream_finish(streamer *s) {
    char buf[64];
    int n = strata_detok_flush(&s->dt, buf, sizeof buf);
    if (n > 0 && !s->stopped) stream_emit(s, buf, (size_t)n);
    if (!s->stopped && s->len > s->printed) { fwrite(s->text + s->printed, 1, s->len - s->printed, stdout); s->printed = s->len; }
    fflush(stdout);
}

/* pre: prompt tokens and seconds evaluated before strata_generate (eval_prompt_interruptible) */
void print_stats(const strata_session *sess, const strata_model *m, int pre_n, double pre_t) {
    strata_stats st;
    strata_model_info info;
    strata_session_get_stats(sess, &st);
    st.n_prompt += pre_n;
    st.t_prompt += pre_t;
    st.prompt_tps = st.t_prompt > 0 ? st.n_prompt / st.t_prompt : 0;
    strata_model_get_info(m, &info);
    fprintf(stderr, "\n[%s, %d threads] load %.2f s | prompt %d tok, %.1f tok/s | decode %d tok, %.1f tok/s, %.1f GB/s of weights\n",
            info.device, info.n_threads, st.t_load, st.n_prompt, st.prompt_tps, st.n_gen, st.gen_tps,
            st.gen_tps * (double)st.weight_bytes_per_token / 1e9);
    if (st.n_windows > 0)
        fprintf(stderr, "[spec] windows %ld | drafted %ld | accepted %ld (%.0f%%) | mean accepted per window %.2f | tokens per pass %.2f\n",
                st.n_windows, st.n_drafted, st.n_accepted, 100.0 * st.n_accepted / (st.n_drafted ? st.n_drafted : 1),
                (double)st.n_accepted / st.n_windows, st.n_gen > 1 ? (double)(st.n_gen - 1) / (st.n_gen - 1 - st.n_accepted) : 1.0);
}

void print_kv_cache(FILE *f, const strata_model *m, const strata_session *s) {
    strata_model_info info;
    strata_model_get_info(m, &info);
    size_t pp = 0, total = strata_session_kv_bytes(s, &pp);
    const int n = strata_session_n_ctx(s);
    const size_t row = pp / (2 * (size_t)info.n_layers);   /* one layer's K (or V) row */
    const size_t kd = (size_t)info.n_kv_heads * info.head_dim;
    const char *type = row == kd * 2 ? "f16" : row == kd * 4 ? "f32" : row == kd / 32 * 36 ? "int8" : "?";
    fprintf(f, "kv cache     %zu bytes per position (%s, 2 x %d layers x %zu), %.1f MiB (%zu bytes) at %d positions%s\n", pp,
            type, info.n_layers, row, total / 1048576.0, total, n,
            total < pp * (size_t)n ? " (the sliding-window layers keep a ring)" : "");
}

/* Session with the run/chat options (speculation, draft model). */
strata_session *open_session(strata_model *m, const cli_opts *o, strata_model **draft) {
    char err[512];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = o->n_ctx;
    sp.kv_type = o->kv_type;
    sp.sampler = o->sp;
    sp.spec_draft = o->spec;
    if (o->draft_model && !o->spec) sp.spec_draft = 4;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "strata: %s\n", err); return NULL; }
    if (o->show_stats) print_kv_cache(stderr, m, s);
    if (o->draft_model) {
        cli_opts d = *o;
        d.model = o->draft_model;
        *draft = cli_load_model(&d);
        if (!*draft || strata_session_set_draft_model(s, *draft, err, sizeof err) != 0) {
            if (*draft) fprintf(stderr, "strata: --draft-model: %s\n", err);
            strata_session_free(s);
            return NULL;
        }
    }
    return s;
}

/* Tokenize with special tokens parsed (chat markup) or not (plain prompts). */
int32_t *tokenize_alloc(const strata_model *m, const char *text, int add_bos, int special, int *n) {
    size_t len = strlen(text);
    int cap = (int)len + 16;
    int32_t *ids = st_malloc((size_t)cap * sizeof(int32_t));
    if (!ids) return NULL;
    *n = strata_tokenize(m, text, len, add_bos, special, ids, cap);
    if (*n < 0 || *n > cap) { st_free(ids); return NULL; }
    return ids;
}

