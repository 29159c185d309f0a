#!/bin/bash
# llama.cpp (the peer) built HERE for the H200 and carried, so a device call can run llama-bench
# beside strata without spending ~420 s of its 600 on the peer's build (2026-12-03: a call that
# built llama.cpp beside the GPU suite ran out of time before llama-bench; BENCHMARKS.md).
#
#   here:   bash tools/peer_prebuilt.sh pack     configure and build llama-bench from
#                                                .peer/llamacpp-src.tar.xz (../shared/peer/llamacpp.sh
#                                                pack .peer) with CUDA for sm_90 (no tuning for
#                                                this CPU: GGML_NATIVE=OFF, AVX2), strip, and pack
#                                                bin/ (the program and ggml's shared libraries) into
#                                                .peer/lcb-cuda.tar.xz (ignored, like .peer itself).
#                                                ~50 min of this machine's 2 cores; resumable
#   there:  bash tools/peer_prebuilt.sh unpack   into /tmp/lcb/bin, so /tmp/lcb/bin/llama-bench is
#                                                where the peer script's build puts it; exits 1 when
#                                                a library is missing there (then build there:
#                                                bash .peer/llamacpp.sh build .peer/llamacpp-src.tar.xz)
# The libraries it needs beyond ggml's (libcudart, libcublas of CUDA 13.0) are the GPU image's:
# both machines have nvcc 13.0 (KINDS.md), and the strata programs built here run there.
set -euo pipefail
B=${LCB_HERE:-/tmp/lcb-here}; S=${LCB_SRC:-/tmp/lcsrc}
case "${1:-}" in
pack)
  [ -f .peer/llamacpp-src.tar.xz ] || { echo "no .peer/llamacpp-src.tar.xz: sh ../shared/peer/llamacpp.sh pack .peer" >&2; exit 1; }
  [ -f "$S/CMakeLists.txt" ] || { mkdir -p "$S" && tar xJf .peer/llamacpp-src.tar.xz -C "$S"; }
  [ -f "$B/CMakeCache.txt" ] || cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
      -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF > "$B.cfg.log" 2>&1
  nice -n 5 cmake --build "$B" -j"$(nproc)" --target llama-bench > "$B.log" 2>&1 || { tail -20 "$B.log"; exit 1; }
  t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
  mkdir -p "$t/bin"
  cp -L "$B/bin/llama-bench" "$t/bin/"
  for f in "$B"/bin/*.so*; do [ -e "$f" ] && cp -L "$f" "$t/bin/"; done
  strip "$t"/bin/* 2>/dev/null || true
  (cd "$t" && tar cf - bin | xz -T2 -6 > "$OLDPWD/.peer/lcb-cuda.tar.xz")
  ls -la .peer/lcb-cuda.tar.xz; (cd "$t/bin" && ls -la)
  ;;
unpack)
  [ -f .peer/lcb-cuda.tar.xz ] || { echo "no .peer/lcb-cuda.tar.xz (carry .peer)" >&2; exit 1; }
  mkdir -p /tmp/lcb && tar xJf .peer/lcb-cuda.tar.xz -C /tmp/lcb
  if LD_LIBRARY_PATH=/tmp/lcb/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd /tmp/lcb/bin/llama-bench | grep -q "not found"; then
    LD_LIBRARY_PATH=/tmp/lcb/bin ldd /tmp/lcb/bin/llama-bench | grep "not found"
    rm -f /tmp/lcb/bin/llama-bench; exit 1
  fi
  echo "llama-bench ready in /tmp/lcb/bin (LD_LIBRARY_PATH=/tmp/lcb/bin)"
  ;;
*) sed -n 2,18p "$0"; exit 2 ;;
esac
