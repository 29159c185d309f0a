#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"
#include "core/env.h"

int cmd_env(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: strata env\n\nLists the STRATA_* environment switches, their defaults and meaning.\n");
            return CLI_OK;
        }
        return cli_usage_error("env", "unexpected argument '%s'", argv[i]);
    }
    printf("STRATA_* switches (read once at first use; set before starting strata):\n\n");
    env_print(stdout);
    return 0;
}
