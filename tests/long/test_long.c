/* Long contexts end to end on the CPU (issue 19 item 2): `make test-long`, not part of `make
 * test` (each model evaluates its long prompt twice: minutes of CPU time).
 *
 * For SmolLM2 at 8k positions (its training context) and Gemma 3 270m at 12k (five of its six
 * layers attend to a sliding window of 512 positions, kept in a ring):
 *   - SmolLM2: a pass key planted early in a long haystack (~6400 positions before the
 *     question) is retrieved: greedy decoding after "The pass key is" gives its digits. Gemma 3
 *     270m does not retrieve one ~10000 positions back (measured 2026-12-01: " the pass key.
 *     The pass key is the pass"), so for it the greedy text is printed, not asserted;
 *   - the logits at the end of the prompt are equal bit for bit whether the prompt is evaluated
 *     in one call, or its last 500 tokens again in another session (the rows before copied from
 *     the first: strata_session_copy_prefix) as a call of 460 tokens and 40 decode steps (the
 *     decode steps at depth take the attention grouped by KV head, the one call the
 *     per-(token, head) tasks);
 *   - the KV cache's size is what the layout says: 2 x layers x kv_dim x 2 bytes per position,
 *     the sliding-window layers a ring of window + FWD_MAX_T + 1 positions.
 *
 * Synthetic models (`strata synth`'s generator, written on the spot: random weights, the real
 * head shapes, few layers and a small width so the quadratic prompt fits in minutes) at their
 * real training contexts, the positions random ids:
 *   - gemma3-32k: the Gemma 3 270m head shape (4 query heads of 256 on one KV head, q/k norms,
 *     post-norms, GELU), six layers: five with a sliding window of 512 positions (a ring of
 *     window + FWD_MAX_T + 1 rows), the sixth global; 32,768 positions, f16 cache;
 *   - qwen3-40k: a Qwen3 head shape (heads of 128, four query heads per KV head as Qwen3-8B/14B;
 *     q/k norms, NEOX RoPE, the MoE FFN of qwen3moe, top-2 of 8), one layer, 40,960 positions
 *     (Qwen3-30B-A3B's context), int8 cache.
 *   The prompt's attention reads every K/V row once per query head and token (~n^2/2 x heads x
 *   head_dim x 8 bytes: 4.4 TB for gemma3-32k, 3.4 TB for qwen3-40k), so the few heads and
 *   layers: minutes of CPU each.
 *   For each: the KV cache's size at load is the layout's figure (both cache formats); the
 *   logits at the end of a prompt of n_ctx - 8 positions are equal bit for bit between one call
 *   (passes of 512), the last 500 again in another session as passes of 7, 64, 389 and 40 decode
 *   steps (grouped by KV head), and the last 40 as decode steps with STRATA_CPU_ATTN=scalar
 *   (one position at a time); 8 greedy ids after both equal; and each layer's attention at the
 *   last position (`backend_cpu_attention` on a copy of the cache, a random query) equals the
 *   documented chunk order computed here from the cache's rows bit for bit (128 or 160 chunks
 *   of 256 on the global layers, 2 on the windows of 512) and the softmax in double within 1e-5 of the
 *   largest |v|.
 *
 * STRATA_MODEL and STRATA_GEMMA_MODEL name the models (make test-long sets them); an argument
 * or STRATA_LONG (smollm2, gemma3, synth-gemma3 or synth-qwen3; make test-long LONG=...) runs
 * one part. */
#include "test.h"
#include <math.h>
#include <stdint.h>
#include <unistd.h>
#include <time.h>
#include "strata.h"
#include "model/backend.h"
#include "model/synth.h"
#include "model/attn_order.h"
#include "engine/engine.h"
#include "cpu/backend_cpu.h"
#include "core/util.h"
#include "quant/quant.h"
#include "quant/blocks.h"
#include "core/env.h"

static const char *pre = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it. "
                         "I will quiz you about the important information there.\n";
