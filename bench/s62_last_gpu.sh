#!/bin/bash
# 2026-12-06 (03:33 session), call 3 (little device time left): the final programs' defaults against the
# opt-in bit 512 on the 48-layer MoE (two rounds), MV_KQI 3 / 0 on 1b_iq3 (one round), llama.cpp tg128 on
# both files, on whichever card comes (the H200 if it does: this session's other rows are H100).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
e2e_ab 2 "moe48" STRATA_CUDA_MOE_FAST "511 1023" 1
e2e_ab 1 "1b_iq3" STRATA_CUDA_MV_KQI "3 0" 1
if peer_up; then
  for s in moe48 1b_iq3; do
    echo -n "llama.cpp $s tg128 runs (tok/s): "
    timeout 50 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  done
fi
t
