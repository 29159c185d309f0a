/* A fixed pool of worker threads running one parallel-for at a time.
 * The calling thread takes part as worker 0. */
#ifndef STRATA_THREADPOOL_H
#define STRATA_THREADPOOL_H
typedef struct threadpool threadpool;
/* fn(ctx, ith, nth): worker ith of nth does its share (split by the callee). */
typedef void (*threadpool_fn)(void *ctx, int ith, int nth);

threadpool *threadpool_create(int n_threads);   /* n_threads >= 1; NULL on failure */
void threadpool_free(threadpool *tp);
int  threadpool_size(const threadpool *tp);
/* Run fn on all workers and wait. tp may be NULL: runs fn(ctx, 0, 1). */
void threadpool_run(threadpool *tp, threadpool_fn fn, void *ctx);
/* Helper: the [lo, hi) share of n items for worker ith of nth, in units of `align`. */
void threadpool_split(long n, int ith, int nth, long align, long *lo, long *hi);
#endif
