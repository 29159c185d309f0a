#include <stdio.h>
#include "cli.h"
#include "core/env.h"

int cmd_env(int argc, char **argv) {
    (void)argc; (void)argv;
    printf("STRATA_* switches (read once at first use; set before starting strata):\n\n");
    env_print(stdout);
    return 0;
}
