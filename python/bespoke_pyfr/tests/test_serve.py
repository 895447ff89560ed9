"""The protocol client against the fake server and broken servers."""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

import numpy as np

from bespoke_pyfr.problem import problem_fields
from bespoke_pyfr.serve import ServeClient, ServeError, find_binary
from bespoke_pyfr.session import Session
from bespoke_pyfr.tests.util import FAKE, fake_binary, script_binary

DEVICE = {'name': 'test device', 'vendor': 'test', 'driver': '1.0',
          'local_mem_bytes': 65536}

# A server that answers each request with the request itself
ECHO = '''import json, sys
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({"v": 1, "id": req["id"], "ok": True,
                      "result": {"req": req}}), flush=True)
'''


def problem(m=3, k=4, n=10, dtype=np.float64, alpha=1.0, beta=0.0,
            rng=None):
    rng = rng or np.random.default_rng()
    arr = rng.uniform(-1, 1, (m, k)).astype(dtype)
    arr[rng.uniform(size=(m, k)) < 0.3] = 0
    return arr, problem_fields(arr, alpha, beta, n, n + 2, n + 2, 8, 8,
                               'opencl', DEVICE)


def fake_client():
    return ServeClient(sys.executable, args=(str(FAKE), 'serve'))


class TestEncoding(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.client = ServeClient(script_binary(self.tmp.name, ECHO))

    def tearDown(self):
        self.client.close()
        self.tmp.cleanup()

    def test_envelope_and_problem_fields(self):
        arr, prob = problem(dtype=np.float32, alpha=-0.5, beta=1.0)
        got = [self.client.candidates(prob, limit=4)['req'],
               self.client.lookup(prob)['req'],
               self.client.record(prob, 'gimmik', {'gimmik': 1e-5})['req']]
        self.assertEqual([r['op'] for r in got],
                         ['candidates', 'lookup', 'record'])
        self.assertEqual([r['id'] for r in got], [1, 2, 3])
        for r in got:
            self.assertEqual(r['v'], 1)
            self.assertEqual(r['dtype'], 'f32')
            self.assertEqual((r['alpha'], r['beta']), (-0.5, 1.0))
            self.assertEqual((r['n'], r['ldb'], r['ldc']), (10, 12, 12))
            self.assertEqual(r['operator']['m'], 3)
            self.assertEqual(r['operator']['k'], 4)
            # Row-major, every value exactly as the float32 matrix holds it
            self.assertEqual(r['operator']['dense'],
                             [float(v) for v in arr.ravel()])
            self.assertEqual(r['backend'], 'opencl')
            self.assertEqual(r['device'], DEVICE)
            self.assertEqual(r['client'], 'pyfr')
        self.assertEqual(got[0]['limit'], 4)
        self.assertIs(got[0]['source'], True)
        self.assertEqual((got[2]['winner'], got[2]['times']),
                         ('gimmik', {'gimmik': 1e-5}))

    def test_numpy_scalars_are_plain_numbers(self):
        r = self.client.request('hello', n=np.int32(7), x=np.float32(0.5),
                                a=np.arange(3))['req']
        self.assertEqual((r['n'], r['x'], r['a']), (7, 0.5, [0, 1, 2]))

    def test_non_finite_refused_before_sending(self):
        _, prob = problem()
        prob['alpha'] = float('nan')
        with self.assertRaises(ServeError) as cm:
            self.client.candidates(prob)
        self.assertEqual(cm.exception.code, 'bad_request')
        # Nothing was sent: the next request still gets id 1
        self.assertEqual(self.client.hello()['req']['id'], 1)


class TestFakeServer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        os.environ['FAKE_SERVE_STORE'] = os.path.join(self.tmp.name, 'st')
        self.client = fake_client()

    def tearDown(self):
        self.client.close()
        del os.environ['FAKE_SERVE_STORE']
        self.tmp.cleanup()

    def test_hello(self):
        h = self.client.hello()
        self.assertEqual(h['protocol'], 1)
        self.assertIn('candidates', h['ops'])

    def test_candidates_limit(self):
        _, prob = problem()
        res = self.client.candidates(prob, limit=1)
        self.assertEqual(res['returned'], 1)
        self.assertEqual(len(res['candidates']), 1)
        self.assertGreater(res['offered'], 1)

    def test_errors(self):
        _, prob = problem()
        cases = [
            ('unknown op', lambda: self.client.request('frobnicate'),
             'unknown_op', 'op'),
            ('missing dtype', lambda: self.client.request(
                'candidates', **{k: v for k, v in prob.items()
                                 if k != 'dtype'}), 'bad_request', 'dtype'),
            ('too many rows', lambda: self.client.candidates(
                dict(prob, operator={'m': 70000, 'k': 1,
                                     'dense': [0.0]*70000})), 'limit', None),
            ('winner without time', lambda: self.client.record(
                prob, 'gimmik', {'clblast': 1.0}), 'bad_request', 'times'),
            ('forged bespoke winner', lambda: self.client.record(
                prob, 'bespoke/none', {'bespoke/none': 1.0}), 'bad_request',
             'winner'),
        ]
        for name, call, code, field in cases:
            with self.subTest(name):
                with self.assertRaises(ServeError) as cm:
                    call()
                self.assertEqual(cm.exception.code, code)
                self.assertEqual(cm.exception.field, field)
        # The server goes on after errors
        self.assertEqual(self.client.hello()['protocol'], 1)

    def test_record_then_lookup(self):
        _, prob = problem()
        self.assertFalse(self.client.lookup(prob)['found'])
        times = {'gimmik': 2e-5, 'bespoke/fake/baked': 1e-5}
        self.assertTrue(self.client.record(prob, 'bespoke/fake/baked',
                                           times)['stored'])
        res = self.client.lookup(prob)
        self.assertTrue(res['found'])
        self.assertEqual(res['winner'], 'bespoke/fake/baked')
        self.assertEqual(res['times'], times)
        self.assertEqual(res['candidate']['name'], 'fake/baked')
        # Another beta is another problem
        self.assertFalse(self.client.lookup(dict(prob, beta=1.0))['found'])


class TestBrokenServers(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def run_hello(self, body):
        with ServeClient(script_binary(self.tmp.name, body)) as c:
            with self.assertRaises(ServeError) as cm:
                c.hello()
            return cm.exception.code

    def test_broken(self):
        cases = [
            ('exits at once', 'import sys; sys.exit(3)', 'exited'),
            ('not JSON', 'import sys; sys.stdin.readline(); print("hi")',
             'protocol'),
            ('wrong id', 'import sys; sys.stdin.readline(); '
             'print(\'{"v": 1, "id": 99, "ok": true, "result": {}}\')',
             'protocol'),
            ('wrong version', 'import sys; sys.stdin.readline(); '
             'print(\'{"v": 2, "id": 1, "ok": true, "result": {}}\')',
             'protocol'),
        ]
        for name, body, code in cases:
            with self.subTest(name):
                self.assertEqual(self.run_hello(body), code)


class TestMissingBinary(unittest.TestCase):
    def test_find_binary(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = fake_binary(tmp)
            self.assertEqual(find_binary({'BESPOKE': fake}), fake)
            self.assertEqual(find_binary({'PATH': tmp}), fake)
            self.assertIsNone(find_binary({'BESPOKE': tmp + '/none'}))
            self.assertIsNone(find_binary({'PATH': tmp + '/none'}))

    def test_client_without_binary(self):
        c = ServeClient(binary=None)
        c.binary = None
        with self.assertRaises(ServeError) as cm:
            c.hello()
        self.assertEqual(cm.exception.code, 'missing')
        c = ServeClient(binary='/nonexistent/bespoke')
        with self.assertRaises(ServeError) as cm:
            c.hello()
        self.assertEqual(cm.exception.code, 'missing')

    def test_session_falls_back_with_one_warning(self):
        _, prob = problem()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            s = Session({'BESPOKE': '/nonexistent/bespoke'})
            self.assertEqual(s.candidates(prob), [])
            self.assertEqual(s.candidates(prob), [])
            self.assertIsNone(s._lookup(prob))
        lines = err.getvalue().splitlines()
        self.assertEqual(len(lines), 1, lines)
        self.assertIn('bespoke not found', lines[0])
        self.assertTrue(s.disabled)

    def test_session_with_dead_server_warns_once(self):
        _, prob = problem()
        with tempfile.TemporaryDirectory() as tmp:
            dead = script_binary(tmp, 'import sys; sys.exit(1)')
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                s = Session({'BESPOKE': dead})
                self.assertEqual(s.candidates(prob), [])
                self.assertEqual(s.candidates(prob), [])
        self.assertEqual(len(err.getvalue().splitlines()), 1,
                         err.getvalue())


class TestFakeKernelsAreRight(unittest.TestCase):
    """The fake's sources hold alpha*A; its data param holds alpha*A too."""

    def test_data_values(self):
        arr, prob = problem(alpha=2.0)
        with fake_client() as c:
            cands = c.candidates(prob, limit=0)['candidates']
        data = next(p for p in cands[0]['params'] if p['role'] == 'data')
        np.testing.assert_array_equal(np.array(data['values']),
                                      2.0*arr.ravel())
        self.assertEqual(json.loads(json.dumps(cands))[0]['name'],
                         'fake/data')


if __name__ == '__main__':
    unittest.main()
