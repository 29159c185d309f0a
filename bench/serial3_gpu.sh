#!/bin/bash
# One device call (2026-12-04 18:25 session, call 2; issue 17): the serial split's second form
# (S by the two-CTA wave: tiles x S <= 2 SMs; the partials 32 MiB, so 64 columns of 4,096 rows
# of 32 lanes fit). test_gpu_mm (its serial pass forces S = 2, 8, 32 and auto), then bench_e2e
# tree / serial alternated, two rounds, then the matmul at 512 / 64 / 16 columns in the serial
# order (the tree's figures: call 1). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf. Peer: none.
# Predictions (before the call): test_gpu_mm passes; the matmul serial at n 64 >= 0.9x the tree
# (call 1: 0.5x without the split) and at n 16 >= 0.9x (call 1: 0.67-0.76x with S = 2); batches of
# 16 / 64 a few % above call 1's serial figures; decode and prompts as call 1.
set -u
. bench/gpu_call.sh
gb_unpack
echo "test_gpu_mm: $(timeout 200 /tmp/gb/bin/test_gpu_mm 2>&1 | tail -1)"
t
e2e_ab 2 "smollm2 1b moe48" STRATA_CANON "tree serial" "2 batch" E2E_BATCH=16,64
echo "matmul serial:"; STRATA_CANON=serial timeout 100 /tmp/gb/bin/test_gpu_mm bench Q4_K,IQ3_XXS,Q6_K,Q8_0 2>&1 | grep "default"
t
