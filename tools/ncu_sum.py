import csv, sys, collections, re
rows = list(csv.reader(open(sys.argv[1])))
hdr = None
tot = collections.defaultdict(float); cnt = collections.Counter()
for r in rows:
    if hdr is None:
        if 'Kernel Name' in r: hdr = r
        continue
    if len(r) != len(hdr): continue
    d = dict(zip(hdr, r))
    if d.get('Metric Name') != 'gpu__time_duration.sum': continue
    name = re.sub(r'<.*', '', d['Kernel Name'])[:40]
    grid = d.get('Grid Size', '')
    v = float(d['Metric Value'].replace(',', ''))
    unit = d.get('Metric Unit', 'nsecond')
    if unit.startswith('usecond'): v *= 1000
    if unit.startswith('msecond'): v *= 1e6
    tot[name] += v; cnt[name] += 1
T = sum(tot.values())
for k, v in sorted(tot.items(), key=lambda x: -x[1]):
    print(f"{k:42s} {cnt[k]:5d} {v/1e3:10.1f} us {100*v/T:5.1f}%")
print(f"total {T/1e3:.1f} us over {sum(cnt.values())} kernels")
