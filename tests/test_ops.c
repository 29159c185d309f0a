/* The CPU backend's gated-FFN activations (src/cpu/backend_cpu.c), without a model file.
 *
 * cpu_geglu: gelu_tanh(g) * u, gelu_tanh(g) = 0.5 g (1 + tanh(y)), y = sqrt(2/pi) (g + 0.044715 g^3)
 * (Gemma's "gelu_pytorch_tanh"), computed in float as g / (1 + expf(-z)), z = f32(2 sqrt(2/pi)) *
 * (g + ((0.044715 g) g) g) (why that form: the comment at cpu_geglu; the GPU's geglu_kernel
 * repeats it for the same bits, tests/gpu/test_gpu_ops.c). Asserted:
 *   - the identity: in double, 0.5 g (1 + tanh(y)) == g / (1 + exp(-2y)) within 1e-13 relative
 *     where 1 + tanh(y) does not cancel (g in [-3, 20]): the rewrite is the definition;
 *   - accuracy against that definition in double, at every input of four sweeps (a grid over
 *     [-20, 20], every binade from 2^-149 to 2^127 of both signs, random finite bit patterns,
 *     the steps around where expf(-z) overflows): |out - ref| <= bound * |ref| with, u = 2^-24,
 *         bound = (4 + 8 |2y| s) u,   s = e / (1 + e), e = exp(-2y).
 *     Why: the constants and the five roundings before expf give z = 2y (1 + d), |d| <= 7u
 *     (0.044715f: 1u, three products: 3u, the sum of g and cube, which have one sign: 1u, c2: 1u,
 *     the product: 1u); expf(-z) is exp(-2y) (1 + d') with |d'| <= 7u |2y| + 1.01u (glibc's
 *     expf: < 0.502 ulp); 1 + e passes on s of that, plus its own 1u, and the quotient 1u: in
 *     all 3.01u + 7u |2y| s to first order. Where g >= 0, s <= 1/2 and |2y| s stays below 0.3:
 *     within 4u + 2.4u (measured: 2.23u). For negative g the bound grows with |2y| (up to
 *     8 * 89 u = 4.2e-5 relative at the overflow; measured: 224u at g = -9.50, |2y| = 76): the
 *     argument's relative rounding becomes a relative error of exp(-2y) times |2y|, the
 *     conditioning of the function at large negative g, not a loss of the form (the old
 *     0.5 g (1 + tanhf(y)) cancelled to 0 there, below g = -5.42);
 *     results below 2^-124 in magnitude (|ref| < 4.7e-38: where the quotient's denominator
 *     overflowed to inf, or the quotient is subnormal) need only |out| <= 2^-124 with ref's sign
 *     or zero;
 *   - specials bit for bit: +0 -> +0, -0 -> -0, +inf -> +inf, FLT_MAX -> FLT_MAX, -FLT_MAX -> -0,
 *     g below the overflow -> -0, NaN -> NaN, -inf -> NaN (-inf / inf, as the tanh form's
 *     -inf * 0 gave); subnormal g -> g / 2 exactly;
 *   - the up factor: out(g, u) == out(g, 1) * u bit for bit (the last operation is the product).
 * Printed: the largest error in units of u by range, and how many outputs differ from the
 * former definition 0.5 g (1 + tanhf(y)) (its bits are the CPU's gemma3 bits before this form). */
#include "test.h"
#include <float.h>
#include <stdint.h>
#include "cpu/backend_cpu.h"

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd64(void) {
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return rs;
}
static uint32_t fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float ffrom(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* the definition in double, in the form that does not cancel: g / (1 + exp(-2y)) */
static double gelu_ref(double g, double *two_y) {
    double y = 0.7978845608028654 * (g + 0.044715 * g * g * g);
    *two_y = 2.0 * y;
    return g / (1.0 + exp(-2.0 * y));
}
/* the former float definition (the CPU's before 2026-12-04), for the printed difference only */
static float geglu_tanh_form(float g) {
    float t = tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g));
    return 0.5f * g * (1.0f + t);
}

static const double U = 0x1p-24;
typedef struct { const char *name; size_t n, bad, old_diff, tiny; double worst_u, worst_g; } sweep;

