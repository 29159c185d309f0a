#!/bin/bash
# 2026-12-05 (19:31 session), call 3: matvec_kq1_kernel (STRATA_CUDA_MV_KQ, written after call 2's ncu:
# 198 warp instructions a step of 4 blocks in the cooperative Q4_K kernel, each step's loads after the step
# before, long scoreboard the top stall) against the cooperative kernel, same program. Parity first
# (test_gpu_matvec: every configuration against the CPU reference, T = 1..8, both canonical orders), then
# bench_gpu matvec (coop8 / kq4 / kq8 rows; weights rotated beyond L2) at 14336 x 4096, 4096 x 4096 and
# 151936 x 2048, two rounds; then bench_e2e decode of the 1b and moe48 shapes with the switch 0 / 4 / 8
# alternated (ids hash equal expected). Carry .gpubin/bins.tar.xz, .gpubin/lib. Peer: none (A/B of a switch).
# Prediction: kq4 Q4_K 14336 x 4096 20.7 -> 15-17 us (53 % -> 65-72 % of the copy); 1b decode +3-8 %.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_matvec test_gpu_e2e test_gpu_widths; do echo "$p: $(timeout 200 $g/bin/$p 2>&1 | tail -1)"; done
t
for r in 1 2; do
  for s in 1 0 2; do
    timeout 90 $g/bin/bench_gpu matvec shape=$s only=Q4_K,Q5_K 2>&1 | grep -E "copy|Q4_K|Q5_K" | grep -v "lane\|  8 "
  done
  t
done
e2e_ab 2 "1b" STRATA_CUDA_MV_KQ "0 4 8" 2
e2e_ab 1 "moe48" STRATA_CUDA_MV_KQ "0 4 8" 2
t
