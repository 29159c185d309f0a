/* Microbenchmark of the CPU MoE FFN (src/cpu/moe.c) on layer 0 of a qwen3moe GGUF (e.g. one
 * written by `strata synth`): for T = 1..8 tokens, the grouped kernels and the per-token
 * reference, median microseconds per moe_ffn() call after warm-up (router, activation
 * quantization, gate/up, down and the weighted sum included; 16 different inputs in turn so the
 * experts come from memory, not cache), the bytes of weights the call
 * must read (router + each DISTINCT selected expert once: what grouping achieves), the
 * effective GB/s over those bytes, and an FNV-1a checksum of the output float bits (equal
 * between the variants: same bits).
 * Build and run (from the repository root, after `make BUILD=build-moe`):
 *   gcc -std=c11 -O2 -ffp-contract=off -pthread -D_GNU_SOURCE -Iinclude -Isrc \
 *       bench/bench_moe.c build-moe/libstrata.a -lm -lpthread -o build-moe/bench_moe
 *   build-moe/bench_moe MODEL.gguf [THREADS] [ITERS]                                         */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cpu/moe.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synth.h"
#include "core/util.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: bench_moe MODEL.gguf [THREADS] [ITERS]\n"); return 1; }
    int nth = argc > 2 ? atoi(argv[2]) : cpu_count(), iters = argc > 3 ? atoi(argv[3]) : 20;
    char err[512];
    gguf_file *f;
    hparams hp;
    model_weights w;
    if (gguf_open(argv[1], &f, err, sizeof err) || model_bind(f, &hp, &w, err, sizeof err)) {
        fprintf(stderr, "bench_moe: %s\n", err);
        return 1;
    }
    if (hp.n_experts == 0) { fprintf(stderr, "bench_moe: %s is not a MoE model\n", argv[1]); return 1; }
    const layer_weights *L = &w.layers[0];
    const int E = hp.n_embd, k = hp.n_experts_used;
    threadpool *tp = threadpool_create(nth);
    float *out = malloc(sizeof(float) * 8 * (size_t)E);
    uint64_t expert_bytes = (L->gate_exps.nbytes + L->up_exps.nbytes + L->down_exps.nbytes) / (uint64_t)hp.n_experts;
    printf("%s layer 0: dim %d, %d experts top-%d of ffn %d, experts %s/%s/%s (%.2f MB each), router %s, %d threads\n",
           argv[1], E, hp.n_experts, k, hp.n_ff_exp, quant_type_name(L->gate_exps.type), quant_type_name(L->up_exps.type),
           quant_type_name(L->down_exps.type), expert_bytes / 1e6, quant_type_name(L->gate_inp.type), nth);
    printf("%-3s %-9s %6s %8s %10s %8s  %s\n", "T", "variant", "pairs", "experts", "us", "GB/s", "checksum(set 0)");
    /* NSETS different inputs in turn, so each call routes to other experts and reads them from
     * memory, not from the cache the previous call warmed (the real decode case) */
    enum { NSETS = 16 };
    float *xs = malloc(sizeof(float) * NSETS * 8 * (size_t)E);
    for (size_t i = 0; i < (size_t)NSETS * 8 * (size_t)E; i++) xs[i] = synth_gauss(42, i);
    double *ts = malloc(sizeof(double) * (size_t)iters), *gbs = malloc(sizeof(double) * (size_t)iters);
    for (int T = 1; T <= 8; T++) {
        for (int v = 0; v < 2; v++) {
            moe_variant var = v ? MOE_PER_TOKEN : MOE_GROUPED;
            uint64_t checksum = 0;
            double pairs_distinct = 0;
            for (int it = -2; it < iters; it++) {   /* two warm-up calls */
                const float *xi = xs + (size_t)((it + 2) % NSETS) * 8 * (size_t)E;
                int32_t sel[8 * 64];
                float wt[8 * 64];
                double t0 = now_seconds();
                if (moe_ffn(tp, L, k, xi, T, out, MATVEC_DEFAULT, MATVEC_KERNEL_AUTO, var, sel, wt)) {
                    fprintf(stderr, "bench_moe: moe_ffn failed\n");
                    return 1;
                }
                double dt = now_seconds() - t0;
                if (it == -2) checksum = fnv1a64(out, sizeof(float) * (size_t)T * (size_t)E);
                if (it < 0) continue;
                int distinct = 0;
                for (int i = 0; i < T * k; i++) {
                    int seen = 0;
                    for (int j = 0; j < i; j++) seen |= sel[j] == sel[i];
                    distinct += !seen;
                }
                pairs_distinct += distinct;
                ts[it] = dt;
                gbs[it] = (double)(L->gate_inp.nbytes + (uint64_t)distinct * expert_bytes) / dt / 1e9;
            }
            qsort(ts, (size_t)iters, sizeof(double), cmp_double);
            qsort(gbs, (size_t)iters, sizeof(double), cmp_double);
            printf("%-3d %-9s %6d %8.1f %10.1f %8.2f  %016llx\n", T, v ? "per-token" : "grouped", T * k,
                   pairs_distinct / iters, ts[iters / 2] * 1e6, gbs[iters / 2], (unsigned long long)checksum);
        }
    }
    free(xs); free(gbs);
    free(ts); free(out);
    threadpool_free(tp);
    model_weights_free(&w);
    gguf_close(f);
    return 0;
}
