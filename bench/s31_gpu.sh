#!/bin/bash
# 2026-12-05 (13:54 session), the second call: where the instructions and the stalls are, by SASS line
# (ncu's source page), for the two places the issues point at; then the instrument's MoE launches
# (bit 64, q / k / v, never run before); then, on an H200 only, issue 17's prompt rows beside llama.cpp.
# 1. `moe_router_cta_kernel` (issue 20: 6.4 us of the ~57 us MoE layer in the graph step), one eager
#    decode step of the 48-layer MoE: WarpStateStats (stall reasons), SourceCounters, per SASS line.
# 2. `mm_kernel2` ORD 3, Q4_K, m 16384 k 2048 n 512 (issue 17; the 1.5B's gate/up; one weight copy):
#    the same (call 1 found 37 warp instructions an MMA, IPC 2.2 of 4, 1.03 eligible warps a scheduler).
# 3. STRATA_CUDA_TWICE 0 / 1 / 2 / 8 / 16 / 32 / 64 on the MoE at depth 16, one round.
# 4. H200 only: prompt 512 / decode 128 of the three shapes beside llama.cpp (pp_peer_rows).
# Peer: none for 1-3 (diagnosis, strata's own instrument). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: the router's stalls mostly at the barrier / the arrival and the last CTA's routing
# (long scoreboard on the logits it reads back), not the product loads; the matmul's top stall lines
# in the loaders' decode and the S accumulation (math pipe / dependency), not ldmatrix.
set -u
. bench/gpu_call.sh
gb_unpack
card=$(nvidia-smi --query-gpu=name --format=csv,noheader)
src_page() {   # report -> the per-SASS-line CSV and the sections' bodies (stall reasons)
  ncu -i "$1.ncu-rep" --page source --csv --print-source sass > "$1_src.csv" 2> "$1_src.err"; echo "$1 source page rc $? $(wc -l < "$1_src.csv") lines"
  ncu -i "$1.ncu-rep" --print-details all > "$1_details.txt" 2>&1; echo "$1 details rc $?"
  grep -iE "stall|Warp Cycles Per|Eligible|Duration|Issued Ipc|Executed Ipc" "$1_details.txt" | head -40
}
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
  --kernel-name regex:moe_router_cta --launch-count 4 --section WarpStateStats --section SourceCounters \
  --section SpeedOfLight --section LaunchStats --import-source yes -o $OUT/router $B moe48 1 > /tmp/ncu_r.txt 2>&1
echo "router ncu rc $?: $(grep -c '==PROF==' /tmp/ncu_r.txt) prof lines"; tail -2 /tmp/ncu_r.txt
src_page $OUT/router
t
MM_BENCH_WIDTHS=1 MM_BENCH_M=16384 MM_BENCH_K=2048 MM_BENCH_COPIES=1 timeout 150 ncu -k regex:mm_kernel2 -s 2 -c 1 \
  --section WarpStateStats --section SourceCounters --section SpeedOfLight --import-source yes -o $OUT/mm \
  $g/bin/test_gpu_mm bench Q4_K > /tmp/ncu_m.txt 2>&1
echo "mm ncu rc $?"; tail -2 /tmp/ncu_m.txt
src_page $OUT/mm
t
abn 1 moe48 "STRATA_CUDA_TWICE=0 STRATA_CUDA_TWICE=1 STRATA_CUDA_TWICE=2 STRATA_CUDA_TWICE=8 STRATA_CUDA_TWICE=16 STRATA_CUDA_TWICE=32 STRATA_CUDA_TWICE=64" E2E_DEPTH=16
t
case "$card" in *H200*) pp_peer_rows "1b moe48 smollm2" ;; *) echo "card $card: no peer rows (the H100's are the 11:30 session's)" ;; esac
t
