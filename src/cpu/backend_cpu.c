/* CPU backend: the reference implementation of the backend blocks, multithreaded over rows/heads.
 * Each op's result for a token is independent of T and of the thread count (batch
 * invariance): work is split across threads, never the order of a sum. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include "model/backend.h"
#include "model/attn_order.h"
#include "cpu/backend_cpu.h"
#include "cpu/matvec.h"
#include "cpu/moe.h"
#include "cpu/threadpool.h"
#include "cpu/f16conv.h"
#include "cpu/kernels.h"
#include "quant/quant.h"
#include "core/util.h"
#include "core/env.h"

/* A KV cache: per layer [kv_cap[l]][kv_row_bytes] rows of K and of V. */
typedef struct cpu_kv {
    int n_layers, n_ctx, window;
    int exact, kv_int8;
    size_t kv_dim;          /* n_kv_heads * head_dim */
    size_t kv_row_bytes;    /* bytes of one position's K (or V): kv_dim * 2 (f16), * 4 (f32), / 32 * 36 (int8) */
    void **k_cache, **v_cache;
    int *kv_cap;            /* per layer: n_ctx, or a ring of window + KV_RING_SLACK positions */
} cpu_kv;

typedef struct {
    hparams hp;
    const model_weights *w;
    int n_ctx;
    int exact;              /* f32 KV cache + exact matvec */
    threadpool *tp;
    cpu_kv kv;              /* this backend's own cache (backend.kv points here) */
    fwd_sizes sz;
    int cap_T;              /* the columns the buffers below hold (grown by cpu_reserve) */
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *moe_out, *logits;   /* cap_T columns each */
    float *scores;          /* per thread: [scores_stride(scores_n)]: a score per position, then per chunk
                               m_c, l_c and a_c (the attention order's chunks) */
    int scores_n;           /* n_ctx, or more once a pass reached a longer cache (another session's) */
    float *kv_tmp;          /* per thread: [32][head_dim] K or V rows (32 positions) as f32, then
                               [head_dim]: a chunk's V sum */
    float *kv_f32;          /* the layer's K and V rows of the pass's positions, converted to f32
                               once per pass ([2][kv_f32_rows][kv_dim]), not per (token, head) */
    size_t kv_f32_rows;
    int kv_pass;            /* STRATA_CPU_KV_PASS: use kv_f32 (0: convert per task) */
    f16_row_fn f16_row;     /* f16 -> f32 row conversion (F16C or scalar: same values) */
    q8_row_fn q8_row;       /* int8 KV row -> f32 (AVX2 or scalar: same values) */
    int attn_avx2;          /* scores and V sums 8-32 at a time (src/cpu/attn_avx2.c, same bits) */
    int attn_dec;           /* decode steps grouped by KV head (attn_dec_*; STRATA_CPU_ATTN=auto) */
    float *dec_w;           /* [n_heads][dec_n]: a decode step's scores, then weights, per head */
    float *dec_a;           /* [n_heads][ATTN_N_CHUNKS(dec_n)]: the chunks' a_c (in dec_w's block) */
    int dec_n;
    float *dec_tmp;         /* per thread: DEC_TMP_FLOATS(head_dim, G) */
    int qtile;              /* STRATA_CPU_ATTN_QTILE: query rows per tile of a prompt pass's tasks (0: per (token, head)) */
    float *pt_tmp;          /* per thread: pt_stride floats (attn_prompt_tiled's blocks, scores, chunk sums) */
    size_t pt_stride;
    int pt_rows, pt_nch;    /* the rows and chunks pt_tmp holds */
    float *rope_inv_freq;   /* [n_rot/2] for the global base */
    float *rope_inv_freq_local;
} cpu_be;

static inline cpu_be *CB(backend *be) { return (cpu_be *)be->impl; }
static inline size_t scores_stride(int n) { return (size_t)n + 3 * (size_t)ATTN_N_CHUNKS(n); }
/* Sliding-window layers keep a ring of window + KV_RING_SLACK positions (position p in slot
 * p % cap), so their KV memory is bounded by the window. The slack covers a pass of
 * FWD_MAX_T tokens (writes before reads: cap >= window + T - 1) and lets a session rewind
 * up to cap - window + 1 positions (speculative rollback) without losing needed rows. */
#define KV_RING_SLACK (FWD_MAX_T + 1)

/* ==== the primitives (src/cpu/backend_cpu.h): what the blocks below are made of ========== */

/* ---- embed ------------------------------------------------------------------------ */
void cpu_embed(const weight *te, const int32_t *ids, int T, float *x, float scale) {
    const quant_traits *qt = quant_traits_get(te->type);
    size_t row_bytes = quant_row_bytes(te->type, te->n_in);
    for (int t = 0; t < T; t++) {
        float *dst = x + (size_t)t * te->n_in;
        qt->dequant_row((const uint8_t *)te->data + (size_t)ids[t] * row_bytes, dst, te->n_in);
        if (scale != 1.0f)
            for (int64_t i = 0; i < te->n_in; i++) dst[i] *= scale;
    }
}

/* ---- rmsnorm: sum of squares in double, sequential (fixed order) ----------------------- */
void cpu_rmsnorm(const float *x, const float *g, float *y, int rows, int n, float eps) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / n + (double)eps));
        for (int i = 0; i < n; i++) yr[i] = (xr[i] * inv) * g[i];
    }
}

/* ---- rope: pair i of a head is (2i, 2i+1) in llama's GGUF layout, (i, i + n_rot/2) in the
 * NEOX layout (hparams.rope_neox: qwen3moe, gemma3); both rotate by angle pos * base^(-2i/n_rot) -- */
void cpu_rope_inv_freq(float base, int n_rot, float *inv) {
    for (int i = 0; i < n_rot / 2; i++) inv[i] = (float)(1.0 / pow((double)base, (2.0 * i) / n_rot));
}
void cpu_rope(float *x, int T, int n_heads, int head_dim, int n_rot, int neox, int pos0, const float *inv, float scale) {
    for (int t = 0; t < T; t++) {
        float p = (float)(pos0 + t) / scale;
        for (int i = 0; i < n_rot / 2; i++) {
            float ang = p * inv[i];
            float cs = cosf(ang), sn = sinf(ang);
            int ia = neox ? i : 2 * i, ib = neox ? i + n_rot / 2 : 2 * i + 1;
            for (int h = 0; h < n_heads; h++) {
                float *v = x + ((size_t)t * n_heads + h) * head_dim;
                float a = v[ia], b = v[ib];
                v[ia] = a * cs - b * sn;
                v[ib] = a * sn + b * cs;
            }
        }
    }
}

/* ---- elementwise ---------------------------------------------------------------------- */
void cpu_swiglu(const float *gate, const float *up, float *out, int n) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

/* gelu with the tanh approximation, as Gemma's hidden_activation "gelu_pytorch_tanh":
 * 0.5 g (1 + tanh(y)), y = sqrt(2/pi) (g + 0.044715 g^3), computed as the equal
 * g / (1 + exp(-2y)) (1 + tanh(y) = 2 / (1 + exp(-2y))). Why this form: it calls expf, whose
 * glibc bits the GPU reproduces (expf_ref, src/cuda/expf_host.cuh), so geglu_kernel in
 * src/cuda/ops.cu gives these bits with the same operations in the same order (CUDA's tanhf
 * differs from glibc's by ulps); and it has no 1 + tanh(y) cancellation for negative g (that
 * form gave 0 below g = -5.42; this one is within (4 + 8 |2y|) 2^-24 relative of the
 * definition, tests/test_ops.c). Order, each step rounded to float (-ffp-contract=off):
 * cube = ((0.044715 g) g) g, z = c2 (g + cube) with c2 = f32(2 sqrt(2/pi)), g / (1 + expf(-z)), * up.
 * Where expf(-z) overflows (z < -88.72, g < -10.06) the quotient is -0: the definition there is
 * below 3e-38 in magnitude. */
