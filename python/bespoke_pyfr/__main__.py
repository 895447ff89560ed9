"""python3 -m bespoke_pyfr ARGS: PyFR's own command line, with bespoke.

    python3 -m bespoke_pyfr run -b opencl mesh.pyfrm case.ini

Environment: BESPOKE (the bespoke binary; else `bespoke` on PATH),
BESPOKE_PYFR_REPORT (write the JSON report of the choices there),
BESPOKE_PYFR_LIMIT (candidates asked for per operator; default 8).
"""
import sys


def main():
    # PyFR's main module first: it sets mpi4py's rc before MPI is loaded
    from pyfr.__main__ import main as pyfr_main
    from bespoke_pyfr.launcher import install

    install()

    sys.argv = ['pyfr'] + sys.argv[1:]
    return pyfr_main()


if __name__ == '__main__':
    sys.exit(main())
