/* CPU matvec dispatch and threading (src/cpu/matvec.h).
 *
 *   y[c * n_out + r] = W[r] . x_c      r < n_out, c < T
 *
 * T <= MATVEC_MAX_COLS: the matvec kernels (one weight row decoded once for the T columns).
 * T > MATVEC_MAX_COLS (prompt passes): the T columns are quantized once; a format with a wide
 * kernel (src/cpu/matmul_avx2.h) decodes a strip of 8 rows once and runs every column against
 * it; other formats (float weights, the reference kernel) run the matvec kernel over row tiles
 * and column groups of 8, so a tile's rows stay in cache for all the groups. Threads split the
 * rows either way. Every path computes the canonical bits (docs/KERNELS.md), so T never
 * changes a column's result.
 *
 * Default mode: the T columns are quantized once per call to the format's activation
 * blocks (src/quant/act.c), then the rows are split over the thread pool and each worker
 * runs the format's fast kernel (src/cpu/kernels.h) or the reference loop over dot_ref.
 * Both give the same bits (canonical order, docs/KERNELS.md), so the split, the thread
 * count and T never change a result.
 * Exact mode: each worker dequantizes a row once to f32 and dots it with every f32
 * column in the canonical per-element order.
 * Kernel choice: matvec_with's argument; AUTO reads STRATA_KERNEL (auto | avx2 | ref),
 * once, and takes AVX2 only when the CPU has AVX2+FMA+F16C and the format has a kernel. */
#include "matvec.h"
#include "kernels.h"
#include "../core/env.h"
#include "../core/util.h"
#include "../quant/ref.h"
#include <pthread.h>
#include <string.h>

/* ---- kernel choice (resolved once per process) -------------------------------------- */

static int cpu_avx2_cached = -1;      /* -1 unknown, else cpu_has_avx2_fma() */
static int env_kernel_cached = -1;    /* MATVEC_KERNEL_* chosen by STRATA_KERNEL */
static int env_cpu_mm = 1;            /* STRATA_CPU_MM: wide kernels for T > MATVEC_MAX_COLS */
static int cpu_vnni_cached;           /* cpu_has_avx_vnni() && STRATA_CPU_VNNI */
static int vnni_override = -1;        /* matmul_vnni_override: -1 the default */
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

static void kernel_choice_init(void) {
    cpu_avx2_cached = cpu_has_avx2_fma();
    env_cpu_mm = env_bool(ENV_CPU_MM);
    cpu_vnni_cached = cpu_has_avx_vnni() && env_bool(ENV_CPU_VNNI);
    const char *k = env_str(ENV_KERNEL);
    if (!strcmp(k, "ref")) env_kernel_cached = MATVEC_KERNEL_REF;
    else if (!strcmp(k, "avx2")) env_kernel_cached = MATVEC_KERNEL_AVX2;
    else env_kernel_cached = MATVEC_KERNEL_AUTO;   /* "auto" and anything unknown */
}

static int vnni_on(void);

/* The fast kernel of a type on this CPU, or NULL. */
static matvec_rows_fn fast_kernel(int type) {
    if (!cpu_avx2_cached) return NULL;
    matvec_rows_fn fn = vnni_on() ? matvec_rows_vnni(type) : NULL;
    if (!fn) fn = matvec_rows_avx2(type);
    if (!fn) fn = matvec_rows_avx2_iq(type);
    return fn;
}

matvec_rows_fn matvec_rows_cpu(int type) {
    pthread_once(&kernel_once, kernel_choice_init);
    return fast_kernel(type);
}

/* Resolve a requested kernel: *fn = kernel or NULL for the reference.
 * Returns -1 when AVX2 was asked for explicitly and this CPU/type has none. */
static int resolve_kernel(int type, matvec_kernel want, matvec_rows_fn *fn) {
    pthread_once(&kernel_once, kernel_choice_init);
    if (want == MATVEC_KERNEL_AUTO) want = (matvec_kernel)env_kernel_cached;
    *fn = NULL;
    if (want == MATVEC_KERNEL_REF) return 0;
    *fn = fast_kernel(type);
    if (want == MATVEC_KERNEL_AVX2 && !*fn && env_kernel_cached != MATVEC_KERNEL_AVX2) return -1;
    return 0;   /* AUTO (or avx2 from the environment): fall back to the reference */
}

