/* strata bench: model benchmark of what `strata run` does (prompt and decode tok/s, weight
 * bytes per token, effective GB/s next to the device's measured bandwidth), or `bench mmvq ...` /
 * `bench moe ...` for the kernel microbenchmarks.
 *
 * Prompt: --pp tokens in one strata_session_eval, which the engine runs in wide passes (up to
 * 512 columns: the CPU's wide matmul, the GPU's tensor-core matmul). Decode: --tg greedy steps
 * through strata_sessions_step_spec with `next`, the step strata_generate takes for `strata run`:
 * on CUDA the device decode step (one graph, the argmax picked on the device, only the id comes
 * back), on the CPU a forward pass and the host sampler. Bandwidth: on the CPU the measured
 * read bandwidth of all threads (src/cpu/membw.c); on CUDA a device-to-device copy (read +
 * write bytes per second, the ceiling a weight-reading step can approach). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "cli_common.h"
#include "cli_gen.h"
#include "cpu/membw.h"
#include "cpu/threadpool.h"
#include "core/util.h"
#ifdef STRATA_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#pragma weak bench_mmvq
int bench_mmvq(int argc, char **argv);
#pragma weak bench_moe
int bench_moe(int argc, char **argv);

static const cli_command bench_cmd = {
    CMD_BENCH, "bench", "[-m MODEL] [options]\n       strata bench mmvq TYPE N_IN N_OUT COLS [--variant V] [-t THREADS]\n"
    "       strata bench moe [-m MODEL] [--type-experts T] [-t THREADS]",
    "Model benchmark of what `strata run` does: a prompt of --pp tokens (wide passes) and --tg\n"
    "greedy decode steps (on CUDA the device step, ids picked on the device), median of --reps\n"
    "runs; decode GB/s of weights next to the device's measured bandwidth (CPU: read; CUDA: copy).\n"
    "With -d D (as llama-bench -d) the tests start with D positions in the cache (filled untimed;\n"
    "the decode follows the prompt); a list D1,D2,... runs them at each depth, one fill extending\n"
    "the other. --pp 0: no prompt test (the decode starts at the depth).\n"
    "`bench mmvq` and `bench moe` are kernel microbenchmarks (their own --help).\n", 0 };

/* the process's CPU time (all threads; spinning pool workers count): with one thread the
 * figure a loaded machine disturbs least */
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The session holding exactly ids[0..depth): *valid is how many leading positions of the
 * cache hold ids[0..valid) (after them, if any, decoded tokens). A rewind to min(valid,
 * depth), then the missing ids evaluated (untimed); where the cache cannot rewind that far (a
 * sliding-window ring), a reset and the whole depth. */
static int bench_at_depth(strata_session *s, const int32_t *ids, int depth, int *valid, long *n_eval) {
    int pos = strata_session_pos(s), keep = *valid < depth ? *valid : depth;
    if (pos == depth && keep == depth) return 0;
    if (pos != keep && (keep == 0 || strata_session_rewind(s, keep) != 0)) { strata_session_reset(s); keep = 0; }
    *valid = depth;
    if (depth > keep) *n_eval += depth - keep;
    return depth > keep ? strata_session_eval(s, ids + keep, depth - keep) : 0;
}

#ifdef STRATA_HAVE_CUDA
/* Device-to-device copy of 1 GiB: (read + write) bytes per second, median of 5 timed copies
 * (the measure of tests/gpu/bench_gpu.c); 0 when it cannot run. */
