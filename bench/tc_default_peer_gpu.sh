#!/bin/bash
# The 2026-12-04 session's side-by-side calls: strata's default on the H200 (the tensor-core
# attention order since 6023ef1, with its decode launches) against the CPU's order on the GPU
# (STRATA_CUDA_ATTN_TC=0) and llama.cpp, same files, same call.
#   SUITE=1 (default): first the whole GPU suite (tools/gpu_pack.sh run)
#   SHAPES (default "smollm2 1b"): per shape `E2E_DEPTH=4096 bench_e2e SHAPE 1` (prompt 512, decode
#     128 at depth 16, prompt of 4,096 in passes of 512, decode 128 at depth 4,096) with the
#     default and TC=0, two rounds; llama-bench -fa 1 pp512 + tg128 at d0 / d4096, and pp4096,
#     runs one by one (its first run after loading is slow; the best is compared)
#   MM=1: the matmul at m 4096 k 14336 n 512 per format (test_gpu_mm bench) and llama.cpp's
#     test-backend-ops perf -o MUL_MAT on the same shape (issue 17's per-format table)
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/final.txt") 2>&1
if [ "${SUITE:-1}" = 1 ]; then echo "== GPU suite"; bash tools/gpu_pack.sh run "$OUT" 2>&1 | tail -20; t; fi
gb_unpack
P=0; peer_up && P=1; echo "peer: $P"
for s in ${SHAPES:-smollm2 1b}; do
  for r in 1 2; do
    for tc in auto 0; do e2e_line "TC=$tc" $s STRATA_CUDA_ATTN_TC=$tc; done
  done; t
  if [ $P = 1 ]; then llama_rows $s; t; fi
done
if [ "${MM:-0}" = 1 ]; then
  echo "== strata test_gpu_mm bench (m 4096, k 14336; TFLOPS at n 512 / 64 / 16)"
  timeout 200 $g/bin/test_gpu_mm bench ${MM_FMTS:-Q4_0,Q8_0,Q4_K,Q5_K,Q6_K,IQ3_XXS,IQ2_XXS,IQ4_XS} 2>&1 | tail -30; t
  if [ $P = 1 ] && [ -x /tmp/lcb/bin/test-backend-ops ]; then
    echo "== llama.cpp test-backend-ops perf -o MUL_MAT (n 512, k 14336)"
    timeout 200 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 | grep -E "MUL_MAT|TFLOPS" | head -40; t
  fi
fi