static const char *fill = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
static const char *question = "\nWhat is the pass key? The pass key is";

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* The haystack of n_fill filler sentences with the key after key_at of them. */
static char *haystack(int n_fill, int key_at, const char *key) {
    size_t cap = strlen(pre) + (size_t)n_fill * strlen(fill) + 256;
    char *s = malloc(cap), *p = s;
    if (!s) return NULL;
    p += sprintf(p, "%s", pre);
    for (int i = 0; i < n_fill; i++) {
        if (i == key_at) p += sprintf(p, "The pass key is %s. Remember it. %s is the pass key. ", key, key);
        p += sprintf(p, "%s", fill);
    }
    sprintf(p, "%s", question);
    return s;
}

static strata_session *session(strata_model *m, int n_ctx) {
    strata_session_params sp = strata_session_default_params();   /* greedy */
    sp.n_ctx = n_ctx;
    char err[256];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}

static void long_context(const char *path, int n_ctx, int n_fill, int key_at, const char *key, int assert_key) {
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    char err[256];
    if (strata_model_load(&mp, &m, err, sizeof err)) { REQUIRE(0, "%s: %s", path, err); return; }
    strata_model_info info;
    strata_model_get_info(m, &info);
    const int V = strata_n_vocab(m);
    char *text = haystack(n_fill, key_at, key);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n_ctx);
    REQUIRE(text && ids, "allocation");
    int n = text && ids ? strata_tokenize(m, text, strlen(text), 1, 0, ids, n_ctx) : 0;
    /* the prompt fills most of the context and the key sits thousands of positions back */
    REQUIRE(n > n_ctx * 9 / 10 && n < n_ctx - 16, "%s: %d prompt tokens for a context of %d", path, n, n_ctx);
    strata_session *a = session(m, n_ctx), *b = session(m, n_ctx);
    REQUIRE(a && b, "sessions");
    if (n > n_ctx * 9 / 10 && n < n_ctx - 16 && a && b) {
        /* the KV cache's size */
        size_t pp = 0, total = strata_session_kv_bytes(a, &pp);
        const size_t row = (size_t)info.n_kv_heads * info.head_dim * 2;
        int rings = 0;
        size_t want = 0;
        for (int l = 0; l < info.n_layers; l++) {
            /* Gemma 3: every sixth layer global, the others a ring of the window (512 in this
             * file) + FWD_MAX_T + 1 positions */
            int ring = !strcmp(info.arch, "gemma3") && (l + 1) % 6 != 0;
            rings += ring;
            want += 2 * row * (size_t)(ring ? 512 + FWD_MAX_T + 1 : n_ctx);
        }
        CHECKF(pp == 2 * (size_t)info.n_layers * row && total == want,
               "%s: KV cache %zu bytes per position, %zu in all; the layout says %zu and %zu (%d ring layers)", path, pp,
               total, 2 * (size_t)info.n_layers * row, want, rings);
        fprintf(stderr, "%s: KV cache %zu bytes per position, %.1f MiB at %d positions (%d of %d layers a ring)\n", path,
                pp, total / 1048576.0, n_ctx, rings, info.n_layers);

        /* one call, then the last 500 tokens again as a call of 460 and 40 decode steps (500:
         * within what a sliding-window ring still holds after the prompt) */
        double t0 = now();
        int ok = strata_session_eval(a, ids, n) == 0;
        double t1 = now();
        float *la = malloc(sizeof(float) * (size_t)V);
        REQUIRE(ok && la, "%s: the one-call evaluation of %d tokens", path, n);
        if (ok && la) memcpy(la, strata_session_logits(a), sizeof(float) * (size_t)V);
        int steps = 0;
        ok = ok && strata_session_copy_prefix(b, a, n - 500) == 0 && strata_session_eval(b, ids + n - 500, 460) == 0;
        for (int p = n - 40; ok && p < n; p++, steps++) ok = strata_session_eval(b, ids + p, 1) == 0;
        double t2 = now();
        CHECKF(ok && la && steps == 40 && !memcmp(la, strata_session_logits(b), sizeof(float) * (size_t)V),
               "%s: the logits after %d tokens differ between one call and the last 500 as 460 + 40 decode steps", path, n);
        fprintf(stderr, "%s: %d tokens in one call %.1f s; the last 500 as 460 + 40 steps %.1f s (wall)\n", path, n,
                t1 - t0, t2 - t1);

        /* greedy decoding after the question: the key's digits */
        char out[256] = "";
        int len = 0;
        strata_detok dt;
        strata_detok_init(&dt);
        for (int i = 0; ok && i < 10; i++) {
            int32_t id = strata_session_sample(a);
            if (id == strata_token_eos(m)) break;
            int k = strata_detok_push(m, &dt, id, out + len, (int)sizeof out - 1 - len);
            if (k > 0) len += k;
            out[len] = 0;
            ok = strata_session_eval(a, &id, 1) == 0;
        }
        fprintf(stderr, "%s: after %d tokens (the key at token ~%d): \"%s\"\n", path, n,
                (int)((double)key_at / n_fill * n), out);
        if (assert_key)
            CHECKF(strstr(out, key) != NULL, "%s: the pass key %s planted ~%d tokens before the question: greedy gives \"%s\"",
                   path, key, (int)((double)(n_fill - key_at) / n_fill * n), out);
        else
            fprintf(stderr, "%s: the pass key %s (not asserted) %s\n", path, key, strstr(out, key) ? "retrieved" : "not retrieved");
        free(la);
    }
    strata_session_free(a);
    strata_session_free(b);
    free(ids);
    free(text);
    strata_model_free(m);
}