const char *matvec_kernel_name(int type) {
    matvec_rows_fn fn;
    if (!quant_traits_get(type)) return "none";
    resolve_kernel(type, MATVEC_KERNEL_AUTO, &fn);
    return fn ? "avx2" : "ref";
}

/* ---- per-call scratch: the quantized activations ------------------------------------- */

/* Thread-local growable buffer: one per calling thread, so concurrent callers (sessions on
 * different threads) never share it, and a decode loop allocates nothing after warm-up.
 * A thread-specific key frees it when the thread exits (the server's decode thread). */
static _Thread_local void *act_scratch;
static _Thread_local size_t act_scratch_cap;
static pthread_key_t act_scratch_key;
static pthread_once_t act_scratch_once = PTHREAD_ONCE_INIT;

static void act_scratch_free(void *p) { st_free(p); }
static void act_scratch_key_init(void) { pthread_key_create(&act_scratch_key, act_scratch_free); }

static void *act_scratch_get(size_t n) {
    if (n <= act_scratch_cap) return act_scratch;
    void *p = st_realloc(act_scratch, n);
    if (!p) return NULL;
    act_scratch = p; act_scratch_cap = n;
    pthread_once(&act_scratch_once, act_scratch_key_init);
    pthread_setspecific(act_scratch_key, p);
    return p;
}

/* ---- the parallel job ---------------------------------------------------------------- */

typedef struct {
    const quant_traits *qt;
    const void *W; size_t row_bytes;
    int64_t n_in, n_out;
    int T;
    float *y;
    /* default mode */
    const void *act; size_t act_stride;
    matvec_rows_fn fn;              /* NULL: reference loop */
    /* exact mode */
    const float *x;                 /* T f32 columns of n_in */
    float *rowbuf;                  /* n_in floats per worker */
    int exact_avx2;                 /* dot with f32_dot_canon_avx2 */
} matvec_job;

/* Rows per split unit: keeps neighbouring rows (and their cache lines) on one worker. */
#define MATVEC_ROW_ALIGN 4
/* T > MATVEC_MAX_COLS without a wide kernel: rows per tile (the tile's weights are reread
 * from L1/L2 by each group of 8 columns) */
#define MATVEC_TILE_ROWS 16

static void matvec_worker(void *ctx, int ith, int nth) {
    const matvec_job *j = ctx;
    long lo, hi;
    threadpool_split((long)j->n_out, ith, nth, MATVEC_ROW_ALIGN, &lo, &hi);
    if (lo >= hi) return;
    if (j->rowbuf) {            /* exact mode */
        float *row = j->rowbuf + (size_t)ith * (size_t)j->n_in;
        for (long r = lo; r < hi; r++) {
            j->qt->dequant_row((const char *)j->W + (size_t)r * j->row_bytes, row, j->n_in);
            for (int c = 0; c < j->T; c++) {
                const float *xc = j->x + (size_t)c * (size_t)j->n_in;
                j->y[(size_t)c * (size_t)j->n_out + (size_t)r] = j->exact_avx2
                    ? f32_dot_canon_avx2(row, xc, j->n_in) : f32_dot_canon_ref(row, xc, j->n_in);
            }
        }
        return;
    }
    if (j->fn && j->T <= MATVEC_MAX_COLS) {
        j->fn(j->W, j->row_bytes, j->n_in, j->act, j->act_stride, j->T, j->y, j->n_out, lo, hi);
        return;
    }
    if (j->fn) {   /* wide pass without a wide kernel: row tiles x column groups of 8 */
        for (long r0 = lo; r0 < hi; r0 += MATVEC_TILE_ROWS) {
            long r1 = r0 + MATVEC_TILE_ROWS < hi ? r0 + MATVEC_TILE_ROWS : hi;
            for (int c0 = 0; c0 < j->T; c0 += MATVEC_MAX_COLS) {
                int n = j->T - c0 < MATVEC_MAX_COLS ? j->T - c0 : MATVEC_MAX_COLS;
                j->fn(j->W, j->row_bytes, j->n_in, (const char *)j->act + (size_t)c0 * j->act_stride, j->act_stride, n,
                      j->y + (size_t)c0 * (size_t)j->n_out, j->n_out, r0, r1);
            }
        }
        return;
    }
    for (long r = lo; r < hi; r++) {
        const void *wr = (const char *)j->W + (size_t)r * j->row_bytes;
        for (int c = 0; c < j->T; c++)
            j->y[(size_t)c * (size_t)j->n_out + (size_t)r] =
                j->qt->dot_ref(wr, (const char *)j->act + (size_t)c * j->act_stride, j->n_in);
    }
}