/* one input against the reference; counts a failure (and prints the first few) */
static void check_one(sweep *s, float g, float out) {
    double two_y, ref = gelu_ref((double)g, &two_y);
    s->n++;
    if (fbits(out) != fbits(geglu_tanh_form(g))) s->old_diff++;
    int ok;
    if (fabs(ref) < 0x1p-124) {
        ok = fabsf(out) <= 0x1p-124f && (out == 0.0f || (out < 0) == (ref < 0));
        s->tiny++;
    } else {
        double e = exp(-two_y), sg = isinf(e) ? 1.0 : e / (1.0 + e);
        double bound = (4.0 + 8.0 * fabs(two_y) * sg) * U, err = fabs((double)out - ref) / fabs(ref);
        ok = err <= bound;
        if (err / U > s->worst_u) { s->worst_u = err / U; s->worst_g = g; }
    }
    if (!ok && s->bad++ < 5)
        fprintf(stderr, "  %s: g %a: out %a, ref %a (2y %.4g)\n", s->name, (double)g, (double)out, ref, two_y);
}

static void run_sweep(sweep *s, const float *g, size_t n) {
    float *out = malloc(n * sizeof(float)), *one = calloc(n, sizeof(float));
    if (!out || !one) { CHECKF(0, "out of memory"); free(out); free(one); return; }
    for (size_t i = 0; i < n; i++) one[i] = 1.0f;
    cpu_geglu(g, one, out, (int)n);
    for (size_t i = 0; i < n; i++) check_one(s, g[i], out[i]);
    CHECKF(s->bad == 0, "%s: %zu of %zu outputs outside the bound", s->name, s->bad, s->n);
    printf("geglu %-36s %8zu inputs (%zu below 2^-124), max error %.2f u (at g = %.6g), %zu differ from "
           "0.5 g (1 + tanhf(y))\n", s->name, s->n, s->tiny, s->worst_u, s->worst_g, s->old_diff);
    free(out); free(one);
}

static void test_geglu_identity(void) {
    double worst = 0;
    for (int i = 0; i <= 23000; i++) {
        double g = -3.0 + i * 1e-3, two_y, a = gelu_ref(g, &two_y);
        double b = 0.5 * g * (1.0 + tanh(0.5 * two_y));
        if (g != 0) worst = fmax(worst, fabs(a - b) / fabs(b));
    }
    CHECKF(worst <= 1e-13, "g / (1 + exp(-2y)) vs 0.5 g (1 + tanh(y)): relative %g", worst);
}

static void test_geglu_sweeps(void) {
    /* [-20, 20] in steps of 2e-5 (2,000,001 inputs) */
    {
        size_t n = 2000001;
        float *g = malloc(n * sizeof(float));
        if (!g) { CHECKF(0, "out of memory"); return; }
        for (size_t i = 0; i < n; i++) g[i] = (float)(-20.0 + 2e-5 * (double)i);
        sweep s = { "grid [-20, 20]", 0, 0, 0, 0, 0, 0 };
        run_sweep(&s, g, n);
        /* g >= 0 alone: the 4u + small term of the header */
        sweep p = { "grid [0, 20]", 0, 0, 0, 0, 0, 0 };
        run_sweep(&p, g + 1000000, n - 1000000);
        CHECKF(p.worst_u <= 4.0 + 2.4, "g >= 0: %.2f u", p.worst_u);
        free(g);
    }
    /* every binade 2^-149 .. 2^127, 64 mantissas each, both signs */
    {
        size_t n = 0, cap = 2 * 277 * 64;
        float *g = malloc(cap * sizeof(float));
        if (!g) { CHECKF(0, "out of memory"); return; }
        for (int e = -149; e <= 127; e++)
            for (int m = 0; m < 64; m++) {
                float v = ldexpf(1.0f + (float)m / 64.0f, e);   /* below 2^-126: the nearest subnormal */
                g[n++] = v; g[n++] = -v;
            }
        sweep s = { "binades 2^-149 .. 2^127, both signs", 0, 0, 0, 0, 0, 0 };
        run_sweep(&s, g, n);
        free(g);
    }
    /* random finite bit patterns */
    {
        size_t n = 1 << 20;
        float *g = malloc(n * sizeof(float));
        if (!g) { CHECKF(0, "out of memory"); return; }
        for (size_t i = 0; i < n; i++) {
            float v;
            do v = ffrom((uint32_t)(rnd64() >> 32)); while (!isfinite(v));
            g[i] = v;
        }
        sweep s = { "random finite bit patterns", 0, 0, 0, 0, 0, 0 };
        run_sweep(&s, g, n);
        free(g);
    }
    /* around the overflow of expf(-z) (g = -10.06): 4,096 consecutive floats each side, then
     * every 64th float over +-0.25 (z from -85 to -93) */
    {
        size_t n = 16384;
        float *g = malloc(n * sizeof(float));
        if (!g) { CHECKF(0, "out of memory"); return; }
        for (size_t i = 0; i < 8192; i++) g[i] = ffrom(fbits(-10.06097f) - 4096 + (uint32_t)i);
        for (size_t i = 0; i < 8192; i++) g[8192 + i] = ffrom(fbits(-10.06097f) - 64 * 4096 + 64 * (uint32_t)i);
        sweep s = { "floats around g = -10.06", 0, 0, 0, 0, 0, 0 };
        run_sweep(&s, g, n);
        free(g);
    }
}

