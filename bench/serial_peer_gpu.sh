#!/bin/bash
# One device call (2026-12-04 15:43 session, call 4; issue 17): STRATA_CANON=serial beside the
# default order and beside llama.cpp, the same files, the same call. First the GPU suite in the
# default order (test_gpu_mm and test_gpu_matvec now also run their serial passes: the GPU against
# the CPU, both serial); then bench_e2e (prompt 512, decode 128, batches of 16 / 64 sessions) with
# STRATA_CANON tree / serial alternated, two rounds, the three shapes; then llama.cpp `llama-bench
# -ngl 99 -fa 1 -p 512 -n 128 -r 4` on the same files, every run. Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Predictions (before the call): the suite passes; prompt as call 3 (serial +18 / +31 / +36 %),
# decode with the chain stopped at the row's lanes: within 1-2 % of tree (call 3: -3 to -5.5 %
# with the chain over all 32 lanes); batches of 16 still 9-18 % slower (no split).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 220
t
# (after the call the loop was folded into gpu_call.sh's e2e_ab: the same runs)
e2e_ab 2 "smollm2 1b moe48" STRATA_CANON "tree serial" "2 batch" E2E_BATCH=16,64
peer_up || { echo "peer: the unpack failed"; exit 1; }
for s in smollm2 1b moe48; do
  echo "llama.cpp $s pp512 / tg128 runs:"
  timeout 150 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 4 -o jsonl 2>/dev/null | runs_of
done
t
