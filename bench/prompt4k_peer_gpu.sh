#!/bin/bash
# One device call, prepared in the 15:42 session and run in the 18:10 session (call 1, through
# bench/depth_profile_gpu.sh; SmolLM2's line in call 2): issue 17's "also prompts of 4,096", beside
# llama.cpp in the same call: strata's prompt of 4,096 tokens (`E2E_DEPTH=4096 bench_e2e SHAPE 1`:
# the depth prompt, passes of 512, its tok/s) and `llama-bench -p 4096 -n 0 -r 4 -o jsonl` run by
# run (its first run after loading is slow: call 3). Prediction: ratios below the pp512 ones
# (1.09x / 0.64x / 0.59x): strata's prompt attention is scalar fp32 in the canonical order.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
peer_up || { echo "peer: the unpack failed"; exit 1; }
for s in smollm2 1b moe48; do
  for r in 1 2; do echo -n "strata $s r$r: "; E2E_SKIP_MAIN=1 E2E_DEPTH=4096 $B $s 1 | grep -i depth; done
  echo -n "llama.cpp $s pp4096 runs (tok/s): "
  timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 4 -o jsonl 2>/dev/null | runs_of
done
