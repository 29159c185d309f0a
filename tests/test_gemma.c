/* Gemma 3 270M instruction-tuned (Q4_K_M) against transformers + torch float32 on the same GGUF
 * (tests/data/gemma3_logits.bin and gemma3_greedy.txt, written by tools/gen_gemma_golden.py; the formats
 * are described there and read by tests/golden_common.h). Only include/strata.h is used.
 *
 *   reference mode (exact = 1: dequantized weights, f32 activations and KV cache):
 *       max |d| <= 1e-3 x logit range (max - min over the vocabulary) at every checked position, over the
 *       reference's top-64 ids and its max and min logits; over the whole vocabulary where a full reference
 *       row is stored (the last position of the long prompt); same argmax; greedy 64 tokens equal.
 *   default path (int8-quantized activations, f16 KV cache):
 *       the issue asks: same argmax at every checked position; mean KL(ref || ours) below 1e-3 nats (top-64 +
 *       rest buckets, a lower bound of the full KL; the exact full-vocabulary KL at the stored full row);
 *       greedy 64 tokens equal on every prompt. Asserted: measured budgets (DEFAULT_* below), or the
 *       issue's bounds with STRATA_GEMMA_STRICT=1.
 *
 * Prompts: a chat turn, plain text, and a chat turn of ~700 tokens, longer than the 512-token sliding
 * window, so positions >= 512 test the window (the generator shows that removing it moves the last logits
 * by far more than the tolerance). Positions are checked by evaluating the prompt in pieces that end at
 * the checked positions (strata_session_eval keeps the logits of its last token only; each checked
 * position costs one pass through the 262144 x 640 output head). The default selection is every position
 * of the short prompts and 32 of the long one (every 48th, around the window edge, the end) on the default
 * path; in reference mode, whose on-the-fly dequantized weights are slow, every third position of the short
 * prompts and 7 of the long one; greedy in reference mode runs the first prompt. STRATA_GEMMA_FULL=1 checks
 * every position and every greedy prompt in both modes (minutes). Quick mode (STRATA_TEST_QUICK=1,
 * make test-asan) checks the long prompt at 5 positions (the window edge, the last two) on the
 * default path and not in reference mode, and generates for the first greedy prompt only (16
 * tokens in reference mode); each check asserts what it asserts in the full run.
 *
 * Measured (x86-64, AVX2): reference mode max|d|/range <= 3.6e-6 at every checked position, 1.0e-6 over
 * the full vocabulary at the last long-prompt position, KL ~1e-11; greedy equal. Default path: mean KL
 * 5.4e-3 (per prompt 5.6e-3 / 7.5e-3 / 3.7e-3), 2.2e-3 over the full vocabulary, one argmax flip (long prompt
 * position 509, reference margin 0.036) and greedy prompt 2 diverging at step 40 (reference margin 0.63):
 * the bounds are missed (asserted with STRATA_GEMMA_STRICT=1); the int8 activations are the cause (ffn_down's Q8_K
 * activations alone give KL 6.4e-3; f32 activations for v, o, gate, up, down bring it to 3.7e-4..7.4e-4).
 *
 * Model: STRATA_GEMMA_MODEL, else gemma-3-270m-q4_k_m.gguf beside STRATA_MODEL (tools/fetch_gemma.sh). */
#include <time.h>
#include <unistd.h>
#include "strata.h"
#include "test.h"
#include "golden_common.h"

#define LOGITS_FILE "tests/data/gemma3_logits.bin"
#define GREEDY_FILE "tests/data/gemma3_greedy.txt"
#define REL_TOL 1e-3        /* max |d| <= REL_TOL x logit range (reference mode) */
#define KL_TOL 1e-3         /* mean KL on the default path, nats */
#define WINDOW 512          /* gemma3.attention.sliding_window of this file */
/* Default (int8-activation) path: the bounds (KL_TOL, same argmax everywhere, greedy equal) are
 * NOT met on this model (header). As test_forward.c does for SmolLM2 (the lead's decision of 2026-11-30:
 * the default path keeps the kernel library's int8 activation contract), the default path is asserted
 * against measured budgets with headroom, so a regression still fails, and a NOTE line with the miss is
 * printed on every run. STRATA_GEMMA_STRICT=1 asserts the bounds instead. Measured: mean KL 5.4e-3,
 * full-vocabulary KL 2.2e-3; argmax flipped at a reference margin of 0.036; greedy left the reference at a
 * step whose reference margin is 0.63. Measured again 2026-12-04 (the dev machine), mean KL over the 77
 * positions / the quick run's 50: the tree order 0.00725 / 0.00753, the serial chain (the default since
 * that day) 0.00684 / 0.00809: which int8 codes round the other way moves the quick mean by ~7 % either
 * way, so the bound has that much more headroom than 8e-3 left the tree's quick run (6 %). */
