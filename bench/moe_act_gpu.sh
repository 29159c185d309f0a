#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 5; issue 20): STRATA_CUDA_MOE_FAST bit 64, second
# form: the T = 1 IQ3_XXS gate/up kernel with every weight word of a warp's rows loaded first (call
# 4: no gain alone) AND the activation row staged once per CTA in shared memory, each block's codes
# 16-byte aligned (a part's 32 codes by two 16-byte shared loads instead of eight 4-byte global loads
# whose warp requests touch 32 sectors each: call 2's ncu put the L1 hit rate at 95 % and L1/TEX at
# 67 %, the busiest unit), held to 40 registers. Same bits. test_gpu_variants and test_gpu_moe (the
# bit's parity) first, then 48-layer MoE decode at depth 16, MOE_FAST 63 / 127 alternated, three
# rounds, and ncu of the first gate/up launches. Peer: none (A/B of strata's own switch).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): gate/up 16 -> 12-14 us serialized (L1 requests of the activation
# cut ~8x), MoE decode +2-5 %; a loss if the staging round trip and barrier lengthen the chain more.
# After the call its ncu loop and suite lines were folded into gpu_call.sh (moe_ncu, gpu_suite, moe_parity_runs; the same runs).
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
ab 3 "moe48" STRATA_CUDA_MOE_FAST "63 127" E2E_DEPTH=16
moe_ncu "63 127" moe_gate_up 3 gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread,l1tex__throughput.avg.pct_of_peak_sustained_active
t
