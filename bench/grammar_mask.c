/* The grammar's mask cost alone (docs/BENCHMARKS.md, "Constrained output"): the bench schema of
 * bench/grammar_bench.sh over SmolLM2's vocabulary, a document (what the model wrote under it,
 * bench/grammar_doc.json) tokenized and fed token by token; at each step the mask is computed
 * (timed by the thread's CPU clock), the token checked against it and accepted. Prints the
 * median / mean / max mask time, masks computed and cache hits; REPS repeats with a fresh
 * matcher (the cache does not carry over).
 * Build (after make):  cc -O2 -Iinclude -Isrc bench/grammar_mask.c build/libstrata.a \
 *          -lm -lpthread -ljansson -lmicrohttpd -o build/grammar_mask
 * Run:   build/grammar_mask MODEL bench/grammar_doc.json [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "strata.h"
#include "grammar/grammar_model.h"
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static const char SCHEMA[] = "{\"type\":\"object\",\"properties\":{\"scientists\":{\"type\":\"array\",\"minItems\":8,\"maxItems\":8,"
    "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},\"field\":{\"type\":\"string\","
    "\"maxLength\":40},\"born\":{\"type\":\"integer\"}},\"required\":[\"name\",\"field\",\"born\"]}}},\"required\":[\"scientists\"]}";
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: grammar_mask MODEL DOC.json [REPS]\n"); return 2; }
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    strata_model_params mp = strata_model_default_params();
    mp.path = argv[1];
    mp.vocab_only = 1;
    strata_model *m;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "%s\n", err); return 1; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 1; }
    static char doc[1 << 16];
    size_t dl = fread(doc, 1, sizeof doc - 1, f);
    fclose(f);
    while (dl && (doc[dl - 1] == '\n' || doc[dl - 1] == ' ')) dl--;
    doc[dl] = 0;
    static int32_t ids[1 << 16];
    int n = strata_tokenize(m, doc, dl, 0, 0, ids, 1 << 16);
    grammar *g = grammar_from_options(NULL, SCHEMA, 0, err, sizeof err);
    grammar_vocab *v = grammar_vocab_for_model(m);
    if (n <= 0 || !g || !v) { fprintf(stderr, "setup failed: %s\n", err); return 1; }
    double *t = malloc((size_t)n * reps * sizeof *t);
    int nt = 0, bad = 0;
    long comp = 0, hit = 0;
    double total = 0;
    for (int r = 0; r < reps; r++) {
        grammar_match *gm = grammar_match_new(g, v);
        for (int i = 0; i < n; i++) {
            double t0 = cpu();
            const uint8_t *mask = grammar_match_mask(gm);
            t[nt++] = cpu() - t0;
            if (!mask || !(mask[ids[i] >> 3] >> (ids[i] & 7) & 1) || grammar_match_token(gm, ids[i])) { bad = i + 1; break; }
        }
        long c, h; double s;
        grammar_match_stats(gm, &c, &h, &s);
        comp += c; hit += h; total += s;
        grammar_match_free(gm);
        if (bad) break;
    }
    if (bad) { fprintf(stderr, "token %d of the document was not allowed\n", bad - 1); return 1; }
    qsort(t, (size_t)nt, sizeof *t, cmpd);
    double sum = 0;
    for (int i = 0; i < nt; i++) sum += t[i];
    printf("tokens %d x %d | mask CPU ms: median %.3f mean %.3f p90 %.3f max %.3f | computed %ld, cached %ld\n",
           n, reps, 1e3 * t[nt / 2], 1e3 * sum / nt, 1e3 * t[nt * 9 / 10], 1e3 * t[nt - 1], comp, hit);
    free(t);
    grammar_vocab_free(v); grammar_free(g); strata_model_free(m);
    return 0;
}
