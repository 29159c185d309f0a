#!/bin/bash
# The 2026-12-05 02:43 session's second device call: the 21:10 session's opt-in prompt switches
# (STRATA_CUDA_MM_WPRE=7, MM_ONEB=1, MOE_FAST=255, NORM_WARP=1; the first call, bench/s22_ab_gpu.sh 1,
# ran the GPU suite over them and the 1.5B / SmolLM2 A/B) on the MoE, and all three shapes beside
# llama.cpp in the same call: per shape two rounds of `bench_e2e SHAPE 2` (prompt 512, decode 128)
# with the default and with the switches, alternated, then llama-bench -fa 1 pp512 + tg128 (-r 3,
# runs one by one) on the same file.
# Carry .gpubin/bench.tar.xz (or bins.tar.xz), .gpubin/lib, .peer/smollm2-vocab.gguf,
# .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
[ -x "$B" ] || { mkdir -p $g && if [ -f .gpubin/bins.tar.xz ]; then tar xJf .gpubin/bins.tar.xz -C $g; else tar xJf .gpubin/bench.tar.xz -C $g; fi; }
P=0; peer_up && P=1; echo "peer: $P"
ON="STRATA_CUDA_MM_WPRE=7,STRATA_CUDA_MM_ONEB=1,STRATA_CUDA_MOE_FAST=255,STRATA_CUDA_NORM_WARP=1"
for s in ${SHAPES:-moe48 1b smollm2}; do
  alt_runs 2 "$s" "E2E_DEFAULT=1 $ON" 2 'prompt'
  if [ $P = 1 ]; then
    echo "llama.cpp $s (pp512, tg128) runs:"
    timeout 150 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of
    t
  fi
done
