#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 2; issue 20): STRATA_CUDA_MOE_FAST bit 16 in its
# final form (the F32 router a CTA of 512 threads per row, the last CTA's ranks by four threads an
# expert; call 1 measured its first form, 128 threads a CTA, as bit 32), the default now 31; and
# STRATA_CUDA_ATTN_TC_DEC's default 63 (bit 32: int8 codes to float without I2F).
# 1. the GPU suite on this code; 2. the 48-layer MoE decode at depth 16, MOE_FAST 15 / 31, three
# rounds alternated; 3. ncu durations (serialized) of one eager step's router launch, 15 / 31.
# Peer: none (an A/B of strata's own switch). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): +1-2 % over call 1's 128-thread form (361 / 363 against 357 /
# 357): the product phase one float4 load of each a thread, the ranks 32 comparisons a thread
# instead of 128.
# The A/B loop, the suite's lines and the ncu loop were folded into gpu_call.sh after the call
# (ab, gpu_suite, moe_ncu; the same runs).
set -u
. bench/gpu_call.sh
gpu_suite 600
grep -E "router cta" /tmp/gb-logs/test_gpu_variants.out 2>/dev/null | head -8
gb_unpack
t
ab 3 moe48 STRATA_CUDA_MOE_FAST "15 31" E2E_DEPTH=16
moe_ncu "15 31" moe_router 3 gpu__time_duration.sum
t
