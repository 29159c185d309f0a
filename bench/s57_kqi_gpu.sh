#!/bin/bash
# 2026-12-06 (01:00 session): the kq steps for IQ2_XXS / IQ3_XXS (issue 20): the dense one-column
# matvec (STRATA_CUDA_MV_KQI) and the MoE's one-column gate/up (STRATA_CUDA_MOE_KQ, moe_gate_up_kq_kernel),
# both opt-in, same bits; the kq kernels' prologues folded into kq_row.cuh helpers (the review's D1).
# One call: the whole GPU suite first (what `make test-gpu` runs: the new configurations' parity is in
# test_gpu_matvec, test_gpu_variants and test_gpu_moe), then
#   bench_gpu matvec at 14336 x 4096 and 151936 x 2048 (copies rotated beyond L2): IQ3_XXS / IQ2_XXS / IQ2_XS / IQ3_S coop8 /
#     kq8 / kqp, Q4_K for reference;
#   the gate/up and down launches of one eager moe48 decode step under ncu, MOE_KQ 0 / 1 / 2 (the grouped expert matvec);
#   bench_e2e decode (prompt 512 + 128 steps), MOE_KQ 0 / 1 / 2 (one wave / a pair a warp) alternated, two rounds: moe48 (IQ3_XXS experts)
#     and moe48_iq2 (IQ2_XXS experts); the 1b shape once (the folded kqp / kqs under MV_KQ's default 3);
#   with the carried llama.cpp: llama-bench tg128 on the same moe48 / moe48_iq2 files and test-backend-ops
#     perf MUL_MAT_ID (the grouped expert matvec's peer row).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: the suite passes; IQ3_XXS kqp at 14336 x 4096 from ~26 % of the copy to 40-50 %; the MoE gate/up
# launch 16 -> 10-12 us under ncu; moe48 decode +4-8 % with MOE_KQ=1.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 230
t
for s in 1 2; do
  timeout 100 $g/bin/bench_gpu matvec shape=$s only=IQ3_XXS,IQ2_XXS,IQ2_XS,IQ3_S,Q4_K 2>&1 | grep -E "copy|IQ|Q4_K" | grep -v "lane\|  8 "
done
t
e2e_ab 2 "moe48" STRATA_CUDA_MOE_KQ "0 1 2" 2
t
left() { [ $(( $(date +%s) - T0 )) -lt "$1" ]; }
PEER=0; left 400 && peer_up && PEER=1
if [ $PEER = 1 ]; then
  echo -n "llama.cpp moe48 tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-moe48.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  t
fi
for v in 0 1 2; do
  left 470 && echo "moe48 MOE_KQ=$v gate/up and down launches (us): $(STRATA_CUDA_MOE_KQ=$v STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 60 ncu \
      --profile-from-start off --clock-control none --kernel-name regex:'moe_(gate_up|down)' --launch-count 8 \
      --metrics gpu__time_duration.sum --csv $B moe48 1 2>/dev/null | grep gpu__time | awk -F'","' '{n = $5; sub(/[<(].*/, "", n); v = $NF; u = $(NF - 1); gsub(/"/, "", v); printf "%s %s %s, ", n, v, u}')"
done
t
if [ $PEER = 1 ] && left 480; then
  echo "llama.cpp MUL_MAT_ID (n_mats 128, n_used 8, m 768, k 2048, n 1):"
  timeout 60 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT_ID -b CUDA0 2>/dev/null | grep -E "n_mats=128,n_used=8" | grep -E "m=768,n=1,k=2048" | head -12
  t
fi
left 500 && e2e_ab 1 "moe48_iq2" STRATA_CUDA_MOE_KQ "0 1" 2
if [ $PEER = 1 ] && left 540; then
  echo -n "llama.cpp moe48_iq2 tg128 runs (tok/s): "
  timeout 50 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-moe48_iq2.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
fi
left 560 && echo "1b (defaults): $(timeout 40 $B 1b 2 2>&1 | grep -iE 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"
t
