/* The GPU's op kernels (src/cuda/ops.cu, called alone through cuda_test_*) against the CPU
 * backend's primitives (src/cpu/backend_cpu.h, the reference), on the same inputs:
 *   rope, add, KV store: bit-identical          rmsnorm: bit-identical in practice (<= 1 ulp)
 *   attention (split-KV, long and windowed ranges): max relative error <= 2e-5
 *   swiglu / geglu (CUDA expf / tanhf): <= 4 ulp-ish, checked as relative error <= 1e-6
 *   argmax: the CPU's index, including ties (lowest index wins). */
#include "test.h"
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
    const int T = 8, E = hp.n_embd, H = hp.n_heads, KVH = hp.n_kv_heads, HD = hp.head_dim;
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
    cpu_geglu(a, b, ref, (int)n);
    CHECK(cuda_test_geglu(da, db, dc, (int)n) == 0);
    from_dev(c, dc, n);
    CHECKF(max_rel(c, ref, n) <= 1e-6, "geglu max rel %g", max_rel(c, ref, n));
    printf("geglu      max rel err %.3g\n", max_rel(c, ref, n));

    /* ---- attention: fill the cache to 1300 positions with T-token passes, then compare every
     * pass (full range, then windowed), the exact kernel and the split-KV variant ---- */
    t_current = "attention";
    float *q = a, *k = b, *v = c;
    size_t kvb = (size_t)n_ctx * KVH * HD * 2;
    uint16_t *kc = cuda_malloc(kvb), *vc = cuda_malloc(kvb), *kc2 = cuda_malloc(kvb), *vc2 = cuda_malloc(kvb);
    float *dout = cuda_malloc((size_t)T * H * HD * 4);
    CHECK(kc && vc && kc2 && vc2 && dout);
    double worst = 0, worst_split = 0;
    int exact_bits = 1, ok = 1, one_tile_same = 1;
    float *out1 = malloc(sizeof(float) * (size_t)T * H * HD);
    for (int pos = 0; pos < 1300 && ok; pos += T) {
        fill(q, (size_t)T * H * HD, 1.0f); fill(k, (size_t)T * KVH * HD, 1.0f); fill(v, (size_t)T * KVH * HD, 1.0f);
        cuda_memcpy_h2d(da, q, (size_t)T * H * HD * 4); cuda_memcpy_h2d(db, k, (size_t)T * KVH * HD * 4);
        cuda_memcpy_h2d(dc, v, (size_t)T * KVH * HD * 4);
        int window = pos >= 1280 ? 100 : 0;
        backend_cpu_attention(cpu, cpu->kv, 0, q, k, v, T, pos, hp.attn_scale, window, ref);
        ok = cuda_test_attention(da, db, dc, kc, vc, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dout) == 0;
        from_dev(out, dout, (size_t)T * H * HD);
        double e = max_rel(out, ref, (size_t)T * H * HD);
        if (e > worst) worst = e;
        if (!bits_equal(out, ref, (size_t)T * H * HD)) exact_bits = 0;
        /* the exact kernel with one K/V tile (STRATA_CUDA_ATTN_TILES=1; the default above has
         * two from 257 positions of context): the same bits as the two-tile run */
        cuda_attention_set_tiles(1);
        ok = ok && cuda_test_attention(da, db, dc, kc, vc, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 0, dout) == 0;
        cuda_attention_set_tiles(2);
        from_dev(out1, dout, (size_t)T * H * HD);
        if (!bits_equal(out1, out, (size_t)T * H * HD)) one_tile_same = 0;
        ok = ok && cuda_test_attention(da, db, dc, kc2, vc2, T, H, KVH, HD, pos, hp.attn_scale, window, n_ctx, 1, dout) == 0;
        from_dev(out, dout, (size_t)T * H * HD);
        e = max_rel(out, ref, (size_t)T * H * HD);
        if (e > worst_split) worst_split = e;
    }
    CHECKF(ok, "attention launch failed: %s", cuda_last_error());
    CHECKF(worst <= 2e-5, "attention max rel err %g", worst);
    if (libm) CHECKF(exact_bits, "exact attention not bit-identical to the CPU (max rel %g)", worst);
    CHECKF(worst_split <= 2e-5, "split attention max rel err %g", worst_split);
    CHECKF(one_tile_same, "exact attention: one K/V tile and two give different bits");
    free(out1);
    printf("attention  exact: bit-identical %s (max rel %.3g); split-KV: max rel err %.3g; 163 passes up to 1300 "
           "positions, windowed too\n", exact_bits ? "yes" : "no", worst, worst_split);

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
    cuda_free(dg); cuda_free(da); cuda_free(db); cuda_free(dc); cuda_free(kc); cuda_free(vc); cuda_free(kc2); cuda_free(vc2);
    cuda_free(dout);
    cpu->ops->free(cpu);
    threadpool_free(tp);
    free(a); free(b); free(c); free(ref); free(out); free(g);
    TEST_DONE();
}
