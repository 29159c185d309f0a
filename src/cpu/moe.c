/* Mixture-of-Experts FFN on the CPU: router, grouped expert kernels, per-token reference
 * (src/cpu/moe.h has the formulas).
 *
 * Grouped layout (P = T*k pairs, sorted by expert, then token):
 *   pair p       token pair_tok[p], rank pair_rank[p]; expert e owns pairs [g_start, g_start + g_n)
 *   act_gu[p]    x[pair_tok[p]] quantized to the gate/up activation format (one row per pair,
 *                so a group's columns are contiguous, as the matvec kernels want them)
 *   gbuf[p][F]   gate rows, then h = silu(gate) * up in place        (F = expert ffn)
 *   ubuf[p][F]   up rows
 *   act_h[p]     h[p] quantized to the down activation format
 *   ypair[p][E]  down_exps[e] h[p]
 * Work items: (expert group, chunk of output rows); a worker takes a contiguous range of
 * items, so each expert row block is read once per pass. A chunk is n_out / threads rows
 * (at least MOE_ROW_CHUNK): long runs of one matrix keep the hardware prefetcher streaming
 * (16-row chunks, alternating gate and up, measured slower than per-token matvecs at T = 1). */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include "moe.h"
#include "kernels.h"
#include "core/env.h"
#include "core/util.h"
#include "quant/ref.h"

#define MOE_ROW_CHUNK 16

/* ---- router ---------------------------------------------------------------------------- */
void moe_route(const float *logits, int X, int k, int T, int32_t *sel, float *w) {
    for (int t = 0; t < T; t++) {
        const float *l = logits + (size_t)t * X;
        int32_t *s = sel + (size_t)t * k;
        float *wt = w + (size_t)t * k;
        /* softmax over all experts, sums in expert order */
        float mx = l[0];
        for (int e = 1; e < X; e++)
            if (l[e] > mx) mx = l[e];
        float sum = 0.0f;
        for (int e = 0; e < X; e++) sum += expf(l[e] - mx);
        /* top-k by probability; a tie goes to the lower expert index (strict >). Each p is
         * formed once (the same expression, so the same bits, as forming it per rank). */
        float pbuf[256], *p = X <= 256 ? pbuf : NULL;
        if (p)
            for (int e = 0; e < X; e++) p[e] = expf(l[e] - mx) / sum;
        for (int r = 0; r < k; r++) {
            int best = -1;
            float bp = 0.0f;
            for (int e = 0; e < X; e++) {
                int taken = 0;
                for (int q = 0; q < r; q++) taken |= s[q] == e;
                if (taken) continue;
                float pe = p ? p[e] : expf(l[e] - mx) / sum;
                if (best < 0 || pe > bp) { best = e; bp = pe; }
            }
            s[r] = best;
            wt[r] = bp;
        }
        float ssel = 0.0f;
        for (int r = 0; r < k; r++) ssel += wt[r];
        for (int r = 0; r < k; r++) wt[r] = wt[r] / ssel;
    }
}

/* ---- kernel choice (as matvec.c: STRATA_KERNEL, CPU features; resolved once) ------------- */
static pthread_once_t kern_once = PTHREAD_ONCE_INIT;
static int kern_env_ref, kern_avx2, kern_wide;
static int moe_env_variant;

static void kern_init(void) {
    kern_env_ref = !strcmp(env_str(ENV_KERNEL), "ref");
    kern_avx2 = cpu_has_avx2_fma();
    kern_wide = env_bool(ENV_CPU_MM);
    moe_env_variant = !strcmp(env_str(ENV_MOE), "per-token") ? MOE_PER_TOKEN : MOE_GROUPED;
}

static matvec_rows_fn pick_kernel(int type, matvec_kernel want) {
    pthread_once(&kern_once, kern_init);
    if (want == MATVEC_KERNEL_REF || (want == MATVEC_KERNEL_AUTO && kern_env_ref) || !kern_avx2) return NULL;
    return matvec_rows_cpu(type);
}

