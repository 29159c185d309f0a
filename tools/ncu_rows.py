#!/usr/bin/env python3
"""One row per kernel launch of an `ncu --csv --metrics ...` report, in launch order: name,
grid, registers, duration (us), DRAM bytes read (MB), then the total. bench/step_profile_gpu.sh
makes the report (gpu__time_duration.sum, dram__bytes_read.sum, launch__grid_size,
launch__registers_per_thread).

usage: python3 tools/ncu_rows.py REPORT.csv
"""
import csv
import re
import sys


def num(s, unit=""):
    v = float(s.replace(",", "") or 0)
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}
    return v * scale.get(unit, 1.0)


def main():
    rows, hdr, launches = list(csv.reader(open(sys.argv[1]))), None, {}
    for r in rows:
        if hdr is None:
            if "Kernel Name" in r:
                hdr = r
            continue
        if len(r) != len(hdr):
            continue
        d = dict(zip(hdr, r))
        k = launches.setdefault(d["ID"], {"name": re.sub(r"\(.*", "", d["Kernel Name"])[:56]})
        k[d["Metric Name"]] = (d["Metric Value"], d.get("Metric Unit", ""))
    tot_us = tot_mb = 0.0
    for i, k in sorted(launches.items(), key=lambda x: int(x[0])):
        us = num(*k.get("gpu__time_duration.sum", ("0", "")))
        mb = num(*k.get("dram__bytes_read.sum", ("0", "")))
        tot_us += us
        tot_mb += mb
        print(f"{i:>4} {k['name']:56s} grid {k.get('launch__grid_size', ('?',))[0]:>7} "
              f"regs {k.get('launch__registers_per_thread', ('?',))[0]:>4} {us:8.2f} us {mb:8.2f} MB")
    print(f"{len(launches)} launches, {tot_us:.1f} us, {tot_mb:.1f} MB read")


if __name__ == "__main__":
    main()
