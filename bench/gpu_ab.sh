#!/bin/sh
# Before/after on the GPU machine in one call: build this tree and an older one (OLD: a
# `git archive` of the older commit unpacked inside the checkout, ignored, carried), then run
# tests/gpu/bench_e2e (public API only, so the same source links against both libraries) of
# both builds alternately on the same synthetic files.
#   sh bench/gpu_ab.sh OLD [shapes] [rounds]      shapes: smollm2 1b moe48 (default all)
# AB_ARGS: bench_e2e's arguments after the shape (default "3"; "3 batch" adds the batched steps);
# NEW_BUILD: where this tree is built (default /tmp/ab-new; /tmp/build reuses make test-gpu's).
set -e
old=$1; shapes=${2:-"smollm2 1b moe48"}; rounds=${3:-2}
[ -d "$old" ] || { echo "usage: sh bench/gpu_ab.sh OLD_TREE [shapes] [rounds]" >&2; exit 2; }
deps=$(pwd)/.gpudeps
nb=${NEW_BUILD:-/tmp/ab-new}; args=${AB_ARGS:-3}
j=$(nproc)
cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
make -j"$j" BUILD="$nb" DEPS="$deps" "$nb/libstrata_core.a" "$nb/tests/gpu/bench_e2e" >/tmp/ab-new.log 2>&1 ||
  { tail -30 /tmp/ab-new.log; exit 1; }
(cd "$old" && make -j"$j" BUILD=/tmp/ab-old DEPS="$deps" /tmp/ab-old/libstrata_core.a) >/tmp/ab-old.log 2>&1 ||
  { tail -30 /tmp/ab-old.log; exit 1; }
gcc -std=c11 -O2 -D_GNU_SOURCE -I"$old/include" -I"$old/src" -I"$deps/usr/include" tests/gpu/bench_e2e.c \
  /tmp/ab-old/libstrata_core.a -L"$deps/usr/lib/x86_64-linux-gnu" -lm -lpthread -ljansson -L"$cuda/lib64" \
  -lcudart_static -ldl -lrt -lstdc++ -o /tmp/ab-old/bench_e2e
for s in $shapes; do
  for r in $(seq "$rounds"); do
    echo "before:"; /tmp/ab-old/bench_e2e "$s" $args
    echo "after:"; "$nb/tests/gpu/bench_e2e" "$s" $args
  done
done