void cpu_geglu(const float *gate, const float *up, float *out, int n) {
    const float c2 = 1.5957691216057308f;   /* 2 * 0.7978845608028654, rounded once */
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        float cube = ((0.044715f * g) * g) * g;
        float z = c2 * (g + cube);
        out[i] = (g / (1.0f + expf(-z))) * up[i];
    }
}

void cpu_add(float *x, const float *y, int n) {
    for (int i = 0; i < n; i++) x[i] += y[i];
}

/* ---- attention ---------------------------------------------------------------------- */
typedef struct {
    cpu_be *c; const cpu_kv *kv; int layer; const float *q; int T, pos0, window; float scale; float *out;
    const float *kf, *vf;   /* NULL, or the f32 rows of positions pf.. (kv_convert_worker) */
    int pf, pl;
} attn_job;

/* Head kvh's row of head_dim K or V values at cache slot `slot`, as f32: a pointer into the
 * f32 cache in exact mode; else converted into tmp (f16: exact conversion, 8 at a time; int8:
 * d * q, one rounded product per value — the same values on every path). */
static inline const float *kv_row(const cpu_be *c, const cpu_kv *kv, const void *cache, size_t slot, int kvh, int n,
                                  float *tmp) {
    if (kv->exact) return (const float *)cache + slot * kv->kv_dim + (size_t)kvh * n;
    if (kv->kv_int8) {
        c->q8_row((const act_q8_0 *)((const uint8_t *)cache + slot * kv->kv_row_bytes) + (size_t)kvh * (n / 32), tmp, n);
        return tmp;
    }
    c->f16_row((const uint16_t *)cache + slot * kv->kv_dim + (size_t)kvh * n, tmp, n);
    return tmp;
}

/* Row of head kvh at position p: from the pass's f32 copy when there is one (the same values:
 * the conversion is exact and elementwise), else kv_row. */
static inline const float *kv_at(const attn_job *j, const float *f32, const void *cache, int p, int cap, int kvh, int n,
                                 float *tmp) {
    if (f32) return f32 + (size_t)(p - j->pf) * j->kv->kv_dim + (size_t)kvh * n;
    return kv_row(j->c, j->kv, cache, (size_t)(p % cap), kvh, n, tmp);
}

/* Positions pf..pl of the layer's K and V cache into kf / vf as f32 (threads over positions). */
static void kv_convert_worker(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    cpu_be *c = j->c;
    const cpu_kv *kv = j->kv;
    const int cap = kv->kv_cap[j->layer];
    long lo, hi;
    threadpool_split((long)(j->pl - j->pf + 1), ith, nth, 1, &lo, &hi);
    for (long i = lo; i < hi; i++) {
        size_t slot = (size_t)((j->pf + (int)i) % cap);
        float *kd = (float *)j->kf + (size_t)i * kv->kv_dim, *vd = (float *)j->vf + (size_t)i * kv->kv_dim;
        if (kv->kv_int8) {
            c->q8_row((const act_q8_0 *)((const uint8_t *)kv->k_cache[j->layer] + slot * kv->kv_row_bytes), kd, (int)kv->kv_dim);
            c->q8_row((const act_q8_0 *)((const uint8_t *)kv->v_cache[j->layer] + slot * kv->kv_row_bytes), vd, (int)kv->kv_dim);
        } else {
            c->f16_row((const uint16_t *)kv->k_cache[j->layer] + slot * kv->kv_dim, kd, (int)kv->kv_dim);
            c->f16_row((const uint16_t *)kv->v_cache[j->layer] + slot * kv->kv_dim, vd, (int)kv->kv_dim);
        }
    }
}

static void attn_worker(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    cpu_be *c = j->c;
    const int H = c->hp.n_heads, HD = c->hp.head_dim, G = H / c->hp.n_kv_heads;
    float *sc = c->scores + (size_t)ith * scores_stride(c->scores_n);
    float *row = c->kv_tmp + (size_t)ith * 33 * HD, *u = row + (size_t)32 * HD;   /* 32 rows, then a chunk's V sum */
    long lo, hi;
    threadpool_split((long)j->T * H, ith, nth, 1, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        int t = (int)(task / H), h = (int)(task % H), kvh = h / G;
        int last = j->pos0 + t;
        int first = j->window > 0 && last - j->window + 1 > 0 ? last - j->window + 1 : 0;
        const float *q = j->q + ((size_t)t * H + h) * HD;
        const void *K = j->kv->k_cache[j->layer], *V = j->kv->v_cache[j->layer];
        const int cap = j->kv->kv_cap[j->layer];
        const int nch = ATTN_N_CHUNKS(last - first + 1);
        float *cm = sc + c->scores_n, *cl = cm + ATTN_N_CHUNKS(c->scores_n), *ca = cl + ATTN_N_CHUNKS(c->scores_n);
        /* the scores, and each chunk's max m_c along the way (positions in order; blocks of 32
         * or 8 from `first` never straddle a chunk) */
        for (int ci = 0; ci < nch; ci++) cm[ci] = -INFINITY;
        int p0 = first;
        if (c->attn_avx2) {   /* 32 or eight positions' chains side by side (the same per-position bits) */
            const float *rows[32];
            for (; p0 + 31 <= last; p0 += 32) {
                for (int i = 0; i < 32; i++) rows[i] = kv_at(j, j->kf, K, p0 + i, cap, kvh, HD, row + (size_t)i * HD);
                attn_scores32_avx2(q, rows, HD, j->scale, sc + p0);
                float m = cm[(p0 - first) / ATTN_CHUNK];
                for (int i = 0; i < 32; i++) if (sc[p0 + i] > m) m = sc[p0 + i];
                cm[(p0 - first) / ATTN_CHUNK] = m;
            }
            for (; p0 + 7 <= last; p0 += 8) {
                for (int i = 0; i < 8; i++) rows[i] = kv_at(j, j->kf, K, p0 + i, cap, kvh, HD, row + (size_t)i * HD);
                attn_scores8_avx2(q, rows, HD, j->scale, sc + p0);
                float m = cm[(p0 - first) / ATTN_CHUNK];
                for (int i = 0; i < 8; i++) if (sc[p0 + i] > m) m = sc[p0 + i];
                cm[(p0 - first) / ATTN_CHUNK] = m;
            }
        }
        for (int p = p0; p <= last; p++) {
            const float *kr = kv_at(j, j->kf, K, p, cap, kvh, HD, row);
            float s = 0;
            for (int d = 0; d < HD; d++) s += q[d] * kr[d];
            s *= j->scale;
            sc[p] = s;
            if (s > cm[(p - first) / ATTN_CHUNK]) cm[(p - first) / ATTN_CHUNK] = s;
        }
        /* mx: the max of all scores = the max of the m_c (max is exact; a zero's sign cannot
         * change expf(m_c - mx)) */
        float mx = -INFINITY;
        for (int ci = 0; ci < nch; ci++) if (cm[ci] > mx) mx = cm[ci];
        /* the chunks of ATTN_CHUNK positions from `first` (src/model/attn_order.h): each
         * chunk's max m_c, e_p = expf(s_p - m_c) (into sc) and sum l_c; then the weights
         * w_c = l_c expf(m_c - mx) (mx, the max of all scores, is the max of the m_c), their
         * sum L, and a_c = w_c / L; then each chunk's V sum u_c with its own normalization,
         * added in chunk order: o[d] = o[d] + u_c[d] a_c. One chunk (<= ATTN_CHUNK positions):
         * a_0 = l_0 / l_0 = 1 and o = 0 + u_0 * 1 = u_0 (a chain from +0.0f is never -0.0f),
         * so the V sum goes straight into o, the old sequential order's operations. */
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = first + ci * ATTN_CHUNK, c1 = last - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : last;
            const float m = cm[ci];
            float l = 0.0f;
            for (int p = c0; p <= c1; p++) { sc[p] = expf(sc[p] - m); l += sc[p]; }
            cl[ci] = l;
        }
        float L = 0.0f;
        for (int ci = 0; ci < nch; ci++) { ca[ci] = cl[ci] * expf(cm[ci] - mx); L += ca[ci]; }
        for (int ci = 0; ci < nch; ci++) ca[ci] = ca[ci] / L;
        float *o = j->out + ((size_t)t * H + h) * HD;
        for (int d = 0; d < HD; d++) o[d] = 0.0f;
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = first + ci * ATTN_CHUNK, c1 = last - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : last;
            const float r = 1.0f / cl[ci];
            float *uc = nch == 1 ? o : u;
            if (nch > 1) for (int d = 0; d < HD; d++) u[d] = 0.0f;
            int pv = c0;
            if (c->attn_avx2) {   /* up to 32 V rows per call, eight d per vector: the same order per d */
                const float *rows[32];
                float w32[32];
                for (; pv + 7 <= c1;) {
                    const int nr = c1 - pv + 1 >= 32 ? 32 : 8;
                    for (int i = 0; i < nr; i++) {
                        w32[i] = sc[pv + i] * r;
                        rows[i] = kv_at(j, j->vf, V, pv + i, cap, kvh, HD, row + (size_t)i * HD);
                    }
                    attn_vacc_avx2(uc, rows, w32, nr, HD);
                    pv += nr;
                }
            }
            for (int p = pv; p <= c1; p++) {
                const float wgt = sc[p] * r;
                const float *vr = kv_at(j, j->vf, V, p, cap, kvh, HD, row);
                for (int d = 0; d < HD; d++) uc[d] += wgt * vr[d];
            }
            if (nch > 1) {
                const float a = ca[ci];
                for (int d = 0; d < HD; d++) o[d] += u[d] * a;
            }
        }
    }
}


