#!/usr/bin/env python3
"""One line per problem of bespoke bench JSON reports: the run's roof, each
problem's best verified bespoke candidate (% of roof, median µs, min–max of
its launches, candidates readmitted after pruning) and the fastest baseline;
then the geomean of the best bespoke shares, overall and per element type
(the second part of a p/elem/op name), the problems below 80 % and those
where a baseline was faster.

    scripts/bench-summary.py REPORT.json...
"""
import json
import math
import sys

for path in sys.argv[1:]:
    try:
        rep = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"{path}: {e}")
        continue
    samples = rep.get("roof_samples_gbs") or []
    spread = f" ({min(samples):.0f}-{max(samples):.0f})" if samples else ""
    print(f"{path}: roof {rep.get('roof_gbs', 0):.0f} GB/s{spread}, {rep.get('dtype')}")
    best, slow, beaten = {}, [], []
    for p in rep.get("problems", []):
        cands = [c for c in p.get("candidates", []) if c.get("verified") and not c.get("screened") and c.get("roof", 0) > 0]
        own = [c for c in cands if c.get("kind") == "bespoke"]
        base = [c for c in cands if c.get("kind") != "bespoke"]
        line = f"  {p['name']:14s}"
        if own:
            b = max(own, key=lambda c: c["roof"])
            t = b["timing"]
            line += f" {100 * b['roof']:5.1f} % {t['median_ns'] / 1e3:8.1f} us [{t['min_ns'] / 1e3:.1f}-{t['max_ns'] / 1e3:.1f}] {b['name']}"
            best[p["name"]] = b["roof"]
            if b["roof"] < 0.8:
                slow.append(f"{p['name']} {100 * b['roof']:.1f}")
        else:
            line += " none verified"
        readmitted = sum(1 for c in p.get("candidates", []) if c.get("readmitted"))
        if readmitted:
            line += f" ({readmitted} readmitted)"
        if base:
            b = max(base, key=lambda c: c["roof"])
            line += f" | {b['name']} {100 * b['roof']:.1f}"
            if own and b["roof"] > max(c["roof"] for c in own):
                beaten.append(f"{p['name']} ({b['name']} {100 * b['roof']:.1f})")
        print(line)
    if best:
        geo = lambda xs: 100 * math.exp(sum(math.log(x) for x in xs) / len(xs))
        kinds = {}
        for name, r in best.items():
            parts = name.split("/")
            if len(parts) == 3:
                kinds.setdefault(parts[1], []).append(r)
        per = ", ".join(f"{k} {geo(v):.1f}" for k, v in sorted(kinds.items()))
        print(f"  geomean {geo(best.values()):.1f} % over {len(best)}" + (f" ({per})" if per else ""))
        print(f"  below 80 %: {', '.join(slow) or 'none'}")
        print(f"  a baseline faster: {', '.join(beaten) or 'none'}")
