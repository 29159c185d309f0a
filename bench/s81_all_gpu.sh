#!/bin/bash
# Written 2026-12-06 (19:11 session) for one call when device time is short: bench/s79_gu4_gpu.sh (parity, the
# A/B of wip/fill's bits 65536 / 131072 / 262144 and wip/gu4's 524288 on moe48 and moe48_iq2, llama.cpp tg128)
# and then bench/s80_suite_prof_gpu.sh with MOE = 49151 plus every bit that won every round (131072: on moe48;
# 65536: on moe48_iq2; 262144 and 524288: on both shapes). Same carry as s79.
# Ran once, on wip/gu4's programs (BENCHMARKS 2026-12-06 19:11 session, call 1). On main only 262144 of the four bits
# exists (the default since): the others are masked off by CUDA_MOE_FAST_ALL (180223, 114687 and 573439 run as 49151).
set -u
bash bench/s79_gu4_gpu.sh 2>&1 | tee /tmp/s79.txt
w=$(grep '^won every round' /tmp/s79.txt)
f() { echo "$w" | sed -n "s/.*$1 \([01]\).*/\1/p"; }
v=49151
[ "$(f '131072 on moe48')" = 1 ] && v=$((v + 131072))
[ "$(f '65536 on moe48_iq2')" = 1 ] && v=$((v + 65536))
echo "$w" | grep -q '262144 on moe48 1, on moe48_iq2 1' && v=$((v + 262144))
echo "$w" | grep -q '524288 on moe48 1, on moe48_iq2 1' && v=$((v + 524288))
echo "MOE for the suite: $v"
MOE=$v bash bench/s80_suite_prof_gpu.sh
