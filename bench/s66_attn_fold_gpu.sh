#!/bin/bash
# 2026-12-06 06:00 session: two launches of a decode layer folded into the tensor-core decode launch
# (issue 20): STRATA_CUDA_ATTN_TC_DEC bit 512 (the q / k head norms, rmsnorm2_warp_kernel's rows by
# norm_row_warp) and bit 1024 (wo's act_q8_K rows where a KV head's query heads hold whole 256-value
# blocks). The suite first (test_gpu_attn_tc: 319 / 831 / 1855 logits equal, gemma3 and a 12-head group
# with Q4_K attention), then decode A/B: moe48 (qwen3moe: both bits apply) 319 / 831 / 1855 and the 1.5B
# shape (llama, wo Q4_K, 4 x 64 values a KV head: bit 1024 only) 831 / 1855, llama.cpp tg128 beside.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; the step loses ~2 us a layer per launch folded (the TWICE figures,
# call 3 of s65: ~2.4 and ~1.7-2.4 us): moe48 378 -> 390-395 (831) -> 400-410 (1855); 1b +2-3 %.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
e2e_ab 3 "moe48" STRATA_CUDA_ATTN_TC_DEC "319 831 1855" 1
e2e_ab 2 "1b" STRATA_CUDA_ATTN_TC_DEC "831 1855" 1
if peer_up; then
  peer_tg "moe48 1b"
fi
t
