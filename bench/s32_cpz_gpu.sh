#!/bin/bash
# 2026-12-05 (13:54 session), call 3: the activation copies by warps (the 256-value formats' matmul,
# WPRE bit 2, the default) without a branch around each copy: columns past T zero-filled by the
# copies' source size, the 8 columns unrolled, so ptxas puts its three never-executed
# `@!PT LDS RZ, [RZ]` before 2 runs of LDGSTS a step instead of 24 (call 2's ncu: 9 a column, 8.3 M of
# the kernel's 156 M warp instructions, plus the branches around each copy). Same bytes, same bits.
# Old (c68deb8's programs = d30c17f's default paths) against new (this tree) in the same call:
# test_gpu_mm parity (new), `test_gpu_mm bench` Q4_K / IQ3_XXS / Q6_K at (16384, 2048), (3072, 2048),
# (4096, 14336), n 512, old / new alternated, two rounds; prompt 512 of the 1.5B and the MoE, old /
# new alternated, two rounds; test_gpu_widths (new). Peer: none (strata against itself).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. (Its loops moved into gpu_call.sh's
# mm_bench_rows and e2e_prog_rows after the call: the same runs.)
# Prediction: parity passes; Q4_K / IQ3_XXS +4-8 % TFLOPS (about 100-150 of ~1,190 warp instructions a
# step gone); prompt 512 of the 1.5B +3-5 %, the MoE +2-4 %.
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
mm_parity
t
mm_bench_rows "16384,2048 3072,2048 4096,14336" Q4_K,IQ3_XXS,Q6_K 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "1b moe48" 2 "old=/tmp/old/bench_e2e new=$B"
timeout 90 $g/bin/test_gpu_widths 2>&1 | tail -1
t
