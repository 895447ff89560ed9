"""The CUDA provider's launch set-up, with PyFR's CUDA driver stood in for.

No GPU is needed: the module and function objects record what the provider
asks of them (argument types, the dynamic shared memory attribute, the
launch dimensions).  Needs PyFR's sources; skipped without them.
"""
import ctypes
import unittest

import numpy as np

from bespoke_pyfr.tests.util import use_pyfr

WHY = use_pyfr()


class Fn:
    def __init__(self, name, argtypes):
        self.name, self.argtypes = name, argtypes
        self.dynm = None

    def set_shared_size(self, *, dynm_shared=0, carveout=None):
        self.dynm = dynm_shared

    def make_params(self, grid, block, sharedb=0):
        fn = self

        class Params:
            def __init__(self):
                self.grid, self.block, self.sharedb = grid, block, sharedb
                self.args = None
                self.fn = fn

            def set_args(self, *args):
                self.args = args

        return Params()


class Mod:
    def get_function(self, name, argtypes):
        return Fn(name, argtypes)


class Session:
    def warn(self, *args):
        pass


def candidate(dyn, attrs):
    return {
        'name': 'x', 'entry': 'k', 'language': 'cuda', 'source': '',
        'params': [
            {'name': 'b', 'kind': 'buffer', 'type': 'f64', 'role': 'b'},
            {'name': 'c', 'kind': 'buffer', 'type': 'f64', 'role': 'c'},
            {'name': 'aa', 'kind': 'buffer', 'type': 'f64', 'role': 'data',
             'values': [1.0, 2.0]},
            {'name': 'n', 'kind': 'scalar', 'type': 'int32', 'role': 'n',
             'value': 77}],
        'launch': {'grid': [5, 1, 1], 'block': [128, 1, 1],
                   'dynamic_shared_bytes': dyn, 'static_shared_bytes': 0,
                   'attributes': attrs}
    }


@unittest.skipIf(WHY, WHY)
class TestCUDALaunch(unittest.TestCase):
    def provider(self):
        from bespoke_pyfr.provider import _cuda_classes

        cls = _cuda_classes()
        prov = cls.__new__(cls)
        prov.backend = None
        prov._init_bespoke(Session())
        prov._alloc = lambda nbytes: ('buf', nbytes)
        prov._upload = lambda buf, host: None
        return prov

    def test_bind(self):
        cases = [
            ('no dynamic shared memory', 0, {}, None),
            ('under 48 KiB, no attribute', 16384, {}, None),
            ('attribute asked', 75264,
             {'max_dynamic_shared_size_bytes': 75264}, 75264),
            ('over 48 KiB without the attribute', 60000, {}, 60000),
        ]
        for name, dyn, attrs, want in cases:
            with self.subTest(name):
                prov = self.provider()
                cand = candidate(dyn, attrs)
                args = prov._args('id', cand, 'B', 'C')
                fn, params = prov._bind(Mod(), cand, args)
                self.assertEqual(fn.name, 'k')
                self.assertEqual(fn.argtypes, [ctypes.c_uint64]*3 +
                                 [ctypes.c_int32])
                self.assertEqual(fn.dynm, want)
                self.assertEqual((params.grid, params.block, params.sharedb),
                                 ([5, 1, 1], [128, 1, 1], dyn))
                self.assertEqual(params.args[:2], ('B', 'C'))
                self.assertEqual(params.args[2], ('buf', 16))
                self.assertEqual(params.args[3], 77)
                self.assertIsInstance(params.args[3], int)

    def test_data_uploaded_once(self):
        prov = self.provider()
        uploads = []
        prov._upload = lambda buf, host: uploads.append(np.array(host))
        cand = candidate(0, {})
        for _ in range(3):
            prov._args('id', cand, 'B', 'C')
        self.assertEqual(len(uploads), 1)
        np.testing.assert_array_equal(uploads[0], [1.0, 2.0])


if __name__ == '__main__':
    unittest.main()
