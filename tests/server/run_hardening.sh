#!/bin/sh
# The hardening suite for tests/run.sh (issue 21): model file changed under the server, connection
# and prompt floods, role forging, HTTP framing, shutdown. Prints its own "N passed, N failed".
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP model: STRATA_MODEL unset or unreadable"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
exec "${PY:-python3}" "$(dirname "$0")/test_hardening.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL"
