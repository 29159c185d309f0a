#!/bin/bash
# One device call (2026-12-05, 05:48 session): issue 19's depth table and issue 17's prompt of
# 4,096 on the current defaults (STRATA_CANON serial, the 02:43 session's defaults: aebbcc3's
# programs, the same CUDA code as d12b90b), beside llama.cpp on the same files in the same call.
# Strata: `E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096,16384 bench_e2e SHAPE 1` with f16 and int8 caches
# (depth_peer_rows); llama.cpp `llama-bench -fa 1 -ctk T -ctv T -p 0 -n 128 -d 0,4096,16384 -r 3`.
# Then, while the call has time, the prompt of 4,096 (bench/prompt4k_peer_gpu.sh's runs).
# Carry .gpubin/bench.tar.xz (or bins.tar.xz), .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: the depth rows within 5 % of the 2026-12-04 15:43 call 5 (tree order; the serial
# flip moved decode at depth 16 by -0.5 to -2 %); d4096 >= 1.2x llama.cpp and d16384 >= 1.0x hold.
set -u
. bench/gpu_call.sh
[ -x "$B" ] || { mkdir -p $g && if [ -f .gpubin/bins.tar.xz ]; then tar xJf .gpubin/bins.tar.xz -C $g; else tar xJf .gpubin/bench.tar.xz -C $g; fi; }
D=16,4096,16384
depth_peer_rows "${SHAPES:-smollm2 1b moe48}" || exit 1
t
for s in ${P4K:-smollm2 1b moe48}; do
  [ $(( $(date +%s) - T0 )) -gt ${P4K_BUDGET:-470} ] && { echo "prompt 4096: $s skipped (time)"; continue; }
  for r in 1 2; do echo -n "strata $s r$r: "; E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 60 $B $s 1 | grep -i "prompt" | tr '\n' ' '; echo; done
  echo -n "llama.cpp $s pp4096 runs (tok/s): "
  timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 3 -o jsonl 2>/dev/null | runs_of
  t
done
