"""Compare two PyFR solutions and check a bespoke_pyfr report.

    python3 -m bespoke_pyfr.check STOCK.pyfrs BESPOKE.pyfrs REPORT.json
                                  [--tol T] [--require-bespoke]

Exit 0 when every solution array of the two files agrees to T (the largest
difference over the largest magnitude, per array), the report names a
winner for each operator and, with --require-bespoke, bespoke won at least
one.  Needs numpy, and h5py for the solutions.
"""
import argparse
import json
import sys

import numpy as np


def solution_arrays(path):
    """{name: float array} of the solution datasets of a .pyfrs file."""
    import h5py

    out = {}
    with h5py.File(path, 'r') as f:
        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset) or \
                    not name.startswith('soln/') or name.endswith('-parts'):
                return
            a = obj[()]
            if a.dtype.names:
                for fld in a.dtype.names:
                    out[f'{name}:{fld}'] = np.asarray(a[fld], float)
            elif a.dtype.kind == 'f':
                out[name] = np.asarray(a, float)
        f.visititems(visit)
    return out


def max_rel_diff(a, b):
    """The largest relative difference of matching arrays, and why not."""
    if sorted(a) != sorted(b):
        return None, f'different datasets: {sorted(a)} and {sorted(b)}'
    if not a:
        return None, 'no solution datasets'
    worst = 0.0
    for name in a:
        x, y = a[name], b[name]
        if x.shape != y.shape:
            return None, f'{name}: shapes {x.shape} and {y.shape}'
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            return None, f'{name}: values that are not finite'
        scale = max(float(np.max(np.abs(y))), np.finfo(float).tiny)
        worst = max(worst, float(np.max(np.abs(x - y)))/scale)
    return worst, None


def check_report(doc, require_bespoke=False):
    """A list of the report's problems (empty when it is sound)."""
    errs = []
    ops = doc.get('operators') if isinstance(doc, dict) else None
    if not isinstance(ops, list) or not ops:
        return ['the report lists no operators']
    for i, op in enumerate(ops):
        for f in ('m', 'k', 'n', 'dtype', 'beta', 'times', 'winner'):
            if f not in op:
                errs.append(f'operator {i}: no {f}')
        w = op.get('winner')
        if not isinstance(w, str) or not w:
            errs.append(f'operator {i}: no winner named')
        elif op.get('from') == 'timed' and w not in op.get('times', {}):
            errs.append(f'operator {i}: the winner {w} has no time')
    if require_bespoke and not any(
            str(op.get('winner', '')).startswith('bespoke/') for op in ops):
        errs.append('bespoke won no operator')
    return errs


def main(argv=None):
    ap = argparse.ArgumentParser(prog='python3 -m bespoke_pyfr.check')
    ap.add_argument('stock')
    ap.add_argument('bespoke')
    ap.add_argument('report')
    ap.add_argument('--tol', type=float, default=1e-10)
    ap.add_argument('--require-bespoke', action='store_true')
    args = ap.parse_args(argv)

    ok = True
    diff, why = max_rel_diff(solution_arrays(args.bespoke),
                             solution_arrays(args.stock))
    if why:
        print(f'check: FAIL: {why}')
        ok = False
    else:
        good = diff <= args.tol
        ok &= good
        print(f'check: max relative difference {diff:.3e} (limit '
              f'{args.tol:g}): {"ok" if good else "FAIL"}')

    try:
        with open(args.report) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f'check: FAIL: report {args.report}: {e}')
        return 1
    for op in doc.get('operators', []):
        print(f'check: {op.get("m")}x{op.get("k")} n={op.get("n")} '
              f'{op.get("dtype")} beta={op.get("beta")}: winner '
              f'{op.get("winner")} ({op.get("from", "?")})')
    for e in check_report(doc, args.require_bespoke):
        print(f'check: FAIL: {e}')
        ok = False
    print('check: PASS' if ok else 'check: FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
