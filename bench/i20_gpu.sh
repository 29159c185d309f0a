#!/bin/bash
# Issue 20 on the GPU machine in ONE device call (carry .gpudeps: sh tools/gpu_deps.sh fills it):
#   bash bench/i20_gpu.sh [budget_s]        (default 570: the call's limit is 600 s)
# 1. builds the library without the server, test_gpu_variants and bench_gpu with -arch=sm_90
#    into $BUILD (default /tmp/build; make is incremental there)
# 2. test_gpu_variants: every decode variant and the parallel routing, switch on == off == the
#    CPU reference (matvec, MoE FFN block, whole models)
# 3. bench_gpu variants matvec: dense 4096 x 14336 per format, T = 1 / 8, off / on, us + checksum
# 4. bench_gpu variants ffn: the MoE FFN block of the Qwen3-30B-A3B shape, off / decode / route /
#    all, us per call + checksum
# 5. bench_gpu variants decode: the 48-layer Qwen3-30B-A3B-shape decode (IQ3_XXS experts, then
#    IQ2_XXS and Q2_0 when the budget allows), off / decode / route / all, tok/s + ids hash
# Each step runs only while the budget has the time it needs (printed when skipped); the tables
# of steps 3-5 are printed again at the end. Logs: /tmp/i20-*.log (carried back: $OUT).
set -u
budget=${1:-570}
b=${BUILD:-/tmp/build}; deps=$(pwd)/.gpudeps
out=${OUT:-/tmp}
[ -f /usr/include/jansson.h ] || [ -f "$deps/usr/include/jansson.h" ] ||
  { echo "no jansson: carry .gpudeps (sh tools/gpu_deps.sh, or a copy of main's)"; exit 2; }
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
step() {   # step NAME NEED_S CMD...: run CMD under the time left, output to /tmp/i20-NAME.log and the screen
  local name=$1 need=$2; shift 2
  local l; l=$(left)
  if [ "$l" -lt "$need" ]; then echo "== $name: SKIPPED ($l s left, needs ~$need s)"; return 1; fi
  echo "== $name ($l s left)"
  timeout -k 5 $(( l - 5 )) "$@" > "/tmp/i20-$name.log" 2>&1; local rc=$?
  cp "/tmp/i20-$name.log" "$out/" 2>/dev/null
  return $rc
}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader 2>/dev/null
git log --oneline -1 2>/dev/null

step build 120 make -j"$(nproc)" BUILD="$b" DEPS="$deps" CUDA_ARCH=sm_90 "$b/libstrata_core.a" \
  "$b/tests/gpu/test_gpu_variants" "$b/tests/gpu/bench_gpu"
rc=$?; tail -3 /tmp/i20-build.log; echo "build: rc $rc at $(( $(date +%s) - t0 )) s"
[ $rc -eq 0 ] || { grep -E "error|Error" /tmp/i20-build.log | head -20; exit 1; }

step parity 150 "$b/tests/gpu/test_gpu_variants"
echo "parity: rc $?"; grep -E "FAIL|variant on|on == off|switches on|passed" /tmp/i20-parity.log | head -40

step matvec 80 "$b/tests/gpu/bench_gpu" variants matvec
cat /tmp/i20-matvec.log
step ffn 90 "$b/tests/gpu/bench_gpu" variants ffn experts=IQ3_XXS,IQ2_XXS,Q2_0,IQ4_XS,Q6_K
cat /tmp/i20-ffn.log
step decode 120 "$b/tests/gpu/bench_gpu" variants decode layers=48 experts=IQ3_XXS
cat /tmp/i20-decode.log
step decode2 150 "$b/tests/gpu/bench_gpu" variants decode layers=48 experts=IQ2_XXS,Q2_0
cat /tmp/i20-decode2.log 2>/dev/null

rm -f /tmp/strata-i20-*.gguf   # the 4-layer and the IQ2_XXS / Q2_0 48-layer files (moe48 stays for bench_e2e)
echo
echo "==== summary ($(( $(date +%s) - t0 )) s) ===="
grep -E "passed|FAIL" /tmp/i20-parity.log 2>/dev/null | tail -5
for f in matvec ffn decode decode2; do
  [ -r "/tmp/i20-$f.log" ] && grep -vE "^device|^\(" "/tmp/i20-$f.log"
done
