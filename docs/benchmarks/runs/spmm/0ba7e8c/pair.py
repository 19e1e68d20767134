#!/usr/bin/env python3
"""Two benchmark reports of one machine (`bench spmm`, the same cases) side by side: per
case cuSPARSE time / ours in each, the ratio of our times (before / after) and of cuSPARSE's
times (its run-to-run spread), geomeans per width and counts below 1.0; the cases that moved
by more than 10% are listed. Usage: pair.py BEFORE.json[.gz] AFTER.json[.gz]"""
import gzip, json, math, sys
from collections import defaultdict

def load(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        return {(r["matrix"], r["n"]): r for r in json.load(f)["rows"] if r.get("ours_us") and r.get("cusparse_us")}

def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

a, b = load(sys.argv[1]), load(sys.argv[2])
keys = sorted(set(a) & set(b))
sa = [a[k]["cusparse_us"] / a[k]["ours_us"] for k in keys]
sb = [b[k]["cusparse_us"] / b[k]["ours_us"] for k in keys]
ours = [a[k]["ours_us"] / b[k]["ours_us"] for k in keys]
cus = [a[k]["cusparse_us"] / b[k]["cusparse_us"] for k in keys]
print(f"cases {len(keys)}: over cuSPARSE before {geo(sa):.3f}x, after {geo(sb):.3f}x; below 1.0 before "
      f"{sum(x < 1 for x in sa)}, after {sum(x < 1 for x in sb)}; our time before / after geomean "
      f"{geo(ours):.3f} (faster in {sum(x > 1 for x in ours)}, slower in {sum(x < 1 for x in ours)}); "
      f"cuSPARSE time before / after geomean {geo(cus):.3f}")
print()
print("| n | cases | before | after | our time before / after |")
print("|---:|---:|---:|---:|---:|")
byn = defaultdict(list)
for k, x, y, o in zip(keys, sa, sb, ours):
    byn[k[1]].append((x, y, o))
for n in sorted(byn):
    v = byn[n]
    print(f"| {n} | {len(v)} | {geo([x for x, _, _ in v]):.3f}x | {geo([y for _, y, _ in v]):.3f}x | {geo([o for _, _, o in v]):.3f} |")
print()
print("| matrix | n | before | after | our time before / after | pick before | pick after |")
print("|---|---:|---:|---:|---:|---|---|")
for k, x, y, o in zip(keys, sa, sb, ours):
    if o > 1.1 or o < 1 / 1.1:
        print(f"| {k[0]} | {k[1]} | {x:.2f}x | {y:.2f}x | {o:.2f} | {a[k].get('ours_variant', '')} | {b[k].get('ours_variant', '')} |")