/* ---- a decode step (T = 1) grouped by KV head -------------------------------------------
 * The same operations as attn_worker, bit for bit (docs/KERNELS.md "CPU attention order"),
 * in three pool jobs so that every K/V row is read and converted once per step (not once per
 * query head) and the work splits evenly over the threads at any depth:
 *   scores:  tasks (KV head, block of DEC_PB positions); per 32 positions the K rows are
 *            converted to f32 and transposed once, then each query head of the group takes
 *            its 32 scores (each score its own chain in d order, as the scalar loop);
 *   softmax: a task per head, the chunks of ATTN_CHUNK positions (src/model/attn_order.h) as
 *            attn_worker: per chunk its max m_c, e_p = expf(s_p - m_c) and their sum l_c in
 *            position order, w_c = l_c expf(m_c - max), the weights e_p * (1 / l_c) in place;
 *            then L = the w_c summed in chunk order and a_c = w_c / L (dec_a);
 *   values:  tasks (KV head, 32 d): per chunk u_c[d] = u_c[d] + w_p * v_p[d] in position
 *            order for each head of the group (the V rows' 32 d converted once per block of 32
 *            positions; chunks start at `first` + multiples of 256, so no block straddles two),
 *            then o[d] = o[d] + u_c[d] a_c in chunk order; one chunk: the sums go into o
 *            directly (a_0 = 1: the same bits). */
#define DEC_PB 256
#define DEC_MIN_POS 64   /* fewer positions: attn_worker (the extra pool job costs more) */
#define DEC_TMP_FLOATS(hd, g) ((size_t)32 * (hd) + 32 * 32 + 32 + (size_t)32 * (g))   /* + the chunk sums u_c */

typedef struct {
    cpu_be *c; const cpu_kv *kv; int layer; const float *q; float scale; float *out;
    int first, last;   /* the positions attended */
} dec_job;

/* Positions p0 .. p0+n-1 (n <= 32) of head kvh's V rows, values [d0, d0 + len) of each, as
 * f32 into dst[n][len]: the exact elementwise conversion of kv_row. */
static void dec_rows(const dec_job *j, const void *cache, int p0, int n, int kvh, int d0, int len, float *dst) {
    const cpu_kv *kv = j->kv;
    const int cap = kv->kv_cap[j->layer], HD = j->c->hp.head_dim;
    for (int i = 0; i < n; i++) {
        size_t slot = (size_t)((p0 + i) % cap);
        if (kv->kv_int8)
            j->c->q8_row((const act_q8_0 *)((const uint8_t *)cache + slot * kv->kv_row_bytes) + ((size_t)kvh * HD + d0) / 32,
                         dst + (size_t)i * len, len);
        else
            j->c->f16_row((const uint16_t *)cache + slot * kv->kv_dim + (size_t)kvh * HD + d0, dst + (size_t)i * len, len);
    }
}

static void dec_scores_worker(void *ctx, int ith, int nth) {
    dec_job *j = ctx;
    cpu_be *c = j->c;
    const int HD = c->hp.head_dim, G = c->hp.n_heads / c->hp.n_kv_heads, n = j->last - j->first + 1;
    const int nb = (n + DEC_PB - 1) / DEC_PB;
    float *kt = c->dec_tmp + (size_t)ith * DEC_TMP_FLOATS(HD, G), *s32 = kt + (size_t)32 * HD;
    const cpu_kv *kv = j->kv;
    const void *K = kv->k_cache[j->layer];
    const int cap = kv->kv_cap[j->layer];
    long lo, hi;
    threadpool_split((long)c->hp.n_kv_heads * nb, ith, nth, 1, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        const int kvh = (int)(task / nb), b = (int)(task % nb);
        const size_t koff = kv->kv_int8 ? (size_t)kvh * HD / 32 * sizeof(act_q8_0) : (size_t)kvh * HD * sizeof(uint16_t);
        const int b0 = j->first + b * DEC_PB, b1 = b0 + DEC_PB - 1 < j->last ? b0 + DEC_PB - 1 : j->last;
        for (int p0 = b0; p0 <= b1; p0 += 32) {
            const int m = b1 - p0 + 1 < 32 ? b1 - p0 + 1 : 32;
            const void *rows[32];
            for (int i = 0; i < m; i++)
                rows[i] = (const uint8_t *)K + (size_t)((p0 + i) % cap) * kv->kv_row_bytes + koff;
            attn_kt32_avx2(rows, m, kv->kv_int8, HD, kt);
            for (int h = kvh * G; h < (kvh + 1) * G; h++) {
                float *w = c->dec_w + (size_t)h * c->dec_n + (p0 - j->first);
                if (m == 32) attn_scores32t_avx2(j->q + (size_t)h * HD, kt, HD, j->scale, w);
                else {
                    attn_scores32t_avx2(j->q + (size_t)h * HD, kt, HD, j->scale, s32);
                    memcpy(w, s32, sizeof(float) * (size_t)m);
                }
            }
        }
    }
}

