#!/bin/bash
# 2026-12-06 08:15 session, call 2: two opt-in variants measured against the defaults, same programs:
# (a) STRATA_CUDA_MOE_FAST bit 2048 (2047 -> 4095): the T = 1 down kernel's 4 rows a warp decoded side by
#     side, the activation words loaded once (coop_rows_fast; 64 registers under launch bounds of 4 CTAs an
#     SM). Prediction: down ~-5 % of its share, moe48 +0.5-1 %; IQ2_XXS the same or even.
# (b) STRATA_CUDA_MV_KQI bit 16 (3 -> 19): the dense IQ one-column kq kernels' sign masks by ALU instead of
#     the shared-memory table (bank conflicts at random indices, as in the MoE gate/up before MOE_FAST 512).
#     Prediction: bench_gpu matvec 14336 x 4096 IQ3_XXS / IQ2_XXS kqp -3 to -8 % us; 1b_iq3 decode +1-3 %.
# Then llama.cpp on the same files (tg128; MUL_MAT n 1) and the whole suite.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_variants test_gpu_moe test_gpu_matvec; do echo "$p: $(timeout 120 $g/bin/$p 2>&1 | tail -1)"; done
t
e2e_ab 3 "moe48" STRATA_CUDA_MOE_FAST "2047 4095" 1
e2e_ab 2 "moe48_iq2" STRATA_CUDA_MOE_FAST "2047 4095" 1
e2e_ab 3 "1b_iq3" STRATA_CUDA_MV_KQI "3 19" 1
timeout 90 $g/bin/bench_gpu matvec shape=1 only=IQ2_XXS,IQ3_XXS,IQ2_XS,IQ3_S 2>&1 | grep -E "copy|kq8|kqp" | grep -v "  8 "
t
if peer_up; then
  peer_tg "moe48 moe48_iq2 1b_iq3"
  timeout 60 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'type_a=(iq2_xxs|iq3_xxs|iq2_xs|iq3_s),.*m=4096,n=1,k=14336' 2>&1 | grep -E "us/run"
fi
t
gpu_suite 250
t
