#!/bin/bash
# 2026-12-07 (13:52 session), call 2, right after bench/s90_r4e_gpu.sh on the same warm machine (its programs in
# /tmp/gb, /tmp/strata-e2e-moe48.gguf written): issue 17's matmul per format at 4096 x 14336 x 512 (test_gpu_mm bench,
# four weight copies rotated) beside llama.cpp 0c1e570's test-backend-ops perf -o MUL_MAT (its one copy L2-resident),
# and llama.cpp's pp512 on the 48-layer file (strata's prompt 512 is in s90's runs). The trimmed form of
# bench/s92_i17_gpu.sh that the device time left allowed (the command ran inline; this file is that command).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
. bench/gpu_call.sh; exec > >(tee $OUT/s93.txt) 2>&1; gb_unpack; peer_up && PEER=1 || PEER=0; echo peer $PEER; t
MM_BENCH_WIDTHS=1 timeout 80 $g/bin/test_gpu_mm bench Q4_0,Q8_0,Q2_0,Q4_K,Q6_K,IQ3_XXS 2>&1 | grep two-tile; t
timeout 75 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
  grep -E "type_a=(q4_0|q8_0|q2_0|q4_K|q6_K|iq3_xxs)," | grep TFLOPS; t
echo -n "llama.cpp moe48 pp512 runs: "
timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-moe48.gguf -ngl 99 -fa 1 -p 512 -n 0 -r 3 -o jsonl 2>/dev/null | runs_of; t
