#!/bin/sh
# The chat page in headless Chromium for tests/run.sh (prints its own "N passed, N failed" line).
# Skips without the model; a missing chromium is a failure (make setup-sys installs it).
[ -n "$STRATA_MODEL" ] && [ -r "$STRATA_MODEL" ] || { echo "SKIP model: STRATA_MODEL unset or unreadable"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
exec "${PY:-python3}" "$(dirname "$0")/test_webui_chromium.py" --bin "${BUILD:-build}/strata" --model "$STRATA_MODEL"
