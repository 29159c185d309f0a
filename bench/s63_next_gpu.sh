#!/bin/bash
# Written at the end of the 2026-12-06 03:33 session for the next one's first call (BENCHMARKS, that
# session's Next 3 and 4): the whole GPU suite on 69aca07 (MV_KQI 3 keeps IQ2_XS rows cooperative; never
# run on a GPU), then the 1.5B shape with IQ2_XS layers under MV_KQI 3 / 8 / 0 and the 48-layer MoE with
# MOE_FAST 511 / 1023, llama.cpp tg128 beside both.
# Carry .gpubin/bins.tar.xz (packed from that tree), .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
# Predictions: the suite passes (32,678: the IQ2_XS / 3 check now asserts no kq launch); 1b_iq2xs 3 = 0 within
# the spread, 8 slower by 5-10 %; 1023 +0-1 % over 511.
set -u
. bench/gpu_call.sh
gb_unpack
gpu_suite 200
t
e2e_ab 2 "1b_iq2xs" STRATA_CUDA_MV_KQI "3 8 0" 1
e2e_ab 2 "moe48" STRATA_CUDA_MOE_FAST "511 1023" 1
if peer_up; then
  for s in 1b_iq2xs moe48; do
    echo -n "llama.cpp $s tg128 runs (tok/s): "
    timeout 50 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  done
fi
t
