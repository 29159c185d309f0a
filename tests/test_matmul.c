/* Wide CPU passes (issue 17): matvec with T > MATVEC_MAX_COLS columns, through the wide AVX2
 * kernels (src/cpu/matmul_avx2.h) or the tiled matvec kernels, must give every column the
 * bits the T <= 8 kernels give it (batch invariance, docs/KERNELS.md section 3).
 *
 * For every weight format, on shapes with partial strips (rows not a multiple of 8) and rows
 * short and long enough to wrap the 32 canonical lanes: widths 1, 7, 8, 9, 64 and 512 are
 * compared with memcmp against the same columns computed in passes of at most 8. Weights:
 * N(0,1) rows quantized by the format's quantizer, and rows of constant code bytes (0xFF,
 * 0x80, 0x00 with finite scales) that drive the integer sums to their extremes (the int16
 * saturation bounds of the wide kernels); columns: N(0,1), zero, large, all +1 / -1 (every
 * activation code +-127) and alternating signs. Also: the reference kernel and exact mode at
 * T = 9 and 64, and a NULL pool against 3 threads. */
#include "test.h"
#include "quant/quant_canon.h"
#include "quant/quant.h"
#include "quant/ref.h"
#include "cpu/matvec.h"
#include "cpu/kernels.h"
#include "core/util.h"
#include <stddef.h>
#include <stdint.h>

