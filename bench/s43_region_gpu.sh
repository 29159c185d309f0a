#!/bin/bash
# (Its start is now bench/gpu_call.sh's ab_start: the same commands as ran in the call.)
# 2026-12-05 (17:38 session), call 4: wip/fetch 80b6e2a against main 88fb9fd. Call 3's change (the raw-word
# step from one base, scaled Q4_0 / Q5_0 codes) measured Q4_0 +3 %, IQ4_NL +1-3 %, Q5_0 -1-2 %, Q8_0 -1-3 %:
# instruction count is not what limits. Added: a full step's NBS blocks as one region (no branch between
# the blocks' MMAs), so the next block's ldmatrix and MMAs issue during this one's epilogue (SASS: they do).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. Peer: none.
# Prediction: every 32-value format +5-15 % (the warps wait on ldmatrix -> MMA -> epilogue chains: short
# scoreboard and wait were the top stalls of call 2's Q4_0 profile).
set -u
. bench/gpu_call.sh
ab_start test_gpu_widths test_gpu_moe test_gpu_e2e test_gpu_variants
t
mm_bench_rows "4096,14336 14336,4096 4096,4096" Q4_0,Q5_0,Q8_0,IQ4_NL,Q4_1,MXFP4 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "smollm2" 2 "old=/tmp/old/bench_e2e new=$B"
