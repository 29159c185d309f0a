#!/bin/bash
# One device call (2026-12-04 18:25 session, call 1; issue 17): the serial order's two costs
# removed (docs/KERNELS.md "The lanes chained"): the warp finish through a shared-memory strip
# (the N rows / columns of a warp chained side by side by N lanes, float4 reads) and the matmul's
# own split (CTA z of S walks the lanes [z nl / S, (z + 1) nl / S) and stores each lane's value;
# mm_serial_combine chains them). First the GPU suite in the default order (test_gpu_mm and
# test_gpu_matvec run their serial passes, test_gpu_mm's now with the splits), then the parity
# programs with STRATA_CANON=serial in the environment, then bench_e2e tree / serial alternated
# (prompt 512, decode 128, batches of 16 / 64), then the matmul at 512 / 64 / 16 columns.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf. Peer: none (an A/B of strata's
# own switch; call 4 of the 15:43 session has llama.cpp beside both orders).
# Predictions (before the call): the suite and the serial parity pass; serial decode within 1 %
# of the tree (15:43 call 4: -2.3 to -5.3 %), the gate/up's two chains side by side maybe even
# ahead; batches of 16 within 5 % (call 4: -8 to -16 %), of 64 within 3 % (-5 to -9 %); prompts as
# call 4 (+15 / +31 / +37 %); the matmul at 64 / 16 columns serial >= 0.9x the tree (was 0.4-0.6x).
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 240
t
for p in test_gpu_moe test_gpu_widths test_gpu_e2e test_gpu_batch test_gpu_spec; do
  echo "$p serial: $(STRATA_CANON=serial timeout 150 /tmp/gb/bin/$p 2>&1 | tail -1)"
done
t
e2e_ab 1 "smollm2 1b moe48" STRATA_CANON "tree serial" "2 batch" E2E_BATCH=16,64
for c in tree serial; do
  echo "matmul $c:"; STRATA_CANON=$c timeout 100 /tmp/gb/bin/test_gpu_mm bench Q4_K,IQ3_XXS,Q6_K,Q8_0 2>&1 | grep -vE "^#|^$" | head -30
done
t
