/* GPU ops against the CPU backend (the reference), on the same inputs:
 *   embed, rope, add, KV store: bit-identical   rmsnorm: bit-identical in practice (<= 1 ulp)
 *   attention (split-KV, long and windowed ranges): max relative error <= 2e-5
 *   swiglu / geglu (CUDA expf / tanhf): <= 4 ulp-ish, checked as relative error <= 1e-6
 *   argmax: the CPU's index, including ties (lowest index wins). */
#include "test.h"
#include <stdint.h>
#include "model/backend.h"
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

#define NBUF 8
int main(void) {
    if (cuda_device_count() <= 0) SKIP_ALL("no CUDA device");
    const int n_ctx = 1536;
    hparams hp = make_hp(n_ctx);
    model_weights mw;
    memset(&mw, 0, sizeof mw);
    threadpool *tp = threadpool_create(4);
    char err[512];
    backend *cpu = backend_cpu_new(&hp, n_ctx, tp, 0, 0, err, sizeof err);
    backend *gpu = backend_cuda_new(&hp, &mw, n_ctx, err, sizeof err);
    CHECKF(cpu && gpu, "%s", err);
    if (!cpu || !gpu) TEST_DONE();
    const int T = 8, E = hp.n_embd, H = hp.n_heads, KVH = hp.n_kv_heads, HD = hp.head_dim;
    size_t big = (size_t)T * 2048;
    float *a = malloc(big * 4), *b = malloc(big * 4), *c = malloc(big * 4), *ref = malloc(big * 4), *out = malloc(big * 4);
    CHECK(backend_cuda_mirror(gpu, a, big * 4) == 0 && backend_cuda_mirror(gpu, b, big * 4) == 0 &&
          backend_cuda_mirror(gpu, c, big * 4) == 0);

    /* ---- rmsnorm: rows of E, and per-head rows of HD ---- */
    t_current = "rmsnorm";
    float *g = malloc(E * 4);
    fill(g, E, 1.5f);
    weight nw = { 0 };
    nw.data = g; nw.type = TYPE_F32; nw.n_in = E; nw.n_out = 1; nw.n_expert = 1; nw.nbytes = E * 4;
    nw.dev = cuda_malloc(E * 4);
    cuda_memcpy_h2d(nw.dev, g, E * 4);
    fill(a, (size_t)T * E, 3.0f);
    cpu->ops->rmsnorm(cpu, a, &nw, ref, T, E, hp.rms_eps);
    backend_cuda_upload(gpu, a, (size_t)T * E * 4);
    gpu->ops->rmsnorm(gpu, a, &nw, b, T, E, hp.rms_eps);
    backend_cuda_download(gpu, b, (size_t)T * E * 4);
    CHECKF(ulp_diff_max(b, ref, (size_t)T * E) <= 1, "rmsnorm differs by %zu ulp", ulp_diff_max(b, ref, (size_t)T * E));
    printf("rmsnorm    bit-identical: %s (max %zu ulp)\n", bits_equal(b, ref, (size_t)T * E) ? "yes" : "no",
           ulp_diff_max(b, ref, (size_t)T * E));

    /* ---- rope at a far position ---- */
    t_current = "rope";
    fill(a, (size_t)T * H * HD, 2.0f);
    memcpy(ref, a, (size_t)T * H * HD * 4);
    backend_cuda_upload(gpu, a, (size_t)T * H * HD * 4);
    cpu->ops->rope(cpu, ref, T, H, HD, hp.n_rot, 1000, hp.rope_base, 1.0f);
    gpu->ops->rope(gpu, a, T, H, HD, hp.n_rot, 1000, hp.rope_base, 1.0f);
    backend_cuda_download(gpu, a, (size_t)T * H * HD * 4);
    CHECKF(bits_equal(a, ref, (size_t)T * H * HD), "rope: max rel %g", max_rel(a, ref, (size_t)T * H * HD));

    /* ---- add, swiglu, geglu ---- */
    t_current = "elementwise";
    size_t n = (size_t)T * hp.n_ff;
    fill(a, n, 4.0f); fill(b, n, 2.0f);
    memcpy(ref, a, n * 4);
    backend_cuda_upload(gpu, a, n * 4); backend_cuda_upload(gpu, b, n * 4);
    cpu->ops->add(cpu, ref, b, (int)n);
    gpu->ops->add(gpu, a, b, (int)n);
    backend_cuda_download(gpu, a, n * 4);
    CHECK(bits_equal(a, ref, n));
    cpu->ops->swiglu(cpu, a, b, ref, (int)n);
    gpu->ops->swiglu(gpu, a, b, c, (int)n);
    backend_cuda_download(gpu, c, n * 4);
    int libm = !strncmp(cuda_expf_mode(), "libm", 4);
    printf("expf on the GPU: %s\n", cuda_expf_mode());
    CHECKF(max_rel(c, ref, n) <= 1e-6, "swiglu max rel %g", max_rel(c, ref, n));
    if (libm) CHECKF(bits_equal(c, ref, n), "swiglu not bit-identical (max %zu ulp)", ulp_diff_max(c, ref, n));
    printf("swiglu     bit-identical: %s (max %zu ulp)\n", bits_equal(c, ref, n) ? "yes" : "no", ulp_diff_max(c, ref, n));
    if (cpu->ops->geglu && gpu->ops->geglu) {
        cpu->ops->geglu(cpu, a, b, ref, (int)n);
        gpu->ops->geglu(gpu, a, b, c, (int)n);
        backend_cuda_download(gpu, c, n * 4);
        CHECKF(max_rel(c, ref, n) <= 1e-6, "geglu max rel %g", max_rel(c, ref, n));
        printf("geglu      max rel err %.3g\n", max_rel(c, ref, n));
    }

    /* ---- attention: fill the cache to 1300 positions with T-token passes, then compare a
     * T = 8 pass (full range, 6 splits) and a windowed one ---- */
    t_current = "attention";
    float *q = a, *k = b, *v = c;
    /* the split-KV variant, created with STRATA_CUDA_ATTN=split */
    setenv("STRATA_CUDA_ATTN", "split", 1); env_reset_cache();
    backend *gsplit = backend_cuda_new(&hp, &mw, n_ctx, err, sizeof err);
    setenv("STRATA_CUDA_ATTN", "exact", 1); env_reset_cache();
    CHECK(gsplit && backend_cuda_mirror(gsplit, a, big * 4) == 0 && backend_cuda_mirror(gsplit, b, big * 4) == 0 &&
          backend_cuda_mirror(gsplit, c, big * 4) == 0);
    double worst = 0, worst_split = 0;
    int exact_bits = 1;
    for (int pos = 0; pos < 1300; pos += T) {
        fill(q, (size_t)T * H * HD, 1.0f); fill(k, (size_t)T * KVH * HD, 1.0f); fill(v, (size_t)T * KVH * HD, 1.0f);
        backend_cuda_upload(gpu, a, big * 4); backend_cuda_upload(gpu, b, big * 4); backend_cuda_upload(gpu, c, big * 4);
        int window = pos >= 1280 ? 100 : 0;
        cpu->ops->attention(cpu, 0, q, k, v, T, pos, hp.attn_scale, window, ref);
        /* out goes into a mirrored buffer: reuse the tail of a (q's rows end at T*H*HD) */
        float *gout = a + (size_t)T * H * HD;
        gpu->ops->attention(gpu, 0, q, k, v, T, pos, hp.attn_scale, window, gout);
        backend_cuda_download(gpu, gout, (size_t)T * H * HD * 4);
        double e = max_rel(gout, ref, (size_t)T * H * HD);
        if (e > worst) worst = e;
        if (!bits_equal(gout, ref, (size_t)T * H * HD)) exact_bits = 0;
        if (gsplit) {
            backend_cuda_upload(gsplit, a, big * 4); backend_cuda_upload(gsplit, b, big * 4); backend_cuda_upload(gsplit, c, big * 4);
            gsplit->ops->attention(gsplit, 0, q, k, v, T, pos, hp.attn_scale, window, gout);
            backend_cuda_download(gsplit, gout, (size_t)T * H * HD * 4);
            e = max_rel(gout, ref, (size_t)T * H * HD);
            if (e > worst_split) worst_split = e;
        }
    }
    CHECKF(worst <= 2e-5, "attention max rel err %g", worst);
    if (libm) CHECKF(exact_bits, "exact attention not bit-identical to the CPU (max rel %g)", worst);
    CHECKF(worst_split <= 2e-5, "split attention max rel err %g", worst_split);
    printf("attention  exact: bit-identical %s (max rel %.3g); split-KV: max rel err %.3g; 163 passes up to 1300 "
           "positions, windowed too\n", exact_bits ? "yes" : "no", worst, worst_split);
    backend_cuda_free(gsplit);

    /* ---- argmax with ties: lowest index among equal maxima ---- */
    t_current = "argmax";
    {
        fwd_state f;
        memset(&f, 0, sizeof f);
        f.hp = &hp;
        f.logits = a;   /* mirrored */
        int ok = 1;
        for (int trial = 0; trial < 4; trial++) {
            fill(a, hp.n_vocab, 10.0f);
            if (trial >= 2) { a[700] = 50.0f; a[300] = 50.0f; a[999] = 50.0f; }
            if (trial == 3) a[0] = 50.0f;
            backend_cuda_upload(gpu, a, hp.n_vocab * 4);
            int32_t gi = backend_cuda_argmax(gpu, &f, 0), ci = sample_argmax(a, hp.n_vocab);
            if (gi != ci) { ok = 0; fprintf(stderr, "argmax trial %d: gpu %d cpu %d\n", trial, gi, ci); }
        }
        CHECK(ok);
    }
    CHECKF(backend_cuda_sync(gpu, err, sizeof err) == 0, "%s", err);
    cuda_free(nw.dev);
    backend_cuda_free(gpu);
    backend_cpu_free(cpu);
    threadpool_free(tp);
    free(a); free(b); free(c); free(ref); free(out); free(g);
    TEST_DONE();
}
