"""The OpenCL provider on PyFR's own OpenCL backend, fed by the fake server.

Skipped (with the reason) without PyFR or an OpenCL device (PoCL here).
"""
import contextlib
import io
import os
import tempfile
import unittest

import numpy as np

from bespoke_pyfr.session import Session
from bespoke_pyfr.tests.util import fake_binary, opencl_library, use_pyfr


def opencl_backend():
    """PyFR's OpenCL backend on device 0, or the reason there is none."""
    why = use_pyfr()
    if why:
        return None, why
    lib = opencl_library()
    if lib is None:
        return None, 'no OpenCL loader (libOpenCL.so.1)'
    os.environ.setdefault('PYFR_OPENCL_LIBRARY_PATH', lib)
    try:
        from pyfr.backends.opencl.base import OpenCLBackend
        from pyfr.inifile import Inifile

        cfg = Inifile('[backend]\nprecision = double\n'
                      '[backend-opencl]\ndevice-id = 0\n')
        return OpenCLBackend(cfg), None
    except Exception as e:                  # noqa: BLE001
        return None, f'no OpenCL device for PyFR: {type(e).__name__}: {e}'


BACKEND, WHY = (None, 'not tried') if os.environ.get('BESPOKE_PYFR_NO_OPENCL') \
    else opencl_backend()


@unittest.skipIf(BACKEND is None, WHY)
class TestOpenCLProvider(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.session = Session({'BESPOKE': fake_binary(self.tmp.name)})

    def tearDown(self):
        if self.session.client:
            self.session.client.close()
        os.environ.pop('FAKE_SERVE_BAD', None)
        self.tmp.cleanup()

    def mul(self, dtype, alpha, beta):
        from bespoke_pyfr.provider import provider_for

        be, rng = BACKEND, np.random.default_rng()
        m, k, n = 9, 7, 300
        arr = rng.uniform(-1, 1, (m, k))
        arr[rng.uniform(size=(m, k)) < 0.4] = 0
        bh = rng.uniform(-1, 1, (k, n))
        ch = rng.uniform(-1, 1, (m, n))
        a = be.const_matrix(arr, dtype=dtype)
        b = be.matrix((k, n), initval=bh, tags={'align'}, dtype=dtype)
        out = be.matrix((m, n), initval=ch, tags={'align'}, dtype=dtype)

        prov = provider_for(be, self.session)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            kern = prov.mul(a, b, out, alpha=alpha, beta=beta)

        # Choosing the kernel touched neither of the solver's arrays
        np.testing.assert_array_equal(b.get(), bh.astype(dtype))
        np.testing.assert_array_equal(out.get(), ch.astype(dtype))

        be.run_kernels([kern], wait=True)
        a32, b32 = arr.astype(dtype), bh.astype(dtype)
        ref = alpha*(a32.astype(float) @ b32.astype(float)) + \
            beta*ch.astype(dtype).astype(float)
        tol = 1e-13 if dtype == np.float64 else 1e-5
        np.testing.assert_allclose(out.get(), ref, rtol=0, atol=tol*k)
        return kern, err.getvalue().splitlines()

    def test_f64_beta1(self):
        kern, warns = self.mul(np.float64, -0.5, 1.0)
        self.assertEqual(warns, [])
        self.assertIn(kern.bespoke_variant, ('fake/data', 'fake/baked'))
        self.assertGreater(kern.dt, 0)

    def test_f32_wrong_candidate_dropped(self):
        os.environ['FAKE_SERVE_BAD'] = '1'
        kern, warns = self.mul(np.float32, 2.0, 0.0)
        self.assertEqual(len(warns), 1, warns)
        self.assertIn('fake/wrong dropped: wrong result', warns[0])
        self.assertNotEqual(kern.bespoke_variant, 'fake/wrong')


if __name__ == '__main__':
    unittest.main()
