/* strata bench moe [-m MODEL.gguf] [--layer L] [--type-experts T] [-t N] [--iters N]
 *
 * Times the CPU Mixture-of-Experts FFN (src/cpu/moe.c) of one layer for T = 1..8 tokens (or the
 * --cols list, up to MOE_MAX_T: prompt-wide calls), grouped kernels and the per-token reference
 * (T <= 8 only), and prints per phase the median microseconds
 * (route = router matvec + softmax/top-k; gate/up pass; down pass), the bytes the call must
 * read (router + each DISTINCT selected expert once) and the GB/s over them, and an FNV-1a
 * checksum of the output bits (equal between the variants). Each call takes the next of 16
 * input sets, so it routes to other experts than the previous call and reads them from DRAM.
 * Without -m, one layer of the Qwen3-30B-A3B shape (dim 2048, 128 experts top-8 of ffn 768)
 * is written by `strata synth` to a temporary file first, experts in --type-experts
 * (default IQ3_XXS). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_moe.h"
#include "cpu/moe.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "core/util.h"

static const char *moe_usage =
    "usage: strata bench moe [-m MODEL.gguf] [--layer L] [--type-experts T] [-t THREADS] [--iters N]\n"
    "                        [--cols T1,T2,...]\n"
    "  Times the MoE FFN of one layer for T = 1..8 (grouped and per-token): route, gate/up and\n"
    "  down microseconds, GB/s over the distinct experts read, and an output checksum.\n"
    "  --cols: the token counts to time instead (1..512; above 8 the grouped kernels alone).\n"
    "  Without -m: one synthetic layer of the Qwen3-30B-A3B shape, experts in T (default IQ3_XXS).\n";

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return v[n / 2];
}

int bench_moe(int argc, char **argv) {
    const char *model = NULL;
    int layer = 0, nth = cpu_count(), iters = 16, type_experts = TYPE_IQ3_XXS;
    int cols[32], n_cols = 8, max_t = 8;
    for (int i = 0; i < 8; i++) cols[i] = i + 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(moe_usage, stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "strata bench moe: %s needs a value (strata bench moe --help)\n", a); return 2; }
        const char *v = argv[++i];
        if (!strcmp(a, "-m")) model = v;
        else if (!strcmp(a, "--layer")) layer = atoi(v);
        else if (!strcmp(a, "-t")) nth = atoi(v);
        else if (!strcmp(a, "--iters")) iters = atoi(v);
        else if (!strcmp(a, "--cols")) {
            n_cols = 0; max_t = 0;
            for (const char *c = v; *c;) {
                char *end;
                long t = strtol(c, &end, 10);
                if (end == c || t < 1 || t > MOE_MAX_T || n_cols == 32 || (*end && *end != ',')) {
                    fprintf(stderr, "strata bench moe: --cols '%s': up to 32 counts of 1..%d, comma-separated\n", v, MOE_MAX_T);
                    return 2;
                }
                cols[n_cols++] = (int)t;
                if (t > max_t) max_t = (int)t;
                c = *end ? end + 1 : end;
            }
            if (!n_cols) { fprintf(stderr, "strata bench moe: --cols is empty\n"); return 2; }
        }
        else if (!strcmp(a, "--type-experts")) {
            type_experts = quant_type_from_name(v);
            if (type_experts < 0 || !quant_traits_get(type_experts)) {
                fprintf(stderr, "strata bench moe: --type-experts '%s': not a weight format of this build\n", v);
                return 1;
            }
        } else { fprintf(stderr, "strata bench moe: unknown option '%s' (strata bench moe --help)\n", a); return 2; }
    }
    if (nth < 1 || nth > 1024 || iters < 1 || iters > 100000 || layer < 0) {
        fprintf(stderr, "strata bench moe: -t, --iters must be positive, --layer >= 0\n");
        return 2;
    }
    char err[512], tmp[64] = "";
    if (!model) {
        snprintf(tmp, sizeof tmp, "/tmp/strata-bench-moe-%d.gguf", (int)getpid());
        synth_params p;
        synth_default_params(&p, ARCH_QWEN3MOE);
        p.n_layers = 1; p.n_vocab = 1024; p.tokenizer_path = "builtin"; p.n_threads = nth;
        p.type_experts = type_experts; p.type_embd = TYPE_Q8_0; p.type_output = TYPE_Q8_0;
        fprintf(stderr, "strata bench moe: writing one synthetic Qwen3-30B-A3B layer (%s experts) to %s\n",
                quant_type_name(type_experts), tmp);
        if (synth_write(&p, tmp, err, sizeof err)) {
            fprintf(stderr, "strata bench moe: %s\n", err);
            unlink(tmp);
            return 1;
        }
        model = tmp;
    }
    gguf_file *f = NULL;
    hparams hp;
    model_weights w;
    int rc = 1;
    threadpool *tp = NULL;
    float *xs = NULL, *out = NULL, *wt = NULL;
    int32_t *sel = NULL;
    double *tr = NULL, *tg = NULL, *td = NULL, *tt = NULL;
    if (gguf_open(model, &f, err, sizeof err) || model_bind(f, &hp, &w, err, sizeof err)) {
        fprintf(stderr, "strata bench moe: %s\n", err);
        if (f) gguf_close(f);
        if (tmp[0]) unlink(tmp);
        return 1;
    }
    if (hp.n_experts == 0 || layer >= hp.n_layers) {
        fprintf(stderr, "strata bench moe: %s: %s\n", model,
                hp.n_experts == 0 ? "not a Mixture-of-Experts model" : "--layer is past the last layer");
        goto done;
    }
    const layer_weights *L = &w.layers[layer];
    const int E = hp.n_embd, k = hp.n_experts_used;
    /* 16 input sets (4 for prompt-wide counts, which read every expert anyway) */
    const int NSETS = max_t > 8 ? 4 : 16;
    tp = threadpool_create(nth);
    xs = st_malloc(sizeof(float) * (size_t)NSETS * (size_t)max_t * (size_t)E);
    out = st_malloc(sizeof(float) * (size_t)max_t * (size_t)E);
    tr = st_malloc(sizeof(double) * (size_t)iters * 4);
    sel = st_malloc(sizeof(int32_t) * (size_t)max_t * (size_t)k);
    wt = st_malloc(sizeof(float) * (size_t)max_t * (size_t)k);
    if (!tp || !xs || !out || !tr || !sel || !wt) { fprintf(stderr, "strata bench moe: out of memory\n"); goto done; }
    tg = tr + iters; td = tg + iters; tt = td + iters;
    /* inputs of unit RMS, as the ffn_norm output */
    for (size_t i = 0; i < (size_t)NSETS * (size_t)max_t * (size_t)E; i++) xs[i] = synth_gauss(42, i);
    const uint64_t e_gu = (L->gate_exps.nbytes + L->up_exps.nbytes) / (uint64_t)hp.n_experts;
    const uint64_t e_d = L->down_exps.nbytes / (uint64_t)hp.n_experts;
    printf("%s layer %d: dim %d, %d experts top-%d of ffn %d, experts %s (gate+up %.2f MB, down %.2f MB each), "
           "router %s, %d threads, median of %d calls\n", model, layer, E, hp.n_experts, k, hp.n_ff_exp,
           quant_type_name(L->gate_exps.type), e_gu / 1e6, e_d / 1e6, quant_type_name(L->gate_inp.type), nth, iters);
    printf("%-3s %-9s %5s %8s %9s %10s %9s %10s %8s %8s  %s\n", "T", "variant", "pairs", "experts", "route us",
           "gate/up us", "down us", "total us", "gu GB/s", "GB/s", "checksum");
    for (int ci = 0; ci < n_cols; ci++) {
        const int T = cols[ci];
        for (int v = 0; v < (T <= 8 ? 2 : 1); v++) {
            moe_variant var = v ? MOE_PER_TOKEN : MOE_GROUPED;
            uint64_t checksum = 0;
            double distinct_sum = 0, bytes_gu = 0, bytes_all = 0;
            for (int it = -2; it < iters; it++) {   /* two warm-up calls */
                const float *x = xs + (size_t)((it + 2) % NSETS) * (size_t)max_t * (size_t)E;
                moe_timing tm;
                double t0 = now_seconds();
                if (moe_ffn_timed(tp, L, k, x, T, out, MATVEC_DEFAULT, MATVEC_KERNEL_AUTO, var, sel, wt, &tm)) {
                    fprintf(stderr, "strata bench moe: the MoE FFN failed (unsupported types or shape)\n");
                    goto done;
                }
                double total = now_seconds() - t0;
                if (it == -2) checksum = fnv1a64(out, sizeof(float) * (size_t)T * (size_t)E);
                if (it < 0) continue;
                int distinct = 0;
                for (int e = 0; e < hp.n_experts; e++) {
                    int seen = 0;
                    for (int i = 0; i < T * k && !seen; i++) seen = sel[i] == e;
                    distinct += seen;
                }
                distinct_sum += distinct;
                bytes_gu += (double)distinct * (double)e_gu;
                bytes_all += (double)L->gate_inp.nbytes + (double)distinct * (double)(e_gu + e_d);
                tr[it] = tm.route; tg[it] = tm.gate_up; td[it] = tm.down; tt[it] = total;
            }
            double mr = median(tr, iters), mg = median(tg, iters), md = median(td, iters), mt = median(tt, iters);
            printf("%-3d %-9s %5d %8.1f %9.1f %10.1f %9.1f %10.1f %8.2f %8.2f  %016llx\n", T, v ? "per-token" : "grouped",
                   T * k, distinct_sum / iters, mr * 1e6, mg * 1e6, v ? 0.0 : md * 1e6, mt * 1e6,
                   v ? 0.0 : bytes_gu / iters / mg / 1e9, bytes_all / iters / mt / 1e9, (unsigned long long)checksum);
        }
    }
    rc = 0;
done:
    st_free(xs); st_free(out); st_free(tr); st_free(sel); st_free(wt);
    threadpool_free(tp);
    model_weights_free(&w);
    gguf_close(f);
    if (tmp[0]) unlink(tmp);
    return rc;
}
