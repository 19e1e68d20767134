#!/usr/bin/env bash
# Lab diagnostics: where the tiled kernel's time goes (pieces of long rows vs whole-row tiles, with and without gathers).
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
NG="LAB_LOAD_X=__ldg(x + (i & 7))"
C="--candidate t256cs=tiled.b256.u1.cs --candidate diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1 --candidate diag-notiles=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_TILES=1 --candidate diag-nogather=tiled.b256.u1.cs:$NG --candidate diag-ng-nopieces=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_PIECES=1 --candidate diag-ng-notiles=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_TILES=1"
timeout 100 $X kernel-lab --matrices rmat-s20,power-law-1M --orders degree "--candidate" "t256cs=tiled.b256.u1.cs" --candidate "diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1" --candidate "diag-notiles=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_TILES=1" --candidate "diag-nogather=tiled.b256.u1.cs:$NG" --candidate "diag-ng-nopieces=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_PIECES=1" --candidate "diag-ng-notiles=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_TILES=1" --reps 30 > $W/lab19-degree.txt 2>&1; echo "exit $?" >> $W/lab19-degree.txt
timeout 120 $X kernel-lab --matrices circuit,power-law-sym-2.2,power-law,uniform-random --orders none --candidate "t256cs=tiled.b256.u1.cs" --candidate "diag-nopieces=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_PIECES=1" --candidate "diag-notiles=tiled.b256.u1.cs:SPARSERL_LAB_SKIP_TILES=1" --candidate "diag-nogather=tiled.b256.u1.cs:$NG" --candidate "diag-ng-nopieces=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_PIECES=1" --candidate "diag-ng-notiles=tiled.b256.u1.cs:$NG;SPARSERL_LAB_SKIP_TILES=1" --reps 30 > $W/lab19-none.txt 2>&1; echo "exit $?" >> $W/lab19-none.txt
tar czf "$OUT/run46.tar.gz" -C $W .
cat $W/*.txt | grep -v "^\s*$" | head -150
