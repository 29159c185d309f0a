/* Minimal test harness: CHECK counts, every binary ends with "N passed, N failed, N skipped".
 * A check that does not run says so with SKIP(key, reason): a line "SKIP key: reason" on stdout,
 * counted. tests/run.sh runs every test binary, lists every skip with its reason, fails the run
 * on a skip that tests/skips.allowed does not name ("binary/key"), and prints the total line
 * CI reads. Keys are one word: letters, digits, '_', '-', '.'. */
#ifndef STRATA_TEST_H
#define STRATA_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

static int t_passed, t_failed, t_skipped;
static const char *t_current = "";

#define CHECK(cond) do { if (cond) t_passed++; else { t_failed++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, t_current, #cond); } } while (0)
#define CHECKF(cond, ...) do { if (cond) t_passed++; else { t_failed++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, t_current, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* A precondition of a comparison (a file loads, a call returns 0): a failure when false and
 * no pass when true, so that the passes count what is compared (one check per compared output). */
#define REQUIRE(cond, ...) do { if (!(cond)) { t_failed++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, t_current, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    CHECKF(_a == _b, "%lld != %lld", _a, _b); } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    CHECKF(_a && _b && !strcmp(_a, _b), "\"%s\" != \"%s\"", _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
/* Each RUN prints its wall and process CPU time to stderr ("  time fn: W s, cpu C s"): which part
 * of a binary costs what, for choosing what quick mode shortens (docs/RELIABILITY.md, "CI time"). */
static inline double t_clock(clockid_t id) {
    struct timespec ts; clock_gettime(id, &ts); return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
#define T_TIMED(name, call) do { t_current = name; double _w0 = t_clock(CLOCK_MONOTONIC), \
    _c0 = t_clock(CLOCK_PROCESS_CPUTIME_ID); call; fprintf(stderr, "  time %s: %.2f s, cpu %.2f s\n", name, \
    t_clock(CLOCK_MONOTONIC) - _w0, t_clock(CLOCK_PROCESS_CPUTIME_ID) - _c0); } while (0)
#define RUN(fn) T_TIMED(#fn, fn())
#define RUN_ARG(fn, arg) T_TIMED(#fn, fn(arg))
/* A part that does not run: one counted skip with its reason (stdout, where tests/run.sh reads it). */
#define SKIP(key, ...) do { t_skipped++; printf("SKIP %s: ", key); printf(__VA_ARGS__); putchar('\n'); \
    fflush(stdout); } while (0)
/* The rest of the binary does not run: the skip, then the closing line of what ran so far. */
#define SKIP_ALL(key, ...) do { SKIP(key, __VA_ARGS__); \
    printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped); exit(t_failed ? 1 : 0); } while (0)
/* Quick mode (STRATA_TEST_QUICK set and not "0"; `make test-asan` sets it): the long model
 * comparisons run fewer prompts, positions or generated tokens, each with the same assertion
 * as in the full run. A sanitizer build needs every code path once; the optimized `make test`
 * runs everything. A test that shortens itself says what it left out on stderr. */
static inline int t_quick(void) {
    const char *q = getenv("STRATA_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}
#define TEST_DONE() do { printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped); \
    return t_failed ? 1 : 0; } while (0)
#endif
