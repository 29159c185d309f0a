/* strata chat: the interactive chat.
 *
 * On a terminal the input line has editing and history (libedit's readline interface; the
 * history is kept in <cache dir>/chat_history); from a pipe lines are read as they come.
 * A message that starts with """ goes on over several lines until one ends with """.
 * Lines starting with '/' are commands (/help), never sent to the model.
 * When the conversation outgrows the context, the oldest turns are dropped (the system prompt
 * stays) and the chat says so. Ctrl-C stops the prompt processing (within a step of 8 tokens)
 * or the reply, and at the prompt exits (130); Ctrl-D or /bye exits (0). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <editline/readline.h>
#include "cli.h"
#include "cli_common.h"
#include "cli_gen.h"
#include "core/env.h"
#include "core/util.h"

static const cli_command chat_cmd = {
    CMD_CHAT, "chat", "[-m MODEL] [options]",
    "Interactive chat with the model's chat template. Line editing and history on a terminal;\n"
    "\"\"\" starts and ends a message of several lines; /help lists the commands (/bye, /clear,\n"
    "/system, /set, /show). When the conversation outgrows the context (-c) the oldest turns are\n"
    "dropped, the system prompt kept. Ctrl-C stops a reply; Ctrl-D or /bye exits.\n", 0 };

typedef struct chat {
    strata_model *m;
    strata_session *s;
    cli_opts *o;
    strata_chat_msg *msgs;      /* contents owned (st_strdup) */
    int n, cap;
    char *system;               /* owned, or NULL */
    int tty;
    char hist_path[4096];
} chat;

static void msgs_drop(chat *c, int from, int count) {
    for (int i = from; i < from + count; i++) st_free((void *)c->msgs[i].content);
    memmove(c->msgs + from, c->msgs + from + count, (size_t)(c->n - from - count) * sizeof *c->msgs);
    c->n -= count;
}

static int msgs_push(chat *c, const char *role, const char *text) {
    if (c->n == c->cap) {
        int nc = c->cap ? c->cap * 2 : 32;
        strata_chat_msg *nm = st_realloc(c->msgs, (size_t)nc * sizeof *nm);
        if (!nm) return -1;
        c->msgs = nm; c->cap = nc;
    }
    char *t = st_strdup(text);
    if (!t) return -1;
    c->msgs[c->n++] = (strata_chat_msg){ role, t };
    return 0;
}

/* The conversation with the system prompt first (msgs[0] is reserved for it when set). */
static void set_system(chat *c, const char *text) {
    int had = c->n > 0 && !strcmp(c->msgs[0].role, "system");
    if (had) msgs_drop(c, 0, 1);
    st_free(c->system);
    c->system = text && *text ? st_strdup(text) : NULL;
    if (c->system) {
        if (msgs_push(c, "system", c->system) == 0) {   /* move it to the front */
            strata_chat_msg sm = c->msgs[c->n - 1];
            memmove(c->msgs + 1, c->msgs, (size_t)(c->n - 1) * sizeof *c->msgs);
            c->msgs[0] = sm;
        }
    }
}

/* ---- input ------------------------------------------------------------------------------ */
/* One line without its newline (malloc'ed), NULL at end of input or on Ctrl-C. */
static char *read_line(chat *c, const char *prompt) {
    if (c->tty) return readline(prompt);   /* libedit: editing, history */
    fputs(prompt, stderr);
    fflush(stderr);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (n < 0) { free(line); return NULL; }
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    return line;
}

/* Append n bytes to a malloc'ed string; NULL (and the string freed) when out of memory. */
static char *str_add(char *s, const char *p, size_t n) {
    size_t l = s ? strlen(s) : 0;
    char *r = realloc(s, l + n + 1);
    if (!r) { free(s); return NULL; }
    memcpy(r + l, p, n);
    r[l + n] = 0;
    return r;
}

/* A message (malloc'ed): one line, or the lines between """ and """. NULL at end of input or
 * on Ctrl-C. */
static char *read_message(chat *c) {
    char *line = read_line(c, "> ");
    if (!line || strncmp(line, "\"\"\"", 3)) return line;
    const char *first = line + 3;
    size_t fl = strlen(first);
    int one_line = fl >= 3 && !strcmp(first + fl - 3, "\"\"\"");   /* """text""" */
    char *msg = str_add(NULL, first, one_line ? fl - 3 : fl);
    int started = fl > 0;
    free(line);
    while (msg && !one_line) {
        char *l = read_line(c, "... ");
        if (!l) { free(msg); return NULL; }
        size_t ll = strlen(l);
        int end = ll >= 3 && !strcmp(l + ll - 3, "\"\"\"");
        if (started) msg = str_add(msg, "\n", 1);
        if (msg) msg = str_add(msg, l, end ? ll - 3 : ll);
        started = 1;
        free(l);
        if (end) break;
    }
    return msg;
}

