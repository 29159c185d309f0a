#!/bin/sh
# The command-line suite for tests/run.sh (prints its own "N passed, N failed" line): the option
# table's contract always, the model-dependent checks when STRATA_MODEL is readable.
exec "${PY:-python3}" "$(dirname "$0")/test_cli.py" --bin "${BUILD:-build}/strata" --model "${STRATA_MODEL:-}"
