/* CPU backend: the reference implementation of backend_ops, multithreaded over rows/heads.
 * Each op's result for a token is independent of T and of the thread count (batch
 * invariance): work is split across threads, never the order of a sum. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "model/backend.h"
#include "cpu/matvec.h"
#include "cpu/moe.h"
#include "cpu/threadpool.h"
#include "cpu/f16conv.h"
#include "cpu/kernels.h"
#include "quant/quant.h"
#include "core/util.h"
#include "core/env.h"

typedef struct {
    hparams hp;
    int n_ctx;
    int exact;              /* f32 KV cache + exact matvec */
    int kv_int8;            /* KV rows as act_q8_0 blocks (int8 + f32 scale per 32 values) */
    threadpool *tp;
    size_t kv_dim;          /* n_kv_heads * head_dim */
    size_t kv_row_bytes;    /* bytes of one position's K (or V): kv_dim * 2 (f16), * 4 (f32), / 32 * 36 (int8) */
    void **k_cache, **v_cache;   /* per layer: [kv_cap[l]][kv_row_bytes] */
    int *kv_cap;            /* per layer: n_ctx, or a ring of window + KV_RING_SLACK positions */
    float *scores;          /* per thread: [n_ctx] */
    float *kv_tmp;          /* per thread: [8][head_dim] K rows (8 positions) or one V row, as f32 */
    float *kv_f32;          /* the layer's K and V rows of the pass's positions, converted to f32
                               once per pass ([2][kv_f32_rows][kv_dim]), not per (token, head) */
    size_t kv_f32_rows;
    int kv_pass;            /* STRATA_CPU_KV_PASS: use kv_f32 (0: convert per task) */
    f16_row_fn f16_row;     /* f16 -> f32 row conversion (F16C or scalar: same values) */
    q8_row_fn q8_row;       /* int8 KV row -> f32 (AVX2 or scalar: same values) */
    int attn_avx2;          /* scores and V sums eight at a time (src/cpu/attn_avx2.c, same bits) */
    float *rope_inv_freq;   /* [n_rot/2] for the global base */
    float *rope_inv_freq_local;
} cpu_be;

static inline cpu_be *CB(backend *be) { return (cpu_be *)be->impl; }

/* Sliding-window layers keep a ring of window + KV_RING_SLACK positions (position p in slot
 * p % cap), so their KV memory is bounded by the window. The slack covers a pass of
 * FWD_MAX_T tokens (writes before reads: cap >= window + T - 1) and lets a session rewind
 * up to cap - window + 1 positions (speculative rollback) without losing needed rows. */
#define KV_RING_SLACK (FWD_MAX_T + 1)

/* ---- embed ------------------------------------------------------------------------ */
static void cpu_embed(backend *be, const weight *te, const int32_t *ids, int T, float *x, float scale) {
    const quant_traits *qt = quant_traits_get(te->type);
    size_t row_bytes = quant_row_bytes(te->type, te->n_in);
    (void)be;
    for (int t = 0; t < T; t++) {
        float *dst = x + (size_t)t * te->n_in;
        qt->dequant_row((const uint8_t *)te->data + (size_t)ids[t] * row_bytes, dst, te->n_in);
        if (scale != 1.0f)
            for (int64_t i = 0; i < te->n_in; i++) dst[i] *= scale;
    }
}

/* ---- rmsnorm: sum of squares in double, sequential (fixed order) ----------------------- */
static void cpu_rmsnorm(backend *be, const float *x, const weight *w, float *y, int rows, int n, float eps) {
    (void)be;
    const float *g = (const float *)w->data;   /* norms are F32 (checked at bind) */
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float *yr = y + (size_t)r * n;
        double ss = 0;
        for (int i = 0; i < n; i++) ss += (double)xr[i] * xr[i];
        float inv = (float)(1.0 / sqrt(ss / n + (double)eps));
        for (int i = 0; i < n; i++) yr[i] = (xr[i] * inv) * g[i];
    }
}

/* ---- matvec ------------------------------------------------------------------------- */
static void cpu_matvec(backend *be, const weight *W, const float *x, int T, float *y) {
    matvec(CB(be)->tp, W->data, W->type, W->n_in, W->n_out, x, T, y,
           CB(be)->exact ? MATVEC_EXACT : MATVEC_DEFAULT);
}

