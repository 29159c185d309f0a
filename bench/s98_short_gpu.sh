#!/bin/bash
# Written 2026-12-07 (19:06 session): s97 for a call of less than 600 s (the budget left after failed starts):
# test_gpu_variants alone (bit 16 in mode 1, the planar head's parity) while the files are written, then s97's
# A/B rows and the peer. The whole suite does not run.
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s98.txt") 2>&1
synth_bg "1b moe48"
gb_unpack
timeout 300 $g/bin/test_gpu_variants > /tmp/variants.txt 2>&1; echo "test_gpu_variants rc $?"
grep -E "planar|passed|FAIL" /tmp/variants.txt | tail -14
cp /tmp/variants.txt "$OUT/variants.txt"
t
synth_wait 400; t
alt_runs 2 1b "STRATA_Q6_PLANAR=0 STRATA_Q6_PLANAR=1" 1 'prompt|batch'
alt_runs 2 moe48 "STRATA_CUDA_PREFETCH=5 STRATA_CUDA_PREFETCH=21 STRATA_Q6_PLANAR=1" 1 'prompt|batch'
if peer_up; then peer_tg "1b moe48"; else echo "peer: the unpack failed"; fi
t
