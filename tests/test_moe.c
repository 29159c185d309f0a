/* Mixture-of-Experts (qwen3moe): router, grouped expert kernels against the per-token
 * reference (bit for bit), batch invariance through the engine, and logits against
 * transformers' Qwen3MoeForCausalLM. Models are tiny synthetic files made here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "test.h"
#include "strata.h"
#include "cpu/moe.h"
#include "cpu/threadpool.h"
#include "gguf/gguf.h"
#include "model/model.h"
#include "model/synth.h"
#include "quant/quant.h"
#include "core/util.h"

static char tmpdir_path[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof buf[i], "%s/%s", tmpdir_path, name);
    return buf[i];
}

/* A tiny qwen3moe: dim 256, 4/2 heads of 64, X experts top-k of ffn 256, vocab 300. */
static void tiny_moe(synth_params *p, int layers, int X, int k, int type_experts) {
    synth_default_params(p, ARCH_QWEN3MOE);
    p->n_layers = layers; p->n_embd = 256; p->n_heads = 4; p->n_kv_heads = 2; p->head_dim = 64;
    p->n_ff = 512; p->n_experts = X; p->n_experts_used = k; p->n_ff_exp = 256;
    p->n_vocab = 300; p->n_ctx = 64;
    p->type_attn = TYPE_Q8_0; p->type_embd = TYPE_Q8_0; p->type_output = TYPE_Q8_0;
    p->type_experts = type_experts;
    p->tokenizer_path = "builtin";
    p->n_threads = 2;
}

/* ---- router ------------------------------------------------------------------------------ */
static void test_router_hand_cases(void) {
    /* probabilities proportional to 1, 2, 4, 1: top-2 = experts 2, 1 with 4/6, 2/6 */
    float l1[4] = { 0.0f, logf(2.0f), logf(4.0f), 0.0f };
    int32_t sel[8]; float w[8];
    moe_route(l1, 4, 2, 1, sel, w);
    CHECK_EQ_INT(sel[0], 2); CHECK_EQ_INT(sel[1], 1);
    CHECKF(fabsf(w[0] - 4.0f / 6.0f) < 1e-6f && fabsf(w[1] - 2.0f / 6.0f) < 1e-6f, "w = %g %g", w[0], w[1]);
    /* ties: equal logits 3 at experts 1 and 3 -> the lower index ranks first */
    float l2[4] = { 1.0f, 3.0f, 2.0f, 3.0f };
    moe_route(l2, 4, 2, 1, sel, w);
    CHECK_EQ_INT(sel[0], 1); CHECK_EQ_INT(sel[1], 3);
    CHECKF(w[0] == 0.5f && w[1] == 0.5f, "w = %g %g", w[0], w[1]);
    moe_route(l2, 4, 3, 1, sel, w);
    CHECK_EQ_INT(sel[0], 1); CHECK_EQ_INT(sel[1], 3); CHECK_EQ_INT(sel[2], 2);
    float e1 = expf(1.0f);   /* e^3 : e^3 : e^2 = e : e : 1 */
    CHECKF(fabsf(w[0] - e1 / (2 * e1 + 1)) < 1e-6f && fabsf(w[2] - 1 / (2 * e1 + 1)) < 1e-6f, "w = %g %g %g", w[0], w[1], w[2]);
    /* a tie at the boundary: one winner, then three equal -> the lowest of them */
    float l3[4] = { 0.5f, 1.0f, 1.0f, 5.0f };
    moe_route(l3, 4, 2, 1, sel, w);
    CHECK_EQ_INT(sel[0], 3); CHECK_EQ_INT(sel[1], 1);
    /* k = X: every expert, weights = the softmax itself; two tokens routed independently */
    float l4[8] = { 0.0f, 1.0f, 2.0f, 3.0f, 3.0f, 2.0f, 1.0f, 0.0f };
    moe_route(l4, 4, 4, 2, sel, w);
    float z = 1 + expf(1) + expf(2) + expf(3);
    CHECK_EQ_INT(sel[0], 3); CHECK_EQ_INT(sel[3], 0); CHECK_EQ_INT(sel[4], 0); CHECK_EQ_INT(sel[7], 3);
    CHECKF(fabsf(w[0] - expf(3) / z) < 1e-6f && fabsf(w[4] - expf(3) / z) < 1e-6f, "w = %g %g", w[0], w[4]);
    float s = 0;
    for (int r = 0; r < 4; r++) s += w[r];
    CHECKF(fabsf(s - 1.0f) < 1e-6f, "sum %g", s);
}

