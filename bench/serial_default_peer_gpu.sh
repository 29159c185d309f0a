#!/bin/bash
# One device call (2026-12-04 18:25 session, call 3; issue 17): the serial chain as the default
# order (STRATA_CANON=serial by default, tree the opt-out). The GPU suite in the new default, then
# the tree's parity programs (test_gpu_mm and test_gpu_matvec run the tree in their other-order
# passes; here test_gpu_moe, test_gpu_widths, test_gpu_e2e with STRATA_CANON=tree), then the
# side-by-side table: strata `E2E_DEPTH=4096 bench_e2e SHAPE 1` (prompt 512, decode at 16, a
# prompt of 4,096, decode at 4,096) and llama.cpp (the carried build, ggml 0.25.3 / 0c1e570)
# `llama-bench -ngl 99 -fa 1 -p 512 -n 128 -d 0,4096 -r 3` and `-p 4096 -n 0 -r 3` on the same
# files in the same call, every run. Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Predictions (before the call): the suite passes; prompt 512 as call 2's serial rows (~78k /
# ~38.6k / ~10.7k tok/s: 1.5x / 0.87x / 0.95x llama.cpp's 15:43 best); decode as call 2's serial.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
for p in test_gpu_moe test_gpu_widths test_gpu_e2e; do
  echo "$p tree: $(STRATA_CANON=tree timeout 150 /tmp/gb/bin/$p 2>&1 | tail -1)"
done
t
for s in smollm2 1b moe48; do e2e_line serial $s; done
t
peer_up || { echo "peer: the unpack failed"; exit 1; }
for s in smollm2 1b moe48; do llama_rows $s; done
t
