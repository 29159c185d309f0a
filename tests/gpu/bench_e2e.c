/* What a user of `strata run` gets, through the public API only (include/strata.h), so the same
 * source builds against any tree's library (before/after comparisons in one device call):
 *   bench_e2e SHAPE [reps] [batch]   SHAPE: smollm2 | 1b | 1b_iq3 | 1b_iq2xs | 1b_q20 | moe48 | moe48_iq2 | moe48_q4k | moe48_q20 | moe48_iq4xs | moe48_q40 (synthetic, src/model/synth.h;
 *                            the file /tmp/strata-e2e-SHAPE.gguf is written once and reused;
 *                            E2E_TOKENIZER=vocab.gguf gives it that tokenizer)
 * prints prompt tok/s (a 512-token prompt, strata_session_eval: passes of FWD_MAX_T columns),
 * decode tok/s (strata_generate, greedy, 128 tokens after a 16-token prompt: on the GPU the
 * decode step's graph), medians of reps, and the hash of the generated ids. With "batch": the
 * aggregate decode tok/s of N = 1, 4, 16, 64 sessions stepped together (strata_sessions_step,
 * what the server's decode thread calls; 64 steps after 16-token prompts), and the hash of
 * all sessions' ids (the same whatever N shares the pass: batch invariance).
 * Environment: E2E_BATCH=16,64 the session counts of "batch" (default 1,4,16,64); E2E_SKIP_MAIN=1
 * skips the prompt / decode rounds (profiles of the batch alone); E2E_DEPTH=1024,4096 adds decode
 * at depth: a prompt of d tokens through strata_generate, then 128 greedy tokens (what `strata
 * run` does after a long prompt; prompt and decode tok/s, ids hash; n_ctx d + 256 as llama-bench's,
 * or E2E_CTX when larger). E2E_KV=int8: every session
 * with the int8 KV cache (`--kv int8`; default f16). E2E_MIX=0,8,9,16: the server's burst step
 * (strata_sessions_step_prefill_multi: N sessions decoding at position 512 beside two prompts of
 * 1,024 - N tokens in all; E2E_MIX_PROMPTS=3: three prompts as the server's steps hold them,
 * E2E_MIX_CTX=1024: the sessions' n_ctx), ms per step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>
#include "strata.h"
#include "model/synth.h"
#include "quant/quant.h"

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

typedef struct { uint64_t h; int n; } ids_hash;
static int on_tok(int32_t id, void *u) { ids_hash *x = u; x->h = x->h * 31 + (uint64_t)id; x->n++; return 0; }

int main(int argc, char **argv) {
    const char *shape = argc > 1 ? argv[1] : "smollm2";
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1 || reps > 15) reps = 3;
    synth_params p;
    if (!strncmp(shape, "moe48", 5)) {   /* Qwen3-30B-A3B shape, IQ3_XXS experts (moe48_iq2: IQ2_XXS, _q4k: Q4_K, _q20: Q2_0, _iq4xs: IQ4_XS, _q40: Q4_0) */
        synth_default_params(&p, ARCH_QWEN3MOE);
        if (!strcmp(shape, "moe48_iq2")) p.type_experts = TYPE_IQ2_XXS;
        else if (!strcmp(shape, "moe48_q4k")) p.type_experts = TYPE_Q4_K;
        else if (!strcmp(shape, "moe48_q20")) p.type_experts = TYPE_Q2_0;
        else if (!strcmp(shape, "moe48_iq4xs")) p.type_experts = TYPE_IQ4_XS;
        else if (!strcmp(shape, "moe48_q40")) p.type_experts = TYPE_Q4_0;
        else if (strcmp(shape, "moe48")) { fprintf(stderr, "unknown shape %s\n", shape); return 2; }
    } else {
        synth_default_params(&p, ARCH_LLAMA);    /* SmolLM2-135M shape */
        p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
        if (!strcmp(shape, "1b") || !strcmp(shape, "1b_iq3") || !strcmp(shape, "1b_iq2xs") || !strcmp(shape, "1b_q20")) {   /* 16 x 2048, ffn 8192, vocab 128256: the 1.5B shape of the issues */
            p.n_layers = 16; p.n_embd = 2048; p.n_ff = 8192; p.n_heads = 32; p.n_kv_heads = 8; p.head_dim = 64;
            p.n_vocab = 128256; p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_Q4_K; p.type_output = TYPE_Q6_K;
            if (!strcmp(shape, "1b_iq3")) { p.type_attn = TYPE_IQ3_XXS; p.type_ffn = TYPE_IQ3_XXS; }   /* IQ3_XXS layers */
            if (!strcmp(shape, "1b_iq2xs")) { p.type_attn = TYPE_IQ2_XS; p.type_ffn = TYPE_IQ2_XS; }   /* IQ2_XS layers */
            if (!strcmp(shape, "1b_q20")) { p.type_attn = TYPE_Q2_0; p.type_ffn = TYPE_Q2_0; }   /* Q2_0 layers */
        } else if (strcmp(shape, "smollm2")) { fprintf(stderr, "unknown shape %s\n", shape); return 2; }
    }
    /* E2E_TOKENIZER: a vocabulary GGUF (tools/vocab_only.py) whose tokenizer the file gets, so
     * llama.cpp loads the same file (the peer's side of the table); default the built-in one */
    p.tokenizer_path = getenv("E2E_TOKENIZER") ? getenv("E2E_TOKENIZER") : "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char path[256], err[512];
    snprintf(path, sizeof path, "/tmp/strata-e2e-%s.gguf", shape);
    if (access(path, R_OK) != 0 && synth_write(&p, path, err, sizeof err) != 0) { fprintf(stderr, "synth: %s\n", err); return 1; }
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.device = getenv("BENCH_CPU") ? STRATA_DEVICE_CPU : STRATA_DEVICE_CUDA;
    strata_model *m = NULL;
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) { fprintf(stderr, "load: %s\n", err); return 1; }
    const int V = strata_n_vocab(m);
    const int kv_type = getenv("E2E_KV") && !strcmp(getenv("E2E_KV"), "int8") ? STRATA_KV_INT8 : STRATA_KV_F16;
    if (getenv("E2E_KV") && kv_type == STRATA_KV_F16 && strcmp(getenv("E2E_KV"), "f16")) {
        fprintf(stderr, "E2E_KV=%s: f16 or int8\n", getenv("E2E_KV"));
        return 2;
    }
    int32_t prompt[512];
    uint64_t x = 12345;
    for (int i = 0; i < 512; i++) { x = x * 6364136223846793005ull + 1442695040888963407ull; prompt[i] = (int32_t)(3 + (x >> 33) % (uint64_t)(V - 3)); }
    double pp[16], tg[16];
    ids_hash last = { 0, 0 };
    if (getenv("E2E_SKIP_MAIN")) reps = 0;
    for (int r = 0; r < reps; r++) {
        strata_session_params sp = strata_session_default_params();
        sp.kv_type = kv_type;
        sp.n_ctx = 1024;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        if (!s) { fprintf(stderr, "session: %s\n", err); return 1; }
        double t0 = now();
        if (strata_session_eval(s, prompt, 512)) { fprintf(stderr, "eval failed\n"); return 1; }
        pp[r] = 512 / (now() - t0);
        strata_session_reset(s);
        ids_hash h = { 1469598103934665603ull, 0 };
        strata_generate(s, prompt, 16, 129, on_tok, &h);
        strata_stats st;
        strata_session_get_stats(s, &st);
        tg[r] = st.gen_tps;
        last = h;
        strata_session_free(s);
    }
    qsort(pp, (size_t)reps, sizeof pp[0], cmpd);
    qsort(tg, (size_t)reps, sizeof tg[0], cmpd);
    if (reps) printf("%-8s prompt 512: %8.0f tok/s (min %.0f max %.0f)  decode 128: %7.0f tok/s (min %.0f max %.0f)  ids %d hash %016llx\n",
           shape, pp[reps / 2], pp[0], pp[reps - 1], tg[reps / 2], tg[0], tg[reps - 1], last.n, (unsigned long long)last.h);
    if (argc > 3 && !strcmp(argv[3], "batch")) {
        int ns[8] = { 1, 4, 16, 64 }, nn = 4;
        if (getenv("E2E_BATCH")) {
            nn = 0;
            for (const char *q = getenv("E2E_BATCH"); *q && nn < 8;) {
                int v = atoi(q);
                if (v >= 1 && v <= 256) ns[nn++] = v;
                while (*q && *q != ',') q++;
                if (*q == ',') q++;
            }
        }
        for (int k = 0; k < nn; k++) {
            int n = ns[k];
            strata_session **ss = calloc((size_t)n, sizeof *ss);
            int32_t *next = calloc((size_t)n, sizeof *next);
            uint64_t h = 1469598103934665603ull;
            for (int i = 0; i < n; i++) {
                strata_session_params sp = strata_session_default_params();
                sp.kv_type = kv_type;
                sp.n_ctx = 256;
                ss[i] = strata_session_new(m, &sp, err, sizeof err);
                if (!ss[i] || strata_session_eval(ss[i], prompt + (i % 32) * 16, 16)) { fprintf(stderr, "session %d\n", i); return 1; }
            }
            double dt = 0;   /* the steps only (not the host argmax between them) */
            for (int step = 0; step < 72; step++) {
                for (int i = 0; i < n; i++) {
                    const float *l = strata_session_logits(ss[i]);
                    int32_t b = 0;
                    for (int v = 1; v < V; v++) if (l[v] > l[b]) b = v;
                    next[i] = b;
                    if (i == 0 || n == 1) h = h * 31 + (uint64_t)b;
                }
                double t0 = now();
                if (strata_sessions_step(ss, next, n)) { fprintf(stderr, "step failed\n"); return 1; }
                if (step >= 8) dt += now() - t0;   /* warm-up steps first */
            }
            printf("%-8s batch %2d sessions: %8.0f tok/s aggregate (%.2f ms per step), session 0 ids hash %016llx\n", shape, n,
                   64.0 * n / dt, dt / 64 * 1e3, (unsigned long long)h);
            for (int i = 0; i < n; i++) strata_session_free(ss[i]);
            free(ss); free(next);
        }
    }
    /* E2E_MIX=0,4,8,9,12,16: the server's burst step (strata_sessions_step_prefill_multi) with N
     * sessions decoding at position 512 beside two prompts of 1,024 - N tokens in all (the server's
     * step budget on CUDA); ms per step, median of 7 */
    for (const char *q = getenv("E2E_MIX"); q && *q;) {
        int nd = atoi(q);
        while (*q && *q != ',') q++;
        if (*q == ',') q++;
        if (nd < 0 || nd > 48) continue;
        /* E2E_MIX_PROMPTS=3: the server's usual make-up instead: a prompt's last 212 tokens (300
         * already in), a whole one of 512, and the first 300 - N of a third (no logits) */
        const int three = getenv("E2E_MIX_PROMPTS") && atoi(getenv("E2E_MIX_PROMPTS")) == 3;
        const int np = three ? 3 : 2;
        strata_session *ss[48], *ps[3];
        int32_t ids[48];
        strata_session_params sp = strata_session_default_params();
        sp.kv_type = kv_type;
        sp.n_ctx = getenv("E2E_MIX_CTX") ? atoi(getenv("E2E_MIX_CTX")) : 2048;   /* the server's slots: --ctx */
        if (sp.n_ctx < 1024) sp.n_ctx = 1024;
        for (int i = 0; i < nd; i++) {
            ss[i] = strata_session_new(m, &sp, err, sizeof err);
            if (!ss[i] || strata_session_eval(ss[i], prompt, 512)) { fprintf(stderr, "mix session %d\n", i); return 1; }
            ids[i] = prompt[(7 * i) % 512];
        }
        for (int j = 0; j < np; j++)
            if (!(ps[j] = strata_session_new(m, &sp, err, sizeof err))) { fprintf(stderr, "mix prompt: %s\n", err); return 1; }
        const int32_t *pids[3] = { prompt, prompt, prompt };
        int pns[3] = { (1024 - nd + 1) / 2, (1024 - nd) / 2, 0 }, want[3] = { 1, 1, 0 };   /* 1,024 columns, as the server's step */
        if (three) { pids[0] = prompt + 300; pns[0] = 212; pns[1] = 512; pns[2] = 300 - nd; }
        double ms[9];
        for (int r = 0; r < 9; r++) {
            for (int j = 0; j < np; j++) strata_session_reset(ps[j]);
            if (three && strata_session_eval(ps[0], prompt, 300)) { fprintf(stderr, "mix prefill\n"); return 1; }
            for (int i = 0; i < nd; i++)
                if (strata_session_rewind(ss[i], 512)) { fprintf(stderr, "mix rewind\n"); return 1; }
            double t0 = now();
            if (strata_sessions_step_prefill_multi(ss, ids, nd, ps, pids, pns, want, np)) { fprintf(stderr, "mix step failed\n"); return 1; }
            ms[r] = (now() - t0) * 1e3;
        }
        qsort(ms + 2, 7, sizeof ms[0], cmpd);   /* two warm-up steps */
        printf("%-8s mix: %2d decoding + %d prompt tokens (%d prompts, n_ctx %d): %.2f ms per step (min %.2f max %.2f)\n", shape, nd,
               1024 - nd, np, sp.n_ctx, ms[5], ms[2], ms[8]);
        for (int i = 0; i < nd; i++) strata_session_free(ss[i]);
        for (int j = 0; j < np; j++) strata_session_free(ps[j]);
    }
    for (const char *q = getenv("E2E_DEPTH"); q && *q;) {   /* decode after a d-token prompt */
        int d = atoi(q);
        while (*q && *q != ',') q++;
        if (*q == ',') q++;
        if (d < 16 || d > 32768) continue;
        int32_t *pr = malloc(sizeof(int32_t) * (size_t)d);
        for (int i = 0; i < d; i++) { x = x * 6364136223846793005ull + 1442695040888963407ull; pr[i] = (int32_t)(3 + (x >> 33) % (uint64_t)(V - 3)); }
        strata_session_params sp = strata_session_default_params();
        sp.kv_type = kv_type;
        sp.n_ctx = d + 256;   /* llama-bench's n_ctx; E2E_CTX: a larger context (a graph's deep launch sized for it) */
        if (getenv("E2E_CTX") && atoi(getenv("E2E_CTX")) > sp.n_ctx) sp.n_ctx = atoi(getenv("E2E_CTX"));
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        if (!s) { fprintf(stderr, "session: %s\n", err); return 1; }
        ids_hash h = { 1469598103934665603ull, 0 };
        double t0 = now();
        strata_generate(s, pr, d, 129, on_tok, &h);
        double wall = now() - t0;
        strata_stats st;
        strata_session_get_stats(s, &st);
        printf("%-8s kv %-4s depth %5d: prompt %8.0f tok/s  decode 128: %7.0f tok/s  (wall %.2f s)  ids %d hash %016llx\n", shape,
               kv_type == STRATA_KV_INT8 ? "int8" : "f16", d, st.prompt_tps, st.gen_tps, wall, h.n, (unsigned long long)h.h);
        strata_session_free(s);
        free(pr);
    }
    strata_model_free(m);
    return 0;
}
