#!/bin/bash
# RUN ONCE, ITS CODE REVERTED: the two switches it measures lost or tied (docs/BENCHMARKS.md,
# 20:50 session, call 7) and were removed; kept as the record of how they were measured.
# One device call (2026-12-03 20:50 session, call 7): the tensor-core order's two decode switches
# apart (call 6 had them together and lost): STRATA_CUDA_ATTN_TC_FOLD (RoPE + KV store in the
# launch, q staged in shared memory and rotated there: call 6 rotated from global memory, 4 loads
# an element) and STRATA_CUDA_ATTN_TC_LOOP1 (the loop launch for decode within two chunks, no
# merge launch). First test_gpu_attn_tc under each (same bits: widths memcmp, graph == eager),
# then `E2E_DEPTH=4096 bench_e2e SHAPE 1` with TC=0, TC=1, +FOLD, +LOOP1, +both. Strata-only
# A/B (Peer: none). Prediction: FOLD recovers about half of the depth-16 loss (one launch of
# three), LOOP1 the other half. Output to $OUT/attn_tc_ab.txt as it comes.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/attn_tc_ab.txt") 2>&1
gb_unpack
for v in "FOLD=1" "LOOP1=1" "FOLD=1 LOOP1=1"; do
  echo -n "test_gpu_attn_tc $v: "
  env $(for x in $v; do echo STRATA_CUDA_ATTN_TC_$x; done) timeout 60 $g/bin/test_gpu_attn_tc 2>&1 | tail -1
done; t
for s in ${SHAPES:-smollm2 1b moe48}; do
  for v in "TC=0" "TC=1" "TC=1 TC_FOLD=1" "TC=1 TC_LOOP1=1" "TC=1 TC_FOLD=1 TC_LOOP1=1"; do
    echo "$s $v: $(env $(for x in $v; do echo STRATA_CUDA_ATTN_$x; done) E2E_DEPTH=4096 timeout 100 $B $s 1 | grep -E 'prompt' | sed 's/  */ /g; s/(min [0-9]* max [0-9]*)//g' | tr '\n' ' ')"
  done; t
done
