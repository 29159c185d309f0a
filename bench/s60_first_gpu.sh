#!/bin/bash
# 2026-12-06 (03:33 session), call 1: the whole GPU suite (the new STRATA_CUDA_MOE_FAST bit 256, the
# ffn norm inside the router launch, is in test_gpu_variants and in its "every switch" mode), then
# the 48-layer MoE decode with MOE_FAST 255 (default) / 511 (+ the norm in the router) alternated,
# three rounds, llama.cpp tg128 beside it; then ncu's details of one eager decode step's MoE gate/up
# and down launches (scheduler, warp states, L1 / shared wavefronts and bank conflicts, top stall
# lines), then 1b_iq3 with MV_KQI 0 / 8.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes (the 01:00 session's 32,666 + the new parity checks); 511 +2-3 % over
# 255 (the norm launch's ~2.4-2.8 us in the step less ~0.5-1 us added to the router's chain); the
# gate/up's L1/TEX (shared + global wavefronts) > 60 % of its limit.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
e2e_ab 3 "moe48" STRATA_CUDA_MOE_FAST "255 511" 1
t
if [ $(( $(date +%s) - T0 )) -lt 360 ] && peer_up; then
  echo -n "llama.cpp moe48 tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-moe48.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
fi
t
if [ $(( $(date +%s) - T0 )) -lt 420 ]; then
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 100 ncu --profile-from-start off --clock-control none \
  --kernel-name regex:"moe_gate_up|moe_down" --launch-count 2 --import-source no \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section SchedulerStats --section WarpStateStats \
  --section Occupancy --section LaunchStats --section InstructionStats --section SourceCounters \
  --page details $B moe48 1 > $OUT/ncu_moe.txt 2>&1
echo "ncu rc $? lines $(wc -l < $OUT/ncu_moe.txt)"
grep -E "Duration|L1/TEX Hit|Mem Busy|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|Bank|Wavefronts|Executed Instructions  " $OUT/ncu_moe.txt | head -40
t
fi
if [ $(( $(date +%s) - T0 )) -lt 470 ]; then
  e2e_ab 1 "1b_iq3" STRATA_CUDA_MV_KQI "0 8" 2
  t
fi
