#!/bin/bash
# One device call (2026-12-03, 18:10 session, call 1): measure before changing.
#  1. issue 17's prompts of 4,096 beside llama-bench -p 4096 (bench/prompt4k_peer_gpu.sh, its
#     first run).
#  2. issue 19: the decode step's attention at depth 4,096 per launch (ncu, serialized), f16 and
#     int8 KV, SmolLM2 and MoE shapes, with the warp-state and scheduler sections of one launch:
#     where a chunk's time goes (the int8 chunk path has no 16-byte-piece kernel yet).
#  3. issue 20: the MoE router launch's sections at depth 16.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: pp4096 ratios below the pp512 ones (1.09 / 0.64 / 0.59); MoE int8 attention at 4,096
# slower than its f16 per launch (decode 239 vs 279 tok/s in call 3 of 15:42).
set -u
. bench/gpu_call.sh
gb_unpack
timeout 260 bash bench/prompt4k_peer_gpu.sh 2>&1 | grep -v "^NVIDIA"; t
S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight"
for cfg in "smollm2 f16" "moe48 f16" "moe48 int8"; do
  set -- $cfg; s=$1; kv=$2
  echo "== step at 4096: $s $kv"
  E2E_KV=$kv timeout 120 bash bench/step_profile_gpu.sh $s 4096 > /tmp/rows-$s-$kv.txt 2>&1
  grep -E "attn|moe_router" /tmp/rows-$s-$kv.txt | head -4
  python3 tools/ncu_sum.py "$OUT/step-$s-4096.csv" 2>&1 | head -14
  mv "$OUT/step-$s-4096.csv" "$OUT/step-$s-$kv-4096.csv" 2>/dev/null
  echo "== attention sections: $s $kv"
  E2E_KV=$kv STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,30 E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 90 ncu --profile-from-start off \
    --clock-control none -k regex:^attn_kernel -s 2 -c 1 $S $B $s 1 2>/dev/null | grep -vE "^==PROF==|^ *-+ *$" |
    grep -E "attn_kernel|Duration|Registers|Shared Memory Config|Dynamic Shared|Achieved Occ|Theoretical Occ|Block Limit|Eligible|Issued Warp|No Eligible|Warp Cycles Per Issued|Grid Size|Threads|Memory Throughput|DRAM Through|Compute \(SM\)" | head -30
  t
done
echo "== router sections: moe48 depth 16"
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 90 ncu --profile-from-start off --clock-control none -k regex:moe_router -c 1 \
  $S --section SourceCounters $B moe48 1 2>/dev/null | grep -vE "^==PROF==" | grep -E "moe_router|Duration|Registers|Achieved Occ|Eligible|Issued Warp|Warp Cycles Per Issued|Grid Size|Memory Throughput|stall|Stall" | head -30
t
