#!/bin/bash
# One device call (2026-12-04 18:25 session, call 4): the GPU suite on the session's final code
# (the serial default and the CPU's serial finish with rows in SIMD lanes merged), then where a
# prompt of 512 spends its time in the new default (issue 17, measure first for the next step):
# ncu (serialized upper bounds) over the first pass of 512 columns of the 1.5B and the MoE
# shapes' prompts, per kernel name (tools/ncu_sum.py). Peer: none (a diagnosis). Carry
# .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction: the matmuls ~70 % of the 1.5B pass (78.7 % on 2026-12-03 in the tree order, before
# the tensor-core attention), the attention ~10-15 %.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
M="gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread"
for s in 1b moe48; do
  echo "== $s prompt pass 1 (512 columns)"
  STRATA_CUDA_PROFILE=512,1 E2E_SKIP_MAIN=1 E2E_DEPTH=512 timeout 140 ncu --profile-from-start off --clock-control none \
    --cache-control none --metrics $M --csv $B $s 1 > $OUT/pp-$s.csv 2>/dev/null
  python3 tools/ncu_sum.py $OUT/pp-$s.csv 2>&1 | head -12; t
done
