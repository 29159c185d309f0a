#!/bin/bash
# Written 2026-12-05 (17:38 session) after the device time ran out: branch wip/lut-mv (compiled here, NOT run
# on a GPU). (1) The matvec's MXFP4 block partial (bp_mxfp4) and kv4 (IQ4_XS's groups in the matvec and the
# matmul, IQ4_NL's lane path without the decode variant) turn codes into values by lut16's byte permutes
# (formats.cuh; merged into the matmul as 9e2213d: MXFP4 +25-33 %, IQ4_NL +10-12 % there), where bp_mxfp4
# decoded each e2m1 code with compares and selects (mxfp4_val, deleted) and kv4 read d_kvalues_iq4nl from
# global memory once a code. (2) MXFP4's 1-byte aligned words by aligned words and a predicated tail
# (ld_run_any, cuda_common.cuh: the matvec's four words a block 16 byte loads -> 4-6 loads; the matmul's
# one word a part 4 -> 1-3), where call 8's ncu counted 10.5 M byte loads in the matmul. Same bytes (both
# emulated here). ptxas: IQ4_XS ORD 2 X spills 68 -> 56 bytes, its grouped X 60 -> 64.
# Build: on main `bash tools/gpu_pack.sh pack build` (on the 17:38 session's machine .gpubin/ already holds
# main's programs: .gpubin/PACKED), then on this branch `bash tools/gpu_pack.sh keep-old` (this branch's
# keep-old also keeps bench_gpu) and `bash tools/gpu_pack.sh pack build`. Carry .gpubin/bins.tar.xz,
# .gpubin/lib, .gpubin/old.tar.xz. Peer: none (old against new programs).
# Prediction: parity programs pass; dense matvec at one column (14336 x 4096): MXFP4 38.9 us (27 % of the
# copy) -> 18-26 us; IQ4_XS / IQ4_NL even (their default paths are the decode variants' byte_perm kernels);
# matmul at n 512: MXFP4 +5-15 % (85 TFLOPS at 4096 x 14336 on 9e2213d), IQ4_XS +5-15 %.
set -u
. bench/gpu_call.sh
gb_unpack
old_unpack
for p in test_gpu_matvec test_gpu_variants test_gpu_moe test_gpu_mm test_gpu_e2e; do echo "$p: $(timeout 150 $g/bin/$p 2>&1 | tail -1)"; done
t
mm_bench_rows "4096,14336 14336,4096" MXFP4,IQ4_XS,IQ4_NL,Q4_0 2 "old=/tmp/old/test_gpu_mm new=$g/bin/test_gpu_mm"
for r in 1 2; do
  for c in old=/tmp/old/bench_gpu new=$g/bin/bench_gpu; do
    echo "round $r ${c%%=*}:"; timeout 60 "${c#*=}" matvec shape=1 only=MXFP4,IQ4_XS,IQ4_NL,Q4_0 2>&1 | grep -E "copy|MXFP4|IQ4|Q4_0"
  done
done
t
