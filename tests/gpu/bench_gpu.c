/* GPU benchmarks (docs/BENCHMARKS.md, "CUDA"): not a test, `make bench-gpu`.
 *
 *   copy     device-to-device cudaMemcpy of 2 GiB: (read + write) bytes / time, the ceiling
 *   matvec   per format: 4096x4096, 14336x4096 (n_out x n_in) and 151936x2048 at T = 1 and 8;
 *            weight sets rotated so that at least 4x the 60 MB L2 is touched between reuses;
 *            activations pre-quantized (the matvec kernel alone); median of 7 timings;
 *            GB/s = weight bytes / time
 *   decode   greedy tok/s at batch 1 on synthetic models written here (src/model/synth.h):
 *            the SmolLM2-135M shape (Q4_1 blocks, Q8_0 embeddings/output) and larger llama
 *            shapes; graph replay vs eager launches vs eager unfused; GB/s = weight bytes
 *            read per token * tok/s.
 * Arguments: "matvec" / "decode" run one part; "big" adds the 8B shape to decode; "only=Q4_K,Q6_K"
 * limits matvec to those formats, "shape=1" to one shape (0: 4096x4096, 1: 14336x4096,
 * 2: 151936x2048). 256-weight formats are timed with each kernel ("lane": one lane per
 * super-block, the first kernel; "coop8": 8 lanes per super-block, the default).
 *   variants [matvec] [ffn] [decode] [folds] [layers=N] [experts=T1,T2] [only=F1,F2]: issue 20's
 *            decode variants and parallel routing, switch off / on: the dense matvec per format,
 *            the MoE FFN block and the MoE decode (bench/i20_gpu.sh; docs/KERNELS.md); folds: the
 *            MoE decode with STRATA_CUDA_MOE_FAST / STRATA_CUDA_MV_SPLIT variants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "core/env.h"
#include "core/util.h"
#include "cuda/cuda_backend.h"

static uint64_t rs = 88172645463325252ull;
static float rndf(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)(rs >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}
static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

typedef struct { void **W; int ncopy; int type; int64_t n_in, n_out; void *act; int T; float *y; int cur; } mv_job;
static void mv_call(void *u) {
    mv_job *j = u;
    cuda_matvec_preq(j->W[j->cur], j->type, j->n_in, j->n_out, j->act, j->T, j->y, NULL);
    j->cur = (j->cur + 1) % j->ncopy;
}

static double copy_bw(void) {
    size_t n = (size_t)1 << 31;
    void *a = cuda_malloc(n), *b = cuda_malloc(n);
    if (!a || !b) return 0;
    cuda_memcpy_d2d(b, a, n);
    double best[5];
    for (int r = 0; r < 5; r++) {
        double t0 = now_seconds();
        cuda_memcpy_d2d(b, a, n);
        cuda_synchronize();
        best[r] = now_seconds() - t0;
    }
    qsort(best, 5, sizeof(double), cmp_d);
    cuda_free(a); cuda_free(b);
    return 2.0 * n / best[2] / 1e9;
}

/* "only=Q4_K,Q6_K": formats to measure; "shape=N": only shape N (0..2) */
static const char *mv_only;
static int mv_shape = -1;
static int format_selected(const char *name) {
    if (!mv_only) return 1;
    size_t n = strlen(name);
    for (const char *p = mv_only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == mv_only || p[-1] == ',') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}

/* 64 quantized random rows of `qt`, tiled over an n_out x n_in matrix on the device, in as
 * many copies as make >= 240 MB (4x the L2) so that a rotation over them reads DRAM; *ok = 0
 * when a copy could not be allocated (the copies made are in the array, the rest NULL) */
