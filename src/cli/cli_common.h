/* Shared pieces of the subcommands: the one option table, help, model loading.
 *
 * Every option of run / chat / serve / bench / tokenize is one row of the table in
 * cli_common.c: its spellings (llama.cpp's where natural, e.g. -c/--ctx-size, -n/--n-predict,
 * -s/--seed), the commands that accept it, its value kind and range, and its help line. A flag
 * means the same in every command that takes it. Adding an option: an OPT_ id below, a field
 * in cli_opts, a row in the table and a case in cli_apply (cli_common.c).
 *
 * Exit codes of every command: 0 done (and --help, on stdout), 1 runtime error, 2 usage error
 * (one line on stderr), 130 interrupted (Ctrl-C). */
#ifndef STRATA_CLI_COMMON_H
#define STRATA_CLI_COMMON_H
#include <stdio.h>
#include "strata.h"

#define STRATA_VERSION "0.1.0"
enum { CLI_OK = 0, CLI_ERR = 1, CLI_USAGE = 2, CLI_INTERRUPTED = 130 };

/* the commands, as bits: a table row lists those that accept it */
enum {
    CMD_RUN = 1 << 0, CMD_CHAT = 1 << 1, CMD_SERVE = 1 << 2, CMD_BENCH = 1 << 3,
    CMD_TOKENIZE = 1 << 4, CMD_INFO = 1 << 5,
};
#define CMD_GEN   (CMD_RUN | CMD_CHAT)
#define CMD_MODEL (CMD_RUN | CMD_CHAT | CMD_SERVE | CMD_BENCH)

typedef enum {
    OPT_HELP = 1, OPT_VERSION, OPT_MODEL, OPT_PROMPT, OPT_FILE, OPT_SYSTEM, OPT_N_PREDICT,
    OPT_THREADS, OPT_CTX, OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P, OPT_REPEAT_PENALTY,
    OPT_REPEAT_LAST_N, OPT_SEED, OPT_STOP, OPT_SPEC, OPT_DRAFT, OPT_KV, OPT_CHAT, OPT_EXACT,
    OPT_NO_STATS, OPT_DEVICE, OPT_HOST, OPT_PORT, OPT_PARALLEL, OPT_QUEUE, OPT_API_KEY, OPT_CORS,
    OPT_MAX_BODY, OPT_VERBOSE, OPT_LOG_FORMAT, OPT_CHAT_TEMPLATE, OPT_PP, OPT_TG, OPT_REPS, OPT_DEPTH,
    OPT_PIECES, OPT_NO_BOS, OPT_NO_SPECIAL, OPT_GRAMMAR, OPT_JSON_SCHEMA, OPT_MAX_CONN,
    OPT_MAX_CONN_PER_IP, OPT_HEADER_TIMEOUT, OPT_STEP_TOKENS, OPT_NGL,
} cli_opt_id;

typedef struct cli_option {
    cli_opt_id id;
    unsigned cmds;          /* CMD_* bits */
    const char *names;      /* spellings, comma-separated: "-c,--ctx-size,--ctx" (the first long one is shown first) */
    const char *arg;        /* value name shown in help, NULL for a switch */
    char kind;              /* 'i' integer, 'f' number, 's' string, 0 switch */
    double lo, hi;          /* range of 'i' and 'f' values */
    const char *help;       /* may hold '\n' for more lines */
} cli_option;

typedef struct cli_opts {
    const char *model;
    const char *prompt, *prompt_file, *system;
    int n_predict, n_threads, n_ctx, chat, exact, show_stats;
    strata_device device;
    int n_gpu_layers;              /* -ngl N as given; -2: not given */
    strata_sampler_params sp;
    int seed_set;
    const char *stops[8]; int n_stops;
    int spec;                      /* --spec N: drafts per step (0: off) */
    const char *draft_model;       /* --draft-model PATH */
    int kv_type;                   /* --kv f16|int8 (STRATA_KV_*) */
    const char *grammar;           /* --grammar GBNF (or @FILE): constrained output */
    const char *json_schema;       /* --json-schema SCHEMA (or @FILE) */
    /* serve */
    const char *host, *api_key, *cors;
    const char *chat_template;     /* --chat-template as given; its text (file or built-in) below */
    char *chat_template_text;
    int port, parallel, queue, verbose, log_json;
    int max_conn, max_conn_per_ip, header_timeout;   /* -1: the server's default */
    int step_tokens;               /* --step-tokens N (0: the server's default) */
    long max_body;
    /* bench */
    int pp, tg, reps;
    int depth[16], n_depth;   /* -d D[,D...]: ascending, at least one (0) */
    /* tokenize */
    int pieces, no_bos, no_special;
    /* positional arguments (commands that take them: tokenize TEXT, info MODEL) */
    const char *args[64]; int n_args;
} cli_opts;

/* A command as the parser and the help see it. */
typedef struct cli_command {
    unsigned bit;           /* CMD_* */
    const char *name;       /* "run" */
    const char *synopsis;   /* after "usage: strata NAME ": "[-m MODEL] [-p PROMPT | -f FILE] [options]" */
    const char *about;      /* description paragraph, lines ending in '\n' */
    int max_args;           /* positional arguments accepted (0: none) */
} cli_command;

/* Parse argv[1..] for command c. Returns -1 when parsing is done and the command should go on,
 * else the exit code to return at once (0 after --help, on stdout, or --version; 2 after a
 * usage error, with its one line on stderr). */
int cli_parse(const cli_command *c, int argc, char **argv, cli_opts *o);
/* Set one option of the table by its long name without dashes ("temp", "top-k", "seed") on
 * parsed options, as `--NAME VALUE` would (the chat's /set). -1 when set, else an exit code with
 * the message printed. */
int cli_set_option(const cli_command *c, cli_opts *o, const char *name, const char *value);
/* The help of a command: synopsis, description, then its rows of the table. */
void cli_help(FILE *f, const cli_command *c);
/* The version line (strata --version). */
void cli_print_version(FILE *f);
/* A usage error: "strata NAME: message" and a pointer to --help on one line of stderr;
 * returns CLI_USAGE. */
int cli_usage_error(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* -m REF: a reference to the hub (org/repo:QUANT, hf://...) becomes its cached file, pulled on
 * first use (cmd_pull.c); a path (or anything else) comes back as it is; NULL when a pull failed. */
const char *cli_resolve_model(const char *model);
/* Load with a progress bar on a terminal; prints the error and returns NULL on failure. Warns
 * when o->n_ctx exceeds the model's trained context length. */
strata_model *cli_load_model(const cli_opts *o);
/* Warn (stderr) when a context of n_ctx tokens exceeds what the model was trained on. */
void cli_warn_ctx(const strata_model *m, int n_ctx);
/* Read a whole file ('-': standard input; NUL-terminated, malloc'ed); NULL with a message printed. */
char *cli_read_file(const char *path, size_t *len);
/* The option table (for tests and tools). */
const cli_option *cli_options(int *n);
#endif
