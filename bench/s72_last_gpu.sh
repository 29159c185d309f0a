#!/bin/bash
# 2026-12-06 08:15 session, call 4: the final CUDA code (MV_KQI 19 sends IQ2_XS rows to kq1 with the ALU
# signs): 1b_iq2xs with 19 / 3 alternated, llama.cpp tg128 on the same file, then the whole suite.
# Prediction: 19 at 24's 1,198-1,205 tok/s (the same kernels), 3 at ~1,050-1,080.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
e2e_ab 2 "1b_iq2xs" STRATA_CUDA_MV_KQI "19 3" 1
if peer_up; then
  peer_tg "1b_iq2xs"
fi
t
gpu_suite 260
t
