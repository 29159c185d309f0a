#!/bin/bash
# 2026-12-06 08:15 session, call 5: STRATA_CUDA_MOE_FAST bit 8192 (opt-in): the T = 1 gate/up kernel's lane
# path for Q2_0 experts takes a block of the gate row and the up row at once, the block's 16 activation
# words and d loaded once (64 + 4 activation bytes against 18 weight bytes a row before). moe48_q20 with
# 8191 / 16383 alternated; moe48_q4k once (the final defaults); llama.cpp tg128 on both files; the suite.
# Prediction: gate/up (Q2_0) -10 %, moe48_q20 +2-4 % (373 -> 380-388).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
echo "test_gpu_variants: $(timeout 100 $g/bin/test_gpu_variants 2>&1 | tail -1)"
e2e_ab 2 "moe48_q20" STRATA_CUDA_MOE_FAST "8191 16383" 1
e2e_ab 1 "moe48_q4k" STRATA_CUDA_MOE_FAST "8191" 1
if peer_up; then
  peer_tg "moe48_q20 moe48_q4k"
fi
t
gpu_suite 200
t
