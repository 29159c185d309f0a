#include "util.h"
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

double now_seconds(void) {
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int cpu_has_avx2_fma(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* F16C through CPUID leaf 1 (ECX bit 29): clang 14 (the fuzzing build) does not know
     * __builtin_cpu_supports("f16c") */
    unsigned a, b, c, d;
    int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
    return 0;
#endif
}

static long alloc_fail_countdown;
void st_alloc_fail_after(long k) { alloc_fail_countdown = k; }
long st_alloc_fail_pending(void) { return alloc_fail_countdown; }
static int alloc_should_fail(void) {
    if (alloc_fail_countdown <= 0) return 0;
    return --alloc_fail_countdown == 0;
}
void *st_malloc(size_t n) { return alloc_should_fail() ? NULL : malloc(n ? n : 1); }
void *st_calloc(size_t n, size_t sz) { return alloc_should_fail() ? NULL : calloc(n ? n : 1, sz ? sz : 1); }
void *st_realloc(void *p, size_t n) { return alloc_should_fail() ? NULL : realloc(p, n ? n : 1); }
void  st_free(void *p) { free(p); }
char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1; char *d = st_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
