#!/bin/bash
# Written 2026-12-07 (07:21 session) for wip/fold after ANORM's deletion (HQ, STRATA_CUDA_MOE_FAST bit 1048576, in the
# default 1359871; packed 08:34). One call: the two 48-layer files in the background during the GPU suite (defaults:
# HQ on), then bench_e2e decode with STRATA_CUDA_MOE_FAST 311295 (main's default) / 1359871, alternated, ROUNDS
# rounds on both files, llama.cpp tg128 after. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf,
# .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes; 311295 back at main's 422-425 (s87's 388-390 was the ANORM build's down kernels);
# HQ +1-2 % over it on both files (s87: +1.0-1.8 % within that build); ids equal.
# (After the call its steps moved into bench/gpu_call.sh's suite_then_ab, the same commands in the same order.)
set -u
. bench/gpu_call.sh
suite_then_ab s88 STRATA_CUDA_MOE_FAST "311295 1359871" "${ROUNDS:-2}"
