#!/usr/bin/env python3
"""Compares two `cargo xtask spmm-records loco` reports on the cases both judged.

usage: spmm-loco-subset.py BEFORE.json AFTER.json > out.md

A case is (matrix, value type and layout, N); where AFTER holds a case twice (records of
the same matrix from a second report), the first, which comes from the earlier report, is
the one compared. Figures are geometric means of the record pick's fraction of the fastest measured
variant over the cases where the pick was measured, as the report computes them; a pick
the case's search did not measure has no fraction, so the measured counts are shown too."""
import json
import math
import sys
from collections import defaultdict


def cases(path):
    first = {}
    for c in json.load(open(path))["cases"]:
        first.setdefault((c["matrix"], c["key"], c["n"]), c)
    return first


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def figures(cs):
    measured = [c for c in cs if c.get("record_fraction") is not None]
    by = defaultdict(list)
    for c in measured:
        by[c["class"]].append(c["record_fraction"])
    per = {k: geomean(v) for k, v in by.items()}
    pooled = geomean([c["record_fraction"] for c in measured])
    worst = min(per.items(), key=lambda kv: kv[1]) if per else ("-", 0.0)
    at = sum(v >= 0.9 for v in per.values())
    return pooled, len(measured), len(cs), worst, at, len(per)


def main():
    before, after = cases(sys.argv[1]), cases(sys.argv[2])
    keys = sorted({k[1] for k in before})
    print("# SpMM records' pick leave-one-class-out, before and after adding reports\n")
    print(f"Before: `{sys.argv[1].split('/')[-1]}`. After: `{sys.argv[2].split('/')[-1]}`, "
          "compared on the cases of the former.\n")
    print("| value and layout | before: pooled (measured of cases), worst class, classes at 0.9+ | after, same cases |")
    print("| --- | --- | --- |")
    for key in keys:
        ks = [k for k in before if k[1] == key]
        b = figures([before[k] for k in ks])
        a = figures([after[k] for k in ks if k in after])
        fmt = lambda f: f"{f[0]:.3f} ({f[1]} of {f[2]}), {f[3][0]} {f[3][1]:.2f}, {f[4]} of {f[5]}"
        print(f"| {key} | {fmt(b)} | {fmt(a)} |")


if __name__ == "__main__":
    main()
