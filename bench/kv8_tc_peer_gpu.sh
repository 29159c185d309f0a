#!/bin/bash
# One device call (2026-12-04, 01:58 session): int8 KV caches on the tensor-core attention order
# (STRATA_CUDA_ATTN_TC_KV8, default 1) against the CPU's order for int8 (=0), beside the f16
# cache (the default order) and llama.cpp with q8_0 K/V (-ctk q8_0 -ctv q8_0) on the same files.
# Two rounds of strata, alternated; llama-bench runs one by one (best / median).
# CFGS="KV,TC_KV8,TC_DEC ..." the strata rows (default: int8 on the order / int8 in the CPU's
# order / f16; STRATA_CUDA_ATTN_TC_DEC 15); SHAPES, DEPTHS (default 16,4096,16384).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Call 2 of the session (int8 on the order vs =0): +12-13 % at 4,096 on the dense shapes, +36 %
# on the MoE; int8 at depth 16 still 4-9 % under f16 (ncu: the decode launch 9.25 vs 7.58 us: its
# int8 rows loaded and converted before the wait), hence bit 8 of STRATA_CUDA_ATTN_TC_DEC.
# Prediction for bit 8 (CFGS="int8,1,15 int8,1,7 f16,1,15"): int8 at depth 16 within 2 % of f16,
# at 4,096 +3-8 % over DEC=7.
# First prediction (before call 2): int8 at depth 4,096 within 5 % of f16 with the order (it reads
# 0.56x the bytes, converts each value once per CTA), +15-30 % over =0 at 4,096; at depth 16 ~ f16.
set -u
. bench/gpu_call.sh
gb_unpack
peer_up || { echo "peer: the unpack failed"; exit 1; }
D=${DEPTHS:-16,4096,16384}
for s in ${SHAPES:-smollm2 1b moe48}; do
  for r in 1 2; do
    for cfg in ${CFGS:-int8,1,15 int8,0,15 f16,1,15}; do
      set -- $(echo $cfg | tr , ' ')
      echo "round $r KV=$1 TC_KV8=$2 TC_DEC=$3:"
      E2E_KV=$1 STRATA_CUDA_ATTN_TC_KV8=$2 STRATA_CUDA_ATTN_TC_DEC=$3 E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 | grep -i depth
    done
  done
  echo "llama.cpp $s, q8_0 K/V, tg128 at d0,$D runs:"
  timeout 200 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -ctk q8_0 -ctv q8_0 -p 0 -n 128 \
    -d 0,$(echo $D | sed 's/^16,//') -r 3 -o jsonl 2>/dev/null | runs_of
  t
done