static void dec_softmax_worker(void *ctx, int ith, int nth) {
    dec_job *j = ctx;
    cpu_be *c = j->c;
    const int n = j->last - j->first + 1, nch = ATTN_N_CHUNKS(n);
    long lo, hi;
    threadpool_split((long)c->hp.n_heads, ith, nth, 1, &lo, &hi);
    for (long h = lo; h < hi; h++) {
        float *sc = c->dec_w + (size_t)h * c->dec_n, *ca = c->dec_a + (size_t)h * ATTN_N_CHUNKS(c->dec_n);
        /* the chunks' maxima (into ca for now) and mx, their max (= the max of all scores) */
        float mx = -INFINITY;
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = ci * ATTN_CHUNK, c1 = n - 1 - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : n - 1;
            float m = -INFINITY;
            for (int p = c0; p <= c1; p++) if (sc[p] > m) m = sc[p];
            ca[ci] = m;
            if (m > mx) mx = m;
        }
        float L = 0.0f;
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = ci * ATTN_CHUNK, c1 = n - 1 - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : n - 1;
            const float m = ca[ci];
            float l = 0.0f;
            expf_sub_avx2(sc + c0, c1 - c0 + 1, m);   /* sc[p] = expf(sc[p] - m): the host's expf bits, 8 at a time */
            for (int p = c0; p <= c1; p++) l += sc[p];
            const float r = 1.0f / l;
            for (int p = c0; p <= c1; p++) sc[p] *= r;
            ca[ci] = l * expf(m - mx);
            L += ca[ci];
        }
        for (int ci = 0; ci < nch; ci++) ca[ci] = ca[ci] / L;
    }
}

static void dec_values_worker(void *ctx, int ith, int nth) {
    dec_job *j = ctx;
    cpu_be *c = j->c;
    const int HD = c->hp.head_dim, G = c->hp.n_heads / c->hp.n_kv_heads, nd = HD / 32;
    const int nch = ATTN_N_CHUNKS(j->last - j->first + 1), ncap = ATTN_N_CHUNKS(c->dec_n);
    float *vb = c->dec_tmp + (size_t)ith * DEC_TMP_FLOATS(HD, G), *u = vb + 32 * 32;   /* u: [G][32] */
    long lo, hi;
    threadpool_split((long)c->hp.n_kv_heads * nd, ith, nth, 1, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        const int kvh = (int)(task / nd), d0 = (int)(task % nd) * 32;
        for (int h = kvh * G; h < (kvh + 1) * G; h++) memset(j->out + (size_t)h * HD + d0, 0, 32 * sizeof(float));
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = j->first + ci * ATTN_CHUNK, c1 = j->last - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : j->last;
            if (nch > 1) memset(u, 0, (size_t)G * 32 * sizeof(float));
            for (int p0 = c0; p0 <= c1; p0 += 32) {
                const int m = c1 - p0 + 1 < 32 ? c1 - p0 + 1 : 32;
                dec_rows(j, j->kv->v_cache[j->layer], p0, m, kvh, d0, 32, vb);
                for (int h = kvh * G; h < (kvh + 1) * G; h++)
                    attn_vacc32_avx2(nch == 1 ? j->out + (size_t)h * HD + d0 : u + (size_t)(h - kvh * G) * 32, vb,
                                     c->dec_w + (size_t)h * c->dec_n + (p0 - j->first), m);
            }
            if (nch > 1)
                for (int h = kvh * G; h < (kvh + 1) * G; h++) {
                    const float a = c->dec_a[(size_t)h * ncap + ci], *uh = u + (size_t)(h - kvh * G) * 32;
                    float *o = j->out + (size_t)h * HD + d0;
                    for (int d = 0; d < 32; d++) o[d] += uh[d] * a;
                }
        }
    }
}

/* The decode step's attention (k/v already stored) by the grouped path; -1 when it does not
 * apply (then attn_worker runs: the same bits). */
static int attn_decode_grouped(cpu_be *c, const cpu_kv *kv, int layer, const float *q, int pos, float scale, int window,
                               float *out) {
    const int first = window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0, n = pos - first + 1;
    if (!c->attn_dec || kv->exact || n < DEC_MIN_POS) return -1;
    if (n > c->dec_n || !c->dec_w) {   /* grown by doubling, up to the cache's positions */
        int want = c->dec_n * 2 > n ? c->dec_n * 2 : n < 1024 ? 1024 : n;
        if (want > kv->n_ctx && n <= kv->n_ctx) want = kv->n_ctx;
        /* the scores / weights, then each head's a_c */
        float *nw = st_malloc((size_t)c->hp.n_heads * ((size_t)want + ATTN_N_CHUNKS(want)) * sizeof(float));
        if (!nw) return -1;
        st_free(c->dec_w); c->dec_w = nw; c->dec_n = want;
        c->dec_a = nw + (size_t)c->hp.n_heads * want;
    }
    if (!c->dec_tmp) {
        c->dec_tmp = st_malloc((size_t)threadpool_size(c->tp) *
                               DEC_TMP_FLOATS(c->hp.head_dim, c->hp.n_heads / c->hp.n_kv_heads) * sizeof(float));
        if (!c->dec_tmp) return -1;
    }
    dec_job j = { c, kv, layer, q, scale, out, first, pos };
    threadpool_run(c->tp, dec_scores_worker, &j);
    threadpool_run(c->tp, dec_softmax_worker, &j);
    threadpool_run(c->tp, dec_values_worker, &j);
    return 0;
}

/* ---- a prompt pass (T > 1) in query tiles grouped by KV head ----------------------------
 * The same operations as attn_worker for every (token, head), bit for bit (docs/KERNELS.md
 * "CPU attention order"), split so that a K/V row is converted once per (KV head, tile) and
 * not once per (token, head): a task is a KV head and a tile of consecutive tokens of the pass
 * (its rows: every token's G query heads, R = tokens * G rows), and it walks the chunks of
 * ATTN_CHUNK positions in order. Per chunk:
 *   scores:  per 32 positions the K rows are converted and transposed once (attn_kt32_avx2),
 *            then each row that attends to the block takes its 32 scores (two rows at a time,
 *            each score its own chain in d order, from 0.0f, then * scale);
 *   softmax: per row, over its positions of the chunk (attn_softmax_chunk_avx2): m_c (`s > m`
 *            from -inf, eight lanes then over the lanes), e_p = expf(s_p - m_c) eight at a time
 *            (expf_sub_avx2: the host's expf bits), l_c = 0.0f + e_first + ... in order, the
 *            weights e_p * (1 / l_c);
 *   values:  per 32 positions the V rows are converted once into f32, and every row adds its
 *            weighted rows into its u_c (per d in position order; two rows at a time).
 * Then per row the merge of attn_worker: M = the max of the m_c, w_c = l_c expf(m_c - M), L
 * their sum in chunk order, a_c = w_c / L, o[d] = 0.0f + u_0[d] a_0 + ... (one chunk: o = u_0,
 * the sum from 0.0f itself). Only for rows attending to [0, last] (no window cut: a sliding
 * window's chunks start at every token's own first position), head_dim % 32 == 0, f16 / int8
 * caches. Tasks are taken dynamically (an atomic counter), the largest tiles first: who
 * computes a row never changes its operations. */
typedef struct {
    cpu_be *c; const cpu_kv *kv; int layer; const float *q; int T, pos0; float scale; float *out;
    int tq, ntiles;         /* tokens per tile, tiles */
    atomic_int next;        /* the next task */
} pt_job;

