#!/bin/bash
# The SASS (the GPU's own instructions, after ptxas) of a CUDA object's kernels, here where the CUDA toolkit has no
# cuobjdump: it and the nvdisasm it runs come from PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels
# (fetched once into ~/.cache/strata-cuobjdump).
#
#   bash tools/sass.sh OBJ [KERNEL]       OBJ: e.g. build/src/cuda/moe.o; KERNEL: a mangled name (one kernel)
#   bash tools/sass.sh OBJ KERNEL loads   only its loads, prefetches, shuffles and branches, addresses kept: where a
#                                         kernel waits on memory relative to its shuffles (2026-12-07: the R4 gate/up's
#                                         d loads came after its lanes' shuffles, a second wait each block step)
# Kernel names: bash tools/sass.sh OBJ | grep 'Function :'. sm_90 objects from nvcc 13.0 read fine with the wheel's 13.5.
set -euo pipefail
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: bash tools/sass.sh OBJ [KERNEL [loads]]" >&2; exit 2; }
d=${HOME}/.cache/strata-cuobjdump
if [ ! -x "$d/cuobjdump" ] || [ ! -x "$d/nvdisasm" ]; then
  t=$(mktemp -d)
  mkdir -p "$d"
  for tool in cuobjdump nvdisasm; do
    pip download -q --no-deps "nvidia-cuda-$tool" -d "$t" >/dev/null
    python3 -m zipfile -e "$t"/nvidia_cuda_"$tool"-*.whl "$t/x"
    cp "$(find "$t/x" -type f -name "$tool" | head -1)" "$d/$tool" && chmod +x "$d/$tool"
  done
  rm -rf "$t"
fi
export NVDISASM_PATH=$d
if [ $# -ge 3 ] && [ "$3" = loads ]; then
  "$d/cuobjdump" -sass -fun "$2" "$1" | grep -E 'LDG|LDS|STG|CCTL|SHFL|BRA|EXIT|BAR' | sed 's@/\* 0x[0-9a-f]* \*/@@; s/^ *//'
elif [ $# -ge 2 ]; then
  "$d/cuobjdump" -sass -fun "$2" "$1"
else
  "$d/cuobjdump" -sass "$1"
fi
