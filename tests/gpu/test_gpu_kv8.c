/* The int8 KV cache on the GPU (issue 19, item 3: `--kv int8 --device cuda`). The CUDA backend
 * keeps the CPU's int8 rows (act_q8_0 blocks: f32 d, then 32 int8 per 32 values; the same
 * bytes) and reads a value as d * (float)q in the canonical attention order, so its results
 * are the CPU int8 backend's bits:
 *   - ops: the KV store writes the CPU's bytes; the attention (the one-chunk kernel, the chunk
 *     path in parallel and serial, positions from the host and from device memory) gives the
 *     CPU's outputs for passes of 1..64 columns to depth 1,300 (memcmp), head shapes hd 64 /
 *     128 / 256 with GQA groups, the full cache and windows;
 *   - synthetic models (src/model/synth.h: llama hd 64 and hd 256, qwen3moe hd 128 with neox
 *     RoPE and q/k norms): CUDA int8 logits == CPU int8 logits after prompts in passes of 1, 8,
 *     9, 64 and 512 columns (the decode attention with RoPE and the KV store folded in, the
 *     per-column kernel, the query-tile kernel) up to depth 1,240, and == the same GPU session
 *     with the ops unfused, the query tiles off or the chunks walked by one CTA; teacher-forced
 *     steps past it; the caches' bytes == the CPU's; graph decode ids == the CPU's argmax
 *     across a chunk boundary and == eager decode;
 *   - several sessions in one pass (int8 alone: the column table; then f16 sessions among them:
 *     a launch per sequence) == each alone == the CPU; a copied prefix and a rewind == a cold
 *     prefill; KV memory reported is the int8 size (36 bytes per 32 values: 0.5625 x f16).
 * GPU-vs-CPU bits are asserted when the GPU's expf has libm's bits (expf_host.cuh), as in
 * test_gpu_e2e; GPU-vs-GPU comparisons always. */
#include "test.h"
#include "gpu_order.h"
#include "rig.h"
#include "model/backend.h"
#include "cpu/backend_cpu.h"
#include "cpu/threadpool.h"
#include "engine/engine.h"

static int libm;

static uint64_t rs = 987654321;
static float rnd(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)(rs >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}
static void fill(float *p, size_t n, float scale) { for (size_t i = 0; i < n; i++) p[i] = rnd() * scale; }

/* ---- ops: KV store + attention on an int8 cache vs the CPU int8 backend ------------------ */
typedef struct { const char *name; int H, KVH, HD; } shape;

