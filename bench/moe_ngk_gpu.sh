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
# The A/B loop was folded into gpu_call.sh's ab after the call (the same runs).
set -u
. bench/gpu_call.sh
bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
grep -E "passed|FAIL" /tmp/suite.txt | tail -18
grep -E "group count" /tmp/gb-logs/test_gpu_variants.out 2>/dev/null | head -4
gb_unpack
t
ab 3 moe48 STRATA_CUDA_MOE_FAST "31 63" E2E_DEPTH=16
for f in 31 63; do
  STRATA_CUDA_MOE_FAST=$f STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
    --kernel-name regex:"moe_(gate|down)" --launch-count 4 --metrics gpu__time_duration.sum --csv $B moe48 1 > /tmp/ncu$f.txt 2>&1
  echo "ncu MOE_FAST=$f: $(grep -E 'moe_' /tmp/ncu$f.txt | awk -F'","' '{split($5, a, "("); split(a[1], b, "<"); printf "%s %s ns | ", b[1], $NF}' | sed 's/"//g')"
done
t
