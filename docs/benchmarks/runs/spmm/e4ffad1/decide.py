#!/usr/bin/env python3
"""Picks the build to keep from run 66's A/B/C: the geomean of ours / cuSPARSE speedups over
the cases every build finished; a candidate build wins only with every float64 check process
passing (a 'passed' line, no failure) and a geomean at least 1.02x the base's.
usage: decide.py OUTDIR base cand1 cand2 ...  -> prints the winner (or the base) and a table."""
import glob, gzip, json, math, os, sys
W, base, cands = sys.argv[1], sys.argv[2], sys.argv[3:]
stem = {'b70': 'colmajor-base', 'b71': 'colmajor-tpdl'}
def rows(b):
    f = glob.glob(f"{W}/spmm/spmm-real-{stem[b]}-*.json*")
    if not f: return {}
    d = json.load(gzip.open(f[0]) if f[0].endswith('.gz') else open(f[0]))
    return {(r['matrix'], r['n']): r for r in d['rows'] if r.get('speedup')}
R = {b: rows(b) for b in [base] + cands}
common = set.intersection(*[set(r) for r in R.values()]) if all(R.values()) else set()
def checks_ok(b):
    import re
    logs = glob.glob(f"{W}/{b}-check*.log")
    if not logs: return False
    for l in logs:
        t = open(l).read()
        if 'wrong result' in t or 'Error:' in t: return False
        m = re.findall(r"(\d+) / (\d+) passed in", t)
        if not m or any(a != c for a, c in m): return False
    return True
g = lambda b: math.exp(sum(math.log(R[b][k]['speedup']) for k in common) / len(common)) if common else 0
print(f"common cases: {len(common)}", file=sys.stderr)
for b in [base] + cands:
    print(f"{b}: geomean {g(b):.3f}, below 1.0 {sum(R[b][k]['speedup'] < 1 for k in common)}, float64 ok {checks_ok(b) if b != base else '-'}", file=sys.stderr)
best = base
for b in cands:
    if checks_ok(b) and len(common) >= 10 and g(b) >= 1.02 * g(base) and g(b) > g(best):
        best = b
print(best)
