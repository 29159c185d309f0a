/* Forward pass and greedy generation of SmolLM2-135M-Instruct (Q4_1) against transformers + torch
 * (CPU, float32) on the same GGUF, through the public API (include/strata.h) only.
 *
 * Reference data: tools/gen_logits_golden.py writes
 *   tests/data/smollm2_logits.bin  prompt ids; per position logsumexp, max, min, argmax and the top-K
 *                                  logits with their ids; the full logit vector at the last position of
 *                                  every prompt. Layout (little-endian):
 *       "SLGT" u32 version=1 u32 n_vocab u32 K u32 n_prompts u32 n_full
 *       per prompt: u32 n; i32 ids[n]; n x { f32 lse, f32 max, f32 min, i32 argmax, i32 ids[K], f32 logits[K] }
 *       per full record: u32 prompt, u32 position, f32 logits[n_vocab]
 *   tests/data/smollm2_greedy.txt  per prompt: "prompt N ids", "gen N ids", "margin N floats" ('#': comments)
 * The ids are fed as stored, so this test does not depend on the tokenizer.
 *
 * What is asserted (issue 2, "Forward pass" and "Greedy generation"):
 *   reference mode (exact=1): at every position, max |ours - ref| over the stored top-K logits, the
 *     logsumexp difference and the min-logit difference are <= 1e-3 x (max - min logit of the reference);
 *     at the full-vector positions the bound holds over the whole vocabulary.
 *   default mode: the same argmax as the reference at every position, and the mean KL(ref || ours) over
 *     all positions < 1e-3. KL approximation: the reference is known on its top-K tokens only, so the KL
 *     is taken between the coarsened distributions {top-K tokens, one bucket for the rest of the
 *     vocabulary} (ours normalised over the full vocabulary). By the data-processing inequality this is a
 *     lower bound of the true KL, close when the tail mass is small: the exact full-vocabulary KL at the
 *     stored full-vector positions is printed beside it and must be < 1e-3 too.
 *   both modes: evaluating a prompt in one strata_session_eval call (and in two chunks) gives logits of
 *     the last position bit-identical to feeding it token by token (batch invariance).
 *   greedy: 64 tokens for each of 3 prompts equal the reference ids, in both modes (rule: argmax of
 *     the full logit vector, lowest id on ties, end-of-generation tokens not special). On a divergence
 *     the reference's top-1/top-2 margin at that step is printed. In default mode the session's own
 *     greedy sampler (strata_session_sample) must pick the same token, and strata_generate must produce
 *     the same 64 tokens (the reference continuations contain no end-of-generation token).
 * Measured figures go to stderr ("forward:" lines). Needs STRATA_MODEL; skipped when it is unset.
 *
 * Status when written (2026-11-30): reference mode passes with max|d|/range 2.2e-6 and 64/64 greedy
 * tokens on all prompts. The default path fails the criteria: mean KL 4.0e-3 (exact full-vocab
 * KL over all positions 4.2e-3), 9 of 225 argmax mismatches (reference margins 0.003..0.13), greedy
 * divergence after 6 / 55 / 12 tokens (reference margins 0.32 / 0.18 / 0.20). A torch emulation of the
 * same activation scheme (int8 blocks of 32, d = amax/127, on the input of every matmul; f16 K/V) gives
 * mean KL 4.0e-3..4.4e-3 and 7..12 argmax mismatches: the gap is what int8 activations cost on this
 * model, not a bug. Decision (lead, 2026-11-30): the default path keeps the int8 activation
 * contract of the kernel library (issue 3, docs/KERNELS.md); its assertions below use measured
 * budgets (DEFAULT_*), the reference mode keeps the bounds, and the miss is reported on
 * the issue. The NOTE line printed by the test says so on every run. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include "strata.h"
#include "test.h"

#define GREEDY_N 64
#define TOL_REL 1e-3
#define KL_MAX 1e-3
/* Default (int8-activation) path. The criteria (KL_MAX, same argmax everywhere, greedy
 * equal to the reference) are NOT met by int8 activations on this model (see the status note
 * above); these are the measured budgets with headroom, recorded on purpose (2026-11-30) so that
 * a real regression still fails: mean KL 4.0e-3 measured; argmax may differ only where the
 * reference's own top-1/top-2 margin is a near tie (mismatches seen at margins <= 0.13);
 * greedy may leave the reference only at a step whose reference margin is below 0.5 (seen:
 * 0.17, 0.005 and 0.0055-level steps) and must equal the path's own step-by-step argmax. */
