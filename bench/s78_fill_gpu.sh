#!/bin/bash
# Written 2026-12-06 (17:09 session; not run there: the session's device time was spent): two opt-in bits of
# STRATA_CUDA_MOE_FAST on branch wip/fill, both about the T = 1 expert kernels' shared-memory tables (calls 2-3 of
# that session: the two forms that grew a CTA's table and its fill lost 5 % and 1.1 %):
#   131072  the ksigns masks (1 KB of an IQ3_XXS CTA's 2 KB copy) not copied where the signs come by ALU (bit
#           512), which never reads them
#   65536   IQ2_XXS experts' grid (2 KB) in shared memory as bit 8 keeps IQ3_XXS's, instead of 64-bit loads
#           from global memory through 64-bit addresses (bit 8 gained +1.7 % on IQ3_XXS, 2026-12-03)
# The parity programs, then A/B: moe48 (IQ3_XXS) 49151 / 180223 (+131072); moe48_iq2 (IQ2_XXS) 49151 / 114687
# (+65536) / 245759 (+65536 +131072); llama.cpp tg128 on both files; then the suite with the winning value of
# each shape as every program's default when it won every round (both winning: 245759), else the packed default.
# Pack on the branch first: `bash tools/gpu_pack.sh pack build`.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz. ROUNDS=2 for a short call.
# Predictions: 131072 +0-1 % on moe48 (half the fill); 65536 +1-2 % on moe48_iq2.
set -u
. bench/gpu_call.sh
gb_unpack
moe_parity_runs
t
R=${ROUNDS:-3}
e2e_ab "$R" "moe48" STRATA_CUDA_MOE_FAST "49151 180223" 1 | tee /tmp/ab3.txt
e2e_ab "$R" "moe48_iq2" STRATA_CUDA_MOE_FAST "49151 114687 245759" 1 | tee /tmp/ab2.txt
if peer_up; then
  peer_tg "moe48 moe48_iq2"
fi
t
# every round: the variant's decode above 49151's (lines in order within a round; moe48_iq2: 3 lines a round)
w3=$(grep -o 'decode 128: [0-9]*' /tmp/ab3.txt | awk '{v[NR] = $3} END {w = 1; for (i = 1; i < NR; i += 2) if (v[i + 1] <= v[i]) w = 0; print (NR >= 4 && w) ? 1 : 0}')
w2=$(grep -o 'decode 128: [0-9]*' /tmp/ab2.txt | awk '{v[NR] = $3} END {w = 1; for (i = 1; i < NR; i += 3) if (v[i + 2] <= v[i]) w = 0; print (NR >= 6 && w) ? 1 : 0}')
echo "180223 faster on moe48 in every round: $w3; 245759 faster on moe48_iq2 in every round: $w2"
if [ "$w3" = 1 ] && [ "$w2" = 1 ]; then export STRATA_CUDA_MOE_FAST=245759
elif [ "$w3" = 1 ]; then export STRATA_CUDA_MOE_FAST=180223
elif [ "$w2" = 1 ]; then export STRATA_CUDA_MOE_FAST=114687; fi
echo "the suite with STRATA_CUDA_MOE_FAST=${STRATA_CUDA_MOE_FAST:-49151 (the packed default)}"
gpu_suite 240
t
