#!/bin/bash
# THE RECORD OF A DELETED SWITCH: STRATA_CUDA_MM_TILE was measured by this script (H100, 14:21 UTC call:
# parity passed, every shape but FFN down slower) and deleted; its code is commit c68deb8
# (docs/BENCHMARKS.md, "2026-12-05 (13:54 session)"). It no longer runs against main. Its matmul loop
# moved into gpu_call.sh's mm_bench_rows after the call (the same runs).
# 2026-12-05 (13:54 session): STRATA_CUDA_MM_TILE, ORD 3 (the serial order's one-float launches: rows of
# at most 32 blocks, the 1.5B's and the MoE's matmuls) in tiles of 128 rows x 64 columns, eight warps of
# 32 x 32 outputs, written without a GPU. ptxas (sm_90): the 32-value formats 105-119 registers (two CTAs
# an SM), the 256-value ones 195-255 (one CTA an SM: at a cap of 128 they spilled 100-420 bytes).
# `test_gpu_mm bench` at the 1.5B's shapes (m, k) = (16384, 2048) gate/up, (3072, 2048) q/k/v,
# (2048, 8192) down, and issue 17's (4096, 14336) (ORD 2: Q4_K / IQ3_XXS in 128-row tiles too; Q4_0's
# SERX 4 instance keeps 64), n 512, TILE 0 / 1 alternated, two rounds (4 weight copies: L2-resident below ~15 MB
# a copy: compare the settings, not the shapes); prompt 512 end to end with TILE 0 / 2 alternated; then
# the whole suite (test_gpu_mm runs TILE 1 with WPRE 7 / 3 / 1, plain and grouped) and test_gpu_widths
# under TILE 2.
# Carry .gpubin/bins.tar.xz, .gpubin/lib.
# Prediction: parity passes; Q4_K +10-25 % TFLOPS at gate/up (fragment loads a third fewer), less at
# q/k/v and wo (half the CTAs: 96 / 64 tiles of 128 at 8 column tiles < 132 SMs: TILE 1 may lose
# there, TILE 2 keeps 64 rows); the 32-value formats (two CTAs an SM) +10-20 %; prompt 512 of the 1.5B
# +5-10 % with TILE 2; SmolLM2 even with TILE 2 (its grids are small: 64-row tiles kept).
set -u
. bench/gpu_call.sh
gb_unpack
mm_bench_rows "16384,2048 3072,2048 2048,8192 4096,14336" Q4_K,IQ3_XXS,Q4_0 2 \
  "TILE0=$g/bin/test_gpu_mm,STRATA_CUDA_MM_TILE=0 TILE1=$g/bin/test_gpu_mm,STRATA_CUDA_MM_TILE=1"
alt_runs 2 "1b moe48" "STRATA_CUDA_MM_TILE=0 STRATA_CUDA_MM_TILE=2" 2 'prompt'
alt_runs 1 "smollm2" "STRATA_CUDA_MM_TILE=0 STRATA_CUDA_MM_TILE=2" 2 'prompt'
t
# the whole suite (test_gpu_mm's TILE 1 configurations in it), then test_gpu_widths under TILE 2
gpu_suite 250
t
STRATA_CUDA_MM_TILE=2 timeout 60 $g/bin/test_gpu_widths 2>&1 | tail -1
t
