#!/bin/bash
# (The three switches were measured slower in this call and deleted afterwards: the script records what ran, the programs of 6f556d1.)
# 2026-12-05 (11:30 session), call 2: launches of the decode layer folded (issues 20, 17's decode), A/B.
#   STRATA_CUDA_MOE_FAST bit 256 (DOWNQ): h quantized by the down kernel's warps, no quantize launch;
#   STRATA_CUDA_ATTN_TC_DEC bit 512: q's and k's head norms inside the decode attention launch;
#   STRATA_CUDA_NORM_FOLD=1: a column's RMSNorm + quantize after a residual add by the add launch's
#   last CTA (two launches a layer fewer, dense and MoE).
# Parity first (test_gpu_variants: DOWNQ + NORM_FOLD against the CPU; test_gpu_attn_tc: 831 against
# the default's logits; test_gpu_widths: NORM_FOLD + DOWNQ against the CPU at every width), then
# decode A/B alternated; then the instrument (STRATA_CUDA_TWICE 8 / 16 / 32) for in-graph costs.
# Prediction: DOWNQ, QK fold: -1.5 to -3 us each of the ~57 us MoE layer (+3-5 % each); NORM_FOLD:
# -2 to -4 us a layer: SmolLM2 (~21 us a layer) +10-20 %, 1.5B +5-8 %, MoE +4-7 %.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf, .peer/lcb-cuda.tar.xz.
set -u
. bench/gpu_call.sh
gb_unpack
# the programs the three switches touch, with the switches on (exported: every backend takes them
# unless a test sets its own values; the programs also compare on against off)
export LD_LIBRARY_PATH=$PWD/.gpubin/lib
for p in test_gpu_variants test_gpu_attn_tc test_gpu_widths test_gpu_e2e test_gpu_moe test_gpu_spec; do
  STRATA_CUDA_MOE_FAST=511 STRATA_CUDA_ATTN_TC_DEC=831 STRATA_CUDA_NORM_FOLD=1 timeout 100 $g/bin/$p > /tmp/$p.txt 2>&1
  echo "$p rc $?: $(tail -1 /tmp/$p.txt)"; grep -E "FAIL|not ok|norm folds" /tmp/$p.txt | head -4
done
t
M=STRATA_CUDA_MOE_FAST; A=STRATA_CUDA_ATTN_TC_DEC; N=STRATA_CUDA_NORM_FOLD
abn 2 moe48 "$M=255,$A=319,$N=0 $M=511,$A=831,$N=0 $M=255,$A=319,$N=1 $M=511,$A=831,$N=1" E2E_DEPTH=16
abn 2 "smollm2 1b" "$N=0 $N=1" E2E_DEPTH=16
t
# llama.cpp's decode on the same files, same card (carried build), if time allows
if [ $(( $(date +%s) - T0 )) -lt 200 ] && peer_up; then
  for s in smollm2 1b moe48; do
    echo -n "llama.cpp $s tg128 runs (tok/s): "
    timeout 60 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  done
  t
fi