/* ---- synthetic shapes at 32k and 40k ------------------------------------------------------- */

static uint64_t lcg = 0x243F6A8885A308D3ull;
static uint32_t rnd32(void) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg >> 33);
}
static float rndf(void) { return (float)(rnd32() >> 8) / (float)(1 << 24) * 2.0f - 1.0f; }   /* [-1, 1) */

/* position p's row of a layer's K or V cache as f32 (slot p % cap: the ring of a window) */
static void cache_row(const backend *be, int layer, int which, int cap, int kv_int8, int p, int kvd, float *out) {
    size_t bpp = 0;
    const uint8_t *rows = backend_cpu_kv_layer(be, layer, which, &bpp);
    const uint8_t *r = rows + (size_t)(p % cap) * bpp;
    if (kv_int8) {
        const act_q8_0 *b = (const act_q8_0 *)r;
        for (int i = 0; i < kvd; i++) out[i] = b[i / 32].d * (float)b[i / 32].qs[i % 32];
    } else {
        const uint16_t *h = (const uint16_t *)r;
        for (int i = 0; i < kvd; i++) out[i] = fp16_to_f32(h[i]);
    }
}

/* One layer's attention at position pos of session d's cache (d: a copy, the call stores this
 * position's k and v): the backend against the documented order (docs/KERNELS.md "Attention
 * order") written here from the cache's rows, bit for bit, and against the softmax in double. */
