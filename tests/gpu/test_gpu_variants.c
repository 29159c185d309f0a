/* The decode variants and the parallel MoE routing of issue 20 on the GPU (docs/KERNELS.md,
 * "Decode variants"): with each switch on, every output has the bits it has with the switch off,
 * which are the CPU reference's. The switches go through the registry as a user sets them
 * (setenv, env_reset_cache, cuda_device_choose, cuda_variants_apply: what a backend does when it
 * is created), then:
 *   matvec  every format a variant covers (IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_XS IQ4_NL Q2_0
 *           Q6_K), rows of 1, 3, 33 and 41 / 136 blocks and 4096 weights, T = 1..8: off and on
 *           against the reference dot and against each other (memcmp)
 *   MoE     the FFN block (RMSNorm, router, routing, grouped gate/up and down, combine, residual)
 *           of a synthetic qwen3moe layer (test_gpu_moe.c's harness) for the same expert formats,
 *           T = 1..8, random, shared-expert and zero (router ties) inputs: every switch on == off
 *           == the CPU; the routing switch alone with 16 and 128 experts (several per lane) and at
 *           the widths whose F32 router is fused with the routing (1024, 2048)
 *   models  every switch on: teacher-forced logits and greedy ids (the decode graph) == the CPU
 *   dense   STRATA_CUDA_MV_KQ 1 / 2 / 3 / 4 / 8 on llama models with Q4_K / Q5_K / Q6_K layers (gate/up pairs),
 *           also in kqp / kqs grids of 3 CTAs, and a
 *           Q6_K head: the same against the CPU; STRATA_CUDA_MV_KQI 1 / 2 / 3 / 8 with IQ2_XXS / IQ3_XXS /
 *           IQ2_XS / IQ3_S gate/up and down layers (MV_KQ 0 there, so only their rows take kq kernels) */
#include "test.h"
#include "gpu_order.h"
#include <stdint.h>
#include <unistd.h>
#include "strata.h"
#include "engine/engine.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "cuda/cuda_backend.h"
#include "cpu/backend_cpu.h"
#include "core/env.h"
#include "core/util.h"
#include "moe_harness.h"
#include "quant/r4.h"
#include "quant/q6p.h"
#include "cuda/q6p_cuda.h"

static const int k_formats[] = { TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ4_XS,
                                 TYPE_IQ4_NL, TYPE_Q2_0, TYPE_Q6_K };
#define N_FORMATS ((int)(sizeof k_formats / sizeof k_formats[0]))

/* every switch of issue 20 off (0) or on (1), or only the routing one (2), or only the MoE
 * folds of STRATA_CUDA_MOE_FAST = mode - 8 (modes 9 .. 15) */
static void set_switches(int mode) {
    /* the shared-memory tables serve the fast IQ3_XXS decode alone: that fold brings the decodes on */
    const int dec_on = mode == 1 || (mode >= 8 && ((mode - 8) & (CUDA_MOE_FAST_SMEM | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_PAIRX | CUDA_MOE_FAST_PAIRQ2 | CUDA_MOE_FAST_DLANE | CUDA_MOE_FAST_GRP)));
    const char *d = dec_on ? "1" : "0";
    char fast[16];
    snprintf(fast, sizeof fast, "%d", mode == 1 ? CUDA_MOE_FAST_ALL : mode >= 8 ? mode - 8 : 0);
    setenv("STRATA_IQ_DECODE_FAST", d, 1);
    setenv("STRATA_Q2_WORD_EXPAND", d, 1);
    setenv("STRATA_Q6_SWAR", d, 1);
    setenv("STRATA_CUDA_ROUTE", mode == 1 || mode == 2 ? "parallel" : "serial", 1);
    setenv("STRATA_CUDA_MOE_FAST", fast, 1);
    setenv("STRATA_CUDA_MOE_R4", mode == 1 ? "1" : "0", 1);   /* read at upload (the copies) and here (their use) */
    setenv("STRATA_CUDA_MV_SPLIT", mode == 1 ? "5" : "0", 1);   /* every row of 5+ blocks split */
    setenv("STRATA_CUDA_PREFETCH", mode == 1 ? "7" : "0", 1);   /* L2 prefetches (hints), the norm weights early */
    setenv("STRATA_CUDA_MV_KQ", mode == 1 ? "1" : "0", 1);   /* Q4_K / Q5_K / Q6_K one-column rows by matvec_kqp_kernel */
    cuda_attention_set_gs(mode == 1 ? 1 : 4);   /* STRATA_CUDA_ATTN_GS: one head per chunk-path CTA, or up to 4 */
    env_reset_cache();
    cuda_variants v;
    cuda_device_choose(&v);
    cuda_variants_apply(&v);
    int want = dec_on ? (CUDA_DEC_IQ_FAST | CUDA_DEC_Q2_WORD | CUDA_DEC_Q6_SWAR) : 0;
    REQUIRE(v.decode == want && cuda_matvec_decode() == want && v.route_parallel == (mode == 1 || mode == 2) &&
            v.moe_fast == atoi(fast) && v.moe_r4 == (mode == 1) && cuda_moe_r4() == (mode == 1) && v.mv_split == (mode == 1 ? 5 : 0) && v.prefetch == (mode == 1 ? 7 : 0) &&
            v.mv_kq == (mode == 1 ? 1 : 0) && cuda_matvec_kq() == v.mv_kq,
            "switches %d: decode %d (want %d), route %d, moe folds %d", mode, v.decode, want, v.route_parallel, v.moe_fast);
}
static const char *mode_name(int mode) {
    static const char *folds[] = { "no fold", "route1 fold", "combine fold", "route1+combine", "down4", "route1+down4",
                                   "combine+down4", "route1+combine+down4" };
    static char buf[256];
    if (mode < 8) return mode == 1 ? "every switch" : mode == 2 ? "parallel routing" : "?";
    snprintf(buf, sizeof buf, "%s%s%s%s%s%s%s%s%s%s%s%s", folds[(mode - 8) & 7], (mode - 8) & CUDA_MOE_FAST_SMEM ? " smem tables" : "",
             (mode - 8) & CUDA_MOE_FAST_ROUTER_CTA ? " router cta" : "", (mode - 8) & CUDA_MOE_FAST_NGK ? " group count" : "",
             (mode - 8) & CUDA_MOE_FAST_NORM ? " norm in router" : "", (mode - 8) & CUDA_MOE_FAST_SALU ? " signs by alu" : "",
             (mode - 8) & CUDA_MOE_FAST_PAIR ? " gate/up parts paired" : "", (mode - 8) & CUDA_MOE_FAST_DROWS ? " down rows' parts side by side" : "", (mode - 8) & CUDA_MOE_FAST_PAIRX ? " (IQ4_XS / IQ2_XS / IQ2_S / IQ3_S too)" : "", (mode - 8) & CUDA_MOE_FAST_PAIRQ2 ? " lane-path gate/up paired" : "", (mode - 8) & CUDA_MOE_FAST_DLANE ? " lane-path down rows" : "", (mode - 8) & CUDA_MOE_FAST_GRP ? " down row a group" : "");
    return buf;
}

