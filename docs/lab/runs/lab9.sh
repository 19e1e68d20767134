#!/usr/bin/env bash
# Lab: cache-policy qualified loads of x and of the matrix arrays.
set -u
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run33.tar.gz" -C $W . ; }
X=./target/release/xtask
T=tiled.b256.u1.cs
C=(--candidate "base=$T"
   --candidate "x-el=$T:LAB_LOAD_X=lab_ld_el(x + i)"
   --candidate "x-na-el=$T:LAB_LOAD_X=lab_ld_na_el(x + i)"
   --candidate "m-ef=$T:LAB_LOAD_M=lab_ld_ef(p)"
   --candidate "m-na-ef=$T:LAB_LOAD_M=lab_ld_na_ef(p)"
   --candidate "m-na=$T:LAB_LOAD_M=lab_ld_na(p)"
   --candidate "x-el.m-ef=$T:LAB_LOAD_X=lab_ld_el(x + i);LAB_LOAD_M=lab_ld_ef(p)"
   --candidate "x-el.m-na-ef=$T:LAB_LOAD_X=lab_ld_el(x + i);LAB_LOAD_M=lab_ld_na_ef(p)"
   --candidate "base-again=$T")
{ time timeout 240 $X kernel-lab --matrices power-law,uniform-random,circuit,power-law-sym-2.2,skewed-huge-rows --orders none "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab9-a.txt 2>&1
pack; grep -E "order|floor|ALG1|GB/s|exit|error" $W/lab9-a.txt | head -100
{ time timeout 90 $X kernel-lab --matrices rmat-s20 --orders degree "${C[@]}" --reps 30; echo "exit $?"; } > $W/lab9-b.txt 2>&1
pack; grep -E "order|floor|ALG1|GB/s|exit|error" $W/lab9-b.txt
R=thread-per-row.b128.u2.ldg.cs
{ time timeout 90 $X kernel-lab --matrices road-random --orders none --candidate "base=$R" \
   --candidate "x-el=$R:LAB_LOAD_X=lab_ld_el(x + i)" \
   --candidate "base-again=$R" --reps 30; echo "exit $?"; } > $W/lab9-c.txt 2>&1
pack; grep -E "order|floor|ALG1|GB/s|exit|error" $W/lab9-c.txt
