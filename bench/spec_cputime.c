/* Speculation's cost in CPU time, insensitive to a shared machine's load (docs/BENCHMARKS.md
 * "Cost-aware windows"): one thread, the model loaded once; for every prompt of a set
 * (bench/spec_prompts/SET.txt, sent as a chat turn) greedy decoding of N tokens with --spec 0
 * and with --spec 7 (the cost model's windows), in an order that alternates with the prompt,
 * timed by the process's CPU clock around strata_generate (the prompt but its last token is
 * evaluated before, the session and its calibration are made before: only the decode loop).
 * Prints per prompt the CPU seconds and tokens of both, and the set's tokens per CPU-second.
 * Build (after make):  cc -O2 -Iinclude -Isrc bench/spec_cputime.c build/libstrata.a \
 *          -lm -lpthread -ljansson -lmicrohttpd -o build/spec_cputime
 * Run:   build/spec_cputime MODEL bench/spec_prompts/open.txt 48 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "strata.h"
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cb(int32_t id, void *u) { (void)id; (*(int *)u)++; return 0; }
int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: spec_cputime MODEL SET.txt N_TOKENS\n"); return 2; }
    const char *model = argv[1], *set = argv[2]; int N = atoi(argv[3]);
    strata_model_params mp = strata_model_default_params(); mp.path = model; mp.n_threads = 1;
    strata_model *m; char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    FILE *f = fopen(set, "r");
    if (!f) { perror(set); return 1; }
    static char buf[1 << 16]; size_t len = fread(buf, 1, sizeof buf - 1, f); buf[len] = 0; fclose(f);
    char *p = buf; while (*p == '#') { p = strchr(p, '\n') + 1; }
    double tot[2] = { 0 }; long ntok[2] = { 0 }; int pi = 0;
    while (*p) {
        char *e = strstr(p, "\n%%\n"); if (!e) break; *e = 0;
        strata_chat_msg msg = { "user", p }; int32_t *ids;
        int n = strata_chat_tokenize(m, &msg, 1, 1, NULL, &ids, NULL, err, sizeof err);
        double t[2]; int got[2];
        for (int o = 0; o < 2; o++) {
            int mode = (o + pi) % 2;
            strata_session_params sp = strata_session_default_params(); sp.n_ctx = n + N + 16; sp.spec_draft = mode ? 7 : 0;
            strata_session *s = strata_session_new(m, &sp, err, sizeof err);
            strata_session_eval(s, ids, n - 1);
            got[mode] = 0;
            double c0 = cpu();
            strata_generate(s, ids + n - 1, 1, N, cb, &got[mode]);
            t[mode] = cpu() - c0;
            strata_session_free(s);
        }
        printf("prompt %2d: spec0 %.4f s/%d tok  auto %.4f s/%d tok  ratio %.3f\n", pi, t[0], got[0], t[1], got[1], t[0] / t[1]);
        fflush(stdout);
        for (int k = 0; k < 2; k++) { tot[k] += t[k]; ntok[k] += got[k]; }
        strata_free(ids); p = e + 4; pi++;
    }
    printf("total: spec0 %.1f tok per cpu-s, auto %.1f tok per cpu-s, ratio %.3f\n", ntok[0] / tot[0], ntok[1] / tot[1], (ntok[1] / tot[1]) / (ntok[0] / tot[0]));
    return 0;
}