/* ---- scratch: thread-local, grows, never shrinks (no allocation per token after warm-up) -- */
typedef struct { void *p; size_t cap; } buf;
typedef struct { buf logits, sel, w, pairs, groups, act_x, act_gu, gbuf, ubuf, act_h, ypair, rows, asum, mm; } moe_scratch;
static _Thread_local moe_scratch s_scr;
/* a thread-specific key frees a thread's scratch when it exits (the server's decode thread) */
static pthread_key_t s_scr_key;
static pthread_once_t s_scr_once = PTHREAD_ONCE_INIT;
static void scratch_free(void *arg) {
    buf *b = (buf *)arg;
    for (size_t i = 0; i < sizeof(moe_scratch) / sizeof(buf); i++) { st_free(b[i].p); b[i].p = NULL; b[i].cap = 0; }
}
static void scratch_key_init(void) { pthread_key_create(&s_scr_key, scratch_free); }

static void *buf_get(buf *b, size_t n) {
    if (n <= b->cap) return b->p;
    void *p = st_realloc(b->p, n);
    if (!p) return NULL;
    b->p = p; b->cap = n;
    pthread_once(&s_scr_once, scratch_key_init);
    pthread_setspecific(s_scr_key, &s_scr);
    return p;
}

/* ---- one matrix slice times a group of columns ------------------------------------------------
 * y[c * n_out + r] = W[r] . col c for r in [r0, r1), c < n. Default mode: act rows (stride
 * bytes apart) through the kernel fn or the reference dot; exact mode: W rows dequantized to
 * rowbuf and dotted with f32 columns xs[c] in the canonical order. */
typedef struct {
    const quant_traits *qt;
    const char *W; size_t row_bytes; int64_t n_in, n_out;
    matvec_rows_fn fn;
    const matmul_kernel *mk;   /* the wide kernel (groups of more than MOE_WIDE_MIN columns), or NULL */
} slice;

/* A group of more than this many columns runs through the format's wide kernel (a strip of 8
 * rows decoded once for all of them); smaller groups through the matvec kernel (same bits). */
#define MOE_WIDE_MIN MATVEC_MAX_COLS

static void slice_rows(const slice *s, const void *act, size_t stride, const int32_t *asum, const float *const *xs,
                       int n, float *y, int64_t r0, int64_t r1, float *rowbuf, void *mm_scratch, int exact,
                       int exact_avx2) {
    if (exact) {
        for (int64_t r = r0; r < r1; r++) {
            s->qt->dequant_row(s->W + (size_t)r * s->row_bytes, rowbuf, s->n_in);
            for (int c = 0; c < n; c++)
                y[(size_t)c * (size_t)s->n_out + (size_t)r] = exact_avx2 ? f32_dot_canon_avx2(rowbuf, xs[c], s->n_in)
                                                                         : f32_dot_canon_ref(rowbuf, xs[c], s->n_in);
        }
        return;
    }
    if (s->mk && n > MOE_WIDE_MIN) {
        s->mk->rows(s->W, s->row_bytes, s->n_in, act, stride, asum, n, y, s->n_out, r0, r1, mm_scratch);
        return;
    }
    if (s->fn) {
        for (int c0 = 0; c0 < n; c0 += MATVEC_MAX_COLS)
            s->fn(s->W, s->row_bytes, s->n_in, (const char *)act + (size_t)c0 * stride, stride,
                  n - c0 < MATVEC_MAX_COLS ? n - c0 : MATVEC_MAX_COLS, y + (size_t)c0 * (size_t)s->n_out, s->n_out,
                  r0, r1);
        return;
    }
    for (int64_t r = r0; r < r1; r++)
        for (int c = 0; c < n; c++)
            y[(size_t)c * (size_t)s->n_out + (size_t)r] =
                s->qt->dot_ref(s->W + (size_t)r * s->row_bytes, (const char *)act + (size_t)c * stride, s->n_in);
}

static inline float silu_mul(float g, float u) { return (g / (1.0f + expf(-g))) * u; }

/* ---- the grouped passes ------------------------------------------------------------------ */
/* Wide passes: output rows per work item, the items claimed one at a time by the workers
 * (groups differ in columns, so a static split of the items would leave a worker idle). */
#define MOE_WIDE_CHUNK 64

