#!/bin/bash
# 2026-12-05 (17:38 session), call 2: wip/pin with the unconditional step loads kept to the formats whose
# words are loaded raw (PIN: Q4_0 / Q5_0 / Q8_0 / IQ4_NL; call 1 measured Q4_1 -1 to -3 % and MXFP4
# -1 to -4 % with them); the whole suite on these programs; then the profiles of bench/s39 (Q4_0 / Q8_0
# after the pinned words, Q6_K / IQ3_XXS) into $OUT. Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .gpubin/old.tar.xz. Peer: none (old against new programs; profiles).
# Prediction: suite 31,612 passed; Q4_1 / MXFP4 back to main's figures (within 1 %), Q4_0 / Q5_0 / Q8_0
# / IQ4_NL as call 1 (+3-23 %).
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
gpu_suite 330
t
mm_bench_rows "4096,14336 14336,4096" Q4_0,Q5_0,Q8_0,IQ4_NL,Q4_1,MXFP4 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
bash bench/s39_profile_gpu.sh 2>&1 | grep -v "^NVIDIA"
