#!/bin/sh
# Decode speed with a JSON schema vs without (docs/BENCHMARKS.md, "Constrained output").
# usage: sh bench/grammar_bench.sh [MODEL] [RUNS]   (build/strata must exist)
# Runs the same chat prompt greedy, alternating unconstrained and --json-schema runs, and prints
# each run's decode line and the grammar's own cost (masks computed, their time, cache hits).
M=${1:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}
RUNS=${2:-5}
BIN=${BIN:-build/strata}
S='{"type":"object","properties":{"scientists":{"type":"array","minItems":8,"maxItems":8,"items":{"type":"object","properties":{"name":{"type":"string","maxLength":40},"field":{"type":"string","maxLength":40},"born":{"type":"integer"}},"required":["name","field","born"]}}},"required":["scientists"]}'
P="List eight famous scientists with their field and birth year as JSON."
i=0
while [ $i -lt "$RUNS" ]; do
  printf 'plain  '; "$BIN" run -m "$M" --chat -p "$P" --temp 0 -n 160 2>&1 >/dev/null | grep decode
  printf 'schema '; "$BIN" run -m "$M" --chat -p "$P" --temp 0 -n 160 --json-schema "$S" 2>&1 >/dev/null | grep -E 'decode|grammar' | tr '\n' ' '; echo
  i=$((i + 1))
done
uptime
