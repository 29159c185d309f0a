#!/bin/bash
# 2026-12-05 (15:40 session): the weights' 2-byte aligned words by 4-byte loads (ld_run_a2 in fetch_w:
# Q4_0 / Q5_0 / Q8_0 / Q6_K / Q3_K / IQ4_NL / IQ3_XXS / IQ2_XXS; N words of a run by N aligned loads and
# funnel shifts, plus one 2-byte load where the run starts 2 mod 4, instead of 2 N 2-byte loads).
# Same values, so the same bits. Why: ncu (call 4) counted Q4_0's weight loads at 4.8 bytes used of a
# 32-byte sector, ~640 of a step's L1 wavefronts; Q6_K's part loads 26 words a step by 52 2-byte loads.
# 1. the whole GPU suite on these programs (the final code if this change stays)
# 2. old (a7560c9's test_gpu_mm) against new, n 512, three shapes, alternated, two rounds. Peer: none.
# 3. old / new bench_e2e, 1.5B and MoE (prompt 512, decode), two rounds. Peer: none.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz.
# Prediction: the suite passes (31,612); Q6_K +10-25 % at (4096, 14336), Q8_0 +5-10 %, Q4_0 / IQ4_NL
# +0-5 % (one word a part: two loads either way where the block is 2 mod 4), IQ3_XXS +0-5 %; the 1.5B
# prompt even (its Q6_K is the head), the MoE prompt +0-2 %.
set -u
. bench/gpu_call.sh
gpu_suite 400
t
old_unpack
mm_bench_rows "4096,14336 16384,2048 2048,8192" Q4_0,Q8_0,Q6_K,Q3_K,IQ3_XXS,IQ4_NL 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "1b moe48" 2 "old=/tmp/old/bench_e2e new=$B"