static void check_attention_at(strata_session *d, int layer, int pos, int kv_int8, const char *tag) {
    const hparams *hp = &d->m->hp;
    const int H = hp->n_heads, HD = hp->head_dim, KVH = hp->n_kv_heads, kvd = KVH * HD, G = H / KVH;
    const int win = d->m->w.layers[layer].sliding ? hp->sliding_window : 0;
    const int cap = win && win + FWD_MAX_T + 1 < d->n_ctx ? win + FWD_MAX_T + 1 : d->n_ctx;
    const int first = win && pos - win + 1 > 0 ? pos - win + 1 : 0, n = pos - first + 1;
    float *q = malloc(sizeof(float) * (size_t)H * HD), *k = malloc(sizeof(float) * kvd), *v = malloc(sizeof(float) * kvd);
    float *out = malloc(sizeof(float) * (size_t)H * HD), *ref = malloc(sizeof(float) * HD);
    float *ks = malloc(sizeof(float) * (size_t)n * kvd), *vs = malloc(sizeof(float) * (size_t)n * kvd);
    float *s = malloc(sizeof(float) * (size_t)n), *u = malloc(sizeof(float) * HD);
    const int nch = ATTN_N_CHUNKS(n);
    float *mc = malloc(sizeof(float) * nch), *lc = malloc(sizeof(float) * nch);
    double *rd = malloc(sizeof(double) * HD), *sd = malloc(sizeof(double) * (size_t)n);
    REQUIRE(q && k && v && out && ref && ks && vs && s && u && mc && lc && rd && sd, "allocation");
    /* q of the scale of a normed, rotated query (q norms: |q_h| ~ sqrt(HD)); k and v random */
    for (int i = 0; i < H * HD; i++) q[i] = 1.7f * rndf();
    for (int i = 0; i < kvd; i++) { k[i] = 1.7f * rndf(); v[i] = rndf(); }
    backend_cpu_attention(d->be, d->be->kv, layer, q, k, v, 1, pos, hp->attn_scale, win, out);
    for (int p = first; p <= pos; p++) {
        cache_row(d->be, layer, 0, cap, kv_int8, p, kvd, ks + (size_t)(p - first) * kvd);
        cache_row(d->be, layer, 1, cap, kv_int8, p, kvd, vs + (size_t)(p - first) * kvd);
    }
    int bad_bits = 0, bad_tol = 0;
    double worst = 0;
    for (int h = 0; h < H; h++) {
        const float *qh = q + (size_t)h * HD;
        const int off = (h / G) * HD;
        float M = -INFINITY;
        for (int i = 0; i < n; i++) {
            const float *kr = ks + (size_t)i * kvd + off;
            float a = 0.0f;
            for (int e = 0; e < HD; e++) a = a + qh[e] * kr[e];
            s[i] = a * hp->attn_scale;
            if (s[i] > M) M = s[i];
        }
        /* double reference from the same float scores' inputs */
        double Md = -INFINITY, Ld = 0, vmax = 0;
        for (int i = 0; i < n; i++) {
            const float *kr = ks + (size_t)i * kvd + off;
            double a = 0;
            for (int e = 0; e < HD; e++) a += (double)qh[e] * kr[e];
            sd[i] = a * hp->attn_scale;
            if (sd[i] > Md) Md = sd[i];
        }
        for (int e = 0; e < HD; e++) rd[e] = 0;
        for (int i = 0; i < n; i++) {
            double w = exp(sd[i] - Md);
            Ld += w;
            const float *vr = vs + (size_t)i * kvd + off;
            for (int e = 0; e < HD; e++) { rd[e] += w * vr[e]; if (fabs(vr[e]) > vmax) vmax = fabs(vr[e]); }
        }
        /* the documented order */
        for (int c = 0; c < nch; c++) {
            int c0 = c * ATTN_CHUNK, c1 = c0 + ATTN_CHUNK - 1 < n - 1 ? c0 + ATTN_CHUNK - 1 : n - 1;
            float m = -INFINITY, l = 0.0f;
            for (int i = c0; i <= c1; i++) if (s[i] > m) m = s[i];
            for (int i = c0; i <= c1; i++) { s[i] = expf(s[i] - m); l = l + s[i]; }
            mc[c] = m; lc[c] = l;
        }
        float L = 0.0f;
        for (int c = 0; c < nch; c++) L = L + lc[c] * expf(mc[c] - M);
        for (int e = 0; e < HD; e++) ref[e] = 0.0f;
        for (int c = 0; c < nch; c++) {
            int c0 = c * ATTN_CHUNK, c1 = c0 + ATTN_CHUNK - 1 < n - 1 ? c0 + ATTN_CHUNK - 1 : n - 1;
            float r = 1.0f / lc[c], a = (lc[c] * expf(mc[c] - M)) / L;
            for (int e = 0; e < HD; e++) u[e] = 0.0f;
            for (int i = c0; i <= c1; i++) {
                const float *vr = vs + (size_t)i * kvd + off;
                for (int e = 0; e < HD; e++) u[e] = u[e] + (s[i] * r) * vr[e];
            }
            for (int e = 0; e < HD; e++) ref[e] = ref[e] + u[e] * a;
        }
        const float *o = out + (size_t)h * HD;
        bad_bits += memcmp(o, ref, sizeof(float) * HD) != 0;
        for (int e = 0; e < HD; e++) {
            double dd = fabs(o[e] - rd[e] / Ld) / (vmax > 0 ? vmax : 1);
            if (dd > worst) worst = dd;
            bad_tol += !(dd <= 1e-5);
        }
    }
    CHECKF(bad_bits == 0, "%s layer %d at position %d (%d positions, %d chunks): %d of %d heads differ from the documented order",
           tag, layer, pos, n, nch, bad_bits, H);
    CHECKF(bad_tol == 0, "%s layer %d at position %d: %d values off the double softmax by more than 1e-5 of max|v| (worst %.3g)",
           tag, layer, pos, bad_tol, worst);
    fprintf(stderr, "%s: layer %d (%s) at position %d: %d positions, %d chunks; %s the documented order; %.2g of max|v| from double\n",
            tag, layer, win ? "window" : "global", pos, n, nch, bad_bits ? "!=" : "==", worst);
    free(q); free(k); free(v); free(out); free(ref); free(ks); free(vs); free(s); free(u); free(mc); free(lc); free(rd); free(sd);
}

