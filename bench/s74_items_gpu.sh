#!/bin/bash
# Written 2026-12-06 (08:15 session) on branch wip/items, not run there (no device time left):
# STRATA_CUDA_MOE_FAST bit 16384 (opt-in): the T = 1 down kernel takes a warp's 4 rows x 3 super-blocks as
# 12 (row, block) items over its 4 lane groups (row_dot_items; 63 registers under launch bounds of 4 CTAs an
# SM, 1,752 static SASS instructions against the 4-row pair kernel's 3,128), instead of block b of all 4 rows
# by group b with group 3 idle. The parity programs first, then A/B 8191 / 24575 on moe48 (x3) and moe48_iq2
# (x2), then 16383 (bit 8192: the lane path's gate/up pairs, Q2_0 measured +2.9 % on main; Q4_0 / Q8_0 / IQ4_NL
# added on this branch) against 8191 on moe48_q20 and moe48_q40, llama.cpp tg128 on the files, the suite.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: down -10 to -20 % of its share, moe48 +2-4 %; IQ2_XXS the same.
set -u
. bench/gpu_call.sh
gb_unpack
if [ "${1:-}" = suite ]; then
  [ -n "${2:-}" ] && export STRATA_CUDA_MOE_FAST=$2 && echo "STRATA_CUDA_MOE_FAST=$2 for the suite"
  gpu_suite 400
  t
  exit 0
fi
moe_parity_runs
t
e2e_ab 3 "moe48" STRATA_CUDA_MOE_FAST "8191 24575" 1
e2e_ab 2 "moe48_iq2" STRATA_CUDA_MOE_FAST "8191 24575" 1
e2e_ab 2 "moe48_q20" STRATA_CUDA_MOE_FAST "8191 16383" 1
e2e_ab 2 "moe48_q40" STRATA_CUDA_MOE_FAST "8191 16383" 1
if peer_up; then
  peer_tg "moe48 moe48_iq2 moe48_q20 moe48_q40"
fi
t
# the suite: `bash bench/s74_items_gpu.sh suite [MOE_FAST]` in the next call on the same warm machine (the
# two calls keep each well inside the 600 s limit of a call); MOE_FAST exported makes that value the
# default of every program of the suite, as the flipped constant would (the switch is read once at start)
