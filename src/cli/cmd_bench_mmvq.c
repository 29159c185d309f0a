/* strata bench mmvq TYPE N_IN N_OUT COLS [--variant auto|avx2|ref|exact|passes8] [-t N]
 *                   [--iters N] [--no-bw]
 *
 * COLS > 8 is a wide pass (the prompt path: src/cpu/matmul_avx2.h); --variant passes8 runs the
 * same COLS in passes of at most 8 columns (the matvec kernels) for comparison, and the
 * output also gives GMAC/s (multiply-adds per second of weights x columns).
 *
 * Times y = W x for COLS columns of an N_OUT x N_IN matrix of TYPE and prints
 *   - the median microseconds per call over many calls after warm-up,
 *   - effective GB/s of weight bytes (the bytes a matvec must move / median time),
 *   - the machine's measured read bandwidth with the same threads (1 GiB buffer) and the
 *     ratio, i.e. the kernel against its roofline,
 *   - an FNV-1a 64 checksum of the output float bits, so two variants compare bit for bit,
 *   - the CPU time per call of all threads, and the GB/s it implies with every thread on a
 *     core of its own (the honest figure on a shared machine).
 * Weights: 64 distinct rows quantized from N(0,1) data with the format's reference quantizer,
 * tiled over N_OUT rows; the whole matrix is copied until the copies total at least 512 MiB
 * (16x the largest L3 of the machines we use) and calls rotate over the copies, so every call
 * reads its weights from DRAM. */
