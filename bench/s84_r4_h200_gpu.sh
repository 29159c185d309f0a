#!/bin/bash
# Written 2026-12-07 (00:47 session) for branch wip/r4-default's programs; run in the 04:17 session (H100: calls 1
# and 2 of docs/BENCHMARKS.md "2026-12-07 (04:17 session)"); that branch is main's code since (pack: tools/gpu_pack.sh pack).
# One script, two calls on one warm machine (PART=1, then PART=2 right after):
#   PART=1: the two 48-layer files written in the background (setsid, cores 4-15: bench_e2e with BENCH_CPU=1 and a
#           bad E2E_KV writes the file, maps it and exits), the GPU suite with STRATA_CUDA_MOE_R4=1 exported (so R4
#           can become the default: the bits must not move; test_gpu_variants also runs R4 = 3), then
#           one round of bench_e2e decode with STRATA_CUDA_MOE_R4 0 / 1 / 3 on both files, llama.cpp tg128 on both
#           files (the carried build).
#   PART=2: bench_e2e decode with STRATA_CUDA_MOE_R4 0 / 1 / 3 / 2 alternated (ROUNDS rounds) on moe48 and
#           moe48_iq2, and llama.cpp tg128 again at the end (the peer before and after strata's rows).
# Every line goes to $OUT/s84-PART.txt as it comes. Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes with R4 = 1 and 3; on the H200 R4 1 beats 0 by +4-8 % (moe48) and +15-20 %
# (moe48_iq2), as on the H100; R4 3 (loads first, activations staged) beats 1 by 3-8 %.
set -u
. bench/gpu_call.sh
part=${PART:-1}
exec > >(tee -a "$OUT/s84-$part.txt") 2>&1
if [ "$part" = 1 ]; then
  mkdir -p /tmp/gbs && tar xJf .gpubin/bins.tar.xz -C /tmp/gbs
  SHAPES=${SHAPES:-moe48 moe48_iq2}
  setsid bash -c 'for s in '"$SHAPES"'; do BENCH_CPU=1 E2E_KV=none taskset -c 4-15 /tmp/gbs/bin/bench_e2e $s 1; ls -la /tmp/strata-e2e-$s.gguf; done > /tmp/synth.log 2>&1; echo done >> /tmp/synth.log' < /dev/null > /dev/null 2>&1 &
  export STRATA_CUDA_MOE_R4=1
  echo "the suite with STRATA_CUDA_MOE_R4=$STRATA_CUDA_MOE_R4"
  gpu_suite "${SUITE_S:-330}"
  t
  unset STRATA_CUDA_MOE_R4
  while ! grep -q done /tmp/synth.log 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt ${SYNTH_WAIT:-420} ]; do sleep 5; done
  cat /tmp/synth.log; t
  gb_unpack
  e2e_ab 1 "$SHAPES" STRATA_CUDA_MOE_R4 "${VALS:-0 1 3}" 1
  t
  if peer_up; then peer_tg "$SHAPES"; else echo "peer: the unpack failed"; fi
  t
else
  gb_unpack
  e2e_ab "${ROUNDS:-2}" "moe48 moe48_iq2" STRATA_CUDA_MOE_R4 "${VALS:-0 1 3 2}" 1
  t
  if peer_up; then peer_tg "moe48 moe48_iq2"; else echo "peer: the unpack failed"; fi
  t
fi
