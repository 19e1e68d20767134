#!/usr/bin/env python3
"""Compares two `cargo xtask spmv-forest loco` reports on the records both judged.

usage: loco-subset.py BEFORE.json AFTER.json > out.md

The records of BEFORE are the ones compared (AFTER may judge more: records added to the
training data are judged too, and reported apart). Figures are the mean fraction of each
record's best measured variant, pooled over records and per class, as the report computes
them."""
import json
import sys
from collections import defaultdict

RULES = ["forest-knob16", "forest", "knob-knn16", "knn8", "first16-forest-knob16"]


def cases(path):
    return json.load(open(path))["cases"]


def key(c):
    return (c["matrix"], c["value"])


def figures(cs, rule):
    by = defaultdict(list)
    for c in cs:
        by[c["class"]].append(c["picks"][rule][1])
    per = {k: sum(v) / len(v) for k, v in by.items()}
    pooled = sum(c["picks"][rule][1] for c in cs) / len(cs)
    worst = min(per.items(), key=lambda kv: kv[1])
    below = sum(v < 0.9 for v in per.values())
    return pooled, sum(per.values()) / len(per), worst, below, per


def main():
    before, after = cases(sys.argv[1]), cases(sys.argv[2])
    old = {key(c) for c in before}
    same = [c for c in after if key(c) in old]
    added = [c for c in after if key(c) not in old]
    print(f"# Leave-one-class-out before and after adding training records\n")
    print(f"Before: `{sys.argv[1].split('/')[-1]}` ({len(before)} records). After: "
          f"`{sys.argv[2].split('/')[-1]}` ({len(after)} records: the same {len(same)} "
          f"and {len(added)} added). Each class judged by picks fitted without it.\n")
    print("| rule | before, pooled / class mean / worst class / classes < 0.9 | after, same records | after, added records only |")
    print("| --- | --- | --- | --- |")
    for r in RULES:
        b, a, n = figures(before, r), figures(same, r), figures(added, r) if added else None
        fmt = lambda f: f"{f[0]:.3f} / {f[1]:.3f} / {f[2][0]} {f[2][1]:.3f} / {f[3]}"
        print(f"| `{r}` | {fmt(b)} | {fmt(a)} | {fmt(n) if n else '-'} |")
    rule = RULES[0]
    b, a = figures(before, rule)[4], figures(same, rule)[4]
    print(f"\nPer class, `{rule}`, the records judged before (sorted by the change):\n")
    print("| class | records | before | after | change |")
    print("| --- | ---: | ---: | ---: | ---: |")
    count = defaultdict(int)
    for c in before:
        count[c["class"]] += 1
    for k in sorted(b, key=lambda k: a[k] - b[k]):
        print(f"| {k} | {count[k]} | {b[k]:.3f} | {a[k]:.3f} | {a[k] - b[k]:+.3f} |")


if __name__ == "__main__":
    main()
