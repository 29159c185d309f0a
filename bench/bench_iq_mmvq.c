/* Microbenchmark of the IQ matvec kernels (stand-in until `strata bench mmvq` covers them):
 * for each IQ format, W = N_OUT x N_IN random valid blocks, T columns, THREADS workers,
 * median microseconds per matvec() call (activation quantization included) after warm-up,
 * effective GB/s of weight bytes, the machine's measured read bandwidth (same thread count),
 * and an FNV-1a checksum of the output float bits.
 * Build and run (from the repository root, after `make BUILD=build-iq`):
 *   gcc -std=c11 -O2 -ffp-contract=off -pthread -D_GNU_SOURCE -Iinclude -Isrc -mavx2 \
 *       bench/bench_iq_mmvq.c build-iq/libstrata.a -lm -lpthread -o build-iq/bench_iq_mmvq
 *   build-iq/bench_iq_mmvq [THREADS] [ITERS] [TYPE_NAME]                                    */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "quant/quant.h"
#include "cpu/matvec.h"
#include "cpu/threadpool.h"
#include "core/util.h"
#include "cpu/kernels.h"
#include "quant/ref_iq.h"

/* The quant table and matvec.c name the IQ family through weak references, which do not
 * pull archive members into a static link; these strong ones do. */
void *const bench_iq_link[] = { (void *)matvec_rows_avx2_iq, (void *)iq2_xxs_dot_ref };

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }

typedef struct { const uint8_t *buf; size_t n; uint64_t out[64]; } bw_job;
static void bw_worker(void *ctx, int ith, int nth) {
    bw_job *j = ctx;
    long lo, hi;
    threadpool_split((long)(j->n / 32), ith, nth, 64, &lo, &hi);
    __m256i a = _mm256_setzero_si256(), b = a;
    for (long i = lo; i < hi; i += 2) {
        a = _mm256_xor_si256(a, _mm256_load_si256((const __m256i *)(j->buf + 32 * i)));
        b = _mm256_xor_si256(b, _mm256_load_si256((const __m256i *)(j->buf + 32 * i + 32)));
    }
    a = _mm256_xor_si256(a, b);
    j->out[ith] = (uint64_t)_mm256_extract_epi64(a, 0);
}

/* CPU time of the calling thread: with THREADS = 1 the caller does all the work, so this
 * is unaffected by time the scheduler gives to other processes on a shared machine. */
static double thread_cpu_seconds(void) {
    struct timespec ts; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }

static double read_bandwidth(threadpool *tp) {
    size_t n = (size_t)512 << 20;
    uint8_t *buf = aligned_alloc(64, n);
    for (size_t i = 0; i < n; i += 8) { uint64_t v = rnd(); memcpy(buf + i, &v, 8); }
    bw_job j = { buf, n, {0} };
    double t[7];
    for (int k = 0; k < 7; k++) { double t0 = now_seconds(); threadpool_run(tp, bw_worker, &j); t[k] = now_seconds() - t0; }
    qsort(t, 7, sizeof t[0], cmpd);
    free(buf);
    return (double)n / t[3] / 1e9;
}

int main(int argc, char **argv) {
    int nth = argc > 1 ? atoi(argv[1]) : 2, iters = argc > 2 ? atoi(argv[2]) : 30;
    const char *only = argc > 3 ? argv[3] : NULL;
    threadpool *tp = threadpool_create(nth);
    double bw = read_bandwidth(tp);
    printf("threads %d, measured read bandwidth %.2f GB/s\n", nth, bw);
    printf("%-8s %6s %6s %4s %10s %8s %7s %8s %11s %s\n", "type", "n_in", "n_out", "T", "median_us", "GB/s", "%bw", "min_us", "cpu_med_us", "fnv1a");
    static const int types[] = {TYPE_IQ1_S, TYPE_IQ1_M, TYPE_IQ2_XXS, TYPE_IQ2_XS, TYPE_IQ2_S, TYPE_IQ3_XXS, TYPE_IQ3_S, TYPE_IQ4_NL, TYPE_IQ4_XS};
    static const int64_t shapes[][2] = {{4096, 4096}, {4096, 14336}};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (only && strcmp(only, quant_type_name(types[ti]))) continue;
        const quant_traits *qt = quant_traits_get(types[ti]);
        for (size_t si = 0; si < 2; si++) {
            int64_t n_in = shapes[si][0], n_out = shapes[si][1];
            size_t rb = quant_row_bytes(types[ti], n_in), bytes = rb * (size_t)n_out;
            uint8_t *W = aligned_alloc(64, (bytes + 63) / 64 * 64);
            for (size_t b = 0; b < bytes / qt->bsize; b++) {
                uint8_t *blk = W + b * qt->bsize;
                for (int k = 0; k < qt->bsize; k++) blk[k] = (uint8_t)rnd();
                uint16_t d = (uint16_t)(0x1000 | (rnd() & 0x83ff));   /* small finite fp16 */
                if (types[ti] == TYPE_IQ1_M) {   /* d lives in the top nibbles of 4 words */
                    for (int w = 0; w < 4; w++) {
                        uint16_t s; memcpy(&s, blk + 32 + 16 + 2 * w, 2);
                        s = (uint16_t)((s & 0x0fff) | (((d >> (4 * w)) & 15) << 12));
                        memcpy(blk + 32 + 16 + 2 * w, &s, 2);
                    }
                } else memcpy(blk, &d, 2);
            }
            float *x = malloc(sizeof(float) * (size_t)n_in * 8), *y = malloc(sizeof(float) * (size_t)n_out * 8);
            for (int64_t i = 0; i < n_in * 8; i++) x[i] = (float)((int64_t)(rnd() % 2001) - 1000) / 1000.0f;
            for (int T = 1; T <= 8; T += 7) {
                double *t = malloc(sizeof(double) * (size_t)iters), *tc = malloc(sizeof(double) * (size_t)iters);
                for (int w = 0; w < 3; w++) matvec_with(tp, W, types[ti], n_in, n_out, x, T, y, MATVEC_DEFAULT, MATVEC_KERNEL_AVX2);
                for (int k = 0; k < iters; k++) {
                    double t0 = now_seconds(), c0 = thread_cpu_seconds();
                    if (matvec_with(tp, W, types[ti], n_in, n_out, x, T, y, MATVEC_DEFAULT, MATVEC_KERNEL_AVX2)) { fprintf(stderr, "matvec failed\n"); return 1; }
                    t[k] = now_seconds() - t0;
                    tc[k] = thread_cpu_seconds() - c0;
                }
                qsort(t, (size_t)iters, sizeof t[0], cmpd);
                qsort(tc, (size_t)iters, sizeof tc[0], cmpd);
                double med = t[iters / 2], gbs = (double)bytes / med / 1e9;
                printf("%-8s %6lld %6lld %4d %10.1f %8.2f %6.0f%% %8.1f %11.1f %016llx\n", quant_type_name(types[ti]), (long long)n_in,
                       (long long)n_out, T, med * 1e6, gbs, 100 * gbs / bw, t[0] * 1e6, tc[iters / 2] * 1e6,
                       (unsigned long long)fnv1a64(y, sizeof(float) * (size_t)n_out * (size_t)T));
                free(t); free(tc);
            }
            free(W); free(x); free(y);
        }
    }
    threadpool_free(tp);
    return 0;
}