typedef struct {
    /* shapes */
    int64_t E, F;
    int exact, exact_avx2;
    slice gate, up, down;            /* expert 0's slices; expert e adds e * expert_bytes */
    size_t gate_eb, up_eb, down_eb;  /* bytes per expert */
    /* groups ([P] each; n_groups used) */
    int n_groups;
    int *g_expert, *g_start, *g_n;
    int *pair_tok;                   /* [P] */
    /* data */
    const float *x;                  /* [T][E] f32 (exact mode) */
    const float **hcols, **xcols;    /* [P] (exact mode) */
    const void *act_gu; size_t gu_stride; const int32_t *asum_gu; int64_t nba_gu;
    const void *act_up; size_t up_stride; const int32_t *asum_up; int64_t nba_up;
    float *gbuf, *ubuf;
    const void *act_h; size_t h_stride; const int32_t *asum_h; int64_t nba_h;
    float *ypair;
    float *rowbuf;                   /* per worker: max(E, F) floats (exact mode) */
    int64_t rowbuf_n;
    char *mm_scratch;                /* per worker: the wide kernels' decoded strip */
    size_t mm_scratch_bytes;
    int pass;                        /* 0: gate/up, 1: down */
    long n_items;
    int chunks_per_group;
    int64_t chunk_rows;
    int dynamic;                     /* items claimed through `next` (wide passes) */
    long next;
} moe_job;

static void moe_item(moe_job *j, long it, float *rowbuf, void *mm) {
    int64_t n_out = j->pass == 0 ? j->F : j->E;
    int g = (int)(it / j->chunks_per_group);
    int64_t r0 = (it % j->chunks_per_group) * j->chunk_rows, r1 = r0 + j->chunk_rows;
    if (r1 > n_out) r1 = n_out;
    int e = j->g_expert[g], p0 = j->g_start[g], n = j->g_n[g];
    if (j->pass == 0) {
        slice sg = j->gate, su = j->up;
        sg.W += (size_t)e * j->gate_eb;
        su.W += (size_t)e * j->up_eb;
        float *yg = j->gbuf + (size_t)p0 * (size_t)j->F, *yu = j->ubuf + (size_t)p0 * (size_t)j->F;
        slice_rows(&sg, (const char *)j->act_gu + (size_t)p0 * j->gu_stride, j->gu_stride,
                   j->asum_gu ? j->asum_gu + (size_t)p0 * (size_t)j->nba_gu : NULL, j->xcols + p0, n, yg, r0, r1,
                   rowbuf, mm, j->exact, j->exact_avx2);
        slice_rows(&su, (const char *)j->act_up + (size_t)p0 * j->up_stride, j->up_stride,
                   j->asum_up ? j->asum_up + (size_t)p0 * (size_t)j->nba_up : NULL, j->xcols + p0, n, yu, r0, r1,
                   rowbuf, mm, j->exact, j->exact_avx2);
        for (int c = 0; c < n; c++)
            for (int64_t r = r0; r < r1; r++) {
                size_t i = (size_t)c * (size_t)j->F + (size_t)r;
                yg[i] = silu_mul(yg[i], yu[i]);
            }
    } else {
        slice sd = j->down;
        sd.W += (size_t)e * j->down_eb;
        slice_rows(&sd, (const char *)j->act_h + (size_t)p0 * j->h_stride, j->h_stride,
                   j->asum_h ? j->asum_h + (size_t)p0 * (size_t)j->nba_h : NULL, j->hcols + p0, n,
                   j->ypair + (size_t)p0 * (size_t)j->E, r0, r1, rowbuf, mm, j->exact, j->exact_avx2);
    }
}

static void moe_worker(void *ctx, int ith, int nth) {
    moe_job *j = ctx;
    float *rowbuf = j->rowbuf ? j->rowbuf + (size_t)ith * (size_t)j->rowbuf_n : NULL;
    void *mm = j->mm_scratch ? j->mm_scratch + (size_t)ith * j->mm_scratch_bytes : NULL;
    if (j->dynamic) {
        for (;;) {
            long it = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
            if (it >= j->n_items) break;
            moe_item(j, it, rowbuf, mm);
        }
        return;
    }
    long lo, hi;
    threadpool_split(j->n_items, ith, nth, 1, &lo, &hi);
    for (long it = lo; it < hi; it++) moe_item(j, it, rowbuf, mm);
}

