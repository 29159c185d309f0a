#!/bin/bash
# strata and llama.cpp side by side on the H200, on the same synthetic files, in two consecutive
# device calls (the machine stays warm between them, so /tmp carries over). Carry .gpudeps and
# .peer (llamacpp-src.tar.xz from ../shared/peer/llamacpp.sh pack, the script itself, and a
# vocabulary-only GGUF of SmolLM2 from tools/vocab_only.py, so llama.cpp loads the files).
#   call 1: bash bench/peer_gpu.sh start   llama.cpp's CUDA build in the background; make test-gpu;
#                                          the three files (bench_e2e writes them, SmolLM2's tokenizer)
#   call 2: bash bench/peer_gpu.sh peer    the build finished (resumed if needed), then per shape
#                                          llama-bench (pp512, tg128) and strata's bench_e2e on the
#                                          same file, the matmul microbenchmark next to
#                                          test-backend-ops MUL_MAT (m 4096, k 14336, n 512)
set -u
b=${BUILD:-/tmp/build}; deps=$(pwd)/.gpudeps; voc=$(pwd)/.peer/smollm2-vocab.gguf
shapes=${SHAPES:-"smollm2 1b moe48"}
case "${1:-}" in
start)
  (setsid nohup nice -n 5 bash .peer/llamacpp.sh build .peer/llamacpp-src.tar.xz >/tmp/lcb.out 2>&1 &)
  make -j"$(nproc)" BUILD="$b" DEPS="$deps" test-gpu 2>&1 | grep -E "passed|FAIL|error|Error" | tail -40
  for s in $shapes; do E2E_TOKENIZER=$voc "$b/tests/gpu/bench_e2e" "$s" 1; done
  ;;
peer)
  for i in $(seq 60); do [ -x /tmp/lcb/bin/llama-bench ] && [ -x /tmp/lcb/bin/test-backend-ops ] && break; sleep 5; done
  [ -x /tmp/lcb/bin/llama-bench ] || bash .peer/llamacpp.sh build .peer/llamacpp-src.tar.xz | tail -3
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
  for s in $shapes; do
    echo "== $s: llama.cpp"
    /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 2>/dev/null | grep -E "pp512|tg128"
    echo "== $s: strata"
    E2E_TOKENIZER=$voc "$b/tests/gpu/bench_e2e" "$s" 3
    echo "== $s: strata, STRATA_CUDA_MM=3 (16-warp matmul)"
    STRATA_CUDA_MM=3 E2E_TOKENIZER=$voc "$b/tests/gpu/bench_e2e" "$s" 1
  done
  "$b/tests/gpu/test_gpu_mm" bench
  /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'type_a=(q4_0|q4_1|q5_0|q5_1|q8_0|q4_K|q5_K|q6_K|q2_K|iq3_xxs),.*n=512,k=14336' 2>/dev/null |
    grep -E "FLOPS" | sed -E 's/.*type_a=([^,]*),.*\): *(.*)/MUL_MAT \1: \2/' | head -20
  ;;
*) sed -n 2,14p "$0"; exit 2 ;;
esac
