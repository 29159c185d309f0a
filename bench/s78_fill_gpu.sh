#!/bin/bash
# Written 2026-12-06 (17:09 session; not run there: the session's device time was spent): three opt-in bits of
# STRATA_CUDA_MOE_FAST on branch wip/fill for the T = 1 IQ2_XXS / IQ3_XXS expert kernels (calls 2-3 of that
# session: the two forms that grew a CTA's shared table and its fill lost 5 % and 1.1 %):
#   131072  the ksigns masks (1 KB of an IQ3_XXS CTA's 2 KB copy) not copied where the signs come by ALU (bit
#           512), which never reads them
#   65536   IQ2_XXS experts' grid (2 KB) in shared memory as bit 8 keeps IQ3_XXS's, instead of 64-bit loads
#           from global memory through 64-bit addresses (bit 8 gained +1.7 % on IQ3_XXS, 2026-12-03)
#   262144  the down kernel's 4 rows a warp a row a lane group, lane k on part k of every super-block (all 32
#           lanes decode; a 768-value row is 3 super-blocks, so block b by group b left 8 lanes idle), the
#           groups' activation loads the same addresses (bit 16384's items, which lost, loaded different ones)
# The parity programs, then A/B, ROUNDS rounds (default 2): moe48 (IQ3_XXS) 49151 / 180223 (+131072) / 311295
# (+262144); moe48_iq2 (IQ2_XXS) 49151 / 114687 (+65536) / 245759 (+65536 +131072) / 311295 (+262144);
# llama.cpp tg128 on both files; then the suite with every bit that won every round (131072: on moe48; 65536:
# 114687 on moe48_iq2; 262144: on both shapes) added to 49151 as every program's default.
# Pack on the branch first: `bash tools/gpu_pack.sh pack build`.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: 131072 +0-1 % on moe48; 65536 +1-2 % on moe48_iq2; 262144 +2-4 % on both (the down launch ~20 %
# of the MoE step's expert time; a quarter of its lanes were idle).
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
R=${ROUNDS:-2}
e2e_ab "$R" "moe48" STRATA_CUDA_MOE_FAST "49151 180223 311295" 1 | tee /tmp/ab3.txt
e2e_ab "$R" "moe48_iq2" STRATA_CUDA_MOE_FAST "49151 114687 245759 311295" 1 | tee /tmp/ab2.txt
if peer_up; then
  peer_tg "moe48 moe48_iq2"
fi
t
read -r w_noksm w_grp3 < <(ab_wins /tmp/ab3.txt 3)
read -r w_smem2 w_both2 w_grp2 < <(ab_wins /tmp/ab2.txt 4)
echo "won every round: 131072 on moe48 $w_noksm; 262144 on moe48 $w_grp3, on moe48_iq2 $w_grp2; 65536 on moe48_iq2 $w_smem2 (with 131072: $w_both2)"
v=49151
[ "$w_noksm" = 1 ] && v=$((v + 131072))
[ "$w_smem2" = 1 ] && v=$((v + 65536))
[ "$w_grp3" = 1 ] && [ "$w_grp2" = 1 ] && v=$((v + 262144))
export STRATA_CUDA_MOE_FAST=$v
echo "the suite with STRATA_CUDA_MOE_FAST=$v"
gpu_suite 240
t
