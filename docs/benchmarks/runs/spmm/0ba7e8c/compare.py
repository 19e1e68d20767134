#!/usr/bin/env python3
"""Side-by-side of a sweep report (`bench spmm --sweep`): per case, the fastest variant of
the space without split rows (`row-warp...s2/s4/s8`), the fastest split variant, the
product's pick and cuSPARSE, all from the same run; geomeans and counts below 1.0; then each
split variant against its unsplit twin (same other knobs), per case and over all.
With `--left-out` (run 61, on a sweep of the first split build: splits 2, 4 and 8 with unroll
4 and 8) the two sides are the space as shipped at `0ba7e8c` (of the split points, split 4
with unroll 8 only) and the points it leaves out (splits 2 and 8, and unroll 4).
Usage: compare.py [--left-out] REPORT.json[.gz]"""
import gzip, json, math, re, sys

SPLIT = re.compile(r"\.s[248](?=\.)")

def load(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        return json.load(f)

LEFT_OUT = "--left-out" in sys.argv[1:]
REPORT = [a for a in sys.argv[1:] if a != "--left-out"][0]

def new_point(k):
    """A point this change added: row-warp with its rows split over 2, 4 or 8 groups (with
    `--left-out`: a split point other than split 4 with unroll 8)."""
    if not (k.startswith("row-warp") and SPLIT.search(k)):
        return False
    return not LEFT_OUT or ".s4." not in k or ".u8" not in k

def geo(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

rows = load(REPORT)["rows"]
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
    tw = [(k, t[SPLIT.sub("", k)] / u) for k, u in t.items() if new_point(k) and SPLIT.sub("", k) in t]
    twins.append((r["matrix"], r["n"], tw))
    best = min(old["median_us"], new["median_us"])
    s_old.append(cu / old["median_us"]); s_new.append(cu / best)
    if r.get("ours_us"):
        s_ours.append(cu / r["ours_us"])
    out.append((r["matrix"], r["n"], cu, old["median_us"], new["median_us"], new["variant"], r.get("ours_variant", "")))
if LEFT_OUT:
    print("| matrix | n | cuSPARSE us | best of the shipped space us | best left-out point us | shipped / left-out | best left-out variant | product's pick |")
else:
    print("| matrix | n | cuSPARSE us | best without split us | best split us | rest / split | best split variant | product's pick |")
print("|---|---:|---:|---:|---:|---:|---|---|")
for m, n, cu, o, w, wv, ov in out:
    print(f"| {m} | {n} | {cu:.1f} | {o:.1f} ({cu / o:.2f}x) | {w:.1f} ({cu / w:.2f}x) | {o / w:.2f} | {wv} | {ov} |")
print()
print(f"cases {len(out)}; over cuSPARSE, geomean: best of the {'shipped space' if LEFT_OUT else 'space without split'} {geo(s_old):.3f}x, "
      f"with {'the left-out points' if LEFT_OUT else 'split'} {geo(s_new):.3f}x, the product's search {geo(s_ours):.3f}x; below 1.0: "
      f"{sum(x < 1 for x in s_old)} without, {sum(x < 1 for x in s_new)} with, "
      f"{sum(x < 1 for x in s_ours)} for the search; {'a left-out point' if LEFT_OUT else 'split'} fastest in "
      f"{sum(1 for _, _, _, o, w, _, _ in out if w < o)} cases")
print()
print("| matrix | n | twins | unsplit time / split time, geomean | max (variant) | split faster |")
print("|---|---:|---:|---:|---|---:|")
every = []
for m, n, tw in twins:
    every += [x for _, x in tw]
    if tw:
        k, x = max(tw, key=lambda p: p[1])
        print(f"| {m} | {n} | {len(tw)} | {geo([x for _, x in tw]):.2f} | {x:.2f} ({k}) | {sum(x > 1 for _, x in tw)} |")
print()
print(f"twins {len(every)}: unsplit time / split time geomean {geo(every):.2f}, split faster in "
      f"{sum(x > 1 for x in every)}")
for s in (2, 4, 8):
    xs = [x for _, _, tw in twins for k, x in tw if f".s{s}." in k]
    print(f"split {s}: {len(xs)} twins, geomean {geo(xs):.2f}, faster in {sum(x > 1 for x in xs)}")
print()
print("| knob value | split twins | unsplit / split geomean | split faster | split variant fastest of the space |")
print("|---|---:|---:|---:|---:|")
fastest = [wv for _, _, _, o, w, wv, _ in out if w < o]
for pat in (".s2.", ".s4.", ".s8.", ".u4", ".u8", ".g4.", ".g8.", ".g16.", ".g32.", ".v1.", ".v2.", ".v4.", ".c1.", ".c2.", ".c4.", "b128", "b256", "b512"):
    xs = [x for _, _, tw in twins for k, x in tw if pat in k]
    if xs:
        print(f"| `{pat}` | {len(xs)} | {geo(xs):.2f} | {sum(x > 1 for x in xs)} | {sum(pat in v for v in fastest)} |")
