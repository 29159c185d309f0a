#!/bin/bash
# One device call that leaves a session's GPU record complete: the GPU suite on the tree, then
# strata's defaults and llama.cpp on the same files in the same minutes (docs/BENCHMARKS.md's
# tables: decode after 16 and after 4,096 tokens, f16 and int8 KV, prompt of 512).
#   here:  bash tools/gpu_pack.sh pack /tmp/build; bash tools/peer_prebuilt.sh pack (once: ~35 min
#          of this machine's cores; it stays in .peer/); python3 tools/vocab_only.py MODEL
#          .peer/smollm2-vocab.gguf (once)
#   calls: the prebuilt peer (~40 MB) does not fit beside the programs (~23 MB) and the tree in one
#          call's 64 MiB, so two consecutive calls (the machine stays warm 30 s; /tmp persists):
#          1. carry [".gpubin/bins.tar.xz", ".gpubin/lib", ".peer/smollm2-vocab.gguf", ".peer/llamacpp.sh",
#             ".peer/llamacpp-src.tar.xz", ".peer/lcb-cuda.parts", ".peer/lcb-cuda.part00"] (~58 MB):
#             suite and strata; part 00 stashed in /tmp (no llama.cpp rows)
#          2. the same with ".peer/lcb-cuda.part01" instead of part00 and SKIP_SUITE=1: strata
#             again and llama.cpp beside it, same files, same minutes
# Planned ~300 s of the call's 600 on 16 cores: files 40, suite 95, strata 60, llama.cpp 90. When
# the prebuilt peer does not run there, the peer's build starts in the background (cores 2-15,
# ~420 s) and the llama.cpp rows come only if it ends in time (SESSION_LIMIT, default 560 s).
# SKIP_SUITE=1 leaves the suite out; SHAPES (default "smollm2 1b moe48"). Written 2026-12-03 after
# the session's device time was spent: its commands are those of that session's calls, the
# script as a whole has not run on the GPU yet.
set -u
T0=$(date +%s); lim=${SESSION_LIMIT:-560}; shapes=${SHAPES:-"smollm2 1b moe48"}
t() { echo "t=$(( $(date +%s) - T0 )) s"; }
export LD_LIBRARY_PATH=$PWD/.gpubin/lib
export E2E_TOKENIZER=$PWD/.peer/smollm2-vocab.gguf
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
git log --oneline -1 2>/dev/null
peer=0; bash tools/peer_prebuilt.sh unpack; prc=$?
if [ $prc = 0 ]; then peer=1
elif [ $prc = 3 ]; then peer=2   # a part of the prebuilt peer stashed in /tmp: the next call brings the rest
else (setsid nohup taskset -c 2-15 bash .peer/llamacpp.sh build .peer/llamacpp-src.tar.xz > /tmp/lcb.out 2>&1 &); fi
g=/tmp/gb; rm -rf $g; mkdir -p $g
if [ -f .gpubin/bins.tar.xz ]; then tar xJf .gpubin/bins.tar.xz -C $g
else tar xJf .gpubin/bench.tar.xz -C $g; SKIP_SUITE=1; echo "bench.tar.xz only: no suite in this call"; fi
B=$g/bin/bench_e2e
for s in $shapes; do E2E_SKIP_MAIN=1 E2E_DEPTH=16 $B $s 1 | tail -1; done
echo "files written"; t
if [ "${SKIP_SUITE:-0}" != 1 ]; then
  bash tools/gpu_pack.sh run ${OUT:-/tmp} 2>&1 | grep -E "passed|FAIL|fail" | tail -25
  echo "suite done"; t
fi
for s in $shapes; do
  echo "== $s strata: prompt 512 + decode (bench_e2e main run), then depth 16 / 4,096 f16, 4,096 int8"
  $B $s 2 | grep "prompt 512"
  E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 $B $s 1 | grep -i depth
  E2E_KV=int8 E2E_SKIP_MAIN=1 E2E_DEPTH=4096 $B $s 1 | grep -i depth
  t
done
if [ $peer = 2 ]; then echo "llama.cpp: next call (a part of the prebuilt peer stashed)"; exit 0; fi
if [ $peer = 0 ]; then
  while [ ! -x /tmp/lcb/bin/llama-bench ] && [ $(( $(date +%s) - T0 )) -lt $(( lim - 120 )) ]; do sleep 5; done
fi
if [ -x /tmp/lcb/bin/llama-bench ]; then
  if [ -f /tmp/lcb/env.sh ]; then . /tmp/lcb/env.sh; else export LD_LIBRARY_PATH=/tmp/lcb/bin:$LD_LIBRARY_PATH; fi
  for s in $shapes; do
    [ $(( $(date +%s) - T0 )) -lt $lim ] || { echo "stopped: time"; break; }
    echo "== $s llama.cpp: pp512, tg128 at depth 0 and 4,096 (f16), tg128 at 4,096 (q8_0 KV)"
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -d 0,4096 -r 2 2>/dev/null | grep -E "pp512|tg128"
    timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -d 4096 -r 1 -ctk q8_0 -ctv q8_0 2>/dev/null | grep -E "tg128"
    t
  done
else
  echo "llama.cpp: not ready in time (Peer: none)"; tail -3 /tmp/lcb.out 2>/dev/null
fi
