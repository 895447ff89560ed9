#!/usr/bin/env python3
"""Ratios of bespoke to deal.II from scripts/dealii-paired.sh: usage dealii-ratio.py OUT."""
import collections
import glob
import json
import re
import statistics
import sys

out=sys.argv[1] if len(sys.argv) > 1 else '/tmp/dealii/paired2'
dl={}
for f in glob.glob(out+'/dealii_p*.jsonl'):
    ps=re.search(r'_p(\d+)\.jsonl',f).group(1)
    for line in open(f):
        if not line.startswith('{'): continue
        d=json.loads(line); dl[(ps,d['mesh'],d['op'],d['N'])]=d['evec_GDOFs']
bs={}; win={}
for f in glob.glob(out+'/bespoke_*_p*_n*.json'):
    m=re.search(r'bespoke_(\w+)_p(\d+)_n(\d+)\.json',f); mesh,ps,n=m.group(1),m.group(2),int(m.group(3))
    try: d=json.load(open(f))
    except Exception: continue
    for p in d['problems']:
        op=p['name'].split('/')[0]
        c=p['choice']
        if not c.get('median_ns'): continue
        nodes=p['units']*(n+1)**3
        bs[(ps,mesh,op,n)]=nodes/c['median_ns']
        win[(ps,mesh,op,n)]=c['winner']
rat=collections.defaultdict(list)
for k,v in bs.items():
    if k in dl: rat[(k[1],k[2],k[3])].append((v/dl[k], v, dl[k], win[k]))
print('| mesh | op | N | passes | bespoke ÷ deal.II (median) | bespoke GDOF/s | deal.II GDOF/s | bespoke layout |')
print('|---|---|---|---|---|---|---|---|')
for k in sorted(rat):
    r=rat[k]; med=statistics.median(x[0] for x in r)
    print(f"| {k[0]} | {k[1]} | {k[2]} | {len(r)} | {med:.2f} | {statistics.median(x[1] for x in r):.3f} | {statistics.median(x[2] for x in r):.3f} | {r[-1][3]} |")
