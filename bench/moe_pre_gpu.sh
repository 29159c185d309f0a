#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 3; issue 20): STRATA_CUDA_MOE_FAST bit 64 (the
# T = 1 IQ3_XXS gate/up kernel with every weight word of a warp's gate and up rows loaded before the
# first is used: call 2's ncu source view showed the second step's loads issued after the first
# step's reductions, two DRAM round trips on each warp's chain; SiLU's expf table staged in shared
# memory before the wait; the down-prefetch slice's quotients in 32 bits) and bit 128 (that kernel
# held to 40 registers: 48 without it, 10 CTAs an SM, so its 1,536 CTAs take 1.2 waves; same
# bits). The GPU suite first (the final code of calls 1-2 plus these bits, default 63 for the MoE).
# Then 48-layer MoE decode at depth 16, MOE_FAST 63 / 127 / 255 alternated, three rounds; ncu of
# the first gate/up launches for each. Peer: none (A/B of strata's own switches).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): gate/up 16 -> 11-13 us serialized, MoE decode +4-8 % (one DRAM
# round trip of ~2-3 us under load off each of 48 layers' chains); bit 128 +0-3 % over 64, or a
# loss if the register cap spills.
# After the call its ncu loop and suite lines were folded into gpu_call.sh (moe_ncu, gpu_suite, moe_parity_runs; the same runs).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 280
t
ab 3 "moe48" STRATA_CUDA_MOE_FAST "63 127 255" E2E_DEPTH=16
moe_ncu "63 127 255" moe_gate_up 3 gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread
t