static void pt_worker(void *ctx, int ith, int nth) {
    (void)nth;
    pt_job *j = ctx;
    cpu_be *c = j->c;
    const cpu_kv *kv = j->kv;
    const int H = c->hp.n_heads, HD = c->hp.head_dim, KVH = c->hp.n_kv_heads, G = H / KVH;
    const int RM = c->pt_rows, NC = c->pt_nch, cap = kv->kv_cap[j->layer];
    float *kt = c->pt_tmp + (size_t)ith * c->pt_stride, *vb = kt + (size_t)32 * HD, *S = vb + (size_t)32 * HD;
    float *cm = S + (size_t)RM * ATTN_CHUNK, *cl = cm + (size_t)RM * NC, *U = cl + (size_t)RM * NC;   /* U: [RM][NC][HD] */
    const void *K = kv->k_cache[j->layer], *V = kv->v_cache[j->layer];
    const int ntasks = j->ntiles * KVH;
    for (;;) {
        const int task = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (task >= ntasks) break;
        const int tile = j->ntiles - 1 - task / KVH, kvh = task % KVH;
        const int t0 = tile * j->tq, nt = j->T - t0 < j->tq ? j->T - t0 : j->tq, R = nt * G;
        const int l0 = j->pos0 + t0, lmax = l0 + nt - 1;   /* row r's token attends to [0, l0 + r / G] */
        const int nch = ATTN_N_CHUNKS(lmax + 1);
        const size_t koff = kv->kv_int8 ? (size_t)kvh * HD / 32 * sizeof(act_q8_0) : (size_t)kvh * HD * sizeof(uint16_t);
#define PT_Q(r) (j->q + ((size_t)(t0 + (r) / G) * H + (size_t)kvh * G + (r) % G) * HD)
#define PT_U(r, ci) (U + ((size_t)(r) * NC + (ci)) * HD)
        for (int ci = 0; ci < nch; ci++) {
            const int c0 = ci * ATTN_CHUNK, c1 = lmax - c0 >= ATTN_CHUNK ? c0 + ATTN_CHUNK - 1 : lmax;
            const int r0 = (c0 > l0 ? c0 - l0 : 0) * G;   /* the rows attending to this chunk: r0..R-1 */
            for (int p0 = c0; p0 <= c1; p0 += 32) {
                const int m = c1 - p0 + 1 < 32 ? c1 - p0 + 1 : 32;
                const void *rows[32];
                for (int i = 0; i < m; i++) rows[i] = (const uint8_t *)K + (size_t)((p0 + i) % cap) * kv->kv_row_bytes + koff;
                attn_kt32_avx2(rows, m, kv->kv_int8, HD, kt);
                int r = (p0 > l0 ? p0 - l0 : 0) * G;   /* rows whose token attends to p0 */
                for (; r + 1 < R; r += 2)
                    attn_scores32t2_avx2(PT_Q(r), PT_Q(r + 1), kt, HD, j->scale, S + (size_t)r * ATTN_CHUNK + (p0 - c0),
                                         S + (size_t)(r + 1) * ATTN_CHUNK + (p0 - c0));
                if (r < R) attn_scores32t_avx2(PT_Q(r), kt, HD, j->scale, S + (size_t)r * ATTN_CHUNK + (p0 - c0));
            }
            for (int r = r0; r < R; r++) {
                const int e1 = (l0 + r / G < c1 ? l0 + r / G : c1) - c0;   /* the row's last position in the chunk */
                attn_softmax_chunk_avx2(S + (size_t)r * ATTN_CHUNK, e1 + 1, 1, &cm[(size_t)r * NC + ci], &cl[(size_t)r * NC + ci]);
                memset(PT_U(r, ci), 0, (size_t)HD * sizeof(float));
            }
            for (int p0 = c0; p0 <= c1; p0 += 32) {
                const int m = c1 - p0 + 1 < 32 ? c1 - p0 + 1 : 32;
                for (int i = 0; i < m; i++) {
                    const size_t slot = (size_t)((p0 + i) % cap);
                    if (kv->kv_int8)
                        c->q8_row((const act_q8_0 *)((const uint8_t *)V + slot * kv->kv_row_bytes) + (size_t)kvh * (HD / 32),
                                  vb + (size_t)i * HD, HD);
                    else c->f16_row((const uint16_t *)V + slot * kv->kv_dim + (size_t)kvh * HD, vb + (size_t)i * HD, HD);
                }
                int r = (p0 > l0 ? p0 - l0 : 0) * G;
                for (; r < R; r += 2) {
                    const int n0 = l0 + r / G - p0 + 1 < m ? l0 + r / G - p0 + 1 : m;   /* its positions in the block */
                    const float *w0 = S + (size_t)r * ATTN_CHUNK + (p0 - c0);
                    if (r + 1 == R) { attn_vaccrow_avx2(PT_U(r, ci), vb, HD, w0, n0); break; }
                    const int n1 = l0 + (r + 1) / G - p0 + 1 < m ? l0 + (r + 1) / G - p0 + 1 : m;   /* >= n0 */
                    const float *w1 = S + (size_t)(r + 1) * ATTN_CHUNK + (p0 - c0);
                    attn_vaccrow2_avx2(PT_U(r, ci), PT_U(r + 1, ci), vb, HD, w0, w1, n0);
                    if (n1 > n0) attn_vaccrow_avx2(PT_U(r + 1, ci), vb + (size_t)n0 * HD, HD, w1 + n0, n1 - n0);
                }
            }
        }
        for (int r = 0; r < R; r++) {   /* the merge, chunks in order */
            const int nr = ATTN_N_CHUNKS(l0 + r / G + 1);
            float *o = j->out + ((size_t)(t0 + r / G) * H + (size_t)kvh * G + r % G) * HD;
            if (nr == 1) { memcpy(o, PT_U(r, 0), (size_t)HD * sizeof(float)); continue; }
            const float *rm = cm + (size_t)r * NC;
            float *rw = cl + (size_t)r * NC;   /* l_c, then w_c = l_c expf(m_c - M) */
            float mx = -INFINITY, L = 0.0f;
            for (int ci = 0; ci < nr; ci++) if (rm[ci] > mx) mx = rm[ci];
            for (int ci = 0; ci < nr; ci++) { rw[ci] = rw[ci] * expf(rm[ci] - mx); L += rw[ci]; }
            for (int d = 0; d < HD; d++) o[d] = 0.0f;
            for (int ci = 0; ci < nr; ci++) {
                const float a = rw[ci] / L, *u = PT_U(r, ci);
                for (int d = 0; d < HD; d++) o[d] += u[d] * a;
            }
        }
#undef PT_Q
#undef PT_U
    }
}

/* A prompt pass's attention (k/v already stored) by the tiles above; -1 when they do not apply
 * (then attn_worker runs: the same bits). */
static int attn_prompt_tiled(cpu_be *c, const cpu_kv *kv, int layer, const float *q, int T, int pos0, float scale,
                             int window, float *out) {
    if (!c->qtile || kv->exact || T < 2 || (window > 0 && pos0 + T > window)) return -1;
    const int G = c->hp.n_heads / c->hp.n_kv_heads, HD = c->hp.head_dim;
    int tq = c->qtile / G;
    if (tq < 1) tq = 1;
    if (tq > T) tq = T;
    const int R = tq * G, nch = ATTN_N_CHUNKS(pos0 + T);
    if (!c->pt_tmp || R > c->pt_rows || nch > c->pt_nch) {   /* grown: chunks by doubling, up to the cache's */
        const int rows = R > c->pt_rows ? R : c->pt_rows, kcap = ATTN_N_CHUNKS(kv->n_ctx);
        int nc = nch <= c->pt_nch ? c->pt_nch : nch < 2 * c->pt_nch ? 2 * c->pt_nch : nch;
        if (nc < 4) nc = 4;
        if (nc > kcap && nch <= kcap) nc = kcap;
        const size_t stride = (size_t)64 * HD + (size_t)rows * ATTN_CHUNK + (size_t)rows * nc * (2 + (size_t)HD);
        float *nb = st_malloc((size_t)threadpool_size(c->tp) * stride * sizeof(float));
        if (!nb) return -1;
        st_free(c->pt_tmp); c->pt_tmp = nb; c->pt_stride = stride; c->pt_rows = rows; c->pt_nch = nc;
    }
    pt_job j = { c, kv, layer, q, T, pos0, scale, out, tq, (T + tq - 1) / tq, 0 };
    atomic_init(&j.next, 0);
    threadpool_run(c->tp, pt_worker, &j);
    return 0;
}

