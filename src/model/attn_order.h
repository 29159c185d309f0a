/* The canonical attention order (docs/KERNELS.md, "Attention order"): what every backend's
 * attention computes, operation by operation, so the CPU and the GPU give the same bits and a
 * token's result never depends on how many columns share a pass, the thread count, or how
 * many positions the cache could hold.
 *
 * The positions [first, last] a token attends to are cut into chunks of ATTN_CHUNK positions
 * counted from `first` (the last chunk may be shorter). Each chunk is reduced on its own
 * (scores, their max, exp, sum and the unnormalized V sum, each in position order), then the
 * chunks are merged in chunk order with one rescaling factor each. The chunk size is a fixed
 * part of the definition: never a function of the pass width, the context length or the
 * device. The GPU reduces the chunks in parallel (flash-decoding); the CPU one after another. */
#ifndef STRATA_ATTN_ORDER_H
#define STRATA_ATTN_ORDER_H

#define ATTN_CHUNK 256

/* number of chunks of n positions */
#define ATTN_N_CHUNKS(n) (((n) + ATTN_CHUNK - 1) / ATTN_CHUNK)

#endif
