/* The CPU attention (docs/KERNELS.md "Attention order" and "CPU attention order"), without a
 * model file except in test_model.
 * The canonical order (src/model/attn_order.h), test_documented_order: backend_cpu_attention
 * on random q, k, v
 *   - bits: the backend's output == a scalar reference written from the documented order
 *     (chunks of 256 positions from the window's first position, each reduced alone, merged in
 *     chunk order), and up to 256 positions == the one-chunk order of before (the same bits
 *     as before issue 19), at lengths around the chunk boundaries (1, 255, 256, 257, 511-513, 1000,
 *     1025), full and sliding windows (a window smaller than, equal to and larger than a
 *     chunk; the ring cache of a sliding layer), f16, int8 and f32 caches, head_dim 64, 40
 *     (no AVX2 path) and 256 (Gemma's), GQA groups of 1-4;
 *   - the values: within 1e-5 (relative to the row's largest value) of the attention computed
 *     in double from the same stored rows;
 *   - batch invariance: passes of 8, 5 and 3 tokens (crossing chunk boundaries) give the
 *     token-by-token outputs (memcmp);
 *   - paths: STRATA_CPU_ATTN=scalar / heads and STRATA_CPU_KV_PASS=0 give the same bits.
 * The variants give the same bits: STRATA_CPU_ATTN=auto runs a decode step (one token)
 * grouped by KV head (attn_dec_* in src/cpu/backend_cpu.c: each K/V row converted once per
 * step, 32 positions' scores side by side from a transposed block, the V sums 32 d per task);
 * heads runs a task per (token, head) (the path prompts take); scalar one position at a time.
 * Backends with the same cache contents are stepped at depths from 1 to beyond 4096 and their
 * attention outputs compared with memcmp: f16 and int8 caches, SmolLM2's head shape (9 heads of
 * 64, 3 KV heads) and Gemma 3's (4 heads of 256, 1 KV head) with its sliding-window ring
 * (window 512), at one and three threads; test_detects shows the comparison can fail. */
#include "test.h"
#include "small_model.h"
#include <stdint.h>
#include "model/backend.h"
#include "model/model.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"
#include "cpu/kernels.h"
#include "core/util.h"
#include "core/env.h"
#include "quant/quant.h"
#include <stdlib.h>
#include <unistd.h>
#include "strata.h"

#define CHUNK 256           /* the documented chunk size: pinned here, not taken from the header */
#define N_POS 1100

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static float rnd(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)(rs >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}

typedef struct {
    const char *name;
    int H, KVH, HD, kv;     /* kv: 0 f16, 1 int8, 2 f32 (exact) */
    int window, ring;       /* ring: layer 0 is a sliding layer (a ring of window + slack slots) */
    float qscale;           /* larger q: peakier softmax, chunk maxima far apart */
} cfg;

/* the inputs of every position, and the rows as the cache gives them back (f32) */
typedef struct {
    float *q, *k, *v;       /* [N_POS][H*HD], [N_POS][KVH*HD] x2 */
    float *ks, *vs;         /* stored rows, decoded */
} inputs;

static void store_row(int kv, const float *x, float *dst, int n) {
    if (kv == 2) { memcpy(dst, x, (size_t)n * 4); return; }
    if (kv == 0) { for (int i = 0; i < n; i++) dst[i] = fp16_to_f32(f32_to_fp16(x[i])); return; }
    uint8_t blk[4096];
    act_quantize_row(ACT_Q8_0, x, blk, n);
    const act_q8_0 *b = (const act_q8_0 *)blk;
    for (int i = 0; i < n; i++) dst[i] = b[i / 32].d * (float)b[i / 32].qs[i % 32];
}

/* the float scores s_p = (0 + q[0] k_p[0] + ...) * scale of [first, last] into s; their max */
static float ref_scores(const cfg *C, const inputs *in, int t, int h, int first, int last, float *s) {
    const int HD = C->HD, kvd = C->KVH * HD, kvh = h / (C->H / C->KVH);
    const float *q = in->q + ((size_t)t * C->H + h) * HD;
    float M = -INFINITY;
    for (int p = first; p <= last; p++) {
        const float *k = in->ks + (size_t)p * kvd + (size_t)kvh * HD;
        float a = 0.0f;
        for (int d = 0; d < HD; d++) a = a + q[d] * k[d];
        s[p] = a * 0.125f;
        if (s[p] > M) M = s[p];
    }
    return M;
}

/* The documented order for one (token, head): scores s_p = (0 + q[0] k_p[0] + ...) * scale over
 * [first, last]; M = max s_p; per chunk c = [first + 256c, ...]: m_c = max, e_p = expf(s_p - m_c),
 * l_c = sum e_p, r_c = 1 / l_c, u_c[d] = sum (e_p r_c) v_p[d] (position order, from 0); then
 * w_c = l_c expf(m_c - M), L = sum w_c (chunk order), a_c = w_c / L, out[d] = sum u_c[d] a_c
 * (chunk order, from 0). */
