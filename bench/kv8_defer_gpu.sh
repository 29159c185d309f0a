#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 6; issue 19): STRATA_CUDA_ATTN_TC_DEC bit 128
# (the deep decode launch's staged int8 rows converted after the dependent-launch wait, once q is
# rotated and the position's row is in its tile, instead of before it: their copies' latency then
# overlaps the wait and the RoPE work; same bits), then the GPU suite on this code.
# int8 caches, decode after prompts of 4,096 and 16,384, DEC 63 / 191, three rounds alternated,
# SmolLM2 and 1.5B shapes. Peer: none (an A/B of strata's own switch). Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction (before the call): SmolLM2 int8 at 4,096 +1-4 % (its deep step costs ~2.7 us a layer
# more than f16's, and the pre-wait copy wait is the part f16 does not have), or a loss if the
# kernel ahead already hides it and the conversion, now after the wait, is exposed instead.
# After this call: bit 128 was deleted (BENCHMARKS call 6), so DEC=191 now runs as 63. The A/B loop
# was folded into gpu_call.sh's ab after the call.
set -u
. bench/gpu_call.sh
gb_unpack
ab 3 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "63 191" E2E_KV=int8 E2E_DEPTH=4096,16384
bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
grep -E "passed|FAIL" /tmp/suite.txt | tail -18
t
