#!/usr/bin/env python3
"""One line per problem of bespoke bench JSON reports: the run's roof, each
problem's best verified bespoke candidate (% of roof, median µs, min–max of
its launches) and the fastest baseline.

    scripts/bench-summary.py REPORT.json...
"""
import json
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
    for p in rep.get("problems", []):
        cands = [c for c in p.get("candidates", []) if c.get("verified") and not c.get("screened") and c.get("roof", 0) > 0]
        own = [c for c in cands if c.get("kind") == "bespoke"]
        base = [c for c in cands if c.get("kind") != "bespoke"]
        line = f"  {p['name']:14s}"
        if own:
            b = max(own, key=lambda c: c["roof"])
            t = b["timing"]
            line += f" {100 * b['roof']:5.1f} % {t['median_ns'] / 1e3:8.1f} us [{t['min_ns'] / 1e3:.1f}-{t['max_ns'] / 1e3:.1f}] {b['name']}"
        else:
            line += " none verified"
        if base:
            b = max(base, key=lambda c: c["roof"])
            line += f" | {b['name']} {100 * b['roof']:.1f}"
        print(line)