#define DEFAULT_KL_MAX 1.0e-2
#define DEFAULT_TIE_MARGIN 0.25
#define DEFAULT_GREEDY_MARGIN 1.0

static golden_logits G;
static golden_greedy GG;
static strata_model *m_exact, *m_default;
static int full_mode, strict_mode, quick_mode;

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
/* CPU seconds of the process (all threads): the machine is shared, so wall time alone misleads */
static double cpu_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

static strata_model *load(const char *path, int exact) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.exact = exact;
    mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[512];
    if (strata_model_load(&mp, &m, err, sizeof err) != 0) {
        fprintf(stderr, "gemma (%s): %s\n", exact ? "exact" : "default", err);
        return NULL;
    }
    return m;
}

static void test_info(void) {
    strata_model_info in;
    strata_model_get_info(m_default, &in);
    CHECK_STR(in.arch, "gemma3");
    CHECK_EQ_INT(in.n_layers, 18);
    CHECK_EQ_INT(in.n_embd, 640);
    CHECK_EQ_INT(in.n_heads, 4);
    CHECK_EQ_INT(in.n_kv_heads, 1);
    CHECK_EQ_INT(in.head_dim, 256);       /* attention.key_length, not 640 / 4 */
    CHECK_EQ_INT(in.n_ff, 2048);
    CHECK_EQ_INT(in.n_vocab, 262144);
    CHECK_EQ_INT(strata_n_vocab(m_default), G.n_vocab);
    CHECK_EQ_INT(strata_token_bos(m_default), 2);
    for (int p = 0; p < G.n_prompts; p++) CHECK_EQ_INT(G.prompts[p].ids[0], 2);   /* <bos> */
    /* the long prompt must reach past the window, or the test does not test it */
    CHECKF(G.prompts[G.n_prompts - 1].n_tokens > WINDOW + 64, "long prompt has %d tokens", G.prompts[G.n_prompts - 1].n_tokens);
    CHECK(G.n_full >= 1);
}

/* Positions of a prompt of n tokens to check in reference mode: all when dense; otherwise every third of
 * a short prompt, and of a long one the start, middle, both sides of the window edge and the end.
 * Sorted, unique. */
static int pick_positions(int n, int dense, int *out) {
    int c = 0;
    for (int t = 0; t < n; t++) {
        int take = dense || t >= n - 2 || (n <= 64 ? t % 3 == 0 : t == 0 || t == n / 2);
        if (n > WINDOW) take = take || t == WINDOW - 1 || t == WINDOW || t == WINDOW + 1 || t == 2 * WINDOW - 1;
        if (take) out[c++] = t;
    }
    return c;
}
static int pick_positions_default(int n, int *out) {
    if (n <= 64 || full_mode) return pick_positions(n, 1, out);
    int c = 0;
    for (int t = 0; t < n; t++) {
        /* quick mode: both sides of the window edge and the last two (the full row) */
        int take = quick_mode ? (t >= WINDOW - 1 && t <= WINDOW + 1) || t >= n - 2
                              : t % 48 == 0 || (t >= WINDOW - 4 && t <= WINDOW + 4) || t >= n - 8;
        if (take) out[c++] = t;
    }
    return c;
}

typedef struct {
    int n_pos, n_argmax_bad, n_tol_bad, n_argmax_close;
    double worst_rel, kl_sum, kl_max;
    int worst_pos, kl_max_pos;
    double full_rel, full_kl;   /* at the full row, -1 when none */
} prompt_stats;

