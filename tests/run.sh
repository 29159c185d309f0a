#!/bin/sh
# Run every test binary given; print each one's closing line and the total.
passed=0; failed=0; broken=""
for t in "$@"; do
  name=$(basename "$t")
  "$t" >"/tmp/strata-test-$name.out" 2>"/tmp/strata-test-$name.err"; rc=$?   # full logs stay in /tmp
  out=$(cat "/tmp/strata-test-$name.out")
  line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed$' | tail -n 1)
  if [ -z "$line" ]; then
    broken="$broken $name"; failed=$((failed + 1))
    echo "$name: no result line (exit $rc)"; tail -n 20 "/tmp/strata-test-$name.err"
    continue
  fi
  p=${line%% passed*}; f=${line#*passed, }; f=${f%% failed*}
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$f" -ne 0 ] || [ $rc -ne 0 ]; then
    echo "$name: $line (exit $rc)"; tail -n 30 "/tmp/strata-test-$name.err"
    [ "$f" -eq 0 ] && failed=$((failed + 1))
  else
    echo "$name: $line"
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
