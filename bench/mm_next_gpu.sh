#!/bin/bash
# RAN 2026-12-03 (15:42 session, call 1, programs packed from 6cf26d9's tree: b53a42e + the q/k-norm fold): results and decisions in
# docs/BENCHMARKS.md and docs/KERNELS.md ("The canonical order's cost, measured"). Part 2's
# STRATA_CUDA_MM_GROUPED=3 was removed after it (no gain), so that part now times the default twice.
# One device call (written 2026-12-03 without device time; run it first): the GPU suite, then the
# questions the dev machine cannot answer (docs/KERNELS.md, "Written without device time, to
# measure first"), then llama.cpp beside strata:
#   1. what the canonical counter costs: `test_gpu_mm bench-order` (the two-tile kernel against its
#      walk-order instrument: one float per output, two CTAs per SM; not canonical bits) on the
#      issue's shape and on the 1.5B shape's matmuls (L2-resident at K 2048: labelled so);
#   2. whether the grouped (MoE) matmul gains from 16 warps (STRATA_CUDA_MM_GROUPED=3, same bits):
#      the 48-layer MoE's prompt of 512, 2 / 3 alternating, two rounds, ids hashes compared.
# Prediction (before any run): 1. walk order x1.05-1.25 on the 256-value formats (the 16-warp
#   canonical kernel, same 16 warps per SM, measured 0.93x: occupancy is not what limits), x1.0-1.1
#   on Q4_0 / Q8_0 (151 registers there, no spill either way); 2. MoE prompt +5-20 %.
#   3. (issue 20, item 3) STRATA_Q6_SWAR now also reads a cooperative Q6_K part's 16 ql and 16 qh
#      bytes by five 4-byte loads and funnel shifts each (df_ld128_a2) where the 2-aligned 210-byte
#      blocks took eight 2-byte loads: SASS of the T = 1 kernel 144 -> 90 weight loads, 2,360 ->
#      2,400 instructions in all (the shifts): a Q6_K matvec (the 1.5B's head) and the 1.5B
#      decode, 1 / 0 alternating. Prediction: within +-5 %; it helps only if the loads' issue
#      (not the instruction count) is what the kernel waits on.
# Decision rules: 1. >= x1.5 on a format: the canonical order costs more than a third there (the
#   contract's threshold for a GPU order of its own); below: the gap to llama.cpp's MMQ lies in the
#   tile and the decode, not the order. 2. STRATA_CUDA_MM_GROUPED default 3 if both rounds gain
#   beyond the rounds' spread with equal hashes; else remove the variant (KERNELS, "Variants deleted").
#   3. the device table's Q6 bit on for Hopper if the matvec and the decode gain in both rounds.
# 4. the peer in the same call, if carried: llama-bench pp512 / tg128 on the same three files
#    beside strata's prompt and decode (the ratios the issues ask for, none since the 03:27 session).
# Usage on the GPU machine (carry .gpubin/bins.tar.xz and .gpubin/lib, packed here by
# `bash tools/gpu_pack.sh pack /tmp/build`; for 4. also .peer/lcb-cuda.tar.xz, 21.9 MB since the
# SASS-only build, and .peer/smollm2-vocab.gguf: ~53 MB in all with the tree): bash bench/mm_next_gpu.sh
set -u
. bench/gpu_call.sh
git log --oneline -1 | cut -c1-60
bash tools/gpu_pack.sh run "$OUT" 2>&1 | grep -E "passed|FAIL|fail" | tail -25
echo "suite done"; t
M=$g/bin/test_gpu_mm
$M bench-order all | tail -10; t
for s in 2048,2048 2048,16384 8192,2048; do $M bench-order Q4_K,Q6_K "$s" 2>&1 | tail -2; done
echo "(K 2048 / 8192 rows: four copies of 2-19 MB, L2-resident)"; t
for r in 1 2; do for m in 2 3; do
  echo -n "moe48 prompt, STRATA_CUDA_MM_GROUPED=$m r$r: "; STRATA_CUDA_MM_GROUPED=$m $B moe48 2 | grep "prompt 512"
done; done; t
# a third arm, no new code: the pipelined kernel for every pass (grouped ones too; 256-value
# formats measured 3-21 % slower pipelined on full tiles, never on half-empty grouped ones)
echo -n "moe48 prompt, STRATA_CUDA_MM_PIPE=1: "; STRATA_CUDA_MM_PIPE=1 $B moe48 2 | grep "prompt 512"; t
$g/bin/bench_gpu variants matvec only=Q6_K 2>&1 | tail -4; t
for r in 1 2; do for q in 0 1; do
  echo -n "1b decode, STRATA_Q6_SWAR=$q r$r: "; STRATA_Q6_SWAR=$q E2E_SKIP_MAIN=1 E2E_DEPTH=16 $B 1b 1 | grep -i depth
done; done; t
if [ -f .peer/lcb-cuda.tar.xz ] && [ $(( $(date +%s) - T0 )) -lt 420 ] && peer_up; then
  for s in smollm2 1b moe48; do
    echo -n "strata $s: "; $B $s 2 | grep "prompt 512"
    echo "llama.cpp $s:"; timeout 120 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 2 2>&1 | grep -E "pp512|tg128"
  done; t
else echo "peer: not run (not carried, no time left, or the unpack failed)"; fi
