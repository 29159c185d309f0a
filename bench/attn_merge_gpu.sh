#!/bin/bash
# One device call (2026-12-03, 18:10 session, call 2): the chunk path's merge with its u_c staged
# through shared memory and T = 1 chunk grids capped at one wave (ops.cu), against call 1's
# figures (same session, the code of 5f5d6b7): attention per launch at 4,096 (ncu, serialized)
# SmolLM2 f16 17.1-21.2 us, MoE f16 25.7-26.4, MoE int8 37.3-38.4; decode at 4,096 1,022 / 980 /
# 279 (f16, 15:42 call 2), int8 1,037 / 919 / 239 (15:42 call 3).
# Then the SASS-level profile of the f16 chunk path (ncu source page, CSV into OUT) for the next
# change, and SmolLM2's prompt of 4,096 beside llama.cpp (call 1 lost that line).
# Ran (call 2); its code (the staged merge) was replaced in call 3 and reverted in call 4: this
# script is the record of what call 2 ran. Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Prediction: MoE int8 attention per launch 37 -> ~26 us (one wave instead of 1.03); the merge
# saves ~1 us a launch everywhere; decode at 4,096 +2-4 % f16, +15 % MoE int8.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_ops test_gpu_kv8 test_gpu_variants; do echo -n "$p: "; timeout 200 $g/bin/$p 2>&1 | tail -1; done; t
for s in smollm2 1b moe48; do for kv in f16 int8; do
  echo -n "$s $kv: "; E2E_KV=$kv E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 $B $s 1 | grep -i depth | tr '\n' ' '; echo
done; done; t
for cfg in "smollm2 f16" "moe48 f16" "moe48 int8"; do attn_step_rows $cfg; done; t
for s in smollm2 moe48; do
  STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,30 E2E_SKIP_MAIN=1 E2E_DEPTH=4096 timeout 150 ncu --profile-from-start off \
    --clock-control none -k regex:^attn_kernel -s 2 -c 1 --set full --import-source no -f -o /tmp/attn-$s $B $s 1 > /dev/null 2>&1
  ncu -i /tmp/attn-$s.ncu-rep --page source --csv --print-source sass > $OUT/attn-sass-$s.csv 2>/dev/null
  ncu -i /tmp/attn-$s.ncu-rep --page details 2>/dev/null | grep -E "Duration|Warp Cycles Per Issued|Issued Warp" | head -4
  ls -la $OUT/attn-sass-$s.csv; t
done
if peer_up; then
  for r in 1 2; do echo -n "strata smollm2 r$r: "; E2E_SKIP_MAIN=1 E2E_DEPTH=4096 $B smollm2 1 | grep -i depth; done
  echo -n "llama.cpp smollm2 pp4096 runs (tok/s): "
  timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-smollm2.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 4 -o jsonl 2>/dev/null | runs_of
fi; t
