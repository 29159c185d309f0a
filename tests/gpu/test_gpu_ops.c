/* The GPU's op kernels (src/cuda/ops.cu, called alone through cuda_test_*) against the CPU
 * backend's primitives (src/cpu/backend_cpu.h, the reference), on the same inputs:
 *   rope, add, KV store: bit-identical          rmsnorm: bit-identical in practice (<= 1 ulp)
 *   attention (the chunked order, chunks in parallel and serial): bit-identical to the CPU at
 *     depths 1..5000 (every chunk boundary), full and sliding windows, GQA groups of 1 to 16,
 *     head_dim 64, 128 and 256 (a relative error <= 2e-5 when the GPU's expf is not libm's);
 *     the paths: spans <= 256 the exact kernel (no chunk partials written), longer ones the
 *     chunk path, at depths around 256, 512 and 4096, positions from the host or the device
 *   swiglu: bit-identical (expf_ref: libm's expf bits; relative error <= 1e-6 when the GPU's
 *     expf is not libm's)
 *   geglu (g / (1 + expf(-z)), cpu_geglu's operations, tests/test_ops.c): bit-identical on 2^20
 *     inputs (a grid over [-20, 20], specials, random bit patterns), in place too; NaN outputs
 *     count as equal when both are NaN (the payloads of x86 and the GPU differ)
 *   argmax: the CPU's index, including ties (lowest index wins). */
#include "test.h"
#include <float.h>
#include <stdint.h>
#include "model/backend.h"
#include "cpu/backend_cpu.h"
#include "quant/quant.h"
#include "core/util.h"
#include "cpu/threadpool.h"
#include "sample/sample.h"
#include "cuda/cuda_backend.h"
#include "core/env.h"

static uint64_t rs = 12345;
static float rnd(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return (float)(rs >> 40) / (float)(1 << 24) * 2.0f - 1.0f;
}
static void fill(float *p, size_t n, float scale) { for (size_t i = 0; i < n; i++) p[i] = rnd() * scale; }

static double max_rel(const float *a, const float *b, size_t n) {
    double m = 0, ref = 0;
    for (size_t i = 0; i < n; i++) ref = fmax(ref, fabs(b[i]));
    for (size_t i = 0; i < n; i++) {
        if (a[i] != a[i] || b[i] != b[i]) return INFINITY;
        m = fmax(m, fabs((double)a[i] - b[i]));
    }
    return ref > 0 ? m / ref : m;
}
static int bits_equal(const float *a, const float *b, size_t n) { return !memcmp(a, b, n * sizeof(float)); }
static size_t ulp_diff_max(const float *a, const float *b, size_t n) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t x, y; memcpy(&x, &a[i], 4); memcpy(&y, &b[i], 4);
        size_t d = (size_t)(x > y ? (int64_t)x - y : (int64_t)y - x);
        if (d > m) m = d;
    }
    return m;
}

/* hyperparameters of a small llama-like model: 4 heads of 64, 2 kv heads */
static hparams make_hp(int n_ctx_train) {
    hparams hp;
    memset(&hp, 0, sizeof hp);
    hp.arch = ARCH_LLAMA; hp.n_layers = 2; hp.n_embd = 256; hp.n_heads = 4; hp.n_kv_heads = 2; hp.head_dim = 64;
    hp.n_ff = 512; hp.n_vocab = 1000; hp.n_ctx_train = n_ctx_train; hp.n_rot = 64; hp.rope_base = 10000.0f;
    hp.rope_base_local = 10000.0f; hp.rope_scale = 1.0f; hp.rms_eps = 1e-5f; hp.attn_scale = 0.125f;
    hp.embd_scale = 1.0f;
    return hp;
}


/* device copy of n floats */
static float *dev_of(const float *h, size_t n) {
    float *d = cuda_malloc(n * 4);
    if (d) cuda_memcpy_h2d(d, h, n * 4);
    return d;
}
static void from_dev(float *h, const float *d, size_t n) { cuda_memcpy_d2h(h, d, n * 4); }

/* ---- attention: the CPU backend's attention (the reference) and the CUDA one on the same
 * rows, pass by pass, to a depth of 5000. Most passes fill the cache cheaply (window 8: both
 * sides still compared); around every chunk boundary (multiples of 256), at the start, every
 * 16th pass and at the end the pass attends over everything (or a 300 / 1000 window). Each
 * checked pass runs the CUDA kernel twice: chunks in parallel, then one CTA walking them
 * (serial), on the same cache (the second store writes the same rows). */
