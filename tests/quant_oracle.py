#!/usr/bin/env python3
"""Dequantization oracle for tests/test_quant.c: the `gguf` package's numpy dequantizers
(an implementation strata did not write).

Usage: quant_oracle.py TYPE_ID:IN_PATH:OUT_PATH [...]
IN holds raw GGUF blocks of ggml type TYPE_ID (F32 and F16 included); OUT receives the
dequantized values as little-endian float32, in order.
Exit 2 with a message on stderr when gguf/numpy cannot be imported (the test then SKIPs).
"""
import sys

try:
    import numpy as np
    from gguf import quants
    from gguf.constants import GGMLQuantizationType
except ImportError as e:
    print("gguf/numpy not importable: %s" % e, file=sys.stderr)
    sys.exit(2)

for arg in sys.argv[1:]:
    tid, inp, out = arg.split(":", 2)
    qtype = GGMLQuantizationType(int(tid))
    raw = np.fromfile(inp, dtype=np.uint8)
    with np.errstate(all="ignore"):   # inf scales times zero codes give NaN on purpose
        vals = quants.dequantize(raw, qtype)
    np.ascontiguousarray(vals, dtype="<f4").reshape(-1).tofile(out)
