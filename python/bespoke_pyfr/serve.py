"""A client for `bespoke serve` (protocol v1, docs/serve.md).

One child process per client, started on first use, speaking one JSON
object per line over its stdin/stdout.  Standard library only.
"""
import json
import os
import shutil
import subprocess
import threading

PROTOCOL = 1


class ServeError(Exception):
    """An error answer from the server, or a broken conversation.

    code is the protocol's error code ('bad_request', 'limit', ...) or, for
    failures on this side, 'missing' (no binary), 'exited' (the child died
    or closed its stdout) or 'protocol' (an answer that is not protocol)."""

    def __init__(self, code, message, field=None):
        super().__init__(f'{code}: {message}' +
                         (f' (field {field})' if field else ''))
        self.code, self.message, self.field = code, message, field


def find_binary(env=None):
    """The bespoke binary: $BESPOKE, else `bespoke` on PATH, else None."""
    env = os.environ if env is None else env
    path = env.get('BESPOKE')
    if path:
        return path if os.access(path, os.X_OK) else None
    return shutil.which('bespoke', path=env.get('PATH'))


def _jsonable(v):
    # numpy scalars and arrays, as plain JSON numbers and lists
    if hasattr(v, 'tolist'):
        return v.tolist()
    raise TypeError(f'{type(v).__name__} is not JSON')


class ServeClient:
    """Requests to one `bespoke serve` child, in order, one at a time."""

    def __init__(self, binary=None, args=('serve',), timeout=None):
        self.binary = binary or find_binary()
        self.args = list(args)
        self.timeout = timeout
        self._proc = None
        self._next_id = 1
        self._lock = threading.Lock()

    def _start(self):
        if self.binary is None:
            raise ServeError('missing', 'no bespoke binary: set BESPOKE or '
                             'put bespoke on PATH')
        try:
            self._proc = subprocess.Popen(
                [self.binary, *self.args], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=None, text=True,
                encoding='utf-8', bufsize=1
            )
        except OSError as e:
            raise ServeError('missing', f'cannot start {self.binary}: '
                             f'{e.strerror or e}') from None

    def request(self, op, **fields):
        """Send one request; return its result or raise ServeError."""
        with self._lock:
            if self._proc is None:
                self._start()
            rid = self._next_id
            req = {'v': PROTOCOL, 'id': rid, 'op': op, **fields}
            try:
                line = json.dumps(req, separators=(',', ':'),
                                  allow_nan=False, default=_jsonable)
            except (TypeError, ValueError) as e:
                raise ServeError('bad_request', f'cannot encode: {e}')
            self._next_id += 1
            try:
                self._proc.stdin.write(line + '\n')
                self._proc.stdin.flush()
                ans = self._proc.stdout.readline()
            except (BrokenPipeError, OSError) as e:
                self._dead()
                raise ServeError('exited', f'bespoke serve went away: {e}')

            if not ans:
                self._dead()
                raise ServeError('exited', 'bespoke serve closed its output')

        return self._decode(ans, rid)

    @staticmethod
    def _decode(ans, rid):
        try:
            doc = json.loads(ans)
        except ValueError:
            raise ServeError('protocol', 'answer is not JSON: '
                             f'{ans[:80]!r}') from None
        if not isinstance(doc, dict) or doc.get('v') != PROTOCOL:
            raise ServeError('protocol', 'answer without "v": 1')
        if doc.get('id') != rid:
            raise ServeError('protocol', f'answer id {doc.get("id")!r}, '
                             f'expected {rid}')
        if doc.get('ok') is True:
            res = doc.get('result')
            if not isinstance(res, dict):
                raise ServeError('protocol', 'ok answer without a result')
            return res
        err = doc.get('error')
        if doc.get('ok') is not False or not isinstance(err, dict):
            raise ServeError('protocol', 'answer neither ok nor an error')
        raise ServeError(str(err.get('code', 'internal')),
                         str(err.get('message', '')), err.get('field'))

    def _dead(self):
        proc, self._proc = self._proc, None
        if proc:
            try:
                proc.kill()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass

    # The protocol's operations
    def hello(self):
        return self.request('hello')

    def candidates(self, problem, limit=None, source=True):
        extra = {} if limit is None else {'limit': int(limit)}
        return self.request('candidates', **problem, **extra, source=source)

    def lookup(self, problem):
        return self.request('lookup', **problem)

    def record(self, problem, winner, times):
        return self.request('record', **problem, winner=winner,
                            times=dict(times))

    def close(self):
        """EOF on the server's stdin; it exits 0."""
        proc, self._proc = self._proc, None
        if proc:
            try:
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
            finally:
                if proc.stdout:
                    proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