/* Evaluate prompt p in pieces ending at the chosen positions, compare each with the reference. */
static void check_prompt(strata_model *m, int p, const int *pos, int n_pos, prompt_stats *st, int exact) {
    const golden_prompt *gp = &G.prompts[p];
    memset(st, 0, sizeof *st);
    st->full_rel = st->full_kl = -1;
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = gp->n_tokens + 8;
    char err[256];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) { CHECKF(0, "session: %s", err); return; }
    int done = 0;
    for (int i = 0; i < n_pos; i++) {
        int t = pos[i];
        if (strata_session_eval(s, gp->ids + done, t + 1 - done) != 0) { CHECKF(0, "eval failed at %d", t); break; }
        done = t + 1;
        const float *lg = strata_session_logits(s);
        if (!lg) { CHECK(lg != NULL); break; }
        golden_cmp c;
        golden_compare_pos(&G, &gp->pos[t], lg, &c);
        double rel = c.max_abs_diff / c.range;
        st->n_pos++;
        if (rel > st->worst_rel) { st->worst_rel = rel; st->worst_pos = t; }
        if (rel > REL_TOL) st->n_tol_bad++;
        st->kl_sum += c.kl;
        if (c.kl > st->kl_max) { st->kl_max = c.kl; st->kl_max_pos = t; }
        if (!c.argmax_ok) {
            /* reference mode promises max|d| only: a flip that the measured difference explains (reference
             * margin <= 2 max|d|) is counted apart and reported; the tolerance check above still applies */
            if (exact ? c.ref_margin <= 2 * c.max_abs_diff : !strict_mode && c.ref_margin < DEFAULT_TIE_MARGIN)
                st->n_argmax_close++;
            else st->n_argmax_bad++;
            fprintf(stderr, "  %s prompt %d pos %d: argmax %d, reference %d (reference margin %.4g, max|d| %.4g)\n",
                    exact ? "exact" : "default", p, t, c.argmax, gp->pos[t].argmax, c.ref_margin, c.max_abs_diff);
        }
        for (int f = 0; f < G.n_full; f++)
            if (G.full[f].prompt == p && G.full[f].position == t) {
                double md, kl;
                golden_compare_full(G.n_vocab, G.full[f].logits, lg, &md, &kl);
                st->full_rel = md / c.range;
                st->full_kl = kl;
            }
    }
    strata_session_free(s);
}

