#!/bin/sh
# The scheduling suite for tests/run.sh (issue 18): admission before work under a prompt flood,
# the prefix cache across slots, prompts read inside the decode passes. Prints its own
# "N passed, N failed". Quick mode (STRATA_TEST_QUICK=1, set by make test-asan): the same checks
# on a small synthetic llama with the model's tokenizer (test_sched.py --quick).
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP model: STRATA_MODEL unset or unreadable"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
quick=
case "${STRATA_TEST_QUICK:-0}" in 0|"") ;; *) quick=--quick ;; esac
exec "${PY:-python3}" "$(dirname "$0")/test_sched.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL" $quick
