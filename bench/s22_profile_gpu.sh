#!/bin/bash
# One device call (2026-12-04 21:10 session, call 1): measure first, on main's a245bd5 programs.
# Issue 17: (1) the GPU's clocks and power while the 1.5B prompt of 512 runs (is the wall's ~1.4 ms
# above the serialized kernel sum a clock drop?); (2) `ncu --set full` of the four matmul launches
# of layer 0 of the 1.5B prompt pass (q/k/v, wo, gate/up, down: stall reasons, L1 wavefronts,
# tensor-pipe use); (3) the MoE prompt pass per kernel name (the routing launches, the head norms).
# Peer: none (a diagnosis). Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): the serial matmul's step (~6 us, 2 CTAs an SM) is bound by the
# LSU / L1 wavefronts of its activation copies (4-byte cp.async 64 bytes apart per column: 32
# sectors a warp's copy), not by the tensor pipe (< 15 % busy).
set -u
. bench/gpu_call.sh
gb_unpack
t
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 20 > $OUT/clk.txt &
SMI=$!
sleep 0.5
$B 1b 6
kill $SMI
echo "clocks during bench_e2e 1b (sm MHz histogram; power W min/max)"
awk -F', ' '{c[$1]++; if(!mn||$3<mn)mn=$3; if($3>mx)mx=$3} END{for(k in c) print k, c[k]; print "power", mn, mx}' $OUT/clk.txt | sort -n | tail -12
t
STRATA_CUDA_PROFILE=512,1 E2E_SKIP_MAIN=1 E2E_DEPTH=512 timeout 240 ncu --profile-from-start off --set full \
  -k regex:mm_kernel2 --launch-count 4 $B 1b 1 > $OUT/ncu-full-1b.txt 2>&1
echo "ncu rc $?"
grep -E "mm_kernel2|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc A|L1/TEX Hit|Mem Busy|Max Bandwidth|DRAM Throughput|Compute \(SM\) Th|Memory Throughput|Block Limit|Stall|stall|Warp Cycles Per Issued|No Eligible|One or More|Active Warps Per" $OUT/ncu-full-1b.txt | head -150
t
prompt_kernel_sum moe48 30
t