#include "bench_mmvq.h"
#include "cpu/matvec.h"
#include "cpu/membw.h"
#include "cpu/threadpool.h"
#include "core/env.h"
#include "core/util.h"
#include "quant/quant.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static const char *mmvq_usage =
    "usage: strata bench mmvq TYPE N_IN N_OUT COLS [--variant auto|avx2|ref|exact|passes8] [-t THREADS]\n"
    "                         [--iters N] [--no-bw]\n"
    "  TYPE is a GGUF type name (Q4_K, IQ2_XS, F16, ...); COLS is 1..65536 (more than 8: a wide\n"
    "  pass; passes8 runs them in passes of at most 8 columns).\n"
    "  Prints median us/call, weight GB/s, measured read GB/s, and an FNV-1a output checksum.\n";

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double cpu_seconds(void) {
    struct timespec ts; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read bandwidth by CPU time: the threads sum a 1 GiB buffer (64-bit words, four
 * accumulators, as src/cpu/membw.c); bytes / (CPU time of all threads / threads). On a shared
 * machine this is the roofline that matches the kernels' CPU-time GB/s. */
typedef struct { const uint64_t *buf; size_t n; uint64_t sink[64]; } bw_job;
static void bw_worker(void *ctx, int ith, int nth) {
    bw_job *j = ctx; long lo, hi;
    threadpool_split((long)j->n, ith, nth, 64, &lo, &hi);
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (long i = lo; i + 4 <= hi; i += 4) { a += j->buf[i]; b += j->buf[i + 1]; c += j->buf[i + 2]; d += j->buf[i + 3]; }
    j->sink[ith & 63] = a ^ b ^ c ^ d;
}
static double read_bw_cpu_gbs(threadpool *tp, size_t bytes, int reps) {
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = st_malloc(n * sizeof(uint64_t));
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i * 0x9e3779b97f4a7c15ull;
    bw_job j = { buf, n, { 0 } };
    threadpool_run(tp, bw_worker, &j);   /* warm-up */
    double c0 = cpu_seconds();
    for (int r = 0; r < reps; r++) threadpool_run(tp, bw_worker, &j);
    double cpu = (cpu_seconds() - c0) / reps;
    st_free(buf);
    return cpu > 0 ? (double)(n * sizeof(uint64_t)) / (cpu / threadpool_size(tp)) / 1e9 : 0;
}

/* one call, or (passes8) the columns in passes of at most 8 */
static int run_once(int passes8, threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out,
                    const float *x, int cols, float *y, matvec_mode mode, matvec_kernel kernel) {
    if (!passes8) return matvec_with(tp, W, type, n_in, n_out, x, cols, y, mode, kernel);
    for (int c0 = 0; c0 < cols; c0 += MATVEC_MAX_COLS) {
        int n = cols - c0 < MATVEC_MAX_COLS ? cols - c0 : MATVEC_MAX_COLS;
        if (matvec_with(tp, W, type, n_in, n_out, x + (size_t)c0 * (size_t)n_in, n, y + (size_t)c0 * (size_t)n_out, mode, kernel))
            return -1;
    }
    return 0;
}

static int parse_i64(const char *s, int64_t *v) {
    char *end; long long x = strtoll(s, &end, 10);
    if (!*s || *end || x <= 0) return -1;
    *v = x; return 0;
}

int bench_mmvq(int argc, char **argv) {
    const char *pos[4]; int npos = 0;
    const char *variant = "auto";
    int threads = (int)env_int(ENV_THREADS), iters_min = 10, measure_bw = 1, passes8 = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { fputs(mmvq_usage, stdout); return 0; }
        else if (!strcmp(argv[i], "--variant") && i + 1 < argc) variant = argv[++i];
        else if ((!strcmp(argv[i], "-t") || !strcmp(argv[i], "--threads")) && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters_min = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-bw")) measure_bw = 0;
        else if (argv[i][0] == '-') { fprintf(stderr, "strata bench mmvq: unknown option '%s' (strata bench mmvq --help)\n", argv[i]); return 2; }
        else if (npos < 4) pos[npos++] = argv[i];
        else { fprintf(stderr, "strata bench mmvq: unexpected argument '%s' (strata bench mmvq --help)\n", argv[i]); return 2; }
    }
    if (npos != 4) { fprintf(stderr, "strata bench mmvq: give TYPE N_IN N_OUT COLS (strata bench mmvq --help)\n"); return 2; }
    int type = quant_type_from_name(pos[0]);
    const quant_traits *qt = type >= 0 ? quant_traits_get(type) : NULL;
    if (!qt) { fprintf(stderr, "strata bench mmvq: '%s' is not a weight format of this build (try Q4_K, Q8_0, F16)\n", pos[0]); return 1; }
    int64_t n_in, n_out, cols;
    if (parse_i64(pos[1], &n_in) || parse_i64(pos[2], &n_out) || parse_i64(pos[3], &cols) || cols > MATVEC_MAX_T) {
        fprintf(stderr, "strata bench mmvq: N_IN, N_OUT must be positive integers and COLS 1..%d\n", MATVEC_MAX_T);
        return 1;
    }
    size_t row_bytes = quant_row_bytes(type, n_in);
    if (!row_bytes || act_row_bytes(qt->act, n_in) == 0) {
        fprintf(stderr, "strata bench mmvq: N_IN=%lld is not a multiple of %s's block of %d weights\n",
                (long long)n_in, qt->name, act_blck(qt->act) > qt->blck ? act_blck(qt->act) : qt->blck);
        return 1;
    }
    matvec_kernel kernel = MATVEC_KERNEL_AUTO; matvec_mode mode = MATVEC_DEFAULT;
    if (!strcasecmp(variant, "passes8")) passes8 = 1;
    else if (!strcasecmp(variant, "ref")) kernel = MATVEC_KERNEL_REF;
    else if (!strcasecmp(variant, "avx2")) kernel = MATVEC_KERNEL_AVX2;
    else if (!strcasecmp(variant, "exact")) mode = MATVEC_EXACT;
    else if (strcasecmp(variant, "auto")) { fprintf(stderr, "strata bench mmvq: unknown variant '%s' (auto, avx2, ref, exact)\n", variant); return 1; }
    if (threads <= 0) threads = cpu_count();
    if (iters_min < 1) iters_min = 1;

    threadpool *tp = threadpool_create(threads);
    if (!tp) { fprintf(stderr, "strata bench mmvq: cannot start %d threads\n", threads); return 1; }
    int rc = 1;
    size_t mat_bytes = row_bytes * (size_t)n_out;
    size_t n_copies = mat_bytes >= ((size_t)512 << 20) ? 1 : (((size_t)512 << 20) + mat_bytes - 1) / mat_bytes;
    uint8_t **copies = calloc(n_copies, sizeof *copies);
    float *src = malloc((size_t)n_in * sizeof(float));
    float *x = malloc((size_t)(n_in * cols) * sizeof(float));
    float *y = malloc((size_t)(n_out * cols) * sizeof(float));
    uint8_t *pool = malloc(row_bytes * 64);
    if (!copies || !src || !x || !y || !pool) { fprintf(stderr, "strata bench mmvq: out of memory\n"); goto done; }

    /* 64 distinct quantized rows from N(0,1) (xorshift + Box-Muller, fixed seed) */
    uint64_t s = 0x243F6A8885A308D3ull;
    #define NEXT_U() (s ^= s >> 12, s ^= s << 25, s ^= s >> 27, (double)((s * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0)
    for (int r = 0; r < 64; r++) {
        for (int64_t k = 0; k < n_in; k++) {
            double u = NEXT_U() + 1e-12, v = NEXT_U();
            src[k] = (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
        }
        qt->quant_row(src, pool + (size_t)r * row_bytes, n_in);
    }
    for (int64_t k = 0; k < n_in * cols; k++) {
        double u = NEXT_U() + 1e-12, v = NEXT_U();
        x[k] = (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
    }
    #undef NEXT_U
    for (size_t c = 0; c < n_copies; c++) {
        copies[c] = malloc(mat_bytes);
        if (!copies[c]) { fprintf(stderr, "strata bench mmvq: out of memory for %zu weight copies of %zu bytes\n", n_copies, mat_bytes); goto done; }
        for (int64_t r = 0; r < n_out; r++) memcpy(copies[c] + (size_t)r * row_bytes, pool + (size_t)(r % 64) * row_bytes, row_bytes);
    }

    /* validation run and checksum (copies are identical, so every call gives these bits) */
    if (run_once(passes8, tp, copies[0], type, n_in, n_out, x, (int)cols, y, mode, kernel) != 0) {
        fprintf(stderr, "strata bench mmvq: variant '%s' is not available for %s on this CPU\n", variant, qt->name);
        goto done;
    }
    uint64_t checksum = fnv1a64(y, (size_t)(n_out * cols) * sizeof(float));
    for (int w = 0; w < 3; w++) run_once(passes8, tp, copies[(size_t)w % n_copies], type, n_in, n_out, x, (int)cols, y, mode, kernel);

    /* timed calls: at least iters_min and at least 1 s, at most 10000 */
    enum { MAX_ITERS = 10000 };
    double *t = malloc(MAX_ITERS * sizeof(double));
    if (!t) goto done;
    int n_it = 0; double t_start = now_seconds();
    double c0 = cpu_seconds();
    while (n_it < MAX_ITERS && (n_it < iters_min || now_seconds() - t_start < 1.0)) {
        double t0 = now_seconds();
        run_once(passes8, tp, copies[(size_t)n_it % n_copies], type, n_in, n_out, x, (int)cols, y, mode, kernel);
        t[n_it++] = now_seconds() - t0;
    }

    /* CPU time of all threads per call (the pool sleeps on a condition variable, so it is the
     * kernels' time, memory stalls included): on a shared machine this shows what the threads
     * would do with their cores to themselves, where wall-clock shows what they got */
    double cpu = (cpu_seconds() - c0) / n_it;
    qsort(t, (size_t)n_it, sizeof(double), cmp_dbl);
    double med = t[n_it / 2];
    free(t);
    double gbs = (double)mat_bytes / med / 1e9;
    const char *kname = passes8 ? "passes8" : mode == MATVEC_EXACT ? "exact" : kernel == MATVEC_KERNEL_REF ? "ref"
                      : kernel == MATVEC_KERNEL_AVX2 ? "avx2" : matvec_kernel_name(type);
    printf("mmvq %-7s %lldx%lld cols=%lld variant=%s threads=%d: %.1f us/call (median of %d), "
           "weights %.2f MB, %.2f GB/s, cpu %.1f us/call (%.2f GB/s at %d full cores), %.2f GMAC/s (%.2f by cpu time)",
           qt->name, (long long)n_out, (long long)n_in, (long long)cols, kname, threads, med * 1e6, n_it,
           (double)mat_bytes / 1e6, gbs, cpu * 1e6, (double)mat_bytes / (cpu / threads) / 1e9, threads,
           (double)n_in * (double)n_out * (double)cols / med / 1e9,
           (double)n_in * (double)n_out * (double)cols / (cpu / threads) / 1e9);
    if (measure_bw) {
        double bw = membw_read_gbs(tp, (size_t)1 << 30, 3);
        double bwc = read_bw_cpu_gbs(tp, (size_t)1 << 30, 3), kc = (double)mat_bytes / (cpu / threads) / 1e9;
        printf(", read bw %.2f GB/s (%.0f%%), read bw by CPU time %.2f GB/s (%.0f%%)",
               bw, bw > 0 ? 100.0 * gbs / bw : 0.0, bwc, bwc > 0 ? 100.0 * kc / bwc : 0.0);
    }
    printf(", checksum %016llx\n", (unsigned long long)checksum);
    rc = 0;
done:
    if (copies) for (size_t c = 0; c < n_copies; c++) free(copies[c]);
    free(copies); free(src); free(x); free(y); free(pool);
    threadpool_free(tp);
    return rc;
}
