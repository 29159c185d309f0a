#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 7; issue 20): STRATA_CUDA_MOE_FAST bit 64, third
# try: the T = 1 IQ3_XXS gate/up kernel with both steps' integer sums formed before any reduction
# (the warp's four S chains independent until the lane adds; row_dot_coop runs its two steps one
# after the other, each ending in shuffles), the weight words of both steps loaded first. Call 2's
# ncu: ~920 instructions a warp at ~24 cycles each, 1.15 eligible warps of 10.5 a scheduler: a
# warp's time is its dependent chain. Same bits. test_gpu_variants and test_gpu_moe first, then
# 48-layer MoE decode at depth 16, MOE_FAST 63 / 127 alternated, three rounds, and ncu of the first
# gate/up launches. Peer: none (A/B of strata's own switch).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): gate/up 16 -> 12-14 us serialized, MoE decode +2-5 %, unless the
# extra registers cost the launch its single wave.
# After the call its ncu loop and suite lines were folded into gpu_call.sh (moe_ncu, gpu_suite, moe_parity_runs; the same runs).
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
ab 3 "moe48" STRATA_CUDA_MOE_FAST "63 127" E2E_DEPTH=16
moe_ncu "63 127" moe_gate_up 2 gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread
t
