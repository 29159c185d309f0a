/* Thread pool for back-to-back parallel-for jobs (a decode step runs ~250 of them).
 * Waking threads through a condition variable costs tens of microseconds per job, which
 * at ~10 ms per token is a large share; so workers spin on a generation counter for a
 * short while after each job and only then sleep on the condition variable.
 *
 * Lost-wakeup protocol: a worker increments n_sleeping under the mutex and re-checks the
 * generation before waiting; the caller bumps the generation and then, if anyone sleeps,
 * broadcasts under the mutex. Both use sequentially consistent atomics, so at least one
 * side sees the other's write. */
#include "threadpool.h"
#include "../core/util.h"
#include "../core/env.h"
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Spin budget per wait (STRATA_POOL_SPIN pause iterations, ~2-5 ns each), then up to
 * YIELD_ITERS sched_yield calls (other runnable threads go first), then sleep. 0: sleep at once
 * (the right choice on an oversubscribed machine). */
#define YIELD_ITERS 200

struct threadpool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    threadpool_fn fn;
    void *ctx;
    long generation;       /* bumped per job (atomic) */
    int pending;           /* workers still running the current job (atomic) */
    int n_sleeping;        /* workers waiting on cv (atomic) */
    int spin;              /* pause iterations before yielding (STRATA_POOL_SPIN) */
    int quit;
};

typedef struct { threadpool *tp; int ith; } worker_arg;

static long wait_for_job(threadpool *tp, long seen) {
    int yields = tp->spin > 0 ? YIELD_ITERS : 0;
    for (int i = 0; i < tp->spin + yields; i++) {
        long g = __atomic_load_n(&tp->generation, __ATOMIC_ACQUIRE);
        if (g != seen) return g;
        if (i < tp->spin) cpu_relax(); else sched_yield();
    }
    pthread_mutex_lock(&tp->mu);
    __atomic_add_fetch(&tp->n_sleeping, 1, __ATOMIC_SEQ_CST);
    long g;
    while ((g = __atomic_load_n(&tp->generation, __ATOMIC_SEQ_CST)) == seen) pthread_cond_wait(&tp->cv, &tp->mu);
    __atomic_sub_fetch(&tp->n_sleeping, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&tp->mu);
    return g;
}

static void *worker_main(void *p) {
    worker_arg *wa = p;
    threadpool *tp = wa->tp;
    int ith = wa->ith;
    st_free(wa);
    long seen = 0;
    for (;;) {
        seen = wait_for_job(tp, seen);
        if (__atomic_load_n(&tp->quit, __ATOMIC_ACQUIRE)) return NULL;
        tp->fn(tp->ctx, ith, tp->n);
        __atomic_sub_fetch(&tp->pending, 1, __ATOMIC_ACQ_REL);
    }
}

threadpool *threadpool_create(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    threadpool *tp = st_calloc(1, sizeof *tp);
    if (!tp) return NULL;
    tp->n = n_threads;
    long spin = env_int(ENV_POOL_SPIN);
    tp->spin = spin < 0 ? 0 : spin > 10000000 ? 10000000 : (int)spin;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv, NULL);
    if (n_threads > 1) {
        tp->threads = st_calloc((size_t)n_threads, sizeof(pthread_t));
        if (!tp->threads) { tp->n = 1; threadpool_free(tp); return NULL; }
        for (int i = 1; i < n_threads; i++) {
            worker_arg *wa = st_malloc(sizeof *wa);
            if (!wa) { tp->n = i; threadpool_free(tp); return NULL; }
            wa->tp = tp; wa->ith = i;
            if (pthread_create(&tp->threads[i], NULL, worker_main, wa) != 0) {
                st_free(wa); tp->n = i; threadpool_free(tp); return NULL;
            }
        }
    }
    return tp;
}

static void publish(threadpool *tp) {
    __atomic_add_fetch(&tp->generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tp->n_sleeping, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&tp->mu);
        pthread_cond_broadcast(&tp->cv);
        pthread_mutex_unlock(&tp->mu);
    }
}

void threadpool_free(threadpool *tp) {
    if (!tp) return;
    __atomic_store_n(&tp->quit, 1, __ATOMIC_RELEASE);
    publish(tp);
    for (int i = 1; i < tp->n && tp->threads; i++) pthread_join(tp->threads[i], NULL);
    st_free(tp->threads);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv);
    st_free(tp);
}

int threadpool_size(const threadpool *tp) { return tp ? tp->n : 1; }

void threadpool_run(threadpool *tp, threadpool_fn fn, void *ctx) {
    if (!tp || tp->n == 1) { fn(ctx, 0, 1); return; }
    tp->fn = fn; tp->ctx = ctx;
    __atomic_store_n(&tp->pending, tp->n - 1, __ATOMIC_RELEASE);
    publish(tp);
    fn(ctx, 0, tp->n);
    /* workers' shares are about as long as ours: spin, yielding now and then */
    for (long i = 0; __atomic_load_n(&tp->pending, __ATOMIC_ACQUIRE) > 0; i++) {
        if (i < tp->spin) cpu_relax(); else sched_yield();
    }
}

void threadpool_split(long n, int ith, int nth, long align, long *lo, long *hi) {
    if (align < 1) align = 1;
    long units = (n + align - 1) / align;
    long per = units / nth, extra = units % nth;
    long u0 = ith * per + (ith < extra ? ith : extra);
    long u1 = u0 + per + (ith < extra ? 1 : 0);
    *lo = u0 * align < n ? u0 * align : n;
    *hi = u1 * align < n ? u1 * align : n;
}
