#!/bin/bash
# One device call (2026-12-04, 04:24 session, call 1): the GPU suite, then bit 16 of
# STRATA_CUDA_ATTN_TC_DEC (the deep decode launch merging its chunks in the last chunk CTA of each
# KV head, no merge launch) against 15 (the merge launch), f16 and int8 caches, two rounds
# alternated, then ncu's attention rows of the step at depth 4,096 (SmolLM2, both caches).
# Peer: none (an A/B of strata's own switch; the side-by-side table is a later call).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): at 4,096 +3-5 % on SmolLM2 (f16 87 % -> 90 % of depth 16), +2-3 %
# on the 1.5B, the MoE within noise at 4,096 and possibly slower at 16,384 (G 8 x 129 chunks x
# 130 floats = 537 KB merged by 4 CTAs); depth 16 unchanged (the one-launch path).
# After this call: that bit 16 was deleted (measured much slower, docs/KERNELS.md "Variants
# deleted"); in the final code bit 16 is the merge launch's u loads 64 at once, so DEC=31 here
# now measures that (bench/tc_fold64_gpu.sh).
set -u
. bench/gpu_call.sh
if [ "${SUITE:-1}" = 1 ]; then bash tools/gpu_pack.sh run "$OUT" 2>&1 | tail -22; t; fi
gb_unpack
D=${DEPTHS:-16,4096,16384}
for s in ${SHAPES:-smollm2 1b moe48}; do
  for r in 1 2; do
    for cfg in ${CFGS:-f16,31 f16,15 int8,31 int8,15}; do
      set -- $(echo $cfg | tr , ' ')
      echo "round $r $s KV=$1 TC_DEC=$2: $(E2E_KV=$1 STRATA_CUDA_ATTN_TC_DEC=$2 E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 | grep -i depth | sed 's/  */ /g' | tr '\n' ' ')"
    done
  done
  t
done
if [ "${PROF:-1}" = 1 ]; then
  for kv in f16 int8; do
    echo "ncu smollm2 $kv depth 4096 (DEC 31):"
    E2E_KV=$kv STRATA_CUDA_ATTN_TC_DEC=31 timeout 150 bash bench/step_profile_gpu.sh smollm2 4096 2>&1 | grep -E "attn|rope|total" | head -12
    t
  done
fi