static void ops_attention(const shape *S, threadpool *tp) {
    t_current = S->name;
    const int n_ctx = 1400, H = S->H, KVH = S->KVH, HD = S->HD, TMAX = 64, OPS_DEPTH = 1300;
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_layers = 1; hp.n_heads = H; hp.n_kv_heads = KVH; hp.head_dim = HD; hp.n_embd = H * HD;
    hp.n_ff = 256; hp.n_vocab = 100; hp.n_ctx_train = n_ctx; hp.n_rot = HD; hp.rope_base = 10000.0f;
    hp.rope_base_local = 10000.0f; hp.rope_scale = 1.0f; hp.rms_eps = 1e-5f; hp.attn_scale = 1.0f / sqrtf((float)HD);
    hp.embd_scale = 1.0f;
    static model_weights mw;
    char err[512];
    backend *cpu = backend_cpu_new(&hp, &mw, n_ctx, tp, 0, 1, err, sizeof err);
    REQUIRE(cpu != NULL, "%s", err);
    if (!cpu) return;
    const size_t kvd = (size_t)KVH * HD, rb = kvd / 32 * sizeof(act_q8_0);
    size_t qn = (size_t)TMAX * H * HD, kn = (size_t)TMAX * kvd;
    float *q = malloc(qn * 4), *k = malloc(kn * 4), *v = malloc(kn * 4), *ref = malloc(qn * 4), *out = malloc(qn * 4);
    float *dq = cuda_malloc(qn * 4), *dk = cuda_malloc(kn * 4), *dv = cuda_malloc(kn * 4), *dout = cuda_malloc(qn * 4);
    void *kc = cuda_malloc((size_t)n_ctx * rb), *vc = cuda_malloc((size_t)n_ctx * rb);
    uint8_t *cache = malloc((size_t)n_ctx * rb);
    const int ok0 = q && k && v && ref && out && dq && dk && dv && dout && kc && vc && cache;
    REQUIRE(ok0, "allocation");
    static const int Ts[] = { 1, 8, 9, 64, 3, 1, 17, 2, 1, 33 };
    int ok = ok0, bits = 1, passes = 0, serial_same = 1, paths_ok = 1, n_exact = 0, n_chunk = 0;
    for (int pos = 0, i = 0; ok && pos < OPS_DEPTH; i++) {
        int T = Ts[i % 10];
        if (pos + T > OPS_DEPTH) T = OPS_DEPTH - pos;
        /* mostly the whole cache; every fifth pass a window of 300 (two chunks from its start) */
        const int window = i % 5 == 4 ? 300 : 0;
        fill(q, (size_t)T * H * HD, 1.5f); fill(k, (size_t)T * kvd, 1.0f); fill(v, (size_t)T * kvd, 1.0f);
        cuda_memcpy_h2d(dq, q, (size_t)T * H * HD * 4); cuda_memcpy_h2d(dk, k, (size_t)T * kvd * 4);
        cuda_memcpy_h2d(dv, v, (size_t)T * kvd * 4);
        backend_cpu_attention(cpu, cpu->kv, 0, q, k, v, T, pos, hp.attn_scale, window, ref);
        /* T = 1: the position from device memory (the decode graph's launch: a grid over every
         * chunk of n_ctx) and the partials it wrote (none on the one-chunk path) */
        const int dev_pos = T == 1 && i % 2 == 0;
        long wrote = -1;
        ok = cuda_test_attention_kv(dq, dk, dv, kc, vc, 1, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dev_pos, dout,
                                    T == 1 ? &wrote : NULL) == 0;
        cuda_memcpy_d2h(out, dout, (size_t)T * H * HD * 4);
        if (memcmp(out, ref, (size_t)T * H * HD * 4)) {
            if (bits) fprintf(stderr, "%s: pass at %d (T %d, window %d) differs from the CPU int8 attention\n", S->name, pos, T,
                              window);
            bits = 0;
        }
        if (T == 1) {
            const int span = window > 0 && window < pos + 1 ? window : pos + 1;
            if (span <= 256) { n_exact++; paths_ok &= wrote == 0; }
            else { n_chunk++; paths_ok &= wrote == (long)H * ((span + 255) / 256) * (HD + 2); }
        }
        if (ok && (i % 3 == 0 || T == 1)) {
            /* the chunks walked by one CTA; and (T = 1) the chunk path with one K/V tile
             * (STRATA_CUDA_ATTN_TILES=1; decode loads K and V at once where two fit): the same bits */
            float *o2 = malloc((size_t)T * H * HD * 4);
            if (T == 1) cuda_attention_set_tiles(1);
            ok = o2 && cuda_test_attention_kv(dq, dk, dv, kc, vc, 1, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx,
                                              T == 1 ? 0 : 1, 0, dout, NULL) == 0;
            cuda_attention_set_tiles(3);
            if (ok) cuda_memcpy_d2h(o2, dout, (size_t)T * H * HD * 4);
            if (ok && memcmp(o2, out, (size_t)T * H * HD * 4)) serial_same = 0;
            free(o2);
        }
        passes++;
        pos += T;
    }
    CHECKF(ok, "%s: launch failed: %s", S->name, cuda_last_error());
    CHECKF(serial_same, "%s: serial chunks or one K/V tile give other bits on an int8 cache", S->name);
    CHECKF(paths_ok && n_exact > 0 && n_chunk > 0, "%s: the one-chunk / chunk paths (%d / %d steps) wrote the wrong partials",
           S->name, n_exact, n_chunk);
    if (libm) CHECKF(bits, "%s: the int8 attention on the GPU differs from the CPU's", S->name);
    /* the stored blocks: the GPU's cache bytes are the CPU's */
    int same_bytes = 0;
    for (int which = 0; ok && which <= 1; which++) {
        size_t crb = 0;
        const void *cc = backend_cpu_kv_layer(cpu, 0, which, &crb);
        CHECK_EQ_INT(crb, rb);
        cuda_memcpy_d2h(cache, which ? vc : kc, (size_t)OPS_DEPTH * rb);
        same_bytes += crb == rb && !memcmp(cache, cc, (size_t)OPS_DEPTH * rb);
    }
    CHECKF(same_bytes == 2, "%s: the GPU's int8 K/V rows differ from the CPU's", S->name);
    printf("ops  %-28s int8 cache bytes == CPU: %s; attention == CPU int8: %s; %d passes (T 1..64) to depth %d, "
           "%d one-chunk / %d chunk-path steps, serial chunks / one tile == default: %s\n", S->name, same_bytes == 2 ? "yes" : "NO",
           bits ? "yes" : "no", passes, OPS_DEPTH, n_exact, n_chunk, serial_same ? "yes" : "NO");
    free(q); free(k); free(v); free(ref); free(out); free(cache);
    cuda_free(dq); cuda_free(dk); cuda_free(dv); cuda_free(dout); cuda_free(kc); cuda_free(vc);
    cpu->ops->free(cpu);
}

