#!/bin/sh
# Issue 19 item 3 (the int8 KV cache on the GPU) in one device call:
#   sh bench/kv8_gpu.sh [shapes]            shapes of bench_e2e (default: smollm2 1b; moe48 too if named)
# 1. test_gpu_kv8: CUDA int8 == CPU int8 (cache bytes, attention ops to depth 1,300, logits after
#    passes of 1..512 columns, graph decode, sessions in shared passes, prefix copy, rewind, KV
#    memory); its last lines and the closing "N passed, N failed" line;
# 2. bench_e2e decode at depth (E2E_DEPTH, default 512,4096,16384: a d-token prompt, then 128
#    greedy tokens through the decode graph) with the f16 cache, then with the int8 cache
#    (E2E_KV=int8): tok/s and the ids hash of each (int8 ids differ from f16: other bits).
# Programs: from .gpubin when tools/gpu_pack.sh packed them here (carry [".gpubin"]), else built
# into BUILD (default /tmp/build; nvcc there takes minutes).
set -e
shapes=${1:-smollm2 1b}
depths=${E2E_DEPTH:-512,4096,16384}
if [ -f .gpubin/bins.tar.xz ]; then
  bin=/tmp/gb/bin
  rm -rf /tmp/gb && mkdir -p /tmp/gb && tar xJf .gpubin/bins.tar.xz -C /tmp/gb
  export LD_LIBRARY_PATH="$PWD/.gpubin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  b=${BUILD:-/tmp/build}; bin=$b/tests/gpu
  make -j"$(nproc)" BUILD="$b" DEPS="$(pwd)/.gpudeps" "$b/tests/gpu/test_gpu_kv8" "$b/tests/gpu/bench_e2e" \
    >/tmp/kv8-build.log 2>&1 || { tail -40 /tmp/kv8-build.log; exit 1; }
fi
set +e
echo "== test_gpu_kv8"
"$bin/test_gpu_kv8" >/tmp/kv8-test.out 2>/tmp/kv8-test.err
rc=$?
cat /tmp/kv8-test.out
grep FAIL /tmp/kv8-test.err | head -20
echo "test_gpu_kv8 exit $rc"
for s in $shapes; do
  for kv in f16 int8; do
    echo "== bench_e2e $s, KV $kv, depths $depths"
    E2E_SKIP_MAIN=1 E2E_DEPTH="$depths" E2E_KV=$kv "$bin/bench_e2e" "$s" 1
  done
done
exit $rc
