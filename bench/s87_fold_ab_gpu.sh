#!/bin/bash
# Written 2026-12-07 (07:21 session): the fold bits' A/B alone, for the call after bench/s85 (warm: the 48-layer files
# and llama.cpp already in /tmp; cold: both made here). Carry .gpubin/fold_e2e.tar.xz (wip/fold's bench_e2e, packed
# 07:46), .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# bench_e2e decode with STRATA_CUDA_MOE_FAST 311295 (default) / 1359871 (+ 1048576 HQ) / 2408447 (+ 2097152 ANORM) /
# 3457023 (both), alternated, ROUNDS rounds on moe48, one on moe48_iq2; llama.cpp tg128 on both files after.
# Predictions, written after reading KERNELS' record of the earlier folds (a counter per h block: H200 261 -> 256,
# 250 -> 230; STRATA_CUDA_NORM_FOLD with 128 threads: MoE -5.5 %): HQ -1 to -3 % (the same design as the one
# measured slower twice); ANORM -1 to +2 % (the norm by 256 threads as the launch it replaces, but a fence and an
# atomic in each of the 512 down CTAs); ids equal in every run.
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s87.txt") 2>&1
if [ ! -f /tmp/strata-e2e-moe48_iq2.gguf ]; then
  mkdir -p /tmp/gf && tar xJf .gpubin/fold_e2e.tar.xz -C /tmp/gf
  for s in moe48 moe48_iq2; do BENCH_CPU=1 E2E_KV=none /tmp/gf/bin/bench_e2e $s 1 > /dev/null 2>&1; ls -la /tmp/strata-e2e-$s.gguf; done
fi
rm -rf /tmp/gf && mkdir -p /tmp/gf && tar xJf .gpubin/fold_e2e.tar.xz -C /tmp/gf && B=/tmp/gf/bin/bench_e2e
t
e2e_ab "${ROUNDS:-2}" "moe48" STRATA_CUDA_MOE_FAST "311295 1359871 2408447 3457023" 1 | tee /tmp/ab1.txt
e2e_ab 1 "moe48_iq2" STRATA_CUDA_MOE_FAST "311295 1359871 2408447 3457023" 1 | tee /tmp/ab2.txt
echo "wins over 311295 (HQ ANORM both), moe48: $(ab_wins /tmp/ab1.txt 4)"
t
if [ -x /tmp/lcb/bin/llama-bench ] || peer_up; then . /tmp/lcb/env.sh 2>/dev/null; peer_tg "moe48 moe48_iq2"; else echo "peer: the unpack failed"; fi
t
