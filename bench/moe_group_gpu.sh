#!/bin/bash
# One device call (2026-12-04 18:25 session, call 5; issues 17 and 20): the wide MoE grouping's
# stable positions by ranges of pairs (STRATA_CUDA_MOE_FAST bit 64, in the default 127). Call 4's
# ncu: moe_group_wide_kernel 46 us a layer of the MoE's 512-token pass (4.6 % of it), one CTA
# whose 32 warps each scan all 4,096 pairs once per expert they own (4 experts: 512 steps a warp).
# The GPU suite on the final code (the serial default, this bit), the bit off (63) through
# test_gpu_moe and test_gpu_widths, the grouping kernel under ncu both ways, then bench_e2e's MoE
# (prompt 512, decode, batches of 16 / 64) with 63 / 127 alternated, two rounds. Carry
# .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf. Peer: none (llama.cpp: call 3).
# Prediction (before the call): the kernel 46 -> <= 10 us; the MoE prompt 512 +3-4 % (~1.7 ms of
# its ~48 ms); the batches within the spread (their passes group 128-512 pairs).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 260
t
for p in test_gpu_moe test_gpu_widths; do
  echo "$p MOE_FAST=63: $(STRATA_CUDA_MOE_FAST=63 timeout 150 /tmp/gb/bin/$p 2>&1 | tail -1)"
done
for v in 63 127; do
  echo "ncu grouping, MOE_FAST=$v:"
  STRATA_CUDA_MOE_FAST=$v STRATA_CUDA_PROFILE=512,1 E2E_SKIP_MAIN=1 E2E_DEPTH=512 timeout 100 ncu --profile-from-start off \
    --clock-control none --cache-control none -k regex:moe_group -c 4 --metrics gpu__time_duration.sum --csv $B moe48 1 2>/dev/null |
    grep -E 'gpu__' | awk -F'","' '{print $NF}' | tr '\n' ' '; echo
done
t
e2e_ab 2 moe48 STRATA_CUDA_MOE_FAST "63 127" "2 batch" E2E_BATCH=16,64
