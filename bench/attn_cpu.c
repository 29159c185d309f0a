/* CPU time of one decode step's attention (backend_cpu_attention, T = 1) at a depth, on
 * SmolLM2's head shape (9 heads of 64, 3 KV heads), f16 or int8 cache, one thread by default.
 * CPU time, not wall time: the figure holds on a loaded machine (docs/BENCHMARKS.md, issue 19).
 *   make NVCC= build/libstrata.a
 *   cc -O2 -ffp-contract=off -fno-math-errno -pthread -D_GNU_SOURCE -Iinclude -Isrc -o build/attn_cpu \
 *      bench/attn_cpu.c build/libstrata.a -lm -lpthread -lmicrohttpd -ljansson
 *   build/attn_cpu DEPTH [ITERS [int8 [THREADS]]]
 * (STRATA_CPU_ATTN=scalar|ref and STRATA_CPU_KV_PASS=0/1 apply: docs/KERNELS.md) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model/backend.h"
#include "model/model.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"
#include "core/util.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 4096, iters = argc > 2 ? atoi(argv[2]) : 20;
    int int8 = argc > 3 && !strcmp(argv[3], "int8"), nth = argc > 4 ? atoi(argv[4]) : 1;
    if (depth < 1 || iters < 1 || nth < 1) {
        fprintf(stderr, "usage: attn_cpu DEPTH [ITERS [f16|int8 [THREADS]]]\n");
        return 2;
    }
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_layers = 1; hp.n_heads = 9; hp.n_kv_heads = 3; hp.head_dim = 64; hp.n_embd = 576;
    hp.n_ff = 64; hp.n_vocab = 16; hp.n_ctx_train = depth + 8; hp.n_rot = 64;
    hp.rope_base = hp.rope_base_local = 1e4f; hp.rope_scale = 1; hp.rms_eps = 1e-5f; hp.attn_scale = 0.125f;
    hp.embd_scale = 1;
    threadpool *tp = threadpool_create(nth);
    static model_weights mw;
    char err[256];
    backend *be = backend_cpu_new(&hp, &mw, depth + 8, tp, 0, int8, err, sizeof err);
    if (!be) { fprintf(stderr, "%s\n", err); return 1; }
    const int QD = 576, KD = 192, P = 256;
    float *q = malloc(sizeof(float) * P * QD), *k = malloc(sizeof(float) * P * KD), *v = malloc(sizeof(float) * P * KD);
    float *o = malloc(sizeof(float) * P * QD);
    if (!q || !k || !v || !o) return 1;
    srand(1);
    for (int i = 0; i < P * QD; i++) q[i] = rand() / (float)RAND_MAX - 0.5f;
    for (int i = 0; i < P * KD; i++) { k[i] = rand() / (float)RAND_MAX - 0.5f; v[i] = rand() / (float)RAND_MAX - 0.5f; }
    /* fill the cache cheaply (a window of 8 attends to little) */
    for (int p = 0; p < depth; p += P) backend_cpu_attention(be, be->kv, 0, q, k, v, depth - p < P ? depth - p : P, p, 0.125f, 8, o);
    /* 7 rounds of ITERS steps: the fastest round and the median (a shared machine's load
     * slows some rounds: the minimum is the least disturbed) */
    double r[7], w[7];
    for (int rd = 0; rd < 7; rd++) {
        double t0 = cpu_now(), w0 = now_seconds();
        for (int i = 0; i < iters; i++) backend_cpu_attention(be, be->kv, 0, q, k, v, 1, depth, 0.125f, 0, o);
        r[rd] = (cpu_now() - t0) / iters * 1e3;
        w[rd] = (now_seconds() - w0) / iters * 1e3;
    }
    for (int a = 1; a < 7; a++)
        for (int b = a; b > 0 && r[b] < r[b - 1]; b--) { double t = r[b]; r[b] = r[b - 1]; r[b - 1] = t; }
    for (int a = 1; a < 7; a++)
        for (int b = a; b > 0 && w[b] < w[b - 1]; b--) { double t = w[b]; w[b] = w[b - 1]; w[b - 1] = t; }
    /* with threads the pool's workers spin between jobs: the CPU time counts that, the wall
     * time is the figure then */
    printf("depth %d (%s cache, %d thread%s): %.3f ms CPU time per layer, fastest of 7 rounds of %d (median %.3f); "
           "wall %.3f ms (median %.3f)\n", depth, int8 ? "int8" : "f16", nth, nth > 1 ? "s" : "", r[0], iters, r[3], w[0], w[3]);
    be->ops->free(be);
    threadpool_free(tp);
    free(q); free(k); free(v); free(o);
    return 0;
}