#define GPU_RAND_SEED 0x6A09E667F3BCC909ull
#include "gpu_rand.h"

/* ---- matvec --------------------------------------------------------------------------------- */
static void matvec_case(const quant_traits *qt, int64_t n_in, int64_t n_out, uint64_t *hash) {
    size_t rb = quant_row_bytes(qt->type, n_in), ab = act_row_bytes(qt->act, n_in);
    uint8_t *W = malloc(rb * n_out), *act = malloc(ab * 8);
    float *src = malloc(sizeof(float) * n_in), *x = malloc(sizeof(float) * n_in * 8);
    float *ref = malloc(sizeof(float) * n_out * 8), *y[2] = { malloc(sizeof(float) * n_out * 8), malloc(sizeof(float) * n_out * 8) };
    for (int64_t r = 0; r < n_out; r++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
        qt->quant_row(src, W + r * rb, n_in);
    }
    for (int64_t i = 0; i < n_in * 8; i++) x[i] = rnd_val();
    for (int64_t i = 0; i < 32 && i < n_in; i++) x[i] = 0.0f;   /* a zero block: d = 0 */
    for (int c = 0; c < 8; c++) act_quantize_row(qt->act, x + c * n_in, act + c * ab, n_in);
    for (int c = 0; c < 8; c++)
        for (int64_t r = 0; r < n_out; r++) ref[c * n_out + r] = qt->dot_ref(W + r * rb, act + c * ab, n_in);
    void *dW = cuda_malloc(rb * n_out), *dx = cuda_malloc(sizeof(float) * n_in * 8), *dy = cuda_malloc(sizeof(float) * n_out * 8);
    REQUIRE(dW && dx && dy, "device buffers");
    if (dW && dx && dy) {
        cuda_memcpy_h2d(dW, W, rb * n_out);
        cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * 8);
        for (int T = 1; T <= 8; T++) {
            for (int on = 0; on < 2; on++) {
                set_switches(on);
                memset(y[on], 0xFF, sizeof(float) * n_out * 8);
                cuda_memcpy_h2d(dy, y[on], sizeof(float) * n_out * 8);
                int rc = cuda_matvec(dW, qt->type, n_in, n_out, dx, T, dy, NULL) || cuda_synchronize();
                REQUIRE(rc == 0, "%s T=%d: %s", qt->name, T, cuda_last_error());
                cuda_memcpy_d2h(y[on], dy, sizeof(float) * n_out * T);
            }
            int bad_ref = 0;
            for (size_t i = 0; i < (size_t)n_out * T; i++) bad_ref += memcmp(&y[1][i], &ref[i], 4) != 0;
            CHECKF(bad_ref == 0, "%s n_in=%lld T=%d: %d outputs with the variant on differ from the reference", qt->name,
                   (long long)n_in, T, bad_ref);
            CHECKF(!memcmp(y[0], y[1], sizeof(float) * n_out * T), "%s n_in=%lld T=%d: variant on != off", qt->name,
                   (long long)n_in, T);
            *hash = fnv1a64(y[1], sizeof(float) * n_out * T) ^ (*hash * 31);
        }
    }
    set_switches(0);
    cuda_free(dW); cuda_free(dx); cuda_free(dy);
    free(W); free(act); free(src); free(x); free(ref); free(y[0]); free(y[1]);
}

static void test_matvec(void) {
    for (int f = 0; f < N_FORMATS; f++) {
        const quant_traits *qt = quant_traits_get(k_formats[f]);
        t_current = qt->name;
        int B = qt->blck;
        int64_t lens[] = { B, 3 * B, 33 * B, B == 256 ? 41 * 256 : 136 * 32, 4096, 7 * B };   /* 7: split over 2 warps */
        uint64_t h = 0;
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            if (lens[i] % B == 0) matvec_case(qt, lens[i], i < 2 ? 7 : (i < 4 ? 33 : 64), &h);
        printf("matvec %-8s variant on == off == reference (6 row lengths, T = 1..8), checksum %016llx\n", qt->name,
               (unsigned long long)h);
    }
}

/* ---- MoE FFN block (test_gpu_moe.c's harness) ------------------------------------------------ */
static int g_dim = 256, g_experts = 16, g_used = 4;
static int make_moe(const char *path, int layers, int type_experts, int type_attn, int type_out, int vocab) {
    return moe_synth(path, layers, type_experts, type_attn, type_out, vocab, g_dim, g_experts, g_used, 23);
}
/* T rows of E inputs of the FFN parity runs: kind 0 random, 1 every token the same, 2 zero (router ties) */
static void moe_input(float *x, int T, int E, int kind) {
    for (int i = 0; i < T * E; i++) x[i] = kind == 2 ? 0.0f : rnd_val() * 2.0f;
    if (kind == 1)
        for (int t = 1; t < T; t++) memcpy(x + (size_t)t * E, x, sizeof(float) * (size_t)E);
}
/* The FFN parity runs of layer 0: T = 1..8 x the 3 inputs of moe_input, the CPU once, then the GPU with sw(0, u)
 * and sw(1, u) before its two runs (done(on, T, u) after each, when given); the outputs with the switch on that
 * differ from the CPU's and from the switch off's, bit for bit, and their hash */