/* ---- grouped kernels vs per-token reference -------------------------------------------------- */
typedef struct { gguf_file *f; hparams hp; model_weights w; } bound;

static int bind_file(const char *path, bound *b) {
    char err[512];
    if (gguf_open(path, &b->f, err, sizeof err)) { fprintf(stderr, "%s\n", err); return -1; }
    if (model_bind(b->f, &b->hp, &b->w, err, sizeof err)) { fprintf(stderr, "%s\n", err); gguf_close(b->f); return -1; }
    return 0;
}

static void unbind(bound *b) { model_weights_free(&b->w); gguf_close(b->f); }

/* A one-layer tiny_moe with X experts top-k of the given format written to path and bound;
 * 0, or -1 (a failed check recorded). */
static int one_layer_moe(int X, int k, int type, uint64_t seed, const char *path, bound *b) {
    synth_params p;
    tiny_moe(&p, 1, X, k, type);
    p.seed = seed;
    char err[512];
    int rc = synth_write(&p, path, err, sizeof err);
    CHECKF(rc == 0, "%s", err);
    if (rc) return -1;
    if (bind_file(path, b)) { CHECK(0); return -1; }
    return 0;
}

static void test_grouped_vs_per_token(void) {
    static const int types[] = { TYPE_Q4_K, TYPE_Q8_0, TYPE_Q2_K, TYPE_Q3_K, TYPE_IQ2_XXS, TYPE_IQ3_XXS, TYPE_IQ3_S,
                                 TYPE_Q2_0, TYPE_Q4_0, TYPE_F32 };
    threadpool *tp = threadpool_create(2);
    const int E = 256, X = 8, k = 3, T = 8;
    float *x = malloc(sizeof(float) * T * E);
    float *ref = malloc(sizeof(float) * T * E), *grp = malloc(sizeof(float) * T * E), *one = malloc(sizeof(float) * E);
    for (int i = 0; i < T * E; i++) x[i] = synth_gauss(77, (uint64_t)i);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!quant_traits_get(types[ti])) { SKIP("type-missing", "%s: not in this build", quant_type_name(types[ti])); continue; }
        const char *path = tmp_path("grouped.gguf");
        bound b;
        if (one_layer_moe(X, k, types[ti], 100 + ti, path, &b)) continue;
        const layer_weights *L = &b.w.layers[0];
        for (int mode = 0; mode < 2; mode++) {
            int32_t sel[T * 8]; float w[T * 8];
            int rc1 = moe_ffn(tp, L, k, x, T, ref, (matvec_mode)mode, MATVEC_KERNEL_REF, MOE_PER_TOKEN, NULL, NULL);
            int rc2 = moe_ffn(tp, L, k, x, T, grp, (matvec_mode)mode, MATVEC_KERNEL_AUTO, MOE_GROUPED, sel, w);
            CHECK(rc1 == 0 && rc2 == 0);
            CHECKF(!memcmp(ref, grp, sizeof(float) * T * E), "%s mode %d: grouped != per-token reference",
                   quant_type_name(types[ti]), mode);
            /* some expert must be shared by several tokens, or the grouping was not exercised */
            int shared = 0;
            for (int e = 0; e < X; e++) {
                int c = 0;
                for (int i = 0; i < T * k; i++) c += sel[i] == e;
                shared |= c > 1;
            }
            CHECK(shared);
            /* batch invariance: every T and every token alone, single-threaded too */
            for (int t = 0; t < T; t++) {
                REQUIRE(moe_ffn(t % 2 ? NULL : tp, L, k, x + (size_t)t * E, 1, one, (matvec_mode)mode, MATVEC_KERNEL_AUTO,
                                MOE_GROUPED, NULL, NULL) == 0, "token %d", t);
                CHECKF(!memcmp(one, ref + (size_t)t * E, sizeof(float) * E), "%s mode %d token %d alone differs",
                       quant_type_name(types[ti]), mode, t);
            }
            for (int TT = 2; TT < T; TT++) {
                REQUIRE(moe_ffn(tp, L, k, x + (size_t)(T - TT) * E, TT, grp, (matvec_mode)mode, MATVEC_KERNEL_AUTO,
                                MOE_GROUPED, NULL, NULL) == 0, "T=%d", TT);
                CHECKF(!memcmp(grp, ref + (size_t)(T - TT) * E, sizeof(float) * TT * E), "%s mode %d T=%d differs",
                       quant_type_name(types[ti]), mode, TT);
            }
            /* sanity: the output is finite and not zero */
            double ss = 0;
            for (int i = 0; i < T * E; i++) ss += (double)ref[i] * ref[i];
            CHECKF(ss > 0 && ss < 1e12, "%s: |out|^2 = %g", quant_type_name(types[ti]), ss);
        }
        unbind(&b);
        unlink(path);
    }
    threadpool_free(tp);
    free(x); free(ref); free(grp); free(one);
}

