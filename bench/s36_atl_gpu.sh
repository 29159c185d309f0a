#!/bin/bash
# 2026-12-05 (15:40 session): STRATA_CUDA_MM_WPRE bit 8, the 32-value formats' activations re-laid in
# ORD 2 X's step order by a pre-pass (mm_act_tile_kernel), a step's copies then 16-byte copies of one
# contiguous chunk. Why: call 4's ncu (bench/s35_q40_ncu_gpu.sh) put Q4_0's kernel at m 4096 k 14336 n
# 512 on the L1 data pipe (85 % of peak wavefronts): per CTA step ~768 wavefronts of 4-byte activation
# copies (8 a copy instruction), ~640 of fragment loads, ~640 of the weights' 2-byte global loads
# (4.8 bytes used a sector), ~160 of the decoded weights' stores. The chunk copies take ~72.
# 1. test_gpu_mm (parity, with the WPRE 15 configurations; they also check the path was taken)
# 2. WPRE 7 against 15, alternated, three shapes, the 32-value formats (Peer: none, one program)
# 3. ncu of Q4_0 with WPRE 15: the L1 wavefronts and the duration against call 4's
# 4. strata's TFLOPS of eight formats at 4096 x 14336 x 512 beside llama.cpp's MUL_MAT, same call
# Carry .gpubin/bins.tar.xz, .gpubin/lib, .peer/lcb-cuda.tar.xz.
# Prediction: parity holds; Q4_0 / Q8_0 / Q4_1 / IQ4_NL at (4096, 14336) +25-45 % TFLOPS (the L1
# wavefronts a step ~2,200 -> ~1,500; 78 -> ~100-110 for Q4_0, still ~0.5x MUL_MAT); (14336, 4096) and
# (4096, 4096) +15-35 % (the pre-pass's ~5-10 us weigh more there).
set -u
. bench/gpu_call.sh
gb_unpack
mm_parity 150
t
mm_bench_rows "4096,14336 14336,4096 4096,4096" Q4_0,Q4_1,Q8_0,IQ4_NL,MXFP4 2 \
  "w7=$g/bin/test_gpu_mm,STRATA_CUDA_MM_WPRE=7 w15=$g/bin/test_gpu_mm,STRATA_CUDA_MM_WPRE=15"
STRATA_CUDA_MM_WPRE=15 MM_BENCH_WIDTHS=1 MM_BENCH_M=4096 MM_BENCH_K=14336 MM_BENCH_COPIES=1 timeout 100 ncu -k regex:mm_kernel2 -s 2 -c 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section WarpStateStats -o $OUT/atl_q40 \
  $g/bin/test_gpu_mm bench Q4_0 > /tmp/ncu.txt 2>&1; echo "ncu rc $?"
ncu -i $OUT/atl_q40.ncu-rep --print-details all 2>&1 | grep -E "Duration|L1/TEX Cache Throughput|wavefronts_mem_shared_op_ldgsts.sum |wavefronts_mem_shared.sum |Warp Cycles Per Issued" | head -8
t
PEER=0; peer_up && PEER=1; echo "peer: $PEER"
STRATA_CUDA_MM_WPRE=15 MM_BENCH_WIDTHS=1 timeout 120 $g/bin/test_gpu_mm bench Q4_0,Q4_1,Q8_0,IQ4_NL,MXFP4,Q4_K,Q6_K,IQ3_XXS 2>&1 | grep "two-tile" | sed 's/  */ /g'
[ $PEER = 1 ] && timeout 120 /tmp/lcb/bin/test-backend-ops perf -o MUL_MAT -b CUDA0 -p 'm=4096,n=512,k=14336' 2>&1 |
  grep -E "type_a=(q4_0|q4_1|q8_0|iq4_nl|mxfp4|q4_K|q6_K|iq3_xxs)," | grep TFLOPS | sed 's/  */ /g'
t
