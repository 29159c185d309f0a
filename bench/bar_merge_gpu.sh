#!/bin/bash
# One device call (2026-12-04 15:43 session, call 2; issue 19): STRATA_CUDA_ATTN_TC_DEC bit 64, the
# deep decode launch merging its chunks itself after a grid barrier (no merge launch; where the grid
# is resident at once). Call 1 measured the merge launch at 3.0 us a layer inside SmolLM2's graph
# step at depth 4,096 (STRATA_CUDA_TWICE=4). test_gpu_attn_tc first (383 against the default, eager
# and graph, f16 and int8), then decode at depths 4,096 / 16,384 with 319 / 383 alternated, two
# rounds: SmolLM2 f16 and int8, 1.5B f16, MoE f16; then the GPU suite on the code with the
# defaults (PREFETCH 7 since call 1). Peer: none (strata's own switch). Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): SmolLM2 at 4,096 +5-8 % (3.0 us of the merge launch less ~1 us for
# the barrier, of a ~25 us layer); 1.5B and MoE at 4,096 +2-5 %; at 16,384 SmolLM2 +3-6 % (its 387
# CTAs fit 4 a SM), 1.5B and MoE unchanged (their grids do not fit: the merge launch).
set -u
. bench/gpu_call.sh
gb_unpack
LD_LIBRARY_PATH=$PWD/.gpubin/lib /tmp/gb/bin/test_gpu_attn_tc 2>&1 | grep -E "FAIL|passed" | tail -5
t
ab 2 "smollm2" STRATA_CUDA_ATTN_TC_DEC "319 383" E2E_KV=f16 E2E_DEPTH=4096,16384
ab 2 "smollm2" STRATA_CUDA_ATTN_TC_DEC "319 383" E2E_KV=int8 E2E_DEPTH=4096,16384
ab 2 "1b moe48" STRATA_CUDA_ATTN_TC_DEC "319 383" E2E_KV=f16 E2E_DEPTH=4096,16384
gpu_suite 200
t
