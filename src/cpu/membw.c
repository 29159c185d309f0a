#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "membw.h"
#include "core/util.h"
#if defined(__AVX2__)
#include <immintrin.h>
#endif

typedef struct { const uint64_t *buf; size_t n; uint64_t sink[64]; } membw_job;

/* Sum 64-bit words with 4 independent accumulators: the loads are what is timed. */
static void membw_worker(void *ctx, int ith, int nth) {
    membw_job *j = ctx;
    long lo, hi;
    threadpool_split((long)j->n, ith, nth, 64, &lo, &hi);
    uint64_t a = 0, b = 0, c = 0, d = 0;
    for (long i = lo; i + 4 <= hi; i += 4) { a += j->buf[i]; b += j->buf[i + 1]; c += j->buf[i + 2]; d += j->buf[i + 3]; }
    j->sink[ith & 63] = a ^ b ^ c ^ d;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double membw_read_gbs(threadpool *tp, size_t bytes, int reps) {
    if (reps < 1) reps = 1;
    if (reps > 64) reps = 64;
    size_t n = bytes / sizeof(uint64_t);
    uint64_t *buf = st_malloc(n * sizeof(uint64_t));
    if (!buf) return 0;
    for (size_t i = 0; i < n; i++) buf[i] = i * 0x9e3779b97f4a7c15ull;
    membw_job j = { buf, n, { 0 } };
    double t[64];
    threadpool_run(tp, membw_worker, &j);   /* warm-up */
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        threadpool_run(tp, membw_worker, &j);
        t[r] = now_seconds() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    st_free(buf);
    return (double)(n * sizeof(uint64_t)) / t[reps / 2] / 1e9;
}
