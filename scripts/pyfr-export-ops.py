#!/usr/bin/env python3
"""Export PyFR's FR operator matrices (and the point sets behind them) for
the simplex, prism and pyramid elements, as test data for `bespoke ops`.

    PYTHONPATH=../shared/pyfr/py /usr/bin/python3 scripts/pyfr-export-ops.py OUTDIR [SPEC ...]

SPEC is KIND:VARIANT:ORDERS, e.g. tri:default:1-4 or pyr:gll:1-3. Variants
name the point sets as `bespoke ops` does (see VARIANTS). With :exact,
the correction's integrals over triangular faces use a degree-20 rule
instead of PyFR's degree-12 one (which under-integrates a pyramid's p >= 5
correction), written to KIND-VARIANT-exact/. For each one it
writes OUTDIR/KIND-VARIANT/pORDER/ with

    m0.mtx m1.mtx m2.mtx m3.mtx m4.mtx m6.mtx m132.mtx m460.mtx
        MatrixMarket array files, as PyFR's opmat() returns them
    upts.txt      the solution points, one a line (element coordinates)
    tri-fpts.txt  the flux points of one triangular face, one a line (face
                  coordinates), where the element has triangular faces

Only PyFR's output is kept in the repository, never its code or tables.
testdata/pyfr-ops.tar.gz (folder pyfr-ops/) holds, from this script:

    tri:default:1-6 tri:alpha-opt:1-4 tet:default:1-4 tet:alpha-opt:1-3
    pri:default:1-4 pri:gll:1-3 pri:alpha-opt:1-3 pyr:default:1-4 pyr:gll:1-3
    pyr:default:5:exact  (only its m3, m6 and points kept: the corrections it is for)

(the whole sweep to p6 is 41 MB and takes minutes; `go test ./fr` reads
any such folder named by BESPOKE_PYFR_OPS).
"""
import os
import sys

import numpy as np

from pyfr.inifile import Inifile
import pyfr.shapes
from pyfr.shapes import BaseShape
from pyfr.util import subclass_where

# variant -> (solution points, line flux points, tri flux points, quad flux points)
VARIANTS = {
    'tri': {
        'default': ('williams-shunn', 'gauss-legendre', None, None),
        'alpha-opt': ('alpha-opt', 'gauss-legendre-lobatto', None, None),
    },
    'tet': {
        'default': ('shunn-ham', None, 'williams-shunn', None),
        'alpha-opt': ('alpha-opt', None, 'alpha-opt', None),
    },
    'pri': {
        'default': ('williams-shunn~gauss-legendre', None, 'williams-shunn',
                    'gauss-legendre'),
        'gll': ('williams-shunn~gauss-legendre-lobatto', None,
                'williams-shunn', 'gauss-legendre-lobatto'),
        'alpha-opt': ('alpha-opt~gauss-legendre-lobatto', None, 'alpha-opt',
                      'gauss-legendre-lobatto'),
    },
    'pyr': {
        'default': ('gauss-legendre', None, 'williams-shunn',
                    'gauss-legendre'),
        'gll': ('gauss-legendre-lobatto', None, 'williams-shunn',
                'gauss-legendre-lobatto'),
    },
}

OPS = {'m0': 'm0', 'm1': 'm1', 'm2': 'm2', 'm3': 'm3', 'm4': 'm4',
       'm6': 'm6', 'm132': 'm1 - m3*m2', 'm460': 'm4 - m6*m0'}


_get_quadrule = pyfr.shapes.get_quadrule


def write_mtx(path, a):
    with open(path, 'w') as f:
        f.write('%%MatrixMarket matrix array real general\n')
        f.write(f'{a.shape[0]} {a.shape[1]}\n')
        for v in a.T.flat:  # column-major, as the format wants
            f.write(f'{v:.17g}\n')


def write_pts(path, pts):
    with open(path, 'w') as f:
        for p in np.atleast_2d(pts):
            f.write(' '.join(f'{v:.17g}' for v in p) + '\n')


def exact_tri_rule(get_quadrule):
    def get(kind, rule=None, npts=None, *args, **kwargs):
        if kind == 'tri' and rule == 'williams-shunn' and npts == 36:
            return get_quadrule('tri', 'witherden-vincent', qdeg=20)
        return get_quadrule(kind, rule, npts, *args, **kwargs)
    return get


def export(outdir, kind, variant, order, exact=False):
    upts, lfp, tfp, qfp = VARIANTS[kind][variant]
    ini = Inifile()
    ini.set('solver', 'order', str(order))
    ini.set(f'solver-elements-{kind}', 'soln-pts', upts)
    for face, fp in (('line', lfp), ('tri', tfp), ('quad', qfp)):
        if fp:
            ini.set(f'solver-interfaces-{face}', 'flux-pts', fp)

    if exact:
        pyfr.shapes.get_quadrule = exact_tri_rule(_get_quadrule)
    try:
        shape = subclass_where(BaseShape, name=kind)(0, ini)
        ops = {name: shape.opmat(expr) for name, expr in OPS.items()}
    finally:
        pyfr.shapes.get_quadrule = _get_quadrule
    tag = f'{kind}-{variant}' + ('-exact' if exact else '')
    d = os.path.join(outdir, tag, f'p{order}')
    os.makedirs(d, exist_ok=True)
    for name, a in ops.items():
        write_mtx(os.path.join(d, f'{name}.mtx'), a)
    write_pts(os.path.join(d, 'upts.txt'), shape.upts)
    if tfp:
        tri = shape.facebases['tri'].pts
        write_pts(os.path.join(d, 'tri-fpts.txt'), tri)


def orders(s):
    lo, _, hi = s.partition('-')
    return range(int(lo), int(hi or lo) + 1)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    specs = sys.argv[2:] or [f'{k}:{v}:1-3' for k in VARIANTS
                             for v in VARIANTS[k]]
    for spec in specs:
        kind, variant, ords, *flag = spec.split(':')
        exact = flag == ['exact']
        for p in orders(ords):
            export(outdir, kind, variant, p, exact)
            print(f'{kind}-{variant} p{p}' + (' exact' if exact else ''))


if __name__ == '__main__':
    main()