typedef struct { const char *name; int H, KVH, HD; } attn_cfg;
static const attn_cfg attn_cfgs[] = {
    { "4 heads / 2 kv, hd 64", 4, 2, 64 },
    { "9 / 3, hd 64 (SmolLM2)", 9, 3, 64 },
    { "12 / 2, hd 128 (groups of 6)", 12, 2, 128 },
    { "4 / 1, hd 256 (Gemma 3)", 4, 1, 256 },
    { "32 / 4, hd 128 (groups of 8)", 32, 4, 128 },
    { "16 / 1, hd 64 (group of 16)", 16, 1, 64 },
};
#define ATT_DEPTH 5000

static int near_boundary(int pos, int T) {
    for (int p = pos; p < pos + T; p++) {
        int r = p % 256;
        if (p < 8 || r < 4 || r > 251) return 1;
    }
    return 0;
}

/* What both attention tests need: a CPU backend of the configuration's head shape (the
 * reference), host buffers for passes of up to tmax tokens, their device copies and the GPU's
 * f16 K/V cache of n_ctx positions. */
typedef struct {
    hparams hp;
    backend *cpu;
    float *q, *k, *v, *ref, *out, *dq, *dk, *dv, *dout;
    uint16_t *kc, *vc;
} attn_rig;

static void rig_free(attn_rig *R) {
    free(R->q); free(R->k); free(R->v); free(R->ref); free(R->out);
    cuda_free(R->dq); cuda_free(R->dk); cuda_free(R->dv); cuda_free(R->dout); cuda_free(R->kc); cuda_free(R->vc);
    if (R->cpu) R->cpu->ops->free(R->cpu);
}

static int rig_new(attn_rig *R, const attn_cfg *C, int n_ctx, int tmax, threadpool *tp) {
    memset(R, 0, sizeof *R);
    const int H = C->H, KVH = C->KVH, HD = C->HD;
    R->hp = make_hp(n_ctx);
    R->hp.n_heads = H; R->hp.n_kv_heads = KVH; R->hp.head_dim = HD; R->hp.n_rot = HD; R->hp.n_embd = H * HD;
    R->hp.attn_scale = 1.0f / sqrtf((float)HD);
    static model_weights mw;
    char err[512];
    R->cpu = backend_cpu_new(&R->hp, &mw, n_ctx, tp, 0, 0, err, sizeof err);
    REQUIRE(R->cpu != NULL, "%s", err);
    if (!R->cpu) return -1;
    size_t qn = (size_t)tmax * H * HD, kn = (size_t)tmax * KVH * HD, kvb = (size_t)n_ctx * KVH * HD * 2;
    R->q = malloc(qn * 4); R->k = malloc(kn * 4); R->v = malloc(kn * 4); R->ref = malloc(qn * 4); R->out = malloc(qn * 4);
    R->dq = cuda_malloc(qn * 4); R->dk = cuda_malloc(kn * 4); R->dv = cuda_malloc(kn * 4); R->dout = cuda_malloc(qn * 4);
    R->kc = cuda_malloc(kvb); R->vc = cuda_malloc(kvb);
    const int ok = R->q && R->k && R->v && R->ref && R->out && R->dq && R->dk && R->dv && R->dout && R->kc && R->vc;
    REQUIRE(ok, "allocation");
    if (!ok) { rig_free(R); return -1; }
    return 0;
}