static void **mv_weights(const quant_traits *qt, int64_t n_in, int64_t n_out, size_t *bytes_out, int *ncopy_out, int *ok) {
    size_t rb = quant_row_bytes(qt->type, n_in), bytes = rb * (size_t)n_out;
    const int R = 64;
    uint8_t *rows = malloc(rb * R);
    float *src = malloc(sizeof(float) * n_in);
    for (int r = 0; r < R; r++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rndf();
        qt->quant_row(src, rows + r * rb, n_in);
    }
    int ncopy = (int)((240e6 + bytes - 1) / bytes);
    if (ncopy < 1) ncopy = 1;
    void **W = calloc((size_t)ncopy, sizeof(void *));
    *ok = 1;
    for (int c = 0; c < ncopy && *ok; c++) {
        W[c] = cuda_malloc(bytes);
        if (!W[c]) { *ok = 0; break; }
        cuda_memcpy_h2d(W[c], rows, rb * R);
        for (size_t have = rb * R; have < bytes;) {
            size_t n = have < bytes - have ? have : bytes - have;
            cuda_memcpy_d2d((uint8_t *)W[c] + have, W[c], n);
            have += n;
        }
    }
    free(rows); free(src);
    *bytes_out = bytes; *ncopy_out = ncopy;
    return W;
}

static void bench_matvec(double ceiling) {
    static const int64_t shapes[3][2] = { { 4096, 4096 }, { 14336, 4096 }, { 151936, 2048 } };   /* n_out, n_in */
    printf("\n%-8s %-14s %2s %10s %9s %6s\n", "format", "n_out x n_in", "T", "us", "GB/s", "%copy");
    for (int type = 0; type < TYPE_COUNT; type++) {
        const quant_traits *qt = quant_traits_get(type);
        if (!qt || !qt->quant_row || !cuda_type_supported(type) || !format_selected(qt->name)) continue;
        for (int s = 0; s < 3; s++) {
            if (mv_shape >= 0 && s != mv_shape) continue;
            int64_t n_out = shapes[s][0], n_in = shapes[s][1];
            size_t bytes;
            int ncopy, ok;
            void **W = mv_weights(qt, n_in, n_out, &bytes, &ncopy, &ok);
            int af = cuda_type_act(type);
            size_t ab = act_row_bytes((act_format)af, n_in);
            float *x = malloc(sizeof(float) * n_in * 8);
            for (int64_t i = 0; i < n_in * 8; i++) x[i] = rndf();
            void *dx = cuda_malloc(sizeof(float) * n_in * 8), *dact = cuda_malloc(ab * 8 + 64);
            float *dy = cuda_malloc(sizeof(float) * n_out * 8);
            cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * 8);
            cuda_act_quantize(af, dx, n_in, 8, dact, NULL);
            /* 256-weight formats: the first kernel (one lane per super-block, "lane") and
             * the cooperative one (8 lanes per super-block, "coop", the default) */
            /* Q4_K / Q5_K at T = 1 also with STRATA_CUDA_MV_KQ 4, 8 and 1 ("kq4", "kq8", "kqp"), Q6_K with 1;
             * IQ2_XXS / IQ3_XXS / IQ2_XS / IQ3_S with STRATA_CUDA_MV_KQI 8 and 1 ("kq8", "kqp") */
            /* and IQ with bit 16 (the sign masks by ALU): "kq8sa", "kqpsa" */
            static const int lanes[] = { 0, 8, 8, 8, 8, 8, 8 }, kqs[] = { 0, 0, 4, 8, 1, 24, 17 };
            const int iq = type == TYPE_IQ2_XXS || type == TYPE_IQ3_XXS || type == TYPE_IQ2_XS || type == TYPE_IQ3_S;
            const int kq_ok = type == TYPE_Q4_K || type == TYPE_Q5_K || type == TYPE_Q6_K || iq;
            const int kq_was = cuda_matvec_kq(), kqi_was = cuda_matvec_kqi();
            for (int v = qt->blck == 256 ? 0 : 1; v <= (iq ? 6 : kq_ok ? 4 : 1); v++)
            if (!(type == TYPE_Q6_K && (v == 2 || v == 3)) && !(iq && v == 2))   /* Q6_K: kqp only; IQ: no kq4 */
            for (int T = 1; T <= (v >= 2 ? 1 : 8) && ok; T += 7) {
                cuda_matvec_set_coop(lanes[v]);
                cuda_matvec_set_kq(iq ? 0 : kqs[v]);
                cuda_matvec_set_kqi(iq ? kqs[v] : 0);
                mv_job j = { W, ncopy, type, n_in, n_out, dact, T, dy, 0 };
                int reps = (int)(2e9 / (double)bytes);
                if (reps < 4 * ncopy) reps = 4 * ncopy;
                if (reps > 400) reps = 400 - 400 % ncopy;
                cuda_time_ms(mv_call, &j, ncopy * 2);   /* warm-up */
                double t[7];
                for (int r = 0; r < 7; r++) t[r] = cuda_time_ms(mv_call, &j, reps) / reps;
                qsort(t, 7, sizeof(double), cmp_d);
                double us = t[3] * 1e3, gbs = bytes / (t[3] * 1e-3) / 1e9;
                printf("%-8s %6lldx%-7lld %2d %10.1f %9.0f %5.0f%%  %s\n", qt->name, (long long)n_out, (long long)n_in, T, us, gbs,
                       100.0 * gbs / ceiling, qt->blck != 256 ? "" : v == 0 ? "lane" : v == 1 ? "coop8" : v == 2 ? "kq4" : v == 3 ? "kq8" : v == 4 ? "kqp" : v == 5 ? "kq8sa" : "kqpsa");
            }
            cuda_matvec_set_coop(-1);
            cuda_matvec_set_kq(kq_was);
            cuda_matvec_set_kqi(kqi_was);
            if (cuda_synchronize() != 0) printf("%s: CUDA error %s\n", qt->name, cuda_last_error());
            for (int c = 0; c < ncopy; c++) cuda_free(W[c]);
            free(W); free(x);
            cuda_free(dx); cuda_free(dact); cuda_free(dy);
            fflush(stdout);
        }
    }
}

