#!/bin/sh
# Issue 17 (item 6) on the GPU machine, one call: build strata into BUILD (default /tmp/build), write
# synthetic files of real shapes (strata synth, built-in tokenizer; the shapes of tests/gpu/bench_e2e.c),
# then alternate `strata bench --device cuda` (prompt in wide passes; decode through the device step,
# ids picked on the device; GB/s next to the GPU's copy rate) and `strata run` on the same file, so
# bench's decode tok/s is seen next to what run reports. With /tmp/lcb/bin/llama-bench (llama.cpp's
# CUDA build, ../shared/peer/llamacpp.sh build) present, its pp512 / tg128 on the same file follow.
#   sh bench/bench_cli_gpu.sh [rounds] [shapes]      shapes: smollm2 1b (default both)
set -e
b=${BUILD:-/tmp/build}; deps=$(pwd)/.gpudeps
rounds=${1:-2}; shapes=${2:-"smollm2 1b"}
make -j"$(nproc)" BUILD="$b" DEPS="$deps" "$b/strata" >/tmp/bench-cli-build.log 2>&1 ||
  { tail -30 /tmp/bench-cli-build.log; exit 1; }
S=$b/strata; d=/tmp/bench-cli; mkdir -p "$d"; j=$(nproc)
for s in $shapes; do
  [ -f "$d/$s.gguf" ] && continue
  case $s in
  smollm2) "$S" synth "$d/$s.gguf" --arch llama --type-attn Q4_1 --type-ffn Q4_1 --type-output Q8_0 --type-embd Q8_0 \
             --tokenizer builtin -t "$j" >/dev/null ;;
  1b) "$S" synth "$d/$s.gguf" --arch llama --layers 16 --dim 2048 --ffn 8192 --heads 32 --kv-heads 8 --head-dim 64 \
        --vocab 128256 --type-attn Q4_K --type-ffn Q4_K --type-output Q6_K --type-embd Q8_0 --tokenizer builtin -t "$j" >/dev/null ;;
  *) echo "unknown shape $s" >&2; exit 2 ;;
  esac
done
set +e
for r in $(seq "$rounds"); do
  for s in $shapes; do
    echo "== $s, round $r"
    "$S" bench -m "$d/$s.gguf" --device cuda --pp 512 --tg 128 --reps 3
    "$S" run -m "$d/$s.gguf" --device cuda -n 128 --temp 0 -p "The quick brown fox jumps over the lazy dog" 2>&1 >/dev/null | grep decode
    if [ -x /tmp/lcb/bin/llama-bench ]; then
      /tmp/lcb/bin/llama-bench -m "$d/$s.gguf" -ngl 99 -fa 1 -p 512 -n 128 -r 3 2>&1 | grep -E "pp512|tg128"
    fi
  done
done
exit 0