/* rows per work item: n_out / nth rounded up to MOE_ROW_CHUNK */
static int64_t chunk_rows(int64_t n_out, int nth) {
    int64_t c = (n_out + nth - 1) / nth;
    c = (c + MOE_ROW_CHUNK - 1) / MOE_ROW_CHUNK * MOE_ROW_CHUNK;
    return c > 0 ? c : MOE_ROW_CHUNK;
}

static int make_slice(const weight *w, matvec_kernel kernel, slice *s, size_t *expert_bytes) {
    s->qt = quant_traits_get(w->type);
    if (!s->qt || !w->data) return -1;
    s->W = w->data;
    s->row_bytes = quant_row_bytes(w->type, w->n_in);
    if (!s->row_bytes) return -1;
    s->n_in = w->n_in; s->n_out = w->n_out;
    s->fn = pick_kernel(w->type, kernel);
    s->mk = NULL;
    if (s->fn && kern_wide) {
        s->mk = matmul_wide(w->type);
    }
    *expert_bytes = s->row_bytes * (size_t)w->n_out;
    return 0;
}

/* out[t] = sum over ranks in order of w * y (from 0.0f): the one combine both paths use. */
static void combine(const float *ypair, const int *pair_of, const float *w, int T, int k, int64_t E, float *out) {
    for (int t = 0; t < T; t++) {
        float *o = out + (size_t)t * (size_t)E;
        for (int64_t i = 0; i < E; i++) o[i] = 0.0f;
        for (int r = 0; r < k; r++) {
            const float *y = ypair + (size_t)pair_of[t * k + r] * (size_t)E;
            float wr = w[t * k + r];
            for (int64_t i = 0; i < E; i++) o[i] = o[i] + wr * y[i];
        }
    }
}

/* activation rows; the AVX2 twin (the same bits) where the fast kernels run, as matvec.c */
static void quantize_rows(int fmt, const float *x, int64_t n, int rows, char *dst, size_t stride, int fast) {
    for (int r = 0; r < rows; r++) {
        if (fast) act_quantize_row_avx2(fmt, x + (size_t)r * (size_t)n, dst + (size_t)r * stride, n);
        else act_quantize_row(fmt, x + (size_t)r * (size_t)n, dst + (size_t)r * stride, n);
    }
}

