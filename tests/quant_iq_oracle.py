#!/usr/bin/env python3
"""Dequantization oracle for tests/test_quant_iq.c: the `gguf` package's numpy dequantizers.

Usage: quant_iq_oracle.py TYPE_ID:IN_PATH:OUT_PATH [...]
IN holds raw GGUF blocks of type TYPE_ID (ggml id); OUT receives the dequantized values as
little-endian float32, in order. Exit 2 (message on stderr) if gguf/numpy are missing.
"""
import sys

try:
    import numpy as np
    from gguf import quants
    from gguf.constants import GGMLQuantizationType
except ImportError as e:  # the C test prints SKIP with this reason
    print("gguf/numpy not importable: %s" % e, file=sys.stderr)
    sys.exit(2)

for arg in sys.argv[1:]:
    tid, inp, out = arg.split(":", 2)
    qtype = GGMLQuantizationType(int(tid))
    raw = np.fromfile(inp, dtype=np.uint8)
    vals = quants.dequantize(raw, qtype).astype("<f4", copy=False)
    vals.tofile(out)
