/* Wide passes on the GPU (T > 8 columns): the tensor-core matmul (src/cuda/mm.cu) and the
 * matvec over slices of 8 give every column the bits of the CPU reference (act_quantize_row +
 * quant_traits.dot_ref), for every format mm.cu covers (all but Q2_0) and for Q2_0, which falls back, at
 * widths 9, 17, 64, 100 and 512, with rows that straddle tiles, rows of one block per lane,
 * of fewer blocks than lanes and of more than 32 blocks (two per lane), columns of N(0,1) and
 * columns whose activation codes are all +-127 (extreme bsums); the 8-warp kernel also with
 * its lane positions split over 2, 8 and 32 CTAs per tile (the split of small grids).
 *
 *   test_gpu_mm            the parity test
 *   test_gpu_mm bench      the microbenchmark: 4096 rows of 14336 at 512 columns per format,
 *                          the tensor-core kernel (8 and 16 warps) against the matvec in slices of 8, over
 *                          four weight copies (132+ MB, more than the 60 MB L2); TFLOPS and a
 *                          checksum (FNV-1a of the output bits) per kernel */
#include "test.h"
#include <stdint.h>
#include <time.h>
#include "quant/quant.h"
#include "core/util.h"
#include "cuda/cuda_backend.h"

#define GPU_RAND_SEED 0x243F6A8885A308D3ull
#include "gpu_rand.h"
static uint64_t fnv(const void *p, size_t n) {
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 0x100000001b3ull; }
    return h;
}

/* xmode 0: N(0,1) columns (column 0 with a zero block); 1: columns of constant magnitude, the
 * activation codes all +-127 (the act_q8_K sums per 16 at their extremes +-2032, both signs in one
 * block: the min term's largest integers): column c is +1 everywhere (c % 3 == 0), -1 (c % 3 == 1),
 * or +-1000 alternating per 16 values (c % 3 == 2) */
static void check(int type, int64_t n_in, int64_t n_out, int T, int xmode) {
    const quant_traits *qt = quant_traits_get(type);
    size_t rb = quant_row_bytes(type, n_in), ab = act_row_bytes(qt->act, n_in);
    uint8_t *W = malloc(rb * n_out), *act = malloc(ab * T);
    float *src = malloc(sizeof(float) * n_in), *x = malloc(sizeof(float) * n_in * T);
    float *ref = malloc(sizeof(float) * n_out * T), *y = malloc(sizeof(float) * n_out * T);
    for (int64_t r = 0; r < n_out; r++) {
        for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
        qt->quant_row(src, W + r * rb, n_in);
    }
    for (int64_t i = 0; i < n_in * T; i++) x[i] = rnd_val();
    for (int64_t i = 0; i < 32 && i < n_in; i++) x[i] = 0.0f;   /* a zero block in column 0 */
    if (xmode == 1)
        for (int c = 0; c < T; c++)
            for (int64_t i = 0; i < n_in; i++)
                x[(size_t)c * n_in + i] = c % 3 == 0 ? 1.0f : c % 3 == 1 ? -1.0f : (i / 16) % 2 ? 1000.0f : -1000.0f;
    for (int c = 0; c < T; c++) act_quantize_row(qt->act, x + (size_t)c * n_in, act + (size_t)c * ab, n_in);
    for (int c = 0; c < T; c++)
        for (int64_t r = 0; r < n_out; r++)
            ref[(size_t)c * n_out + r] = qt->dot_ref(W + r * rb, act + (size_t)c * ab, n_in);
    void *dW = cuda_malloc(rb * n_out), *dx = cuda_malloc(sizeof(float) * n_in * T), *dy = cuda_malloc(sizeof(float) * n_out * T);
    CHECK(dW && dx && dy);
    if (dW && dx && dy) {
        cuda_memcpy_h2d(dW, W, rb * n_out);
        cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * T);
        /* tensor cores (16 warps, 8 warps), 8 warps with the lane positions split over 2, 8 and 32
         * CTAs per tile (STRATA_CUDA_MM_SPLIT; "auto" splits only grids smaller than the SMs),
         * the matvec slices */
        static const int cfg_mm[] = { 3, 2, 2, 2, 2, 0 }, cfg_split[] = { -1, -1, 2, 8, 32, -1 };
        static const char *const cfg_name[] = { "tensor cores, 16 warps", "tensor cores, 8 warps", "tensor cores, split 2",
                                                "tensor cores, split 8", "tensor cores, split 32", "matvec slices" };
        for (int ci = 0; ci < 6; ci++) {
            const int mm = cfg_mm[ci];
            cuda_mm_set(mm);
            cuda_mm_split_set(cfg_split[ci]);
            memset(y, 0xFF, sizeof(float) * n_out * T);
            cuda_memcpy_h2d(dy, y, sizeof(float) * n_out * T);
            int rc = cuda_matvec(dW, type, n_in, n_out, dx, T, dy, NULL) || cuda_synchronize();
            CHECKF(rc == 0, "%s: cuda_matvec T=%d failed: %s", qt->name, T, cuda_last_error());
            if (rc) break;
            cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * T);
            int bad = 0;
            for (size_t i = 0; i < (size_t)n_out * T; i++)
                if (memcmp(&y[i], &ref[i], 4) && bad++ < 3)
                    fprintf(stderr, "%s %s n_in=%lld T=%d col %zu row %zu: gpu %.9g ref %.9g\n", qt->name,
                            cfg_name[ci], (long long)n_in, T, i / n_out, i % n_out, y[i], ref[i]);
            CHECKF(bad == 0, "%s (%s) n_in=%lld n_out=%lld T=%d xmode %d: %d outputs differ from the CPU reference",
                   qt->name, cfg_name[ci], (long long)n_in, (long long)n_out, T, xmode, bad);
        }
        cuda_mm_set(2);
        cuda_mm_split_set(-1);
    }
    cuda_free(dW); cuda_free(dx); cuda_free(dy);
    free(W); free(act); free(src); free(x); free(ref); free(y);
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }

/* llama.cpp's MUL_MAT perf shape m = 4096, k = 14336, n = 512 (n_out 4096, n_in 14336), four
 * weight copies in rotation */
static void bench(int type) {
    const quant_traits *qt = quant_traits_get(type);
    const int64_t n_in = 14336, n_out = 4096;
    const int T = 512, copies = 4, reps = 8;
    size_t rb = quant_row_bytes(type, n_in);
    uint8_t *W = malloc(rb * n_out);
    float *src = malloc(sizeof(float) * n_in), *x = malloc(sizeof(float) * n_in * T), *y = malloc(sizeof(float) * n_out * T);
    for (int64_t r = 0; r < n_out; r++) {   /* 64 quantized rows, repeated: quantizing is the slow part here */
        if (r < 64) {
            for (int64_t i = 0; i < n_in; i++) src[i] = rnd_val();
            qt->quant_row(src, W + r * rb, n_in);
        } else memcpy(W + r * rb, W + (r % 64) * rb, rb);
    }
    for (int64_t i = 0; i < n_in * T; i++) x[i] = rnd_val();
    void *dW[4], *dx = cuda_malloc(sizeof(float) * n_in * T), *dy = cuda_malloc(sizeof(float) * n_out * T);
    for (int i = 0; i < copies; i++) { dW[i] = cuda_malloc(rb * n_out); cuda_memcpy_h2d(dW[i], W, rb * n_out); }
    cuda_memcpy_h2d(dx, x, sizeof(float) * n_in * T);
    double tf[4] = { 0, 0, 0, 0 };
    uint64_t sum[4] = { 0, 0, 0, 0 };
    for (int mm = 3; mm >= 0; mm -= mm == 2 ? 2 : 1) {
        cuda_mm_set(mm);
        cuda_matvec(dW[0], type, n_in, n_out, dx, T, dy, NULL);
        cuda_synchronize();
        double t0 = now();
        for (int r = 0; r < reps; r++) cuda_matvec(dW[r % copies], type, n_in, n_out, dx, T, dy, NULL);
        cuda_synchronize();
        double dt = (now() - t0) / reps;
        tf[mm] = 2.0 * n_in * n_out * T / dt / 1e12;
        cuda_memcpy_d2h(y, dy, sizeof(float) * n_out * T);
        sum[mm] = fnv(y, sizeof(float) * n_out * T);
    }
    cuda_mm_set(2);
    printf("mm %-8s m=4096 k=14336 n=512 TFLOPS: 8 warps (default) %6.2f | 16 warps %6.2f | matvec slices %6.2f  "
           "checksum %016llx%s\n", qt->name, tf[2], tf[3], tf[0], (unsigned long long)sum[2],
           sum[0] == sum[2] && sum[3] == sum[2] ? " (all three equal)" : "  CHECKSUMS DIFFER");
    for (int i = 0; i < copies; i++) cuda_free(dW[i]);
    cuda_free(dx); cuda_free(dy);
    free(W); free(src); free(x); free(y);
}

int main(int argc, char **argv) {
    if (cuda_device_count() <= 0) SKIP_ALL("no-device", "no CUDA device");
    cuda_mm_ext_set(1);   /* every format mm.cu has, STRATA_CUDA_MM_EXT's too */
    const int all[] = { TYPE_Q4_0, TYPE_Q4_1, TYPE_Q5_0, TYPE_Q5_1, TYPE_Q8_0, TYPE_Q4_K, TYPE_Q5_K, TYPE_Q6_K, TYPE_Q2_K,
                        TYPE_Q3_K, TYPE_IQ3_XXS, TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_S, TYPE_IQ1_S, TYPE_IQ1_M,
                        TYPE_IQ4_XS, TYPE_IQ4_NL, TYPE_MXFP4, TYPE_Q2_0 };
    const int n_all = (int)(sizeof all / sizeof all[0]);
    if (argc > 1 && !strcmp(argv[1], "bench")) {
        for (int i = 0; i < n_all; i++) bench(all[i]);
        return 0;
    }
    for (int i = 0; i < n_all; i++) {
        int type = all[i];
        const int64_t blck = quant_traits_get(type)->blck, big = blck == 256;
        /* rows: fewer blocks than lanes, one per lane, more than 32 (two per lane for some) */
        int64_t shapes[][2] = { { 2 * blck, 70 }, { (big ? 8 : 18) * blck, 130 }, { 33 * blck, 67 } };
        int widths[] = { 9, 17, 64, 100 };
        for (int s = 0; s < 3; s++)
            for (int w = 0; w < 4; w++) check(type, shapes[s][0], shapes[s][1], widths[w], 0);
        check(type, (big ? 8 : 18) * blck, 96, 512, 0);
        check(type, (big ? 8 : 18) * blck, 70, 17, 1);   /* the extreme activation sums */
        check(type, 33 * blck, 130, 64, 1);
    }
    TEST_DONE();
}
