#!/bin/bash
# One device call (2026-12-03, 18:10 session, call 3): the chunk path's changes (ops.cu: V chains
# one per thread where the heads' chains fit the CTA and eight rows per address computation, the
# merge's first 8 chunks of u loaded before M / w / L, fence.acq_rel in place of __threadfence,
# T = 1 grids capped at one wave, launch bounds at 3 CTAs an SM so the registers stay at 80)
# against the tree before them (5f5d6b7's ops.cu, the same other objects: .gpubin/base_e2e.tar.xz),
# A/B in the same call, alternating, two rounds; then the whole GPU suite.
# Ran (call 3): the changes measured slower and were reverted (docs/KERNELS.md, "Variants
# deleted"); base_e2e.tar.xz was bench_e2e built from 5f5d6b7's ops.cu. Carry .gpubin/bins.tar.xz, .gpubin/base_e2e.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Prediction: decode at 4,096 +3-6 % on SmolLM2 / 1.5B f16 (one V chain a thread: two or four
# warps where one or two ran the chains), MoE f16 +1-3 %, MoE int8 +10 % (one wave), depth 16
# unchanged (+-1 %).
set -u
. bench/gpu_call.sh
gb_unpack
tar xJf .gpubin/base_e2e.tar.xz -C $g
for r in 1 2; do for s in smollm2 1b moe48; do for kv in f16 int8; do
  for b in bench_e2e_base bench_e2e; do
    echo -n "r$r $s $kv $b: "
    E2E_KV=$kv E2E_SKIP_MAIN=1 E2E_DEPTH=16,4096 $g/bin/$b $s 1 | grep -i depth | sed 's/.*depth *\([0-9]*\).*decode 128: *\([0-9]*\) tok.*hash \(.*\)/d\1 \2 \3/' | tr '\n' ' '; echo
  done
done; done; done; t
for cfg in "smollm2 f16" "1b f16" "moe48 f16" "moe48 int8"; do attn_step_rows $cfg; done; t
bash tools/gpu_pack.sh run "$OUT" 2>&1 | grep -E "passed|FAIL|fail" | tail -24; t
