#!/bin/bash
# One device call (2026-12-03/04 session): the tensor-core order's decode launch
# (STRATA_CUDA_ATTN_TC_DEC, src/cuda/attn_tc.cu: T = 1 below 256 positions, one launch per KV head
# with RoPE + store folded, a chunk's steps over four warps, the merge in the CTA) against the
# split + merge launches after a RoPE launch (DEC=0) and the CPU's order (TC=0), same binary.
# First the GPU suite (tools/gpu_pack.sh run) unless SUITE=0, then test_gpu_attn_tc, then per shape
# (SHAPES, default "smollm2 1b") `E2E_DEPTH=4096 bench_e2e SHAPE 1` in three configurations, two
# rounds, and llama.cpp when carried (.peer/lcb-cuda.tar.xz).
# Prediction (written before call 1): DEC=1 decode at depth 16 above DEC=0 by 5-10 % and within
# 3 % of TC=0 (the split path lost 4-9 % to TC=0); at 4,096 DEC does not apply (no change).
# Measured (call 1): +21 % over DEC=0, +8 % over TC=0 (SmolLM2, 1.5B), +3 % (MoE).
# Call 5 (CFGS default: TC=0, TC=1 DEC=1, TC=1 DEC=3): bit 2, the deep steps as a CTA per chunk
# with RoPE + store folded; prediction: decode at 4,096 +5-15 % over DEC=1, same ids' hashes.
# Measured (call 4): +6-11 %. Call 8 (CFGS="0 3" "1 3" "1 7"): bit 4, the merge launch's loads at
# once (ncu, call 7: the walking merge 7.5 us a layer at 4,096 on SmolLM2, the chunk launch 6.0);
# prediction: decode at 4,096 +5-12 % over DEC=3, depth 16 unchanged, same hashes.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf (and .peer/lcb-cuda.tar.xz).
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/tc_dec.txt") 2>&1
if [ "${SUITE:-1}" = 1 ]; then echo "== GPU suite"; bash tools/gpu_pack.sh run "$OUT" 2>&1 | tail -25; t; fi
gb_unpack
echo "== test_gpu_attn_tc"; timeout 200 $g/bin/test_gpu_attn_tc 2>&1 | tail -14; t
P=0; [ "${NOPEER:-0}" = 0 ] && [ -f .peer/lcb-cuda.tar.xz ] && peer_up && P=1
for s in ${SHAPES:-smollm2 1b}; do
  for r in 1 2; do
    for cfg in ${CFGS:-0,3 1,1 1,3}; do
      set -- ${cfg/,/ }
      e2e_line "TC=$1 DEC=$2" $s STRATA_CUDA_ATTN_TC=$1 STRATA_CUDA_ATTN_TC_DEC=$2
    done
  done; t
  if [ $P = 1 ]; then llama_rows $s; t; fi
done