#define DEFAULT_KL_MAX 6e-3
/* The exact KL over the full vocabulary is a mean over the golden file's 3 full rows only, and it
 * moves with which int8 codes round the other way in a run: the two canonical orders (docs/KERNELS.md
 * section 3) measured 0.00441 (tree) and 0.00777 (the serial chain, the default since 2026-12-04),
 * while their 225-position means (DEFAULT_KL_MAX's) are 0.00395 and 0.00389. Its bound is wider. */
#define DEFAULT_KL_FULL_MAX 1.2e-2
#define DEFAULT_TIE_MARGIN 0.25
#define DEFAULT_GREEDY_MARGIN 0.5

/* ---- reference data --------------------------------------------------------------------------- */
typedef struct golden_pos {
    float lse, max, min;
    int32_t argmax;
    int32_t *top_ids;       /* [K] */
    float *top_logits;      /* [K], descending */
} golden_pos;

typedef struct golden_prompt {
    int n;
    int32_t *ids;           /* [n] */
    golden_pos *pos;        /* [n]: after feeding ids[0..t] */
    int full_pos;           /* position with a full logit vector, -1 if none */
    float *full;            /* [n_vocab] */
} golden_prompt;

typedef struct golden {
    int n_vocab, k, n_prompts;
    golden_prompt *p;
    uint8_t *blob;          /* the file; top_ids / top_logits are copied out of it */
} golden;

typedef struct greedy_case {
    int n_prompt, n_gen;
    int32_t *prompt, *gen;
    float *margin;          /* [n_gen] reference top-1 minus top-2 logit */
} greedy_case;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
            if (fread(buf, 1, (size_t)n, f) != (size_t)n) { free(buf); buf = NULL; }
            else { buf[n] = 0; *len = (size_t)n; }
        }
    }
    fclose(f);
    return buf;
}

/* Bounded little-endian reader over the golden blob (x86 and the reference are little-endian). */
typedef struct rd { const uint8_t *p; size_t len, off; int bad; } rd;
static void rd_bytes(rd *r, void *dst, size_t n) {
    if (r->bad || n > r->len - r->off) { r->bad = 1; memset(dst, 0, n); return; }
    memcpy(dst, r->p + r->off, n);
    r->off += n;
}
static uint32_t rd_u32(rd *r) { uint32_t v; rd_bytes(r, &v, 4); return v; }
static int32_t rd_i32(rd *r) { int32_t v; rd_bytes(r, &v, 4); return v; }
static float rd_f32(rd *r) { float v; rd_bytes(r, &v, 4); return v; }

