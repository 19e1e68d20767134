#!/usr/bin/env bash
# Lab: tiled pieces of long rows: one batched trip per step (no serial remainder), and rows of
# a single piece write y directly (no accumulator, ticket or fences).
set -u
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run35.tar.gz" -C $W . ; }
X=./target/release/xtask
T=tiled.b256.u1.cs
C=(--candidate "old=$T:SPARSERL_TILED_PIECE_V2=0"
   --candidate "new=$T"
   --candidate "old.ldg=tiled.b256.u1.ldg.cs:SPARSERL_TILED_PIECE_V2=0"
   --candidate "new.ldg=tiled.b256.u1.ldg.cs"
   --candidate "old-again=$T:SPARSERL_TILED_PIECE_V2=0"
   --candidate "new-again=$T")
{ time timeout 100 $X kernel-lab --matrices rmat-s20 --orders degree,none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab11-b.txt 2>&1
pack; grep -E "order|floor|ALG1|ALG2|GB/s|exit|error" $W/lab11-b.txt
{ time timeout 240 $X kernel-lab --matrices power-law,circuit,power-law-sym-2.2,skewed-huge-rows,power-law-1M,uniform-random --orders none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab11-a.txt 2>&1
pack; grep -E "order|floor|ALG1|ALG2|GB/s|exit|error" $W/lab11-a.txt | head -100
