#!/usr/bin/env python3
"""Where the no-GPU SpMV pick misses: each leave-one-class-out record by how many of the
policy space's variants are within 0.9 of its best (few: a sharp optimum), with the shipped
pick's (forest-knob16) fraction and the best of its first 16, from committed files only.
Usage (repository root): python3 docs/policy/sharp-optima.py > docs/policy/sharp-optima.md"""
import collections, gzip, json, math

recs = json.load(gzip.open("policies/spmv-records.json.gz", "rt"))
loco = json.load(open("docs/policy/spmv-forest-loco.json"))
names = recs["variants"]
near, tops = {}, {}
for r in recs["records"]:
    m = sorted(r["measured"], key=lambda x: -x[1])
    best = m[0][1]
    near[(r["name"], r["value"])] = sum(v >= 0.9 * best for _, v in m)
    tops[(r["name"], r["value"])] = [names[i].split(".")[0] for i, v in m[:2]]
print("# Sharp optima: where the no-GPU SpMV pick misses\n")
print("From [`policies/spmv-records.json.gz`](../../policies/spmv-records.json.gz) and the "
      "leave-one-class-out report [spmv-forest-loco.json](spmv-forest-loco.json) (no new "
      "measurement); made by [sharp-optima.py](sharp-optima.py). A record's *near* count is how "
      f"many of the {len(names)} variants of the policy space are within 0.9 of its best measured "
      "variant; `forest-knob16` is the shipped pick, each class picked without its own records.\n")
print("| variants within 0.9 of the best | records | forest-knob16 mean | below 0.9 | first 16 mean |")
print("|---|---:|---:|---:|---:|")
for lo, hi in [(0, 6), (7, 15), (16, 40), (41, 10**6)]:
    cs = [c for c in loco["cases"] if lo <= near[(c["matrix"], c["value"])] <= hi]
    pick = [c["picks"]["forest-knob16"][1] for c in cs]
    f16 = [c["picks"]["first16-forest-knob16"][1] for c in cs]
    span = f"{lo}-{hi}" if hi < 10**6 else f"{lo} or more"
    print(f"| {span} | {len(cs)} | {sum(pick) / len(pick):.3f} | {sum(x < 0.9 for x in pick)} | "
          f"{sum(f16) / len(f16):.3f} |")
sharp = [c for c in loco["cases"] if near[(c["matrix"], c["value"])] <= 6]
fams = collections.Counter(f for c in sharp for f in tops[(c["matrix"], c["value"])])
print("\nFamilies of the two fastest variants of the sharp records (near <= 6): "
      + ", ".join(f"{k} {v}" for k, v in fams.most_common()) + ".\n")
print("| class | matrix | value | near | forest-knob16 pick | fraction |")
print("|---|---|---|---:|---|---:|")
for c in sorted(sharp, key=lambda c: c["picks"]["forest-knob16"][1]):
    v, f = c["picks"]["forest-knob16"]
    print(f"| {c['class']} | {c['matrix']} | {c['value']} | {near[(c['matrix'], c['value'])]} | `{v}` | {f:.3f} |")
