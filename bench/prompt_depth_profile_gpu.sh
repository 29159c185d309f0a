#!/bin/bash
# One device call (2026-12-03, 18:10 session, call 5): where a prompt of 4,096 spends its time
# (issue 17: strata's prompt of 4,096 is 0.24-0.41x llama.cpp's where its 512 is 0.59-1.09x).
# ncu (serialized) over the first and the last pass of 512 columns of the 1.5B shape's prompt of
# 4,096 (positions 0-511 and 3,584-4,095), per kernel name; then the sections of the last pass's
# attention launch. Peer: none (a diagnosis). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction: the last pass's attention > 50 % of its time (derived from call 1: ~180 of 335 ms).
set -u
. bench/gpu_call.sh
gb_unpack
M="gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread"
for n in 1 8; do
  echo "== 1b prompt pass $n of 8 (512 columns)"
  STRATA_CUDA_PROFILE=512,$n E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 100 ncu --profile-from-start off --clock-control none \
    --cache-control none --metrics $M --csv $B 1b 1 > $OUT/pp-1b-$n.csv 2>/dev/null
  python3 tools/ncu_sum.py $OUT/pp-1b-$n.csv 2>&1 | head -10; t
done
S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section ComputeWorkloadAnalysis"
STRATA_CUDA_PROFILE=512,8 E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 100 ncu --profile-from-start off --clock-control none \
  -k regex:attn -c 1 $S $B 1b 1 2>/dev/null | grep -vE "^==PROF==|^ *-+ *$" |
  grep -E "attn|Duration|Registers|Dynamic Shared|Achieved Occ|Theoretical Occ|Block Limit|Eligible|Issued Warp|Warp Cycles Per Issued|Grid Size|Memory Throughput|Compute \(SM\)|Executed Ipc|pipe|Pipe" | head -30
t
