#!/bin/bash
# One device call (2026-12-04, 13:31 session, call 2; issues 19, 20). STRATA_CUDA_ATTN_TC_DEC:
# bit 256 (the decode kernels per cache kind; call 1's int8 rows crashed on a host bug of the
# first build, a.kv8 never set: fixed) and bit 512 (the decode launches quantize wo's activation
# blocks from the output rows kept in shared memory instead of reading them back from global
# memory after a barrier; same bits). A/B alternated, two rounds, depths 16 and 4,096:
# f16 319 / 831, int8 63 / 319 / 831 (SmolLM2, 1.5B), MoE f16 63 / 319 / 831; then the GPU suite;
# then ncu's source view of the MoE gate/up launch (issue 20: stall samples per SASS
# instruction, written to $OUT/gu_src.csv). Peer: none (A/B of strata's own switches, a profile).
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/smollm2-vocab.gguf.
# Predictions (before the call): bit 512 +1-2.5 % at both depths (one L2 round trip off each
# layer's attention critical path); bit 256 on int8 within the spread at depth 16, 0-3 % at 4,096.
# After the call its suite lines were folded into gpu_call.sh (gpu_suite; the same run).
set -u
. bench/gpu_call.sh
gb_unpack
ab 2 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "319 831" E2E_KV=f16 E2E_DEPTH=16,4096
ab 2 "smollm2 1b" STRATA_CUDA_ATTN_TC_DEC "63 319 831" E2E_KV=int8 E2E_DEPTH=16,4096
gpu_suite 280
t
ab 2 "moe48" STRATA_CUDA_ATTN_TC_DEC "63 319 831" E2E_DEPTH=16,4096
STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 200 ncu --profile-from-start off --clock-control none \
  --kernel-name regex:moe_gate_up --launch-count 1 --set full --import-source yes -o /tmp/gu -f $B moe48 1 > /tmp/ncu.txt 2>&1
tail -2 /tmp/ncu.txt
ncu --import /tmp/gu.ncu-rep --page source --csv --print-source sass > "$OUT/gu_src.csv" 2>/dev/null
ncu --import /tmp/gu.ncu-rep --page details --csv > "$OUT/gu_details.csv" 2>/dev/null
ls -la "$OUT"; t
