#!/bin/bash
# The 2026-12-05 02:43 session's matmul per format (issue 17: >= 0.8x llama.cpp's MMQ) after the
# defaults STRATA_CUDA_MM_ONEB=1 / MM_WPRE=7 (aebbcc3): `test_gpu_mm bench F` (m 4096, k 14336,
# four weight copies rotated beyond the L2) with the defaults and with the former ones (ONEB 0,
# WPRE 1), its n = 512 default-kernel line; then llama.cpp's test-backend-ops perf -o MUL_MAT on the
# same shape in the same call (one weight matrix, L2-resident: flattered).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
P=0; peer_up && P=1; echo "peer: $P"
F=${MM_FMTS:-Q4_0,Q8_0,Q4_K,Q5_K,Q6_K,IQ3_XXS,IQ2_XXS,IQ4_XS}
echo "== strata, defaults"; timeout 150 $g/bin/test_gpu_mm bench $F 2>&1 | grep -E "n=512.*default"; t
echo "== strata, former defaults (ONEB 0, WPRE 1)"
STRATA_CUDA_MM_ONEB=0 STRATA_CUDA_MM_WPRE=1 timeout 150 $g/bin/test_gpu_mm bench $F 2>&1 | grep -E "n=512.*default"; t
if [ $P = 1 ]; then
  echo "== llama.cpp test-backend-ops perf -o MUL_MAT (m 4096, n 512, k 14336)"
  timeout 150 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
    grep -E "type_a=(q4_0|q8_0|q4_K|q5_K|q6_K|iq3_xxs|iq2_xxs|iq4_xs)," | grep -E "TFLOPS" | head -20; t
fi
