#!/bin/bash
# 2026-12-06 06:00 session: bit 512 (the q / k head norms inside the decode launch) also runs in the
# split launch past 256 positions (every chunk CTA norms its group's q heads): the 48-layer MoE's
# decode at depth 4,096 with ATTN_TC_DEC 1855 (default) / 319, alternated, llama.cpp tg128 at d4096
# beside. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: within +-1 % (the norm is 8 rows of 128 by 4 warps a CTA, parallel over the chunk CTAs).
set -u
. bench/gpu_call.sh
gb_unpack
ab 2 "moe48" STRATA_CUDA_ATTN_TC_DEC "1855 319" E2E_DEPTH=4096
if peer_up; then
  peer_tg "moe48" "-d 4096"
fi
t
