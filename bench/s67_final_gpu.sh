#!/bin/bash
# 2026-12-06 06:00 session, the last call: the suite on the final code (bit 1024 where a CTA's heads hold
# one block, 2048 for several; test_gpu_attn_tc compares 3903 too), then the defaults' decode beside the
# alternatives and llama.cpp: moe48 1855 (= 512 alone there) / 3903 / 319, 1b 1855 / 831; MOE_FAST 1023
# (the new default: bit 512, the IQ signs by ALU) / 511 on moe48.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; moe48 (MOE_FAST 1023 now) 1855 = 382-383 (call 4's 831 + the signs' +0.8 %),
# 3903 and 319 3 lower; 1b 1855 = 1,327, 831 = 1,300; MOE_FAST 1023 over 511 +2-3 tok/s.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
e2e_ab 2 "moe48" STRATA_CUDA_ATTN_TC_DEC "1855 3903 319" 1
e2e_ab 2 "1b" STRATA_CUDA_ATTN_TC_DEC "1855 831" 1
e2e_ab 2 "moe48" STRATA_CUDA_MOE_FAST "1023 511" 1
if peer_up; then
  peer_tg "moe48 1b"
fi
t
