#!/bin/sh
# The runner's own rules, checked on stand-in binaries made here (tests/run.sh runs this too):
# a skip that tests/skips.allowed does not name fails the run, an allowed one does not, a
# binary past TEST_TIMEOUT fails, a missing closing line or a skip count that disagrees with the
# SKIP lines fails, and an oracle that fails is a failure, not a skip (test_quant_iq, PY=false).
# Prints "N passed, N failed" like the C tests.
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-build}
d=$(mktemp -d /tmp/strata-runner-XXXXXX) || { echo "0 passed, 1 failed"; exit 1; }
trap 'rm -rf "$d"' EXIT
passed=0; failed=0
check() {   # check DESCRIPTION CONDITION-EXIT-STATUS
  if [ "$2" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1" >&2; fi
}
mk() { printf '#!/bin/sh\n%s\n' "$2" > "$d/$1"; chmod +x "$d/$1"; }
mk test_kv 'echo "SKIP avx2-rows: no AVX2"; echo "3 passed, 0 failed, 1 skipped"'
mk test_x 'echo "SKIP model: no model"; echo "2 passed, 0 failed, 1 skipped"'
mk plain 'echo "4 passed, 0 failed"'
mk hang 'sleep 20; echo "1 passed, 0 failed"'
mk noline 'echo "something else"'
mk liar 'echo "SKIP a: b"; echo "1 passed, 0 failed, 0 skipped"'
mk failing 'echo "1 passed, 2 failed, 0 skipped"; exit 1'
mk spinner 'awk "BEGIN { for (;;) s++ }"'
mk burner 'awk "BEGIN { for (i = 0; i < 6e7; i++) s += i }"; echo "1 passed, 0 failed"'
run() { BUILD="$d/b" TEST_TIMEOUT=2 sh "$here/run.sh" "$@" > "$d/out" 2>&1; }

run "$d/test_kv" "$d/plain"; rc=$?
check "an allowed skip passes the run (rc $rc): $(tail -n 1 "$d/out")" $([ $rc -eq 0 ] && echo 0 || echo 1)
check "closing line with skips: $(tail -n 1 "$d/out")" $([ "$(tail -n 1 "$d/out")" = "7 passed, 0 failed, 1 skipped" ] && echo 0 || echo 1)
grep -q "test_kv/avx2-rows: no AVX2 (allowed)" "$d/out"; check "the allowed skip is listed with its reason" $?
run "$d/test_x"; rc=$?
check "a skip not allowed fails the run (rc $rc)" $([ $rc -ne 0 ] && echo 0 || echo 1)
check "it counts as a failure: $(tail -n 1 "$d/out")" $([ "$(tail -n 1 "$d/out")" = "2 passed, 1 failed, 1 skipped" ] && echo 0 || echo 1)
grep -q "test_x/model: no model (NOT ALLOWED" "$d/out"; check "the refused skip is listed with its reason" $?
t0=$(date +%s); run "$d/hang"; rc=$?; secs=$(( $(date +%s) - t0 ))
check "a hung binary fails (rc $rc) within its limit ($secs s)" $([ $rc -ne 0 ] && [ $secs -lt 15 ] && echo 0 || echo 1)
grep -q "hang: TIMEOUT after 2 s" "$d/out"; check "the time-out is named" $?
run "$d/noline"; rc=$?
check "no closing line fails (rc $rc)" $([ $rc -ne 0 ] && echo 0 || echo 1)
run "$d/liar"; rc=$?
check "a skip count that disagrees with the SKIP lines fails (rc $rc)" $([ $rc -ne 0 ] && echo 0 || echo 1)
run "$d/failing"; rc=$?
check "failed checks fail the run: $(tail -n 1 "$d/out")" $([ $rc -ne 0 ] && [ "$(tail -n 1 "$d/out")" = "1 passed, 2 failed, 0 skipped" ] && echo 0 || echo 1)
[ -s "$d/b/test-logs/failing.out" ]; check "logs go to \$BUILD/test-logs" $?
BUILD="$d/b" TEST_CPU_LIMIT=1 TEST_TIMEOUT=120 sh "$here/run.sh" "$d/spinner" > "$d/out" 2>&1; rc=$?
grep -q "spinner: CPU limit of 1 s reached" "$d/out"; r=$?
check "a binary past its CPU limit fails and is named (rc $rc): $(head -n 1 "$d/out")" $([ $rc -ne 0 ] && [ $r -eq 0 ] && echo 0 || echo 1)
BUILD="$d/b" TEST_TIMEOUT=120 sh "$here/run.sh" "$d/burner" > "$d/out" 2>&1; cpu=$(sed -n 's/^burner: .*, cpu \([0-9]*\) s)$/\1/p' "$d/out")
check "the CPU time of a binary is reported: $(head -n 1 "$d/out")" $([ -n "$cpu" ] && [ "$cpu" -ge 1 ] && echo 0 || echo 1)
run "$d/plain"
grep -q "^plain: 4 passed, 0 failed ([0-9]* s, cpu 0 s)$" "$d/out"; check "an idle binary costs 0 s of CPU: $(head -n 1 "$d/out")" $?

# an oracle that cannot run is a failure, not a skip
if [ -x "$build/tests/test_quant_iq" ]; then
  PY=false "$build/tests/test_quant_iq" > "$d/iq.out" 2> "$d/iq.err"; rc=$?
  check "test_quant_iq with PY=false fails (rc $rc): $(tail -n 1 "$d/iq.out")" $([ $rc -ne 0 ] && echo 0 || echo 1)
  grep -q "oracle failed" "$d/iq.err"; check "and names the oracle" $?
else
  check "$build/tests/test_quant_iq is built" 1
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
