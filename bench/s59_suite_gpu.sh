#!/bin/bash
# 2026-12-06 (01:00 session), the last call when little device time is left: the whole GPU suite
# (`tools/gpu_pack.sh run`, what `make test-gpu` runs) on the final code alone. Carry .gpubin/bins.tar.xz,
# .gpubin/lib. Prediction: 32,666 passed (call 1's 32,800 less the deleted MOE_KQ checks of test_gpu_moe).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 170
t
