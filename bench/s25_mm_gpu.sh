#!/bin/bash
# Prepared 2026-12-05 (05:48 session, no device lent after its first refusal) for the next GPU call:
# STRATA_CUDA_MM_SERX=1 (the serial matmul's X instances: four blocks a step and the MMA-biased
# int -> float conversion for the 32-value formats, ORD 2 with the WPRE bits 2 and 4), written without
# device time. First the parity programs that cover it (test_gpu_mm: every format, widths 9..512,
# ORD 3 / ORD 2 / split / auto and grouped with SERX 1; test_gpu_widths: dense and MoE models against
# the CPU at every width with SERX 1); then, only if both pass, `test_gpu_mm bench F` (m 4096,
# k 14336, four weight copies beyond the L2; its n = 512 default line) with SERX 0 / 1 alternated,
# two rounds (the checksums must be equal between the two); llama.cpp's MUL_MAT on the same shape in
# the same call (and strata's with one weight copy, L2-resident like llama.cpp's: the like-for-like
# ratio); and bench_e2e SHAPE 2 (prompt 512) with SERX 0 / 1 on SmolLM2 (its 32-value rows:
# ORD 3 with 18 blocks, ORD 2 with 48), the 1.5B (Q4_K / Q6_K rows of 8 and 32 blocks: ORD 3,
# where SERX changes the decoded weights' stores only: 16-byte, conflict-free) and the 48-layer MoE.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# `bash bench/s25_mm_gpu.sh e2e`: the end-to-end A/B alone (when the first call ran out of time).
# Prediction (m 4096, k 14336, n 512): Q4_0 61.8 -> 80-110 TFLOPS (steps of 4 blocks: a quarter of
# the barriers and four blocks of loads in flight a step; no conversion instruction), Q8_0 / Q4_1 /
# IQ4_NL alike (+30-70 %); Q4_K / Q5_K / IQ3_XXS (ORD 2 with the activation copies by warps, the
# 16-byte code loads and the conflict-free 16-byte stores of the decoded weights) +10-25 %; Q6_K
# +0-10 % (its stores conflict-free, 32 bytes of spills against 4). SmolLM2 prompt 512 +3-8 %; the
# 1.5B +2-6 % (ORD 3: the stores alone); the 48-layer MoE prompt +2-5 % (grouped ORD 3, IQ3_XXS).
set -u
. bench/gpu_call.sh
gb_unpack
if [ "${1:-}" = e2e ]; then alt_runs 2 "smollm2 1b moe48" "STRATA_CUDA_MM_SERX=0 STRATA_CUDA_MM_SERX=1" 2 'prompt'; exit 0; fi
ok=1
for p in test_gpu_mm test_gpu_widths; do
  timeout 240 $g/bin/$p > /tmp/$p.txt 2>&1; rc=$?
  echo "$p rc $rc: $(tail -1 /tmp/$p.txt)"; [ $rc = 0 ] || { ok=0; grep -E "FAIL|differ" /tmp/$p.txt | head -8; }
  t
done
[ $ok = 1 ] || { echo "parity failed: no timing"; exit 1; }
F=${MM_FMTS:-Q4_0,Q8_0,Q4_1,IQ4_NL,Q4_K,Q5_K,Q6_K,IQ3_XXS}
export MM_BENCH_WIDTHS=1   # n = 512 alone
for r in 1 2; do
  for x in 0 1; do
    echo "== round $r STRATA_CUDA_MM_SERX=$x"
    STRATA_CUDA_MM_SERX=$x timeout 150 $g/bin/test_gpu_mm bench $F 2>&1 | grep -E "n=512.*default"
  done
  t
done
echo "== one weight copy (MM_BENCH_COPIES=1: L2-resident, as llama.cpp's MUL_MAT is timed), SERX 0 / 1"
for x in 0 1; do MM_BENCH_COPIES=1 STRATA_CUDA_MM_SERX=$x timeout 150 $g/bin/test_gpu_mm bench $F 2>&1 | grep -E "n=512.*default"; done
t
P=0; peer_up && P=1; echo "peer: $P"
if [ $P = 1 ]; then
  echo "== llama.cpp test-backend-ops perf -o MUL_MAT (m 4096, n 512, k 14336)"
  timeout 150 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
    grep -E "type_a=(q4_0|q8_0|q4_1|iq4_nl|q4_K|q5_K|q6_K|iq3_xxs)," | grep -E "TFLOPS" | head -20; t
fi
[ $(( $(date +%s) - T0 )) -gt 420 ] && { echo "end-to-end A/B skipped (time): bash bench/s25_mm_gpu.sh e2e"; exit 0; }
alt_runs 2 "smollm2 1b moe48" "STRATA_CUDA_MM_SERX=0 STRATA_CUDA_MM_SERX=1" 2 'prompt'
