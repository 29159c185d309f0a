#!/bin/bash
# 2026-12-05 (15:40 session): the suite on the final code, the router's arrival A/B, WPRE 15 by width.
# 1. the whole GPU suite (tools/gpu_pack.sh run) on these programs (f576dec + the router arrival)
# 2. MoE decode, f576dec's bench_e2e (old) against these (new), alternated, three rounds: the router
#    launch's arrival as one acquire-release atomic by thread 0 (was fence.sc + atomic, then fence.sc
#    by every thread of the last CTA) and the routing's rank loop unrolled by 8. Peer: none.
# 3. `test_gpu_mm bench` at n 512 / 64 / 16 (bench mode takes WPRE bit 8 at every width), WPRE 7
#    against 15, Q4_0 and Q8_0 at (4096, 14336) and (4096, 4096): whether passes of one column tile
#    (n <= 64, where the default does not take bit 8) would gain too. Peer: none.
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz.
# Prediction: the suite passes (29,833 + test_gpu_mm's 1,779 new checks = 31,612); MoE decode +0.5-2 %
# (one fence.sc less on the launch's critical path, ~0.3-1 us of ~57 a layer; within 2 rounds' spread
# if at the low end); n 64: +5-15 %, n 16: -5 to +5 % (the pre-pass launch against a few us).
set -u
. bench/gpu_call.sh
gpu_suite 420
t
old_unpack
e2e_prog_rows "moe48" 3 "old=/tmp/old/bench_e2e new=$B"
mm_bench_rows "4096,14336 4096,4096" Q4_0,Q8_0 2 \
  "w7=$g/bin/test_gpu_mm,STRATA_CUDA_MM_WPRE=7,MM_BENCH_WIDTHS=0 w15=$g/bin/test_gpu_mm,STRATA_CUDA_MM_WPRE=15,MM_BENCH_WIDTHS=0"
