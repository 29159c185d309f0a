#!/bin/bash
# One device call (2026-12-03, 16:00 session, call 2): the GPU suite on the code after call 1's
# decisions (STRATA_Q6_SWAR on for Hopper at T = 1, the 16-warp grouped matmul removed), the Q6
# choice checked once more (1.5B decode auto / 0 alternating; the MoE FFN block with Q6_K
# experts off / on), then strata and llama.cpp in the same call on the same three files: prompt
# 512 and decode 128 (issue 17, 20), decode at depth 0 / 4,096 / 16,384 (issue 19; llama-bench
# -d), so no ratio in the issues' notes is cross-session any more.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Predictions: suite 0 failed; Q6 auto vs 0 +1-3 % on the 1.5B decode as in call 1; llama-bench
# with -r 5 tighter than call 1's -r 2 (pp512 +-24k on SmolLM2 there).
set -u
. bench/gpu_call.sh
bash tools/gpu_pack.sh run "$OUT" 2>&1 | grep -E "passed|FAIL|fail" | tail -20
echo "suite done"; t
for r in 1 2; do for q in auto 0; do
  echo -n "1b decode, STRATA_Q6_SWAR=$q r$r: "; STRATA_Q6_SWAR=$q E2E_SKIP_MAIN=1 E2E_DEPTH=16 $B 1b 1 | grep -i depth
done; done; t
$g/bin/bench_gpu variants ffn experts=Q6_K 2>&1 | tail -5; t
if peer_up; then
  for s in smollm2 1b moe48; do
    d=16,4096,16384; ld=0,4096,16384
    [ $(( $(date +%s) - T0 )) -gt 420 ] && { d=16,4096; ld=0,4096; }
    echo -n "strata $s: "; $B $s 2 | grep "prompt 512"
    E2E_SKIP_MAIN=1 E2E_DEPTH=$d $B $s 1 | grep -i depth
    echo "llama.cpp $s:"
    timeout 150 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -d $ld -r 5 2>&1 | grep -E "pp512|tg128"
    t
  done
else echo "peer: not run (not carried or the unpack failed)"; fi
# the MoE decode step per kernel with today's defaults (the Q6 head variant on), when time is left:
# the next wave's map of issue 20 (summary by kernel name; ncu's serialized times)
if [ $(( $(date +%s) - T0 )) -lt 470 ]; then
  bash bench/step_profile_gpu.sh moe48 16 > /tmp/step-rows.txt 2>&1
  python3 tools/ncu_sum.py "$OUT/step-moe48-16.csv" 2>&1 | head -20; t
fi
