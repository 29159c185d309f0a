#!/bin/bash
# Written 2026-12-07 (19:06 session): branch wip/q6p's programs (wip/dpf + STRATA_Q6_PLANAR; tools/gpu_pack.sh pack
# BUILD with wip/q6p checked out; carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf,
# .peer/lcb-cuda.tar.xz). One call (~420 s on a warm machine that already wrote the moe48 file):
# 1. test_gpu_variants alone (its "q6 planar" part: the copy's bytes, logits and greedy ids == the CPU with the
#    planar head on and off, rows of 2 / 8 / 9 super-blocks, a tied head, kqp grids of 3 CTAs);
# 2. STRATA_Q6_PLANAR 0 / 1 alternated, two rounds, on the 1.5B shape (Q6_K head 128,256 x 2,048: 215 MB) and the
#    48-layer MoE (151,936 x 2,048: 255 MB), then llama.cpp tg128 on the same files.
# Prediction (written before any run): the head's kqp at 151936 x 2048 ran at 71 % of the copy (H100, 2026-12-05:
# 118-120 us) where Q4_K / Q5_K's kqp reach 79-81 %; planes with 16-byte loads (4 loads a lane and block instead of
# 13) bring it to ~78-80 %: ~10-15 us a token. 1b (~750 us a token) +1-2 %, moe48 (~2,300 us) +0.3-0.6 %, the
# latter inside the spread. ids equal. Default only if 1b gains in both rounds.
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s96.txt") 2>&1
SHAPES=${SHAPES:-1b moe48}
synth_bg "$SHAPES"
gb_unpack
timeout 240 $g/bin/test_gpu_variants > /tmp/variants.txt 2>&1; echo "test_gpu_variants rc $?"
grep -E "planar|passed|FAIL" /tmp/variants.txt | tail -12
t
synth_wait "${SYNTH_WAIT:-420}"; t
e2e_ab 2 "$SHAPES" STRATA_Q6_PLANAR "0 1" 1
t
if peer_up; then peer_tg "$SHAPES"; else echo "peer: the unpack failed"; fi
t
