#!/bin/bash
# One device call (2026-12-04 00:50): the tensor-core order's merge launch with its loads issued
# at once (STRATA_CUDA_ATTN_TC_DEC bit 4) against the walking merge (DEC=3), the CPU's order
# beside (TC=0); then decode at depth 16,384 (issue 19: >= 1.0x llama.cpp) with both, and
# llama.cpp's tg128 at d16384 in the same call.
# Prediction (bench/tc_dec_gpu.sh): decode at 4,096 +5-12 % over DEC=3, depth 16 unchanged.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/tc_fold.txt") 2>&1
SUITE=0 NOPEER=1 SHAPES="${SHAPES:-smollm2 1b moe48}" CFGS="0,3 1,3 1,7" bash bench/tc_dec_gpu.sh
P=0; peer_up && P=1
for s in ${SHAPES:-smollm2 1b moe48}; do
  for dec in 3 7; do
    echo "$s DEC=$dec d16384: $(STRATA_CUDA_ATTN_TC_DEC=$dec E2E_SKIP_MAIN=1 E2E_DEPTH=16384 timeout 150 $B $s 1 | grep -E 'depth' | sed 's/  */ /g')"
  done
  if [ $P = 1 ]; then
    echo "llama.cpp $s tg128 @ d16384 runs:"
    timeout 150 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 16384 -r 3 -o jsonl 2>/dev/null | runs_of
  fi
  t
done
