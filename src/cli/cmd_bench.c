/* strata bench: decode benchmark of a model (prompt and decode tok/s, weight bytes per
 * token, effective GB/s next to the measured read bandwidth), or `bench mmvq ...` for the
 * kernel microbenchmark. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cli_common.h"
#include "cpu/membw.h"
#include "cpu/threadpool.h"
#include "core/util.h"

#pragma weak bench_mmvq
int bench_mmvq(int argc, char **argv);
#pragma weak bench_moe
int bench_moe(int argc, char **argv);

static const cli_command bench_cmd = {
    CMD_BENCH, "bench", "[-m MODEL] [options]\n       strata bench mmvq TYPE N_IN N_OUT COLS [--variant V] [-t THREADS]\n"
    "       strata bench moe [-m MODEL] [--type-experts T] [-t THREADS]",
    "Model benchmark: prompt processing of --pp tokens and --tg decoded tokens (greedy),\n"
    "median of --reps runs, next to the machine's measured memory read bandwidth.\n"
    "`bench mmvq` and `bench moe` are kernel microbenchmarks (their own --help).\n", 0 };

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cmd_bench(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "mmvq")) {
        if (!bench_mmvq) { fprintf(stderr, "strata: bench mmvq is not part of this build\n"); return 2; }
        return bench_mmvq(argc - 1, argv + 1);
    }
    if (argc > 1 && !strcmp(argv[1], "moe")) {
        if (!bench_moe) { fprintf(stderr, "strata: bench moe is not part of this build\n"); return 2; }
        return bench_moe(argc - 1, argv + 1);
    }
    cli_opts o;
    int rc = cli_parse(&bench_cmd, argc, argv, &o);
    if (rc >= 0) return rc;
    int pp = o.pp, tg = o.tg, reps = o.reps;
    strata_model *m = cli_load_model(&o);
    if (!m) return CLI_ERR;
    strata_model_info info;
    strata_model_get_info(m, &info);
    char err[512];
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = pp + tg + 8;
    sp.kv_type = o.kv_type;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "strata: %s\n", err); strata_model_free(m); return 1; }

    /* prompt: a deterministic token sequence (ids spread over the vocabulary) */
    int32_t *ids = st_malloc((size_t)pp * sizeof(int32_t));
    for (int i = 0; i < pp; i++) ids[i] = (int32_t)((1000 + (uint64_t)i * 7919) % (uint64_t)info.n_vocab);
    double tpp[32], ttg[32];
    uint64_t hash = 0;
    for (int r = 0; r < reps; r++) {
        strata_session_reset(s);
        double t0 = now_seconds();
        strata_session_eval(s, ids, pp);
        double t1 = now_seconds();
        int32_t tok = strata_session_sample(s);
        for (int i = 0; i < tg; i++) {
            strata_session_eval(s, &tok, 1);
            tok = strata_session_sample(s);
        }
        double t2 = now_seconds();
        tpp[r] = t1 - t0; ttg[r] = t2 - t1;
        hash = fnv1a64(strata_session_logits(s), (size_t)info.n_vocab * sizeof(float));
    }
    qsort(tpp, (size_t)reps, sizeof(double), cmp_d);
    qsort(ttg, (size_t)reps, sizeof(double), cmp_d);
    double pps = pp / tpp[reps / 2], tgs = tg / ttg[reps / 2];
    threadpool *tp = threadpool_create(info.n_threads);
    double bw = membw_read_gbs(tp, (size_t)1 << 30, 5);
    threadpool_free(tp);
    double gbs = tgs * (double)info.weight_bytes / 1e9;
    printf("model        %s (%s, %d layers, %.1fM params)\n", o.model, info.arch, info.n_layers, info.n_params / 1e6);
    printf("device       %s, %d threads%s\n", info.device, info.n_threads, o.exact ? ", exact mode" : "");
    if (!strcmp(info.device, "cuda")) {
        char dev[512];
        strata_cuda_describe(dev, sizeof dev);
        printf("gpu          %s\n", dev);
    }
    printf("prompt       %d tokens: %.1f tok/s (median of %d)\n", pp, pps, reps);
    printf("decode       %d tokens: %.1f tok/s, %.2f ms/token (median of %d)\n", tg, tgs, 1000.0 / tgs, reps);
    printf("weights      %.1f MB read per decoded token\n", info.weight_bytes / 1e6);
    printf("bandwidth    %.1f GB/s effective = %.0f%% of the measured read bandwidth %.1f GB/s\n", gbs,
           100.0 * gbs / bw, bw);
    printf("checksum     %016llx (FNV-1a of the last logits)\n", (unsigned long long)hash);
    st_free(ids);
    strata_session_free(s);
    strata_model_free(m);
    return 0;
}
