#!/bin/bash
# The third of three consecutive device calls (2026-12-03 20:50 session): the real
# SmolLM2-135M-Instruct Q4_1 (98 MB, the Makefile's MODEL) travels in three parts
# (split -n 3 -d into .gpubin/real.p00..02; calls 1-2 copy p00 / p01 into /tmp/real, this one
# carries p02 with .gpubin/bins.tar.xz and .gpubin/lib). Then test_gpu_attn_tc with
# STRATA_TC_REAL (the tensor-core order against the CPU on real chat prompts: KL, argmax
# agreement, greedy ids) and the whole GPU suite (tools/gpu_pack.sh run). Output to
# $OUT/tc_real.txt as it comes.
set -u
. bench/gpu_call.sh
exec > >(tee "$OUT/tc_real.txt") 2>&1
cat /tmp/real/real.p00 /tmp/real/real.p01 .gpubin/real.p02 > /tmp/smollm2.gguf && md5sum /tmp/smollm2.gguf
rm -rf $g; gb_unpack
echo "== test_gpu_attn_tc, real SmolLM2"; STRATA_TC_REAL=/tmp/smollm2.gguf timeout 240 $g/bin/test_gpu_attn_tc 2>&1 | tail -12; t
echo "== the GPU suite"; timeout 320 bash tools/gpu_pack.sh run "$OUT" 2>&1 | tail -25; t
