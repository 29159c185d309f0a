#!/bin/bash
# Written 2026-12-05 (15:40 session) for the next session's first call (not run yet): after the
# step-order activations (WPRE bit 8) and the weights' 4-byte words (ld_run_a2), where each format's
# matmul at m 4096, k 14336, n 512 (ORD 2 X, one weight copy: L2-resident as MUL_MAT is timed) stands:
# Q4_0 / Q8_0 (0.42x / 0.40x MUL_MAT), Q6_K / IQ3_XXS (0.75x / 0.72x). Per format: duration, L1 / TEX
# and L2 throughput, shared and global wavefronts, warp cycles per issued instruction, the stall
# reasons, registers; the reports and per-SASS-line CSVs into $OUT. Peer: none (profiles).
# Carry .gpubin/bins.tar.xz, .gpubin/lib.
# Prediction: Q4_0 / Q8_0 no longer L1-bound (L1 / TEX ~60-70 %); their top stalls the barrier and
# long scoreboard (the weights' loads a step ahead); Q6_K / IQ3_XXS spend most issue slots on the
# decode (ALU), L1 ~50-60 %.
set -u
. bench/gpu_call.sh
gb_unpack
for f in Q4_0 Q8_0 Q6_K IQ3_XXS; do
  MM_BENCH_WIDTHS=1 MM_BENCH_M=4096 MM_BENCH_K=14336 MM_BENCH_COPIES=1 timeout 150 ncu -k regex:mm_kernel2 -s 2 -c 1 \
    --section WarpStateStats --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables \
    --section LaunchStats --import-source yes -o $OUT/p_$f $g/bin/test_gpu_mm bench $f > /tmp/ncu_$f.txt 2>&1
  echo "$f ncu rc $?"
  ncu -i $OUT/p_$f.ncu-rep --print-details all > $OUT/p_${f}_details.txt 2>&1
  ncu -i $OUT/p_$f.ncu-rep --page source --csv --print-source sass > $OUT/p_${f}_src.csv 2>/dev/null
  grep -E "^ +(Duration|L1/TEX Cache Throughput|L2 Cache Throughput|Warp Cycles Per Issued|Registers Per Thread|Executed Instructions) " $OUT/p_${f}_details.txt | head -8
  grep -E "wavefronts_mem_shared.sum |wavefronts_pipe_lsu_mem_global_op_ld.sum |Stall" $OUT/p_${f}_details.txt | head -12
  t
done
