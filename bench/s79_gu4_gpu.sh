#!/bin/bash
# Written 2026-12-06 (19:11 session), branch wip/gu4 (= wip/fill's three opt-in bits + the moe.cu tidy + bit
# 524288): the first GPU call of wip/fill's bits (s78's A/B without its suite) and bit 524288, the T = 1
# IQ2_XXS / IQ3_XXS gate/up kernel's warp on two rows of gate and of up (4 rows side by side, the activation
# words loaded once for 4 rows instead of 2; 768 CTAs of 8 an SM instead of 1,536 of 12).
# The parity programs, then A/B, ROUNDS rounds (default 2): moe48 (IQ3_XXS) 49151 / 180223 (+131072) / 311295
# (+262144) / 573439 (+524288); moe48_iq2 (IQ2_XXS) 49151 / 114687 (+65536) / 311295 (+262144) / 573439
# (+524288); llama.cpp tg128 on both files. The suite runs in the next call (bench/s80_suite_prof_gpu.sh) with
# the winners. Pack on the branch first: `bash tools/gpu_pack.sh pack build`.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: 131072 +0-1 % on moe48; 65536 +1-2 % on moe48_iq2; 262144 +2-4 % on both; 524288 +1-3 % on both
# (the pair's +2.9 % came from sharing activation loads across 2 rows; 4 rows share them further and halve the
# warps' fixed prologue and reduction, at 32 warps an SM instead of 48).
# Ran once, on wip/gu4's programs (BENCHMARKS 2026-12-06 19:11 session, call 1). On main only 262144 of the four bits
# exists (the default since): the others are masked off by CUDA_MOE_FAST_ALL (180223, 114687 and 573439 run as 49151).
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
R=${ROUNDS:-2}
e2e_ab "$R" "moe48" STRATA_CUDA_MOE_FAST "49151 180223 311295 573439" 1 | tee /tmp/ab3.txt
e2e_ab "$R" "moe48_iq2" STRATA_CUDA_MOE_FAST "49151 114687 311295 573439" 1 | tee /tmp/ab2.txt
if peer_up; then
  peer_tg "moe48 moe48_iq2"
fi
t
read -r w_noksm w_grp3 w_gu3 < <(ab_wins /tmp/ab3.txt 4)
read -r w_smem2 w_grp2 w_gu2 < <(ab_wins /tmp/ab2.txt 4)
echo "won every round: 131072 on moe48 $w_noksm; 65536 on moe48_iq2 $w_smem2; 262144 on moe48 $w_grp3, on moe48_iq2 $w_grp2; 524288 on moe48 $w_gu3, on moe48_iq2 $w_gu2"
t
