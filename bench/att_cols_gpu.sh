#!/bin/bash
# RUN in the 20:50 session (call 9, docs/BENCHMARKS.md): 64 columns fastest, now the default.
# One device call, prepared in the 18:10 session (branch next/att-cols; its first form timed
# out with its output piped through tail): the columns of a wide pass past position 2,048 take the
# chunk path in slices of STRATA_CUDA_ATT_COLS columns (call 5 of that session: 64 launches of 8
# columns a layer, 76 % of the 1.5B prompt's last pass). Prompt of 4,096 (passes of 512) at 8 (the
# rule before) / 32 / 64 / 16 columns a launch, same binary, the ids' hashes printed; then
# test_gpu_widths and test_gpu_ops with 64; then llama-bench -p 4096 when the peer is carried.
# Output goes to $OUT/att_cols.txt as it comes (a call cut at its limit still brings it back).
# Prediction: 32 fastest (1.94 waves of CTAs instead of 1.45 on the 1.5B shape, a quarter of the
# launches), the prompt of 4,096 +5-10 %.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf (and .peer/lcb-cuda.tar.xz).
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/att_cols.txt") 2>&1
gb_unpack
for s in 1b moe48 smollm2; do for a in 8 32 64 16; do
  echo -n "$s ATT_COLS=$a: "
  STRATA_CUDA_ATT_COLS=$a E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 60 $B $s 1 | grep -i depth |
    sed 's/.*prompt *\([0-9]*\) tok.*decode 128: *\([0-9]*\) tok.*hash \(.*\)/prompt \1 decode \2 \3/'
done; t; done
for p in test_gpu_widths test_gpu_ops; do echo -n "$p ATT_COLS=64: "; STRATA_CUDA_ATT_COLS=64 timeout 60 $g/bin/$p 2>&1 | tail -1; done; t
if peer_up; then
  for s in 1b moe48 smollm2; do
    echo -n "llama.cpp $s pp4096 runs (tok/s): "
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 4 -o jsonl 2>/dev/null | runs_of
  done
fi; t
