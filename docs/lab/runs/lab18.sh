#!/usr/bin/env bash
# Lab: the binned strategy (long rows in warp chunks, short rows by lane groups) where the search picks tiled.
set -u
W=<out>; mkdir -p $W
X=./target/release/xtask
C="--candidate t256cs=tiled.b256.u1.cs --candidate bn256l4=binned.b256.l4.u1.ldg --candidate bn256l4u2=binned.b256.l4.u2.ldg --candidate bn256l8=binned.b256.l8.u1.ldg --candidate bn256l2u2=binned.b256.l2.u2.ldg --candidate bn128l4u2=binned.b128.l4.u2.ldg --candidate bn256l4cs=binned.b256.l4.u1.ldg.cs --candidate bn256l16=binned.b256.l16.u1.ldg"
timeout 200 $X kernel-lab --matrices circuit,power-law-sym-2.2,power-law-sym-2.8,power-law,long-rows,uniform-random --orders none $C --reps 30 > $W/lab18.txt 2>&1; echo "exit $?" >> $W/lab18.txt
tar czf "$OUT/run44.tar.gz" -C $W .
cat $W/*.txt | grep -v "^\s*$" | grep -v "rows over" | head -150
