#!/bin/bash
# (Its start is now bench/gpu_call.sh's ab_start: the same commands as ran in the call.)
# 2026-12-05 (17:38 session), call 9: branch wip/lut against main c34b66e. store_w's IQ4_NL and MXFP4 codes to
# int8 values by byte permutes (lut16), where IQ4_NL read a 16-byte table from global memory four times a
# word and MXFP4 decoded each e2m1 code with compares and selects (call 8's ncu: MXFP4 63 warp instructions
# an MMA, ISETP 6.9, IMAD 10.9, PLOP3 4.0; static SASS of the X instance 3,104 -> 2,368 lines, IQ4_NL
# 2,328 -> 2,176). Same bytes (emulated here for 40,000 random words of each table; test_gpu_mm checks the
# bits). Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. Peer: none.
# Prediction: parity programs pass; MXFP4 +25-45 %, IQ4_NL +5-12 %, Q4_0 even (unchanged SASS).
set -u
. bench/gpu_call.sh
ab_start test_gpu_moe test_gpu_widths test_gpu_e2e
t
mm_bench_rows "4096,14336 14336,4096 4096,4096" MXFP4,IQ4_NL,Q4_0 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
