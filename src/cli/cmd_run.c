/* strata run / strata chat: stream a model's answer to stdout, stats to stderr. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "cli_common.h"
#include "core/util.h"
#include "grammar/grammar_model.h"

static const char *run_usage =
    "usage: strata run [-m MODEL] [-p PROMPT | -f FILE] [-n N] [--chat] [--system TEXT]\n"
    "                  [--temp T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S]\n"
    "                  [--stop STR]... [-t THREADS] [-c CTX] [--exact] [--device cpu|cuda] [--no-stats]\n"
    "                  [--spec N] [--draft-model DRAFT.gguf] [--kv f16|int8]\n"
    "                  [--grammar GBNF | --json-schema SCHEMA]\n"
    "  Answers one prompt. --chat formats it with the model's chat template; --temp 0 is greedy.\n"
    "  --exact is the reference mode (f32 activations, dequantized weights).\n"
    "  --spec N drafts up to N (<= 7) tokens per step from the context (suffix matching) or\n"
    "  from --draft-model, verified in one batched pass: greedy output is unchanged.\n"
    "  --kv int8 keeps the KV cache as int8 rows with a scale per 32 values (CPU; 0.56x the\n"
    "  memory of f16, other bits than f16).\n"
    "  --grammar / --json-schema constrain the answer (GBNF text or a JSON schema; @FILE reads a\n"
    "  file; --json-schema '{}' is any JSON value): tokens the grammar forbids are masked.\n";

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted++; }

/* Streams decoded text, holding back any suffix that could begin a stop string. */
typedef struct {
    const strata_model *m;
    strata_detok dt;
    const char **stops; int n_stops;
    char *text; size_t len, cap, printed;
    int stopped;
    grammar_match *gm;             /* --grammar / --json-schema: advanced by every token */
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

static int on_token(int32_t id, void *user) {
    streamer *s = user;
    if (interrupted) return 1;
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

static void stream_finish(streamer *s) {
    char buf[64];
    int n = strata_detok_flush(&s->dt, buf, sizeof buf);
    if (n > 0 && !s->stopped) stream_emit(s, buf, (size_t)n);
    if (!s->stopped && s->len > s->printed) { fwrite(s->text + s->printed, 1, s->len - s->printed, stdout); s->printed = s->len; }
    fflush(stdout);
}

static void print_stats(const strata_session *sess, const strata_model *m) {
    strata_stats st;
    strata_model_info info;
    strata_session_get_stats(sess, &st);
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

/* Tokenize a plain prompt (special tokens parsed or not); chat prompts go through
 * strata_chat_tokenize. */
static int32_t *tokenize_alloc(const strata_model *m, const char *text, int add_bos, int special, int *n) {
    size_t len = strlen(text);
    int cap = (int)len + 16;
    int32_t *ids = st_malloc((size_t)cap * sizeof(int32_t));
    if (!ids) return NULL;
    *n = strata_tokenize(m, text, len, add_bos, special, ids, cap);
    if (*n < 0 || *n > cap) { st_free(ids); return NULL; }
    return ids;
}

/* --grammar / --json-schema: the grammar, the model's vocabulary and the matcher whose mask
 * the session applies before each draw. 0 (also when neither was given), -1 with a message. */
typedef struct { grammar *g; grammar_vocab *v; grammar_match *match; char *text[2]; } cli_grammar;

static int open_grammar(const strata_model *m, const cli_opts *o, strata_session *s, cli_grammar *gc) {
    if (!o->grammar && !o->json_schema) return 0;
    const char *src[2] = { o->grammar, o->json_schema };
    for (int k = 0; k < 2; k++)
        if (src[k] && src[k][0] == '@') {
            gc->text[k] = cli_read_file(src[k] + 1, NULL);
            if (!gc->text[k]) return -1;
            src[k] = gc->text[k];
        }
    char err[512] = "";
    gc->g = grammar_from_options(src[0], src[1], 0, err, sizeof err);
    if (!gc->g) { fprintf(stderr, "strata: %s: %s\n", o->grammar ? "--grammar" : "--json-schema", err); return -1; }
    gc->v = grammar_vocab_for_model(m);
    gc->match = gc->v ? grammar_match_new(gc->g, gc->v) : NULL;
    if (!gc->match) { fprintf(stderr, "strata: out of memory for the grammar\n"); return -1; }
    strata_session_set_logits_mask(s, grammar_logits_mask, gc->match);
    return 0;
}

static void close_grammar(cli_grammar *gc) {
    grammar_match_free(gc->match);
    grammar_vocab_free(gc->v);
    grammar_free(gc->g);
    st_free(gc->text[0]);
    st_free(gc->text[1]);
}

int cmd_run(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, &o, run_usage);
    if (rc) return rc > 0 ? 0 : 1;
    char *file_prompt = NULL;
    if (o.prompt_file) {
        file_prompt = cli_read_file(o.prompt_file, NULL);
        if (!file_prompt) return 1;
        o.prompt = file_prompt;
    }
    if (!o.prompt) o.prompt = "Tell me a short story about a robot who learns to paint.";
    strata_model *m = cli_load_model(&o);
    if (!m) { st_free(file_prompt); return 1; }
    char err[512];
    int n_ids = 0;
    int32_t *ids = NULL;
    if (o.chat) {
        strata_chat_msg msgs[2];
        int n = 0;
        if (o.system) msgs[n++] = (strata_chat_msg){ "system", o.system };
        msgs[n++] = (strata_chat_msg){ "user", o.prompt };
        /* the template's markers are special tokens, the user's text is text */
        n_ids = strata_chat_tokenize(m, msgs, n, 1, NULL, &ids, NULL, err, sizeof err);
        if (n_ids < 0) { fprintf(stderr, "strata: chat template: %s\n", err); strata_model_free(m); st_free(file_prompt); return 1; }
    } else ids = tokenize_alloc(m, o.prompt, 1, 0, &n_ids);
    cli_grammar gc = { 0 };
    strata_model *draft = NULL;
    strata_session *s = ids ? open_session(m, &o, &draft) : NULL;
    rc = 1;
    if (!ids) fprintf(stderr, "strata: cannot tokenize the prompt\n");
    else if (!s) { /* reported */ }
    else if (n_ids + 1 > strata_session_n_ctx(s)) fprintf(stderr, "strata: the prompt has %d tokens; the context holds %d (use -c)\n", n_ids, strata_session_n_ctx(s));
    else {
        signal(SIGINT, on_sigint);
        streamer st = { .m = m, .stops = o.stops, .n_stops = o.n_stops };
        strata_detok_init(&st.dt);
        if (open_grammar(m, &o, s, &gc) != 0) goto done;
        st.gm = gc.match;
        if (!o.chat) { fputs(o.prompt, stdout); fflush(stdout); }
        int max = o.n_predict;
        if (max > strata_session_n_ctx(s) - n_ids) max = strata_session_n_ctx(s) - n_ids;
        int n = strata_generate(s, ids, n_ids, max, on_token, &st);
        stream_finish(&st);
        fputc('\n', stdout);
        st_free(st.text);
        if (n >= 0) { rc = 0; if (o.show_stats) print_stats(s, m); }
        else fprintf(stderr, "strata: generation failed\n");
        if (gc.match && o.show_stats) {
            long computed, cached;
            double secs;
            grammar_match_stats(gc.match, &computed, &cached, &secs);
            fprintf(stderr, "[grammar] masks computed %ld (%.1f ms), from the cache %ld\n", computed, secs * 1e3, cached);
        }
    }
done:
    close_grammar(&gc);
    strata_session_free(s);
    strata_model_free(draft);
    st_free(ids); st_free(file_prompt);
    strata_model_free(m);
    return rc;
}

/* ---- interactive chat ------------------------------------------------------------------ */
static const char *chat_usage =
    "usage: strata chat [-m MODEL] [--system TEXT] [-n N] [--temp T] [--seed S] [-t THREADS] [-c CTX]\n"
    "                   [--spec N] [--draft-model DRAFT.gguf] [--kv f16|int8]\n"
    "  Interactive chat with the model's chat template. Ctrl-C stops a reply; a second Ctrl-C\n"
    "  (or Ctrl-D at the prompt) exits.\n";

int cmd_chat(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(argc, argv, &o, chat_usage);
    if (rc) return rc > 0 ? 0 : 1;
    strata_model *m = cli_load_model(&o);
    if (!m) return 1;
    char err[512];
    strata_model *draft = NULL;
    strata_session *s = open_session(m, &o, &draft);
    if (!s) { strata_model_free(draft); strata_model_free(m); return 1; }
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
    for (;;) {
        interrupted = 0;
        fprintf(stderr, "> ");
        if (!fgets(line, sizeof line, stdin)) break;    /* Ctrl-D, or Ctrl-C at the prompt */
        size_t L = strlen(line);
        while (L && (line[L - 1] == '\n' || line[L - 1] == '\r')) line[--L] = 0;
        if (!L) continue;
        if (n_msgs + 2 > MAX_MSGS) { fprintf(stderr, "strata: conversation too long\n"); break; }
        msgs[n_msgs++] = (strata_chat_msg){ "user", st_strdup(line) };
        int32_t *ids = NULL;
        int n_ids = strata_chat_tokenize(m, msgs, n_msgs, 1, NULL, &ids, NULL, err, sizeof err);
        if (n_ids < 0) { fprintf(stderr, "strata: chat template: %s\n", err); break; }
        if (!ids || n_ids + 2 > strata_session_n_ctx(s)) {
            fprintf(stderr, "strata: the conversation no longer fits the context (%d tokens)\n", strata_session_n_ctx(s));
            st_free(ids);
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
        if (n < 0) { fprintf(stderr, "strata: generation failed\n"); break; }
        if (interrupted > 1) break;
        if (interrupted) fprintf(stderr, "[stopped]\n");
    }
    fputc('\n', stderr);
    for (int i = 0; i < n_msgs; i++) st_free((void *)msgs[i].content);
    st_free(msgs);
    strata_session_free(s);
    strata_model_free(draft);
    strata_model_free(m);
    return 0;
}
