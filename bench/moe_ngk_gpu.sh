#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 4; issue 20): STRATA_CUDA_MOE_FAST bit 32 (at
# T = 1 the expert kernels take the group count, k, from the launch and read a group's record
# right after the wait, one L2 round trip less on each warp's chain; same bits), and the GPU
# suite on this code (ATTN_TC_DEC bit 64 deleted after call 3).
# 1. the GPU suite; 2. the 48-layer MoE decode at depth 16, MOE_FAST 31 / 63, three rounds
# alternated; 3. ncu durations (serialized) of one eager step's gate/up and down, 31 / 63.
# Peer: none (an A/B of strata's own switch). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): +1-3 % (two launches a layer, ~0.3-0.6 us each on the chain).
# The A/B loop, the suite's lines and the ncu loop were folded into gpu_call.sh after the call
# (ab, gpu_suite, moe_ncu; the same runs).
set -u
. bench/gpu_call.sh
gpu_suite 600
grep -E "group count" /tmp/gb-logs/test_gpu_variants.out 2>/dev/null | head -4
gb_unpack
t
ab 3 moe48 STRATA_CUDA_MOE_FAST "31 63" E2E_DEPTH=16
moe_ncu "31 63" "moe_(gate|down)" 4 gpu__time_duration.sum
t