static int moe_grouped(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
                       matvec_mode mode, matvec_kernel kernel, const int32_t *sel, const float *w, moe_timing *tm) {
    moe_job *j = buf_get(&s_scr.pairs, sizeof(moe_job));
    if (!j) return -1;
    memset(j, 0, sizeof *j);
    const int64_t E = L->gate_exps.n_in, F = L->gate_exps.n_out;
    const int X = (int)L->gate_exps.n_expert, P = T * k;
    j->E = E; j->F = F;
    j->exact = mode == MATVEC_EXACT;
    if (make_slice(&L->gate_exps, kernel, &j->gate, &j->gate_eb) || make_slice(&L->up_exps, kernel, &j->up, &j->up_eb) ||
        make_slice(&L->down_exps, kernel, &j->down, &j->down_eb))
        return -1;
    j->exact_avx2 = j->exact && pick_kernel(TYPE_F32, kernel) != NULL;

    /* the per-pair index arrays: pair_of, pair_tok, g_expert, g_start, g_n, then the columns */
    char *ix = buf_get(&s_scr.groups, (size_t)P * (5 * sizeof(int) + 2 * sizeof(float *)) + 64);
    if (!ix) return -1;
    const float **cols = (const float **)(((uintptr_t)ix + 15) & ~(uintptr_t)15);
    j->xcols = cols; j->hcols = cols + P;
    int *pair_of = (int *)(cols + 2 * (size_t)P);    /* (t, r) -> grouped position */
    j->pair_tok = pair_of + P; j->g_expert = pair_of + 2 * (size_t)P; j->g_start = pair_of + 3 * (size_t)P;
    j->g_n = pair_of + 4 * (size_t)P;

    /* group the pairs by expert (counting sort; tokens ascending within a group) */
    int count[4096 + 1];
    if (X > 4096) return -1;
    memset(count, 0, sizeof(int) * (size_t)(X + 1));
    for (int p = 0; p < P; p++) count[sel[p] + 1]++;
    for (int e = 0; e < X; e++) count[e + 1] += count[e];
    for (int t = 0; t < T; t++)
        for (int r = 0; r < k; r++) {
            int e = sel[t * k + r], pos = count[e]++;
            pair_of[t * k + r] = pos;
            j->pair_tok[pos] = t;
        }
    /* count[e] is now the end of group e; rebuild the group list */
    int max_n = 0;
    for (int e = 0, start = 0; e < X; e++) {
        if (count[e] > start) {
            j->g_expert[j->n_groups] = e;
            j->g_start[j->n_groups] = start;
            j->g_n[j->n_groups] = count[e] - start;
            if (count[e] - start > max_n) max_n = count[e] - start;
            j->n_groups++;
        }
        start = count[e] > start ? count[e] : start;
    }

    float *gbuf = buf_get(&s_scr.gbuf, (size_t)P * (size_t)F * sizeof(float));
    float *ubuf = buf_get(&s_scr.ubuf, (size_t)P * (size_t)F * sizeof(float));
    float *ypair = buf_get(&s_scr.ypair, (size_t)P * (size_t)E * sizeof(float));
    if (!gbuf || !ubuf || !ypair) return -1;
    j->gbuf = gbuf; j->ubuf = ubuf; j->ypair = ypair; j->x = x;
    int nth = threadpool_size(tp);
    /* a group wider than MOE_WIDE_MIN runs the wide kernels: their per-worker strips, the
     * activations' code sums, and items claimed one by one */
    const int wide = !j->exact && max_n > MOE_WIDE_MIN && (j->gate.mk || j->up.mk || j->down.mk);
    const matmul_kernel *mg = wide ? j->gate.mk : NULL, *mu = wide ? j->up.mk : NULL, *md = wide ? j->down.mk : NULL;
    if (wide) {
        size_t sb = 0;
        if (mg && mg->scratch_bytes(E) > sb) sb = mg->scratch_bytes(E);
        if (mu && mu->scratch_bytes(E) > sb) sb = mu->scratch_bytes(E);
        if (md && md->scratch_bytes(F) > sb) sb = md->scratch_bytes(F);
        j->mm_scratch_bytes = (sb + 63) / 64 * 64;
        j->mm_scratch = buf_get(&s_scr.mm, (size_t)nth * j->mm_scratch_bytes + 64);
        if (!j->mm_scratch) return -1;
        j->mm_scratch = (char *)(((uintptr_t)j->mm_scratch + 63) & ~(uintptr_t)63);
        j->dynamic = 1;
    }
    if (j->exact) {
        j->rowbuf_n = E > F ? E : F;
        j->rowbuf = buf_get(&s_scr.rows, (size_t)nth * (size_t)j->rowbuf_n * sizeof(float));
        if (!j->rowbuf) return -1;
        for (int p = 0; p < P; p++) {
            j->xcols[p] = x + (size_t)j->pair_tok[p] * (size_t)E;
            j->hcols[p] = gbuf + (size_t)p * (size_t)F;
        }
    } else {
        /* quantize each token once per format, then lay the rows out in pair order (gate and
         * up share one copy when their activation format is the same) */
        act_format ag = j->gate.qt->act, au = j->up.qt->act;
        const int shared = ag == au;
        size_t sg = act_row_bytes(ag, E), su = shared ? 0 : act_row_bytes(au, E);
        if (!sg || (!shared && !su)) return -1;
        char *ax = buf_get(&s_scr.act_x, (size_t)T * (sg + su));
        char *agu = buf_get(&s_scr.act_gu, (size_t)P * (sg + su));
        if (!ax || !agu) return -1;
        quantize_rows(ag, x, E, T, ax, sg, j->gate.fn != NULL);
        if (!shared) quantize_rows(au, x, E, T, ax + (size_t)T * sg, su, j->up.fn != NULL);
        for (int p = 0; p < P; p++) {
            memcpy(agu + (size_t)p * sg, ax + (size_t)j->pair_tok[p] * sg, sg);
            if (!shared)
                memcpy(agu + (size_t)P * sg + (size_t)p * su, ax + (size_t)T * sg + (size_t)j->pair_tok[p] * su, su);
        }
        j->act_gu = agu; j->gu_stride = sg;
        j->act_up = shared ? agu : agu + (size_t)P * sg; j->up_stride = shared ? sg : su;
        /* code sums for the wide kernels: per token, then in pair order */
        int64_t ng = mg && mg->asum_blck ? E / mg->asum_blck : 0, nu = mu && mu->asum_blck ? E / mu->asum_blck : 0;
        int64_t nd = md && md->asum_blck ? F / md->asum_blck : 0;
        if (ng || nu || nd) {
            int32_t *sums = buf_get(&s_scr.asum, sizeof(int32_t) * ((size_t)(T + P) * (size_t)(ng + nu) + (size_t)P * (size_t)nd));
            if (!sums) return -1;
            int32_t *tok = sums, *pg = sums + (size_t)T * (size_t)(ng + nu), *pu = pg + (size_t)P * (size_t)ng;
            if (ng) matmul_act_sums(mg, ax, sg, E, T, tok);
            if (nu) matmul_act_sums(mu, j->act_up == agu ? ax : ax + (size_t)T * sg, j->up_stride, E, T, tok + (size_t)T * (size_t)ng);
            for (int p = 0; p < P; p++) {
                int t = j->pair_tok[p];
                if (ng) memcpy(pg + (size_t)p * (size_t)ng, tok + (size_t)t * (size_t)ng, sizeof(int32_t) * (size_t)ng);
                if (nu) memcpy(pu + (size_t)p * (size_t)nu, tok + (size_t)T * (size_t)ng + (size_t)t * (size_t)nu,
                               sizeof(int32_t) * (size_t)nu);
            }
            j->asum_gu = ng ? pg : NULL; j->nba_gu = ng;
            j->asum_up = nu ? pu : NULL; j->nba_up = nu;
            j->asum_h = nd ? pu + (size_t)P * (size_t)nu : NULL; j->nba_h = nd;
        }
    }

    /* pass 1: gate and up row chunks back to back, SiLU*mul into gbuf */
    j->pass = 0;
    j->chunk_rows = wide ? MOE_WIDE_CHUNK : chunk_rows(F, nth);
    j->chunks_per_group = (int)((F + j->chunk_rows - 1) / j->chunk_rows);
    j->n_items = (long)j->n_groups * j->chunks_per_group;
    j->next = 0;
    double t0 = tm ? now_seconds() : 0;
    threadpool_run(tp, moe_worker, j);
    if (tm) tm->gate_up = now_seconds() - t0;

    /* pass 2: down over the pairs' h rows */
    if (!j->exact) {
        act_format ad = j->down.qt->act;
        size_t sd = act_row_bytes(ad, F);
        if (!sd) return -1;
        char *ah = buf_get(&s_scr.act_h, (size_t)P * sd);
        if (!ah) return -1;
        quantize_rows(ad, gbuf, F, P, ah, sd, j->down.fn != NULL);
        j->act_h = ah; j->h_stride = sd;
        if (j->asum_h) matmul_act_sums(md, ah, sd, F, P, (int32_t *)j->asum_h);
    }
    j->pass = 1;
    j->chunk_rows = wide ? MOE_WIDE_CHUNK : chunk_rows(E, nth);
    j->chunks_per_group = (int)((E + j->chunk_rows - 1) / j->chunk_rows);
    j->n_items = (long)j->n_groups * j->chunks_per_group;
    j->next = 0;
    if (tm) t0 = now_seconds();
    threadpool_run(tp, moe_worker, j);
    if (tm) { tm->down = now_seconds() - t0; t0 = now_seconds(); }

    combine(ypair, pair_of, w, T, k, E, out);
    if (tm) tm->combine = now_seconds() - t0;
    return 0;
}