/* ---- the wide kernels' job (T > MATVEC_MAX_COLS) -------------------------------------- */

typedef struct {
    const matmul_kernel *mk;
    const void *W; size_t row_bytes;
    int64_t n_in, n_out;
    int T;
    float *y;
    const void *act; size_t act_stride;
    const int32_t *asum;
    char *scratch; size_t scratch_bytes;   /* per worker */
} matmul_job;

static void matmul_worker(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    long lo, hi;
    threadpool_split((long)j->n_out, ith, nth, MATMUL_ROWS, &lo, &hi);
    if (lo >= hi) return;
    j->mk->rows(j->W, j->row_bytes, j->n_in, j->act, j->act_stride, j->asum, j->T, j->y, j->n_out, lo, hi,
                j->scratch + (size_t)ith * j->scratch_bytes);
}

/* Per calling thread: the wide kernels' decoded strips (one per worker) and the activation
 * code sums; grown as needed, freed with the thread (as act_scratch). */
static _Thread_local void *mm_scratch;
static _Thread_local size_t mm_scratch_cap;
static pthread_key_t mm_scratch_key;
static pthread_once_t mm_scratch_once = PTHREAD_ONCE_INIT;
static void mm_scratch_key_init(void) { pthread_key_create(&mm_scratch_key, act_scratch_free); }

static void *mm_scratch_get(size_t n) {
    if (n <= mm_scratch_cap) return mm_scratch;
    void *p = st_realloc(mm_scratch, n);
    if (!p) return NULL;
    mm_scratch = p; mm_scratch_cap = n;
    pthread_once(&mm_scratch_once, mm_scratch_key_init);
    pthread_setspecific(mm_scratch_key, p);
    return p;
}

/* the AVX-VNNI twins in use (STRATA_CPU_VNNI and the CPU, or the tests' override) */
static int vnni_on(void) {
    return vnni_override < 0 ? cpu_vnni_cached : vnni_override && cpu_has_avx_vnni();
}

const matmul_kernel *matmul_wide(int type) {
    pthread_once(&kernel_once, kernel_choice_init);
    if (!cpu_avx2_cached) return NULL;
    const int v = vnni_on();
    const matmul_kernel *mk = matmul_avx2(type, v);
    return mk ? mk : matmul_avx2_iq(type, v);
}

int matmul_vnni_override(int v) {
    pthread_once(&kernel_once, kernel_choice_init);
    vnni_override = v < 0 ? -1 : v != 0;
    return vnni_on();
}

/* The wide kernel of a type on this CPU (given its matvec kernel fn), or NULL. */
static const matmul_kernel *wide_kernel(int type, matvec_rows_fn fn) {
    if (!fn || !cpu_avx2_cached || !env_cpu_mm) return NULL;
    return matmul_wide(type);
}

void matmul_act_sums(const matmul_kernel *mk, const void *act, size_t stride, int64_t n_in, int T, int32_t *sums) {
    const int64_t nba = n_in / mk->asum_blck;
    for (int c = 0; c < T; c++)
        for (int64_t b = 0; b < nba; b++) {
            const int8_t *q = (const int8_t *)act + (size_t)c * stride + (size_t)b * (size_t)mk->asum_bytes + mk->asum_qs;
            int32_t n = 0;
            for (int i = 0; i < mk->asum_blck; i++) n += q[i];
            sums[(size_t)c * (size_t)nba + (size_t)b] = n;
        }
}

