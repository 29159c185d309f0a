#!/usr/bin/env python3
"""Kernel times of an `ncu --csv --metrics gpu__time_duration.sum[,...]` report.

usage: python3 tools/ncu_sum.py REPORT.csv           time per kernel name (launches, us, share)
       python3 tools/ncu_sum.py --rows REPORT.csv    one row per launch in launch order: name,
                                                     grid, registers, us, DRAM MB read (with
                                                     dram__bytes_read.sum, launch__grid_size,
                                                     launch__registers_per_thread in the report)
       python3 tools/ncu_sum.py --groups REPORT.csv  the launches grouped by kernel (template
                                                     arguments kept) and grid: count, us in all,
                                                     us a launch, in order of first launch
bench/step_profile_gpu.sh makes such a report of one decode step.
"""
import collections
import csv
import re
import sys

SCALE = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def value(metric):
    """us for times, MB for bytes; metric: (value text, unit)"""
    v, unit = metric
    return float(v.replace(",", "") or 0) * SCALE.get(unit, 1e-3 if unit == "" else 1.0)


def launches(path):
    """{launch id: {"name": ..., metric name: (value, unit)}} of the report"""
    hdr, out = None, {}
    for r in csv.reader(open(path)):
        if hdr is None:
            if "Kernel Name" in r:
                hdr = r
            continue
        if len(r) != len(hdr):
            continue
        d = dict(zip(hdr, r))
        k = out.setdefault(d["ID"], {"name": d["Kernel Name"]})
        k[d["Metric Name"]] = (d["Metric Value"], d.get("Metric Unit", ""))
    return out


def main():
    rows = sys.argv[1] == "--rows"
    ls = launches(sys.argv[-1])
    if sys.argv[1] == "--groups":
        grp, order = {}, []
        for i, k in sorted(ls.items(), key=lambda x: int(x[0])):
            key = (re.sub(r"[(].*", "", k["name"])[:60], k.get("launch__grid_size", ("?",))[0])
            if key not in grp:
                grp[key] = [0, 0.0]
                order.append(key)
            grp[key][0] += 1
            grp[key][1] += value(k.get("gpu__time_duration.sum", ("0", "us")))
        tot = sum(v[1] for v in grp.values())
        for key in order:
            n, us = grp[key]
            print(f"{key[0]:60s} grid {key[1]:>7} x{n:<3} {us:9.1f} us {us / n:7.2f} us a launch")
        print(f"{len(ls)} launches, {tot:.1f} us")
        return
    if rows:
        tot_us = tot_mb = 0.0
        for i, k in sorted(ls.items(), key=lambda x: int(x[0])):
            us = value(k.get("gpu__time_duration.sum", ("0", "us")))
            mb = value(k.get("dram__bytes_read.sum", ("0", "byte")))
            tot_us, tot_mb = tot_us + us, tot_mb + mb
            print(f"{i:>4} {re.sub(r'[(].*', '', k['name'])[:56]:56s} grid {k.get('launch__grid_size', ('?',))[0]:>7} "
                  f"regs {k.get('launch__registers_per_thread', ('?',))[0]:>4} {us:8.2f} us {mb:8.2f} MB")
        print(f"{len(ls)} launches, {tot_us:.1f} us, {tot_mb:.1f} MB read")
        return
    tot, cnt = collections.defaultdict(float), collections.Counter()
    for k in ls.values():
        if "gpu__time_duration.sum" not in k:
            continue
        name = re.sub(r"<.*", "", k["name"])[:40]
        tot[name] += value(k["gpu__time_duration.sum"])
        cnt[name] += 1
    total = sum(tot.values())
    for name, v in sorted(tot.items(), key=lambda x: -x[1]):
        print(f"{name:42s} {cnt[name]:5d} {v:10.1f} us {100 * v / total:5.1f}%")
    print(f"total {total:.1f} us over {sum(cnt.values())} kernels")


if __name__ == "__main__":
    main()
