/* The divergence of two ways of running a model on real chat prompts (docs/KERNELS.md, "The
 * tensor-core attention order"): A and B each evaluate five chat prompts (four short ones and
 * one of ~1,400 tokens of text) in passes of 64 with every position's logits, and decode 48
 * greedy tokens each on its own. Reported: positions, mean and max KL(A || B) of the softmaxes,
 * argmax agreement, greedy ids identical before A and B part. Used by tests/gpu/test_gpu_attn_tc
 * (the CPU vs the GPU's tensor-core order) and bench/kl_kv8.c (the CPU's f16 vs int8 cache). */
#ifndef STRATA_REAL_DIV_H
#define STRATA_REAL_DIV_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "strata.h"
#include "engine/engine.h"

typedef struct div_result {
    long npos, agree;
    double kl_mean, kl_max;
    int greedy_equal, greedy_total;
} div_result;

static int div_argmax(const float *x, int n) {
    int b = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[b]) b = i;
    return b;
}

/* KL(p || q) of the softmaxes of logits a (p) and b (q), in double */
static double div_kl(const float *a, const float *b, int n) {
    double ma = a[0], mb = b[0], za = 0, zb = 0, kl = 0;
    for (int i = 1; i < n; i++) { if (a[i] > ma) ma = a[i]; if (b[i] > mb) mb = b[i]; }
    for (int i = 0; i < n; i++) { za += exp(a[i] - ma); zb += exp(b[i] - mb); }
    for (int i = 0; i < n; i++) {
        double pa = exp(a[i] - ma) / za, la = a[i] - ma - log(za), lb = b[i] - mb - log(zb);
        kl += pa * (la - lb);
    }
    return kl;
}

/* prompt i (0..4) into buf */
static const char *div_prompt(int i, char *buf, size_t cap) {
    static const char *p[] = {
        "What is the capital of France? Answer in one sentence.",
        "Write a short poem about the sea at night.",
        "Explain in simple words how a CPU cache works, and why memory bandwidth limits the speed of "
        "large language model inference on a single stream.",
        "List five fruits that are red, then five that are yellow, with one fact about each.",
    };
    if (i < 4) return p[i];
    static const char *sent[] = { "The river bends around the old mill before it reaches the town. ",
                                  "Engineers measured the bridge twice and found the same numbers. ",
                                  "A library keeps books, maps and letters from three centuries. ",
                                  "In winter the market opens late and closes before the lamps are lit. ",
                                  "Every test compares the fast kernel with the reference, bit for bit. " };
    buf[0] = 0;
    for (int k = 0; strlen(buf) < 7000 && strlen(buf) + 100 < cap; k++) strcat(buf, sent[(k * 3 + k / 5) % 5]);
    strcat(buf, "\nSummarize the text above in two sentences.");
    return buf;
}

/* A = (ma, kv_a), B = (mb, kv_b) (STRATA_KV_F16 / STRATA_KV_INT8); 0, or -1 on an error */
static int div_run(strata_model *ma, int kv_a, strata_model *mb, int kv_b, div_result *r, int verbose) {
    const int V = strata_n_vocab(ma);
    static char longp[8192];
    float *la = malloc((size_t)64 * V * sizeof(float)), *lb = malloc((size_t)64 * V * sizeof(float));
    double kl_sum = 0;
    memset(r, 0, sizeof *r);
    int rc = la && lb ? 0 : -1;
    for (int pi = 0; pi < 5 && !rc; pi++) {
        strata_chat_msg m = { "user", div_prompt(pi, longp, sizeof longp) };
        int32_t *ids = NULL;
        char err[512];
        int n = strata_chat_tokenize(ma, &m, 1, 1, NULL, &ids, NULL, err, sizeof err);
        if (n <= 0) { fprintf(stderr, "tokenize: %s\n", err); rc = -1; break; }
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 4096;
        sp.kv_type = kv_a;
        strata_session *sa = strata_session_new(ma, &sp, err, sizeof err);
        sp.kv_type = kv_b;
        strata_session *sb = strata_session_new(mb, &sp, err, sizeof err);
        if (!sa || !sb) { fprintf(stderr, "session: %s\n", err); rc = -1; }
        for (int i = 0; i < n && !rc; i += 64) {
            const int T = n - i < 64 ? n - i : 64;
            if (session_forward(sa, ids + i, T, 0)) { rc = -1; break; }
            memcpy(la, session_logits(sa), (size_t)T * V * sizeof(float));
            if (session_forward(sb, ids + i, T, 0)) { rc = -1; break; }
            memcpy(lb, session_logits(sb), (size_t)T * V * sizeof(float));
            for (int t = 0; t < T; t++) {
                const double k = div_kl(la + (size_t)t * V, lb + (size_t)t * V, V);
                kl_sum += k;
                if (k > r->kl_max) r->kl_max = k;
                r->agree += div_argmax(la + (size_t)t * V, V) == div_argmax(lb + (size_t)t * V, V);
                r->npos++;
            }
        }
        int same = 0, parted = 0;
        if (!rc) {   /* greedy, each on its own tokens */
            int32_t a = div_argmax(la + (size_t)((n - 1) % 64) * V, V), b = div_argmax(lb + (size_t)((n - 1) % 64) * V, V);
            for (int k = 0; k < 48; k++) {
                if (a != b) parted = 1;
                if (!parted) same++;
                if (strata_session_eval(sa, &a, 1) || strata_session_eval(sb, &b, 1)) { rc = -1; break; }
                a = div_argmax(strata_session_logits(sa), V);
                b = div_argmax(strata_session_logits(sb), V);
            }
        }
        r->greedy_equal += same; r->greedy_total += 48;
        if (verbose) printf("real prompt %d (%d tokens): greedy ids identical for %d of 48%s\n", pi, n, same,
                            parted ? " (then they part)" : "");
        strata_session_free(sa); strata_session_free(sb);
        strata_free(ids);
    }
    r->kl_mean = r->npos ? kl_sum / r->npos : 0;
    free(la); free(lb);
    return rc;
}
#endif