/* The plain reference: every (token, rank) pair on its own through T = 1 matvecs. */
static int moe_per_token(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
                         matvec_mode mode, matvec_kernel kernel, const int32_t *sel, const float *w) {
    const int64_t E = L->gate_exps.n_in, F = L->gate_exps.n_out;
    const int P = T * k;
    size_t gb = quant_row_bytes(L->gate_exps.type, E) * (size_t)F, ub = quant_row_bytes(L->up_exps.type, E) * (size_t)F;
    size_t db = quant_row_bytes(L->down_exps.type, F) * (size_t)E;
    if (!gb || !ub || !db) return -1;
    float *g = buf_get(&s_scr.gbuf, (size_t)F * sizeof(float));
    float *u = buf_get(&s_scr.ubuf, (size_t)F * sizeof(float));
    float *ypair = buf_get(&s_scr.ypair, (size_t)P * (size_t)E * sizeof(float));
    int *pair_of = buf_get(&s_scr.groups, (size_t)P * sizeof(int));
    if (!g || !u || !ypair || !pair_of) return -1;
    for (int t = 0; t < T; t++)
        for (int r = 0; r < k; r++) {
            int e = sel[t * k + r], p = t * k + r;
            pair_of[p] = p;
            const float *xt = x + (size_t)t * (size_t)E;
            if (matvec_with(tp, (const char *)L->gate_exps.data + (size_t)e * gb, L->gate_exps.type, E, F, xt, 1, g, mode, kernel) ||
                matvec_with(tp, (const char *)L->up_exps.data + (size_t)e * ub, L->up_exps.type, E, F, xt, 1, u, mode, kernel))
                return -1;
            for (int64_t i = 0; i < F; i++) g[i] = silu_mul(g[i], u[i]);
            if (matvec_with(tp, (const char *)L->down_exps.data + (size_t)e * db, L->down_exps.type, F, E, g, 1,
                            ypair + (size_t)p * (size_t)E, mode, kernel))
                return -1;
        }
    combine(ypair, pair_of, w, T, k, E, out);
    return 0;
}

