/* Device allocations of weight upload and backend creation, with a fault-injection countdown
 * (the device twin of st_alloc_fail_after in src/core/util.c) and a count of live blocks.
 * Every allocation of those paths goes through here, so tests/gpu/test_gpu_faults.c can make
 * each one fail in turn and check the error message and that nothing leaks. */
#include "cuda_internal.h"
#include "cuda_common.cuh"
#include "dev_alloc.cuh"

static long g_fail_countdown;   /* > 0: the allocation that brings it to 0 fails */
static long g_live;             /* device + pinned blocks allocated here and not yet freed */

static int should_fail(void) {
    if (g_fail_countdown <= 0) return 0;
    return --g_fail_countdown == 0;
}

cudaError_t cuda_dev_malloc(void **p, size_t bytes) {
    *p = NULL;
    if (should_fail()) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    if (e != cudaSuccess) { cudaGetLastError(); *p = NULL; return e; }   /* not sticky: clear it */
    __atomic_add_fetch(&g_live, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}
void cuda_dev_free(void *p) {
    if (!p) return;
    cudaFree(p);
    __atomic_sub_fetch(&g_live, 1, __ATOMIC_RELAXED);
}
cudaError_t cuda_pinned_malloc(void **p, size_t bytes) {
    *p = NULL;
    if (should_fail()) return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMallocHost(p, bytes ? bytes : 1);
    if (e != cudaSuccess) { cudaGetLastError(); *p = NULL; return e; }
    __atomic_add_fetch(&g_live, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}
void cuda_pinned_free(void *p) {
    if (!p) return;
    cudaFreeHost(p);
    __atomic_sub_fetch(&g_live, 1, __ATOMIC_RELAXED);
}

int cuda_dev_alloc_named(void **p, size_t bytes, const char *what, char *err, size_t errlen) {
    if (cuda_dev_malloc(p, bytes) == cudaSuccess) return 0;
    size_t fr = 0, tot = 0;
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) cudaGetLastError();
    if (err && errlen)
        snprintf(err, errlen, "not enough GPU memory for %s (%.2f MiB; the GPU has %.1f MiB free of %.1f MiB)", what,
                 bytes / 1048576.0, fr / 1048576.0, tot / 1048576.0);
    return -1;
}

extern "C" void cuda_alloc_fail_after(long k) { g_fail_countdown = k; }
extern "C" long cuda_alloc_fail_pending(void) { return g_fail_countdown; }
extern "C" long cuda_alloc_live(void) { return __atomic_load_n(&g_live, __ATOMIC_RELAXED); }
extern "C" int cuda_mem_free(size_t *free_bytes, size_t *total_bytes) {
    size_t f = 0, t = 0;
    if (cudaMemGetInfo(&f, &t) != cudaSuccess) { cudaGetLastError(); return -1; }
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return 0;
}