static int golden_load(const char *path, golden *g) {
    memset(g, 0, sizeof *g);
    size_t len = 0;
    g->blob = read_file(path, &len);
    if (!g->blob) { fprintf(stderr, "%s: cannot read (run tools/gen_logits_golden.py)\n", path); return -1; }
    rd r = { g->blob, len, 0, 0 };
    char magic[4];
    rd_bytes(&r, magic, 4);
    uint32_t version = rd_u32(&r);
    g->n_vocab = (int)rd_u32(&r);
    g->k = (int)rd_u32(&r);
    g->n_prompts = (int)rd_u32(&r);
    uint32_t n_full = rd_u32(&r);
    if (r.bad || memcmp(magic, "SLGT", 4) || version != 1 || g->n_vocab <= 0 || g->n_vocab > (1 << 20) ||
        g->k <= 1 || g->k > g->n_vocab || g->n_prompts <= 0 || g->n_prompts > 64) {
        fprintf(stderr, "%s: bad header (magic/version/sizes)\n", path);
        return -1;
    }
    g->p = calloc((size_t)g->n_prompts, sizeof *g->p);
    if (!g->p) return -1;
    for (int pi = 0; pi < g->n_prompts; pi++) {
        golden_prompt *gp = &g->p[pi];
        gp->full_pos = -1;
        gp->n = (int)rd_u32(&r);
        if (r.bad || gp->n <= 0 || gp->n > 4096) { fprintf(stderr, "%s: prompt %d: bad length\n", path, pi); return -1; }
        gp->ids = malloc((size_t)gp->n * sizeof(int32_t));
        gp->pos = calloc((size_t)gp->n, sizeof *gp->pos);
        if (!gp->ids || !gp->pos) return -1;
        for (int t = 0; t < gp->n; t++) gp->ids[t] = rd_i32(&r);
        for (int t = 0; t < gp->n; t++) {
            golden_pos *q = &gp->pos[t];
            q->lse = rd_f32(&r); q->max = rd_f32(&r); q->min = rd_f32(&r); q->argmax = rd_i32(&r);
            q->top_ids = malloc((size_t)g->k * sizeof(int32_t));
            q->top_logits = malloc((size_t)g->k * sizeof(float));
            if (!q->top_ids || !q->top_logits) return -1;
            rd_bytes(&r, q->top_ids, (size_t)g->k * sizeof(int32_t));
            rd_bytes(&r, q->top_logits, (size_t)g->k * sizeof(float));
            for (int i = 0; i < g->k && !r.bad; i++)
                if (q->top_ids[i] < 0 || q->top_ids[i] >= g->n_vocab) r.bad = 1;
        }
        if (r.bad) { fprintf(stderr, "%s: prompt %d: truncated or bad ids\n", path, pi); return -1; }
    }
    for (uint32_t fi = 0; fi < n_full; fi++) {
        uint32_t pi = rd_u32(&r), pos = rd_u32(&r);
        if (r.bad || pi >= (uint32_t)g->n_prompts || pos >= (uint32_t)g->p[pi].n || g->p[pi].full) {
            fprintf(stderr, "%s: full record %u: bad prompt/position\n", path, fi);
            return -1;
        }
        g->p[pi].full_pos = (int)pos;
        g->p[pi].full = malloc((size_t)g->n_vocab * sizeof(float));
        if (!g->p[pi].full) return -1;
        rd_bytes(&r, g->p[pi].full, (size_t)g->n_vocab * sizeof(float));
    }
    if (r.bad || r.off != len) { fprintf(stderr, "%s: truncated or trailing bytes\n", path); return -1; }
    return 0;
}

static void golden_free(golden *g) {
    for (int pi = 0; g->p && pi < g->n_prompts; pi++) {
        for (int t = 0; g->p[pi].pos && t < g->p[pi].n; t++) { free(g->p[pi].pos[t].top_ids); free(g->p[pi].pos[t].top_logits); }
        free(g->p[pi].pos); free(g->p[pi].ids); free(g->p[pi].full);
    }
    free(g->p);
    free(g->blob);
}

/* "NAME N v v v ..." -> N values; ints or floats. Returns N or -1. */
static int parse_line(char *line, const char *name, int32_t **iv, float **fv) {
    size_t nl = strlen(name);
    if (strncmp(line, name, nl) || line[nl] != ' ') return -1;
    char *p = line + nl, *end;
    long n = strtol(p, &end, 10);
    if (end == p || n <= 0 || n > 4096) return -1;
    p = end;
    if (iv) *iv = malloc((size_t)n * sizeof(int32_t));
    if (fv) *fv = malloc((size_t)n * sizeof(float));
    if ((iv && !*iv) || (fv && !*fv)) return -1;
    for (long i = 0; i < n; i++) {
        if (iv) { long v = strtol(p, &end, 10); if (end == p) return -1; (*iv)[i] = (int32_t)v; }
        else { float v = strtof(p, &end); if (end == p) return -1; (*fv)[i] = v; }
        p = end;
    }
    return (int)n;
}