static strata_session *session_kv(strata_model *m, int n_ctx, int kv_type) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = n_ctx;
    sp.kv_type = kv_type;
    char err[256];
    strata_session *s = strata_session_new(m, &sp, err, sizeof err);
    if (!s) fprintf(stderr, "session: %s\n", err);
    return s;
}

static int greedy_ids(strata_session *s, int n, int32_t *ids) {
    for (int i = 0; i < n; i++) {
        ids[i] = strata_session_sample(s);
        if (strata_session_eval(s, &ids[i], 1)) return i;
    }
    return n;
}

static void synth_long(const char *tag, const synth_params *p, int kv_type) {
    char path[64], err[512];
    snprintf(path, sizeof path, "/tmp/strata-long-%s-%d.gguf", tag, (int)getpid());
    double t0 = now();
    if (synth_write(p, path, err, sizeof err)) { REQUIRE(0, "%s: synth: %s", tag, err); return; }
    strata_model_params mp = strata_model_default_params();
    mp.path = path;
    mp.device = STRATA_DEVICE_CPU;
    strata_model *m = NULL;
    int rc = strata_model_load(&mp, &m, err, sizeof err);
    unlink(path);
    if (rc) { REQUIRE(0, "%s: load: %s", tag, err); return; }
    const int n_ctx = p->n_ctx, n = n_ctx - 8, V = strata_n_vocab(m), kv8 = kv_type == STRATA_KV_INT8;
    const hparams *hp = &m->hp;

    /* the KV cache at load: per layer a ring of window + FWD_MAX_T + 1 rows or n_ctx rows of
     * n_kv_heads * head_dim values, f16 (2 bytes) or int8 (a 36-byte block per 32) */
    for (int f = 0; f < 2; f++) {
        strata_session *s = session_kv(m, n_ctx, f ? STRATA_KV_INT8 : STRATA_KV_F16);
        REQUIRE(s, "%s: a session of %d positions", tag, n_ctx);
        if (!s) continue;
        const size_t kvd = (size_t)hp->n_kv_heads * hp->head_dim, row = f ? kvd / 32 * 36 : kvd * 2;
        size_t want = 0, pp = 0, total = strata_session_kv_bytes(s, &pp);
        int rings = 0;
        for (int l = 0; l < hp->n_layers; l++) {
            int ring = hp->arch == ARCH_GEMMA3 && (l + 1) % 6 != 0;
            rings += ring;
            want += 2 * row * (size_t)(ring ? p->sliding_window + FWD_MAX_T + 1 : n_ctx);
        }
        CHECKF(pp == 2 * row * (size_t)hp->n_layers && total == want,
               "%s: %s KV cache %zu bytes per position, %zu in all; the layout says %zu and %zu", tag, f ? "int8" : "f16",
               pp, total, 2 * row * (size_t)hp->n_layers, want);
        fprintf(stderr, "%s: KV cache (%s) %zu bytes per position, %.2f MiB at %d positions (%d of %d layers a ring of %d)\n",
                tag, f ? "int8" : "f16", pp, total / 1048576.0, n_ctx, rings, hp->n_layers,
                rings ? p->sliding_window + FWD_MAX_T + 1 : 0);
        strata_session_free(s);
    }

    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n_ctx);
    float *la = calloc((size_t)V, sizeof(float));
    strata_session *a = session_kv(m, n_ctx, kv_type), *b = session_kv(m, n_ctx, kv_type), *d = session_kv(m, n_ctx, kv_type);
    /* the scalar attention (one position at a time, no grouped decode): read at session creation */
    setenv("STRATA_CPU_ATTN", "scalar", 1);
    env_reset_cache();
    strata_session *c = session_kv(m, n_ctx, kv_type);
    unsetenv("STRATA_CPU_ATTN");
    env_reset_cache();
    REQUIRE(ids && la && a && b && c && d, "%s: sessions", tag);
    if (ids && la && a && b && c && d) {
        for (int i = 0; i < n; i++) ids[i] = (int32_t)(rnd32() % 256);   /* the byte tokens */
        double t1 = now();
        int ok = strata_session_eval(a, ids, n) == 0;
        double t2 = now();
        REQUIRE(ok, "%s: the one-call evaluation of %d positions", tag, n);
        if (ok) memcpy(la, strata_session_logits(a), sizeof(float) * (size_t)V);
        float lo = la[0], hi = la[0];
        int finite = 1;
        for (int i = 0; i < V; i++) { finite &= isfinite(la[i]); if (la[i] < lo) lo = la[i]; if (la[i] > hi) hi = la[i]; }
        CHECKF(ok && finite && hi - lo > 0.1f, "%s: logits after %d positions: finite %d, range %g", tag, n, finite, hi - lo);

        /* the last 500 as passes of 7, 64, 389 and 40 decode steps */
        int steps = 0;
        ok = ok && strata_session_copy_prefix(b, a, n - 500) == 0 && strata_session_eval(b, ids + n - 500, 7) == 0 &&
             strata_session_eval(b, ids + n - 493, 64) == 0 && strata_session_eval(b, ids + n - 429, 389) == 0;
        for (int q = n - 40; ok && q < n; q++, steps++) ok = strata_session_eval(b, ids + q, 1) == 0;
        double t3 = now();
        CHECKF(ok && steps == 40 && !memcmp(la, strata_session_logits(b), sizeof(float) * (size_t)V),
               "%s: the logits after %d positions differ between one call and the last 500 as 7 + 64 + 389 + 40 steps", tag, n);
        /* the last 40 as decode steps on the scalar path */
        steps = 0;
        int okc = ok && strata_session_copy_prefix(c, a, n - 40) == 0;
        for (int q = n - 40; okc && q < n; q++, steps++) okc = strata_session_eval(c, ids + q, 1) == 0;
        double t4 = now();
        CHECKF(okc && steps == 40 && !memcmp(la, strata_session_logits(c), sizeof(float) * (size_t)V),
               "%s: the logits after %d positions differ between one call and 40 decode steps with STRATA_CPU_ATTN=scalar", tag, n);
        /* greedy continuations */
        int32_t ga[8], gb[8];
        int na = ok ? greedy_ids(a, 8, ga) : 0, nb = ok ? greedy_ids(b, 8, gb) : 0;
        CHECKF(na == 8 && nb == 8 && !memcmp(ga, gb, sizeof ga), "%s: greedy ids after the one call and the split prompt differ", tag);
        fprintf(stderr, "%s: %d positions in one call %.1f s; the last 500 as 7 + 64 + 389 + 40 steps %.1f s; 40 scalar steps %.1f s; "
                "greedy %d %d %d %d %d %d %d %d (wall; synth + load %.1f s)\n", tag, n, t2 - t1, t3 - t2, t4 - t3,
                ga[0], ga[1], ga[2], ga[3], ga[4], ga[5], ga[6], ga[7], t1 - t0);

        /* every layer's attention at position n on a copy of the cache (a's rows up to n) */
        if (strata_session_copy_prefix(d, b, n) == 0) {
            for (int l = 0; l < hp->n_layers; l++) check_attention_at(d, l, n, kv8, tag);
        } else REQUIRE(0, "%s: the copy of the cache", tag);
    }
    strata_session_free(a);
    strata_session_free(b);
    strata_session_free(c);
    strata_session_free(d);
    free(ids);
    free(la);
    strata_model_free(m);
}

