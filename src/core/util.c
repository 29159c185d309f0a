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

int cpu_has_avx_vnni(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return cpu_has_avx2_fma() && __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
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
/* live blocks (allocated through st_* and not yet st_free'd): lets a fault-injection test see
 * that a failed load gave back everything it took */
static long alloc_live;
static void *counted(void *p) {
    if (p) __atomic_add_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    return p;
}
long  st_alloc_live(void) { return __atomic_load_n(&alloc_live, __ATOMIC_RELAXED); }
void *st_malloc(size_t n) { return alloc_should_fail() ? NULL : counted(malloc(n ? n : 1)); }
void *st_calloc(size_t n, size_t sz) { return alloc_should_fail() ? NULL : counted(calloc(n ? n : 1, sz ? sz : 1)); }
void *st_realloc(void *p, size_t n) {
    if (alloc_should_fail()) return NULL;
    void *q = realloc(p, n ? n : 1);
    return p ? q : counted(q);
}
void  st_free(void *p) {
    if (p) __atomic_sub_fetch(&alloc_live, 1, __ATOMIC_RELAXED);
    free(p);
}
char *st_strdup(const char *s) {
    size_t n = strlen(s) + 1; char *d = st_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
