#!/bin/bash
# One device call (written 2026-12-04 13:31 session for the next one; issues 19, 20):
# STRATA_CUDA_MV_PATHS=1 (the T = 1 matvec instance of the group's path: plain rows or gate/up +
# SwiGLU pairs, where one instance holds both; same bits). Static, sm_90 (nvcc here): Q4_K coop
# 2,120 -> 696 SASS instructions and 46 -> 37 registers for the plain rows, Q6_K (Q6 variant)
# 2,384 -> 760, Q8_0 832 -> 240, Q4_1 1,144 -> 344. The GPU suite first (test_gpu_matvec runs the
# plain instance on every format, test_gpu_variants in its "every switch" mode), then decode at
# depths 16 and 4,096, PATHS 0 / 1 alternated, three rounds, SmolLM2, 1.5B and the MoE.
# Peer: none (A/B of strata's own switch). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): +1-3 % decode (the attention's per-kind instances, 7,096 -> 4,128
# instructions, gained 4-6 %; these launches are 3-4 a layer).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 280
t
ab 3 "smollm2 1b moe48" STRATA_CUDA_MV_PATHS "0 1" E2E_DEPTH=16,4096
