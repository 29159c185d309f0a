#!/bin/bash
# One device call (written 2026-12-04 13:31 session for the next one; issues 19, 20): the instrument
# STRATA_CUDA_TWICE (idempotent launches issued twice: the step's time difference is one launch's
# cost inside the graph). test_gpu_attn_tc and test_gpu_variants first (the logits with it equal
# the default's / the CPU's), then decode, three rounds alternated: the MoE at depth 16 with 0 / 1
# (gate/up twice) / 2 (attention decode twice); SmolLM2 f16 and int8 at depth 4,096 with 0 / 2 / 4
# (merge twice). Peer: none (a diagnosis of strata's own step). Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): gate/up worth 6-10 us of the MoE layer's ~56 us (not its 16 us
# serialized); SmolLM2's merge launch 1-2 us of its ~25 us deep layer.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_attn_tc test_gpu_variants; do LD_LIBRARY_PATH=$PWD/.gpubin/lib /tmp/gb/bin/$p 2>&1 | tail -1; done
t
ab 3 "moe48" STRATA_CUDA_TWICE "0 1 2" E2E_DEPTH=16
ab 3 "smollm2" STRATA_CUDA_TWICE "0 2 4" E2E_KV=f16 E2E_DEPTH=4096
ab 3 "smollm2" STRATA_CUDA_TWICE "0 2 4" E2E_KV=int8 E2E_DEPTH=4096
t
