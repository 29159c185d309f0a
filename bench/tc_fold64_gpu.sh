#!/bin/bash
# One device call (2026-12-04, 04:24 session, call 2): STRATA_CUDA_ATTN_TC_DEC bit 16 (the merge
# launch's u loads 64 chunks at once instead of 16) and bit 32 (the deep launch's grid KV heads
# first, so a graph launch sized for n_ctx dispatches the row's chunks before the idle ones),
# f16 and int8, two rounds alternated; then the same at depth 4,096 in a context of 32,768
# (E2E_CTX; the graph's deep launch then has 256 chunks a KV head, 32 of them the row's).
# Peer: none (an A/B of strata's own switches). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf. First the two GPU test programs the change touches.
# Predictions: bit 16 +1-2 % at 4,096 (one L2 round trip of the merge's three at 33 chunks), +3-5 %
# at 16,384 (129 chunks: 3 round trips instead of 9); bit 32 nothing with n_ctx = depth + 256,
# and at n_ctx 32,768 it recovers most of what the idle CTAs cost (predicted 3-10 % at 4,096).
# After this call: bit 32 (the grid order) was deleted; the final code masks the switch to 31,
# so DEC=63 runs as 31.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_attn_tc test_gpu_ops; do timeout 200 $g/bin/$p 2>&1 | tail -3; done
t
D=${DEPTHS:-16,4096,16384}
for s in ${SHAPES:-smollm2 1b moe48}; do
  for r in 1 2; do
    for cfg in ${CFGS:-f16,15 f16,31 f16,63 int8,15 int8,31 int8,63}; do
      set -- $(echo $cfg | tr , ' ')
      echo "round $r $s KV=$1 TC_DEC=$2: $(E2E_KV=$1 STRATA_CUDA_ATTN_TC_DEC=$2 E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 | grep -i depth | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ')"
    done
  done
  t
done
for s in ${SHAPES:-smollm2 1b moe48}; do
  for r in 1 2; do
    for cfg in f16,31 f16,63 int8,31 int8,63; do
      set -- $(echo $cfg | tr , ' ')
      echo "ctx 32768 round $r $s KV=$1 TC_DEC=$2: $(E2E_CTX=32768 E2E_KV=$1 STRATA_CUDA_ATTN_TC_DEC=$2 E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 100 $B $s 1 | grep -i depth | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ')"
    done
  done
  t
done
