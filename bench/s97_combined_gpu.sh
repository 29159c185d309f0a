#!/bin/bash
# Written 2026-12-07 (19:06 session), after failed starts left ~1,100 s of device time: s95 and s96 in one call
# (wip/q6p's programs, carried as s95 / s96 say), the most wanted first since the call may run out:
# 1. make test-gpu on these programs (main's defaults with STRATA_CUDA_PREFETCH 5, never yet run as the suite's
#    default; test_gpu_variants with bit 16 and the planar head's parity), the files written meanwhile;
# 2. moe48: STRATA_CUDA_PREFETCH 5 (default) / 21 (bit 16, s95's prediction +1-3 %) / STRATA_Q6_PLANAR=1 (s96's
#    +0.3-0.6 %), two rounds alternated;
# 3. 1b: STRATA_Q6_PLANAR 0 / 1, two rounds (s96's prediction +1-2 %);
# 4. llama.cpp tg128 on both files.
. bench/gpu_call.sh
exec > >(tee -a "$OUT/s97.txt") 2>&1
synth_bg "moe48 1b"
gpu_suite "${SUITE_S:-330}"
grep -E "planar" /tmp/suite.txt | head -8
t
synth_wait 420; t
gb_unpack
alt_runs 2 moe48 "STRATA_CUDA_PREFETCH=5 STRATA_CUDA_PREFETCH=21 STRATA_Q6_PLANAR=1" 1 'prompt|batch'
alt_runs 2 1b "STRATA_Q6_PLANAR=0 STRATA_Q6_PLANAR=1" 1 'prompt|batch'
if peer_up; then peer_tg "moe48 1b"; else echo "peer: the unpack failed"; fi
t
