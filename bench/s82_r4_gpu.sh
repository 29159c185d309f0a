#!/bin/bash
# Written 2026-12-06 (22:03 session): STRATA_CUDA_MOE_R4's first GPU call (issue 20; docs/KERNELS.md "R4 expert
# rows"). test_gpu_variants (its "r4" lines: the device copies == r4_repack_rows's bytes, layer 0's FFN block with
# R4 on == off == the CPU, the R4 launches counted; its model runs with every switch on take R4 through the decode
# graph), then ROUNDS (default 2) alternated rounds of `bench_e2e SHAPE 1` with STRATA_CUDA_MOE_R4 0 / 1 / 2 (2: the gate/up kernel unbounded) on moe48
# (IQ3_XXS experts) and moe48_iq2 (IQ2_XXS), llama.cpp tg128 on the same files when the carried build is there
# (.peer/lcb-cuda.tar.xz), and with NCU=1 the T = 1 expert launches of one eager step under ncu, R4 0 / 1 / 2
# (time, instructions, DRAM bytes: layer 0's gate/up and down). The suite runs in its own call (gpu_suite).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf (and .peer/lcb-cuda.tar.xz for the peer).
# Prediction (BENCHMARKS, 22:03 session): moe48 416 -> 480-520 tok/s on the H200, moe48_iq2 +5-15 %; parity exact.
# Ran once (22:03 session, call A, H100): test_gpu_variants 1,976 passed; the A/B then ran past the call's 580 s
# (writing the two 8-12 GB files on the cold machine) and its lines were lost to the caller's `| tail`; calls B-E ran
# the rest inline (BENCHMARKS). Invoke it without a pipe: its A/B lines also go to $OUT/ab*.txt only through tee.
set -u
. bench/gpu_call.sh
gb_unpack
timeout 400 $g/bin/test_gpu_variants > /tmp/tv.txt 2>&1; echo "test_gpu_variants rc $?: $(tail -1 /tmp/tv.txt)"
grep -E "R4 copies|FAIL" /tmp/tv.txt | head -24
cp /tmp/tv.txt "$OUT/test_gpu_variants.txt"
t
R=${ROUNDS:-2}
e2e_ab "$R" "moe48" STRATA_CUDA_MOE_R4 "0 1 2" 1 | tee /tmp/ab3.txt
e2e_ab "$R" "moe48_iq2" STRATA_CUDA_MOE_R4 "0 1 2" 1 | tee /tmp/ab2.txt
t
if [ -f .peer/lcb-cuda.tar.xz ] && peer_up; then peer_tg "moe48 moe48_iq2"; else echo "peer: not carried"; fi
t
echo "R4 above R4 off in every round: moe48 $(ab_wins /tmp/ab3.txt 3) moe48_iq2 $(ab_wins /tmp/ab2.txt 3)"
if [ "${NCU:-0}" = 1 ]; then
  for r4 in 0 1 2; do
    STRATA_CUDA_MOE_R4=$r4 STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
      --kernel-name regex:'moe_(gate_up|down)_kernel' --launch-count 2 \
      --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
      --csv $B moe48 1 2>/dev/null | grep -E 'gpu__|inst_exec|dram__|registers|warps_active' |
      awk -F'","' -v v=$r4 '{split($5, a, "("); print "R4=" v, a[1], $(NF-2), $NF}'
  done
  t
fi
