/* The canonical attention order (docs/KERNELS.md "Attention order", src/model/attn_order.h) on
 * the CPU backend, without a model file: backend_cpu_attention on random q, k, v.
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
 *   - paths: STRATA_CPU_ATTN=scalar and STRATA_CPU_KV_PASS=0 give the same bits. */
#include "test.h"
#include <stdint.h>
#include <stdlib.h>
#include "model/backend.h"
#include "model/model.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"
#include "quant/quant.h"
#include "core/util.h"
#include "core/env.h"

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
    for (size_t ti = 0; ti < sizeof Ts / sizeof Ts[0]; ti++) {
        if (Ts[ti] > FWD_MAX_T) continue;
        be = new_cpu(C, tp);
        REQUIRE(be != NULL, "backend");
        if (!be) return;
        run_passes(C, &in, be, Ts[ti], outT);
        be->ops->free(be);
        CHECKF(!memcmp(out1, outT, (size_t)N_POS * QD * 4), "%s: passes of %d tokens differ from token by token", C->name,
               Ts[ti]);
    }
    /* the scalar path and the per-task K/V conversion: the same bits */
    static const char *envs[][2] = { { "STRATA_CPU_ATTN", "scalar" }, { "STRATA_CPU_KV_PASS", "0" } };
    for (int e = 0; e < 2; e++) {
        setenv(envs[e][0], envs[e][1], 1); env_reset_cache();
        be = new_cpu(C, tp);
        unsetenv(envs[e][0]); env_reset_cache();
        REQUIRE(be != NULL, "backend");
        if (!be) return;
        run_passes(C, &in, be, e ? 8 : 1, outT);
        be->ops->free(be);
        CHECKF(!memcmp(out1, outT, (size_t)N_POS * QD * 4), "%s: %s=%s changes the bits", C->name, envs[e][0], envs[e][1]);
    }
    printf("%-28s documented order bit for bit: %s (%d rows; %d of one chunk == the order before), max rel to double %.2g, passes of 8/5/3 and the "
           "scalar / per-task paths: same bits\n", C->name, bits_ok ? "yes" : "NO", n_checked, n_one, worst);
    free(in.q); free(in.k); free(in.v); free(in.ks); free(in.vs); free(out1); free(outT);
}

int main(void) {
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
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) check_cfg(&cfgs[i], tp);
    threadpool_free(tp);
    TEST_DONE();
}