static int matmul_run(threadpool *tp, const matmul_kernel *mk, const void *W, size_t row_bytes, int64_t n_in,
                      int64_t n_out, const void *act, size_t stride, int T, float *y) {
    int nth = threadpool_size(tp);
    size_t sb = (mk->scratch_bytes(n_in) + 63) / 64 * 64;
    int64_t nba = mk->asum_blck ? n_in / mk->asum_blck : 0;
    size_t asum_bytes = (size_t)nba * (size_t)T * sizeof(int32_t);
    char *mem = mm_scratch_get((size_t)nth * sb + asum_bytes);
    if (!mem) return -1;
    int32_t *asum = NULL;
    if (nba) {
        asum = (int32_t *)(mem + (size_t)nth * sb);
        matmul_act_sums(mk, act, stride, n_in, T, asum);
    }
    matmul_job j = { .mk = mk, .W = W, .row_bytes = row_bytes, .n_in = n_in, .n_out = n_out, .T = T, .y = y,
                     .act = act, .act_stride = stride, .asum = asum, .scratch = mem, .scratch_bytes = sb };
    threadpool_run(tp, matmul_worker, &j);
    return 0;
}

int matvec_with(threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out,
                const float *x, int T, float *y, matvec_mode mode, matvec_kernel kernel) {
    const quant_traits *qt = quant_traits_get(type);
    if (!qt || T < 1 || T > MATVEC_MAX_T || n_in <= 0 || n_out < 0 || !W || !x || !y) return -1;
    size_t row_bytes = quant_row_bytes(type, n_in);
    if (!row_bytes) return -1;
    if (n_out == 0) return 0;

    matvec_rows_fn fn;
    if (resolve_kernel(type, kernel, &fn) < 0) return -1;

    matvec_job j = { .qt = qt, .W = W, .row_bytes = row_bytes, .n_in = n_in, .n_out = n_out,
                     .T = T, .y = y, .fn = fn, .x = x };
    if (mode == MATVEC_EXACT) {
        int nth = threadpool_size(tp);
        j.rowbuf = st_malloc((size_t)nth * (size_t)n_in * sizeof(float));
        if (!j.rowbuf) return -1;
        j.exact_avx2 = fn != NULL;   /* same bits either way; AVX2 just dots faster */
        threadpool_run(tp, matvec_worker, &j);
        st_free(j.rowbuf);
        return 0;
    }

    size_t stride = act_row_bytes(qt->act, n_in);
    if (!stride) return -1;   /* n_in not a multiple of the activation block */
    void *act = act_scratch_get(stride * (size_t)T);
    if (!act) return -1;
    /* the AVX2 twin gives the same bits; the reference kernel keeps the reference quantizer */
    for (int c = 0; c < T; c++) {
        const float *xc = x + (size_t)c * (size_t)n_in;
        char *ac = (char *)act + (size_t)c * stride;
        if (fn && cpu_avx2_cached) act_quantize_row_avx2(qt->act, xc, ac, n_in);
        else act_quantize_row(qt->act, xc, ac, n_in);
    }
    if (T > MATVEC_MAX_COLS) {
        const matmul_kernel *mk = wide_kernel(type, fn);
        if (mk) return matmul_run(tp, mk, W, row_bytes, n_in, n_out, act, stride, T, y);
    }
    j.act = act; j.act_stride = stride;
    threadpool_run(tp, matvec_worker, &j);
    return 0;
}

int matvec(threadpool *tp, const void *W, int type, int64_t n_in, int64_t n_out,
           const float *x, int T, float *y, matvec_mode mode) {
    return matvec_with(tp, W, type, n_in, n_out, x, T, y, mode, MATVEC_KERNEL_AUTO);
}