static int greedy_load(const char *path, greedy_case *cases, int max_cases) {
    size_t len = 0;
    char *text = (char *)read_file(path, &len);
    if (!text) { fprintf(stderr, "%s: cannot read (run tools/gen_logits_golden.py)\n", path); return -1; }
    int n = 0, stage = 0, ok = 1;
    for (char *line = strtok(text, "\n"); line && ok; line = strtok(NULL, "\n")) {
        if (line[0] == '#' || line[0] == 0) continue;
        if (n >= max_cases) { ok = 0; break; }
        greedy_case *c = &cases[n];
        if (stage == 0) ok = (c->n_prompt = parse_line(line, "prompt", &c->prompt, NULL)) > 0;
        else if (stage == 1) ok = (c->n_gen = parse_line(line, "gen", &c->gen, NULL)) > 0;
        else { ok = parse_line(line, "margin", NULL, &c->margin) == c->n_gen; n++; }
        stage = (stage + 1) % 3;
    }
    free(text);
    if (!ok || stage != 0) { fprintf(stderr, "%s: malformed (case %d)\n", path, n); return -1; }
    return n;
}

/* ---- comparisons ------------------------------------------------------------------------------ */
static double logsumexp(const float *x, int n) {
    double mx = x[0];
    for (int i = 1; i < n; i++) if (x[i] > mx) mx = x[i];
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

static int argmax_lowest(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++) if (x[i] > x[best]) best = i;
    return best;
}

/* KL(ref || ours) over {top-K tokens of the reference, one bucket for everything else}. */
static double kl_topk_bucket(const golden_pos *q, int k, const float *ours, double lse_ours) {
    double kl = 0, p_in = 0, q_in = 0;
    for (int i = 0; i < k; i++) {
        double lp = (double)q->top_logits[i] - q->lse, lq = (double)ours[q->top_ids[i]] - lse_ours;
        double p = exp(lp);
        kl += p * (lp - lq);
        p_in += p;
        q_in += exp(lq);
    }
    double p_tail = 1.0 - p_in, q_tail = 1.0 - q_in;
    if (p_tail > 1e-12) kl += p_tail * log(p_tail / (q_tail > 1e-300 ? q_tail : 1e-300));
    return kl;
}

/* Exact KL over the full vocabulary. */
static double kl_full(const float *ref, const float *ours, int n) {
    double lr = logsumexp(ref, n), lo = logsumexp(ours, n), kl = 0;
    for (int i = 0; i < n; i++) {
        double lp = (double)ref[i] - lr;
        kl += exp(lp) * (lp - ((double)ours[i] - lo));
    }
    return kl;
}

typedef struct mode_stats {
    double max_rel_topk, max_rel_lse, max_rel_min, max_rel_full;   /* |Δ| / range */
    double kl_sum, kl_max, kl_full_sum;
    int n_pos, n_full, n_argmax_bad;
} mode_stats;

/* Feed every prompt token by token; compare each position; then check one-call and chunked eval give
 * the same last logits bit for bit. */
