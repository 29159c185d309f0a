#!/bin/bash
# 2026-12-05 (19:31 session), call 4: matvec_kqp_kernel (STRATA_CUDA_MV_KQ=1: one wave of CTAs, a warp over
# several rows, the next step's weights loaded before the current step is computed, the activation row
# copied once a CTA) beside kq1 (=4) and the cooperative kernel (=0), same program. Call 3 found kq4 +14 %
# at 14336 x 4096 but -19 % at 151936 x 2048 (nb 8: the activation copy of every 4-row CTA), and the 1b's
# decode +9 %. Parity first: test_gpu_matvec's closing line and any failure lines (call 3's tail lost it);
# test_gpu_variants (STRATA_CUDA_MV_KQ=1 among "every switch"; dense llama models with Q4_K / Q5_K gate/up
# pairs and a Q6_K head under 1, 4 and 8 against the CPU, added after call 3).
# Carry .gpubin/bins.tar.xz, .gpubin/lib. Peer: none (A/B of a switch).
# Also Q6_K by kqp (its first run; the 1b head is Q6_K). Prediction: kqp at 151936 x 2048 back to >= coop8 (85 us), at 14336 x 4096 <= kq4's 18.2 us; 1b decode
# >= kq4's 1,273-1,279.
set -u
. bench/gpu_call.sh
gb_unpack
timeout 200 $g/bin/test_gpu_matvec > /tmp/mv.txt 2>&1; echo "test_gpu_matvec rc $?: $(tail -1 /tmp/mv.txt)"
grep -iE "fail|differ" /tmp/mv.txt | head -5
timeout 300 $g/bin/test_gpu_variants > /tmp/var.txt 2>&1; echo "test_gpu_variants rc $?: $(tail -1 /tmp/var.txt)"
grep -E "STRATA_CUDA_MV_KQ|FAIL" /tmp/var.txt | head -8
for p in test_gpu_e2e test_gpu_widths; do echo "$p: $(timeout 200 $g/bin/$p 2>&1 | tail -1)"; done
t
for r in 1 2; do
  for s in 1 0 2; do
    timeout 90 $g/bin/bench_gpu matvec shape=$s only=Q4_K,Q5_K,Q6_K 2>&1 | grep -E "Q4_K|Q5_K|Q6_K" | grep -v "lane\|  8 "
  done
  t
done
e2e_ab 2 "1b" STRATA_CUDA_MV_KQ "0 4 1" 2
e2e_ab 1 "moe48" STRATA_CUDA_MV_KQ "0 4 1" 2
t