/* Prompt-wide calls: T tokens at once, so an expert gets dozens of columns and runs the
 * format's wide kernel (src/cpu/matmul_avx2.h) or, for the float formats, its matvec kernel in
 * groups of 8. Every token's output must keep the per-token reference's bits, in default and
 * exact mode, and any window of the tokens must give the same rows. */
static void test_grouped_wide(void) {
    static const int types[] = { TYPE_IQ3_XXS, TYPE_Q4_K, TYPE_Q6_K, TYPE_Q8_0, TYPE_Q4_1, TYPE_Q2_K, TYPE_Q3_K,
                                 TYPE_Q5_K, TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ3_S, TYPE_IQ4_XS, TYPE_IQ1_S, TYPE_Q2_0,
                                 TYPE_MXFP4, TYPE_F32, TYPE_F16 };
    threadpool *tp = threadpool_create(2);
    enum { E = 256, X = 8, K = 3, T = 96 };
    float *x = malloc(sizeof(float) * T * E);
    float *ref = malloc(sizeof(float) * T * E), *grp = malloc(sizeof(float) * T * E);
    for (int i = 0; i < T * E; i++) x[i] = synth_gauss(91, (uint64_t)i);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!quant_traits_get(types[ti])) { SKIP("type-missing", "%s: not in this build", quant_type_name(types[ti])); continue; }
        const char *path = tmp_path("wide.gguf");
        bound b;
        if (one_layer_moe(X, K, types[ti], 300 + ti, path, &b)) continue;
        const layer_weights *L = &b.w.layers[0];
        for (int mode = 0; mode < 2; mode++) {
            int32_t sel[T * K]; float w[T * K];
            int rc1 = moe_ffn(tp, L, K, x, T, ref, (matvec_mode)mode, MATVEC_KERNEL_REF, MOE_PER_TOKEN, NULL, NULL);
            int rc2 = moe_ffn(tp, L, K, x, T, grp, (matvec_mode)mode, MATVEC_KERNEL_AUTO, MOE_GROUPED, sel, w);
            CHECK(rc1 == 0 && rc2 == 0);
            int first = -1;
            for (int i = 0; i < T * E && first < 0; i++)
                if (memcmp(ref + i, grp + i, sizeof(float))) first = i;
            CHECKF(first < 0, "%s mode %d T=%d: grouped != per-token reference (token %d, element %d: %.9g vs %.9g)",
                   quant_type_name(types[ti]), mode, T, first / E, first % E, first < 0 ? 0.0 : (double)grp[first],
                   first < 0 ? 0.0 : (double)ref[first]);
            /* the widest group must exceed 8 columns, or the wide kernels were not reached */
            int widest = 0;
            for (int e = 0; e < X; e++) {
                int c = 0;
                for (int i = 0; i < T * K; i++) c += sel[i] == e;
                if (c > widest) widest = c;
            }
            CHECKF(widest > 8 && widest < T, "%s: widest expert group %d", quant_type_name(types[ti]), widest);
            /* windows of 9 and 41 tokens (different groupings, different group widths), and 2 threads vs 1 */
            static const int win[][2] = { { 0, 9 }, { 50, 41 }, { 87, 9 } };
            for (size_t wi = 0; wi < sizeof win / sizeof win[0]; wi++) {
                int t0 = win[wi][0], n = win[wi][1];
                REQUIRE(moe_ffn(wi % 2 ? NULL : tp, L, K, x + (size_t)t0 * E, n, grp, (matvec_mode)mode, MATVEC_KERNEL_AUTO,
                                MOE_GROUPED, NULL, NULL) == 0, "window %d+%d", t0, n);
                CHECKF(!memcmp(grp, ref + (size_t)t0 * E, sizeof(float) * (size_t)n * E), "%s mode %d window %d+%d differs",
                       quant_type_name(types[ti]), mode, t0, n);
            }
            double ss = 0;
            for (int i = 0; i < T * E; i++) ss += (double)ref[i] * ref[i];
            CHECKF(ss > 0 && ss < 1e12, "%s: |out|^2 = %g", quant_type_name(types[ti]), ss);
        }
        /* more than MOE_MAX_T tokens in one call: refused (the backend slices) */
        CHECK(moe_ffn(tp, L, K, x, MOE_MAX_T + 1, grp, MATVEC_DEFAULT, MATVEC_KERNEL_AUTO, MOE_GROUPED, NULL, NULL) == -1);
        unbind(&b);
        unlink(path);
    }
    threadpool_free(tp);
    free(x); free(ref); free(grp);
}

