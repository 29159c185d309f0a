#!/bin/bash
# 2026-12-05 (22:34 session): which of the 1b decode step's launches matvec_kqp_kernel (STRATA_CUDA_MV_KQ=1)
# loses on against matvec_kq1_kernel (=4); the gate/up pairs by matvec_kqs_kernel (=2: a pair's two rows
# loaded step by step together, the next paired step in flight); the MoE down launch prefetching the next
# layer's q / k / v / o weights into L2 (STRATA_CUDA_PREFETCH bit 8: 7 -> 15).
#   bash bench/s54_kqs_gpu.sh 1   parity (test_gpu_matvec: kqp also in a 3-CTA grid; test_gpu_variants:
#                                 dense models with MV_KQ 1 / 2 / 4 / 8, Q6_K pairs, 3-CTA grids, every
#                                 switch with PREFETCH 15), then bench_e2e 1b with MV_KQ 0 / 1 / 2 / 4
#                                 alternated (two rounds), moe48 with PREFETCH 7 / 15 (two rounds)
#   bash bench/s54_kqs_gpu.sh 2   one eager 1b decode step under ncu per MV_KQ setting, grouped by kernel
#                                 and grid (tools/ncu_sum.py --groups); moe48 with MV_KQ 0 / 3 / 4
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf (part 2 also .peer/lcb-cuda.tar.xz: llama-bench
# tg128 on the same 1b and moe48 files after strata's runs). Part 1: peer none (switches' A/B).
# Prediction: parity passes; 2 >= 4 on the 1b decode (1,312 in call 5 of the 19:31 session) by +0-4 %;
# the profile shows kqp's loss against kq4 in the gate/up launch (grid 1,056 against 2,048); PREFETCH 15
# +3-6 % on moe48 (q / k / v and wo read from L2).
set -u
. bench/gpu_call.sh
gb_unpack
if [ "${1:-1}" = 1 ]; then
  for p in test_gpu_matvec test_gpu_variants; do
    timeout 200 $g/bin/$p > /tmp/$p.txt 2>&1; echo "$p rc $?: $(tail -1 /tmp/$p.txt)"
    grep -E "FAIL|kq|KQ" /tmp/$p.txt | grep -v "^ok" | head -24
  done
  t
  e2e_ab 2 "1b" STRATA_CUDA_MV_KQ "0 1 2 3 4" 2
  e2e_ab 2 "moe48" STRATA_CUDA_PREFETCH "7 15" 2
  t
else
  for v in 0 1 2 3 4; do
    echo "== 1b step, STRATA_CUDA_MV_KQ=$v"
    STRATA_CUDA_MV_KQ=$v OUT=/tmp timeout 150 bash bench/step_profile_gpu.sh 1b 16 > /dev/null 2>&1
    python3 tools/ncu_sum.py --groups /tmp/step-1b-16.csv | head -30
    cp /tmp/step-1b-16.csv $OUT/step-1b-kq$v.csv
  done
  t
  e2e_ab 1 "moe48" STRATA_CUDA_MV_KQ "0 3 4" 2
  t
  if [ -f .peer/lcb-cuda.tar.xz ] && peer_up; then
    for s in 1b moe48; do
      echo -n "llama.cpp $s tg128 runs (tok/s): "
      timeout 90 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
    done
  fi
  t
fi
