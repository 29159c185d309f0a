#!/bin/bash
# One device call (2026-12-04, 01:58 session): int8 KV caches on the tensor-core attention order
# (STRATA_CUDA_ATTN_TC_KV8, default 1) against the CPU's order for int8 (=0), beside the f16
# cache (the default order) and llama.cpp with q8_0 K/V (-ctk q8_0 -ctv q8_0) on the same files.
# Two rounds of strata, alternated; llama-bench runs one by one (best / median).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction (before the call): int8 at depth 4,096 within 5 % of f16 with the order (it reads
# 0.56x the bytes, converts each value once per CTA), +15-30 % over =0 at 4,096; at depth 16 ~ f16.
set -u
. bench/gpu_call.sh
gb_unpack
peer_up || { echo "peer: the unpack failed"; exit 1; }
D=${DEPTHS:-16,4096,16384}
for s in ${SHAPES:-smollm2 1b moe48}; do
  for r in 1 2; do
    for cfg in "int8 1" "int8 0" "f16 1"; do
      set -- $cfg
      echo "round $r KV=$1 TC_KV8=$2:"
      E2E_KV=$1 STRATA_CUDA_ATTN_TC_KV8=$2 E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 | grep -i depth
    done
  done
  echo "llama.cpp $s, q8_0 K/V, tg128 at d0,$D runs:"
  timeout 200 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -ctk q8_0 -ctv q8_0 -p 0 -n 128 \
    -d 0,$(echo $D | sed 's/^16,//') -r 3 -o jsonl 2>/dev/null | runs_of
  t
done
