/* strata run / strata chat: stream a model's answer to stdout, stats to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "cli_common.h"
#include "core/util.h"

static const cli_command run_cmd = {
    CMD_RUN, "run", "[-m MODEL] [-p PROMPT | -f FILE] [options]",
    "Answers one prompt, streaming the text to stdout and the stats to stderr. --chat formats it\n"
    "with the model's chat template; --temp 0 is greedy. Ctrl-C stops (exit 130).\n", 0 };
static const cli_command chat_cmd = {
    CMD_CHAT, "chat", "[-m MODEL] [options]",
    "Interactive chat with the model's chat template. Ctrl-C stops a reply; Ctrl-D (or a\n"
    "second Ctrl-C) exits.\n", 0 };

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted++; }

/* Streams decoded text, holding back any suffix that could begin a stop string. */
typedef struct {
    const strata_model *m;
    strata_detok dt;
    const char **stops; int n_stops;
    char *text; size_t len, cap, printed;
    int stopped;
} streamer;

static void stream_emit(streamer *s, const char *p, size_t n) {
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
 * prompt processing within a step. Returns 0, 1 when interrupted, -1 on failure; *secs gets the
 * time taken. The last token goes to strata_generate. */
static int eval_prompt_interruptible(strata_session *s, const int32_t *ids, int n, double *secs) {
    enum { STEP = 8 };
    double t0 = now_seconds();
    for (int i = 0; i < n; i += STEP) {
        if (interrupted) { *secs = now_seconds() - t0; return 1; }
        if (strata_session_eval(s, ids + i, n - i < STEP ? n - i : STEP) != 0) return -1;
    }
    *secs = now_seconds() - t0;
    return 0;
}

static int on_token(int32_t id, void *user) {
    streamer *s = user;
    if (interrupted) return 1;
    if (strata_token_is_eog(s->m, id)) return 0;
    char buf[4096];
    int n = strata_detok_push(s->m, &s->dt, id, buf, sizeof buf);
    if (n > 0) stream_emit(s, buf, (size_t)n);
    return s->stopped;
}

static void stream_finish(streamer *s) {
    char buf[64];
    int n = strata_detok_flush(&s->dt, buf, sizeof buf);
    if (n > 0 && !s->stopped) stream_emit(s, buf, (size_t)n);
    if (!s->stopped && s->len > s->printed) { fwrite(s->text + s->printed, 1, s->len - s->printed, stdout); s->printed = s->len; }
    fflush(stdout);
}

/* pre: prompt tokens and seconds evaluated before strata_generate (eval_prompt_interruptible) */
static void print_stats(const strata_session *sess, const strata_model *m, int pre_n, double pre_t) {
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

/* Session with the run/chat options (speculation, draft model). */
static strata_session *open_session(strata_model *m, const cli_opts *o, strata_model **draft) {
    char err[512];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = o->n_ctx;
    sp.kv_type = o->kv_type;
    sp.sampler = o->sp;
    sp.spec_draft = o->spec;
    if (o->draft_model && !o->spec) sp.spec_draft = 4;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "strata: %s\n", err); return NULL; }
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
static int32_t *tokenize_alloc(const strata_model *m, const char *text, int add_bos, int special, int *n) {
    size_t len = strlen(text);
    int cap = (int)len + 16;
    int32_t *ids = st_malloc((size_t)cap * sizeof(int32_t));
    if (!ids) return NULL;
    *n = strata_tokenize(m, text, len, add_bos, special, ids, cap);
    if (*n < 0 || *n > cap) { st_free(ids); return NULL; }
    return ids;
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&run_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    char *file_prompt = NULL;
    if (o.prompt_file) {
        if (o.prompt) return cli_usage_error("run", "give either -p PROMPT or -f FILE, not both");
        file_prompt = cli_read_file(o.prompt_file, NULL);
        if (!file_prompt) return CLI_ERR;
        o.prompt = file_prompt;
    }
    if (!o.prompt) o.prompt = "Tell me a short story about a robot who learns to paint.";
    strata_model *m = cli_load_model(&o);
    if (!m) { st_free(file_prompt); return CLI_ERR; }
    char err[512];
    char *text = NULL;
    if (o.chat) {
        strata_chat_msg msgs[2];
        int n = 0;
        if (o.system) msgs[n++] = (strata_chat_msg){ "system", o.system };
        msgs[n++] = (strata_chat_msg){ "user", o.prompt };
        text = strata_chat_format(m, msgs, n, 1, NULL, err, sizeof err);
        if (!text) { fprintf(stderr, "strata: chat template: %s\n", err); strata_model_free(m); st_free(file_prompt); return CLI_ERR; }
    }
    int n_ids;
    int32_t *ids = tokenize_alloc(m, text ? text : o.prompt, 1, o.chat, &n_ids);
    strata_model *draft = NULL;
    strata_session *s = ids ? open_session(m, &o, &draft) : NULL;
    rc = CLI_ERR;
    if (!ids) fprintf(stderr, "strata: cannot tokenize the prompt\n");
    else if (!s) { /* reported */ }
    else if (n_ids < 1) fprintf(stderr, "strata: the prompt is empty\n");
    else if (n_ids + 1 > strata_session_n_ctx(s)) fprintf(stderr, "strata: the prompt has %d tokens; the context holds %d (use -c)\n", n_ids, strata_session_n_ctx(s));
    else {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigaction(SIGINT, &sa, NULL);
        streamer st = { .m = m, .stops = o.stops, .n_stops = o.n_stops };
        strata_detok_init(&st.dt);
        if (!o.chat) { fputs(o.prompt, stdout); fflush(stdout); }
        int max = o.n_predict;
        if (max < 0 || max > strata_session_n_ctx(s) - n_ids) max = strata_session_n_ctx(s) - n_ids;
        double pre_t = 0;
        int n = 0;
        if (max == 0) {   /* -n 0: the prompt is evaluated (its stats are printed), nothing generated */
            double t0 = now_seconds();
            n = eval_prompt_interruptible(s, ids, n_ids, &pre_t) < 0 ? -1 : 0;
            pre_t = now_seconds() - t0;
            if (n == 0) { rc = CLI_OK; if (o.show_stats && !interrupted) print_stats(s, m, n_ids, pre_t); }
            else fprintf(stderr, "strata: prompt evaluation failed\n");
        } else {
            int e = eval_prompt_interruptible(s, ids, n_ids - 1, &pre_t);
            n = e == 0 ? strata_generate(s, ids + n_ids - 1, 1, max, on_token, &st) : e > 0 ? 0 : -1;
            stream_finish(&st);
            if (n >= 0) { rc = CLI_OK; if (o.show_stats && !interrupted) print_stats(s, m, n_ids - 1, pre_t); }
            else fprintf(stderr, "strata: generation failed\n");
            if (n > 0 && n >= max && (o.n_predict < 0 || max < o.n_predict)) fprintf(stderr, "strata: stopped at the end of the context (%d tokens)\n", strata_session_n_ctx(s));
        }
        fputc('\n', stdout);
        fflush(stdout);
        st_free(st.text);
        if (interrupted) { fprintf(stderr, "strata: interrupted\n"); rc = CLI_INTERRUPTED; }
    }
    strata_session_free(s);
    strata_model_free(draft);
    st_free(ids); st_free(text); st_free(file_prompt);
    strata_model_free(m);
    return rc;
}

/* ---- interactive chat ------------------------------------------------------------------ */
int cmd_chat(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&chat_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    strata_model *m = cli_load_model(&o);
    if (!m) return CLI_ERR;
    char err[512];
    strata_model *draft = NULL;
    strata_session *s = open_session(m, &o, &draft);
    if (!s) { strata_model_free(draft); strata_model_free(m); return CLI_ERR; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;   /* no SA_RESTART: a Ctrl-C at the prompt ends fgets */
    sigaction(SIGINT, &sa, NULL);

    enum { MAX_MSGS = 512 };
    strata_chat_msg *msgs = st_calloc(MAX_MSGS, sizeof *msgs);
    int n_msgs = 0;
    if (o.system) msgs[n_msgs++] = (strata_chat_msg){ "system", st_strdup(o.system) };
    char line[16384];
    fprintf(stderr, "strata chat: type a message; Ctrl-C stops a reply, Ctrl-D exits.\n");
    rc = CLI_OK;
    for (;;) {
        interrupted = 0;
        fprintf(stderr, "> ");
        if (!fgets(line, sizeof line, stdin)) {    /* Ctrl-D, or Ctrl-C at the prompt */
            if (interrupted) rc = CLI_INTERRUPTED;
            break;
        }
        size_t L = strlen(line);
        while (L && (line[L - 1] == '\n' || line[L - 1] == '\r')) line[--L] = 0;
        if (!L) continue;
        if (n_msgs + 2 > MAX_MSGS) { fprintf(stderr, "strata: conversation too long\n"); rc = CLI_ERR; break; }
        msgs[n_msgs++] = (strata_chat_msg){ "user", st_strdup(line) };
        char *text = strata_chat_format(m, msgs, n_msgs, 1, NULL, err, sizeof err);
        if (!text) { fprintf(stderr, "strata: chat template: %s\n", err); rc = CLI_ERR; break; }
        int n_ids;
        int32_t *ids = tokenize_alloc(m, text, 1, 1, &n_ids);
        st_free(text);
        if (!ids || n_ids + 2 > strata_session_n_ctx(s)) {
            fprintf(stderr, "strata: the conversation no longer fits the context (%d tokens)\n", strata_session_n_ctx(s));
            st_free(ids);
            rc = CLI_ERR;
            break;
        }
        /* reuse the KV cache for the common prefix with what the session already holds */
        const int32_t *hist = strata_session_history(s);
        int keep = 0, held = strata_session_pos(s);
        while (keep < held && keep < n_ids - 1 && hist[keep] == ids[keep]) keep++;
        if (strata_session_rewind(s, keep) != 0) { strata_session_reset(s); keep = 0; }
        streamer st = { .m = m, .stops = o.stops, .n_stops = o.n_stops };
        strata_detok_init(&st.dt);
        int max = o.n_predict;
        if (max > strata_session_n_ctx(s) - n_ids) max = strata_session_n_ctx(s) - n_ids;
        int n = strata_generate(s, ids + keep, n_ids - keep, max, on_token, &st);
        stream_finish(&st);
        fputc('\n', stdout);
        fflush(stdout);
        st_free(ids);
        msgs[n_msgs++] = (strata_chat_msg){ "assistant", st_strdup(st.text ? st.text : "") };
        st_free(st.text);
        if (n < 0) { fprintf(stderr, "strata: generation failed\n"); rc = CLI_ERR; break; }
        if (interrupted > 1) { rc = CLI_INTERRUPTED; break; }
        if (interrupted) fprintf(stderr, "[stopped]\n");
    }
    fputc('\n', stderr);
    for (int i = 0; i < n_msgs; i++) st_free((void *)msgs[i].content);
    st_free(msgs);
    strata_session_free(s);
    strata_model_free(draft);
    strata_model_free(m);
    return rc;
}