/* ---- models ---------------------------------------------------------------------------- */
static strata_session *session(strata_model *m, int n_ctx, int kv) {
    strata_session_params sp = strata_session_default_params();
    sp.n_ctx = n_ctx; sp.kv_type = kv;
    return rig_session_p(m, &sp);
}
static void prompt_ids(int which, int V, int32_t *ids, int n) { rig_prompt_ids(0x9e3779b97f4a7c15ull, which, V, ids, n); }
/* ids[0..n) in passes of w columns */
static int eval_by(strata_session *s, const int32_t *ids, int n, int w) {
    for (int i = 0; i < n; i += w)
        if (strata_session_eval(s, ids + i, n - i < w ? n - i : w)) return -1;
    return 0;
}

#define N_CTX 1536
#define DEPTH 1240

/* GPU int8 session: prompt[0..d) in passes of w (with an environment switch set while the
 * session is made), logits into out */
static int gpu_logits(strata_model *mg, const int32_t *pr, int d, int w, const char *env, const char *val, float *out,
                      int V) {
    if (env) set_env(env, val);
    strata_session *s = session(mg, N_CTX, STRATA_KV_INT8);
    int rc = !s || eval_by(s, pr, d, w);
    if (!rc) memcpy(out, strata_session_logits(s), (size_t)V * 4);
    strata_session_free(s);
    if (env) set_env(env, NULL);
    return rc ? -1 : 0;
}

