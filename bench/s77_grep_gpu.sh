#!/bin/bash
# Written 2026-12-06 (17:09 session): STRATA_CUDA_MOE_FAST bit 65536, second form (the first, signs by byte
# permutes, measured -5 % in s76 and was dropped): IQ3_XXS experts at T = 1 (with bits 8 and 512) read the grid
# from 8 interleaved copies in shared memory (8 KB), lane c of each 8-lane group copy c, so a warp's lookups
# conflict on a bank only when c and e & 3 agree (expected max ~2 lanes a bank instead of ~3.5).
# The parity programs, A/B 49151 / 114687 on moe48 (3 rounds), llama.cpp tg128 on the file, then the suite:
# with 114687 as every program's default when it was faster in every round, else with the packed default.
# ROUNDS=2 for a short call.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: from s76 (LDS wavefronts about doubled: -5 %) and bit 512 (sign lookups gone, -45 % wavefronts:
# +0.5 % with ~40 more ALU instructions a part): the grid's conflicts about halved, no new instructions:
# +1-3 %.
set -u
. bench/gpu_call.sh
gb_unpack
moe_bit_ab "${ROUNDS:-3}" "moe48" 49151 114687 240
