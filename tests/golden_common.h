/* Reading and comparing reference logits written by tools/gen_logits_golden.py (SmolLM2) and
 * tools/gen_gemma_golden.py (Gemma 3): the "SLGT" logits file and the greedy text file. Both
 * formats are described at the top of those scripts; this header is the one C reader of them.
 *
 *   golden_logits_load   whole file in memory; per prompt: ids and per-position records
 *                        { logsumexp, max, min, argmax, top_ids[k], top_logits[k] }; full rows
 *   golden_compare_pos   one position of ours (a full n_vocab logit vector) against a record:
 *                        max |d| over the reference's top-k ids and the max/min logits, the
 *                        logit range, argmax agreement, and KL(ref || ours) over the coarsened
 *                        distributions {top-k tokens, one bucket for the rest of the vocabulary}
 *                        (a lower bound of the full KL by the data-processing inequality)
 *   golden_compare_full  a full reference row: max |d| over the vocabulary and the exact KL
 *   golden_greedy_load   prompt ids, generated ids and reference top-1/top-2 margins
 *
 * Header-only (static inline) so every test binary that includes it stays one file. */
#ifndef STRATA_GOLDEN_COMMON_H
#define STRATA_GOLDEN_COMMON_H
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct golden_pos {
    float lse, max_logit, min_logit;
    int32_t argmax;
    const int32_t *top_ids;     /* [k], descending by logit (ties: lower id first) */
    const float *top_logits;    /* [k] */
} golden_pos;

typedef struct golden_prompt {
    int n_tokens;
    int32_t *ids;               /* [n_tokens] */
    golden_pos *pos;            /* [n_tokens]: logits after ids[0..t] */
} golden_prompt;

typedef struct golden_full {
    int prompt, position;
    const float *logits;        /* [n_vocab] */
} golden_full;

typedef struct golden_logits {
    int n_vocab, k, n_prompts, n_full;
    golden_prompt *prompts;
    golden_full *full;
    unsigned char *blob;        /* the file; top-k arrays and full rows point into it */
} golden_logits;

static inline void golden_logits_free(golden_logits *g) {
    if (g->prompts)
        for (int p = 0; p < g->n_prompts; p++) { free(g->prompts[p].ids); free(g->prompts[p].pos); }
    free(g->prompts); free(g->full); free(g->blob);
    memset(g, 0, sizeof *g);
}