/* Store k, v of the T tokens at positions pos0.. into the cache kv (the backend's own, or
 * another session's), then for each token t and head h: out[t][h] = softmax(q[t][h] .
 * K[0..pos0+t] * scale) V, over the window if window > 0. */
void backend_cpu_attention(backend *be, void *kvp, int layer, const float *q, const float *k, const float *v, int T,
                           int pos0, float scale, int window, float *out) {
    cpu_be *c = CB(be);
    cpu_kv *kv = kvp;
    const size_t kd_n = kv->kv_dim;
    if (kv->n_ctx > c->scores_n) {   /* another session's longer cache: scores for all of it */
        float *ns = st_malloc((size_t)threadpool_size(c->tp) * scores_stride(kv->n_ctx) * sizeof(float));
        if (!ns) {
            for (size_t i = 0; i < (size_t)T * c->hp.n_heads * c->hp.head_dim; i++) out[i] = NAN;   /* never silent */
            return;
        }
        st_free(c->scores); c->scores = ns; c->scores_n = kv->n_ctx;
    }
    for (int t = 0; t < T; t++) {
        size_t slot = (size_t)((pos0 + t) % kv->kv_cap[layer]), off = slot * kd_n;
        const float *kt = k + (size_t)t * kd_n, *vt = v + (size_t)t * kd_n;
        if (kv->exact) {
            memcpy((float *)kv->k_cache[layer] + off, kt, kd_n * sizeof(float));
            memcpy((float *)kv->v_cache[layer] + off, vt, kd_n * sizeof(float));
        } else if (kv->kv_int8) {   /* blocks of 32 never straddle heads: head_dim % 32 == 0 */
            act_quantize_row(ACT_Q8_0, kt, (uint8_t *)kv->k_cache[layer] + slot * kv->kv_row_bytes, (int64_t)kd_n);
            act_quantize_row(ACT_Q8_0, vt, (uint8_t *)kv->v_cache[layer] + slot * kv->kv_row_bytes, (int64_t)kd_n);
        } else {
            uint16_t *kd = (uint16_t *)kv->k_cache[layer] + off, *vd = (uint16_t *)kv->v_cache[layer] + off;
            for (size_t i = 0; i < kd_n; i++) { kd[i] = f32_to_fp16(kt[i]); vd[i] = f32_to_fp16(vt[i]); }
        }
    }
    if (T == 1 && attn_decode_grouped(c, kv, layer, q, pos0, scale, window, out) == 0) return;
    if (T > 1 && attn_prompt_tiled(c, kv, layer, q, T, pos0, scale, window, out) == 0) return;
    attn_job j = { c, kv, layer, q, T, pos0, window, scale, out, NULL, NULL, 0, 0 };
    /* Every (token, head) task of the pass reads the same rows, so they are converted to f32
     * once for the pass (before: T * n_heads / n_kv_heads times each, into an L1-sized buffer
     * per task). The f32 copy is bounded (64 MiB, else the per-task path), grown by doubling. */
    if (!kv->exact && c->kv_pass) {
        int pl = pos0 + T - 1, pf = window > 0 && pos0 - window + 1 > 0 ? pos0 - window + 1 : 0;
        size_t rows = (size_t)(pl - pf + 1);
        /* one token (decode): only while the copy stays cache-sized; deeper, converting each row
         * per task (G times, in L1) costs less CPU than writing and reading the copy (SmolLM2 at
         * 4096 positions, one thread: 1.8 vs 3.0-3.4 ms per layer; equal at 512-1024) */
        const size_t bytes = rows * kd_n * 2 * sizeof(float);
        if (bytes <= ((size_t)64 << 20) && (T > 1 || bytes <= ((size_t)2 << 20))) {
            if (rows > c->kv_f32_rows) {
                size_t want = c->kv_f32_rows * 2 > rows ? c->kv_f32_rows * 2 : rows < 256 ? 256 : rows;
                if (want * kd_n * 2 * sizeof(float) > ((size_t)64 << 20)) want = rows;
                float *nb = st_malloc(want * kd_n * 2 * sizeof(float));
                if (nb) { st_free(c->kv_f32); c->kv_f32 = nb; c->kv_f32_rows = want; }
            }
            if (rows <= c->kv_f32_rows) {
                j.kf = c->kv_f32; j.vf = c->kv_f32 + c->kv_f32_rows * kd_n; j.pf = pf; j.pl = pl;
                threadpool_run(c->tp, kv_convert_worker, &j);
            }
        }
    }
    threadpool_run(c->tp, attn_worker, &j);
}

/* ==== the blocks: the model, op by op, in its order ======================================== */

/* The activation buffers for T columns and the logits for n_logits rows (fwd_buffer_sizes: the
 * one formula), grown when a wider pass comes (contents kept: a test may have set x before a
 * block). -1: out of memory. */
static int cpu_reserve(cpu_be *c, int T, int n_logits) {
    if (T <= c->cap_T && (size_t)n_logits * c->hp.n_vocab <= c->sz.logits) return 0;
    fwd_sizes nz, lz;
    fwd_buffer_sizes(&c->hp, T > c->cap_T ? T : c->cap_T, &nz);
    /* the logits: the rows a head call asks for (a prompt's passes ask for one) */
    fwd_buffer_sizes(&c->hp, n_logits, &lz);
    nz.logits = lz.logits > c->sz.logits ? lz.logits : c->sz.logits;
    float **bufs[] = { &c->x, &c->xb, &c->q, &c->k, &c->v, &c->att, &c->hb, &c->hb2, &c->moe_out, &c->logits };
    size_t ns[] = { nz.x, nz.xb, nz.q, nz.k, nz.v, nz.att, nz.hb, nz.hb2, nz.moe_out, nz.logits };
    size_t os[] = { c->sz.x, c->sz.xb, c->sz.q, c->sz.k, c->sz.v, c->sz.att, c->sz.hb, c->sz.hb2, c->sz.moe_out,
                    c->sz.logits };
    float *nb[sizeof ns / sizeof ns[0]];
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        nb[i] = ns[i] ? st_malloc(ns[i] * sizeof(float)) : NULL;
        if (ns[i] && !nb[i]) {
            while (i--) st_free(nb[i]);
            return -1;
        }
    }
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        if (*bufs[i] && os[i]) memcpy(nb[i], *bufs[i], os[i] * sizeof(float));
        st_free(*bufs[i]);
        *bufs[i] = nb[i];
    }
    c->sz = nz;
    if (T > c->cap_T) c->cap_T = T;
    return 0;
}

static void mv(cpu_be *c, const weight *W, const float *x, int T, float *y) {
    matvec(c->tp, W->data, W->type, W->n_in, W->n_out, x, T, y, c->exact ? MATVEC_EXACT : MATVEC_DEFAULT);
}
static void norm(cpu_be *c, const float *x, const weight *w, float *y, int rows, int n) {
    cpu_rmsnorm(x, (const float *)w->data, y, rows, n, c->hp.rms_eps);   /* norms are F32 (checked at bind) */
}

