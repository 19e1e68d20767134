#!/usr/bin/env bash
# Lab: whole-row tile products kept in shared memory as the value type (half the shared memory for f32: more L1 for x).
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
P="SPARSERL_TILED_PROD_T=1"
C=(--candidate "base=tiled.b256.u1.cs" --candidate "prodT=tiled.b256.u1.cs:$P" --candidate "ldg=tiled.b256.u1.ldg.cs" --candidate "ldg.prodT=tiled.b256.u1.ldg.cs:$P" --candidate "b128.prodT=tiled.b128.u1.cs:$P" --candidate "base2=tiled.b256.u1.cs" --candidate "prodT2=tiled.b256.u1.cs:$P")
timeout 150 $X kernel-lab --matrices circuit,uniform-random,power-law,power-law-sym-2.2,power-law-sym-2.8,long-rows,skewed-huge-rows --orders none "${C[@]}" --reps 30 > $W/lab21-none.txt 2>&1; echo "exit $?" >> $W/lab21-none.txt
timeout 90 $X kernel-lab --matrices rmat-s20,power-law-1M --orders degree "${C[@]}" --reps 30 > $W/lab21-degree.txt 2>&1; echo "exit $?" >> $W/lab21-degree.txt
tar czf "$OUT/run48.tar.gz" -C $W .
cat $W/*.txt | grep -E "order|^  (base|prodT|ldg|b128)|CSR_ALG1|floor|exit|FAIL" | sed "s/ rows, .*compulsory//"
