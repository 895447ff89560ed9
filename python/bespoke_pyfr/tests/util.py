"""Shared helpers of the tests: the fake server and where PyFR is."""
import os
from pathlib import Path
import stat
import sys

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
FAKE = HERE / 'fake_serve.py'


def fake_binary(tmpdir, name='bespoke'):
    """An executable in tmpdir that runs the fake server with this Python."""
    path = Path(tmpdir) / name
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def script_binary(tmpdir, body, name='server'):
    """An executable in tmpdir that runs a Python body as a server."""
    src = Path(tmpdir) / f'{name}.py'
    src.write_text(body)
    path = Path(tmpdir) / name
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{src}" "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def pyfr_dir():
    """PyFR as carried beside the repo (or PYFR_DIR), or None."""
    d = Path(os.environ.get('PYFR_DIR') or REPO.parent / 'shared' / 'pyfr')
    return d if (d / 'py' / 'pyfr').is_dir() else None


def use_pyfr():
    """Put PyFR on sys.path; return None, or why it can not be used."""
    d = pyfr_dir()
    if d is None:
        return 'PyFR not found (set PYFR_DIR)'
    # mpi4py as carried for Debian 12's Python 3.11, as PyFR's run.sh adds it
    cpu = [d / 'cpu'] if sys.version_info[:2] == (3, 11) else []
    for p in (*cpu, d / 'py', d / 'py-fallback'):
        if str(p) not in sys.path:
            sys.path.append(str(p))
    try:
        import numpy  # noqa: F401
        import pyfr.backends.base  # noqa: F401
    except ImportError as e:
        return f'PyFR can not be imported: {e}'
    return None


def opencl_library():
    """The OpenCL loader for PyFR (it opens libOpenCL.so), or None."""
    for d in ('/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib'):
        for name in ('libOpenCL.so', 'libOpenCL.so.1'):
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
    return None