static void blk_embed(backend *be, const int32_t *ids, const fwd_batch *b) {
    cpu_be *c = CB(be);
    if (cpu_reserve(c, b->T, 0)) {
        fprintf(stderr, "strata: out of memory for the activations of a %d-column pass\n", b->T);
        return;   /* the blocks below see cap_T < T and write NaN logits */
    }
    cpu_embed(&c->w->tok_embd, ids, b->T, c->x, c->hp.embd_scale);
}

static void blk_attn(backend *be, int l, const fwd_batch *b) {
    cpu_be *c = CB(be);
    if (cpu_reserve(c, b->T, 0)) return;
    const hparams *hp = &c->hp;
    const layer_weights *L = &c->w->layers[l];
    const int T = b->T, E = hp->n_embd, H = hp->n_heads, KVH = hp->n_kv_heads, HD = hp->head_dim;
    norm(c, c->x, &L->attn_norm, c->xb, T, E);
    mv(c, &L->wq, c->xb, T, c->q);                         /* q[T][H*HD]   */
    mv(c, &L->wk, c->xb, T, c->k);                         /* k[T][KVH*HD] */
    mv(c, &L->wv, c->xb, T, c->v);                         /* v[T][KVH*HD] */
    if (L->q_norm.data) norm(c, c->q, &L->q_norm, c->q, T * H, HD);
    if (L->k_norm.data) norm(c, c->k, &L->k_norm, c->k, T * KVH, HD);
    const float *inv = L->sliding ? c->rope_inv_freq_local : c->rope_inv_freq;
    /* positions and KV caches are per sequence */
    for (int s = 0, t0 = 0; s < b->n_seq; t0 += b->seq[s].n, s++) {
        const fwd_seq *S = &b->seq[s];
        size_t qo = (size_t)t0 * H * HD, ko = (size_t)t0 * KVH * HD;
        cpu_rope(c->q + qo, S->n, H, HD, hp->n_rot, hp->rope_neox, S->pos0, inv, hp->rope_scale);
        cpu_rope(c->k + ko, S->n, KVH, HD, hp->n_rot, hp->rope_neox, S->pos0, inv, hp->rope_scale);
        backend_cpu_attention(be, S->kv, l, c->q + qo, c->k + ko, c->v + ko, S->n, S->pos0, hp->attn_scale,
                              L->sliding ? hp->sliding_window : 0, c->att + qo);
    }
    mv(c, &L->wo, c->att, T, c->xb);                       /* xb[T][E] */
    if (L->post_attn_norm.data) norm(c, c->xb, &L->post_attn_norm, c->xb, T, E);
    cpu_add(c->x, c->xb, T * E);
}

static void blk_ffn(backend *be, int l, const fwd_batch *b) {
    cpu_be *c = CB(be);
    if (cpu_reserve(c, b->T, 0)) return;
    const hparams *hp = &c->hp;
    const layer_weights *L = &c->w->layers[l];
    const int T = b->T, E = hp->n_embd;
    norm(c, c->x, &L->ffn_norm, c->xb, T, E);
    float *out = c->xb;                                    /* [T][E] */
    if (L->gate_inp.data) {                                /* Mixture-of-Experts: router + k experts */
        /* moe_ffn takes up to MOE_MAX_T tokens; a wider pass runs in slices of that (a
         * token's result never depends on the others in its slice) */
        for (int t0 = 0; t0 < T; t0 += MOE_MAX_T) {
            int n = T - t0 < MOE_MAX_T ? T - t0 : MOE_MAX_T;
            if (moe_ffn(c->tp, L, hp->n_experts_used, c->xb + (size_t)t0 * E, n, c->moe_out + (size_t)t0 * E,
                        c->exact ? MATVEC_EXACT : MATVEC_DEFAULT, MATVEC_KERNEL_AUTO, MOE_AUTO, NULL, NULL) != 0)
                for (size_t i = 0; i < (size_t)n * E; i++) c->moe_out[(size_t)t0 * E + i] = NAN;   /* visible, never silent */
        }
        out = c->moe_out;
    } else {
        mv(c, &L->gate, c->xb, T, c->hb);                  /* hb[T][F]  */
        mv(c, &L->up, c->xb, T, c->hb2);                   /* hb2[T][F] */
        if (hp->ffn_gelu) cpu_geglu(c->hb, c->hb2, c->hb, T * hp->n_ff);
        else cpu_swiglu(c->hb, c->hb2, c->hb, T * hp->n_ff);
        mv(c, &L->down, c->hb, T, c->xb);                  /* xb[T][E]  */
    }
    if (L->post_ffn_norm.data) norm(c, out, &L->post_ffn_norm, out, T, E);
    cpu_add(c->x, out, T * E);
}

static void blk_keep_cols(backend *be, int from, int T) {
    cpu_be *c = CB(be);
    const size_t E = (size_t)c->hp.n_embd;
    memmove(c->x, c->x + (size_t)from * E, sizeof(float) * (size_t)(T - from) * E);
}

static int blk_head(backend *be, const fwd_batch *b, int from) {
    cpu_be *c = CB(be);
    const int E = c->hp.n_embd, n = b->T - from;
    if (n > FWD_MAX_LOGITS || cpu_reserve(c, b->T, n)) return -1;
    norm(c, c->x + (size_t)from * E, &c->w->output_norm, c->xb, n, E);
    mv(c, &c->w->output, c->xb, n, c->logits);
    return 0;
}

static const float *cpu_logits(backend *be) { return CB(be)->logits; }

static int cpu_max_rewind(const backend *be) {
    const cpu_be *c = (const cpu_be *)be->impl;
    int m = 1 << 30;
    for (int l = 0; l < c->hp.n_layers; l++)
        if (c->kv.kv_cap[l] < c->n_ctx && c->kv.kv_cap[l] - c->hp.sliding_window + 1 < m)
            m = c->kv.kv_cap[l] - c->hp.sliding_window + 1;
    return m;
}

/* Rows 0 .. n-1 of every layer, by slot (position p in slot p % cap): a ring layer gets its
 * last cap positions before n (rows src overwrote since lie outside any window dst reads). */
static int cpu_kv_copy(backend *dst, const backend *src, int n) {
    cpu_kv *d = &CB(dst)->kv;
    const cpu_kv *s = &((const cpu_be *)src->impl)->kv;
    if (dst == src || n < 0 || n > d->n_ctx || n > s->n_ctx || d->n_layers != s->n_layers ||
        d->kv_row_bytes != s->kv_row_bytes || d->exact != s->exact || d->kv_int8 != s->kv_int8)
        return -1;
    const size_t rb = d->kv_row_bytes;
    for (int l = 0; l < d->n_layers; l++) {
        int dc = d->kv_cap[l], sc = s->kv_cap[l], cap = dc < sc ? dc : sc;
        if (dc == d->n_ctx && sc == s->n_ctx) {   /* no ring: one block per cache */
            memcpy(d->k_cache[l], s->k_cache[l], (size_t)n * rb);
            memcpy(d->v_cache[l], s->v_cache[l], (size_t)n * rb);
            continue;
        }
        for (int p = n - cap > 0 ? n - cap : 0; p < n; p++) {
            memcpy((uint8_t *)d->k_cache[l] + (size_t)(p % dc) * rb, (const uint8_t *)s->k_cache[l] + (size_t)(p % sc) * rb, rb);
            memcpy((uint8_t *)d->v_cache[l] + (size_t)(p % dc) * rb, (const uint8_t *)s->v_cache[l] + (size_t)(p % sc) * rb, rb);
        }
    }
    return 0;
}