static void ref_canon(const cfg *C, const inputs *in, int t, int h, float *out) {
    const int HD = C->HD, kvd = C->KVH * HD, kvh = h / (C->H / C->KVH);
    int last = t, first = C->window > 0 && last - C->window + 1 > 0 ? last - C->window + 1 : 0;
    static float s[N_POS], e[N_POS], u[256], mc[N_POS / CHUNK + 1], lc[N_POS / CHUNK + 1];
    const float M = ref_scores(C, in, t, h, first, last, s);
    int nch = 0;
    for (int c0 = first; c0 <= last; c0 += CHUNK, nch++) {
        int c1 = c0 + CHUNK - 1 < last ? c0 + CHUNK - 1 : last;
        float m = -INFINITY, l = 0.0f;
        for (int p = c0; p <= c1; p++) if (s[p] > m) m = s[p];
        for (int p = c0; p <= c1; p++) { e[p] = expf(s[p] - m); l = l + e[p]; }
        mc[nch] = m; lc[nch] = l;
    }
    float L = 0.0f;
    for (int c = 0; c < nch; c++) L = L + lc[c] * expf(mc[c] - M);
    for (int d = 0; d < HD; d++) out[d] = 0.0f;
    for (int c = 0; c < nch; c++) {
        int c0 = first + c * CHUNK, c1 = c0 + CHUNK - 1 < last ? c0 + CHUNK - 1 : last;
        float r = 1.0f / lc[c], a = (lc[c] * expf(mc[c] - M)) / L;
        for (int d = 0; d < HD; d++) u[d] = 0.0f;
        for (int p = c0; p <= c1; p++) {
            const float *v = in->vs + (size_t)p * kvd + (size_t)kvh * HD;
            for (int d = 0; d < HD; d++) u[d] = u[d] + (e[p] * r) * v[d];
        }
        for (int d = 0; d < HD; d++) out[d] = out[d] + u[d] * a;
    }
}

/* The order before issue 19, for lengths of one chunk: one normalized V sum, o[d] = o[d] +
 * (e_p (1 / sum)) v_p[d]. The chunked order must give these bits up to 256 positions. */
static void ref_one_chunk(const cfg *C, const inputs *in, int t, int h, float *out) {
    const int HD = C->HD, kvd = C->KVH * HD, kvh = h / (C->H / C->KVH);
    int last = t, first = C->window > 0 && last - C->window + 1 > 0 ? last - C->window + 1 : 0;
    static float s[N_POS];
    const float M = ref_scores(C, in, t, h, first, last, s);
    float sum = 0.0f;
    for (int p = first; p <= last; p++) { s[p] = expf(s[p] - M); sum = sum + s[p]; }
    float inv = 1.0f / sum;
    for (int d = 0; d < HD; d++) out[d] = 0.0f;
    for (int p = first; p <= last; p++) {
        const float *v = in->vs + (size_t)p * kvd + (size_t)kvh * HD;
        for (int d = 0; d < HD; d++) out[d] = out[d] + (s[p] * inv) * v[d];
    }
}

/* softmax attention in double from the same stored rows */
static void ref_double(const cfg *C, const inputs *in, int t, int h, double *out) {
    const int HD = C->HD, kvd = C->KVH * HD, kvh = h / (C->H / C->KVH);
    int last = t, first = C->window > 0 && last - C->window + 1 > 0 ? last - C->window + 1 : 0;
    static double s[N_POS];
    const float *q = in->q + ((size_t)t * C->H + h) * HD;
    double M = -INFINITY, L = 0;
    for (int p = first; p <= last; p++) {
        const float *k = in->ks + (size_t)p * kvd + (size_t)kvh * HD;
        double a = 0;
        for (int d = 0; d < HD; d++) a += (double)q[d] * k[d];
        s[p] = a * 0.125;
        if (s[p] > M) M = s[p];
    }
    for (int d = 0; d < HD; d++) out[d] = 0;
    for (int p = first; p <= last; p++) {
        double e = exp(s[p] - M);
        L += e;
        const float *v = in->vs + (size_t)p * kvd + (size_t)kvh * HD;
        for (int d = 0; d < HD; d++) out[d] += e * v[d];
    }
    for (int d = 0; d < HD; d++) out[d] /= L;
}

static hparams make_hp(const cfg *C) {
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_layers = 1; hp.n_heads = C->H; hp.n_kv_heads = C->KVH; hp.head_dim = C->HD;
    hp.n_embd = C->H * C->HD; hp.n_ff = 64; hp.n_vocab = 16; hp.n_ctx_train = N_POS; hp.n_rot = C->HD;
    hp.rope_base = hp.rope_base_local = 10000.0f; hp.rope_scale = 1.0f; hp.rms_eps = 1e-5f; hp.attn_scale = 0.125f;
    hp.embd_scale = 1.0f;
    if (C->ring) { hp.sliding_window = C->window; hp.sliding_pattern = 6; }   /* layer 0 slides */
    return hp;
}

static backend *new_cpu(const cfg *C, threadpool *tp) {
    hparams hp = make_hp(C);
    static model_weights mw;
    char err[256];
    backend *be = backend_cpu_new(&hp, &mw, N_POS, tp, C->kv == 2, C->kv == 1, err, sizeof err);
    if (!be) fprintf(stderr, "%s: %s\n", C->name, err);
    return be;
}

/* every position through the backend in passes of T (the last pass shorter), outputs into out */
static void run_passes(const cfg *C, const inputs *in, backend *be, int T, float *out) {
    const int QD = C->H * C->HD, KD = C->KVH * C->HD;
    for (int p0 = 0; p0 < N_POS; p0 += T) {
        int n = N_POS - p0 < T ? N_POS - p0 : T;
        backend_cpu_attention(be, be->kv, 0, in->q + (size_t)p0 * QD, in->k + (size_t)p0 * KD, in->v + (size_t)p0 * KD, n,
                              p0, 0.125f, C->window, out + (size_t)p0 * QD);
    }
}

