#!/bin/bash
# One device call (2026-12-04 15:43 session, the last): issues 19 and 20 on the session's final code
# (ec77c15's programs: STRATA_CUDA_PREFETCH 7, the int8 decode instance per conversion; STRATA_CANON
# tree) beside llama.cpp on the same files in the same call, as bench/final2_peer_gpu.sh: strata
# f16 and int8 caches, decode after prompts of 16 / 4,096 / 16,384, one round; llama.cpp `llama-bench
# -ngl 99 -fa 1 -ctk T -ctv T -p 0 -n 128 -d 0,4096,16384 -r 3`, its runs one by one. The GPU suite
# ran on these programs in call 4. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz,
# .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
# (after the call its lines were folded into gpu_call.sh's depth_peer_rows: the same runs)
D=16,4096,16384
depth_peer_rows "smollm2 1b moe48" || exit 1
t
