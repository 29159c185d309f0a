#!/bin/sh
# Decode speed with a JSON schema vs without (docs/BENCHMARKS.md, "Constrained output").
# usage: sh bench/grammar_bench.sh [MODEL] [RUNS]   (build/strata must exist)
# Runs the same chat prompt greedy, alternating unconstrained and --json-schema runs, and prints
# each run's decode line, the grammar's own cost (masks computed, their time, cache hits, masks
# prepared during the forward pass) and the process's CPU seconds (user + system: what a shared
# machine's load does not inflate). ARGS: more options for strata run (e.g. "-t 1 --device cuda").
M=${1:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}
RUNS=${2:-5}
BIN=${BIN:-build/strata}
S='{"type":"object","properties":{"scientists":{"type":"array","minItems":8,"maxItems":8,"items":{"type":"object","properties":{"name":{"type":"string","maxLength":40},"field":{"type":"string","maxLength":40},"born":{"type":"integer"}},"required":["name","field","born"]}}},"required":["scientists"]}'
P="List eight famous scientists with their field and birth year as JSON."
T=/usr/bin/time
[ -x "$T" ] || T=
i=0
while [ $i -lt "$RUNS" ]; do
  # shellcheck disable=SC2086
  printf 'plain  '; ${T:+$T -f 'cpu %U+%S s'} "$BIN" run -m "$M" --chat -p "$P" --temp 0 -n 160 $ARGS 2>&1 >/dev/null | grep -E '^cpu |decode' | tr '\n' ' '; echo
  # shellcheck disable=SC2086
  printf 'schema '; ${T:+$T -f 'cpu %U+%S s'} "$BIN" run -m "$M" --chat -p "$P" --temp 0 -n 160 --json-schema "$S" $ARGS 2>&1 >/dev/null | grep -E '^cpu |decode|grammar' | tr '\n' ' '; echo
  i=$((i + 1))
done
uptime