static void check_cfg(const cfg *C, threadpool *tp) {
    t_current = C->name;
    const int QD = C->H * C->HD, KD = C->KVH * C->HD;
    inputs in;
    in.q = malloc((size_t)N_POS * QD * 4); in.k = malloc((size_t)N_POS * KD * 4); in.v = malloc((size_t)N_POS * KD * 4);
    in.ks = malloc((size_t)N_POS * KD * 4); in.vs = malloc((size_t)N_POS * KD * 4);
    float *out1 = malloc((size_t)N_POS * QD * 4), *outT = malloc((size_t)N_POS * QD * 4);
    for (size_t i = 0; i < (size_t)N_POS * QD; i++) in.q[i] = rnd() * C->qscale;
    for (size_t i = 0; i < (size_t)N_POS * KD; i++) { in.k[i] = rnd(); in.v[i] = rnd(); }
    for (int p = 0; p < N_POS; p++) {
        store_row(C->kv, in.k + (size_t)p * KD, in.ks + (size_t)p * KD, KD);
        store_row(C->kv, in.v + (size_t)p * KD, in.vs + (size_t)p * KD, KD);
    }
    backend *be = new_cpu(C, tp);
    REQUIRE(be != NULL, "backend");
        if (!be) return;
    run_passes(C, &in, be, 1, out1);
    be->ops->free(be);

    /* the documented order, bit for bit, at the lengths around the chunk boundaries */
    static const int lens[] = { 1, 2, 255, 256, 257, 300, 511, 512, 513, 768, 1000, 1025, N_POS };
    int bits_ok = 1, n_checked = 0, one_ok = 1, n_one = 0;
    double worst = 0;
    float ref[256];
    double dref[256];
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
        int t = lens[li] - 1;
        for (int h = 0; h < C->H; h++) {
            const float *got = out1 + ((size_t)t * C->H + h) * C->HD;
            ref_canon(C, &in, t, h, ref);
            if (memcmp(got, ref, (size_t)C->HD * 4)) {
                if (bits_ok) fprintf(stderr, "%s: length %d head %d: %.9g vs the documented order's %.9g (d 0)\n", C->name,
                                     t + 1, h, got[0], ref[0]);
                bits_ok = 0;
            }
            if (t - (C->window > 0 && t - C->window + 1 > 0 ? t - C->window + 1 : 0) + 1 <= CHUNK) {
                ref_one_chunk(C, &in, t, h, ref);
                if (memcmp(got, ref, (size_t)C->HD * 4)) {
                    if (one_ok) fprintf(stderr, "%s: length %d head %d: not the one-chunk order's bits\n", C->name, t + 1, h);
                    one_ok = 0;
                }
                n_one++;
            }
            ref_double(C, &in, t, h, dref);
            double mx = 0, md = 0;
            for (int d = 0; d < C->HD; d++) { mx = fmax(mx, fabs(dref[d])); md = fmax(md, fabs(got[d] - dref[d])); }
            if (md / mx > worst) worst = md / mx;
            n_checked++;
        }
    }
    CHECKF(bits_ok, "%s: the backend's bits are not the documented order's", C->name);
    CHECKF(one_ok && n_one > 0, "%s: up to one chunk, the bits are not the one-chunk order's", C->name);
    CHECKF(worst <= 1e-5, "%s: %g from the attention in double", C->name, worst);

    /* batch invariance: passes of 8, 5, 3 tokens == token by token */
    static const int Ts[] = { 8, 5, 3 };
    for (size_t ti = 0; ti < (t_quick() ? 1 : sizeof Ts / sizeof Ts[0]); ti++) {   /* quick mode: passes of 8 */
        if (Ts[ti] > FWD_MAX_T) continue;
        be = new_cpu(C, tp);
        REQUIRE(be != NULL, "backend");
        if (!be) return;
        run_passes(C, &in, be, Ts[ti], outT);
        be->ops->free(be);
        CHECKF(!memcmp(out1, outT, (size_t)N_POS * QD * 4), "%s: passes of %d tokens differ from token by token", C->name,
               Ts[ti]);
    }
    /* the scalar path, the per-(token, head) tasks and the per-task K/V conversion: the same bits */
    static const char *envs[][2] = { { "STRATA_CPU_ATTN", "scalar" }, { "STRATA_CPU_ATTN", "heads" },
                                     { "STRATA_CPU_KV_PASS", "0" } };
    for (int e = 0; e < 3; e++) {
        setenv(envs[e][0], envs[e][1], 1); env_reset_cache();
        be = new_cpu(C, tp);
        unsetenv(envs[e][0]); env_reset_cache();
        REQUIRE(be != NULL, "backend");
        if (!be) return;
        run_passes(C, &in, be, e == 2 ? 8 : 1, outT);
        be->ops->free(be);
        CHECKF(!memcmp(out1, outT, (size_t)N_POS * QD * 4), "%s: %s=%s changes the bits", C->name, envs[e][0], envs[e][1]);
    }
    printf("%-28s documented order bit for bit: %s (%d rows; %d of one chunk == the order before), max rel to double %.2g, passes of 8/5/3 and the "
           "scalar / heads / per-task paths: same bits\n", C->name, bits_ok ? "yes" : "NO", n_checked, n_one, worst);
    free(in.q); free(in.k); free(in.v); free(in.ks); free(in.vs); free(out1); free(outT);
}

