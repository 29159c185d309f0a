#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 1; issue 19): STRATA_CUDA_ATTN_TC_DEC bit 256
# (the decode kernels instantiated per cache kind: attn_tc_dec_kernel<HD, SPLIT, KV> with KV 1 =
# f16, 2 = int8 compiled in, where the default's one instance reads a.kv8 at run time; same bits),
# A/B 63 / 319 alternated, two rounds, f16 and int8 caches, decode at depths 16 and 4,096, SmolLM2
# and 1.5B shapes; then the GPU suite on this code. Peer: none (an A/B of strata's own switch).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): SmolLM2 f16 at depth 16 +2-5 % (its one-launch kernel back to
# 4,128 SASS instructions / 64 registers from 7,096 / 72), 1.5B f16 +1-3 %, int8 within the spread.
# After the call its suite lines were folded into gpu_call.sh (gpu_suite; the same run).
set -u
. bench/gpu_call.sh
gb_unpack
ab 2 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "63 319" E2E_KV=f16 E2E_DEPTH=16,4096
ab 2 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "63 319" E2E_KV=int8 E2E_DEPTH=16,4096
gpu_suite 280
t
