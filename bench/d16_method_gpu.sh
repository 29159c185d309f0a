#!/bin/bash
# One device call (2026-12-04, 11:14 session, call 8): is depth-16 decode lower than earlier
# sessions' (SmolLM2 1,552-1,569 tok/s on 2026-12-03/04 against 1,437 in call 5), or is it the
# method? One `E2E_DEPTH=16 bench_e2e SHAPE 1` run prints both: the main run's decode after its
# 16-token prompt (the earlier sessions' "decode, depth 16" rows) and the E2E_DEPTH=16 row (issue
# 19's tables since the 04:24 session), same binary, same minute. Peer: none. Carry
# .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
for r in 1 2; do
  for s in smollm2 1b moe48; do
    echo "round $r $s: $(E2E_DEPTH=16 timeout 200 $B $s 1 2>&1 | grep -E 'decode' | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ' | cut -c1-600)"
  done
done
t