static void check_prompts(strata_model *m, const golden *g, int p_first, int n_prompts, int n_dense, int exact,
                          mode_stats *st) {
    const char *mode = exact ? "exact" : "default";
    int nv = strata_n_vocab(m);
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 1024;
    char err[512] = "";
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    CHECKF(s != NULL, "%s: session: %s", mode, err);
    if (!s) return;
    float *last = malloc((size_t)nv * sizeof(float));
    for (int pi = p_first; pi < n_prompts && last; pi++) {
        const golden_prompt *gp = &g->p[pi];
        strata_session_reset(s);
        int bad_eval = 0, first_bad_argmax = -1;   /* first mismatch that is not a near tie */
        double kl_p0 = st->kl_sum;
        int n_p0 = st->n_pos;
        /* prompts from n_dense on: the last position only (the rest read in one call before it) */
        int t_first = pi >= n_dense ? gp->n - 1 : 0;
        if (t_first > 0 && strata_session_eval(s, gp->ids, t_first) != 0) bad_eval = 1;
        for (int t = t_first; !bad_eval && t < gp->n; t++) {
            if (strata_session_eval(s, &gp->ids[t], 1) != 0) { bad_eval = 1; break; }
            const float *lg = strata_session_logits(s);
            if (!lg) { bad_eval = 1; break; }
            const golden_pos *q = &gp->pos[t];
            double range = (double)q->max - (double)q->min;
            double lse = logsumexp(lg, nv), d_topk = 0, mn = lg[0];
            for (int i = 1; i < nv; i++) if (lg[i] < mn) mn = lg[i];
            for (int i = 0; i < g->k; i++) {
                double d = fabs((double)lg[q->top_ids[i]] - (double)q->top_logits[i]);
                if (d > d_topk) d_topk = d;
            }
            d_topk /= range;
            double d_lse = fabs(lse - (double)q->lse) / range, d_min = fabs(mn - (double)q->min) / range;
            if (d_topk > st->max_rel_topk) st->max_rel_topk = d_topk;
            if (d_lse > st->max_rel_lse) st->max_rel_lse = d_lse;
            if (d_min > st->max_rel_min) st->max_rel_min = d_min;
            double kl = kl_topk_bucket(q, g->k, lg, lse);
            st->kl_sum += kl;
            if (kl > st->kl_max) st->kl_max = kl;
            st->n_pos++;
            int am = argmax_lowest(lg, nv);
            if (am != q->argmax) {
                st->n_argmax_bad++;
                if (first_bad_argmax < 0 && q->top_logits[0] - q->top_logits[1] >= DEFAULT_TIE_MARGIN) first_bad_argmax = t;
                fprintf(stderr, "forward: %s prompt %d pos %d: argmax %d (logit %.5f), reference %d (logit %.5f, "
                        "ours there %.5f; reference top-1/top-2 margin %.5f)\n", mode, pi, t, am, lg[am], q->argmax,
                        q->top_logits[0], lg[q->argmax], q->top_logits[0] - q->top_logits[1]);
            }
            if (exact && (d_topk > TOL_REL || d_lse > TOL_REL || d_min > TOL_REL))
                fprintf(stderr, "forward: exact prompt %d pos %d: |d|/range top-K %.3g lse %.3g min %.3g (range %.3f)\n",
                        pi, t, d_topk, d_lse, d_min, range);
            if (t == gp->full_pos && gp->full) {
                double dmax = 0;
                for (int i = 0; i < nv; i++) {
                    double d = fabs((double)lg[i] - (double)gp->full[i]);
                    if (d > dmax) dmax = d;
                }
                dmax /= range;
                if (dmax > st->max_rel_full) st->max_rel_full = dmax;
                double klf = kl_full(gp->full, lg, nv);
                st->kl_full_sum += klf;
                st->n_full++;
                fprintf(stderr, "forward: %s prompt %d last pos %d: full-vocab max|d|/range %.3g, exact KL %.3g, "
                        "top-K+bucket KL %.3g\n", mode, pi, t, dmax, klf, kl);
            }
        }
        fprintf(stderr, "forward: %s prompt %d: mean KL %.3g over %d positions\n", mode, pi,
                st->n_pos > n_p0 ? (st->kl_sum - kl_p0) / (st->n_pos - n_p0) : 0.0, st->n_pos - n_p0);
        CHECKF(!bad_eval, "%s prompt %d: strata_session_eval or logits failed", mode, pi);
        if (!exact) CHECKF(first_bad_argmax < 0, "default prompt %d: argmax differs from the reference at pos %d, where "
                           "the reference margin is >= %g (not a near tie)", pi, first_bad_argmax, DEFAULT_TIE_MARGIN);
        if (bad_eval) continue;
        memcpy(last, strata_session_logits(s), (size_t)nv * sizeof(float));

        /* whole prompt in one call */
        strata_session_reset(s);
        int rc = strata_session_eval(s, gp->ids, gp->n);
        const float *lg = strata_session_logits(s);
        CHECKF(rc == 0 && lg && strata_session_pos(s) == gp->n, "%s prompt %d: one-call eval failed", mode, pi);
        if (rc == 0 && lg)
            CHECKF(!memcmp(lg, last, (size_t)nv * sizeof(float)),
                   "%s prompt %d: logits of the last position differ between one-call and token-by-token eval "
                   "(argmax %d vs %d)", mode, pi, argmax_lowest(lg, nv), argmax_lowest(last, nv));
        /* two uneven chunks */
        strata_session_reset(s);
        int cut = gp->n * 2 / 3;
        rc = strata_session_eval(s, gp->ids, cut);
        if (rc == 0) rc = strata_session_eval(s, gp->ids + cut, gp->n - cut);
        lg = strata_session_logits(s);
        CHECKF(rc == 0 && lg, "%s prompt %d: chunked eval failed", mode, pi);
        if (rc == 0 && lg)
            CHECKF(!memcmp(lg, last, (size_t)nv * sizeof(float)),
                   "%s prompt %d: logits differ between chunked (%d + %d) and token-by-token eval", mode, pi, cut,
                   gp->n - cut);
    }
    free(last);
    strata_session_free(s);
}

