#!/bin/sh
# The chat REPL on a pseudo-terminal (pexpect) for tests/run.sh; skips without the model.
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP: STRATA_MODEL unset" >&2; echo "0 passed, 0 failed"; exit 0; }
exec "${PY:-python3}" "$(dirname "$0")/test_chat_pty.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL"