/* Gemma 3 270m's heads (4 of 256 on one KV head), five window layers and a global one, 32k */
static void test_synth_gemma3_32k(void) {
    synth_params p;
    synth_default_params(&p, ARCH_GEMMA3);
    p.n_layers = 6; p.n_embd = 256; p.n_ff = 512; p.n_vocab = 512; p.tokenizer_path = "builtin";
    p.n_threads = 2;
    synth_long("synth-gemma3-32k", &p, STRATA_KV_F16);
}

/* Qwen3 heads (4 of 128 per KV head), the qwen3moe FFN, 40k, int8 cache */
static void test_synth_qwen3_40k(void) {
    synth_params p;
    synth_default_params(&p, ARCH_QWEN3MOE);
    p.n_layers = 1; p.n_embd = 256; p.n_heads = 4; p.n_kv_heads = 1; p.n_experts = 8; p.n_experts_used = 2;
    p.n_ff_exp = 256; p.n_vocab = 512; p.tokenizer_path = "builtin";
    p.type_attn = p.type_embd = p.type_output = TYPE_Q8_0; p.type_experts = TYPE_Q4_K;
    p.n_threads = 2;
    synth_long("synth-qwen3-40k", &p, STRATA_KV_INT8);
}

static void test_smollm2_8k(const char *path) { long_context(path, 8192, 325, 60, "68419", 1); }
static void test_gemma3_12k(const char *path) { long_context(path, 12288, 500, 80, "40273", 0); }