/* Against a direct float computation of the formulas in moe.h (exact mode, F32 weights). */
static void test_formula_direct(void) {
    synth_params p;
    tiny_moe(&p, 1, 8, 2, TYPE_F32);
    p.type_router = TYPE_F32;
    char err[512];
    const char *path = tmp_path("direct.gguf");
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
    bound b;
    if (bind_file(path, &b)) { CHECK(0); return; }
    const layer_weights *L = &b.w.layers[0];
    const int E = 256, F = 256, X = 8, k = 2;
    float x[256], out[256];
    for (int i = 0; i < E; i++) x[i] = synth_gauss(5, (uint64_t)i);
    CHECK(moe_ffn(NULL, L, k, x, 1, out, MATVEC_EXACT, MATVEC_KERNEL_REF, MOE_GROUPED, NULL, NULL) == 0);
    const float *R = L->gate_inp.data, *G = L->gate_exps.data, *U = L->up_exps.data, *D = L->down_exps.data;
    double lg[8], mx = -1e30, z = 0;
    for (int e = 0; e < X; e++) {
        lg[e] = 0;
        for (int i = 0; i < E; i++) lg[e] += (double)R[e * E + i] * x[i];
        if (lg[e] > mx) mx = lg[e];
    }
    for (int e = 0; e < X; e++) z += exp(lg[e] - mx);
    int s0 = 0, s1 = -1;
    for (int e = 1; e < X; e++) if (lg[e] > lg[s0]) s0 = e;
    for (int e = 0; e < X; e++) if (e != s0 && (s1 < 0 || lg[e] > lg[s1])) s1 = e;
    double p0 = exp(lg[s0] - mx) / z, p1 = exp(lg[s1] - mx) / z;
    double wsel[2] = { p0 / (p0 + p1), p1 / (p0 + p1) };
    int sels[2] = { s0, s1 };
    double want[256] = { 0 }, maxd = 0, maxv = 0;
    for (int r = 0; r < k; r++) {
        int e = sels[r];
        double h[256];
        for (int f = 0; f < F; f++) {
            double g = 0, u = 0;
            for (int i = 0; i < E; i++) {
                g += (double)G[((size_t)e * F + f) * E + i] * x[i];
                u += (double)U[((size_t)e * F + f) * E + i] * x[i];
            }
            h[f] = g / (1 + exp(-g)) * u;
        }
        for (int o = 0; o < E; o++) {
            double y = 0;
            for (int f = 0; f < F; f++) y += (double)D[((size_t)e * E + o) * F + f] * h[f];
            want[o] += wsel[r] * y;
        }
    }
    for (int o = 0; o < E; o++) {
        double d = fabs(want[o] - out[o]);
        if (d > maxd) maxd = d;
        if (fabs(want[o]) > maxv) maxv = fabs(want[o]);
    }
    CHECKF(maxv > 0 && maxd <= 1e-5 * maxv, "max |diff| %g of max |out| %g", maxd, maxv);
    unbind(&b);
    unlink(path);
}