static const int TYPES[] = {
    TYPE_F32, TYPE_F16, TYPE_BF16, TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0, TYPE_Q2_0,
    TYPE_MXFP4, TYPE_Q2_K, TYPE_Q3_K, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_IQ2_XXS, TYPE_IQ2_XS,
    TYPE_IQ2_S, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ1_S, TYPE_IQ1_M, TYPE_IQ4_NL, TYPE_IQ4_XS,
};
#define N_TYPES ((int)(sizeof TYPES / sizeof TYPES[0]))

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static float rnd_unit(void) { return (float)((rnd() >> 40) / 16777216.0); }
static float rnd_gauss(void) {
    float u = rnd_unit() + 1e-7f, v = rnd_unit();
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

/* Offsets of the fp16 scale fields (d, and m / dmin), -1 where absent. 0: no pattern rows
 * for this type (float formats, IQ1_M whose d is spread over its scale words). */
static int scale_offsets(int type, int *od, int *om) {
    *od = -1; *om = -1;
    switch (type) {
    case TYPE_Q4_0: *od = offsetof(block_q4_0, d); return 1;
    case TYPE_Q4_1: *od = offsetof(block_q4_1, d); *om = offsetof(block_q4_1, m); return 1;
    case TYPE_Q5_0: *od = offsetof(block_q5_0, d); return 1;
    case TYPE_Q5_1: *od = offsetof(block_q5_1, d); *om = offsetof(block_q5_1, m); return 1;
    case TYPE_Q8_0: *od = offsetof(block_q8_0, d); return 1;
    case TYPE_Q2_0: *od = offsetof(block_q2_0, d); return 1;
    case TYPE_MXFP4: return 1;   /* byte 0 is the exponent: set below */
    case TYPE_Q2_K: *od = offsetof(block_q2_K, d); *om = offsetof(block_q2_K, dmin); return 1;
    case TYPE_Q3_K: *od = offsetof(block_q3_K, d); return 1;
    case TYPE_Q4_K: *od = offsetof(block_q4_K, d); *om = offsetof(block_q4_K, dmin); return 1;
    case TYPE_Q5_K: *od = offsetof(block_q5_K, d); *om = offsetof(block_q5_K, dmin); return 1;
    case TYPE_Q6_K: *od = offsetof(block_q6_K, d); return 1;
    case TYPE_IQ2_XXS: *od = offsetof(block_iq2_xxs, d); return 1;
    case TYPE_IQ2_XS: *od = offsetof(block_iq2_xs, d); return 1;
    case TYPE_IQ2_S: *od = offsetof(block_iq2_s, d); return 1;
    case TYPE_IQ3_XXS: *od = offsetof(block_iq3_xxs, d); return 1;
    case TYPE_IQ3_S: *od = offsetof(block_iq3_s, d); return 1;
    case TYPE_IQ1_S: *od = offsetof(block_iq1_s, d); return 1;
    case TYPE_IQ4_NL: *od = offsetof(block_iq4_nl, d); return 1;
    case TYPE_IQ4_XS: *od = offsetof(block_iq4_xs, d); return 1;
    default: return 0;
    }
}

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Row r of W: pattern rows (r % 5 == 1, 2, 3: all code bytes 0xFF, 0x80, 0x00; r % 5 == 4:
 * random bytes), all with finite scales; other rows quantized from N(0,1). */
static void fill_weights(int type, uint8_t *W, int64_t n_in, int64_t n_out) {
    const quant_traits *t = quant_traits_get(type);
    size_t rb = quant_row_bytes(type, n_in);
    float *src = malloc((size_t)n_in * sizeof(float));
    int od, om, pat = scale_offsets(type, &od, &om);
    static const uint8_t fills[] = { 0xFF, 0x80, 0x00 };
    for (int64_t r = 0; r < n_out; r++) {
        uint8_t *row = W + (size_t)r * rb;
        int kind = (int)(r % 5);
        if (!pat || kind == 0) {
            for (int64_t k = 0; k < n_in; k++) src[k] = rnd_gauss() * (r % 3 == 2 ? 40.0f : 1.0f);
            t->quant_row(src, row, n_in);
            continue;
        }
        for (size_t i = 0; i < rb; i++) row[i] = kind == 4 ? (uint8_t)rnd() : fills[kind - 1];
        for (int64_t b = 0; b < n_in / t->blck; b++) {
            uint8_t *blk = row + (size_t)b * (size_t)t->bsize;
            if (type == TYPE_MXFP4) blk[0] = (uint8_t)(110 + rnd() % 30);
            if (od >= 0) put16(blk + od, (uint16_t)(b % 2 ? 0x3c00 : 0x3555 ^ (rnd() & 0x8000)));   /* 1, +-0.33 */
            if (om >= 0) put16(blk + om, (uint16_t)(0x2e66 ^ (rnd() & 0x8000)));                    /* +-0.1 */
        }
    }
    free(src);
}

/* Column c: kind c % 8: 0..2 N(0,1), 3 zero, 4 large, 5 all +1, 6 all -1, 7 alternating. */
static void fill_columns(float *x, int64_t n_in, int T) {
    for (int c = 0; c < T; c++) {
        float *xc = x + (size_t)c * (size_t)n_in;
        for (int64_t k = 0; k < n_in; k++) {
            switch (c % 8) {
            case 3: xc[k] = 0.0f; break;
            case 4: xc[k] = rnd_gauss() * 1000.0f; break;
            case 5: xc[k] = 1.0f; break;
            case 6: xc[k] = -1.0f; break;
            case 7: xc[k] = k % 2 ? -0.5f : 0.5f; break;
            default: xc[k] = rnd_gauss(); break;
            }
        }
    }
}

static int64_t count_diff(const float *a, const float *b, int64_t n) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

/* y8 = the first T columns in passes of at most 8 */
static int narrow_passes(threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out, const float *x, int T,
                         float *y, matvec_mode mode, matvec_kernel kern) {
    for (int c0 = 0; c0 < T; c0 += MATVEC_MAX_COLS) {
        int n = T - c0 < MATVEC_MAX_COLS ? T - c0 : MATVEC_MAX_COLS;
        if (matvec_with(tp, W, type, n_in, n_out, x + (size_t)c0 * (size_t)n_in, n, y + (size_t)c0 * (size_t)n_out, mode, kern))
            return -1;
    }
    return 0;
}

static void widths_case(threadpool *tp, int type, int64_t n_in, int64_t n_out, int tmax) {
    const quant_traits *t = quant_traits_get(type);
    size_t rb = quant_row_bytes(type, n_in);
    uint8_t *W = malloc(rb * (size_t)n_out);
    float *x = malloc((size_t)n_in * (size_t)tmax * sizeof(float));
    float *y8 = malloc((size_t)n_out * (size_t)tmax * sizeof(float)), *y = malloc((size_t)n_out * (size_t)tmax * sizeof(float));
    fill_weights(type, W, n_in, n_out);
    fill_columns(x, n_in, tmax);
    int rc = narrow_passes(tp, W, type, n_in, n_out, x, tmax, y8, MATVEC_DEFAULT, MATVEC_KERNEL_AUTO);
    REQUIRE(rc == 0, "%s %lldx%lld: passes of 8 failed", t->name, (long long)n_out, (long long)n_in);
    static const int widths[] = { 1, 7, 8, 9, 64, 512 };
    for (int i = 0; i < 6 && !rc; i++) {
        int T = widths[i];
        if (T > tmax) continue;
        memset(y, 0xFF, (size_t)n_out * (size_t)T * sizeof(float));
        int r = matvec_with(tp, W, type, n_in, n_out, x, T, y, MATVEC_DEFAULT, MATVEC_KERNEL_AUTO);
        int64_t d = count_diff(y, y8, (int64_t)T * n_out);
        CHECKF(r == 0 && d == 0, "%s %lldx%lld T=%d (%s): %lld of %lld outputs differ from passes of 8 (rc %d)", t->name,
               (long long)n_out, (long long)n_in, T, matvec_kernel_name(type), (long long)d, (long long)T * n_out, r);
    }
    /* the reference kernel and exact mode take wide passes too (tiles of the T <= 8 loops) */
    for (int v = 0; v < 2 && !rc && tmax >= 64; v++) {
        matvec_mode m = v ? MATVEC_EXACT : MATVEC_DEFAULT;
        matvec_kernel k = v ? MATVEC_KERNEL_AUTO : MATVEC_KERNEL_REF;
        int T = n_in * n_out > 20000 ? 9 : 64;
        int r8 = narrow_passes(tp, W, type, n_in, n_out, x, T, y8, m, k);
        int r = matvec_with(tp, W, type, n_in, n_out, x, T, y, m, k);
        int64_t d = count_diff(y, y8, (int64_t)T * n_out);
        CHECKF(r8 == 0 && r == 0 && d == 0, "%s %lldx%lld T=%d %s: %lld outputs differ from passes of 8", t->name,
               (long long)n_out, (long long)n_in, T, v ? "exact" : "ref", (long long)d);
    }
    free(W); free(x); free(y8); free(y);
}

static void widths_all(void) {
    threadpool *tp = threadpool_create(3);
    for (int i = 0; i < N_TYPES; i++) {
        int type = TYPES[i];
        const quant_traits *t = quant_traits_get(type);
        REQUIRE(t != NULL, "type %d missing", type);
        if (!t) continue;
        int ab = act_blck(t->act), B = t->blck > ab ? t->blck : ab;
        if (B == 1) B = 32;
        /* short rows (lanes 0..nb-1 only), rows that wrap the 32 lanes; rows 13 (a partial
         * strip of 5) and 37; the widest pass on the smaller shape */
        widths_case(tp, type, 3 * B, 13, 512);
        widths_case(tp, type, (B >= 256 ? 34 : 45) * B, 37, 64);
        if (B < 256) widths_case(tp, type, 7 * B, 21, 512);
        if (cpu_has_avx2_fma() && t->blck > 1)
            CHECKF(matmul_avx2(type, 0) || matmul_avx2_iq(type, 0), "%s has no wide AVX2 kernel", t->name);
    }
    threadpool_free(tp);
}

/* every format, both wide kernel families where the CPU has AVX-VNNI: the AVX2 kernels
 * (maddubs + madd) and their AVX-VNNI twins (vpdpbusd) against passes of 8 (whose T <= 8 kernels
 * are the same either way but for Q8_0 and IQ4_NL, which have T <= 8 twins of their own: the same
 * bits, held to the reference by test_quant and test_quant_iq) */
static void test_widths(void) {
    if (!cpu_has_avx2_fma()) SKIP("wide-avx2", "wide AVX2 kernels: CPU lacks AVX2+FMA+F16C (tiled reference passes still run)");
    CHECK_EQ_INT(matmul_vnni_override(0), 0);
    widths_all();
    if (cpu_has_avx_vnni()) {
        CHECK_EQ_INT(matmul_vnni_override(1), 1);
        const matmul_kernel *v = matmul_wide(TYPE_Q8_0), *a = matmul_avx2(TYPE_Q8_0, 0);
        CHECKF(v && a && v->rows != a->rows, "AVX-VNNI on: Q8_0's wide kernel is still the AVX2 one");
        v = matmul_wide(TYPE_IQ4_XS); a = matmul_avx2_iq(TYPE_IQ4_XS, 0);
        CHECKF(v && a && v->rows != a->rows, "AVX-VNNI on: IQ4_XS's wide kernel is still the AVX2 one");
        widths_all();
    } else
        SKIP("wide-vnni", "the AVX-VNNI twins: CPU lacks AVX-VNNI (the AVX2 kernels ran)");
    matmul_vnni_override(-1);
}

/* the pool never changes bits: NULL (one thread) == 3 threads, on a wide pass */
static void test_pool(void) {
    const int64_t n_in = 1536, n_out = 45;
    const int T = 70;
    int types[] = { TYPE_Q4_1, TYPE_Q4_K, TYPE_IQ3_XXS };
    threadpool *tp = threadpool_create(3);
    for (int i = 0; i < 3; i++) {
        size_t rb = quant_row_bytes(types[i], n_in);
        uint8_t *W = malloc(rb * n_out);
        float *x = malloc((size_t)(n_in * T) * sizeof(float)), *y1 = malloc((size_t)(n_out * T) * 4), *y3 = malloc((size_t)(n_out * T) * 4);
        fill_weights(types[i], W, n_in, n_out);
        fill_columns(x, n_in, T);
        int r1 = matvec(NULL, W, types[i], n_in, n_out, x, T, y1, MATVEC_DEFAULT);
        int r3 = matvec(tp, W, types[i], n_in, n_out, x, T, y3, MATVEC_DEFAULT);
        CHECKF(r1 == 0 && r3 == 0 && count_diff(y1, y3, n_out * T) == 0, "%s: NULL pool != 3 threads at T=%d",
               quant_traits_get(types[i])->name, T);
        free(W); free(x); free(y1); free(y3);
    }
    threadpool_free(tp);
}

/* argument checks of the wide entry */
static void test_args(void) {
    float W[64] = { 0 }, x[32 * 9] = { 0 }, y[2 * 9];
    CHECK_EQ_INT(matvec(NULL, W, TYPE_F32, 32, 2, x, 9, y, MATVEC_DEFAULT), 0);
    CHECK_EQ_INT(matvec(NULL, W, TYPE_F32, 32, 2, x, MATVEC_MAX_T + 1, y, MATVEC_DEFAULT), -1);
    CHECK_EQ_INT(matvec(NULL, W, TYPE_Q4_0, 48, 1, x, 9, y, MATVEC_DEFAULT), -1);   /* 48 % 32 */
}

/* The other canonical order (STRATA_CANON: the tree when the program runs the default chain): the
 * wide AVX2 kernels and the T <= 8 ones combine the lanes like the reference, at every width */
static void test_widths_serial(void) {
    threadpool *tp = threadpool_create(3);
    if (!cpu_has_avx2_fma()) SKIP("wide-avx2-serial", "wide AVX2 kernels: CPU lacks AVX2+FMA+F16C");
    const int was = canon_serial;
    canon_serial = !was;
    const int types[] = { TYPE_Q4_0, TYPE_Q8_0, TYPE_Q4_K, TYPE_Q6_K, TYPE_IQ3_XXS, TYPE_F32 };
    for (int i = 0; i < 6; i++) {
        const quant_traits *t = quant_traits_get(types[i]);
        int ab = act_blck(t->act), B = t->blck > ab ? t->blck : ab;
        if (B == 1) B = 32;
        widths_case(tp, types[i], 3 * B, 13, 64);
        widths_case(tp, types[i], (B >= 256 ? 34 : 45) * B, 37, 64);
    }
    canon_serial = was;
    threadpool_free(tp);
}

int main(void) {
    RUN(test_args);
    RUN(test_widths);
    RUN(test_widths_serial);
    RUN(test_pool);
    TEST_DONE();
}