/* ---- rope: pair i of a head is (2i, 2i+1) in llama's GGUF layout, (i, i + n_rot/2) in the
 * NEOX layout (hparams.rope_neox: qwen3moe, gemma3); both rotate by angle pos * base^(-2i/n_rot) -- */
static void cpu_rope(backend *be, float *x, int T, int n_heads, int head_dim, int n_rot, int pos0, float base,
                     float scale) {
    cpu_be *c = CB(be);
    const float *inv = base == c->hp.rope_base ? c->rope_inv_freq : c->rope_inv_freq_local;
    float local[512];
    if (base != c->hp.rope_base && base != c->hp.rope_base_local) {
        for (int i = 0; i < n_rot / 2 && i < 512; i++) local[i] = (float)(1.0 / pow((double)base, (2.0 * i) / n_rot));
        inv = local;
    }
    const int neox = c->hp.rope_neox;
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

/* ---- attention ---------------------------------------------------------------------- */
typedef struct {
    cpu_be *c; int layer; const float *q; int T, pos0, window; float scale; float *out;
    const float *kf, *vf;   /* NULL, or the f32 rows of positions pf.. (kv_convert_worker) */
    int pf, pl;
} attn_job;


/* Head kvh's row of head_dim K or V values at cache slot `slot`, as f32: a pointer into the
 * f32 cache in exact mode; else converted into tmp (f16: exact conversion, 8 at a time; int8:
 * d * q, one rounded product per value — the same values on every path). */
static inline const float *kv_row(const cpu_be *c, const void *cache, size_t slot, int kvh, int n, float *tmp) {
    if (c->exact) return (const float *)cache + slot * c->kv_dim + (size_t)kvh * n;
    if (c->kv_int8) {
        c->q8_row((const act_q8_0 *)((const uint8_t *)cache + slot * c->kv_row_bytes) + (size_t)kvh * (n / 32), tmp, n);
        return tmp;
    }
    c->f16_row((const uint16_t *)cache + slot * c->kv_dim + (size_t)kvh * n, tmp, n);
    return tmp;
}

/* Row of head kvh at position p: from the pass's f32 copy when there is one (the same values:
 * the conversion is exact and elementwise), else kv_row. */
static inline const float *kv_at(const attn_job *j, const float *f32, const void *cache, int p, int cap, int kvh, int n,
                                 float *tmp) {
    if (f32) return f32 + (size_t)(p - j->pf) * j->c->kv_dim + (size_t)kvh * n;
    return kv_row(j->c, cache, (size_t)(p % cap), kvh, n, tmp);
}

/* Positions pf..pl of the layer's K and V cache into kf / vf as f32 (threads over positions). */
static void kv_convert_worker(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    cpu_be *c = j->c;
    const int cap = c->kv_cap[j->layer];
    long lo, hi;
    threadpool_split((long)(j->pl - j->pf + 1), ith, nth, 1, &lo, &hi);
    for (long i = lo; i < hi; i++) {
        size_t slot = (size_t)((j->pf + (int)i) % cap);
        float *kd = (float *)j->kf + (size_t)i * c->kv_dim, *vd = (float *)j->vf + (size_t)i * c->kv_dim;
        if (c->kv_int8) {
            c->q8_row((const act_q8_0 *)((const uint8_t *)c->k_cache[j->layer] + slot * c->kv_row_bytes), kd, (int)c->kv_dim);
            c->q8_row((const act_q8_0 *)((const uint8_t *)c->v_cache[j->layer] + slot * c->kv_row_bytes), vd, (int)c->kv_dim);
        } else {
            c->f16_row((const uint16_t *)c->k_cache[j->layer] + slot * c->kv_dim, kd, (int)c->kv_dim);
            c->f16_row((const uint16_t *)c->v_cache[j->layer] + slot * c->kv_dim, vd, (int)c->kv_dim);
        }
    }
}

static void attn_worker(void *ctx, int ith, int nth) {
    attn_job *j = ctx;
    cpu_be *c = j->c;
    const int H = c->hp.n_heads, HD = c->hp.head_dim, G = H / c->hp.n_kv_heads;
    float *sc = c->scores + (size_t)ith * c->n_ctx;
    float *row = c->kv_tmp + (size_t)ith * 8 * HD;
    long lo, hi;
    threadpool_split((long)j->T * H, ith, nth, 1, &lo, &hi);
    for (long task = lo; task < hi; task++) {
        int t = (int)(task / H), h = (int)(task % H), kvh = h / G;
        int last = j->pos0 + t;
        int first = j->window > 0 && last - j->window + 1 > 0 ? last - j->window + 1 : 0;
        const float *q = j->q + ((size_t)t * H + h) * HD;
        const void *K = c->k_cache[j->layer], *V = c->v_cache[j->layer];
        const int cap = c->kv_cap[j->layer];
        float mx = -INFINITY;
        int p0 = first;
        if (c->attn_avx2) {   /* eight positions' chains side by side (the same per-position bits) */
            const float *rows[8];
            for (; p0 + 7 <= last; p0 += 8) {
                for (int i = 0; i < 8; i++) rows[i] = kv_at(j, j->kf, K, p0 + i, cap, kvh, HD, row + (size_t)i * HD);
                attn_scores8_avx2(q, rows, HD, j->scale, sc + p0);
                for (int i = 0; i < 8; i++) if (sc[p0 + i] > mx) mx = sc[p0 + i];
            }
        }
        for (int p = p0; p <= last; p++) {
            const float *kr = kv_at(j, j->kf, K, p, cap, kvh, HD, row);
            float s = 0;
            for (int d = 0; d < HD; d++) s += q[d] * kr[d];
            s *= j->scale;
            sc[p] = s;
            if (s > mx) mx = s;
        }
        float sum = 0;
        for (int p = first; p <= last; p++) { sc[p] = expf(sc[p] - mx); sum += sc[p]; }
        float inv = 1.0f / sum;
        float *o = j->out + ((size_t)t * H + h) * HD;
        for (int d = 0; d < HD; d++) o[d] = 0;
        int pv = first;
        if (c->attn_avx2) {   /* eight V rows per call, eight d per vector: the same order per d */
            const float *rows[8];
            float w8[8];
            for (; pv + 7 <= last; pv += 8) {
                for (int i = 0; i < 8; i++) {
                    w8[i] = sc[pv + i] * inv;
                    rows[i] = kv_at(j, j->vf, V, pv + i, cap, kvh, HD, row + (size_t)i * HD);
                }
                attn_vacc_avx2(o, rows, w8, 8, HD);
            }
        }
        for (int p = pv; p <= last; p++) {
            float wgt = sc[p] * inv;
            const float *vr = kv_at(j, j->vf, V, p, cap, kvh, HD, row);
            for (int d = 0; d < HD; d++) o[d] += wgt * vr[d];
        }
    }
}

static void cpu_attention(backend *be, int layer, const float *q, const float *k, const float *v, int T, int pos0,
                          float scale, int window, float *out) {
    cpu_be *c = CB(be);
    for (int t = 0; t < T; t++) {
        size_t slot = (size_t)((pos0 + t) % c->kv_cap[layer]), off = slot * c->kv_dim;
        const float *kt = k + (size_t)t * c->kv_dim, *vt = v + (size_t)t * c->kv_dim;
        if (c->exact) {
            memcpy((float *)c->k_cache[layer] + off, kt, c->kv_dim * sizeof(float));
            memcpy((float *)c->v_cache[layer] + off, vt, c->kv_dim * sizeof(float));
        } else if (c->kv_int8) {   /* blocks of 32 never straddle heads: head_dim % 32 == 0 */
            act_quantize_row(ACT_Q8_0, kt, (uint8_t *)c->k_cache[layer] + slot * c->kv_row_bytes, (int64_t)c->kv_dim);
            act_quantize_row(ACT_Q8_0, vt, (uint8_t *)c->v_cache[layer] + slot * c->kv_row_bytes, (int64_t)c->kv_dim);
        } else {
            uint16_t *kd = (uint16_t *)c->k_cache[layer] + off, *vd = (uint16_t *)c->v_cache[layer] + off;
            for (size_t i = 0; i < c->kv_dim; i++) { kd[i] = f32_to_fp16(kt[i]); vd[i] = f32_to_fp16(vt[i]); }
        }
    }
    attn_job j = { c, layer, q, T, pos0, window, scale, out, NULL, NULL, 0, 0 };
    /* Every (token, head) task of the pass reads the same rows, so they are converted to f32
     * once for the pass (before: T * n_heads / n_kv_heads times each, into an L1-sized buffer
     * per task). The f32 copy is bounded (64 MiB, else the per-task path), grown by doubling. */
    if (!c->exact && c->kv_pass) {
        int pl = pos0 + T - 1, pf = window > 0 && pos0 - window + 1 > 0 ? pos0 - window + 1 : 0;
        size_t rows = (size_t)(pl - pf + 1);
        if (rows * c->kv_dim * 2 * sizeof(float) <= ((size_t)64 << 20)) {
            if (rows > c->kv_f32_rows) {
                size_t want = c->kv_f32_rows * 2 > rows ? c->kv_f32_rows * 2 : rows < 256 ? 256 : rows;
                if (want * c->kv_dim * 2 * sizeof(float) > ((size_t)64 << 20)) want = rows;
                float *nb = st_malloc(want * c->kv_dim * 2 * sizeof(float));
                if (nb) { st_free(c->kv_f32); c->kv_f32 = nb; c->kv_f32_rows = want; }
            }
            if (rows <= c->kv_f32_rows) {
                j.kf = c->kv_f32; j.vf = c->kv_f32 + c->kv_f32_rows * c->kv_dim; j.pf = pf; j.pl = pl;
                threadpool_run(c->tp, kv_convert_worker, &j);
            }
        }
    }
    threadpool_run(c->tp, attn_worker, &j);
}

/* ---- elementwise ---------------------------------------------------------------------- */
static void cpu_swiglu(backend *be, const float *gate, const float *up, float *out, int n) {
    (void)be;
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

/* gelu with the tanh approximation, as Gemma's hidden_activation "gelu_pytorch_tanh" */
static void cpu_geglu(backend *be, const float *gate, const float *up, float *out, int n) {
    (void)be;
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        float t = tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g));
        out[i] = (0.5f * g * (1.0f + t)) * up[i];
    }
}

