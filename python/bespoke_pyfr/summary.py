"""python3 -m bespoke_pyfr.summary OUTDIR: the tables of a pyfr-check run.

Reads OUTDIR/CASE/{stock,stock2,cold,warm}/report.json (as
scripts/pyfr-check.sh leaves them) and writes, as Markdown on stdout and as
OUTDIR/summary.json: per case the set-up of each run and the time per step
of stock PyFR and of PyFR with bespoke; per operator every provider's time
in PyFR's own autotuning (the cold run), the winner, and whether bespoke's
best kernel was chosen or within 2 % of the winner.
"""
import json
import math
import os
import sys

RUNS = ('stock', 'stock2', 'cold', 'warm')


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def bespoke_best(times):
    ts = [t for k, t in times.items() if k.startswith('bespoke') and t > 0]
    return min(ts) if ts else None


def case_rows(outdir):
    cases = []
    for name in sorted(os.listdir(outdir)):
        d = os.path.join(outdir, name)
        if not os.path.isdir(d):
            continue
        reps = {r: load(os.path.join(d, r, 'report.json')) for r in RUNS}
        if not any(reps.values()):
            continue
        res = ''
        try:
            with open(os.path.join(d, 'result.txt')) as f:
                res = f.read().split()
        except OSError:
            res = []
        c = {'case': name, 'precision': res[1] if len(res) > 1 else '',
             'result': res[2] if len(res) > 2 else '', 'runs': {}}
        for r, rep in reps.items():
            if rep:
                c['runs'][r] = rep.get('run', {})
        ops = []
        for o in (reps['cold'] or {}).get('operators', []):
            times = o.get('times', {})
            best = bespoke_best(times)
            win = o.get('winner', '')
            wt = times.get(win) or min((t for t in times.values() if t > 0), default=None)
            ok = win.startswith('bespoke') or (best is not None and wt and best <= 1.02 * wt)
            ops.append({**{k: o.get(k) for k in ('m', 'k', 'n', 'dtype', 'beta', 'winner')},
                        'times': times, 'bespoke_s': best, 'bespoke_ok': bool(ok)})
        c['operators'] = ops
        cases.append(c)
    return cases


def fmt(x, scale=1.0, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return '–'
    return f'{x * scale:.{digits}g}'


def markdown(cases):
    out = ['| case | prec | check | set-up stock | stock (warm cache) | bespoke cold | bespoke warm | '
           'warm ÷ stock | step stock (ms) | step bespoke (ms) | speed-up |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
    for c in cases:
        r = c['runs']
        s = lambda k, f: r.get(k, {}).get(f)                                      # noqa: E731
        base = s('stock2', 'setup_s') or s('stock', 'setup_s')
        warm = s('warm', 'setup_s')
        st, bt = s('stock', 'step_s'), s('warm', 'step_s') or s('cold', 'step_s')
        out.append(f"| {c['case']} | {c['precision']} | {c['result']} | {fmt(s('stock', 'setup_s'))} s | "
                   f"{fmt(s('stock2', 'setup_s'))} s | {fmt(s('cold', 'setup_s'))} s | {fmt(warm)} s | "
                   f"{fmt(warm / base if warm and base else None, 100, 3)} % | {fmt(st, 1e3)} | {fmt(bt, 1e3)} | "
                   f"{fmt(st / bt if st and bt else None)}× |")
    out.append('')
    for c in cases:
        if not c['operators']:
            continue
        provs = sorted({k for o in c['operators'] for k in o['times'] if not k.startswith('bespoke')})
        out.append(f"**{c['case']}** — PyFR's own timing of each provider (µs), cold run")
        out.append('')
        out.append('| m×k | n | β | ' + ' | '.join(provs) + ' | bespoke (best) | winner | bespoke chosen or ≤ 2 % |')
        out.append('|---|---|---|' + '---|' * len(provs) + '---|---|---|')
        for o in c['operators']:
            cells = [fmt(o['times'].get(p), 1e6) for p in provs]
            out.append(f"| {o['m']}×{o['k']} | {o['n']} | {o['beta']} | " + ' | '.join(cells) +
                       f" | {fmt(o['bespoke_s'], 1e6)} | {o['winner']} | {'yes' if o['bespoke_ok'] else 'no'} |")
        out.append('')
    n = sum(len(c['operators']) for c in cases)
    ok = sum(o['bespoke_ok'] for c in cases for o in c['operators'])
    if n:
        out.append(f'bespoke chosen or within 2 % of the winner: {ok} of {n} operators ({100 * ok / n:.0f} %).')
    return '\n'.join(out)


def main(argv):
    if len(argv) != 2:
        print('usage: python3 -m bespoke_pyfr.summary OUTDIR', file=sys.stderr)
        return 2
    cases = case_rows(argv[1])
    with open(os.path.join(argv[1], 'summary.json'), 'w') as f:
        json.dump({'cases': cases}, f, indent=1)
    print(markdown(cases))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
