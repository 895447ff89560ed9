"""Adds the bespoke provider to PyFR at run time, without editing PyFR.

Called by `python3 -m bespoke_pyfr` before PyFR's own main: it wraps
BaseBackend.kernel (see session.py), appends a bespoke provider to each
OpenCL and CUDA backend as it is made, and lets the session cut GiMMiK's
kernel sequence when a stored GiMMiK choice is rebuilt.
"""
import atexit
import importlib

from bespoke_pyfr import timing
from bespoke_pyfr.session import Session, warn

_installed = None


def install(env=None):
    """Patch PyFR (once per process); return the session.

    With BESPOKE_PYFR_PROVIDER=off PyFR keeps its own providers alone and
    only the run is timed (the report's "run"): stock PyFR, measured as
    the provider's runs are.
    """
    global _installed
    if _installed is not None:
        return _installed
    session = Session(env)
    atexit.register(session.write_report)
    timing.install(session.clock)
    if session.env.get('BESPOKE_PYFR_PROVIDER', 'on') == 'off':
        session.provider = False
        _installed = session
        return session

    from pyfr.backends.base.backend import BaseBackend
    orig_kernel = BaseBackend.kernel

    def kernel(self, name, *args, **kwargs):
        return session.kernel(orig_kernel, self, name, *args, **kwargs)

    BaseBackend.kernel = kernel

    for modname, clsname in [('pyfr.backends.opencl.base', 'OpenCLBackend'),
                             ('pyfr.backends.cuda.base', 'CUDABackend')]:
        cls = getattr(importlib.import_module(modname), clsname)
        cls.__init__ = _with_provider(cls.__init__, session)

    for modname, clsname in [('pyfr.backends.opencl.gimmik', 'OpenCLMatMul'),
                             ('pyfr.backends.cuda.gimmik', 'CUDAMatMul')]:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        setattr(mod, clsname, _cut_matmul(getattr(mod, clsname), session))

    _installed = session
    return session


def _with_provider(init, session):
    def __init__(self, cfg):
        init(self, cfg)
        from bespoke_pyfr.provider import provider_for
        try:
            prov = provider_for(self, session)
        except Exception as e:              # noqa: BLE001
            warn(f'no bespoke provider for {self.name}: {e}')
            prov = None
        if prov is not None:
            self._providers.append(prov)
        for p in self._providers:
            if hasattr(p, 'mul'):
                session.wrap_provider(p)

    return __init__


def _cut_matmul(base, session):
    class MatMul(base):
        def kernels(self, *args, **kwargs):
            return session.gimmik_kernels(super().kernels(*args, **kwargs))

    MatMul.__name__ = MatMul.__qualname__ = base.__name__
    return MatMul