static void run_logits(strata_model *m, int exact) {
    static int pos[1 << 16];
    double kl_sum = 0, full_kl = -1;
    int n_all = 0, n_flips = 0;
    /* quick mode: reference mode checks the first prompt only (the window is checked on the default path) */
    int n_prompts = quick_mode && exact ? 1 : G.n_prompts;
    for (int p = 0; p < n_prompts; p++) {
        const golden_prompt *gp = &G.prompts[p];
        if (gp->n_tokens > (int)(sizeof pos / sizeof pos[0])) { CHECK(0); continue; }
        int n = exact ? pick_positions(gp->n_tokens, full_mode, pos)
                      : pick_positions_default(gp->n_tokens, pos);
        double t0 = seconds(), c0 = cpu_seconds();
        prompt_stats st;
        check_prompt(m, p, pos, n, &st, exact);
        fprintf(stderr, "  %-7s prompt %d (%3d tokens, %3d positions checked): max|d|/range %.3g (pos %d), "
                "KL mean %.3g max %.3g (pos %d), argmax mismatches %d (+%d near ties)",
                exact ? "exact" : "default", p, gp->n_tokens, st.n_pos, st.worst_rel, st.worst_pos,
                st.n_pos ? st.kl_sum / st.n_pos : 0.0, st.kl_max, st.kl_max_pos, st.n_argmax_bad, st.n_argmax_close);
        if (st.full_rel >= 0)
            fprintf(stderr, "; full vocabulary at pos %d: max|d|/range %.3g, KL %.3g", gp->n_tokens - 1, st.full_rel,
                    st.full_kl);
        fprintf(stderr, " [%.1fs, cpu %.1fs]\n", seconds() - t0, cpu_seconds() - c0);
        CHECKF(st.n_pos == n, "prompt %d: %d of %d positions checked", p, st.n_pos, n);
        CHECKF(st.n_argmax_bad == 0, "%s prompt %d: %d argmax mismatches", exact ? "exact" : "default", p, st.n_argmax_bad);
        if (exact) {
            CHECKF(st.n_tol_bad == 0, "exact prompt %d: %d positions beyond %.0e x range (worst %.3g at %d)", p,
                   st.n_tol_bad, REL_TOL, st.worst_rel, st.worst_pos);
            if (st.full_rel >= 0)
                CHECKF(st.full_rel <= REL_TOL, "exact prompt %d: full-vocabulary max|d|/range %.3g", p, st.full_rel);
        } else if (st.full_kl >= 0) {
            double bound = strict_mode ? KL_TOL : DEFAULT_KL_MAX;
            CHECKF(st.full_kl < bound, "default prompt %d: full-vocabulary KL %.3g at the last position (bound %g)", p,
                   st.full_kl, bound);
        }
        if (!exact) { n_flips += st.n_argmax_close + st.n_argmax_bad; full_kl = st.full_kl >= 0 ? st.full_kl : full_kl; }
        kl_sum += st.kl_sum;
        n_all += st.n_pos;
    }
    double kl_mean = n_all ? kl_sum / n_all : 1.0;
    fprintf(stderr, "  %-7s mean KL over all %d checked positions: %.3g\n", exact ? "exact" : "default", n_all, kl_mean);
    double bound = exact || strict_mode ? KL_TOL : DEFAULT_KL_MAX;
    CHECKF(kl_mean < bound, "%s: mean KL %.3g (bound %g)", exact ? "exact" : "default", kl_mean, bound);
    if (!exact && (kl_mean >= KL_TOL || n_flips > 0 || full_kl >= KL_TOL))
        fprintf(stderr, "  gemma: NOTE the default path misses the issue's targets: mean KL %.3g (full vocabulary %.3g) "
                "vs %g, %d argmax flips at near ties (int8 activations; test header)%s\n", kl_mean, full_kl, KL_TOL,
                n_flips, strict_mode ? "" : "; asserted against measured budgets (STRATA_GEMMA_STRICT=1: the issue's)");
}

static void test_logits_exact(void) { run_logits(m_exact, 1); }
static void test_logits_default(void) { run_logits(m_default, 0); }

/* Greedy: argmax of the full logits (lowest id on ties) for n_gen steps, end-of-generation not special. */
static void run_greedy(strata_model *m, int exact, int n_cases, int max_gen) {
    for (int gi = 0; gi < n_cases && gi < GG.n; gi++) {
        const golden_greedy_case *c = &GG.c[gi];
        int n_gen = c->n_gen < max_gen ? c->n_gen : max_gen;
        double t0 = seconds(), c0 = cpu_seconds();
        strata_session_params sp = strata_session_default_params();
        sp.n_ctx = c->n_prompt + n_gen + 8;
        char err[256];
        strata_session *s = strata_session_new(m, &sp, err, sizeof err);
        if (!s) { CHECKF(0, "session: %s", err); return; }
        int ok = strata_session_eval(s, c->prompt, c->n_prompt) == 0, diverged = -1, got = -1;
        float min_margin = INFINITY;
        for (int i = 0; ok && i < n_gen; i++) {
            const float *lg = strata_session_logits(s);
            if (!lg) { ok = 0; break; }
            int32_t id = golden_argmax(lg, G.n_vocab);
            if (c->margin[i] < min_margin) min_margin = c->margin[i];
            if (id != c->gen[i]) { diverged = i; got = id; break; }
            if (strata_session_eval(s, &id, 1) != 0) ok = 0;
        }
        CHECKF(ok, "greedy %d: eval failed", gi);
        fprintf(stderr, "  %-7s greedy %d: %d prompt tokens, %s", exact ? "exact" : "default", gi, c->n_prompt,
                diverged < 0 ? "all" : "diverges at step");
        if (diverged < 0) fprintf(stderr, " %d tokens equal (smallest reference margin %.3g)", n_gen, min_margin);
        else fprintf(stderr, " %d: %d, reference %d (reference margin there %.4g)", diverged, got, c->gen[diverged],
                     c->margin[diverged]);
        fprintf(stderr, " [%.1fs, cpu %.1fs]\n", seconds() - t0, cpu_seconds() - c0);
        if (exact || strict_mode)
            CHECKF(diverged < 0, "%s greedy %d diverges at step %d", exact ? "exact" : "default", gi, diverged);
        else {
            CHECKF(diverged < 0 || c->margin[diverged] < DEFAULT_GREEDY_MARGIN,
                   "default greedy %d leaves the reference at step %d, whose reference margin %.3g >= %g", gi, diverged,
                   diverged >= 0 ? c->margin[diverged] : 0.0, DEFAULT_GREEDY_MARGIN);
            if (diverged >= 0)
                fprintf(stderr, "  gemma: NOTE default greedy %d misses the issue's target (64 equal tokens): it leaves "
                        "the reference at step %d (int8 activations)\n", gi, diverged);
        }
        strata_session_free(s);
    }
}