static void test_documented_order(void) {
    threadpool *tp = threadpool_create(2);
    static const cfg cfgs[] = {
        { "f16, 4 heads / 2, hd 64", 4, 2, 64, 0, 0, 0, 1.0f },
        { "f16, peaky scores", 4, 2, 64, 0, 0, 0, 12.0f },
        { "f16, 9 heads / 3 (SmolLM2)", 9, 3, 64, 0, 0, 0, 1.0f },
        { "int8, 4 heads / 2", 4, 2, 64, 1, 0, 0, 4.0f },
        { "f32 (exact), 2 heads / 2", 2, 2, 64, 2, 0, 0, 4.0f },
        { "f16, hd 40 (no AVX2 path)", 2, 1, 40, 0, 0, 0, 2.0f },
        { "f16, window 100", 4, 2, 64, 0, 100, 0, 2.0f },
        { "f16, window 256", 4, 2, 64, 0, 256, 0, 2.0f },
        { "int8, window 300", 4, 2, 64, 1, 300, 0, 2.0f },
        { "f16, hd 256, ring of 512", 4, 1, 256, 0, 512, 1, 2.0f },
    };
    /* quick mode (the sanitizer run): every other configuration (f16 4/2, SmolLM2, f32, window
     * 100, int8 window 300; every path still runs), passes of 8 only */
    if (t_quick()) fprintf(stderr, "test_attn: quick mode: 5 of 10 documented-order configurations, passes of 8 only\n");
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i += t_quick() ? 2 : 1) check_cfg(&cfgs[i], tp);
    threadpool_free(tp);
    t_current = "test_documented_order";
}

typedef struct { int H, KVH, HD, window; const char *name; } shape;

