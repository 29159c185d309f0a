#!/bin/sh
# The IQ rows of docs/BENCHMARKS.md ("IQ formats (CPU)"): strata bench mmvq for every IQ
# format, 4096x4096 and 14336x4096 (N_OUT x N_IN), 1 and 8 columns, 2 threads, AVX2.
# Usage: sh bench/iq_mmvq_table.sh [path/to/strata]
S=${1:-build/strata}
for t in IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ4_NL IQ4_XS; do
  for o in 4096 14336; do
    for c in 1 8; do
      "$S" bench mmvq "$t" 4096 "$o" "$c" -t 2 --variant avx2 || exit 1
    done
  done
done
