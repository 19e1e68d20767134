#!/usr/bin/env bash
# Lab: whole-row tiles staged with cp.async (more tiles in flight per SM).
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
A="SPARSERL_TILED_ASYNC=1"
C="--candidate t256cs=tiled.b256.u1.cs --candidate t128cs=tiled.b128.u1.cs --candidate a128g4=tiled.b128.u1.cs:$A --candidate a128g8=tiled.b128.u1.cs:$A;SPARSERL_TILED_GROUP=8 --candidate a256g4=tiled.b256.u1.cs:$A --candidate a128g4ldg=tiled.b128.u1.ldg:$A --candidate t256cs2=tiled.b256.u1.cs"
timeout 200 $X kernel-lab --matrices circuit,uniform-random,power-law,power-law-sym-2.2,power-law-1M --orders none $C --reps 30 > $W/lab17-none.txt 2>&1; echo "exit $?" >> $W/lab17-none.txt
timeout 100 $X kernel-lab --matrices rmat-s20,power-law-1M --orders degree $C --reps 30 > $W/lab17-degree.txt 2>&1; echo "exit $?" >> $W/lab17-degree.txt
tar czf "$OUT/run43.tar.gz" -C $W .
cat $W/*.txt | grep -v "^\s*$" | grep -v "rows over" | head -150
