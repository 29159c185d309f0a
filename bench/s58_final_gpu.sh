#!/bin/bash
# 2026-12-06 (01:00 session), call 2: the whole GPU suite on the final code (STRATA_CUDA_MOE_KQ deleted after
# call 1 measured it slower; MV_KQI opt-in), then a second round of the IQ formats' one-column matvec
# (coop8 / kq8 / kqp at 14336 x 4096 and 151936 x 2048), then the 1.5B shape with IQ3_XXS layers
# (bench_e2e 1b_iq3) with STRATA_CUDA_MV_KQI 0 / 8 alternated, two rounds, and llama.cpp's tg128 on the
# same file. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: the suite passes (call 1's 32,800 less test_gpu_moe's MOE_KQ checks: 32,666); the matvec rows
# within 3 % of call 1's; 1b_iq3 decode +3-6 % with 8 (its q / k / v / o, gate/up and down rows IQ3_XXS).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
e2e_ab 2 "1b_iq3" STRATA_CUDA_MV_KQI "0 8" 2
t
if [ $(( $(date +%s) - T0 )) -lt 300 ] && peer_up; then
  echo -n "llama.cpp 1b_iq3 tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-1b_iq3.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
fi
t
[ $(( $(date +%s) - T0 )) -lt 280 ] && {
for s in 1 2; do
  timeout 100 $g/bin/bench_gpu matvec shape=$s only=IQ3_XXS,IQ2_XXS,IQ2_XS,IQ3_S 2>&1 | grep -E "copy|IQ" | grep -v "lane\|  8 "
done
t
}
