#!/usr/bin/env python3
"""Side-by-side of a sweep report (`bench spmm --sweep`): per case, the fastest variant of
the space without row-warp unroll 8 (`row-warp...u8`), the fastest such variant, the product's pick and
cuSPARSE, all from the same run; geomeans and counts below 1.0; then each row-warp `.u8` variant
against its unroll-4 twin (same other knobs), per case and over all.
Usage: compare.py REPORT.json[.gz]"""
import gzip, json, math, sys

def load(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        return json.load(f)

def new_point(k):
    """A point this change added: row-warp with unroll 8 (col-tile's own `.u8` is older)."""
    return k.startswith("row-warp") and ".u8" in k

def geo(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

rows = load(sys.argv[1])["rows"]
out, s_old, s_new, s_ours, twins = [], [], [], [], []
for r in rows:
    vs = [v for v in (r.get("variants") or []) if v.get("correct") and v.get("median_us")]
    cu = r.get("cusparse_us")
    if not vs or not cu:
        continue
    old = min((v for v in vs if not new_point(v["variant"])), key=lambda v: v["median_us"], default=None)
    new = min((v for v in vs if new_point(v["variant"])), key=lambda v: v["median_us"], default=None)
    if not old or not new:
        continue
    t = {v["variant"]: v["median_us"] for v in vs}
    tw = [t[k.replace(".u8", ".u4")] / u for k, u in t.items() if new_point(k) and k.replace(".u8", ".u4") in t]
    twins.append((r["matrix"], r["n"], tw))
    best = min(old["median_us"], new["median_us"])
    s_old.append(cu / old["median_us"]); s_new.append(cu / best)
    if r.get("ours_us"):
        s_ours.append(cu / r["ours_us"])
    out.append((r["matrix"], r["n"], cu, old["median_us"], new["median_us"], new["variant"], r.get("ours_variant", "")))
print("| matrix | n | cuSPARSE us | best without .u8 us | best .u8 us | rest / .u8 | best .u8 variant | product's pick |")
print("|---|---:|---:|---:|---:|---:|---|---|")
for m, n, cu, o, w, wv, ov in out:
    print(f"| {m} | {n} | {cu:.1f} | {o:.1f} ({cu / o:.2f}x) | {w:.1f} ({cu / w:.2f}x) | {o / w:.2f} | {wv} | {ov} |")
print()
print(f"cases {len(out)}; over cuSPARSE, geomean: best of the space without .u8 {geo(s_old):.3f}x, "
      f"with .u8 {geo(s_new):.3f}x, the product's search {geo(s_ours):.3f}x; below 1.0: "
      f"{sum(x < 1 for x in s_old)} without, {sum(x < 1 for x in s_new)} with, "
      f"{sum(x < 1 for x in s_ours)} for the search; .u8 fastest in "
      f"{sum(1 for _, _, _, o, w, _, _ in out if w < o)} cases")
print()
print("| matrix | n | twins | unroll-4 time / unroll-8 time, geomean | max | unroll 8 faster |")
print("|---|---:|---:|---:|---:|---:|")
every = []
for m, n, tw in twins:
    every += tw
    if tw:
        print(f"| {m} | {n} | {len(tw)} | {geo(tw):.2f} | {max(tw):.2f} | {sum(x > 1 for x in tw)} |")
print()
print(f"twins {len(every)}: unroll-4 time / unroll-8 time geomean {geo(every):.2f}, unroll 8 faster in "
      f"{sum(x > 1 for x in every)}")
