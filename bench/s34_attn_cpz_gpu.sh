#!/bin/bash
# Written 2026-12-05 (13:54 session) after the device time ran out, on branch wip/attn-cpz: the prompt
# attention's tile loads (`attn_tc.cu`, `tc_tile_load`, f16 caches) as one run of cp.async with no
# branch (a position past pmax zero-filled by the source size; the loop of constant trip count
# unrolled), as 1b1beba did for the matmul's activation copies. SASS here (sm_90): attn_tc_kernel's
# `@!PT LDS` 63 -> 9 and BSSY 23 -> 13 (HD 128, static); a tile load of HD 128 was 16 copies each with
# its own three `@!PT LDS` and a branch. The deep decode launch's loads keep their branch (the
# position's own row is written synchronously in the same step, so it must not be zero-filled
# asynchronously). Same bytes, same bits.
# Build: on main `bash tools/gpu_pack.sh pack build && bash tools/gpu_pack.sh keep-old`, then on this
# branch `bash tools/gpu_pack.sh pack build`. Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz.
# Peer: none (old against new programs).
# Prediction: test_gpu_attn_tc 2,978 and test_gpu_e2e 639 pass; the prompt of 4,096 (the attention's
# share grows with it) +1-3 % on the 1.5B and SmolLM2, prompt 512 within the spread.
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
for p in attn_tc e2e widths; do echo "test_gpu_$p: $(timeout 90 $g/bin/test_gpu_$p 2>&1 | tail -1)"; done
t
E2E_DEPTH=4096 E2E_SKIP_MAIN=0 e2e_prog_rows "smollm2 1b" 2 "old=/tmp/old/bench_e2e new=$B" 1
t