/* ---- commands ----------------------------------------------------------------------------- */
static const char *chat_help =
    "  /bye                 exit (also /exit, Ctrl-D)\n"
    "  /clear               forget the conversation (the system prompt stays)\n"
    "  /system [TEXT]       set the system prompt (none without TEXT); clears the conversation\n"
    "  /set NAME VALUE      temp, top-k, top-p, min-p, repeat-penalty, repeat-last-n, seed,\n"
    "                       n-predict (the options of strata chat --help)\n"
    "  /show                the settings and the conversation so far\n"
    "  \"\"\"                  begin or end a message of several lines\n";

static void show(chat *c) {
    const cli_opts *o = c->o;
    fprintf(stderr, "settings: temp %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g, n-predict %d, context %d\n",
            o->sp.temperature, o->sp.top_k, o->sp.top_p, o->sp.min_p, o->sp.repeat_penalty, o->n_predict,
            strata_session_n_ctx(c->s));
    fprintf(stderr, "%d message%s:\n", c->n, c->n == 1 ? "" : "s");
    for (int i = 0; i < c->n; i++) fprintf(stderr, "[%s] %s\n", c->msgs[i].role, c->msgs[i].content);
}

/* 1: exit, 0: handled. */
static int command(chat *c, char *line) {
    char *arg = line + strcspn(line, " \t");
    if (*arg) *arg++ = 0;
    while (*arg == ' ' || *arg == '\t') arg++;
    if (!strcmp(line, "/bye") || !strcmp(line, "/exit") || !strcmp(line, "/quit")) return 1;
    if (!strcmp(line, "/help") || !strcmp(line, "/?")) fputs(chat_help, stderr);
    else if (!strcmp(line, "/clear")) {
        int keep = c->system ? 1 : 0;
        msgs_drop(c, keep, c->n - keep);
        fprintf(stderr, "[conversation cleared]\n");
    } else if (!strcmp(line, "/system")) {
        set_system(c, arg);
        msgs_drop(c, c->system ? 1 : 0, c->n - (c->system ? 1 : 0));
        fprintf(stderr, c->system ? "[system prompt set; conversation cleared]\n" : "[no system prompt; conversation cleared]\n");
    } else if (!strcmp(line, "/set")) {
        char *val = arg + strcspn(arg, " \t");
        if (*val) *val++ = 0;
        while (*val == ' ' || *val == '\t') val++;
        if (!strcmp(arg, "system")) {
            set_system(c, val);
            msgs_drop(c, c->system ? 1 : 0, c->n - (c->system ? 1 : 0));
            fprintf(stderr, "[system prompt set; conversation cleared]\n");
            return 0;
        }
        static const char *allowed[] = { "temp", "temperature", "top-k", "top-p", "min-p", "repeat-penalty",
                                         "repeat-last-n", "seed", "n-predict", "max-tokens", NULL };
        int ok = 0;
        for (int i = 0; allowed[i]; i++) ok |= !strcmp(arg, allowed[i]);
        if (!ok) fprintf(stderr, "/set: one of temp, top-k, top-p, min-p, repeat-penalty, repeat-last-n, seed, n-predict, system\n");
        else if (cli_set_option(&chat_cmd, c->o, arg, val) < 0) {
            strata_session_set_sampler(c->s, &c->o->sp);
            fprintf(stderr, "[%s = %s]\n", arg, val);
        }
    } else if (!strcmp(line, "/show")) show(c);
    else fprintf(stderr, "unknown command %s (/help lists them; \"\"\" sends text that starts with /)\n", line);
    return 0;
}

/* ---- one turn ----------------------------------------------------------------------------- */
/* Render and tokenize the conversation; drop the oldest turns (after the system prompt) while
 * it and room for a reply exceed the context. NULL when even the last message alone does not
 * fit (then it is removed). */
static int32_t *fit_conversation(chat *c, int *n_ids, int *room) {
    char err[512];
    int n_ctx = strata_session_n_ctx(c->s);
    int want = c->o->n_predict > 0 ? c->o->n_predict : n_ctx / 4;
    if (want > n_ctx / 2) want = n_ctx / 2;
    if (want < 1) want = 1;
    int dropped = 0, first = c->system ? 1 : 0;
    for (;;) {
        /* the template's markers are special tokens, message content is text */
        int32_t *ids = NULL;
        *n_ids = strata_chat_tokenize(c->m, c->msgs, c->n, 1, NULL, &ids, NULL, err, sizeof err);
        if (*n_ids < 0) { fprintf(stderr, "strata: chat template: %s\n", err); return NULL; }
        if (!ids) { fprintf(stderr, "strata: cannot tokenize the conversation\n"); return NULL; }
        if (*n_ids + want <= n_ctx || c->n - first <= 1) {
            if (*n_ids + 2 > n_ctx) {
                fprintf(stderr, "[this message has %d tokens with the conversation kept; the context holds %d (-c): "
                                "not sent]\n", *n_ids, n_ctx);
                st_free(ids);
                msgs_drop(c, c->n - 1, 1);
                return NULL;
            }
            if (dropped)
                fprintf(stderr, "[context full (%d tokens): dropped the %d oldest message%s%s]\n", n_ctx, dropped,
                        dropped == 1 ? "" : "s", c->system ? "; the system prompt is kept" : "");
            *room = n_ctx - *n_ids;
            return ids;
        }
        st_free(ids);
        /* drop a user turn and the assistant reply after it, so the roles keep alternating */
        int k = c->n - first - 1 >= 2 && !strcmp(c->msgs[first + 1].role, "assistant") ? 2 : 1;
        msgs_drop(c, first, k);
        dropped += k;
    }
}

