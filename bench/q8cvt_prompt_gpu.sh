#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 3): the GPU suite after STRATA_CUDA_ATTN_TC_DEC
# bit 32 (an int8 cache's codes to float by PRMT + FADD instead of I2F; same bits) reached the
# loop and split launches of wider passes (the backend passes attn_tc_dec & 52), then int8
# prompts of 4,096 (and the decode after them) with DEC 31 (I2F everywhere) and 63, three rounds
# alternated, SmolLM2 and 1.5B shapes.
# Peer: none (an A/B of strata's own switch). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Prediction (before the call): int8 prompt of 4,096 +1-4 % (the loop launch converts every K
# tile twice and every V tile once, 234 I2F a thread in the SASS of the decode launch alone).
# After this call: bit 64 was deleted (BENCHMARKS call 3), so DEC=127 now runs as 63. The A/B loops
# were folded into gpu_call.sh's ab after the call (the same runs, labelled by the variable).
set -u
. bench/gpu_call.sh
bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
grep -E "passed|FAIL" /tmp/suite.txt | tail -18
gb_unpack
t
ab 3 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "31 63" E2E_KV=int8 E2E_DEPTH=4096
# 4. bit 64 (the deep decode launch's staged int8 rows copied 8 bytes a cp.async instead of 4):
#    int8 decode at depth 4,096, DEC 63 / 127, three rounds. Prediction: +0-2 % (half the copy
#    instructions before the wait; the bytes are the same).
ab 3 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "63 127" E2E_KV=int8 E2E_DEPTH=4096