static void cpu_add(backend *be, float *x, const float *y, int n) {
    (void)be;
    for (int i = 0; i < n; i++) x[i] += y[i];
}

/* ---- Mixture-of-Experts FFN: router + grouped expert kernels (src/cpu/moe.c) ---------------- */
static void cpu_moe_ffn(backend *be, const layer_weights *L, int k, const float *x, int T, float *out) {
    cpu_be *c = CB(be);
    if (moe_ffn(c->tp, L, k, x, T, out, c->exact ? MATVEC_EXACT : MATVEC_DEFAULT, MATVEC_KERNEL_AUTO, MOE_AUTO,
                NULL, NULL) != 0)
        for (size_t i = 0; i < (size_t)T * (size_t)L->gate_inp.n_in; i++) out[i] = NAN;   /* visible, never silent */
}

static const backend_ops cpu_ops = {
    .name = "cpu", .embed = cpu_embed, .rmsnorm = cpu_rmsnorm, .matvec = cpu_matvec, .rope = cpu_rope,
    .attention = cpu_attention, .swiglu = cpu_swiglu, .add = cpu_add, .geglu = cpu_geglu,
    .moe_ffn = cpu_moe_ffn,
};

backend *backend_cpu_new(const hparams *hp, int n_ctx, void *tp, int exact, int kv_int8, char *err, size_t errlen) {
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
    be->ops = &cpu_ops; be->impl = c;
    c->hp = *hp; c->n_ctx = n_ctx; c->exact = exact; c->kv_int8 = kv_int8; c->tp = tp;
    c->kv_dim = (size_t)hp->n_kv_heads * hp->head_dim;
    c->kv_row_bytes = exact ? c->kv_dim * sizeof(float) : kv_int8 ? act_row_bytes(ACT_Q8_0, (int64_t)c->kv_dim)
                                                                : c->kv_dim * sizeof(uint16_t);
    c->k_cache = st_calloc((size_t)hp->n_layers, sizeof(void *));
    c->kv_cap = st_calloc((size_t)hp->n_layers, sizeof(int));
    c->v_cache = st_calloc((size_t)hp->n_layers, sizeof(void *));
    c->scores = st_malloc((size_t)threadpool_size(tp) * (size_t)n_ctx * sizeof(float));
    c->kv_tmp = st_malloc((size_t)threadpool_size(tp) * 8 * (size_t)hp->head_dim * sizeof(float));
    c->f16_row = f16_to_f32_row_get();
    c->q8_row = q8_to_f32_row_get();
    c->kv_pass = env_bool(ENV_CPU_KV_PASS);
    c->attn_avx2 = cpu_has_avx2_fma() && hp->head_dim % 8 == 0 && strcmp(env_str(ENV_CPU_ATTN), "scalar") != 0;
    c->rope_inv_freq = st_malloc((size_t)hp->n_rot / 2 * sizeof(float));
    c->rope_inv_freq_local = st_malloc((size_t)hp->n_rot / 2 * sizeof(float));
    if (!c->k_cache || !c->v_cache || !c->kv_cap || !c->scores || !c->kv_tmp || !c->rope_inv_freq || !c->rope_inv_freq_local) goto oom;
    for (int l = 0; l < hp->n_layers; l++) {
        int ring = hp->sliding_window + KV_RING_SLACK;
        c->kv_cap[l] = hparams_layer_sliding(hp, l) && ring < n_ctx ? ring : n_ctx;
        c->k_cache[l] = st_malloc((size_t)c->kv_cap[l] * c->kv_row_bytes);
        c->v_cache[l] = st_malloc((size_t)c->kv_cap[l] * c->kv_row_bytes);
        if (!c->k_cache[l] || !c->v_cache[l]) goto oom;
    }
    for (int i = 0; i < hp->n_rot / 2; i++) {
        c->rope_inv_freq[i] = (float)(1.0 / pow((double)hp->rope_base, (2.0 * i) / hp->n_rot));
        c->rope_inv_freq_local[i] = (float)(1.0 / pow((double)hp->rope_base_local, (2.0 * i) / hp->n_rot));
    }
    return be;
oom:
    snprintf(err, errlen, "out of memory allocating the KV cache for %d positions (%.1f MiB): use a smaller --ctx",
             n_ctx, 2.0 * hp->n_layers * n_ctx * (double)hp->n_kv_heads * hp->head_dim *
                        (exact ? 4.0 : kv_int8 ? 36.0 / 32.0 : 2.0) / 1048576.0);
    if (be) { be->impl = c; backend_cpu_free(be); }
    return NULL;
}

