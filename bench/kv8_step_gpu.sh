#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 7; issue 19, measure first): one decode step of
# the SmolLM2 shape at depth 4,096 under ncu (bench/step_profile_gpu.sh: eager, serialized, caches
# and clocks left alone), with an f16 and with an int8 cache: the kernels' durations summed by
# kernel (tools/ncu_sum.py), so the int8 deep step's extra cost (~2.7 us a layer in the graph,
# BENCHMARKS call 5) is placed in a launch. Peer: none. Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf. CSVs: $OUT/step-smollm2-4096-{f16,int8}.csv.
set -u
. bench/gpu_call.sh
gb_unpack
for kv in f16 int8; do
  E2E_KV=$kv timeout 200 bash bench/step_profile_gpu.sh smollm2 4096 > /tmp/rows_$kv.txt 2>&1
  mv "$OUT/step-smollm2-4096.csv" "$OUT/step-smollm2-4096-$kv.csv"
  echo "== $kv"; python3 tools/ncu_sum.py "$OUT/step-smollm2-4096-$kv.csv" 2>&1 | head -24
  t
done