static uint32_t rng = 12345u;
static float frand(void) {   /* xorshift in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 17; rng ^= rng << 5;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

/* A two-layer CPU backend of the attention's shape (with a window, layer 0 is a sliding-window
 * ring and layer 1 global), built with the switch `env` set to `val` (then unset again). */
static backend *attn_be(int H, int KVH, int HD, int window, int n_ctx, int kv_int8, threadpool *tp, const char *env,
                        const char *val) {
    static model_weights mw;
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_heads = H; hp.n_kv_heads = KVH; hp.head_dim = HD;
    hp.n_embd = H * HD; hp.n_ff = 64; hp.n_vocab = 16; hp.n_ctx_train = n_ctx; hp.n_rot = HD;
    hp.rope_base = hp.rope_base_local = 1e4f; hp.rope_scale = 1; hp.rms_eps = 1e-5f; hp.embd_scale = 1;
    hp.attn_scale = 1.0f / sqrtf((float)HD);
    hp.n_layers = 2;
    if (window) { hp.sliding_window = window; hp.sliding_pattern = 2; }
    setenv(env, val, 1);
    env_reset_cache();
    char err[256];
    backend *be = backend_cpu_new(&hp, &mw, n_ctx, tp, 0, kv_int8, err, sizeof err);
    if (!be) fprintf(stderr, "%s\n", err);
    unsetenv(env);
    env_reset_cache();
    return be;
}

static backend *make_be(const shape *s, int n_ctx, int kv_int8, threadpool *tp, const char *mode) {
    return attn_be(s->H, s->KVH, s->HD, s->window, n_ctx, kv_int8, tp, "STRATA_CPU_ATTN", mode);
}

/* Fills positions [from, to) of every layer of the backends with the same random K/V rows
 * (passes of up to 256 tokens, window 8: the attention they compute is not looked at). */
static void fill(backend **be, int n_be, const shape *s, int from, int to, float *q, float *k, float *v, float *o) {
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    for (int p = from; p < to; p += 256) {
        int T = to - p < 256 ? to - p : 256;
        for (int i = 0; i < T * KD; i++) { k[i] = frand(); v[i] = frand(); }
        for (int i = 0; i < T * QD; i++) q[i] = frand();
        for (int l = 0; l < 2; l++)
            for (int b = 0; b < n_be; b++) backend_cpu_attention(be[b], be[b]->kv, l, q, k, v, T, p, 0.125f, 8, o);
    }
}

/* One decode step at position pos on each backend (the same q, k, v; the layer's window), the
 * outputs compared with the first backend's. Returns how many differ. */
static int step(backend **be, int n_be, const shape *s, int layer, int pos, float *q, float *k, float *v, float **o,
                float scale) {
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    for (int i = 0; i < QD; i++) q[i] = frand() * 3.0f;   /* a spread of scores: the softmax is not flat */
    for (int i = 0; i < KD; i++) { k[i] = frand(); v[i] = frand(); }
    const int window = layer == 0 ? s->window : 0;
    int bad = 0;
    for (int b = 0; b < n_be; b++) {
        backend_cpu_attention(be[b], be[b]->kv, layer, q, k, v, 1, pos, scale, window, o[b]);
        if (b > 0 && memcmp(o[0], o[b], sizeof(float) * (size_t)QD)) bad++;
    }
    return bad;
}

/* The backends: scalar and heads at one thread, auto at one and three threads. */
static void run_shape(const shape *s, int kv_int8, const int *depths, int n_depths) {
    const int n_ctx = depths[n_depths - 1] + 8;
    threadpool *tp1 = threadpool_create(1), *tp3 = threadpool_create(3);
    const char *names[4] = { "scalar", "heads", "auto/1", "auto/3" };
    backend *be[4] = { make_be(s, n_ctx, kv_int8, tp1, "scalar"), make_be(s, n_ctx, kv_int8, tp1, "heads"),
                       make_be(s, n_ctx, kv_int8, tp1, "auto"), make_be(s, n_ctx, kv_int8, tp3, "auto") };
    const int QD = s->H * s->HD, KD = s->KVH * s->HD;
    float *q = malloc(sizeof(float) * 256 * QD), *k = malloc(sizeof(float) * 256 * KD);
    float *v = malloc(sizeof(float) * 256 * KD), *ow = malloc(sizeof(float) * 256 * QD);
    float *o[4];
    for (int b = 0; b < 4; b++) o[b] = malloc(sizeof(float) * QD);
    REQUIRE(be[0] && be[1] && be[2] && be[3] && q && k && v && ow && o[0] && o[1] && o[2] && o[3], "allocation");
    if (be[0] && be[1] && be[2] && be[3] && q && k && v && ow && o[0] && o[1] && o[2] && o[3]) {
        int at = 0;
        for (int di = 0; di < n_depths; di++) {
            const int pos = depths[di];
            fill(be, 4, s, at, pos, q, k, v, ow);
            int bad = 0, nz = 0;
            for (int l = 0; l < 2; l++) bad += step(be, 4, s, l, pos, q, k, v, o, 1.0f / sqrtf((float)s->HD));
            for (int i = 0; i < QD; i++) nz += o[0][i] != 0.0f;
            CHECKF(bad == 0 && nz > QD / 2, "%s, %s cache: a decode step at depth %d: %d of 6 outputs differ from %s's "
                   "(%d of %d values non-zero)", s->name, kv_int8 ? "int8" : "f16", pos, bad, names[0], nz, QD);
            at = pos + 1;
        }
    }
    for (int b = 0; b < 4; b++) { if (be[b]) be[b]->ops->free(be[b]); free(o[b]); }
    free(q); free(k); free(v); free(ow);
    threadpool_free(tp1); threadpool_free(tp3);
}

static const int depths_smol[] = { 0, 1, 7, 31, 63, 64, 65, 95, 255, 256, 257, 511, 1000, 2049, 4095, 4096, 4100, 6001 };
static const int depths_gemma[] = { 3, 64, 200, 511, 512, 513, 600, 777, 1100, 4500 };

/* Quick mode (STRATA_TEST_QUICK, the sanitizer half of CI): the int8 cache up to depth 1100 only.
 * Filling the caches to the deep positions is quadratic (prompt attention on four backends): it
 * was most of this test's CPU time under ASan. What the deep positions add is the score buffer's
 * growth past 1024, 2048 and 4096 positions and its cap at the cache size, which do not depend
 * on the cache type and still run with the f16 cache; the int8 rows are converted by the same
 * code at every depth. The optimized `make test` runs every depth with both caches. */
#define QUICK_INT8_DEPTH 1100
static int n_depths_for(const int *depths, int n, int kv_int8) {
    if (!kv_int8 || !t_quick()) return n;
    int k = 0;
    while (k < n && depths[k] <= QUICK_INT8_DEPTH) k++;
    return k;
}

static void test_smollm2_shape(void) {
    shape s = { 9, 3, 64, 0, "SmolLM2 shape" };
    const int n = (int)(sizeof depths_smol / sizeof depths_smol[0]);
    for (int kv8 = 0; kv8 <= 1; kv8++) run_shape(&s, kv8, depths_smol, n_depths_for(depths_smol, n, kv8));
}

static void test_gemma_shape(void) {   /* layer 0: a ring of window + 9 slots, wrapped several times */
    shape s = { 4, 1, 256, 512, "Gemma 3 shape" };
    const int n = (int)(sizeof depths_gemma / sizeof depths_gemma[0]);
    for (int kv8 = 0; kv8 <= 1; kv8++) run_shape(&s, kv8, depths_gemma, n_depths_for(depths_gemma, n, kv8));
}

/* The comparison can fail: the grouped path with the scale perturbed by one ulp differs. */
static void test_detects(void) {
    shape s = { 9, 3, 64, 0, "SmolLM2 shape" };
    threadpool *tp = threadpool_create(1);
    backend *be[2] = { make_be(&s, 600, 0, tp, "heads"), make_be(&s, 600, 0, tp, "auto") };
    float *q = malloc(sizeof(float) * 256 * 576), *k = malloc(sizeof(float) * 256 * 192), *v = malloc(sizeof(float) * 256 * 192);
    float *ow = malloc(sizeof(float) * 256 * 576), *o0 = malloc(sizeof(float) * 576), *o1 = malloc(sizeof(float) * 576);
    REQUIRE(be[0] && be[1] && q && k && v && ow && o0 && o1, "allocation");
    if (be[0] && be[1] && q && k && v && ow && o0 && o1) {
        fill(be, 2, &s, 0, 500, q, k, v, ow);
        for (int i = 0; i < 576; i++) q[i] = frand() * 3.0f;
        for (int i = 0; i < 192; i++) { k[i] = frand(); v[i] = frand(); }
        backend_cpu_attention(be[0], be[0]->kv, 1, q, k, v, 1, 500, 0.125f, 0, o0);
        backend_cpu_attention(be[1], be[1]->kv, 1, q, k, v, 1, 500, 0.125f, 0, o1);
        CHECKF(!memcmp(o0, o1, sizeof(float) * 576), "the same step differs");
        backend_cpu_attention(be[1], be[1]->kv, 1, q, k, v, 1, 500, nextafterf(0.125f, 1.0f), 0, o1);
        CHECKF(memcmp(o0, o1, sizeof(float) * 576) != 0, "a scale one ulp off gives the same bits: the check cannot fail");
    }
    for (int b = 0; b < 2; b++) if (be[b]) be[b]->ops->free(be[b]);
    free(q); free(k); free(v); free(ow); free(o0); free(o1);
    threadpool_free(tp);
}

/* Prompt passes in query tiles (STRATA_CPU_ATTN_QTILE, pt_worker in src/cpu/backend_cpu.c):
 * backends with equal caches run the same pass of W tokens at depth D; the reference
 * (STRATA_CPU_ATTN_QTILE=0: a task per (token, head)) and the tiled path at several tile sizes
 * (1 token, 5 / 7 rows, the default, wider than the pass), thread counts (1, 2, 3) and splits of
 * the W tokens into passes (one pass; passes of 5; of 2) give the same bits (memcmp). GQA
 * groups of 1, 3, 4 and 8, head_dim 32 / 64 / 128 / 256, f16 and int8 caches; with a window,
 * layer 0 slides (the tiles apply while pos0 + W <= window, else the reference runs) and layer 1
 * is global. A scale one ulp off must give other bits (the comparison can fail). */
typedef struct { int H, KVH, HD, window, kv8; const char *name; } pt_shape;

static backend *pt_be(const pt_shape *s, int n_ctx, threadpool *tp, int qtile) {
    char v[16];
    snprintf(v, sizeof v, "%d", qtile);
    return attn_be(s->H, s->KVH, s->HD, s->window, n_ctx, s->kv8, tp, "STRATA_CPU_ATTN_QTILE", v);
}

#define PT_NB 6
static void pt_run_shape(const pt_shape *s, const int *depths, int n_depths, const int *widths, int n_widths) {
    const int QD = s->H * s->HD, KD = s->KVH * s->HD, G = s->H / s->KVH;
    int maxd = 0, maxw = 0;
    for (int i = 0; i < n_depths; i++) maxd = depths[i] > maxd ? depths[i] : maxd;
    for (int i = 0; i < n_widths; i++) maxw = widths[i] > maxw ? widths[i] : maxw;
    const int n_ctx = maxd + maxw + 8;
    /* pools that sleep at once between jobs (the many short passes: spinning was most of the CPU time) */
    setenv("STRATA_POOL_SPIN", "0", 1); env_reset_cache();
    threadpool *tp[4] = { NULL, threadpool_create(1), threadpool_create(2), threadpool_create(3) };
    unsetenv("STRATA_POOL_SPIN"); env_reset_cache();
    /* backend b: tile rows, threads, tokens per pass (0: all W in one pass) */
    const int qt[PT_NB] = { 0, 48, 1, 5 * G + 2, 48, 4096 }, th[PT_NB] = { 1, 1, 3, 2, 3, 2 }, pw[PT_NB] = { 0, 0, 0, 5, 2, 0 };
    const char *names[PT_NB] = { "reference", "tiles 48/1", "1 token/3", "5G+2 rows/2, passes of 5", "48/3, passes of 2",
                                 "wider than the pass/2" };
    float *q = malloc(sizeof(float) * (size_t)maxw * QD), *k = malloc(sizeof(float) * (size_t)maxw * KD);
    float *v = malloc(sizeof(float) * (size_t)maxw * KD), *o[PT_NB];
    float *fq = malloc(sizeof(float) * 256 * QD), *fk = malloc(sizeof(float) * 256 * KD), *fv = malloc(sizeof(float) * 256 * KD);
    float *fo = malloc(sizeof(float) * 256 * QD);
    int ok_alloc = q && k && v && fq && fk && fv && fo && tp[1] && tp[2] && tp[3];
    for (int b = 0; b < PT_NB; b++) { o[b] = malloc(sizeof(float) * (size_t)maxw * QD); ok_alloc &= o[b] != NULL; }
    REQUIRE(ok_alloc, "allocation");
    int n_cmp = 0, n_bad = 0, n_tiled = 0, detect_ok = 1;
    /* one set of backends per shape, filled depth after depth (the depths ascending); a pass at
     * depth D writes positions D..D+W-1 on every backend alike */
    backend *be[PT_NB];
    for (int b = 0; b < PT_NB; b++) { be[b] = ok_alloc ? pt_be(s, n_ctx, tp[th[b]], qt[b]) : NULL; ok_alloc &= be[b] != NULL; }
    REQUIRE(ok_alloc, "backends");
    const shape fs = { s->H, s->KVH, s->HD, s->window, s->name };
    for (int di = 0, at = 0; ok_alloc && di < n_depths; di++) {
        const int D = depths[di];
        fill(be, PT_NB, &fs, at, D, fq, fk, fv, fo);
        at = D;
        for (int wi = 0; wi < n_widths; wi++) {
            const int W = widths[wi];
            for (int i = 0; i < W * QD; i++) q[i] = frand() * 3.0f;
            for (int i = 0; i < W * KD; i++) { k[i] = frand(); v[i] = frand(); }
            for (int l = 0; l < 2; l++) {
                const int window = l == 0 ? s->window : 0;
                for (int b = 0; b < PT_NB; b++) {
                    const int step = pw[b] ? pw[b] : W;
                    for (int t0 = 0; t0 < W; t0 += step) {
                        const int n = W - t0 < step ? W - t0 : step;
                        backend_cpu_attention(be[b], be[b]->kv, l, q + (size_t)t0 * QD, k + (size_t)t0 * KD,
                                              v + (size_t)t0 * KD, n, D + t0, 0.125f, window, o[b] + (size_t)t0 * QD);
                    }
                    if (b > 0) {
                        n_cmp++;
                        if (memcmp(o[0], o[b], sizeof(float) * (size_t)W * QD)) {
                            if (!n_bad) fprintf(stderr, "%s: depth %d, pass of %d, layer %d: %s differs from the reference\n",
                                                s->name, D, W, l, names[b]);
                            n_bad++;
                        }
                    }
                }
                n_tiled += W > 1 && (!window || D + W <= window);
            }
            /* the comparison can fail: the last pass again with the scale one ulp off */
            if (di == n_depths - 1 && wi == n_widths - 1) {
                backend_cpu_attention(be[1], be[1]->kv, 1, q, k, v, W, D, nextafterf(0.125f, 1.0f), 0, o[1]);
                detect_ok = memcmp(o[0], o[1], sizeof(float) * (size_t)W * QD) != 0;
            }
        }
    }
    for (int b = 0; b < PT_NB; b++) if (be[b]) be[b]->ops->free(be[b]);
    CHECKF(n_bad == 0 && n_cmp > 0, "%s: %d of %d tiled passes differ from the reference", s->name, n_bad, n_cmp);
    CHECKF(n_tiled > 0, "%s: no pass took the tiles", s->name);
    CHECKF(detect_ok, "%s: a scale one ulp off gives the same bits: the comparison cannot fail", s->name);
    printf("%-34s prompt passes in tiles == the reference: %d of %d (layer passes in tiles: %d)\n", s->name, n_cmp - n_bad,
           n_cmp, n_tiled);
    for (int b = 0; b < PT_NB; b++) free(o[b]);
    free(q); free(k); free(v); free(fq); free(fk); free(fv); free(fo);
    for (int i = 1; i < 4; i++) if (tp[i]) threadpool_free(tp[i]);
}

static void test_prompt_tiles(void) {
    static const pt_shape shapes[] = {
        { 9, 3, 64, 0, 0, "SmolLM2 shape (9/3, hd 64), f16" },
        { 9, 3, 64, 0, 1, "SmolLM2 shape, int8" },
        { 8, 1, 128, 0, 0, "8/1 (Qwen3's 32/4 group), hd 128" },
        { 4, 4, 32, 0, 1, "4/4 (no GQA), hd 32, int8" },
        { 8, 2, 64, 0, 0, "8/2, hd 64" },
        { 4, 1, 256, 300, 0, "Gemma 3 shape, window 300" },
    };
    /* depths and widths around the chunk boundaries (a pass of 77 at 200 crosses 256; of 300 at
     * 0 holds two chunks; 1300 + 77: six chunks) */
    static const int depths[] = { 0, 1, 200, 256, 511, 1300 }, widths[] = { 2, 9, 77, 300 };
    static const int depths_q[] = { 0, 200, 700 }, widths_q[] = { 9, 77 };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        t_current = shapes[i].name;
        if (t_quick()) pt_run_shape(&shapes[i], depths_q, 3, widths_q, 2);
        else pt_run_shape(&shapes[i], depths, 6, widths, 4);
    }
    t_current = "test_prompt_tiles";
}

