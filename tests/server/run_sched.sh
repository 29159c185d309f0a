#!/bin/sh
# The scheduling suite for tests/run.sh (issue 18): admission before work under a prompt flood,
# the prefix cache across slots, prompts read inside the decode passes. Prints its own
# "N passed, N failed".
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP model: STRATA_MODEL unset or unreadable"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
exec "${PY:-python3}" "$(dirname "$0")/test_sched.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL"
