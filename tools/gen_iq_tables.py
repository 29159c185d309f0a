#!/usr/bin/env python3
"""Generate src/quant/iq_tables.{h,c}: the IQ codebooks as C arrays.

The codebooks are facts of the GGUF format. We take them from the `gguf` PyPI package
(gguf.quants), which stores each grid packed (2 or 3 bits per element, hex text) plus a
`grid_map` from packed code to value; `init_grid()` unpacks it into a float array of shape
(1, 1, entries, elems). We read those unpacked values and emit them as small integers.

Usage (from the repository root):
    python3 tools/gen_iq_tables.py            # writes src/quant/iq_tables.h and .c
    python3 tools/gen_iq_tables.py --check    # exit 1 if the committed files differ
"""
import argparse
import importlib.metadata
import os
import sys

import numpy as np
from gguf import quants

COMMAND = "python3 tools/gen_iq_tables.py"


def grid_of(cls):
    cls.init_grid()
    g = np.asarray(cls.grid, dtype=np.float32).reshape(cls.grid_shape)
    gi = g.astype(np.int64)
    assert np.array_equal(gi.astype(np.float32), g), cls.__name__ + ": non-integer grid value"
    return gi


def fmt_rows(rows, per_line, width):
    out = []
    for r in rows:
        out.append("{" + ",".join(("%d" % v).rjust(width) for v in r) + "}")
    lines = []
    for i in range(0, len(out), per_line):
        lines.append("    " + ", ".join(out[i:i + per_line]) + ",")
    return "\n".join(lines)


def fmt_flat(vals, per_line, width):
    lines = []
    for i in range(0, len(vals), per_line):
        lines.append("    " + ", ".join(("%d" % v).rjust(width) for v in vals[i:i + per_line]) + ",")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--outdir", default="src/quant")
    args = ap.parse_args()
    version = importlib.metadata.version("gguf")

    grids = [  # (C name, gguf class, C element type, what the values are)
        ("iq2xxs_grid", quants.IQ2_XXS, "uint8_t", "magnitudes {8, 25, 43}"),
        ("iq2xs_grid", quants.IQ2_XS, "uint8_t", "magnitudes {8, 25, 43}"),
        ("iq2s_grid", quants.IQ2_S, "uint8_t", "magnitudes {8, 25, 43}"),
        ("iq3xxs_grid", quants.IQ3_XXS, "uint8_t", "magnitudes {4, 12, ..., 52, 62}"),
        ("iq3s_grid", quants.IQ3_S, "uint8_t", "magnitudes {1, 3, ..., 15}"),
        ("iq1s_grid", quants.IQ1_S, "int8_t", "values {-1, 0, 1} (IQ1_S and IQ1_M)"),
    ]
    ksigns = list(quants.IQ2_XXS.ksigns)
    assert len(ksigns) == 128
    kvalues = list(quants.IQ4_NL.kvalues)
    assert len(kvalues) == 16

    header = [
        "/* GENERATED FILE, do not edit. Made by `%s` from the `gguf` Python package" % COMMAND,
        " * version %s (gguf.quants: each class's init_grid() grid, IQ2_XXS.ksigns," % version,
        " * IQ4_NL.kvalues). Regenerate with the same command; --check verifies. */",
    ]
    h = header + [
        "/* IQ codebooks: facts of the GGUF format.",
        " * Grid row i is the 8 (or 4) values that grid index i stands for, in weight order;",
        " * rows are 8-byte (4-byte) aligned so a row loads as one uint64 (uint32). */",
        "#ifndef STRATA_IQ_TABLES_H",
        "#define STRATA_IQ_TABLES_H",
        "#include <stdint.h>",
        "",
    ]
    c = header + ['#include "iq_tables.h"', ""]
    for name, cls, ctype, what in grids:
        g = grid_of(cls)
        n, e = g.shape
        h.append("#define %s_N %d  /* %s: %d entries of %d, %s */" % (name.upper(), n, cls.__name__, n, e, what))
        h.append("extern const %s %s[%d][%d];" % (ctype, name, n, e))
        c.append("_Alignas(%d) const %s %s[%d][%d] = {" % (e, ctype, name, n, e))
        c.append(fmt_rows(g.tolist(), 8 if e == 4 else 4, 2))
        c.append("};")
        c.append("")
    h.append("/* 7-bit sign index -> 8 sign bits (bit j set: weight j negative); bit 7 makes the")
    h.append(" * number of set bits even (IQ2_XXS, IQ2_XS, IQ3_XXS). */")
    h.append("extern const uint8_t ksigns_iq2xs[128];")
    c.append("const uint8_t ksigns_iq2xs[128] = {")
    c.append(fmt_flat(ksigns, 16, 3))
    c.append("};")
    c.append("")
    h.append("/* Derived from ksigns_iq2xs: 8 bytes of +1 / -1 per sign index (for _mm256_sign_epi8). */")
    h.append("extern const int8_t ksigns_iq2xs_pm1[128][8];")
    c.append("_Alignas(8) const int8_t ksigns_iq2xs_pm1[128][8] = {")
    c.append(fmt_rows([[(-1 if (k >> j) & 1 else 1) for j in range(8)] for k in ksigns], 4, 2))
    c.append("};")
    c.append("")
    h.append("/* IQ4_NL / IQ4_XS: 4-bit code -> int8 value. */")
    h.append("extern const int8_t kvalues_iq4nl[16];")
    c.append("_Alignas(16) const int8_t kvalues_iq4nl[16] = {")
    c.append(fmt_flat(kvalues, 16, 4))
    c.append("};")
    h.append("#endif")
    texts = {"iq_tables.h": "\n".join(h) + "\n", "iq_tables.c": "\n".join(c) + "\n"}

    bad = 0
    for fn, text in texts.items():
        path = os.path.join(args.outdir, fn)
        if args.check:
            try:
                with open(path) as f:
                    same = f.read() == text
            except OSError:
                same = False
            if not same:
                print("%s differs from what %s generates" % (path, COMMAND), file=sys.stderr)
                bad = 1
        else:
            with open(path, "w") as f:
                f.write(text)
            print("wrote", path)
    return bad


if __name__ == "__main__":
    sys.exit(main())
