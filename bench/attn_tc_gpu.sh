#!/bin/bash
# One device call (2026-12-03 20:50 session): the tensor-core attention order
# (STRATA_CUDA_ATTN_TC=1, src/cuda/attn_tc.cu, opt-in) against the CPU's order on the GPU
# (STRATA_CUDA_ATTN_TC=0, the default), same binary, same files, and llama.cpp in the same call.
# First its test (tests/gpu/test_gpu_attn_tc: widths memcmp, graph vs eager, divergence from the
# CPU), then per shape: `E2E_DEPTH=4096 bench_e2e SHAPE 1` with TC 0 / 1 (prompt 512, decode 128
# at depth 16, prompt of 4,096 in passes of 512, decode 128 at depth 4,096), and llama-bench
# (-fa 1: pp512, pp4096, tg128 at d0 and d4096), runs one by one.
# Prediction (issue 17): the prompt of 4,096 on the 1.5B shape 12,215 -> > 25,000 tok/s (its
# attention was 76 % of the last pass, scalar fp32); decode at 4,096 a few % faster (chunks of 128
# in parallel), at depth 16 a few % slower (RoPE + store and the merge as launches of their own).
# Output to $OUT/attn_tc.txt as it comes. Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/attn_tc.txt") 2>&1
gb_unpack
echo "== test_gpu_attn_tc"; timeout 150 $g/bin/test_gpu_attn_tc 2>&1 | tail -12; t
P=0; peer_up && P=1
for s in ${SHAPES:-1b smollm2 moe48}; do
  for tc in 0 1 0 1; do
    echo "$s TC=$tc: $(STRATA_CUDA_ATTN_TC=$tc E2E_DEPTH=4096 timeout 100 $B $s 1 | grep -E 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"
  done; t
  if [ $P = 1 ]; then
    echo "llama.cpp $s (pp512, tg128 at d0 / d4096; pp4096) runs:"
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -d 0,4096 -r 3 -o jsonl 2>/dev/null | runs_of
    timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 3 -o jsonl 2>/dev/null | runs_of
    t
  fi
done
