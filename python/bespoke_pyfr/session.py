"""The state of one PyFR process: the server, the stored choices, the report.

PyFR picks a matrix multiply in BaseBackend.kernel('mul', ...): every
provider's mul builds and times its kernel and a later one wins only when
faster than 0.95 of the best so far.  The session wraps that call:

- first it asks the tuning store (`lookup`); a stored winner is rebuilt
  alone, with no timing: for bespoke, only the stored candidate; for another
  provider, only that provider runs, with its benchmark answered from the
  stored times (and for GiMMiK only the stored kernel of its sequence);
- otherwise PyFR's own competition runs, each provider's times are traced,
  and the winner is stored (`record`) for the next run.
"""
import atexit
from collections import defaultdict
import json
import os
import sys

from bespoke_pyfr.provider import BespokeMulMixin, problem_ident
from bespoke_pyfr.serve import ServeClient, ServeError, find_binary
from bespoke_pyfr.timing import StepClock

# PyFR's matrix-multiply providers, by class, as named in the store
PROVIDER_NAMES = {
    'OpenCLGiMMiKKernels': 'gimmik', 'CUDAGiMMiKKernels': 'gimmik',
    'HIPGiMMiKKernels': 'gimmik', 'OpenCLCLBlastKernels': 'clblast',
    'OpenCLTinyTCKernels': 'tinytc', 'CUDACUBLASLtKernels': 'cublaslt',
    'HIPRocBLASKernels': 'rocblas'
}

# Errors that mean the server as a whole is unusable (not this problem)
FATAL = {'missing', 'exited', 'protocol', 'unsupported_version', 'bad_json',
         'unknown_op'}


def provider_name(prov):
    if isinstance(prov, BespokeMulMixin):
        return 'bespoke'
    cls = type(prov).__name__
    return PROVIDER_NAMES.get(cls, cls.lower())


def warn(msg):
    print(f'bespoke-pyfr: warning: {msg}', file=sys.stderr, flush=True)


class Unavailable(Exception):
    pass


def mul_args(a, b, out, alpha=1.0, beta=0.0):
    """mul's arguments however PyFR passed them."""
    return a, b, out, alpha, beta


def choose_index(times, ifac):
    """The index PyFR's rule picks from a sequence of times."""
    best = None
    for i, t in enumerate(times):
        if best is None or t < ifac*times[best]:
            best = i
    return best