typedef struct gen_capture { int32_t got[GREEDY_N]; int n; } gen_capture;
static int capture_token(int32_t id, void *user) {
    gen_capture *c = user;
    if (c->n < GREEDY_N) c->got[c->n] = id;
    c->n++;
    return 0;
}

static void check_greedy(strata_model *m, const greedy_case *cases, int n_cases, int exact, int max_gen) {
    const char *mode = exact ? "exact" : "default";
    int nv = strata_n_vocab(m);
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = 512;
    char err[512] = "";
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    CHECKF(s != NULL, "%s: session: %s", mode, err);
    if (!s) return;
    for (int ci = 0; ci < n_cases; ci++) {
        const greedy_case *c = &cases[ci];
        int n = c->n_gen < GREEDY_N ? c->n_gen : GREEDY_N;
        if (n > max_gen) n = max_gen;
        strata_session_reset(s);
        int ok = strata_session_eval(s, c->prompt, c->n_prompt) == 0, match = 0, sampler_bad = 0, diverged = 0;
        double min_margin = INFINITY, div_margin = INFINITY;
        int32_t own[GREEDY_N];   /* this path's own greedy ids (it continues past a divergence) */
        for (int i = 0; ok && i < n; i++) {
            const float *lg = strata_session_logits(s);
            if (!lg) { ok = 0; break; }
            int32_t next = argmax_lowest(lg, nv);
            own[i] = next;
            if (!exact && strata_session_sample(s) != next) sampler_bad++;
            if (!diverged && next != c->gen[i]) {
                fprintf(stderr, "forward: %s greedy %d diverges at step %d: ours %d (logit %.5f), reference %d "
                        "(ours there %.5f); reference top-1/top-2 margin %.5f\n", mode, ci, i, next, lg[next],
                        c->gen[i], lg[c->gen[i]], c->margin[i]);
                diverged = 1;
                div_margin = c->margin[i];
                if (exact) break;
            }
            if (!diverged) {
                /* our own top-1/top-2 margin, to show how close the decisions were */
                double second = -INFINITY;
                for (int v = 0; v < nv; v++) if (v != next && lg[v] > second) second = lg[v];
                if (lg[next] - second < min_margin) min_margin = lg[next] - second;
                match++;
            }
            if (strata_session_eval(s, &next, 1) != 0) ok = 0;
        }
        CHECKF(ok, "%s greedy %d: eval failed", mode, ci);
        if (exact) CHECKF(match == n, "exact greedy %d: %d of %d tokens equal the reference", ci, match, n);
        else CHECKF(match == n || div_margin < DEFAULT_GREEDY_MARGIN, "default greedy %d: left the reference after %d "
                    "tokens at a step whose reference margin %.3f is not a near tie", ci, match, div_margin);
        fprintf(stderr, "forward: %s greedy %d: %d/%d tokens equal the reference (smallest own margin %.4f)\n", mode,
                ci, match, n, min_margin);
        if (!exact) {
            CHECKF(sampler_bad == 0, "default greedy %d: strata_session_sample disagreed with argmax %d times", ci,
                   sampler_bad);
            /* the generation loop of the API, default (greedy) sampler */
            gen_capture cap = { { 0 }, 0 };
            strata_session_reset(s);
            int r = strata_generate(s, c->prompt, c->n_prompt, n, capture_token, &cap);
            int same = r == n && cap.n == n;
            for (int i = 0; same && i < n; i++) same = cap.got[i] == own[i];
            CHECKF(same, "default greedy %d: strata_generate returned %d tokens (%d via callback), %s", ci, r, cap.n,
                   same ? "" : "not the step-by-step greedy ids");
        }
    }
    strata_session_free(s);
}