int main(int argc, char **argv) {
    const char *smol = getenv("STRATA_MODEL"), *gemma = getenv("STRATA_GEMMA_MODEL");
    const char *only = argc > 1 ? argv[1] : getenv("STRATA_LONG") ? getenv("STRATA_LONG") : "";
    if (*only && strcmp(only, "smollm2") && strcmp(only, "gemma3") && strcmp(only, "synth-gemma3") &&
        strcmp(only, "synth-qwen3")) {
        fprintf(stderr, "usage: test_long [smollm2|gemma3|synth-gemma3|synth-qwen3]\n");
        return 2;
    }
    if (!*only || !strcmp(only, "synth-gemma3")) RUN(test_synth_gemma3_32k);
    if (!*only || !strcmp(only, "synth-qwen3")) RUN(test_synth_qwen3_40k);
    if (!*only || !strcmp(only, "smollm2")) {
        if (smol && !access(smol, R_OK)) RUN_ARG(test_smollm2_8k, smol);
        else SKIP("model", "STRATA_MODEL not set or unreadable");
    }
    if (!*only || !strcmp(only, "gemma3")) {
        if (gemma && !access(gemma, R_OK)) RUN_ARG(test_gemma3_12k, gemma);
        else SKIP("gemma-model", "STRATA_GEMMA_MODEL not set or unreadable");
    }
    TEST_DONE();
}
