/* Subcommands of the `strata` binary. Each lives in its own file src/cli/cmd_*.c (or the
 * front end's folder) and returns the process exit code. */
#ifndef STRATA_CLI_H
#define STRATA_CLI_H
int cmd_run(int argc, char **argv);       /* strata run: one prompt, stream the answer */
int cmd_chat(int argc, char **argv);      /* strata chat: interactive */
int cmd_info(int argc, char **argv);      /* strata info MODEL.gguf */
int cmd_tokenize(int argc, char **argv);  /* strata tokenize -m MODEL [-f FILE | TEXT] [--pieces] */
int cmd_bench(int argc, char **argv);     /* strata bench -m MODEL | strata bench mmvq ... */
int cmd_env(int argc, char **argv);       /* strata env: the STRATA_* registry */
int cmd_template(int argc, char **argv);  /* strata template T.jinja|MODEL.gguf --messages C.json */
int cmd_serve(int argc, char **argv);     /* strata serve: OpenAI-compatible HTTP server */
int cmd_synth(int argc, char **argv);     /* strata synth OUT.gguf: synthetic models */
int cmd_pull(int argc, char **argv);      /* strata pull REF: a model from the hub into the cache */
int cmd_list(int argc, char **argv);      /* strata list: the cached models */
int cmd_rm(int argc, char **argv);        /* strata rm REF: remove a cached model */
#endif
