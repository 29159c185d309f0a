/* CPU time of one decode step's attention (backend_cpu_attention, T = 1) at a depth, on
 * SmolLM2's head shape (9 heads of 64, 3 KV heads, f16 cache), one thread. CPU time, not wall
 * time: the figure holds on a loaded machine (docs/BENCHMARKS.md, issue 19).
 *   make NVCC= build/libstrata.a
 *   cc -O2 -ffp-contract=off -fno-math-errno -pthread -D_GNU_SOURCE -Iinclude -Isrc -o attn_cpu \
 *      bench/attn_cpu.c build/libstrata.a -lm -lpthread -lmicrohttpd -ljansson
 *   ./attn_cpu DEPTH [ITERS]        (STRATA_CPU_KV_PASS=0/1 and STRATA_CPU_ATTN=scalar apply) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "model/backend.h"
#include "model/model.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 4096, iters = argc > 2 ? atoi(argv[2]) : 60;
    if (depth < 1 || iters < 1) { fprintf(stderr, "usage: attn_cpu DEPTH [ITERS]\n"); return 2; }
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_layers = 1; hp.n_heads = 9; hp.n_kv_heads = 3; hp.head_dim = 64; hp.n_embd = 576;
    hp.n_ff = 64; hp.n_vocab = 16; hp.n_ctx_train = depth + 8; hp.n_rot = 64;
    hp.rope_base = hp.rope_base_local = 1e4f; hp.rope_scale = 1; hp.rms_eps = 1e-5f; hp.attn_scale = 0.125f;
    hp.embd_scale = 1;
    threadpool *tp = threadpool_create(1);
    static model_weights mw;
    char err[256];
    backend *be = backend_cpu_new(&hp, &mw, depth + 8, tp, 0, 0, err, sizeof err);
    if (!be) { fprintf(stderr, "%s\n", err); return 1; }
    const int QD = 576, KD = 192, P = 256;
    float *q = malloc(sizeof(float) * P * QD), *k = malloc(sizeof(float) * P * KD), *v = malloc(sizeof(float) * P * KD);
    float *o = malloc(sizeof(float) * P * QD);
    srand(1);
    for (int i = 0; i < P * QD; i++) q[i] = rand() / (float)RAND_MAX - 0.5f;
    for (int i = 0; i < P * KD; i++) { k[i] = rand() / (float)RAND_MAX - 0.5f; v[i] = rand() / (float)RAND_MAX - 0.5f; }
    /* fill the cache cheaply (a window of 8 attends to little) */
    for (int p = 0; p < depth; p += P) backend_cpu_attention(be, be->kv, 0, q, k, v, P, p, 0.125f, 8, o);
    double t0 = cpu_now();
    for (int i = 0; i < iters; i++) backend_cpu_attention(be, be->kv, 0, q, k, v, 1, depth, 0.125f, 0, o);
    double t1 = cpu_now();
    printf("depth %d: %.3f ms CPU time per layer (x 30 layers = %.1f ms per token)\n", depth, (t1 - t0) / iters * 1e3,
           (t1 - t0) / iters * 30e3);
    be->ops->free(be);
    threadpool_free(tp);
    free(q); free(k); free(v); free(o);
    return 0;
}
