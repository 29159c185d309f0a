/* Shared pieces of the run / chat / bench commands: option parsing and model loading. */
#ifndef STRATA_CLI_COMMON_H
#define STRATA_CLI_COMMON_H
#include "strata.h"

typedef struct cli_opts {
    const char *model;
    const char *prompt, *prompt_file, *system;
    int n_predict, n_threads, n_ctx, chat, exact, show_stats;
    strata_device device;
    strata_sampler_params sp;
    int seed_set;
    const char *stops[8]; int n_stops;
    int spec;                      /* --spec N: drafts per step (0: off) */
    const char *draft_model;       /* --draft-model PATH */
    int kv_type;                   /* --kv f16|int8 (STRATA_KV_*) */
    const char *grammar;           /* --grammar GBNF (or @FILE): constrained output */
    const char *json_schema;       /* --json-schema SCHEMA (or @FILE) */
} cli_opts;

/* Parse the common options; returns 0, 1 for --help (usage printed), -1 on error. */
int cli_parse(int argc, char **argv, cli_opts *o, const char *usage);
/* Load with a progress bar on a terminal; prints the error and returns NULL on failure. */
strata_model *cli_load_model(const cli_opts *o);
/* Read a whole file (NUL-terminated, malloc'ed); NULL with a message printed. */
char *cli_read_file(const char *path, size_t *len);
#endif
