/* `strata bench mmvq`: the matvec microbenchmark (src/cli/cmd_bench_mmvq.c). */
#ifndef STRATA_BENCH_MMVQ_H
#define STRATA_BENCH_MMVQ_H
/* argv[0] is "mmvq"; returns the process exit code. */
int bench_mmvq(int argc, char **argv);
#endif
