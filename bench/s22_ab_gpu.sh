#!/bin/bash
# Two device calls for the opt-in same-bits changes of the 2026-12-04 21:10 session (d9504c3, made
# opt-in by 069d443 after the first attempt at this call lost the device machine; its whole form
# would have run ~590 s of the 600 a call may take, so it is split):
#   bash bench/s22_ab_gpu.sh 1   the GPU suite (it runs the opt-in paths against the CPU's bits:
#                                test_gpu_mm, test_gpu_widths, test_gpu_ops), then the 1.5B and
#                                SmolLM2 prompts A/B against the default, alternated
#   bash bench/s22_ab_gpu.sh 2   the MoE prompt A/B, ncu of the 1.5B's layer-0 gate/up matmul (L1,
#                                spills) with all of them on, and of the MoE prompt pass per kernel
# (the second in the same warm machine: the programs stay unpacked in /tmp/gb).
# Peer: none (strata's own switches). Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Predictions (d9504c3's message, docs/BENCHMARKS.md "Next"): the 1.5B prompt +10-20 %, the MoE
# prompt +8-15 % with all four on; decode unchanged (the changes touch passes of 9+ columns and the
# q/k norms).
set -u
. bench/gpu_call.sh
gb_unpack
ON="STRATA_CUDA_MM_WPRE=7,STRATA_CUDA_MM_ONEB=1,STRATA_CUDA_MOE_FAST=255,STRATA_CUDA_NORM_WARP=1"
part=${1:-1}
if [ "$part" = 1 ]; then
  gpu_suite 300
  t
  CF="E2E_DEFAULT=1 STRATA_CUDA_MM_ONEB=1 STRATA_CUDA_MM_WPRE=3,STRATA_CUDA_MM_ONEB=1 STRATA_CUDA_MM_WPRE=7,STRATA_CUDA_MM_ONEB=1 $ON"
  alt_runs 2 "1b" "$CF" 2 'prompt'
  alt_runs 1 "smollm2" "E2E_DEFAULT=1 $ON" 2 'prompt'
  t
else
  CF="E2E_DEFAULT=1 STRATA_CUDA_MM_WPRE=7,STRATA_CUDA_MM_ONEB=1 $ON"
  alt_runs 2 "moe48" "$CF" 2 'prompt'
  t
  export STRATA_CUDA_MM_WPRE=7 STRATA_CUDA_MM_ONEB=1 STRATA_CUDA_MOE_FAST=255 STRATA_CUDA_NORM_WARP=1
  STRATA_CUDA_PROFILE=512,1 E2E_SKIP_MAIN=1 E2E_DEPTH=512 timeout 120 ncu --profile-from-start off --set full \
    -k regex:mm_kernel2 --launch-skip 2 --launch-count 1 $B 1b 1 > $OUT/ncu-full-1b.txt 2>&1
  echo "ncu rc $?"
  grep -E "mm_kernel2|Duration|Registers Per|L1/TEX Cache Th|Issue Slots Busy|Local Memory Spilling Requests |excessive|Achieved Occ" $OUT/ncu-full-1b.txt | head -20
  t
  prompt_kernel_sum moe48 16
  t
fi