static void model_check(const char *label, const char *path) {
    t_current = label;
    strata_model *mc = rig_load(path, STRATA_DEVICE_CPU), *mg = rig_load(path, STRATA_DEVICE_CUDA);
    REQUIRE(mc && mg, "load");
    if (!mc || !mg) { strata_model_free(mc); strata_model_free(mg); return; }
    const int V = strata_n_vocab(mg);
    int32_t *pr = malloc(sizeof(int32_t) * (DEPTH + 64));
    prompt_ids(1, V, pr, DEPTH + 64);
    /* the CPU int8 reference at the depths the widths reach */
    static const int widths[5] = { 1, 8, 9, 64, 512 }, depth_of[5] = { 300, 600, 700, DEPTH, DEPTH };
    float *ref[5], *got = malloc((size_t)V * 4), *base = malloc((size_t)V * 4);
    strata_session *sc = session(mc, N_CTX, STRATA_KV_INT8);
    REQUIRE(sc != NULL, "cpu session");
    int at = 0;
    for (int i = 0; i < 5; i++) {
        ref[i] = malloc((size_t)V * 4);
        if (sc && depth_of[i] > at) { CHECK(eval_by(sc, pr + at, depth_of[i] - at, 512) == 0); at = depth_of[i]; }
        if (sc) memcpy(ref[i], strata_session_logits(sc), (size_t)V * 4);
    }
    /* every width on the GPU == the CPU */
    int same_cpu = 0;
    for (int i = 0; i < 5; i++) {
        int rc = gpu_logits(mg, pr, depth_of[i], widths[i], NULL, NULL, got, V);
        CHECKF(rc == 0, "%s: GPU int8 session, passes of %d", label, widths[i]);
        const int eq = !rc && !memcmp(got, ref[i], (size_t)V * 4);
        same_cpu += eq;
        if (libm) CHECKF(eq, "%s: passes of %d to depth %d: GPU int8 logits != CPU int8", label, widths[i], depth_of[i]);
        if (i == 3) memcpy(base, got, (size_t)V * 4);
        if (i == 4) CHECKF(!memcmp(got, base, (size_t)V * 4), "%s: GPU passes of 512 vs 64 differ", label);
    }
    printf("%-30s CUDA int8 == CPU int8 logits after passes of 1 / 8 / 9 / 64 / 512 (depths 300..%d): %d of 5\n", label,
           DEPTH, same_cpu);
    /* the variants: same bits as passes of 64 */
    static const char *venv[3][2] = { { "STRATA_CUDA_FUSE", "0" }, { "STRATA_CUDA_ATTN_QTILE", "0" },
                                      { "STRATA_CUDA_ATTN", "serial" } };
    int vsame = 0;
    for (int i = 0; i < 3; i++) {
        int rc = gpu_logits(mg, pr, DEPTH, 64, venv[i][0], venv[i][1], got, V);
        const int eq = !rc && !memcmp(got, base, (size_t)V * 4);
        vsame += eq;
        CHECKF(eq, "%s: %s=%s changes the int8 logits", label, venv[i][0], venv[i][1]);
    }
    printf("%-30s unfused ops / no query tiles / serial chunks == default: %d of 3\n", label, vsame);
    /* one GPU session at the depth: its cache bytes, teacher-forced steps, graph decode */
    strata_session *sg = session(mg, N_CTX, STRATA_KV_INT8);
    REQUIRE(sg && sc, "sessions");
    if (sg && sc && eval_by(sg, pr, DEPTH, 512) == 0) {
        size_t grb = 0, crb = 0;
        const int L = mg->hp.n_layers;
        uint8_t *rows = NULL;
        int layers_same = 0;
        for (int l = 0; l < L; l++)
            for (int which = 0; which <= 1; which++) {
                const void *cc = backend_cpu_kv_layer(sc->be, l, which, &crb);
                if (!rows) rows = malloc((size_t)DEPTH * crb);
                if (rows && backend_cuda_kv_read(sg->be, l, which, 0, DEPTH, rows, &grb) == 0 && grb == crb &&
                    !memcmp(rows, cc, (size_t)DEPTH * crb))
                    layers_same++;
            }
        free(rows);
        CHECKF(grb == (size_t)mg->hp.n_kv_heads * mg->hp.head_dim / 32 * 36, "%s: GPU int8 row of %zu bytes", label, grb);
        if (libm) CHECKF(layers_same == 2 * L, "%s: %d of %d K/V caches byte-equal to the CPU's", label, layers_same, 2 * L);
        printf("%-30s K/V caches byte-equal to the CPU's at depth %d: %d of %d (rows of %zu bytes)\n", label, DEPTH,
               layers_same, 2 * L, grb);
        int steps = 0, eq = 0;
        for (int i = 0; i < 8; i++) {   /* teacher-forced: the CPU's argmax */
            int32_t id = argmax(strata_session_logits(sc), V);
            if (strata_session_eval(sc, &id, 1) || strata_session_eval(sg, &id, 1)) break;
            steps++;
            eq += !memcmp(strata_session_logits(sc), strata_session_logits(sg), (size_t)V * 4);
        }
        CHECK_EQ_INT(steps, 8);
        if (libm) CHECKF(eq == 8, "%s: teacher-forced int8 steps: %d of 8 equal", label, eq);
        /* graph decode steps from DEPTH + 8, across the chunk boundary at 1280 */
        int gsteps = 0, gequal = 0, pos = DEPTH + 8;
        int32_t cur = argmax(strata_session_logits(sc), V);
        for (int i = 0; i < 40 && sg->be->ops->decode_step; i++) {
            int32_t nx = sg->be->ops->decode_step(sg->be, cur, pos + i, NULL);
            if (nx < 0 || strata_session_eval(sc, &cur, 1)) break;
            gsteps++;
            gequal += argmax(strata_session_logits(sc), V) == nx;
            cur = nx;
        }
        CHECK_EQ_INT(gsteps, 40);
        if (libm) CHECKF(gequal == 40, "%s: graph decode ids == CPU int8 argmax at %d of 40", label, gequal);
        printf("%-30s teacher-forced steps == CPU: %d of 8; graph decode %d-%d ids == CPU argmax: %d of %d\n", label, eq,
               pos, pos + 40, gequal, gsteps);
    }
    strata_session_free(sg);
    /* graph vs eager decode (strata_generate: greedy, the decode step's graph) across 256 */
    {
        tok_list a = { .n = 0 }, b = { .n = 0 };
        strata_session *s1 = session(mg, N_CTX, STRATA_KV_INT8), *s2 = session(mg, N_CTX, STRATA_KV_INT8);
        REQUIRE(s1 && s2, "sessions");
        if (s1 && s2) {
            strata_generate(s1, pr, 230, 48, collect, &a);
            set_env("STRATA_CUDA_GRAPH", "0");   /* read at each step: the kernels one by one */
            strata_generate(s2, pr, 230, 48, collect, &b);
            set_env("STRATA_CUDA_GRAPH", NULL);
        }
        CHECKF(a.n > 0 && a.n == b.n && !memcmp(a.ids, b.ids, sizeof(int32_t) * (size_t)a.n),
               "%s: graph vs eager int8 decode ids differ (%d / %d ids)", label, a.n, b.n);
        printf("%-30s graph == eager decode ids, positions 230-278: %s\n", label,
               a.n == b.n && !memcmp(a.ids, b.ids, sizeof(int32_t) * (size_t)a.n) ? "yes" : "NO");
        strata_session_free(s1); strata_session_free(s2);
    }
    for (int i = 0; i < 5; i++) free(ref[i]);
    free(got); free(base); free(pr);
    strata_session_free(sc);
    strata_model_free(mc); strata_model_free(mg);
}

