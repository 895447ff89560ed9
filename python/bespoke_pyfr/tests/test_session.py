"""The session's choices through PyFR's own BaseBackend.kernel.

The providers here are stand-ins that run on the host: a GiMMiK-like one
that builds and times a sequence of kernels, and the bespoke provider with
its device operations done in numpy (each fake candidate executed for what
it computes).  Needs PyFR (for BaseBackend.kernel); skipped without it.
"""
import contextlib
import io
import os
import tempfile
import unittest

import numpy as np

from bespoke_pyfr.provider import BespokeMulMixin
from bespoke_pyfr.session import Session
from bespoke_pyfr.tests.util import fake_binary, use_pyfr

WHY = use_pyfr()


class Mat:
    def __init__(self, arr, const=False):
        self.arr = arr
        self.nrow, self.ncol = arr.shape
        self.leaddim = arr.shape[1]
        self.dtype, self.itemsize = arr.dtype, arr.dtype.itemsize
        self.tags = {'const', 'align'} if const else {'align'}

    def get(self):
        return self.arr.copy()


class Kern:
    def __init__(self, dt):
        self.dt = dt


class FakeBackend:
    name = 'opencl'
    autotune_ifac = 0.95
    alignb = 64

    def __init__(self, providers):
        self._providers = providers


class OpenCLGiMMiKKernels:
    """Builds and times kernels one by one, as PyFR's GiMMiK does."""

    def __init__(self, session, times):
        self.session, self.times = session, times
        self.built = self.benched = 0

    def _benchmark(self, kfunc):
        self.benched += 1
        return kfunc()

    def mul(self, a, b, out, alpha=1.0, beta=0.0):
        def gen():
            for i, t in enumerate(self.times):
                yield i, t

        best = None
        for i, t in self.session.gimmik_kernels(gen()):
            self.built += 1
            dt = self._benchmark(lambda: t)
            if best is None or dt < 0.95*best:
                best = dt
        return Kern(best)


