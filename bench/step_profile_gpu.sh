#!/bin/bash
# One decode step, kernel by kernel, on the GPU machine (docs/BENCHMARKS.md, 2026-12-03 00:26
# session, calls 1-2). Carry .gpubin (tools/gpu_pack.sh pack) and .peer (the SmolLM2 vocabulary
# for bench_e2e's files: python3 tools/vocab_only.py MODEL .peer/smollm2-vocab.gguf).
#   bash bench/step_profile_gpu.sh [SHAPE] [DEPTH]     SHAPE smollm2 | 1b | moe48 (default moe48),
#                                                      DEPTH: the positions before the step (16)
# ncu (caches and clocks left alone) over the eager pass STRATA_CUDA_PROFILE picks: with
# E2E_DEPTH the depth prompt's passes of 512 columns come first, so the step counted is the
# (DEPTH / 512 + 22)-th pass of at least one column; without it (depth 16) bench_e2e's main run
# (a 512-token prompt, then the 16-token prompt and 128 steps) makes pass 60 a decode step.
# Prints one row per launch in order: kernel, grid, registers, us, DRAM MB read (tools/ncu_sum.py
# --rows). Ran as a script on the H200 on 2026-12-03 (06:19 session, call 1: moe48 16 and
# smollm2 4096; docs/BENCHMARKS.md).
set -u
shape=${1:-moe48}; depth=${2:-16}
export LD_LIBRARY_PATH=$PWD/.gpubin/lib
[ -x /tmp/gb/bin/bench_e2e ] || { mkdir -p /tmp/gb && tar xJf .gpubin/bins.tar.xz -C /tmp/gb; }
export E2E_TOKENIZER=${E2E_TOKENIZER:-$PWD/.peer/smollm2-vocab.gguf}
M="gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread"
out=${OUT:-/tmp}/step-$shape-$depth.csv
if [ "$depth" = 16 ]; then
  STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 ncu --profile-from-start off --clock-control none --cache-control none \
    --metrics $M --csv /tmp/gb/bin/bench_e2e "$shape" 1 > "$out" 2>/dev/null
else
  STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,$(( depth / 512 + 22 )) E2E_SKIP_MAIN=1 E2E_DEPTH=$depth ncu --profile-from-start off \
    --clock-control none --cache-control none --metrics $M --csv /tmp/gb/bin/bench_e2e "$shape" 1 > "$out" 2>/dev/null
fi
python3 tools/ncu_sum.py --rows "$out"