static void set_env(const char *name, const char *v) { setenv(name, v, 1); env_reset_cache(); }

/* tok/s of n greedy steps after a 16-token prompt */
static double decode_tps(strata_model *m, int n, uint64_t *checksum) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024;
    char err[512];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { printf("session: %s\n", err); return 0; }
    int32_t ids[16];
    for (int i = 0; i < 16; i++) ids[i] = 100 + 37 * i;
    strata_session_eval(s, ids, 16);
    int32_t id = strata_session_sample(s);
    int pos = 16;
    uint64_t h = 0;
    double t0 = 0;
    for (int i = 0; i < n + 8; i++) {
        if (i == 8) t0 = now_seconds();   /* first steps: graph capture, warm-up */
        int32_t nx;
        if (s->be->ops->decode_step) nx = s->be->ops->decode_step(s->be, id, pos, NULL);
        else { strata_session_eval(s, &id, 1); nx = strata_session_sample(s); }
        if (nx < 0) { printf("decode failed at step %d\n", i); strata_session_free(s); return 0; }
        h = h * 31 + (uint64_t)nx;
        id = nx; pos++;
    }
    double dt = now_seconds() - t0;
    strata_session_free(s);
    if (checksum) *checksum = h;
    return n / dt;
}

static void bench_decode_model(const char *label, synth_params *p, int with_cpu) {
    char path[256], err[512];
    snprintf(path, sizeof path, "/tmp/strata-bench-%d.gguf", p->n_layers * 1000 + p->n_embd / 64);
    double t0 = now_seconds();
    if (synth_write(p, path, err, sizeof err) != 0) { printf("synth: %s\n", err); return; }
    double tsyn = now_seconds() - t0;
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CUDA;
    strata_model *m = NULL;
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); unlink(path); return; }
    strata_model_info info;
    strata_model_get_info(m, &info);
    double wb = (double)info.weight_bytes;
    printf("\n%s: %d layers, dim %d, ffn %d, vocab %d, %.1f MB read per token (synth %.1f s)\n", label, info.n_layers,
           info.n_embd, info.n_ff, info.n_vocab, wb / 1e6, tsyn);
    uint64_t h2 = 0, h3 = 0;
    int n = 512;
    uint64_t h0 = 0;
    double gp = decode_tps(m, n, &h0);
    set_env("STRATA_CUDA_GRAPH", "0");
    double e = decode_tps(m, n, &h2);
    strata_model_free(m);
    set_env("STRATA_CUDA_FUSE", "0");
    strata_model_load(&mp, &m, err, sizeof err);
    double u = decode_tps(m, n, &h3);
    strata_model_free(m);
    set_env("STRATA_CUDA_FUSE", "1");
    set_env("STRATA_CUDA_GRAPH", "1");
    printf("  cuda graph      %8.0f tok/s  %6.0f GB/s (ids hash %016llx)\n", gp, gp * wb / 1e9, (unsigned long long)h0);
    printf("  cuda eager      %8.0f tok/s  %6.0f GB/s (ids hash %016llx)\n", e, e * wb / 1e9, (unsigned long long)h2);
    printf("  eager unfused   %8.0f tok/s  %6.0f GB/s (ids hash %016llx)\n", u, u * wb / 1e9, (unsigned long long)h3);
    if (with_cpu) {
        mp.device = STRATA_DEVICE_CPU;
        if (strata_model_load(&mp, &m, err, sizeof err) == 0) {
            strata_model_get_info(m, &info);
            uint64_t hc = 0;
            double c = decode_tps(m, 64, &hc);
            printf("  cpu (%d threads) %7.0f tok/s\n", info.n_threads, c);
            strata_model_free(m);
        }
    }
    unlink(path);
    fflush(stdout);
}