/* ---- through the engine -------------------------------------------------------------------- */
static strata_model *load(const char *path, int exact, int threads) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.exact = exact; mp.n_threads = threads; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err)) { fprintf(stderr, "load: %s\n", err); return NULL; }
    return m;
}

static void test_engine_batch_invariance(void) {
    synth_params p;
    tiny_moe(&p, 2, 8, 2, TYPE_Q4_K);
    char err[512];
    const char *path = tmp_path("engine.gguf");
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
    strata_model *m = load(path, 0, 2);
    CHECK(m != NULL);
    if (!m) return;
    strata_model_info info;
    strata_model_get_info(m, &info);
    CHECK_STR(info.arch, "qwen3moe");
    CHECK_EQ_INT(info.n_experts, 8);
    CHECK_EQ_INT(info.n_experts_used, 2);
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 64;
    strata_session *a = strata_session_new(m, &sp, err, sizeof err), *b = strata_session_new(m, &sp, err, sizeof err);
    CHECK(a && b);
    if (!a || !b) { strata_session_free(a); strata_session_free(b); strata_model_free(m); return; }
    const int V = 300;
    int32_t ids[8] = { 72, 101, 108, 108, 111, 257, 32, 119 };
    float *single = malloc(sizeof(float) * 8 * V);
    for (int t = 0; t < 8; t++) {   /* one token per pass */
        CHECK(strata_session_eval(a, ids + t, 1) == 0);
        memcpy(single + (size_t)t * V, strata_session_logits(a), sizeof(float) * V);
    }
    for (int n = 1; n <= 8; n++) {  /* token n-1 as the last column of a window of n */
        strata_session_reset(b);
        CHECK(strata_session_eval(b, ids, n) == 0);
        CHECKF(!memcmp(strata_session_logits(b), single + (size_t)(n - 1) * V, sizeof(float) * V),
               "logits of token %d differ between T=1 and a window of %d", n - 1, n);
    }
    /* chunked 3 + 5: the second chunk's last token */
    strata_session_reset(b);
    CHECK(strata_session_eval(b, ids, 3) == 0 && strata_session_eval(b, ids + 3, 5) == 0);
    CHECK(!memcmp(strata_session_logits(b), single + 7 * V, sizeof(float) * V));

    /* greedy decoding: identical in both sessions and not one token forever */
    strata_session_reset(a);
    int32_t gen[32];
    int n = 0;
    CHECK(strata_session_eval(a, ids, 8) == 0);
    for (; n < 32; n++) {
        gen[n] = strata_session_sample(a);
        if (strata_session_eval(a, &gen[n], 1)) break;
    }
    CHECK_EQ_INT(n, 32);
    int distinct = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= gen[j] == gen[i];
        distinct += !seen;
    }
    CHECKF(distinct >= 6, "greedy output of the synthetic MoE has only %d distinct tokens in 32", distinct);
    free(single);
    strata_session_free(a); strata_session_free(b);
    strata_model_free(m);
    unlink(path);
}

/* ---- transformers' Qwen3MoeForCausalLM on the same F32 weights ----------------------------------- */
/* The reference logits come from tests/data/moe_hf_logits.bin, written by the oracle (torch and
 * transformers are not needed to run the comparison, only to remake the file):
 *   build/strata synth /tmp/moe_hf.gguf --arch qwen3moe --layers 2 --dim 256 --heads 4 --kv-heads 2 \
 *     --head-dim 64 --ffn 512 --experts 8 --experts-used 2 --expert-ffn 256 --vocab 300 --ctx 64 \
 *     --type-all F32 --std 0.05 --tokenizer builtin
 *   python3 tests/moe_hf_oracle.py /tmp/moe_hf.gguf --write tests/data/moe_hf_logits.bin 72,105,33,257,10,200,65
 * The file holds the model's FNV-1a hash: the model written here must be the one the oracle read. */
static uint8_t *slurp(const char *path, size_t *n) {   /* whole file; NULL and *n = 0 if unreadable */
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    *n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    return b;
}

