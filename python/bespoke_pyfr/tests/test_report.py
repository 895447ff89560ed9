"""The float64 check, the report's format, and PyFR's selection rule."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import numpy as np

from bespoke_pyfr.check import check_report, max_rel_diff
from bespoke_pyfr.problem import (CHECK_EDGE, CHECK_GROUP, check_columns,
                                  check_product, problem_fields,
                                  random_panels)
from bespoke_pyfr.session import Session, choose_index


def product(arr, alpha, beta, b, c, n, dtype):
    got = c.copy()
    got[:, :n] = (alpha*(arr.astype(dtype) @ b[:, :n].astype(dtype)) +
                  beta*c[:, :n]).astype(dtype)
    return got


class TestCheckProduct(unittest.TestCase):
    def test_cases(self):
        rng = np.random.default_rng()
        for dtype in (np.float64, np.float32):
            for beta in (0.0, 1.0):
                with self.subTest(dtype=dtype.__name__, beta=beta):
                    arr = rng.uniform(-1, 1, (12, 20)).astype(dtype)
                    n, alpha = 37, -1.5
                    b, c = random_panels(arr, n, 40, 44)
                    good = product(arr, alpha, beta, b, c, n, dtype)
                    self.assertIsNone(check_product(arr, alpha, beta, b, c,
                                                    good, n))

                    # One wrong term in one element
                    bad = good.copy()
                    bad[5, 7] += alpha*arr[5, 3]*b[3, 7]
                    self.assertIn('wrong result at C[5,7]', check_product(
                        arr, alpha, beta, b, c, bad, n))

                    # A write into the padding beyond column n
                    pad = good.copy()
                    pad[0, n + 1] = 0.5
                    self.assertEqual(check_product(arr, alpha, beta, b, c,
                                                   pad, n),
                                     'wrote C beyond column n')

                    # A NaN is never within the bound
                    nan = good.copy()
                    nan[1, 1] = np.nan
                    self.assertIsNotNone(check_product(arr, alpha, beta, b,
                                                       c, nan, n))

    def test_columns(self):
        rng = np.random.default_rng()
        for n in (1, 37, 2*CHECK_EDGE + CHECK_GROUP, 2*CHECK_EDGE + 100,
                  80000, 122880 + 7):
            with self.subTest(n=n):
                cols = check_columns(n, rng)
                d = np.diff(cols)
                self.assertTrue((d > 0).all() and cols[0] >= 0 and
                                cols[-1] < n)
                if n <= 2*CHECK_EDGE + CHECK_GROUP:
                    self.assertEqual(len(cols), n)
                    continue
                # The edges whole, and no run of 2*CHECK_GROUP - 1
                # columns left out.
                self.assertTrue(np.array_equal(cols[:CHECK_EDGE],
                                               np.arange(CHECK_EDGE)))
                self.assertTrue(np.array_equal(cols[-CHECK_EDGE:],
                                               np.arange(n - CHECK_EDGE, n)))
                self.assertLessEqual(d.max(), 2*CHECK_GROUP - 1)
                self.assertLess(len(cols), 2*CHECK_EDGE + n//CHECK_GROUP + 2)

    def test_wide(self):
        # One wrong tile of 32 columns anywhere in a wide panel is found.
        rng = np.random.default_rng()
        arr = rng.uniform(-1, 1, (6, 5))
        n = 20000
        b, c = random_panels(arr, n, n, n)
        good = product(arr, 1.0, 1.0, b, c, n, np.float64)
        self.assertIsNone(check_product(arr, 1.0, 1.0, b, c, good, n))
        for j0 in rng.integers(0, n - 32, 20):
            bad = good.copy()
            bad[2, j0:j0 + 32] += 1e-9*(1 + np.abs(good[2, j0:j0 + 32]))
            self.assertIsNotNone(check_product(arr, 1.0, 1.0, b, c, bad, n),
                                 f'tile at column {j0}')

    def test_problem_fields(self):
        arr = np.array([[1.0, 0.0], [0.25, -3.0], [0.0, 0.5]], np.float32)
        p = problem_fields(arr, 2.0, 1.0, 5, 8, 8, 32, 32, 'cuda',
                           {'cuda_arch': 90})
        self.assertEqual(p['operator'], {'m': 3, 'k': 2, 'dense': [
            1.0, 0.0, 0.25, -3.0, 0.0, 0.5]})
        self.assertEqual((p['dtype'], p['alpha'], p['beta']),
                         ('f32', 2.0, 1.0))
        self.assertEqual((p['align_b'], p['align_c']), (32, 32))
        with self.assertRaises(ValueError):
            problem_fields(arr.astype(np.int32), 1, 0, 5, 8, 8, 4, 4, 'c', {})


class TestRule(unittest.TestCase):
    def test_choose_index(self):
        cases = [([3.0], 0), ([3.0, 2.0], 1), ([3.0, 2.9], 0),
                 ([3.0, 2.84, 2.0], 2), ([1.0, 2.0, 0.96], 0)]
        for times, want in cases:
            with self.subTest(times=times):
                self.assertEqual(choose_index(times, 0.95), want)

    def test_gimmik_cut(self):
        s = Session({})
        sent = []

        def gen():
            for i in range(5):
                sent.append((yield f'k{i}'))

        # Not replaying: the whole sequence, responses passed through
        g = s.gimmik_kernels(gen())
        got = [next(g)] + [g.send(i) for i in range(4)]
        self.assertEqual(got, ['k0', 'k1', 'k2', 'k3', 'k4'])
        self.assertEqual(sent, [0, 1, 2, 3])

        # Replaying: only the stored kernel, then the end
        s.gimmik_only = 2
        g = s.gimmik_kernels(gen())
        self.assertEqual(next(g), 'k2')
        with self.assertRaises(StopIteration):
            g.send({'runtime': 1.0})


class TestReport(unittest.TestCase):
    def test_format(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'r.json')
            s = Session({'BESPOKE_PYFR_REPORT': path})
            arr = np.ones((4, 3))
            for beta, winner in ((0.0, 'gimmik'), (1.0, 'bespoke/x')):
                p = problem_fields(arr, 1.0, beta, 10, 12, 12, 8, 8,
                                   'opencl', {})
                s._report(str(beta), p, {'gimmik': 2e-5, 'gimmik#0': 2e-5,
                                         'bespoke/x': 1e-5}, winner, 'timed')
            s._report('0.0', p, {}, 'again', 'timed')       # no duplicate
            s.write_report()
            with open(path) as f:
                doc = json.load(f)
        ops = doc['operators']
        self.assertEqual(len(ops), 2)
        for op, beta, winner in zip(ops, (0.0, 1.0), ('gimmik', 'bespoke/x')):
            self.assertEqual({k: op[k] for k in
                              ('m', 'k', 'n', 'dtype', 'beta', 'winner')},
                             {'m': 4, 'k': 3, 'n': 10, 'dtype': 'f64',
                              'beta': beta, 'winner': winner})
            self.assertEqual(op['times'], {'gimmik': 2e-5,
                                           'bespoke/x': 1e-5})
        self.assertEqual(check_report(doc, require_bespoke=True), [])

    def test_check_report(self):
        good = {'m': 1, 'k': 1, 'n': 1, 'dtype': 'f64', 'beta': 0.0,
                'times': {'gimmik': 1.0}, 'winner': 'gimmik',
                'from': 'timed'}
        cases = [
            ({'operators': []}, False, ['the report lists no operators']),
            ({'operators': [good]}, False, []),
            ({'operators': [good]}, True, ['bespoke won no operator']),
            ({'operators': [dict(good, winner='clblast')]}, False,
             ['operator 0: the winner clblast has no time']),
            ({'operators': [{k: v for k, v in good.items() if k != 'n'}]},
             False, ['operator 0: no n']),
        ]
        for doc, req, want in cases:
            with self.subTest(doc=doc, req=req):
                self.assertEqual(check_report(doc, req), want)

    def test_unwritable_report_warns(self):
        s = Session({'BESPOKE_PYFR_REPORT': '/nonexistent/dir/r.json'})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            s.write_report()
        self.assertIn('could not write the report', err.getvalue())


class TestSolutionDiff(unittest.TestCase):
    def test_max_rel_diff(self):
        rng = np.random.default_rng()
        a = {'soln/p2-tet': rng.uniform(1, 2, (5, 4, 3))}
        b = {'soln/p2-tet': a['soln/p2-tet'] + 1e-12}
        d, why = max_rel_diff(b, a)
        self.assertIsNone(why)
        self.assertAlmostEqual(d, 1e-12/np.max(a['soln/p2-tet']), delta=1e-15)
        self.assertIsNotNone(max_rel_diff({}, {})[1])
        self.assertIsNotNone(max_rel_diff(a, {'soln/x': a['soln/p2-tet']})[1])
        c = {'soln/p2-tet': a['soln/p2-tet'].copy()}
        c['soln/p2-tet'][0, 0, 0] = np.nan
        self.assertIn('not finite', max_rel_diff(c, a)[1])


if __name__ == '__main__':
    unittest.main()