static size_t cpu_kv_bytes(const backend *be, size_t *per_pos) {
    const cpu_kv *kv = &((const cpu_be *)be->impl)->kv;
    size_t total = 0;
    for (int l = 0; l < kv->n_layers; l++) total += 2 * (size_t)kv->kv_cap[l] * kv->kv_row_bytes;
    if (per_pos) *per_pos = 2 * (size_t)kv->n_layers * kv->kv_row_bytes;
    return total;
}

static void cpu_free(backend *be);

static const backend_ops cpu_ops = {
    .name = "cpu", .embed = blk_embed, .attn_block = blk_attn, .ffn_block = blk_ffn, .head = blk_head,
    .logits = cpu_logits, .head_argmax = NULL, .decode_step = NULL, .max_rewind = cpu_max_rewind, .free = cpu_free,
    .kv_copy = cpu_kv_copy, .kv_bytes = cpu_kv_bytes, .verify_step = NULL, .keep_cols = blk_keep_cols,
};

backend *backend_cpu_new(const hparams *hp, const model_weights *w, int n_ctx, void *tp, int exact, int kv_int8,
                         char *err, size_t errlen) {
    if (kv_int8 && exact) {
        snprintf(err, errlen, "the int8 KV cache is not used in reference mode (--exact keeps an f32 cache)");
        return NULL;
    }
    if (kv_int8 && hp->head_dim % 32) {
        snprintf(err, errlen, "the int8 KV cache needs head_dim %% 32 == 0 (this model: %d)", hp->head_dim);
        return NULL;
    }
    backend *be = st_calloc(1, sizeof *be);
    cpu_be *c = st_calloc(1, sizeof *c);
    if (!be || !c) goto oom;
    be->ops = &cpu_ops; be->impl = c; be->kv = &c->kv;
    c->hp = *hp; c->w = w; c->n_ctx = n_ctx; c->exact = exact; c->tp = tp;
    cpu_kv *kv = &c->kv;
    kv->n_layers = hp->n_layers; kv->n_ctx = n_ctx; kv->window = hp->sliding_window;
    kv->exact = exact; kv->kv_int8 = kv_int8;
    kv->kv_dim = (size_t)hp->n_kv_heads * hp->head_dim;
    kv->kv_row_bytes = exact ? kv->kv_dim * sizeof(float) : kv_int8 ? act_row_bytes(ACT_Q8_0, (int64_t)kv->kv_dim)
                                                                  : kv->kv_dim * sizeof(uint16_t);
    kv->k_cache = st_calloc((size_t)hp->n_layers, sizeof(void *));
    kv->kv_cap = st_calloc((size_t)hp->n_layers, sizeof(int));
    kv->v_cache = st_calloc((size_t)hp->n_layers, sizeof(void *));
    c->scores = st_malloc((size_t)threadpool_size(tp) * scores_stride(n_ctx) * sizeof(float));
    c->scores_n = n_ctx;
    c->kv_tmp = st_malloc((size_t)threadpool_size(tp) * 33 * (size_t)hp->head_dim * sizeof(float));
    c->f16_row = f16_to_f32_row_get();
    c->q8_row = q8_to_f32_row_get();
    c->kv_pass = env_bool(ENV_CPU_KV_PASS);
    c->attn_avx2 = cpu_has_avx2_fma() && hp->head_dim % 8 == 0 && strcmp(env_str(ENV_CPU_ATTN), "scalar") != 0;
    c->attn_dec = c->attn_avx2 && hp->head_dim % 32 == 0 && !strcmp(env_str(ENV_CPU_ATTN), "auto");
    c->qtile = c->attn_dec && env_int(ENV_CPU_ATTN_QTILE) > 0 ? (int)env_int(ENV_CPU_ATTN_QTILE) : 0;
    if (c->attn_dec) (void)expf_avx2_mode();   /* the softmax's expf 8 at a time: checked once per process, here */
    c->rope_inv_freq = st_malloc((size_t)(hp->n_rot / 2 + 1) * sizeof(float));
    c->rope_inv_freq_local = st_malloc((size_t)(hp->n_rot / 2 + 1) * sizeof(float));
    if (!kv->k_cache || !kv->v_cache || !kv->kv_cap || !c->scores || !c->kv_tmp || !c->rope_inv_freq ||
        !c->rope_inv_freq_local)
        goto oom;
    for (int l = 0; l < hp->n_layers; l++) {
        int ring = hp->sliding_window + KV_RING_SLACK;
        kv->kv_cap[l] = hparams_layer_sliding(hp, l) && ring < n_ctx ? ring : n_ctx;
        kv->k_cache[l] = st_malloc((size_t)kv->kv_cap[l] * kv->kv_row_bytes);
        kv->v_cache[l] = st_malloc((size_t)kv->kv_cap[l] * kv->kv_row_bytes);
        if (!kv->k_cache[l] || !kv->v_cache[l]) goto oom;
    }
    cpu_rope_inv_freq(hp->rope_base, hp->n_rot, c->rope_inv_freq);
    cpu_rope_inv_freq(hp->rope_base_local, hp->n_rot, c->rope_inv_freq_local);
    /* activation buffers for FWD_INIT_T columns; a wider pass grows them (cpu_reserve) */
    if (cpu_reserve(c, FWD_INIT_T, FWD_INIT_T)) {
        snprintf(err, errlen, "out of memory allocating activations");
        cpu_free(be);
        return NULL;
    }
    return be;
oom:
    snprintf(err, errlen, "out of memory allocating the KV cache for %d positions (%.1f MiB): use a smaller --ctx",
             n_ctx, 2.0 * hp->n_layers * n_ctx * (double)hp->n_kv_heads * hp->head_dim *
                        (exact ? 4.0 : kv_int8 ? 36.0 / 32.0 : 2.0) / 1048576.0);
    if (be) { be->impl = c; cpu_free(be); }
    else st_free(c);
    return NULL;
}

static void cpu_free(backend *be) {
    if (!be) return;
    cpu_be *c = CB(be);
    if (c) {
        cpu_kv *kv = &c->kv;
        for (int l = 0; kv->k_cache && l < c->hp.n_layers; l++) st_free(kv->k_cache[l]);
        for (int l = 0; kv->v_cache && l < c->hp.n_layers; l++) st_free(kv->v_cache[l]);
        st_free(kv->k_cache); st_free(kv->v_cache); st_free(kv->kv_cap); st_free(c->scores); st_free(c->kv_tmp);
        st_free(c->kv_f32); st_free(c->dec_w); st_free(c->dec_tmp); st_free(c->pt_tmp);
        st_free(c->rope_inv_freq); st_free(c->rope_inv_freq_local);
        st_free(c->x); st_free(c->xb); st_free(c->q); st_free(c->k); st_free(c->v); st_free(c->att);
        st_free(c->hb); st_free(c->hb2); st_free(c->moe_out); st_free(c->logits);
        st_free(c);
    }
    st_free(be);
}

float *backend_cpu_x(backend *be) { return CB(be)->x; }

const void *backend_cpu_kv_layer(const backend *be, int layer, int which, size_t *bytes_per_pos) {
    const cpu_be *c = (const cpu_be *)be->impl;
    *bytes_per_pos = c->kv.kv_row_bytes;
    return which ? c->kv.v_cache[layer] : c->kv.k_cache[layer];
}
