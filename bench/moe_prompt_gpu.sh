#!/bin/sh
# Issue 17 items 2-3 on the GPU machine, one call: the formats added to the tensor-core matmul
# (STRATA_CUDA_MM_EXT) and the wide MoE path (STRATA_CUDA_MOE_MM: every token routed at once,
# each expert's tokens as one grouped matmul), both written on 2026-12-01 without device time.
# Builds this tree into BUILD (default /tmp/build), runs the parity tests that cover them
# (test_gpu_mm over every format with the extension on, test_gpu_widths: 600-token prompts in
# passes of 1..512 columns against the CPU, with IQ3_XXS experts; test_gpu_moe), the matmul
# microbenchmark (4096 x 14336 at T = 512, checksums), then bench_e2e on the 48-layer MoE shape
# with the switches off and on, alternating (same binary, same file).
#   sh bench/moe_prompt_gpu.sh [rounds]
set -e
b=${BUILD:-/tmp/build}; deps=$(pwd)/.gpudeps; rounds=${1:-2}
make -j"$(nproc)" BUILD="$b" DEPS="$deps" "$b/tests/gpu/test_gpu_mm" "$b/tests/gpu/test_gpu_widths" \
  "$b/tests/gpu/test_gpu_moe" "$b/tests/gpu/bench_e2e" >/tmp/moe-prompt-build.log 2>&1 ||
  { tail -40 /tmp/moe-prompt-build.log; exit 1; }
set +e
"$b/tests/gpu/test_gpu_mm" 2>&1 | tail -15
"$b/tests/gpu/test_gpu_widths" 2>&1 | tail -15
"$b/tests/gpu/test_gpu_moe" 2>&1 | tail -5
"$b/tests/gpu/test_gpu_mm" bench
for r in $(seq "$rounds"); do
  echo "slices (STRATA_CUDA_MM_EXT=0 STRATA_CUDA_MOE_MM=0):"
  STRATA_CUDA_MM_EXT=0 STRATA_CUDA_MOE_MM=0 "$b/tests/gpu/bench_e2e" moe48 3
  echo "grouped tensor-core matmuls (STRATA_CUDA_MM_EXT=1 STRATA_CUDA_MOE_MM=1):"
  STRATA_CUDA_MM_EXT=1 STRATA_CUDA_MOE_MM=1 "$b/tests/gpu/bench_e2e" moe48 3
done
exit 0
