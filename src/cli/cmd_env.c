#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"
#include "core/env.h"

/* strata env [NAME ...]: the registry, or the named switches alone (in the order given) */
int cmd_env(int argc, char **argv) {
    int ids[64], n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata env [NAME ...]\n\nLists the STRATA_* environment switches, their defaults and meaning;\n"
                   "with NAMEs (e.g. STRATA_CUDA_PREFETCH) those switches alone.\n");
            return CLI_OK;
        }
        if (argv[i][0] == '-') return cli_usage_error("env", "unexpected argument '%s'", argv[i]);
        const int id = env_find(argv[i]);
        if (id < 0) return cli_usage_error("env", "'%s' is not a STRATA_* switch (strata env lists them)", argv[i]);
        if (n == (int)(sizeof ids / sizeof ids[0])) return cli_usage_error("env", "at most 64 names");
        ids[n++] = id;
    }
    if (n) {
        for (int i = 0; i < n; i++) env_print_one(stdout, ids[i]);
        return 0;
    }
    printf("STRATA_* switches (read once at first use; set before starting strata):\n\n");
    env_print(stdout);
    return 0;
}