static void test_attention(const attn_cfg *C, threadpool *tp, int libm) {
    t_current = C->name;
    const int n_ctx = ATT_DEPTH + 80, H = C->H, KVH = C->KVH, HD = C->HD, TMAX = 64;
    attn_rig R;
    if (rig_new(&R, C, n_ctx, TMAX, tp)) return;
    const hparams hp = R.hp;
    backend *cpu = R.cpu;
    float *q = R.q, *k = R.k, *v = R.v, *ref = R.ref, *out = R.out, *dq = R.dq, *dk = R.dk, *dv = R.dv, *dout = R.dout;
    uint16_t *kc = R.kc, *vc = R.vc;
    static const int Ts[] = { 1, 2, 3, 5, 8, 7, 1, 4 };
    int ok = 1, bits = 1, passes = 0, checked = 0, deepest = 0;
    double worst = 0;
    for (int pos = 0, i = 0; pos < ATT_DEPTH && ok; i++) {
        int T = pos == 1000 ? TMAX : Ts[i % 8];      /* one wide pass across the boundary at 1024 */
        if (pos < 1000 && pos + T > 1000) T = 1000 - pos;
        if (pos + T > ATT_DEPTH) T = ATT_DEPTH - pos;
        int check = near_boundary(pos, T) || i % 16 == 0 || pos + T == ATT_DEPTH || T == TMAX;
        int window = !check ? 8 : checked % 5 == 3 ? 300 : checked % 5 == 4 ? 1000 : 0;
        fill(q, (size_t)T * H * HD, 1.0f); fill(k, (size_t)T * KVH * HD, 1.0f); fill(v, (size_t)T * KVH * HD, 1.0f);
        cuda_memcpy_h2d(dq, q, (size_t)T * H * HD * 4); cuda_memcpy_h2d(dk, k, (size_t)T * KVH * HD * 4);
        cuda_memcpy_h2d(dv, v, (size_t)T * KVH * HD * 4);
        backend_cpu_attention(cpu, cpu->kv, 0, q, k, v, T, pos, hp.attn_scale, window, ref);
        for (int serial = 0; serial <= (check ? 1 : 0) && ok; serial++) {
            ok = cuda_test_attention(dq, dk, dv, kc, vc, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, serial, dout) == 0;
            from_dev(out, dout, (size_t)T * H * HD);
            double e = max_rel(out, ref, (size_t)T * H * HD);
            if (e > worst) worst = e;
            if (!bits_equal(out, ref, (size_t)T * H * HD)) {
                if (bits) fprintf(stderr, "%s: pass at %d (T %d, window %d, %s) differs from the CPU: max rel %g\n", C->name,
                                  pos, T, window, serial ? "serial" : "parallel", e);
                bits = 0;
            }
        }
        passes++;
        checked += check;
        if (check && window == 0) deepest = pos + T;
        pos += T;
    }
    CHECKF(ok, "%s: attention launch failed: %s", C->name, cuda_last_error());
    CHECKF(worst <= 2e-5, "%s: attention max rel err %g", C->name, worst);
    if (libm) CHECKF(bits, "%s: attention not bit-identical to the CPU (max rel %g)", C->name, worst);
    printf("attention  %-30s bit-identical to the CPU: %s (max rel %.3g); %d passes to depth %d, %d attending over "
           "all (to %d) or a 300/1000 window, parallel and serial chunks\n", C->name, bits ? "yes" : "no", worst, passes,
           ATT_DEPTH, checked, deepest);
    rig_free(&R);
}

/* ---- the attention's two paths (ops.cu attn_kernel): a token attending to <= 256 positions
 * takes the exact (one-chunk) path and writes no chunk partials, a longer one the chunk path;
 * both give the CPU's bits. Single-token steps (T = 1, as decode) at depths just below, at and
 * past 256, 512 and 4096, with the position given by the host and read from device memory (the
 * decode graph's launch: a grid over every chunk of n_ctx, the CTAs past the token's chunks
 * exiting), the full cache or a window of 256 (one chunk at any depth: the exact path at 4096)
 * or 600; SmolLM2's head shape and Gemma 3's (hd 256: one K/V tile) and a GQA group of 8 at
 * hd 128 (two heads per CTA, two tiles). The cache is filled between the steps by passes of
 * 64 (window 8) on both sides. */
