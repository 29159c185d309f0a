#!/bin/bash
# One device call (2026-12-04, 04:24 session, call 3): the GPU suite on the session's code, the
# A/B of STRATA_CUDA_ATTN_TC_DEC bit 32 (the q / k norms inside the decode launches; the MoE has
# them) and bit 16 on SmolLM2 f16 (its rows of call 2 were lost), then the issue-19 table: strata's
# default (63) with f16 and int8 caches at depth 16 / 4,096 / 16,384, two rounds, and llama.cpp
# (the carried build) with f16 and q8_0 K/V on the same files in the same call.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz, .peer/smollm2-vocab.gguf.
# Output: one compact line a run (decode tok/s at each depth); full logs under $OUT.
# Prediction (bit 32): the MoE +2-3 % at every depth (one launch of ~3 us serialized a layer, 48
# layers, ~2 us in the graph), the dense shapes unchanged (no q / k norms).
# After this call: bit 32 (the q / k norms) was deleted; the final code masks the switch to 31,
# so DEC=63 runs as 31 (on the dense shapes the kernels differ only by that unused branch).
set -u
. bench/gpu_call.sh
bash tools/gpu_pack.sh run "$OUT" > "$OUT/suite.txt" 2>&1
grep -E "passed|failed" "$OUT/suite.txt" | tail -20; t
gb_unpack
D=16,4096,16384
# one bench_e2e run as one line: "d16 X d4096 Y d16384 Z (hashes)"
one() {   # one LABEL SHAPE KV DEC [VAR=VALUE]
  local label=$1 s=$2 kv=$3 dec=$4; shift 4
  env "$@" E2E_KV=$kv STRATA_CUDA_ATTN_TC_DEC=$dec E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 > /tmp/one.txt 2>&1
  cat /tmp/one.txt >> "$OUT/runs.txt"
  echo "$label $s $kv DEC=$dec: $(awk '/depth/ { for (i = 1; i <= NF; i++) { if ($i == "depth") d = $(i + 1); if ($i == "decode") v = $(i + 2); if ($i == "hash") h = $(i + 1) } printf "d%s %s [%s] ", d + 0, v, substr(h, 1, 6) }' /tmp/one.txt)"
}
for r in 1 2; do for cfg in f16,31 f16,63 int8,31 int8,63; do one "r$r" moe48 ${cfg%,*} ${cfg#*,}; done; done; t
for r in 1 2; do for cfg in f16,15 f16,63; do one "r$r" smollm2 ${cfg%,*} ${cfg#*,}; done; done; t
for s in smollm2 1b; do for r in 1 2; do for kv in f16 int8; do one "r$r" $s $kv 63; done; done; done; t
peer_up || { echo "peer: the unpack failed"; exit 1; }
llama_depth_rows "smollm2 1b moe48"
