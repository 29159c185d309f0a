#!/bin/bash
# Written 2026-12-07 (07:21 session) for wip/fold after ANORM's deletion (HQ, STRATA_CUDA_MOE_FAST bit 1048576, in the
# default 1359871; packed 08:34). One call: the two 48-layer files in the background during the GPU suite (defaults:
# HQ on), then bench_e2e decode with STRATA_CUDA_MOE_FAST 311295 (main's default) / 1359871, alternated, ROUNDS
# rounds on both files, llama.cpp tg128 after. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf,
# .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; 311295 back at main's 422-425 (s87's 388-390 was the ANORM build's down kernels);
# HQ +1-2 % over it on both files (s87: +1.0-1.8 % within that build); ids equal.
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s88.txt") 2>&1
mkdir -p /tmp/gbs && tar xJf .gpubin/bins.tar.xz -C /tmp/gbs
SHAPES=${SHAPES:-moe48 moe48_iq2}
setsid bash -c 'for s in '"$SHAPES"'; do BENCH_CPU=1 E2E_KV=none taskset -c 4-15 /tmp/gbs/bin/bench_e2e $s 1; ls -la /tmp/strata-e2e-$s.gguf; done > /tmp/synth.log 2>&1; echo done >> /tmp/synth.log' < /dev/null > /dev/null 2>&1 &
env | grep '^STRATA_' || echo "no STRATA_ switch exported: the suite runs the defaults"
[ "${SUITE_S:-330}" -gt 0 ] && gpu_suite "${SUITE_S:-330}"
t
while ! grep -q done /tmp/synth.log 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt ${SYNTH_WAIT:-420} ]; do sleep 5; done
cat /tmp/synth.log; t
gb_unpack
e2e_ab "${ROUNDS:-2}" "$SHAPES" STRATA_CUDA_MOE_FAST "311295 1359871" 1 | tee /tmp/ab.txt
t
if peer_up; then peer_tg "$SHAPES"; else echo "peer: the unpack failed"; fi
t
