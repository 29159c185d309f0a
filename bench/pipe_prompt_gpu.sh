#!/bin/bash
# One device call (2026-12-03, 15:42 session, call 4): the matmul's pipelined kernel on the 1.5B
# shape's prompt (K 2048 / 8192 rows), where the auto rule (STRATA_CUDA_MM_PIPE=-1) keeps Q4_K on
# the two-tile kernel from the 4096 x 14336 microbenchmark (Q4_K 77.8 two-tile -> 69.8 pipelined,
# 2026-12-02). Codes: -1 auto, 0 two-tile only, 1 pipelined everywhere (S 4 or 3, NB 1), 21 two
# stages. Two rounds alternating, same ids hashes expected. Prediction: within +-3 % (the 1.5B's
# rows are 8 super-blocks: the pipeline has little to overlap). SmolLM2 -1 / 1 as a control.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
set -u
. bench/gpu_call.sh
gb_unpack
$B 1b 2 >/dev/null   # the file, and a warm GPU
for r in 1 2; do for p in -1 0 1 21; do
  echo -n "1b STRATA_CUDA_MM_PIPE=$p r$r: "; STRATA_CUDA_MM_PIPE=$p $B 1b 2 | grep "prompt 512"
done; done
for r in 1 2; do for p in -1 1; do
  echo -n "smollm2 STRATA_CUDA_MM_PIPE=$p r$r: "; STRATA_CUDA_MM_PIPE=$p $B smollm2 2 | grep "prompt 512"
done; done