typedef struct { void *dst; const void *src; size_t n; } copy_job;
static void copy_call(void *u) { copy_job *j = u; cuda_memcpy_d2d(j->dst, j->src, j->n); }
static double cuda_copy_gbs(void) {
    const size_t n = (size_t)1 << 30;
    void *a = cuda_malloc(n), *b = cuda_malloc(n);
    double gbs = 0;
    if (a && b && cuda_memcpy_d2d(b, a, n) == 0 && cuda_synchronize() == 0) {
        copy_job j = { b, a, n };
        double t[5];
        for (int i = 0; i < 5; i++) t[i] = cuda_time_ms(copy_call, &j, 4) / 4;
        qsort(t, 5, sizeof(double), cmp_d);
        if (t[2] > 0) gbs = 2.0 * (double)n / (t[2] * 1e-3) / 1e9;
    }
    if (a) cuda_free(a);
    if (b) cuda_free(b);
    return gbs;
}
#endif

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
    int pp = o.pp, tg = o.tg, reps = o.reps, nd = o.n_depth, dmax = o.depth[o.n_depth - 1];
    strata_model *m = cli_load_model(&o);
    if (!m) return CLI_ERR;
    strata_model_info info;
    strata_model_get_info(m, &info);
    char err[512];
    strata_session_params sp = strata_session_default_params();   /* greedy sampler */
    sp.n_ctx = dmax + pp + tg + 8;
    sp.kv_type = o.kv_type;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { fprintf(stderr, "strata: %s\n", err); strata_model_free(m); return 1; }

    /* the depth's tokens, then the prompt's: a deterministic sequence (ids spread over the
     * vocabulary) */
    const int n_ids = dmax + pp + 1;
    int32_t *ids = st_malloc((size_t)n_ids * sizeof(int32_t));
    int32_t *gen = st_malloc((size_t)(tg > 0 ? tg : 1) * sizeof(int32_t));
    double *tpp = st_malloc(sizeof(double) * (size_t)reps * (size_t)nd), *ttg = st_malloc(sizeof(double) * (size_t)reps * (size_t)nd);
    double *tcpu = st_malloc(sizeof(double) * (size_t)reps * (size_t)nd);   /* the decode's process CPU time */
    double *tpc = st_malloc(sizeof(double) * (size_t)reps * (size_t)nd);    /* the prompt's process CPU time */
    /* per depth: the fills' positions, wall and CPU seconds (summed over the repetitions) */
    double *fw = st_calloc((size_t)nd, sizeof(double)), *fc = st_calloc((size_t)nd, sizeof(double));
    long *fn = st_calloc((size_t)nd, sizeof(long));
    if (!ids || !gen || !tpp || !ttg || !tcpu || !tpc || !fw || !fc || !fn) {
        st_free(ids); st_free(gen); st_free(tpp); st_free(ttg); st_free(tcpu); st_free(tpc); st_free(fw); st_free(fc);
        st_free(fn); strata_session_free(s); strata_model_free(m);
        return 1;
    }
    for (int i = 0; i < n_ids; i++) ids[i] = (int32_t)((1000 + (uint64_t)i * 7919) % (uint64_t)info.n_vocab);
    uint64_t hash = 0;
    int same_ids = 1, device_picks = 0, failed = 0, valid = 0;
    for (int di = 0; di < nd && !failed; di++) {
        const int depth = o.depth[di];
        double *tp_d = tpp + (size_t)di * reps, *tg_d = ttg + (size_t)di * reps, *tc_d = tcpu + (size_t)di * reps;
        double *tq_d = tpc + (size_t)di * reps;
        for (int r = 0; r < reps && !failed; r++) {
            const double fw0 = now_seconds(), fc0 = cpu_seconds();
            if (bench_at_depth(s, ids, depth, &valid, &fn[di])) { failed = 1; break; }
            fw[di] += now_seconds() - fw0; fc[di] += cpu_seconds() - fc0;
            const double c0 = cpu_seconds();
            double t0 = now_seconds();
            if (pp > 0 && strata_session_eval(s, ids + depth, pp) != 0) { failed = 1; break; }
            double t1 = now_seconds();
            tq_d[r] = cpu_seconds() - c0;
            valid = depth + pp;   /* the decoded tokens follow */
            /* as strata_generate: the first id from the prompt's logits (without a prompt: the
             * id after the depth), then decode steps */
            int32_t tok = pp > 0 ? strata_session_sample(s) : ids[depth];
            const double c1 = cpu_seconds();
            for (int i = 0; i < tg; i++) {
                gen[i] = tok;
                int32_t next = -1;
                if (strata_sessions_step_spec(&s, &tok, NULL, 1, NULL, NULL, &next) != 0) { failed = 1; break; }
                if (next >= 0) { tok = next; device_picks++; }
                else tok = strata_session_sample(s);
            }
            double t2 = now_seconds();
            tp_d[r] = t1 - t0; tg_d[r] = t2 - t1; tc_d[r] = cpu_seconds() - c1;
            uint64_t h = fnv1a64(gen, (size_t)tg * sizeof(int32_t));
            if (r > 0 && h != hash) same_ids = 0;
            hash = h;
        }
        qsort(tp_d, (size_t)reps, sizeof(double), cmp_d);
        qsort(tg_d, (size_t)reps, sizeof(double), cmp_d);
        qsort(tc_d, (size_t)reps, sizeof(double), cmp_d);
        qsort(tq_d, (size_t)reps, sizeof(double), cmp_d);
    }
    if (failed) {
        fprintf(stderr, "strata bench: evaluation failed\n");
        st_free(ids); st_free(gen); st_free(tpp); st_free(ttg); st_free(tcpu); st_free(tpc); st_free(fw); st_free(fc);
        st_free(fn); strata_session_free(s); strata_model_free(m);
        return 1;
    }
    const double *tp_last = tpp + (size_t)(nd - 1) * reps, *tg_last = ttg + (size_t)(nd - 1) * reps;
    double pps = pp > 0 ? pp / tp_last[reps / 2] : 0, tgs = tg / tg_last[reps / 2];
    double gbs = tgs * (double)info.weight_bytes / 1e9;
    int cuda = !strcmp(info.device, "cuda");
    printf("model        %s (%s, %d layers, %.1fM params)\n", o.model, info.arch, info.n_layers, info.n_params / 1e6);
    printf("device       %s, %d threads%s\n", info.device, info.n_threads, o.exact ? ", exact mode" : "");
    if (cuda) {
        char dev[512];
        strata_cuda_describe(dev, sizeof dev);
        printf("gpu          %s\n", dev);
    }
    const char *how = device_picks ? "device decode step, ids picked on the device" : "forward pass, host sampler";
    if (nd == 1) {
        if (dmax > 0) printf("depth        %d positions in the cache before each test (filled untimed)\n", dmax);
        if (dmax > 0 && fn[0] > 0)
            printf("fill         %ld positions evaluated to reach the depth: %.2f s, CPU time %.2f s (all repetitions)\n",
                   fn[0], fw[0], fc[0]);
        if (pp > 0) printf("prompt       %d tokens: %.1f tok/s (median of %d; one eval, passes of up to 512); CPU time %.2f ms/token\n",
                           pp, pps, reps, 1000.0 * tpc[reps / 2] / pp);
        printf("decode       %d tokens: %.1f tok/s, %.2f ms/token (median of %d; %s); CPU time %.2f ms/token\n", tg, tgs,
               1000.0 / tgs, reps, how, 1000.0 * tcpu[reps / 2] / tg);
    } else {   /* a line per depth and test (the fills untimed) */
        for (int di = 0; di < nd; di++) {
            const double *tp_d = tpp + (size_t)di * reps, *tg_d = ttg + (size_t)di * reps;
            if (fn[di] > 0)
                printf("fill         %ld positions evaluated to reach depth %d: %.2f s, CPU time %.2f s (all repetitions)\n",
                       fn[di], o.depth[di], fw[di], fc[di]);
            if (pp > 0)
                printf("prompt       %d tokens at depth %d: %.1f tok/s (median of %d); CPU time %.2f ms/token\n", pp,
                       o.depth[di], pp / tp_d[reps / 2], reps, 1000.0 * tpc[(size_t)di * reps + reps / 2] / pp);
            printf("decode       %d tokens at depth %d: %.1f tok/s, %.2f ms/token (median of %d; %s); CPU time "
                   "%.2f ms/token\n", tg, o.depth[di] + pp, tg / tg_d[reps / 2], 1000.0 * tg_d[reps / 2] / tg, reps, how,
                   1000.0 * tcpu[(size_t)di * reps + reps / 2] / tg);
        }
    }
    printf("weights      %.1f MB read per decoded token\n", info.weight_bytes / 1e6);
    print_kv_cache(stdout, m, s);
    if (cuda) {
        double bw = 0;
#ifdef STRATA_HAVE_CUDA
        bw = cuda_copy_gbs();
#endif
        if (bw > 0)
            printf("bandwidth    %.1f GB/s effective = %.0f%% of the GPU's device-to-device copy rate %.1f GB/s (read + write)\n",
                   gbs, 100.0 * gbs / bw, bw);
        else
            printf("bandwidth    %.1f GB/s effective (the GPU's copy rate could not be measured)\n", gbs);
    } else {
        threadpool *tp = threadpool_create(info.n_threads);
        double bw = membw_read_gbs(tp, (size_t)1 << 30, 5);
        threadpool_free(tp);
        printf("bandwidth    %.1f GB/s effective = %.0f%% of the measured read bandwidth %.1f GB/s (%d threads)\n", gbs,
               100.0 * gbs / bw, bw, info.n_threads);
    }
    printf("checksum     %016llx (FNV-1a of the %d decoded ids%s)\n", (unsigned long long)hash, tg,
           same_ids ? ", every repetition the same" : "; REPETITIONS DIFFER");
    st_free(ids);
    st_free(gen);
    st_free(tpp); st_free(ttg); st_free(tcpu); st_free(tpc); st_free(fw); st_free(fc); st_free(fn);
    strata_session_free(s);
    strata_model_free(m);
    return same_ids ? 0 : 1;
}