static void bench_decode(int big) {
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);   /* SmolLM2-135M shape */
    p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bench_decode_model("SmolLM2-135M shape, Q4_1 + Q8_0", &p, 1);
    synth_default_params(&p, ARCH_LLAMA);
    p.n_layers = 16; p.n_embd = 2048; p.n_ff = 8192; p.n_heads = 32; p.n_kv_heads = 8; p.head_dim = 64;
    p.n_vocab = 128256; p.type_attn = TYPE_Q4_0; p.type_ffn = TYPE_Q4_0; p.type_output = TYPE_Q8_0;
    p.type_embd = TYPE_Q8_0; p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bench_decode_model("Llama-3.2-1B shape, Q4_0 + Q8_0", &p, 0);
    if (big) {
        p.n_layers = 32; p.n_embd = 4096; p.n_ff = 14336; p.n_heads = 32; p.n_kv_heads = 8; p.head_dim = 128;
        bench_decode_model("Llama-3-8B shape, Q4_0 + Q8_0", &p, 0);
    }
}

/* a few eager decode steps of the SmolLM2 shape, for a kernel profiler (ncu) to time */
static void profile_steps(void) {
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    p.type_attn = TYPE_Q4_1; p.type_ffn = TYPE_Q4_1; p.type_output = TYPE_Q8_0; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, "/tmp/strata-prof.gguf", err, sizeof err) != 0) { printf("synth: %s\n", err); return; }
    strata_model_params mp = strata_model_default_params();
    mp.path = "/tmp/strata-prof.gguf"; mp.device = STRATA_DEVICE_CUDA;
    strata_model *m = NULL;
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); return; }
    set_env("STRATA_CUDA_GRAPH", "0");
    decode_tps(m, 4, NULL);
    strata_model_free(m);
}

/* MoE decode at the Qwen3-30B-A3B shape (synth's qwen3moe defaults: 48 layers, 128 experts
 * top-8 of ffn 768, Q4_K attention and embeddings, Q6_K output, F32 router), one file per
 * expert format in `list` (comma-separated names), written to /tmp and removed after. */
static void bench_moe(int layers, const char *list) {
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ",")) {
        int te = quant_type_from_name(tok);
        if (te < 0) { printf("unknown type %s\n", tok); continue; }
        synth_params p;
        synth_default_params(&p, ARCH_QWEN3MOE);
        p.n_layers = layers; p.type_experts = te;
        p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        char label[128];
        snprintf(label, sizeof label, "Qwen3-30B-A3B shape, %s experts, Q4_K attn/embd, Q6_K output", tok);
        bench_decode_model(label, &p, 0);
    }
}

/* ---- issue 20: the decode variants and the parallel routing, switch off / on ------------------
 * (docs/KERNELS.md "Decode variants"; bench/i20_gpu.sh runs these in one device call) */
static const char *const k_vnames[14] = { "off", "decode", "route", "all", "fold0", "fold1", "fold2", "fold3",
                                          "fold4", "fold5", "fold6", "fold7", "nosplit", "base" };
