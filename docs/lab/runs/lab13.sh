#!/usr/bin/env bash
# Lab: pieces of long rows, three forms (0 old, 1 every trip guarded, 2 full trips unguarded + one guarded).
set -u
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run37.tar.gz" -C $W . ; }
X=./target/release/xtask
T=tiled.b256.u1.cs
C=(--candidate "old=$T:SPARSERL_TILED_PIECE_V2=0"
   --candidate "v1=$T:SPARSERL_TILED_PIECE_V2=1"
   --candidate "v2=$T:SPARSERL_TILED_PIECE_V2=2"
   --candidate "old-again=$T:SPARSERL_TILED_PIECE_V2=0"
   --candidate "v1-again=$T:SPARSERL_TILED_PIECE_V2=1"
   --candidate "v2-again=$T:SPARSERL_TILED_PIECE_V2=2")
{ time timeout 100 $X kernel-lab --matrices rmat-s20 --orders degree "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab13-b.txt 2>&1
pack; grep -E "order|floor|ALG1|ALG2|GB/s|exit|error" $W/lab13-b.txt
{ time timeout 240 $X kernel-lab --matrices circuit,skewed-huge-rows,power-law,power-law-1M --orders none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab13-a.txt 2>&1
pack; grep -E "order|floor|ALG1|ALG2|GB/s|exit|error" $W/lab13-a.txt | head -100
