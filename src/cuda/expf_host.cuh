/* expf with the bits of the host C library's expf, on the GPU.
 *
 * Why: the CPU backend (the reference) calls libm's expf in SwiGLU and in the attention
 * softmax. CUDA's expf differs from it by an ulp now and then, and int8 activation
 * quantization turns such an ulp into a rounding flip whose effect grows through the layers
 * (measured: 1e-7 differences become 1e-2 after ~20 layers). With these bits the GPU forward
 * pass equals the CPU's bit for bit.
 *
 * The algorithm is the one glibc (2.28+) uses for expf, written out here: in double,
 * x * 32/ln2 = k + r (k rounded to nearest by adding 1.5 * 2^52), 2^(k/32) from a 32-entry
 * table with the exponent added in integer arithmetic, and 2^(r/32) by a cubic
 * polynomial; one final rounding to float. glibc builds it twice (with and without FMA
 * contraction of the three multiply-adds) and picks one at run time, so both variants are
 * here (FMA = 1 / 0). The table is computed at start (exp2 of i/32, correctly rounded in
 * double for these 32 points) and expf_host_select() checks both variants against the
 * host's expf on 2^20 inputs and keeps the one that matches them all; when neither does
 * (another libm), the backend falls back to CUDA's expf and says so. */
#ifndef STRATA_EXPF_HOST_CUH
#define STRATA_EXPF_HOST_CUH
#include <stdint.h>
#include <string.h>
#include <math.h>

#define EXPF_TAB_N 32

struct expf_table { uint64_t tab[EXPF_TAB_N]; };

static __host__ __device__ __forceinline__ double ex_mul(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;   /* host: -ffp-contract=off */
#endif
}
static __host__ __device__ __forceinline__ double ex_add(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}
static __host__ __device__ __forceinline__ double ex_fma(double a, double b, double c) {
#ifdef __CUDA_ARCH__
    return __fma_rn(a, b, c);
#else
    return fma(a, b, c);
#endif
}
static __host__ __device__ __forceinline__ uint32_t ex_fbits(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static __host__ __device__ __forceinline__ uint64_t ex_dbits(double x) { uint64_t u; memcpy(&u, &x, 8); return u; }
static __host__ __device__ __forceinline__ double ex_dfrom(uint64_t u) { double x; memcpy(&x, &u, 8); return x; }

template <int FMA>
static __host__ __device__ __forceinline__ float expf_libm(float x, const uint64_t *tab) {
    const double invln2n = 0x1.71547652b82fep+0 * EXPF_TAB_N, shift = 0x1.8p+52;
    const double c0 = 0x1.c6af84b912394p-5 / EXPF_TAB_N / EXPF_TAB_N / EXPF_TAB_N;
    const double c1 = 0x1.ebfce50fac4f3p-3 / EXPF_TAB_N / EXPF_TAB_N;
    const double c2 = 0x1.62e42ff0c52d6p-1 / EXPF_TAB_N;
    uint32_t ux = ex_fbits(x), abstop = (ux >> 20) & 0x7ff;
    if (abstop >= (ex_fbits(88.0f) >> 20)) {
        if (ux == ex_fbits(-INFINITY)) return 0.0f;
        if (abstop >= (ex_fbits(INFINITY) >> 20)) return x + x;
        if (x > 0x1.62e42ep6f) return INFINITY;
        if (x < -0x1.9fe368p6f) return 0.0f;
    }
    double xd = (double)x;
    double z = ex_mul(invln2n, xd);
    double kd = ex_add(z, shift);
    uint64_t ki = ex_dbits(kd);
    kd = ex_add(kd, -shift);
    double r = ex_add(z, -kd);
    uint64_t t = tab[ki % EXPF_TAB_N] + (ki << (52 - 5));
    double s = ex_dfrom(t);
    double zz, y, r2 = ex_mul(r, r);
    if (FMA) {
        zz = ex_fma(c0, r, c1);
        y = ex_fma(c2, r, 1.0);
        y = ex_fma(zz, r2, y);
    } else {
        zz = ex_add(ex_mul(c0, r), c1);
        y = ex_add(ex_mul(c2, r), 1.0);
        y = ex_add(ex_mul(zz, r2), y);
    }
    y = ex_mul(y, s);
    return (float)y;
}

/* Device-side choice: 1 = FMA variant, 0 = plain, -1 = CUDA expf (no match on this host). */
static inline void expf_table_make(expf_table *t) {
    for (int i = 0; i < EXPF_TAB_N; i++) t->tab[i] = ex_dbits(exp2((double)i / EXPF_TAB_N)) - ((uint64_t)i << 47);
}
static inline int expf_host_select(const expf_table *t) {
    int ok_fma = 1, ok_plain = 1;
    uint64_t s = 0x243F6A8885A308D3ull;
    for (int i = 0; i < (1 << 20) && (ok_fma || ok_plain); i++) {
        float x;
        if (i < 4096) x = -104.0f + 193.0f * (float)i / 4096.0f;            /* a sweep of the range */
        else {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            uint32_t b = (uint32_t)(s >> 32);
            x = (float)((double)(b & 0xFFFFFF) / (double)0x1000000 * 40.0 - 30.0);
            if (i & 1) { memcpy(&x, &b, 4); if (!(fabsf(x) < 100.0f)) x = (float)(b % 2000) / 20.0f - 50.0f; }
        }
        float ref = expf(x);
        uint32_t rb = ex_fbits(ref);
        if (ex_fbits(expf_libm<1>(x, t->tab)) != rb) ok_fma = 0;
        if (ex_fbits(expf_libm<0>(x, t->tab)) != rb) ok_plain = 0;
    }
    return ok_fma ? 1 : ok_plain ? 0 : -1;
}
#endif

/* Per translation unit: the device copy of the table and mode, expf_ref() for kernels, and
 * the setter the backend calls once (after expf_host_select). */
#define EXPF_DEVICE_STATE                                                                        \
    static __device__ uint64_t d_exp_tab[EXPF_TAB_N];                                           \
    static __device__ int d_exp_mode = -1;                                                       \
    static __device__ __forceinline__ float expf_ref(float x) {                                  \
        int m = d_exp_mode;                                                                      \
        if (m == 1) return expf_libm<1>(x, d_exp_tab);                                           \
        if (m == 0) return expf_libm<0>(x, d_exp_tab);                                           \
        return expf(x);                                                                          \
    }                                                                                            \
    static int expf_device_set(const expf_table *t, int mode) {                                  \
        return cudaMemcpyToSymbol(d_exp_tab, t->tab, sizeof t->tab) != cudaSuccess ||            \
               cudaMemcpyToSymbol(d_exp_mode, &mode, sizeof mode) != cudaSuccess ? -1 : 0;       \
    }