/* Little-endian reads with bounds checks against the file size. */
typedef struct { const unsigned char *p; size_t n, off; int bad; } golden_rd;
static inline const void *golden_take(golden_rd *r, size_t bytes) {
    if (r->bad || bytes > r->n - r->off) { r->bad = 1; return NULL; }
    const void *at = r->p + r->off;
    r->off += bytes;
    return at;
}
static inline uint32_t golden_u32(golden_rd *r) {
    const unsigned char *b = golden_take(r, 4);
    return b ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24 : 0;
}
static inline float golden_f32(golden_rd *r) {
    uint32_t u = golden_u32(r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* 0, or -1 with a message naming the file and what is wrong. The top-k and full arrays are used in
 * place (the x86 test machines are little-endian, and the offsets are multiples of 4). */
static inline int golden_logits_load(const char *path, golden_logits *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open (run the tools/gen_*_golden.py that writes it)", path); return -1; }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    g->blob = size > 0 ? malloc((size_t)size) : NULL;
    if (!g->blob || fread(g->blob, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        snprintf(err, errlen, "%s: cannot read %ld bytes", path, size);
        golden_logits_free(g);
        return -1;
    }
    fclose(f);
    golden_rd r = { g->blob, (size_t)size, 0, 0 };
    const void *magic = golden_take(&r, 4);
    uint32_t version = golden_u32(&r);
    g->n_vocab = (int)golden_u32(&r); g->k = (int)golden_u32(&r);
    g->n_prompts = (int)golden_u32(&r); g->n_full = (int)golden_u32(&r);
    if (!magic || memcmp(magic, "SLGT", 4) || version != 1 || g->n_vocab < 2 || g->k < 2 || g->k > g->n_vocab ||
        g->n_prompts < 1 || g->n_prompts > 1000 || g->n_full < 0 || g->n_full > 1000) {
        snprintf(err, errlen, "%s: not an SLGT version 1 logits file (or a bad header)", path);
        golden_logits_free(g);
        return -1;
    }
    g->prompts = calloc((size_t)g->n_prompts, sizeof *g->prompts);
    g->full = calloc((size_t)g->n_full + 1, sizeof *g->full);
    if (!g->prompts || !g->full) { snprintf(err, errlen, "%s: out of memory", path); golden_logits_free(g); return -1; }
    const size_t K = (size_t)g->k;
    for (int p = 0; p < g->n_prompts; p++) {
        golden_prompt *gp = &g->prompts[p];
        uint32_t n = golden_u32(&r);
        if (r.bad || n < 1 || n > (1u << 20)) { r.bad = 1; break; }
        gp->n_tokens = (int)n;
        gp->ids = malloc(n * sizeof(int32_t));
        gp->pos = calloc(n, sizeof(golden_pos));
        if (!gp->ids || !gp->pos) { snprintf(err, errlen, "%s: out of memory", path); golden_logits_free(g); return -1; }
        for (uint32_t t = 0; t < n; t++) {
            gp->ids[t] = (int32_t)golden_u32(&r);
            if (gp->ids[t] < 0 || gp->ids[t] >= g->n_vocab) r.bad = 1;
        }
        for (uint32_t t = 0; t < n && !r.bad; t++) {
            golden_pos *q = &gp->pos[t];
            q->lse = golden_f32(&r); q->max_logit = golden_f32(&r); q->min_logit = golden_f32(&r);
            q->argmax = (int32_t)golden_u32(&r);
            q->top_ids = golden_take(&r, K * 4);
            q->top_logits = golden_take(&r, K * 4);
            if (!r.bad && (q->argmax != q->top_ids[0] || q->top_logits[0] != q->max_logit)) r.bad = 1;
        }
    }
    for (int i = 0; i < g->n_full && !r.bad; i++) {
        g->full[i].prompt = (int)golden_u32(&r);
        g->full[i].position = (int)golden_u32(&r);
        g->full[i].logits = golden_take(&r, (size_t)g->n_vocab * 4);
        if (!r.bad && (g->full[i].prompt >= g->n_prompts ||
                       g->full[i].position >= g->prompts[g->full[i].prompt].n_tokens)) r.bad = 1;
    }
    if (r.bad || r.off != r.n) {
        snprintf(err, errlen, "%s: truncated or inconsistent at byte %zu of %zu", path, r.off, r.n);
        golden_logits_free(g);
        return -1;
    }
    return 0;
}

/* ---- comparing one position -------------------------------------------------------------- */
typedef struct golden_cmp {
    double max_abs_diff;    /* over the reference's top-k ids and its max / min logit */
    double range;           /* reference max - min logit */
    double kl;              /* KL(ref || ours) over {top-k, rest}, nats */
    double ref_margin;      /* reference top-1 minus top-2 logit */
    int32_t argmax;         /* ours, lowest id on ties */
    int argmax_ok;
} golden_cmp;

static inline int32_t golden_argmax(const float *x, int n) {
    int32_t best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static inline double golden_logsumexp(const float *x, int n) {
    double mx = x[0], s = 0;
    for (int i = 1; i < n; i++) if (x[i] > mx) mx = x[i];
    for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
    return mx + log(s);
}

/* KL(p || q) of two distributions given on k shared items plus one "rest" bucket each. */
static inline double golden_kl_bucketed(const double *p, const double *q, int k, double p_rest, double q_rest) {
    double kl = 0;
    for (int i = 0; i < k; i++)
        if (p[i] > 0) kl += p[i] * (log(p[i]) - log(q[i] > 1e-300 ? q[i] : 1e-300));
    if (p_rest > 1e-12) kl += p_rest * (log(p_rest) - log(q_rest > 1e-300 ? q_rest : 1e-300));
    return kl;
}

static inline void golden_compare_pos(const golden_logits *g, const golden_pos *ref, const float *ours,
                                      golden_cmp *c) {
    const int V = g->n_vocab, K = g->k;
    double lse = golden_logsumexp(ours, V);
    float mx = ours[0], mn = ours[0];
    for (int i = 1; i < V; i++) { if (ours[i] > mx) mx = ours[i]; if (ours[i] < mn) mn = ours[i]; }
    double md = fmax(fabs((double)mx - ref->max_logit), fabs((double)mn - ref->min_logit));
    double p[4096], q[4096], ps = 0, qs = 0;
    int kk = K < 4096 ? K : 4096;
    for (int i = 0; i < kk; i++) {
        float o = ours[ref->top_ids[i]];
        double d = fabs((double)o - ref->top_logits[i]);
        if (d > md) md = d;
        p[i] = exp((double)ref->top_logits[i] - ref->lse); ps += p[i];
        q[i] = exp((double)o - lse); qs += q[i];
    }
    c->max_abs_diff = md;
    c->range = (double)ref->max_logit - ref->min_logit;
    c->kl = golden_kl_bucketed(p, q, kk, fmax(0.0, 1.0 - ps), fmax(0.0, 1.0 - qs));
    c->ref_margin = (double)ref->top_logits[0] - ref->top_logits[1];
    c->argmax = golden_argmax(ours, V);
    c->argmax_ok = c->argmax == ref->argmax;
}

/* A full reference row: max |d| over the whole vocabulary and the exact KL(ref || ours). */
static inline void golden_compare_full(int n_vocab, const float *ref, const float *ours, double *max_abs_diff,
                                       double *kl) {
    double lr = golden_logsumexp(ref, n_vocab), lo = golden_logsumexp(ours, n_vocab), md = 0, s = 0;
    for (int i = 0; i < n_vocab; i++) {
        double d = fabs((double)ours[i] - ref[i]);
        if (d > md) md = d;
        double lp = ref[i] - lr;
        s += exp(lp) * (lp - ((double)ours[i] - lo));
    }
    *max_abs_diff = md;
    *kl = s;
}

/* ---- greedy file --------------------------------------------------------------------------- */
typedef struct golden_greedy_case {
    int n_prompt, n_gen;
    int32_t *prompt, *gen;
    float *margin;          /* [n_gen] reference top-1 minus top-2 logit per step */
} golden_greedy_case;

typedef struct golden_greedy {
    int n;
    golden_greedy_case c[16];
} golden_greedy;

static inline void golden_greedy_free(golden_greedy *g) {
    for (int i = 0; i < g->n; i++) { free(g->c[i].prompt); free(g->c[i].gen); free(g->c[i].margin); }
    memset(g, 0, sizeof *g);
}

/* Reads "<tag> N v v v ..." into a fresh array; ints (is_float 0) or floats. */
static inline int golden_read_line(FILE *f, const char *tag, int is_float, int *n, void **out) {
    char got[16];
    if (fscanf(f, "%15s %d", got, n) != 2 || strcmp(got, tag) || *n < 1 || *n > (1 << 20)) return -1;
    *out = malloc((size_t)*n * 4);
    if (!*out) return -1;
    for (int i = 0; i < *n; i++) {
        int ok = is_float ? fscanf(f, "%f", &((float *)*out)[i]) : fscanf(f, "%d", &((int32_t *)*out)[i]);
        if (ok != 1) return -1;
    }
    return 0;
}

static inline int golden_greedy_load(const char *path, golden_greedy *g, char *err, size_t errlen) {
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    char line[1 << 16];
    for (;;) {
        long at = ftell(f);
        if (!fgets(line, sizeof line, f)) break;
        if (line[0] == '#' || line[0] == '\n') continue;
        fseek(f, at, SEEK_SET);
        if (g->n == 16) { snprintf(err, errlen, "%s: more than 16 prompts", path); goto bad; }
        golden_greedy_case *c = &g->c[g->n++];
        int nm = 0;
        if (golden_read_line(f, "prompt", 0, &c->n_prompt, (void **)&c->prompt) ||
            golden_read_line(f, "gen", 0, &c->n_gen, (void **)&c->gen) ||
            golden_read_line(f, "margin", 1, &nm, (void **)&c->margin) || nm != c->n_gen) {
            snprintf(err, errlen, "%s: prompt %d: expected lines 'prompt N ids', 'gen N ids', 'margin N values'",
                     path, g->n - 1);
            goto bad;
        }
        if (!fgets(line, sizeof line, f)) break;   /* rest of the margin line */
    }
    fclose(f);
    if (g->n == 0) { snprintf(err, errlen, "%s: no prompts", path); golden_greedy_free(g); return -1; }
    return 0;
bad:
    fclose(f);
    golden_greedy_free(g);
    return -1;
}
#endif
