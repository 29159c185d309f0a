/* Minimal test harness: CHECK counts, every binary ends with "N passed, N failed".
 * tests/run.sh runs every test binary and prints the total line CI reads. */
#ifndef STRATA_TEST_H
#define STRATA_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static int t_passed, t_failed;
static const char *t_current = "";

#define CHECK(cond) do { if (cond) t_passed++; else { t_failed++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s\n", __FILE__, __LINE__, t_current, #cond); } } while (0)
#define CHECKF(cond, ...) do { if (cond) t_passed++; else { t_failed++; \
    fprintf(stderr, "FAIL %s:%d [%s]: %s: ", __FILE__, __LINE__, t_current, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    CHECKF(_a == _b, "%lld != %lld", _a, _b); } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    CHECKF(_a && _b && !strcmp(_a, _b), "\"%s\" != \"%s\"", _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
#define RUN(fn) do { t_current = #fn; fn(); } while (0)
#define RUN_ARG(fn, arg) do { t_current = #fn; fn(arg); } while (0)
/* Skip a whole binary (missing optional input): prints why, counts nothing. */
#define SKIP_ALL(...) do { fprintf(stderr, "SKIP: " __VA_ARGS__); fputc('\n', stderr); \
    printf("0 passed, 0 failed\n"); exit(0); } while (0)
#define TEST_DONE() do { printf("%d passed, %d failed\n", t_passed, t_failed); \
    return t_failed ? 1 : 0; } while (0)
#endif
