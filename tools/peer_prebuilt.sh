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
#                                                .peer/lcb-cuda.tar.xz (ignored, like .peer itself)
#                                                and in two parts (.peer/lcb-cuda.part00, 01 and
#                                                .peer/lcb-cuda.parts: count, checksum), ~21 MB each.
#                                                ~35 min of this machine's 2 cores; resumable
#   there:  bash tools/peer_prebuilt.sh unpack   (carry .peer/lcb-cuda.parts and one part per call,
#                                                consecutive calls: /tmp persists while warm; or the
#                                                whole tarball where it fits) into /tmp/lcb/bin, so
#                                                /tmp/lcb/bin/llama-bench is
#                                                where the peer script's build puts it, and
#                                                /tmp/lcb/env.sh (LD_LIBRARY_PATH with the folders of
#                                                the image's libraries it needs); exits 1 when one is
#                                                missing there (then build there:
#                                                bash .peer/llamacpp.sh build .peer/llamacpp-src.tar.xz),
#                                                3 while parts are still to come
# The libraries it needs beyond ggml's (libcudart, libcublas of CUDA 13.0) are the GPU image's:
# both machines have nvcc 13.0 (KINDS.md), and the strata programs built here run there.
set -euo pipefail
B=${LCB_HERE:-/tmp/lcb-here}; S=${LCB_SRC:-/tmp/lcsrc}
case "${1:-}" in
pack)
  [ -f .peer/llamacpp-src.tar.xz ] || { echo "no .peer/llamacpp-src.tar.xz: sh ../shared/peer/llamacpp.sh pack .peer" >&2; exit 1; }
  [ -f "$S/CMakeLists.txt" ] || { mkdir -p "$S" && tar xJf .peer/llamacpp-src.tar.xz -C "$S"; }
  # no driver here: the program links against the toolkit's stub libcuda (found as libcuda.so.1
  # through -rpath-link); there the driver's libcuda.so.1 is loaded
  stub=$(dirname "$(realpath "$(command -v nvcc)")")/../lib64/stubs/libcuda.so
  mkdir -p /tmp/cudastub && ln -sf "$stub" /tmp/cudastub/libcuda.so.1
  # 90-real: SASS for sm_90 alone. With 90 (until 2026-12-03) every kernel also carried its PTX
  # (144 PTX + 144 cubins in libggml-cuda.so, 60 MB; the tarball 41.5 MB did not fit one call
  # beside the strata programs); the H200 runs the SASS and never needs the PTX. 90-real:
  # libggml-cuda.so 40.6 MB, the tarball 21.9 MB (one part): it travels with bins.tar.xz. A build
  # directory configured for another list is reconfigured (only the CUDA objects rebuild).
  arch=${LCB_ARCH:-90-real}
  if [ ! -f "$B/CMakeCache.txt" ] || ! grep -q "^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=$arch\$" "$B/CMakeCache.txt"; then
    cmake -S "$S" -B "$B" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF \
      -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" -DLLAMA_BUILD_TESTS=ON \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
      -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,/tmp/cudastub" > "$B.cfg.log" 2>&1
  fi
  nice -n 5 cmake --build "$B" -j"$(nproc)" --target llama-bench test-backend-ops > "$B.log" 2>&1 || { tail -20 "$B.log"; exit 1; }
  t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
  mkdir -p "$t/bin"
  cp -L "$B/bin/llama-bench" "$B/bin/test-backend-ops" "$t/bin/"   # test-backend-ops: MUL_MAT / MUL_MAT_ID per format (issues 17, 20)
  cp -a "$B"/bin/*.so* "$t/bin/"   # symbolic links kept: one copy of each library
  for f in "$t"/bin/*; do [ -L "$f" ] || strip "$f" 2>/dev/null || true; done
  (cd "$t" && tar cf - bin | xz -T2 -6 > "$OLDPWD/.peer/lcb-cuda.tar.xz")
  # ~22 MB for 90-real (~40 MB with the PTX: that did not fit one call's 64 MiB beside the strata
  # programs, ~21-23 MB, and the tree); parts of 21 MiB all the same, for a call short of room,
  # carried by consecutive calls on the warm machine (unpack below)
  rm -f .peer/lcb-cuda.part*
  split -b 21M -d .peer/lcb-cuda.tar.xz .peer/lcb-cuda.part
  (cd .peer && ls lcb-cuda.part?? | wc -l > lcb-cuda.parts && sha256sum lcb-cuda.tar.xz | cut -c1-64 >> lcb-cuda.parts)
  ls -la .peer/lcb-cuda.*; (cd "$t/bin" && ls -la)
  ;;
unpack)
  # the whole tarball when carried, else the parts carried so far (kept in /tmp between calls)
  if [ ! -f .peer/lcb-cuda.tar.xz ]; then
    [ -f .peer/lcb-cuda.parts ] || { echo "no .peer/lcb-cuda.tar.xz or .peer/lcb-cuda.parts" >&2; exit 1; }
    for p in .peer/lcb-cuda.part??; do [ -f "$p" ] && cp "$p" /tmp/; done
    n=$(sed -n 1p .peer/lcb-cuda.parts); sum=$(sed -n 2p .peer/lcb-cuda.parts)
    have=$(ls /tmp/lcb-cuda.part?? 2>/dev/null | wc -l)
    [ "$have" -ge "$n" ] || { echo "peer: $have of $n parts in /tmp (carry the next one in the next call)"; exit 3; }
    cat /tmp/lcb-cuda.part?? > /tmp/lcb-cuda.tar.xz
    [ "$(sha256sum /tmp/lcb-cuda.tar.xz | cut -c1-64)" = "$sum" ] || { echo "peer: parts do not match the checksum" >&2; exit 1; }
    src=/tmp/lcb-cuda.tar.xz
  else src=.peer/lcb-cuda.tar.xz; fi
  mkdir -p /tmp/lcb && tar xJf "$src" -C /tmp/lcb
  # libraries the image has but not on the loader's path (libnccl.so.2 of the pip wheels, say):
  # their folders go into /tmp/lcb/env.sh, which the caller sources before running llama-bench
  lp=/tmp/lcb/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for lib in $(LD_LIBRARY_PATH=$lp ldd /tmp/lcb/bin/llama-bench | awk '/not found/{print $1}'); do
    f=$(find /usr/local /usr/lib /opt / -xdev -name "$lib" 2>/dev/null | head -1)
    [ -n "$f" ] && lp=$lp:$(dirname "$f")
  done
  echo "export LD_LIBRARY_PATH=$lp" > /tmp/lcb/env.sh
  if LD_LIBRARY_PATH=$lp ldd /tmp/lcb/bin/llama-bench | grep -q "not found"; then
    LD_LIBRARY_PATH=$lp ldd /tmp/lcb/bin/llama-bench | grep "not found"
    rm -f /tmp/lcb/bin/llama-bench; exit 1
  fi
  echo "llama-bench ready in /tmp/lcb/bin (source /tmp/lcb/env.sh)"
  ;;
*) sed -n 2,18p "$0"; exit 2 ;;
esac
