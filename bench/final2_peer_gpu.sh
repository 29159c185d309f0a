#!/bin/bash
# One device call (2026-12-04, 13:31 session, the last): issues 19 and 20 on the session's final code
# (STRATA_CUDA_ATTN_TC_DEC 319, STRATA_CUDA_MOE_FAST 63) beside llama.cpp on the same files in the
# same call. Strata: f16 and int8 caches, decode after prompts of 16 / 4,096 / 16,384
# (`E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096,16384 bench_e2e SHAPE 1`), one round (calls 1-2 hold two
# rounds at 16 / 4,096); llama.cpp (the carried build) `llama-bench -ngl 99 -fa 1 -ctk T -ctv T -p 0
# -n 128 -d 0,4096,16384 -r 3`, f16 and q8_0 K/V, its runs one by one; then the GPU suite on this
# code with what time is left. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz,
# .peer/smollm2-vocab.gguf.
# After the call its depth rows and suite lines were folded into gpu_call.sh (depth_row, gpu_suite; the same runs).
set -u
. bench/gpu_call.sh
gb_unpack
D=16,4096,16384
depth_peer_rows "smollm2 1b moe48" || exit 1   # (folded 2026-12-04 15:43: the same runs)
gpu_suite 150
t