class HostBespoke(BespokeMulMixin):
    """The bespoke provider with a numpy 'device'."""

    protocol_backend = language = 'opencl'

    def __init__(self, session, backend, times, broken=(), racy=()):
        self.backend = backend
        self._init_bespoke(session)
        self.vtimes, self.broken, self.racy = times, set(broken), set(racy)
        self.bound, self.timed, self.runs = [], [], {}

    def _query_device(self):
        return {'name': 'host', 'vendor': 'test', 'driver': '1'}

    def _alloc(self, nbytes):
        return {'a': None}

    def _upload(self, buf, host):
        buf['a'] = np.array(host)

    def _download(self, host, buf):
        host[...] = buf['a']

    def _compile(self, cand):
        return cand

    def _bind(self, cand, _, args):
        self.bound.append(cand['name'])
        return cand, args

    def _run_once(self, run):
        cand, args = run
        b, c = args[0][1]['a'], args[1][1]['a']
        n = self.n
        if cand['name'] == 'fake/wrong' or cand['name'] in self.broken:
            c[:, :n] = 1
            return
        prob = self.prob
        m, k = prob['operator']['m'], prob['operator']['k']
        a = np.array(prob['operator']['dense']).reshape(m, k)
        c[:, :n] = (prob['alpha']*a @ b[:, :n] +
                    prob['beta']*c[:, :n]).astype(c.dtype)
        runs = self.runs[cand['name']] = self.runs.get(cand['name'], 0) + 1
        if cand['name'] in self.racy and runs > 1:
            # a race that struck an element the check does not sample
            c[-1, n // 2 + 1] += 1

    def _time(self, run):
        self.timed.append(run[0]['name'])
        return self.vtimes[run[0]['name']]

    def problem(self, *args):
        self.prob = super().problem(*args)
        self.n = self.prob['n']
        return self.prob

    def _live_kernel(self, ident, cand, b, out, dt):
        return Kern(dt)


@unittest.skipIf(WHY, WHY)
class TestSession(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.env = {'BESPOKE': fake_binary(self.tmp.name)}
        os.environ['FAKE_SERVE_STORE'] = os.path.join(self.tmp.name, 'st')
        rng = np.random.default_rng()
        self.a = Mat(rng.uniform(-1, 1, (6, 5)), const=True)
        self.b = Mat(rng.uniform(-1, 1, (5, 16)))
        self.out = Mat(np.zeros((6, 16)))
        self.sessions = []

    def tearDown(self):
        for s in self.sessions:
            if s.client:
                s.client.close()
        os.environ.pop('FAKE_SERVE_STORE', None)
        os.environ.pop('FAKE_SERVE_BAD', None)
        self.tmp.cleanup()

    def run_once(self, gtimes, btimes, broken=(), beta=0.0, racy=()):
        from pyfr.backends.base.backend import BaseBackend

        s = Session(self.env)
        self.sessions.append(s)
        be = FakeBackend([])
        g = OpenCLGiMMiKKernels(s, gtimes)
        bp = HostBespoke(s, be, btimes, broken, racy)
        be._providers = [object(), g, bp]
        for p in (g, bp):
            s.wrap_provider(p)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            kern = s.kernel(BaseBackend.kernel, be, 'mul', self.a, self.b,
                            out=self.out, beta=beta)
        return s, g, bp, kern, err.getvalue().splitlines()

    def test_bespoke_wins_then_is_rebuilt_alone(self):
        bt = {'fake/data': 5e-5, 'fake/baked': 1e-5}
        s, g, bp, kern, warns = self.run_once([3e-5, 2e-5, 2.5e-5], bt)
        self.assertEqual(warns, [])
        self.assertEqual(kern.dt, 1e-5)
        (op,) = s.report()['operators']
        self.assertEqual(op['winner'], 'bespoke/fake/baked')
        self.assertEqual(op['from'], 'timed')
        self.assertEqual(op['times'], {'gimmik': 2e-5, **{
            f'bespoke/{k}': v for k, v in bt.items()}})
        self.assertEqual(g.built, 3)

        # Warm: only the stored bespoke kernel is built, nothing is timed
        s, g, bp, kern, warns = self.run_once([3e-5, 2e-5, 2.5e-5], bt)
        self.assertEqual((g.built, g.benched), (0, 0))
        self.assertEqual(bp.bound[:1], ['fake/baked'])
        self.assertEqual(bp.timed, [])
        self.assertEqual(kern.dt, 1e-5)
        (op,) = s.report()['operators']
        self.assertEqual((op['winner'], op['from']),
                         ('bespoke/fake/baked', 'store'))

    def test_gimmik_wins_then_only_its_kernel_is_built(self):
        bt = {'fake/data': 5e-5, 'fake/baked': 4e-5}
        gt = [3e-5, 2e-5, 1.95e-5, 2.5e-5]
        s, g, bp, kern, _ = self.run_once(gt, bt)
        (op,) = s.report()['operators']
        self.assertEqual(op['winner'], 'gimmik')
        self.assertEqual(kern.dt, 2e-5)

        # Warm: GiMMiK alone, only its stored kernel (index 1), untimed
        s, g, bp, kern, _ = self.run_once(gt, bt)
        self.assertEqual((g.built, g.benched), (1, 0))
        self.assertEqual(bp.bound, [])
        self.assertEqual(kern.dt, 2e-5)
        (op,) = s.report()['operators']
        self.assertEqual((op['winner'], op['from']), ('gimmik', 'store'))

    def test_wrong_candidate_dropped_with_a_warning(self):
        os.environ['FAKE_SERVE_BAD'] = '1'
        bt = {'fake/wrong': 1e-9, 'fake/data': 5e-5, 'fake/baked': 1e-5}
        s, g, bp, kern, warns = self.run_once([3e-5], bt)
        self.assertEqual(len(warns), 1, warns)
        self.assertIn('fake/wrong dropped: wrong result', warns[0])
        self.assertNotIn('fake/wrong', bp.timed)
        (op,) = s.report()['operators']
        self.assertEqual(op['winner'], 'bespoke/fake/baked')
        self.assertNotIn('bespoke/fake/wrong', op['times'])

    def test_racy_candidate_dropped(self):
        bt = {'fake/data': 5e-5, 'fake/baked': 1e-5}
        s, g, bp, kern, warns = self.run_once([3e-5], bt,
                                              racy={'fake/baked'})
        self.assertEqual(len(warns), 1, warns)
        self.assertIn('fake/baked dropped: two runs on the same data differ',
                      warns[0])
        (op,) = s.report()['operators']
        self.assertEqual(op['winner'], 'gimmik')
        self.assertNotIn('bespoke/fake/baked', op['times'])

    def test_stored_kernel_failing_falls_back_to_competition(self):
        bt = {'fake/data': 5e-5, 'fake/baked': 1e-5}
        self.run_once([3e-5], bt)
        s, g, bp, kern, warns = self.run_once([3e-5], bt,
                                              broken={'fake/baked'})
        self.assertTrue(any('fake/baked dropped' in w for w in warns), warns)
        (op,) = s.report()['operators']
        self.assertEqual((op['winner'], op['from']), ('gimmik', 'timed'))
        self.assertEqual(g.built, 1)

    def test_without_bespoke_pyfr_providers_decide(self):
        self.env = {'BESPOKE': os.path.join(self.tmp.name, 'none')}
        s, g, bp, kern, warns = self.run_once([3e-5, 2e-5], {})
        self.assertEqual(len(warns), 1, warns)
        self.assertIn("using PyFR's own kernel providers", warns[0])
        (op,) = s.report()['operators']
        self.assertEqual((op['winner'], op['times']),
                         ('gimmik', {'gimmik': 2e-5}))


if __name__ == '__main__':
    unittest.main()
