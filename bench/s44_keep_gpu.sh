#!/bin/bash
# 2026-12-05 (17:38 session), call 5: wip/fetch with each change kept only where calls 3-4 measured it faster
# (Q4_0: one-base step fetch + row0 stores + scaled codes; IQ4_NL: one-base fetch + row0 stores; MXFP4: a
# full step as one region; Q5_0 / Q8_0 / Q4_1 SASS identical to main's), against main 88fb9fd; the whole
# GPU suite on these programs. Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. Peer: none.
# Prediction: suite 31,612 passed; Q4_0 +2-4 %, IQ4_NL +1-3 %, MXFP4 +2-5 %, Q8_0 / Q5_0 even.
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
gpu_suite 330
t
mm_bench_rows "4096,14336 14336,4096 4096,4096" Q4_0,IQ4_NL,MXFP4,Q8_0,Q5_0 3 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
