#!/bin/bash
# One device call (written 2026-12-04 13:31 session for the next one; issues 19, 20):
# STRATA_CUDA_PREFETCH bit 4 (the RMSNorm launches' weights into registers before the wait; same
# bits). The GPU suite first (test_gpu_variants runs 7 in its "every switch" mode), then decode at
# depths 16 and 4,096, PREFETCH 3 / 7 alternated, three rounds, f16, SmolLM2, 1.5B and the MoE.
# Peer: none (A/B of strata's own switch). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): +1-3 % on SmolLM2 (61 norm launches a step), +0.5-2 % on the others.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 280
t
ab 3 "smollm2 1b moe48" STRATA_CUDA_PREFETCH "3 7" E2E_DEPTH=16,4096
