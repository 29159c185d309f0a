#!/bin/bash
# 2026-12-06 (03:33 session), call 2: the whole GPU suite on the new defaults (STRATA_CUDA_MOE_FAST
# 511: the ffn norm in the router launch; STRATA_CUDA_MV_KQI 3) with the opt-in bit 512 (the IQ
# signs by ALU) in test_gpu_variants; then the MoE decode, MOE_FAST 511 / 1023 alternated (moe48:
# IQ3_XXS experts, 3 rounds; moe48_iq2: 2 rounds) with llama.cpp tg128 on both files; 1b_iq3 with
# MV_KQI 3 / 0 and llama.cpp; the grouped expert kernels per format under ncu (one eager decode of
# a 4-layer file per format, launch durations, caches not flushed) beside llama.cpp's
# test-backend-ops MUL_MAT_ID (128 experts, 8 used, m 768, k 2048, n 1).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; 1023 within +-1 % of 511 (the signs move from the MIO pipe to the
# ALUs: fewer shared wavefronts, more instructions); moe48 511 at 378-379 as call 1.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
e2e_ab 3 "moe48" STRATA_CUDA_MOE_FAST "511 1023" 1
t
e2e_ab 2 "moe48_iq2" STRATA_CUDA_MOE_FAST "511 1023" 1
t
PEER=0; peer_up && PEER=1
for s in moe48 moe48_iq2; do
  [ $PEER = 1 ] || break
  echo -n "llama.cpp $s tg128 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
done
t
if [ $(( $(date +%s) - T0 )) -lt 330 ]; then
  e2e_ab 1 "1b_iq3" STRATA_CUDA_MV_KQI "3 0" 1
  [ $PEER = 1 ] && { echo -n "llama.cpp 1b_iq3 tg128 runs (tok/s): "; timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-1b_iq3.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo; }
  t
fi
if [ $(( $(date +%s) - T0 )) -lt 400 ] && [ $PEER = 1 ]; then
  echo "llama.cpp test-backend-ops MUL_MAT_ID (128 experts, 8 used, m 768, k 2048, n 1):"
  timeout 90 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT_ID -b CUDA0 2>&1 | grep -E "n_mats=128,n_used=8" | grep -E "m=768,n=1,k=2048" | head -24
  t
fi
for F in Q4_0 Q8_0 Q4_K Q6_K IQ2_XS IQ4_XS IQ3_XXS IQ2_XXS Q2_0; do
  [ $(( $(date +%s) - T0 )) -lt 500 ] || break
  echo "strata $F experts, the grouped launches (us):"
  STRATA_CUDA_GRAPH=0 timeout 40 ncu --clock-control none --cache-control none --kernel-name regex:"moe_gate_up|moe_down" \
    --launch-skip 40 --launch-count 6 --metrics gpu__time_duration.sum --csv $g/bin/bench_gpu moe layers=4 experts=$F 2>/dev/null \
    | grep gpu__time | awk -F'","' '{split($5, a, "("); print a[1], $NF}' | tr -d '"' | tr '\n' ';'; echo
done
t
