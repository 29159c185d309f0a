#include "threadpool.h"
#include "../core/util.h"
#include <pthread.h>
#include <stdlib.h>

struct threadpool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t cv_start, cv_done;
    threadpool_fn fn;
    void *ctx;
    long generation;   /* bumped per job */
    int pending;       /* workers still running the current job */
    int quit;
};

typedef struct { threadpool *tp; int ith; } worker_arg;

static void *worker_main(void *p) {
    worker_arg *wa = p;
    threadpool *tp = wa->tp;
    int ith = wa->ith;
    st_free(wa);
    long seen = 0;
    for (;;) {
        pthread_mutex_lock(&tp->mu);
        while (tp->generation == seen && !tp->quit) pthread_cond_wait(&tp->cv_start, &tp->mu);
        if (tp->quit) { pthread_mutex_unlock(&tp->mu); return NULL; }
        seen = tp->generation;
        threadpool_fn fn = tp->fn; void *ctx = tp->ctx;
        pthread_mutex_unlock(&tp->mu);
        fn(ctx, ith, tp->n);
        pthread_mutex_lock(&tp->mu);
        if (--tp->pending == 0) pthread_cond_signal(&tp->cv_done);
        pthread_mutex_unlock(&tp->mu);
    }
}

threadpool *threadpool_create(int n_threads) {
    if (n_threads < 1) n_threads = 1;
    threadpool *tp = st_calloc(1, sizeof *tp);
    if (!tp) return NULL;
    tp->n = n_threads;
    pthread_mutex_init(&tp->mu, NULL);
    pthread_cond_init(&tp->cv_start, NULL);
    pthread_cond_init(&tp->cv_done, NULL);
    if (n_threads > 1) {
        tp->threads = st_calloc((size_t)n_threads, sizeof(pthread_t));
        if (!tp->threads) { threadpool_free(tp); return NULL; }
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

void threadpool_free(threadpool *tp) {
    if (!tp) return;
    pthread_mutex_lock(&tp->mu);
    tp->quit = 1;
    pthread_cond_broadcast(&tp->cv_start);
    pthread_mutex_unlock(&tp->mu);
    for (int i = 1; i < tp->n && tp->threads; i++) pthread_join(tp->threads[i], NULL);
    st_free(tp->threads);
    pthread_mutex_destroy(&tp->mu);
    pthread_cond_destroy(&tp->cv_start);
    pthread_cond_destroy(&tp->cv_done);
    st_free(tp);
}

int threadpool_size(const threadpool *tp) { return tp ? tp->n : 1; }

void threadpool_run(threadpool *tp, threadpool_fn fn, void *ctx) {
    if (!tp || tp->n == 1) { fn(ctx, 0, 1); return; }
    pthread_mutex_lock(&tp->mu);
    tp->fn = fn; tp->ctx = ctx; tp->pending = tp->n - 1; tp->generation++;
    pthread_cond_broadcast(&tp->cv_start);
    pthread_mutex_unlock(&tp->mu);
    fn(ctx, 0, tp->n);
    pthread_mutex_lock(&tp->mu);
    while (tp->pending > 0) pthread_cond_wait(&tp->cv_done, &tp->mu);
    pthread_mutex_unlock(&tp->mu);
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
