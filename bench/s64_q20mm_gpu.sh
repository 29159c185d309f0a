#!/bin/bash
# 2026-12-06 06:00 session: Q2_0 on tensor cores (mm.cu's QK 64 tile; issue 17 item 2/3). The whole GPU
# suite on the change (test_gpu_mm: Q2_0 plain and grouped in every configuration; test_gpu_widths: a
# Q2_0 FFN and Q2_0 experts at widths 1..512), then the matmul at m 4096 k 14336 n 512 (rotated copies)
# beside llama.cpp's MUL_MAT, and prompt 512 / decode on the 48-layer MoE with Q2_0 experts and the
# 1.5B shape with Q2_0 layers beside llama-bench on the same files.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; Q2_0 matmul within 0.8-1.2x of Q4_0's TFLOPS; moe48_q20 prompt
# 1,280 -> 12,000-15,000 tok/s (as the other expert formats); decode unchanged (372).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
P=0; peer_up && P=1; echo "peer: $P"
echo "== strata test_gpu_mm bench (m 4096 k 14336, copies rotated)"
timeout 120 $g/bin/test_gpu_mm bench Q2_0,Q4_0 2>&1 | grep -E "n=512"; t
if [ $P = 1 ]; then
  echo "== llama.cpp test-backend-ops perf -o MUL_MAT (m 4096, n 512, k 14336)"
  timeout 120 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
    grep -E "type_a=(q2_0|q4_0)," | grep -E "TFLOPS" | head -6; t
fi
for s in moe48_q20 1b_q20; do
  for r in 1 2; do echo "strata $s r$r: $(timeout 120 $B $s 1 2>&1 | grep -iE 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"; done
  if [ $P = 1 ]; then
    echo "llama.cpp $s pp512 / tg128 runs:"
    timeout 120 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of
  fi
  t
done
