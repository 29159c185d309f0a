#!/bin/sh
# Speculative decoding benchmark (docs/BENCHMARKS.md "Speculative decoding"): greedy decode
# tok/s with --spec 0, 4 and 7 on input-grounded prompts (code to repeat with edits, a
# passage to quote) and on open chat, same run, same binary; checks the outputs are identical.
# usage: sh bench/spec_bench.sh [BIN] [MODEL] [N_TOKENS] [EXTRA strata run args...]
BIN=${1:-build/strata}; MODEL=${2:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}; N=${3:-128}
shift 3 2>/dev/null
code='def add(a, b):
    """Return the sum of a and b."""
    return a + b


def sub(a, b):
    """Return the difference of a and b."""
    return a - b


def mul(a, b):
    """Return the product of a and b."""
    return a * b


def div(a, b):'
quote='Here is a passage: "The Industrial Revolution began in Great Britain in the late eighteenth century and spread to Europe and North America. It changed how goods were made, moving production from homes and small workshops to factories with machines powered by water and steam." Repeat the passage word for word.'
chat='Give me three tips for staying focused while studying.'
tmp=$(mktemp -d)
for name in code quote chat; do
  eval "prompt=\$$name"
  chatflag=""; [ "$name" != code ] && chatflag="--chat"
  for k in 0 4 7; do
    "$BIN" run -m "$MODEL" --temp 0 -n "$N" $chatflag --spec $k "$@" -p "$prompt" >"$tmp/$name.$k.out" 2>"$tmp/$name.$k.err"
    tps=$(grep -o 'decode [0-9]* tok, [0-9.]* tok/s' "$tmp/$name.$k.err" | awk '{print $4}')
    acc=$(grep -o 'mean accepted per window [0-9.]*' "$tmp/$name.$k.err" | awk '{print $5}')
    same=same; cmp -s "$tmp/$name.0.out" "$tmp/$name.$k.out" || same=DIFFERENT
    printf '%-6s --spec %d  decode %7s tok/s  mean accepted/window %-5s output %s\n' "$name" "$k" "$tps" "${acc:--}" "$same"
  done
done
rm -rf "$tmp"
