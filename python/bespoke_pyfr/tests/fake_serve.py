#!/usr/bin/env python3
"""A stand-in for `bespoke serve` that speaks protocol v1 (docs/serve.md).

It offers hand-written kernels for C <- alpha*A*B + beta*C:
  fake/data  reads alpha*A from a "data" buffer, n/ldb/ldc as scalars;
  fake/baked alpha*A, n, ldb, ldc baked into the source as literals.
Environment:
  FAKE_SERVE_STORE  a JSON file that holds the lookup/record store;
  FAKE_SERVE_BAD=1  also offer fake/wrong (ranked first) that computes a
                    wrong product, so that a client's check must drop it;
  FAKE_SERVE_LOG    a file to which each request's op is appended.
Usage: fake_serve.py serve
"""
import datetime
import hashlib
import json
import math
import os
import sys

OPS = ['hello', 'candidates', 'lookup', 'record']
PROBLEM = ['operator', 'dtype', 'alpha', 'beta', 'n', 'ldb', 'ldc',
           'align_b', 'align_c', 'backend', 'device']


class Refuse(Exception):
    def __init__(self, code, message, field=None):
        super().__init__(message)
        self.code, self.message, self.field = code, message, field


def dense(req):
    op = req.get('operator')
    if not isinstance(op, dict):
        raise Refuse('bad_request', 'operator missing', 'operator')
    m, k = op.get('m'), op.get('k')
    if not (isinstance(m, int) and isinstance(k, int) and m > 0 and k > 0):
        raise Refuse('bad_request', 'operator.m and .k must be positive',
                     'operator.m')
    if m > 65536 or k > 65536:
        raise Refuse('limit', 'operator rows/cols over 65536')
    if 'dense' in op:
        vals = op['dense']
        if not isinstance(vals, list) or len(vals) != m*k:
            raise Refuse('bad_request', f'operator.dense needs {m*k} values',
                         'operator.dense')
        a = [vals[i*k:(i + 1)*k] for i in range(m)]
    elif 'coo' in op:
        coo = op['coo']
        a = [[0.0]*k for _ in range(m)]
        for r, c, v in zip(coo['rows'], coo['cols'], coo['vals']):
            a[r][c] = v
    else:
        raise Refuse('bad_request', 'operator needs dense or coo',
                     'operator')
    if sum(1 for row in a for v in row if v != 0) > 100000:
        raise Refuse('limit', 'nnz over 100000')
    return a


def check_problem(req):
    for f in PROBLEM:
        if f not in req:
            raise Refuse('bad_request', f'{f} missing', f)
    if req['dtype'] not in ('f64', 'f32'):
        raise Refuse('bad_request', 'dtype must be f64 or f32', 'dtype')
    if req['backend'] not in ('cuda', 'opencl', 'c'):
        raise Refuse('bad_request', 'unknown backend', 'backend')
    for f in ('n', 'ldb', 'ldc'):
        if not isinstance(req[f], int) or req[f] <= 0:
            raise Refuse('bad_request', f'{f} must be a positive integer', f)
    if req['ldb'] < req['n'] or req['ldc'] < req['n']:
        raise Refuse('bad_request', 'ldb and ldc must be at least n', 'ldb')
    return dense(req)