/* 0 done (or stopped by Ctrl-C), -1 failed. */
static int turn(chat *c, const char *text) {
    if (msgs_push(c, "user", text)) return -1;
    int n_ids = 0, room = 0;
    int32_t *ids = fit_conversation(c, &n_ids, &room);
    if (!ids) return 0;
    /* reuse the KV cache for the common prefix with what the session already holds */
    const int32_t *hist = strata_session_history(c->s);
    int keep = 0, held = strata_session_pos(c->s);
    while (keep < held && keep < n_ids - 1 && hist[keep] == ids[keep]) keep++;
    if (strata_session_rewind(c->s, keep) != 0) { strata_session_reset(c->s); keep = 0; }
    double secs;
    int e = eval_prompt_interruptible(c->s, ids + keep, n_ids - 1 - keep, &secs);
    if (e) {
        st_free(ids);
        msgs_drop(c, c->n - 1, 1);   /* nothing was answered: the message is not kept */
        if (e < 0) { fprintf(stderr, "strata: prompt evaluation failed\n"); return -1; }
        fprintf(stderr, "[stopped during the prompt]\n");
        return 0;
    }
    streamer st = { .m = c->m, .stops = c->o->stops, .n_stops = c->o->n_stops };
    strata_detok_init(&st.dt);
    int max = c->o->n_predict < 0 || c->o->n_predict > room ? room : c->o->n_predict;
    int n = max > 0 ? strata_generate(c->s, ids + n_ids - 1, 1, max, on_token, &st) : 0;
    stream_finish(&st);
    fputc('\n', stdout);
    fflush(stdout);
    st_free(ids);
    msgs_push(c, "assistant", st.text ? st.text : "");
    st_free(st.text);
    if (n < 0) { fprintf(stderr, "strata: generation failed\n"); return -1; }
    int n_ctx = strata_session_n_ctx(c->s);
    if (cli_interrupted) fprintf(stderr, "[stopped]\n");
    else if (st.stopped) { /* a stop string */ }
    else if (n > 0 && (strata_session_pos(c->s) >= n_ctx - 1 || (n >= max && max == room && max != c->o->n_predict)))
        fprintf(stderr, "[reply cut: the context (%d tokens) is full; the oldest turns are dropped next time]\n", n_ctx);
    else if (n >= max && max == c->o->n_predict) fprintf(stderr, "[reply cut at -n %d tokens; /set n-predict N changes it]\n", max);
    return 0;
}

int cmd_chat(int argc, char **argv) {
    cli_opts o;
    int rc = cli_parse(&chat_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    strata_model *m = cli_load_model(&o);
    if (!m) { st_free(o.chat_template_text); return CLI_ERR; }
    strata_model *draft = NULL;
    strata_session *s = open_session(m, &o, &draft);
    if (!s) { strata_model_free(draft); strata_model_free(m); st_free(o.chat_template_text); return CLI_ERR; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = cli_on_sigint;   /* no SA_RESTART: a Ctrl-C at the prompt ends the read */
    sigaction(SIGINT, &sa, NULL);

    chat c = { .m = m, .s = s, .o = &o, .tty = isatty(0) && isatty(1) };
    if (o.system) set_system(&c, o.system);
    if (c.tty) {
        rl_catch_signals = 0;   /* our SIGINT handler stays in charge */
        using_history();
        snprintf(c.hist_path, sizeof c.hist_path, "%s/chat_history", env_cache_dir());
        read_history(c.hist_path);
    }
    fprintf(stderr, "strata chat: type a message (/help for commands, \"\"\" for several lines); Ctrl-C stops a reply, Ctrl-D exits.\n");
    rc = CLI_OK;
    for (;;) {
        cli_interrupted = 0;
        char *line = read_message(&c);
        if (!line) {   /* Ctrl-D, or Ctrl-C at the prompt */
            if (cli_interrupted) rc = CLI_INTERRUPTED;
            break;
        }
        if (c.tty && *line) {
            add_history(line);
            if (c.hist_path[0]) write_history(c.hist_path);
        }
        int is_cmd = line[0] == '/';
        int r = 0;
        if (is_cmd) r = command(&c, line);
        else if (*line) r = turn(&c, line) ? -1 : 0;
        free(line);
        if (r > 0) break;
        if (r < 0) { rc = CLI_ERR; break; }
    }
    if (c.tty) fputc('\n', stderr);
    for (int i = 0; i < c.n; i++) st_free((void *)c.msgs[i].content);
    st_free(c.msgs);
    st_free(c.system);
    st_free(o.chat_template_text);
    strata_session_free(s);
    strata_model_free(draft);
    strata_model_free(m);
    return rc;
}
