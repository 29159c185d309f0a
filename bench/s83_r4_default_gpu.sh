#!/bin/bash
# Written 2026-12-06 (22:03 session) for the next session's first call: the GPU suite with STRATA_CUDA_MOE_R4=1
# exported (every program's default: the copies are made at upload, the T = 1 expert kernels read them; the bits must
# not move), so that R4 can become the default; then (REST=1) the H200 rows: STRATA_CUDA_MOE_R4 0 / 1 alternated
# on moe48 and moe48_iq2 and llama.cpp tg128 on the same files when the carried build is there. Every line goes to
# $OUT/s83.txt as it comes (the 22:03 session's call A lost its A/B to a `| tail` when the call ran out).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf (and .peer/lcb-cuda.tar.xz for the peer).
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s83.txt") 2>&1
export STRATA_CUDA_MOE_R4=1
echo "the suite with STRATA_CUDA_MOE_R4=$STRATA_CUDA_MOE_R4"
gpu_suite "${SUITE_S:-420}"
t
if [ "${REST:-0}" = 1 ]; then
  unset STRATA_CUDA_MOE_R4
  gb_unpack
  e2e_ab "${ROUNDS:-2}" "moe48 moe48_iq2" STRATA_CUDA_MOE_R4 "0 1" 1
  t
  if [ -f .peer/lcb-cuda.tar.xz ] && peer_up; then peer_tg "moe48 moe48_iq2"; else echo "peer: not carried"; fi
  t
fi