class Session:
    def __init__(self, env=None):
        env = os.environ if env is None else env
        self.env = env
        self.limit = int(env.get('BESPOKE_PYFR_LIMIT', '8'))
        self.report_path = env.get('BESPOKE_PYFR_REPORT')
        self.rank = 0
        self.client = None
        self.disabled = False
        self.entries = {}           # ident -> report entry, in order
        self.plans = {}             # ident -> stored choice (or None)
        self._forced = {}           # ident -> {'candidate', 'dt'}
        self._variants = {}         # ident -> {'bespoke/x': seconds}
        self.trial = None           # the competition being traced
        self.replay = {}            # provider name -> times to hand back
        self.gimmik_only = None     # index of GiMMiK's stored kernel
        self.clock = StepClock()    # set-up and time per step
        self.provider = True        # False: PyFR's own providers alone

    # The server
    def disable(self, why):
        if not self.disabled:
            self.disabled = True
            warn(f'{why}; using PyFR\'s own kernel providers')

    def _serve(self, op, *args):
        if self.disabled:
            raise Unavailable
        if self.client is None:
            binary = find_binary(self.env)
            if binary is None:
                self.disable('bespoke not found (set BESPOKE or put bespoke '
                             'on PATH)')
                raise Unavailable
            self.client = ServeClient(binary)
            try:
                hello = self.client.hello()
                if hello.get('protocol') != 1 or 'candidates' not in \
                        hello.get('ops', []):
                    raise ServeError('protocol', 'server does not speak '
                                     'protocol 1 with candidates')
            except ServeError as e:
                self.disable(f'bespoke serve unusable: {e}')
                raise Unavailable from None
            atexit.register(self.client.close)
        try:
            return getattr(self.client, op)(*args)
        except ServeError as e:
            if e.code in FATAL:
                self.disable(f'bespoke serve failed: {e}')
                raise Unavailable from None
            raise

    def candidates(self, problem):
        try:
            res = self._serve('candidates', problem, self.limit)
        except Unavailable:
            return []
        except ServeError as e:
            if e.code not in ('limit', 'no_candidates'):
                warn(f'no bespoke candidates for a {problem["operator"]["m"]}'
                     f'x{problem["operator"]["k"]} operator: {e}')
            return []
        return list(res.get('candidates', []))

    def drop(self, name, why):
        warn(f'bespoke candidate {name} dropped: {why}')

    def forced_candidate(self, ident):
        return self._forced.get(ident)

    def note_variants(self, ident, times):
        self._variants[ident] = dict(times)
        if self.trial is not None:
            self.trial['variants'].update(times)

    # The wrapped BaseBackend.kernel
    def kernel(self, orig, backend, name, *args, **kwargs):
        if name != 'mul':
            return orig(backend, name, *args, **kwargs)
        try:
            a, b, out, alpha, beta = mul_args(*args, **kwargs)
        except TypeError:
            return orig(backend, name, *args, **kwargs)
        if 'const' not in a.tags:
            return orig(backend, name, *args, **kwargs)

        prov = next((p for p in backend._providers
                     if isinstance(p, BespokeMulMixin)), None)
        if prov is None:
            return orig(backend, name, *args, **kwargs)

        try:
            problem = prov.problem(a, b, out, alpha, beta)
        except (ValueError, TypeError):
            # Not a problem bespoke can state (an integer dtype, say)
            return orig(backend, name, *args, **kwargs)
        ident = problem_ident(problem)
        if ident not in self.plans:
            self.plans[ident] = self._lookup(problem)
        plan = self.plans[ident]

        if plan is not None:
            kern = self._stored(orig, backend, prov, ident, plan, args,
                                kwargs)
            if kern is not None:
                self._report(ident, problem, plan['times'], plan['winner'],
                             'store')
                return kern
            self.plans[ident] = None

        return self._compete(orig, backend, prov, ident, problem, args,
                             kwargs)

    def _lookup(self, problem):
        try:
            res = self._serve('lookup', problem)
        except (Unavailable, ServeError):
            return None
        if not res.get('found'):
            return None
        winner, times = res.get('winner'), res.get('times') or {}
        if not isinstance(winner, str) or winner not in times:
            return None
        if winner.startswith('bespoke/') and 'candidate' not in res:
            return None
        return {'winner': winner, 'times': times,
                'candidate': res.get('candidate')}

    def _stored(self, orig, backend, prov, ident, plan, args, kwargs):
        """The stored winner, built alone and timed not at all; or None."""
        winner, times = plan['winner'], plan['times']
        if winner.startswith('bespoke/'):
            self._forced[ident] = {'candidate': plan['candidate'],
                                   'dt': times[winner]}
            provs = [prov]
        else:
            provs = [p for p in backend._providers
                     if provider_name(p) == winner and hasattr(p, 'mul')]
            if not provs:
                return None
            seq = [times[f'{winner}#{i}'] for i in range(len(times))
                   if f'{winner}#{i}' in times]
            if not seq:
                seq = [times[winner]]
            if winner == 'gimmik':
                self.gimmik_only = choose_index(seq, backend.autotune_ifac)
                seq = [seq[self.gimmik_only]]
            self.replay = {winner: list(seq)}

        saved = backend._providers
        backend._providers = provs
        try:
            return orig(backend, 'mul', *args, **kwargs)
        except KeyError:
            # The stored kernel failed here: PyFR's own providers decide
            return None
        finally:
            backend._providers = saved
            self._forced.pop(ident, None)
            self.replay, self.gimmik_only = {}, None

    def _compete(self, orig, backend, prov, ident, problem, args, kwargs):
        self.trial = trial = {'kerns': {}, 'times': {},
                              'seq': defaultdict(list), 'variants': {}}
        try:
            kern = orig(backend, 'mul', *args, **kwargs)
        finally:
            self.trial = None

        # A provider's cached kernel comes back untimed: the first
        # competition for this problem holds its times
        if ident in self.entries:
            return kern

        times = {}
        for pname, dt in trial['times'].items():
            if pname == 'bespoke':
                continue
            times[pname] = dt
            for i, t in enumerate(trial['seq'].get(pname, [])):
                times[f'{pname}#{i}'] = t
        times.update(trial['variants'] or self._variants.get(ident, {}))
        variant = getattr(kern, 'bespoke_variant', None)
        winner = (f'bespoke/{variant}' if variant else
                  trial['kerns'].get(id(kern)))
        times = {k: float(v) for k, v in times.items() if v == v and v > 0}
        if winner and winner in times and not self.disabled:
            try:
                self._serve('record', problem, winner, times)
            except Unavailable:
                pass
            except ServeError as e:
                warn(f'could not store the choice for a '
                     f'{problem["operator"]["m"]}x'
                     f'{problem["operator"]["k"]} operator: {e}')
        self._report(ident, problem, times, winner, 'timed')
        return kern

    # Tracing PyFR's providers (installed per provider instance)
    def wrap_provider(self, prov):
        pname = provider_name(prov)
        mul, bench = prov.mul, getattr(prov, '_benchmark', None)

        def traced_mul(*args, **kwargs):
            kern = mul(*args, **kwargs)
            if self.trial is not None:
                self.trial['times'][pname] = kern.dt
                self.trial['kerns'][id(kern)] = pname
            return kern

        def traced_benchmark(kfunc, *args, **kwargs):
            stored = self.replay.get(pname)
            if stored:
                return stored.pop(0)
            dt = bench(kfunc, *args, **kwargs)
            if self.trial is not None:
                self.trial['seq'][pname].append(dt)
            return dt

        prov.mul = traced_mul
        if bench is not None and pname != 'bespoke':
            prov._benchmark = traced_benchmark

    def gimmik_kernels(self, gen):
        """GiMMiK's kernel sequence, cut to the stored one when replaying."""
        only = self.gimmik_only
        if only is None:
            yield from gen
            return
        resp = None
        for i in range(only + 1):
            try:
                kernel = gen.send(resp)
            except StopIteration:
                return
            resp = None
            if i == only:
                yield kernel
                return

    # The report
    def _report(self, ident, problem, times, winner, source):
        if ident in self.entries:
            return
        self.rank = _mpi_rank()
        op = problem['operator']
        self.entries[ident] = {
            'm': op['m'], 'k': op['k'], 'n': problem['n'],
            'dtype': problem['dtype'], 'alpha': problem['alpha'],
            'beta': problem['beta'], 'ldb': problem['ldb'],
            'ldc': problem['ldc'],
            'times': {k: v for k, v in times.items() if '#' not in k},
            'winner': winner, 'from': source
        }

    def report(self):
        return {'provider': 'bespoke' if self.provider else 'off',
                'run': self.clock.summary(),
                'operators': list(self.entries.values())}

    def write_report(self):
        if not self.report_path:
            return
        path = self.report_path
        rank = self.rank
        if rank:
            path = f'{path}.rank{rank}'
        try:
            with open(path, 'w') as f:
                json.dump(self.report(), f, indent=1)
                f.write('\n')
        except OSError as e:
            warn(f'could not write the report {path}: {e.strerror or e}')


def _mpi_rank():
    # Only while MPI is up: after MPI_Finalize a call aborts the process
    mpi = sys.modules.get('mpi4py.MPI')
    try:
        if mpi and mpi.Is_initialized() and not mpi.Is_finalized():
            return mpi.COMM_WORLD.rank
    except Exception:                      # noqa: BLE001
        pass
    return 0
