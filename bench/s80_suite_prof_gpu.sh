#!/bin/bash
# Written 2026-12-06 (19:11 session): the GPU suite with STRATA_CUDA_MOE_FAST=${MOE:-49151} as every program's
# default (the winners of bench/s79_gu4_gpu.sh added to 49151), then where the T = 1 IQ3_XXS expert kernels of
# moe48 spend their time (issue 20): one eager decode step's first moe_gate_up_kernel and moe_down_kernel
# (layer 0) under ncu --set full (serialized; caches and clocks left alone): the details page (speed of light,
# warp states, instruction mix, shared-memory bank conflicts, occupancy) and the SASS source page with each
# instruction's stall samples, to $OUT for reading on the dev machine. Peer: none (strata's own launches).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
export STRATA_CUDA_MOE_FAST=${MOE:-49151}
echo "the suite with STRATA_CUDA_MOE_FAST=$STRATA_CUDA_MOE_FAST"
gpu_suite 300
t
gb_unpack
K='regex:moe_(gate_up|down)_kernel'
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 200 ncu --profile-from-start off --clock-control none --cache-control none \
  --set full --import-source no -k "$K" -c 2 -f -o /tmp/gu /tmp/gb/bin/bench_e2e moe48 1 > /tmp/ncu.log 2>&1
echo "ncu rc $?"; tail -3 /tmp/ncu.log
t
ncu -i /tmp/gu.ncu-rep --page details > "$OUT/gu_details.txt" 2>&1
grep -E "moe_|Duration|Memory Throughput|DRAM Throughput|Compute \(SM\)|Issue Slots Busy|Executed Ipc|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Bank Conflict|Executed Instructions  |No Eligible|One or More Eligible" "$OUT/gu_details.txt" | head -60
ncu -i /tmp/gu.ncu-rep --page source --print-source sass --csv > "$OUT/gu_sass.csv" 2>/tmp/src.err || { echo "source page failed"; head -3 /tmp/src.err; }
ncu -i /tmp/gu.ncu-rep --page raw --csv > "$OUT/gu_raw.csv" 2>/dev/null
cp /tmp/gu.ncu-rep "$OUT/" 2>/dev/null
ls -la "$OUT"
t