/* Several sessions in one pass: 8 int8 sessions at different depths (around and past chunk
 * boundaries) stepped together (one launch per layer for all: the column table) for 5 steps,
 * then with 2 f16 sessions among them (a pass with caches of both formats: a launch per
 * sequence) for 5 more; every session's logits == the same session alone on the GPU (always) and == the CPU
 * session of its KV type (libm). Then the prefix copy, a rewind and the KV memory. */
#define NB 10
static void sessions_check(const char *label, const char *path) {
    t_current = label;
    strata_model *mc = rig_load(path, STRATA_DEVICE_CPU), *mg = rig_load(path, STRATA_DEVICE_CUDA);
    REQUIRE(mc && mg, "load");
    if (!mc || !mg) { strata_model_free(mc); strata_model_free(mg); return; }
    const int V = strata_n_vocab(mg);
    static const int depth[NB] = { 3, 17, 250, 256, 600, 900, 40, 300, 255, 700 };
    strata_session *bat[NB], *solo[NB], *cpu[NB];
    int ok = 1;
    for (int i = 0; i < NB; i++) {
        const int kv = i < 8 ? STRATA_KV_INT8 : STRATA_KV_F16;
        bat[i] = session(mg, 1024, kv); solo[i] = session(mg, 1024, kv); cpu[i] = session(mc, 1024, kv);
        int32_t pr[1000];
        prompt_ids(10 + i, V, pr, depth[i]);
        ok = ok && bat[i] && solo[i] && cpu[i] && !eval_by(bat[i], pr, depth[i], 512) && !eval_by(solo[i], pr, depth[i], 512) &&
             !eval_by(cpu[i], pr, depth[i], 512);
    }
    REQUIRE(ok, "sessions");
    /* the order of the sessions in the step: the int8 ones alone, then the f16 ones 3rd and 7th */
    static const int ord[2][NB] = { { 0, 1, 2, 3, 4, 5, 6, 7 }, { 0, 1, 8, 2, 3, 4, 9, 5, 6, 7 } };
    int same_solo = 1, same_cpu = 1, steps = 0;
    for (int step = 0; ok && step < 10; step++) {
        const int mixed = step >= 5, n = mixed ? NB : 8;
        strata_session *sub[NB];
        int32_t next[NB];
        for (int j = 0; j < n; j++) {
            const int i = ord[mixed][j];
            sub[j] = bat[i];
            next[j] = argmax(strata_session_logits(solo[i]), V);
            strata_session_eval(solo[i], &next[j], 1);
            strata_session_eval(cpu[i], &next[j], 1);
        }
        if (strata_sessions_step(sub, next, n)) { CHECK(0); break; }
        steps++;
        for (int j = 0; j < n; j++) {
            const int i = ord[mixed][j];
            const float *lb = strata_session_logits(bat[i]);
            if (!lb || memcmp(lb, strata_session_logits(solo[i]), (size_t)V * 4)) same_solo = 0;
            if (!lb || memcmp(lb, strata_session_logits(cpu[i]), (size_t)V * 4)) same_cpu = 0;
        }
    }
    printf("%-30s %d steps of 8 int8 sessions, then with 2 f16 ones, in shared passes: == alone: %s, == CPU: %s\n", label,
           steps, same_solo ? "yes" : "NO", same_cpu ? "yes" : "no");
    CHECKF(steps == 10 && same_solo, "%s: int8 sessions in shared passes differ from the same sessions alone", label);
    if (libm) CHECKF(same_cpu, "%s: int8 sessions in shared passes differ from the CPU's", label);
    for (int i = 0; i < NB; i++) { strata_session_free(bat[i]); strata_session_free(solo[i]); strata_session_free(cpu[i]); }

    /* prefix copy (kv_copy of int8 rows) and a rewind: the bits of a cold prefill */
    int32_t pr[400], other[20];
    prompt_ids(30, V, pr, 400);
    prompt_ids(31, V, other, 20);
    strata_session *a = session(mg, 1024, STRATA_KV_INT8), *b = session(mg, 1024, STRATA_KV_INT8),
                   *c = session(mg, 1024, STRATA_KV_INT8), *d = session(mg, 1024, STRATA_KV_INT8),
                   *f = session(mg, 1024, STRATA_KV_F16), *cc = session(mc, 1024, STRATA_KV_INT8);
    REQUIRE(a && b && c && d && f && cc, "sessions");
    if (a && b && c && d && f && cc) {
        CHECK(eval_by(a, pr, 300, 64) == 0 && eval_by(b, other, 5, 5) == 0);
        CHECK_EQ_INT(strata_session_copy_prefix(b, a, 280), 0);
        CHECK(eval_by(b, pr + 280, 120, 64) == 0 && eval_by(c, pr, 400, 512) == 0 && eval_by(cc, pr, 400, 512) == 0);
        CHECKF(!memcmp(strata_session_logits(b), strata_session_logits(c), (size_t)V * 4),
               "%s: int8 logits after a copied prefix differ from a cold prefill", label);
        if (libm) CHECKF(!memcmp(strata_session_logits(b), strata_session_logits(cc), (size_t)V * 4),
                         "%s: int8 logits after a copied prefix differ from the CPU's", label);
        CHECK_EQ_INT(strata_session_copy_prefix(f, a, 100), -1);   /* f16 <- int8: refused */
        CHECK_EQ_INT(strata_session_copy_prefix(d, f, 0), -1);
        /* rewind c from 400 to 290, then other tokens: == d cold on the same ids */
        CHECK_EQ_INT(strata_session_rewind(c, 290), 0);
        CHECK(eval_by(c, other, 20, 20) == 0 && eval_by(d, pr, 290, 512) == 0 && eval_by(d, other, 20, 20) == 0);
        CHECKF(!memcmp(strata_session_logits(c), strata_session_logits(d), (size_t)V * 4),
               "%s: int8 logits after a rewind differ from a cold prefill", label);
        printf("%-30s int8 prefix copy == cold prefill, rewind == cold prefill, f16 <-> int8 copies refused\n", label);
    }
    strata_session_free(a); strata_session_free(b); strata_session_free(c); strata_session_free(d);
    strata_session_free(f); strata_session_free(cc);

    /* KV memory: int8 rows of 36 bytes per 32 values on the GPU, as on the CPU; f16: 2 per value */
    {
        strata_session *g8 = session(mg, N_CTX, STRATA_KV_INT8), *g16 = session(mg, N_CTX, STRATA_KV_F16),
                       *c8 = session(mc, N_CTX, STRATA_KV_INT8);
        REQUIRE(g8 && g16 && c8, "sessions");
        if (g8 && g16 && c8) {
            const hparams *hp = &mg->hp;
            const size_t kvd = (size_t)hp->n_kv_heads * hp->head_dim, pp8 = 2 * (size_t)hp->n_layers * (kvd / 32 * 36);
            size_t p8 = 0, p16 = 0, pc = 0;
            const size_t t8 = strata_session_kv_bytes(g8, &p8), t16 = strata_session_kv_bytes(g16, &p16),
                         tc = strata_session_kv_bytes(c8, &pc);
            CHECK_EQ_INT(p8, pp8);
            CHECK_EQ_INT(t8, pp8 * N_CTX);
            CHECK_EQ_INT(p16, 2 * (size_t)hp->n_layers * kvd * 2);
            CHECK_EQ_INT(t16, p16 * N_CTX);
            CHECK_EQ_INT(pc, p8);
            CHECK_EQ_INT(tc, t8);
            CHECK_EQ_INT(t8 * 32, t16 * 18);   /* 0.5625 x */
            printf("%-30s KV memory at %d positions: int8 %.2f MiB (CPU %.2f), f16 %.2f MiB\n", label, N_CTX,
                   t8 / 1048576.0, tc / 1048576.0, t16 / 1048576.0);
        }
        strata_session_free(g8); strata_session_free(g16); strata_session_free(c8);
    }
    strata_model_free(mc); strata_model_free(mg);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    gpu_pin_cpu_order();   /* CPU-identity checks: the CPU's attention order (gpu_order.h) */
    libm = rig_libm();
    printf("expf on the GPU: %s\n", cuda_expf_mode());
    threadpool *tp = threadpool_create(4);
    static const shape shapes[] = {
        { "9 / 3, hd 64 (SmolLM2)", 9, 3, 64 },
        { "8 / 4, hd 128 (pairs)", 8, 4, 128 },
        { "4 / 1, hd 256 (Gemma 3)", 4, 1, 256 },
        { "32 / 4, hd 128 (groups of 8)", 32, 4, 128 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) ops_attention(&shapes[i], tp);
    threadpool_free(tp);
    const char *p1 = "/tmp/strata-gpu-kv8-hd64.gguf", *p2 = "/tmp/strata-gpu-kv8-hd256.gguf",
               *p3 = "/tmp/strata-gpu-kv8-moe.gguf";
    REQUIRE(rig_model(p1, ARCH_LLAMA, 6, 512, 1024, 8, 2, 64, 4000, TYPE_Q4_1, TYPE_Q4_K, TYPE_Q8_0, TYPE_Q8_0, 11) == 0,
            "synth");
    REQUIRE(rig_model(p2, ARCH_LLAMA, 4, 1024, 1024, 4, 1, 256, 3000, TYPE_Q4_K, TYPE_Q5_0, TYPE_Q6_K, TYPE_Q4_0, 11) == 0,
            "synth");
    REQUIRE(rig_model(p3, ARCH_QWEN3MOE, 3, 1024, 256, 8, 2, 128, 3000, TYPE_Q4_K, TYPE_Q4_K, TYPE_Q6_K, TYPE_Q8_0, 11) == 0,
            "synth");
    model_check("llama 8/2 hd 64", p1);
    model_check("llama 4/1 hd 256", p2);
    model_check("qwen3moe 8/2 hd 128 (neox)", p3);
    sessions_check("llama 8/2 hd 64", p1);
    unlink(p1); unlink(p2); unlink(p3);
    TEST_DONE();
}