typedef struct { int bad_cpu, bad_off, runs; uint64_t h; } moe_runs;
static moe_runs moe_ffn_runs(strata_session *sc, strata_session *sg, const char *label, void (*sw)(int on, void *u),
                             void (*done)(int on, int T, void *u), void *u) {
    const int E = sc->m->hp.n_embd;
    static float x[8 * 2048], oc[8 * 2048], og[2][8 * 2048];
    moe_runs r = { 0, 0, 0, 0xcbf29ce484222325ull };
    for (int T = 1; T <= 8; T++)
        for (int kind = 0; kind < 3; kind++) {
            moe_input(x, T, E, kind);
            moe_ffn_cpu(sc, x, T, oc);
            for (int on = 0; on < 2; on++) {
                sw(on, u);
                REQUIRE(moe_ffn_gpu(sg, x, T, og[on]) == 0, "%s T=%d: ffn block", label, T);
                if (done) done(on, T, u);
            }
            r.bad_cpu += memcmp(oc, og[1], sizeof(float) * (size_t)(T * E)) != 0;
            r.bad_off += memcmp(og[0], og[1], sizeof(float) * (size_t)(T * E)) != 0;
            r.h = fnv1a64(og[1], sizeof(float) * (size_t)(T * E)) ^ (r.h * 31);
            r.runs++;
        }
    return r;
}
static void switches_cb(int on, void *u) { set_switches(on ? *(const int *)u : 0); }
/* modes: the switches compared with "all off" (1: every switch, 2: the routing alone) */
static void moe_parity(int type, int mode) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/strata-gpu-variants-%s-%d.gguf", quant_type_name(type), g_dim);
    if (make_moe(path, 1, type, TYPE_Q8_0, TYPE_Q8_0, 512)) { CHECKF(0, "synth %s", quant_type_name(type)); return; }
    set_switches(0);
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    strata_session *sc = mc ? moe_session(mc) : NULL, *sg = mg ? moe_session(mg) : NULL;
    REQUIRE(sc && sg, "%s: models and sessions", quant_type_name(type));
    if (sc && sg) {
        const int E = mc->hp.n_embd;
        moe_runs rr = moe_ffn_runs(sc, sg, quant_type_name(type), switches_cb, NULL, &mode);
        const int bad_cpu = rr.bad_cpu, bad_off = rr.bad_off, runs = rr.runs;
        const uint64_t h = rr.h;
        CHECKF(bad_cpu == 0, "%s dim %d, %d experts (mode %d): %d of %d FFN outputs with the switches on differ from the CPU",
               quant_type_name(type), E, g_experts, mode, bad_cpu, runs);
        CHECKF(bad_off == 0, "%s dim %d, %d experts (mode %d): %d of %d FFN outputs differ between the switches on and off",
               quant_type_name(type), E, g_experts, mode, bad_off, runs);
        printf("moe %-8s dim %4d experts %3d top-%d, %s on == off == CPU (T = 1..8, random/shared/ties): %s, checksum %016llx\n",
               quant_type_name(type), E, g_experts, g_used, mode_name(mode),
               bad_cpu || bad_off ? "NO" : "yes", (unsigned long long)h);
    }
    set_switches(0);
    strata_session_free(sc); strata_session_free(sg);
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

/* STRATA_CUDA_MOE_R4: the GPU model loaded with the switch on (the upload makes the experts' R4 copies); the
 * copies' bytes == r4_repack_rows's of the file's rows; then layer 0's FFN block at T = 1..8 (random, shared,
 * zero inputs) with the R4 kernels on (T = 1) == off == the CPU, bit for bit, and the T = 1 runs launched R4
 * kernels (gate/up and, where the down rows go 4 a warp, down) */
static int g_r4 = 1;   /* the setting of the "on" runs: 1 or 2 (the gate/up kernel's registers unbounded) */
/* the R4 runs' switch (0 or g_r4) and launch count: the T = 1 runs with R4 on add theirs to l1, every other run
 * must launch none */