/* variant v: 0 every switch off, 1 the decode switches, 2 the parallel routing, 3 both (the MoE
 * folds and split rows off); 4 + b (b < 8): the decode switches at auto (the table's), serial
 * routing, STRATA_CUDA_MOE_FAST = b and split rows (24); 12 both folds without split rows; 13 neither */
static void vset(int v) {
    const char *d = v >= 4 ? "auto" : v & 1 ? "1" : "0";
    char fast[16];
    snprintf(fast, sizeof fast, "%d", v >= 4 && v < 12 ? v - 4 : v == 12 ? 3 : 0);
    setenv("STRATA_CUDA_MV_SPLIT", v >= 4 && v < 12 ? "24" : "0", 1);
    setenv("STRATA_IQ_DECODE_FAST", d, 1);
    setenv("STRATA_Q2_WORD_EXPAND", d, 1);
    setenv("STRATA_Q6_SWAR", d, 1);
    setenv("STRATA_CUDA_MOE_FAST", fast, 1);
    set_env("STRATA_CUDA_ROUTE", v < 4 && (v & 2) ? "parallel" : "serial");
    cuda_variants cv;
    cuda_device_choose(&cv);
    cuda_variants_apply(&cv);
}

/* dense matvec 4096 x 14336 (n_out x n_in) per format a decode variant covers, T = 1 and 8,
 * weight copies rotated over >= 240 MB (4x the L2), activations pre-quantized; decode switches
 * off / on twice in alternation: median us of 7 timings each, GB/s, and the FNV-1a checksum of
 * one call's output on copy 0 (equal: the same bits) */
static void bench_variants_matvec(double ceiling) {
    static const int types[] = { TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ4_XS, TYPE_IQ4_NL,
                                 TYPE_Q2_0, TYPE_Q6_K };
    const int64_t n_out = 4096, n_in = 14336;
    printf("\nmatvec %lldx%lld, decode switches off / on (two rounds each), us and GB/s of the weights; %% of copy %.0f GB/s\n",
           (long long)n_out, (long long)n_in, ceiling);
    printf("%-8s %2s %19s %19s %9s %8s  %s\n", "format", "T", "off us (r1 / r2)", "on us (r1 / r2)", "on GB/s", "on/off", "checksums off / on");
    for (size_t f = 0; f < sizeof types / sizeof types[0]; f++) {
        const int type = types[f];
        const quant_traits *qt = quant_traits_get(type);
        if (!format_selected(qt->name)) continue;
        size_t bytes;
        int ncopy, ok;
        void **W = mv_weights(qt, n_in, n_out, &bytes, &ncopy, &ok);
        int af = cuda_type_act(type);
        size_t ab = act_row_bytes((act_format)af, n_in);
        float *x = malloc(sizeof(float) * n_in * 8), *y = malloc(sizeof(float) * n_out * 8);
        for (int64_t i = 0; i < n_in * 8; i++) x[i] = rndf();
        void *dx = cuda_malloc(sizeof(float) * n_in * 8), *dact = cuda_malloc(ab * 8 + 64);
        float *dy = cuda_malloc(sizeof(float) * n_out * 8);
        cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * 8);
        cuda_act_quantize(af, dx, n_in, 8, dact, NULL);
        for (int T = 1; T <= 8 && ok; T += 7) {
            double us[2][2];
            uint64_t sum[2];
            for (int round = 0; round < 2; round++)
                for (int on = 0; on < 2; on++) {
                    vset(on);
                    mv_job j = { W, ncopy, type, n_in, n_out, dact, T, dy, 0 };
                    int reps = (int)(2e9 / (double)bytes);
                    if (reps < 4 * ncopy) reps = 4 * ncopy;
                    if (reps > 400) reps = 400 - 400 % ncopy;
                    cuda_time_ms(mv_call, &j, ncopy * 2);
                    double t[7];
                    for (int r = 0; r < 7; r++) t[r] = cuda_time_ms(mv_call, &j, reps) / reps;
                    qsort(t, 7, sizeof(double), cmp_d);
                    us[on][round] = t[3] * 1e3;
                    cuda_matvec_preq(W[0], type, n_in, n_out, dact, T, dy, NULL);
                    cuda_synchronize();
                    cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * T);
                    sum[on] = fnv1a64(y, sizeof(float) * n_out * T);
                }
            double off = us[0][0] < us[0][1] ? us[0][0] : us[0][1], onb = us[1][0] < us[1][1] ? us[1][0] : us[1][1];
            printf("%-8s %2d %9.1f / %7.1f %9.1f / %7.1f %9.0f %8.3f  %016llx / %016llx%s\n", qt->name, T, us[0][0], us[0][1],
                   us[1][0], us[1][1], bytes / (onb * 1e-6) / 1e9, onb / off, (unsigned long long)sum[0],
                   (unsigned long long)sum[1], sum[0] == sum[1] ? "" : "  CHECKSUMS DIFFER");
        }
        vset(0);
        if (cuda_synchronize() != 0) printf("%s: CUDA error %s\n", qt->name, cuda_last_error());
        for (int c = 0; c < ncopy; c++) cuda_free(W[c]);
        free(W); free(x); free(y);
        cuda_free(dx); cuda_free(dact); cuda_free(dy);
        fflush(stdout);
    }
}