/* The softmax's expf eight at a time (src/cpu/expf_avx2.c, used by the grouped decode step and
 * the prompt tiles): the variant chosen at start == the host's expf, bit for bit, on a sweep of
 * [-110, 90] (every 2^-12: the underflow intervals below -103.28 and -103.97 included), 2^21
 * random bit patterns, the special values and the two inputs where an FMA build that fuses only
 * the cubic differs from glibc 2.36's. bench/expf_check.c runs all 2^32 inputs (0 differ on the
 * dev machine); a constant of the cubic one ulp off fails this test (docs/KERNELS.md). */
static void test_expf(void) {
    const int mode = expf_avx2_mode();
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 28))
    /* glibc 2.28 and later: the algorithm is libm's, so a variant must match */
    CHECKF(mode >= 0, "neither build of the algorithm matches glibc %d.%d's expf", __GLIBC__, __GLIBC_MINOR__);
#endif
    if (mode < 0) { printf("expf: no variant matches this libm's expf: the callers call expf\n"); return; }
    enum { NS = 200 * 4096, NR = 1 << 21 };
    const int n = NS + NR + 16;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n);
    REQUIRE(x && y, "allocation");
    if (x && y) {
        for (int i = 0; i < NS; i++) x[i] = -110.0f + (float)i / 4096.0f;
        uint64_t st = 0x9E3779B97F4A7C15ull;
        for (int i = 0; i < NR; i++) {
            st ^= st << 13; st ^= st >> 7; st ^= st << 17;
            uint32_t b = (uint32_t)(st >> 32);
            memcpy(&x[NS + i], &b, 4);
        }
        /* two groups of eight: a lane >= 88 or NaN sends its group to expf, so the hard inputs go
         * in a group of their own */
        const float sp[16] = { 0x1.04845ep+5f, -0x1.f8cbb2p+5f, -0x1.9fe368p6f, -0x1.9d1d9ep6f, -INFINITY, -0.0f, 1.0f,
                               -87.9f, NAN, INFINITY, 0x1.62e42ep6f, 88.0f, 0.5f, -0.5f, -103.5f, -104.0f };
        memcpy(x + NS + NR, sp, sizeof sp);
        expf_avx2_variant(x, y, n, mode);
        int bad = 0;
        for (int i = 0; i < n; i++) {
            const float r = expf(x[i]);
            if (memcmp(&r, &y[i], 4)) { if (!bad) fprintf(stderr, "expf(%a): %a vs the host's %a\n", x[i], y[i], r); bad++; }
        }
        CHECKF(bad == 0, "the AVX2 expf differs from the host's at %d of %d inputs", bad, n);
        printf("expf eight at a time (%s build of glibc's algorithm) == the host's expf at %d of %d inputs\n",
               mode ? "the FMA" : "the plain", n - bad, n);
        /* the softmax piece: expf_sub_avx2 == expf(s - m) lane by lane at odd lengths */
        float a[37], b[37];
        int sub_ok = 1;
        for (int len = 1; len <= 37; len += 3) {
            for (int i = 0; i < len; i++) a[i] = b[i] = frand() * 120.0f - 60.0f;
            expf_sub_avx2(a, len, 7.5f);
            for (int i = 0; i < len; i++) { const float r = expf(b[i] - 7.5f); sub_ok &= !memcmp(&r, &a[i], 4); }
        }
        CHECKF(sub_ok, "expf_sub_avx2 differs from expf(s - m)");
    }
    free(x); free(y);
}