typedef struct { unsigned long l0, l1; const char *label; } r4_count;
static void r4_switch_cb(int on, void *u) {
    cuda_moe_set_r4(on ? g_r4 : 0);
    ((r4_count *)u)->l0 = cuda_moe_r4_launches();
}
static void r4_done_cb(int on, int T, void *u) {
    r4_count *c = (r4_count *)u;
    if (T == 1 && on) c->l1 += cuda_moe_r4_launches() - c->l0;
    else CHECKF(cuda_moe_r4_launches() == c->l0, "%s T=%d R4 %d: an R4 kernel launched", c->label, T, on);
}
static void moe_parity_r4(int type, int fast) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/strata-gpu-variants-r4-%s-%d.gguf", quant_type_name(type), g_dim);
    if (make_moe(path, 1, type, TYPE_Q8_0, TYPE_Q8_0, 512)) { CHECKF(0, "synth %s", quant_type_name(type)); return; }
    set_switches(8 + fast);
    setenv("STRATA_CUDA_MOE_R4", "1", 1);   /* the upload makes the copies */
    env_reset_cache();
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    strata_session *sc = mc ? moe_session(mc) : NULL, *sg = mg ? moe_session(mg) : NULL;
    REQUIRE(sc && sg, "%s: models and sessions", quant_type_name(type));
    if (sc && sg) {
        const layer_weights *L = &mg->w.layers[0];
        const weight *ws[3] = { &L->gate_exps, &L->up_exps, &L->down_exps };
        int bad_copy = 0;
        for (int i = 0; i < 3; i++) {
            const int64_t rows = ws[i]->n_out * ws[i]->n_expert;
            const size_t bytes = r4_row_bytes(ws[i]->n_in) * (size_t)rows;
            uint8_t *want = (uint8_t *)malloc(bytes), *got = (uint8_t *)malloc(bytes);
            REQUIRE(want && got && ws[i]->dev_r4, "%s: matrix %d has an R4 copy", quant_type_name(type), i);
            if (want && got && ws[i]->dev_r4) {
                CHECK(r4_repack_rows(type, ws[i]->data, want, rows, ws[i]->n_in, 2) == 0);
                CHECK(cuda_memcpy_d2h(got, ws[i]->dev_r4, bytes) == 0);
                bad_copy += memcmp(want, got, bytes) != 0;
            }
            free(want); free(got);
        }
        CHECKF(bad_copy == 0, "%s: %d R4 copies differ from r4_repack_rows's bytes", quant_type_name(type), bad_copy);
        const int E = mc->hp.n_embd;
        r4_count rc = { 0, 0, quant_type_name(type) };
        moe_runs rr = moe_ffn_runs(sc, sg, quant_type_name(type), r4_switch_cb, r4_done_cb, &rc);
        const int bad_cpu = rr.bad_cpu, bad_off = rr.bad_off, runs = rr.runs;
        const uint64_t h = rr.h;
        const unsigned long l1 = rc.l1;
        cuda_moe_set_r4(0);
        /* 3 T = 1 runs: the gate/up launch each, and the down launch where its rows go 4 a warp */
        const unsigned long want_l = (fast & CUDA_MOE_FAST_DOWN4) ? 6 : 3;
        CHECKF(l1 == want_l, "%s: %lu R4 launches at T = 1, want %lu", quant_type_name(type), l1, want_l);
        CHECKF(bad_cpu == 0, "%s dim %d ffn %d: %d of %d FFN outputs with R4 differ from the CPU", quant_type_name(type), E,
               moe_h_ff, bad_cpu, runs);
        CHECKF(bad_off == 0, "%s dim %d ffn %d: %d of %d FFN outputs differ between R4 on and off", quant_type_name(type), E,
               moe_h_ff, bad_off, runs);
        printf("moe %-8s dim %4d ffn %4d experts %3d top-%d, R4 %d copies (folds %d): copies == r4_repack_rows, %lu R4 launches, "
               "on == off == CPU (T = 1..8): %s, checksum %016llx\n", quant_type_name(type), E, moe_h_ff, g_experts, g_used, g_r4, fast,
               l1, bad_cpu || bad_off || bad_copy ? "NO" : "yes", (unsigned long long)h);
    }
    set_switches(0);
    strata_session_free(sc); strata_session_free(sg);
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

/* every switch on (set before the GPU sessions exist: their backends and graphs take it) */
static void model_parity(const char *label, int layers, int te, int ta, int to) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/strata-gpu-variants-model-%d.gguf", te);
    if (make_moe(path, layers, te, ta, to, 3000)) { CHECKF(0, "%s: synth", label); return; }
    set_switches(1);
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    REQUIRE(mc && mg, "%s: load", label);
    if (mc && mg) {
        int steps, d, nc, ng;
        const unsigned long nn0 = cuda_moe_next_norm_launches(), hq0 = cuda_moe_hq_launches();
        int rc = moe_model_compare(mc, mg, &steps, &d, &nc, &ng);
        const unsigned long nn = cuda_moe_next_norm_launches() - nn0, hq = cuda_moe_hq_launches() - hq0;
        /* bit 33554432: where the down experts read act_q8_K rows of a width of 256s, h's quantization went into
         * the gate/up launch of the one-column steps; elsewhere it must not have */
        const weight *dw = &mg->w.layers[0].down_exps;
        const int hq_fmt = quant_traits_get(dw->type)->act == ACT_Q8_K && dw->n_in % 256 == 0;
        CHECKF(hq_fmt ? hq > 0 : hq == 0, "%s: %lu gate/up launches quantized h (want %s)", label, hq, hq_fmt ? "> 0" : "0");
        CHECKF(rc == 0 && steps == 16, "%s: teacher-forced logits GPU (switches on) != CPU after %d steps", label, steps);
        CHECKF(nc > 0 && nc == ng && d == nc, "%s: greedy ids GPU (switches on) != CPU from step %d", label, d);
        /* STRATA_CUDA_MOE_FAST bit 16777216: every model here has a Q6_K head (Q8_K activations), so at least the
         * last layer's down launch takes the head's norm in the one-column steps */
        CHECKF(nn > 0, "%s: no down launch took the next norm (bit 16777216 on)", label);
        printf("%-40s switches on: teacher-forced logits bit-identical %d/16, greedy ids equal %d/%d, %lu down launches "
               "with the next norm, %lu gate/up launches quantizing h\n", label, steps, d, nc, nn, hq);
    }
    set_switches(0);
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

/* STRATA_CUDA_MV_KQ = kq (1, 2, 3, 4, 8) on a dense llama model (Q4_K attention, ffn_type gate/up pairs and
 * down rows, Q6_K head: kq 1 / 2 take all three formats, 4 / 8 the Q4_K / Q5_K rows; 2 the gate/up pairs
 * by matvec_kqs_kernel), in kqp / kqs grids of wave_cap CTAs when wave_cap > 0: teacher-forced logits
 * and greedy ids == the CPU (moe_model_compare: the one-column steps, eager and the decode graph) */
