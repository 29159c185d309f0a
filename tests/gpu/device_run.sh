#!/bin/sh
# Run the GPU suite from prebuilt binaries (the device machine has no libmicrohttpd headers to
# build the whole library): sh tests/gpu/device_run.sh DIR [OUTDIR]. Prints each binary's result
# line, every skip, and the total "N passed, N failed, N skipped" (as tests/run.sh); full logs
# go to OUTDIR. This runs on a GPU machine, so every skip (such as "no CUDA device") is also
# counted as a failure.
dir=${1:-build/tests/gpu}; out=${2:-/tmp}
passed=0; failed=0; skipped=0
for t in $(cd "$dir" && ls test_gpu_* 2>/dev/null); do
  [ -x "$dir/$t" ] || { echo "$t: missing"; failed=$((failed + 1)); continue; }
  timeout 300 "$dir/$t" >"$out/$t.out" 2>"$out/$t.err"; rc=$?
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out/$t.out" | tail -n 1)
  if [ -z "$line" ]; then echo "$t: no result line (exit $rc)"; tail -n 20 "$out/$t.err"; failed=$((failed + 1)); continue; fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  s=$(grep -cE '^SKIP [A-Za-z0-9_.-]+: ' "$out/$t.out")
  passed=$((passed + p)); failed=$((failed + f + s)); skipped=$((skipped + s))
  echo "$t: $line (exit $rc)"
  grep -E '^SKIP [A-Za-z0-9_.-]+: ' "$out/$t.out" | sed "s/^SKIP /  skipped (a failure on the GPU machine): $t\//"
  [ "$f" -ne 0 ] && tail -n 30 "$out/$t.err"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
