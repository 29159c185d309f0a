#!/bin/sh
# Speculative decoding benchmark (docs/BENCHMARKS.md "Speculative decoding"): greedy decode tok/s
# with --spec 0, with fixed windows (every step drafts up to --spec N: STRATA_SPEC_WINDOW=fixed)
# and with the cost model's windows (--spec 7, STRATA_SPEC_WINDOW=auto: the default), over the
# prompt sets of bench/spec_prompts (20 input-grounded, 20 open-ended), same binary, same
# model. The three modes of a prompt run back to back in an order that rotates with the prompt
# and the round (a loaded machine's drift touches every mode alike); each round sums the set's
# decoded tokens over its decode time per mode; the table gives per mode the median over rounds
# of that rate, the median ratio to --spec 0 and the ratios' range (min-max over rounds).
# Every speculative output is compared byte for byte with --spec 0's.
#
# usage: sh bench/spec_bench.sh [BIN] [MODEL] [N_TOKENS] [EXTRA strata run args...]
#   (MODEL "" or "-": the default SmolLM2; EXTRA e.g. "-t 1" or "--device cuda")
# environment: ROUNDS (default 3), SETS (default "grounded open"; a set is
#   bench/spec_prompts/SET.txt), N_FIXED (default 4), N_AUTO (default 7), CHAT (default 1:
#   --chat; 0: plain prompts), MAX_PROMPTS (per set, default all), PICK (record numbers from 0,
#   e.g. "0 6 11 15": only those records of every set), SYNTH=1: MODEL is made here
#   by `strata synth --arch llama` (SmolLM2's shape, random weights: text no drafter predicts
#   from the input) with the default model's tokenizer, plain prompts.
BIN=${1:-build/strata}; MODEL=${2:-}; N=${3:-128}
shift 3 2>/dev/null || shift $#
ROUNDS=${ROUNDS:-3}; SETS=${SETS:-grounded open}; N_FIXED=${N_FIXED:-4}; N_AUTO=${N_AUTO:-7}
CHAT=${CHAT:-1}; MAX_PROMPTS=${MAX_PROMPTS:-1000}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ "$MODEL" = "-" ] && MODEL=""
if [ "${SYNTH:-0}" = 1 ]; then
  tokfrom=${MODEL:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}
  [ -r "$tokfrom" ] || tokfrom=builtin
  "$BIN" synth "$tmp/synth.gguf" --arch llama --type-all Q4_1 --tokenizer "$tokfrom" >/dev/null || exit 1
  MODEL=$tmp/synth.gguf; CHAT=0
fi
MODEL=${MODEL:-$HOME/.cache/strata/SmolLM2-135M-Instruct.Q4_1.gguf}
chatflag=""; [ "$CHAT" = 1 ] && chatflag="--chat"
echo "model $(basename "$MODEL"), $N tokens, rounds $ROUNDS, extra args: $*"

# one run: mode (0 | fixed | auto), prompt file, output prefix; appends "tokens seconds" to the
# mode's round file and leaves the output text
run1() {
  mode=$1; pf=$2; o=$3.$1
  shift 3
  case $mode in
    0) k=0; w=auto ;;
    fixed) k=$N_FIXED; w=fixed ;;
    auto) k=$N_AUTO; w=auto ;;
  esac
  STRATA_SPEC_WINDOW=$w "$BIN" run -m "$MODEL" --temp 0 -n "$N" $chatflag --spec $k "$@" -f "$pf" >"$o.out" 2>"$o.err"
  # decode N tok, R tok/s: R counts N - 1 tokens (the first comes from the prompt's logits)
  grep -o 'decode [0-9]* tok, [0-9.]* tok/s' "$o.err" | awk '{ if ($4 > 0) printf "%d %.6f\n", $2 - 1, ($2 - 1) / $4 }'
}

