/* STRATA_* switch registry: typed, documented, read once and cached.
 * The list lives in env_list.h; this is the only place that calls getenv(). */
#ifndef STRATA_ENV_H
#define STRATA_ENV_H
#include <stdint.h>
#include <stdio.h>

typedef enum { ENV_BOOL, ENV_INT, ENV_STR } env_kind;

typedef enum {
#define X(id, name, kind, def, doc) id,
#include "env_list.h"
#undef X
    ENV_COUNT
} env_id;

int         env_bool(env_id id);     /* 1/0; "1", "true", "yes", "on" are true */
long        env_int(env_id id);
const char *env_str(env_id id);      /* never NULL: the default when unset */
int         env_is_set(env_id id);   /* the variable was present in the environment */
/* Test hook: forget cached values so the next read sees the current environment. */
void        env_reset_cache(void);
/* Print the registry (name, type, default, current value, doc), the docs wrapped at
 * ENV_PRINT_WIDTH columns; env_print_one: the switch of that id alone. */
#define ENV_PRINT_WIDTH 100
void        env_print(FILE *f);
void        env_print_one(FILE *f, int id);
/* Look up by name ("STRATA_EXACT"); -1 if unknown. */
int         env_find(const char *name);

/* The model cache directory: STRATA_CACHE_DIR, else $XDG_CACHE_HOME/strata, else
 * $HOME/.cache/strata (the same rule as the Makefile). Lives here because this file is the
 * only one that reads the environment. */
const char *env_cache_dir(void);
/* Default model path: <cache dir>/SmolLM2-135M-Instruct.Q4_1.gguf */
const char *env_default_model_path(void);
#endif
