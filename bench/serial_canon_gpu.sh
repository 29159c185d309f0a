#!/bin/bash
# One device call (2026-12-04 15:43 session, call 3; issue 17): the experiment STRATA_CANON=serial
# (branch exp/serial-canon): the canonical order's 32 lane values combined by the chain
# lane0 + lane1 + ... + lane31 instead of the 16-8-4-2-1 tree, on every device (CPU reference, AVX2,
# the CUDA matvec's warp finish, the matmul's walk: lanes in order, two floats an output instead of
# the counter's six, two CTAs a SM, no split of small grids). First the parity programs with it on
# (the GPU against the CPU, both serial; batch invariance across widths 1..512), then the matmul's
# TFLOPS (m 4096 k 14336, n 512 / 64 / 16, weights rotated beyond L2) tree / serial, then bench_e2e
# prompt 512, decode and batches of 16 / 64 sessions tree / serial on the three shapes.
# Peer: none (llama.cpp's pp512 / MMQ for these files and shapes: 13:31 and earlier calls).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Predictions (before the call): the parity programs pass serial (the same code paths, the GPU
# and the CPU both serial); matmul at n 512 x1.15-1.35 (the walk-order instrument's x1.18-1.39 less
# a second float), at n 64 / 16 slower (no split: x0.4-0.8); prompt 512 1.5B +10-20 %, MoE +5-15 %;
# batches of 16-64 sessions slower (the split's 1.3-1.5x gone).
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_mm test_gpu_matvec test_gpu_widths test_gpu_moe test_gpu_e2e; do
  echo "serial $p: $(STRATA_CANON=serial timeout 120 /tmp/gb/bin/$p 2>&1 | grep -E 'FAIL' | head -3) $(STRATA_CANON=serial timeout 120 /tmp/gb/bin/$p 2>&1 | tail -1)"
done
t
for c in tree serial; do
  STRATA_CANON=$c timeout 120 /tmp/gb/bin/test_gpu_mm bench Q4_0,Q8_0,Q4_K,Q5_K,Q6_K,IQ3_XXS,IQ2_XXS 2>&1 | grep -E "default" | sed "s/^/$c /"
done
t
for s in smollm2 1b moe48; do
  for c in tree serial; do
    echo "$s $c: $(STRATA_CANON=$c E2E_BATCH=16,64 timeout 200 $B $s 2 batch 2>&1 | grep -iE 'prompt|batch|sessions' | sed 's/  */ /g' | tr '\n' ' ')"
  done
  t
done
