/* strata: command-line entry point. Dispatches to the subcommands of cli.h. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

/* Subcommands still being built may be absent from a build: weak references let the binary
 * link and say so instead of failing to link. */
#pragma weak cmd_run
#pragma weak cmd_chat
#pragma weak cmd_info
#pragma weak cmd_tokenize
#pragma weak cmd_bench
#pragma weak cmd_env
#pragma weak cmd_template
#pragma weak cmd_serve
#pragma weak cmd_synth

typedef struct { const char *name; int (*fn)(int, char **); const char *help; } command;

static void usage(const command *cmds, int n) {
    fprintf(stderr, "strata: LLM inference for GGUF models on CPU and CUDA\n\nusage: strata COMMAND [options]\n\n");
    for (int i = 0; i < n; i++)
        if (cmds[i].fn) fprintf(stderr, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(stderr, "\n`strata COMMAND --help` describes a command's options.\n");
}

int main(int argc, char **argv) {
    const command cmds[] = {
        { "run",      cmd_run,      "answer one prompt, streaming text to stdout and stats to stderr" },
        { "chat",     cmd_chat,     "interactive chat (Ctrl-C stops a reply, Ctrl-D exits)" },
        { "serve",    cmd_serve,    "OpenAI-compatible HTTP server" },
        { "info",     cmd_info,     "describe a GGUF model file" },
        { "tokenize", cmd_tokenize, "print token ids of a text" },
        { "template", cmd_template, "render a chat template" },
        { "bench",    cmd_bench,    "decode benchmark, or kernel microbenchmarks (bench mmvq ...)" },
        { "synth",    cmd_synth,    "write a synthetic model of real shape" },
        { "env",      cmd_env,      "list the STRATA_* switches" },
    };
    int n = (int)(sizeof cmds / sizeof cmds[0]);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(cmds, n);
        return argc < 2 ? 1 : 0;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(argv[1], cmds[i].name)) continue;
        if (!cmds[i].fn) {
            fprintf(stderr, "strata: '%s' is not part of this build\n", argv[1]);
            return 2;
        }
        return cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "strata: unknown command '%s'\n\n", argv[1]);
    usage(cmds, n);
    return 1;
}