/* The MoE FFN block (router, routing, grouped gate/up and down, combine, residual) of the
 * Qwen3-30B-A3B shape (dim 2048, 128 experts top-8 of ffn 768, F32 router) at T = 1, eager:
 * N calls over the layers of a 4-layer synthetic file (4 x 243 MB of experts, beyond the L2;
 * x evolves, so every call routes anew), wall time / N after the queue drains; variants off,
 * decode, route, all in two alternating rounds; the checksum is of x after the N calls. */
static void bench_variants_ffn(const char *list) {
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    printf("\nMoE FFN block, Qwen3-30B-A3B shape, T = 1, eager (us per call = wall / 96 calls over 4 layers)\n");
    printf("%-8s %-7s %9s %9s  %s\n", "experts", "variant", "round 1", "round 2", "checksum of x");
    for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ",")) {
        int te = quant_type_from_name(tok);
        if (te < 0) { printf("unknown type %s\n", tok); continue; }
        synth_params p;
        synth_default_params(&p, ARCH_QWEN3MOE);
        p.n_layers = 4; p.n_vocab = 512; p.type_experts = te;
        p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        char path[256], err[512];
        snprintf(path, sizeof path, "/tmp/strata-i20-ffn-%s.gguf", tok);
        if (access(path, R_OK) != 0 && synth_write(&p, path, err, sizeof err) != 0) { printf("synth: %s\n", err); continue; }
        vset(0);
        strata_model_params mp = strata_model_default_params();
        mp.path = path; mp.device = STRATA_DEVICE_CUDA;
        strata_model *m = NULL;
        if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); continue; }
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = 256;
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        if (!s) { printf("session: %s\n", err); strata_model_free(m); continue; }
        const int E = (int)m->hp.n_embd, L = (int)m->hp.n_layers, N = 96;
        float *x0 = malloc(sizeof(float) * E), *x = malloc(sizeof(float) * E);
        for (int i = 0; i < E; i++) x0[i] = rndf();
        backend *be = s->be;
        fwd_seq q = { be->kv, 0, 1 };
        fwd_batch b = { 1, 1, &q };
        double us[4][2];
        uint64_t sum[4] = { 0, 0, 0, 0 };
        for (int round = 0; round < 2; round++)
            for (int v = 0; v < 4; v++) {
                vset(v);
                backend_cuda_x_io(be, x0, 1, 1);
                for (int i = 0; i < 8; i++) be->ops->ffn_block(be, i % L, &b);   /* warm-up */
                backend_cuda_x_io(be, x0, 1, 1);
                double t0 = now_seconds();
                for (int i = 0; i < N; i++) be->ops->ffn_block(be, i % L, &b);
                backend_cuda_x_io(be, x, 1, 0);
                us[v][round] = (now_seconds() - t0) / N * 1e6;
                uint64_t h = fnv1a64(x, sizeof(float) * E);
                if (round == 0) sum[v] = h;
                else if (sum[v] != h) sum[v] = 0;   /* not reproducible: printed as 0 */
            }
        for (int v = 0; v < 4; v++)
            printf("%-8s %-7s %9.1f %9.1f  %016llx%s\n", tok, k_vnames[v], us[v][0], us[v][1], (unsigned long long)sum[v],
                   sum[v] == sum[0] && sum[0] ? "" : "  CHECKSUM DIFFERS");
        vset(0);
        free(x0); free(x);
        strata_session_free(s);
        strata_model_free(m);
        fflush(stdout);
    }
}

