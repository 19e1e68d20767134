#!/usr/bin/env bash
# Lab: tiled row pointers staged into shared memory with cp.async during phase 1.
set -u
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run34.tar.gz" -C $W . ; }
X=./target/release/xtask
T=tiled.b256.u1.cs
C=(--candidate "base=$T"
   --candidate "stage=$T:SPARSERL_TILED_STAGE_PTR=1"
   --candidate "stage.ldg=tiled.b256.u1.ldg.cs:SPARSERL_TILED_STAGE_PTR=1"
   --candidate "diag-nogather=$T:LAB_LOAD_X=__ldg(x + (i & 7))"
   --candidate "diag-nogather-stage=$T:LAB_LOAD_X=__ldg(x + (i & 7));SPARSERL_TILED_STAGE_PTR=1"
   --candidate "base-again=$T"
   --candidate "stage-again=$T:SPARSERL_TILED_STAGE_PTR=1")
{ time timeout 100 $X kernel-lab --matrices rmat-s20 --orders degree,none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab10-b.txt 2>&1
pack; grep -E "order|floor|ALG|GB/s|exit|error" $W/lab10-b.txt
{ time timeout 240 $X kernel-lab --matrices power-law,circuit,uniform-random,power-law-sym-2.2,power-law-sym-2.8,skewed-huge-rows,power-law-1M --orders none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab10-a.txt 2>&1
pack; grep -E "order|floor|ALG|GB/s|exit|error" $W/lab10-a.txt | head -100
