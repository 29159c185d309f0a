#!/bin/bash
# The session's last device call (2026-12-03 20:50 session, call 8): the committed code's GPU
# suite (tools/gpu_pack.sh run), then bench/attn_tc_gpu.sh again (test_gpu_attn_tc, TC 0 / 1
# beside llama.cpp), then one decode step of the SmolLM2 shape at depth 16 under ncu with TC=0 and
# TC=1 (bench/step_profile_gpu.sh; time per kernel name, tools/ncu_sum.py): where the tensor-core
# order's depth-16 loss goes. Output to $OUT/final.txt as it comes.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
set -u
OUT=${OUT:-/tmp}
exec > >(tee "$OUT/final.txt") 2>&1
echo "== GPU suite"; timeout 200 bash tools/gpu_pack.sh run "$OUT" > "$OUT/suite.txt" 2>&1; tail -18 "$OUT/suite.txt"
bash bench/attn_tc_gpu.sh
for tc in 0 1; do
  echo "== decode step, SmolLM2 shape, depth 16, STRATA_CUDA_ATTN_TC=$tc (ncu, serialized)"
  STRATA_CUDA_ATTN_TC=$tc OUT=/tmp timeout 90 bash bench/step_profile_gpu.sh smollm2 16 > /tmp/rows$tc.txt 2>&1
  python3 tools/ncu_sum.py /tmp/step-smollm2-16.csv 2>&1 | head -20
done
