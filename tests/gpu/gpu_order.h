/* The attention order of the GPU suite's CPU-identity tests. Since 2026-12-04 the device table
 * gives Hopper the tensor-core attention order by default (STRATA_CUDA_ATTN_TC=auto; its own
 * bits, not the CPU's: docs/KERNELS.md, "The tensor-core attention order"), so a test that
 * asserts GPU results equal to the CPU's bits pins the CPU's order first (a backend reads the
 * switch when it is created). The tensor-core order's own contract (pass widths, sessions
 * sharing a pass, speculation on / off, graph == eager, its divergence from the CPU) is
 * tests/gpu/test_gpu_attn_tc.c's. */
#ifndef STRATA_GPU_ORDER_H
#define STRATA_GPU_ORDER_H
#include <stdlib.h>
#include "core/env.h"

static inline void gpu_pin_cpu_order(void) {
    setenv("STRATA_CUDA_ATTN_TC", "0", 1);
    env_reset_cache();
}
#endif
