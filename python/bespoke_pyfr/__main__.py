"""python3 -m bespoke_pyfr ARGS: PyFR's own command line, with bespoke.

    python3 -m bespoke_pyfr run -b opencl mesh.pyfrm case.ini

Environment: BESPOKE (the bespoke binary; else `bespoke` on PATH),
BESPOKE_PYFR_REPORT (write the JSON report of the choices there),
BESPOKE_PYFR_LIMIT (candidates asked for per operator; default 8),
BESPOKE_PYFR_PROFILE (write a cProfile of the whole run to that file, to see
where set-up time goes).
"""
import os
import sys


def main():
    # PyFR's main module first: it sets mpi4py's rc before MPI is loaded
    from pyfr.__main__ import main as pyfr_main
    from bespoke_pyfr.launcher import install

    install()

    sys.argv = ['pyfr'] + sys.argv[1:]
    prof = os.environ.get('BESPOKE_PYFR_PROFILE')
    if not prof:
        return pyfr_main()

    import cProfile
    p = cProfile.Profile()
    try:
        return p.runcall(pyfr_main)
    finally:
        p.dump_stats(prof)


if __name__ == '__main__':
    sys.exit(main())
