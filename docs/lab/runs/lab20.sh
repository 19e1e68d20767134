#!/usr/bin/env bash
# Lab: persistent grids for the tiled kernel, the next tile's metadata and data loaded ahead.
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
P="SPARSERL_TILED_PREFETCH=1"
Q="SPARSERL_TILED_PREFETCH=1;SPARSERL_TILED_PIPE=1"
for G in 0 1056 2112; do
  for O in none degree; do
    if [ $O = none ]; then M=circuit,uniform-random,power-law-sym-2.2; else M=rmat-s20,power-law-1M; fi
    echo "== grid cap $G" > $W/lab20-$G-$O.txt
    SPARSERL_LAB_TILED_GRID=$G timeout 90 $X kernel-lab --matrices $M --orders $O --candidate "base=tiled.b256.u1.cs" --candidate "pf=tiled.b256.u1.cs:$P" --candidate "pipe=tiled.b256.u1.cs:$Q" --candidate "pipe.m4=tiled.b256.u1.cs.m4:$Q" --candidate "pipe.m6=tiled.b256.u1.cs.m6:$Q" --candidate "base.m4=tiled.b256.u1.cs.m4" --reps 30 >> $W/lab20-$G-$O.txt 2>&1; echo "exit $?" >> $W/lab20-$G-$O.txt
  done
done
tar czf "$OUT/run47.tar.gz" -C $W .
for f in $W/lab20-*.txt; do grep -E "^== |order|^  (base|pf|pipe)|cuSPARSE CUSPARSE_SPMV_CSR_ALG1|floor|exit" $f | sed "s/ rows, .*compulsory//"; done
