#!/bin/bash
# Written 2026-12-05 (17:38 session) after the device time ran out: branch wip/lut-mv (compiled here, NOT run
# on a GPU). The matvec's MXFP4 block partial (bp_mxfp4) and kv4 (IQ4_XS's groups, IQ4_NL's lane path
# without the decode variant) turn codes into values by lut16's byte permutes (formats.cuh; merged into the
# matmul as 9e2213d: MXFP4 +25-33 %, IQ4_NL +10-12 % there), where bp_mxfp4 decoded each e2m1 code with
# compares and selects (mxfp4_val, deleted) and kv4 read d_kvalues_iq4nl from global memory once a code.
# Same bytes. Build: on main `bash tools/gpu_pack.sh pack build && bash tools/gpu_pack.sh keep-old` (this
# branch's keep-old also keeps bench_gpu), then on this branch `bash tools/gpu_pack.sh pack build`. Carry
# .gpubin/bins.tar.xz, .gpubin/lib, .gpubin/old.tar.xz. Peer: none (old against new programs).
# Prediction: parity programs pass; dense matvec at one column (14336 x 4096): MXFP4 38.9 us (27 % of the
# copy) -> 20-28 us; IQ4_XS / IQ4_NL even (their default paths are the decode variants' byte_perm kernels).
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
for p in test_gpu_matvec test_gpu_variants test_gpu_moe test_gpu_mm test_gpu_e2e; do echo "$p: $(timeout 150 $g/bin/$p 2>&1 | tail -1)"; done
t
for r in 1 2; do
  for c in old=/tmp/old/bench_gpu new=$g/bin/bench_gpu; do
    echo "round $r ${c%%=*}:"; timeout 60 "${c#*=}" matvec shape=1 only=MXFP4,IQ4_XS,IQ4_NL,Q4_0 2>&1 | grep -E "copy|MXFP4|IQ4|Q4_0"
  done
done
t
