#!/bin/bash
# One device call (2026-12-04 15:43 session, call 6; issue 17): the serial order's warp chain with
# every shuffle issued up front and the adds predicated (branch exp/serial-finish; the tree order is
# untouched). test_gpu_mm and test_gpu_matvec (their serial passes), then bench_e2e prompt 512 and
# decode 128 with STRATA_CANON tree / serial alternated, two rounds, the three shapes.
# Peer: none (llama.cpp's figures for these files: call 4). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): serial decode within 2 % of the tree (call 4, the chain as a loop
# to nl: -2.3 to -5.3 %; call 3, 31 unrolled adds: -2.9 to -5.5 %); prompts as call 4.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_mm test_gpu_matvec; do LD_LIBRARY_PATH=$PWD/.gpubin/lib timeout 120 /tmp/gb/bin/$p 2>&1 | tail -1; done
t
# (after the call the loop was folded into gpu_call.sh's e2e_ab: the same runs)
e2e_ab 2 "smollm2 1b moe48" STRATA_CANON "tree serial" "2"
