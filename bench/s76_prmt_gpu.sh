#!/bin/bash
# Written 2026-12-06 (17:09 session): STRATA_CUDA_MOE_FAST bit 65536 (opt-in until measured): IQ3_XXS experts at
# T = 1 (with bits 8 and 512) form each signed grid word by one byte permute of the grid word and its bytewise
# negation (shared memory, 2 KB) with a selector per ksigns index (128 words), instead of the sign bits by
# parity and a multiply, then an xor and an add per word (df_iq3xxs_part_p; test_decode_fast checks every grid
# entry x every index on the CPU).
# The parity programs, then A/B 49151 / 114687 on moe48 (IQ3_XXS experts, 3 rounds), llama.cpp tg128 on the
# file, then the suite: with 114687 as every program's default when it was faster in every round (the default
# would move), else with the packed default 49151.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Prediction: the gate/up launch's decode ~30 % fewer instructions a part (~17 -> ~6 an 8-weight group for the
# signs); the step +2-4 %.
set -u
. bench/gpu_call.sh
gb_unpack
moe_bit_ab 3 "moe48" 49151 114687 300