static void test_hf_reference(void) {
    const char *gpath = "tests/data/moe_hf_logits.bin";
    size_t gn = 0;
    uint8_t *g = slurp(gpath, &gn);
    uint32_t n_ids = 0, n_vocab = 0;
    uint64_t want_hash = 0;
    if (gn >= 20 && !memcmp(g, "MOEH", 4)) { memcpy(&n_ids, g + 4, 4); memcpy(&n_vocab, g + 8, 4); memcpy(&want_hash, g + 12, 8); }
    const int V = 300, N = 7;
    CHECKF(gn == 20 + 4 * (size_t)N + 4 * (size_t)N * V && n_ids == (uint32_t)N && n_vocab == (uint32_t)V,
           "%s: %zu bytes, %u ids x %u vocab (run from the repository root)", gpath, gn, n_ids, n_vocab);
    if (gn != 20 + 4 * (size_t)N + 4 * (size_t)N * V || n_ids != (uint32_t)N || n_vocab != (uint32_t)V) { free(g); return; }
    int32_t ids[7];
    memcpy(ids, g + 20, sizeof ids);
    const float *ref = (const float *)(g + 20 + sizeof ids);   /* [N][V] */

    synth_params p;
    tiny_moe(&p, 2, 8, 2, TYPE_F32);
    p.type_attn = p.type_embd = p.type_output = p.type_router = TYPE_F32;
    p.weight_std = 0.05f;
    char err[512];
    const char *path = tmp_path("hf.gguf");
    CHECKF(synth_write(&p, path, err, sizeof err) == 0, "%s", err);
    size_t mn = 0;
    uint8_t *mb = slurp(path, &mn);
    uint64_t have_hash = mb ? fnv1a64(mb, mn) : 0;
    free(mb);
    CHECKF(have_hash == want_hash, "the synthetic model (%016llx) is not the one the golden logits were made from "
           "(%016llx): remake %s (command above test_hf_reference)", (unsigned long long)have_hash,
           (unsigned long long)want_hash, gpath);
    strata_model *m = load(path, 1, 2);
    CHECK(m != NULL);
    if (!m) { free(g); return; }
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 64;
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    CHECK(s != NULL);
    if (!s) { strata_model_free(m); free(g); return; }
    float lo = ref[0], hi = ref[0];
    for (int i = 0; i < N * V; i++) { if (ref[i] < lo) lo = ref[i]; if (ref[i] > hi) hi = ref[i]; }
    double range = (double)hi - lo, worst = 0;
    CHECKF(range > 1.0, "golden logit range %g", range);
    for (int t = 0; t < N; t++) {   /* one check per position: its whole row of logits */
        CHECK(strata_session_eval(s, ids + t, 1) == 0);
        const float *lg = strata_session_logits(s);
        double maxd = 0;
        int am = 0, ram = 0;
        for (int v = 0; v < V; v++) {
            double d = fabs((double)lg[v] - ref[(size_t)t * V + v]);
            if (!(d <= maxd)) maxd = d;   /* NaN propagates */
            if (lg[v] > lg[am]) am = v;
            if (ref[(size_t)t * V + v] > ref[(size_t)t * V + ram]) ram = v;
        }
        CHECKF(maxd <= 1e-3 * range, "position %d: strata vs transformers max |diff| %g, logit range %g", t, maxd, range);
        CHECKF(am == ram, "position %d: argmax %d vs transformers %d", t, am, ram);
        if (!(maxd <= worst)) worst = maxd;
    }
    fprintf(stderr, "transformers Qwen3MoeForCausalLM (golden) vs strata (exact, F32): max |diff| %.3g of range %.3g\n",
            worst, range);
    strata_session_free(s);
    strata_model_free(m);
    free(g);
    unlink(path);
}

int main(void) {
    snprintf(tmpdir_path, sizeof tmpdir_path, "/tmp/strata-test-moe-%d", (int)getpid());
    char cmd[300];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", tmpdir_path);
    if (system(cmd)) SKIP_ALL("tmpdir", "cannot create %s", tmpdir_path);
    RUN(test_router_hand_cases);
    RUN(test_grouped_vs_per_token);
    RUN(test_grouped_wide);
    RUN(test_formula_direct);
    RUN(test_engine_batch_invariance);
    RUN(test_hf_reference);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir_path);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir_path);
    TEST_DONE();
}
