#!/bin/sh
# Run every test binary given; print each one's closing line, every skip with its reason, and
# the total "N passed, N failed, N skipped" that CI reads.
#
# A binary ends with "N passed, N failed[, N skipped]" (tests/test.h); each part it did not run
# is a line "SKIP key: reason" on its stdout. A skip is allowed only when tests/skips.allowed
# (or the file SKIPS_ALLOWED names) lists it ("binary/key" and why); any other skip counts as
# a failure too, so a comparison cannot go quiet because something it needs is missing.
# Each binary runs under two limits, so that a hung test fails instead of stalling CI, and a slow
# machine does not: CPU time (TEST_CPU_LIMIT seconds, default 1200, `ulimit -S -t`: a test spinning
# in a loop; the largest, test_gemma under ASan, used 596 s) and wall time (TEST_TIMEOUT, default
# 3600: a test blocked without using CPU). The wall limit was 1200 s alone, and at load 10 the
# sanitizer run's test_spec used 530 s of CPU in 15 minutes of wall time: load, not a hang.
# Full logs: $TEST_LOGS (default $BUILD/test-logs), NAME.out / NAME.err.
# Each binary's line gives its wall time and the CPU time (user + system) of it and its children:
# on a shared machine the CPU time is the figure that says what a test costs.
here=$(dirname "$0")
allow=${SKIPS_ALLOWED:-$here/skips.allowed}
limit=${TEST_TIMEOUT:-3600}
cpulimit=${TEST_CPU_LIMIT:-1200}
logs=${TEST_LOGS:-${BUILD:-build}/test-logs}
mkdir -p "$logs" || { echo "cannot create $logs"; exit 1; }
passed=0; failed=0; skipped=0; skips=""
nl='
'
tf="$logs/.times.$$"
# CPU centiseconds (user + system) of this shell's finished children so far: `times` in this shell
# (a $(...) subshell would see only its own children), read back from a file. Centiseconds, and the
# difference rounded to seconds: two totals truncated to whole seconds could differ by 1 s for a
# binary that took 5 ms, when the total crossed a second.
cpu_total() {
  awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, "m"); t += a[1] * 60 + a[2] } printf "%d", t * 100 + 0.5 }' "$tf"
}
allowed() {   # 0 when "$1" (binary/key) is named in the allow-list
  [ -r "$allow" ] && grep -v '^[[:space:]]*#' "$allow" | awk -v k="$1" '$1 == k { f = 1 } END { exit !f }'
}
for t in "$@"; do
  name=$(basename "$t")
  out="$logs/$name.out"; err="$logs/$name.err"
  t0=$(date +%s); times >"$tf"; c0=$(cpu_total)
  (ulimit -S -t "$cpulimit" 2>/dev/null; exec timeout -k 10 "$limit" "$t") >"$out" 2>"$err"; rc=$?
  secs=$(( $(date +%s) - t0 )); times >"$tf"; cpu=$(( ($(cpu_total) - c0 + 50) / 100 ))
  if { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "$secs" -ge "$limit" ]; then
    failed=$((failed + 1))
    echo "$name: TIMEOUT after ${limit} s (exit $rc)"; tail -n 20 "$err"
    continue
  fi
  if [ $rc -eq 152 ]; then   # 128 + SIGXCPU: the CPU limit
    failed=$((failed + 1))
    echo "$name: CPU limit of ${cpulimit} s reached (exit $rc)"; tail -n 20 "$err"
    continue
  fi
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$out" | tail -n 1)
  if [ -z "$line" ]; then
    failed=$((failed + 1))
    echo "$name: no result line (exit $rc)"; tail -n 20 "$err"
    continue
  fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  # the skips this binary reported, each checked against the allow-list
  ns=0; bad=0
  while IFS= read -r s; do
    [ -n "$s" ] || continue
    key=${s#SKIP }; key=${key%%:*}; why=${s#*: }
    ns=$((ns + 1))
    if allowed "$name/$key"; then
      skips="$skips$nl  $name/$key: $why (allowed)"
    else
      bad=$((bad + 1))
      skips="$skips$nl  $name/$key: $why (NOT ALLOWED: counted as a failure; tests/skips.allowed)"
    fi
  done <<EOF
$(grep -E '^SKIP [A-Za-z0-9_.-]+: ' "$out")
EOF
  # the closing line's skip count must match the SKIP lines
  s=0; case $line in *skipped) s=${line##*failed, }; s=${s%% skipped} ;; esac
  if [ "$s" -ne "$ns" ]; then
    bad=$((bad + 1)); skips="$skips$nl  $name: closing line says $s skipped, $ns SKIP lines (counted as a failure)"
  fi
  skipped=$((skipped + ns)); failed=$((failed + bad))
  if [ "$f" -ne 0 ] || [ $rc -ne 0 ] || [ $bad -ne 0 ]; then
    echo "$name: $line (exit $rc, ${secs} s, cpu ${cpu} s)"; tail -n 30 "$err"
    [ "$f" -eq 0 ] && [ $bad -eq 0 ] && failed=$((failed + 1))
  else
    echo "$name: $line (${secs} s, cpu ${cpu} s)"
  fi
done
rm -f "$tf"
[ -n "$skips" ] && echo "skipped:$skips"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
