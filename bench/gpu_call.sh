# Sourced by the one-call device scripts (bench/mm_next_gpu.sh, peer_depth_gpu.sh, kv8_peer_gpu.sh,
# pipe_prompt_gpu.sh, prompt4k_peer_gpu.sh, attn_merge_gpu.sh, attn_ab_gpu.sh, attn_wave_gpu.sh, ...), run from the repository root on the GPU machine:
# the call's clock, the carried libraries (.gpubin/lib), the SmolLM2 vocabulary that makes
# bench_e2e's files ones llama.cpp accepts (.peer/smollm2-vocab.gguf, when carried), the GPU's
# clocks, and two helpers.
T0=$(date +%s); t() { echo "t=$(( $(date +%s) - T0 )) s"; }
OUT=${OUT:-/tmp}
export LD_LIBRARY_PATH=$PWD/.gpubin/lib
[ -f .peer/smollm2-vocab.gguf ] && export E2E_TOKENIZER=$PWD/.peer/smollm2-vocab.gguf
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
g=/tmp/gb; B=$g/bin/bench_e2e
# the bench_e2e files of "SHAPES" written in the background (setsid, cores 4-15; bench_e2e with BENCH_CPU=1 and a bad
# E2E_KV writes the file, maps it and exits) from a private unpack of the carried programs, while the suite runs on
# the GPU; then synth_wait [SECONDS since the call began, default 420] until they are written, their listing printed
synth_bg() {
  mkdir -p /tmp/gbs && tar xJf .gpubin/bins.tar.xz -C /tmp/gbs
  setsid bash -c 'for s in '"$1"'; do BENCH_CPU=1 E2E_KV=none taskset -c 4-15 /tmp/gbs/bin/bench_e2e $s 1; ls -la /tmp/strata-e2e-$s.gguf; done > /tmp/synth.log 2>&1; echo done >> /tmp/synth.log' < /dev/null > /dev/null 2>&1 &
}
synth_wait() {
  while ! grep -q done /tmp/synth.log 2>/dev/null && [ $(( $(date +%s) - T0 )) -lt ${1:-420} ]; do sleep 5; done
  cat /tmp/synth.log
}
# A call's first half: suite_then_files NAME "SHAPES": every line into $OUT/NAME.txt; the files of SHAPES written in
# the background during make test-gpu's programs (SUITE_S seconds, default 330; 0: no suite), then waited for
# (SYNTH_WAIT, default 420 s into the call) and the benchmark programs unpacked
suite_then_files() {
  exec > >(tee -a "$OUT/$1.txt") 2>&1
  synth_bg "$2"
  env | grep '^STRATA_' || echo "no STRATA_ switch exported: the suite runs the defaults"
  [ "${SUITE_S:-330}" -gt 0 ] && gpu_suite "${SUITE_S:-330}"
  t
  synth_wait "${SYNTH_WAIT:-420}"; t
  gb_unpack
}
# One call's usual shape: suite_then_ab NAME VAR "VALUES" ROUNDS: suite_then_files on the two 48-layer files (or
# $SHAPES), then VAR at each of VALUES alternated for ROUNDS rounds on each file (e2e_ab), then llama.cpp tg128 on them
suite_then_ab() {
  local name=$1 var=$2 vals=$3 rounds=$4 shapes=${SHAPES:-moe48 moe48_iq2}
  suite_then_files "$name" "$shapes"
  e2e_ab "$rounds" "$shapes" "$var" "$vals" 1 | tee /tmp/ab.txt
  t
  if peer_up; then peer_tg "$shapes"; else echo "peer: the unpack failed"; fi
  t
}
# the programs without the suite (tools/gpu_pack.sh run unpacks them and runs the suite)
gb_unpack() { [ -x "$B" ] || { mkdir -p $g && tar xJf .gpubin/bins.tar.xz -C $g; }; }
# llama-bench -o jsonl on stdin: each test's runs one by one (samples_ts), their median and best
# (llama-bench's first run after loading is slow: mean +- sd hides llama.cpp's speed)
runs_of() {
  python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); v = sorted(r["samples_ts"])
    print(" ".join("%.0f" % x for x in r["samples_ts"]), "| median %.0f best %.0f" % (v[len(v) // 2], v[-1]))'
}
# the carried llama.cpp (.peer/lcb-cuda.tar.xz) into /tmp/lcb and its libraries on the path; 1 if not
peer_up() { bash tools/peer_prebuilt.sh unpack >/dev/null && . /tmp/lcb/env.sh; }
# llama.cpp's decode on each shape's bench_e2e file (/tmp/strata-e2e-SHAPE.gguf), after peer_up: tg128, three
# runs, each run's tok/s with their median and best; $2: more llama-bench arguments (e.g. "-d 4096")
peer_tg() {
  local s
  for s in $1; do
    echo -n "llama.cpp $s tg128${2:+ $2} runs (tok/s): "
    timeout 90 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 0 -n 128 ${2:-} -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
  done
}
# the decode step at depth 4,096 of shape $1 with KV cache $2 (f16 | int8) under ncu
# (bench/step_profile_gpu.sh): the attention launches' us, the attention's share of the step
attn_step_rows() {
  E2E_KV=$2 timeout 120 bash bench/step_profile_gpu.sh "$1" 4096 > /tmp/rows.txt 2>&1
  echo "$1 $2 attention per launch (us): $(grep attn /tmp/rows.txt | sed 's/.* \([0-9.]*\) us .*/\1/' | head -8 | tr '\n' ' ')"
  python3 tools/ncu_sum.py "$OUT/step-$1-4096.csv" 2>&1 | grep -E "attn|total"
  rm -f "$OUT/step-$1-4096.csv"
}
# one `E2E_DEPTH=4096 bench_e2e SHAPE 1` line (prompt 512, decode at 16, prompt of 4,096, decode at
# 4,096): e2e_line LABEL SHAPE [VAR=VALUE ...] (the switches of this run)
e2e_line() {
  local label=$1 s=$2; shift 2
  echo "$s $label: $(env "$@" E2E_DEPTH=4096 timeout 150 $B $s 1 | grep -E 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"
}
# llama.cpp beside it on the same file (the carried build, peer_up first): pp512 + tg128 at d0 /
# d4096, then pp4096, every run
llama_rows() {
  echo "llama.cpp $1 (pp512, tg128 at d0 / d4096) runs:"
  timeout 150 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$1.gguf -ngl 99 -fa 1 -p 512 -n 128 -d 0,4096 -r 3 -o jsonl 2>/dev/null | runs_of
  echo "llama.cpp $1 pp4096 runs:"
  timeout 100 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$1.gguf -ngl 99 -fa 1 -p 4096 -n 0 -r 3 -o jsonl 2>/dev/null | runs_of
}
# The alternated runs of bench_e2e under which ab, abn and e2e_ab run: alt_runs ROUNDS "SHAPES"
# "CFGS" "BENCH ARGS" PATTERN [VAR=VALUE ...]: for each shape, ROUNDS rounds, each configuration
# VAR=VAL[,VAR=VAL...] of CFGS in turn, the extra settings on every run; one line a run with its
# output lines matching PATTERN (grep -iE)
alt_runs() {
  local rounds=$1 shapes=$2 cfgs=$3 args=$4 pat=$5 s r c
  shift 5
  for s in $shapes; do
    for r in $(seq "$rounds"); do
      for c in $cfgs; do
        echo "round $r $s $c: $(env "$@" $(echo "$c" | tr ',' ' ') timeout 200 $B $s $args 2>&1 | grep -iE "$pat" | sed 's/  */ /g' | sed 's/(wall [0-9.]* s) //' | tr '\n' ' ')"
      done
    done
    t
  done
}
# VAR=v for each v of "VALUES": the configurations of one switch
one_var_cfgs() { local v; for v in $2; do printf '%s=%s ' "$1" "$v"; done; }
# A/B runs of bench_e2e: ab ROUNDS "SHAPES" VAR "VALUES" [VAR=VALUE ...]: each shape, ROUNDS
# rounds, VAR set to each of VALUES in turn (alternated), the extra settings (E2E_KV, E2E_DEPTH,
# ...) on every run; one line a run with its depth rows (E2E_SKIP_MAIN=1)
ab() {
  local rounds=$1 shapes=$2 var=$3 vals=$4
  shift 4
  alt_runs "$rounds" "$shapes" "$(one_var_cfgs "$var" "$vals")" 1 depth E2E_SKIP_MAIN=1 "$@"
}
# A/B/... runs over configurations of several switches: abn ROUNDS "SHAPES" "CFGS" [VAR=VALUE ...],
# a configuration VAR=VAL[,VAR=VAL...] (e.g. "STRATA_CUDA_PREFETCH=3,STRATA_CUDA_MV_PATHS=0"),
# alternated within each round as ab does
abn() {
  local rounds=$1 shapes=$2 cfgs=$3
  shift 3
  alt_runs "$rounds" "$shapes" "$cfgs" 1 depth E2E_SKIP_MAIN=1 "$@"
}
# bench_e2e's main lines (prompt 512, decode, batches) with VAR set to each of VALUES in turn,
# ROUNDS rounds alternated: e2e_ab ROUNDS "SHAPES" VAR "VALUES" "BENCH ARGS" [VAR=VALUE ...]
e2e_ab() {
  local rounds=$1 shapes=$2 var=$3 vals=$4 args=$5
  shift 5
  alt_runs "$rounds" "$shapes" "$(one_var_cfgs "$var" "$vals")" "$args" 'prompt|batch' "$@"
}
# llama.cpp's decode at depths 0 / 4,096 / 16,384 with f16 and q8_0 K/V on bench_e2e's files (the
# carried build, peer_up first), its runs one by one: llama_depth_rows "SHAPES"
llama_depth_rows() {
  local s kv
  for s in $1; do
    for kv in f16 q8_0; do
      echo "llama.cpp $s $kv K/V, tg128 at d0,4096,16384 runs:"
      timeout 170 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -ctk $kv -ctv $kv -p 0 -n 128 \
        -d 0,4096,16384 -r 3 -o jsonl 2>/dev/null | runs_of
    done
    t
  done
}
# ncu of the first launches matching REGEX (one eager decode step of the 48-layer MoE, serialized)
# for each STRATA_CUDA_MOE_FAST value: moe_ncu "VALUES" REGEX COUNT METRICS
moe_ncu() {
  local v
  for v in $1; do
    STRATA_CUDA_MOE_FAST=$v STRATA_CUDA_GRAPH=0 STRATA_CUDA_PROFILE=1,60 timeout 150 ncu --profile-from-start off --clock-control none \
      --kernel-name regex:"$2" --launch-count "$3" --metrics "$4" \
      --csv $B moe48 1 2>/dev/null | grep -E 'gpu__|inst_exec|registers|l1tex' | awk -F'","' -v v=$v '{split($5, a, "("); print "MOE_FAST=" v, a[1], $(NF-2), $NF}'
  done
}
# one line of decode figures at the depths $D: depth_row LABEL SHAPE KV (the run's output also
# appended to $OUT/runs.txt)
depth_row() {
  local label=$1 s=$2 kv=$3
  E2E_KV=$kv E2E_SKIP_MAIN=1 E2E_DEPTH=$D timeout 200 $B $s 1 > /tmp/one.txt 2>&1
  cat /tmp/one.txt >> "$OUT/runs.txt"
  echo "$label $s $kv: $(awk '/depth/ { for (i = 1; i <= NF; i++) { if ($i == "depth") d = $(i + 1); if ($i == "decode") v = $(i + 2); if ($i == "hash") h = $(i + 1) } printf "d%s %s [%s] ", d + 0, v, substr(h, 1, 6) }' /tmp/one.txt)"
}
# issue 19's table: strata's f16 and int8 depth rows at $D for each shape, then llama.cpp's on the
# same files (the carried build): depth_peer_rows "SHAPES"
depth_peer_rows() {
  local s kv
  for s in $1; do for kv in f16 int8; do depth_row r1 $s $kv; done; t; done
  peer_up || { echo "peer: the unpack failed"; return 1; }
  llama_depth_rows "$1"
}
# the first prompt pass of 512 columns of shape $1 under ncu (serialized, caches not flushed), its
# kernels per name (tools/ncu_sum.py): prompt_kernel_sum SHAPE [LINES]
prompt_kernel_sum() {
  STRATA_CUDA_PROFILE=512,1 E2E_SKIP_MAIN=1 E2E_DEPTH=512 timeout 150 ncu --profile-from-start off --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread \
    --csv $B "$1" 1 > "$OUT/pp-$1.csv" 2>/dev/null
  python3 tools/ncu_sum.py "$OUT/pp-$1.csv" 2>&1 | head -"${2:-16}"
}
# an A/B's old programs (.gpubin/old.tar.xz, `tools/gpu_pack.sh keep-old`) into /tmp/old
old_unpack() { mkdir -p /tmp/old && tar xJf .gpubin/old.tar.xz -C /tmp/old; }
# test_gpu_mm's parity run: its closing line, and its first failures when it fails: mm_parity [SECONDS]
mm_parity() {
  local rc
  timeout "${1:-120}" $g/bin/test_gpu_mm > /tmp/mm.txt 2>&1; rc=$?
  echo "test_gpu_mm rc $rc: $(tail -1 /tmp/mm.txt)"; [ $rc = 0 ] || grep -E "FAIL|differ|not taken" /tmp/mm.txt | head -8
}
# an old / new A/B call's start: both programs' packs unpacked, test_gpu_mm, then each named test program's
# closing line: ab_start [PROGRAM ...]
ab_start() {
  local p
  gb_unpack; old_unpack; mm_parity 150
  for p in "$@"; do echo "$p: $(timeout 120 $g/bin/$p 2>&1 | tail -1)"; done
}
# `test_gpu_mm bench` at n 512 (MM_BENCH_WIDTHS=1) over shapes, rounds and configurations alternated
# within a round, one line a run with each format's TFLOPS and checksum:
# mm_bench_rows "M,K ..." FORMATS ROUNDS "LABEL=PROGRAM[,VAR=VALUE...] ..."
mm_bench_rows() {
  local mk m k r c label rest prog vars
  for mk in $1; do
    m=${mk%,*}; k=${mk#*,}
    for r in $(seq "$3"); do
      for c in $4; do
        label=${c%%=*}; rest=${c#*=}; prog=${rest%%,*}; vars=""
        [ "$rest" != "$prog" ] && vars=$(echo "${rest#*,}" | tr ',' ' ')
        echo "m=$m k=$k r$r $label: $(env MM_BENCH_WIDTHS=1 MM_BENCH_M=$m MM_BENCH_K=$k $vars timeout 60 "$prog" bench "$2" 2>&1 |
          grep "two-tile" | sed 's/.*mm \([A-Z0-9_]*\) .*two-tile *\([0-9.]*\).*checksum \([0-9a-f]*\).*/\1 \2 \3/' | tr '\n' ' ')"
      done
    done
    t
  done
}
# prompt 512 / decode 128 (`bench_e2e SHAPE 2`) of programs side by side (an old build against a new
# one), alternated within a round: e2e_prog_rows "SHAPES" ROUNDS "LABEL=BENCH_E2E ..." [ARGS] (bench_e2e's
# arguments after the shape, 2 unless given; E2E_DEPTH and the like from the environment)
e2e_prog_rows() {
  local s r c
  for s in $1; do
    for r in $(seq "$2"); do
      for c in $3; do
        echo "round $r $s ${c%%=*}: $(timeout 150 "${c#*=}" $s ${4:-2} 2>&1 | grep -iE 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"
      done
    done
    t
  done
}
# the GPU suite (tools/gpu_pack.sh run) under a time limit, its per-program lines: gpu_suite SECONDS
# (the programs' logs stay in /tmp/gb-logs)
gpu_suite() {
  timeout "$1" bash tools/gpu_pack.sh run "$OUT" > /tmp/suite.txt 2>&1; echo "suite rc $?"
  grep -E "passed|FAIL" /tmp/suite.txt | tail -18
}
# an A/B's verdict from its lines (e2e_ab's output, saved to FILE; CONFIGS lines a round, config 0 the baseline):
# for each config j > 0, 1 when its decode was above the baseline's in every round and FILE holds at least
# MIN_LINES decode lines (default 2 rounds' worth), else 0; one line of flags: ab_wins FILE CONFIGS [MIN_LINES]
ab_wins() {
  grep -o 'decode 128: [0-9]*' "$1" | awk -v c="$2" -v m="${3:-$(($2 * 2))}" '{v[NR] = $3} END {
    for (j = 1; j < c; j++) { w = NR >= m; for (i = 1; i + c - 1 <= NR; i += c) if (v[i + j] <= v[i]) w = 0; printf "%d ", w }
    print "" }'
}
# one STRATA_CUDA_MOE_FAST bit's call (s75 / s76 / s77): the parity programs, ROUNDS alternated rounds of BASE and NEW
# on each shape (e2e_ab), llama.cpp tg128 on the same files, the verdict (NEW above BASE in every round of every
# shape: ab_wins), then the suite with NEW as every program's default if it won, else the packed default:
# moe_bit_ab ROUNDS "SHAPES" BASE NEW SUITE_SECONDS
moe_bit_ab() {
  local rounds=$1 shapes=$2 base=$3 new=$4 s n=0 win
  moe_parity_runs
  t
  : > /tmp/ab.txt
  for s in $shapes; do
    e2e_ab "$rounds" "$s" STRATA_CUDA_MOE_FAST "$base $new" 1 | tee -a /tmp/ab.txt
    n=$((n + 1))
  done
  if peer_up; then
    peer_tg "$shapes"
  fi
  t
  read -r win < <(ab_wins /tmp/ab.txt 2 $((2 * rounds * n)))
  echo "$new faster in every round: $win"
  if [ "$win" = 1 ]; then export STRATA_CUDA_MOE_FAST=$new; echo "the suite with STRATA_CUDA_MOE_FAST=$new"; fi
  gpu_suite "$5"
  t
}
# the MoE variants' parity programs alone (test_gpu_variants, test_gpu_moe), their closing lines
moe_parity_runs() {
  local p
  for p in test_gpu_variants test_gpu_moe; do LD_LIBRARY_PATH=$PWD/.gpubin/lib /tmp/gb/bin/$p 2>&1 | tail -1; done
}
# prompt 512 and decode 128 of each shape, strata (`bench_e2e SHAPE 2`, two runs) beside llama.cpp
# (`llama-bench -p 512 -n 128 -r 3`, every run) when the carried build is up (PEER=1 after it):
# pp_peer_rows "SHAPES"
pp_peer_rows() {
  local s r
  PEER=0; peer_up && PEER=1; echo "peer: $PEER"
  for s in $1; do
    for r in 1 2; do echo "strata $s r$r: $(timeout 90 $B $s 2 2>&1 | grep -iE 'prompt' | sed 's/  */ /g' | tr '\n' ' ')"; done
    if [ $PEER = 1 ]; then
      echo -n "llama.cpp $s pp512 / tg128 runs (tok/s): "
      timeout 90 /tmp/lcb/bin/llama-bench -m /tmp/strata-e2e-$s.gguf -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o jsonl 2>/dev/null | runs_of | tr '\n' ' '; echo
    fi
    t
  done
}
