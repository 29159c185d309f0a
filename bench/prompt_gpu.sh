#!/bin/sh
# Issue 17 on the GPU machine, one call: build this tree into BUILD (default /tmp/build), run the
# wide-pass tests (test_gpu_mm: every format against the CPU reference at widths 9..512;
# test_gpu_widths: 600-token prompts in passes of 1..512 columns, memcmp, and against the CPU),
# the matmul microbenchmark (test_gpu_mm bench: 4096 x 14336 at T = 512, tensor cores against
# the matvec in slices of 8), then bench_e2e before/after (bench/gpu_ab.sh OLD) when OLD is given.
#   sh bench/prompt_gpu.sh [OLD_TREE] [shapes]
set -e
b=${BUILD:-/tmp/build}; deps=$(pwd)/.gpudeps
make -j"$(nproc)" BUILD="$b" DEPS="$deps" "$b/tests/gpu/test_gpu_mm" "$b/tests/gpu/test_gpu_widths" \
  "$b/tests/gpu/bench_e2e" >/tmp/prompt-build.log 2>&1 || { tail -40 /tmp/prompt-build.log; exit 1; }
set +e
"$b/tests/gpu/test_gpu_mm" 2>&1 | tail -12
"$b/tests/gpu/test_gpu_widths" 2>&1 | tail -12
"$b/tests/gpu/test_gpu_mm" bench
[ -n "${1:-}" ] && NEW_BUILD="$b" sh bench/gpu_ab.sh "$1" "${2:-smollm2 1b}" 1
exit 0
