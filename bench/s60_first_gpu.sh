#!/bin/bash
# 2026-12-06 (03:33 session), call 1: the whole GPU suite on the final code of the 01:00 session
# (6f59fec's programs: MV_KQI opt-in, MOE_KQ deleted), then ncu's details of one eager decode step's
# MoE gate/up and down launches (48-layer MoE, IQ3_XXS experts; serialized): scheduler, warp states,
# the L1 / shared memory tables (wavefronts, bank conflicts) and the top stall lines, to see what
# bounds them; then s58's 1b_iq3 MV_KQI 0 / 8 with llama.cpp beside it.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite 32,666 passed; the gate/up's L1/shared wavefronts (the grid and sign lookups'
# bank conflicts plus the 4-byte activation loads) near the top of its limits (L1/TEX > 60 %).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
  --kernel-name regex:"moe_gate_up|moe_down" --launch-count 2 --import-source no \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats \
  --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters \
  --page details $B moe48 1 > $OUT/ncu_moe.txt 2>&1
echo "ncu rc $? lines $(wc -l < $OUT/ncu_moe.txt)"
grep -E "Duration|L1/TEX Hit|Mem Busy|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|Bank|Wavefronts|Executed Instructions  " $OUT/ncu_moe.txt | head -40
t
e2e_ab 2 "1b_iq3" STRATA_CUDA_MV_KQI "0 8" 2
t
if [ $(( $(date +%s) - T0 )) -lt 420 ] && peer_up; then
  echo -n "llama.cpp 1b_iq3 tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-1b_iq3.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
fi
t
