#!/usr/bin/env python3
"""Side-by-side of a sweep report (`bench spmm --sweep`): per case, the fastest variant of
the space without row-part, the fastest row-part variant, the product's pick and cuSPARSE,
all from the same run; geomeans and counts below 1.0; then each row-part variant against its
nnz-split twin (same knobs) and unroll 4 against unroll 1 (same other knobs) per family.
Usage: compare.py REPORT.json[.gz]"""
import gzip, json, math, sys

def load(p):
    with (gzip.open(p, "rt") if p.endswith(".gz") else open(p)) as f:
        return json.load(f)

def geo(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

rows = load(sys.argv[1])["rows"]
out, s_old, s_new, s_ours, twins = [], [], [], [], []
unroll = {"row-warp": [], "nnz-split": [], "row-part": []}
for r in rows:
    vs = [v for v in (r.get("variants") or []) if v.get("correct") and v.get("median_us")]
    cu = r.get("cusparse_us")
    if not vs or not cu:
        continue
    old = min((v for v in vs if not v["variant"].startswith("row-part")), key=lambda v: v["median_us"], default=None)
    new = min((v for v in vs if v["variant"].startswith("row-part")), key=lambda v: v["median_us"], default=None)
    if not old or not new:
        continue
    t = {v["variant"]: v["median_us"] for v in vs}
    tw = [t["nnz-split" + k[len("row-part"):]] / u for k, u in t.items()
          if k.startswith("row-part") and "nnz-split" + k[len("row-part"):] in t]
    twins.append((r["matrix"], r["n"], tw))
    for k, u in t.items():
        fam = k.split(".")[0]
        if fam in unroll and ".u4" in k and k.replace(".u4", ".u1") in t:
            unroll[fam].append(t[k.replace(".u4", ".u1")] / u)
    best = min(old["median_us"], new["median_us"])
    s_old.append(cu / old["median_us"]); s_new.append(cu / best)
    if r.get("ours_us"):
        s_ours.append(cu / r["ours_us"])
    out.append((r["matrix"], r["n"], cu, old["median_us"], new["median_us"], new["variant"], r.get("ours_variant", "")))
print("| matrix | n | cuSPARSE us | best without row-part us | best row-part us | row-part / rest | best row-part variant | product's pick |")
print("|---|---:|---:|---:|---:|---:|---|---|")
for m, n, cu, o, w, wv, ov in out:
    print(f"| {m} | {n} | {cu:.1f} | {o:.1f} ({cu / o:.2f}x) | {w:.1f} ({cu / w:.2f}x) | {o / w:.2f} | {wv} | {ov} |")
print()
print(f"cases {len(out)}; over cuSPARSE, geomean: best of the space without row-part {geo(s_old):.3f}x, "
      f"with row-part {geo(s_new):.3f}x, the product's search {geo(s_ours):.3f}x; below 1.0: "
      f"{sum(x < 1 for x in s_old)} without, {sum(x < 1 for x in s_new)} with, "
      f"{sum(x < 1 for x in s_ours)} for the search; row-part fastest in "
      f"{sum(1 for _, _, _, o, w, _, _ in out if w < o)} cases")
print()
print("| matrix | n | twins | nnz-split time / row-part time, geomean | max | row-part faster |")
print("|---|---:|---:|---:|---:|---:|")
every = []
for m, n, tw in twins:
    every += tw
    print(f"| {m} | {n} | {len(tw)} | {geo(tw):.2f} | {max(tw):.2f} | {sum(x > 1 for x in tw)} |")
print()
print(f"twins {len(every)}: nnz-split time / row-part time geomean {geo(every):.2f}, row-part faster in "
      f"{sum(x > 1 for x in every)}")
for fam, xs in unroll.items():
    if xs:
        print(f"{fam}: unroll 1 time / unroll 4 time over {len(xs)} pairs, geomean {geo(xs):.2f} "
              f"(min {min(xs):.2f}, max {max(xs):.2f})")
