/* Device / pinned allocations with fault injection (dev_alloc.cu). Weight upload and backend
 * creation allocate only through these, so a test can fail each site in turn. */
#ifndef STRATA_CUDA_DEV_ALLOC_CUH
#define STRATA_CUDA_DEV_ALLOC_CUH
#include <cuda_runtime.h>
#include <stddef.h>

cudaError_t cuda_dev_malloc(void **p, size_t bytes);      /* cudaMalloc (+ countdown); error cleared */
void        cuda_dev_free(void *p);                       /* NULL is fine */
cudaError_t cuda_pinned_malloc(void **p, size_t bytes);   /* cudaMallocHost (+ countdown) */
void        cuda_pinned_free(void *p);
/* cuda_dev_malloc; on failure err = "not enough GPU memory for <what> (size; free of total)". */
int         cuda_dev_alloc_named(void **p, size_t bytes, const char *what, char *err, size_t errlen);
#endif
