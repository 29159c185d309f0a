#!/bin/bash
# 2026-12-05 (15:40 session): why the 32-value formats' serial matmul is 0.38x MUL_MAT (issue 17).
# Derived from the measured TFLOPS (not measured themselves): at m 4096 k 14336 n 512 a CTA step of
# Q4_0's X instance (64 x 64 outputs, 4 blocks) takes ~3.4 us, Q4_K's (one super-block: twice the MMAs)
# ~3.75 us: the step's time hardly depends on its math. ncu on both kernels (one weight copy,
# L2-resident as MUL_MAT is timed): SpeedOfLight, MemoryWorkloadAnalysis (L1 / L2 sectors per request),
# WarpStateStats, SourceCounters (per SASS line), Occupancy. Peer: none (a profile).
# Prediction: Q4_0's top stalls are long scoreboard on fetch_w's global loads (the weights arrive in
# registers one step ahead, 18-byte pieces 576 bytes apart) and the barrier; L2 -> SM sectors per
# request well above Q4_K's.
set -u
. bench/gpu_call.sh
gb_unpack
src_page() {
  ncu -i "$1.ncu-rep" --page source --csv --print-source sass > "$1_src.csv" 2> "$1_src.err"; echo "$1 source rc $? $(wc -l < "$1_src.csv") lines"
  ncu -i "$1.ncu-rep" --print-details all > "$1_details.txt" 2>&1; echo "$1 details rc $?"
  grep -iE "stall|Warp Cycles Per|Eligible|Duration|Issued Ipc|L2 Hit|Sectors|Throughput|Registers|Achieved Occ|Mem Pipes|Executed Inst" "$1_details.txt" | head -60
}
for f in Q4_0 Q4_K; do
  MM_BENCH_WIDTHS=1 MM_BENCH_M=4096 MM_BENCH_K=14336 MM_BENCH_COPIES=1 timeout 200 ncu -k regex:mm_kernel2 -s 2 -c 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section InstructionStats \
    --import-source yes -o $OUT/mm_$f $g/bin/test_gpu_mm bench $f > /tmp/ncu_$f.txt 2>&1
  echo "$f ncu rc $?"; tail -3 /tmp/ncu_$f.txt
  src_page $OUT/mm_$f
  t
done
