"""Where a PyFR run's wall time goes: set-up, and the time per step.

PyFR compiles and autotunes its kernels while the solver is built, before
the first step; the steps then repeat one graph. The set-up is the time
from the launcher's start to the end of the first step; the time per step
is measured from there to the end of the run, over the steps after the
first (which may still build lazily made kernels).
"""
import time


class StepClock:
    def __init__(self):
        self.start = time.perf_counter()
        self.first = None       # end of the first accepted step
        self.last = None        # end of the run
        self.steps = 0

    def step(self):
        self.steps += 1
        if self.first is None:
            self.first = time.perf_counter()

    def done(self):
        self.last = time.perf_counter()

    def summary(self):
        out = {'steps': self.steps}
        if self.first is not None:
            out['setup_s'] = self.first - self.start
        if self.last is not None and self.first is not None and self.steps > 1:
            out['run_s'] = self.last - self.first
            out['step_s'] = (self.last - self.first) / (self.steps - 1)
        return out


def install(clock):
    """Count PyFR's accepted steps and time its run into clock."""
    from pyfr.integrators.base import BaseIntegrator
    from pyfr.integrators.std.controllers import BaseStdController
    from pyfr.integrators.dual.phys.controllers import BaseDualController

    for cls in (BaseStdController, BaseDualController):
        orig = cls._accept_step

        def _accept_step(self, *args, _orig=orig, **kwargs):
            r = _orig(self, *args, **kwargs)
            clock.step()
            return r

        cls._accept_step = _accept_step

    orig_run = BaseIntegrator.run

    def run(self):
        try:
            return orig_run(self)
        finally:
            clock.done()

    BaseIntegrator.run = run