static const char *data_path(const char *name, char *buf, size_t cap) {
    /* `make test` runs from the repository root; fall back to the source file's directory */
    snprintf(buf, cap, "tests/data/%s", name);
    FILE *f = fopen(buf, "rb");
    if (f) { fclose(f); return buf; }
    const char *src = __FILE__, *slash = strrchr(src, '/');
    if (slash) snprintf(buf, cap, "%.*s/data/%s", (int)(slash - src), src, name);
    return buf;
}

int main(void) {
    const char *model_path = getenv("STRATA_MODEL");
    if (!model_path || !*model_path) SKIP_ALL("model", "STRATA_MODEL is not set (make test sets it)");
    FILE *mf = fopen(model_path, "rb");
    if (!mf) SKIP_ALL("model", "%s: model file not found", model_path);
    fclose(mf);

    char pbuf[1024];
    golden g;
    t_current = "golden data";
    int gl = golden_load(data_path("smollm2_logits.bin", pbuf, sizeof pbuf), &g);
    CHECKF(gl == 0, "%s: cannot load the reference logits", pbuf);
    greedy_case cases[8];
    memset(cases, 0, sizeof cases);
    int n_cases = greedy_load(data_path("smollm2_greedy.txt", pbuf, sizeof pbuf), cases, 8);
    CHECKF(n_cases >= 3, "%s: expected at least 3 greedy cases, got %d", pbuf, n_cases);
    if (gl != 0 || n_cases < 3) TEST_DONE();
    /* Quick mode (tests/test.h; make test-asan): reference mode checks prompt 1 (23 of 225
     * positions, 1 of 3 full-vocabulary rows: the reference path costs about 1 s of CPU per
     * position under the sanitizers); the default mode checks prompts 0-1 at every
     * position and the long prompt (165 tokens, read in one call) at its last, the full-vocabulary
     * row: 61 of 225 positions, all 3 rows, so the mean exact KL over the rows is the full run's
     * (0.00441, bound 0.006) and the mean top-K KL is 0.00471 over the 61 (0.00395 over 225).
     * Both modes generate for the first greedy case, 8 tokens in reference mode and 16 in the
     * default mode, not 64. Each check asserts what it asserts in the full run. */
    int quick = t_quick();
    if (quick)
        fprintf(stderr, "forward: quick mode (STRATA_TEST_QUICK): reference mode on prompt 1 of 0-%d, the default mode "
                "on prompts 0-1 and the last position of prompt 2; greedy case 0 of %d, 8 / 16 tokens\n", g.n_prompts - 1,
                n_cases);

    for (int exact = 1; exact >= 0; exact--) {
        const char *mode = exact ? "exact" : "default";
        double t0 = now_s();
        strata_model_params mp = strata_model_default_params();
        mp.path = model_path;
        mp.exact = exact;
        mp.device = STRATA_DEVICE_CPU;
        strata_model *m = NULL;
        char err[512] = "";
        t_current = mode;
        int rc = strata_model_load(&mp, &m, err, sizeof err);
        CHECKF(rc == 0 && m, "%s: load: %s", mode, err);
        if (rc != 0 || !m) continue;
        CHECK_EQ_INT(strata_n_vocab(m), g.n_vocab);
        if (strata_n_vocab(m) != g.n_vocab) { strata_model_free(m); continue; }

        mode_stats st;
        memset(&st, 0, sizeof st);
        int p_first = quick && exact ? 1 : 0, n_prompts = quick && exact ? 2 : g.n_prompts;
        T_TIMED(exact ? "exact prompts" : "default prompts",
                check_prompts(m, &g, p_first, n_prompts, quick ? 2 : n_prompts, exact, &st));
        double mean_kl = st.n_pos ? st.kl_sum / st.n_pos : INFINITY;
        double mean_kl_full = st.n_full ? st.kl_full_sum / st.n_full : INFINITY;
        fprintf(stderr, "forward: %s mode, %d positions in %d prompts: max|d|/range top-%d %.3g, logsumexp %.3g, "
                "min logit %.3g, full vocab (%d positions) %.3g; argmax mismatches %d; mean KL %.3g (top-K+bucket, "
                "max %.3g), exact-KL mean at the full positions %.3g\n", mode, st.n_pos, n_prompts - p_first, g.k,
                st.max_rel_topk, st.max_rel_lse, st.max_rel_min, st.n_full, st.max_rel_full, st.n_argmax_bad, mean_kl,
                st.kl_max, mean_kl_full);
        if (exact) {
            CHECKF(st.max_rel_topk <= TOL_REL, "exact: max|d|/range over the top-%d = %.3g > %g", g.k, st.max_rel_topk, TOL_REL);
            CHECKF(st.max_rel_lse <= TOL_REL, "exact: logsumexp |d|/range = %.3g > %g", st.max_rel_lse, TOL_REL);
            CHECKF(st.max_rel_min <= TOL_REL, "exact: min-logit |d|/range = %.3g > %g", st.max_rel_min, TOL_REL);
            CHECKF(st.max_rel_full <= TOL_REL, "exact: full-vocab max|d|/range = %.3g > %g", st.max_rel_full, TOL_REL);
        } else {
            CHECKF(mean_kl < DEFAULT_KL_MAX, "default: mean KL (top-K+bucket) %.3g >= %g", mean_kl, DEFAULT_KL_MAX);
            CHECKF(mean_kl_full < DEFAULT_KL_FULL_MAX, "default: mean exact KL at the full positions %.3g >= %g",
                   mean_kl_full, DEFAULT_KL_FULL_MAX);
            if (mean_kl >= KL_MAX)
                fprintf(stderr, "forward: NOTE default mean KL %.3g misses the issue's target %g (int8 activations)\n",
                        mean_kl, KL_MAX);
        }
        CHECK(st.n_pos > 0);

        T_TIMED(exact ? "exact greedy" : "default greedy",
                check_greedy(m, cases, quick ? 1 : n_cases, exact, !quick ? GREEDY_N : exact ? 8 : 16));
        fprintf(stderr, "forward: %s mode done in %.1f s\n", mode, now_s() - t0);
        strata_model_free(m);
    }
    for (int i = 0; i < 8; i++) { free(cases[i].prompt); free(cases[i].gen); free(cases[i].margin); }
    golden_free(&g);
    TEST_DONE();
}
