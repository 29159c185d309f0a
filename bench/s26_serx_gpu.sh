#!/bin/bash
# 2026-12-05 (08:37 session), after call 3 found STRATA_CUDA_MM_SERX=2 (ORD 2's X instances) slower on
# SmolLM2's prompt (-1 to -10 %; its FFN down: 576 rows of 48 blocks) while the k = 14336 microbenchmark
# gained 15-21 % (448 blocks). Where the X instances start to pay, by row length: test_gpu_mm (parity,
# with the new SERX 4: ORD 2 X on rows of >= 4096 values), then `test_gpu_mm bench` n = 512 at
# (m, k) = (576, 1536), (2048, 4096), (4096, 4096), (2048, 8192), (1024, 14336), (4096, 14336) with SERX 0 / 2
# alternated, two rounds (shapes below 60 MB of weights are L2-resident with 4 copies: compare the
# two settings, not the shapes), Q4_1 (SmolLM2's), Q4_0, Q4_K; then bench_e2e prompt 512 with SERX 0
# and 4 on smollm2 and 1b. Carry .gpubin/bins.tar.xz, .gpubin/lib.
# Prediction: X slower at k 1536 (as the end-to-end), even to +10 % at k 4096, faster at 8192 and 14336.
set -u
. bench/gpu_call.sh
gb_unpack
timeout 120 $g/bin/test_gpu_mm > /tmp/mm.txt 2>&1; rc=$?
echo "test_gpu_mm rc $rc: $(tail -1 /tmp/mm.txt)"; [ $rc = 0 ] || { grep -E "FAIL|differ" /tmp/mm.txt | head -8; exit 1; }
t
export MM_BENCH_WIDTHS=1
for mk in 576,1536 2048,4096 4096,4096 2048,8192 1024,14336 4096,14336; do
  m=${mk%,*}; k=${mk#*,}
  for r in 1 2; do
    for x in 0 2; do
      echo -n "m=$m k=$k r$r SERX $x: "
      MM_BENCH_M=$m MM_BENCH_K=$k STRATA_CUDA_MM_SERX=$x timeout 60 $g/bin/test_gpu_mm bench Q4_1,Q4_0,Q4_K 2>&1 |
        grep "default" | sed 's/.*mm \([A-Z0-9_]*\) .*PIPE -1) *\([0-9.]*\).*checksum \([0-9a-f]*\).*/\1 \2 \3/' | tr '\n' ' '; echo
    done
  done
  t
done
alt_runs 2 "smollm2 1b" "STRATA_CUDA_MM_SERX=0 STRATA_CUDA_MM_SERX=4" 2 'prompt'
