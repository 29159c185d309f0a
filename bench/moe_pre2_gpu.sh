#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 4; issue 20): STRATA_CUDA_MOE_FAST bit 64 (the
# T = 1 IQ3_XXS gate/up kernel with every weight word of a warp's gate and up rows loaded before the
# first is used: call 2's ncu source view showed the second step's loads issued after the first
# step's reductions, two DRAM round trips on each warp's chain; SiLU's expf table staged in shared
# memory before the wait; the down-prefetch slice's quotients in 32 bits) and bit 128 (that kernel
# held to 40 registers: 48 without it, 10 CTAs an SM, so its 1,536 CTAs take 1.2 waves; same
# bits). The GPU suite first (the final code of calls 1-2 plus these bits, default 63 for the MoE).
# Then 48-layer MoE decode at depth 16, MOE_FAST 63 / 127 / 255 alternated, three rounds; ncu of
# the first gate/up launches for each. Peer: none (A/B of strata's own switches).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Call 3 ran this with a first form whose launch bounds (an explicit minimum of one CTA an SM on every
# instance) raised the default instance from 37 registers to 80 and bit 64's from 48 to 72 (ncu); here
# only the bit-128 instance has them (moe_gate_up_kernel_1w), the others 37 / 48 as ptxas chose.
# Prediction (before call 3): gate/up 16 -> 11-13 us serialized, MoE decode +4-8 % (one DRAM
# round trip of ~2-3 us under load off each of 48 layers' chains); bit 128 +0-3 % over 64, or a
# loss if the register cap spills.
set -u
. bench/gpu_call.sh
gb_unpack
timeout 280 bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
grep -E "passed|FAIL" /tmp/suite.txt | tail -18
t
ab 3 "moe48" STRATA_CUDA_MOE_FAST "63 127 255" E2E_DEPTH=16
for v in 63 127 255; do
  STRATA_CUDA_MOE_FAST=$v STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 100 ncu --profile-from-start off --clock-control none \
    --kernel-name regex:moe_gate_up --launch-count 3 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread \
    --csv $B moe48 1 2>/dev/null | grep -E 'gpu__time|inst_exec|registers' | awk -F'","' -v v=$v '{print "MOE_FAST=" v, $(NF-2), $NF}'
done
t
