#!/bin/bash
# (Its prompt / decode loop is now gpu_call.sh's pp_peer_rows, the same commands as ran in the 11:30 session's call 1.)
# Prepared 2026-12-05 (08:37 session, after its device time ran out) for the next session's first
# GPU call: the whole suite in the new default (STRATA_CUDA_MM_SERX=4, flipped after the last suite
# run), then issue 17's prompt-512 table and issue 20's MoE decode beside llama.cpp on whichever card
# the call gets (strata `bench_e2e SHAPE 2`, two rounds; llama.cpp `llama-bench -ngl 99 -fa 1 -p 512
# -n 128 -r 3`, every run listed), then the matmul at 4096 x 14336 x 512 beside MUL_MAT.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: suite 29,833 passed (call 2's 29,003 + test_gpu_mm's SERX 4 configuration), 0 failed;
# prompt 512 as the 2026-12-04 H200 rows on an H200 (76-82k / 37-46k / 10.5-12.2k: 1.5B and MoE below
# 1.0x), MoE decode 355-375 (target 650 missed); MUL_MAT ratios as call 1's (0.34-0.65x).
set -u
. bench/gpu_call.sh
gpu_suite 240
t
gb_unpack
pp_peer_rows "smollm2 1b moe48"
[ $(( $(date +%s) - T0 )) -gt 480 ] && { echo "matmul skipped (time)"; exit 0; }
MM_BENCH_WIDTHS=1 timeout 90 $g/bin/test_gpu_mm bench Q4_0,Q8_0,Q4_K,Q6_K,IQ3_XXS 2>&1 | grep default
[ $PEER = 1 ] && timeout 90 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
  grep -E "type_a=(q4_0|q8_0|q4_K|q6_K|iq3_xxs)," | grep TFLOPS
t