/* quick mode: the first prompt only, its first 8 tokens in reference mode and 32 on the default path */
static void test_greedy_exact(void) { run_greedy(m_exact, 1, full_mode ? GG.n : 1, quick_mode ? 8 : 1 << 30); }
static void test_greedy_default(void) { run_greedy(m_default, 0, quick_mode ? 1 : GG.n, quick_mode ? 32 : 1 << 30); }

int main(void) {
    char path[4096];
    const char *ge = getenv("STRATA_GEMMA_MODEL");
    const char *model = getenv("STRATA_MODEL");
    if (ge && *ge) snprintf(path, sizeof path, "%s", ge);
    else if (model && *model) {
        const char *slash = strrchr(model, '/');
        int dl = slash ? (int)(slash - model) : 1;
        snprintf(path, sizeof path, "%.*s/gemma-3-270m-q4_k_m.gguf", dl, slash ? model : ".");
    } else snprintf(path, sizeof path, "gemma-3-270m-q4_k_m.gguf");
    if (access(path, R_OK) != 0)
        SKIP_ALL("gemma-model", "%s not found: set STRATA_GEMMA_MODEL or run sh tools/fetch_gemma.sh (make setup does)", path);
    const char *fm = getenv("STRATA_GEMMA_FULL");
    full_mode = fm && *fm && strcmp(fm, "0");
    const char *sm = getenv("STRATA_GEMMA_STRICT");
    strict_mode = sm && *sm && strcmp(sm, "0");
    quick_mode = t_quick() && !full_mode;
    if (quick_mode)
        fprintf(stderr, "  gemma: quick mode (STRATA_TEST_QUICK): long prompt checked at 5 positions on the default path; "
                "reference mode on the first prompt; greedy: the first prompt, 32 tokens (8 in reference mode)\n");

    char err[512];
    if (golden_logits_load(LOGITS_FILE, &G, err, sizeof err) || golden_greedy_load(GREEDY_FILE, &GG, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        CHECK(0);
        TEST_DONE();
    }
    double t0 = seconds();
    m_default = load(path, 0);
    m_exact = load(path, 1);
    if (!m_default || !m_exact) { CHECK(0); TEST_DONE(); }
    fprintf(stderr, "  gemma: %s, %d prompts (%d/%d/%d tokens), top-%d, %d greedy prompts%s\n", path, G.n_prompts,
            G.prompts[0].n_tokens, G.n_prompts > 1 ? G.prompts[1].n_tokens : 0,
            G.n_prompts > 2 ? G.prompts[2].n_tokens : 0, G.k, GG.n, full_mode ? " (STRATA_GEMMA_FULL)" : "");
    RUN(test_info);
    RUN(test_logits_default);
    RUN(test_greedy_default);
    RUN(test_logits_exact);
    RUN(test_greedy_exact);
    fprintf(stderr, "  gemma total %.1fs, cpu %.1fs\n", seconds() - t0, cpu_seconds());
    strata_model_free(m_exact);
    strata_model_free(m_default);
    golden_logits_free(&G);
    golden_greedy_free(&GG);
    TEST_DONE();
}
