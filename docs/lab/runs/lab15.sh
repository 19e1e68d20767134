#!/usr/bin/env bash
# Lab: the piece length of rows longer than a tile (lab-only SPARSERL_LAB_PIECE), at 2aebfd6.
set -u
W=<out>; mkdir -p $W
pack() { tar czf "$OUT/run41.tar.gz" -C $W . ; }
X=./target/release/xtask
C="--candidate cs=tiled.b256.u1.cs"
for P in 8192 2048 4096 16384 32768 8192; do
  { echo "== piece $P"; SPARSERL_LAB_PIECE=$P timeout 60 $X kernel-lab --matrices circuit,skewed-huge-rows,power-law-1M,power-law,power-law-sym-2.2 --orders none $C --reps 30;
    SPARSERL_LAB_PIECE=$P timeout 40 $X kernel-lab --matrices rmat-s20 --orders degree $C --reps 30; echo "exit $?"; } > $W/lab15-$P-$RANDOM.txt 2>&1
done
pack
for f in $W/lab15-*.txt; do grep -E "^== |order|^  cs " $f | sed "s/ rows, .*compulsory//"; done
