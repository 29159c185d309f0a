#!/bin/bash
# One device call (2026-12-04, 11:14 session; issue 20): STRATA_CUDA_MOE_FAST bit 16 (a part's
# activation words loaded once for the rows of a warp: gate and up 2, down 4) and bit 32 (the
# F32 router a CTA per row, the products formed by the CTA's 128 threads), same bits.
# 1. the GPU suite (tools/gpu_pack.sh run; test_gpu_variants compares each new bit with none and
#    with the CPU); 2. the 48-layer MoE decode at depth 16, MOE_FAST 15 / 31 / 47 / 63, two rounds
#    alternated (bench_e2e moe48, E2E_SKIP_MAIN=1 E2E_DEPTH=16); 3. ncu durations (serialized)
#    of one eager step's first-layer MoE launches with 15 and with 63 (last: step 4 first).
# Peer: none (an A/B of strata's own switches). Carry .gpubin/bins.tar.xz, .gpubin/lib,
# .peer/smollm2-vocab.gguf.
# Predictions (before the call): bit 16 gate/up -6 to -8 % of its instructions (static SASS
# 1,480 -> 1,368; LDG 103 -> 79), +1-2 % on the step; bit 32 the router launch 8.8 -> ~7 us
# (its load phase spread over 4x the SMs), +1-3 % on the step.
# After this call (BENCHMARKS, 11:14 session call 1): bit 16 (the activation hoist) was deleted
# (346 / 347 against 357 / 357 tok/s: gate/up 5.66 M -> 5.09 M warp instructions but 16.4 ->
# 16.8 us, down 12.1 -> 14.2 us); the router bit became bit 16 with 512 threads a CTA
# (bench/moe_router_gpu.sh), so this script's 31 / 47 / 63 no longer select what it measured;
# ATTN_TC_DEC bit 32 is kept (the default 63).
set -u
. bench/gpu_call.sh
if [ "${SUITE:-1}" = 1 ]; then
  bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
  grep -E "passed|FAIL" /tmp/suite.txt | tail -22
  grep -E "act hoist|router cta" /tmp/gb-logs/test_gpu_variants.out 2>/dev/null | head -20
fi
gb_unpack
t
for r in 1 2; do
  for f in ${CFGS:-15 31 47 63}; do
    echo "round $r MOE_FAST=$f: $(STRATA_CUDA_MOE_FAST=$f E2E_SKIP_MAIN=1 E2E_DEPTH=16 timeout 200 $B moe48 1 | grep -i depth | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ')"
  done
done
t
# 4. STRATA_CUDA_ATTN_TC_DEC bit 32 (an int8 cache's codes to float by PRMT + FADD, not I2F; same
#    bits): int8 decode at depth 16 and 4,096, DEC 31 / 63, two rounds. Prediction: +1-3 % at 4,096
#    on SmolLM2 int8 (the staged conversion before the wait, 128 I2F a thread, at an eighth rate).
for s in ${ASHAPES:-smollm2 1b}; do
  for r in 1 2; do
    for d in 31 63; do
      echo "round $r $s int8 TC_DEC=$d: $(E2E_KV=int8 STRATA_CUDA_ATTN_TC_DEC=$d E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 timeout 200 $B $s 1 | grep -i depth | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ')"
    done
  done
  t
done
for f in 15 63; do
  STRATA_CUDA_MOE_FAST=$f STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
    --kernel-name regex:moe_ --launch-count 3 --metrics gpu__time_duration.sum,smsp__inst_executed.sum --csv $B moe48 1 > /tmp/ncu$f.txt 2>&1
  echo "ncu MOE_FAST=$f:"; grep -E "moe_" /tmp/ncu$f.txt | awk -F'","' '{print $5, $(NF-2), $NF}' | sed 's/"//g' | cut -c1-160
done
t
cp /tmp/ncu15.txt /tmp/ncu63.txt "$OUT/" 2>/dev/null
