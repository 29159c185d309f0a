#!/bin/bash
# One device call (2026-12-03, 15:42 session, call 3): what call 2 left open.
#  1. llama.cpp's pp512 per run (llama-bench -o jsonl: samples_ts), not mean +- sd: call 2's
#     pp512 spreads (+-16k on SmolLM2 with -r 5) made the prompt ratios of issue 17 unreadable;
#     strata's prompt 512 is printed as best (min .. max) of its runs, so the two are compared
#     best to best and median to median.
#  2. issue 19's "the same with --kv int8": strata E2E_KV=int8 at depth 16 / 4,096 beside
#     llama-bench -ctk q8_0 -ctv q8_0 -n 128 -d 0,4096, on the same three files.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: llama's best pp512 run within 10 % of its max in call 2 (mean + sd / sqrt 2 ...);
# int8 at 4,096 within 5 % of f16 for strata (call 2 of 06:19: 952 vs 947 SmolLM2).
set -u
. bench/gpu_call.sh
gb_unpack
peer_up || { echo "peer: the unpack failed"; exit 1; }
for s in smollm2 1b moe48; do
  echo -n "strata $s: "; $B $s 2 | grep "prompt 512"
  echo -n "llama.cpp $s pp512 runs (tok/s): "
  timeout 120 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 0 -r 7 -o jsonl 2>/dev/null | runs_of
  E2E_KV=int8 E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 $B $s 1 | grep -i depth
  echo "llama.cpp $s, q8_0 K/V:"
  timeout 120 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -ctk q8_0 -ctv q8_0 -p 0 -n 128 -d 0,4096 -r 3 2>&1 |
    grep -E "tg128"
  t
done
