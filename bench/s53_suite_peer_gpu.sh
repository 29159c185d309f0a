#!/bin/bash
# 2026-12-05 (19:31 session), call 5: the whole GPU suite (`tools/gpu_pack.sh run`, what `make test-gpu` runs)
# on the final tree's programs (9131cb5: the kq kernels and their new tests, never run before), then the
# kq kernels beside llama.cpp 0c1e570 in the same call: bench_gpu matvec at one column (14336 x 4096 and
# 151936 x 2048, copies rotated beyond L2) next to test-backend-ops MUL_MAT n 1 (m 4096 k 14336, its one
# copy L2-resident: not like for like), and the 1b shape's decode (bench_e2e, STRATA_CUDA_MV_KQ 0 / 1 / 4)
# next to llama-bench tg128 on the same file. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz,
# .peer/smollm2-vocab.gguf. Prediction: the suite passes (31,612 + the new kq checks); kqp at 151936 x 2048
# at or below coop8's 85.6 us; 1b decode with 1 at or above 4's ~1,276.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 330
t
peer_up && PEER=1 || PEER=0
echo "peer $PEER"
for s in 1 2; do
  timeout 60 $g/bin/bench_gpu matvec shape=$s only=Q4_K,Q5_K,Q6_K 2>&1 | grep -E "copy|Q4_K|Q5_K|Q6_K" | grep -v "lane\|  8 "
done
[ $PEER = 1 ] && timeout 60 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=1,k=14336' 2>&1 |
  grep -E "type_a=(q4_K|q5_K|q6_K)," | grep -E "us/run"
t
e2e_ab 1 "1b" STRATA_CUDA_MV_KQ "0 1 4" 2
[ $PEER = 1 ] && { echo -n "llama.cpp 1b tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-1b.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo; }
t
