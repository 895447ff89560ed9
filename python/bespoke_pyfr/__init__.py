"""A bespoke kernel provider for PyFR, fed by `bespoke serve`.

See README.md; run PyFR through it with `python3 -m bespoke_pyfr run ...`.
"""
