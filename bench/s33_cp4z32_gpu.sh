#!/bin/bash
# Written 2026-12-05 (13:54 session) after the device time ran out, on branch wip/cp4z-32: the 32-value
# formats' activation copies (`issue_a`, QK 32: Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / MXFP4 / IQ4_NL, the
# one-block steps of ORD 3 and the four-block steps of the SERX instances) as one run of copies with no
# branch (a column past T zero-filled by cp.async's source size; d and s by a predicated copy in the
# same run), as 1b1beba did for the 256-value formats' copies by warps (+17-28 % TFLOPS there).
# SASS here (sm_90): Q4_0 ORD 2 X 2,032 -> 1,784 instructions, `@!PT LDS` 57 -> 42, BSSY 57 -> 48;
# ORD 3 1,160 -> 1,128. Also on the branch: Q4_K / Q5_K's decoded scales and mins stored as one 4-byte
# word each a part instead of four byte stores behind a run-time test per scale (SASS: Q4_K ORD 3
# 2,392 -> 2,312 instructions, 16 -> 0 STS.U8, 114 -> 106 BRA). Same bytes, same bits.
# Build: on main `bash tools/gpu_pack.sh pack build && bash tools/gpu_pack.sh keep-old` (main's
# bench_e2e and test_gpu_mm as .gpubin/old.tar.xz), then on this branch `bash tools/gpu_pack.sh pack build`.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz.
# Prediction: test_gpu_mm passes (16,154); Q4_0 / Q8_0 / Q4_1 at 4096 x 14336 +5-15 % TFLOPS (still
# ~0.4x MUL_MAT); Q4_K +1-3 %; SmolLM2's prompt 512 (Q4_1 / Q8_0 rows, ORD 3) +3-8 %; the 1.5B +0-2 %.
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
mm_parity
t
mm_bench_rows "4096,14336 576,1536 2048,4096" Q4_0,Q4_1,Q8_0,Q4_K 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
e2e_prog_rows "smollm2 1b" 2 "old=/tmp/old/bench_e2e new=$B"
timeout 90 $g/bin/test_gpu_widths 2>&1 | tail -1
t
