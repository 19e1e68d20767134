#!/usr/bin/env python3
"""Where the nnz-split picks of a bench report send their atomics.

For every case whose pick is nnz-split (ranges of W = 32 items / sub nonzeros), from the
matrix's row pointers: the share of non-empty rows cut at a range edge, the pieces of cut
rows per nonzero (each piece is one flush of atomics), and the pieces of the most-cut row:
every piece of a row adds into the same lines of Y, so that row's line receives
pieces x min(N, 32) scalar f32 atomics, which the L2 applies one after another.

usage: hot-lines.py REPORT.json.gz MATRIX_DIR > hot-lines.md
"""
import gzip
import json
import os
import re
import sys

import numpy as np


def row_pointers(path):
    f = gzip.open(path + ".gz", "rt") if os.path.exists(path + ".gz") else open(path)
    head = f.readline().lower()
    sym = any(s in head for s in ("symmetric", "hermitian", "skew"))
    line = f.readline()
    while line.startswith("%"):
        line = f.readline()
    m = int(line.split()[0])
    rows, cols = [], []
    for line in f:
        t = line.split()
        if len(t) >= 2:
            rows.append(int(t[0]) - 1)
            cols.append(int(t[1]) - 1)
    r, c = np.array(rows), np.array(cols)
    if sym:
        r = np.concatenate([r, c[r != c]])
    return np.concatenate([[0], np.cumsum(np.bincount(r, minlength=m))])


def range_len(variant):
    m = re.search(r"\.r(\d+)", variant)
    if m:
        return int(m.group(1))
    m = re.search(r"\.i(\d+)", variant)
    return 32 * (int(m.group(1)) if m else 1)


def main(report, matrices):
    rows = json.load(gzip.open(report))["rows"]
    cache = {}
    print("| matrix | n | speedup | floor / ours | pick | W | cut rows | pieces / nnz | most-cut row's pieces | its line's scalar atomics |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    for r in sorted(rows, key=lambda r: r["speedup"] or 0):
        v = r["ours_variant"] or ""
        if not v.startswith("nnz-split"):
            continue
        name, w = r["matrix"], range_len(v)
        if name not in cache:
            cache[name] = row_pointers(os.path.join(matrices, name + ".mtx"))
        ip = cache[name]
        s, e = ip[:-1], ip[1:]
        full = e > s
        pieces = np.where(full, (e - 1) // w - s // w + 1, 0)
        cut = full & (pieces > 1)
        floor = f"{r['floor_us'] / r['ours_us']:.2f}" if r.get("floor_us") else "-"
        top = int(pieces.max())
        print(f"| {name} | {r['n']} | {r['speedup']:.2f} | {floor} | `{v}` | {w} | "
              f"{cut.sum() / max(1, full.sum()):.2f} | {pieces[cut].sum() / ip[-1]:.3f} | {top} | "
              f"{top * min(r['n'], 32)} |")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