/* Through a real model: a prompt of 56 tokens, then decode steps from position 56 to 79 (the
 * grouped path from 63 on), in sessions made under STRATA_CPU_ATTN=heads and auto: the logits
 * of every step equal bit for bit (f16 and int8 caches; heads == scalar: the shapes above and
 * tests/test_kv.c). */
static void test_model_kv(const char *path, int kv_last, int small) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path; mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[256] = "";
    if (small) m = small_model(path);
    else if (strata_model_load(&mp, &m, err, sizeof err)) m = NULL;
    if (!m) { REQUIRE(0, "%s: %s", path, err); return; }
    const int V = strata_n_vocab(m);
    const char *text = "It was the best of times, it was the worst of times, it was the age of wisdom, it was the "
                       "age of foolishness, it was the epoch of belief, it was the epoch of incredulity, it was the "
                       "season of Light, it was the season of Darkness, it was the spring of hope, it was the winter "
                       "of despair, we had everything before us, we had nothing before us, we were all going direct to "
                       "Heaven, we were all going direct the other way; in short, the period was so far like the "
                       "present period, that some of its noisiest authorities insisted on its being received.";
    int32_t ids[160];
    int n = strata_tokenize(m, text, strlen(text), 1, 0, ids, 160);
    REQUIRE(n >= 80, "%d tokens", n);
    for (int kv = STRATA_KV_F16; n >= 80 && kv <= kv_last; kv++) {
        const char *modes[2] = { "heads", "auto" };
        strata_session *ss[2];
        for (int i = 0; i < 2; i++) {
            setenv("STRATA_CPU_ATTN", modes[i], 1); env_reset_cache();
            strata_session_params sp = strata_session_default_params();
            sp.n_ctx = 128; sp.kv_type = kv;
            ss[i] = strata_session_new(m, &sp, err, sizeof err);
            unsetenv("STRATA_CPU_ATTN"); env_reset_cache();
        }
        REQUIRE(ss[0] && ss[1], "sessions: %s", err);
        int same = 0, steps = 0;
        if (ss[0] && ss[1]) {
            int ok = 1;
            for (int i = 0; i < 2; i++) ok &= strata_session_eval(ss[i], ids, 56) == 0;
            for (int p = 56; ok && p < 80; p++) {
                for (int i = 0; i < 2; i++) ok &= strata_session_eval(ss[i], &ids[p], 1) == 0;
                same += ok && !memcmp(strata_session_logits(ss[0]), strata_session_logits(ss[1]), sizeof(float) * (size_t)V);
                steps++;
            }
        }
        CHECKF(steps == 24 && same == steps, "%s, %s cache: decode steps with equal logits (heads, auto): %d of %d", path,
               kv == STRATA_KV_INT8 ? "int8" : "f16", same, steps);
        for (int i = 0; i < 2; i++) strata_session_free(ss[i]);
    }
    strata_model_free(m);
}