typedef struct { int pos, window; } attn_step;
static void test_attention_paths(const attn_cfg *C, threadpool *tp, int libm) {
    t_current = C->name;
    static const attn_step steps[] = {
        { 0, 0 }, { 100, 0 }, { 254, 0 }, { 255, 0 }, { 256, 0 }, { 257, 0 }, { 300, 256 }, { 511, 0 }, { 512, 0 },
        { 513, 0 }, { 700, 600 }, { 1000, 256 }, { 4094, 0 }, { 4095, 0 }, { 4096, 0 }, { 4097, 256 }, { 4098, 0 },
        { 4099, 600 },
    };
    const int n_ctx = 4160, H = C->H, KVH = C->KVH, HD = C->HD, TF = 64;
    attn_rig R;
    if (rig_new(&R, C, n_ctx, TF, tp)) return;
    const hparams hp = R.hp;
    backend *cpu = R.cpu;
    float *q = R.q, *k = R.k, *v = R.v, *ref = R.ref, *out = R.out, *dq = R.dq, *dk = R.dk, *dv = R.dv, *dout = R.dout;
    uint16_t *kc = R.kc, *vc = R.vc;
    int ok = 1, bits = 1, exact_ok = 1, chunk_ok = 1, n_exact = 0, n_chunk = 0, at = 0, one_tile_same = 1, scalar_same = 1, both_paths_same = 1, gs_same = 1;
    float *out1 = malloc((size_t)H * HD * 4);
    double worst = 0;
    for (size_t si = 0; si < sizeof steps / sizeof steps[0] && ok; si++) {
        const int pos = steps[si].pos, window = steps[si].window;
        while (at < pos && ok) {   /* the cache up to pos, both sides */
            const int T = pos - at < TF ? pos - at : TF;
            fill(q, (size_t)T * H * HD, 1.0f); fill(k, (size_t)T * KVH * HD, 1.0f); fill(v, (size_t)T * KVH * HD, 1.0f);
            cuda_memcpy_h2d(dq, q, (size_t)T * H * HD * 4); cuda_memcpy_h2d(dk, k, (size_t)T * KVH * HD * 4);
            cuda_memcpy_h2d(dv, v, (size_t)T * KVH * HD * 4);
            backend_cpu_attention(cpu, cpu->kv, 0, q, k, v, T, at, hp.attn_scale, 8, ref);
            ok = cuda_test_attention(dq, dk, dv, kc, vc, T, H, KVH, HD, at, hp.attn_scale, 8, n_ctx, 0, dout) == 0;
            at += T;
        }
        fill(q, (size_t)H * HD, 3.0f); fill(k, (size_t)KVH * HD, 1.0f); fill(v, (size_t)KVH * HD, 1.0f);
        cuda_memcpy_h2d(dq, q, (size_t)H * HD * 4); cuda_memcpy_h2d(dk, k, (size_t)KVH * HD * 4);
        cuda_memcpy_h2d(dv, v, (size_t)KVH * HD * 4);
        backend_cpu_attention(cpu, cpu->kv, 0, q, k, v, 1, pos, hp.attn_scale, window, ref);
        const int span = window > 0 && window < pos + 1 ? window : pos + 1;
        for (int dev_pos = 0; dev_pos <= 1 && ok; dev_pos++) {
            long wrote = -1;
            ok = cuda_test_attention_ex(dq, dk, dv, kc, vc, 1, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dev_pos, dout,
                                        &wrote) == 0;
            from_dev(out, dout, (size_t)H * HD);
            const double e = max_rel(out, ref, (size_t)H * HD);
            if (e > worst) worst = e;
            if (!bits_equal(out, ref, (size_t)H * HD)) {
                if (bits) fprintf(stderr, "%s: step at %d (window %d, %s) differs from the CPU: max rel %g\n", C->name, pos,
                                  window, dev_pos ? "device position" : "host position", e);
                bits = 0;
            }
            if (span <= 256) {   /* the exact path: no partials */
                n_exact++;
                if (wrote != 0) {
                    if (exact_ok) fprintf(stderr, "%s: step at %d (span %d) wrote %ld partials\n", C->name, pos, span, wrote);
                    exact_ok = 0;
                }
            } else {   /* the chunk path: (m, l, u) of every chunk of every head */
                n_chunk++;
                const long want = (long)H * ((span + 255) / 256) * (HD + 2);
                if (wrote != want) {
                    if (chunk_ok) fprintf(stderr, "%s: step at %d (span %d) wrote %ld partials, not %ld\n", C->name, pos, span,
                                          wrote, want);
                    chunk_ok = 0;
                }
            }
        }
        /* one tile in the chunk path (STRATA_CUDA_ATTN_TILES=1; the default loads K and V at
         * once where two fit): the same bits */
        cuda_attention_set_tiles(1);
        ok = ok && cuda_test_attention(dq, dk, dv, kc, vc, 1, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dout) == 0;
        from_dev(out1, dout, (size_t)H * HD);
        if (!bits_equal(out1, out, (size_t)H * HD)) one_tile_same = 0;
        /* the scalar chunk path with two tiles (STRATA_CUDA_ATTN_TILES=2; the default 3 reads an
         * f16 cache in 16-byte pieces, heads of hd 128 four to a CTA): the same bits */
        cuda_attention_set_tiles(2);
        ok = ok && cuda_test_attention(dq, dk, dv, kc, vc, 1, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dout) == 0;
        from_dev(out1, dout, (size_t)H * HD);
        if (!bits_equal(out1, out, (size_t)H * HD)) scalar_same = 0;
        cuda_attention_set_tiles(3);
        /* the heads of a KV group per chunk-path CTA (STRATA_CUDA_ATTN_GS 1, 2 and 4 against the
         * default's automatic choice): the same bits */
        for (int cap = 1; cap <= 4 && ok; cap *= 2) {
            cuda_attention_set_gs(cap);
            for (int dev_pos = 0; dev_pos <= 1 && ok; dev_pos++) {
                ok = cuda_test_attention_ex(dq, dk, dv, kc, vc, 1, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dev_pos,
                                            dout, NULL) == 0;
                from_dev(out1, dout, (size_t)H * HD);
                if (!bits_equal(out1, out, (size_t)H * HD)) gs_same = 0;
            }
        }
        cuda_attention_set_gs(0);   /* auto, the default */
        /* the kernel instance holding both paths (STRATA_CUDA_ATTN_PATHS=0; the default launches
         * the instance of the one path every column takes): the same bits */
        cuda_attention_set_paths(0);
        for (int dev_pos = 0; dev_pos <= 1 && ok; dev_pos++) {
            ok = cuda_test_attention_ex(dq, dk, dv, kc, vc, 1, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dev_pos, dout,
                                        NULL) == 0;
            from_dev(out1, dout, (size_t)H * HD);
            if (!bits_equal(out1, out, (size_t)H * HD)) both_paths_same = 0;
        }
        cuda_attention_set_paths(1);
        at = pos + 1;
    }
    CHECKF(ok, "%s: attention launch failed: %s", C->name, cuda_last_error());
    CHECKF(one_tile_same, "%s: the chunk path with one K/V tile and with two give different bits", C->name);
    CHECKF(scalar_same, "%s: the chunk path in 16-byte pieces and the scalar one give different bits", C->name);
    CHECKF(gs_same, "%s: the chunk path with 1, 2 or 4 heads per CTA and with the automatic choice give different bits", C->name);
    CHECKF(both_paths_same, "%s: the kernel instance with both paths and the one-path instances give different bits", C->name);
    CHECKF(worst <= 2e-5, "%s: attention paths max rel err %g", C->name, worst);
    if (libm) CHECKF(bits, "%s: a step is not bit-identical to the CPU (max rel %g)", C->name, worst);
    CHECKF(exact_ok && n_exact == 14, "%s: spans <= 256 took the exact path (no partials): %d steps", C->name, n_exact);
    CHECKF(chunk_ok && n_chunk == 22, "%s: spans > 256 took the chunk path (every chunk's partials): %d steps", C->name,
           n_chunk);
    printf("attention  %-30s paths: %d steps of <= 256 positions without partials (exact path), %d with every chunk's "
           "partials; bit-identical to the CPU: %s (max rel %.3g), host and device positions\n", C->name, n_exact, n_chunk,
           bits ? "yes" : "no", worst);
    free(out1);
    rig_free(&R);
}