int moe_ffn(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
            matvec_mode mode, matvec_kernel kernel, moe_variant variant, int32_t *sel_out, float *w_out) {
    return moe_ffn_timed(tp, L, k, x, T, out, mode, kernel, variant, sel_out, w_out, NULL);
}

int moe_ffn_timed(threadpool *tp, const layer_weights *L, int k, const float *x, int T, float *out,
                  matvec_mode mode, matvec_kernel kernel, moe_variant variant, int32_t *sel_out, float *w_out,
                  moe_timing *tm) {
    const weight *R = &L->gate_inp;
    const int X = (int)R->n_out;
    if (T < 1 || T > MOE_MAX_T || k < 1 || k > X || !L->gate_exps.data ||
        L->gate_exps.n_expert != X || L->up_exps.n_expert != X || L->down_exps.n_expert != X ||
        L->gate_exps.n_in != R->n_in || L->down_exps.n_out != R->n_in || L->down_exps.n_in != L->gate_exps.n_out)
        return -1;
    pthread_once(&kern_once, kern_init);
    if (variant == MOE_AUTO) variant = (moe_variant)moe_env_variant;
    float *logits = buf_get(&s_scr.logits, (size_t)T * (size_t)X * sizeof(float));
    int32_t *sel = buf_get(&s_scr.sel, (size_t)T * (size_t)k * sizeof(int32_t));
    float *w = buf_get(&s_scr.w, (size_t)T * (size_t)k * sizeof(float));
    if (!logits || !sel || !w) return -1;
    if (tm) memset(tm, 0, sizeof *tm);
    double t0 = tm ? now_seconds() : 0;
    if (matvec_with(tp, R->data, R->type, R->n_in, X, x, T, logits, mode, kernel)) return -1;
    moe_route(logits, X, k, T, sel, w);
    if (tm) tm->route = now_seconds() - t0;
    if (sel_out) memcpy(sel_out, sel, (size_t)T * (size_t)k * sizeof(int32_t));
    if (w_out) memcpy(w_out, w, (size_t)T * (size_t)k * sizeof(float));
    if (variant == MOE_PER_TOKEN) {
        t0 = tm ? now_seconds() : 0;
        int rc = moe_per_token(tp, L, k, x, T, out, mode, kernel, sel, w);
        if (tm) tm->gate_up = now_seconds() - t0;
        return rc;
    }
    return moe_grouped(tp, L, k, x, T, out, mode, kernel, sel, w, tm);
}
