#!/bin/bash
# One device call (2026-12-04, 04:24 session, call 6; issue 20, measure first): ncu's full sections
# with source counters for one decode step's first MoE kernels (router + routing, gate/up, down) of
# the 48-layer MoE shape at depth 16 (pass 60 of `bench_e2e moe48 1`, eager, as
# bench/step_profile_gpu.sh). Writes $OUT/moe.ncu-rep, $OUT/moe_details.csv and the SASS
# source view of the kernels ($OUT/moe_src.csv); prints the headline metrics.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf. Peer: none (a diagnosis).
set -u
. bench/gpu_call.sh
gb_unpack
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 300 ncu --profile-from-start off --clock-control none \
  --kernel-name regex:moe_ --launch-count 3 --set full --import-source yes -o "$OUT/moe" -f $B moe48 1 > /tmp/ncu.txt 2>&1
tail -3 /tmp/ncu.txt; t
ncu --import "$OUT/moe.ncu-rep" --page details --csv > "$OUT/moe_details.csv" 2>/dev/null
python3 - "$OUT/moe_details.csv" <<'PY'
import csv, sys
want = ("Duration", "DRAM Throughput", "Memory Throughput", "L2 Hit Rate", "Achieved Occupancy", "Registers Per Thread",
        "Issue Slots Busy", "Executed Ipc Active", "Warp Cycles Per Issued Instruction", "No Eligible", "Grid Size",
        "Block Size", "Theoretical Occupancy", "Compute (SM) Throughput", "L1/TEX Hit Rate", "Executed Instructions")
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows:
    if r.get("Metric Name") in want:
        print("%-40.40s %-38s %s %s" % (r.get("Kernel Name", "")[:40], r["Metric Name"], r.get("Metric Value"), r.get("Metric Unit", "")))
PY
ncu --import "$OUT/moe.ncu-rep" --page source --csv --print-source sass > "$OUT/moe_src.csv" 2>/dev/null
ls -la "$OUT"; t