/* geglu on 2^20 inputs: 1,000,001 grid points over [-20, 20] (every value the FFN's gate meets in
 * practice, across the overflow of expf(-z) at g = -10.06), specials (signed zeros, infinities,
 * NaN, FLT_MAX, subnormals, tiny and huge g of both signs), random finite bit patterns for the
 * rest; up random in [-2, 2] (1 and -1 on the specials). Bit for bit against cpu_geglu when the
 * GPU's expf is libm's (a differing output counted unless both are NaN), out of place and in
 * place (out == gate, as the backend calls it). */
static void test_geglu(int libm) {
    t_current = "geglu";
    const size_t n = (size_t)1 << 20, n_grid = 1000001;
    static const float sp[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN, 0x1p-149f, -0x1p-149f, 0x1p-140f,
        -0x1p-140f, 1e-30f, -1e-30f, 1e-10f, -1e-10f, 1e-3f, -1e-3f, -10.06097f, -10.05f, -10.07f, -5.42f, 100.0f, -100.0f,
        1e13f, -1e13f, 2e13f, -2e13f, 1e20f, -1e20f,
    };
    const size_t n_sp = sizeof sp / sizeof sp[0];
    float *g = malloc(n * 4), *u = malloc(n * 4), *ref = malloc(n * 4), *out = malloc(n * 4);
    float *dg = cuda_malloc(n * 4), *du = cuda_malloc(n * 4), *dout = cuda_malloc(n * 4);
    if (!g || !u || !ref || !out || !dg || !du || !dout) {
        REQUIRE(0, "geglu: out of memory");
    } else {
        for (size_t i = 0; i < n; i++) {
            if (i < n_grid) g[i] = (float)(-20.0 + 40.0 * (double)i / (double)(n_grid - 1));
            else if (i < n_grid + 2 * n_sp) g[i] = sp[(i - n_grid) / 2];
            else {
                uint32_t bits;
                do { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; bits = (uint32_t)(rs >> 32); memcpy(&g[i], &bits, 4); }
                while (!isfinite(g[i]));
            }
            u[i] = i >= n_grid && i < n_grid + 2 * n_sp ? ((i - n_grid) % 2 ? -1.0f : 1.0f) : rnd() * 2.0f;
        }
        cpu_geglu(g, u, ref, (int)n);
        cuda_memcpy_h2d(dg, g, n * 4); cuda_memcpy_h2d(du, u, n * 4);
        for (int inplace = 0; inplace <= 1; inplace++) {
            float *dst = inplace ? dg : dout;
            int rc = cuda_test_geglu(dg, du, dst, (int)n);
            REQUIRE(rc == 0, "cuda_test_geglu: %s", cuda_last_error());
            if (rc) break;
            from_dev(out, dst, n);
            size_t ndiff = 0, first = n;
            for (size_t i = 0; i < n; i++) {
                uint32_t x, y;
                memcpy(&x, &out[i], 4); memcpy(&y, &ref[i], 4);
                if (x != y && !(out[i] != out[i] && ref[i] != ref[i]) && ndiff++ == 0) first = i;
            }
            const char *how = inplace ? "in place" : "out of place";
            if (libm) CHECKF(ndiff == 0, "geglu %s: %zu of %zu outputs differ from the CPU (the first: g %a u %a: gpu %a cpu %a)",
                             how, ndiff, n, first < n ? (double)g[first] : 0.0, first < n ? (double)u[first] : 0.0,
                             first < n ? (double)out[first] : 0.0, first < n ? (double)ref[first] : 0.0);
            else CHECKF(max_rel(out, ref, n_grid) <= 1e-6, "geglu %s: max rel %g", how, max_rel(out, ref, n_grid));
            printf("geglu      %s: %zu of %zu outputs differ from the CPU (bit-identical: %s; max rel on the grid %.3g)\n",
                   how, ndiff, n, ndiff ? "no" : "yes", max_rel(out, ref, n_grid));
        }
    }
    cuda_free(dg); cuda_free(du); cuda_free(dout);
    free(g); free(u); free(ref); free(out);
}