/* greedy decode tok/s (the step's CUDA graph, 128 steps after a 16-token prompt) of the
 * Qwen3-30B-A3B shape with `layers` layers per expert format, variants off / decode / route /
 * all, two alternating rounds; the ids hash must be equal across variants. IQ3_XXS at 48
 * layers is bench_e2e's moe48 file (/tmp/strata-e2e-moe48.gguf, reused when present). */
static void bench_variants_decode(int layers, const char *list, const int *vl, int nv) {
    char names[256];
    snprintf(names, sizeof names, "%s", list);
    printf("\nMoE decode, Qwen3-30B-A3B shape, %d layers, greedy, 128 steps (tok/s)\n", layers);
    printf("%-8s %-7s %9s %9s  %s\n", "experts", "variant", "round 1", "round 2", "ids hash");
    for (char *tok = strtok(names, ","); tok; tok = strtok(NULL, ",")) {
        int te = quant_type_from_name(tok);
        if (te < 0) { printf("unknown type %s\n", tok); continue; }
        synth_params p;
        synth_default_params(&p, ARCH_QWEN3MOE);
        p.n_layers = layers; p.type_experts = te;
        p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        char path[256], err[512];
        if (te == TYPE_IQ3_XXS && layers == 48) snprintf(path, sizeof path, "/tmp/strata-e2e-moe48.gguf");
        else snprintf(path, sizeof path, "/tmp/strata-i20-moe%d-%s.gguf", layers, tok);
        double t0 = now_seconds();
        if (access(path, R_OK) != 0 && synth_write(&p, path, err, sizeof err) != 0) { printf("synth: %s\n", err); continue; }
        double t1 = now_seconds();
        vset(0);
        strata_model_params mp = strata_model_default_params();
        mp.path = path; mp.device = STRATA_DEVICE_CUDA;
        strata_model *m = NULL;
        if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); continue; }
        printf("(%s: synth %.0f s, load %.0f s)\n", path, t1 - t0, now_seconds() - t1);
        double tps[14][2];
        uint64_t h[14][2];
        for (int round = 0; round < 2; round++)
            for (int i = 0; i < nv; i++) {
                vset(vl[i]);
                tps[i][round] = decode_tps(m, 128, &h[i][round]);
            }
        for (int i = 0; i < nv; i++)
            printf("%-8s %-7s %9.1f %9.1f  %016llx%s\n", tok, k_vnames[vl[i]], tps[i][0], tps[i][1], (unsigned long long)h[i][0],
                   h[i][0] == h[0][0] && h[i][1] == h[0][0] ? "" : "  IDS DIFFER");
        vset(0);
        strata_model_free(m);
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    int do_mv = 1, do_dec = 1, big = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "moe")) {   /* moe [layers=N] [experts=T1,T2] */
            int layers = 48;
            const char *ex = "IQ3_XXS,Q4_K,IQ2_XXS,Q2_0";
            for (int j = i + 1; j < argc; j++) {
                if (!strncmp(argv[j], "layers=", 7)) layers = atoi(argv[j] + 7);
                else if (!strncmp(argv[j], "experts=", 8)) ex = argv[j] + 8;
            }
            bench_moe(layers, ex);
            return 0;
        }
        if (!strcmp(argv[i], "prof")) { profile_steps(); return 0; }
        if (!strcmp(argv[i], "variants")) {   /* variants [matvec|ffn|decode|folds ...] [layers=N] [experts=T1,T2] [only=F1,F2] */
            int layers = 48, parts = 0;
            const char *ex = "IQ3_XXS,IQ2_XXS,IQ4_XS,Q2_0,Q6_K", *dex = "IQ3_XXS";
            for (int j = i + 1; j < argc; j++) {
                if (!strcmp(argv[j], "matvec")) parts |= 1;
                else if (!strcmp(argv[j], "ffn")) parts |= 2;
                else if (!strcmp(argv[j], "decode")) parts |= 4;
                else if (!strcmp(argv[j], "folds")) parts |= 8;   /* decode tok/s: MoE folds and split rows (vset 13, 4, 5, 6, 7, 12) */
                else if (!strncmp(argv[j], "layers=", 7)) layers = atoi(argv[j] + 7);
                else if (!strncmp(argv[j], "experts=", 8)) ex = dex = argv[j] + 8;
                else if (!strncmp(argv[j], "only=", 5)) mv_only = argv[j] + 5;
            }
            if (!parts) parts = 7;
            char desc[512];
            if (cuda_device_class_describe(desc, sizeof desc) != 0) { printf("no CUDA device\n"); return 1; }
            double bw = copy_bw();
            printf("device: %s\ndevice-to-device copy: %.0f GB/s (read + write)\n", desc, bw);
            if (parts & 1) bench_variants_matvec(bw > 0 ? bw : 4270);
            if (parts & 2) bench_variants_ffn(ex);
            static const int k_all[4] = { 0, 1, 2, 3 }, k_folds[6] = { 13, 4, 5, 6, 7, 12 };
            if (parts & 4) bench_variants_decode(layers, dex, k_all, 4);
            if (parts & 8) bench_variants_decode(layers, dex, k_folds, 6);
            return 0;
        }
        if (!strcmp(argv[i], "prof_moe")) {   /* eager MoE decode steps (2 reference-shape layers) for ncu */
            synth_params p;
            synth_default_params(&p, ARCH_QWEN3MOE);
            p.n_layers = 2; p.tokenizer_path = "builtin"; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
            char err[512];
            if (synth_write(&p, "/tmp/strata-prof-moe.gguf", err, sizeof err) != 0) { printf("synth: %s\n", err); return 1; }
            strata_model_params mp = strata_model_default_params();
            mp.path = "/tmp/strata-prof-moe.gguf"; mp.device = STRATA_DEVICE_CUDA;
            strata_model *m = NULL;
            if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); return 1; }
            set_env("STRATA_CUDA_GRAPH", "0");
            decode_tps(m, 2, NULL);
            strata_model_free(m);
            return 0;
        }
        if (!strncmp(argv[i], "model=", 6)) {   /* decode tok/s of a real GGUF file */
            strata_model_params mp = strata_model_default_params();
            mp.path = argv[i] + 6; mp.device = STRATA_DEVICE_CUDA;
            strata_model *m = NULL;
            char err[512];
            if (strata_model_load(&mp, &m, err, sizeof err) != 0) { printf("load: %s\n", err); return 1; }
            strata_model_info info;
            strata_model_get_info(m, &info);
            uint64_t h = 0;
            double g = decode_tps(m, 512, &h);
            printf("%s: cuda graph %.0f tok/s, %.0f GB/s of weights (%.1f MB per token)\n", mp.path, g,
                   g * (double)info.weight_bytes / 1e9, info.weight_bytes / 1e6);
            set_env("STRATA_CUDA_GRAPH", "0");
            printf("%s: cuda eager %.0f tok/s\n", mp.path, decode_tps(m, 256, &h));
            set_env("STRATA_CUDA_GRAPH", "1");
            strata_model_free(m);
            return 0;
        }
        if (!strcmp(argv[i], "matvec")) do_dec = 0;
        else if (!strcmp(argv[i], "decode")) do_mv = 0;
        else if (!strcmp(argv[i], "big")) big = 1;
        else if (!strncmp(argv[i], "only=", 5)) mv_only = argv[i] + 5;
        else if (!strncmp(argv[i], "shape=", 6)) mv_shape = atoi(argv[i] + 6);
    }
    char desc[512];   /* the device, its class and the kernel variants chosen (device_class.cu) */
    if (cuda_device_class_describe(desc, sizeof desc) != 0) { printf("no CUDA device\n"); return 1; }
    double bw = copy_bw();
    printf("device: %s\ndevice-to-device copy: %.0f GB/s (read + write)\n", desc, bw);
    if (do_dec) bench_decode(big);
    if (do_mv) bench_matvec(bw > 0 ? bw : 4270);
    return 0;
}
