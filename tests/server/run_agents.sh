#!/bin/sh
# Agents for tests/run.sh: schema-constrained output and a tool-call loop with the official openai
# client against a live `strata serve` on the default model (prints its own "N passed, N failed").
# Quick mode (STRATA_TEST_QUICK=1, set by make test-asan) runs the quick subset.
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP model: STRATA_MODEL unset or unreadable"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
quick=
case "${STRATA_TEST_QUICK:-0}" in 0|"") ;; *) quick=--quick ;; esac
exec "${PY:-python3}" "$(dirname "$0")/test_agents.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL" $quick