static void dense_parity(int kq, int ffn_type, int wave_cap) {
    char path[256], label[96];
    const int iq = ffn_type == TYPE_IQ2_XXS || ffn_type == TYPE_IQ3_XXS || ffn_type == TYPE_IQ2_XS || ffn_type == TYPE_IQ3_S;   /* STRATA_CUDA_MV_KQI's formats */
    const char *sw = iq ? "STRATA_CUDA_MV_KQI" : "STRATA_CUDA_MV_KQ";
    snprintf(path, sizeof path, "/tmp/strata-gpu-variants-dense-%d.gguf", ffn_type);
    snprintf(label, sizeof label, "llama Q4_K / %s / Q6_K, %s=%d%s", quant_type_name(ffn_type), sw, kq,
             wave_cap ? ", 3 CTAs" : "");
    synth_params p;
    synth_default_params(&p, ARCH_LLAMA);
    /* rows of 2 (dim 512) and 6 (ffn 1,536) super-blocks */
    p.n_layers = 2; p.n_embd = 512; p.n_ff = 1536; p.n_heads = 8; p.n_kv_heads = 2; p.head_dim = 64; p.n_vocab = 3000;
    p.n_ctx = 1024; p.type_attn = TYPE_Q4_K; p.type_ffn = ffn_type; p.type_output = TYPE_Q6_K; p.type_embd = TYPE_Q8_0;
    p.tokenizer_path = "builtin"; p.seed = 29; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { CHECKF(0, "%s: synth: %s", label, err); return; }
    char v[16];
    snprintf(v, sizeof v, "%d", kq);
    setenv(sw, v, 1);   /* read when the GPU backend is created */
    if (iq) setenv("STRATA_CUDA_MV_KQ", "0", 1);
    env_reset_cache();
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    REQUIRE(mc && mg, "%s: load", label);
    if (mc && mg) {
        int steps, d, nc, ng;
        const unsigned long l0 = cuda_matvec_kq_launches();
        cuda_matvec_set_kq_wave(wave_cap);
        int rc = moe_model_compare(mc, mg, &steps, &d, &nc, &ng);
        cuda_matvec_set_kq_wave(0);
        CHECKF((iq ? cuda_matvec_kqi() : cuda_matvec_kq()) == kq, "%s: the backend took %s=%d", label, sw,
               iq ? cuda_matvec_kqi() : cuda_matvec_kq());
        if (ffn_type == TYPE_IQ2_XS && kq == 3)   /* by shape keeps IQ2_XS rows cooperative (matvec.cu) */
            CHECKF(cuda_matvec_kq_launches() == l0, "%s: a kq kernel was launched for IQ2_XS rows", label);
        else
            CHECKF(cuda_matvec_kq_launches() > l0, "%s: no kq kernel was launched", label);
        CHECKF(rc == 0 && steps == 16, "%s: teacher-forced logits GPU != CPU after %d steps", label, steps);
        CHECKF(nc > 0 && nc == ng && d == nc, "%s: greedy ids GPU != CPU from step %d", label, d);
        printf("%-52s teacher-forced logits bit-identical %d/16, greedy ids equal %d/%d\n", label, steps, d, nc);
    }
    strata_model_free(mc); strata_model_free(mg);
    setenv("STRATA_CUDA_MV_KQ", "0", 1);
    setenv("STRATA_CUDA_MV_KQI", "0", 1);
    env_reset_cache();
    cuda_matvec_set_kq(0);
    cuda_matvec_set_kqi(0);
    unlink(path);
}

/* STRATA_Q6_PLANAR: a model with a Q6_K head (llama, rows of E / 256 super-blocks; gemma3's head tied to a
 * Q6_K token_embd) loaded with the switch on: the head's copy == q6p_repack_rows's bytes, teacher-forced logits
 * and greedy ids (the one-column steps, eager and the decode graph) == the CPU and == the same model with
 * the copy's use off, and the planar kernel launched (with it off: never); kqp grids of wave_cap CTAs when
 * wave_cap > 0 (a warp over many rows); loaded again with the switch at 0: no copy; unset: the default (1) */
static void q6p_parity(int arch, int E, int wave_cap) {
    char path[256], label[96];
    snprintf(path, sizeof path, "/tmp/strata-gpu-variants-q6p-%d.gguf", E);
    snprintf(label, sizeof label, "%s dim %d, Q6_K head%s, STRATA_Q6_PLANAR=1%s", arch == ARCH_GEMMA3 ? "gemma3" : "llama", E,
             arch == ARCH_GEMMA3 ? " (tied)" : "", wave_cap ? ", 3 CTAs" : "");
    synth_params p;
    synth_default_params(&p, arch);
    p.n_layers = 2; p.n_embd = E; p.n_ff = 2 * E; p.n_heads = E / 64; p.n_kv_heads = E / 128; p.head_dim = 64; p.n_vocab = 3000;
    p.n_ctx = 1024; p.type_attn = TYPE_Q4_K; p.type_ffn = TYPE_Q4_K; p.type_output = TYPE_Q6_K;
    p.type_embd = arch == ARCH_GEMMA3 ? TYPE_Q6_K : TYPE_Q8_0;
    if (arch == ARCH_GEMMA3) p.n_layers = 3;
    p.tokenizer_path = "builtin"; p.seed = 31; p.n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    char err[512];
    if (synth_write(&p, path, err, sizeof err) != 0) { CHECKF(0, "%s: synth: %s", label, err); return; }
    setenv("STRATA_Q6_PLANAR", "1", 1);   /* read by the upload */
    env_reset_cache();
    CHECK_EQ_INT(cuda_q6p_env(), 1);
    strata_model *mc = moe_load(path, STRATA_DEVICE_CPU), *mg = moe_load(path, STRATA_DEVICE_CUDA);
    setenv("STRATA_Q6_PLANAR", "0", 1);
    env_reset_cache();
    CHECK_EQ_INT(cuda_q6p_env(), 0);
    strata_model *m0 = moe_load(path, STRATA_DEVICE_CUDA);   /* the switch at 0: no copy */
    CHECKF(m0 && m0->w.output.dev_r4 == NULL, "%s: STRATA_Q6_PLANAR=0 loaded a planar copy", label);
    strata_model_free(m0);
    unsetenv("STRATA_Q6_PLANAR");
    env_reset_cache();
    CHECK_EQ_INT(cuda_q6p_env(), 1);   /* the default since 2026-12-07 */
    REQUIRE(mc && mg, "%s: load", label);
    if (mc && mg) {
        const weight *o = &mg->w.output;
        const size_t bytes = q6p_row_bytes(o->n_in) * (size_t)o->n_out;
        uint8_t *want = (uint8_t *)malloc(bytes), *got = (uint8_t *)malloc(bytes);
        REQUIRE(want && got && o->dev_r4, "%s: the head has a planar copy", label);
        if (want && got && o->dev_r4) {
            CHECK(q6p_repack_rows(o->data, want, o->n_out, o->n_in) == 0);
            CHECK(cuda_memcpy_d2h(got, o->dev_r4, bytes) == 0);
            CHECKF(memcmp(want, got, bytes) == 0, "%s: the copy differs from q6p_repack_rows's bytes", label);
        }
        free(want); free(got);
        if (arch == ARCH_GEMMA3) CHECKF(mg->w.tok_embd.dev_r4 == NULL, "%s: the embedding got a copy", label);
        cuda_matvec_set_kq_wave(wave_cap);
        for (int use = 1; use >= 0; use--) {
            cuda_matvec_set_q6p(use);
            const unsigned long l0 = cuda_matvec_q6p_launches();
            int steps, d, nc, ng;
            int rc = moe_model_compare(mc, mg, &steps, &d, &nc, &ng);
            const unsigned long l = cuda_matvec_q6p_launches() - l0;
            if (use) CHECKF(l > 0, "%s: no planar launch", label);
            else CHECKF(l == 0, "%s, use off: %lu planar launches", label, l);
            CHECKF(rc == 0 && steps == 16, "%s (use %d): teacher-forced logits GPU != CPU after %d steps", label, use, steps);
            CHECKF(nc > 0 && nc == ng && d == nc, "%s (use %d): greedy ids GPU != CPU from step %d", label, use, d);
            printf("%-52s use %d: %lu planar launches, teacher-forced logits bit-identical %d/16, greedy ids equal %d/%d\n",
                   label, use, l, steps, d, nc);
        }
        cuda_matvec_set_q6p(1);
        cuda_matvec_set_kq_wave(0);
    }
    strata_model_free(mc); strata_model_free(mg);
    unlink(path);
}