for set in $SETS; do
  f=$here/spec_prompts/$set.txt
  [ -r "$f" ] || { echo "no prompt set $f"; exit 1; }
  # split the set into one file per prompt (records end at a line "%%"; "#" lines before the first are comments)
  rm -f "$tmp"/p.*
  awk -v dir="$tmp" -v max="$MAX_PROMPTS" -v pick="${PICK:-}" 'BEGIN { n = 0; k = 0; started = 0
      np = split(pick, pl, " "); for (i = 1; i <= np; i++) want[pl[i]] = 1 }
    !started && /^#/ { next }
    { started = 1 }
    /^%%$/ { if (keep) { close(dir "/p." k); k++ } n++; next }
    { keep = k < max && (np == 0 || (n in want)) }
    keep { print > (dir "/p." k) }' "$f"
  np=$(ls "$tmp"/p.* | wc -l)
  diff=0; drafted=0; accepted=0
  for r in $(seq 1 "$ROUNDS"); do
    for m in 0 fixed auto; do : >"$tmp/round.$r.$m"; done
    i=0
    while [ $i -lt "$np" ]; do
      rot=$(( (i + r) % 3 ))
      case $rot in 0) order="0 fixed auto" ;; 1) order="fixed auto 0" ;; 2) order="auto 0 fixed" ;; esac
      for m in $order; do
        run1 "$m" "$tmp/p.$i" "$tmp/o.$i" "$@" >>"$tmp/round.$r.$m"
      done
      for m in fixed auto; do
        cmp -s "$tmp/o.$i.0.out" "$tmp/o.$i.$m.out" || { diff=$((diff + 1)); echo "  $set prompt $i --spec $m: output DIFFERENT from --spec 0"; }
      done
      if [ "$r" = 1 ]; then
        a=$(grep -o 'drafted [0-9]* | accepted [0-9]*' "$tmp/o.$i.auto.err" | awk '{print $2, $5}')
        [ -n "$a" ] && { drafted=$((drafted + ${a% *})); accepted=$((accepted + ${a#* })); }
      fi
      i=$((i + 1))
    done
  done
  # per mode and round: tok/s of the whole set; then medians and ratio ranges over rounds
  for r in $(seq 1 "$ROUNDS"); do
    for m in 0 fixed auto; do
      awk -v r="$r" -v m="$m" '{ t += $1; s += $2 } END { printf "%s %s %.4f\n", r, m, (s > 0 ? t / s : 0) }' "$tmp/round.$r.$m"
    done
  done >"$tmp/rates"
  awk -v set="$set" -v np="$np" -v nf="$N_FIXED" -v na="$N_AUTO" -v diff="$diff" -v dr="$drafted" -v ac="$accepted" '
    function median(a, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { rate[$1, $2] = $3; if ($1 > nr) nr = $1 }
    END {
      for (r = 1; r <= nr; r++) { b[r] = rate[r, "0"]; f[r] = rate[r, "fixed"]; a[r] = rate[r, "auto"]
        rf[r] = b[r] > 0 ? f[r] / b[r] : 0; ra[r] = b[r] > 0 ? a[r] / b[r] : 0
        if (r == 1 || rf[r] < fmin) fmin = rf[r]; if (r == 1 || rf[r] > fmax) fmax = rf[r]
        if (r == 1 || ra[r] < amin) amin = ra[r]; if (r == 1 || ra[r] > amax) amax = ra[r] }
      printf "%-9s %2d prompts | --spec 0 %7.1f tok/s | fixed %d %7.1f tok/s %.3fx (%.3f-%.3f) | auto %d %7.1f tok/s %.3fx (%.3f-%.3f) | auto accepted %d/%d | outputs %s\n",
        set, np, median(b, nr), nf, median(f, nr), median(rf, nr), fmin, fmax, na, median(a, nr), median(ra, nr), amin, amax,
        ac, dr, diff ? diff " DIFFERENT" : "identical"
    }' "$tmp/rates"
done
