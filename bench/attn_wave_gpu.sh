#!/bin/bash
# One device call (2026-12-03, 18:10 session, call 4): the tree as it lands (call 3's chunk-path
# changes reverted, measured slower; the one-wave cap kept behind STRATA_CUDA_ATTN_WAVE, default
# 1): the whole GPU suite; the cap A/B in one binary (WAVE 0 / 1 alternating, the ids' hashes
# printed); llama.cpp in the same call on the same files for issue 19's int8 rows (-ctk q8_0 -ctv
# q8_0, d 0 / 4,096) and the f16 rows (d 0 / 4,096).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: suite 0 failed; MoE int8 at 4,096 WAVE 1 above WAVE 0 by 2-4 % (call 3: 237 -> 244),
# every other row equal within 1 % (the cap does not bind there).
set -u
. bench/gpu_call.sh
gb_unpack
bash tools/gpu_pack.sh run "$OUT" 2>&1 | grep -E "passed|FAIL|fail" | tail -3; t
for r in 1 2; do for s in moe48 smollm2 1b; do for kv in int8 f16; do
  [ $r = 2 ] && [ $s != moe48 ] && continue
  for w in 0 1; do
    echo -n "r$r $s $kv WAVE=$w: "
    STRATA_CUDA_ATTN_WAVE=$w E2E_KV=$kv E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 $B $s 1 | grep -i depth |
      sed 's/.*depth *\([0-9]*\).*decode 128: *\([0-9]*\) tok.*hash \(.*\)/d\1 \2 \3/' | tr '\n' ' '; echo
  done
done; done; done; t
if peer_up; then
  for s in smollm2 1b moe48; do
    echo "llama.cpp $s f16 K/V:"
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 0,4096 -r 3 2>&1 | grep -E "tg128"
    echo "llama.cpp $s q8_0 K/V:"
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -ctk q8_0 -ctv q8_0 -p 0 -n 128 -d 0,4096 -r 3 2>&1 | grep -E "tg128"
    t
  done
else echo "peer: not run"; fi