/* the switches at auto: the device table's bits (on Hopper the variants measured faster on
 * 2026-12-02: IQ3_XXS / IQ3_S, IQ4_XS / IQ4_NL, Q2_0; docs/BENCHMARKS.md) */
static void table_choice(void) {
    setenv("STRATA_IQ_DECODE_FAST", "auto", 1);
    setenv("STRATA_Q2_WORD_EXPAND", "auto", 1);
    setenv("STRATA_Q6_SWAR", "auto", 1);
    env_reset_cache();
    cuda_variants v;
    cuda_device_choose(&v);
    const cuda_device_class *c = cuda_device_class_get();
    REQUIRE(c != NULL, "device class");
    CHECKF(v.decode == c->table_decode && !strcmp(v.decode_from, "table"), "auto: decode %d, table %d (%s)", v.decode,
           c->table_decode, v.decode_from);
    if (c->major == 9)
        CHECKF(v.decode == (CUDA_DEC_IQ3 | CUDA_DEC_IQ4 | CUDA_DEC_Q2_WORD | CUDA_DEC_Q6_SWAR), "hopper table: decode %d", v.decode);
    setenv("STRATA_IQ_DECODE_FAST", "0", 1);   /* one switch forced: its formats off, the others the table's */
    env_reset_cache();
    cuda_device_choose(&v);
    CHECKF(v.decode == (c->table_decode & ~CUDA_DEC_IQ_FAST) && !strcmp(v.decode_from, "switches"),
           "IQ switch 0: decode %d", v.decode);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    table_choice();
    set_switches(0);
    test_matvec();
    for (int f = 0; f < N_FORMATS; f++) {
        t_current = quant_type_name(k_formats[f]);
        moe_parity(k_formats[f], 1);
    }
    t_current = "routing";
    g_experts = 128; g_used = 8;   /* the reference shape's routing: 4 experts per lane */
    moe_parity(TYPE_IQ3_XXS, 2);
    moe_parity(TYPE_Q2_0, 1);
    t_current = "moe folds";   /* STRATA_CUDA_MOE_FAST's bits one at a time against none */
    /* at dim 256 the router is not fused (widths 1,024 / 2,048 only), so the router bit (16) changes
     * nothing here; it is exercised at dims 2,048 and 1,024 below */
    for (int bit = 1; bit <= CUDA_MOE_FAST_NGK; bit <<= 1) moe_parity(TYPE_IQ3_XXS, 8 + bit);
    moe_parity(TYPE_Q4_K, 8 + CUDA_MOE_FAST_ALL);   /* 16-byte loads of the K-quants' cooperative part */
    moe_parity(TYPE_Q6_K, 8 + CUDA_MOE_FAST_ALL);
    moe_parity(TYPE_Q4_0, 8 + CUDA_MOE_FAST_ALL);   /* the one-lane down kernel (a row per CTA) */
    moe_parity(TYPE_Q2_0, 8 + CUDA_MOE_FAST_ALL);
    g_dim = 2048;   /* the reference shape's fused router (64 values per lane) */
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ROUTE1);
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ALL);   /* every bit, gate/up rows of 8 super-blocks */
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_SMEM);   /* the tables alone, fast decode on */
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ROUTER_CTA);   /* the router a CTA a row, 64 values per lane */
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_NGK);   /* the group count from the launch */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_ROUTE1 | CUDA_MOE_FAST_NORM));   /* the ffn norm in the router launch */
    moe_parity(TYPE_IQ4_XS, 8 + CUDA_MOE_FAST_ALL);   /* Q8_K activations of another format, the norm folded */
    /* bit 4096: the paired gate/up parts and the down rows side by side for IQ4_XS / IQ2_XS / IQ2_S / IQ3_S,
     * with 4 down rows a warp and with 2 */
    moe_parity(TYPE_IQ4_XS, 8 + (CUDA_MOE_FAST_PAIRX | CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_DOWN4));
    moe_parity(TYPE_IQ2_XS, 8 + (CUDA_MOE_FAST_PAIRX | CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_DOWN4));
    moe_parity(TYPE_IQ2_S, 8 + (CUDA_MOE_FAST_PAIRX | CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_DROWS));
    moe_parity(TYPE_IQ3_S, 8 + (CUDA_MOE_FAST_PAIRX | CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_DOWN4));
    moe_parity(TYPE_Q2_0, 8 + CUDA_MOE_FAST_PAIRQ2);   /* bit 8192: Q2_0's gate/up blocks of both rows, the word expansion on */
    moe_parity(TYPE_Q4_0, 8 + CUDA_MOE_FAST_PAIRQ2);   /* ... Q4_0, Q8_0, IQ4_NL (its fast decode on) */
    moe_parity(TYPE_Q8_0, 8 + CUDA_MOE_FAST_PAIRQ2);
    moe_parity(TYPE_IQ4_NL, 8 + CUDA_MOE_FAST_PAIRQ2);
    /* bit 32768: the lane path's down rows side by side, 4 a warp with bit 4 (the 8-word formats) and 2; at ffn
     * widths 768 (24 blocks of 32 a row, 12 of Q2_0's 64: one a lane or none) and 1,280 (40 / 20: lanes with two
     * blocks of 32), every format of bpn_lane */
    for (int ff = 768; ff <= 1280; ff += 512) {
        moe_h_ff = ff;
        moe_parity(TYPE_Q4_0, 8 + (CUDA_MOE_FAST_DLANE | CUDA_MOE_FAST_DOWN4));
        moe_parity(TYPE_Q8_0, 8 + (CUDA_MOE_FAST_DLANE | CUDA_MOE_FAST_DOWN4));
        moe_parity(TYPE_IQ4_NL, 8 + (CUDA_MOE_FAST_DLANE | CUDA_MOE_FAST_DOWN4 | CUDA_MOE_FAST_PAIRQ2));
        moe_parity(TYPE_Q2_0, 8 + (CUDA_MOE_FAST_DLANE | CUDA_MOE_FAST_DOWN4));
        moe_parity(TYPE_Q4_0, 8 + CUDA_MOE_FAST_DLANE);   /* 2 rows a warp */
    }
    moe_h_ff = 768;
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ALL);
    /* bit 262144 (in the default): the down rows a lane group each, at ffn widths 256 (1 super-block a row), 768
     * (3), 1,280 (5) and 9,216 (36: lanes 0-3 take two blocks), with the grid in shared memory and without; and
     * the default without it (the 4 rows' parts side by side, bit 2048) */
    for (int ff = 256; ff <= 1280; ff += 512) {
        moe_h_ff = ff;
        moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_DEFAULT);
        moe_parity(TYPE_IQ2_XXS, 8 + CUDA_MOE_FAST_DEFAULT);
        moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_DEFAULT & ~CUDA_MOE_FAST_GRP));
        moe_parity(TYPE_IQ2_XXS, 8 + (CUDA_MOE_FAST_DEFAULT & ~CUDA_MOE_FAST_GRP));
        moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_GRP | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_DOWN4));
        moe_parity(TYPE_IQ2_XXS, 8 + (CUDA_MOE_FAST_GRP | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_DOWN4 | CUDA_MOE_FAST_SMEM));
        /* bit 33554432: h's act_q8_K blocks (1, 3, 5 a pair) by the gate/up launch, with the default folds and alone */
        const unsigned long hq0 = cuda_moe_hq_launches();
        moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_DEFAULT | CUDA_MOE_FAST_HQ));
        moe_parity(TYPE_IQ2_XXS, 8 + CUDA_MOE_FAST_HQ);
        moe_parity(TYPE_Q4_K, 8 + (CUDA_MOE_FAST_DEFAULT | CUDA_MOE_FAST_HQ));
        CHECKF(cuda_moe_hq_launches() - hq0 >= 9, "ffn %d: %lu gate/up launches quantized h, want >= 9 (3 T = 1 runs x 3)",
               ff, cuda_moe_hq_launches() - hq0);
    }
    moe_h_ff = 9216;
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_DEFAULT);
    /* STRATA_CUDA_MOE_R4: ffn 256 / 768 / 1,280 / 9,216 (down rows of 1, 3, 5, 36 super-blocks; gate/up rows of 1 at
     * dim 256, 8 at 2,048 below), the default folds (down 4 rows a warp: R4 down) and none (down stays the format's) */
    t_current = "r4";
    const int dim_keep = g_dim;
    g_dim = 256;
    for (int ff = 256; ff <= 9216; ff = ff == 1280 ? 9216 : ff + 512) {
        moe_h_ff = ff;
        moe_parity_r4(TYPE_IQ3_XXS, CUDA_MOE_FAST_DEFAULT);
        moe_parity_r4(TYPE_IQ2_XXS, CUDA_MOE_FAST_DEFAULT);
    }
    moe_h_ff = 768;
    moe_parity_r4(TYPE_IQ3_XXS, 0);
    g_dim = 2048;
    moe_parity_r4(TYPE_IQ3_XXS, CUDA_MOE_FAST_DEFAULT);
    moe_parity_r4(TYPE_IQ2_XXS, CUDA_MOE_FAST_DEFAULT);
    moe_parity_r4(TYPE_IQ3_XXS, CUDA_MOE_FAST_DEFAULT | CUDA_MOE_FAST_HQ);   /* the R4 gate/up launch quantizing h */
    g_r4 = 2;   /* the unbounded gate/up instances */
    moe_parity_r4(TYPE_IQ3_XXS, CUDA_MOE_FAST_DEFAULT);
    moe_parity_r4(TYPE_IQ2_XXS, CUDA_MOE_FAST_DEFAULT);
    cuda_moe_set_r4(3);   /* 3 was the staged forms (deleted 2026-12-07): it runs as 1 */
    CHECKF(cuda_moe_r4() == 1, "STRATA_CUDA_MOE_R4 3 runs as %d, want 1", cuda_moe_r4());
    cuda_moe_set_r4(0);
    {   /* the switch's values as the device class and the upload read them (cuda_moe_r4_env) */
        const char *vals[6] = { "0", "1", "2", "3", "4", "-1" };
        const int want[6] = { 0, 1, 2, 1, 0, 0 };
        const char *was = getenv("STRATA_CUDA_MOE_R4");
        char keep[32] = "";
        if (was) snprintf(keep, sizeof keep, "%s", was);
        for (int i = 0; i < 6; i++) {
            setenv("STRATA_CUDA_MOE_R4", vals[i], 1);
            env_reset_cache();
            CHECKF(cuda_moe_r4_env() == want[i], "STRATA_CUDA_MOE_R4=%s reads as %d, want %d", vals[i], cuda_moe_r4_env(), want[i]);
        }
        if (was) setenv("STRATA_CUDA_MOE_R4", keep, 1);
        else unsetenv("STRATA_CUDA_MOE_R4");
        env_reset_cache();
    }
    g_r4 = 1;
    g_dim = dim_keep;
    t_current = "moe folds";
    moe_h_ff = 256;
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_SALU);   /* the signs by ALU, the tables from global memory */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_SMEM));   /* ... with the grid in shared memory */
    moe_parity(TYPE_IQ2_XXS, 8 + CUDA_MOE_FAST_ALL);   /* IQ2_XXS signs by ALU, every bit */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_SALU));   /* the paired parts, the tables from global memory */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_SMEM));   /* ... shared memory */
    moe_parity(TYPE_IQ2_XXS, 8 + (CUDA_MOE_FAST_PAIR | CUDA_MOE_FAST_SALU));
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_DOWN4));   /* the down rows' parts side by side, 4 rows */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_SMEM));   /* ... 2 rows, the grid in shared memory */
    moe_parity(TYPE_IQ2_XXS, 8 + (CUDA_MOE_FAST_DROWS | CUDA_MOE_FAST_SALU | CUDA_MOE_FAST_DOWN4));
    moe_parity(TYPE_IQ2_XXS, 8 + CUDA_MOE_FAST_DEFAULT);   /* the default */
    setenv("STRATA_CUDA_TWICE", "57", 1);   /* an instrument: the T = 1 gate/up, h's quantization, router and norm launches
                                             * twice (idempotent), read at load */
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ALL);
    unsetenv("STRATA_CUDA_TWICE");
    g_dim = 1024;
    moe_parity(TYPE_IQ3_XXS, 8 + CUDA_MOE_FAST_ROUTER_CTA);   /* 32 values per lane */
    moe_parity(TYPE_IQ3_XXS, 8 + (CUDA_MOE_FAST_ROUTE1 | CUDA_MOE_FAST_NORM));   /* the norm folded, 4 warp parts */
    g_dim = 256;
    t_current = "routing";
    g_experts = 16; g_used = 4;
    for (g_dim = 1024; g_dim <= 2048; g_dim *= 2) moe_parity(TYPE_IQ3_XXS, 1);   /* the fused F32 router */
    g_dim = 256;
    t_current = "models";
    model_parity("qwen3moe IQ3_XXS / Q4_K / Q6_K", 3, TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q6_K);
    model_parity("qwen3moe Q2_0 / IQ4_NL / Q6_K", 2, TYPE_Q2_0, TYPE_IQ4_NL, TYPE_Q6_K);
    model_parity("qwen3moe IQ2_XXS / IQ4_XS / Q6_K", 2, TYPE_IQ2_XXS, TYPE_IQ4_XS, TYPE_Q6_K);
    /* past 256 positions: the decode steps (eager and graph) on the attention's chunk path of a
     * model with q/k head norms, every switch on */
    moe_n_ctx = 512; moe_prompt_len = 300;
    model_parity("qwen3moe IQ3_XXS / Q4_K / Q6_K, depth 300", 2, TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q6_K);
    moe_n_ctx = 256; moe_prompt_len = 24;
    t_current = "dense kq";
    static const int kqs[] = { 1, 2, 3, 4, 8 };
    for (int i = 0; i < 5; i++) {
        dense_parity(kqs[i], TYPE_Q4_K, 0);
        dense_parity(kqs[i], TYPE_Q5_K, 0);
    }
    /* Q6_K gate/up pairs and down rows (kqp, kqs); then grids of 3 CTAs (12 warps): every warp takes
     * many rows (the lookahead across rows, the row pointers of the rows after the first) */
    dense_parity(1, TYPE_Q6_K, 0);
    dense_parity(2, TYPE_Q6_K, 0);
    for (int kq = 1; kq <= 2; kq++) {
        dense_parity(kq, TYPE_Q4_K, 3);
        dense_parity(kq, TYPE_Q6_K, 3);
    }
    /* IQ2_XXS / IQ3_XXS rows (STRATA_CUDA_MV_KQI): kqp, kqs pairs, by shape, kq1; kqp / kqs in 3 CTAs */
    static const int kqis[] = { 1, 2, 3, 8 };
    for (int i = 0; i < 4; i++) {
        dense_parity(kqis[i], TYPE_IQ3_XXS, 0);
        dense_parity(kqis[i], TYPE_IQ2_XXS, 0);
    }
    for (int kq = 1; kq <= 2; kq++) {
        dense_parity(kq, TYPE_IQ3_XXS, 3);
        dense_parity(kq, TYPE_IQ2_XXS, 3);
    }
    for (int i = 0; i < 4; i++) {   /* IQ2_XS (two scales a part), IQ3_S (qh bits, sign bytes) */
        dense_parity(kqis[i], TYPE_IQ2_XS, 0);
        dense_parity(kqis[i], TYPE_IQ3_S, 0);
    }
    dense_parity(2, TYPE_IQ2_XS, 3);
    dense_parity(2, TYPE_IQ3_S, 3);
    /* bit 16: the sign masks by ALU in every kq kernel (kqp 17, kqs 18, kq1 24, by shape 19: pairs kqs and
     * plain rows kq1, IQ2_XS rows all kq1), each format, and kqs in 3 CTAs */
    static const int kqsa[] = { 17, 18, 19, 24 };
    for (int i = 0; i < 4; i++) {
        dense_parity(kqsa[i], TYPE_IQ3_XXS, 0);
        dense_parity(kqsa[i], TYPE_IQ2_XXS, 0);
        dense_parity(kqsa[i], TYPE_IQ3_S, 0);
        dense_parity(kqsa[i], TYPE_IQ2_XS, 0);   /* 19: IQ2_XS rows by kq1 (by shape with bit 16) */
    }
    dense_parity(18, TYPE_IQ3_XXS, 3);
    dense_parity(18, TYPE_IQ3_S, 3);
    t_current = "q6 planar";
    q6p_parity(ARCH_LLAMA, 512, 0);    /* rows of 2 super-blocks */
    q6p_parity(ARCH_LLAMA, 2304, 0);   /* 9: 1,890 bytes padded to 1,904 */
    q6p_parity(ARCH_LLAMA, 2048, 3);   /* 8 (the real heads' 2,048), 3 CTAs */
    q6p_parity(ARCH_GEMMA3, 512, 0);   /* the head tied to the embedding */
    TEST_DONE();
}