int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    const int n_ctx = 1536;
    hparams hp = make_hp(n_ctx);
    model_weights mw;
    memset(&mw, 0, sizeof mw);
    threadpool *tp = threadpool_create(4);
    char err[512];
    backend *cpu = backend_cpu_new(&hp, &mw, n_ctx, tp, 0, 0, err, sizeof err);
    CHECKF(cpu != NULL, "%s", err);
    if (!cpu) TEST_DONE();
    const int T = 8, E = hp.n_embd, H = hp.n_heads, HD = hp.head_dim;
    size_t big = (size_t)T * 2048;
    float *a = malloc(big * 4), *b = malloc(big * 4), *c = malloc(big * 4), *ref = malloc(big * 4), *out = malloc(big * 4);
    float *da = cuda_malloc(big * 4), *db = cuda_malloc(big * 4), *dc = cuda_malloc(big * 4);
    CHECK(da && db && dc);

    /* ---- rmsnorm: rows of E ---- */
    t_current = "rmsnorm";
    float *g = malloc(E * 4);
    fill(g, E, 1.5f);
    float *dg = dev_of(g, E);
    fill(a, (size_t)T * E, 3.0f);
    cpu_rmsnorm(a, g, ref, T, E, hp.rms_eps);
    cuda_memcpy_h2d(da, a, (size_t)T * E * 4);
    CHECK(cuda_test_rmsnorm(da, dg, db, T, E, hp.rms_eps) == 0);
    from_dev(b, db, (size_t)T * E);
    CHECKF(ulp_diff_max(b, ref, (size_t)T * E) <= 1, "rmsnorm differs by %zu ulp", ulp_diff_max(b, ref, (size_t)T * E));
    printf("rmsnorm    bit-identical: %s (max %zu ulp)\n", bits_equal(b, ref, (size_t)T * E) ? "yes" : "no",
           ulp_diff_max(b, ref, (size_t)T * E));

    /* ---- the per-head pair (q / k norms): a warp a row == a CTA a row, bit for bit, and the CPU's
     * rmsnorm within 1 ulp; widths of whole and partial warps, in place as the backend calls it ---- */
    t_current = "rmsnorm2";
    {
        const int ns[] = { 64, 80, 128, 200, 256 };
        const int r1 = 8 * 32 + 3, r2 = 8 * 4 + 5;   /* rows of q and k heads; not multiples of the CTA's 8 */
        const size_t n1 = (size_t)r1 * 256, n2 = (size_t)r2 * 256;
        float *hx = malloc((n1 + n2) * 4), *hw = malloc(512 * 4), *h0 = malloc((n1 + n2) * 4), *h1 = malloc((n1 + n2) * 4);
        float *hr = malloc((n1 + n2) * 4);
        float *dx = cuda_malloc((n1 + n2) * 4), *dw = cuda_malloc(512 * 4);
        CHECK(hx && hw && h0 && h1 && hr && dx && dw);
        int same = 1;
        size_t ulp = 0;
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int n = ns[ni];
            fill(hx, (size_t)(r1 + r2) * n, 2.0f);
            fill(hw, 512, 1.5f);
            cpu_rmsnorm(hx, hw, hr, r1, n, hp.rms_eps);
            cpu_rmsnorm(hx + (size_t)r1 * n, hw + 256, hr + (size_t)r1 * n, r2, n, hp.rms_eps);
            cuda_memcpy_h2d(dw, hw, 512 * 4);
            for (int warp = 0; warp <= 1; warp++) {
                cuda_memcpy_h2d(dx, hx, (size_t)(r1 + r2) * n * 4);
                CHECK(cuda_test_rmsnorm2(dx, dw, dx, r1, dx + (size_t)r1 * n, dw + 256, dx + (size_t)r1 * n, r2, n, hp.rms_eps,
                                         warp) == 0);
                from_dev(warp ? h1 : h0, dx, (size_t)(r1 + r2) * n);
            }
            CHECKF(bits_equal(h0, h1, (size_t)(r1 + r2) * n), "rmsnorm2 n %d: a warp a row differs from a CTA a row", n);
            same &= bits_equal(h0, h1, (size_t)(r1 + r2) * n);
            const size_t u = ulp_diff_max(h1, hr, (size_t)(r1 + r2) * n);
            CHECKF(u <= 1, "rmsnorm2 n %d differs from the CPU by %zu ulp", n, u);
            if (u > ulp) ulp = u;
        }
        printf("rmsnorm2   a warp a row == a CTA a row: %s (n 64, 80, 128, 200, 256); vs the CPU max %zu ulp\n",
               same ? "yes" : "no", ulp);
        free(hx); free(hw); free(h0); free(h1); free(hr);
        cuda_free(dx); cuda_free(dw);
    }

    /* ---- rope at a far position, both pair layouts ---- */
    t_current = "rope";
    float inv[64];
    cpu_rope_inv_freq(hp.rope_base, hp.n_rot, inv);
    for (int neox = 0; neox <= 1; neox++) {
        fill(a, (size_t)T * H * HD, 2.0f);
        memcpy(ref, a, (size_t)T * H * HD * 4);
        cuda_memcpy_h2d(da, a, (size_t)T * H * HD * 4);
        cpu_rope(ref, T, H, HD, hp.n_rot, neox, 1000, inv, 1.0f);
        CHECK(cuda_test_rope(da, T, H, HD, hp.n_rot, neox, 1000, hp.rope_base, 1.0f) == 0);
        from_dev(a, da, (size_t)T * H * HD);
        CHECKF(bits_equal(a, ref, (size_t)T * H * HD), "rope (neox %d): max rel %g", neox, max_rel(a, ref, (size_t)T * H * HD));
    }

    /* ---- add, swiglu, geglu ---- */
    t_current = "elementwise";
    size_t n = (size_t)T * hp.n_ff;
    fill(a, n, 4.0f); fill(b, n, 2.0f);
    memcpy(ref, a, n * 4);
    cuda_memcpy_h2d(da, a, n * 4); cuda_memcpy_h2d(db, b, n * 4);
    cpu_add(ref, b, (int)n);
    CHECK(cuda_test_add(da, db, (int)n) == 0);
    from_dev(a, da, n);
    CHECK(bits_equal(a, ref, n));
    cpu_swiglu(a, b, ref, (int)n);
    CHECK(cuda_test_swiglu(da, db, dc, (int)n) == 0);
    from_dev(c, dc, n);
    int libm = !strncmp(cuda_expf_mode(), "libm", 4);
    printf("expf on the GPU: %s\n", cuda_expf_mode());
    CHECKF(max_rel(c, ref, n) <= 1e-6, "swiglu max rel %g", max_rel(c, ref, n));
    if (libm) CHECKF(bits_equal(c, ref, n), "swiglu not bit-identical (max %zu ulp)", ulp_diff_max(c, ref, n));
    printf("swiglu     bit-identical: %s (max %zu ulp)\n", bits_equal(c, ref, n) ? "yes" : "no", ulp_diff_max(c, ref, n));
    test_geglu(libm);   /* after cuda_test_swiglu: it chose the expf mode, which cuda_test_geglu does not */

    /* ---- attention ---- */
    for (size_t i = 0; i < sizeof attn_cfgs / sizeof attn_cfgs[0]; i++) test_attention(&attn_cfgs[i], tp, libm);
    {
        static const attn_cfg path_cfgs[] = {
            { "9 / 3, hd 64 (SmolLM2), paths", 9, 3, 64 },
            { "4 / 1, hd 256 (Gemma 3), paths", 4, 1, 256 },
            { "32 / 4, hd 128 (groups of 8), paths", 32, 4, 128 },
        };
        for (size_t i = 0; i < sizeof path_cfgs / sizeof path_cfgs[0]; i++) test_attention_paths(&path_cfgs[i], tp, libm);
    }

    /* ---- argmax with ties: lowest index among equal maxima ---- */
    t_current = "argmax";
    {
        int good = 1;
        for (int trial = 0; trial < 4; trial++) {
            fill(a, hp.n_vocab, 10.0f);
            if (trial >= 2) { a[700] = 50.0f; a[300] = 50.0f; a[999] = 50.0f; }
            if (trial == 3) a[0] = 50.0f;
            cuda_memcpy_h2d(da, a, hp.n_vocab * 4);
            int32_t gi = cuda_test_argmax(da, hp.n_vocab), ci = sample_argmax(a, hp.n_vocab);
            if (gi != ci) { good = 0; fprintf(stderr, "argmax trial %d: gpu %d cpu %d\n", trial, gi, ci); }
        }
        CHECK(good);
    }
    /* ---- argmax of many rows in one launch (head_argmax of a batched pass): each row the CPU's
     * index; rows with ties (lowest index wins), a maximum at index 0, at the row's last index,
     * -inf everywhere but one, and a row of equal values ---- */
    t_current = "argmax rows";
    {
        const int R = 37, n = 50257;   /* a vocabulary that is no multiple of the CTA's width */
        float *h = malloc((size_t)R * n * sizeof(float));
        int32_t *ids = malloc(R * sizeof(int32_t));
        float *dh = cuda_malloc((size_t)R * n * sizeof(float));
        if (!h || !ids || !dh) { fprintf(stderr, "argmax rows: out of memory\n"); CHECK(0); }
        else {
            for (int r = 0; r < R; r++) {
                float *x = h + (size_t)r * n;
                fill(x, n, 10.0f);
                if (r % 5 == 1) { x[n - 1] = 99.0f; x[17 + r] = 99.0f; x[40000] = 99.0f; }   /* ties: 17 + r wins */
                if (r % 5 == 2) x[0] = 123.0f;
                if (r % 5 == 3) x[n - 1] = 123.0f;
                if (r % 5 == 4) { for (int i = 0; i < n; i++) x[i] = -INFINITY; x[31 * r + 5] = -1.0f; }
                if (r == 35) for (int i = 0; i < n; i++) x[i] = 0.5f;   /* all equal: index 0 */
            }
            cuda_memcpy_h2d(dh, h, (size_t)R * n * sizeof(float));
            int good = cuda_test_argmax_rows(dh, n, R, ids) == 0, bad = 0;
            for (int r = 0; good && r < R; r++) {
                const int32_t ci = sample_argmax(h + (size_t)r * n, n);
                if (ids[r] != ci) { bad++; fprintf(stderr, "argmax rows: row %d gpu %d cpu %d\n", r, ids[r], ci); }
            }
            CHECK(good && bad == 0);
            CHECK(ids[1] == 18 && ids[2] == 0 && ids[3] == n - 1 && ids[35] == 0);   /* the planted answers */
        }
        cuda_free(dh); free(h); free(ids);
    }
    cuda_free(dg); cuda_free(da); cuda_free(db); cuda_free(dc);
    cpu->ops->free(cpu);
    threadpool_free(tp);
    free(a); free(b); free(c); free(ref); free(out); free(g);
    TEST_DONE();
}
