/* expf with the host C library's bits, eight values at a time (AVX2 + FMA; dispatched at run
 * time: the caller checks cpu_has_avx2_fma() and expf_avx2_mode()).
 *
 * The attention's softmax takes an expf per (token, head, position) (docs/KERNELS.md
 * "Attention order": libm's expf), one call at a time. This is the algorithm of glibc >= 2.28's
 * expf written out for four doubles per vector, as src/cuda/expf_host.cuh does on the GPU: in
 * double, x * 32/ln2 = k + r (k rounded to nearest by adding 1.5 * 2^52), 2^(k/32) from a
 * 32-entry table with the exponent added in integer arithmetic, 2^(r/32) by a cubic, one
 * rounding to float at the end. glibc builds it with and without FMA contraction and picks one
 * at run time, so both are here; the FMA build (glibc 2.36 on x86-64, disassembled) fuses five
 * operations: k + shift = fma(x, 32/ln2, shift), r = fma(x, 32/ln2, -k) and the cubic's three
 * multiply-adds (src/cuda/expf_host.cuh fuses only the last three: it differs from that build
 * at 2 of the 2^32 inputs, x = 0x1.04845ep+5 and -0x1.f8cbb2p+5; bench/expf_check.c). At first use
 * expf_avx2_mode() compares both with the host's expf on 2^20 inputs (a sweep of
 * [-104, 89], random values and random bit patterns) and keeps the one that matches every
 * input; none (another libm): -1, and the callers keep calling expf. A group of eight with a
 * lane >= 88 or NaN goes to the host's expf lane by lane (the underflow cases are blended in:
 * ex8). */
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "kernels.h"

static uint64_t ex_tab[32];   /* bits(2^(i/32)) - (i << 47) */
static int ex_mode = -1;
static pthread_once_t ex_once = PTHREAD_ONCE_INIT;
static void ex_select(void);

#define EX_INVLN2N (0x1.71547652b82fep+0 * 32)
#define EX_SHIFT 0x1.8p+52
#define EX_C0 (0x1.c6af84b912394p-5 / 32 / 32 / 32)
#define EX_C1 (0x1.ebfce50fac4f3p-3 / 32 / 32)
#define EX_C2 (0x1.62e42ff0c52d6p-1 / 32)

/* four doubles (the float inputs widened) -> four floats */
static inline __m128 ex4(__m256d xd, int fma) {
    const __m256d il = _mm256_set1_pd(EX_INVLN2N), sh = _mm256_set1_pd(EX_SHIFT);
    __m256d kd, r;
    __m256i ki;
    if (fma) {   /* glibc's FMA build fuses these two as well (libm 2.36's __expf_fma, disassembled) */
        kd = _mm256_fmadd_pd(il, xd, sh);
        ki = _mm256_castpd_si256(kd);
        kd = _mm256_sub_pd(kd, sh);
        r = _mm256_fmsub_pd(il, xd, kd);
    } else {
        const __m256d z = _mm256_mul_pd(il, xd);
        kd = _mm256_add_pd(z, sh);
        ki = _mm256_castpd_si256(kd);
        kd = _mm256_sub_pd(kd, sh);
        r = _mm256_sub_pd(z, kd);
    }
    const __m256i t = _mm256_add_epi64(
        _mm256_i64gather_epi64((const long long *)ex_tab, _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8),
        _mm256_slli_epi64(ki, 52 - 5));
    const __m256d s = _mm256_castsi256_pd(t), r2 = _mm256_mul_pd(r, r);
    __m256d zz, y;
    if (fma) {
        zz = _mm256_fmadd_pd(_mm256_set1_pd(EX_C0), r, _mm256_set1_pd(EX_C1));
        y = _mm256_fmadd_pd(_mm256_set1_pd(EX_C2), r, _mm256_set1_pd(1.0));
        y = _mm256_fmadd_pd(zz, r2, y);
    } else {
        zz = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(EX_C0), r), _mm256_set1_pd(EX_C1));
        y = _mm256_add_pd(_mm256_mul_pd(_mm256_set1_pd(EX_C2), r), _mm256_set1_pd(1.0));
        y = _mm256_add_pd(_mm256_mul_pd(zz, r2), y);
    }
    return _mm256_cvtpd_ps(_mm256_mul_pd(y, s));
}

/* eight lanes; 0: a lane is >= 88 or NaN (overflow, inf, NaN: the host's expf for the eight).
 * Below -88 glibc's expf keeps the main path down to log(0x1p-149) ~= -103.28; under it,
 * 0x1p-149 (its __math_may_uflowf) down to log(0x1p-150) ~= -103.97, then +0 (and -inf: +0):
 * those lanes are blended in. The startup check's sweep covers these intervals. */
