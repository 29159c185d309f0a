#!/bin/bash
# 2026-12-05 (17:38 session), call 6: c34b66e's programs (wip/pin and wip/fetch merged) beside llama.cpp 0c1e570
# in the same call: issue 17's matmul at 4096 x 14336 x 512 per format (strata `test_gpu_mm bench`, four
# weight copies rotated; llama.cpp `test-backend-ops perf -o MUL_MAT`), and issue 20's dense matvec at one
# column (strata `bench_gpu matvec shape=1`: 14336 x 4096, copies rotated beyond L2, GB/s against the copy
# measured in the same run; llama.cpp MUL_MAT m 4096 n 1 k 14336, its one weight copy L2-resident).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: Q4_0 0.47-0.50x, Q8_0 0.43-0.46x, IQ4_NL 0.42-0.45x, MXFP4 0.33-0.36x, Q4_K ~0.85x.
set -u
. bench/gpu_call.sh
gb_unpack
peer_up && PEER=1 || PEER=0
echo "peer $PEER"; t
MM_BENCH_WIDTHS=1 timeout 120 $g/bin/test_gpu_mm bench Q4_0,Q4_1,Q5_0,Q8_0,IQ4_NL,MXFP4,Q4_K,Q6_K,Q3_K,IQ3_XXS 2>&1 | grep two-tile
[ $PEER = 1 ] && timeout 120 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
  grep -E "type_a=(q4_0|q4_1|q5_0|q8_0|iq4_nl|mxfp4|q4_K|q6_K|q3_K|iq3_xxs)," | grep TFLOPS
t
timeout 200 $g/bin/bench_gpu matvec shape=1 2>&1 | tail -40
t
[ $PEER = 1 ] && timeout 100 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=1,k=14336' 2>&1 | grep -E "type_a=" | grep -E "us/run|GB/s" | head -40
t
