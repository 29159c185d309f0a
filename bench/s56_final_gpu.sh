#!/bin/bash
# 2026-12-05 (22:34 session), the last call: the whole GPU suite (`tools/gpu_pack.sh run`, what `make test-gpu`
# runs) on the final code with STRATA_CUDA_MV_KQ's new default 3; then the 1b decode with MV_KQ 0 / 2 / 3
# alternated (one round where the time allows: 2 ran into an illegal address in call 1, fixed), and
# llama.cpp's tg128 on the same 1b file. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf,
# .peer/lcb-cuda.tar.xz. Prediction: the suite passes (31,923 + the new dense / 3-CTA checks); 3 >= 2 >= 0.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 280
t
[ $(( $(date +%s) - T0 )) -lt 250 ] && e2e_ab 1 "1b" STRATA_CUDA_MV_KQ "0 2 3" 2
if [ $(( $(date +%s) - T0 )) -lt 290 ] && peer_up; then
  echo -n "llama.cpp 1b tg128 runs (tok/s): "
  timeout 40 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-1b.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
fi
t