def key_of(req):
    doc = {f: req[f] for f in PROBLEM}
    doc['client'] = req.get('client', 'serve')
    s = json.dumps(doc, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(s.encode()).hexdigest()[:32]


def lit(v, t):
    return repr(float(v)) + ('f' if t == 'float' else '')


def kernels(req, a):
    t = 'double' if req['dtype'] == 'f64' else 'float'
    m, k = len(a), len(a[0])
    n, ldb, ldc = req['n'], req['ldb'], req['ldc']
    alpha, beta = req['alpha'], req['beta']
    aa = [alpha*v for row in a for v in row]
    cuda = req['backend'] == 'cuda'
    if cuda:
        gbl, kern, gid = '', 'extern "C" __global__ void', \
            'blockIdx.x*blockDim.x + threadIdx.x'
        pre = ''
    else:
        gbl, kern, gid = '__global ', '__kernel void', 'get_global_id(0)'
        pre = ('#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n'
               if t == 'double' else '')
    upd = (f'c[i*ldc + j] = acc + {lit(beta, t)}*c[i*ldc + j];' if beta
           else 'c[i*ldc + j] = acc;')

    def cand(name, entry, src, params, rank, bad=False):
        block = [64, 1, 1]
        return {
            'name': name, 'family': 'fake', 'entry': entry,
            'language': 'cuda' if cuda else 'opencl', 'source': src,
            'params': params,
            'launch': {'grid': [-(-n // 64), 1, 1], 'block': block,
                       'dynamic_shared_bytes': 0, 'static_shared_bytes': 0,
                       'attributes': {}},
            'predicted_s': 1e-5*(rank + 1), 'rank': rank
        }

    bc = [{'name': 'b', 'kind': 'buffer', 'type': req['dtype'],
           'const': True, 'role': 'b'},
          {'name': 'c', 'kind': 'buffer', 'type': req['dtype'],
           'const': False, 'role': 'c'}]
    out = []

    if os.environ.get('FAKE_SERVE_BAD') == '1':
        src = (f'{pre}{kern} fake_wrong({gbl}const {t}* b, {gbl}{t}* c)\n'
               f'{{\n  int j = {gid};\n  if (j >= {n}) return;\n'
               f'  for (int i = 0; i < {m}; i++) c[i*{ldc} + j] = 1;\n}}\n')
        out.append(cand('fake/wrong', 'fake_wrong', src, bc, 0))

    src = (f'{pre}{kern} fake_data({gbl}const {t}* b, {gbl}{t}* c, '
           f'{gbl}const {t}* aa, int n, int ldb, int ldc)\n{{\n'
           f'  int j = {gid};\n  if (j >= n) return;\n'
           f'  for (int i = 0; i < {m}; i++) {{\n    {t} acc = 0;\n'
           f'    for (int l = 0; l < {k}; l++) acc += aa[i*{k} + l]*b[l*ldb + j];\n'
           f'    {upd}\n  }}\n}}\n')
    params = bc + [
        {'name': 'aa', 'kind': 'buffer', 'type': req['dtype'], 'const': True,
         'role': 'data', 'values': aa},
        {'name': 'n', 'kind': 'scalar', 'type': 'int32', 'role': 'n',
         'value': n},
        {'name': 'ldb', 'kind': 'scalar', 'type': 'int32', 'role': 'ldb',
         'value': ldb},
        {'name': 'ldc', 'kind': 'scalar', 'type': 'int32', 'role': 'ldc',
         'value': ldc}]
    out.append(cand('fake/data', 'fake_data', src, params, len(out)))

    body = []
    for i in range(m):
        terms = [f'{lit(alpha*a[i][l], t)}*b[{l*ldb} + j]'
                 for l in range(k) if a[i][l] != 0]
        acc = ' + '.join(terms) or '0'
        if beta:
            body.append(f'  c[{i*ldc} + j] = {acc} + '
                        f'{lit(beta, t)}*c[{i*ldc} + j];')
        else:
            body.append(f'  c[{i*ldc} + j] = {acc};')
    src = (f'{pre}{kern} fake_baked({gbl}const {t}* b, {gbl}{t}* c)\n{{\n'
           f'  int j = {gid};\n  if (j >= {n}) return;\n' +
           '\n'.join(body) + '\n}\n')
    out.append(cand('fake/baked', 'fake_baked', src, bc, len(out)))
    return out


def load_store():
    path = os.environ.get('FAKE_SERVE_STORE')
    if path and os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def save_store(store):
    path = os.environ.get('FAKE_SERVE_STORE')
    if path:
        with open(path + '.tmp', 'w') as f:
            json.dump(store, f)
        os.replace(path + '.tmp', path)


def handle(req, store):
    if req.get('v') != 1:
        raise Refuse('unsupported_version', f'v {req.get("v")!r}, want 1',
                     'v')
    op = req.get('op')
    if op not in OPS:
        raise Refuse('unknown_op', f'unknown op {op!r}', 'op')
    if op == 'hello':
        return {'protocol': 1, 'bespoke': 'fake', 'ops': OPS,
                'dtypes': ['f64', 'f32'], 'backends': ['cuda', 'opencl']}

    a = check_problem(req)
    key = key_of(req)
    cands = kernels(req, a)
    if op == 'candidates':
        limit = req.get('limit', 8)
        sel = cands if limit == 0 else cands[:limit]
        if not req.get('source', True):
            sel = [dict(c, source='') for c in sel]
        return {'key': key, 'offered': len(cands), 'returned': len(sel),
                'candidates': sel}
    if op == 'lookup':
        ent = store.get(key)
        if ent is None:
            return {'found': False, 'key': key}
        res = {'found': True, 'key': key, **ent}
        if ent['winner'].startswith('bespoke/'):
            byname = {f'bespoke/{c["name"]}': c for c in cands}
            if ent['winner'] not in byname:
                del store[key]
                save_store(store)
                return {'found': False, 'key': key}
            res['candidate'] = byname[ent['winner']]
        return res

    # record
    winner, times = req.get('winner'), req.get('times')
    if not isinstance(winner, str) or not winner or \
            any(ord(ch) < 32 for ch in winner):
        raise Refuse('bad_request', 'winner must be a name', 'winner')
    if not isinstance(times, dict) or not all(
            isinstance(v, (int, float)) and math.isfinite(v) and v > 0
            for v in times.values()):
        raise Refuse('bad_request', 'times must be finite and positive',
                     'times')
    if winner not in times:
        raise Refuse('bad_request', 'the winner has no time', 'times')
    if winner.startswith('bespoke/') and winner[8:] not in \
            {c['name'] for c in cands}:
        raise Refuse('bad_request', 'winner is not a current candidate',
                     'winner')
    store[key] = {'winner': winner, 'times': times,
                  'date': datetime.datetime.now(datetime.timezone.utc)
                  .strftime('%Y-%m-%dT%H:%M:%SZ')}
    save_store(store)
    return {'stored': True, 'key': key}


def main():
    if sys.argv[1:] != ['serve']:
        print('usage: fake_serve.py serve', file=sys.stderr)
        return 2
    store = load_store()
    log = os.environ.get('FAKE_SERVE_LOG')
    for line in sys.stdin:
        rid = None
        try:
            try:
                req = json.loads(line)
            except ValueError:
                raise Refuse('bad_json', 'the line is not JSON') from None
            if not isinstance(req, dict):
                raise Refuse('bad_json', 'the line is not a JSON object')
            rid = req.get('id')
            if log:
                with open(log, 'a') as f:
                    f.write(f'{req.get("op")}\n')
            ans = {'v': 1, 'id': rid, 'ok': True,
                   'result': handle(req, store)}
        except Refuse as e:
            err = {'code': e.code, 'message': e.message}
            if e.field:
                err['field'] = e.field
            ans = {'v': 1, 'id': rid, 'ok': False, 'error': err}
        sys.stdout.write(json.dumps(ans) + '\n')
        sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())
