#!/bin/bash
# 2026-12-06 08:15 session, call 3: the final CUDA code (defaults STRATA_CUDA_MOE_FAST 8191, STRATA_CUDA_MV_KQI 19).
# (a) MOE_FAST bit 4096 (bits 1024 / 2048 for IQ4_XS / IQ2_XS / IQ2_S / IQ3_S experts): the 48-layer MoE with
#     IQ4_XS experts, 8191 / 4095 alternated. Prediction: +3-6 % (IQ3_XXS gained 2.9 + 7.1 % from the two).
# (b) the defaults against the old ones on moe48 (8191 / 2047) and 1b_iq3 (MV_KQI 19 / 3 / 18: by shape with
#     kq1 for plain rows / the old default / kqp + kqs), 1b_iq2xs (19 / 24: IQ2_XS rows cooperative / kq1).
#     Prediction: moe48 +6-8 %, 1b_iq3 19 >= 18 > 3.
# (c) bench_gpu matvec 14336 x 4096 for the four IQ formats (every kernel), llama.cpp on the same files
#     (tg128, MUL_MAT_ID iq4_xs), then the whole suite on the final code.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
for p in test_gpu_variants test_gpu_moe; do echo "$p: $(timeout 120 $g/bin/$p 2>&1 | tail -1)"; done
t
e2e_ab 2 "moe48_iq4xs" STRATA_CUDA_MOE_FAST "8191 4095" 1
e2e_ab 2 "moe48" STRATA_CUDA_MOE_FAST "8191 2047" 1
e2e_ab 2 "1b_iq3" STRATA_CUDA_MV_KQI "19 3 18" 1
e2e_ab 2 "1b_iq2xs" STRATA_CUDA_MV_KQI "19 24" 1
timeout 60 $g/bin/bench_gpu matvec shape=1 only=IQ2_XXS,IQ3_XXS,IQ2_XS,IQ3_S 2>&1 | grep -E "copy|  1 "
t
if peer_up; then
  peer_tg "moe48_iq4xs moe48 1b_iq3 1b_iq2xs"
fi
t
gpu_suite 260
t
