#!/bin/bash
# The GPU suite built HERE and carried to the GPU machine, so a device call spends no time
# compiling (nvcc there took 200-350 s of the session's 1,800; 2026-12-02 calls 3-6 ran this way).
#
#   here:   bash tools/gpu_pack.sh pack [BUILD]   build (make all + the tests/gpu programs, sm_90),
#                                                 strip, and pack into .gpubin/ (ignored): bins.tar.xz
#                                                 (~15 MB: one xz dictionary across the programs
#                                                 dedupes their identical CUDA code), lib/ (the
#                                                 shared libraries the GPU machine lacks), and with
#                                                 SERVER=1 the strata binary + libraries for
#                                                 bench/server_gpu.sh as srv.tar.xz (~20 MB)
#   here:   bash tools/gpu_pack.sh keep-old          the packed bench_e2e, test_gpu_mm and bench_gpu kept as an
#                                                 A/B's old programs (.gpubin/old.tar.xz), before
#                                                 packing the change
#   there:  bash tools/gpu_pack.sh run [OUT]      unpack into /tmp/gb and run every test_gpu_*
#                                                 through tests/run.sh (logs of failing programs
#                                                 into OUT); the programs stay in /tmp/gb/bin for
#                                                 benchmarks (bench_e2e, bench_gpu)
# Device call: carry [".gpubin/bins.tar.xz", ".gpubin/lib"] (the tree plus carried paths must stay
# under 64 MiB; ".gpubin" whole also holds bench.tar.xz, the benchmark programs alone, which
# bench/gpu_session.sh unpacks when bins.tar.xz is not carried, skipping the suite).
set -euo pipefail
cmd=${1:-}
case "$cmd" in
pack)
  b=${2:-build}
  progs=$(ls tests/gpu/test_*.c | sed "s#tests/gpu/\(.*\)\.c#$b/tests/gpu/\1#")
  make -j"$(nproc)" BUILD="$b" all >/dev/null
  make -j"$(nproc)" BUILD="$b" $progs "$b/tests/gpu/bench_e2e" "$b/tests/gpu/bench_gpu" >/dev/null
  rm -rf .gpubin/bin .gpubin/bins.tar.xz .gpubin/bench.tar.xz && mkdir -p .gpubin/bin .gpubin/lib
  ex=$(git rev-parse --git-path info/exclude)   # a worktree's .git is a file
  mkdir -p "$(dirname "$ex")"
  grep -qx '/.gpubin/' "$ex" 2>/dev/null || echo '/.gpubin/' >> "$ex"
  for f in $progs "$b/tests/gpu/bench_e2e" "$b/tests/gpu/bench_gpu"; do strip -o ".gpubin/bin/$(basename "$f")" "$f"; done
  # what the programs link dynamically beyond glibc and libstdc++ (jansson on Debian 12)
  ldd .gpubin/bin/test_gpu_e2e | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
      *) cp -L "$lib" .gpubin/lib/ ;;
    esac
  done
  # the benchmark programs alone (bench.tar.xz, ~1/3 of the size): a call that carries the
  # prebuilt llama.cpp (.peer/lcb-cuda.tar.xz, ~40 MB) fits the 64 MiB only without the tests
  (cd .gpubin && tar cf - bin/bench_e2e bin/bench_gpu | xz -T2 --lzma2=preset=1,dict=400MiB > bench.tar.xz)
  (cd .gpubin && tar cf - bin | xz -T2 --lzma2=preset=1,dict=400MiB > bins.tar.xz && rm -rf bin)
  if [ "${SERVER:-0}" = 1 ]; then
    sh bench/server_gpu.sh pack "$b" >/dev/null
    tar cf - .srvbin | xz -T2 --lzma2=preset=1,dict=64MiB > .gpubin/srv.tar.xz
  fi
  du -sh .gpubin; ls .gpubin .gpubin/lib
  ;;
keep-old)
  # the packed bench_e2e, test_gpu_mm and bench_gpu as the A/B's old programs (.gpubin/old.tar.xz, ~26 MB): pack
  # the baseline, keep-old, then pack the change; a call carries bins.tar.xz, lib and old.tar.xz and
  # unpacks it into /tmp/old (bench/gpu_call.sh's old_unpack; its mm_bench_rows / e2e_prog_rows run both)
  t=$(mktemp -d)
  tar xJf .gpubin/bins.tar.xz -C "$t"
  (cd "$t/bin" && tar cf - bench_e2e test_gpu_mm bench_gpu | xz -T2 -6 --lzma2=dict=96MiB > "$OLDPWD/.gpubin/old.tar.xz")
  rm -rf "$t"; ls -la .gpubin/old.tar.xz
  ;;
run)
  out=${2:-${OUT:-/tmp}}
  g=/tmp/gb
  rm -rf "$g" && mkdir -p "$g" && tar xJf .gpubin/bins.tar.xz -C "$g"
  [ -f .gpubin/srv.tar.xz ] && tar xJf .gpubin/srv.tar.xz -C /tmp
  export LD_LIBRARY_PATH="$PWD/.gpubin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  rc=0
  BUILD="$g" TEST_LOGS=/tmp/gb-logs sh tests/run.sh "$g"/bin/test_gpu_* || rc=$?
  mkdir -p "$out/gpu-logs"
  for f in /tmp/gb-logs/*.out; do
    grep -qE " [1-9][0-9]* failed" "$f" && cp "$f" "${f%.out}.err" "$out/gpu-logs/" 2>/dev/null || true
  done
  exit "$rc"
  ;;
*) sed -n 2,19p "$0"; exit 2 ;;
esac
