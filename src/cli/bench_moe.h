/* `strata bench moe`: the MoE FFN microbenchmark (src/cli/cmd_bench_moe.c). */
#ifndef STRATA_BENCH_MOE_H
#define STRATA_BENCH_MOE_H
/* argv[0] is "moe"; returns the process exit code. */
int bench_moe(int argc, char **argv);
#endif
