#!/bin/bash
# 2026-12-05 (19:31 session), call 2: why the K-quant matvec at one column sits at 53-59 % of the copy
# (issue 20's target 70 %): ncu of the default cooperative kernel (matvec_kernel<FMT, 1, 8, V>) at
# 14336 x 4096 for Q4_K, Q6_K and Q5_K, and of Q8_0's (77 % of the copy) for comparison: speed of light,
# occupancy, warp states, instruction mix, source page of Q4_K. Programs: main 65cd51c's (the branch
# wip/lut-mv tip 8b74b3a's build; the same tree). Carry .gpubin/bins.tar.xz, .gpubin/lib. Peer: none.
set -u
. bench/gpu_call.sh
gb_unpack
for fc in Q4_K:8 Q6_K:8 Q5_K:8 Q8_0:0; do
  f=${fc%:*}
  timeout 120 ncu --kernel-name-base demangled -k "regex:matvec_kernel<[^,]+, \(int\)1, \(int\)${fc#*:}," -c 1 --set full --import-source yes -o /tmp/v_$f \
    $g/bin/bench_gpu matvec shape=1 only=$f > /tmp/ncu_$f.txt 2>&1
  echo "$f ncu rc $?"; grep -E "ERR|No kernels" /tmp/ncu_$f.txt | head -3
  ncu -i /tmp/v_$f.ncu-rep --print-details all > $OUT/v_${f}_details.txt 2>&1
  [ $f = Q4_K ] && ncu -i /tmp/v_$f.ncu-rep --page source --csv --print-source sass > $OUT/v_${f}_src.csv 2>/dev/null
  grep -E "^ +(Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Warp Cycles Per Issued|Issue Slots Busy|Executed Instructions|Issued Warp) " $OUT/v_${f}_details.txt | head -12
  t
done
