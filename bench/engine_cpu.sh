#!/bin/sh
# Engine decode benchmark on the CPU (docs/BENCHMARKS.md "Engine decode (CPU)"):
# strata bench on the default model with 1 and 2 threads, spin and sleep pools, and, when a
# llama.cpp build is given, llama-bench on the same file in the same run (baseline).
# usage: sh bench/engine_cpu.sh [BIN] [MODEL] [LLAMA_BENCH]
BIN=${1:-build/strata}; MODEL=${2:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}; LB=$3
for t in 2 1; do
  for spin in 0 2000; do
    echo "== strata, $t threads, STRATA_POOL_SPIN=$spin"
    STRATA_POOL_SPIN=$spin "$BIN" bench -m "$MODEL" -t $t --pp 64 --tg 128 --reps 5 | grep -E "prompt|decode|bandwidth|checksum"
  done
done
if [ -n "$LB" ] && [ -x "$LB" ]; then
  for t in 2 1; do
    echo "== llama.cpp llama-bench, $t threads"
    "$LB" -m "$MODEL" -t $t -p 64 -n 128 -r 5 2>/dev/null | grep -E "q4_1|model"
  done
fi
