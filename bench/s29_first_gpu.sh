#!/bin/bash
# NOT RUN: the 13:54 session ran its parts in other calls instead (the whole suite in
# bench/s30_tile_gpu.sh, the TWICE launches in bench/s31_gpu.sh, the prompt rows inline; BENCHMARKS,
# "2026-12-05 (13:54 session)"). Kept as the 11:30 session's plan.
# Prepared 2026-12-05 (11:30 session, after its device time ran out) for the next session's first
# GPU call: the whole suite on the final tree (39356d2's GPU code + STRATA_CUDA_TWICE bits 8 / 16 /
# 32 / 64 and moe_route1_launch, not yet run as a whole), then the MoE layer's launches in the graph
# step by the instrument (each kind twice, one round each, depth 16), then issue 17 / 20's rows beside
# llama.cpp on whichever card the call gets.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: suite 29,833 passed, 0 failed (test_gpu_attn_tc's TWICE 102 and test_gpu_variants'
# TWICE 57 the same number of checks as before); the MoE step's extra time a launch (us): gate/up
# 10-11, attention 4-5, h's quantization ~3, router ~6, norm ~2.4, q / k / v 3-5; prompt / decode
# ratios as the 11:30 session's call 1 on an H100 (1.57 / 1.12 / 1.09 and 1.69 / 1.31 / 1.42), on an
# H200 as 2026-12-04 (prompt 1.52 / 0.91 / 0.96).
set -u
. bench/gpu_call.sh
gpu_suite 240
t
gb_unpack
abn 1 moe48 "STRATA_CUDA_TWICE=0 STRATA_CUDA_TWICE=1 STRATA_CUDA_TWICE=2 STRATA_CUDA_TWICE=8 STRATA_CUDA_TWICE=16 STRATA_CUDA_TWICE=32 STRATA_CUDA_TWICE=64" E2E_DEPTH=16
abn 1 1b "STRATA_CUDA_TWICE=0 STRATA_CUDA_TWICE=32 STRATA_CUDA_TWICE=64" E2E_DEPTH=16
t
pp_peer_rows "smollm2 1b moe48"
