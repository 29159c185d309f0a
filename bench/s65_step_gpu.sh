#!/bin/bash
# 2026-12-06 06:00 session: where the 48-layer MoE's decode step goes now (issue 20: 379 tok/s against
# 650). One eager decode step under ncu (bench/step_profile_gpu.sh moe48: kernel, launches, us), then
# the launches' costs inside the graph step: STRATA_CUDA_TWICE bits (each issues one launch twice; the
# step's time with the bit minus without it is that launch's cost in the graph), tok/s per bit.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf. Peer: none (strata's own launches).
set -u
. bench/gpu_call.sh
gb_unpack
timeout 200 bash bench/step_profile_gpu.sh moe48 16 > /tmp/rows.txt 2>&1
python3 tools/ncu_sum.py --groups "$OUT/step-moe48-16.csv" 2>&1 | head -40
rm -f "$OUT/step-moe48-16.csv"
t
for r in 1; do
  for b in 0 1 16 8 64 2 4 32 0; do
    echo "round $r TWICE=$b: $(STRATA_CUDA_TWICE=$b timeout 100 $B moe48 1 2>&1 | grep -E 'decode' | sed 's/.*decode 128: \([0-9]*\) tok.*hash \([0-9a-f]*\).*/\1 tok\/s \2/')"
  done
  t
done