static void test_geglu_specials(void) {
    static const struct { float g; uint32_t want; } sp[] = {
        { 0.0f, 0x00000000u }, { -0.0f, 0x80000000u }, { INFINITY, 0x7f800000u }, { FLT_MAX, 0x7f7fffffu },
        { -FLT_MAX, 0x80000000u }, { -11.0f, 0x80000000u }, { -1e20f, 0x80000000u },
        { 0x1p-149f, 0x00000000u }, { -0x1p-149f, 0x80000000u },   /* 2^-149 / 2: ties to even, a signed 0 */
        { 0x1p-140f, 0x00000100u }, { -0x1p-140f, 0x80000100u },   /* subnormal g: g / 2 exactly */
    };
    const int n = (int)(sizeof sp / sizeof sp[0]);
    float g[16], one[16], out[16];
    for (int i = 0; i < n; i++) { g[i] = sp[i].g; one[i] = 1.0f; }
    cpu_geglu(g, one, out, n);
    for (int i = 0; i < n; i++)
        CHECKF(fbits(out[i]) == sp[i].want, "geglu(%a) = %a (0x%08x), want 0x%08x", (double)sp[i].g, (double)out[i],
               fbits(out[i]), sp[i].want);
    float nan_in[2] = { NAN, -INFINITY }, nan_out[2];
    cpu_geglu(nan_in, one, nan_out, 2);
    CHECKF(isnan(nan_out[0]) && isnan(nan_out[1]), "geglu(NaN) = %g, geglu(-inf) = %g", (double)nan_out[0],
           (double)nan_out[1]);
}

/* out(g, u) == out(g, 1) * u bit for bit */
static void test_geglu_up(void) {
    enum { N = 65536 };
    static float g[N], u[N], one[N], h[N], out[N];
    for (int i = 0; i < N; i++) {
        g[i] = (float)((double)(rnd64() >> 11) * 0x1p-53 * 40.0 - 20.0);
        u[i] = (float)((double)(rnd64() >> 11) * 0x1p-53 * 8.0 - 4.0);
        one[i] = 1.0f;
    }
    cpu_geglu(g, one, h, N);
    cpu_geglu(g, u, out, N);
    int bad = 0;
    for (int i = 0; i < N; i++) if (fbits(out[i]) != fbits(h[i] * u[i])) bad++;
    CHECKF(bad == 0, "geglu(g, u) != geglu(g, 1) * u at %d of %d", bad, N);
    cpu_geglu(g, u, g, N);   /* in place, as the backend calls it (out == gate) */
    CHECKF(!memcmp(g, out, sizeof out), "geglu in place differs");
}

int main(void) {
    RUN(test_geglu_identity);
    RUN(test_geglu_sweeps);
    RUN(test_geglu_specials);
    RUN(test_geglu_up);
    TEST_DONE();
}
