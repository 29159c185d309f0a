#!/bin/bash
# Written 2026-12-07 (13:52 session): issue 17's standing on main's programs (tools/gpu_pack.sh pack BUILD), strata
# and llama.cpp 0c1e570 in the same call on the same files, alone or after another call on the same warm machine (its
# programs unpacked, /tmp/strata-e2e-moe48.gguf written). Its trimmed form ran that session (bench/s93_i17_gpu.sh).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# 1. the matmul per format at 4096 x 14336 x 512 (test_gpu_mm bench, four copies rotated) beside test-backend-ops
#    perf -o MUL_MAT (its one copy L2-resident); 2. prompt 512 and 4,096 (E2E_DEPTH=4096: passes of 512) on
#    SmolLM2 / 1.5B / MoE 48 beside llama-bench pp512 / pp4096.
# Predictions (the last H100 rows, 2026-12-05): Q4_0 ~0.49x, Q8_0 ~0.45x, Q4_K ~0.85x; prompt 512 1.26-1.47x.
# All of it may not fit one call's 600 s: S92_MM=0 skips part 1, S92_SHAPES picks part 2's shapes (default all
# three), e.g. `S92_SHAPES="smollm2 1b" bash bench/s92_i17_gpu.sh`, then `S92_MM=0 S92_SHAPES=moe48 bash ...` on the
# same warm machine.
set -u
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s92.txt") 2>&1
gb_unpack
SH=${S92_SHAPES:-smollm2 1b moe48}
need=""; for s in $SH; do [ -f /tmp/strata-e2e-$s.gguf ] || need="$need $s"; done
: > /tmp/synth.log; [ -n "$need" ] && synth_bg "$need" || echo done > /tmp/synth.log
peer_up && PEER=1 || PEER=0; echo "peer $PEER"; t
[ "${S92_MM:-1}" = 1 ] && MM_BENCH_WIDTHS=1 timeout 100 $g/bin/test_gpu_mm bench Q4_0,Q4_1,Q5_0,Q8_0,IQ4_NL,MXFP4,Q2_0,Q4_K,Q6_K,Q3_K,IQ3_XXS 2>&1 | grep two-tile
t
[ "${S92_MM:-1}" = 1 ] && [ $PEER = 1 ] && timeout 100 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
  grep -E "type_a=(q4_0|q4_1|q5_0|q8_0|iq4_nl|mxfp4|q2_0|q4_K|q6_K|q3_K|iq3_xxs)," | grep TFLOPS
t
synth_wait 400; t
for s in $SH; do
  echo "strata $s: $(E2E_DEPTH=4096 timeout 120 $B $s 2 2>&1 | grep -iE 'prompt|decode|depth' | sed 's/  */ /g' | tr '\n' ' ')"
  if [ $PEER = 1 ]; then
    echo -n "llama.cpp $s pp512 / pp4096 runs (tok/s): "
    timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512,4096 -n 0 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  fi
  t
done
