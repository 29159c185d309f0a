#!/bin/bash
# Written 2026-12-07 (07:21 session): make test-gpu on main's final code (programs packed 06:49-06:51 from 35aa018's
# source = 9c7f157's; later commits docs only), with the switches at their defaults (STRATA_CUDA_MOE_R4 default 1,
# nothing exported), then the R4 0 / 1 / 2 / 3 decode row on the 48-layer files and llama.cpp tg128 on them.
# One call; the two 48-layer files are written in the background (setsid, cores 4-15) during the suite.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes (the budget moved into C, no kernel changed); on an H200 R4 1 beats 0 by
# +4-8 % (moe48) and +15-20 % (moe48_iq2) as on the H100; R4 3 loses to 1 by ~7 % as on the H100; R4 2 between.
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s85.txt") 2>&1
mkdir -p /tmp/gbs && tar xJf .gpubin/bins.tar.xz -C /tmp/gbs
SHAPES=${SHAPES:-moe48 moe48_iq2}
setsid bash -c 'for s in '"$SHAPES"'; do BENCH_CPU=1 E2E_KV=none taskset -c 4-15 /tmp/gbs/bin/bench_e2e $s 1; ls -la /tmp/strata-e2e-$s.gguf; done > /tmp/synth.log 2>&1; echo done >> /tmp/synth.log' < /dev/null > /dev/null 2>&1 &
env | grep '^STRATA_' || echo "no STRATA_ switch exported: the suite runs the defaults"
gpu_suite "${SUITE_S:-330}"
t
while ! grep -q done /tmp/synth.log 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt ${SYNTH_WAIT:-420} ]; do sleep 5; done
cat /tmp/synth.log; t
gb_unpack
e2e_ab "${ROUNDS:-1}" "$SHAPES" STRATA_CUDA_MOE_R4 "${VALS:-0 1 2 3}" 1
t
if peer_up; then peer_tg "$SHAPES"; else echo "peer: the unpack failed"; fi
t
