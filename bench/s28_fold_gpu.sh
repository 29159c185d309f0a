#!/bin/bash
# 2026-12-05 (11:30 session), call 2: two launches of the MoE decode layer folded (issue 20), A/B.
#   STRATA_CUDA_MOE_FAST bit 256 (DOWNQ): h quantized by the down kernel's warps, no quantize launch;
#   STRATA_CUDA_ATTN_TC_DEC bit 512: q's and k's head norms inside the decode attention launch.
# Parity first (test_gpu_variants: DOWNQ against the CPU at T = 1..8; test_gpu_attn_tc: 831 against
# the default's logits, gemma3's head norms; test_gpu_moe, test_gpu_e2e), then the 48-layer MoE's
# decode at depth 16 and 2,048, the four configurations alternated, 3 rounds; then the instrument
# (STRATA_CUDA_TWICE 8: h's quantize launch twice, 16: the router launch twice, 32: the RMSNorm + quantize launches twice) for their in-graph cost.
# Prediction: each fold -1.5 to -3 us of the ~57 us layer: +3-5 % each, +6-10 % both (358 -> 380-395).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_variants test_gpu_attn_tc test_gpu_moe test_gpu_e2e; do
  timeout 120 $g/bin/$p > /tmp/$p.txt 2>&1; echo "$p rc $?: $(tail -1 /tmp/$p.txt)"
  grep -E "FAIL|not ok" /tmp/$p.txt | head -5
done
t
abn 3 moe48 "STRATA_CUDA_MOE_FAST=255,STRATA_CUDA_ATTN_TC_DEC=319 STRATA_CUDA_MOE_FAST=511,STRATA_CUDA_ATTN_TC_DEC=319 STRATA_CUDA_MOE_FAST=255,STRATA_CUDA_ATTN_TC_DEC=831 STRATA_CUDA_MOE_FAST=511,STRATA_CUDA_ATTN_TC_DEC=831" E2E_DEPTH=16,2048
abn 2 moe48 "STRATA_CUDA_TWICE=0 STRATA_CUDA_TWICE=8 STRATA_CUDA_TWICE=16 STRATA_CUDA_TWICE=32" E2E_DEPTH=16
t
abn 2 smollm2 "STRATA_CUDA_TWICE=0 STRATA_CUDA_TWICE=32" E2E_DEPTH=16
t
