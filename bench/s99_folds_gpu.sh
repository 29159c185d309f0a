#!/bin/bash
# Written 2026-12-08 (01:43 session): issue 20's two launch folds, one call (branch hqfold's programs; carry
# .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz):
# 1. make test-gpu with the defaults (311295: both new bits off; test_gpu_variants runs them on: the FFN parity
#    with bit 33554432, model_parity with every bit and its launch counts);
# 2. moe48: STRATA_CUDA_MOE_FAST 311295 / + 16777216 (the next norm in the down launch) / + 33554432 (h's
#    quantization in the gate/up launch) / + both, three rounds alternated; moe48_iq2 311295 / both, two rounds.
#    Predictions (written before): +2-4 % each on moe48 (the launches they remove cost ~2.4 and ~1.7 us a layer
#    in the graph, TWICE instrument of 2026-12-06; a CTA's tail adds back ~0.5-1 us), +4-7 % both;
# 3. llama.cpp tg128 on both files.
. bench/gpu_call.sh
suite_then_files s99 "moe48 moe48_iq2"
grep -E "next norm|quantiz.* h" /tmp/suite.txt | head -12
D=311295
alt_runs 3 moe48 "STRATA_CUDA_MOE_FAST=$D STRATA_CUDA_MOE_FAST=$((D + 16777216)) STRATA_CUDA_MOE_FAST=$((D + 33554432)) STRATA_CUDA_MOE_FAST=$((D + 50331648))" 1 'prompt|batch|ids'
alt_runs 2 moe48_iq2 "STRATA_CUDA_MOE_FAST=$D STRATA_CUDA_MOE_FAST=$((D + 50331648))" 1 'prompt|batch|ids'
if peer_up; then peer_tg "moe48 moe48_iq2"; else echo "peer: the unpack failed"; fi
t
