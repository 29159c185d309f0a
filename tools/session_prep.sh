#!/bin/bash
# What a session needs before its first device call, on a fresh dev machine (.gpubin/ and .peer/ do not
# survive between sessions; the 2026-12-08 01:43 session lost its first pack to a missing libjansson-dev):
#
#   bash tools/session_prep.sh [BUILD]    in the background, logging to /tmp/session_prep.log:
#     1. make setup (apt packages, pip packages, the SmolLM2 and Gemma files into the cache)
#     2. .peer/smollm2-vocab.gguf (tools/vocab_only.py of the cached SmolLM2: bench_e2e's files get a
#        vocabulary llama.cpp accepts)
#     3. tools/gpu_pack.sh pack BUILD (default /tmp/bmain: every GPU program, ~12 min on 2 cores) and
#        .gpubin/PACKED (commit and time)
#     4. .peer/llamacpp-src.tar.xz (../shared/peer/llamacpp.sh pack) and tools/peer_prebuilt.sh pack
#        (llama.cpp's CUDA build, ~35 min more)
#   Each step prints "prep STEP: done in N s" or "prep STEP: FAILED" to the log; a failed step stops the
#   rest. Step 3 is what a device call needs first: with it done, a call can run the suite and the A/B
#   rows (bench/s99_folds_gpu.sh); the peer's rows need step 4 too.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-/tmp/bmain}
log=/tmp/session_prep.log
if [ "${PREP_CHILD:-0}" != 1 ]; then
  PREP_CHILD=1 setsid nohup bash "$0" "$B" > "$log" 2>&1 < /dev/null &
  echo "session prep: pid $!, log $log"
  exit 0
fi
step() {   # step NAME CMD...
  local name=$1 t=$(date +%s); shift
  if "$@"; then echo "prep $name: done in $(( $(date +%s) - t )) s"
  else echo "prep $name: FAILED"; exit 1; fi
}
vocab() {   # the Makefile's CACHE and MODEL
  local c=${STRATA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata}
  mkdir -p .peer && python3 tools/vocab_only.py "${MODEL:-$c/SmolLM2-135M-Instruct.Q4_1.gguf}" .peer/smollm2-vocab.gguf
}
pack() {
  bash tools/gpu_pack.sh pack "$B" &&
    echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + uncommitted changes') packed $(date -u +%FT%TZ) by tools/gpu_pack.sh pack $B" > .gpubin/PACKED
}
peer() { sh ../shared/peer/llamacpp.sh pack .peer && bash tools/peer_prebuilt.sh pack; }
step setup make setup
step vocabulary vocab
step gpu-programs pack
step peer peer
echo "prep: all done ($(date -u +%T) UTC)"
