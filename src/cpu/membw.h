/* The machine's measured memory read bandwidth: the roofline every kernel is put next to. */
#ifndef STRATA_MEMBW_H
#define STRATA_MEMBW_H
#include <stddef.h>
#include "threadpool.h"
/* Median GB/s (1e9 bytes/s) of reading a `bytes` buffer (far larger than cache, e.g.
 * 1 GiB) with the pool's threads, over `reps` passes after one warm-up pass. */
double membw_read_gbs(threadpool *tp, size_t bytes, int reps);
#endif
