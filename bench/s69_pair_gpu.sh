#!/bin/bash
# 2026-12-06 06:00 session: STRATA_CUDA_MOE_FAST bit 1024 (opt-in): the T = 1 gate/up kernel decodes a
# lane's gate part and up part side by side and loads their activation words once (coop_pair_fast;
# static SASS 1,760 -> 1,648 instructions, LDG 103 -> 79; 40 registers under launch bounds of 12 CTAs an
# SM). The MoE parity programs first, A/B 1023 / 2047 on moe48 and moe48_iq2, then the whole suite.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: gate/up -5 % of its ~11.3 us in the step: moe48 +1 % (380 -> 383-384); moe48_iq2 the same.
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
e2e_ab 3 "moe48" STRATA_CUDA_MOE_FAST "1023 2047" 1
e2e_ab 2 "moe48_iq2" STRATA_CUDA_MOE_FAST "1023 2047" 1
if peer_up; then
  peer_tg "moe48 moe48_iq2"
fi
t
gpu_suite 220
t