/* Quick mode: SmolLM2's part on tests/small_model.h's synthetic llama (SmolLM2's tokenizer, heads
 * of 64 in groups of 3: the same attention paths, both caches, at a thirteenth of the work; 42 of
 * the test's 111 CPU seconds under ASan on SmolLM2). */
static void test_model(const char *path) { test_model_kv(path, STRATA_KV_INT8, t_quick()); }
/* Quick mode: Gemma 3 with the f16 cache only (under ASan this model's two sessions per cache
 * type were 61 of the test's 111 CPU seconds); its head shape with the int8 cache still runs in
 * test_gemma_shape, and SmolLM2's shape runs both caches here. */
static void test_model_gemma(const char *path) { test_model_kv(path, t_quick() ? STRATA_KV_F16 : STRATA_KV_INT8, 0); }

int main(void) {
    RUN(test_documented_order);   /* every path the machine has (without AVX2: scalar) */
    if (!cpu_has_avx2_fma()) SKIP_ALL("avx2", "the AVX2 attention paths need AVX2/FMA/F16C");
    if (t_quick())
        fprintf(stderr, "test_attn: quick mode (STRATA_TEST_QUICK): the int8 cache to depth %d only (the f16 cache "
                "at every depth); Gemma 3's sessions with the f16 cache only; SmolLM2's on a 2-layer synthetic llama\n",
                QUICK_INT8_DEPTH);
    RUN(test_smollm2_shape);
    RUN(test_gemma_shape);
    RUN(test_detects);
    RUN(test_expf);
    RUN(test_prompt_tiles);
    const char *path = getenv("STRATA_MODEL"), *gemma = getenv("STRATA_GEMMA_MODEL");
    if (path && !access(path, R_OK)) RUN_ARG(test_model, path);
    else SKIP("model", "STRATA_MODEL not set or unreadable");
    if (gemma && !access(gemma, R_OK)) RUN_ARG(test_model_gemma, gemma);
    else SKIP("gemma-model", "STRATA_GEMMA_MODEL not set or unreadable");
    TEST_DONE();
}
