#!/bin/bash
# Written 2026-12-07 (07:21 session): make test-gpu on main's final code (programs packed 06:49-06:51 from 35aa018's
# source = 9c7f157's; later commits docs only), with the switches at their defaults (STRATA_CUDA_MOE_R4 default 1,
# nothing exported), then the R4 0 / 1 / 2 / 3 decode row on the 48-layer files and llama.cpp tg128 on them.
# One call; the two 48-layer files are written in the background (setsid, cores 4-15) during the suite.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes (the budget moved into C, no kernel changed); on an H200 R4 1 beats 0 by
# +4-8 % (moe48) and +15-20 % (moe48_iq2) as on the H100; R4 3 loses to 1 by ~7 % as on the H100; R4 2 between.
# (After the call its steps moved into bench/gpu_call.sh's suite_then_ab, the same commands in the same order.)
set -u
. bench/gpu_call.sh
suite_then_ab s85 STRATA_CUDA_MOE_R4 "${VALS:-0 1 2 3}" "${ROUNDS:-1}"