static inline int ex8(__m256 x, int fma, float *out) {
    if (_mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_set1_ps(88.0f), _CMP_NLT_UQ))) return 0;
    const __m128 lo = ex4(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), fma);
    const __m128 hi = ex4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), fma);
    __m256 y = _mm256_set_m128(hi, lo);
    const __m256 u1 = _mm256_cmp_ps(x, _mm256_set1_ps(-0x1.9d1d9ep6f), _CMP_LT_OQ);
    if (_mm256_movemask_ps(u1)) {
        const __m256 u2 = _mm256_cmp_ps(x, _mm256_set1_ps(-0x1.9fe368p6f), _CMP_LT_OQ);
        y = _mm256_blendv_ps(y, _mm256_set1_ps(0x1p-149f), u1);
        y = _mm256_blendv_ps(y, _mm256_setzero_ps(), u2);
    }
    _mm256_storeu_ps(out, y);
    return 1;
}

static void ex_sub(float *s, int n, float m, int fma) {
    const __m256 mv = _mm256_set1_ps(m);
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 x = _mm256_sub_ps(_mm256_loadu_ps(s + i), mv);
        if (!ex8(x, fma, s + i))
            for (int k = 0; k < 8; k++) s[i + k] = expf(s[i + k] - m);
    }
    for (; i < n; i++) s[i] = expf(s[i] - m);
}

void expf_sub_avx2(float *s, int n, float m) {
    pthread_once(&ex_once, ex_select);   /* backend_cpu_new did it: a load and a branch */
    if (ex_mode == 1) ex_sub(s, n, m, 1);
    else if (ex_mode == 0) ex_sub(s, n, m, 0);
    else for (int i = 0; i < n; i++) s[i] = expf(s[i] - m);
}

/* both variants on n inputs against the host's expf: bit 0 set when the plain one matches all,
 * bit 1 when the FMA one does */
static int ex_check(const float *x, int n) {
    int ok = 3;
    for (int i = 0; i + 8 <= n; i += 8) {
        float ref[8], a[8], b[8];
        for (int k = 0; k < 8; k++) ref[k] = expf(x[i + k]);
        const __m256 v = _mm256_loadu_ps(x + i);
        if (!ex8(v, 0, a)) memcpy(a, ref, sizeof a);   /* the special lanes are the host's by construction */
        if (!ex8(v, 1, b)) memcpy(b, ref, sizeof b);
        if (memcmp(a, ref, sizeof a)) ok &= ~1;
        if (memcmp(b, ref, sizeof b)) ok &= ~2;
    }
    return ok;
}

static void ex_select(void) {
    for (int i = 0; i < 32; i++) {
        const double v = exp2((double)i / 32);
        uint64_t u;
        memcpy(&u, &v, 8);
        ex_tab[i] = u - ((uint64_t)i << 47);
    }
    enum { N = 1 << 20, B = 4096 };
    static float x[B];
    uint64_t st = 0x243F6A8885A308D3ull;
    int ok = 3;
    for (int i0 = 0; i0 < N && ok; i0 += B) {
        for (int k = 0; k < B; k++) {
            const int i = i0 + k;
            if (i < 4096) x[k] = -104.0f + 193.0f * (float)i / 4096.0f;   /* a sweep of the range */
            else {
                st ^= st << 13; st ^= st >> 7; st ^= st << 17;
                uint32_t b = (uint32_t)(st >> 32);
                x[k] = (float)((double)(b & 0xFFFFFF) / (double)0x1000000 * 40.0 - 30.0);
                if (i & 1) { memcpy(&x[k], &b, 4); if (!(fabsf(x[k]) < 100.0f)) x[k] = (float)(b % 2000) / 20.0f - 50.0f; }
            }
        }
        ok &= ex_check(x, B);
    }
    ex_mode = ok & 2 ? 1 : ok & 1 ? 0 : -1;
}

int expf_avx2_mode(void) {
    pthread_once(&ex_once, ex_select);
    return ex_mode;
}

/* for tests and tools: one variant (1 FMA, 0 plain) on n values, x -> y (specials: expf) */
void expf_avx2_variant(const float *x, float *y, int n, int fma) {
    pthread_once(&ex_once, ex_select);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        if (!ex8(_mm256_loadu_ps(x + i), fma, y + i))
            for (int k = 0; k < 8; k++) y[i + k] = expf(x[i + k]);
    for (; i < n; i++) y[i] = expf(x[i]);
}
