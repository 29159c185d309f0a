#!/bin/bash
# 2026-12-07 (13:52 session), calls 3-4 (inline; this file is their commands), on the warm machine of bench/s90_r4e_gpu.sh
# (its programs in /tmp/gb, both 48-layer files written): STRATA_CUDA_PREFETCH 7 (the default then) / 5 (bit 2 off:
# the MoE gate/up CTAs no longer prefetch their experts' down matrices into L2), alternated; call 3 also ran ncu of
# the R4 launches with and without R4E (bench/gpu_call.sh moe_ncu; only on branch wip/r4e2's programs, where the bit
# exists). Peer: none (a switch's A/B; llama.cpp's tg128 on these files ran in call 1, minutes before).
# Prediction (written in s91's header before the run): even (+-1 %). Outcome: 5 won every round (+3-6 %).
. bench/gpu_call.sh; exec > >(tee $OUT/s94.txt) 2>&1; gb_unpack
e2e_ab 2 moe48 STRATA_CUDA_PREFETCH "7 5" 1; t                       # call 3
e2e_ab 2 moe48_iq2 STRATA_CUDA_PREFETCH "7 5" 1; e2e_ab 1 moe48 STRATA_CUDA_PREFETCH "5 7" 1; t   # call 4
