#!/bin/bash
# (Its start is now bench/gpu_call.sh's ab_start: the same commands as ran in the call.)
# 2026-12-05 (17:38 session), call 3: branch wip/fetch against main 88fb9fd (wip/pin merged). The raw-word
# formats' step (Q4_0 / Q5_0 / Q8_0 / IQ4_NL, ORD 2 X) from one base with CTA-uniform clamped offsets
# (fetch_step_pin: SASS of Q4_0's step fetch ~95 -> ~60 instructions), rows past rows stored as row0's
# words (the branch region around each block's store gone), and Q4_0 / Q5_0 codes scaled in the tiles
# (16 (q - 8), 8 (q - 16): the decode 9 -> 4 instructions a word) with an MMA bias of matching spacing
# (mm_sc). Same bits. Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. Peer: none.
# Prediction: parity programs pass; Q4_0 +8-15 %, Q5_0 +5-12 %, Q8_0 / IQ4_NL +4-8 %, Q4_1 / MXFP4 even.
set -u
. bench/gpu_call.sh
ab_start test_gpu_widths test_gpu_moe test_gpu_e2e test_gpu_variants
t
mm_bench_rows "4096,14336 14336,4096" Q4_0,Q5_0,Q8_0,IQ4_NL,Q4_1 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "smollm2" 2 "old=/tmp/old/bench_e2e new=$B"
