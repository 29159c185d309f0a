#!/bin/bash
# 2026-12-05 (17:38 session), call 8: the per-SASS-line profiles call 2 could not bring back (its files past
# the count limit): Q6_K and Q8_0, and MXFP4 (0.34x MUL_MAT, the lowest), at m 4096, k 14336, n 512 (ORD 2
# X, one weight copy), on c34b66e's programs: details + source CSV only (no .ncu-rep). Carry
# .gpubin/bins.tar.xz, .gpubin/lib. Peer: none (profiles).
set -u
. bench/gpu_call.sh
gb_unpack
for f in Q6_K Q8_0 MXFP4; do
  MM_BENCH_WIDTHS=1 MM_BENCH_M=4096 MM_BENCH_K=14336 MM_BENCH_COPIES=1 timeout 120 ncu -k regex:mm_kernel2 -s 2 -c 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --import-source yes -o /tmp/p_$f $g/bin/test_gpu_mm bench $f > /tmp/ncu_$f.txt 2>&1
  echo "$f ncu rc $?"
  ncu -i /tmp/p_$f.ncu-rep --print-details all > $OUT/p_${f}_details.txt 2>&1
  ncu -i /tmp/p_$f.ncu-rep --page source --csv --print-source sass > $OUT/p_${f}_src.csv 2>/dev/null
  grep -E "^ +(Duration|L1/TEX Cache Throughput|Warp Cycles Per Issued|Executed Instructions) " $OUT/p_${f}_details.txt | head -4
  t
done
