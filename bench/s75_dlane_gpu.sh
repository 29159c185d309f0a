#!/bin/bash
# Written 2026-12-06 (14:24 session): STRATA_CUDA_MOE_FAST bit 32768 (opt-in until measured): the T = 1 down
# kernel on the lane path (Q2_0 with the word expansion, Q4_0, Q8_0, IQ4_NL with its fast decode) takes a
# warp's 2 consecutive rows (4 with bit 4 for the 8-word formats), lane b % 32 block b of each with the
# block's activation words loaded once (row_dot_rows_lane / bpn_lane, the generalization of bit 8192's
# gate/up pair), instead of one row a warp: a 768-value down row is 24 blocks of 32 (Q4_0) or 12 of 64
# (Q2_0), so 8 or 20 of a warp's lanes were idle, and each row loaded the activation blocks again.
# The parity programs, then A/B 16383 / 49151 on moe48_q40 and moe48_q20 (2 rounds each), llama.cpp tg128 on
# the files, then the suite: with 49151 as every program's default when it was faster in every round on
# both shapes (the default would move), else with the packed default 16383.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: the down launch's share of the Q4_0 / Q2_0 MoE step -15 to -30 %, the decode +2-5 %.
set -u
. bench/gpu_call.sh
gb_unpack
# `lean` (the stop's last ~280 s of device time): the suite on the packed default first, then one A/B round a
# shape, no peer
if [ "${1:-}" = lean ]; then
  gpu_suite 150
  t
  e2e_ab 1 "moe48_q40 moe48_q20" STRATA_CUDA_MOE_FAST "16383 49151" 1
  t
  exit 0
fi
moe_bit_ab 2 "moe48_q40 moe48_q20" 16383 49151 300
