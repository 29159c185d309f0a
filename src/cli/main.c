/* strata: command-line entry point. Dispatches to the subcommands of cli.h. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"

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
#pragma weak cmd_pull
#pragma weak cmd_list
#pragma weak cmd_rm

typedef struct { const char *name; int (*fn)(int, char **); const char *help; } command;

static void usage(FILE *f, const command *cmds, int n) {
    fprintf(f, "strata: LLM inference for GGUF models on CPU and CUDA\n\nusage: strata COMMAND [options]\n\n");
    for (int i = 0; i < n; i++)
        if (cmds[i].fn) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
    fprintf(f, "\n`strata COMMAND --help` describes a command's options; `strata --version`.\n"
               "Exit codes: 0 done, 1 runtime error, 2 usage error, 130 interrupted.\n");
}

int main(int argc, char **argv) {
    const command cmds[] = {
        { "run",      cmd_run,      "answer one prompt, streaming text to stdout and stats to stderr" },
        { "chat",     cmd_chat,     "interactive chat (Ctrl-C stops a reply, Ctrl-D exits)" },
        { "serve",    cmd_serve,    "OpenAI-compatible HTTP server" },
        { "pull",     cmd_pull,     "download a model from the Hugging Face hub (org/repo:QUANT)" },
        { "list",     cmd_list,     "list the cached models" },
        { "rm",       cmd_rm,       "remove a cached model" },
        { "info",     cmd_info,     "describe a GGUF model file" },
        { "tokenize", cmd_tokenize, "print token ids of a text" },
        { "template", cmd_template, "render a chat template" },
        { "bench",    cmd_bench,    "decode benchmark, or kernel microbenchmarks (bench mmvq ...)" },
        { "synth",    cmd_synth,    "write a synthetic model of real shape" },
        { "env",      cmd_env,      "list the STRATA_* switches" },
    };
    int n = (int)(sizeof cmds / sizeof cmds[0]);
    if (argc < 2) { usage(stderr, cmds, n); return CLI_USAGE; }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout, cmds, n);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) { cli_print_version(stdout); return CLI_OK; }
    for (int i = 0; i < n; i++) {
        if (strcmp(argv[1], cmds[i].name)) continue;
        if (!cmds[i].fn) {
            fprintf(stderr, "strata: '%s' is not part of this build\n", argv[1]);
            return CLI_ERR;
        }
        return cmds[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "strata: unknown command '%s' (strata --help lists them)\n", argv[1]);
    return CLI_USAGE;
}
