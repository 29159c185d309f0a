#!/bin/bash
# One device call (2026-12-04, 11:14 session, the last): issue 19's and 20's figures on the
# session's final code beside llama.cpp on the same files in the same call. Strata: the defaults
# (STRATA_CUDA_ATTN_TC_DEC 63, STRATA_CUDA_MOE_FAST as committed), f16 and int8 caches, decode
# after prompts of 16 / 4,096 / 16,384 (`E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096,16384 bench_e2e SHAPE
# 1`), two rounds; llama.cpp (the carried build) `llama-bench -ngl 99 -fa 1 -ctk T -ctv T -p 0
# -n 128 -d 0,4096,16384 -r 3`, f16 and q8_0 K/V, its runs one by one.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
D=16,4096,16384
for s in smollm2 1b moe48; do for r in 1 2; do for kv in f16 int8; do depth_row "r$r" $s $kv; done; done; t; done
peer_up || { echo "peer: the unpack failed"; exit 1; }
llama_depth_rows "smollm2 1b moe48"
# then the GPU suite on this code, if the call has the time (the defaults' change since call 4's
# suite is host-side: STRATA_CUDA_MOE_FAST 31 -> 63)
bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
grep -E "passed|FAIL" /tmp/suite.txt | tail -18
t
