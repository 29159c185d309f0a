#!/bin/bash
# Written 2026-12-05 (15:40 session) on branch wip/pin after the device time ran out (compiled here,
# SASS read, never run on a GPU). The 32-value formats' weight words (Q4_0 / Q5_0 / Q8_0 / IQ4_NL):
# fetch_w loads a run's raw halves (ld_run_raw: the aligned words and one 2-byte half, as LDG) and
# store_w joins them after the step's MMAs (run_finish: each raw word through an empty volatile asm,
# so no consumer is scheduled before the MMAs); the X instances load a step's four blocks with no
# branch region around each (a row past rows reads the tile's first row, a block past nb the step's
# first; both skipped after). Why: call 4's ncu source page put ~23 % of Q4_0's stall samples on the
# PRMT right after each block's 2-byte loads, and 05fc73e's SASS had its funnel shift right after the
# load too, inside each block's branch region: four waits for the weights a step before the MMAs. This
# branch's SASS (Q4_0 ORD 2 X): the step's 12 weight loads back to back, the shifts after the 16 IMMAs;
# ptxas: Q4_0 / Q5_0 X 120 / 119 -> 128 registers, Q8_0 119 -> 126, IQ4_NL 120 -> 124, no spills; the
# 256-value formats' instances unchanged. Same values, same bits.
# Build: on main `bash tools/gpu_pack.sh pack build && bash tools/gpu_pack.sh keep-old`, then on this
# branch (after merging main) `bash tools/gpu_pack.sh pack build`. Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .gpubin/old.tar.xz. Peer: none (old against new programs).
# Prediction: test_gpu_mm passes; Q4_0 / Q5_0 / Q8_0 / IQ4_NL at (4096, 14336) +10-30 % TFLOPS (the
# latency of four weight loads a step off the critical path; 128 registers may cost some of it);
# Q4_1 / MXFP4 (only the branch regions gone) +0-5 %; SmolLM2 prompt 512 +0-3 % (its Q8_0 head).
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
mm_parity 150
t
mm_bench_rows "4096,14336 14336,4096 4096,4096" Q4_0,Q5_0,Q8_0,IQ4_NL,Q4_1,MXFP4 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "smollm2" 2 "old=/tmp/old/bench_e2e new=$B"
timeout 90 $g/bin/test_gpu_widths 2>&1 | tail -1
t
