#!/bin/bash
# One device call (2026-12-04 15:43 session; issues 19, 20): the three branches of the 13:31 session
# merged (wip/twice, wip/norm-w, wip/mv-paths) plus the int8 decode instance by conversion
# (attn_tc_dec_kernel KV 2 = tc_q8f, 3 = I2F: the default int8 kernel's runtime choice gone; static,
# sm_90: one-launch HD64 5,912 -> 5,216 SASS, HD128 6,944 -> 5,720 and 96 -> 80 registers; chunk
# CTAs 5,016 -> 4,288, 6,104 -> 4,936). The GPU suite first, then decode at depths 16 / 4,096:
# STRATA_CUDA_PREFETCH 3 / 7 x STRATA_CUDA_MV_PATHS 0 / 1 (factorial, alternated, two rounds, f16,
# SmolLM2, 1.5B, MoE); int8 SmolLM2 / 1.5B at the default (across calls against the 13:31 call 6);
# STRATA_CUDA_TWICE 0 / 1 / 2 on the MoE at depth 16 and 0 / 2 / 4 on SmolLM2 at 4,096.
# Peer: none (strata's own switches). Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Predictions (before the call): PREFETCH bit 4 +1-3 % SmolLM2 decode, +0.5-2 % the others; MV_PATHS
# +1-3 %; the int8 instance +0-3 % int8 decode; gate/up 6-10 us of the MoE's ~56 us layer (TWICE=1
# adds 6-10 us a layer: 374 -> 265-300 tok/s); SmolLM2's merge 1-2 us of its ~25 us deep layer.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
abn 2 "smollm2 1b moe48" "STRATA_CUDA_PREFETCH=3,STRATA_CUDA_MV_PATHS=0 STRATA_CUDA_PREFETCH=7,STRATA_CUDA_MV_PATHS=0 STRATA_CUDA_PREFETCH=3,STRATA_CUDA_MV_PATHS=1 STRATA_CUDA_PREFETCH=7,STRATA_CUDA_MV_PATHS=1" E2E_DEPTH=16,4096
D=16,4096
for s in smollm2 1b; do depth_row int8 $s int8; done
t
ab 2 "moe48" STRATA_CUDA_TWICE "0 1 2" E2E_DEPTH=16
ab 2 "smollm2" STRATA_CUDA_TWICE "0 2 4" E2E_KV=f16 E2E_DEPTH=4096
t
