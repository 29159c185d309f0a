#!/bin/bash
# 2026-12-05 (22:34 session): s54's measurements in one call (device time was short after refusals):
# parity of the new kernels / switches (test_gpu_matvec, test_gpu_variants; test_gpu_e2e, test_gpu_widths and
# test_gpu_moe with MV_KQ=3 and PREFETCH=15 exported), the 1b decode with
# STRATA_CUDA_MV_KQ 0 / 2 / 3 / 4 alternated (two rounds), the 48-layer MoE with STRATA_CUDA_PREFETCH 7 / 15
# and MV_KQ 0 / 3 (two rounds), then llama.cpp's tg128 on the same two files (llama-bench, the carried
# build). Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: parity passes; MV_KQ 2 or 3 >= 4 on the 1b (+0-4 %); PREFETCH 15 +3-6 % on the MoE.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_matvec test_gpu_variants; do
  timeout 200 $g/bin/$p > /tmp/$p.txt 2>&1; echo "$p rc $?: $(tail -1 /tmp/$p.txt)"
  grep -E "FAIL|KQ" /tmp/$p.txt | grep -v "^ok" | head -30
done
t
# the candidate defaults exported: the programs whose backends take them from the environment
for p in test_gpu_e2e test_gpu_widths test_gpu_moe; do
  STRATA_CUDA_MV_KQ=3 STRATA_CUDA_PREFETCH=15 timeout 120 $g/bin/$p > /tmp/$p.txt 2>&1
  echo "$p (MV_KQ=3, PREFETCH=15) rc $?: $(tail -1 /tmp/$p.txt)"; grep -E "FAIL" /tmp/$p.txt | head -5
done
t
e2e_ab 2 "1b" STRATA_CUDA_MV_KQ "0 2 3 4" 2
[ $(( $(date +%s) - T0 )) -lt 330 ] && R=2 || R=1
alt_runs $R "moe48" "STRATA_CUDA_PREFETCH=7,STRATA_CUDA_MV_KQ=0 STRATA_CUDA_PREFETCH=15,STRATA_CUDA_MV_KQ=0 STRATA_CUDA_PREFETCH=15,STRATA_CUDA_MV_KQ=3" 2 'prompt|batch'
if [ $(( $(date +%s) - T0 )) -lt 520 ] && [ -f .peer/lcb-cuda.tar.xz ] && peer_up; then
  for s in 1b moe48; do
    echo -n "llama.cpp $s tg128 runs (tok/s): "
    timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  done
fi
t