void backend_cpu_free(backend *be) {
    if (!be) return;
    cpu_be *c = CB(be);
    if (c) {
        for (int l = 0; c->k_cache && l < c->hp.n_layers; l++) st_free(c->k_cache[l]);
        for (int l = 0; c->v_cache && l < c->hp.n_layers; l++) st_free(c->v_cache[l]);
        st_free(c->k_cache); st_free(c->v_cache); st_free(c->kv_cap); st_free(c->scores); st_free(c->kv_tmp);
        st_free(c->kv_f32);
        st_free(c->rope_inv_freq); st_free(c->rope_inv_freq_local);
        st_free(c);
    }
    st_free(be);
}

int backend_cpu_max_rewind(const backend *be) {
    const cpu_be *c = (const cpu_be *)be->impl;
    int m = 1 << 30;
    for (int l = 0; l < c->hp.n_layers; l++)
        if (c->kv_cap[l] < c->n_ctx && c->kv_cap[l] - c->hp.sliding_window + 1 < m) m = c->kv_cap[l] - c->hp.sliding_window + 1;
    return m;
}

const void *backend_cpu_kv_layer(const backend *be, int layer, int which, size_t *bytes_per_pos) {
    const cpu_be *c = (const cpu_be *)be->impl;
    *bytes_per_pos = c->kv_row_bytes;
    return which ? c->v_cache[layer] : c->k_cache[layer];
}
