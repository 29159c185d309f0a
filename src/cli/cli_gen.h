/* Generation helpers shared by strata run and strata chat (cli_gen.c). */
#ifndef STRATA_CLI_GEN_H
#define STRATA_CLI_GEN_H
#include <signal.h>
#include "cli_common.h"

/* SIGINT count since the caller last cleared it (cli_on_sigint is the handler). */
extern volatile sig_atomic_t cli_interrupted;
void cli_on_sigint(int sig);

/* Streams decoded text to stdout, holding back any suffix that could begin a stop string;
 * text keeps everything streamed (the reply). */
typedef struct {
    const strata_model *m;
    strata_detok dt;
    const char **stops; int n_stops;
    char *text; size_t len, cap, printed;
    int stopped;
    struct grammar_match *gm;      /* --grammar / --json-schema: advanced by every token, or NULL */
} streamer;
void stream_emit(streamer *s, const char *p, size_t n);
/* strata_generate's callback: user is a streamer; stops on Ctrl-C. */
int on_token(int32_t id, void *user);
void stream_finish(streamer *s);
/* Evaluate ids in steps of a few tokens, so Ctrl-C stops prompt processing within a step.
 * 0, 1 when interrupted, -1 on failure; *secs gets the time taken. */
int eval_prompt_interruptible(strata_session *s, const int32_t *ids, int n, double *secs);
/* The stats line; pre_n / pre_t: prompt tokens and seconds evaluated before strata_generate. */
void print_stats(const strata_session *sess, const strata_model *m, int pre_n, double pre_t);
/* A session with the run/chat options (speculation, draft model); NULL with the error printed. */
strata_session *open_session(strata_model *m, const cli_opts *o, strata_model **draft);
/* "kv cache     N bytes per position (f16, 2 x L layers x row), X MiB at n_ctx positions" */
void print_kv_cache(FILE *f, const strata_model *m, const strata_session *s);
/* Tokenize a plain prompt (special tokens parsed or not); malloc'ed. Chat prompts go through
 * strata_chat_tokenize (message content is text). */
int32_t *tokenize_alloc(const strata_model *m, const char *text, int add_bos, int special, int *n);
#endif
