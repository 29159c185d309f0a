#!/bin/sh
# strata pull / list / rm / -m REF against a local mock of the Hugging Face hub (tests/run.sh).
exec "${PY:-python3}" "$(dirname "$0")/test_pull.py" --bin "${BUILD:-build}/strata"
