#!/usr/bin/env python3
"""Are a change's default kernels the same code as before? Compares the PTX of every kernel of
two builds of one .cu file (nvcc -ptx, same flags), entry by entry, after normalizing what a
rebuild renames: the entry's own mangled name, the function numbers in branch labels.

    python3 tools/ptx_same.py OLD.ptx NEW.ptx [--drop-last NAME ...]

--drop-last NAME: NEW's kernel template NAME gained a trailing template parameter (a variant
switch); its instantiations with that parameter 0 are compared with OLD's instantiation of the
remaining parameters (an OLD kernel that was not a template matches NAME<0>), the others are
listed as new. Prints one line per kernel that differs or has no counterpart and a summary;
"same instructions in another order" means the multiset of instructions, registers numbered
away, is the same (the optimizer placed an independent instruction elsewhere). Exit status 1
when a kernel of OLD differs otherwise or is missing. Needs c++filt (binutils).
Used for issue 20: the decode variants are template instantiations that the default never
launches, and with the switches off the default kernels must be the previous code."""
import re
import subprocess
import sys


def entries(path):
    text = open(path).read()
    out = {}
    for m in re.finditer(r'^\.visible \.entry (\S+)\(', text, re.M):
        start = m.start()
        end = text.index('\n}\n', start) + 3
        out[m.group(1)] = text[start:end]
    return out


def demangle(names):
    r = subprocess.run(['c++filt'], input='\n'.join(names), capture_output=True, text=True, check=True)
    return dict(zip(names, r.stdout.split('\n')))


def split_template(dm):
    """'void f<1, 2, 0>(args)' -> ('f', ['1', '2', '0'], '(args)'); non-template: ('f', None, '(args)')"""
    m = re.match(r'(?:void )?([A-Za-z_]\w*)(<([^<>]*)>)?(\(.*\))$', dm)
    if not m:
        return dm, None, ''
    targs = [a.strip() for a in m.group(3).split(',')] if m.group(2) else None
    return m.group(1), targs, m.group(4)


def normalize(name, body):
    body = body.replace(name, 'FN')
    body = re.sub(r'_INTERNAL_[0-9a-f]{8}_', '_INTERNAL_X_', body)   # the translation unit's hash
    # a function-local static (a kernel's __shared__ arrays): keep only its own name, since the
    # enclosing function's mangled name changes when that function becomes a template
    body = re.sub(r'_ZZ\w+?E(\d+)(\w+)', lambda m: 'LOCAL_' + m.group(2)[:int(m.group(1))] + m.group(2)[int(m.group(1)):], body)
    return re.sub(r'\$L__BB\d+_', r'$L__BB_', body)


def ops(body):
    """the instructions with their registers numbered away, as a sorted list (order-free)"""
    out = []
    for line in body.split('\n'):
        line = line.strip()
        if not line or line.startswith(('//', '.reg', '$L__', '{', '}')):
            continue
        out.append(re.sub(r'%[a-z]+\d+', '%r', line))
    return sorted(out)


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    old_p, new_p = args[0], args[1]
    drop = set()
    i = 2
    while i < len(args):
        if args[i] == '--drop-last' and i + 1 < len(args):
            drop.add(args[i + 1])
            i += 2
        else:
            print('unknown argument ' + args[i])
            return 2
    old, new = entries(old_p), entries(new_p)
    dm = demangle(list(old) + list(new))
    old_key = {}
    for n in old:
        f, t, a = split_template(dm[n])
        old_key[(f, tuple(t) if t is not None else None, a)] = n
    same = differ = added = reordered = 0
    matched = set()
    for n in new:
        f, t, a = split_template(dm[n])
        if f in drop:
            if not t or t[-1] != '0':
                added += 1
                continue
            t = t[:-1]
            key = (f, tuple(t) if t else None, a)
        else:
            key = (f, tuple(t) if t is not None else None, a)
        on = old_key.get(key)
        if on is None:
            print('new kernel: ' + dm[n])
            added += 1
            continue
        matched.add(on)
        a, b = normalize(on, old[on]), normalize(n, new[n])
        if a == b:
            same += 1
        elif ops(a) == ops(b):
            reordered += 1
            print('same instructions in another order: ' + dm[n])
        else:
            differ += 1
            print('DIFFERS: ' + dm[n])
    missing = [dm[n] for n in old if n not in matched]
    for m in missing:
        print('MISSING in new: ' + m)
    print('%s: %d kernels of the old build have the same PTX, %d the same instructions in another order (registers '
          'renumbered), %d differ, %d missing; %d new kernels (variants)' % (new_p, same, reordered, differ, len(missing), added))
    return 1 if differ or missing else 0


if __name__ == '__main__':
    sys.exit(main())
